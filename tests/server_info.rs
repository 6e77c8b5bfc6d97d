//! INFO: `redis_version` and HELLO's `version` follow `compat-version`, and a blocked
//! command is counted once in `INFO commandstats`, as Redis counts it (compared with
//! Debian's redis-server where it is installed). COMMAND tells the truth about the
//! table: every command listed dispatches, every command that dispatches is listed
//! (the scripting family included), with Redis's groups, and `compat-version` hides
//! from COMMAND what it hides from the dispatcher.

mod common;

use common::differential::{V, differential, exact, parse};
use common::{
    Raw, encode_cmd, info_field, redis_server, redis_server_with, send, start_server,
    start_server_with, wait_blocked,
};

/// `calls=N` of `cmdstat_<name>`, 0 when the command has no line.
fn calls(raw: &mut Raw, name: &str) -> u64 {
    info_field(raw, "commandstats", &format!("cmdstat_{name}"))
        .and_then(|v| {
            v.split(',')
                .find_map(|kv| kv.strip_prefix("calls=").map(str::to_string))
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Blocks one XREADGROUP until an XADD serves it and one XREAD until it times out;
/// returns (xreadgroup calls, xread calls, total_commands_processed delta).
fn blocked_counts(port: u16) -> (u64, u64, u64) {
    let mut c = Raw::connect(port);
    c.cmd_str(&["XGROUP", "CREATE", "cs", "g", "$", "MKSTREAM"]);
    c.cmd_str(&["CONFIG", "RESETSTAT"]);
    let mut reader = Raw::connect(port);
    send(
        &mut reader,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "BLOCK",
            "5000",
            "STREAMS",
            "cs",
            ">",
        ],
    );
    wait_blocked(&mut c, 1);
    c.cmd_str(&["XADD", "cs", "*", "f", "v"]);
    assert!(reader.read_reply().starts_with(b"*1\r\n"));
    let mut timed_out = Raw::connect(port);
    let reply = timed_out.cmd_str(&["XREAD", "BLOCK", "50", "STREAMS", "nokey", "$"]);
    assert_eq!(reply, b"*-1\r\n");
    let before = info_field(&mut c, "stats", "total_commands_processed")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let after = info_field(&mut c, "stats", "total_commands_processed")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    (
        calls(&mut c, "xreadgroup"),
        calls(&mut c, "xread"),
        after - before,
    )
}

#[test]
fn a_blocked_command_counts_one_call_when_served_or_timed_out() {
    let server = start_server();
    let (xreadgroup, xread, info_step) = blocked_counts(server.port);
    assert_eq!((xreadgroup, xread), (1, 1));
    assert_eq!(info_step, 1, "each INFO counts once");
}

#[test]
fn blocked_command_counts_match_redis() {
    let redis = redis_server();
    let server = start_server();
    assert_eq!(blocked_counts(server.port), blocked_counts(redis.port));
}

#[test]
fn redis_version_follows_compat_version() {
    let server = start_server();
    let mut c = server.raw();
    assert_eq!(
        info_field(&mut c, "server", "redis_version").as_deref(),
        Some(streamd::core::REDIS_VERSION)
    );
    assert_eq!(streamd::core::REDIS_VERSION, "8.10.0");
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "compat-version", "7.4"]),
        b"+OK\r\n"
    );
    assert_eq!(
        info_field(&mut c, "server", "redis_version").as_deref(),
        Some("7.4.0")
    );
    let hello = c.cmd_str(&["HELLO", "2"]);
    let text = String::from_utf8_lossy(&hello);
    assert!(text.contains("$7\r\nversion\r\n$5\r\n7.4.0\r\n"), "{text}");
}

/// The bulk strings of an array reply (`COMMAND LIST`).
fn names(reply: &[u8]) -> Vec<String> {
    let (v, _) = parse(reply, 0);
    let V::Agg(_, Some(items)) = v else {
        panic!("not an array: {}", String::from_utf8_lossy(reply));
    };
    items
        .into_iter()
        .map(|i| match i {
            V::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
            other => panic!("not a bulk: {other:?}"),
        })
        .collect()
}

/// `COMMAND COUNT` as a number.
fn count(c: &mut Raw) -> usize {
    let reply = c.cmd_str(&["COMMAND", "COUNT"]);
    let text = String::from_utf8_lossy(&reply);
    text.trim_start_matches(':').trim_end().parse().unwrap()
}

/// The commands that Redis's scripting group has, and streamd runs.
const SCRIPTING: &[&str] = &[
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "script",
    "function",
];

#[test]
fn command_lists_exactly_the_commands_that_dispatch() {
    let server = start_server();
    let mut c = server.raw();
    let listed = names(&c.cmd_str(&["COMMAND", "LIST"]));
    // LIST names each container's subcommands after it (`xinfo`, `xinfo|stream`...), as
    // Redis 7.0+ does; COUNT and COMMAND count the commands themselves.
    let top = listed.iter().filter(|n| !n.contains('|')).count();
    assert!(listed.iter().any(|n| n == "xinfo|stream"));
    assert!(listed.iter().any(|n| n == "config|set"));
    assert_eq!(count(&mut c), top);
    let (bare, _) = parse(&c.cmd_str(&["COMMAND"]), 0);
    let V::Agg(_, Some(bare)) = bare else {
        panic!("COMMAND is an array")
    };
    assert_eq!(bare.len(), top);
    for name in SCRIPTING
        .iter()
        .chain(&["get", "xadd", "zadd", "wait", "command"])
    {
        assert!(listed.iter().any(|n| n == name), "{name} not listed");
    }
    // Each listed name dispatches: whatever its arguments make of it, it is never an
    // unknown command. (Only commands that cannot change or stop this server run with
    // no arguments; the others run with one that is wrong for them, or not at all.)
    let unknown = |reply: &[u8]| String::from_utf8_lossy(reply).starts_with("-ERR unknown command");
    let harmless = |n: &str| {
        !matches!(
            n,
            "shutdown"
                | "monitor"
                | "subscribe"
                | "psubscribe"
                | "ssubscribe"
                | "sync"
                | "psync"
                | "multi"
                | "quit"
                | "reset"
                | "debug"
                | "flushall"
                | "flushdb"
                | "failover"
                | "replicaof"
                | "slaveof"
                | "save"
                | "bgsave"
                | "bgrewriteaof"
                | "client"
                | "cluster"
                | "readonly"
                | "readwrite"
                | "asking"
                | "hello"
                | "auth"
                | "select"
                | "swapdb"
                | "wait"
                | "waitaof"
        )
    };
    for name in &listed {
        let argv: Vec<&str> = name.split('|').collect();
        if !harmless(argv[0]) {
            continue;
        }
        let mut fresh = server.raw();
        let reply = fresh.cmd_str(&argv);
        assert!(
            !unknown(&reply)
                && !String::from_utf8_lossy(&reply).starts_with("-ERR unknown subcommand"),
            "{name}: {}",
            String::from_utf8_lossy(&reply)
        );
    }
    // And the other way: a name that is not listed is unknown.
    assert!(unknown(&c.cmd_str(&["NOSUCHCOMMAND"])));
    // Each of them is documented, under one of Redis's groups.
    for name in &listed {
        let docs = String::from_utf8_lossy(&c.cmd_str(&["COMMAND", "DOCS", name])).into_owned();
        assert!(docs.contains("$5\r\ngroup\r\n"), "{name}: {docs}");
    }
}

#[test]
fn command_shows_the_scripting_family_as_redis_does() {
    let server = start_server();
    let mut c = server.raw();
    let listed = names(&c.cmd_str(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "scripting"]));
    // The containers carry no category, their subcommands do: Redis 7.0's list exactly.
    let want = "eval eval_ro evalsha evalsha_ro fcall fcall_ro function|delete function|dump \
        function|flush function|help function|kill function|list function|load \
        function|restore function|stats script|debug script|exists script|flush \
        script|help script|kill script|load";
    let mut got = listed.clone();
    got.sort();
    assert_eq!(
        got.join(" "),
        want.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    let listed = names(&c.cmd_str(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "eval*"]));
    assert_eq!(
        names(&c.cmd_str(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "script*"])).len(),
        7,
        "script and its six subcommands"
    );
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert!(names(&c.cmd_str(&["COMMAND", "LIST", "FILTERBY", "MODULE", "x"])).is_empty());
    // Movable keys through numkeys.
    assert_eq!(
        c.cmd_str(&["COMMAND", "GETKEYS", "EVAL", "return 1", "2", "a", "b", "c"]),
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    assert_eq!(
        c.cmd_str(&["COMMAND", "GETKEYS", "FCALL_RO", "f", "1", "k"]),
        b"*1\r\n$1\r\nk\r\n"
    );
    let docs =
        String::from_utf8_lossy(&c.cmd_str(&["COMMAND", "DOCS", "fcall", "script"])).into_owned();
    for piece in [
        "Invokes a function.",
        "7.0.0",
        "scripting",
        "script|load",
        "2.6.0",
    ] {
        assert!(docs.contains(piece), "{piece}: {docs}");
    }
    let docs =
        String::from_utf8_lossy(&c.cmd_str(&["COMMAND", "DOCS", "zadd", "wait", "zrangestore"]))
            .into_owned();
    assert!(docs.contains("$10\r\nsorted-set\r\n"), "{docs}");
    assert!(docs.contains("$7\r\ngeneric\r\n"), "{docs}");
    assert!(docs.contains("$5\r\n6.2.0\r\n"), "{docs}");
    assert!(!docs.contains("sorted_set"), "{docs}");
}

#[test]
fn command_info_of_the_scripting_family_matches_redis() {
    let redis = redis_server();
    let server = start_server();
    let (mut theirs, mut ours) = (redis.raw(), server.raw());
    // Redis 7.0 is the reference; its EVAL family is 8.10's. Everything up to the tips
    // (name, arity, flags, key positions, ACL categories), and the key specs of the
    // commands without keys.
    for name in [
        "eval",
        "evalsha",
        "eval_ro",
        "evalsha_ro",
        "fcall",
        "fcall_ro",
        "script|kill",
        "script|load",
        "script|help",
        "function|load",
        "function|stats",
        "function|kill",
        "function|restore",
    ] {
        let head = |reply: Vec<u8>| {
            let (v, _) = parse(&reply, 0);
            let V::Agg(_, Some(mut entries)) = v else {
                panic!()
            };
            let V::Agg(_, Some(fields)) = entries.remove(0) else {
                panic!()
            };
            let mut fields = fields;
            // The flags and categories are sets: compared sorted.
            for i in [2, 6] {
                if let V::Agg(_, Some(items)) = &mut fields[i] {
                    items.sort();
                }
            }
            fields.truncate(7);
            fields
        };
        let want = head(theirs.cmd_str(&["COMMAND", "INFO", name]));
        let got = head(ours.cmd_str(&["COMMAND", "INFO", name]));
        assert_eq!(got, want, "{name}");
    }
    // The scripting family's docs: since and group as Redis 7.0 has them (its summaries
    // are the older texts that Redis 7.2 rewrote; 8.10's are checked in
    // `command_shows_the_scripting_family_as_redis_does`).
    for name in ["eval", "fcall_ro", "script", "function"] {
        let pick = |reply: Vec<u8>| {
            let text = String::from_utf8_lossy(&reply).into_owned();
            ["since", "group"]
                .iter()
                .map(|f| {
                    let at = text.find(&format!("{f}\r\n")).unwrap() + f.len() + 2;
                    text[at..].split("\r\n").nth(1).unwrap().to_string()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            pick(ours.cmd_str(&["COMMAND", "DOCS", name])),
            pick(theirs.cmd_str(&["COMMAND", "DOCS", name])),
            "{name}"
        );
    }
}

#[test]
fn compat_version_hides_newer_commands_from_command_too() {
    let server = start_server_with(&["--compat-version", "7.4"]);
    let mut c = server.raw();
    let listed = names(&c.cmd_str(&["COMMAND", "LIST"]));
    assert_eq!(
        count(&mut c),
        listed.iter().filter(|n| !n.contains('|')).count()
    );
    for newer in ["xackdel", "xdelex", "xnack", "xcfgset", "xidmprecord"] {
        assert!(
            !listed.iter().any(|n| n == newer),
            "{newer} listed under 7.4"
        );
        assert_eq!(c.cmd_str(&["COMMAND", "INFO", newer]), b"*1\r\n*-1\r\n");
        assert_eq!(c.cmd_str(&["COMMAND", "DOCS", newer]), b"*0\r\n");
        assert!(
            String::from_utf8_lossy(&c.cmd_str(&["COMMAND", "GETKEYS", newer, "k", "a", "b", "c"]))
                .starts_with("-ERR Invalid command specified")
        );
    }
    for name in SCRIPTING {
        assert!(
            listed.iter().any(|n| n == name),
            "{name} not listed under 7.4"
        );
    }
    let all = c.cmd_str(&["COMMAND", "LIST"]);
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "compat-version", "8.10"]),
        b"+OK\r\n"
    );
    let older = names(&all);
    let mut added: Vec<String> = names(&c.cmd_str(&["COMMAND", "LIST"]))
        .into_iter()
        .filter(|n| !older.contains(n))
        .collect();
    added.sort();
    // What 8.10 adds is exactly what is newer than 7.4, by each command's own `since`.
    for name in ["xackdel", "xcfgset", "xdelex", "xidmprecord", "xnack"] {
        assert!(
            added.iter().any(|n| n == name),
            "{name} not added: {added:?}"
        );
    }
    for name in &added {
        let since = docs_since(&mut c, name);
        assert!(
            version(&since) > (7, 4, 0),
            "{name} since {since}, hidden under 7.4"
        );
    }
    for name in older.iter().filter(|n| !n.contains('|')) {
        let since = docs_since(&mut c, name);
        assert!(
            version(&since) <= (7, 4, 0),
            "{name} since {since}, shown under 7.4"
        );
    }
    let top = |v: &[String]| v.iter().filter(|n| !n.contains('|')).count();
    assert_eq!(count(&mut c), top(&older) + top(&added));
}

/// The `since` of `name` in its `COMMAND DOCS` reply (RESP2).
fn docs_since(c: &mut Raw, name: &str) -> String {
    let reply = c.cmd_str(&["COMMAND", "DOCS", name]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    let at = text
        .find("\r\nsince\r\n")
        .unwrap_or_else(|| panic!("{name}: no since in {text}"));
    text[at + 9..]
        .split("\r\n")
        .nth(1)
        .unwrap_or("")
        .to_string()
}

/// A `major.minor.patch` text as a tuple to compare.
fn version(text: &str) -> (u32, u32, u32) {
    let mut parts = text.split('.').map(|p| p.parse().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

/// The text of a CLIENT INFO / CLIENT LIST bulk reply (RESP2).
fn bulk_text(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply).into_owned();
    let (_, body) = text.split_once("\r\n").expect("bulk header");
    body.trim_end_matches("\r\n").trim_end().to_string()
}

/// The field names of a CLIENT INFO line, in order.
fn field_names(line: &str) -> Vec<String> {
    line.split(' ')
        .map(|kv| kv.split_once('=').map_or(kv, |(k, _)| k).to_string())
        .collect()
}

/// The connection's CLIENT ID, as text.
fn client_id(r: &mut Raw) -> String {
    String::from_utf8_lossy(&r.cmd_str(&["CLIENT", "ID"]))
        .trim_start_matches(':')
        .trim()
        .to_string()
}

/// `field=` of the line of client `id` in a CLIENT LIST / CLIENT INFO text.
fn client_field(text: &str, id: &str, field: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("id={id} ")))
        .unwrap_or_else(|| panic!("no client {id} in {text}"));
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
        .unwrap_or_else(|| panic!("no {field} in {line}"))
        .parse()
        .expect("a number")
}

/// Redis 8.10's CLIENT INFO fields in `catClientInfoString`'s order: 8.0 appended
/// io-thread and the tot-* counters after lib-ver, 8.8 the omem split and the read and
/// pipeline counters. compat-version hides what the older version did not print.
#[test]
fn client_info_fields_follow_redis_order_and_compat_version() {
    let redis_8_10 = "id addr laddr fd name age idle flags db sub psub ssub multi watch qbuf \
        qbuf-free argv-mem multi-mem rbs rbp obl oll omem omem-shared omem-unshared tot-mem \
        events cmd user redir resp lib-name lib-ver io-thread tot-net-in tot-net-out tot-cmds \
        read-events avg-pipeline-len-sum avg-pipeline-len-cnt";
    let want = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let s = start_server();
    let mut r = s.raw();
    let info = bulk_text(&r.cmd_str(&["CLIENT", "INFO"]));
    assert_eq!(field_names(&info), want(redis_8_10), "{info}");
    assert!(info.contains(" io-thread=0 "), "{info}");
    let list = bulk_text(&r.cmd_str(&["CLIENT", "LIST"]));
    assert_eq!(field_names(&list), want(redis_8_10), "{list}");

    let s = start_server_with(&["--compat-version", "8.6"]);
    let info = bulk_text(&s.raw().cmd_str(&["CLIENT", "INFO"]));
    let redis_8_0 = redis_8_10
        .replace(" omem-shared omem-unshared", "")
        .replace(" read-events avg-pipeline-len-sum avg-pipeline-len-cnt", "");
    assert_eq!(field_names(&info), want(&redis_8_0), "{info}");

    let s = start_server_with(&["--compat-version", "7.4"]);
    let info = bulk_text(&s.raw().cmd_str(&["CLIENT", "INFO"]));
    let redis_7_4 = redis_8_0.replace(" io-thread tot-net-in tot-net-out tot-cmds", "");
    assert_eq!(field_names(&info), want(&redis_7_4), "{info}");
}

/// Redis's introspection.tcl "CLIENT INFO input/output/cmds-processed stats": a second
/// CLIENT INFO shows its own 26 request bytes, the first one's reply, one more command.
#[test]
fn client_info_counts_bytes_and_commands() {
    let s = start_server();
    let mut r = s.raw();
    let id = client_id(&mut r);
    let first = r.cmd_str(&["CLIENT", "INFO"]);
    let info1 = bulk_text(&first);
    let info2 = bulk_text(&r.cmd_str(&["CLIENT", "INFO"]));
    let f = |t: &str, k: &str| client_field(t, &id, k);
    assert_eq!(f(&info2, "tot-net-in"), f(&info1, "tot-net-in") + 26);
    assert_eq!(
        f(&info2, "tot-net-out"),
        f(&info1, "tot-net-out") + first.len() as u64
    );
    assert_eq!(f(&info2, "tot-cmds"), f(&info1, "tot-cmds") + 1);
    // HELLO-less connection: CLIENT ID and one CLIENT INFO before this one.
    assert_eq!(f(&info2, "tot-cmds"), 2);
    assert_eq!(f(&info2, "read-events"), 3);
    // The batch running this CLIENT INFO is counted once it is done.
    assert_eq!(
        (
            f(&info2, "avg-pipeline-len-sum"),
            f(&info2, "avg-pipeline-len-cnt")
        ),
        (2, 2)
    );
}

/// Redis's introspection.tcl "CLIENT LIST"/"CLIENT INFO": `qbuf` is the read being
/// processed (26 bytes of `CLIENT INFO`), `argv-mem` its arguments; a pipelined read
/// counts every command in it; a partial command left over shows between reads; the
/// queued commands of a MULTI show in `multi-mem`. Each number is Redis 7.0's for the same
/// requests.
#[test]
fn client_info_shows_the_query_buffer_and_queued_commands() {
    let s = start_server();
    let mut r = s.raw();
    let id = client_id(&mut r);
    let f = |t: &str, k: &str| client_field(t, &id, k);
    let info = bulk_text(&r.cmd_str(&["CLIENT", "INFO"]));
    assert_eq!(f(&info, "qbuf"), 26, "{info}");
    assert_eq!(f(&info, "argv-mem"), 10, "{info}");
    assert_eq!(f(&info, "multi-mem"), 0, "{info}");
    // Two commands in one read: both are in the buffer while the second runs.
    let ping = encode_cmd(&[b"PING"]);
    let mut two = ping.clone();
    two.extend(encode_cmd(&[b"CLIENT", b"INFO"]));
    r.send(&two);
    r.read_reply();
    let info = bulk_text(&r.read_reply());
    assert_eq!(f(&info, "qbuf"), (ping.len() + 26) as u64, "{info}");
    // A partial command: its complete arguments have moved out of the buffer into the
    // argument list, as in Redis; another client sees them there.
    r.send(b"*2\r\n$3\r\nGET\r\n");
    let mut other = s.raw();
    let mut seen = (0, 0);
    for _ in 0..100 {
        let list = bulk_text(&other.cmd_str(&["CLIENT", "LIST"]));
        seen = (
            client_field(&list, &id, "qbuf"),
            client_field(&list, &id, "argv-mem"),
        );
        if seen.1 == 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(seen, (0, 3));
    r.send(b"$1\r\nk\r\n");
    assert_eq!(r.read_reply(), b"$-1\r\n");
    r.cmd_str(&["MULTI"]);
    r.cmd_str(&["SET", "key", "value"]);
    let list = bulk_text(&other.cmd_str(&["CLIENT", "LIST"]));
    assert_eq!(client_field(&list, &id, "multi-mem"), 35, "{list}");
    assert_eq!(client_field(&list, &id, "qbuf"), 0, "{list}");
}

/// Redis's "CLIENT INFO input/output/cmds-processed stats for blocking command": the
/// blocked BLPOP's request is counted in, its reply and the command only once served.
#[test]
fn a_blocked_command_counts_its_reply_and_itself_when_served() {
    let s = start_server();
    let mut r = s.raw();
    let mut rd = s.raw();
    let id = String::from_utf8_lossy(&rd.cmd_str(&["CLIENT", "ID"]))
        .trim_start_matches(':')
        .trim()
        .to_string();
    let list = |r: &mut Raw| bulk_text(&r.cmd_str(&["CLIENT", "LIST"]));
    let l1 = list(&mut r);
    send(&mut rd, &["BLPOP", "mylist", "0"]);
    wait_blocked(&mut r, 1);
    let l2 = list(&mut r);
    let f = |t: &str, k: &str| client_field(t, &id, k);
    assert_eq!(f(&l2, "tot-net-in"), f(&l1, "tot-net-in") + 34);
    assert_eq!(f(&l2, "tot-net-out"), f(&l1, "tot-net-out"));
    assert_eq!(f(&l2, "tot-cmds"), f(&l1, "tot-cmds"));
    r.cmd_str(&["LPUSH", "mylist", "a"]);
    assert_eq!(
        rd.read_reply(),
        b"*2\r\n$6\r\nmylist\r\n$1\r\na\r\n".to_vec()
    );
    let l3 = list(&mut r);
    assert_eq!(f(&l3, "tot-net-in"), f(&l2, "tot-net-in"));
    assert_eq!(f(&l3, "tot-net-out"), f(&l2, "tot-net-out") + 23);
    assert_eq!(f(&l3, "tot-cmds"), f(&l2, "tot-cmds") + 1);
}

/// Commands whose key specs in `COMMAND INFO` are not Redis's yet: their keys come from
/// `numkeys` or a keyword (EVAL, ZUNION, LMPOP, XREAD, MIGRATE's KEYS, SORT's STORE), which
/// the table computes by name instead of describing as keynum/keyword specs, or their spec
/// carries a note or the `variable_flags`/`not_key` flags (SET, GETEX, XADD, BITFIELD, the sharded
/// Pub/Sub commands). Key positions (`COMMAND GETKEYS`) are right for all of them.
const KEY_SPECS_NOT_YET: &[&str] = &[
    "bitfield",
    "blmpop",
    "bzmpop",
    "eval",
    "eval_ro",
    "evalsha",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
    "getex",
    "lmpop",
    "migrate",
    "set",
    "sintercard",
    "sort",
    "sort_ro",
    "spublish",
    "ssubscribe",
    "sunsubscribe",
    "xadd",
    "xread",
    "xreadgroup",
    "zdiff",
    "zdiffstore",
    "zinter",
    "zintercard",
    "zinterstore",
    "zmpop",
    "zunion",
    "zunionstore",
];

#[test]
fn command_info_matches_redis_7_0() {
    let (server, redis) = (start_server(), redis_server());
    let (mut c, mut r) = (server.raw(), redis.raw());
    let theirs = names(&r.cmd_str(&["COMMAND", "LIST"]));
    let info = |c: &mut Raw, name: &str| -> Vec<V> {
        let (v, _) = parse(&c.cmd_str(&["COMMAND", "INFO", name]), 0);
        match v {
            V::Agg(_, Some(mut one)) => match one.remove(0) {
                V::Agg(_, Some(info)) => info,
                other => panic!("{name}: {other:?}"),
            },
            other => panic!("{name}: {other:?}"),
        }
    };
    let (mut compared, mut with_tips) = (0, 0);
    for name in names(&c.cmd_str(&["COMMAND", "LIST"])) {
        if !theirs.contains(&name) {
            continue;
        }
        let (ours, want) = (info(&mut c, &name), info(&mut r, &name));
        // 0 name, 1 arity, 2 flags, 3-5 first/last/step, 6 ACL categories, 7 tips, 8 key
        // specs; the subcommands (9) are compared each under its own name.
        for (i, what) in [
            "name",
            "arity",
            "flags",
            "first key",
            "last key",
            "step",
            "categories",
            "tips",
            "key specs",
        ]
        .iter()
        .enumerate()
        {
            let newer = match i {
                // Redis 7.2 gave ZRANK and ZREVRANK the WITHSCORE option; later Redis gives
                // COMMAND GETKEYS arity -3 (a command without arguments; 7.0 said -4).
                1 => matches!(
                    name.as_str(),
                    "zrank" | "zrevrank" | "command|getkeys" | "command|getkeysandflags"
                ),
                // CLUSTER SLOTS and SHARDS answer while loading in later Redis (`loading`).
                2 => matches!(name.as_str(), "cluster|slots" | "cluster|shards"),
                // The sharded channel is a "key" (flagged not_key) in Redis's table.
                3..=5 => matches!(name.as_str(), "spublish" | "ssubscribe" | "sunsubscribe"),
                8 => KEY_SPECS_NOT_YET.contains(&name.as_str()),
                _ => false,
            };
            if newer {
                continue;
            }
            assert_eq!(ours[i], want[i], "{name}: {what}");
        }
        compared += 1;
        with_tips += usize::from(matches!(&want[7], V::Agg(_, Some(t)) if !t.is_empty()));
    }
    assert!(
        compared > 300 && with_tips > 80,
        "{compared} compared, {with_tips} with tips"
    );
    // The exceptions above still differ (else they belong in the comparison).
    for name in KEY_SPECS_NOT_YET {
        assert_ne!(
            info(&mut c, name)[8],
            info(&mut r, name)[8],
            "{name}: key specs now match"
        );
    }
}

/// COMMAND GETKEYS's answers for commands without keys, wrong arities and arguments
/// naming no key (EVAL with 0 keys is an empty list: `no_mandatory_keys`), compared with
/// Redis 7.0 byte for byte.
#[test]
fn command_getkeys_edge_cases_match_redis() {
    use common::differential::{differential, exact};
    let s = start_server();
    let r = redis_server();
    let cases = exact(&[
        &["COMMAND", "GETKEYS", "EVAL", "return 1", "0"],
        &["COMMAND", "GETKEYS", "EVAL", "return 1", "5"],
        &["COMMAND", "GETKEYS", "EVAL_RO", "return 1", "0"],
        &["COMMAND", "GETKEYS", "FCALL", "f", "0"],
        &["COMMAND", "GETKEYS", "PING", "x"],
        &["COMMAND", "GETKEYS", "ECHO", "a"],
        &["COMMAND", "GETKEYS", "XREAD", "COUNT", "1", "STREAMS"],
        &["COMMAND", "GETKEYS", "ZUNIONSTORE", "d", "0"],
        &["COMMAND", "GETKEYS", "SORT", "k"],
        &[
            "COMMAND", "GETKEYS", "SORT", "abc", "STORE", "invalid", "STORE", "stillbad", "STORE",
            "def",
        ],
        &[
            "COMMAND", "GETKEYS", "SORT", "k", "STORE", "x", "GET", "y", "BY", "z", "STORE", "w",
        ],
        &[
            "COMMAND", "GETKEYS", "SORT", "k", "LIMIT", "0", "1", "STORE",
        ],
        &["COMMAND", "GETKEYS", "SORT", "k", "STORE", "get", "x"],
        &[
            "COMMAND",
            "GETKEYSANDFLAGS",
            "SORT",
            "k",
            "STORE",
            "a",
            "STORE",
            "b",
        ],
        &["COMMAND", "GETKEYS", "SORT_RO", "k", "STORE", "x"],
        &[
            "COMMAND", "GETKEYS", "MIGRATE", "h", "p", "k", "0", "1", "KEYS",
        ],
        &["COMMAND", "GETKEYS", "NOSUCH", "k"],
        &["COMMAND", "GETKEYSANDFLAGS", "EVAL", "return 1", "0"],
        &["COMMAND", "GETKEYSANDFLAGS", "PING", "x"],
    ]);
    for proto in [2, 3] {
        let bad = differential(s.port, r.port, proto, &cases);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

/// DEBUG is one command in Redis 7.0, not a container: COMMAND INFO and DOCS show no
/// subcommands, an unknown or miscounted subcommand gets the same error, and INFO
/// commandstats counts `cmdstat_debug` (its errors as failed calls).
#[test]
fn debug_is_one_command_as_in_redis() {
    let s = start_server();
    let r = redis_server_with(&["--enable-debug-command", "local"]);
    let cases = exact(&[
        &["COMMAND", "INFO", "debug"][..],
        &["COMMAND", "DOCS", "debug"],
        &["DEBUG", "nosuch"],
        &["DEBUG", "sleep"],
        &["DEBUG", "SLEEP", "0", "1"],
        &["DEBUG", "log"],
        &["DEBUG", "help", "x"],
        &["DEBUG", "SLEEP", "0"],
        &["DEBUG", "log", "from the differential test"],
        &["COMMAND", "GETKEYS", "DEBUG", "SLEEP", "0"],
    ]);
    let bad = differential(s.port, r.port, 2, &cases);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let mut c = s.raw();
    let help = String::from_utf8_lossy(&c.cmd_str(&["DEBUG", "HELP"])).into_owned();
    assert!(
        help.starts_with("*")
            && help.contains("+SLEEP <seconds>\r\n")
            && help.ends_with("+HELP\r\n+    Print this help.\r\n"),
        "{help}"
    );
    let stats = String::from_utf8_lossy(&c.cmd_str(&["INFO", "commandstats"])).into_owned();
    let debug_rows: Vec<&str> = stats
        .lines()
        .filter(|l| l.starts_with("cmdstat_debug"))
        .collect();
    assert_eq!(debug_rows.len(), 1, "{stats}");
    assert!(
        debug_rows[0].starts_with("cmdstat_debug:calls=8,")
            && debug_rows[0].ends_with("rejected_calls=0,failed_calls=5"),
        "{}",
        debug_rows[0]
    );
}
