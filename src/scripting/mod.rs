//! Lua scripting and functions: EVAL and friends, the script cache, FUNCTION libraries,
//! and the Lua 5.1 VM they run in.
//!
//! This layer sits above `commands`: a script's `redis.call` goes through the core's
//! dispatcher like a client's command (`run.rs`), and the EVAL family's rows join the
//! command table through [`table`]. The engine (two VMs: one for EVAL, one for
//! functions, as in Redis 7.0) lives in the core as an opaque box ([`Core::scripting`])
//! and is taken out for the length of a script, so that the script can reach the core.
//!
//! - `vm.rs`: building a VM: libraries, the `redis` table, read-only globals.
//! - `run.rs`: one run (a coroutine), `redis.call`, Lua ↔ RESP conversions, the hook.
//! - `suspend.rs`: what the hook suspended, shared by the run and the VM's wrappers.
//! - `eval.rs`: EVAL*, SCRIPT, the script cache, shebang flags, busy scripts.
//! - `function.rs`: FUNCTION*, FCALL*, libraries, FUNCTION DUMP/RESTORE payloads.
//! - `libs/`: cjson, cmsgpack, bit, struct.
//! - `sha1.rs`: script names.
//! - `ccast.rs`: C's conversions of a Lua number to an integer, which Redis's replies and
//!   libraries inherit.

#![allow(unsafe_code)]

pub mod ccast;
pub mod eval;
pub mod function;
pub mod libs;
pub mod run;
pub mod sha1;
pub mod suspend;
pub mod vm;

use crate::commands::{CommandSpec, Family, flags::*, keyflags};
use crate::core::Core;
use eval::Script;
use function::Functions;
use std::collections::HashMap;
use std::sync::OnceLock;

pub use eval::resume_busy;
pub use function::library_codes;

/// The scripting state: both VMs, the script cache, the libraries, a suspended run.
pub struct Engine {
    /// The EVAL VM.
    pub eval_vm: vm::Vm,
    /// Cached scripts by SHA (their functions are in the EVAL VM's registry). Hashed
    /// with foldhash, seeded at random per process: SipHash of the 40 bytes was 1.6% of
    /// a one-command EVALSHA.
    pub scripts: HashMap<[u8; 40], Script, foldhash::fast::RandomState>,
    /// The function libraries and their VM.
    pub functions: Functions,
    /// The run suspended past the busy threshold.
    pub running: Option<run::Run>,
    /// The context of the last run that ended (its client, its `redis.call` buffers),
    /// kept for the next one: a few allocations less per script.
    pub spare_ctx: Option<Box<run::RunCtx>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("scripts", &self.scripts.len())
            .finish_non_exhaustive()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // A run refers to its VM: it goes first.
        self.running = None;
    }
}

/// A VM with the `redis` library for this server's version.
pub fn new_vm(version: &str) -> vm::Vm {
    vm::Vm::new(|l| {
        // SAFETY: `Vm::new` hands over the globals table on top of the stack.
        unsafe { run::install_redis(l, version) }
    })
}

/// The Redis version scripts see (`redis.REDIS_VERSION`).
pub fn version(core: &Core) -> String {
    crate::core::redis_version(core.compat)
}

/// The engine, created on first use.
pub fn engine_mut(core: &mut Core) -> &mut Engine {
    if core.scripting.as_ref().is_none_or(|b| !b.is::<Engine>()) {
        let v = version(core);
        core.scripting = Some(Box::new(Engine {
            eval_vm: new_vm(&v),
            scripts: HashMap::default(),
            functions: Functions::new(&v),
            running: None,
            spare_ctx: None,
        }));
    }
    core.scripting
        .as_mut()
        .and_then(|b| b.downcast_mut::<Engine>())
        .expect("installed above")
}

/// Runs `f` with the engine taken out of the core, so that `f` may use both.
pub fn with_engine<R>(core: &mut Core, f: impl FnOnce(&mut Engine, &mut Core) -> R) -> R {
    engine_mut(core);
    let mut boxed = core.scripting.take().expect("created by engine_mut");
    let result = {
        let engine = boxed.downcast_mut::<Engine>().expect("an engine");
        f(engine, core)
    };
    core.scripting = Some(boxed);
    result
}

/// Whether this EVAL/EVALSHA/FCALL (or `_RO`) invocation may write or replicate, for
/// the core's client pause (Redis's `evalGetCommandFlags` / `fcallGetCommandFlags`): a
/// script with a shebang, or a function, may write unless it declares `no-writes`; a
/// script without one may (its writes are found only as it runs); a script not in the
/// cache or a missing function counts as its command's flags say. The `_RO` forms
/// never write.
pub fn may_write(core: &Core, spec: &CommandSpec, argv: &crate::resp::Argv) -> bool {
    let engine = core
        .scripting
        .as_ref()
        .and_then(|b| b.downcast_ref::<Engine>());
    let Some(arg) = argv.get(1) else {
        return spec.flags & WRITE != 0;
    };
    match spec.name {
        "eval_ro" | "evalsha_ro" | "fcall_ro" => false,
        "eval" => match eval::parse_shebang(arg) {
            Ok((flags, _)) => !(flags.shebang && flags.no_writes),
            Err(_) => true,
        },
        "evalsha" => {
            let mut sha = [0u8; 40];
            if arg.len() != 40 {
                return true;
            }
            for (d, s) in sha.iter_mut().zip(arg.iter()) {
                *d = s.to_ascii_lowercase();
            }
            engine
                .and_then(|e| e.scripts.get(&sha))
                .is_none_or(|s| !(s.flags.shebang && s.flags.no_writes))
        }
        "fcall" => engine
            .and_then(|e| e.functions.functions.get(&function::fold(arg)))
            .is_none_or(|f| !f.flags.no_writes),
        _ => spec.flags & WRITE != 0,
    }
}

/// Refreshes the numbers INFO shows.
pub fn refresh_info(core: &mut Core) {
    let (cached, cache_bytes, eval_vm, fn_vm, libs, fns) = {
        let e = engine_mut(core);
        (
            e.scripts.len(),
            e.scripts.values().map(|s| s.len as usize).sum::<usize>(),
            e.eval_vm.memory(),
            e.functions.vm.memory(),
            e.functions.libraries.len(),
            e.functions.count(),
        )
    };
    let info = &mut core.script_info;
    info.cached_scripts = cached;
    info.eval_cache_bytes = cache_bytes;
    info.eval_vm_bytes = eval_vm;
    info.functions_vm_bytes = fn_vm;
    info.libraries = libs;
    info.functions = fns;
}

/// The scripting family: documented under `scripting`, `@scripting` on every row (the
/// containers SCRIPT and FUNCTION are built without it, as Redis's have no category).
const SCRIPTING: Family = Family::new("scripting").categories(&["@scripting"]);

/// EVAL and FCALL's keys: `numkeys` at 2, the keys after it (Redis's `keynum` key
/// spec; [`CommandSpec::key_positions`] finds them). Redis cannot tell how a script uses
/// them, so it assumes the worst: read-write for EVAL and FCALL, read-only for the `_RO`
/// forms.
const SCRIPT_KEYS_RW: &[u32] = &[keyflags::RW | keyflags::ACCESS | keyflags::UPDATE];

/// What EVAL, EVALSHA and FCALL say (Redis's `may_replicate` is not shown by COMMAND,
/// so it has no bit here).
const RUN: u32 = NOSCRIPT | SKIP_MONITOR | NO_MANDATORY_KEYS | STALE | MOVABLEKEYS;

/// The EVAL family's rows of the command table (from Redis's `src/commands/*.json`).
pub static COMMANDS: &[CommandSpec] = &[
    SCRIPTING
        .row(
            "eval",
            -3,
            RUN,
            "Executes a server-side Lua script.",
            "2.6.0",
            eval::eval,
        )
        .with_key_flags(SCRIPT_KEYS_RW),
    SCRIPTING
        .row(
            "evalsha",
            -3,
            RUN,
            "Executes a server-side Lua script by SHA1 digest.",
            "2.6.0",
            eval::evalsha,
        )
        .with_key_flags(SCRIPT_KEYS_RW),
    SCRIPTING.row(
        "eval_ro",
        -3,
        RUN | READONLY,
        "Executes a read-only server-side Lua script.",
        "7.0.0",
        eval::eval,
    ),
    SCRIPTING.row(
        "evalsha_ro",
        -3,
        RUN | READONLY,
        "Executes a read-only server-side Lua script by SHA1 digest.",
        "7.0.0",
        eval::evalsha,
    ),
    SCRIPTING
        .row(
            "fcall",
            -3,
            RUN,
            "Invokes a function.",
            "7.0.0",
            function::fcall,
        )
        .with_key_flags(SCRIPT_KEYS_RW),
    SCRIPTING.row(
        "fcall_ro",
        -3,
        RUN | READONLY,
        "Invokes a read-only function.",
        "7.0.0",
        function::fcall,
    ),
    SCRIPTING.container(
        "script",
        "A container for Lua scripts management commands.",
        "2.6.0",
        SCRIPT_SUBCOMMANDS,
    ),
    SCRIPTING.container(
        "function",
        "A container for function commands.",
        "7.0.0",
        FUNCTION_SUBCOMMANDS,
    ),
];

static SCRIPT_SUBCOMMANDS: &[CommandSpec] = &[
    SCRIPTING.row(
        "script|debug",
        3,
        NOSCRIPT,
        "Sets the debug mode of server-side Lua scripts.",
        "3.2.0",
        eval::script_debug,
    ),
    SCRIPTING.row(
        "script|exists",
        -3,
        NOSCRIPT,
        "Determines whether server-side Lua scripts exist in the script cache.",
        "2.6.0",
        eval::script_exists,
    ),
    SCRIPTING.row(
        "script|flush",
        -2,
        NOSCRIPT,
        "Removes all server-side Lua scripts from the script cache.",
        "2.6.0",
        eval::script_flush,
    ),
    SCRIPTING.row(
        "script|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "5.0.0",
        eval::script_help,
    ),
    SCRIPTING.row(
        "script|kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        "Terminates a server-side Lua script during execution.",
        "2.6.0",
        eval::script_kill,
    ),
    SCRIPTING.row(
        "script|load",
        3,
        NOSCRIPT | STALE,
        "Loads a server-side Lua script to the script cache.",
        "2.6.0",
        eval::script_load,
    ),
];

static FUNCTION_SUBCOMMANDS: &[CommandSpec] = &[
    SCRIPTING.row(
        "function|delete",
        3,
        WRITE | NOSCRIPT,
        "Deletes a library and its functions.",
        "7.0.0",
        function::function_delete,
    ),
    SCRIPTING.row(
        "function|dump",
        2,
        NOSCRIPT,
        "Dumps all libraries into a serialized binary payload.",
        "7.0.0",
        function::function_dump,
    ),
    SCRIPTING.row(
        "function|flush",
        -2,
        WRITE | NOSCRIPT,
        "Deletes all libraries and functions.",
        "7.0.0",
        function::function_flush,
    ),
    SCRIPTING.row(
        "function|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "7.0.0",
        function::function_help,
    ),
    SCRIPTING.row(
        "function|kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        "Terminates a function during execution.",
        "7.0.0",
        function::function_kill,
    ),
    SCRIPTING.row(
        "function|list",
        -2,
        NOSCRIPT,
        "Returns information about all libraries.",
        "7.0.0",
        function::function_list,
    ),
    SCRIPTING.row(
        "function|load",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        "Creates a library.",
        "7.0.0",
        function::function_load,
    ),
    SCRIPTING.row(
        "function|restore",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        "Restores all libraries from a payload.",
        "7.0.0",
        function::function_restore,
    ),
    SCRIPTING.row(
        "function|stats",
        2,
        NOSCRIPT | ALLOW_BUSY,
        "Returns information about a function during execution.",
        "7.0.0",
        function::function_stats,
    ),
];

/// The whole command table: every family of `commands/` and the EVAL family.
pub fn table() -> &'static [&'static [CommandSpec]] {
    static TABLE: OnceLock<Vec<&'static [CommandSpec]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: Vec<&'static [CommandSpec]> = crate::commands::FAMILIES.to_vec();
        t.push(COMMANDS);
        t
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of the whole table (the families of `commands/` and this one) and
    /// every subcommand row.
    fn rows() -> impl Iterator<Item = &'static CommandSpec> {
        table()
            .iter()
            .flat_map(|f| f.iter())
            .flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()))
    }

    #[test]
    fn every_group_is_one_of_redis_groups() {
        // Redis's `COMMAND_GROUP_*` names as COMMAND DOCS spells them
        // (`utils/generate-command-code.py`: `sorted_set` in the JSON is `sorted-set`).
        const GROUPS: &[&str] = &[
            "generic",
            "string",
            "list",
            "set",
            "sorted-set",
            "hash",
            "pubsub",
            "transactions",
            "connection",
            "server",
            "scripting",
            "hyperloglog",
            "cluster",
            "sentinel",
            "geo",
            "stream",
            "bitmap",
            "module",
        ];
        for c in rows() {
            assert!(GROUPS.contains(&c.group), "{}: {}", c.name, c.group);
        }
    }

    #[test]
    fn the_table_has_the_scripting_family_once() {
        let names: Vec<&str> = table()
            .iter()
            .flat_map(|f| f.iter())
            .map(|c| c.name)
            .collect();
        for name in [
            "eval",
            "evalsha",
            "eval_ro",
            "evalsha_ro",
            "fcall",
            "fcall_ro",
            "script",
            "function",
        ] {
            assert_eq!(names.iter().filter(|n| **n == name).count(), 1, "{name}");
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "no name twice");
        // 8 top-level rows and 15 subcommands: Redis's 23 scripting commands.
        let scripting: Vec<_> = rows().filter(|c| c.group == "scripting").collect();
        assert_eq!(scripting.len(), 23);
        for c in scripting {
            assert!(c.subcommands.is_empty() || c.acl.is_empty(), "{}", c.name);
            if c.subcommands.is_empty() {
                assert!(c.acl.contains(&"@scripting"), "{}", c.name);
            }
        }
    }

    #[test]
    fn script_keys_follow_numkeys_with_redis_key_flags() {
        let argv = crate::resp::Argv::from(
            ["EVAL", "s", "2", "a", "b", "c"]
                .map(|a| bytes::Bytes::copy_from_slice(a.as_bytes()))
                .to_vec(),
        );
        for c in COMMANDS.iter().filter(|c| c.subcommands.is_empty()) {
            assert_eq!(c.key_positions(&argv), vec![3, 4], "{}", c.name);
            assert_eq!((c.first_key, c.last_key, c.key_step), (0, 0, 0));
            let want = if c.flags & READONLY != 0 {
                keyflags::RO | keyflags::ACCESS
            } else {
                keyflags::RW | keyflags::ACCESS | keyflags::UPDATE
            };
            assert_eq!(c.key_flags_at(0), want, "{}", c.name);
        }
    }
}
