//! Who the count hook suspended: the run's own coroutine, or one below it.
//!
//! A busy script is suspended by the count hook (`run.rs`) with a yield. When the hook
//! finds the script inside a `pcall`, `xpcall` or user coroutine (each a coroutine of
//! its own, see `vm.rs`'s prelude), it suspends that inner coroutine, and the VM's
//! hook-aware `coroutine.resume` passes the suspension up level by level to the
//! script's coroutine. Both sides record what they suspend here, and both read it:
//!
//! ```text
//!  run.rs  Run::resume ── enter(flags) ─▶ [ACTIVE] ◀── mark(l)      hook (run.rs),
//!          (lua_resume_)                     │                      suspend_ (vm.rs)
//!          Step::Suspended ◀── leave() ──────┘◀─── take_inner()     resume_ (vm.rs)
//! ```
//!
//! The flags belong to the run (they outlive one resume); they are active here for the
//! length of each resume, so that the VM needs to know nothing about the runner.

use mlua_sys as ffi;
use std::cell::Cell;

/// The suspension flags of one run.
#[derive(Debug, Clone, Copy)]
pub struct Flags {
    /// The run's coroutine: a suspension of it is the run's; any other is an inner one.
    co: *mut ffi::lua_State,
    /// The hook suspended the run's coroutine (any other yield of it is the script's
    /// own `coroutine.yield` outside a coroutine: an error).
    outer: bool,
    /// The hook suspended a coroutine below the run's, and its resumer has not yet
    /// passed the suspension up.
    inner: bool,
}

impl Flags {
    /// The flags of a run on coroutine `co`, nothing suspended yet.
    pub fn new(co: *mut ffi::lua_State) -> Flags {
        Flags {
            co,
            outer: false,
            inner: false,
        }
    }

    /// Takes the flag saying the hook suspended the run's own coroutine.
    pub fn take_outer(&mut self) -> bool {
        std::mem::take(&mut self.outer)
    }
}

thread_local! {
    /// The flags of the run being resumed on this thread, if any.
    static ACTIVE: Cell<Option<Flags>> = const { Cell::new(None) };
}

/// Makes `flags` the active ones for a resume; returns the ones it replaces, for
/// [`leave`].
pub fn enter(flags: Flags) -> Option<Flags> {
    ACTIVE.with(|a| a.replace(Some(flags)))
}

/// Ends a resume: puts `prev` back and returns the run's flags as the resume left them.
pub fn leave(prev: Option<Flags>) -> Option<Flags> {
    ACTIVE.with(|a| a.replace(prev))
}

/// Records that the hook (or a wrapper passing the hook's suspension up) suspends `l`.
/// Outside a resume it does nothing.
pub fn mark(l: *mut ffi::lua_State) {
    ACTIVE.with(|a| {
        if let Some(mut flags) = a.get() {
            if l == flags.co {
                flags.outer = true;
            } else {
                flags.inner = true;
            }
            a.set(Some(flags));
        }
    });
}

/// Takes the flag a nested coroutine's hook suspension left (false outside a resume).
pub fn take_inner() -> bool {
    ACTIVE.with(|a| match a.get() {
        Some(mut flags) => {
            let inner = std::mem::take(&mut flags.inner);
            a.set(Some(flags));
            inner
        }
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(n: usize) -> *mut ffi::lua_State {
        // Only compared, never dereferenced.
        n as *mut ffi::lua_State
    }

    #[test]
    fn outside_a_resume_nothing_is_recorded() {
        mark(state(8));
        assert!(!take_inner());
    }

    #[test]
    fn the_runs_coroutine_is_outer_any_other_inner() {
        let prev = enter(Flags::new(state(8)));
        mark(state(16));
        assert!(take_inner());
        assert!(!take_inner(), "taken once");
        mark(state(8));
        let mut flags = leave(prev).expect("entered");
        assert!(flags.take_outer());
        assert!(!flags.take_outer());
        assert!(!take_inner(), "left");
    }

    #[test]
    fn flags_outlive_a_resume_and_nest() {
        let prev = enter(Flags::new(state(8)));
        mark(state(16));
        let outer_run = leave(prev).expect("entered");
        // Another run resumed meanwhile sees only its own flags.
        let prev = enter(Flags::new(state(24)));
        assert!(!take_inner());
        leave(prev);
        // The first run's inner flag is still there on its next resume.
        let prev = enter(outer_run);
        assert!(take_inner());
        leave(prev);
    }
}
