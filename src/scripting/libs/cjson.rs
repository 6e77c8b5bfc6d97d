//! The `cjson` library Redis 7.0 gives its scripts (lua-cjson 2.1.0 behaviour), over the
//! raw Lua 5.1 C API.
//!
//! `cjson.encode` turns a Lua value into JSON text and `cjson.decode` does the reverse;
//! the `encode_*`/`decode_*` functions read or change the per-table configuration
//! (sparse arrays, nesting limits, number precision, NaN/Infinity handling) and
//! `cjson.new` builds an independent table with its own configuration.
//!
//! Redis's replies are the contract: the same JSON text (numbers through C's `%.14g`,
//! `/` escaped as `\/`, DEL as `\u007f`, other bytes passed through), the same decoded
//! values (`null` as the NULL light userdata `cjson.null`, numbers through C's `strtod`,
//! so `0x10`, `Infinity` and `1e400` decode), and the same error messages, positions
//! included ("Expected value but found invalid token at character 1").
//!
//! Lua errors are `longjmp`s, so nothing owned by Rust lives in a frame an error may
//! jump over: the growing output, the decoder's string buffer and the nesting frames
//! sit in a userdata on the Lua stack (its `__gc` frees them whatever happens), encoding
//! and decoding walk nested values with an explicit frame stack instead of recursion,
//! and failures travel back as `Result`s to the entry function, which raises them once
//! nothing but plain values remains.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::{mem, ptr, slice};

use mlua_sys::{
    LUA_REGISTRYINDEX, LUA_TBOOLEAN, LUA_TLIGHTUSERDATA, LUA_TNIL, LUA_TNUMBER, LUA_TSTRING,
    LUA_TTABLE, LUA_TUSERDATA, lua_CFunction, lua_State, lua_checkstack, lua_createtable,
    lua_getmetatable, lua_gettop, lua_insert, lua_newuserdata, lua_next, lua_pushboolean,
    lua_pushcclosure, lua_pushinteger, lua_pushlightuserdata, lua_pushlstring_, lua_pushnil,
    lua_pushnumber, lua_pushstring_, lua_pushvalue, lua_rawequal, lua_rawget_, lua_rawgeti_,
    lua_rawset, lua_rawseti_, lua_setfield, lua_setmetatable, lua_settop, lua_toboolean,
    lua_tolstring, lua_tonumber, lua_touserdata, lua_type, lua_typename, lua_upvalueindex,
    luaL_argerror, luaL_checkinteger, luaL_checklstring, luaL_checkoption, luaL_error,
};

unsafe extern "C" {
    /// C's `snprintf`: numbers are written exactly as lua-cjson writes them (`%.14g`).
    fn snprintf(buf: *mut c_char, size: usize, fmt: *const c_char, ...) -> c_int;
    /// C's `strtod`: numbers are read exactly as lua-cjson reads them (hex, `inf`, `nan`).
    fn strtod(nptr: *const c_char, endptr: *mut *mut c_char) -> f64;
}

/// Lua 5.1's `LUAI_MAXCSTACK`: the most slots `lua_checkstack` grants a C function.
const LUAI_MAXCSTACK: c_int = 8000;

// Registry keys (their addresses) of the two metatables this library creates.
static CONFIG_KEY: u8 = 1;
static SCRATCH_KEY: u8 = 2;

/// The settings of one `cjson` table, a plain-data userdata shared (as upvalue 1) by
/// all its functions. Field meanings and defaults follow lua-cjson 2.1.0.
#[derive(Clone, Copy)]
struct Config {
    encode_sparse_convert: c_int,
    encode_sparse_ratio: c_int,
    encode_sparse_safe: c_int,
    encode_max_depth: c_int,
    /// 0: refuse NaN/Inf, 1: write them (`nan`, `inf`), 2: write them as `null`.
    encode_invalid_numbers: c_int,
    encode_number_precision: c_int,
    encode_keep_buffer: c_int,
    decode_invalid_numbers: c_int,
    decode_max_depth: c_int,
}

impl Config {
    const DEFAULT: Config = Config {
        encode_sparse_convert: 0,
        encode_sparse_ratio: 2,
        encode_sparse_safe: 10,
        encode_max_depth: 1000,
        encode_invalid_numbers: 0,
        encode_number_precision: 14,
        encode_keep_buffer: 1,
        decode_invalid_numbers: 1,
        decode_max_depth: 1000,
    };
}

/// One nesting level of the value being encoded or decoded.
#[derive(Clone, Copy)]
enum Frame {
    /// An array: the next index to visit and (encoding) the last one.
    Array { next: c_int, len: c_int },
    /// An object: whether a member was written already (encoding).
    Object { comma: bool },
}

/// Per-call working memory, kept in a userdata on the Lua stack so that an error
/// (a `longjmp`) leaves it to the garbage collector instead of leaking it.
struct Scratch {
    buf: Vec<u8>,
    frames: Vec<Frame>,
}

// Lua 5.1 aligns userdata memory like a double, a pointer or a long: 8 bytes here.
const _: () = assert!(mem::align_of::<Scratch>() <= 8 && mem::align_of::<Config>() <= 8);

fn key_ptr(key: &'static u8) -> *mut c_void {
    ptr::from_ref(key).cast_mut().cast()
}

/// Pushes the metatable stored in the registry under `key`, creating it (with `gc` as
/// `__gc` when given) on first use.
unsafe fn push_metatable(l: *mut lua_State, key: &'static u8, gc: Option<lua_CFunction>) {
    unsafe {
        lua_pushlightuserdata(l, key_ptr(key));
        lua_rawget_(l, LUA_REGISTRYINDEX);
        if lua_type(l, -1) == LUA_TTABLE {
            return;
        }
        lua_settop(l, -2);
        lua_createtable(l, 0, 1);
        if let Some(f) = gc {
            lua_pushcclosure(l, f, 0);
            lua_setfield(l, -2, c"__gc".as_ptr());
        }
        lua_pushlightuserdata(l, key_ptr(key));
        lua_pushvalue(l, -2);
        lua_rawset(l, LUA_REGISTRYINDEX);
    }
}

/// Whether the value at `idx` is a full userdata whose metatable is the one under `key`.
unsafe fn is_ours(l: *mut lua_State, idx: c_int, key: &'static u8) -> bool {
    unsafe {
        if lua_type(l, idx) != LUA_TUSERDATA || lua_getmetatable(l, idx) == 0 {
            return false;
        }
        lua_pushlightuserdata(l, key_ptr(key));
        lua_rawget_(l, LUA_REGISTRYINDEX);
        let same = lua_rawequal(l, -1, -2) != 0;
        lua_settop(l, -3);
        same
    }
}

/// `__gc` of the scratch userdata: frees its buffers (idempotent).
unsafe extern "C-unwind" fn scratch_gc(l: *mut lua_State) -> c_int {
    unsafe {
        if is_ours(l, 1, &SCRATCH_KEY) {
            let s = lua_touserdata(l, 1).cast::<Scratch>();
            release(s);
        }
        0
    }
}

/// Drops the buffers of a scratch userdata, leaving it valid and empty.
unsafe fn release(s: *mut Scratch) {
    unsafe {
        drop(mem::take(&mut (*s).buf));
        drop(mem::take(&mut (*s).frames));
    }
}

/// Pushes a new, empty scratch userdata and returns its memory.
unsafe fn push_scratch(l: *mut lua_State) -> *mut Scratch {
    unsafe {
        let s = lua_newuserdata(l, mem::size_of::<Scratch>()).cast::<Scratch>();
        // Empty vectors own no memory: nothing leaks if the next calls raise.
        ptr::write(
            s,
            Scratch {
                buf: Vec::new(),
                frames: Vec::new(),
            },
        );
        push_metatable(l, &SCRATCH_KEY, Some(scratch_gc));
        lua_setmetatable(l, -2);
        s
    }
}

/// The configuration of the running function (its upvalue 1).
unsafe fn fetch_config(l: *mut lua_State) -> *mut Config {
    unsafe {
        let idx = lua_upvalueindex(1);
        if !is_ours(l, idx, &CONFIG_KEY) {
            luaL_error(l, c"BUG: Unable to fetch CJSON configuration".as_ptr());
        }
        lua_touserdata(l, idx).cast::<Config>()
    }
}

/// Whether `size` more slots are available, judged as lua-cjson's C code would judge it
/// (its stack lacks our scratch userdata, hence the `- 1`), and makes them available.
unsafe fn stack_ok(l: *mut lua_State, size: c_int) -> bool {
    unsafe {
        let top = lua_gettop(l);
        if top - 1 + size > LUAI_MAXCSTACK {
            return false;
        }
        // At the very edge Lua grants one slot less than the C library would get; the
        // slot asked for last is only a reserve, and `lua_checkstack` leaves the stack
        // with strictly more room than asked, so `size - 1` still covers every push.
        let ask = if top + size > LUAI_MAXCSTACK {
            size - 1
        } else {
            size
        };
        lua_checkstack(l, ask) != 0
    }
}

// ===== Configuration functions =====

/// Refuses more than `args` arguments and pads missing ones with nil.
unsafe fn arg_init(l: *mut lua_State, args: c_int) -> *mut Config {
    unsafe {
        if lua_gettop(l) > args {
            luaL_argerror(l, args + 1, c"found too many arguments".as_ptr());
        }
        while lua_gettop(l) < args {
            lua_pushnil(l);
        }
        fetch_config(l)
    }
}

/// Sets `*setting` from argument `idx` when given (an integer in `min..=max`) and pushes
/// the current value. Out of range values are reported against argument 1, as
/// lua-cjson does.
unsafe fn integer_option(
    l: *mut lua_State,
    idx: c_int,
    setting: *mut c_int,
    min: c_int,
    max: c_int,
) -> c_int {
    unsafe {
        if lua_type(l, idx) != LUA_TNIL {
            // C's int conversion of the lua_Integer: wraps.
            let value = luaL_checkinteger(l, idx) as c_int;
            if value < min || value > max {
                let msg = mlua_sys::lua_pushfstring(
                    l,
                    c"expected integer between %d and %d".as_ptr(),
                    min,
                    max,
                );
                luaL_argerror(l, 1, msg);
            }
            *setting = value;
        }
        lua_pushinteger(l, mlua_sys::lua_Integer::from(*setting));
        1
    }
}

/// Sets `*setting` from argument `idx` when given: a boolean (false 0, true 1) or the
/// index of one of `options` (a NULL-terminated list). Pushes the current value, as a
/// boolean for 0 and 1, as the option's name otherwise.
unsafe fn enum_option(
    l: *mut lua_State,
    idx: c_int,
    setting: *mut c_int,
    options: &[*const c_char],
) -> c_int {
    unsafe {
        if lua_type(l, idx) != LUA_TNIL {
            if lua_type(l, idx) == LUA_TBOOLEAN {
                *setting = lua_toboolean(l, idx);
            } else {
                *setting = luaL_checkoption(l, idx, ptr::null(), options.as_ptr());
            }
        }
        let value = *setting;
        if value == 0 || value == 1 {
            lua_pushboolean(l, value);
        } else {
            let name = usize::try_from(value)
                .ok()
                .and_then(|i| options.get(i))
                .copied()
                .filter(|p| !p.is_null())
                .unwrap_or(c"?".as_ptr());
            lua_pushstring_(l, name);
        }
        1
    }
}

fn bool_options() -> [*const c_char; 3] {
    [c"off".as_ptr(), c"on".as_ptr(), ptr::null()]
}

/// `cjson.encode_sparse_array([convert[, ratio[, safe]]])`.
unsafe extern "C-unwind" fn cfg_encode_sparse_array(l: *mut lua_State) -> c_int {
    unsafe {
        let cfg = arg_init(l, 3);
        let options = bool_options();
        enum_option(l, 1, &raw mut (*cfg).encode_sparse_convert, &options);
        integer_option(l, 2, &raw mut (*cfg).encode_sparse_ratio, 0, c_int::MAX);
        integer_option(l, 3, &raw mut (*cfg).encode_sparse_safe, 0, c_int::MAX);
        3
    }
}

/// `cjson.encode_max_depth([depth])`.
unsafe extern "C-unwind" fn cfg_encode_max_depth(l: *mut lua_State) -> c_int {
    unsafe {
        let cfg = arg_init(l, 1);
        integer_option(l, 1, &raw mut (*cfg).encode_max_depth, 1, c_int::MAX)
    }
}

/// `cjson.decode_max_depth([depth])`.
unsafe extern "C-unwind" fn cfg_decode_max_depth(l: *mut lua_State) -> c_int {
    unsafe {
        let cfg = arg_init(l, 1);
        integer_option(l, 1, &raw mut (*cfg).decode_max_depth, 1, c_int::MAX)
    }
}

/// `cjson.encode_number_precision([precision])`.
unsafe extern "C-unwind" fn cfg_encode_number_precision(l: *mut lua_State) -> c_int {
    unsafe {
        let cfg = arg_init(l, 1);
        integer_option(l, 1, &raw mut (*cfg).encode_number_precision, 1, 14)
    }
}

/// `cjson.encode_keep_buffer([keep])`: only the setting; every call here gets a fresh
/// buffer, which no script can tell apart.
unsafe extern "C-unwind" fn cfg_encode_keep_buffer(l: *mut lua_State) -> c_int {
    unsafe {
        let cfg = arg_init(l, 1);
        let options = bool_options();
        enum_option(l, 1, &raw mut (*cfg).encode_keep_buffer, &options)
    }
}

/// `cjson.encode_invalid_numbers([setting])`: false/"off", true/"on" or "null".
unsafe extern "C-unwind" fn cfg_encode_invalid_numbers(l: *mut lua_State) -> c_int {
    unsafe {
        let cfg = arg_init(l, 1);
        let options = [
            c"off".as_ptr(),
            c"on".as_ptr(),
            c"null".as_ptr(),
            ptr::null(),
        ];
        enum_option(l, 1, &raw mut (*cfg).encode_invalid_numbers, &options)
    }
}

/// `cjson.decode_invalid_numbers([setting])`.
unsafe extern "C-unwind" fn cfg_decode_invalid_numbers(l: *mut lua_State) -> c_int {
    unsafe {
        let cfg = arg_init(l, 1);
        let options = bool_options();
        enum_option(l, 1, &raw mut (*cfg).decode_invalid_numbers, &options)
    }
}

// ===== Encoding =====

/// Why a value cannot be encoded.
enum EncodeError {
    /// "Cannot serialise <type>: <reason>".
    Unsupported { ty: c_int, reason: &'static CStr },
    /// "Cannot serialise, excessive nesting (<depth>)".
    Nesting(c_int),
}

/// Appends a Lua string as a JSON string.
fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'/' => b"\\/",
            8 => b"\\b",
            9 => b"\\t",
            10 => b"\\n",
            12 => b"\\f",
            13 => b"\\r",
            0..=31 | 127 => b"",
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        if short.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 15)]);
        } else {
            out.extend_from_slice(short);
        }
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

/// Appends a number as lua-cjson does (`%.<precision>g`, NaN/Inf per the setting).
fn append_number(out: &mut Vec<u8>, cfg: &Config, num: f64) -> Result<(), EncodeError> {
    match cfg.encode_invalid_numbers {
        0 if !num.is_finite() => {
            return Err(EncodeError::Unsupported {
                ty: LUA_TNUMBER,
                reason: c"must not be NaN or Inf",
            });
        }
        0 => {}
        1 if num.is_nan() => {
            out.extend_from_slice(b"nan");
            return Ok(());
        }
        1 => {}
        _ if !num.is_finite() => {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        _ => {}
    }
    let precision = cfg.encode_number_precision.clamp(1, 14);
    let mut fmt = [0u8; 8];
    fmt[0] = b'%';
    fmt[1] = b'.';
    let mut i = 2;
    if precision >= 10 {
        fmt[i] = b'1';
        i += 1;
    }
    fmt[i] = b'0' + (precision % 10) as u8;
    fmt[i + 1] = b'g';
    let mut text = [0u8; 32];
    // SAFETY: `fmt` is a NUL-terminated "%.<n>g" taking exactly one double, and
    // `snprintf` writes at most `text.len()` bytes.
    let n = unsafe {
        snprintf(
            text.as_mut_ptr().cast(),
            text.len(),
            fmt.as_ptr().cast(),
            num,
        )
    };
    let n = usize::try_from(n).unwrap_or(0).min(text.len() - 1);
    out.extend_from_slice(&text[..n]);
    Ok(())
}

/// C's conversion of an integral double to `int` on x86-64: out of range gives INT_MIN.
fn c_int_of(k: f64) -> c_int {
    if (-2_147_483_648.0..2_147_483_648.0).contains(&k) {
        k as c_int
    } else {
        c_int::MIN
    }
}

/// The table on top of the stack as an array: its length (> 0), or 0/negative when it
/// must be written as an object (empty, non positive-integer keys, or too sparse with
/// conversion on); too sparse with conversion off is an error.
unsafe fn array_length(l: *mut lua_State, cfg: &Config) -> Result<c_int, EncodeError> {
    unsafe {
        let mut max: c_int = 0;
        let mut items: c_int = 0;
        lua_pushnil(l);
        while lua_next(l, -2) != 0 {
            let k = if lua_type(l, -2) == LUA_TNUMBER {
                lua_tonumber(l, -2)
            } else {
                0.0
            };
            if k != 0.0 && k.floor() == k && k >= 1.0 {
                if k > f64::from(max) {
                    max = c_int_of(k);
                }
                items = items.wrapping_add(1);
                lua_settop(l, -2);
                continue;
            }
            lua_settop(l, -3);
            return Ok(-1);
        }
        if cfg.encode_sparse_ratio > 0
            && max > items.wrapping_mul(cfg.encode_sparse_ratio)
            && max > cfg.encode_sparse_safe
        {
            if cfg.encode_sparse_convert == 0 {
                return Err(EncodeError::Unsupported {
                    ty: LUA_TTABLE,
                    reason: c"excessively sparse array",
                });
            }
            return Ok(-1);
        }
        Ok(max)
    }
}

/// The bytes of the string (or number, converted in place) at `idx`.
unsafe fn string_at<'a>(l: *mut lua_State, idx: c_int) -> &'a [u8] {
    unsafe {
        let mut len = 0usize;
        let p = lua_tolstring(l, idx, &mut len);
        if p.is_null() {
            &[]
        } else {
            slice::from_raw_parts(p.cast::<u8>(), len)
        }
    }
}

/// Encodes the value on top of the stack (and pops it) into `s.buf`, walking nested
/// tables with `s.frames`.
unsafe fn encode_value(
    l: *mut lua_State,
    cfg: &Config,
    s: *mut Scratch,
) -> Result<(), EncodeError> {
    unsafe {
        let out = &mut (*s).buf;
        let frames = &mut (*s).frames;
        loop {
            // Write the value on top of the stack (tables: only their opening).
            match lua_type(l, -1) {
                LUA_TSTRING => {
                    append_string(out, string_at(l, -1));
                    lua_settop(l, -2);
                }
                LUA_TNUMBER => {
                    append_number(out, cfg, lua_tonumber(l, -1))?;
                    lua_settop(l, -2);
                }
                LUA_TBOOLEAN => {
                    if lua_toboolean(l, -1) != 0 {
                        out.extend_from_slice(b"true");
                    } else {
                        out.extend_from_slice(b"false");
                    }
                    lua_settop(l, -2);
                }
                LUA_TNIL => {
                    out.extend_from_slice(b"null");
                    lua_settop(l, -2);
                }
                LUA_TLIGHTUSERDATA if lua_touserdata(l, -1).is_null() => {
                    out.extend_from_slice(b"null");
                    lua_settop(l, -2);
                }
                LUA_TTABLE => {
                    let depth = c_int::try_from(frames.len() + 1).unwrap_or(c_int::MAX);
                    if depth > cfg.encode_max_depth || !stack_ok(l, 3) {
                        return Err(EncodeError::Nesting(depth));
                    }
                    let len = array_length(l, cfg)?;
                    if len > 0 {
                        out.push(b'[');
                        frames.push(Frame::Array { next: 1, len });
                    } else {
                        out.push(b'{');
                        frames.push(Frame::Object { comma: false });
                        lua_pushnil(l);
                    }
                }
                ty => {
                    return Err(EncodeError::Unsupported {
                        ty,
                        reason: c"type not supported",
                    });
                }
            }
            // Find the next value to write, closing the tables that are complete.
            loop {
                let Some(frame) = frames.last_mut() else {
                    return Ok(());
                };
                match frame {
                    Frame::Array { next, len } => {
                        if *next > *len {
                            out.push(b']');
                            frames.pop();
                            lua_settop(l, -2);
                            continue;
                        }
                        if *next > 1 {
                            out.push(b',');
                        }
                        lua_rawgeti_(l, -1, *next);
                        *next += 1;
                        break;
                    }
                    Frame::Object { comma } => {
                        if lua_next(l, -2) == 0 {
                            out.push(b'}');
                            frames.pop();
                            lua_settop(l, -2);
                            continue;
                        }
                        if *comma {
                            out.push(b',');
                        } else {
                            *comma = true;
                        }
                        match lua_type(l, -2) {
                            LUA_TNUMBER => {
                                out.push(b'"');
                                append_number(out, cfg, lua_tonumber(l, -2))?;
                                out.extend_from_slice(b"\":");
                            }
                            LUA_TSTRING => {
                                append_string(out, string_at(l, -2));
                                out.push(b':');
                            }
                            ty => {
                                return Err(EncodeError::Unsupported {
                                    ty,
                                    reason: c"table key must be a number or string",
                                });
                            }
                        }
                        break;
                    }
                }
            }
        }
    }
}

/// `cjson.encode(value)`.
unsafe extern "C-unwind" fn json_encode(l: *mut lua_State) -> c_int {
    unsafe {
        let cfg = *fetch_config(l);
        if lua_gettop(l) != 1 {
            luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
        }
        let s = push_scratch(l);
        // Stack: scratch, value (on top, where the encoder wants it).
        lua_insert(l, 1);
        let result = encode_value(l, &cfg, s);
        match result {
            Ok(()) => {
                let out = &(*s).buf;
                lua_pushlstring_(l, out.as_ptr().cast(), out.len());
                release(s);
                1
            }
            Err(e) => {
                release(s);
                lua_settop(l, 0);
                match e {
                    EncodeError::Unsupported { ty, reason } => luaL_error(
                        l,
                        c"Cannot serialise %s: %s".as_ptr(),
                        lua_typename(l, ty),
                        reason.as_ptr(),
                    ),
                    EncodeError::Nesting(depth) => luaL_error(
                        l,
                        c"Cannot serialise, excessive nesting (%d)".as_ptr(),
                        depth,
                    ),
                }
            }
        }
    }
}

// ===== Decoding =====

/// A JSON token; errors carry lua-cjson's description.
#[derive(Clone, Copy, PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static CStr),
}

impl Tok {
    /// The name lua-cjson prints for a token it did not expect.
    fn found(self) -> &'static CStr {
        match self {
            Tok::ObjBegin => c"T_OBJ_BEGIN",
            Tok::ObjEnd => c"T_OBJ_END",
            Tok::ArrBegin => c"T_ARR_BEGIN",
            Tok::ArrEnd => c"T_ARR_END",
            Tok::Str => c"T_STRING",
            Tok::Number(_) => c"T_NUMBER",
            Tok::Boolean(_) => c"T_BOOLEAN",
            Tok::Null => c"T_NULL",
            Tok::Colon => c"T_COLON",
            Tok::Comma => c"T_COMMA",
            Tok::End => c"T_END",
            Tok::Error(what) => what,
        }
    }
}

/// A token and its 0-based offset in the input.
#[derive(Clone, Copy)]
struct Token {
    tok: Tok,
    index: usize,
}

/// Why a text cannot be decoded.
enum DecodeError {
    /// "Expected <what> but found <token> at character <index + 1>".
    Unexpected {
        expected: &'static CStr,
        token: Token,
    },
    /// "Found too many nested data structures (<depth>) at character <pos>".
    Nesting { depth: c_int, pos: usize },
}

fn unexpected(expected: &'static CStr, token: Token) -> DecodeError {
    DecodeError::Unexpected { expected, token }
}

fn hex_value(b: u8) -> Option<u32> {
    char::from(b).to_digit(16)
}

/// The tokenizer over a Lua string and its terminating NUL (lua-cjson stops at a NUL).
struct Parser<'a> {
    data: &'a [u8],
    pos: usize,
    depth: c_int,
    cfg: Config,
    /// The last string token's bytes.
    buf: &'a mut Vec<u8>,
}

impl Parser<'_> {
    fn byte(&self, at: usize) -> u8 {
        self.data.get(at).copied().unwrap_or(0)
    }

    fn error(&self, what: &'static CStr) -> Token {
        Token {
            tok: Tok::Error(what),
            index: self.pos,
        }
    }

    /// `strncasecmp(p, word, 3) == 0` at `at`, `word` in lower case.
    fn starts_with_nocase(&self, at: usize, word: &[u8; 3]) -> bool {
        (0..3).all(|i| self.byte(at + i).to_ascii_lowercase() == word[i])
    }

    /// What strict JSON refuses but `strtod` reads: `+`, hex, leading zeros, inf, nan.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.pos;
        match self.byte(p) {
            b'+' => return true,
            b'-' => p += 1,
            _ => {}
        }
        let c = self.byte(p);
        if c == b'0' {
            let c2 = self.byte(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        }
        // C compares a plain (signed) char: bytes from 0x80 count as below '9'.
        if (c as i8) <= b'9' as i8 {
            return false;
        }
        self.starts_with_nocase(p, b"inf") || self.starts_with_nocase(p, b"nan")
    }

    fn number_token(&mut self) -> Token {
        let index = self.pos;
        let start = self.data.as_ptr().wrapping_add(self.pos);
        let mut end: *mut c_char = ptr::null_mut();
        // SAFETY: `data` ends with the NUL Lua keeps after every string, so `strtod`
        // stops inside it.
        let number = unsafe { strtod(start.cast(), &mut end) };
        let used = (end as usize).saturating_sub(start as usize);
        if end.is_null() || used == 0 {
            return self.error(c"invalid number");
        }
        self.pos += used;
        Token {
            tok: Tok::Number(number),
            index,
        }
    }

    /// Appends the UTF-8 of the `\uXXXX` escape (or surrogate pair) at `pos` and moves
    /// past it; None (not moving) when it is invalid.
    fn unicode_escape(&mut self) -> Option<()> {
        let hex4 = |at: usize| -> Option<u32> {
            (0..4).try_fold(0u32, |acc, i| {
                Some((acc << 4) | hex_value(self.byte(at + i))?)
            })
        };
        let mut code = hex4(self.pos + 2)?;
        let mut len = 6;
        if code & 0xF800 == 0xD800 {
            if code & 0x400 != 0 {
                return None;
            }
            if self.byte(self.pos + 6) != b'\\' || self.byte(self.pos + 7) != b'u' {
                return None;
            }
            let low = hex4(self.pos + 8)?;
            if low & 0xFC00 != 0xDC00 {
                return None;
            }
            code = (((code & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let mut utf8 = [0u8; 4];
        let n = if code <= 0x7F {
            utf8[0] = code as u8;
            1
        } else if code <= 0x7FF {
            utf8[0] = (code >> 6) as u8 | 0xC0;
            utf8[1] = (code & 0x3F) as u8 | 0x80;
            2
        } else if code <= 0xFFFF {
            utf8[0] = (code >> 12) as u8 | 0xE0;
            utf8[1] = ((code >> 6) & 0x3F) as u8 | 0x80;
            utf8[2] = (code & 0x3F) as u8 | 0x80;
            3
        } else {
            utf8[0] = (code >> 18) as u8 | 0xF0;
            utf8[1] = ((code >> 12) & 0x3F) as u8 | 0x80;
            utf8[2] = ((code >> 6) & 0x3F) as u8 | 0x80;
            utf8[3] = (code & 0x3F) as u8 | 0x80;
            4
        };
        self.buf.extend_from_slice(&utf8[..n]);
        self.pos += len;
        Some(())
    }

    /// A string token (at its opening quote); its bytes go to `buf`.
    fn string_token(&mut self) -> Token {
        let index = self.pos;
        self.pos += 1;
        self.buf.clear();
        loop {
            match self.byte(self.pos) {
                b'"' => break,
                0 => return self.error(c"unexpected end of string"),
                b'\\' => {
                    let ch = match self.byte(self.pos + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b't' => 9,
                        b'n' => 10,
                        b'f' => 12,
                        b'r' => 13,
                        b'u' => {
                            if self.unicode_escape().is_some() {
                                continue;
                            }
                            return self.error(c"invalid unicode escape code");
                        }
                        _ => return self.error(c"invalid escape code"),
                    };
                    self.buf.push(ch);
                    self.pos += 2;
                }
                _ => {
                    // A run of plain bytes, copied at once (at least one byte).
                    let rest = self.data.get(self.pos..).unwrap_or(&[]);
                    let run = rest
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\' || b == 0)
                        .unwrap_or(rest.len())
                        .max(1);
                    self.buf.extend_from_slice(rest.get(..run).unwrap_or(rest));
                    self.pos += run;
                }
            }
        }
        self.pos += 1;
        Token {
            tok: Tok::Str,
            index,
        }
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.byte(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let index = self.pos;
        let single = |tok| Token { tok, index };
        let ch = self.byte(self.pos);
        let tok = match ch {
            0 => return single(Tok::End),
            b'{' => Tok::ObjBegin,
            b'}' => Tok::ObjEnd,
            b'[' => Tok::ArrBegin,
            b']' => Tok::ArrEnd,
            b',' => Tok::Comma,
            b':' => Tok::Colon,
            b'"' => return self.string_token(),
            b'-' | b'0'..=b'9' => {
                if self.cfg.decode_invalid_numbers == 0 && self.is_invalid_number() {
                    return self.error(c"invalid number");
                }
                return self.number_token();
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                let rest = self.data.get(self.pos..).unwrap_or(&[]);
                let (tok, len) = if rest.starts_with(b"true") {
                    (Tok::Boolean(true), 4)
                } else if rest.starts_with(b"false") {
                    (Tok::Boolean(false), 5)
                } else if rest.starts_with(b"null") {
                    (Tok::Null, 4)
                } else if self.cfg.decode_invalid_numbers != 0 && self.is_invalid_number() {
                    return self.number_token();
                } else {
                    return self.error(c"invalid token");
                };
                self.pos += len;
                return single(tok);
            }
            _ => return self.error(c"invalid token"),
        };
        self.pos += 1;
        single(tok)
    }

    /// Enters an object or array needing `slots` stack slots.
    unsafe fn descend(&mut self, l: *mut lua_State, slots: c_int) -> Result<(), DecodeError> {
        self.depth = self.depth.saturating_add(1);
        if self.depth <= self.cfg.decode_max_depth && unsafe { stack_ok(l, slots) } {
            return Ok(());
        }
        Err(DecodeError::Nesting {
            depth: self.depth,
            pos: self.pos,
        })
    }

    unsafe fn push_string(&self, l: *mut lua_State) {
        unsafe {
            if self.buf.is_empty() {
                lua_pushlstring_(l, c"".as_ptr(), 0);
            } else {
                lua_pushlstring_(l, self.buf.as_ptr().cast(), self.buf.len());
            }
        }
    }

    /// With `token` the first of an object member: pushes its key, checks the colon
    /// and returns the value's first token.
    unsafe fn member_key(&mut self, l: *mut lua_State, token: Token) -> Result<Token, DecodeError> {
        if token.tok != Tok::Str {
            return Err(unexpected(c"object key string", token));
        }
        unsafe { self.push_string(l) };
        let colon = self.next_token();
        if colon.tok != Tok::Colon {
            return Err(unexpected(c"colon", colon));
        }
        Ok(self.next_token())
    }
}

/// Decodes the whole text, leaving its value on top of the stack.
unsafe fn decode_text(
    l: *mut lua_State,
    p: &mut Parser<'_>,
    frames: &mut Vec<Frame>,
) -> Result<(), DecodeError> {
    unsafe {
        let mut token = p.next_token();
        'value: loop {
            // Push the value starting with `token` (containers: only their opening).
            match token.tok {
                Tok::Str => p.push_string(l),
                Tok::Number(n) => lua_pushnumber(l, n),
                Tok::Boolean(b) => lua_pushboolean(l, c_int::from(b)),
                Tok::Null => lua_pushlightuserdata(l, ptr::null_mut()),
                Tok::ObjBegin => {
                    p.descend(l, 3)?;
                    lua_createtable(l, 0, 0);
                    token = p.next_token();
                    if token.tok == Tok::ObjEnd {
                        p.depth -= 1;
                    } else {
                        frames.push(Frame::Object { comma: false });
                        token = p.member_key(l, token)?;
                        continue 'value;
                    }
                }
                Tok::ArrBegin => {
                    p.descend(l, 2)?;
                    lua_createtable(l, 0, 0);
                    token = p.next_token();
                    if token.tok == Tok::ArrEnd {
                        p.depth -= 1;
                    } else {
                        frames.push(Frame::Array { next: 1, len: 0 });
                        continue 'value;
                    }
                }
                _ => return Err(unexpected(c"value", token)),
            }
            // A value is complete on top: store it in its container, closing the
            // containers that end here, until another value starts.
            loop {
                let Some(frame) = frames.last_mut() else {
                    break 'value;
                };
                match frame {
                    Frame::Array { next, .. } => {
                        lua_rawseti_(l, -2, *next);
                        token = p.next_token();
                        if token.tok == Tok::ArrEnd {
                            frames.pop();
                            p.depth -= 1;
                            continue;
                        }
                        if token.tok != Tok::Comma {
                            return Err(unexpected(c"comma or array end", token));
                        }
                        *next = next.wrapping_add(1);
                        token = p.next_token();
                        continue 'value;
                    }
                    Frame::Object { .. } => {
                        lua_rawset(l, -3);
                        token = p.next_token();
                        if token.tok == Tok::ObjEnd {
                            frames.pop();
                            p.depth -= 1;
                            continue;
                        }
                        if token.tok != Tok::Comma {
                            return Err(unexpected(c"comma or object end", token));
                        }
                        token = p.next_token();
                        token = p.member_key(l, token)?;
                        continue 'value;
                    }
                }
            }
        }
        let token = p.next_token();
        if token.tok != Tok::End {
            return Err(unexpected(c"the end", token));
        }
        Ok(())
    }
}

/// `cjson.decode(text)`.
unsafe extern "C-unwind" fn json_decode(l: *mut lua_State) -> c_int {
    unsafe {
        if lua_gettop(l) != 1 {
            luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
        }
        let cfg = *fetch_config(l);
        let mut len = 0usize;
        let text = luaL_checklstring(l, 1, &mut len).cast::<u8>();
        if len >= 2 && (*text == 0 || *text.add(1) == 0) {
            luaL_error(l, c"JSON parser does not support UTF-16 or UTF-32".as_ptr());
        }
        let s = push_scratch(l);
        // Lua keeps a NUL after every string's bytes: the tokenizer's end mark.
        let data = slice::from_raw_parts(text, len + 1);
        (*s).buf.reserve(len);
        let mut parser = Parser {
            data,
            pos: 0,
            depth: 0,
            cfg,
            buf: &mut (*s).buf,
        };
        let result = decode_text(l, &mut parser, &mut (*s).frames);
        release(s);
        match result {
            Ok(()) => 1,
            Err(e) => {
                lua_settop(l, 0);
                match e {
                    DecodeError::Unexpected { expected, token } => luaL_error(
                        l,
                        c"Expected %s but found %s at character %d".as_ptr(),
                        expected.as_ptr(),
                        token.tok.found().as_ptr(),
                        token.index.wrapping_add(1) as c_int,
                    ),
                    DecodeError::Nesting { depth, pos } => luaL_error(
                        l,
                        c"Found too many nested data structures (%d) at character %d".as_ptr(),
                        depth,
                        pos as c_int,
                    ),
                }
            }
        }
    }
}

// ===== The module table =====

/// `cjson.new()`: a fresh `cjson` table with its own configuration.
unsafe extern "C-unwind" fn json_new(l: *mut lua_State) -> c_int {
    unsafe {
        push_module(l);
        1
    }
}

/// Pushes a new `cjson` table: its functions share a new default configuration.
unsafe fn push_module(l: *mut lua_State) {
    let functions: [(&CStr, lua_CFunction); 10] = [
        (c"encode", json_encode),
        (c"decode", json_decode),
        (c"encode_sparse_array", cfg_encode_sparse_array),
        (c"encode_max_depth", cfg_encode_max_depth),
        (c"decode_max_depth", cfg_decode_max_depth),
        (c"encode_number_precision", cfg_encode_number_precision),
        (c"encode_keep_buffer", cfg_encode_keep_buffer),
        (c"encode_invalid_numbers", cfg_encode_invalid_numbers),
        (c"decode_invalid_numbers", cfg_decode_invalid_numbers),
        (c"new", json_new),
    ];
    unsafe {
        lua_createtable(l, 0, 0);
        let cfg = lua_newuserdata(l, mem::size_of::<Config>()).cast::<Config>();
        ptr::write(cfg, Config::DEFAULT);
        push_metatable(l, &CONFIG_KEY, None);
        lua_setmetatable(l, -2);
        for (name, f) in functions {
            lua_pushvalue(l, -1);
            lua_pushcclosure(l, f, 1);
            lua_setfield(l, -3, name.as_ptr());
        }
        lua_settop(l, -2);
        lua_pushlightuserdata(l, ptr::null_mut());
        lua_setfield(l, -2, c"null".as_ptr());
        lua_pushstring_(l, c"cjson".as_ptr());
        lua_setfield(l, -2, c"_NAME".as_ptr());
        lua_pushstring_(l, c"2.1.0".as_ptr());
        lua_setfield(l, -2, c"_VERSION".as_ptr());
    }
}

/// Opens the library: builds the `cjson` table, sets it as the global `cjson` (as Redis
/// does) and returns it.
///
/// # Safety
///
/// `l` must be a valid Lua 5.1 state, and this must run as a Lua C function (through
/// `lua_call`/`lua_pcall`) or otherwise where a Lua error can be caught.
pub unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    unsafe {
        push_module(l);
        lua_pushvalue(l, -1);
        lua_setfield(l, mlua_sys::LUA_GLOBALSINDEX, c"cjson".as_ptr());
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua_sys::{
        LUA_GLOBALSINDEX, lua_close, lua_getfield_, lua_pcall, luaL_loadbuffer, luaL_newstate,
        luaL_openlibs,
    };

    /// A Lua state with the standard libraries and `cjson`, as in Redis.
    struct Vm(*mut lua_State);

    impl Vm {
        fn new() -> Vm {
            unsafe {
                let l = luaL_newstate();
                assert!(!l.is_null());
                luaL_openlibs(l);
                lua_pushcclosure(l, open, 0);
                assert_eq!(lua_pcall(l, 0, 0, 0), 0);
                Vm(l)
            }
        }

        /// Runs `script` as Redis runs an EVAL body (chunk "@user_script") and renders
        /// what it returns as Redis's RESP2 reply (errors without Redis's suffix).
        fn eval(&self, script: &str) -> Vec<u8> {
            unsafe {
                let l = self.0;
                lua_settop(l, 0);
                let loaded = luaL_loadbuffer(
                    l,
                    script.as_ptr().cast(),
                    script.len(),
                    c"@user_script".as_ptr(),
                );
                let mut out = Vec::new();
                if loaded != 0 || lua_pcall(l, 0, 1, 0) != 0 {
                    out.extend_from_slice(b"-ERR ");
                    out.extend_from_slice(string_at(l, -1));
                    out.extend_from_slice(b"\r\n");
                } else {
                    reply(l, &mut out);
                }
                lua_settop(l, 0);
                out
            }
        }
    }

    impl Drop for Vm {
        fn drop(&mut self) {
            unsafe { lua_close(self.0) }
        }
    }

    /// Redis's conversion of the value on top of the stack (popped) to RESP2.
    unsafe fn reply(l: *mut lua_State, out: &mut Vec<u8>) {
        unsafe {
            match lua_type(l, -1) {
                LUA_TSTRING => {
                    let s = string_at(l, -1);
                    out.extend_from_slice(format!("${}\r\n", s.len()).as_bytes());
                    out.extend_from_slice(s);
                    out.extend_from_slice(b"\r\n");
                }
                LUA_TNUMBER => {
                    let i = crate::scripting::ccast::f64_to_i64(lua_tonumber(l, -1));
                    out.extend_from_slice(format!(":{i}\r\n").as_bytes());
                }
                LUA_TBOOLEAN if lua_toboolean(l, -1) != 0 => out.extend_from_slice(b":1\r\n"),
                LUA_TTABLE => {
                    let mut items = Vec::new();
                    let mut n = 0;
                    loop {
                        lua_rawgeti_(l, -1, n + 1);
                        if lua_type(l, -1) == LUA_TNIL {
                            lua_settop(l, -2);
                            break;
                        }
                        reply(l, &mut items);
                        n += 1;
                    }
                    out.extend_from_slice(format!("*{n}\r\n").as_bytes());
                    out.extend_from_slice(&items);
                }
                _ => out.extend_from_slice(b"$-1\r\n"),
            }
            lua_settop(l, -2);
        }
    }

    /// The acceptance check's `cjson` cases and Redis 7.0.15's RESP2 replies to
    /// `EVAL <script> 0` (error replies without the " script: <sha>, ..." suffix).
    const REDIS_CASES: &[(&str, &[u8])] = &[
        ("return cjson.encode({1, 2, 3})", b"$7\r\n[1,2,3]\r\n"),
        ("return cjson.encode({})", b"$2\r\n{}\r\n"),
        ("return cjson.encode({a = 1})", b"$7\r\n{\"a\":1}\r\n"),
        ("return cjson.encode({a = {b = {c = 'd'}}})", b"$21\r\n{\"a\":{\"b\":{\"c\":\"d\"}}}\r\n"),
        ("return cjson.encode('q\\\"b\\\\s/n\\nt\\tz\\0e\\1')", b"$31\r\n\"q\\\"b\\\\s\\/n\\nt\\tz\\u0000e\\u0001\"\r\n"),
        ("return cjson.encode('\\127\\128\\255')", b"$10\r\n\"\\u007f\x80\xff\"\r\n"),
        ("return cjson.encode(1.5)", b"$3\r\n1.5\r\n"),
        ("return cjson.encode(1/3)", b"$16\r\n0.33333333333333\r\n"),
        ("return cjson.encode(1e300)", b"$6\r\n1e+300\r\n"),
        ("return cjson.encode(-0.0)", b"$2\r\n-0\r\n"),
        ("return cjson.encode(2^53)", b"$18\r\n9.007199254741e+15\r\n"),
        ("return cjson.encode(123456789012345678)", b"$19\r\n1.2345678901235e+17\r\n"),
        ("return cjson.encode(-1e-7)", b"$6\r\n-1e-07\r\n"),
        ("return cjson.encode(true)", b"$4\r\ntrue\r\n"),
        ("return cjson.encode(cjson.null)", b"$4\r\nnull\r\n"),
        ("return cjson.encode({1, cjson.null, 3})", b"$10\r\n[1,null,3]\r\n"),
        ("return cjson.encode(nil)", b"$4\r\nnull\r\n"),
        ("return cjson.encode()", b"-ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument)\r\n"),
        ("return cjson.encode({[1] = 1, [3] = 3})", b"$10\r\n[1,null,3]\r\n"),
        ("return cjson.encode({[1] = 1, [20] = 1})", b"-ERR user_script:1: Cannot serialise table: excessively sparse array\r\n"),
        ("return cjson.encode({[2] = 'x'})", b"$10\r\n[null,\"x\"]\r\n"),
        ("return cjson.encode({[0] = 'zero'})", b"$12\r\n{\"0\":\"zero\"}\r\n"),
        ("return cjson.encode({[-1] = 'neg'})", b"$12\r\n{\"-1\":\"neg\"}\r\n"),
        ("return cjson.encode({[1.5] = 'x'})", b"$11\r\n{\"1.5\":\"x\"}\r\n"),
        ("return cjson.encode({[true] = 1})", b"-ERR user_script:1: Cannot serialise boolean: table key must be a number or string\r\n"),
        ("return cjson.encode(function() end)", b"-ERR user_script:1: Cannot serialise function: type not supported\r\n"),
        ("return cjson.encode(1/0)", b"-ERR user_script:1: Cannot serialise number: must not be NaN or Inf\r\n"),
        ("return cjson.encode(-1/0)", b"-ERR user_script:1: Cannot serialise number: must not be NaN or Inf\r\n"),
        ("return cjson.encode(0/0)", b"-ERR user_script:1: Cannot serialise number: must not be NaN or Inf\r\n"),
        ("return cjson.encode({{}, {{}}, {a = {}}})", b"$18\r\n[{},[{}],{\"a\":{}}]\r\n"),
        ("local t = {} local c = t for i = 1, 999 do c[1] = {} c = c[1] end return #cjson.encode(t)", b":2000\r\n"),
        ("local t = {} local c = t for i = 1, 1000 do c[1] = {} c = c[1] end return cjson.encode(t)", b"-ERR user_script:1: Cannot serialise, excessive nesting (1001)\r\n"),
        ("local t = {} t[1] = t return cjson.encode(t)", b"-ERR user_script:1: Cannot serialise, excessive nesting (1001)\r\n"),
        ("return cjson.decode('[1,2,3]')", b"*3\r\n:1\r\n:2\r\n:3\r\n"),
        ("return cjson.decode('{\"a\":1}').a", b":1\r\n"),
        ("return cjson.decode('\"str\"')", b"$3\r\nstr\r\n"),
        ("return tostring(cjson.decode('null') == cjson.null)", b"$4\r\ntrue\r\n"),
        ("return cjson.decode('[1,null,3]')", b"*3\r\n:1\r\n$-1\r\n:3\r\n"),
        ("return #cjson.decode('[1,null,3]')", b":3\r\n"),
        ("return cjson.decode('1.5')", b":1\r\n"),
        ("return tostring(cjson.decode('1.5'))", b"$3\r\n1.5\r\n"),
        ("return tostring(cjson.decode('123456789012345678901234567890'))", b"$19\r\n1.2345678901235e+29\r\n"),
        ("return tostring(cjson.decode('1e400'))", b"$3\r\ninf\r\n"),
        ("return tostring(cjson.decode('-0'))", b"$2\r\n-0\r\n"),
        ("return cjson.decode('true')", b":1\r\n"),
        ("return cjson.decode('false')", b"$-1\r\n"),
        ("return cjson.decode('\\\"\\\\u00e9\\\\u4e2d\\\"')", b"$5\r\n\xc3\xa9\xe4\xb8\xad\r\n"),
        ("return cjson.decode('\\\"\\\\ud83d\\\\ude00\\\"')", b"$4\r\n\xf0\x9f\x98\x80\r\n"),
        ("return cjson.decode('\\\"\\\\ud83d\\\"')", b"-ERR user_script:1: Expected value but found invalid unicode escape code at character 2\r\n"),
        ("return cjson.decode('\\\"\\\\/\\\\b\\\\f\\\\n\\\\r\\\\t\\\"')", b"$6\r\n/\x08\x0c\n\r\x09\r\n"),
        ("return cjson.decode('\\\"\\\\x\\\"')", b"-ERR user_script:1: Expected value but found invalid escape code at character 2\r\n"),
        ("return cjson.decode('{')", b"-ERR user_script:1: Expected object key string but found T_END at character 2\r\n"),
        ("return cjson.decode('[1,]')", b"-ERR user_script:1: Expected value but found T_ARR_END at character 4\r\n"),
        ("return cjson.decode('')", b"-ERR user_script:1: Expected value but found T_END at character 1\r\n"),
        ("return cjson.decode('nul')", b"-ERR user_script:1: Expected value but found invalid token at character 1\r\n"),
        ("return cjson.decode('[1] x')", b"-ERR user_script:1: Expected the end but found invalid token at character 5\r\n"),
        ("return cjson.decode('0x10')", b":16\r\n"),
        ("return cjson.decode(' [1] ')", b"*1\r\n:1\r\n"),
        ("return cjson.decode('{\"a\" 1}')", b"-ERR user_script:1: Expected colon but found T_NUMBER at character 6\r\n"),
        ("return cjson.decode('{1:2}')", b"-ERR user_script:1: Expected object key string but found T_NUMBER at character 2\r\n"),
        ("return cjson.decode('[1e2, -3, 0.5e1]')", b"*3\r\n:100\r\n:-3\r\n:5\r\n"),
        ("return cjson.decode('\"unterminated')", b"-ERR user_script:1: Expected value but found unexpected end of string at character 14\r\n"),
        ("return cjson.decode('{\"a\":[1,2,{\"b\":true}]}').a[3].b", b":1\r\n"),
        ("return cjson.decode(123)", b":123\r\n"),
        ("return cjson.decode()", b"-ERR user_script:1: bad argument #1 to 'decode' (expected 1 argument)\r\n"),
        ("return tostring(cjson.decode('Infinity'))", b"$3\r\ninf\r\n"),
        ("return cjson.decode('[\"a\",[\"b\",[\"c\"]]]')", b"*2\r\n$1\r\na\r\n*2\r\n$1\r\nb\r\n*1\r\n$1\r\nc\r\n"),
        ("return type(cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)))", b"$5\r\ntable\r\n"),
        ("return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))", b"-ERR user_script:1: Found too many nested data structures (1001) at character 1001\r\n"),
        ("return cjson.decode(string.rep('{\"a\":', 1001) .. '1' .. string.rep('}', 1001))", b"-ERR user_script:1: Found too many nested data structures (1001) at character 5001\r\n"),
        ("return cjson.encode(cjson.decode('[1,2.5,\"x\",null,true,false,[],{}]'))", b"$33\r\n[1,2.5,\"x\",null,true,false,{},{}]\r\n"),
        ("return cjson.encode(cjson.decode('{\"k\":{\"n\":[1,{\"m\":null}]}}'))", b"$26\r\n{\"k\":{\"n\":[1,{\"m\":null}]}}\r\n"),
        ("local ok, e = pcall(function() cjson.encode_max_depth(2) return cjson.encode({{{1}}}) end) cjson.encode_max_depth(1000) return e", b"$54\r\nuser_script:1: Cannot serialise, excessive nesting (3)\r\n"),
        ("local ok, e = pcall(function() cjson.decode_max_depth(2) return cjson.decode('[[[1]]]') end) cjson.decode_max_depth(1000) return e", b"$71\r\nuser_script:1: Found too many nested data structures (3) at character 3\r\n"),
        ("cjson.encode_number_precision(3) local s = cjson.encode({3.14159, 1/3}) cjson.encode_number_precision(14) return s", b"$12\r\n[3.14,0.333]\r\n"),
        ("cjson.encode_sparse_array(true) local s = cjson.encode({[1] = 1, [20] = 1}) cjson.encode_sparse_array(false) return s", b"$14\r\n{\"1\":1,\"20\":1}\r\n"),
        ("local ok, e = pcall(cjson.encode_number_precision, 30) return e", b"$58\r\nbad argument #1 to '?' (expected integer between 1 and 14)\r\n"),
        ("return {cjson.encode_max_depth(1000)}", b"*1\r\n:1000\r\n"),
        ("return cjson.encode_keep_buffer(true)", b":1\r\n"),
        ("return {cjson._NAME, cjson._VERSION}", b"*2\r\n$5\r\ncjson\r\n$5\r\n2.1.0\r\n"),
        ("return type(cjson.new)", b"$8\r\nfunction\r\n"),
        ("return cjson.encode(cjson.decode(cjson.encode({'a', {'b', {'c', 1.25}}})))", b"$22\r\n[\"a\",[\"b\",[\"c\",1.25]]]\r\n"),
        ("return cjson.encode({a = 1, b = {1, 2}, c = 'x', d = true})", b"$34\r\n{\"a\":1,\"d\":true,\"c\":\"x\",\"b\":[1,2]}\r\n"),
        ("return cjson.encode({[1] = 'a', b = 2})", b"$15\r\n{\"1\":\"a\",\"b\":2}\r\n"),
        ("return cjson.encode({x = {y = {z = 1, w = 2}, v = 3}})", b"$31\r\n{\"x\":{\"y\":{\"w\":2,\"z\":1},\"v\":3}}\r\n"),
        ("return cjson.encode(cjson.decode('{\"a\":1,\"b\":[true,false],\"c\":null}'))", b"$33\r\n{\"a\":1,\"c\":null,\"b\":[true,false]}\r\n"),
    ];

    /// More scripts, with Redis 7.0.15's replies (each case on a fresh VM: SCRIPT FLUSH).
    const MORE_CASES: &[(&str, &[u8])] = &[
        ("return cjson.encode({[2^40]=1})", b"$19\r\n{\"1099511627776\":1}\r\n"),
        ("return cjson.encode({[2^40]=1,[5]=1})", b"$23\r\n[null,null,null,null,1]\r\n"),
        ("return cjson.encode({[3e9]=1})", b"$16\r\n{\"3000000000\":1}\r\n"),
        ("return cjson.decode('+5')", b":5\r\n"),
        ("return tostring(cjson.decode('-Infinity'))", b"$4\r\n-inf\r\n"),
        ("return tostring(cjson.decode('NaN'))", b"$3\r\nnan\r\n"),
        ("return cjson.decode('0x1p4')", b":16\r\n"),
        ("return cjson.decode('1e')", b"-ERR user_script:1: Expected the end but found invalid token at character 2\r\n"),
        ("return cjson.decode('12\\0x')", b":12\r\n"),
        ("return cjson.decode('1\\0')", b"-ERR user_script:1: JSON parser does not support UTF-16 or UTF-32\r\n"),
        ("return cjson.encode_invalid_numbers(true)", b":1\r\n"),
        ("cjson.encode_invalid_numbers(true) return cjson.encode({1/0, -1/0, 0/0})", b"$14\r\n[inf,-inf,nan]\r\n"),
        ("cjson.encode_invalid_numbers(true) return cjson.encode({[1/0]=1})", b"$9\r\n{\"inf\":1}\r\n"),
        ("cjson.encode_invalid_numbers('null') local s = cjson.encode({1/0, 0/0}) return {s, cjson.encode_invalid_numbers()}", b"*2\r\n$11\r\n[null,null]\r\n$4\r\nnull\r\n"),
        ("return {cjson.encode_sparse_array()}", b"*3\r\n$-1\r\n:2\r\n:10\r\n"),
        ("return cjson.encode_sparse_array('x')", b"-ERR user_script:1: bad argument #1 to 'encode_sparse_array' (invalid option 'x')\r\n"),
        ("return {cjson.encode_sparse_array('on', 3, 4)}", b"*3\r\n:1\r\n:3\r\n:4\r\n"),
        ("return {cjson.encode_sparse_array(false, -1)}", b"-ERR user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)\r\n"),
        ("return {cjson.encode_sparse_array(nil, nil, -1)}", b"-ERR user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)\r\n"),
        ("cjson.encode_sparse_array(false, 0) return cjson.encode({[30]=1})", b"$148\r\n[null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,1]\r\n"),
        ("cjson.encode_sparse_array(true, 1, 0) return cjson.encode({[1]=1,[3]=1})", b"$13\r\n{\"1\":1,\"3\":1}\r\n"),
        ("return cjson.encode_max_depth(1,2)", b"-ERR user_script:1: bad argument #2 to 'encode_max_depth' (found too many arguments)\r\n"),
        ("return cjson.encode_max_depth('a')", b"-ERR user_script:1: bad argument #1 to 'encode_max_depth' (number expected, got string)\r\n"),
        ("return cjson.encode_max_depth('7')", b":7\r\n"),
        ("return cjson.encode_max_depth(0)", b"-ERR user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)\r\n"),
        ("return cjson.encode_max_depth(2^32+5)", b":5\r\n"),
        ("return cjson.encode_max_depth(2.9)", b":2\r\n"),
        ("return cjson:encode(1)", b"-ERR user_script:1: calling 'encode' on bad self (expected 1 argument)\r\n"),
        ("return cjson.decode(nil)", b"-ERR user_script:1: bad argument #1 to 'decode' (string expected, got nil)\r\n"),
        ("return cjson.decode({})", b"-ERR user_script:1: bad argument #1 to 'decode' (string expected, got table)\r\n"),
        ("return cjson.decode(cjson.null)", b"-ERR user_script:1: bad argument #1 to 'decode' (string expected, got userdata)\r\n"),
        ("return cjson.encode(cjson)", b"-ERR user_script:1: Cannot serialise function: type not supported\r\n"),
        ("return cjson.encode(coroutine.create(function() end))", b"-ERR user_script:1: Cannot serialise thread: type not supported\r\n"),
        ("return cjson.encode(1, 2)", b"-ERR user_script:1: bad argument #1 to 'encode' (expected 1 argument)\r\n"),
        ("return cjson.decode_invalid_numbers(false)", b"$-1\r\n"),
        ("return cjson.decode_invalid_numbers('on')", b":1\r\n"),
        ("return cjson.decode_invalid_numbers('null')", b"-ERR user_script:1: bad argument #1 to 'decode_invalid_numbers' (invalid option 'null')\r\n"),
        ("cjson.decode_invalid_numbers(false) local ok, e = pcall(cjson.decode, 'Infinity') return e", b"$53\r\nExpected value but found invalid token at character 1\r\n"),
        ("cjson.decode_invalid_numbers(false) local ok, e = pcall(cjson.decode, '[0x10]') return e", b"$54\r\nExpected value but found invalid number at character 2\r\n"),
        ("cjson.decode_invalid_numbers(false) local ok, e = pcall(cjson.decode, '[01]') return e", b"$54\r\nExpected value but found invalid number at character 2\r\n"),
        ("cjson.decode_invalid_numbers(false) local ok, e = pcall(cjson.decode, '-inf') return e", b"$54\r\nExpected value but found invalid number at character 1\r\n"),
        ("cjson.decode_invalid_numbers(false) return cjson.decode('[0, -0.5, 1e3]')", b"*3\r\n:0\r\n:0\r\n:1000\r\n"),
        ("return cjson.encode_number_precision()", b":14\r\n"),
        ("return cjson.encode_number_precision(2^32+5)", b":5\r\n"),
        ("return cjson.encode_number_precision('x')", b"-ERR user_script:1: bad argument #1 to 'encode_number_precision' (number expected, got string)\r\n"),
        ("cjson.encode_number_precision(1) return cjson.encode({0.05, 15, 123})", b"$18\r\n[0.05,2e+01,1e+02]\r\n"),
        ("return cjson.encode({[-0.0]=1, [0.5]=2})", b"$16\r\n{\"-0\":1,\"0.5\":2}\r\n"),
        ("return cjson.encode('\\31\\8\\12\\13\\127/')", b"$22\r\n\"\\u001f\\b\\f\\r\\u007f\\/\"\r\n"),
        ("return cjson.decode('\\\"\\\\udc00\\\"')", b"-ERR user_script:1: Expected value but found invalid unicode escape code at character 2\r\n"),
        ("return cjson.decode('\\\"a\\\\u0000b\\\"')", b"$3\r\na\x00b\r\n"),
        ("return cjson.decode('\\\"\\\\u12\\\"')", b"-ERR user_script:1: Expected value but found invalid unicode escape code at character 2\r\n"),
        ("return cjson.decode('\\\"\\\\ud800\\\\u0041\\\"')", b"-ERR user_script:1: Expected value but found invalid unicode escape code at character 2\r\n"),
        ("return cjson.decode('\\\"\\\\u0041\\\\u00DF\\\\uFFFF\\\"')", b"$6\r\nA\xc3\x9f\xef\xbf\xbf\r\n"),
        ("return cjson.decode('\\\"\\\\')", b"-ERR user_script:1: Expected value but found invalid escape code at character 2\r\n"),
        ("return cjson.decode('\\\"a\\\\\\\"b\\\\\\\\c\\\"')", b"$5\r\na\"b\\c\r\n"),
        ("return cjson.decode('[1,2')", b"-ERR user_script:1: Expected comma or array end but found T_END at character 5\r\n"),
        ("return cjson.decode('{\\\"a\\\":1,}')", b"-ERR user_script:1: Expected object key string but found T_OBJ_END at character 8\r\n"),
        ("return cjson.decode('{\\\"a\\\":1 \\\"b\\\"}')", b"-ERR user_script:1: Expected comma or object end but found T_STRING at character 8\r\n"),
        ("return cjson.decode('[1 2]')", b"-ERR user_script:1: Expected comma or array end but found T_NUMBER at character 4\r\n"),
        ("return cjson.decode('  ')", b"-ERR user_script:1: Expected value but found T_END at character 3\r\n"),
        ("return cjson.decode('truex')", b"-ERR user_script:1: Expected the end but found invalid token at character 5\r\n"),
        ("return cjson.decode('-')", b"-ERR user_script:1: Expected value but found invalid number at character 1\r\n"),
        ("return cjson.decode('.5')", b"-ERR user_script:1: Expected value but found invalid token at character 1\r\n"),
        ("return cjson.decode('{\\\"a\\\"')", b"-ERR user_script:1: Expected colon but found T_END at character 5\r\n"),
        ("return cjson.decode(']')", b"-ERR user_script:1: Expected value but found T_ARR_END at character 1\r\n"),
        ("return cjson.decode('[\\\"a\\\":1]')", b"-ERR user_script:1: Expected comma or array end but found T_COLON at character 5\r\n"),
        ("return cjson.decode('\\t\\r\\n 7 \\n')", b":7\r\n"),
        ("return cjson.decode('[]')", b"*0\r\n"),
        ("return cjson.encode(cjson.decode('{}'))", b"$2\r\n{}\r\n"),
        ("return cjson.decode('{\\\"a\\\":1,\\\"a\\\":2}').a", b":2\r\n"),
        ("return cjson.decode('\\\"\\1\\127\\255\\\"')", b"$3\r\n\x01\x7f\xff\r\n"),
        ("return cjson.decode('1.5e')", b"-ERR user_script:1: Expected the end but found invalid token at character 4\r\n"),
        ("return tostring(cjson.decode('-nan'))", b"$4\r\n-nan\r\n"),
        ("return cjson.decode('nan')", b":-9223372036854775808\r\n"),
        ("return tostring(cjson.decode('inf'))", b"$3\r\ninf\r\n"),
        ("return cjson.decode('infinit')", b"-ERR user_script:1: Expected the end but found invalid token at character 4\r\n"),
        ("return cjson.decode('00012')", b":12\r\n"),
        ("return cjson.decode('1.')", b":1\r\n"),
        ("return cjson.decode('-0x1A')", b":-26\r\n"),
        ("return cjson.decode('[true,false,null]')", b"*3\r\n:1\r\n$-1\r\n$-1\r\n"),
        ("local c = cjson.new() c.encode_max_depth(1) local ok, e = pcall(c.encode, {{}}) return {e, cjson.encode({{}}), c._NAME, c.null == cjson.null}", b"*4\r\n$39\r\nCannot serialise, excessive nesting (2)\r\n$4\r\n[{}]\r\n$5\r\ncjson\r\n:1\r\n"),
        ("return {cjson.encode_keep_buffer(false), cjson.encode({1}), cjson.encode_keep_buffer()}", b"*3\r\n$-1\r\n$3\r\n[1]\r\n$-1\r\n"),
        ("return cjson.encode_keep_buffer('x')", b"-ERR user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option 'x')\r\n"),
        ("cjson.encode_max_depth(100000) local t = {} local c = t for i = 1, 9000 do c[1] = {} c = c[1] end local ok, e = pcall(cjson.encode, t) return e", b"$42\r\nCannot serialise, excessive nesting (7998)\r\n"),
        ("cjson.encode_max_depth(100000) local t = {} local c = t for i = 1, 9000 do c.a = {} c = c.a end local ok, e = pcall(cjson.encode, t) return e", b"$42\r\nCannot serialise, excessive nesting (4000)\r\n"),
        ("cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[', 9000)) return e", b"$62\r\nFound too many nested data structures (7999) at character 7999\r\n"),
        ("cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{\\\"a\\\":', 9000)) return e", b"$63\r\nFound too many nested data structures (4000) at character 19996\r\n"),
        ("cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[{\\\"a\\\":', 3000)) return e", b"$63\r\nFound too many nested data structures (5333) at character 15997\r\n"),
        ("local t = {} for i = 1, 100 do t[i] = i * 1.5 end return cjson.encode(t)", b"$429\r\n[1.5,3,4.5,6,7.5,9,10.5,12,13.5,15,16.5,18,19.5,21,22.5,24,25.5,27,28.5,30,31.5,33,34.5,36,37.5,39,40.5,42,43.5,45,46.5,48,49.5,51,52.5,54,55.5,57,58.5,60,61.5,63,64.5,66,67.5,69,70.5,72,73.5,75,76.5,78,79.5,81,82.5,84,85.5,87,88.5,90,91.5,93,94.5,96,97.5,99,100.5,102,103.5,105,106.5,108,109.5,111,112.5,114,115.5,117,118.5,120,121.5,123,124.5,126,127.5,129,130.5,132,133.5,135,136.5,138,139.5,141,142.5,144,145.5,147,148.5,150]\r\n"),
        ("local t = {} for i = 1, 30 do t['k' .. i] = i end return #cjson.encode(t)", b":253\r\n"),
        ("return cjson.encode({1, 2, x = 3})", b"$19\r\n{\"1\":1,\"2\":2,\"x\":3}\r\n"),
        ("return cjson.encode({[1] = 'a', [2] = 'b', [4] = 'd'})", b"$18\r\n[\"a\",\"b\",null,\"d\"]\r\n"),
        ("return cjson.encode({n = cjson.null})", b"$10\r\n{\"n\":null}\r\n"),
        ("return cjson.encode(12345678901234)", b"$14\r\n12345678901234\r\n"),
        ("return cjson.encode(0.1)", b"$3\r\n0.1\r\n"),
        ("return cjson.encode(-123.456e-300)", b"$13\r\n-1.23456e-298\r\n"),
        ("return cjson.encode(1e15)", b"$5\r\n1e+15\r\n"),
        ("return cjson.encode('')", b"$2\r\n\"\"\r\n"),
        ("return cjson.decode('\\\"\\\"')", b"$0\r\n\r\n"),
        ("return cjson.encode({['']=1})", b"$6\r\n{\"\":1}\r\n"),
        ("return cjson.encode(string.rep('\u{e9}', 3))", b"$8\r\n\"\xc3\xa9\xc3\xa9\xc3\xa9\"\r\n"),
        ("local s = '' for i = 0, 255 do s = s .. string.char(i) end return cjson.encode(s)", b"$406\r\n\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f !\\\"#$%&'()*+,-.\\/0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\\u007f\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xbb\xbc\xbd\xbe\xbf\xc0\xc1\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xc9\xca\xcb\xcc\xcd\xce\xcf\xd0\xd1\xd2\xd3\xd4\xd5\xd6\xd7\xd8\xd9\xda\xdb\xdc\xdd\xde\xdf\xe0\xe1\xe2\xe3\xe4\xe5\xe6\xe7\xe8\xe9\xea\xeb\xec\xed\xee\xef\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff\"\r\n"),
        ("local s = '' for i = 0, 255 do s = s .. string.char(i) end return cjson.decode(cjson.encode(s)) == s", b":1\r\n"),
        ("return cjson.encode(cjson.decode('[1,2,3,null,null]'))", b"$17\r\n[1,2,3,null,null]\r\n"),
        ("return cjson.encode({[1]=1, [2]=cjson.null, [4]=3})", b"$15\r\n[1,null,null,3]\r\n"),
        ("return cjson.encode(cjson.encode)", b"-ERR user_script:1: Cannot serialise function: type not supported\r\n"),
        ("return {cjson.encode_max_depth()}", b"*1\r\n:1000\r\n"),
        ("return {cjson.decode_max_depth(5)}", b"*1\r\n:5\r\n"),
        ("return cjson.encode({true, false})", b"$12\r\n[true,false]\r\n"),
        ("return cjson.decode('[1,[2,[3,[4]]],{\\\"x\\\":[{}]}]')[3].x[1] ~= nil", b":1\r\n"),
    ];

    fn check(cases: &[(&str, &[u8])]) {
        let mut failures = Vec::new();
        for &(script, expected) in cases {
            // Each case on a fresh VM: some change the configuration.
            let got = Vm::new().eval(script);
            if got != expected {
                failures.push(format!(
                    "{script}\n  redis: {:?}\n  ours:  {:?}",
                    String::from_utf8_lossy(expected),
                    String::from_utf8_lossy(&got)
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn the_acceptance_cases_match_redis() {
        check(REDIS_CASES);
    }

    #[test]
    fn more_cases_match_redis() {
        check(MORE_CASES);
    }

    #[test]
    fn open_sets_the_global_and_returns_the_table() {
        unsafe {
            let l = luaL_newstate();
            luaL_openlibs(l);
            lua_pushcclosure(l, open, 0);
            assert_eq!(lua_pcall(l, 0, 1, 0), 0);
            lua_getfield_(l, LUA_GLOBALSINDEX, c"cjson".as_ptr());
            assert_eq!(lua_type(l, -1), LUA_TTABLE);
            assert_eq!(lua_rawequal(l, -1, -2), 1);
            lua_close(l);
        }
    }

    #[test]
    fn tables_from_new_have_their_own_configuration() {
        let vm = Vm::new();
        assert_eq!(
            vm.eval("local c = cjson.new() c.encode_number_precision(3) return {c.encode(1/3), cjson.encode(1/3)}"),
            b"*2\r\n$5\r\n0.333\r\n$16\r\n0.33333333333333\r\n"
        );
        // Settings last across calls on the same VM, as in Redis.
        assert_eq!(
            vm.eval("cjson.encode_number_precision(2) return 1"),
            b":1\r\n"
        );
        assert_eq!(vm.eval("return cjson.encode(1/3)"), b"$4\r\n0.33\r\n");
    }

    #[test]
    fn errors_leave_the_vm_usable_and_free_the_buffers() {
        let vm = Vm::new();
        for _ in 0..2000 {
            let e = vm.eval("return cjson.encode({string.rep('x', 10000), function() end})");
            assert_eq!(
                e,
                b"-ERR user_script:1: Cannot serialise function: type not supported\r\n"
            );
            let e = vm.eval("return cjson.decode('[\"' .. string.rep('y', 10000) .. '\", ]')");
            assert_eq!(
                e,
                b"-ERR user_script:1: Expected value but found T_ARR_END at character 10006\r\n"
            );
        }
        unsafe {
            mlua_sys::lua_gc(vm.0, mlua_sys::LUA_GCCOLLECT, 0);
            // Everything the failed calls allocated is collectable: well under 1 MB live.
            assert!(mlua_sys::lua_gc(vm.0, mlua_sys::LUA_GCCOUNT, 0) < 1024);
        }
        assert_eq!(
            vm.eval("return cjson.encode(cjson.decode('[1,{\"a\":[]}]'))"),
            b"$12\r\n[1,{\"a\":{}}]\r\n"
        );
    }

    #[test]
    fn round_trips_deep_and_wide_values() {
        let vm = Vm::new();
        let script = "local t = {} for i = 1, 500 do t[i] = {i, tostring(i), {k = i / 7}} end \
                      local s = cjson.encode(t) return cjson.encode(cjson.decode(s)) == s";
        assert_eq!(vm.eval(script), b":1\r\n");
        // The innermost empty array comes back as an empty table: an object.
        let deep = "local s = string.rep('[', 1000) .. string.rep(']', 1000) \
                    return cjson.encode(cjson.decode(s)) == \
                    string.rep('[', 999) .. '{}' .. string.rep(']', 999)";
        assert_eq!(vm.eval(deep), b":1\r\n");
    }
}
