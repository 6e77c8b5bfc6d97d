//! The `bit` library Redis bundles (LuaBitOp 1.0.2): 32-bit bitwise operations on Lua
//! numbers.
//!
//! Every argument is normalised the way LuaBitOp does it on a double-number Lua 5.1: the
//! number plus 2^52+2^51 leaves the integer part, rounded to nearest-even, in the low 32
//! bits of the double's bit pattern, so any number maps to 32 bits modulo 2^32 (NaN and
//! the infinities give 0). Results are returned as signed 32-bit numbers. An argument that
//! is neither a number nor a numeric string raises
//! `bad argument #N to 'f' (number expected, got T)`.
//!
//! No Rust value with a destructor is ever alive here, so the Lua errors raised by
//! `luaL_typerror` may unwind (longjmp) straight through these functions.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::ffi::{CStr, c_int};

use super::Library;
use mlua_sys::{
    lua_CFunction, lua_State, lua_gettop, lua_isnone, lua_isnumber, lua_pushlstring,
    lua_pushnumber, lua_tonumber, luaL_typerror,
};

/// 2^52 + 2^51: adding it to a double (|x| < 2^51) leaves round(x) in the mantissa's low bits.
const NORMALISE: f64 = 6_755_399_441_055_744.0;

/// Argument `idx` as 32 bits, or a `number expected` argument error.
unsafe fn barg(l: *mut lua_State, idx: c_int) -> u32 {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    let n = unsafe { lua_tonumber(l, idx) };
    let b = (n + NORMALISE).to_bits() as u32;
    if b == 0 && unsafe { lua_isnumber(l, idx) } == 0 {
        unsafe { luaL_typerror(l, idx, c"number".as_ptr()) };
    }
    b
}

/// Pushes `b` as a signed 32-bit number: one result.
unsafe fn bret(l: *mut lua_State, b: u32) -> c_int {
    // SAFETY: `l` is the live state of the running C function.
    unsafe { lua_pushnumber(l, f64::from(b as i32)) };
    1
}

/// Folds all arguments with `op`; the arguments are read from the last to the second,
/// after the first, as LuaBitOp does (so the error names the highest bad argument).
unsafe fn fold(l: *mut lua_State, op: fn(u32, u32) -> u32) -> c_int {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    let mut b = unsafe { barg(l, 1) };
    let mut i = unsafe { lua_gettop(l) };
    while i > 1 {
        b = op(b, unsafe { barg(l, i) });
        i -= 1;
    }
    unsafe { bret(l, b) }
}

/// Applies a shift or rotation by the second argument's low 5 bits.
unsafe fn shift(l: *mut lua_State, op: fn(u32, u32) -> u32) -> c_int {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    let b = unsafe { barg(l, 1) };
    let n = unsafe { barg(l, 2) } & 31;
    unsafe { bret(l, op(b, n)) }
}

unsafe extern "C-unwind" fn tobit(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { bret(l, barg(l, 1)) }
}

unsafe extern "C-unwind" fn bnot(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { bret(l, !barg(l, 1)) }
}

unsafe extern "C-unwind" fn band(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { fold(l, |a, b| a & b) }
}

unsafe extern "C-unwind" fn bor(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { fold(l, |a, b| a | b) }
}

unsafe extern "C-unwind" fn bxor(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { fold(l, |a, b| a ^ b) }
}

unsafe extern "C-unwind" fn lshift(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { shift(l, |b, n| b << n) }
}

unsafe extern "C-unwind" fn rshift(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { shift(l, |b, n| b >> n) }
}

unsafe extern "C-unwind" fn arshift(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { shift(l, |b, n| ((b as i32) >> n) as u32) }
}

unsafe extern "C-unwind" fn rol(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { shift(l, u32::rotate_left) }
}

unsafe extern "C-unwind" fn ror(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { shift(l, u32::rotate_right) }
}

unsafe extern "C-unwind" fn bswap(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { bret(l, barg(l, 1).swap_bytes()) }
}

/// `bit.tohex(x [, n])`: the low |n| hex digits of x (default 8, at most 8), upper case
/// when n is negative.
unsafe extern "C-unwind" fn tohex(l: *mut lua_State) -> c_int {
    // SAFETY (whole fn): called by Lua with a live state.
    let mut b = unsafe { barg(l, 1) };
    let mut n: i32 = if unsafe { lua_isnone(l, 2) } != 0 {
        8
    } else {
        unsafe { barg(l, 2) as i32 }
    };
    // Redis's copy guards -2^31 (whose negation overflows) this way.
    if n == i32::MIN {
        n = i32::MIN + 1;
    }
    let upper = n < 0;
    let count = n.unsigned_abs().min(8) as usize;
    let mut buf = [0u8; 8];
    for slot in buf.iter_mut().take(count).rev() {
        let d = (b & 15) as u8;
        *slot = match (d, upper) {
            (0..=9, _) => b'0' + d,
            (_, false) => b'a' + d - 10,
            (_, true) => b'A' + d - 10,
        };
        b >>= 4;
    }
    unsafe { lua_pushlstring(l, buf.as_ptr().cast(), count) };
    1
}

/// The library's functions by name.
const FUNCS: [(&CStr, lua_CFunction); 12] = [
    (c"tobit", tobit),
    (c"bnot", bnot),
    (c"band", band),
    (c"bor", bor),
    (c"bxor", bxor),
    (c"lshift", lshift),
    (c"rshift", rshift),
    (c"arshift", arshift),
    (c"rol", rol),
    (c"ror", ror),
    (c"bswap", bswap),
    (c"tohex", tohex),
];

/// The library as `open` registers it.
const LIBRARY: Library = Library {
    name: c"bit",
    funcs: &FUNCS,
    info: &[],
    loaded: true,
};

/// Opens the library: builds the `bit` table, sets it as the global `bit` (and, as
/// `luaL_register` does, as `_LOADED.bit` when the registry has a `_LOADED` table), and
/// returns it on the stack.
///
/// # Safety
/// `l` must be a valid Lua 5.1 state; call it through Lua (`lua_pushcfunction` +
/// `lua_call`/`lua_pcall`) or directly with room for a few stack slots.
pub unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    // SAFETY: `l` is a valid state (the caller's contract).
    unsafe { LIBRARY.open(l) }
}

#[cfg(test)]
mod tests {
    use super::super::harness::{Expect, check};

    /// The acceptance list's BIT cases with redis-server 7.0's replies.
    const CASES: &[(&str, Expect)] = &[
        (r#"return bit.band(0xff, 0x0f)"#, Ok(b":15\r\n")),
        (r#"return bit.bor(1, 2, 4)"#, Ok(b":7\r\n")),
        (r#"return bit.bxor(5, 3)"#, Ok(b":6\r\n")),
        (r#"return bit.bnot(0)"#, Ok(b":-1\r\n")),
        (r#"return bit.lshift(1, 31)"#, Ok(b":-2147483648\r\n")),
        (r#"return bit.lshift(1, 32)"#, Ok(b":1\r\n")),
        (r#"return bit.lshift(1, 33)"#, Ok(b":2\r\n")),
        (r#"return bit.rshift(-1, 28)"#, Ok(b":15\r\n")),
        (r#"return bit.arshift(-256, 4)"#, Ok(b":-16\r\n")),
        (r#"return bit.rol(0x12345678, 8)"#, Ok(b":878082066\r\n")),
        (r#"return bit.ror(0x12345678, 8)"#, Ok(b":2014458966\r\n")),
        (r#"return bit.bswap(0x12345678)"#, Ok(b":2018915346\r\n")),
        (r#"return bit.tobit(2^32 + 1)"#, Ok(b":1\r\n")),
        (r#"return bit.tobit(0xffffffff)"#, Ok(b":-1\r\n")),
        (r#"return bit.tobit(1.7)"#, Ok(b":2\r\n")),
        (r#"return bit.tobit(-1.5)"#, Ok(b":-2\r\n")),
        (r#"return bit.tohex(255)"#, Ok(b"$8\r\n000000ff\r\n")),
        (r#"return bit.tohex(-1)"#, Ok(b"$8\r\nffffffff\r\n")),
        (r#"return bit.tohex(255, -4)"#, Ok(b"$4\r\n00FF\r\n")),
        (r#"return bit.tohex(0x12345678, 2)"#, Ok(b"$2\r\n78\r\n")),
        (
            r#"return bit.band()"#,
            Err("user_script:1: bad argument #1 to 'band' (number expected, got no value)"),
        ),
        (
            r#"return bit.band('x')"#,
            Err("user_script:1: bad argument #1 to 'band' (number expected, got string)"),
        ),
        (r#"return bit.band('7', 3)"#, Ok(b":3\r\n")),
        (r#"return bit.band(2^53 + 3, 0xf)"#, Ok(b":2\r\n")),
        (r#"return bit.bor(0x80000000, 0)"#, Ok(b":-2147483648\r\n")),
        (
            r#"return {bit.tobit(0x7fffffff + 1), bit.tobit(-0x80000001)}"#,
            Ok(b"*2\r\n:-2147483648\r\n:2147483647\r\n"),
        ),
    ];

    /// Further edge cases, each checked against redis-server 7.0.15 by hand.
    const EDGES: &[(&str, Expect)] = &[
        (r#"return bit.tobit(0/0)"#, Ok(b":0\r\n")),
        (r#"return bit.tobit(1/0)"#, Ok(b":0\r\n")),
        (r#"return bit.tobit(-1/0)"#, Ok(b":0\r\n")),
        (r#"return bit.tobit(2^52 + 2^51)"#, Ok(b":0\r\n")),
        (r#"return bit.tobit(-2^51 - 1)"#, Ok(b":-2\r\n")),
        (r#"return bit.tobit(0.5)"#, Ok(b":0\r\n")),
        (r#"return bit.tobit(2.5)"#, Ok(b":2\r\n")),
        (r#"return bit.tobit(-0.5)"#, Ok(b":0\r\n")),
        (r#"return bit.tobit('0x10')"#, Ok(b":16\r\n")),
        (r#"return bit.tobit(' 5 ')"#, Ok(b":5\r\n")),
        (r#"return bit.tobit(0)"#, Ok(b":0\r\n")),
        (r#"return bit.tobit(4294967296 * 3 + 7)"#, Ok(b":7\r\n")),
        (r#"return bit.tobit(-4294967296 * 3 - 7)"#, Ok(b":-7\r\n")),
        (
            r#"return bit.tobit(nil)"#,
            Err("user_script:1: bad argument #1 to 'tobit' (number expected, got nil)"),
        ),
        (
            r#"return bit.tobit(true)"#,
            Err("user_script:1: bad argument #1 to 'tobit' (number expected, got boolean)"),
        ),
        (
            r#"return bit.tobit({})"#,
            Err("user_script:1: bad argument #1 to 'tobit' (number expected, got table)"),
        ),
        (
            r#"return bit.tobit()"#,
            Err("user_script:1: bad argument #1 to 'tobit' (number expected, got no value)"),
        ),
        (r#"return bit.bnot(5)"#, Ok(b":-6\r\n")),
        (
            r#"return bit.bnot('x')"#,
            Err("user_script:1: bad argument #1 to 'bnot' (number expected, got string)"),
        ),
        (
            r#"return bit.band(1, 'x', 'y')"#,
            Err("user_script:1: bad argument #3 to 'band' (number expected, got string)"),
        ),
        (
            r#"return bit.band(1, 3, nil)"#,
            Err("user_script:1: bad argument #3 to 'band' (number expected, got nil)"),
        ),
        (r#"return bit.bor(1)"#, Ok(b":1\r\n")),
        (r#"return bit.bxor(1, 2, 4, 8, 16)"#, Ok(b":31\r\n")),
        (r#"return bit.band(0xffffffff, -1)"#, Ok(b":-1\r\n")),
        (
            r#"return bit.lshift(1)"#,
            Err("user_script:1: bad argument #2 to 'lshift' (number expected, got no value)"),
        ),
        (r#"return bit.lshift(1, -1)"#, Ok(b":-2147483648\r\n")),
        (r#"return bit.lshift(1, 64 + 3)"#, Ok(b":8\r\n")),
        (r#"return bit.rshift(0x80000000, 31)"#, Ok(b":1\r\n")),
        (r#"return bit.rshift(-256, 4)"#, Ok(b":268435440\r\n")),
        (r#"return bit.arshift(0x80000000, 31)"#, Ok(b":-1\r\n")),
        (r#"return bit.arshift(256, 4)"#, Ok(b":16\r\n")),
        (r#"return bit.rol(0x80000001, 1)"#, Ok(b":3\r\n")),
        (r#"return bit.rol(5, 0)"#, Ok(b":5\r\n")),
        (r#"return bit.ror(1, 1)"#, Ok(b":-2147483648\r\n")),
        (r#"return bit.ror(5, 32)"#, Ok(b":5\r\n")),
        (r#"return bit.rol(5, -1)"#, Ok(b":-2147483646\r\n")),
        (r#"return bit.bswap(-1)"#, Ok(b":-1\r\n")),
        (r#"return bit.bswap(1)"#, Ok(b":16777216\r\n")),
        (r#"return bit.tohex(255, 0)"#, Ok(b"$0\r\n\r\n")),
        (r#"return bit.tohex(255, 9)"#, Ok(b"$8\r\n000000ff\r\n")),
        (r#"return bit.tohex(255, -9)"#, Ok(b"$8\r\n000000FF\r\n")),
        (r#"return bit.tohex(255, 1.5)"#, Ok(b"$2\r\nff\r\n")),
        (r#"return bit.tohex(-1, -8)"#, Ok(b"$8\r\nFFFFFFFF\r\n")),
        (
            r#"return bit.tohex(255, nil)"#,
            Err("user_script:1: bad argument #2 to 'tohex' (number expected, got nil)"),
        ),
        (
            r#"return bit.tohex(255, 'x')"#,
            Err("user_script:1: bad argument #2 to 'tohex' (number expected, got string)"),
        ),
        (
            r#"return bit.tohex('x')"#,
            Err("user_script:1: bad argument #1 to 'tohex' (number expected, got string)"),
        ),
        (r#"return bit.tohex(0xabcdef, 4)"#, Ok(b"$4\r\ncdef\r\n")),
        (
            r#"return bit.tohex(2^40 + 0x1234)"#,
            Ok(b"$8\r\n00001234\r\n"),
        ),
        (
            r#"return bit.tohex(255, -2^31 + 1)"#,
            Ok(b"$8\r\n000000FF\r\n"),
        ),
        (r#"return bit.tohex(255, 2^31)"#, Ok(b"$8\r\n000000FF\r\n")),
        (r#"return type(bit.tobit)"#, Ok(b"$8\r\nfunction\r\n")),
        (
            r#"local s = {} for k in pairs(bit) do s[#s+1] = k end table.sort(s) return table.concat(s, ',')"#,
            Ok(b"$66\r\narshift,band,bnot,bor,bswap,bxor,lshift,rol,ror,rshift,tobit,tohex\r\n"),
        ),
    ];

    #[test]
    fn acceptance_cases_match_redis() {
        check(CASES);
    }

    #[test]
    fn edge_cases_match_redis() {
        check(EDGES);
    }
}
