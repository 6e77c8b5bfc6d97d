//! What the core knows of scripts while scripting (`scripting/`, a layer above) runs
//! them: the busy script, the effects a running script holds back, and the numbers
//! INFO shows. The VMs themselves are the scripting layer's, kept in
//! [`Core::scripting`](super::Core::scripting) as an opaque box.

use crate::resp::Argv;
use bytes::Bytes;
use std::time::Instant;

/// A script that ran past `busy-reply-threshold` and is suspended between slices.
#[derive(Debug)]
pub struct BusyScript {
    /// The client whose EVAL/FCALL it is (blocked until it ends).
    pub client_id: u64,
    /// EVAL family (SCRIPT KILL) rather than FCALL (FUNCTION KILL).
    pub is_eval: bool,
    /// It wrote: it cannot be killed.
    pub wrote: bool,
    /// SCRIPT KILL / FUNCTION KILL asked for it to stop.
    pub kill: bool,
    /// The function's name (FUNCTION STATS).
    pub name: Bytes,
    /// The command that runs it (FUNCTION STATS).
    pub argv: Argv,
    /// When it started.
    pub started: Instant,
}

/// Scripting's numbers for INFO (kept up to date by the scripting layer).
#[derive(Debug, Default, Clone)]
pub struct ScriptInfo {
    /// Scripts in the EVAL cache.
    pub cached_scripts: usize,
    /// Bytes of the EVAL VM.
    pub eval_vm_bytes: usize,
    /// Bytes of the script bodies cached.
    pub eval_cache_bytes: usize,
    /// Bytes of the functions VM.
    pub functions_vm_bytes: usize,
    /// Function libraries loaded.
    pub libraries: usize,
    /// Functions registered.
    pub functions: usize,
    /// `busy-reply-threshold` (alias `lua-time-limit`), ms, cached from the config.
    pub busy_threshold_ms: u64,
}

/// Commands a client may run while a script is busy (Redis's `ALLOW_BUSY` flag).
pub fn allowed_while_busy(name: &str) -> bool {
    matches!(
        name,
        "auth"
            | "discard"
            | "function|kill"
            | "function|stats"
            | "hello"
            | "multi"
            | "quit"
            | "replconf"
            | "reset"
            | "script|kill"
            | "shutdown"
            | "unwatch"
            | "watch"
    )
}

/// The `-BUSY` error text for the kind of script running.
pub fn busy_error(is_eval: bool) -> &'static str {
    if is_eval {
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    } else {
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    }
}
