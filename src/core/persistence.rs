//! What the core asks of persistence, and nothing more.
//!
//! The core hands every effect of a write command (its deterministic, replayable form:
//! an `XADD *` with the ID it produced, a trim with its exact result) to the one
//! [`Persistence`] it holds, asks it whether writes are refused, and runs the
//! administrative commands (SAVE, BGSAVE, BGREWRITEAOF, SHUTDOWN, DEBUG RELOAD, CONFIG
//! SET of the persistence settings, INFO persistence) through it. The core does not
//! know log files, records or snapshots: `persist/` implements this trait and installs
//! itself with [`Core::set_persistence`](super::Core::set_persistence) at start-up, so
//! the dependency points one way (`persist` uses `core`; `core` knows only this
//! interface). Replication will consume the same effects through the same door.
//!
//! ```text
//!  command ──Ctx::propagate──▶ Core::propagate ──effect_begin(db)──▶ Persistence
//!                                   │  RESP array of the effect ──▶   (its buffer)
//!                                   └──────────────effect_end()──▶   frames it
//! ```
//!
//! The effect is written straight into the implementation's buffer (no copy): the core
//! asks for the buffer ([`Persistence::effect_begin`], which also writes whatever must
//! come first, such as a `SELECT`), appends the RESP array of the effect's arguments,
//! and closes it ([`Persistence::effect_end`]). Administrative operations need the core
//! as well as the persistence state, so they take the core as an argument and run
//! through [`Core::with_persistence`](super::Core::with_persistence), which lends the
//! persistence out of the core for the call.

use super::{Core, ShutdownKind};
use std::any::Any;

/// The persistence layer as the core sees it (see the module doc).
pub trait Persistence: Any {
    /// True when effects are recorded (a log is open). Hot commands skip building their
    /// effect when not.
    fn recording(&self) -> bool;
    /// Starts one effect on database `db` and returns the buffer its RESP array goes
    /// into, or `None` when nothing is recorded. Always followed by
    /// [`Persistence::effect_end`] when it returns a buffer.
    fn effect_begin(&mut self, db: usize) -> Option<&mut Vec<u8>>;
    /// Ends the effect [`Persistence::effect_begin`] started.
    fn effect_end(&mut self);
    /// EXEC starts: the effects until [`Persistence::exec_end`] belong to one
    /// transaction (nested calls count).
    fn exec_begin(&mut self);
    /// EXEC ended.
    fn exec_end(&mut self);
    /// Why write commands are refused right now (the log cannot be written), if they
    /// are: the full error text, code included.
    fn write_refusal(&self) -> Option<String>;

    /// SAVE: writes the snapshot from the live keyspace.
    fn save(&mut self, core: &mut Core) -> Result<(), String>;
    /// BGSAVE: starts a background save; `Err` (with the error text) when one runs.
    fn bgsave(&mut self, core: &mut Core) -> Result<(), String>;
    /// BGSAVE SCHEDULE while a save runs: start another when it ends.
    fn schedule_bgsave(&mut self);
    /// BGREWRITEAOF: `Ok(true)` started, `Ok(false)` scheduled after the running one.
    fn bgrewriteaof(&mut self, core: &mut Core) -> Result<bool, String>;
    /// SHUTDOWN (and signals): saves as `kind` and the configuration ask, syncs the log.
    fn shutdown(&mut self, core: &mut Core, kind: ShutdownKind) -> Result<(), String>;
    /// DEBUG RELOAD: saves, empties the keyspace and loads the snapshot back.
    fn debug_reload(&mut self, core: &mut Core) -> Result<(), String>;
    /// DEBUG LOADAOF: syncs the log, empties the keyspace and loads the log back.
    fn debug_loadaof(&mut self, core: &mut Core) -> Result<(), String>;
    /// After CONFIG SET: applies `appendonly`, `appendfsync` and the like.
    fn config_changed(&mut self, core: &mut Core) -> Result<(), String>;
    /// Periodic chores (`hz` times a second): write pending records, reap background
    /// jobs, save rules, automatic rewrites.
    fn cron(&mut self, core: &mut Core);
    /// The body of INFO's `# Persistence` section.
    fn info(&self, core: &Core) -> String;

    /// The implementation, for the layer that installed it.
    fn as_any(&self) -> &dyn Any;
    /// The implementation, for the layer that installed it.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A core without persistence (before `persist/` installs itself, in unit tests, and in
/// the core while its persistence is lent out by
/// [`Core::with_persistence`](super::Core::with_persistence)): records nothing, refuses
/// no write, and answers the administrative commands with an error.
#[derive(Debug, Default)]
pub struct NoPersistence;

/// The error of administrative commands on a core without persistence.
const NO_PERSISTENCE: &str = "ERR persistence is not available";

impl Persistence for NoPersistence {
    fn recording(&self) -> bool {
        false
    }

    fn effect_begin(&mut self, _db: usize) -> Option<&mut Vec<u8>> {
        None
    }

    fn effect_end(&mut self) {}

    fn exec_begin(&mut self) {}

    fn exec_end(&mut self) {}

    fn write_refusal(&self) -> Option<String> {
        None
    }

    fn save(&mut self, _core: &mut Core) -> Result<(), String> {
        Err(NO_PERSISTENCE.into())
    }

    fn bgsave(&mut self, _core: &mut Core) -> Result<(), String> {
        Err(NO_PERSISTENCE.into())
    }

    fn schedule_bgsave(&mut self) {}

    fn bgrewriteaof(&mut self, _core: &mut Core) -> Result<bool, String> {
        Err(NO_PERSISTENCE.into())
    }

    fn shutdown(&mut self, _core: &mut Core, _kind: ShutdownKind) -> Result<(), String> {
        Ok(())
    }

    fn debug_reload(&mut self, _core: &mut Core) -> Result<(), String> {
        Err(NO_PERSISTENCE.into())
    }

    fn debug_loadaof(&mut self, _core: &mut Core) -> Result<(), String> {
        Err(NO_PERSISTENCE.into())
    }

    fn config_changed(&mut self, _core: &mut Core) -> Result<(), String> {
        Ok(())
    }

    fn cron(&mut self, _core: &mut Core) {}

    fn info(&self, _core: &Core) -> String {
        String::new()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
