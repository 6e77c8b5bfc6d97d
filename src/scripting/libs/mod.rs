//! The libraries Redis bundles beside Lua's own: `cjson`, `cmsgpack`, `bit` and `struct`,
//! written against the Lua 5.1 C API (`mlua_sys`). Each `open` function leaves its table
//! as a global of the given state; `bit`, `struct` and `cmsgpack` build it through
//! [`Library`] (`cjson`'s functions are closures over its configuration, built its own way).

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
mod failure;
#[cfg(test)]
mod harness;
pub mod lstruct;

use std::ffi::{CStr, c_int};

use mlua_sys::{
    LUA_REGISTRYINDEX, lua_CFunction, lua_State, lua_createtable, lua_getfield, lua_istable,
    lua_pop, lua_pushcfunction, lua_pushlstring, lua_pushvalue, lua_setfield, lua_setglobal,
};

/// What a library's `open` registers.
struct Library {
    /// The global (and `_LOADED`) name.
    name: &'static CStr,
    /// The functions by name.
    funcs: &'static [(&'static CStr, lua_CFunction)],
    /// String fields set after the functions (`_NAME`, `_VERSION`, ...).
    info: &'static [(&'static CStr, &'static CStr)],
    /// Also stored as `_LOADED[name]` when the registry has a `_LOADED` table, as
    /// `luaL_register` does (Redis's `cmsgpack` sets only the global).
    loaded: bool,
}

impl Library {
    /// Builds the library's table, sets it as the global `name` (and `_LOADED[name]`
    /// when `loaded`), and leaves it on the stack: one result.
    ///
    /// # Safety
    /// `l` must be a valid Lua 5.1 state with room for a few stack slots.
    unsafe fn open(&self, l: *mut lua_State) -> c_int {
        // SAFETY (whole fn): `l` is a valid state (the caller's contract).
        unsafe {
            lua_createtable(l, 0, (self.funcs.len() + self.info.len()) as c_int);
            for &(name, f) in self.funcs {
                lua_pushcfunction(l, f);
                lua_setfield(l, -2, name.as_ptr());
            }
            for (name, value) in self.info {
                let v = value.to_bytes();
                lua_pushlstring(l, v.as_ptr().cast(), v.len());
                lua_setfield(l, -2, name.as_ptr());
            }
            if self.loaded {
                lua_getfield(l, LUA_REGISTRYINDEX, c"_LOADED".as_ptr());
                if lua_istable(l, -1) != 0 {
                    lua_pushvalue(l, -2);
                    lua_setfield(l, -2, self.name.as_ptr());
                }
                lua_pop(l, 1);
            }
            lua_pushvalue(l, -1);
            lua_setglobal(l, self.name.as_ptr());
        }
        1
    }
}

#[cfg(test)]
mod tests {
    use super::harness::check;

    #[test]
    fn libraries_are_globals_and_loaded_as_redis_registers_them() {
        check(&[
            (
                "return {package.loaded.bit == bit, package.loaded.struct == struct}",
                Ok(b"*2\r\n:1\r\n:1\r\n"),
            ),
            ("return package.loaded.cmsgpack == nil", Ok(b":1\r\n")),
            (
                "return {cmsgpack._NAME, cmsgpack._VERSION, type(bit.band), type(struct.pack)}",
                Ok(b"*4\r\n$8\r\ncmsgpack\r\n$18\r\nlua-cmsgpack 0.4.0\r\n$8\r\nfunction\r\n$8\r\nfunction\r\n"),
            ),
        ]);
    }
}
