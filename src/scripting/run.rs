//! Running a script: the `redis` library, `redis.call` through the core's dispatcher,
//! the conversions between Lua values and RESP, and the count hook that lets a busy
//! script be suspended.
//!
//! A run is one coroutine of a VM ([`Run`]). [`Run::resume`] runs it until it ends or
//! until the hook finds it past `busy-reply-threshold`; then it yields, the EVAL's
//! client stays blocked, and the server resumes it in slices, answering `-BUSY` to
//! everybody else meanwhile (`scripting::resume_busy`). The core and the clients are
//! reached through [`RunCtx`], set for the duration of each resume.
//!
//! Conversions, Lua → RESP (the script's reply, Redis 7.0's `luaReplyToRedisReply`):
//!
//! ```text
//!  number          integer (C's cast: out of range and NaN give i64::MIN)
//!  string          bulk string
//!  true / false    :1 / null   (after redis.setresp(3): RESP3 booleans, :1/:0 in RESP2)
//!  nil             null
//!  {err = s}       error -s    {ok = s} status +s    {double = n} double
//!  {big_number=s}  RESP3 big number (bulk in RESP2)  {map = t} map  {set = t} set
//!  {verbatim_string = {format = f, string = s}}      verbatim (bulk in RESP2)
//!  other table     array of t[1], t[2], ... up to the first nil
//! ```
//!
//! RESP → Lua (a `redis.call` reply): integer → number, bulk → string, null bulk or
//! array → false (nil under RESP3), status → `{ok = s}`, error → `{err = s}` (raised
//! by `redis.call`), array → table; RESP3 map → `{map = t}`, set → `{set = t}` (members
//! → true), double → `{double = n}`, boolean → boolean, big number →
//! `{big_number = s}`, verbatim → `{verbatim_string = {format, string}}`.

use super::vm::{self, push_bytes, push_error_table, raise, set_fn, set_num, str_at};
use super::{ccast, suspend};
use crate::core::client::Client;
use crate::core::command::{self, CommandSpec, flags};
use crate::core::{Core, acl};
use crate::resp::Argv;
use crate::resp::writer::{Protocol, RespWriter};
use bytes::{Bytes, BytesMut};
use mlua_sys as ffi;
use std::cell::Cell;
use std::ffi::c_int;
use std::time::{Duration, Instant};

/// Instructions between two calls of the count hook (Redis uses the same count).
const HOOK_EVERY: c_int = 100_000;

/// The run's view of the server while it is resumed.
pub struct RunCtx {
    /// The core; valid only while [`Run::resume`] runs.
    core: *mut Core,
    /// The client commands run as: the caller's user and database, `in_script` set.
    fake: Option<Box<Client>>,
    /// RESP version of `redis.call` replies (`redis.setresp`).
    pub resp3: bool,
    /// Writes are refused (EVAL_RO, FCALL_RO, `no-writes`).
    pub read_only: bool,
    /// The script may write past maxmemory (`allow-oom`).
    pub allow_oom: bool,
    /// A write command ran (SCRIPT KILL answers UNKILLABLE).
    pub wrote: bool,
    /// The command time of everything the script runs.
    pub now_ms: u64,
    /// When the run started.
    pub started: Instant,
    /// `busy-reply-threshold`.
    pub busy_after: Duration,
    /// The run went past the threshold.
    pub busy: bool,
    /// `redis.set_repl` flags (REPL_ALL by default).
    pub repl: u8,
    /// The coroutine running.
    co: *mut ffi::lua_State,
    /// Where the hook last suspended it (source, line).
    pub stopped_at: Option<(Vec<u8>, i64)>,
    /// What the hook suspended (active in `suspend.rs` while the run is resumed).
    suspension: suspend::Flags,
    /// The argument vector of `redis.call`, kept between calls (its capacity).
    argv: Argv,
    /// Where `redis.call`'s command writes its reply, kept between calls.
    reply: RespWriter,
}

thread_local! {
    static CURRENT: Cell<*mut RunCtx> = const { Cell::new(std::ptr::null_mut()) };
}

/// How a resume ended.
#[derive(Debug)]
pub enum Step {
    /// The script returned: its reply is at the top of the coroutine.
    Returned,
    /// The script raised this error (the RESP error text without `-` and CRLF), and
    /// whether it was already counted (an error `redis.call` raised).
    Failed(Vec<u8>, bool),
    /// The script yielded past the busy threshold.
    Suspended,
}

/// What a run's error texts name: an EVAL's SHA or a function's name.
#[derive(Debug, Clone)]
pub enum RunName {
    /// The SHA-1 of an EVAL's script.
    Sha([u8; 40]),
    /// A function's name.
    Function(Bytes),
}

impl RunName {
    fn as_bytes(&self) -> &[u8] {
        match self {
            RunName::Sha(sha) => sha,
            RunName::Function(name) => name,
        }
    }
}

/// A context kept past its run is emptied of the `redis.call` buffers above these
/// capacities (bytes of reply, arguments), so one large call does not hold memory.
const SPARE_REPLY_MAX: usize = 64 * 1024;
const SPARE_ARGV_MAX: usize = 1024;

impl RunCtx {
    /// The context a run of `caller`'s script starts with: `spare`, the context of the
    /// last run that ended (its client and `redis.call` buffers, one allocation of each
    /// less per script), or a new one. [`Run::new`] sets the rest.
    pub fn for_caller(spare: Option<Box<RunCtx>>, caller: &Client) -> Box<RunCtx> {
        let mut ctx = spare.unwrap_or_else(|| {
            Box::new(RunCtx {
                core: std::ptr::null_mut(),
                fake: None,
                resp3: false,
                read_only: false,
                allow_oom: false,
                wrote: false,
                now_ms: 0,
                started: Instant::now(),
                busy_after: Duration::ZERO,
                busy: false,
                repl: REPL_ALL,
                co: std::ptr::null_mut(),
                stopped_at: None,
                suspension: suspend::Flags::new(std::ptr::null_mut()),
                argv: Vec::new(),
                reply: RespWriter::new(Protocol::Resp2),
            })
        });
        let fake = ctx.fake.get_or_insert_with(|| {
            let mut c = Box::new(Client::new(
                u64::MAX,
                String::new(),
                String::new(),
                true,
                0,
                crate::core::mailbox::mailbox().0,
            ));
            c.in_script = true;
            c
        });
        fake.user = caller.user.clone();
        fake.db = caller.db;
        fake.script_caller = caller.id;
        ctx
    }

    /// Makes a finished run's context ready to be kept: buffers grown past their
    /// bounds are let go.
    fn recycle(mut self: Box<Self>) -> Box<Self> {
        self.core = std::ptr::null_mut();
        self.stopped_at = None;
        if self.reply.buf.capacity() > SPARE_REPLY_MAX {
            self.reply.buf = Vec::new();
        }
        self.reply.buf.clear();
        if self.argv.capacity() > SPARE_ARGV_MAX {
            self.argv = Vec::new();
        }
        self.argv.clear();
        self
    }
}

/// A coroutine's registry reference, released when dropped unless handed back for
/// reuse (`LUA_NOREF`).
struct Anchor {
    /// The VM's main state (the coroutine is anchored in its registry).
    main: *mut ffi::lua_State,
    /// Registry reference of the coroutine.
    reference: c_int,
}

impl Drop for Anchor {
    fn drop(&mut self) {
        if self.reference != ffi::LUA_NOREF {
            // SAFETY: the VM outlives its runs (the engine drops runs before VMs).
            unsafe { ffi::luaL_unref(self.main, ffi::LUA_REGISTRYINDEX, self.reference) }
        }
    }
}

/// One execution of a script or function.
pub struct Run {
    /// The coroutine and its context.
    pub ctx: Box<RunCtx>,
    /// The coroutine's place in the VM's registry.
    anchor: Anchor,
    /// Arguments still to pass on the first resume.
    nargs: c_int,
    /// Resumed at least once.
    started: bool,
    /// The last resume ended with the script returning (its thread can be reused).
    returned: bool,
    /// What the error suffix names.
    pub name: RunName,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What a run starts with besides its function.
pub struct RunSetup {
    /// A coroutine of the VM kept from a run that returned, or None for a new one.
    pub thread: Option<vm::Thread>,
    /// Its context, from [`RunCtx::for_caller`].
    pub ctx: Box<RunCtx>,
    /// What its error texts name.
    pub name: RunName,
    /// When the command that runs it started.
    pub started: Instant,
    /// `busy-reply-threshold`.
    pub busy_after: Duration,
    /// The command time.
    pub now_ms: u64,
}

impl Run {
    /// Prepares a run of the function on top of `main`'s stack, popping it, with the
    /// `args` tables pushed after it as arguments (functions get KEYS and ARGV so). It
    /// runs on `setup.thread` (a coroutine of `main` kept from a run that returned) or on
    /// a new coroutine.
    ///
    /// # Safety
    /// `main` is a VM's main state with the function (and `nargs` arguments) on top;
    /// `setup.thread`, if given, is one of its coroutines with an empty stack.
    pub unsafe fn new(main: *mut ffi::lua_State, nargs: c_int, setup: RunSetup) -> Run {
        let RunSetup {
            thread,
            mut ctx,
            name,
            started,
            busy_after,
            now_ms,
        } = setup;
        unsafe {
            let (co, co_ref) = match thread {
                Some(t) => {
                    ffi::lua_xmove(main, t.co, nargs + 1);
                    (t.co, t.reference)
                }
                None => {
                    let co = ffi::lua_newthread(main);
                    // Move the function and its arguments onto the coroutine.
                    ffi::lua_insert(main, -(nargs + 2));
                    ffi::lua_xmove(main, co, nargs + 1);
                    let co_ref = ffi::luaL_ref(main, ffi::LUA_REGISTRYINDEX);
                    ffi::lua_sethook(co, Some(hook), ffi::LUA_MASKCOUNT, HOOK_EVERY);
                    (co, co_ref)
                }
            };
            ctx.core = std::ptr::null_mut();
            ctx.resp3 = false;
            ctx.read_only = false;
            ctx.allow_oom = false;
            ctx.wrote = false;
            ctx.now_ms = now_ms;
            ctx.started = started;
            ctx.busy_after = busy_after;
            ctx.busy = false;
            ctx.repl = REPL_ALL;
            ctx.co = co;
            ctx.stopped_at = None;
            ctx.suspension = suspend::Flags::new(co);
            Run {
                ctx,
                anchor: Anchor {
                    main,
                    reference: co_ref,
                },
                nargs,
                started: false,
                returned: false,
                name,
            }
        }
    }

    /// The coroutine of a run that returned, for the next run on the same VM (`main`);
    /// None when it ended otherwise (a failed or suspended coroutine can't restart).
    pub fn take_thread(&mut self, main: *mut ffi::lua_State) -> Option<vm::Thread> {
        if !self.returned || main != self.anchor.main || self.anchor.reference == ffi::LUA_NOREF {
            return None;
        }
        let reference = std::mem::replace(&mut self.anchor.reference, ffi::LUA_NOREF);
        Some(vm::Thread {
            co: self.ctx.co,
            reference,
        })
    }

    /// Runs the script until it returns, fails, or is suspended past the threshold.
    pub fn resume(&mut self, core: &mut Core) -> Step {
        self.ctx.core = core;
        let ctx: *mut RunCtx = &mut *self.ctx;
        let prev = CURRENT.with(|c| c.replace(ctx));
        let prev_suspension = suspend::enter(self.ctx.suspension);
        let nargs = if self.started { 0 } else { self.nargs };
        self.started = true;
        // SAFETY: the coroutine is anchored in the registry; CURRENT points at a live
        // context for the whole resume.
        let status = unsafe { ffi::lua_resume_(self.ctx.co, nargs) };
        if let Some(flags) = suspend::leave(prev_suspension) {
            self.ctx.suspension = flags;
        }
        CURRENT.with(|c| c.set(prev));
        self.ctx.core = std::ptr::null_mut();
        match status {
            ffi::LUA_YIELD if self.ctx.suspension.take_outer() => Step::Suspended,
            ffi::LUA_YIELD => Step::Failed(
                b"ERR attempt to yield across metamethod/C-call boundary".to_vec(),
                false,
            ),
            0 => {
                self.returned = true;
                Step::Returned
            }
            _ => {
                // SAFETY: the coroutine stopped with its error value on top.
                let counted = unsafe { error_counted(self.ctx.co, -1) };
                Step::Failed(unsafe { self.error_text() }, counted)
            }
        }
    }

    /// The context of a run that ended, for the next run to reuse
    /// ([`RunCtx::for_caller`]); the coroutine is released unless
    /// [`Run::take_thread`] took it.
    pub fn into_ctx(self) -> Box<RunCtx> {
        let Run { ctx, .. } = self;
        ctx.recycle()
    }

    /// The reply of a script that returned, in the client's protocol. When it is an
    /// error: its text and whether it was already counted.
    pub fn reply(&self, out: &mut RespWriter) -> Option<(Vec<u8>, bool)> {
        let co = self.ctx.co;
        // SAFETY: the coroutine ended; its results are on its stack.
        unsafe {
            if ffi::lua_gettop(co) == 0 {
                ffi::lua_pushnil(co);
            } else {
                ffi::lua_settop(co, 1);
            }
            write_reply(co, -1, out, self.ctx.resp3, 0);
            let top = ffi::lua_gettop(co);
            if ffi::lua_type(co, top) == ffi::LUA_TTABLE
                && field(co, top, c"err") == ffi::LUA_TSTRING
            {
                let text = str_at(co, -1).to_vec();
                ffi::lua_pop(co, 1);
                return Some((text, error_counted(co, top)));
            }
            ffi::lua_settop(co, 1);
            None
        }
    }

    /// The error reply's text for a script that raised: the message, then Redis's
    /// ` script: <name>, on <source>:<line>.`.
    unsafe fn error_text(&self) -> Vec<u8> {
        unsafe {
            let co = self.ctx.co;
            self.with_position(error_message(co, -1), vm::error_position(co))
        }
    }

    /// The error a killed script answers (its position is where it was suspended).
    pub fn killed_text(&self) -> Vec<u8> {
        self.with_position(
            b"ERR Script killed by user with SCRIPT KILL...".to_vec(),
            self.ctx.stopped_at.clone(),
        )
    }

    /// `msg` with Redis's ` script: <name>, on <source>:<line>.` when the position is
    /// known.
    fn with_position(&self, mut msg: Vec<u8>, pos: Option<(Vec<u8>, i64)>) -> Vec<u8> {
        if let Some((source, line)) = pos {
            msg.extend_from_slice(b" script: ");
            msg.extend_from_slice(self.name.as_bytes());
            msg.extend_from_slice(b", on ");
            msg.extend_from_slice(&source);
            msg.push(b':');
            msg.extend_from_slice(line.to_string().as_bytes());
            msg.push(b'.');
        }
        msg
    }
}

/// The text of the error value at `idx`: an error table's `err` field, or `ERR ` and
/// the value as a string (what Redis's error handler makes of a plain error).
unsafe fn error_message(l: *mut ffi::lua_State, idx: c_int) -> Vec<u8> {
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        match ffi::lua_type(l, idx) {
            ffi::LUA_TTABLE => {
                ffi::lua_pushstring(l, c"err".as_ptr());
                ffi::lua_rawget(l, idx);
                let text = vm::to_bytes(l, -1);
                ffi::lua_pop(l, 1);
                text.unwrap_or_else(|| b"ERR unknown error".to_vec())
            }
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                let mut msg = b"ERR ".to_vec();
                msg.extend_from_slice(str_at(l, idx));
                msg
            }
            ffi::LUA_TBOOLEAN => {
                if ffi::lua_toboolean(l, idx) != 0 {
                    b"ERR true".to_vec()
                } else {
                    b"ERR false".to_vec()
                }
            }
            ffi::LUA_TNIL => b"ERR nil".to_vec(),
            _ => b"ERR unknown error".to_vec(),
        }
    }
}

/// True when the error value at `idx` is a table marked as already counted.
unsafe fn error_counted(l: *mut ffi::lua_State, idx: c_int) -> bool {
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return false;
        }
        let idx = ffi::lua_absindex(l, idx);
        let marked = field(l, idx, c"ignore_error_stats_update") == ffi::LUA_TBOOLEAN
            && ffi::lua_toboolean(l, -1) != 0;
        ffi::lua_pop(l, 1);
        marked
    }
}

/// The count hook: past the busy threshold the run is marked busy and, when nothing
/// but Lua functions are on the coroutine's stack, suspended.
unsafe extern "C-unwind" fn hook(l: *mut ffi::lua_State, ar: *mut ffi::lua_Debug) {
    let ctx = CURRENT.with(Cell::get);
    if ctx.is_null() {
        return;
    }
    // SAFETY: CURRENT points at the live context of the resume in progress.
    unsafe {
        let ctx = &mut *ctx;
        if ctx.started.elapsed() < ctx.busy_after {
            return;
        }
        ctx.busy = true;
        if vm::may_yield(l) {
            // Where it stopped: a killed script's error names this line.
            ffi::lua_getinfo(l, c"Sl".as_ptr(), ar);
            let source = std::ffi::CStr::from_ptr((*ar).source).to_bytes().to_vec();
            ctx.stopped_at = Some((source, i64::from((*ar).currentline)));
            // The script's own coroutine is suspended for the server; one below it (a
            // pcall, a user coroutine) for its resumer, which passes it up (vm.rs).
            suspend::mark(l);
            ffi::lua_yield(l, 0);
        }
    }
}

// ---- Lua → RESP ------------------------------------------------------------------------

/// Writes the Lua value at `idx` as a reply.
///
/// # Safety
/// `idx` is a valid index of `l`.
pub unsafe fn write_reply(
    l: *mut ffi::lua_State,
    idx: c_int,
    out: &mut RespWriter,
    resp3: bool,
    depth: usize,
) {
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        if ffi::lua_checkstack(l, 4) == 0 || depth > 1000 {
            out.error_text(b"ERR reached lua stack limit");
            return;
        }
        match ffi::lua_type(l, idx) {
            ffi::LUA_TNUMBER => out.integer(ccast::f64_to_i64(ffi::lua_tonumber(l, idx))),
            ffi::LUA_TSTRING => out.bulk(str_at(l, idx)),
            ffi::LUA_TBOOLEAN => {
                let b = ffi::lua_toboolean(l, idx) != 0;
                if resp3 {
                    out.boolean(b);
                } else if b {
                    out.integer(1);
                } else {
                    out.null();
                }
            }
            ffi::LUA_TTABLE => write_table(l, idx, out, resp3, depth),
            _ => out.null(),
        }
    }
}

/// The field `name` of the table at `idx` is pushed (read raw); its type returned.
unsafe fn field(l: *mut ffi::lua_State, idx: c_int, name: &std::ffi::CStr) -> c_int {
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        ffi::lua_pushstring(l, name.as_ptr());
        ffi::lua_rawget(l, idx);
        ffi::lua_type(l, -1)
    }
}

unsafe fn write_table(
    l: *mut ffi::lua_State,
    idx: c_int,
    out: &mut RespWriter,
    resp3: bool,
    depth: usize,
) {
    unsafe {
        if field(l, idx, c"err") == ffi::LUA_TSTRING {
            let text = str_at(l, -1).to_vec();
            ffi::lua_pop(l, 1);
            out.error_text(&text);
            return;
        }
        ffi::lua_pop(l, 1);
        if field(l, idx, c"ok") == ffi::LUA_TSTRING {
            let text = one_line(str_at(l, -1));
            ffi::lua_pop(l, 1);
            out.simple(&text);
            return;
        }
        ffi::lua_pop(l, 1);
        if field(l, idx, c"double") == ffi::LUA_TNUMBER {
            let d = ffi::lua_tonumber(l, -1);
            ffi::lua_pop(l, 1);
            let text = crate::util::fmt_double(d);
            if out.is_resp3() {
                out.raw(b",");
                out.raw(text.as_bytes());
                out.raw(b"\r\n");
            } else {
                out.bulk(text.as_bytes());
            }
            return;
        }
        ffi::lua_pop(l, 1);
        if field(l, idx, c"big_number") == ffi::LUA_TSTRING {
            let text = one_line(str_at(l, -1));
            ffi::lua_pop(l, 1);
            if out.is_resp3() {
                out.raw(b"(");
                out.raw(&text);
                out.raw(b"\r\n");
            } else {
                out.bulk(&text);
            }
            return;
        }
        ffi::lua_pop(l, 1);
        if field(l, idx, c"map") == ffi::LUA_TTABLE {
            let d = out.defer_len();
            let n = write_entries(l, out, resp3, depth, true);
            out.finish_map(d, n);
            return;
        }
        ffi::lua_pop(l, 1);
        if field(l, idx, c"set") == ffi::LUA_TTABLE {
            let d = out.defer_len();
            let n = write_entries(l, out, resp3, depth, false);
            out.finish_set(d, n);
            return;
        }
        ffi::lua_pop(l, 1);
        if field(l, idx, c"verbatim_string") == ffi::LUA_TTABLE {
            let v = ffi::lua_gettop(l);
            let ft = field(l, v, c"format");
            let st = field(l, v, c"string");
            if ft == ffi::LUA_TSTRING && st == ffi::LUA_TSTRING {
                let format = str_at(l, -2).to_vec();
                let text = str_at(l, -1).to_vec();
                ffi::lua_pop(l, 3);
                if out.is_resp3() {
                    let mut body = format;
                    body.push(b':');
                    body.extend_from_slice(&text);
                    out.raw(format!("={}\r\n", body.len()).as_bytes());
                    out.raw(&body);
                    out.raw(b"\r\n");
                } else {
                    out.bulk(&text);
                }
                return;
            }
            ffi::lua_pop(l, 2);
        }
        ffi::lua_pop(l, 1);
        // An array: t[1], t[2], ... up to the first nil, read raw as Redis does (a
        // metatable never runs: the script has ended, nothing may raise now).
        let d = out.defer_len();
        let mut n = 0usize;
        loop {
            ffi::lua_rawgeti(l, idx, (n + 1) as ffi::lua_Integer);
            if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
                ffi::lua_pop(l, 1);
                break;
            }
            write_reply(l, -1, out, resp3, depth + 1);
            ffi::lua_pop(l, 1);
            n += 1;
        }
        out.finish_array(d, n);
    }
}

/// `text` with its CRs and LFs turned into spaces, as Redis writes a status or a big
/// number a script returned (the reply's framing must survive).
fn one_line(text: &[u8]) -> Vec<u8> {
    text.iter()
        .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
        .collect()
}

/// Writes the entries of the table on top of `l` (its keys, and after each its value
/// when `values`) and pops it; returns how many entries it wrote.
///
/// # Safety
/// A table is on top of `l`'s stack, with room for the traversal.
unsafe fn write_entries(
    l: *mut ffi::lua_State,
    out: &mut RespWriter,
    resp3: bool,
    depth: usize,
    values: bool,
) -> usize {
    unsafe {
        let table = ffi::lua_gettop(l);
        let mut n = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, table) != 0 {
            write_reply(l, -2, out, resp3, depth + 1);
            if values {
                write_reply(l, -1, out, resp3, depth + 1);
            }
            ffi::lua_pop(l, 1);
            n += 1;
        }
        ffi::lua_pop(l, 1);
        n
    }
}

// ---- RESP → Lua ------------------------------------------------------------------------

/// Pushes the reply at `buf[*pos..]` as a Lua value; false when the bytes end early.
///
/// # Safety
/// `l` is a live state.
unsafe fn push_reply(l: *mut ffi::lua_State, buf: &[u8], pos: &mut usize, resp3: bool) -> bool {
    unsafe {
        if ffi::lua_checkstack(l, 4) == 0 {
            return false;
        }
        let Some(&kind) = buf.get(*pos) else {
            return false;
        };
        let Some(end) = memchr::memmem::find(&buf[*pos..], b"\r\n").map(|e| *pos + e) else {
            return false;
        };
        let line = &buf[*pos + 1..end];
        *pos = end + 2;
        // The core writes canonical integers (no sign or zero padding).
        let number = || crate::stream::id::string2ll(line);
        match kind {
            b'+' => {
                ffi::lua_createtable(l, 0, 1);
                push_bytes(l, line);
                ffi::lua_setfield(l, -2, c"ok".as_ptr());
            }
            b'-' => push_error_table(l, line),
            b':' => ffi::lua_pushnumber(l, number().unwrap_or(0) as f64),
            b'$' | b'=' => {
                let n = number().unwrap_or(-1);
                if n < 0 {
                    push_null(l, resp3);
                } else {
                    let n = n as usize;
                    let Some(body) = buf.get(*pos..*pos + n) else {
                        return false;
                    };
                    *pos += n + 2;
                    if kind == b'=' {
                        ffi::lua_createtable(l, 0, 1);
                        ffi::lua_createtable(l, 0, 2);
                        let (format, text) = if body.len() >= 4 && body[3] == b':' {
                            (&body[..3], &body[4..])
                        } else {
                            (&b"txt"[..], body)
                        };
                        push_bytes(l, format);
                        ffi::lua_setfield(l, -2, c"format".as_ptr());
                        push_bytes(l, text);
                        ffi::lua_setfield(l, -2, c"string".as_ptr());
                        ffi::lua_setfield(l, -2, c"verbatim_string".as_ptr());
                    } else {
                        push_bytes(l, body);
                    }
                }
            }
            b'*' | b'~' | b'>' => {
                let n = number().unwrap_or(-1);
                if n < 0 {
                    push_null(l, resp3);
                    return true;
                }
                if kind == b'~' {
                    ffi::lua_createtable(l, 0, 1);
                    ffi::lua_createtable(l, 0, n as c_int);
                    for _ in 0..n {
                        if !push_reply(l, buf, pos, resp3) {
                            return false;
                        }
                        ffi::lua_pushboolean(l, 1);
                        ffi::lua_settable(l, -3);
                    }
                    ffi::lua_setfield(l, -2, c"set".as_ptr());
                } else {
                    ffi::lua_createtable(l, n as c_int, 0);
                    for i in 0..n {
                        if !push_reply(l, buf, pos, resp3) {
                            return false;
                        }
                        ffi::lua_rawseti(l, -2, (i + 1) as ffi::lua_Integer);
                    }
                }
            }
            b'%' | b'|' => {
                let n = number().unwrap_or(0);
                ffi::lua_createtable(l, 0, 1);
                ffi::lua_createtable(l, 0, n as c_int);
                for _ in 0..n {
                    if !push_reply(l, buf, pos, resp3) || !push_reply(l, buf, pos, resp3) {
                        return false;
                    }
                    ffi::lua_settable(l, -3);
                }
                ffi::lua_setfield(l, -2, c"map".as_ptr());
                if kind == b'|' {
                    // An attribute is dropped; the reply follows it.
                    ffi::lua_pop(l, 1);
                    return push_reply(l, buf, pos, resp3);
                }
            }
            b'_' => ffi::lua_pushnil(l),
            b'#' => ffi::lua_pushboolean(l, c_int::from(line == b"t")),
            b',' => {
                let d = match line {
                    b"inf" => f64::INFINITY,
                    b"-inf" => f64::NEG_INFINITY,
                    _ => std::str::from_utf8(line)
                        .ok()
                        .and_then(|s| s.parse::<f64>().ok())
                        .unwrap_or(0.0),
                };
                ffi::lua_createtable(l, 0, 1);
                ffi::lua_pushnumber(l, d);
                ffi::lua_setfield(l, -2, c"double".as_ptr());
            }
            b'(' => {
                ffi::lua_createtable(l, 0, 1);
                push_bytes(l, line);
                ffi::lua_setfield(l, -2, c"big_number".as_ptr());
            }
            _ => return false,
        }
        true
    }
}

/// Pushes a null bulk string or array as a script sees it: false, or nil after
/// `redis.setresp(3)`.
///
/// # Safety
/// `l` is a live state with room on its stack.
unsafe fn push_null(l: *mut ffi::lua_State, resp3: bool) {
    unsafe {
        if resp3 {
            ffi::lua_pushnil(l);
        } else {
            ffi::lua_pushboolean(l, 0);
        }
    }
}

// ---- the redis library -------------------------------------------------------------------

/// `redis.REPL_*` flags.
pub const REPL_ALL: u8 = 3;

/// Installs the `redis` table into the globals table on top of `l`'s stack (the
/// functions that need a run reach it through `CURRENT`).
///
/// # Safety
/// The globals table is on top of `l`'s stack.
pub unsafe fn install_redis(l: *mut ffi::lua_State, version: &str) {
    unsafe {
        ffi::lua_newtable(l);
        set_fn(l, c"call", lua_redis_call);
        set_fn(l, c"pcall", lua_redis_pcall);
        set_fn(l, c"error_reply", lua_error_reply);
        set_fn(l, c"status_reply", lua_status_reply);
        set_fn(l, c"sha1hex", lua_sha1hex);
        set_fn(l, c"log", lua_log);
        set_fn(l, c"setresp", lua_setresp);
        set_fn(l, c"set_repl", lua_set_repl);
        set_fn(l, c"replicate_commands", lua_replicate_commands);
        set_fn(l, c"acl_check_cmd", lua_acl_check_cmd);
        set_fn(l, c"breakpoint", lua_breakpoint);
        set_fn(l, c"debug", lua_debug);
        for (name, n) in [
            (c"LOG_DEBUG", 0.0),
            (c"LOG_VERBOSE", 1.0),
            (c"LOG_NOTICE", 2.0),
            (c"LOG_WARNING", 3.0),
            (c"REPL_NONE", 0.0),
            (c"REPL_AOF", 1.0),
            (c"REPL_SLAVE", 2.0),
            (c"REPL_REPLICA", 2.0),
            (c"REPL_ALL", 3.0),
        ] {
            set_num(l, name, n);
        }
        push_bytes(l, version.as_bytes());
        ffi::lua_setfield(l, -2, c"REDIS_VERSION".as_ptr());
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let num = parts.next().unwrap_or(0) * 65536
            + parts.next().unwrap_or(0) * 256
            + parts.next().unwrap_or(0);
        set_num(l, c"REDIS_VERSION_NUM", f64::from(num));
        ffi::lua_setfield(l, -2, c"redis".as_ptr());
    }
}

/// Raises `{err = "ERR <msg>"}` (Redis's `luaPushError` + `luaError`).
unsafe fn raise_err(l: *mut ffi::lua_State, msg: &[u8]) -> c_int {
    unsafe {
        let mut text = b"ERR ".to_vec();
        text.extend_from_slice(msg);
        push_error_table(l, &text);
        drop(text);
        raise(l)
    }
}

/// Returns `{err = "ERR <msg>"}`.
unsafe fn return_err(l: *mut ffi::lua_State, msg: &[u8]) -> c_int {
    unsafe {
        let mut text = b"ERR ".to_vec();
        text.extend_from_slice(msg);
        push_error_table(l, &text);
        1
    }
}

unsafe extern "C-unwind" fn lua_redis_call(l: *mut ffi::lua_State) -> c_int {
    unsafe { redis_call(l, true) }
}

unsafe extern "C-unwind" fn lua_redis_pcall(l: *mut ffi::lua_State) -> c_int {
    unsafe { redis_call(l, false) }
}

/// `redis.call` (raise errors) and `redis.pcall` (return them).
unsafe fn redis_call(l: *mut ffi::lua_State, raise_errors: bool) -> c_int {
    unsafe {
        let ctx = match call_from_lua(l) {
            Ok(ctx) => ctx,
            Err(msg) => {
                push_error_table(l, &msg);
                drop(msg);
                mark_ignore_stats(l);
                return if raise_errors { raise(l) } else { 1 };
            }
        };
        // The reply stays in the context's buffer (nothing to free if Lua raises).
        let bytes: &[u8] = &(*ctx).reply.buf;
        let resp3 = (*ctx).resp3;
        let mut pos = 0;
        let top = ffi::lua_gettop(l);
        if !push_reply(l, bytes, &mut pos, resp3) {
            ffi::lua_settop(l, top);
            return raise_err(l, b"reply could not be read");
        }
        if bytes.first() == Some(&b'-') {
            mark_ignore_stats(l);
            if raise_errors {
                return raise(l);
            }
        }
        1
    }
}

/// Sets `ignore_error_stats_update = true` on the error table on top (Redis 7.0 marks
/// the errors `redis.call` and `redis.pcall` produce so, as already counted).
unsafe fn mark_ignore_stats(l: *mut ffi::lua_State) {
    unsafe {
        ffi::lua_pushboolean(l, 1);
        ffi::lua_setfield(l, -2, c"ignore_error_stats_update".as_ptr());
    }
}

/// Runs the `redis.call` whose arguments are on `l`'s stack: its reply is left in the
/// returned context's `reply`; the text of an error the script sees before the command
/// runs otherwise.
unsafe fn call_from_lua(l: *mut ffi::lua_State) -> Result<*mut RunCtx, Vec<u8>> {
    unsafe {
        let argc = ffi::lua_gettop(l);
        if argc == 0 {
            return Err(
                b"ERR Please specify at least one argument for this redis lib call".to_vec(),
            );
        }
        // The arguments are copied into one buffer (one allocation, not one each).
        let mut total = 0;
        for i in 1..=argc {
            match ffi::lua_type(l, i) {
                ffi::LUA_TSTRING => total += str_at(l, i).len(),
                ffi::LUA_TNUMBER => total += 24,
                _ => {
                    return Err(
                        b"ERR Lua redis lib command arguments must be strings or integers".to_vec(),
                    );
                }
            }
        }
        let ctx = CURRENT.with(Cell::get);
        if ctx.is_null() || (*ctx).core.is_null() {
            return Err(b"ERR redis.call is not allowed here".to_vec());
        }
        let mut argv = std::mem::take(&mut (*ctx).argv);
        let mut buf = BytesMut::with_capacity(total);
        for i in 1..=argc {
            if ffi::lua_type(l, i) == ffi::LUA_TSTRING {
                buf.extend_from_slice(str_at(l, i));
            } else {
                write_number_arg(&mut buf, ffi::lua_tonumber(l, i));
            }
            argv.push(buf.split().freeze());
        }
        // Their stack slots are free for the reply (a call with ~8000 arguments leaves
        // no room otherwise).
        ffi::lua_settop(l, 0);
        let result = dispatch(&mut *ctx, &argv);
        argv.clear();
        (*ctx).argv = argv;
        result.map(|()| ctx)
    }
}

/// A number passed to `redis.call`, as `%.17g` writes it; whole numbers below 10^15
/// (most arguments) take the integer path, which prints the same digits.
fn write_number_arg(buf: &mut BytesMut, d: f64) {
    if d.fract() == 0.0 && d.abs() < 1e15 && !(d == 0.0 && d.is_sign_negative()) {
        buf.extend_from_slice(itoa::Buffer::new().format(d as i64).as_bytes());
    } else {
        buf.extend_from_slice(crate::util::fmt_double(d).as_bytes());
    }
}

/// Runs one command for the script: Redis's checks for scripts, then the core's
/// dispatcher with the script's client, its reply (an error reply among them) in
/// `ctx.reply`; or the text of an error the script sees before the command runs.
fn dispatch(ctx: &mut RunCtx, argv: &Argv) -> Result<(), Vec<u8>> {
    let result = dispatch_checked(ctx, argv);
    if let Err(text) = &result {
        // A refusal before the command ran counts as Redis counts it: an error reply of
        // its code, and a rejected call of the command (the script's own failure later
        // is not counted again: its error table says so).
        // SAFETY: as in `dispatch_checked`.
        let core = unsafe { &mut *ctx.core };
        let code = error_code(text);
        *core.stats.errors.entry(code).or_default() += 1;
        if let Some(spec) =
            command::lookup(&argv[0]).and_then(|s| command::resolve_subcommand(s, argv).ok())
        {
            core.stats.commands.entry(spec.full_name()).rejected_calls += 1;
        }
    }
    result
}

/// The code of an error text: its first word.
pub fn error_code(text: &[u8]) -> String {
    let word = text.split(|&c| c == b' ').next().unwrap_or_default();
    String::from_utf8_lossy(word).into_owned()
}

fn dispatch_checked(ctx: &mut RunCtx, argv: &Argv) -> Result<(), Vec<u8>> {
    // SAFETY: set by `Run::resume` for its duration; nothing else borrows the core
    // while the script runs.
    let core = unsafe { &mut *ctx.core };
    let name = &argv[0];
    let compat = core.compat;
    let Some(spec) = core
        .lookup_command(name)
        .filter(|s| command::since_version(s.since) <= compat)
    else {
        return Err(b"ERR Unknown Redis command called from script".to_vec());
    };
    let spec: &'static CommandSpec = match command::resolve_subcommand(spec, argv) {
        Ok(s) => s,
        Err(err) => return Err(err.wire_text().to_vec()),
    };
    if !spec.arity_ok(argv.len()) {
        return Err(b"ERR Wrong number of args calling Redis command from script".to_vec());
    }
    if spec.flags & flags::NOSCRIPT != 0 {
        return Err(b"ERR This Redis command is not allowed from script".to_vec());
    }
    if matches!(spec.name, "xread" | "xreadgroup") && has_block(argv) {
        let mut msg = b"ERR ".to_vec();
        msg.extend_from_slice(name);
        msg.extend_from_slice(b" command is not allowed with BLOCK option from scripts");
        return Err(msg);
    }
    // PUBLISH and PFCOUNT add to the replication stream: not from a read-only script.
    if ctx.read_only && spec.flags & flags::WRITE == 0 && crate::core::pause::may_replicate(spec) {
        return Err(b"ERR Write commands are not allowed from read-only scripts.".to_vec());
    }
    if spec.flags & flags::WRITE != 0 {
        if ctx.read_only {
            return Err(b"ERR Write commands are not allowed from read-only scripts.".to_vec());
        }
        if let Some(why) = core.persist.write_refusal() {
            return Err(why.into_bytes());
        }
        if let Some(err) = ctx
            .fake
            .as_deref()
            .and_then(|f| core.replication_refusal(f, spec))
        {
            return Err(err.wire_text().to_vec());
        }
        if !ctx.allow_oom
            && spec.flags & flags::DENYOOM != 0
            && core.limits.maxmemory > 0
            && core.over_maxmemory()
        {
            return Err(b"OOM command not allowed when used memory > 'maxmemory'.".to_vec());
        }
        ctx.wrote = true;
    }
    let Some(fake) = ctx.fake.as_deref_mut() else {
        return Err(b"ERR the script's client is gone".to_vec());
    };
    if fake.user.is_some()
        && let Err(denied) = core.acl_check(fake, spec, argv, acl::log::Context::Lua)
    {
        let mut msg =
            b"ERR The user executing the script can't run this command or subcommand".to_vec();
        if matches!(denied, acl::Denied::Key(_)) {
            msg = b"ERR The user executing the script can't access at least one of the keys mentioned in the command".to_vec();
        } else if matches!(denied, acl::Denied::Channel(_)) {
            msg = b"ERR The user executing the script can't publish to the channel mentioned in the command".to_vec();
        }
        return Err(msg);
    }
    fake.proto = if ctx.resp3 {
        Protocol::Resp3
    } else {
        Protocol::Resp2
    };
    ctx.reply.buf.clear();
    ctx.reply.proto = fake.proto;
    core.call(fake, spec, argv, &mut ctx.reply, ctx.now_ms);
    Ok(())
}

/// True when an XREAD/XREADGROUP has a BLOCK option before STREAMS.
fn has_block(argv: &Argv) -> bool {
    argv.iter()
        .skip(1)
        .take_while(|a| !a.eq_ignore_ascii_case(b"streams"))
        .any(|a| a.eq_ignore_ascii_case(b"block"))
}

/// `redis.error_reply(msg)`: `{err = msg}`, with `ERR` when msg names no code.
unsafe extern "C-unwind" fn lua_error_reply(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, 1) != ffi::LUA_TSTRING {
            return return_err(l, b"wrong number or type of arguments");
        }
        let msg = str_at(l, 1);
        let with_dash: Vec<u8> = if msg.first() == Some(&b'-') {
            msg.to_vec()
        } else {
            let mut v = b"-".to_vec();
            v.extend_from_slice(msg);
            v
        };
        let text = error_table_text(&with_dash);
        push_error_table(l, &text);
        1
    }
}

/// Redis's `luaPushErrorBuff`: `-CODE message` keeps its code, a message without a
/// space gets `ERR`; trailing CR/LF are trimmed.
fn error_table_text(dashed: &[u8]) -> Vec<u8> {
    let body = &dashed[1..];
    let (code, msg) = match body.iter().position(|&c| c == b' ') {
        Some(sp) => (&body[..sp], &body[sp + 1..]),
        None => (&b"ERR"[..], body),
    };
    let mut msg = msg;
    while let Some((&last, rest)) = msg.split_last() {
        if last == b'\r' || last == b'\n' {
            msg = rest;
        } else {
            break;
        }
    }
    let mut text = code.to_vec();
    text.push(b' ');
    text.extend_from_slice(msg);
    text
}

/// `redis.status_reply(msg)`: `{ok = msg}`.
unsafe extern "C-unwind" fn lua_status_reply(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, 1) != ffi::LUA_TSTRING {
            return return_err(l, b"wrong number or type of arguments");
        }
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_setfield(l, -2, c"ok".as_ptr());
        1
    }
}

unsafe extern "C-unwind" fn lua_sha1hex(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        if ffi::lua_gettop(l) != 1 {
            return raise_err(l, b"wrong number of arguments");
        }
        let data = vm::to_bytes(l, 1).unwrap_or_default();
        let hex = super::sha1::hex(&data);
        drop(data);
        push_bytes(l, &hex);
        1
    }
}

unsafe extern "C-unwind" fn lua_log(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let argc = ffi::lua_gettop(l);
        if argc < 2 {
            return raise_err(l, b"redis.log() requires two arguments or more.");
        }
        if ffi::lua_type(l, 1) != ffi::LUA_TNUMBER {
            return raise_err(l, b"First argument must be a number (log level).");
        }
        let level = ffi::lua_tonumber(l, 1);
        if !(0.0..=3.0).contains(&level) {
            return raise_err(l, b"Invalid debug level.");
        }
        let mut text = Vec::new();
        for i in 2..=argc {
            if let Some(part) = vm::to_bytes(l, i) {
                if !text.is_empty() {
                    text.push(b' ');
                }
                text.extend_from_slice(&part);
            }
        }
        let line = String::from_utf8_lossy(&text).into_owned();
        match level as i64 {
            0 => tracing::debug!(target: "script", "{line}"),
            1 => tracing::info!(target: "script", "{line}"),
            2 => tracing::info!(target: "script", "{line}"),
            _ => tracing::warn!(target: "script", "{line}"),
        }
        0
    }
}

unsafe extern "C-unwind" fn lua_setresp(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        if ffi::lua_gettop(l) != 1 {
            return raise_err(l, b"redis.setresp() requires one argument.");
        }
        let v = ffi::lua_tonumber(l, 1) as i64;
        if v != 2 && v != 3 {
            return raise_err(l, b"RESP version must be 2 or 3.");
        }
        let ctx = CURRENT.with(Cell::get);
        if !ctx.is_null() {
            (*ctx).resp3 = v == 3;
        }
        0
    }
}

unsafe extern "C-unwind" fn lua_set_repl(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        if ffi::lua_gettop(l) != 1 {
            return raise_err(l, b"redis.set_repl() requires two arguments.");
        }
        let v = ffi::lua_tonumber(l, 1) as i64;
        if !(0..=3).contains(&v) {
            return raise_err(
                l,
                b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
            );
        }
        let ctx = CURRENT.with(Cell::get);
        if !ctx.is_null() {
            (*ctx).repl = v as u8;
        }
        0
    }
}

unsafe extern "C-unwind" fn lua_replicate_commands(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::lua_pushboolean(l, 1);
        1
    }
}

unsafe extern "C-unwind" fn lua_breakpoint(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        ffi::lua_pushboolean(l, 0);
        1
    }
}

unsafe extern "C-unwind" fn lua_debug(_l: *mut ffi::lua_State) -> c_int {
    0
}

unsafe extern "C-unwind" fn lua_acl_check_cmd(l: *mut ffi::lua_State) -> c_int {
    unsafe {
        let argc = ffi::lua_gettop(l);
        if argc == 0 {
            return raise_err(
                l,
                b"Please specify at least one argument for this redis lib call",
            );
        }
        let mut argv: Vec<Bytes> = Vec::new();
        for i in 1..=argc {
            match vm::to_bytes(l, i) {
                Some(b) => argv.push(Bytes::from(b)),
                None => {
                    drop(argv);
                    return raise_err(
                        l,
                        b"Lua redis lib command arguments must be strings or integers",
                    );
                }
            }
        }
        let argv: Argv = argv;
        let spec = command::lookup(&argv[0])
            .and_then(|s| command::resolve_subcommand(s, &argv).ok())
            .filter(|s| s.arity_ok(argv.len()));
        let Some(spec) = spec else {
            drop(argv);
            return raise_err(l, b"Invalid command passed to redis.acl_check_cmd()");
        };
        let ctx = CURRENT.with(Cell::get);
        let allowed = if ctx.is_null() {
            true
        } else {
            match (*ctx).fake.as_ref().and_then(|f| f.user.as_ref()) {
                Some(user) => user.borrow().check(spec, &argv).is_ok(),
                None => true,
            }
        };
        drop(argv);
        ffi::lua_pushboolean(l, c_int::from(allowed));
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_arguments_print_as_percent_17g() {
        for (d, text) in [
            (3.0, "3"),
            (-7.0, "-7"),
            (123_456_789_012.0, "123456789012"),
            (-0.0, "-0"),
            (0.1, "0.10000000000000001"),
            (1e20, "1e+20"),
            (2f64.powi(53), "9007199254740992"),
            (f64::INFINITY, "inf"),
        ] {
            let mut buf = BytesMut::new();
            write_number_arg(&mut buf, d);
            assert_eq!(buf, text.as_bytes(), "{d}");
        }
    }

    #[test]
    fn error_reply_texts_keep_or_add_the_code() {
        let t = |s: &[u8]| String::from_utf8_lossy(&error_table_text(s)).into_owned();
        assert_eq!(t(b"-My Error"), "My Error");
        assert_eq!(t(b"-boom"), "ERR boom");
        assert_eq!(t(b"-"), "ERR ");
        assert_eq!(t(b"-WRONGTYPE custom\r\n"), "WRONGTYPE custom");
    }

    /// Runs `chunk` in a fresh VM (no core: `redis.call` is refused) and returns its
    /// first result as reply bytes.
    fn run_chunk(chunk: &str) -> Vec<u8> {
        let vm = crate::scripting::new_vm("7.0.0");
        let func = vm
            .compile(chunk.as_bytes(), c"@user_script")
            .expect("compiles");
        // SAFETY: the function was anchored under `func` just above.
        unsafe {
            let l = vm.l;
            vm.push_compiled(func);
            let status = ffi::lua_pcall(l, 0, 1, 0);
            let mut out = RespWriter::new(Protocol::Resp2);
            if status != 0 {
                out.error_text(&error_message(l, -1));
            } else {
                write_reply(l, -1, &mut out, false, 0);
            }
            ffi::lua_settop(l, 0);
            out.take()
        }
    }

    #[test]
    fn conversions_and_redis_library_without_a_server() {
        assert_eq!(
            run_chunk("return {1, 'two', 3.5, true, false}"),
            b"*5\r\n:1\r\n$3\r\ntwo\r\n:3\r\n:1\r\n$-1\r\n"
        );
        assert_eq!(
            run_chunk("return {err = 'multi\\nline'}"),
            b"-multi line\r\n"
        );
        assert_eq!(
            run_chunk("return redis.error_reply('boom')"),
            b"-ERR boom\r\n"
        );
        assert_eq!(
            run_chunk("return redis.sha1hex('abc')"),
            b"$40\r\na9993e364706816aba3e25717850c26c9cd0d89d\r\n"
        );
        assert_eq!(
            run_chunk("local t = setmetatable({}, {__index = function() error('x') end}) return t"),
            b"*0\r\n"
        );
        // Redis 7.0: math.randomseed(42) then math.random(100) gives 75, then 35.
        assert_eq!(
            run_chunk("math.randomseed(42) return {math.random(100), math.random(100)}"),
            b"*2\r\n:75\r\n:35\r\n"
        );
        assert_eq!(
            run_chunk("return {ok = 'two\\r\\nlines'}"),
            b"+two  lines\r\n"
        );
        assert_eq!(run_chunk("return {big_number = '1\\n2'}"), b"$3\r\n1 2\r\n");
        assert_eq!(
            run_chunk("return {map = {a = 1}}"),
            b"*2\r\n$1\r\na\r\n:1\r\n"
        );
        assert_eq!(run_chunk("return {set = {x = true}}"), b"*1\r\n$1\r\nx\r\n");
        let readonly = run_chunk("string.x = 1");
        assert!(String::from_utf8_lossy(&readonly).contains("Attempt to modify a readonly table"));
        let missing = run_chunk("return nosuch");
        assert!(String::from_utf8_lossy(&missing).contains("nonexistent global variable 'nosuch'"));
    }
}
