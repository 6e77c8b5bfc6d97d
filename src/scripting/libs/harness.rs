//! A test harness shared by the three libraries' tests: a fresh state with Lua's own
//! libraries and `bit`, `cmsgpack` and `struct`, a chunk run as `@user_script` (so error
//! positions read `user_script:1:` as under Redis), and the chunk's first result converted
//! the way Redis 7.0 turns a script's return value into a RESP2 reply.

#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::ffi::c_int;

use mlua_sys::{
    LUA_TBOOLEAN, LUA_TNIL, LUA_TNUMBER, LUA_TSTRING, LUA_TTABLE, lua_State, lua_close, lua_pcall,
    lua_pop, lua_pushcfunction, lua_rawgeti_, lua_toboolean, lua_tolstring, lua_tonumber, lua_type,
    luaL_loadbuffer, luaL_newstate, luaL_openlibs,
};

/// An expected reply: RESP2 bytes, or the error message (without Redis's
/// " script: <sha>, on @user_script:1." suffix and "ERR " prefix).
pub(super) type Expect = Result<&'static [u8], &'static str>;

unsafe fn resp(l: *mut lua_State, out: &mut Vec<u8>) {
    // SAFETY (whole fn): `l` is the harness's state; the value is at the top.
    unsafe {
        match lua_type(l, -1) {
            LUA_TSTRING => {
                let mut len = 0;
                let p = lua_tolstring(l, -1, &mut len);
                out.extend_from_slice(format!("${len}\r\n").as_bytes());
                out.extend_from_slice(std::slice::from_raw_parts(p.cast(), len));
                out.extend_from_slice(b"\r\n");
            }
            LUA_TBOOLEAN if lua_toboolean(l, -1) != 0 => out.extend_from_slice(b":1\r\n"),
            LUA_TNUMBER => {
                let n = crate::scripting::ccast::f64_to_i64(lua_tonumber(l, -1));
                out.extend_from_slice(format!(":{n}\r\n").as_bytes());
            }
            LUA_TTABLE => {
                let mut items = Vec::new();
                let mut j: c_int = 1;
                loop {
                    lua_rawgeti_(l, -1, j);
                    if lua_type(l, -1) == LUA_TNIL {
                        lua_pop(l, 1);
                        break;
                    }
                    resp(l, &mut items);
                    lua_pop(l, 1);
                    j += 1;
                }
                out.extend_from_slice(format!("*{}\r\n", j - 1).as_bytes());
                out.extend_from_slice(&items);
            }
            _ => out.extend_from_slice(b"$-1\r\n"),
        }
    }
}

/// Runs `chunk` and returns its reply, or its error message.
pub(super) fn eval(chunk: &str) -> Result<Vec<u8>, String> {
    // SAFETY: a fresh state used by this thread only and closed before returning.
    unsafe {
        let l = luaL_newstate();
        assert!(!l.is_null());
        luaL_openlibs(l);
        for open in [
            super::bit::open,
            super::cmsgpack::open,
            super::lstruct::open,
        ] {
            lua_pushcfunction(l, open);
            assert_eq!(lua_pcall(l, 0, 0, 0), 0);
        }
        let mut status = luaL_loadbuffer(
            l,
            chunk.as_ptr().cast(),
            chunk.len(),
            c"@user_script".as_ptr(),
        );
        if status == 0 {
            status = lua_pcall(l, 0, 1, 0);
        }
        let result = if status == 0 {
            let mut out = Vec::new();
            resp(l, &mut out);
            Ok(out)
        } else {
            let mut len = 0;
            let p = lua_tolstring(l, -1, &mut len);
            let bytes = std::slice::from_raw_parts(p.cast::<u8>(), len);
            Err(String::from_utf8_lossy(bytes).into_owned())
        };
        lua_close(l);
        result
    }
}

/// Runs every case and fails listing each one whose outcome differs from Redis's.
pub(super) fn check(cases: &[(&str, Expect)]) {
    let mut failures = Vec::new();
    for (chunk, expect) in cases {
        let got = eval(chunk);
        let same = match (&got, expect) {
            (Ok(g), Ok(e)) => g.as_slice() == *e,
            (Err(g), Err(e)) => g == e,
            _ => false,
        };
        if !same {
            let got = got.map(|g| String::from_utf8_lossy(&g).into_owned());
            let expect = expect.map(|e| String::from_utf8_lossy(e).into_owned());
            failures.push(format!("{chunk}\n   got {got:?}\n  want {expect:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
