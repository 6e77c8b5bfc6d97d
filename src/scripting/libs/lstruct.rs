//! The `struct` library Redis bundles (Roberto Ierusalimschy's struct.c 1.7, with Redis's
//! 32-byte integer limit and its `unpack` offset check): `struct.pack(fmt, ...)`,
//! `struct.unpack(fmt, data [, pos])` and `struct.size(fmt)`.
//!
//! Format options: `>` big endian, `<` little endian (the default, x86-64's native order),
//! `![n]` maximum alignment (default 8), `x` one padding byte, `b`/`B` signed/unsigned
//! char, `h`/`H` short (2 bytes), `l`/`L` long (8), `T` size_t (8), `i[n]`/`I[n]` an
//! integer of n bytes (default 4, at most 32), `f` float, `d` double, `c[n]` n chars (on
//! pack `c0` is the whole string, on unpack the previous result gives the length), `s` a
//! zero-terminated string, and spaces (ignored). The format ends at its first NUL byte.
//!
//! Integers travel through a 64-bit C `long` exactly as in C on x86-64: the Lua number is
//! converted with x86-64's truncating conversions (out-of-range values and NaN become
//! 2^63's bit pattern), bytes beyond the eighth are zero on pack, and unpacked values are
//! sign-extended from the field's top bit (the shift count taken modulo 64, as the CPU
//! does).
//!
//! Lua errors longjmp, so the work is done by Rust functions that return a [`Failure`];
//! the `extern` entry points raise it only after every Rust value with a destructor is
//! gone.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::ffi::{CStr, c_int};

use super::Library;
use super::failure::{
    Failure, check_bytes, check_number, finish, opt_integer, raise, return_string,
};
use crate::scripting::ccast;
use mlua_sys::{
    lua_CFunction, lua_Integer, lua_State, lua_checkstack, lua_isnumber, lua_pop, lua_pushinteger,
    lua_pushlstring, lua_pushnil, lua_pushnumber, lua_tonumber,
};

/// Largest size of an `i`/`I` field.
const MAX_INT_SIZE: i32 = 32;
/// Alignment of `!` without a number: a double's alignment on x86-64.
const MAX_ALIGN: i32 = 8;

/// Byte order and maximum alignment, changed by `<`, `>` and `!`.
struct Header {
    little: bool,
    align: usize,
}

impl Header {
    fn new() -> Self {
        Header {
            little: true,
            align: 1,
        }
    }
}

/// A format string being read, up to its first NUL.
struct Format<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Format<'a> {
    fn new(raw: &'a [u8]) -> Self {
        let bytes = raw.split(|&b| b == 0).next().unwrap_or_default();
        Format { bytes, pos: 0 }
    }

    fn next_opt(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// The decimal number that follows, or `default` when no digit follows.
    fn number(&mut self, default: i32) -> Result<i32, Failure> {
        let mut value: Option<i32> = None;
        while let Some(&c) = self.bytes.get(self.pos)
            && c.is_ascii_digit()
        {
            let digit = i32::from(c - b'0');
            let a = value.unwrap_or(0);
            if a > i32::MAX / 10 || a * 10 > i32::MAX - digit {
                return Err(Failure::Msg(b"integral size overflow".to_vec()));
            }
            value = Some(a * 10 + digit);
            self.pos += 1;
        }
        Ok(value.unwrap_or(default))
    }

    /// The size of option `opt` (reading its number), 0 for options without one.
    fn size(&mut self, opt: u8) -> Result<usize, Failure> {
        Ok(match opt {
            b'B' | b'b' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'x' => 1,
            b'c' => self.number(1)? as usize,
            b'i' | b'I' => {
                let size = self.number(4)?;
                if size > MAX_INT_SIZE {
                    let msg =
                        format!("integral size {size} is larger than limit of {MAX_INT_SIZE}");
                    return Err(Failure::Msg(msg.into_bytes()));
                }
                size as usize
            }
            _ => 0,
        })
    }

    /// Applies a control option (`' '`, `<`, `>`, `!n`); anything else is invalid.
    fn control(&mut self, opt: u8, h: &mut Header) -> Result<(), Failure> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' => h.little = true,
            b'!' => {
                let a = self.number(MAX_ALIGN)?;
                if a <= 0 || a & (a - 1) != 0 {
                    let msg = format!("alignment {a} is not a power of 2");
                    return Err(Failure::Msg(msg.into_bytes()));
                }
                h.align = a as usize;
            }
            _ => {
                let mut msg = b"invalid format option '".to_vec();
                msg.push(opt);
                msg.push(b'\'');
                return Err(Failure::Arg(1, msg));
            }
        }
        Ok(())
    }
}

/// Padding needed before a field of `size` bytes at offset `len`.
fn padding(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    size.wrapping_sub(len & (size - 1)) & (size - 1)
}

fn is_integer_opt(opt: u8) -> bool {
    matches!(
        opt,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

/// The `size` bytes of an integer field holding `n`.
fn put_integer(out: &mut Vec<u8>, n: f64, little: bool, size: usize) {
    let mut value = if n < 0.0 {
        ccast::f64_to_i64(n) as u64
    } else {
        ccast::f64_to_u64(n)
    };
    let mut le = [0u8; MAX_INT_SIZE as usize];
    for b in le.iter_mut().take(size) {
        *b = value as u8;
        value >>= 8;
    }
    let bytes = le.get(..size).unwrap_or_default();
    if little {
        out.extend_from_slice(bytes);
    } else {
        out.extend(bytes.iter().rev());
    }
}

/// The value of an integer field.
fn get_integer(bytes: &[u8], little: bool, signed: bool) -> f64 {
    let mut l: u64 = 0;
    if little {
        for &b in bytes.iter().rev() {
            l = (l << 8) | u64::from(b);
        }
    } else {
        for &b in bytes {
            l = (l << 8) | u64::from(b);
        }
    }
    if !signed {
        return l as f64;
    }
    let bits = (bytes.len() as u32).wrapping_mul(8).wrapping_sub(1);
    let mask = u64::MAX.wrapping_shl(bits);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

/// `struct.pack`'s work: the packed bytes (held by the caller in a `ManuallyDrop`).
unsafe fn pack_into(l: *mut lua_State, out: &mut Vec<u8>) -> Result<(), Failure> {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    let mut fmt = Format::new(unsafe { check_bytes(l, 1) }?);
    // As in C: a nil above the arguments, so a missing one reads "got nil".
    unsafe { lua_pushnil(l) };
    let mut h = Header::new();
    let mut arg: c_int = 2;
    let mut total: usize = 0;
    while let Some(opt) = fmt.next_opt() {
        let mut size = fmt.size(opt)?;
        let pad = padding(total, &h, opt, size);
        total = total.wrapping_add(pad);
        out.resize(out.len() + pad, 0);
        match opt {
            _ if is_integer_opt(opt) => {
                let n = unsafe { check_number(l, arg) }?;
                arg += 1;
                put_integer(out, n, h.little, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = unsafe { check_number(l, arg) }? as f32;
                arg += 1;
                out.extend(if h.little {
                    f.to_le_bytes()
                } else {
                    f.to_be_bytes()
                });
            }
            b'd' => {
                let d = unsafe { check_number(l, arg) }?;
                arg += 1;
                out.extend(if h.little {
                    d.to_le_bytes()
                } else {
                    d.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = unsafe { check_bytes(l, arg) }?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                // As in C, the error names the argument after the string.
                let Some(field) = s.get(..size) else {
                    return Err(Failure::Arg(arg, b"string too short".to_vec()));
                };
                out.extend_from_slice(field);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => fmt.control(opt, &mut h)?,
        }
        total = total.wrapping_add(size);
    }
    Ok(())
}

unsafe extern "C-unwind" fn pack(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { return_string(l, pack_into) }
}

/// The check every field of `unpack` makes.
fn fits(pos: usize, size: usize, len: usize) -> Result<(), Failure> {
    if size <= len && pos <= len - size {
        Ok(())
    } else {
        Err(Failure::Arg(2, b"data string too short".to_vec()))
    }
}

/// `struct.unpack`'s work: pushes the values and the next position, returns their count.
unsafe fn unpack_values(l: *mut lua_State) -> Result<c_int, Failure> {
    // SAFETY (whole fn): `l` is the live state of the running C function; `data` stays at
    // stack index 2 (only values pushed above it are popped).
    let mut fmt = Format::new(unsafe { check_bytes(l, 1) }?);
    let data = unsafe { check_bytes(l, 2) }?;
    let len = data.len();
    let mut pos = unsafe { opt_integer(l, 3, 1) }? as usize;
    if pos == 0 {
        return Err(Failure::Arg(3, b"offset must be 1 or greater".to_vec()));
    }
    pos -= 1;
    let mut h = Header::new();
    let mut n: c_int = 0;
    while let Some(opt) = fmt.next_opt() {
        let mut size = fmt.size(opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size));
        fits(pos, size, len)?;
        if unsafe { lua_checkstack(l, 2) } == 0 {
            return Err(Failure::Msg(b"stack overflow (too many results)".to_vec()));
        }
        let field = data
            .get(pos..)
            .and_then(|rest| rest.get(..size))
            .unwrap_or_default();
        match opt {
            _ if is_integer_opt(opt) => {
                let v = get_integer(field, h.little, opt.is_ascii_lowercase());
                unsafe { lua_pushnumber(l, v) };
                n += 1;
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = field.try_into().unwrap_or_default();
                let f = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                unsafe { lua_pushnumber(l, f64::from(f)) };
                n += 1;
            }
            b'd' => {
                let b: [u8; 8] = field.try_into().unwrap_or_default();
                let d = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                unsafe { lua_pushnumber(l, d) };
                n += 1;
            }
            b'c' => {
                let mut field = field;
                if size == 0 {
                    if n == 0 || unsafe { lua_isnumber(l, -1) } == 0 {
                        return Err(Failure::Msg(b"format 'c0' needs a previous size".to_vec()));
                    }
                    size = ccast::f64_to_u64(unsafe { lua_tonumber(l, -1) }) as usize;
                    unsafe { lua_pop(l, 1) };
                    n -= 1;
                    fits(pos, size, len)?;
                    field = data
                        .get(pos..)
                        .and_then(|rest| rest.get(..size))
                        .unwrap_or_default();
                }
                unsafe { lua_pushlstring(l, field.as_ptr().cast(), field.len()) };
                n += 1;
            }
            b's' => {
                let rest = data.get(pos..).unwrap_or_default();
                let Some(end) = rest.iter().position(|&b| b == 0) else {
                    return Err(Failure::Msg(b"unfinished string in data".to_vec()));
                };
                size = end + 1;
                unsafe { lua_pushlstring(l, rest.as_ptr().cast(), end) };
                n += 1;
            }
            _ => fmt.control(opt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    unsafe { lua_pushinteger(l, pos.wrapping_add(1) as lua_Integer) };
    Ok(n + 1)
}

unsafe extern "C-unwind" fn unpack(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state; the failure is raised by `finish` after
    // `unpack_values` returned.
    unsafe { finish(l, unpack_values(l)) }
}

/// `struct.size`'s work: the size of a format with fixed-size fields only.
unsafe fn format_size(l: *mut lua_State) -> Result<usize, Failure> {
    // SAFETY: `l` is the live state of the running C function.
    let mut fmt = Format::new(unsafe { check_bytes(l, 1) }?);
    let mut h = Header::new();
    let mut pos: usize = 0;
    while let Some(opt) = fmt.next_opt() {
        let size = fmt.size(opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size));
        if opt == b's' {
            return Err(Failure::Arg(1, b"option 's' has no fixed size".to_vec()));
        } else if opt == b'c' && size == 0 {
            return Err(Failure::Arg(1, b"option 'c0' has no fixed size".to_vec()));
        }
        // As in C: letters and digits are never control options here, even invalid ones.
        if !opt.is_ascii_alphanumeric() {
            fmt.control(opt, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos)
}

unsafe extern "C-unwind" fn size(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe {
        match format_size(l) {
            Ok(n) => {
                lua_pushinteger(l, n as lua_Integer);
                1
            }
            Err(failure) => raise(l, failure),
        }
    }
}

/// The library's functions by name.
const FUNCS: [(&CStr, lua_CFunction); 3] = [(c"pack", pack), (c"unpack", unpack), (c"size", size)];

/// The library as `open` registers it.
const LIBRARY: Library = Library {
    name: c"struct",
    funcs: &FUNCS,
    info: &[],
    loaded: true,
};

/// Opens the library: builds the `struct` table, sets it as the global `struct` (and, as
/// `luaL_register` does, as `_LOADED.struct` when the registry has a `_LOADED` table), and
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
    use super::super::harness::{Expect, check, eval};

    /// The acceptance list's STRUCT cases with redis-server 7.0's replies.
    const CASES: &[(&str, Expect)] = &[
        (
            r#"return struct.pack('>I2', 258)"#,
            Ok(b"$2\r\n\x01\x02\r\n"),
        ),
        (
            r#"return struct.pack('<I2', 258)"#,
            Ok(b"$2\r\n\x02\x01\r\n"),
        ),
        (
            r#"return struct.pack('>i4', -2)"#,
            Ok(b"$4\r\n\xff\xff\xff\xfe\r\n"),
        ),
        (
            r#"return struct.pack('<d', 1.5)"#,
            Ok(b"$8\r\n\x00\x00\x00\x00\x00\x00\xf8?\r\n"),
        ),
        (
            r#"return struct.pack('>f', 0.5)"#,
            Ok(b"$4\r\n?\x00\x00\x00\r\n"),
        ),
        (r#"return struct.pack('b', -1)"#, Ok(b"$1\r\n\xff\r\n")),
        (r#"return struct.pack('B', 255)"#, Ok(b"$1\r\n\xff\r\n")),
        (r#"return struct.pack('<h', 1)"#, Ok(b"$2\r\n\x01\x00\r\n")),
        (
            r#"return struct.pack('s', 'abc')"#,
            Ok(b"$4\r\nabc\x00\r\n"),
        ),
        (
            r#"return struct.pack('c3', 'abcdef')"#,
            Ok(b"$3\r\nabc\r\n"),
        ),
        (
            r#"return struct.pack('>I2xI2', 1, 2)"#,
            Ok(b"$5\r\n\x00\x01\x00\x00\x02\r\n"),
        ),
        (
            r#"return struct.pack('<i8', 2^40)"#,
            Ok(b"$8\r\n\x00\x00\x00\x00\x00\x01\x00\x00\r\n"),
        ),
        (
            r#"return struct.pack('>l', 1)"#,
            Ok(b"$8\r\n\x00\x00\x00\x00\x00\x00\x00\x01\r\n"),
        ),
        (
            r#"return struct.pack('>I3', 0x010203)"#,
            Ok(b"$3\r\n\x01\x02\x03\r\n"),
        ),
        (
            r#"return {struct.unpack('>I2', '\1\2')}"#,
            Ok(b"*2\r\n:258\r\n:3\r\n"),
        ),
        (
            r#"return {struct.unpack('<i4', struct.pack('<i4', -7))}"#,
            Ok(b"*2\r\n:-7\r\n:5\r\n"),
        ),
        (
            r#"return {struct.unpack('s', 'abc\0rest')}"#,
            Ok(b"*2\r\n$3\r\nabc\r\n:5\r\n"),
        ),
        (
            r#"return {struct.unpack('c3', 'abcdef')}"#,
            Ok(b"*2\r\n$3\r\nabc\r\n:4\r\n"),
        ),
        (
            r#"return {struct.unpack('>I2I2', '\0\1\0\2')}"#,
            Ok(b"*3\r\n:1\r\n:2\r\n:5\r\n"),
        ),
        (
            r#"return tostring(struct.unpack('<d', struct.pack('<d', 0.1)))"#,
            Ok(b"$3\r\n0.1\r\n"),
        ),
        (r#"return struct.size('i4')"#, Ok(b":4\r\n")),
        (r#"return struct.size('>I2d')"#, Ok(b":10\r\n")),
        (r#"return struct.size('!8bd')"#, Ok(b":16\r\n")),
        (
            r#"return struct.pack('i17', 1)"#,
            Ok(b"$17\r\n\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\r\n"),
        ),
        (
            r#"return struct.pack('i33', 1)"#,
            Err("user_script:1: integral size 33 is larger than limit of 32"),
        ),
        (
            r#"return struct.size('!3i')"#,
            Err("user_script:1: alignment 3 is not a power of 2"),
        ),
        (
            r#"return struct.unpack('>I4', '\1\2')"#,
            Err("user_script:1: bad argument #2 to 'unpack' (data string too short)"),
        ),
        (
            r#"return struct.pack('>I2', 'x')"#,
            Err("user_script:1: bad argument #2 to 'pack' (number expected, got string)"),
        ),
        (
            r#"return struct.pack('y', 1)"#,
            Err("user_script:1: bad argument #1 to 'pack' (invalid format option 'y')"),
        ),
        (
            r#"return {struct.unpack('>I2', '\0\0\1\2', 3)}"#,
            Ok(b"*2\r\n:258\r\n:5\r\n"),
        ),
        (
            r#"return {struct.unpack('<b B', struct.pack('<b B', -5, 250))}"#,
            Ok(b"*3\r\n:-5\r\n:250\r\n:3\r\n"),
        ),
        (r#"return struct.pack('c0', 'abc')"#, Ok(b"$3\r\nabc\r\n")),
        (
            r#"return {struct.unpack('c0', '\3abc')}"#,
            Err("user_script:1: format 'c0' needs a previous size"),
        ),
        (
            r#"return struct.pack()"#,
            Err("user_script:1: bad argument #1 to 'pack' (string expected, got no value)"),
        ),
        (
            r#"return struct.unpack('>I2')"#,
            Err("user_script:1: bad argument #2 to 'unpack' (string expected, got no value)"),
        ),
    ];

    /// Further edge cases, each checked against redis-server 7.0.15 by hand.
    const EDGES: &[(&str, Expect)] = &[
        (
            r#"return struct.pack('>I8', 0/0)"#,
            Ok(b"$8\r\n\x80\x00\x00\x00\x00\x00\x00\x00\r\n"),
        ),
        (
            r#"return struct.pack('>I8', 2^64)"#,
            Ok(b"$8\r\n\x00\x00\x00\x00\x00\x00\x00\x00\r\n"),
        ),
        (
            r#"return struct.pack('>I8', 2^63)"#,
            Ok(b"$8\r\n\x80\x00\x00\x00\x00\x00\x00\x00\r\n"),
        ),
        (
            r#"return struct.pack('>i8', -2^64)"#,
            Ok(b"$8\r\n\x80\x00\x00\x00\x00\x00\x00\x00\r\n"),
        ),
        (
            r#"return struct.pack('>i8', -2^63)"#,
            Ok(b"$8\r\n\x80\x00\x00\x00\x00\x00\x00\x00\r\n"),
        ),
        (
            r#"return struct.pack('>i9', -1)"#,
            Ok(b"$9\r\n\x00\xff\xff\xff\xff\xff\xff\xff\xff\r\n"),
        ),
        (
            r#"return struct.pack('<i9', -1)"#,
            Ok(b"$9\r\n\xff\xff\xff\xff\xff\xff\xff\xff\x00\r\n"),
        ),
        (r#"return struct.pack('i0', 5)"#, Ok(b"$0\r\n\r\n")),
        (
            r#"return {struct.unpack('>i9', '\255\255\255\255\255\255\255\255\255')}"#,
            Ok(b"*2\r\n:-1\r\n:10\r\n"),
        ),
        (
            r#"return {struct.unpack('>i9', '\0\0\0\0\0\0\0\0\1')}"#,
            Ok(b"*2\r\n:1\r\n:10\r\n"),
        ),
        (
            r#"return {struct.unpack('<i16', string.rep('\255', 16))}"#,
            Ok(b"*2\r\n:-1\r\n:17\r\n"),
        ),
        (
            r#"return {struct.unpack('>I0', 'abc')}"#,
            Ok(b"*2\r\n:0\r\n:1\r\n"),
        ),
        (
            r#"return {struct.unpack('>i0', 'abc')}"#,
            Ok(b"*2\r\n:0\r\n:1\r\n"),
        ),
        (
            r#"return {struct.unpack('>i3', '\255\255\254')}"#,
            Ok(b"*2\r\n:-2\r\n:4\r\n"),
        ),
        (
            r#"return {struct.unpack('>I3', '\255\255\254')}"#,
            Ok(b"*2\r\n:16777214\r\n:4\r\n"),
        ),
        (
            r#"return {struct.unpack('>I8', '\255\255\255\255\255\255\255\255')}"#,
            Ok(b"*2\r\n:-9223372036854775808\r\n:9\r\n"),
        ),
        (
            r#"return {struct.unpack('>i8', '\128\0\0\0\0\0\0\0')}"#,
            Ok(b"*2\r\n:-9223372036854775808\r\n:9\r\n"),
        ),
        (r#"return struct.size('y')"#, Ok(b":0\r\n")),
        (
            r#"return struct.size('#')"#,
            Err("user_script:1: bad argument #1 to 'size' (invalid format option '#')"),
        ),
        (
            r#"return struct.size('s')"#,
            Err("user_script:1: bad argument #1 to 'size' (option 's' has no fixed size)"),
        ),
        (
            r#"return struct.size('c0')"#,
            Err("user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size)"),
        ),
        (r#"return struct.size('c5')"#, Ok(b":5\r\n")),
        (r#"return struct.size('!4bi')"#, Ok(b":8\r\n")),
        (r#"return struct.size('!bd')"#, Ok(b":16\r\n")),
        (r#"return struct.size('!2bi')"#, Ok(b":6\r\n")),
        (r#"return struct.size('!8bI3')"#, Ok(b":6\r\n")),
        (r#"return struct.size('!8b i3')"#, Ok(b":6\r\n")),
        (r#"return struct.size('x5')"#, Ok(b":1\r\n")),
        (
            r#"return struct.pack('x5')"#,
            Err("user_script:1: bad argument #1 to 'pack' (invalid format option '5')"),
        ),
        (
            r#"return struct.pack('c5', 'abc')"#,
            Err("user_script:1: bad argument #3 to 'pack' (string too short)"),
        ),
        (
            r#"return struct.pack('bc5', 1, 'abc')"#,
            Err("user_script:1: bad argument #4 to 'pack' (string too short)"),
        ),
        (
            r#"return struct.pack('s', 'a\0b')"#,
            Ok(b"$4\r\na\x00b\x00\r\n"),
        ),
        (
            r#"return struct.pack('i99999999999', 1)"#,
            Err("user_script:1: integral size overflow"),
        ),
        (
            r#"return struct.pack('c99999999999', 1)"#,
            Err("user_script:1: integral size overflow"),
        ),
        (
            r#"return struct.pack('!99999999999')"#,
            Err("user_script:1: integral size overflow"),
        ),
        (r#"return struct.pack('b\0b', 1, 2)"#, Ok(b"$1\r\n\x01\r\n")),
        (
            r#"return struct.pack('>!4bi', 1, 2)"#,
            Ok(b"$8\r\n\x01\x00\x00\x00\x00\x00\x00\x02\r\n"),
        ),
        (
            r#"return struct.pack('<!4bhbib', 1, 2, 3, 4, 5)"#,
            Ok(b"$13\r\n\x01\x00\x02\x00\x03\x00\x00\x00\x04\x00\x00\x00\x05\r\n"),
        ),
        (
            r#"return struct.pack('!4bd', 1, 2)"#,
            Ok(b"$12\r\n\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00@\r\n"),
        ),
        (
            r#"return struct.pack('!bd', 1, 2)"#,
            Ok(b"$16\r\n\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00@\r\n"),
        ),
        (
            r#"return struct.pack('f', 1/3)"#,
            Ok(b"$4\r\n\xab\xaa\xaa>\r\n"),
        ),
        (
            r#"return struct.pack('<f', 1e40)"#,
            Ok(b"$4\r\n\x00\x00\x80\x7f\r\n"),
        ),
        (r#"return struct.pack('b', 300)"#, Ok(b"$1\r\n,\r\n")),
        (r#"return struct.pack('b', 1.9)"#, Ok(b"$1\r\n\x01\r\n")),
        (r#"return struct.pack('b', -1.9)"#, Ok(b"$1\r\n\xff\r\n")),
        (r#"return struct.pack('b', '12')"#, Ok(b"$1\r\n\x0c\r\n")),
        (
            r#"return struct.pack('b')"#,
            Err("user_script:1: bad argument #2 to 'pack' (number expected, got nil)"),
        ),
        (
            r#"return struct.pack('s')"#,
            Err("user_script:1: bad argument #2 to 'pack' (string expected, got nil)"),
        ),
        (r#"return struct.pack('s', 12)"#, Ok(b"$3\r\n12\x00\r\n")),
        (
            r#"return struct.pack('d', nil)"#,
            Err("user_script:1: bad argument #2 to 'pack' (number expected, got nil)"),
        ),
        (
            r#"return struct.pack('T', 1)"#,
            Ok(b"$8\r\n\x01\x00\x00\x00\x00\x00\x00\x00\r\n"),
        ),
        (
            r#"return struct.pack('>L', -1)"#,
            Ok(b"$8\r\n\xff\xff\xff\xff\xff\xff\xff\xff\r\n"),
        ),
        (
            r#"return {struct.unpack('>T', string.rep('\255', 8))}"#,
            Ok(b"*2\r\n:-9223372036854775808\r\n:9\r\n"),
        ),
        (
            r#"return {struct.unpack('>l', string.rep('\255', 8))}"#,
            Ok(b"*2\r\n:-1\r\n:9\r\n"),
        ),
        (
            r#"return {struct.unpack('>L', string.rep('\255', 8))}"#,
            Ok(b"*2\r\n:-9223372036854775808\r\n:9\r\n"),
        ),
        (
            r#"return {struct.unpack('>H', '\255\254')}"#,
            Ok(b"*2\r\n:65534\r\n:3\r\n"),
        ),
        (
            r#"return {struct.unpack('>h', '\255\254')}"#,
            Ok(b"*2\r\n:-2\r\n:3\r\n"),
        ),
        (
            r#"return {struct.unpack('B', 'abc', 0)}"#,
            Err("user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)"),
        ),
        (
            r#"return {struct.unpack('B', 'abc', -1)}"#,
            Err("user_script:1: bad argument #2 to 'unpack' (data string too short)"),
        ),
        (
            r#"return {struct.unpack('B', 'abc', 3)}"#,
            Ok(b"*2\r\n:99\r\n:4\r\n"),
        ),
        (
            r#"return {struct.unpack('B', 'abc', 4)}"#,
            Err("user_script:1: bad argument #2 to 'unpack' (data string too short)"),
        ),
        (
            r#"return {struct.unpack('x', 'abc', 4)}"#,
            Err("user_script:1: bad argument #2 to 'unpack' (data string too short)"),
        ),
        (
            r#"return {struct.unpack('', 'abc', 4)}"#,
            Ok(b"*1\r\n:4\r\n"),
        ),
        (
            r#"return {struct.unpack('', 'abc', 5)}"#,
            Ok(b"*1\r\n:5\r\n"),
        ),
        (
            r#"return {struct.unpack('B', 'abc', 'x')}"#,
            Err("user_script:1: bad argument #3 to 'unpack' (number expected, got string)"),
        ),
        (
            r#"return {struct.unpack('B', 'abc', '2')}"#,
            Ok(b"*2\r\n:98\r\n:3\r\n"),
        ),
        (
            r#"return {struct.unpack('B', 'abc', 2.7)}"#,
            Ok(b"*2\r\n:98\r\n:3\r\n"),
        ),
        (
            r#"return {struct.unpack('s', 'abc')}"#,
            Err("user_script:1: unfinished string in data"),
        ),
        (
            r#"return {struct.unpack('bs', '\1abc\0')}"#,
            Ok(b"*3\r\n:1\r\n$3\r\nabc\r\n:6\r\n"),
        ),
        (
            r#"return {struct.unpack('Bc0', '\3abcdef')}"#,
            Ok(b"*2\r\n$3\r\nabc\r\n:5\r\n"),
        ),
        (
            r#"return {struct.unpack('Bc0', '\9abc')}"#,
            Err("user_script:1: bad argument #2 to 'unpack' (data string too short)"),
        ),
        (
            r#"return {struct.unpack('c0', 'abc')}"#,
            Err("user_script:1: format 'c0' needs a previous size"),
        ),
        (
            r#"return {struct.unpack('xc0', 'abc')}"#,
            Err("user_script:1: format 'c0' needs a previous size"),
        ),
        (
            r#"return {struct.unpack('bxc0', '\2xab')}"#,
            Ok(b"*2\r\n$2\r\nab\r\n:5\r\n"),
        ),
        (
            r#"return {struct.unpack('>f', '\63\0\0\0')}"#,
            Ok(b"*2\r\n:0\r\n:5\r\n"),
        ),
        (
            r#"return tostring(struct.unpack('<f', struct.pack('<f', 0.1)))"#,
            Ok(b"$16\r\n0.10000000149012\r\n"),
        ),
        (
            r#"return {struct.unpack('!4bi', '\1\0\0\0\2\0\0\0')}"#,
            Ok(b"*3\r\n:1\r\n:2\r\n:9\r\n"),
        ),
        (
            r#"return {struct.unpack('y', 'abc')}"#,
            Err("user_script:1: bad argument #1 to 'unpack' (invalid format option 'y')"),
        ),
        (
            r#"return {struct.unpack('!3', 'abc')}"#,
            Err("user_script:1: alignment 3 is not a power of 2"),
        ),
        (
            r#"return {struct.unpack(12, '12')}"#,
            Err("user_script:1: bad argument #1 to 'unpack' (invalid format option '1')"),
        ),
        (
            r#"return {struct.unpack('B', 12)}"#,
            Ok(b"*2\r\n:49\r\n:2\r\n"),
        ),
        (
            r#"return struct.pack(12)"#,
            Err("user_script:1: bad argument #1 to 'pack' (invalid format option '1')"),
        ),
        (
            r#"return struct.size()"#,
            Err("user_script:1: bad argument #1 to 'size' (string expected, got no value)"),
        ),
        (
            r#"return struct.size('i33')"#,
            Err("user_script:1: integral size 33 is larger than limit of 32"),
        ),
        (
            r#"return struct.pack('i', 1.5)"#,
            Ok(b"$4\r\n\x01\x00\x00\x00\r\n"),
        ),
        (
            r#"return struct.pack('I', -1)"#,
            Ok(b"$4\r\n\xff\xff\xff\xff\r\n"),
        ),
        (
            r#"return struct.pack('>I2', 2^16 + 5)"#,
            Ok(b"$2\r\n\x00\x05\r\n"),
        ),
        (
            r#"return struct.pack('<d', 0/0)"#,
            Ok(b"$8\r\n\x00\x00\x00\x00\x00\x00\xf8\xff\r\n"),
        ),
        (
            r#"return {struct.unpack('<d', struct.pack('<d', 1/0))}"#,
            Ok(b"*2\r\n:-9223372036854775808\r\n:9\r\n"),
        ),
        (r#"return struct.pack('B', 2^70)"#, Ok(b"$1\r\n\x00\r\n")),
        (r#"return struct.pack('b', -2^70)"#, Ok(b"$1\r\n\x00\r\n")),
    ];

    #[test]
    fn acceptance_cases_match_redis() {
        check(CASES);
    }

    #[test]
    fn edge_cases_match_redis() {
        check(EDGES);
    }

    #[test]
    fn round_trips_every_integer_width() {
        let chunk = "local out = {} \
            for _, f in ipairs({'>i1', '<i2', '>i3', '<i4', '>i5', '<i7', '>i8', '<I8'}) do \
              for _, v in ipairs({0, 1, -1, 127, -128, 2^31 - 1, -2^31, 2^40 + 3}) do \
                local s = struct.pack(f, v) \
                out[#out + 1] = (struct.unpack(f, s)) \
              end \
            end \
            return table.concat(out, ',')";
        // redis-server 7.0.15's reply to the same script.
        let want = "0,1,-1,127,-128,-1,0,3,0,1,-1,127,-128,-1,0,3,0,1,-1,127,-128,-1,0,3,0,1,-1,127,-128,2147483647,-2147483648,3,0,1,-1,127,-128,2147483647,-2147483648,3,0,1,-1,127,-128,2147483647,-2147483648,1099511627779,0,1,-1,127,-128,2147483647,-2147483648,1099511627779,0,1,1.844674407371e+19,127,1.844674407371e+19,2147483647,1.8446744071562e+19,1099511627779";
        assert_eq!(
            eval(chunk),
            Ok(format!("${}\r\n{want}\r\n", want.len()).into_bytes())
        );
    }
}
