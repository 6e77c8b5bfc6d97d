//! Client pauses (Redis's pause purposes): `CLIENT PAUSE`, a FAILOVER and a shutdown
//! waiting for its replicas each pause clients, for writes only or for everything.
//!
//! ```text
//!   purpose          kind         ends
//!   CLIENT PAUSE     WRITE | ALL  at its deadline, or CLIENT UNPAUSE
//!   FAILOVER         WRITE        when the failover ends (repl.failover)
//!   shutdown wait    WRITE        when the shutdown gives up (repl.pause_writes)
//! ```
//!
//! The pause in force is the most restrictive kind among the purposes still running.
//! While it is in force, a command it covers is not run: the client is held (a
//! `BLOCKED_POSTPONE` in Redis, counted in `blocked_clients`) and its command runs
//! again when the pause ends or becomes less restrictive ([`Core::resume_paused`]),
//! when it may be held again. What a write pause covers is every command that may
//! replicate (Redis's `CMD_WRITE | CMD_MAY_REPLICATE`: writes, PUBLISH, PFCOUNT, and
//! EVAL/EVALSHA/FCALL unless the script declares `no-writes`), and EXEC of a
//! transaction that queued one. Replicas and the primary's link are never held.
//!
//! While any pause is in force nothing expires: a key past its TTL reads as missing
//! but is not deleted (no `DEL` would reach the replicas a failover is handing over
//! to), and active expiry waits.

use super::Core;
use super::client::{BlockState, Client, ClientRepl};
use super::command::{self, CommandSpec, flags};
use crate::resp::Argv;

/// What a pause holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseKind {
    /// Commands that may replicate (writes, PUBLISH, scripts that may write).
    Write,
    /// Every command of a normal client.
    All,
}

/// The pause `CLIENT PAUSE` set: its kind and its deadline (unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandPause {
    /// What it holds.
    pub kind: PauseKind,
    /// When it ends by itself.
    pub end_ms: u64,
}

/// Whether one invocation of a script-running command (EVAL, EVALSHA, FCALL and their
/// read-only forms) may write or replicate, once its script's declared flags are known
/// (Redis's `getCommandFlags`: a shebang's flags replace the command's, so `#!lua
/// flags=no-writes` may not, a script without a shebang may). Installed by the
/// scripting layer, above the core.
pub type ScriptMayWrite = fn(&Core, &CommandSpec, &Argv) -> bool;

/// Does `spec` run a script whose flags can change what it may do?
fn runs_script(spec: &CommandSpec) -> bool {
    matches!(
        spec.name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    )
}

/// Commands Redis flags `may_replicate` (hidden from `COMMAND INFO`): they change
/// nothing in the keyspace but add to the replication stream. Read-only scripts may
/// not call them either.
pub fn may_replicate(spec: &CommandSpec) -> bool {
    matches!(
        spec.name,
        "pfcount" | "publish" | "spublish" | "eval" | "evalsha" | "fcall"
    )
}

impl Core {
    /// The pause in force at `now_ms`, if any (the most restrictive of the purposes).
    pub fn pause_in_force(&self, now_ms: u64) -> Option<PauseKind> {
        let by_command = self
            .client_pause
            .filter(|p| p.end_ms >= now_ms)
            .map(|p| p.kind);
        let by_replication =
            (self.repl.failover.is_some() || self.repl.pause_writes).then_some(PauseKind::Write);
        by_command.max(by_replication)
    }

    /// CLIENT PAUSE: pauses `kind` until `end_ms`. A pause already set by the command
    /// keeps the more restrictive kind and the later deadline (Redis's `pauseClients`).
    pub fn pause_clients(&mut self, kind: PauseKind, end_ms: u64) {
        let before = self.pause_in_force(self.batch_now_ms);
        self.client_pause = Some(match self.client_pause {
            Some(p) => CommandPause {
                kind: p.kind.max(kind),
                end_ms: p.end_ms.max(end_ms),
            },
            None => CommandPause { kind, end_ms },
        });
        self.pause_lessened(before);
    }

    /// CLIENT UNPAUSE: ends the command's pause; held clients run again (those a
    /// FAILOVER's pause still covers are held again).
    pub fn unpause_clients(&mut self) {
        let before = self.pause_in_force(self.batch_now_ms);
        self.client_pause = None;
        self.pause_lessened(before);
    }

    /// Ends CLIENT PAUSE once its deadline passed (from the cron and before each
    /// command), releasing the held clients.
    pub fn expire_client_pause(&mut self, now_ms: u64) {
        if self.client_pause.is_some_and(|p| p.end_ms < now_ms) {
            let before = self.client_pause.map(|p| p.kind);
            self.client_pause = None;
            self.pause_lessened(before);
        }
    }

    /// Runs the held clients again when the pause in force became less restrictive
    /// than `before` (Redis's `updateClientPauseTypeAndEndTime`).
    fn pause_lessened(&mut self, before: Option<PauseKind>) {
        if self.pause_in_force(self.batch_now_ms) < before && !self.repl.paused.is_empty() {
            self.resume_paused();
        }
    }

    /// Holds `client`'s command if the pause in force covers it; true when held. The
    /// caller returns `Outcome::Blocked`; [`Core::resume_paused`] runs it later.
    pub fn hold_if_paused(&mut self, client: &mut Client, spec: &CommandSpec, argv: &Argv) -> bool {
        let Some(kind) = self.pause_in_force(self.batch_now_ms) else {
            return false;
        };
        if client.repl != ClientRepl::Normal {
            return false;
        }
        let held = match kind {
            PauseKind::All => true,
            PauseKind::Write => {
                self.may_replicate(spec, argv)
                    || (spec.name == "exec"
                        && client.multi.as_ref().is_some_and(|queue| {
                            queue.iter().any(|queued| {
                                queued
                                    .first()
                                    .and_then(|n| command::lookup(n))
                                    .and_then(|s| command::resolve_subcommand(s, queued).ok())
                                    .is_some_and(|s| self.may_replicate(s, queued))
                            })
                        }))
            }
        };
        if held {
            self.repl.paused.push(client.id);
            client.blocked = Some(BlockState::held(argv.clone(), client.db));
        }
        held
    }

    /// May this invocation of `spec` write or add to the replication stream (Redis's
    /// `CMD_WRITE | CMD_MAY_REPLICATE` of `getCommandFlags`)?
    pub fn may_replicate(&self, spec: &CommandSpec, argv: &Argv) -> bool {
        match self.script_may_write {
            Some(hook) if runs_script(spec) => hook(self, spec, argv),
            _ => spec.flags & flags::WRITE != 0 || may_replicate(spec),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_more_restrictive_than_write() {
        assert!(PauseKind::All > PauseKind::Write);
        assert!(Some(PauseKind::Write) > None);
        assert_eq!(
            Some(PauseKind::Write).max(Some(PauseKind::All)),
            Some(PauseKind::All)
        );
    }
}
