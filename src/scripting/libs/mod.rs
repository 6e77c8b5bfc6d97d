//! The libraries Redis bundles beside Lua's own: `cjson`, `cmsgpack`, `bit` and `struct`,
//! written against the Lua 5.1 C API (`mlua_sys`). Each `open` function leaves its table
//! as a global of the given state.

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
mod failure;
pub mod lstruct;
