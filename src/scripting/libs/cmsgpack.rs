//! The `cmsgpack` library Redis bundles (lua-cmsgpack 0.4.0): MessagePack encoding of Lua
//! values.
//!
//! - `cmsgpack.pack(v1, ...)` encodes each argument and concatenates the encodings.
//!   Numbers that are exact 64-bit integers use the smallest integer format; other numbers
//!   are a 32-bit float when that is exact (infinities included), else a double. Strings
//!   are raw (fixraw / `0xd9` / `0xda` / `0xdb`). A table whose keys are exactly 1..n is an
//!   array, any other a map (in `next` order). Tables nested 16 deep, and values of other
//!   types, are encoded as nil.
//! - `cmsgpack.unpack(s)` decodes every value of `s` and returns them all;
//!   `unpack_one(s [, offset])` and `unpack_limit(s, limit [, offset])` decode at most 1 /
//!   `limit` values from byte `offset` (0-based) and return first the offset to continue
//!   from (-1 at the end), then the values.
//!
//! Lua errors longjmp: the decoder keeps nothing with a destructor on its frames (Lua may
//! raise `table index is nil` from `lua_settable` mid-way), and the encoder's buffer is
//! held in a `ManuallyDrop` while Lua runs, released explicitly before any error is raised.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::ffi::{CStr, c_int};

use super::Library;
use mlua_sys::{
    LUA_TBOOLEAN, LUA_TNIL, LUA_TNUMBER, LUA_TSTRING, LUA_TTABLE, lua_CFunction, lua_State,
    lua_checkstack, lua_createtable, lua_gettop, lua_insert, lua_next, lua_objlen, lua_pop,
    lua_pushboolean, lua_pushinteger, lua_pushlstring, lua_pushnil, lua_pushnumber, lua_pushvalue,
    lua_rawgeti_, lua_settable, lua_settop, lua_toboolean, lua_tolstring, lua_tonumber, lua_type,
};

use super::failure::{Failure, check_bytes, check_integer, finish, opt_integer, return_string};
use crate::scripting::ccast;

/// Tables nested this deep are encoded as nil (this also stops reference cycles).
const MAX_NESTING: u32 = 16;

/// A stack-growth failure: `luaL_checkstack`'s message.
fn stack_overflow(what: &str) -> Failure {
    Failure::Msg(format!("stack overflow ({what})").into_bytes())
}

// ------------------------------------------------------------------ encoding

fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        buf.push(0xa0 | len as u8);
    } else if len <= 0xff {
        buf.extend([0xd9, len as u8]);
    } else if len <= 0xffff {
        buf.push(0xda);
        buf.extend((len as u16).to_be_bytes());
    } else {
        buf.push(0xdb);
        buf.extend((len as u32).to_be_bytes());
    }
    buf.extend_from_slice(s);
}

fn encode_double(buf: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if d == f64::from(f) {
        buf.push(0xca);
        buf.extend(f.to_be_bytes());
    } else {
        buf.push(0xcb);
        buf.extend(d.to_be_bytes());
    }
}

fn encode_int(buf: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            buf.push(n as u8);
        } else if n <= 0xff {
            buf.extend([0xcc, n as u8]);
        } else if n <= 0xffff {
            buf.push(0xcd);
            buf.extend((n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            buf.push(0xce);
            buf.extend((n as u32).to_be_bytes());
        } else {
            buf.push(0xcf);
            buf.extend((n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        buf.push(n as u8);
    } else if n >= -128 {
        buf.extend([0xd0, n as u8]);
    } else if n >= -32768 {
        buf.push(0xd1);
        buf.extend((n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        buf.push(0xd2);
        buf.extend((n as i32).to_be_bytes());
    } else {
        buf.push(0xd3);
        buf.extend(n.to_be_bytes());
    }
}

/// An array or map header: `fix` is 0x90 or 0x80, `wide16` 0xdc or 0xde (`wide32` follows).
fn encode_header(buf: &mut Vec<u8>, n: u64, fix: u8, wide16: u8) {
    if n <= 15 {
        buf.push(fix | n as u8);
    } else if n <= 0xffff {
        buf.push(wide16);
        buf.extend((n as u16).to_be_bytes());
    } else {
        buf.push(wide16 + 1);
        buf.extend((n as u32).to_be_bytes());
    }
}

fn encode_number(buf: &mut Vec<u8>, n: f64) {
    // lua-cmsgpack's test: not infinite and (int64_t)n == n, with x86-64's conversion.
    let i = ccast::f64_to_i64(n);
    if !n.is_infinite() && i as f64 == n {
        encode_int(buf, i);
    } else {
        encode_double(buf, n);
    }
}

/// Whether the table at the top has exactly the keys 1..n (the empty table included).
unsafe fn table_is_array(l: *mut lua_State) -> Result<bool, Failure> {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    unsafe {
        let top = lua_gettop(l);
        if lua_checkstack(l, 2) == 0 {
            return Err(stack_overflow("in function table_is_an_array"));
        }
        let (mut count, mut max) = (0i32, 0i32);
        lua_pushnil(l);
        while lua_next(l, -2) != 0 {
            lua_pop(l, 1);
            if lua_type(l, -1) != LUA_TNUMBER {
                lua_settop(l, top);
                return Ok(false);
            }
            let n = lua_tonumber(l, -1);
            if n <= 0.0 || n.is_infinite() || f64::from(ccast::f64_to_i32(n)) != n {
                lua_settop(l, top);
                return Ok(false);
            }
            if n > f64::from(max) {
                max = n as i32;
            }
            count = count.wrapping_add(1);
        }
        lua_settop(l, top);
        Ok(max == count)
    }
}

/// Encodes the table at the top (popped by the caller).
unsafe fn encode_table(l: *mut lua_State, buf: &mut Vec<u8>, level: u32) -> Result<(), Failure> {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    unsafe {
        if table_is_array(l)? {
            let len = lua_objlen(l, -1);
            encode_header(buf, len as u64, 0x90, 0xdc);
            if lua_checkstack(l, 1) == 0 {
                return Err(stack_overflow("in function mp_encode_lua_table_as_array"));
            }
            // The keys are exactly 1..len, so raw reads see what `lua_gettable` would.
            let len = c_int::try_from(len).unwrap_or(c_int::MAX);
            for j in 1..=len {
                lua_rawgeti_(l, -1, j);
                encode_value(l, buf, level + 1)?;
            }
        } else {
            if lua_checkstack(l, 3) == 0 {
                return Err(stack_overflow("in function mp_encode_lua_table_as_map"));
            }
            let mut len: u64 = 0;
            lua_pushnil(l);
            while lua_next(l, -2) != 0 {
                lua_pop(l, 1);
                len += 1;
            }
            encode_header(buf, len, 0x80, 0xde);
            lua_pushnil(l);
            while lua_next(l, -2) != 0 {
                lua_pushvalue(l, -2);
                encode_value(l, buf, level + 1)?; // the key's copy
                encode_value(l, buf, level + 1)?; // the value
            }
        }
    }
    Ok(())
}

/// Encodes the value at the top and pops it.
unsafe fn encode_value(l: *mut lua_State, buf: &mut Vec<u8>, level: u32) -> Result<(), Failure> {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    unsafe {
        let mut t = lua_type(l, -1);
        if t == LUA_TTABLE && level == MAX_NESTING {
            t = LUA_TNIL;
        }
        match t {
            LUA_TSTRING => {
                let mut len = 0;
                let p = lua_tolstring(l, -1, &mut len);
                encode_bytes(buf, std::slice::from_raw_parts(p.cast(), len));
            }
            LUA_TBOOLEAN => buf.push(if lua_toboolean(l, -1) != 0 {
                0xc3
            } else {
                0xc2
            }),
            LUA_TNUMBER => encode_number(buf, lua_tonumber(l, -1)),
            LUA_TTABLE => encode_table(l, buf, level)?,
            _ => buf.push(0xc0),
        }
        lua_pop(l, 1);
    }
    Ok(())
}

/// `cmsgpack.pack`'s work: every argument's encoding, in order, appended to `buf`.
unsafe fn pack_into(l: *mut lua_State, buf: &mut Vec<u8>) -> Result<(), Failure> {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    unsafe {
        let nargs = lua_gettop(l);
        if nargs == 0 {
            return Err(Failure::Arg(0, b"MessagePack pack needs input.".to_vec()));
        }
        if lua_checkstack(l, nargs) == 0 {
            return Err(Failure::Arg(
                0,
                b"Too many arguments for MessagePack pack.".to_vec(),
            ));
        }
        for i in 1..=nargs {
            if lua_checkstack(l, 1) == 0 {
                return Err(stack_overflow("in function mp_check"));
            }
            lua_pushvalue(l, i);
            encode_value(l, buf, 0)?;
        }
    }
    Ok(())
}

unsafe extern "C-unwind" fn pack(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { return_string(l, pack_into) }
}

// ------------------------------------------------------------------ decoding

/// Why decoding stopped. `Copy`, so decoding frames never own anything to drop.
#[derive(Clone, Copy, Debug)]
enum DecodeError {
    /// The input ended inside a value.
    Eof,
    /// A type byte this library does not decode.
    BadFormat,
    /// The Lua stack cannot grow (the `luaL_checkstack` message's detail).
    Stack(&'static str),
}

/// The unread part of the input.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// The next `n` bytes, without consuming them.
    fn need(&self, n: usize) -> Result<&'a [u8], DecodeError> {
        self.rest.get(..n).ok_or(DecodeError::Eof)
    }

    fn consume(&mut self, n: usize) {
        self.rest = self.rest.get(n..).unwrap_or_default();
    }

    /// A big-endian unsigned length of `width` bytes after the type byte.
    fn length(&self, width: usize) -> Result<usize, DecodeError> {
        let b = self.need(1 + width)?;
        Ok(b.iter()
            .skip(1)
            .fold(0usize, |acc, &x| (acc << 8) | usize::from(x)))
    }

    /// `N` bytes after the type byte, consuming them and the type byte.
    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let b = self.need(1 + N)?;
        let out = b
            .get(1..)
            .and_then(|x| x.try_into().ok())
            .ok_or(DecodeError::Eof)?;
        self.consume(1 + N);
        Ok(out)
    }
}

/// Pushes `len` raw bytes that start `skip` bytes into the cursor, consuming both.
unsafe fn push_raw(
    l: *mut lua_State,
    c: &mut Cursor,
    skip: usize,
    len: usize,
) -> Result<(), DecodeError> {
    let end = skip.checked_add(len).ok_or(DecodeError::Eof)?;
    let bytes = c.need(end)?.get(skip..).unwrap_or_default();
    // SAFETY: `l` is live; Lua copies the bytes.
    unsafe { lua_pushlstring(l, bytes.as_ptr().cast(), bytes.len()) };
    c.consume(end);
    Ok(())
}

/// A container being filled by [`decode_value`].
#[derive(Clone, Copy, Default)]
struct Open {
    /// Elements (arrays) or pairs (maps) still to decode.
    remaining: u32,
    /// The next array index.
    index: i32,
    map: bool,
    /// A map's key is on the stack, its value comes next.
    have_key: bool,
}

/// Deepest nesting [`decode_value`] tracks. Lua refuses to grow a C function's stack past
/// 8000 slots and every open container holds two (the table and an index or key), so the
/// stack check always fails first.
const MAX_DEPTH: usize = 4096;

/// Decodes the type byte of one value: pushes a scalar (`None`), or a new table for a
/// container and returns whether it is a map and its length.
unsafe fn decode_item(
    l: *mut lua_State,
    c: &mut Cursor,
) -> Result<Option<(bool, u32)>, DecodeError> {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    unsafe {
        let &[tag, ..] = c.need(1)? else {
            return Err(DecodeError::Eof);
        };
        if lua_checkstack(l, 1) == 0 {
            return Err(DecodeError::Stack(
                "too many return values at once; use unpack_one or unpack_limit instead.",
            ));
        }
        let container = match tag {
            0xdc..=0xdf => {
                let width = if tag & 1 == 0 { 2 } else { 4 };
                let len = c.length(width)?;
                c.consume(1 + width);
                Some((tag >= 0xde, u32::try_from(len).unwrap_or(u32::MAX)))
            }
            0x80..=0x9f => {
                c.consume(1);
                Some((tag < 0x90, u32::from(tag & 0xf)))
            }
            _ => None,
        };
        if let Some((map, _)) = container {
            lua_createtable(l, 0, 0);
            if !map && lua_checkstack(l, 1) == 0 {
                return Err(DecodeError::Stack("in function mp_decode_to_lua_array"));
            }
            return Ok(container);
        }
        match tag {
            0xcc => lua_pushnumber(l, f64::from(u8::from_be_bytes(c.fixed()?))),
            0xd0 => lua_pushnumber(l, f64::from(i8::from_be_bytes(c.fixed()?))),
            0xcd => lua_pushnumber(l, f64::from(u16::from_be_bytes(c.fixed()?))),
            0xd1 => lua_pushnumber(l, f64::from(i16::from_be_bytes(c.fixed()?))),
            0xce => lua_pushnumber(l, f64::from(u32::from_be_bytes(c.fixed()?))),
            0xd2 => lua_pushnumber(l, f64::from(i32::from_be_bytes(c.fixed()?))),
            0xcf => lua_pushnumber(l, u64::from_be_bytes(c.fixed()?) as f64),
            0xd3 => lua_pushnumber(l, i64::from_be_bytes(c.fixed()?) as f64),
            0xca => lua_pushnumber(l, f64::from(f32::from_be_bytes(c.fixed()?))),
            0xcb => lua_pushnumber(l, f64::from_be_bytes(c.fixed()?)),
            0xc0 => {
                lua_pushnil(l);
                c.consume(1);
            }
            0xc2 | 0xc3 => {
                lua_pushboolean(l, c_int::from(tag == 0xc3));
                c.consume(1);
            }
            0xd9 => push_raw(l, c, 2, c.length(1)?)?,
            0xda => push_raw(l, c, 3, c.length(2)?)?,
            0xdb => push_raw(l, c, 5, c.length(4)?)?,
            0x00..=0x7f => {
                lua_pushnumber(l, f64::from(tag));
                c.consume(1);
            }
            0xe0..=0xff => {
                lua_pushnumber(l, f64::from(tag as i8));
                c.consume(1);
            }
            0xa0..=0xbf => push_raw(l, c, 1, usize::from(tag & 0x1f))?,
            _ => return Err(DecodeError::BadFormat),
        }
        Ok(None)
    }
}

/// Decodes one value and pushes it. Nested containers are tracked in a fixed array rather
/// than by recursion, so deep input costs no native stack; the Lua calls are the same, in
/// the same order, as lua-cmsgpack's recursive decoder (so its stack limits hold).
/// `lua_settable` may raise (a nil or NaN map key): nothing here has a destructor.
/// `open` is scratch space (any content), at least [`MAX_DEPTH`] long.
unsafe fn decode_value(
    l: *mut lua_State,
    c: &mut Cursor,
    open: &mut [Open],
) -> Result<(), DecodeError> {
    let mut depth = 0usize;
    // SAFETY (whole fn): `l` is the live state of the running C function.
    unsafe {
        loop {
            if let Some((map, len)) = decode_item(l, c)?
                && len > 0
            {
                let slot = open.get_mut(depth).ok_or(DecodeError::Stack(
                    "too many return values at once; use unpack_one or unpack_limit instead.",
                ))?;
                *slot = Open {
                    remaining: len,
                    index: 2,
                    map,
                    have_key: false,
                };
                depth += 1;
                if !map {
                    lua_pushnumber(l, 1.0);
                }
                continue;
            }
            // A whole value is at the top: store it in its container, closing those
            // that are complete.
            loop {
                let Some(top) = depth.checked_sub(1).and_then(|d| open.get_mut(d)) else {
                    return Ok(());
                };
                if top.map && !top.have_key {
                    top.have_key = true;
                    break;
                }
                lua_settable(l, -3);
                top.have_key = false;
                top.remaining -= 1;
                if top.remaining == 0 {
                    depth -= 1;
                    continue;
                }
                if !top.map {
                    lua_pushnumber(l, f64::from(top.index));
                    top.index = top.index.wrapping_add(1);
                }
                break;
            }
        }
    }
}

/// The shared body of `unpack`, `unpack_one` and `unpack_limit`: the input is argument 1;
/// `limit == 0 && offset == 0` means every value and no offset result.
unsafe fn unpack_full(l: *mut lua_State, limit: i64, offset: i64) -> Result<c_int, Failure> {
    // SAFETY (whole fn): `l` is the live state of the running C function; the input stays
    // at index 1 while it is read.
    unsafe {
        let s = check_bytes(l, 1)?;
        let len = s.len();
        if offset < 0 || limit < 0 {
            // lua-cmsgpack prints the input's length as the "limit".
            let msg = format!(
                "Invalid request to unpack with offset of {} and limit of {}.",
                offset as i32, len as i32
            );
            return Err(Failure::Msg(msg.into_bytes()));
        }
        if offset as u64 > len as u64 {
            let msg = format!(
                "Start offset {} greater than input length {}.",
                offset as i32, len as i32
            );
            return Err(Failure::Msg(msg.into_bytes()));
        }
        let decode_all = limit == 0 && offset == 0;
        let limit = if decode_all {
            i64::from(i32::MAX)
        } else {
            limit
        };
        let mut c = Cursor {
            rest: s.get(offset as usize..).unwrap_or_default(),
        };
        let mut count: c_int = 0;
        let mut open = [Open::default(); MAX_DEPTH];
        while !c.rest.is_empty() && i64::from(count) < limit {
            match decode_value(l, &mut c, &mut open) {
                Ok(()) => {}
                Err(DecodeError::Eof) => {
                    return Err(Failure::Msg(b"Missing bytes in input.".to_vec()));
                }
                Err(DecodeError::BadFormat) => {
                    return Err(Failure::Msg(b"Bad data format in input.".to_vec()));
                }
                Err(DecodeError::Stack(what)) => return Err(stack_overflow(what)),
            }
            count += 1;
        }
        if !decode_all {
            if lua_checkstack(l, 1) == 0 {
                return Err(stack_overflow("in function mp_unpack_full"));
            }
            let next = if c.rest.is_empty() {
                -1
            } else {
                (len - c.rest.len()) as i64
            };
            lua_pushinteger(l, next as _);
            lua_insert(l, 2);
            count += 1;
        }
        Ok(count)
    }
}

unsafe extern "C-unwind" fn unpack(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { finish(l, unpack_full(l, 0, 0)) }
}

unsafe fn unpack_one_body(l: *mut lua_State) -> Result<c_int, Failure> {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    unsafe {
        let offset = opt_integer(l, 2, 0)?;
        lua_pop(l, lua_gettop(l) - 1);
        unpack_full(l, 1, offset)
    }
}

unsafe extern "C-unwind" fn unpack_one(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { finish(l, unpack_one_body(l)) }
}

unsafe fn unpack_limit_body(l: *mut lua_State) -> Result<c_int, Failure> {
    // SAFETY (whole fn): `l` is the live state of the running C function.
    unsafe {
        let limit = check_integer(l, 2)?;
        let offset = opt_integer(l, 3, 0)?;
        lua_pop(l, lua_gettop(l) - 1);
        unpack_full(l, limit, offset)
    }
}

unsafe extern "C-unwind" fn unpack_limit(l: *mut lua_State) -> c_int {
    // SAFETY: called by Lua with a live state.
    unsafe { finish(l, unpack_limit_body(l)) }
}

/// The library's functions by name.
const FUNCS: [(&CStr, lua_CFunction); 4] = [
    (c"pack", pack),
    (c"unpack", unpack),
    (c"unpack_one", unpack_one),
    (c"unpack_limit", unpack_limit),
];

/// The library's metadata fields.
const INFO: [(&CStr, &CStr); 4] = [
    (c"_NAME", c"cmsgpack"),
    (c"_VERSION", c"lua-cmsgpack 0.4.0"),
    (c"_COPYRIGHT", c"Copyright (C) 2012, Salvatore Sanfilippo"),
    (c"_DESCRIPTION", c"MessagePack C implementation for Lua"),
];

/// The library as `open` registers it.
const LIBRARY: Library = Library {
    name: c"cmsgpack",
    funcs: &FUNCS,
    info: &INFO,
    loaded: false,
};

/// Opens the library: builds the `cmsgpack` table, sets it as the global `cmsgpack` and
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

    /// The acceptance list's CMSGPACK cases with redis-server 7.0's replies.
    const CASES: &[(&str, Expect)] = &[
    (r#"return cmsgpack.pack(1)"#, Ok(b"$1\r\n\x01\r\n")),
    (r#"return cmsgpack.pack(-1)"#, Ok(b"$1\r\n\xff\r\n")),
    (r#"return cmsgpack.pack(127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296)"#, Ok(b"$30\r\n\x7f\xcc\x80\xcc\xff\xcd\x01\x00\xcd\xff\xff\xce\x00\x01\x00\x00\xce\xff\xff\xff\xff\xcf\x00\x00\x00\x01\x00\x00\x00\x00\r\n")),
    (r#"return cmsgpack.pack(-32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649)"#, Ok(b"$30\r\n\xe0\xd0\xdf\xd0\x80\xd1\xff\x7f\xd1\x80\x00\xd2\xff\xff\x7f\xff\xd2\x80\x00\x00\x00\xd3\xff\xff\xff\xff\x7f\xff\xff\xff\r\n")),
    (r#"return cmsgpack.pack(1.5)"#, Ok(b"$5\r\n\xca?\xc0\x00\x00\r\n")),
    (r#"return cmsgpack.pack(0.1)"#, Ok(b"$9\r\n\xcb?\xb9\x99\x99\x99\x99\x99\x9a\r\n")),
    (r#"return cmsgpack.pack(1e300)"#, Ok(b"$9\r\n\xcb~7\xe4<\x88\x00u\x9c\r\n")),
    (r#"return cmsgpack.pack(1/0)"#, Ok(b"$5\r\n\xca\x7f\x80\x00\x00\r\n")),
    (r#"return cmsgpack.pack(2^63)"#, Ok(b"$5\r\n\xca_\x00\x00\x00\r\n")),
    (r#"return cmsgpack.pack('')"#, Ok(b"$1\r\n\xa0\r\n")),
    (r#"return cmsgpack.pack(string.rep('x', 31))"#, Ok(b"$32\r\n\xbfxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n")),
    (r#"return cmsgpack.pack(string.rep('x', 32))"#, Ok(b"$34\r\n\xd9 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n")),
    (r#"local s = cmsgpack.pack(string.rep('x', 256)) return {#s, s:sub(1, 4)}"#, Ok(b"*2\r\n:259\r\n$4\r\n\xda\x01\x00x\r\n")),
    (r#"local s = cmsgpack.pack(string.rep('x', 65536)) return {#s, s:sub(1, 6)}"#, Ok(b"*2\r\n:65541\r\n$6\r\n\xdb\x00\x01\x00\x00x\r\n")),
    (r#"return cmsgpack.pack(true, false)"#, Ok(b"$2\r\n\xc3\xc2\r\n")),
    (r#"return cmsgpack.pack(nil)"#, Ok(b"$1\r\n\xc0\r\n")),
    (r#"return cmsgpack.pack({})"#, Ok(b"$1\r\n\x90\r\n")),
    (r#"return cmsgpack.pack({1, 2, 3})"#, Ok(b"$4\r\n\x93\x01\x02\x03\r\n")),
    (r#"return cmsgpack.pack({a = 1})"#, Ok(b"$4\r\n\x81\xa1a\x01\r\n")),
    (r#"local t = {} for i = 1, 15 do t[i] = i end return cmsgpack.pack(t)"#, Ok(b"$16\r\n\x9f\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\r\n")),
    (r#"local t = {} for i = 1, 16 do t[i] = i end return cmsgpack.pack(t)"#, Ok(b"$19\r\n\xdc\x00\x10\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\r\n")),
    (r#"return cmsgpack.pack({1, nil, 3})"#, Ok(b"$5\r\n\x82\x01\x01\x03\x03\r\n")),
    (r#"return cmsgpack.pack({[1] = 'a', [3] = 'b'})"#, Ok(b"$7\r\n\x82\x01\xa1a\x03\xa1b\r\n")),
    (r#"local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return cmsgpack.pack(t)"#, Ok(b"$17\r\n\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\xc0\r\n")),
    (r#"return cmsgpack.pack({{1, {2}}, 'x'})"#, Ok(b"$7\r\n\x92\x92\x01\x91\x02\xa1x\r\n")),
    (r#"return cmsgpack.pack(function() end)"#, Ok(b"$1\r\n\xc0\r\n")),
    (r#"return cmsgpack.unpack(cmsgpack.pack({1, 2, {3, 'x'}}))"#, Ok(b"*3\r\n:1\r\n:2\r\n*2\r\n:3\r\n$1\r\nx\r\n")),
    (r#"return {cmsgpack.unpack(cmsgpack.pack(1, 'two', 3))}"#, Ok(b"*3\r\n:1\r\n$3\r\ntwo\r\n:3\r\n")),
    (r#"return cmsgpack.unpack('\147\1\2\3')"#, Ok(b"*3\r\n:1\r\n:2\r\n:3\r\n")),
    (r#"return cmsgpack.unpack('\204\200')"#, Ok(b":200\r\n")),
    (r#"return tostring(cmsgpack.unpack('\203\63\248\0\0\0\0\0\0'))"#, Ok(b"$3\r\n1.5\r\n")),
    (r#"return cmsgpack.unpack('\192')"#, Ok(b"$-1\r\n")),
    (r#"return tostring(cmsgpack.unpack('\195'))"#, Ok(b"$4\r\ntrue\r\n")),
    (r#"return cmsgpack.unpack('\129\161\97\1').a"#, Ok(b":1\r\n")),
    (r#"return cmsgpack.unpack('\211\255\255\255\255\255\255\255\254')"#, Ok(b":-2\r\n")),
    (r#"return cmsgpack.unpack('\217\3abc')"#, Ok(b"$3\r\nabc\r\n")),
    (r#"return cmsgpack.unpack('')"#, Ok(b"$-1\r\n")),
    (r#"return cmsgpack.unpack('\193')"#, Err("user_script:1: Bad data format in input.")),
    (r#"return cmsgpack.unpack('\146\1')"#, Err("user_script:1: Missing bytes in input.")),
    (r#"return cmsgpack.unpack('\205\1')"#, Err("user_script:1: Missing bytes in input.")),
    (r#"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2), 0)}"#, Ok(b"*2\r\n:1\r\n:1\r\n")),
    (r#"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}"#, Ok(b"*3\r\n:2\r\n:1\r\n:2\r\n")),
    (r#"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2), 1)}"#, Ok(b"*2\r\n:-1\r\n:2\r\n")),
    (r#"return cmsgpack.pack()"#, Err("user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)")),
    (r#"return cmsgpack.unpack()"#, Err("user_script:1: bad argument #1 to 'unpack' (string expected, got no value)")),
    (r#"return cmsgpack.unpack(cmsgpack.pack({a = {b = 'c'}})).a.b"#, Ok(b"$1\r\nc\r\n")),
    (r#"return tostring(cmsgpack.unpack(cmsgpack.pack(0.1)))"#, Ok(b"$3\r\n0.1\r\n")),
    (r#"return {cmsgpack._NAME, cmsgpack._VERSION}"#, Ok(b"*2\r\n$8\r\ncmsgpack\r\n$18\r\nlua-cmsgpack 0.4.0\r\n")),
    ];

    /// Further edge cases, each checked against redis-server 7.0.15 by hand.
    const EDGES: &[(&str, Expect)] = &[
        (
            r#"return cmsgpack.pack(0/0)"#,
            Ok(b"$9\r\n\xcb\xff\xf8\x00\x00\x00\x00\x00\x00\r\n"),
        ),
        (
            r#"return cmsgpack.pack(-1/0)"#,
            Ok(b"$5\r\n\xca\xff\x80\x00\x00\r\n"),
        ),
        (
            r#"return cmsgpack.pack(-2^63)"#,
            Ok(b"$9\r\n\xd3\x80\x00\x00\x00\x00\x00\x00\x00\r\n"),
        ),
        (
            r#"return cmsgpack.pack(2^64)"#,
            Ok(b"$5\r\n\xca_\x80\x00\x00\r\n"),
        ),
        (
            r#"return cmsgpack.pack(2^53 + 2)"#,
            Ok(b"$9\r\n\xcf\x00 \x00\x00\x00\x00\x00\x02\r\n"),
        ),
        (r#"return cmsgpack.pack(-0.0)"#, Ok(b"$1\r\n\x00\r\n")),
        (
            r#"return cmsgpack.pack(-1.5)"#,
            Ok(b"$5\r\n\xca\xbf\xc0\x00\x00\r\n"),
        ),
        (
            r#"return cmsgpack.pack(3.4e38)"#,
            Ok(b"$9\r\n\xcbG\xef\xf93\xc7\x8c\xdf\xad\r\n"),
        ),
        (
            r#"return cmsgpack.pack(1e-300)"#,
            Ok(b"$9\r\n\xcb\x01\xa5n\x1f\xc2\xf8\xf3Y\r\n"),
        ),
        (
            r#"return cmsgpack.pack('a', {b = true}, false)"#,
            Ok(b"$7\r\n\xa1a\x81\xa1b\xc3\xc2\r\n"),
        ),
        (
            r#"return cmsgpack.pack({[1.5] = 1})"#,
            Ok(b"$7\r\n\x81\xca?\xc0\x00\x00\x01\r\n"),
        ),
        (
            r#"return cmsgpack.pack({[0] = 1})"#,
            Ok(b"$3\r\n\x81\x00\x01\r\n"),
        ),
        (
            r#"return cmsgpack.pack({[-1] = 1})"#,
            Ok(b"$3\r\n\x81\xff\x01\r\n"),
        ),
        (
            r#"return cmsgpack.pack({[2^31] = 1})"#,
            Ok(b"$7\r\n\x81\xce\x80\x00\x00\x00\x01\r\n"),
        ),
        (
            r#"return cmsgpack.pack({[true] = 1})"#,
            Ok(b"$3\r\n\x81\xc3\x01\r\n"),
        ),
        (
            r#"return cmsgpack.pack({{}, {{}}})"#,
            Ok(b"$4\r\n\x92\x90\x91\x90\r\n"),
        ),
        (
            r#"return cmsgpack.pack({['1'] = 'x'})"#,
            Ok(b"$5\r\n\x81\xa11\xa1x\r\n"),
        ),
        (
            r#"local t = {} for i = 1, 16 do t['k' .. i] = i end return #cmsgpack.pack(t)"#,
            Ok(b":74\r\n"),
        ),
        (
            r#"local t = {} for i = 1, 16 do t['k' .. i] = i end return cmsgpack.pack(t):sub(1, 3)"#,
            Ok(b"$3\r\n\xde\x00\x10\r\n"),
        ),
        (
            r#"local t = {} for i = 1, 65536 do t[i] = true end local s = cmsgpack.pack(t) return {#s, s:sub(1, 6)}"#,
            Ok(b"*2\r\n:65541\r\n$6\r\n\xdd\x00\x01\x00\x00\xc3\r\n"),
        ),
        (
            r#"local t = {} t[1] = t return cmsgpack.pack(t)"#,
            Ok(b"$17\r\n\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\xc0\r\n"),
        ),
        (
            r#"local t = {} t.a = t return #cmsgpack.pack(t)"#,
            Ok(b":49\r\n"),
        ),
        (
            r#"local t = setmetatable({}, {__index = function() return 1 end}) t[1] = 5 return cmsgpack.pack(t)"#,
            Ok(b"$2\r\n\x91\x05\r\n"),
        ),
        (
            r#"return cmsgpack.pack(coroutine.create(function() end))"#,
            Ok(b"$1\r\n\xc0\r\n"),
        ),
        (
            r#"return cmsgpack.pack(nil, nil)"#,
            Ok(b"$2\r\n\xc0\xc0\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\196\1a')"#,
            Err("user_script:1: Bad data format in input."),
        ),
        (
            r#"return cmsgpack.unpack('\212\1a')"#,
            Err("user_script:1: Bad data format in input."),
        ),
        (
            r#"return cmsgpack.unpack('\223\0\0\0\1\161a\1').a"#,
            Ok(b":1\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\221\0\0\0\2\1\2')"#,
            Ok(b"*2\r\n:1\r\n:2\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\220\0\2\1\2')"#,
            Ok(b"*2\r\n:1\r\n:2\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\222\0\1\161a\1').a"#,
            Ok(b":1\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\218\0\3abc')"#,
            Ok(b"$3\r\nabc\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\219\0\0\0\3abc')"#,
            Ok(b"$3\r\nabc\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\219\0\0\0\9abc')"#,
            Err("user_script:1: Missing bytes in input."),
        ),
        (
            r#"return cmsgpack.unpack('\218\0')"#,
            Err("user_script:1: Missing bytes in input."),
        ),
        (
            r#"return cmsgpack.unpack('\217\9abc')"#,
            Err("user_script:1: Missing bytes in input."),
        ),
        (
            r#"return cmsgpack.unpack('\217')"#,
            Err("user_script:1: Missing bytes in input."),
        ),
        (
            r#"return cmsgpack.unpack('\164abc')"#,
            Err("user_script:1: Missing bytes in input."),
        ),
        (
            r#"return cmsgpack.unpack('\202\63\192\0\0') * 10"#,
            Ok(b":15\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\202\63\192\0')"#,
            Err("user_script:1: Missing bytes in input."),
        ),
        (
            r#"return cmsgpack.unpack('\206\255\255\255\255')"#,
            Ok(b":4294967295\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\207\0\0\0\1\0\0\0\0')"#,
            Ok(b":4294967296\r\n"),
        ),
        (
            r#"return cmsgpack.unpack('\210\255\255\255\254')"#,
            Ok(b":-2\r\n"),
        ),
        (r#"return cmsgpack.unpack('\209\255\254')"#, Ok(b":-2\r\n")),
        (
            r#"return cmsgpack.unpack('\209\128\0')"#,
            Ok(b":-32768\r\n"),
        ),
        (r#"return cmsgpack.unpack('\208\128')"#, Ok(b":-128\r\n")),
        (r#"return cmsgpack.unpack('\255')"#, Ok(b":-1\r\n")),
        (r#"return cmsgpack.unpack('\224')"#, Ok(b":-32\r\n")),
        (r#"return cmsgpack.unpack('\127')"#, Ok(b":127\r\n")),
        (
            r#"return tostring(cmsgpack.unpack('\194'))"#,
            Ok(b"$5\r\nfalse\r\n"),
        ),
        (
            r#"return {cmsgpack.unpack('\1\2\3')}"#,
            Ok(b"*3\r\n:1\r\n:2\r\n:3\r\n"),
        ),
        (
            r#"return {cmsgpack.unpack('\1\2\193')}"#,
            Err("user_script:1: Bad data format in input."),
        ),
        (
            r#"return cmsgpack.unpack('\145\145\145\1')[1][1][1]"#,
            Ok(b":1\r\n"),
        ),
        (r#"return cmsgpack.unpack('\129\1\2')[1]"#, Ok(b":2\r\n")),
        (
            r#"return cmsgpack.unpack('\129\192\2')"#,
            Err("table index is nil"),
        ),
        (r#"return cmsgpack.unpack(12)"#, Ok(b":49\r\n")),
        (
            r#"return cmsgpack.unpack({})"#,
            Err("user_script:1: bad argument #1 to 'unpack' (string expected, got table)"),
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3')}"#,
            Ok(b"*2\r\n:1\r\n:1\r\n"),
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3', 2)}"#,
            Ok(b"*2\r\n:-1\r\n:3\r\n"),
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3', 3)}"#,
            Ok(b"*1\r\n:-1\r\n"),
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3', 4)}"#,
            Err("user_script:1: Start offset 4 greater than input length 3."),
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3', -1)}"#,
            Err("user_script:1: Invalid request to unpack with offset of -1 and limit of 3."),
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3', 'x')}"#,
            Err("user_script:1: bad argument #2 to 'unpack_one' (number expected, got string)"),
        ),
        (
            r#"return {cmsgpack.unpack_one('\1\2\3', 1.5)}"#,
            Ok(b"*2\r\n:2\r\n:2\r\n"),
        ),
        (r#"return {cmsgpack.unpack_one('')}"#, Ok(b"*1\r\n:-1\r\n")),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\3', 0)}"#,
            Ok(b"*3\r\n:1\r\n:2\r\n:3\r\n"),
        ),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\3', 0, 1)}"#,
            Ok(b"*1\r\n:1\r\n"),
        ),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\3', 5)}"#,
            Ok(b"*4\r\n:-1\r\n:1\r\n:2\r\n:3\r\n"),
        ),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\3', 1, 1)}"#,
            Ok(b"*2\r\n:2\r\n:2\r\n"),
        ),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\3', -1)}"#,
            Err("user_script:1: Invalid request to unpack with offset of 0 and limit of 3."),
        ),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\3', 2, 9)}"#,
            Err("user_script:1: Start offset 9 greater than input length 3."),
        ),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\3')}"#,
            Err("user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value)"),
        ),
        (
            r#"return {cmsgpack.unpack_limit('\1\2\193', 3)}"#,
            Err("user_script:1: Bad data format in input."),
        ),
        (
            r#"return {cmsgpack.unpack_one()}"#,
            Err("user_script:1: bad argument #1 to 'unpack_one' (string expected, got no value)"),
        ),
        (
            r#"return cmsgpack._COPYRIGHT"#,
            Ok(b"$40\r\nCopyright (C) 2012, Salvatore Sanfilippo\r\n"),
        ),
        (
            r#"return cmsgpack._DESCRIPTION"#,
            Ok(b"$36\r\nMessagePack C implementation for Lua\r\n"),
        ),
        (
            r#"return #{cmsgpack.unpack(string.rep('\1', 10000))}"#,
            Err(
                "user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)",
            ),
        ),
        (
            r#"return cmsgpack.unpack(cmsgpack.pack(-2^63)) == -2^63"#,
            Ok(b":1\r\n"),
        ),
        (
            r#"return cmsgpack.unpack(cmsgpack.pack(2^64 - 2048))"#,
            Ok(b":-9223372036854775808\r\n"),
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

    #[test]
    fn decodes_deep_nesting_without_native_recursion() {
        // Runs on the test thread's small stack: the decoder must not recurse per level.
        check(&[
            (
                r#"local t = cmsgpack.unpack(string.rep('\145', 3000) .. '\1') local d = 0 while type(t) == 'table' do d = d + 1 t = t[1] end return {d, t}"#,
                Ok(b"*2\r\n:3000\r\n:1\r\n"),
            ),
            (
                r#"local t = cmsgpack.unpack(string.rep('\129\1', 3000) .. '\1') local d = 0 while type(t) == 'table' do d = d + 1 t = t[1] end return {d, t}"#,
                Ok(b"*2\r\n:3000\r\n:1\r\n"),
            ),
            (
                r#"local ok, e = pcall(cmsgpack.unpack, string.rep('\145', 5000) .. '\1') return e"#,
                Ok(b"$51\r\nstack overflow (in function mp_decode_to_lua_array)\r\n"),
            ),
            (
                r#"local ok, e = pcall(cmsgpack.unpack, string.rep('\129\1', 5000) .. '\1') return e"#,
                Ok(b"$88\r\nstack overflow (too many return values at once; use unpack_one or unpack_limit instead.)\r\n"),
            ),
            (
                r#"local ok, e = pcall(cmsgpack.unpack, string.rep('\145', 3999) .. '\1') return tostring(ok)"#,
                Ok(b"$4\r\ntrue\r\n"),
            ),
            (
                r#"local ok, e = pcall(cmsgpack.unpack, string.rep('\129\1', 3999) .. '\1') return tostring(ok)"#,
                Ok(b"$4\r\ntrue\r\n"),
            ),
            (
                r#"local ok, e = pcall(cmsgpack.unpack, string.rep('\129\1', 4000) .. '\1') return tostring(ok) .. tostring(e)"#,
                Ok(b"$93\r\nfalsestack overflow (too many return values at once; use unpack_one or unpack_limit instead.)\r\n"),
            ),
            // (Successes at this size are counted with a table constructor: Lua's own
            // `pcall` pushes its status on a full stack, which debug builds of Lua reject.)
            (
                r#"local t = {cmsgpack.unpack(string.rep('\144', 7998))} return #t"#,
                Ok(b":7998\r\n"),
            ),
            (
                r#"local t = {cmsgpack.unpack(string.rep('\1', 7999))} return #t"#,
                Ok(b":7999\r\n"),
            ),
            (
                r#"local t = {cmsgpack.unpack(string.rep('\1', 8000))} return #t"#,
                Err("user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"),
            ),
            (
                r#"local ok, e = pcall(cmsgpack.unpack, string.rep('\144', 7999)) return tostring(ok) .. tostring(e)"#,
                Ok(b"$56\r\nfalsestack overflow (in function mp_decode_to_lua_array)\r\n"),
            ),
        ]);
    }

    #[test]
    fn round_trips_values() {
        let chunk = "local v = {1, -1, 300, -300, 70000, -70000, 2^40, -2^40, 0.25, 1/3, 'x', \
            string.rep('y', 300), true, false} \
            local packed = cmsgpack.pack(unpack(v)) \
            local back = {cmsgpack.unpack(packed)} \
            for i = 1, #v do if back[i] ~= v[i] then return i end end \
            return #back";
        assert_eq!(eval(chunk), Ok(b":14\r\n".to_vec()));
    }
}
