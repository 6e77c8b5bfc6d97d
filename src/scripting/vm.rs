//! The Lua 5.1 VM that scripts and functions run in, built as Redis 7.0 builds its own.
//!
//! A VM holds Lua's base, `table`, `string` and `math` libraries, the bundled
//! `cjson`, `cmsgpack`, `bit` and `struct`, and the `redis` table; `print`, `loadfile`,
//! `dofile`, `getfenv`, `setfenv`, `newproxy`, `os`, `io`, `debug` and the package
//! system are absent. Everything a script can reach is read-only, as in Redis 7.0,
//! whose patched Lua marks tables read-only in the VM itself. We keep stock Lua and
//! reach the same behaviour with proxies:
//!
//! ```text
//!  chunk environment ──▶ P (empty) ── metatable { __index = G, __newindex = refuse }
//!                        G (the real globals: KEYS, ARGV, redis, string, ...)
//!                          └ metatable { __index = "nonexistent global variable" error }
//!  string, table, math, coroutine, redis, cjson, cmsgpack, bit, struct in G are
//!  proxies of the same shape over their real tables; the strings' metatable has
//!  __index = the `string` proxy, and getmetatable('') returns a read-only proxy of it.
//! ```
//!
//! `rawset`, `rawget`, `setmetatable`, `getmetatable`, `next`, `pairs` and `ipairs` are
//! wrapped so that a proxy behaves as the table it stands for (reads) and refuses
//! writes with Redis's `Attempt to modify a readonly table`.
//!
//! A script runs as a coroutine of the VM's main state, so that a count hook can
//! suspend it once it has run past `busy-reply-threshold` (Lua 5.1 resumes a coroutine
//! that yielded from a hook where it stopped): the server then answers other clients
//! `-BUSY` between slices of the script (see `scripting/run.rs`).
//!
//! Lua raises errors with `longjmp`: every C function here does its work in Rust
//! first, drops what it owns, and only then raises.

use mlua_sys as ffi;
use std::ffi::{CStr, c_char, c_int};

/// A Lua C function.
pub type CFn = ffi::lua_CFunction;

/// Registry key of the table mapping each read-only proxy to the table it stands for.
const PROXIES: &CStr = c"streamd.proxies";
/// Registry key of the table mapping each proxy to the read-only view `getmetatable`
/// returns for it.
const METATABLES: &CStr = c"streamd.metatables";
/// Registry key of the real globals table (G above): the address of this static, as a
/// light userdata (a script cannot make one). Every run looks it up twice (KEYS and
/// ARGV); a string key would be interned again on each lookup.
static GLOBALS: u8 = 0;

/// [`GLOBALS`] as the light userdata that keys the registry.
fn globals_key() -> *mut std::ffi::c_void {
    std::ptr::addr_of!(GLOBALS).cast_mut().cast()
}
/// The text of a write to a protected table.
pub const READONLY_ERR: &CStr = c"Attempt to modify a readonly table";

unsafe extern "C" {
    /// In `number2str.c`: referencing it links that file, whose `sprintf` gives Lua's
    /// number-to-string conversion a fast path for whole numbers.
    fn streamd_number2str_linked() -> c_int;
}

/// One Lua state with Redis's libraries and protections.
pub struct Vm {
    /// The main state.
    pub l: *mut ffi::lua_State,
    /// The coroutine of the last run that returned, kept for the next run: a new
    /// thread per script was most of a short script's allocations and of the garbage
    /// collector's work (Lua 5.1 restarts a thread whose function returned).
    spare_thread: std::cell::Cell<Option<Thread>>,
    /// Registry references of the tables the real globals hold as KEYS and ARGV (by
    /// [`GlobalArray`]), `LUA_NOREF` until a run sets them: a run finds them without
    /// interning the names or probing the globals.
    arrays: [std::cell::Cell<c_int>; 2],
}

/// The arrays an EVAL's script reads from its globals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalArray {
    /// `KEYS`.
    Keys = 0,
    /// `ARGV`.
    Argv = 1,
}

impl GlobalArray {
    /// The global's name.
    fn name(self) -> &'static CStr {
        match self {
            GlobalArray::Keys => c"KEYS",
            GlobalArray::Argv => c"ARGV",
        }
    }
}

/// A coroutine of a VM, anchored in its registry.
#[derive(Debug, Clone, Copy)]
pub struct Thread {
    /// The coroutine's state.
    pub co: *mut ffi::lua_State,
    /// Its registry reference (what keeps it from being collected).
    pub reference: c_int,
}

impl Drop for Vm {
    fn drop(&mut self) {
        // SAFETY: `l` was created by `luaL_newstate` and is closed once, here.
        unsafe { ffi::lua_close(self.l) }
    }
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm").finish_non_exhaustive()
    }
}

/// The libraries Redis opens beside the base library, in its order.
fn libraries() -> Vec<(&'static CStr, CFn)> {
    vec![
        (c"", ffi::luaopen_base as CFn),
        (c"table", ffi::luaopen_table as CFn),
        (c"string", ffi::luaopen_string as CFn),
        (c"math", ffi::luaopen_math as CFn),
        (c"cjson", super::libs::cjson::open as CFn),
        (c"struct", super::libs::lstruct::open as CFn),
        (c"cmsgpack", super::libs::cmsgpack::open as CFn),
        (c"bit", super::libs::bit::open as CFn),
    ]
}

impl Vm {
    /// A new VM: libraries opened, `redis` installed by `install_redis` (which receives
    /// the state with the real globals table on top), then everything protected.
    pub fn new(install_redis: impl FnOnce(*mut ffi::lua_State)) -> Vm {
        // SAFETY: a fresh state; every call below keeps the stack balanced.
        unsafe {
            // Lua allocates through the process allocator, so a script's memory is counted
            // in `used_memory` (and against `maxmemory`) like everything else.
            // Keeps number2str.c (and its `sprintf`) in every binary that runs scripts.
            streamd_number2str_linked();
            let l = ffi::lua_newstate(lua_alloc, std::ptr::null_mut());
            ffi::lua_atpanic(l, lua_panic);
            for (name, open) in libraries() {
                ffi::lua_pushcfunction(l, open);
                ffi::lua_pushstring(l, name.as_ptr());
                ffi::lua_call(l, 1, 0);
            }
            for gone in [
                c"print",
                c"loadfile",
                c"dofile",
                c"getfenv",
                c"setfenv",
                c"newproxy",
                c"module",
                c"require",
                c"package",
                c"debug",
                c"os",
                c"io",
            ] {
                ffi::lua_pushnil(l);
                ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, gone.as_ptr());
            }
            ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"math".as_ptr());
            set_fn(l, c"random", lua_math_random);
            set_fn(l, c"randomseed", lua_math_randomseed);
            ffi::lua_pop(l, 1);
            ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
            install_redis(l);
            ffi::lua_pop(l, 1);
            protect(l);
            run_prelude(l);
            Vm {
                l,
                spare_thread: std::cell::Cell::new(None),
                arrays: [
                    std::cell::Cell::new(ffi::LUA_NOREF),
                    std::cell::Cell::new(ffi::LUA_NOREF),
                ],
            }
        }
    }

    /// Compiles `body` as a chunk named `chunkname` (`@user_script`) and anchors the
    /// function in the registry: its reference (a registry slot costs less than a
    /// string key and is found without hashing); the compile error's text otherwise.
    pub fn compile(&self, body: &[u8], chunkname: &CStr) -> Result<c_int, Vec<u8>> {
        // SAFETY: balanced stack; the error value is copied out before it is popped.
        unsafe {
            let l = self.l;
            let status = ffi::luaL_loadbuffer(
                l,
                body.as_ptr() as *const c_char,
                body.len(),
                chunkname.as_ptr(),
            );
            if status != 0 {
                let text = to_bytes(l, -1).unwrap_or_default();
                ffi::lua_pop(l, 1);
                return Err(text);
            }
            Ok(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX))
        }
    }

    /// Pushes the function `compile` anchored under `reference`.
    ///
    /// # Safety
    /// `reference` came from `compile` on this VM; the stack has room for one value.
    pub unsafe fn push_compiled(&self, reference: c_int) {
        unsafe {
            ffi::lua_rawgeti(
                self.l,
                ffi::LUA_REGISTRYINDEX,
                ffi::lua_Integer::from(reference),
            );
        }
    }

    /// The kept coroutine, if there is one (see `spare_thread`).
    pub fn take_thread(&self) -> Option<Thread> {
        self.spare_thread.take()
    }

    /// Keeps the coroutine of a run that returned (its stack emptied) for the next run.
    ///
    /// # Safety
    /// `thread` is a coroutine of this VM whose function returned, no longer used.
    pub unsafe fn keep_thread(&self, thread: Thread) {
        unsafe {
            ffi::lua_settop(thread.co, 0);
            if let Some(old) = self.spare_thread.replace(Some(thread)) {
                ffi::luaL_unref(self.l, ffi::LUA_REGISTRYINDEX, old.reference);
            }
        }
    }

    /// Sets the real global KEYS or ARGV to an array of `items` (of an EVAL).
    ///
    /// A small table the last run left as it was made (the keys `1..=n` and nothing
    /// else, no metatable) is refilled instead of replaced: a new table per script was
    /// a tenth of a one-command script's time, with the garbage it leaves. No script can
    /// keep a reference to it past its run (every table it could store one in is
    /// read-only, and a chunk's locals end with the run), so a refilled table cannot be
    /// told from a new one. Nor can a script replace the global (the real globals are
    /// behind their read-only proxy), so the table is found through its registry
    /// reference. Functions get new tables (a library's upvalues outlive a call).
    pub fn set_global_array(&self, which: GlobalArray, items: &[bytes::Bytes]) {
        let slot = &self.arrays[which as usize];
        // SAFETY: balanced stack; `lua_next` only runs from nil or from a key that is
        // in the table (its own previous result); the reference is this VM's.
        unsafe {
            let l = self.l;
            let reference = slot.get();
            if reference != ffi::LUA_NOREF {
                ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, ffi::lua_Integer::from(reference));
                if reusable_array(l, items.len()) {
                    for (i, item) in items.iter().enumerate() {
                        push_bytes(l, item);
                        ffi::lua_rawseti(l, -2, (i + 1) as ffi::lua_Integer);
                    }
                    ffi::lua_pop(l, 1);
                    return;
                }
                ffi::lua_pop(l, 1);
                ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, reference);
            }
            push_array(l, items);
            push_globals(l);
            ffi::lua_pushvalue(l, -2);
            // G has an __index (for names never set) and no __newindex.
            ffi::lua_setfield(l, -2, which.name().as_ptr());
            ffi::lua_pop(l, 1);
            slot.set(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX));
        }
    }

    /// Memory the VM uses, bytes (`collectgarbage('count')`).
    pub fn memory(&self) -> usize {
        // SAFETY: a query on a live state.
        unsafe {
            let kb = ffi::lua_gc(self.l, ffi::LUA_GCCOUNT, 0) as usize;
            let b = ffi::lua_gc(self.l, ffi::LUA_GCCOUNTB, 0) as usize;
            kb * 1024 + b
        }
    }

    /// Runs a full garbage collection.
    pub fn collect(&self) {
        // SAFETY: a full collection on a live state with no script running.
        unsafe {
            ffi::lua_gc(self.l, ffi::LUA_GCCOLLECT, 0);
        }
    }
}

/// Lua's allocator over Rust's global allocator (alignment 16, Lua's largest need).
unsafe extern "C" fn lua_alloc(
    _ud: *mut std::ffi::c_void,
    ptr: *mut std::ffi::c_void,
    osize: usize,
    nsize: usize,
) -> *mut std::ffi::c_void {
    use std::alloc::{Layout, alloc, dealloc, realloc};
    const ALIGN: usize = 16;
    // SAFETY: Lua hands back blocks this function returned, with the size it asked for.
    unsafe {
        if nsize == 0 {
            if !ptr.is_null()
                && let Ok(layout) = Layout::from_size_align(osize.max(1), ALIGN)
            {
                dealloc(ptr as *mut u8, layout);
            }
            return std::ptr::null_mut();
        }
        let Ok(new_layout) = Layout::from_size_align(nsize, ALIGN) else {
            return std::ptr::null_mut();
        };
        if ptr.is_null() {
            return alloc(new_layout) as *mut std::ffi::c_void;
        }
        let Ok(old_layout) = Layout::from_size_align(osize.max(1), ALIGN) else {
            return std::ptr::null_mut();
        };
        realloc(ptr as *mut u8, old_layout, nsize) as *mut std::ffi::c_void
    }
}

/// An error outside any protected call: Lua would `abort()`; we log it and abort too,
/// which only a bug in this module can cause (every script runs protected).
unsafe extern "C-unwind" fn lua_panic(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: the error value is on top of the stack.
    let text = unsafe { to_bytes(l, -1) }.unwrap_or_default();
    tracing::error!("unprotected Lua error: {}", String::from_utf8_lossy(&text));
    std::process::abort()
}

/// Pushes the real globals table.
///
/// # Safety
/// `l` is a state built by [`Vm::new`].
pub unsafe fn push_globals(l: *mut ffi::lua_State) {
    unsafe {
        ffi::lua_pushlightuserdata(l, globals_key());
        ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
    }
}

/// The value at `idx` as bytes, when it is a string or a number.
///
/// # Safety
/// `idx` is a valid index of `l`.
pub unsafe fn to_bytes(l: *mut ffi::lua_State, idx: c_int) -> Option<Vec<u8>> {
    unsafe {
        let t = ffi::lua_type(l, idx);
        if t != ffi::LUA_TSTRING && t != ffi::LUA_TNUMBER {
            return None;
        }
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, idx, &mut len);
        if p.is_null() {
            return None;
        }
        Some(std::slice::from_raw_parts(p as *const u8, len).to_vec())
    }
}

/// The string at `idx` without copying (valid while the value stays on the stack).
///
/// # Safety
/// `idx` is a valid index of `l` holding a string.
pub unsafe fn str_at<'a>(l: *mut ffi::lua_State, idx: c_int) -> &'a [u8] {
    unsafe {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, idx, &mut len);
        if p.is_null() {
            return &[];
        }
        std::slice::from_raw_parts(p as *const u8, len)
    }
}

/// Pushes `bytes` as a Lua string.
///
/// # Safety
/// `l` is a live state with room on its stack.
pub unsafe fn push_bytes(l: *mut ffi::lua_State, bytes: &[u8]) {
    unsafe {
        ffi::lua_pushlstring(l, bytes.as_ptr() as *const c_char, bytes.len());
    }
}

/// Arrays up to this length are refilled by `Vm::set_global_array` (checking a table
/// walks all of it).
const REFILL_MAX: usize = 16;

/// True when the value on top is a table with exactly the keys `1..=n`, no metatable,
/// and `n` is at most [`REFILL_MAX`].
///
/// # Safety
/// `l` is a live state with room for three more values on its stack.
unsafe fn reusable_array(l: *mut ffi::lua_State, n: usize) -> bool {
    unsafe {
        if n > REFILL_MAX || ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
            return false;
        }
        if ffi::lua_getmetatable(l, -1) != 0 {
            ffi::lua_pop(l, 1);
            return false;
        }
        let mut count = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_pop(l, 1);
            // A whole number in 1..=n (compared through a cast: `fract` is a call).
            let in_range = ffi::lua_type(l, -1) == ffi::LUA_TNUMBER && {
                let key = ffi::lua_tonumber(l, -1);
                key >= 1.0 && key <= n as f64 && (key as usize) as f64 == key
            };
            count += 1;
            if !in_range || count > n {
                ffi::lua_pop(l, 1);
                return false;
            }
        }
        count == n
    }
}

/// Pushes a new array table of `items` (KEYS and ARGV of a run).
///
/// # Safety
/// `l` is a live state with room on its stack.
pub unsafe fn push_array(l: *mut ffi::lua_State, items: &[bytes::Bytes]) {
    unsafe {
        ffi::lua_createtable(l, items.len() as c_int, 0);
        for (i, item) in items.iter().enumerate() {
            push_bytes(l, item);
            ffi::lua_rawseti(l, -2, (i + 1) as ffi::lua_Integer);
        }
    }
}

/// Pushes Redis's error table `{err = text}`.
///
/// # Safety
/// `l` is a live state with room on its stack.
pub unsafe fn push_error_table(l: *mut ffi::lua_State, text: &[u8]) {
    unsafe {
        ffi::lua_createtable(l, 0, 1);
        push_bytes(l, text);
        ffi::lua_setfield(l, -2, c"err".as_ptr());
    }
}

/// Raises the value on top of the stack.
///
/// # Safety
/// Called from a Lua C function with no Rust value that needs dropping still alive.
pub unsafe fn raise(l: *mut ffi::lua_State) -> c_int {
    unsafe { ffi::lua_error(l) }
}

/// Registers `f` as field `name` of the table on top of the stack.
///
/// # Safety
/// A table is on top of `l`'s stack.
pub unsafe fn set_fn(l: *mut ffi::lua_State, name: &CStr, f: CFn) {
    unsafe {
        ffi::lua_pushcfunction(l, f);
        ffi::lua_setfield(l, -2, name.as_ptr());
    }
}

/// Sets field `name` of the table on top of the stack to the number `n`.
///
/// # Safety
/// A table is on top of `l`'s stack.
pub unsafe fn set_num(l: *mut ffi::lua_State, name: &CStr, n: f64) {
    unsafe {
        ffi::lua_pushnumber(l, n);
        ffi::lua_setfield(l, -2, name.as_ptr());
    }
}

// ---- protection ---------------------------------------------------------------------

/// Builds the proxies and wrappers (see the module comment) and makes P the globals of
/// the main state and every thread made from it.
unsafe fn protect(l: *mut ffi::lua_State) {
    unsafe {
        // The proxy registries.
        ffi::lua_newtable(l);
        ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, PROXIES.as_ptr());
        ffi::lua_newtable(l);
        ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, METATABLES.as_ptr());
        // The wrapped base functions (over the real globals).
        for (name, f) in [
            (c"pcall", lua_pcall_errors_as_text as CFn),
            (c"rawset", lua_rawset_ro as CFn),
            (c"rawget", lua_rawget_ro as CFn),
            (c"setmetatable", lua_setmetatable_ro as CFn),
            (c"getmetatable", lua_getmetatable_ro as CFn),
            (c"next", lua_next_ro as CFn),
            (c"pairs", lua_pairs_ro as CFn),
            (c"ipairs", lua_ipairs_ro as CFn),
            (c"loadstring", lua_loadstring_text_only as CFn),
        ] {
            ffi::lua_pushcfunction(l, f);
            ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, name.as_ptr());
        }
        // Library tables become proxies.
        for name in [
            c"string",
            c"table",
            c"math",
            c"coroutine",
            c"redis",
            c"cjson",
            c"cmsgpack",
            c"bit",
            c"struct",
        ] {
            ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, name.as_ptr());
            if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
                ffi::lua_pop(l, 1);
                continue;
            }
            make_proxy(l, -1);
            ffi::lua_remove(l, -2);
            ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, name.as_ptr());
        }
        // The strings' metatable reads through the `string` proxy.
        ffi::lua_pushstring(l, c"".as_ptr());
        if ffi::lua_getmetatable(l, -1) != 0 {
            ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"string".as_ptr());
            ffi::lua_setfield(l, -2, c"__index".as_ptr());
            // Its read-only proxy, for getmetatable('').
            make_proxy(l, -1);
            ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, c"streamd.string_mt".as_ptr());
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
        // G: nonexistent globals are errors.
        ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
        ffi::lua_pushlightuserdata(l, globals_key());
        ffi::lua_pushvalue(l, -2);
        ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_pushcfunction(l, lua_nonexistent_global);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::lua_setmetatable(l, -2);
        // P, the proxy of G, becomes the globals; `_G` is P.
        make_proxy(l, -1);
        ffi::lua_pushvalue(l, -1);
        ffi::lua_setfield(l, -3, c"_G".as_ptr());
        ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
        ffi::lua_pop(l, 1);
    }
}

/// What the hook-aware resume returns when the count hook suspended the coroutine it
/// resumed (its address is all that matters; a script cannot make a light userdata).
pub static HOOK_YIELD: u8 = 0;

/// Lua 5.1 cannot yield across a C function, so `pcall`, `xpcall`, `coroutine.resume`
/// and `coroutine.wrap` are rewritten in Lua over coroutines: the function runs in a
/// coroutine of its own, resumed by `resume_` (a hook-aware `coroutine.resume`). When
/// the hook suspends that coroutine, `resume_` answers the marker instead of yielded
/// values, and the wrapper suspends its own coroutine the same way (`suspend_`), up to
/// the script's coroutine, which the server then resumes in slices like any busy
/// script. C functions (`pcall(redis.call, ...)`) still go through the C `pcall`.
const PRELUDE: &str = r#"
local marker, c_pcall, resume_, suspend_ = ...
local create, status = coroutine.create, coroutine.status
local select, unpack, type, rawget, error, c_xpcall = select, unpack, type, rawget, error, xpcall
local function pack(...) return {n = select('#', ...), ...} end
local function drive(co, ...)
  local r = pack(resume_(co, ...))
  while r[1] == marker do
    suspend_()
    r = pack(resume_(co))
  end
  return r
end
local function lua_fn(f)
  if type(f) ~= 'function' then return nil end
  local ok, co = c_pcall(create, f)
  if ok then return co end
  return nil
end
local function text(e)
  if type(e) == 'table' then
    local t = rawget(e, 'err')
    if type(t) == 'string' then return t end
  end
  return e
end
local function pcall_(f, ...)
  local co = lua_fn(f)
  if not co then return c_pcall(f, ...) end
  local r = drive(co, ...)
  if r[1] then return unpack(r, 1, r.n) end
  return false, text(r[2])
end
local function xpcall_(f, handler)
  local co = lua_fn(f)
  if not co then return c_xpcall(f, handler) end
  local r = drive(co)
  if r[1] then return unpack(r, 1, r.n) end
  return false, handler(r[2])
end
local function coresume(co, ...)
  local r = drive(co, ...)
  return unpack(r, 1, r.n)
end
local function wrap_(f)
  local co = create(f)
  return function(...)
    local r = drive(co, ...)
    if r[1] then return unpack(r, 2, r.n) end
    error(r[2], 2)
  end
end
return pcall_, xpcall_, coresume, wrap_
"#;

unsafe extern "C-unwind" {
    /// Gives `to` the C-call depth of `from` (Lua 5.1's `lua_setlevel`, what
    /// `coroutine.resume` does before resuming).
    fn lua_setlevel(from: *mut ffi::lua_State, to: *mut ffi::lua_State);
}

/// `coroutine.resume` that tells a hook suspension apart: Lua 5.1's own would move the
/// suspended function's stack slots out as "yielded values".
unsafe extern "C-unwind" fn lua_resume_hook_aware(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let co = ffi::lua_tothread(l, 1);
        if co.is_null() {
            return ffi::luaL_argerror(l, 1, c"coroutine expected".as_ptr());
        }
        let narg = ffi::lua_gettop(l) - 1;
        let state = if co == l {
            Some(c"running")
        } else {
            match ffi::lua_status(co) {
                ffi::LUA_YIELD => None,
                0 => {
                    let mut ar: ffi::lua_Debug = std::mem::zeroed();
                    if ffi::lua_getstack(co, 0, &mut ar) > 0 {
                        Some(c"normal")
                    } else if ffi::lua_gettop(co) == 0 {
                        Some(c"dead")
                    } else {
                        None
                    }
                }
                _ => Some(c"dead"),
            }
        };
        if ffi::lua_checkstack(co, narg) == 0 {
            return ffi::luaL_error(l, c"too many arguments to resume".as_ptr());
        }
        if let Some(state) = state {
            ffi::lua_pushboolean(l, 0);
            ffi::lua_pushfstring(l, c"cannot resume %s coroutine".as_ptr(), state.as_ptr());
            return 2;
        }
        ffi::lua_xmove(l, co, narg);
        lua_setlevel(l, co);
        let status = ffi::lua_resume_(co, narg);
        if status == ffi::LUA_YIELD && super::suspend::take_inner() {
            ffi::lua_pushlightuserdata(l, &HOOK_YIELD as *const u8 as *mut std::ffi::c_void);
            return 1;
        }
        if status == 0 || status == ffi::LUA_YIELD {
            let nres = ffi::lua_gettop(co);
            if ffi::lua_checkstack(l, nres + 1) == 0 {
                return ffi::luaL_error(l, c"too many results to resume".as_ptr());
            }
            ffi::lua_pushboolean(l, 1);
            ffi::lua_xmove(co, l, nres);
            nres + 1
        } else {
            ffi::lua_pushboolean(l, 0);
            ffi::lua_xmove(co, l, 1);
            2
        }
    }
}

/// Suspends the running coroutine for the hook (a wrapper passing a hook suspension
/// up a level).
unsafe extern "C-unwind" fn lua_suspend_for_hook(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        super::suspend::mark(l);
        ffi::lua_yield(l, 0)
    }
}

/// Installs [`PRELUDE`]'s functions over the real `pcall`, `xpcall`, `coroutine.resume`
/// and `coroutine.wrap`.
unsafe fn run_prelude(l: *mut ffi::lua_State) {
    unsafe {
        if ffi::luaL_loadbuffer(
            l,
            PRELUDE.as_ptr() as *const c_char,
            PRELUDE.len(),
            c"=prelude".as_ptr(),
        ) != 0
        {
            ffi::lua_pop(l, 1);
            return;
        }
        ffi::lua_pushlightuserdata(l, &HOOK_YIELD as *const u8 as *mut std::ffi::c_void);
        ffi::lua_pushcfunction(l, lua_pcall_errors_as_text);
        ffi::lua_pushcfunction(l, lua_resume_hook_aware);
        ffi::lua_pushcfunction(l, lua_suspend_for_hook);
        if ffi::lua_pcall(l, 4, 4, 0) != 0 {
            ffi::lua_pop(l, 1);
            return;
        }
        push_globals(l);
        ffi::lua_pushvalue(l, -5);
        ffi::lua_setfield(l, -2, c"pcall".as_ptr());
        ffi::lua_pushvalue(l, -4);
        ffi::lua_setfield(l, -2, c"xpcall".as_ptr());
        // coroutine is a proxy: write into the table it stands for.
        ffi::lua_getfield(l, -1, c"coroutine".as_ptr());
        unproxy(l, -1);
        ffi::lua_pushvalue(l, -4);
        ffi::lua_setfield(l, -2, c"resume".as_ptr());
        ffi::lua_pushvalue(l, -3);
        ffi::lua_setfield(l, -2, c"wrap".as_ptr());
        ffi::lua_pop(l, 6);
    }
}

/// Pushes a read-only proxy of the table at `idx`. `getmetatable` of the proxy gives a
/// read-only view of a metatable whose `__index` is the proxy itself, so neither the
/// proxy's real metatable nor the table it stands for can be reached through it.
unsafe fn make_proxy(l: *mut ffi::lua_State, idx: c_int) {
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        let proxy = bare_proxy(l, idx);
        // The view of the metatable: {__index = proxy, __newindex = refuse}, read-only.
        ffi::lua_createtable(l, 0, 2);
        ffi::lua_pushvalue(l, proxy);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::lua_pushcfunction(l, lua_refuse_write);
        ffi::lua_setfield(l, -2, c"__newindex".as_ptr());
        let fake = ffi::lua_gettop(l);
        bare_proxy(l, fake);
        // metatables[proxy] = view
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, METATABLES.as_ptr());
        ffi::lua_pushvalue(l, proxy);
        ffi::lua_pushvalue(l, -3);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 3);
    }
}

/// Pushes an empty table reading through to the table at `idx` and refusing writes,
/// registered as its proxy; returns the proxy's stack index.
unsafe fn bare_proxy(l: *mut ffi::lua_State, idx: c_int) -> c_int {
    unsafe {
        ffi::lua_newtable(l);
        ffi::lua_createtable(l, 0, 2);
        ffi::lua_pushvalue(l, idx);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::lua_pushcfunction(l, lua_refuse_write);
        ffi::lua_setfield(l, -2, c"__newindex".as_ptr());
        ffi::lua_setmetatable(l, -2);
        // proxies[proxy] = real
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, PROXIES.as_ptr());
        ffi::lua_pushvalue(l, -2);
        ffi::lua_pushvalue(l, idx);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
        ffi::lua_gettop(l)
    }
}

/// When the value at `idx` is a table: pushes the registry's proxies table and, above
/// it, the table the value is a proxy of (nil when it is none), and returns `idx` as an
/// absolute index. Pushes nothing and returns None for any other value.
unsafe fn push_proxied(l: *mut ffi::lua_State, idx: c_int) -> Option<c_int> {
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return None;
        }
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, PROXIES.as_ptr());
        ffi::lua_pushvalue(l, idx);
        ffi::lua_rawget(l, -2);
        Some(idx)
    }
}

/// If the value at `idx` is a proxy, replaces it (in place) with the table it stands
/// for; true when it was one.
unsafe fn unproxy(l: *mut ffi::lua_State, idx: c_int) -> bool {
    unsafe {
        let Some(idx) = push_proxied(l, idx) else {
            return false;
        };
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_replace(l, idx);
            ffi::lua_pop(l, 1);
            true
        } else {
            ffi::lua_pop(l, 2);
            false
        }
    }
}

/// True when the table at `idx` is a proxy or a table a proxy stands for.
unsafe fn is_protected(l: *mut ffi::lua_State, idx: c_int) -> bool {
    unsafe {
        let Some(idx) = push_proxied(l, idx) else {
            return false;
        };
        let proxy = ffi::lua_type(l, -1) != ffi::LUA_TNIL;
        ffi::lua_pop(l, 1);
        let mut real = false;
        if !proxy {
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, -2) != 0 {
                if ffi::lua_rawequal(l, -1, idx) != 0 {
                    real = true;
                }
                ffi::lua_pop(l, 1);
                if real {
                    ffi::lua_pop(l, 1);
                    break;
                }
            }
        }
        ffi::lua_pop(l, 1);
        proxy || real
    }
}

/// Pushes the function that refuses writes (a `__newindex`).
///
/// # Safety
/// `l` is a live state with room on its stack.
pub unsafe fn push_refuse_write(l: *mut ffi::lua_State) {
    unsafe { ffi::lua_pushcfunction(l, lua_refuse_write) }
}

/// `__newindex` of every proxy: the write is refused, with the position of the Lua
/// code that tried it.
unsafe extern "C-unwind" fn lua_refuse_write(l: *mut ffi::lua_State) -> c_int {
    unsafe { ffi::luaL_error(l, c"%s".as_ptr(), READONLY_ERR.as_ptr()) }
}

/// `__index` of the real globals: a missing global is an error.
unsafe extern "C-unwind" fn lua_nonexistent_global(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        if ffi::lua_type(l, 2) == ffi::LUA_TSTRING {
            let name = ffi::lua_tolstring(l, 2, std::ptr::null_mut());
            ffi::luaL_error(
                l,
                c"Script attempted to access nonexistent global variable '%s'".as_ptr(),
                name,
            )
        } else {
            ffi::lua_pushnil(l);
            1
        }
    }
}

/// Raises `Attempt to modify a readonly table` without a position (Redis raises it
/// from inside the C API, where there is none).
unsafe fn refuse_plain(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::lua_pushstring(l, READONLY_ERR.as_ptr());
        ffi::lua_error(l)
    }
}

/// `pcall`, as Redis 7.0 replaces it: an error table that is caught gives its `err`
/// text, not the table.
unsafe extern "C-unwind" fn lua_pcall_errors_as_text(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checkany(l, 1);
        let argc = ffi::lua_gettop(l);
        let status = ffi::lua_pcall(l, argc - 1, ffi::LUA_MULTRET, 0);
        if status != 0 && ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_getfield(l, -1, c"err".as_ptr());
            if ffi::lua_type(l, -1) == ffi::LUA_TSTRING {
                ffi::lua_replace(l, -2);
            } else {
                ffi::lua_pop(l, 1);
            }
        }
        ffi::lua_pushboolean(l, c_int::from(status == 0));
        ffi::lua_insert(l, 1);
        ffi::lua_gettop(l)
    }
}

unsafe extern "C-unwind" fn lua_rawset_ro(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::luaL_checkany(l, 2);
        ffi::luaL_checkany(l, 3);
        if is_protected(l, 1) {
            return refuse_plain(l);
        }
        ffi::lua_settop(l, 3);
        ffi::lua_rawset(l, 1);
        1
    }
}

unsafe extern "C-unwind" fn lua_rawget_ro(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::luaL_checkany(l, 2);
        unproxy(l, 1);
        ffi::lua_settop(l, 2);
        ffi::lua_rawget(l, 1);
        1
    }
}

unsafe extern "C-unwind" fn lua_setmetatable_ro(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let t = ffi::lua_type(l, 2);
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        if t != ffi::LUA_TNIL && t != ffi::LUA_TTABLE {
            return ffi::luaL_argerror(l, 2, c"nil or table expected".as_ptr());
        }
        if is_protected(l, 1) {
            return refuse_plain(l);
        }
        if ffi::luaL_getmetafield(l, 1, c"__metatable".as_ptr()) != 0 {
            return ffi::luaL_error(l, c"cannot change a protected metatable".as_ptr());
        }
        ffi::lua_settop(l, 2);
        ffi::lua_setmetatable(l, 1);
        1
    }
}

unsafe extern "C-unwind" fn lua_getmetatable_ro(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checkany(l, 1);
        if ffi::lua_type(l, 1) == ffi::LUA_TSTRING {
            ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, c"streamd.string_mt".as_ptr());
            return 1;
        }
        // A proxy's metatable is seen through its read-only view.
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, METATABLES.as_ptr());
        ffi::lua_pushvalue(l, 1);
        ffi::lua_rawget(l, -2);
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            return 1;
        }
        ffi::lua_pop(l, 2);
        if ffi::lua_getmetatable(l, 1) == 0 {
            ffi::lua_pushnil(l);
            return 1;
        }
        ffi::luaL_getmetafield(l, 1, c"__metatable".as_ptr());
        1
    }
}

/// `loadstring`, refusing precompiled (binary) chunks as Redis 7.0 does: it returns nil
/// and a message, like any chunk that does not load.
unsafe extern "C-unwind" fn lua_loadstring_text_only(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let mut len = 0usize;
        let s = ffi::luaL_checklstring(l, 1, &mut len);
        let name = ffi::luaL_optlstring(l, 2, s, std::ptr::null_mut());
        if len > 0 && *s == 0x1b {
            ffi::lua_pushnil(l);
            ffi::lua_pushstring(l, c"binary chunks are not allowed".as_ptr());
            return 2;
        }
        if ffi::luaL_loadbuffer(l, s, len, name) == 0 {
            1
        } else {
            ffi::lua_pushnil(l);
            ffi::lua_insert(l, -2);
            2
        }
    }
}

unsafe extern "C-unwind" fn lua_next_ro(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        unproxy(l, 1);
        ffi::lua_settop(l, 2);
        if ffi::lua_next(l, 1) != 0 {
            2
        } else {
            ffi::lua_pushnil(l);
            1
        }
    }
}

unsafe extern "C-unwind" fn lua_pairs_ro(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        unproxy(l, 1);
        ffi::lua_pushcfunction(l, lua_next_ro);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushnil(l);
        3
    }
}

unsafe extern "C-unwind" fn lua_ipairs_step(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let i = ffi::luaL_checkinteger(l, 2) + 1;
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        ffi::lua_pushinteger(l, i);
        ffi::lua_rawgeti(l, 1, i);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            0
        } else {
            2
        }
    }
}

unsafe extern "C-unwind" fn lua_ipairs_ro(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        unproxy(l, 1);
        ffi::lua_pushcfunction(l, lua_ipairs_step);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushinteger(l, 0);
        3
    }
}

/// Where an error happened in a stopped (dead or suspended) coroutine: the source and
/// line of the innermost Lua function, skipping one C frame (the `error` or
/// `redis.call` that raised), as Redis's error handler reports it.
///
/// # Safety
/// `co` is a coroutine whose stack has not been unwound.
pub unsafe fn error_position(co: *mut ffi::lua_State) -> Option<(Vec<u8>, i64)> {
    unsafe {
        for level in 0..2 {
            let mut ar: ffi::lua_Debug = std::mem::zeroed();
            if ffi::lua_getstack(co, level, &mut ar) == 0 {
                return None;
            }
            ffi::lua_getinfo(co, c"Sl".as_ptr(), &mut ar);
            let what = CStr::from_ptr(ar.what).to_bytes();
            if what == b"C" {
                continue;
            }
            let source = CStr::from_ptr(ar.source).to_bytes().to_vec();
            return Some((source, i64::from(ar.currentline)));
        }
        None
    }
}

/// True when every frame of the running coroutine `co` is a Lua function, so that a
/// hook may yield it (a C function in between, `pcall` say, forbids it in Lua 5.1).
///
/// # Safety
/// Called from a hook running on `co`.
pub unsafe fn may_yield(co: *mut ffi::lua_State) -> bool {
    unsafe {
        let mut level = 0;
        loop {
            let mut ar: ffi::lua_Debug = std::mem::zeroed();
            if ffi::lua_getstack(co, level, &mut ar) == 0 {
                return true;
            }
            ffi::lua_getinfo(co, c"S".as_ptr(), &mut ar);
            if CStr::from_ptr(ar.what).to_bytes() == b"C" {
                return false;
            }
            level += 1;
        }
    }
}

// ---- math.random ------------------------------------------------------------------------

thread_local! {
    /// The state of the 48-bit generator behind `math.random` (`lrand48`'s).
    static RAND48: std::cell::Cell<u64> = const { std::cell::Cell::new(0x1234_ABCD_330E) };
}

/// Seeds the generator as `srand48` does. Redis 7.0 no longer reseeds before each script
/// (its effects are replicated, not the script), so numbers differ between runs unless
/// a script calls `math.randomseed`.
pub fn srand48(seed: i32) {
    RAND48.with(|x| x.set((u64::from(seed as u32) << 16) | 0x330E));
}

/// The next `lrand48` value (31 bits).
fn lrand48() -> u64 {
    RAND48.with(|x| {
        let next = (0x5_DEEC_E66D_u64.wrapping_mul(x.get()).wrapping_add(0xB)) & ((1 << 48) - 1);
        x.set(next);
        next >> 17
    })
}

unsafe extern "C-unwind" fn lua_math_random(l: *mut ffi::lua_State) -> c_int {
    const MAX: u64 = i32::MAX as u64;
    let r = (lrand48() % MAX) as f64 / MAX as f64;
    unsafe {
        match ffi::lua_gettop(l) {
            0 => ffi::lua_pushnumber(l, r),
            1 => {
                let u = ffi::luaL_checkinteger(l, 1) as i32;
                if u < 1 {
                    return ffi::luaL_argerror(l, 1, c"interval is empty".as_ptr());
                }
                ffi::lua_pushnumber(l, (r * f64::from(u)).floor() + 1.0);
            }
            2 => {
                let lo = ffi::luaL_checkinteger(l, 1) as i32;
                let hi = ffi::luaL_checkinteger(l, 2) as i32;
                if lo > hi {
                    return ffi::luaL_argerror(l, 2, c"interval is empty".as_ptr());
                }
                ffi::lua_pushnumber(
                    l,
                    (r * (f64::from(hi) - f64::from(lo) + 1.0)).floor() + f64::from(lo),
                );
            }
            _ => return ffi::luaL_error(l, c"wrong number of arguments".as_ptr()),
        }
        1
    }
}

unsafe extern "C-unwind" fn lua_math_randomseed(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let seed = ffi::luaL_checkinteger(l, 1) as i32;
        srand48(seed);
        0
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::{c_char, c_int};

    unsafe extern "C" {
        // number2str.c's (the executable's) and the C library's.
        fn sprintf(buf: *mut c_char, fmt: *const c_char, ...) -> c_int;
        fn snprintf(buf: *mut c_char, size: usize, fmt: *const c_char, ...) -> c_int;
        fn streamd_format_whole_g14(buf: *mut c_char, d: f64) -> c_int;
    }

    fn text(buf: &[c_char], n: c_int) -> (String, c_int) {
        let bytes: Vec<u8> = buf
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        (String::from_utf8_lossy(&bytes).into_owned(), n)
    }

    /// Lua's `lua_number2str(s, d)`, through number2str.c.
    fn ours(d: f64) -> (String, c_int) {
        let mut buf = [0 as c_char; 64];
        // SAFETY: "%.14g" of a double fits in 64 bytes.
        let n = unsafe { sprintf(buf.as_mut_ptr(), c"%.14g".as_ptr(), d) };
        text(&buf, n)
    }

    /// The C library's `%.14g`.
    fn libc(d: f64) -> (String, c_int) {
        let mut buf = [0 as c_char; 64];
        // SAFETY: the size bounds the write.
        let n = unsafe { snprintf(buf.as_mut_ptr(), buf.len(), c"%.14g".as_ptr(), d) };
        text(&buf, n)
    }

    #[test]
    fn numbers_format_as_the_c_library_formats_them() {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            9.0,
            10.0,
            -10.0,
            99_999_999_999_999.0,
            -99_999_999_999_999.0,
            1e14,
            -1e14,
            1e14 - 1.0,
            123_456_789_012_345.0,
            1e15,
            9_007_199_254_740_993.0,
            0.5,
            -2.5,
            1e-7,
            std::f64::consts::PI,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN_POSITIVE,
            i64::MIN as f64,
        ];
        // Whole numbers of every length, their neighbours and halves.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = (x % 17) as i32;
            let whole = ((x >> 8) % 10u64.pow(digits as u32 % 16)) as f64;
            let sign = if x & 1 == 0 { 1.0 } else { -1.0 };
            values.extend([sign * whole, sign * whole + 0.5, sign * whole / 7.0]);
        }
        for d in values {
            assert_eq!(ours(d), libc(d), "{d:e}");
        }
        // The fast path is the one taken for whole numbers.
        let mut buf = [0 as c_char; 32];
        // SAFETY: a whole number below 10^14 writes at most 16 bytes.
        assert_eq!(
            unsafe { streamd_format_whole_g14(buf.as_mut_ptr(), -42.0) },
            3
        );
        assert_eq!(text(&buf, 3).0, "-42");
        // SAFETY: as above; -0 and fractions are not its to write.
        assert_eq!(
            unsafe { streamd_format_whole_g14(buf.as_mut_ptr(), -0.0) },
            -1
        );
        assert_eq!(
            unsafe { streamd_format_whole_g14(buf.as_mut_ptr(), 0.25) },
            -1
        );
    }

    #[test]
    fn other_formats_pass_through() {
        let mut buf = [0 as c_char; 64];
        // SAFETY: the output fits.
        let n = unsafe {
            sprintf(
                buf.as_mut_ptr(),
                c"%d:%s:%.3f".as_ptr(),
                42,
                c"x".as_ptr(),
                2.5,
            )
        };
        assert_eq!(text(&buf, n), ("42:x:2.500".to_string(), 10));
        // SAFETY: as above.
        let n = unsafe { sprintf(buf.as_mut_ptr(), c"%.14g".as_ptr(), 0.1) };
        assert_eq!(text(&buf, n), ("0.1".to_string(), 3));
    }
}
