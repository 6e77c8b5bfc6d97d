//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: the script cache by SHA-1 and the
//! shebang flags, on the engine's EVAL VM.

use super::run::{Run, RunCtx, RunName, RunSetup, Step};
use super::vm::GlobalArray;
use super::{Engine, engine_mut};
use crate::commands::{is, parse_i64};
use crate::core::client::{BlockState, Client};
use crate::core::script::BusyScript;
use crate::core::{Core, Ctx};
use crate::error::ReplyError;
use crate::resp::Argv;
use crate::resp::writer::RespWriter;
use bytes::Bytes;
use std::time::{Duration, Instant};

/// What a script's shebang line allows (`#!lua flags=...`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// The script has a shebang (no compatibility mode).
    pub shebang: bool,
    /// `no-writes`.
    pub no_writes: bool,
    /// `allow-oom`.
    pub allow_oom: bool,
    /// `allow-stale`.
    pub allow_stale: bool,
    /// `no-cluster`.
    pub no_cluster: bool,
    /// `allow-cross-slot-keys`.
    pub allow_cross_slot: bool,
}

impl ScriptFlags {
    /// Sets the flag named `name`; false for an unknown name.
    pub fn set(&mut self, name: &[u8]) -> bool {
        match name {
            b"no-writes" => self.no_writes = true,
            b"allow-oom" => self.allow_oom = true,
            b"allow-stale" => self.allow_stale = true,
            b"no-cluster" => self.no_cluster = true,
            b"allow-cross-slot-keys" => self.allow_cross_slot = true,
            _ => return false,
        }
        true
    }

    /// The flags' names, in Redis's order.
    pub fn names(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for (on, name) in [
            (self.no_writes, "no-writes"),
            (self.allow_oom, "allow-oom"),
            (self.allow_stale, "allow-stale"),
            (self.no_cluster, "no-cluster"),
            (self.allow_cross_slot, "allow-cross-slot-keys"),
        ] {
            if on {
                out.push(name);
            }
        }
        out
    }
}

/// One cached script.
#[derive(Debug)]
pub struct Script {
    /// Its flags.
    pub flags: ScriptFlags,
    /// Its body's length (INFO's `used_memory_scripts_eval`).
    pub len: u32,
    /// The registry reference of its compiled function in the EVAL VM.
    pub func: std::ffi::c_int,
}

/// Reads an EVAL script's shebang: its flags and the body to compile (the shebang line
/// blanked out but its newline kept, so line numbers stay the user's).
pub fn parse_shebang(body: &[u8]) -> Result<(ScriptFlags, &[u8]), ReplyError> {
    let mut flags = ScriptFlags::default();
    if !body.starts_with(b"#!") {
        return Ok((flags, body));
    }
    let Some(nl) = body.iter().position(|&c| c == b'\n') else {
        return Err(ReplyError::owned("ERR Invalid script shebang".into()));
    };
    let line = &body[..nl];
    let mut parts = line.split(|&c| c == b' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    if engine != b"#!lua" {
        return Err(ReplyError::owned(format!(
            "ERR Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(engine)
        )));
    }
    flags.shebang = true;
    for part in parts {
        if let Some(list) = part.strip_prefix(b"flags=") {
            for flag in list.split(|&c| c == b',').filter(|f| !f.is_empty()) {
                if !flags.set(flag) {
                    return Err(ReplyError::owned(format!(
                        "ERR Unexpected flag in script shebang: {}",
                        String::from_utf8_lossy(flag)
                    )));
                }
            }
        } else {
            return Err(ReplyError::owned(format!(
                "ERR Unknown lua shebang option: {}",
                String::from_utf8_lossy(part)
            )));
        }
    }
    Ok((flags, &body[nl..]))
}

impl Engine {
    /// Compiles and caches `body` (if it is not cached yet); its SHA.
    pub fn load_script(&mut self, body: &[u8]) -> Result<[u8; 40], ReplyError> {
        let sha = super::sha1::hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, code) = parse_shebang(body)?;
        let func = self.eval_vm.compile(code, c"@user_script").map_err(|e| {
            ReplyError::owned(format!(
                "ERR Error compiling script (new function): {}",
                String::from_utf8_lossy(&e)
            ))
        })?;
        self.scripts.insert(
            sha,
            Script {
                flags,
                len: u32::try_from(body.len()).unwrap_or(u32::MAX),
                func,
            },
        );
        Ok(sha)
    }

    /// Empties the script cache and starts a fresh EVAL VM.
    pub fn flush_scripts(&mut self, version: &str) {
        self.scripts.clear();
        self.eval_vm = super::new_vm(version);
    }
}

/// `numkeys` of EVAL/FCALL: Redis's checks and texts.
pub fn parse_numkeys(arg: &[u8], available: usize) -> Result<usize, ReplyError> {
    let n = parse_i64(arg)?;
    if n < 0 {
        return Err(ReplyError::owned(
            "ERR Number of keys can't be negative".into(),
        ));
    }
    if n as u64 > available as u64 {
        return Err(ReplyError::owned(
            "ERR Number of keys can't be greater than number of args".into(),
        ));
    }
    Ok(n as usize)
}

/// The context a script of `caller`'s runs in: its client runs the commands as the
/// caller's user on the caller's database, flagged as a script so blocking commands
/// answer at once; the last run's context when there is one.
pub fn script_ctx(core: &mut Core, caller: &Client) -> Box<RunCtx> {
    let spare = super::engine_mut(core).spare_ctx.take();
    RunCtx::for_caller(spare, caller)
}

/// The busy threshold (`busy-reply-threshold`, alias `lua-time-limit`).
pub fn busy_threshold(core: &Core) -> Duration {
    Duration::from_millis(core.script_info.busy_threshold_ms)
}

/// Why a script that may write (a shebang without `no-writes`, every function without
/// it) cannot start now: a failing log, too few good replicas, a read-only replica —
/// the refusals a write command would get (Redis's `scriptPrepareForRun`).
pub fn write_refusal(ctx: &Ctx<'_>) -> Option<ReplyError> {
    if let Some(why) = ctx.core.persist.write_refusal() {
        return Some(ReplyError::owned(why));
    }
    // Any write command's row stands for "a write" here.
    let write = crate::core::command::lookup(b"set")?;
    ctx.core.replication_refusal(ctx.client, write)
}

/// The refusals of a script that may write, before it starts: [`write_refusal`], then
/// `-OOM` past maxmemory unless it is `allow-oom`.
pub fn check_may_write(ctx: &Ctx<'_>, may_write: bool, allow_oom: bool) -> Result<(), ReplyError> {
    if !may_write {
        return Ok(());
    }
    if let Some(err) = write_refusal(ctx) {
        return Err(err);
    }
    if !allow_oom && ctx.core.limits.maxmemory > 0 && ctx.core.over_maxmemory() {
        return Err(ReplyError::Oom);
    }
    Ok(())
}

/// The KEYS and ARGV of an EVAL/FCALL whose `numkeys` (argument 2) is `numkeys`.
pub fn keys_and_args(argv: &[Bytes], numkeys: usize) -> (&[Bytes], &[Bytes]) {
    argv[3..].split_at(numkeys)
}

/// How a started run continues.
pub struct Started {
    /// The run.
    pub run: Run,
    /// An EVAL (SCRIPT KILL) rather than an FCALL.
    pub is_eval: bool,
    /// The function's name for FUNCTION STATS (empty for EVAL).
    pub fn_name: Bytes,
}

/// Runs a prepared script for the command in `ctx`: to its end, or, when it goes past
/// the busy threshold, suspended with the client blocked until the server's driver
/// finishes it (`scripting::resume_busy`).
pub fn execute(ctx: &mut Ctx<'_>, mut started: Started) {
    let core: &mut Core = ctx.core;
    let outer_hold = core.held_effects.take();
    core.held_effects = Some(Vec::new());
    let step = started.run.resume(core);
    match step {
        Step::Suspended => {
            core.busy = Some(BusyScript {
                client_id: ctx.client.id,
                is_eval: started.is_eval,
                wrote: started.run.ctx.wrote,
                kill: false,
                name: started.fn_name.clone(),
                argv: ctx.argv.clone(),
                started: Instant::now() - started.run.ctx.started.elapsed(),
            });
            // Blocked, but on no key and with no deadline: only the driver ends it.
            ctx.client.blocked = Some(BlockState::held(ctx.argv.clone(), ctx.client.db));
            if let Some(outer) = outer_hold {
                // A script inside EXEC cannot be suspended: EXEC's own effects stay
                // ahead of the script's.
                let mut held = outer;
                held.extend(core.held_effects.take().unwrap_or_default());
                core.held_effects = Some(held);
            }
            engine_mut(core).running = Some(started.run);
            core.script_driver.notify_one();
        }
        Step::Returned => {
            let failed = started.run.reply(ctx.out);
            finish_effects(core, outer_hold, started.run.ctx.repl);
            if let Some((text, counted)) = failed {
                count_failure(core, &ctx.argv[0], &text, counted);
            }
            let engine = engine_mut(core);
            let vm = if started.is_eval {
                &engine.eval_vm
            } else {
                &engine.functions.vm
            };
            if let Some(thread) = started.run.take_thread(vm.l) {
                // SAFETY: the run returned on this VM and is done with its thread.
                unsafe { vm.keep_thread(thread) };
            }
            engine.spare_ctx = Some(started.run.into_ctx());
        }
        Step::Failed(text, counted) => {
            ctx.out.error_text(&text);
            finish_effects(core, outer_hold, started.run.ctx.repl);
            count_failure(core, &ctx.argv[0], &text, counted);
            engine_mut(core).spare_ctx = Some(started.run.into_ctx());
        }
    }
}

/// A script that answered an error: a failed call of its command, and an error reply of
/// its code unless `redis.call` already counted that error.
pub fn count_failure(core: &mut Core, command: &[u8], text: &[u8], counted: bool) {
    if !counted {
        *core
            .stats
            .errors
            .entry(super::run::error_code(text))
            .or_default() += 1;
    }
    if let Some(spec) = crate::core::command::lookup(command) {
        core.stats.commands.entry(spec.full_name()).failed_calls += 1;
    }
}

/// Hands a finished script's held effects on as one transaction (or back to an outer
/// holder).
pub fn finish_effects(core: &mut Core, outer: Option<Vec<(usize, Vec<Bytes>)>>, repl: u8) {
    let effects = core.held_effects.take().unwrap_or_default();
    if let Some(mut outer) = outer {
        if repl != 0 {
            outer.extend(effects);
        }
        core.held_effects = Some(outer);
        return;
    }
    if effects.is_empty() || repl == 0 {
        return;
    }
    core.persist.exec_begin();
    core.repl.enter();
    for (db, argv) in &effects {
        core.propagate(*db, argv);
    }
    core.persist.exec_end();
    if core.repl.leave() {
        core.repl_flush();
    }
}

/// EVAL script numkeys [key ...] [arg ...] (and EVAL_RO).
pub fn eval(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    eval_generic(ctx, false)
}

/// EVALSHA sha1 numkeys [key ...] [arg ...] (and EVALSHA_RO).
pub fn evalsha(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    eval_generic(ctx, true)
}

fn eval_generic(ctx: &mut Ctx<'_>, by_sha: bool) -> Result<(), ReplyError> {
    let argv: &Argv = ctx.argv;
    let read_only_cmd =
        argv[0].len() > 4 && argv[0][argv[0].len() - 3..].eq_ignore_ascii_case(b"_ro");
    let numkeys = parse_numkeys(ctx.arg(2), argv.len() - 3)?;
    // One probe of the script cache: the SHA, the flags and the function together.
    let (sha, flags, func) = {
        let sha = if by_sha {
            <[u8; 40]>::try_from(argv[1].as_ref())
                .ok()
                .map(|s| s.map(|c| c.to_ascii_lowercase()))
        } else {
            let engine = engine_mut(ctx.core);
            let before = engine.scripts.len();
            let sha = engine.load_script(&argv[1])?;
            if engine.scripts.len() != before {
                super::refresh_info(ctx.core);
            }
            Some(sha)
        };
        let engine = engine_mut(ctx.core);
        match sha.and_then(|s| engine.scripts.get(&s).map(|sc| (s, sc.flags, sc.func))) {
            Some(found) => found,
            None => {
                return Err(ReplyError::owned(
                    "NOSCRIPT No matching script. Please use EVAL.".into(),
                ));
            }
        }
    };
    if read_only_cmd && flags.shebang && !flags.no_writes {
        return Err(ReplyError::owned(
            "ERR Can not execute a script with write flag using *_ro command.".into(),
        ));
    }
    check_may_write(ctx, flags.shebang && !flags.no_writes, flags.allow_oom)?;
    let (keys, args) = keys_and_args(argv, numkeys);
    let busy_after = busy_threshold(ctx.core);
    let run_ctx = script_ctx(ctx.core, ctx.client);
    let now_ms = ctx.now_ms;
    // The command's start (sampled by the core), not a fresh clock read.
    let started = ctx.core.command_started();
    let engine = engine_mut(ctx.core);
    let vm = &engine.eval_vm;
    vm.set_global_array(GlobalArray::Keys, keys);
    vm.set_global_array(GlobalArray::Argv, args);
    // SAFETY: pushes the cached function (anchored by `load_script`) and hands it to a
    // run, on the VM's kept coroutine when there is one.
    let mut run = unsafe {
        vm.push_compiled(func);
        Run::new(
            vm.l,
            0,
            RunSetup {
                thread: vm.take_thread(),
                ctx: run_ctx,
                name: RunName::Sha(sha),
                started,
                busy_after,
                now_ms,
            },
        )
    };
    run.ctx.read_only = read_only_cmd || flags.no_writes;
    run.ctx.allow_oom = flags.allow_oom;
    execute(
        ctx,
        Started {
            run,
            is_eval: true,
            fn_name: Bytes::new(),
        },
    );
    Ok(())
}

/// SCRIPT LOAD script.
pub fn script_load(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let body = ctx.arg(2).clone();
    let sha = engine_mut(ctx.core).load_script(&body)?;
    super::refresh_info(ctx.core);
    ctx.out.bulk(&sha);
    Ok(())
}

/// SCRIPT EXISTS sha1 [sha1 ...].
pub fn script_exists(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let engine = engine_mut(ctx.core);
    let found: Vec<bool> = ctx.argv[2..]
        .iter()
        .map(|a| {
            let lower = a.to_ascii_lowercase();
            <[u8; 40]>::try_from(lower.as_slice())
                .map(|s| engine.scripts.contains_key(&s))
                .unwrap_or(false)
        })
        .collect();
    ctx.out.array(found.len());
    for f in found {
        ctx.out.integer(i64::from(f));
    }
    Ok(())
}

/// SCRIPT FLUSH [ASYNC|SYNC].
pub fn script_flush(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.argv.len() > 3
        || (ctx.argv.len() == 3 && !is(ctx.arg(2), "sync") && !is(ctx.arg(2), "async"))
    {
        return Err(ReplyError::owned(
            "ERR SCRIPT FLUSH only support SYNC|ASYNC option".into(),
        ));
    }
    let version = super::version(ctx.core);
    engine_mut(ctx.core).flush_scripts(&version);
    super::refresh_info(ctx.core);
    ctx.out.ok();
    Ok(())
}

/// SCRIPT KILL / FUNCTION KILL.
pub fn kill(ctx: &mut Ctx<'_>, from_eval: bool) -> Result<(), ReplyError> {
    let Some(busy) = ctx.core.busy.as_mut() else {
        return Err(ReplyError::owned(
            "NOTBUSY No scripts in execution right now.".into(),
        ));
    };
    if busy.wrote {
        return Err(ReplyError::owned("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.".into()));
    }
    if from_eval != busy.is_eval {
        return Err(ReplyError::owned(
            crate::core::script::busy_error(busy.is_eval).to_string(),
        ));
    }
    busy.kill = true;
    ctx.core.script_driver.notify_one();
    ctx.out.ok();
    Ok(())
}

/// SCRIPT KILL.
pub fn script_kill(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    kill(ctx, true)
}

/// SCRIPT DEBUG YES|SYNC|NO: there is no debugger; NO is accepted.
pub fn script_debug(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let mode = ctx.arg(2);
    if is(mode, "no") {
        ctx.out.ok();
        Ok(())
    } else if is(mode, "yes") || is(mode, "sync") {
        Err(ReplyError::owned(
            "ERR the Lua debugger is not available in this server; use SCRIPT DEBUG NO".into(),
        ))
    } else {
        Err(ReplyError::owned("ERR Use SCRIPT DEBUG YES/SYNC/NO".into()))
    }
}

/// A help reply in Redis 7.0's words: scripting is Redis 7.0's (the and the
/// differential check's reference), whose help ends with `Prints this help.` (Redis 8
/// says `Print`, and the other families here follow Redis 8).
pub fn help_70(ctx: &mut Ctx<'_>, container: &str, lines: &[&str]) {
    crate::commands::reply_help_ending(ctx, container, lines, "    Prints this help.");
}

/// SCRIPT HELP.
pub fn script_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    help_70(
        ctx,
        "SCRIPT",
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    );
    Ok(())
}

/// Finishes the busy script (called by the server's driver between slices): resumes it
/// for one more slice, or ends it if it was killed. False once no script is busy.
pub fn resume_busy(core: &mut Core) -> bool {
    let Some(busy) = core.busy.as_ref() else {
        return false;
    };
    let client_id = busy.client_id;
    let killed = busy.kill;
    let command = busy.argv[0].clone();
    let Some(mut run) = engine_mut(core).running.take() else {
        core.busy = None;
        return false;
    };
    let proto = core
        .clients
        .get(&client_id)
        .map(|c| c.proto)
        .unwrap_or_default();
    let mut out = RespWriter::new(proto);
    let failed = if killed {
        let text = run.killed_text();
        out.error_text(&text);
        Some((text, false))
    } else {
        match run.resume(core) {
            Step::Suspended => {
                if let Some(b) = core.busy.as_mut() {
                    b.wrote = run.ctx.wrote;
                }
                engine_mut(core).running = Some(run);
                return true;
            }
            Step::Returned => run.reply(&mut out),
            Step::Failed(text, counted) => {
                out.error_text(&text);
                Some((text, counted))
            }
        }
    };
    if let Some((text, counted)) = failed {
        count_failure(core, &command, &text, counted);
    }
    core.busy = None;
    let repl = run.ctx.repl;
    drop(run);
    finish_effects(core, None, repl);
    core.begin_batch();
    if let Some(mut client) = core.clients.remove(&client_id) {
        core.finish_script_block(&mut client, out.take());
        core.clients.insert(client_id, client);
    }
    core.handle_ready_keys();
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs_read_as_redis_reads_them() {
        let (flags, code) =
            parse_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").expect("valid");
        assert!(flags.shebang && flags.no_writes && flags.allow_oom && !flags.allow_stale);
        assert_eq!(code, b"\nreturn 1", "the newline stays so line numbers do");
        let (flags, code) = parse_shebang(b"return 1").expect("no shebang");
        assert_eq!((flags, code), (ScriptFlags::default(), &b"return 1"[..]));
        let (flags, _) = parse_shebang(b"#!lua  flags=\nreturn 1").expect("empty flags");
        assert!(flags.shebang && flags.names().is_empty());
        let text = |body: &[u8]| {
            parse_shebang(body)
                .err()
                .map(|e| String::from_utf8_lossy(&e.wire_text()).into_owned())
        };
        assert_eq!(
            text(b"#!lua flags=bogus\n").as_deref(),
            Some("ERR Unexpected flag in script shebang: bogus")
        );
        assert_eq!(
            text(b"#!lua name=x\n").as_deref(),
            Some("ERR Unknown lua shebang option: name=x")
        );
        assert_eq!(
            text(b"#!python\n").as_deref(),
            Some("ERR Unexpected engine in script shebang: #!python")
        );
        assert_eq!(
            text(b"#!lua flags=no-writes").as_deref(),
            Some("ERR Invalid script shebang")
        );
    }

    #[test]
    fn numkeys_errors_are_redis_texts() {
        assert_eq!(parse_numkeys(b"2", 2).ok(), Some(2));
        let text = |a: &[u8], n| {
            parse_numkeys(a, n)
                .err()
                .map(|e| String::from_utf8_lossy(&e.wire_text()).into_owned())
        };
        assert_eq!(
            text(b"3", 2).as_deref(),
            Some("ERR Number of keys can't be greater than number of args")
        );
        assert_eq!(
            text(b"-1", 2).as_deref(),
            Some("ERR Number of keys can't be negative")
        );
        assert_eq!(
            text(b"1.5", 2).as_deref(),
            Some("ERR value is not an integer or out of range")
        );
    }
}
