//! FUNCTION and FCALL: libraries of named functions, loaded from `#!lua name=<lib>`
//! code into the engine's functions VM, kept as data (logged, snapshotted, dumped).
//!
//! While a library's code runs (FUNCTION LOAD), the globals read from a table that
//! holds only `redis` with `register_function`, `log`, the `LOG_*` levels and the
//! version, as in Redis 7.0; anything else is a nonexistent global. The functions it
//! registers later run with the VM's full globals (without KEYS and ARGV: they get
//! them as arguments).
//!
//! FUNCTION DUMP payload (what Redis 7.0 writes and RESTOREs):
//!
//! ```text
//! n × ( 0xF5 (RDB_OPCODE_FUNCTION2)  <library code: RDB string> )
//! <RDB version: u16 LE = 10> <CRC-64/Jones of all the bytes before: u64 LE>
//! ```

use super::eval::{ScriptFlags, Started, busy_threshold, execute, parse_numkeys, script_ctx};
use super::run::{Run, RunName, RunSetup};
use super::vm::{self, Vm, push_array, push_error_table, raise, str_at};
use super::{Engine, engine_mut};
use crate::commands::is;
use crate::core::{Core, Ctx};
use crate::error::ReplyError;
use bytes::Bytes;
use mlua_sys as ffi;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_int;

/// Registry key of the table the globals read from while a library loads.
const LOAD_API: &std::ffi::CStr = c"streamd.library_api";
/// The RDB opcode of a function library in a FUNCTION DUMP payload.
const OPCODE_FUNCTION2: u8 = 0xF5;

/// Function names are case-insensitive (Redis's functions dictionary is).
pub(crate) fn fold(name: &[u8]) -> Bytes {
    Bytes::from(name.to_ascii_lowercase())
}

/// One registered function.
#[derive(Debug, Clone)]
pub struct Function {
    /// Its name as registered.
    pub name: Bytes,
    /// Its library.
    pub library: Bytes,
    /// Its flags.
    pub flags: ScriptFlags,
    /// `description`, if given.
    pub description: Option<Bytes>,
    /// The registry reference of its Lua function.
    pub lua_ref: c_int,
}

/// One library.
#[derive(Debug, Clone)]
pub struct Library {
    /// Its code, shebang included.
    pub code: Bytes,
    /// Its functions' names.
    pub functions: Vec<Bytes>,
}

/// The libraries and their functions, and the VM they run in.
#[derive(Debug)]
pub struct Functions {
    /// The functions VM.
    pub vm: Vm,
    /// Libraries by name.
    pub libraries: BTreeMap<Bytes, Library>,
    /// Functions by lower-case name.
    pub functions: HashMap<Bytes, Function>,
}

/// What a library's code registered while it loaded.
#[derive(Default)]
struct Pending {
    functions: Vec<(Bytes, Function)>,
}

thread_local! {
    static LOADING: RefCell<Option<Pending>> = const { RefCell::new(None) };
    static LOAD_DEADLINE: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// How long a library's code may run while it loads (Redis 7.0's 500 ms).
const LOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// The count hook of a library load: past [`LOAD_TIMEOUT`] the load fails, and keeps
/// failing on every line so that a `pcall` in the code cannot hold on.
unsafe extern "C-unwind" fn load_hook(l: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    let late = LOAD_DEADLINE.with(|d| d.get().is_some_and(|t| std::time::Instant::now() > t));
    if late {
        // SAFETY: raised from a hook inside the load's lua_pcall.
        unsafe {
            ffi::lua_sethook(
                l,
                Some(load_hook),
                ffi::LUA_MASKLINE | ffi::LUA_MASKCOUNT,
                1,
            );
            push_error_table(l, b"ERR FUNCTION LOAD timeout");
            raise(l);
        }
    }
}

impl Functions {
    /// An empty set over a fresh VM.
    pub fn new(version: &str) -> Functions {
        let vm = super::new_vm(version);
        // SAFETY: builds the library API table on a fresh VM.
        unsafe { install_load_api(vm.l, version) };
        Functions {
            vm,
            libraries: BTreeMap::new(),
            functions: HashMap::new(),
        }
    }

    /// Number of functions.
    pub fn count(&self) -> usize {
        self.functions.len()
    }

    /// Loads `code` as a library (FUNCTION LOAD / RESTORE); its name.
    pub fn load(&mut self, code: &Bytes, replace: bool) -> Result<Bytes, ReplyError> {
        let (name, body) = parse_metadata(code)?;
        if self.libraries.contains_key(&name) && !replace {
            return Err(err(format!(
                "ERR Library '{}' already exists",
                String::from_utf8_lossy(&name)
            )));
        }
        let registered = self.run_library(&name, body)?;
        if registered.is_empty() {
            return Err(err("ERR No functions registered".into()));
        }
        for (fname, _) in &registered {
            if let Some(existing) = self.functions.get(&fold(fname))
                && existing.library != name
            {
                let msg = format!(
                    "ERR Function {} already exists",
                    String::from_utf8_lossy(fname)
                );
                self.unref_all(&registered);
                return Err(err(msg));
            }
        }
        self.delete(&name);
        let mut names = Vec::new();
        for (fname, f) in registered {
            names.push(fname.clone());
            self.functions.insert(fold(&fname), f);
        }
        self.libraries.insert(
            name.clone(),
            Library {
                code: code.clone(),
                functions: names,
            },
        );
        Ok(name)
    }

    fn unref_all(&self, registered: &[(Bytes, Function)]) {
        for (_, f) in registered {
            // SAFETY: each reference was taken by `register_function` on this VM.
            unsafe { ffi::luaL_unref(self.vm.l, ffi::LUA_REGISTRYINDEX, f.lua_ref) };
        }
    }

    /// Deletes a library and its functions; false if there is none of that name.
    pub fn delete(&mut self, name: &[u8]) -> bool {
        let Some(lib) = self.libraries.remove(name) else {
            return false;
        };
        for f in lib.functions {
            if let Some(func) = self.functions.remove(&fold(&f)) {
                // SAFETY: the reference belongs to this VM.
                unsafe { ffi::luaL_unref(self.vm.l, ffi::LUA_REGISTRYINDEX, func.lua_ref) };
            }
        }
        true
    }

    /// Runs a library's code with the library API as globals; the functions it
    /// registered.
    fn run_library(
        &mut self,
        name: &Bytes,
        body: &[u8],
    ) -> Result<Vec<(Bytes, Function)>, ReplyError> {
        let l = self.vm.l;
        // SAFETY: balanced stack; the globals' __index is switched to the library API
        // and back around the run.
        unsafe {
            let status = ffi::luaL_loadbuffer(
                l,
                body.as_ptr() as *const std::ffi::c_char,
                body.len(),
                c"@user_function".as_ptr(),
            );
            if status != 0 {
                let text = vm::to_bytes(l, -1).unwrap_or_default();
                ffi::lua_pop(l, 1);
                return Err(err(format!(
                    "ERR Error compiling function: {}",
                    String::from_utf8_lossy(&text)
                )));
            }
            set_globals_index(l, true);
            LOADING.with(|p| *p.borrow_mut() = Some(Pending::default()));
            LOAD_DEADLINE.with(|d| d.set(Some(std::time::Instant::now() + LOAD_TIMEOUT)));
            ffi::lua_sethook(l, Some(load_hook), ffi::LUA_MASKCOUNT, 100_000);
            let status = ffi::lua_pcall(l, 0, 0, 0);
            ffi::lua_sethook(l, None, 0, 0);
            LOAD_DEADLINE.with(|d| d.set(None));
            set_globals_index(l, false);
            let pending = LOADING.with(|p| p.borrow_mut().take()).unwrap_or_default();
            if status != 0 {
                let msg = error_message(l, -1);
                ffi::lua_pop(l, 1);
                self.unref_all(&pending.functions);
                return Err(err(format!(
                    "ERR Error registering functions: {}",
                    String::from_utf8_lossy(&msg)
                )));
            }
            let mut out = pending.functions;
            for (_, f) in out.iter_mut() {
                f.library = name.clone();
            }
            Ok(out)
        }
    }

    /// FUNCTION DUMP's payload.
    pub fn dump(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for lib in self.libraries.values() {
            out.push(OPCODE_FUNCTION2);
            crate::rdb::write::string(&mut out, &lib.code);
        }
        out.extend_from_slice(&10u16.to_le_bytes());
        let crc = crate::rdb::crc64::crc64(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

/// `unknown subcommand or wrong number of arguments for '<sub>'. Try FUNCTION HELP.`
fn subcommand_syntax(ctx: &Ctx<'_>) -> ReplyError {
    ReplyError::SubcommandSyntax {
        sub: String::from_utf8_lossy(ctx.arg(1)).into_owned(),
        container: "FUNCTION".into(),
    }
}

fn err(text: String) -> ReplyError {
    ReplyError::owned(text)
}

/// The error value at `idx` as Redis words it in a load error: a table's `err`, or
/// `ERR ` and the string.
unsafe fn error_message(l: *mut ffi::lua_State, idx: c_int) -> Vec<u8> {
    unsafe {
        if ffi::lua_type(l, idx) == ffi::LUA_TTABLE {
            let idx = ffi::lua_absindex(l, idx);
            ffi::lua_pushstring(l, c"err".as_ptr());
            ffi::lua_rawget(l, idx);
            let t = vm::to_bytes(l, -1).unwrap_or_default();
            ffi::lua_pop(l, 1);
            return t;
        }
        let mut m = b"ERR ".to_vec();
        m.extend_from_slice(&vm::to_bytes(l, idx).unwrap_or_else(|| b"unknown error".to_vec()));
        m
    }
}

/// Library and function names: letters, digits and underscores, at least one.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// Reads `#!lua name=<lib>`; the name and the code to compile (first line blanked).
fn parse_metadata(code: &[u8]) -> Result<(Bytes, &[u8]), ReplyError> {
    if !code.starts_with(b"#!") {
        return Err(err("ERR Missing library metadata".into()));
    }
    let nl = code.iter().position(|&c| c == b'\n').unwrap_or(code.len());
    let line = &code[..nl];
    // Redis reads the line with sdssplitargs: `name="lib"` is `name=lib`.
    let Ok(parts) = crate::resp::inline::split_args(&Bytes::copy_from_slice(line)) else {
        return Err(err("ERR Invalid library metadata".into()));
    };
    let mut parts = parts.iter().map(|p| p.to_vec());
    let first = parts.next().unwrap_or_default();
    let engine = first.get(2..).unwrap_or_default();
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err(err(format!(
            "ERR Engine '{}' not found",
            String::from_utf8_lossy(engine)
        )));
    }
    let mut name: Option<Vec<u8>> = None;
    for part in parts {
        if let Some(n) = part.strip_prefix(b"name=") {
            if name.is_some() {
                return Err(err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                ));
            }
            name = Some(n.to_vec());
        } else {
            return Err(err(format!(
                "ERR Invalid metadata value given: {}",
                String::from_utf8_lossy(&part)
            )));
        }
    }
    let Some(name) = name else {
        return Err(err("ERR Library name was not given".into()));
    };
    if !valid_name(&name) {
        return Err(err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into()));
    }
    Ok((Bytes::from(name), &code[nl..]))
}

/// Points the globals' `__index` at the library API (`loading`) or back at the real
/// globals.
unsafe fn set_globals_index(l: *mut ffi::lua_State, loading: bool) {
    unsafe {
        if ffi::lua_getmetatable(l, ffi::LUA_GLOBALSINDEX) == 0 {
            return;
        }
        if loading {
            ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, LOAD_API.as_ptr());
        } else {
            vm::push_globals(l);
        }
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::lua_pop(l, 1);
    }
}

/// Builds the table globals read from while a library loads: `redis` with
/// `register_function`, `log`, `LOG_*`, `REDIS_VERSION*`, where any other name (in it
/// or in `redis`) is a nonexistent global.
unsafe fn install_load_api(l: *mut ffi::lua_State, version: &str) {
    unsafe {
        ffi::lua_newtable(l); // api
        ffi::lua_newtable(l); // redis
        vm::set_fn(l, c"register_function", lua_register_function);
        // log and the levels and version come from the full redis table.
        vm::push_globals(l);
        ffi::lua_getfield(l, -1, c"redis".as_ptr());
        // The global is a proxy; read through it.
        for field in [
            c"log",
            c"LOG_DEBUG",
            c"LOG_VERBOSE",
            c"LOG_NOTICE",
            c"LOG_WARNING",
            c"REDIS_VERSION",
            c"REDIS_VERSION_NUM",
        ] {
            ffi::lua_getfield(l, -1, field.as_ptr());
            ffi::lua_setfield(l, -4, field.as_ptr());
        }
        ffi::lua_pop(l, 2);
        let _ = version;
        nonexistent_metatable(l);
        ffi::lua_setfield(l, -2, c"redis".as_ptr());
        nonexistent_metatable(l);
        ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, LOAD_API.as_ptr());
        // Functions never see register_function at run time.
        vm::push_globals(l);
        ffi::lua_getfield(l, -1, c"redis".as_ptr());
        if ffi::lua_getmetatable(l, -1) != 0 {
            ffi::lua_getfield(l, -1, c"__index".as_ptr());
            ffi::lua_pushnil(l);
            ffi::lua_setfield(l, -2, c"register_function".as_ptr());
            ffi::lua_pop(l, 2);
        }
        ffi::lua_pop(l, 2);
    }
}

/// Replaces the table on top with an empty read-only stand-in: reads find the table's
/// fields, other names are nonexistent globals, writes are refused (a function that
/// kept a reference to the library API cannot change it later).
unsafe fn nonexistent_metatable(l: *mut ffi::lua_State) {
    unsafe {
        ffi::lua_newtable(l);
        ffi::lua_createtable(l, 0, 2);
        ffi::lua_pushvalue(l, -3);
        ffi::lua_pushcclosure(l, lua_index_or_nonexistent, 1);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        vm::push_refuse_write(l);
        ffi::lua_setfield(l, -2, c"__newindex".as_ptr());
        ffi::lua_setmetatable(l, -2);
        ffi::lua_remove(l, -2);
    }
}

/// `__index` of the library API stand-ins: the real table's field, or a nonexistent
/// global error.
unsafe extern "C-unwind" fn lua_index_or_nonexistent(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::lua_pushvalue(l, 2);
        ffi::lua_rawget(l, ffi::lua_upvalueindex(1));
        if ffi::lua_type(l, -1) != ffi::LUA_TNIL {
            return 1;
        }
        if ffi::lua_type(l, 2) == ffi::LUA_TSTRING {
            let name = ffi::lua_tolstring(l, 2, std::ptr::null_mut());
            return ffi::luaL_error(
                l,
                c"Script attempted to access nonexistent global variable '%s'".as_ptr(),
                name,
            );
        }
        1
    }
}

/// `redis.register_function(name, callback)` or `redis.register_function{...}`, only
/// while a library loads.
unsafe extern "C-unwind" fn lua_register_function(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        match register(l) {
            Ok(()) => 0,
            Err(msg) => {
                push_error_table(l, msg.as_bytes());
                drop(msg);
                raise(l)
            }
        }
    }
}

unsafe fn register(l: *mut ffi::lua_State) -> Result<(), String> {
    unsafe {
        let argc = ffi::lua_gettop(l);
        let loading = LOADING.with(|p| p.borrow().is_some());
        if !loading {
            return Err(
                "ERR redis.register_function can only be called on FUNCTION LOAD command".into(),
            );
        }
        let mut flags = ScriptFlags {
            shebang: true,
            ..ScriptFlags::default()
        };
        let mut description = None;
        let (name, callback_idx) = match argc {
            1 => {
                if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
                    return Err("ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".into());
                }
                let mut name = None;
                let mut callback = false;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, 1) != 0 {
                    let key = if ffi::lua_type(l, -2) == ffi::LUA_TSTRING {
                        str_at(l, -2).to_vec()
                    } else {
                        Vec::new()
                    };
                    match key.as_slice() {
                        b"function_name" => {
                            let Some(n) = vm::to_bytes(l, -1) else {
                                return Err("ERR function_name argument given to redis.register_function must be a string".into());
                            };
                            name = Some(n);
                        }
                        b"callback" => {
                            if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                                return Err("ERR callback argument given to redis.register_function must be a function".into());
                            }
                            ffi::lua_pushvalue(l, -1);
                            ffi::lua_setfield(
                                l,
                                ffi::LUA_REGISTRYINDEX,
                                c"streamd.pending_callback".as_ptr(),
                            );
                            callback = true;
                        }
                        b"flags" => {
                            if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
                                return Err("ERR flags argument to redis.register_function must be a table representing function flags".into());
                            }
                            let t = ffi::lua_gettop(l);
                            ffi::lua_pushnil(l);
                            while ffi::lua_next(l, t) != 0 {
                                let ok = ffi::lua_type(l, -1) == ffi::LUA_TSTRING
                                    && flags.set(str_at(l, -1));
                                ffi::lua_pop(l, 1);
                                if !ok {
                                    return Err("ERR unknown flag given".into());
                                }
                            }
                        }
                        b"description" => {
                            let Some(d) = vm::to_bytes(l, -1) else {
                                return Err("ERR description argument given to redis.register_function must be a string".into());
                            };
                            description = Some(Bytes::from(d));
                        }
                        _ => {
                            return Err(
                                "ERR unknown argument given to redis.register_function".into()
                            );
                        }
                    }
                    ffi::lua_pop(l, 1);
                }
                let Some(name) = name else {
                    return Err(
                        "ERR redis.register_function must get a function name argument".into(),
                    );
                };
                if !callback {
                    return Err("ERR redis.register_function must get a callback argument".into());
                }
                ffi::lua_getfield(
                    l,
                    ffi::LUA_REGISTRYINDEX,
                    c"streamd.pending_callback".as_ptr(),
                );
                (name, ffi::lua_gettop(l))
            }
            2 => {
                let Some(name) = vm::to_bytes(l, 1) else {
                    return Err(
                        "ERR first argument to redis.register_function must be a string".into(),
                    );
                };
                if ffi::lua_type(l, 2) != ffi::LUA_TFUNCTION {
                    return Err(
                        "ERR second argument to redis.register_function must be a function".into(),
                    );
                }
                (name, 2)
            }
            _ => return Err("ERR wrong number of arguments to redis.register_function".into()),
        };
        if !valid_name(&name) {
            return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
        }
        let duplicate = LOADING.with(|p| {
            p.borrow().as_ref().is_some_and(|p| {
                p.functions
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case(&name))
            })
        });
        if duplicate {
            return Err("ERR Function already exists in the library".into());
        }
        ffi::lua_pushvalue(l, callback_idx);
        let lua_ref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        LOADING.with(|p| {
            if let Some(p) = p.borrow_mut().as_mut() {
                let name = Bytes::from(name);
                p.functions.push((
                    name.clone(),
                    Function {
                        name,
                        library: Bytes::new(),
                        flags,
                        description,
                        lua_ref,
                    },
                ));
            }
        });
        Ok(())
    }
}

// ---- commands -----------------------------------------------------------------------

/// FUNCTION LOAD [REPLACE] code.
pub fn function_load(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let mut replace = false;
    let mut code = None;
    let args = &ctx.argv[2..];
    for (i, a) in args.iter().enumerate() {
        if i + 1 == args.len() {
            code = Some(a.clone());
        } else if is(a, "replace") {
            replace = true;
        } else {
            return Err(err(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(a)
            )));
        }
    }
    let code = code.unwrap_or_default();
    let name = engine_mut(ctx.core).functions.load(&code, replace)?;
    super::refresh_info(ctx.core);
    ctx.propagate(&ctx.argv.clone());
    ctx.out.bulk(&name);
    Ok(())
}

/// FUNCTION DELETE library.
pub fn function_delete(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let name = ctx.arg(2).clone();
    if !engine_mut(ctx.core).functions.delete(&name) {
        return Err(err("ERR Library not found".into()));
    }
    super::refresh_info(ctx.core);
    ctx.propagate(&ctx.argv.clone());
    ctx.out.ok();
    Ok(())
}

/// FUNCTION FLUSH [ASYNC|SYNC].
pub fn function_flush(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.argv.len() > 3 {
        return Err(subcommand_syntax(ctx));
    }
    if ctx.argv.len() == 3 && !is(ctx.arg(2), "sync") && !is(ctx.arg(2), "async") {
        return Err(err(
            "ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into()
        ));
    }
    let version = super::version(ctx.core);
    engine_mut(ctx.core).functions = Functions::new(&version);
    super::refresh_info(ctx.core);
    ctx.propagate(&ctx.argv.clone());
    ctx.out.ok();
    Ok(())
}

/// FUNCTION DUMP.
pub fn function_dump(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let payload = engine_mut(ctx.core).functions.dump();
    ctx.out.bulk(&payload);
    Ok(())
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
pub fn function_restore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    #[derive(PartialEq)]
    enum Policy {
        Flush,
        Append,
        Replace,
    }
    if ctx.argv.len() > 4 {
        return Err(subcommand_syntax(ctx));
    }
    let policy = match ctx.argv.get(3) {
        None => Policy::Append,
        Some(p) if is(p, "flush") => Policy::Flush,
        Some(p) if is(p, "append") => Policy::Append,
        Some(p) if is(p, "replace") => Policy::Replace,
        Some(_) => {
            return Err(err(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
                    .into(),
            ));
        }
    };
    let payload = ctx.arg(2).clone();
    if crate::rdb::payload::verify(&payload).is_err() {
        return Err(err("ERR DUMP payload version or checksum are wrong".into()));
    }
    let body = &payload[..payload.len() - 10];
    let mut r = crate::rdb::Reader::new(body, 0);
    let mut codes = Vec::new();
    while r.remaining() > 0 {
        let op = r
            .u8()
            .map_err(|_| err("ERR payload is not a function dump".into()))?;
        if op != OPCODE_FUNCTION2 {
            return Err(err("ERR given type is not a function".into()));
        }
        let code = r
            .string()
            .map_err(|_| err("ERR Failed loading library".into()))?;
        codes.push(Bytes::copy_from_slice(&code));
    }
    let version = super::version(ctx.core);
    let engine = engine_mut(ctx.core);
    // Load into a fresh set first, so that a failure changes nothing.
    let mut fresh = Functions::new(&version);
    for code in &codes {
        fresh.load(code, false)?;
    }
    let mut target = if policy == Policy::Flush {
        Functions::new(&version)
    } else {
        let mut copy = Functions::new(&version);
        for lib in engine.functions.libraries.values() {
            copy.load(&lib.code, true)?;
        }
        copy
    };
    for (name, lib) in &fresh.libraries {
        if target.libraries.contains_key(name) && policy != Policy::Replace {
            return Err(err(format!(
                "ERR Library {} already exists",
                String::from_utf8_lossy(name)
            )));
        }
        target.load(&lib.code, true)?;
    }
    engine.functions = target;
    super::refresh_info(ctx.core);
    ctx.propagate(&ctx.argv.clone());
    ctx.out.ok();
    Ok(())
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
pub fn function_list(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let mut pattern: Option<Bytes> = None;
    let mut with_code = false;
    let mut i = 2;
    while i < ctx.argv.len() {
        let a = &ctx.argv[i];
        if is(a, "withcode") && !with_code {
            with_code = true;
        } else if is(a, "libraryname") && pattern.is_none() {
            let Some(p) = ctx.argv.get(i + 1) else {
                return Err(err("ERR library name argument was not given".into()));
            };
            pattern = Some(p.clone());
            i += 1;
        } else {
            return Err(err(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(a)
            )));
        }
        i += 1;
    }
    let engine = engine_mut(ctx.core);
    let libs: Vec<(&Bytes, &Library)> = engine
        .functions
        .libraries
        .iter()
        .filter(|(n, _)| {
            pattern
                .as_ref()
                .is_none_or(|p| crate::util::glob_match(p, n, false))
        })
        .collect();
    let out = &mut *ctx.out;
    out.array(libs.len());
    for (name, lib) in libs {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(name);
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(lib.functions.len());
        for fname in &lib.functions {
            let Some(f) = engine.functions.functions.get(&fold(fname)) else {
                continue;
            };
            out.map(3);
            out.bulk(b"name");
            out.bulk(fname);
            out.bulk(b"description");
            match &f.description {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names = f.flags.names();
            out.set(names.len());
            for n in names {
                out.simple(n.as_bytes());
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&lib.code);
        }
    }
    Ok(())
}

/// FUNCTION STATS.
pub fn function_stats(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if let Some(busy) = &ctx.core.busy
        && busy.is_eval
    {
        return Err(err(crate::core::script::busy_error(true).to_string()));
    }
    let running = ctx.core.busy.as_ref().map(|b| {
        (
            b.name.clone(),
            b.argv.clone(),
            b.started.elapsed().as_millis() as i64,
        )
    });
    let (libs, fns) = {
        let e = engine_mut(ctx.core);
        (e.functions.libraries.len(), e.functions.count())
    };
    let out = &mut *ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    match running {
        None => out.null(),
        Some((name, argv, ms)) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(&name);
            out.bulk(b"command");
            out.array(argv.len());
            for a in argv.iter() {
                out.bulk(a);
            }
            out.bulk(b"duration_ms");
            out.integer(ms);
        }
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.integer(libs as i64);
    out.bulk(b"functions_count");
    out.integer(fns as i64);
    Ok(())
}

/// FUNCTION KILL.
pub fn function_kill(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::eval::kill(ctx, false)
}

/// FUNCTION HELP.
pub fn function_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::eval::help_70(
        ctx,
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    );
    Ok(())
}

/// FCALL function numkeys [key ...] [arg ...] (and FCALL_RO).
pub fn fcall(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let read_only_cmd = ctx.argv[0].eq_ignore_ascii_case(b"fcall_ro");
    let name = ctx.arg(1).clone();
    let func = engine_mut(ctx.core)
        .functions
        .functions
        .get(&fold(&name))
        .cloned();
    let Some(func) = func else {
        return Err(err("ERR Function not found".into()));
    };
    let name = func.name.clone();
    let numkeys = match crate::stream::id::string2ll(ctx.arg(2)) {
        Some(_) => parse_numkeys(ctx.arg(2), ctx.argv.len() - 3)?,
        None => return Err(err("ERR Bad number of keys provided".into())),
    };
    if read_only_cmd && !func.flags.no_writes {
        return Err(err(
            "ERR Can not execute a script with write flag using *_ro command.".into(),
        ));
    }
    super::eval::check_may_write(ctx, !func.flags.no_writes, func.flags.allow_oom)?;
    let argv: &crate::resp::Argv = ctx.argv;
    let (keys, args) = super::eval::keys_and_args(argv, numkeys);
    let busy_after = busy_threshold(ctx.core);
    let run_ctx = script_ctx(ctx.core, ctx.client);
    let now_ms = ctx.now_ms;
    // The command's start (sampled by the core), not a fresh clock read.
    let started = ctx.core.command_started();
    let vm = &engine_mut(ctx.core).functions.vm;
    // SAFETY: pushes the function and its two argument tables for a run, on the VM's
    // kept coroutine when there is one.
    let mut run = unsafe {
        let l = vm.l;
        ffi::lua_rawgeti(
            l,
            ffi::LUA_REGISTRYINDEX,
            ffi::lua_Integer::from(func.lua_ref),
        );
        push_array(l, keys);
        push_array(l, args);
        Run::new(
            l,
            2,
            RunSetup {
                thread: vm.take_thread(),
                ctx: run_ctx,
                name: RunName::Function(name.clone()),
                started,
                busy_after,
                now_ms,
            },
        )
    };
    run.ctx.read_only = func.flags.no_writes;
    run.ctx.allow_oom = func.flags.allow_oom;
    execute(
        ctx,
        Started {
            run,
            is_eval: false,
            fn_name: name,
        },
    );
    Ok(())
}

/// The libraries' codes, for snapshots (`FUNCTION LOAD REPLACE` records).
pub fn library_codes(core: &Core) -> Vec<Bytes> {
    core.scripting
        .as_ref()
        .and_then(|b| b.downcast_ref::<Engine>())
        .map(|e| {
            e.functions
                .libraries
                .values()
                .map(|l| l.code.clone())
                .collect()
        })
        .unwrap_or_default()
}
