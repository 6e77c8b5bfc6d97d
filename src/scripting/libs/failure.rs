//! A Lua error raised from Rust only once the Rust frames that built it are gone, and
//! the `luaL_check*` argument checks that return one instead of raising (shared by
//! `struct` and `cmsgpack`).
//!
//! Lua raises errors with `longjmp`, which skips Rust destructors: a library does its
//! work in functions returning `Result<_, Failure>`, and its `extern` entry point hands
//! the result to [`finish`] or [`return_string`], which raise the failure exactly as the
//! matching `luaL_*` call would, after everything with a destructor is dropped.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::ffi::{CStr, c_int};
use std::mem::ManuallyDrop;

use mlua_sys::{
    lua_Integer, lua_State, lua_checkstack, lua_concat, lua_error, lua_insert, lua_isnumber,
    lua_pushlstring, lua_settop, lua_tointeger_, lua_tolstring, lua_tonumber, lua_type,
    luaL_argerror, luaL_typerror, luaL_where,
};

/// A Lua error to raise once the Rust frames that built it are gone (shared with
/// `cmsgpack`).
#[derive(Debug)]
pub(super) enum Failure {
    /// `luaL_error`: the caller's position, then the message.
    Msg(Vec<u8>),
    /// `luaL_argerror(narg, message)`.
    Arg(c_int, Vec<u8>),
    /// `luaL_typerror(narg, expected type)`.
    Type(c_int, &'static CStr),
}

/// What [`push_failure`] left for [`throw`]: only `Copy` data.
#[derive(Clone, Copy)]
enum Pending {
    Msg,
    Arg(c_int),
    Type(c_int, &'static CStr),
}

/// Pushes the failure's message (if it has one) and releases its Rust allocation.
unsafe fn push_failure(l: *mut lua_State, failure: Failure) -> Pending {
    let failure = ManuallyDrop::new(failure);
    let (pending, msg) = match &*failure {
        Failure::Msg(m) => (Pending::Msg, Some(m)),
        Failure::Arg(n, m) => (Pending::Arg(*n), Some(m)),
        Failure::Type(n, t) => (Pending::Type(*n, t), None),
    };
    if let Some(m) = msg {
        // SAFETY: `l` is live; Lua copies the bytes.
        unsafe {
            // A stack-overflow failure leaves no room for the message (and for what
            // `luaL_where`/`luaL_argerror` push): the values on the stack are about to be
            // discarded by the error anyway, and these messages do not read them.
            if lua_checkstack(l, 4) == 0 {
                lua_settop(l, 0);
            }
            lua_pushlstring(l, m.as_ptr().cast(), m.len());
        }
    }
    drop(ManuallyDrop::into_inner(failure));
    pending
}

/// Raises what [`push_failure`] prepared, as `luaL_error`/`luaL_argerror`/`luaL_typerror`.
unsafe fn throw(l: *mut lua_State, pending: Pending) -> ! {
    // SAFETY (whole fn): `l` is live; the message, if any, is at the top.
    unsafe {
        match pending {
            Pending::Msg => {
                luaL_where(l, 1);
                lua_insert(l, -2);
                lua_concat(l, 2);
            }
            Pending::Arg(n) => {
                luaL_argerror(l, n, lua_tolstring(l, -1, std::ptr::null_mut()));
            }
            Pending::Type(n, t) => {
                luaL_typerror(l, n, t.as_ptr());
            }
        }
        lua_error(l)
    }
}

/// Raises `failure` from the running C function, exactly as the matching `luaL_*` call.
///
/// # Safety
/// `l` must be the state of the running C function, and the caller's frame must hold no
/// value with a destructor (the error longjmps).
pub(super) unsafe fn raise(l: *mut lua_State, failure: Failure) -> ! {
    // SAFETY: `l` is live; `failure` is consumed before the longjmp.
    unsafe {
        let pending = push_failure(l, failure);
        throw(l, pending)
    }
}

/// Argument `idx` as bytes (numbers are converted in place, as `luaL_checklstring` does).
/// The slice lives as long as the value stays on the stack.
///
/// # Safety
/// `l` must be the state of the running C function.
pub(super) unsafe fn check_bytes<'a>(l: *mut lua_State, idx: c_int) -> Result<&'a [u8], Failure> {
    let mut len = 0;
    // SAFETY: `l` is live; a non-null result points at `len` bytes owned by the stack value.
    unsafe {
        let p = lua_tolstring(l, idx, &mut len);
        if p.is_null() {
            return Err(Failure::Type(idx, c"string"));
        }
        Ok(std::slice::from_raw_parts(p.cast(), len))
    }
}

/// Argument `idx` as a number, as `luaL_checknumber`.
pub(super) unsafe fn check_number(l: *mut lua_State, idx: c_int) -> Result<f64, Failure> {
    // SAFETY: `l` is live.
    unsafe {
        let d = lua_tonumber(l, idx);
        if d == 0.0 && lua_isnumber(l, idx) == 0 {
            return Err(Failure::Type(idx, c"number"));
        }
        Ok(d)
    }
}

/// Argument `idx` as an integer, as `luaL_checkinteger` (C's truncating conversion).
///
/// # Safety
/// `l` must be the state of the running C function.
pub(super) unsafe fn check_integer(l: *mut lua_State, idx: c_int) -> Result<i64, Failure> {
    // SAFETY: `l` is live.
    unsafe {
        let d: lua_Integer = lua_tointeger_(l, idx);
        if d == 0 && lua_isnumber(l, idx) == 0 {
            return Err(Failure::Type(idx, c"number"));
        }
        Ok(d as i64)
    }
}

/// Argument `idx` as an integer or `default` when absent/nil, as `luaL_optinteger`.
///
/// # Safety
/// `l` must be the state of the running C function.
pub(super) unsafe fn opt_integer(
    l: *mut lua_State,
    idx: c_int,
    default: i64,
) -> Result<i64, Failure> {
    // SAFETY: `l` is live.
    unsafe {
        if lua_type(l, idx) <= 0 {
            return Ok(default);
        }
        check_integer(l, idx)
    }
}

/// Returns a body's result count, or raises its failure.
///
/// # Safety
/// `l` must be the state of the running C function, and the caller's frame must hold no
/// value with a destructor (the error longjmps).
pub(super) unsafe fn finish(l: *mut lua_State, result: Result<c_int, Failure>) -> c_int {
    match result {
        Ok(n) => n,
        // SAFETY: `l` is live; the failure is moved into `raise`.
        Err(failure) => unsafe { raise(l, failure) },
    }
}

/// Runs `build` on a new buffer and returns the buffer to Lua as one string, or raises
/// the failure `build` returned (the buffer freed first).
///
/// # Safety
/// `l` must be the state of the running C function, and the caller's frame must hold no
/// value with a destructor (an error longjmps).
pub(super) unsafe fn return_string(
    l: *mut lua_State,
    build: unsafe fn(*mut lua_State, &mut Vec<u8>) -> Result<(), Failure>,
) -> c_int {
    let mut buf = ManuallyDrop::new(Vec::new());
    // SAFETY: `l` is live (the caller's contract).
    let result = unsafe { build(l, &mut buf) };
    match result {
        Ok(()) => {
            // SAFETY: `l` is live; Lua copies the bytes.
            unsafe { lua_pushlstring(l, buf.as_ptr().cast(), buf.len()) };
            drop(ManuallyDrop::into_inner(buf));
            1
        }
        Err(failure) => {
            drop(ManuallyDrop::into_inner(buf));
            // SAFETY: `l` is live; nothing with a destructor is left in this frame.
            unsafe { raise(l, failure) }
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
mod tests {
    use super::*;
    use mlua_sys::{
        lua_close, lua_pcall, lua_pushcfunction, lua_setglobal, luaL_loadbuffer, luaL_newstate,
    };

    /// `probe(n [, m], s)`: checks its arguments as the libraries do; returns
    /// `s` repeated n times, or raises `Msg` when n is negative.
    unsafe fn probe_body(l: *mut lua_State, out: &mut Vec<u8>) -> Result<(), Failure> {
        // SAFETY: called through `return_string` with a live state.
        unsafe {
            let n = check_integer(l, 1)?;
            let m = opt_integer(l, 2, 1)?;
            let s = check_bytes(l, 3)?;
            let _ = check_number(l, 1)?;
            if n < 0 {
                return Err(Failure::Msg(b"negative count".to_vec()));
            }
            if m == 0 {
                return Err(Failure::Arg(2, b"zero multiplier".to_vec()));
            }
            for _ in 0..n * m {
                out.extend_from_slice(s);
            }
            Ok(())
        }
    }

    unsafe extern "C-unwind" fn probe(l: *mut lua_State) -> c_int {
        // SAFETY: called by Lua with a live state.
        unsafe { return_string(l, probe_body) }
    }

    /// Runs `chunk` (which calls `probe`) and returns its string result or error text.
    fn run(chunk: &str) -> Result<String, String> {
        // SAFETY: a fresh state used by this thread only and closed before returning.
        unsafe {
            let l = luaL_newstate();
            assert!(!l.is_null());
            lua_pushcfunction(l, probe);
            lua_setglobal(l, c"probe".as_ptr());
            let mut status = luaL_loadbuffer(l, chunk.as_ptr().cast(), chunk.len(), c"=t".as_ptr());
            if status == 0 {
                status = lua_pcall(l, 0, 1, 0);
            }
            let mut len = 0;
            let p = lua_tolstring(l, -1, &mut len);
            let text =
                String::from_utf8_lossy(std::slice::from_raw_parts(p.cast(), len)).into_owned();
            lua_close(l);
            if status == 0 { Ok(text) } else { Err(text) }
        }
    }

    #[test]
    fn results_and_failures_reach_lua_as_from_c() {
        assert_eq!(run("return probe(2, nil, 'ab')"), Ok("abab".to_string()));
        assert_eq!(run("return probe('3', 1, 7)"), Ok("777".to_string()));
        assert_eq!(
            run("return probe('x', 1, 'a')"),
            Err("t:1: bad argument #1 to 'probe' (number expected, got string)".to_string())
        );
        assert_eq!(
            run("return probe(1, 1, {})"),
            Err("t:1: bad argument #3 to 'probe' (string expected, got table)".to_string())
        );
        assert_eq!(
            run("return probe(1, 0, 'a')"),
            Err("t:1: bad argument #2 to 'probe' (zero multiplier)".to_string())
        );
        assert_eq!(
            run("return probe(-1, 1, 'a')"),
            Err("t:1: negative count".to_string())
        );
    }
}
