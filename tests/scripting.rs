//! Lua scripting and functions against the real binary: EVAL/EVALSHA/SCRIPT/FUNCTION/
//! FCALL replies and errors compared byte for byte with Redis 7.0 in RESP2 and RESP3,
//! busy scripts (-BUSY, SCRIPT KILL, UNKILLABLE, SHUTDOWN NOSAVE leaving nothing
//! behind), wake-ups of blocked readers by a script's writes, WATCH, and functions and
//! script writes across restarts.

mod common;

use common::differential::*;
use common::*;
use std::time::{Duration, Instant};

const LIB: &str = "#!lua name=qlib\n\
redis.register_function('enqueue', function(keys, args) return redis.call('XADD', keys[1], args[1], 'job', args[2]) end)\n\
redis.register_function{function_name='depth', callback=function(keys) return redis.call('XLEN', keys[1]) end, flags={'no-writes'}, description='length'}\n\
redis.register_function('boom', function() error('fn boom') end)";

fn eval<'a>(lua: &'a str, keys: &[&'a str], args: &[&'a str]) -> Vec<&'a str> {
    let n: &'static str = match keys.len() {
        0 => "0",
        1 => "1",
        2 => "2",
        _ => "3",
    };
    let mut v = vec!["EVAL", lua, n];
    v.extend_from_slice(keys);
    v.extend_from_slice(args);
    v
}

#[test]
fn script_replies_and_errors_match_redis_in_both_protocols() {
    let (s, r) = (start_server(), redis_server());
    let scripts: Vec<Vec<&str>> = vec![
        vec!["FLUSHALL"],
        vec!["SCRIPT", "FLUSH"],
        vec!["FUNCTION", "FLUSH"],
        // Lua -> RESP.
        eval("return 42", &[], &[]),
        eval("return 3.99", &[], &[]),
        eval("return 1e300", &[], &[]),
        eval("return -1/0", &[], &[]),
        eval("return 'a\\0b\\r\\nc'", &[], &[]),
        eval("return true", &[], &[]),
        eval("return false", &[], &[]),
        eval("return nil", &[], &[]),
        eval("return {1, 'two', 3.5, true, false, 'after'}", &[], &[]),
        eval("return {1, nil, 3}", &[], &[]),
        eval("return {err = 'My Error'}", &[], &[]),
        eval("return {ok = 'a\\r\\nb'}", &[], &[]),
        eval("return {double = 1/3}", &[], &[]),
        eval("return {map = {a = {1, 2}}}", &[], &[]),
        eval("return {set = {x = true}}", &[], &[]),
        eval(
            "return {big_number = '123456789012345678901234567890'}",
            &[],
            &[],
        ),
        eval(
            "return {verbatim_string = {format = 'txt', string = 'hello'}}",
            &[],
            &[],
        ),
        eval("redis.setresp(3) return {1, true, false}", &[], &[]),
        eval("return redis.error_reply('-boom')", &[], &[]),
        eval("return redis.status_reply('FINE')", &[], &[]),
        // RESP -> Lua.
        vec!["XADD", "s", "1-1", "f", "v"],
        eval(
            "return redis.call('XRANGE', KEYS[1], '-', '+')",
            &["s"],
            &[],
        ),
        eval(
            "redis.setresp(3) return redis.call('XINFO', 'STREAM', KEYS[1])['map']['length']",
            &["s"],
            &[],
        ),
        eval("return redis.call('GET', 'nokey')", &[], &[]),
        eval("return tostring(redis.call('GET', 'nokey'))", &[], &[]),
        eval(
            "return redis.pcall('XADD', KEYS[1], '1-1', 'x', 'y')",
            &["s"],
            &[],
        ),
        eval(
            "local ok, e = pcall(redis.call, 'nosuch') return e",
            &[],
            &[],
        ),
        eval(
            "local r = redis.pcall('nosuch') return r.ignore_error_stats_update and 'marked' or 'plain'",
            &[],
            &[],
        ),
        // Errors with their positions and suffixes.
        eval("error('oops')", &[], &[]),
        eval("error({err = 'TABLE err'})", &[], &[]),
        eval("return redis.call('nosuch')", &[], &[]),
        eval(
            "return redis.call('xadd', KEYS[1], 'bad', 'f', 'v')",
            &["s"],
            &[],
        ),
        eval("local a = 1\n\nreturn nil .. 'x'", &[], &[]),
        eval("return 1 +", &[], &[]),
        eval("return redis.call('echo', true)", &[], &[]),
        eval("return redis.pcall('blpop', 'l', 0)", &[], &[]),
        eval(
            "return redis.pcall('xread', 'block', '0', 'streams', KEYS[1], '$')",
            &["s"],
            &[],
        ),
        eval(
            "return redis.call('BLMPOP', 0, 1, 'nolist', 'LEFT')",
            &[],
            &[],
        ),
        // The environment.
        eval("a = 5", &[], &[]),
        eval("return undefined_var", &[], &[]),
        eval("rawset(_G, 'x', 1)", &[], &[]),
        eval("return tostring(rawget(_G, 'KEYS') ~= nil)", &[], &[]),
        eval("string.rep = nil", &[], &[]),
        eval("getmetatable('').__index = nil", &[], &[]),
        eval("return ('x'):rep(3)", &[], &[]),
        eval("return type(os)", &[], &[]),
        eval("return redis.sha1hex('abc')", &[], &[]),
        eval("return redis.setresp(1)", &[], &[]),
        eval(
            "math.randomseed(42) return {math.random(100), math.random(1, 6), tostring(math.random())}",
            &[],
            &[],
        ),
        eval("return {KEYS, ARGV}", &["k1", "k2"], &["a1"]),
        // Numbers made strings (Lua's "%.14g"; whole ones take streamd's fast path).
        eval(
            "return {'f' .. 12, 'm' .. -7, tostring(0), tostring(-0), tostring(99999999999999), \
             tostring(-99999999999999), tostring(1e14), tostring(2^53), tostring(0.5), \
             tostring(1/3), tostring(1/0), tostring(-1/0), string.format('%.14g', 42)}",
            &[],
            &[],
        ),
        vec!["EVAL", "return 1", "3", "a"],
        vec!["EVAL", "return 1", "-1"],
        vec!["EVAL", "return 1", "x"],
        // Libraries.
        eval("return cjson.encode({a = {b = {c = 'd'}}})", &[], &[]),
        eval("return cjson.decode('[1,null,3]')", &[], &[]),
        eval("return cmsgpack.pack({1, 2, 3})", &[], &[]),
        eval("return bit.tohex(bit.bxor(0xff, 0x0f))", &[], &[]),
        eval(
            "return {struct.unpack('>I2', struct.pack('>I2', 258))}",
            &[],
            &[],
        ),
        // The cache and the shebang.
        vec!["SCRIPT", "LOAD", "return 'loaded'"],
        vec!["EVALSHA", "b534286061d4b9e4026607613b95c06c06015ae8", "0"],
        vec!["EVALSHA", "B534286061D4B9E4026607613B95C06C06015AE8", "0"],
        vec!["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        vec![
            "SCRIPT",
            "EXISTS",
            "b534286061d4b9e4026607613b95c06c06015ae8",
            "nope",
        ],
        eval(
            "#!lua flags=no-writes\nreturn redis.call('xadd', KEYS[1], '2-1', 'f', 'v')",
            &["s"],
            &[],
        ),
        eval("#!lua flags=bogus\nreturn 1", &[], &[]),
        eval("#!python\nreturn 1", &[], &[]),
        // A script that changes KEYS/ARGV leaves nothing of it to the next script
        // (streamd refills the tables of the last run when they are untouched).
        eval(
            "KEYS.extra = 1 KEYS[3] = 'x' table.remove(ARGV) return #KEYS",
            &["a", "b"],
            &["1", "2"],
        ),
        eval(
            "local n = 0 for k in pairs(KEYS) do n = n + 1 end return {n, #ARGV, KEYS.extra or 'none'}",
            &["a", "b"],
            &["1", "2"],
        ),
        eval(
            "setmetatable(KEYS, {__index = function() return 'meta' end}) return KEYS[9]",
            &["a"],
            &[],
        ),
        eval(
            "return {KEYS[1], tostring(KEYS[9]), tostring(getmetatable(KEYS))}",
            &["z"],
            &[],
        ),
        eval("KEYS[1] = nil return #KEYS", &["a"], &[]),
        eval("return {#KEYS, KEYS[1]}", &["b"], &[]),
        eval("return {#KEYS, KEYS[1], #ARGV}", &[], &["x", "y", "z"]),
        vec!["EVAL_RO", "return redis.call('del', KEYS[1])", "1", "s"],
        vec!["EVAL_RO", "#!lua\nreturn 1", "0"],
        vec!["MULTI"],
        eval("return 1", &[], &[]),
        eval("error('in exec')", &[], &[]),
        vec!["EXEC"],
        vec!["SCRIPT", "KILL"],
        vec!["SCRIPT", "FLUSH", "BOGUS"],
        vec!["SCRIPT", "HELP"],
        // Functions.
        vec!["FUNCTION", "LOAD", LIB],
        vec!["FUNCTION", "LOAD", LIB],
        vec!["FUNCTION", "LOAD", "REPLACE", LIB],
        vec!["FCALL", "enqueue", "1", "q", "1-1", "a"],
        vec!["FCALL", "ENQUEUE", "1", "q", "2-1", "b"],
        vec!["FCALL_RO", "depth", "1", "q"],
        vec!["FCALL_RO", "enqueue", "1", "q", "3-1", "c"],
        vec!["FCALL", "boom", "0"],
        vec!["FCALL", "nosuch", "0"],
        vec!["FCALL", "depth", "x"],
        vec!["FUNCTION", "LIST", "LIBRARYNAME", "nosuch"],
        vec!["FUNCTION", "STATS"],
        vec!["FUNCTION", "LOAD", "#!lua name=bad-name\nreturn 1"],
        vec!["FUNCTION", "LOAD", "#!lua name=e1\nredis.call('ping')"],
        vec!["FUNCTION", "LOAD", "#!lua name=e2\nlocal x = 1 +"],
        vec!["FUNCTION", "LOAD", "#!lua name=e3\nreturn 1"],
        vec!["FUNCTION", "DELETE", "nosuch"],
        vec!["FUNCTION", "RESTORE", "bad"],
        vec!["FUNCTION", "DELETE", "qlib"],
        vec!["FUNCTION", "LIST"],
    ];
    for proto in [2, 3] {
        for side in [s.port, r.port] {
            let mut raw = Raw::connect(side);
            for c in [
                &["FLUSHALL"][..],
                &["SCRIPT", "FLUSH"],
                &["FUNCTION", "FLUSH"],
            ] {
                raw.cmd_str(c);
            }
        }
        let cases: Vec<(Mode, Vec<&str>)> =
            scripts.iter().map(|c| (Mode::Exact, c.clone())).collect();
        let bad = differential(s.port, r.port, proto, &cases);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

/// The core remembers the last two command names it looked up; a script alternates
/// EVALSHA with its own `redis.call`s, and a client's commands come in between. Every
/// name must still resolve to its own command (replies as Redis's) and be counted as
/// itself in INFO commandstats.
#[test]
fn alternating_command_names_resolve_each_to_its_own_command() {
    let (s, r) = (start_server(), redis_server());
    let mixed = "redis.call('INCR', KEYS[1]) redis.call('HSET', KEYS[2], 'f', ARGV[1]) \
                 redis.call('incr', KEYS[1]) return redis.call('HGET', KEYS[2], 'f')";
    let mut cases: Vec<Vec<&str>> = vec![vec!["FLUSHALL"], vec!["SCRIPT", "FLUSH"]];
    for round in ["1", "2", "3"] {
        cases.push(eval(mixed, &["n", "h"], &[round]));
        cases.push(vec!["INCR", "n"]);
        cases.push(eval(mixed, &["n", "h"], &[round]));
        cases.push(vec!["HGET", "h", "f"]);
        cases.push(vec!["NOSUCHCMD", "n"]);
        cases.push(eval("return redis.call('nosuchcmd')", &[], &[]));
        cases.push(vec!["hset", "h", "g", round]);
        cases.push(vec!["GET", "n"]);
    }
    let bad = differential(s.port, r.port, 2, &exact_owned(&cases));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // Five runs of the script and five INCRs of the client's own, counted apart.
    let mut raw = Raw::connect(s.port);
    raw.cmd_str(&["CONFIG", "RESETSTAT"]);
    for _ in 0..5 {
        raw.cmd_str(&eval(mixed, &["n", "h"], &["x"]));
        raw.cmd_str(&["INCR", "n"]);
    }
    let stats = String::from_utf8_lossy(&raw.cmd_str(&["INFO", "commandstats"])).into_owned();
    let calls = |name: &str| {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    assert_eq!(calls("eval"), Some(5), "{stats}");
    assert_eq!(calls("incr"), Some(15), "{stats}");
    assert_eq!(calls("hset"), Some(5), "{stats}");
    assert_eq!(calls("hget"), Some(5), "{stats}");
}

fn exact_owned<'a>(cases: &[Vec<&'a str>]) -> Vec<(Mode, Vec<&'a str>)> {
    cases.iter().map(|c| (Mode::Exact, c.clone())).collect()
}

#[test]
fn function_dump_restores_on_redis_and_back() {
    let (s, r) = (start_server(), redis_server());
    let (mut a, mut b) = (s.raw(), r.raw());
    // A small library: the same payload bytes on both sides (Redis compresses larger
    // codes with LZF, which streamd reads but does not write).
    let small = "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return 1 end)";
    for raw in [&mut a, &mut b] {
        raw.cmd_str(&["FUNCTION", "FLUSH"]);
        assert_eq!(raw.cmd_str(&["FUNCTION", "LOAD", small]), b"$4\r\nlib1\r\n");
    }
    assert_eq!(
        escape(&a.cmd_str(&["FUNCTION", "DUMP"])),
        escape(&b.cmd_str(&["FUNCTION", "DUMP"]))
    );
    // The larger library, both ways.
    for raw in [&mut a, &mut b] {
        assert_eq!(raw.cmd_str(&["FUNCTION", "LOAD", LIB]), b"$4\r\nqlib\r\n");
    }
    let payload_of = |raw: &mut Raw| match parse(&raw.cmd_str(&["FUNCTION", "DUMP"]), 0).0 {
        V::Bulk(Some(p)) => p,
        other => panic!("no payload: {other:?}"),
    };
    let (ours, theirs) = (payload_of(&mut a), payload_of(&mut b));
    b.cmd_str(&["FUNCTION", "FLUSH"]);
    assert_eq!(b.cmd(&[b"FUNCTION", b"RESTORE", &ours]), b"+OK\r\n");
    assert_eq!(
        b.cmd_str(&["FCALL", "boom", "0"]),
        a.cmd_str(&["FCALL", "boom", "0"])
    );
    a.cmd_str(&["FUNCTION", "FLUSH"]);
    assert_eq!(a.cmd(&[b"FUNCTION", b"RESTORE", &theirs]), b"+OK\r\n");
    assert_eq!(a.cmd_str(&["FCALL_RO", "depth", "1", "q"]), b":0\r\n");
    // Collisions are refused as Redis refuses them; REPLACE takes over.
    assert_eq!(
        a.cmd(&[b"FUNCTION", b"RESTORE", &theirs]),
        b"-ERR Library lib1 already exists\r\n"
    );
    assert_eq!(
        a.cmd(&[b"FUNCTION", b"RESTORE", &theirs, b"REPLACE"]),
        b"+OK\r\n"
    );
    let mut flipped = theirs.clone();
    flipped[3] ^= 0x20;
    assert_eq!(
        a.cmd(&[b"FUNCTION", b"RESTORE", &flipped]),
        b"-ERR DUMP payload version or checksum are wrong\r\n"
    );
}

/// Waits until `c` has bytes to read (at most `secs`).
fn readable(c: &mut Raw, secs: u64) -> bool {
    c.set_timeout(Duration::from_secs(secs));
    let r = c.try_read_reply();
    c.set_timeout(Duration::from_secs(10));
    match r {
        Ok(reply) => {
            // Put the reply back in view for the caller's assertion.
            LAST.with(|l| *l.borrow_mut() = reply);
            true
        }
        Err(_) => false,
    }
}

thread_local! {
    static LAST: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn last() -> Vec<u8> {
    LAST.with(|l| l.borrow().clone())
}

/// Waits (bounded) until PING on `raw` answers -BUSY: the script sent on another
/// connection runs and is past `busy-reply-threshold`, however slow the machine.
fn wait_busy(raw: &mut Raw) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = raw.cmd_str(&["PING"]);
        if reply.starts_with(b"-BUSY ") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the script never got busy (PING: {})",
            String::from_utf8_lossy(&reply)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_busy_script_answers_busy_until_killed() {
    let s = start_server();
    let mut b = s.raw();
    assert_eq!(
        b.cmd_str(&["CONFIG", "SET", "busy-reply-threshold", "100"]),
        b"+OK\r\n"
    );
    let mut a = s.raw();
    a.send(&encode_cmd(&[
        b"EVAL",
        b"local i = 0 while true do i = i + 1 end",
        b"0",
    ]));
    wait_busy(&mut b);
    let busy = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
    assert_eq!(b.cmd_str(&["PING"]), busy);
    assert_eq!(b.cmd_str(&["XADD", "s", "1-1", "f", "v"]), busy);
    let mut fresh = s.raw();
    assert_eq!(fresh.cmd_str(&["PING"]), busy);
    assert_eq!(b.cmd_str(&["FUNCTION", "KILL"]), busy);
    assert_eq!(b.cmd_str(&["SCRIPT", "KILL"]), b"+OK\r\n");
    assert!(readable(&mut a, 5), "the killed script never answered");
    let reply = String::from_utf8_lossy(&last()).into_owned();
    assert!(
        reply.starts_with("-ERR Script killed by user with SCRIPT KILL... script: ")
            && reply.ends_with(", on @user_script:1.\r\n"),
        "{reply}"
    );
    assert_eq!(b.cmd_str(&["PING"]), b"+PONG\r\n");
    assert_eq!(a.cmd_str(&["PING"]), b"+PONG\r\n");
    assert_eq!(b.cmd_str(&["XLEN", "s"]), b":0\r\n");
    assert_eq!(
        b.cmd_str(&["SCRIPT", "KILL"]),
        b"-NOTBUSY No scripts in execution right now.\r\n"
    );
}

#[test]
fn an_unkillable_script_leaves_nothing_after_shutdown_nosave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = ["--appendonly", "yes", "--appendfsync", "always"];
    let node = Node::start(dir.path(), &args);
    let mut b = node.raw();
    b.cmd_str(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    assert_eq!(
        b.cmd_str(&["XADD", "before", "1-1", "f", "v"]),
        b"$3\r\n1-1\r\n"
    );
    let mut a = node.raw();
    a.send(&encode_cmd(&[
        b"EVAL",
        b"redis.call('XADD', KEYS[1], '1-1', 'f', 'v') redis.call('XADD', KEYS[2], '2-1', 'f', 'v') while true do end",
        b"2",
        b"half",
        b"before",
    ]));
    wait_busy(&mut b);
    assert!(
        String::from_utf8_lossy(&b.cmd_str(&["SCRIPT", "KILL"])).starts_with("-UNKILLABLE "),
        "a script that wrote must not be killable"
    );
    assert!(String::from_utf8_lossy(&b.cmd_str(&["SHUTDOWN"])).starts_with("-BUSY "));
    b.send(&encode_cmd(&[b"SHUTDOWN", b"NOSAVE"]));
    let deadline = Instant::now() + Duration::from_secs(10);
    while Raw::try_connect(node.port).is_ok() {
        assert!(
            Instant::now() < deadline,
            "streamd did not exit on SHUTDOWN NOSAVE"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(node);
    let node = Node::start(dir.path(), &args);
    let mut c = node.raw();
    assert_eq!(c.cmd_str(&["XLEN", "half"]), b":0\r\n");
    assert_eq!(c.cmd_str(&["XLEN", "before"]), b":1\r\n");
}

#[test]
fn a_script_write_wakes_blocked_readers_after_the_script() {
    let s = start_server();
    let (mut a, mut b) = (s.raw(), s.raw());
    a.send(&encode_cmd(&[
        b"XREAD", b"BLOCK", b"5000", b"STREAMS", b"w", b"$",
    ]));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !c(&mut b, "INFO clients").contains("blocked_clients:1") {
        assert!(Instant::now() < deadline, "the reader never blocked");
        std::thread::sleep(Duration::from_millis(20));
    }
    let lua = "redis.call('XADD', KEYS[1], '1-1', 'f', 'a') redis.call('XADD', KEYS[1], '2-1', 'f', 'b') return redis.call('XLEN', KEYS[1])";
    assert_eq!(b.cmd_str(&eval(lua, &["w"], &[])), b":2\r\n");
    // `$` resolved before the script: both of its entries are served together.
    let reply = a.read_reply();
    assert!(
        escape(&reply).contains("1-1") && escape(&reply).contains("2-1"),
        "{}",
        escape(&reply)
    );
    // A script's write aborts a transaction watching the key.
    assert_eq!(a.cmd_str(&["WATCH", "w"]), b"+OK\r\n");
    b.cmd_str(&eval(
        "return redis.call('XADD', KEYS[1], '3-1', 'f', 'c')",
        &["w"],
        &[],
    ));
    a.cmd_str(&["MULTI"]);
    a.cmd_str(&["XLEN", "w"]);
    assert_eq!(a.cmd_str(&["EXEC"]), b"*-1\r\n");
}

#[test]
fn functions_and_script_writes_survive_restarts_but_the_cache_does_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = ["--appendonly", "yes", "--appendfsync", "always"];
    let node = Node::start(dir.path(), &args);
    let mut r = node.raw();
    assert_eq!(r.cmd_str(&["FUNCTION", "LOAD", LIB]), b"$4\r\nqlib\r\n");
    r.cmd_str(&["FCALL", "enqueue", "1", "q", "1-1", "a"]);
    let auto = r.cmd_str(&eval(
        "return redis.call('XADD', KEYS[1], '*', 'f', 'v')",
        &["auto"],
        &[],
    ));
    let loaded = r.cmd_str(&["SCRIPT", "LOAD", "return 'cached'"]);
    let sha = String::from_utf8_lossy(&loaded[5..45]).into_owned();
    let before = (
        r.cmd_str(&["FUNCTION", "LIST", "WITHCODE"]),
        r.cmd_str(&["XRANGE", "q", "-", "+"]),
        r.cmd_str(&["XRANGE", "auto", "-", "+"]),
    );
    assert!(escape(&before.2).contains(&escape(&auto[5..auto.len() - 2])));
    node.stop();
    let node = Node::start(dir.path(), &args);
    let mut r = node.raw();
    let after = (
        r.cmd_str(&["FUNCTION", "LIST", "WITHCODE"]),
        r.cmd_str(&["XRANGE", "q", "-", "+"]),
        r.cmd_str(&["XRANGE", "auto", "-", "+"]),
    );
    assert_eq!(before, after);
    assert_eq!(r.cmd_str(&["SCRIPT", "EXISTS", &sha]), b"*1\r\n:0\r\n");
    // A rewrite keeps the libraries too (they are written as FUNCTION LOAD records).
    assert_eq!(r.cmd_str(&["BGREWRITEAOF"])[0], b'+');
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"])).into_owned();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the rewrite never ended:\n{info}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    node.stop();
    let node = Node::start(dir.path(), &args);
    let mut r = node.raw();
    assert_eq!(r.cmd_str(&["FCALL_RO", "depth", "1", "q"]), b":1\r\n");
}
