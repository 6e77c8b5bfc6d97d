//! Keyspace notifications (`notify-keyspace-events`), differential against Debian's
//! redis-server 7.0: the same fixed command sequence goes to both servers while a RESP2 and
//! a RESP3 client `PSUBSCRIBE __key*__:*`, and every notification frame each subscriber gets
//! is compared byte for byte, step by step (each step ends with `PING <token>` on both
//! subscribers, so everything received before the PING's reply belongs to the step: no
//! timing windows). The replies to the commands themselves are not compared here
//! (tests/differential.rs does that).
//!
//! The commands Redis 7.0 does not have (XACKDEL, XDELEX, XNACK, XADD IDMP) are checked
//! against what Redis 8.x emits for them (reference §3.6), and active expiry, which no
//! command triggers, against its one `expired` event.

mod common;

use common::{Raw, encode_cmd, escape, redis_server, start_server};
use std::time::{Duration, Instant};

/// One action of a step, sent on the acting connection.
#[derive(Clone, Copy)]
enum Act {
    /// A command, words split on spaces; its reply is read and ignored.
    Cmd(&'static str),
    /// Sleep this many milliseconds (an expiry that has to fire).
    Sleep(u64),
    /// DUMP `ks:s`, RESTORE it as `ks:restored`, then again with REPLACE (each side
    /// restores its own payload).
    DumpRestore,
}

use Act::{Cmd, DumpRestore, Sleep};

/// The stream and keyspace sequence of `../shared/checks/pubsub` section 2, plus MOVE,
/// PERSIST, RENAMENX, another database and COPY ... DB.
const STEPS: &[&[Act]] = &[
    &[Cmd("XADD ks:s 1-1 f v1")],
    &[Cmd("XADD ks:s 2-1 f v2")],
    &[Cmd("XADD ks:s MAXLEN 2 3-1 f v3")],
    &[Cmd("XADD ks:s MAXLEN 5 4-1 f v4")],
    &[Cmd("XADD ks:s NOMKSTREAM 5-1 f v5")],
    &[Cmd("XADD ks:none NOMKSTREAM 1-1 f v")],
    &[Cmd("XADD ks:s 4-1 f dup")],
    &[Cmd("XTRIM ks:s MAXLEN 2")],
    &[Cmd("XTRIM ks:s MAXLEN 10")],
    &[Cmd("XTRIM ks:s MINID 5-1")],
    &[Cmd("XDEL ks:s 5-1")],
    &[Cmd("XDEL ks:s 99-1")],
    &[
        Cmd("XADD ks:s 6-1 f v6"),
        Cmd("XADD ks:s 7-1 f v7"),
        Cmd("XADD ks:s 8-1 f v8"),
    ],
    &[Cmd("XGROUP CREATE ks:s g1 0")],
    &[Cmd("XGROUP CREATE ks:s g1 0")],
    &[Cmd("XGROUP CREATE ks:new g2 $ MKSTREAM")],
    &[Cmd("XGROUP CREATE ks:absent g2 $")],
    &[Cmd("XGROUP CREATECONSUMER ks:s g1 alice")],
    &[Cmd("XGROUP CREATECONSUMER ks:s g1 alice")],
    &[Cmd("XREADGROUP GROUP g1 bob COUNT 2 STREAMS ks:s >")],
    &[Cmd("XREADGROUP GROUP g1 bob COUNT 10 STREAMS ks:s >")],
    &[Cmd("XREADGROUP GROUP g1 alice COUNT 10 STREAMS ks:s >")],
    &[Cmd("XCLAIM ks:s g1 carol 0 6-1")],
    &[Cmd("XCLAIM ks:s g1 carol 0 99-1")],
    &[Cmd("XAUTOCLAIM ks:s g1 dave 0 0-0 COUNT 10")],
    &[Cmd("XACK ks:s g1 6-1")],
    &[Cmd("XGROUP DELCONSUMER ks:s g1 alice")],
    &[Cmd("XGROUP DELCONSUMER ks:s g1 nobody")],
    &[Cmd("XGROUP DELCONSUMER ks:s g1 dave")],
    &[Cmd("XGROUP SETID ks:s g1 0")],
    &[Cmd("XGROUP SETID ks:s nogroup 0")],
    &[Cmd("XSETID ks:s 100-1")],
    &[Cmd("XSETID ks:s 1-1")],
    &[Cmd("XGROUP DESTROY ks:s g1")],
    &[Cmd("XGROUP DESTROY ks:s g1")],
    &[Cmd("COPY ks:s ks:copy")],
    &[Cmd("COPY ks:s ks:copy")],
    &[Cmd("COPY ks:s ks:copy REPLACE")],
    &[Cmd("COPY ks:s ks:copy5 DB 5")],
    &[Cmd("RENAME ks:copy ks:renamed")],
    &[Cmd("RENAMENX ks:renamed ks:s")],
    &[Cmd("RENAME ks:renamed ks:renamed")],
    &[Cmd("EXPIRE ks:renamed 1000")],
    &[Cmd("PERSIST ks:renamed")],
    &[Cmd("PERSIST ks:renamed")],
    &[Cmd("MOVE ks:renamed 3")],
    &[Cmd("SELECT 3"), Cmd("XADD ks:s3 1-1 f v"), Cmd("SELECT 0")],
    &[Cmd("PEXPIRE ks:new 100"), Sleep(400), Cmd("EXISTS ks:new")],
    &[DumpRestore],
    &[Cmd("DEL ks:s ks:renamed ks:restored ks:missing")],
    &[Cmd("XADD ks:t 1-1 f v"), Cmd("EXPIRE ks:t -1")],
    &[Cmd("XADD ks:u 1-1 f v"), Cmd("PEXPIREAT ks:u 1")],
    &[Cmd("FLUSHALL")],
];

/// Reads the reply of `PING <tok>` and returns every frame that arrived before it (in
/// RESP2 subscribed mode the reply is `pong <tok>`, in RESP3 the bulk `<tok>`).
fn barrier(r: &mut Raw, tok: &str) -> Vec<Vec<u8>> {
    r.send(&encode_cmd(&[b"PING", tok.as_bytes()]));
    let resp2 = encode_cmd(&[b"pong", tok.as_bytes()]);
    let resp3 = format!("${}\r\n{tok}\r\n", tok.len()).into_bytes();
    let mut frames = Vec::new();
    loop {
        let f = r.read_reply();
        if f == resp2 || f == resp3 {
            return frames;
        }
        frames.push(f);
    }
}

/// The acting connection and the two subscribers on one server.
struct Side {
    act: Raw,
    subs: [Raw; 2],
}

impl Side {
    fn open(port: u16, conf: &str) -> Side {
        let mut act = Raw::connect(port);
        act.cmd_str(&["FLUSHALL"]);
        let set = act.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", conf]);
        assert_eq!(set, b"+OK\r\n", "CONFIG SET notify-keyspace-events {conf}");
        let mut ks2 = Raw::connect(port);
        let mut ks3 = Raw::connect(port);
        ks3.hello3();
        for s in [&mut ks2, &mut ks3] {
            s.cmd_str(&["PSUBSCRIBE", "__key*__:*"]);
        }
        Side {
            act,
            subs: [ks2, ks3],
        }
    }

    /// Runs one step and returns what each subscriber received.
    fn step(&mut self, acts: &[Act], tok: &str) -> [Vec<Vec<u8>>; 2] {
        for act in acts {
            match *act {
                Cmd(line) => {
                    let words: Vec<&str> = line.split(' ').collect();
                    self.act.cmd_str(&words);
                }
                Sleep(ms) => std::thread::sleep(Duration::from_millis(ms)),
                DumpRestore => {
                    let dump = self.act.cmd_str(&["DUMP", "ks:s"]);
                    let payload = bulk_payload(&dump);
                    for extra in [None, Some(&b"REPLACE"[..])] {
                        let mut args: Vec<&[u8]> = vec![b"RESTORE", b"ks:restored", b"0", &payload];
                        args.extend(extra);
                        self.act.cmd(&args);
                    }
                }
            }
        }
        let [a, b] = &mut self.subs;
        [
            barrier(a, &format!("{tok}-2")),
            barrier(b, &format!("{tok}-3")),
        ]
    }
}

/// The bytes of a bulk string reply.
fn bulk_payload(reply: &[u8]) -> Vec<u8> {
    let nl = reply
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("a bulk reply has a header line");
    assert_eq!(reply[0], b'$', "DUMP answered {:?}", escape(reply));
    reply[nl + 2..reply.len() - 2].to_vec()
}

fn show(frames: &[Vec<u8>]) -> String {
    if frames.is_empty() {
        return "(nothing)".into();
    }
    frames
        .iter()
        .map(|f| escape(f))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs [`STEPS`] under `conf` on both servers and fails listing every step whose
/// notifications differ.
fn differential(conf: &str, steps: &[&[Act]]) {
    let redis = redis_server();
    let streamd = start_server();
    let mut s = Side::open(streamd.port, conf);
    let mut r = Side::open(redis.port, conf);
    let mut diffs = Vec::new();
    let mut seen = 0;
    for (i, acts) in steps.iter().enumerate() {
        let tok = format!("b{i}");
        let got = s.step(acts, &tok);
        let want = r.step(acts, &tok);
        seen += want[0].len() + want[1].len();
        for (n, (g, w)) in got.iter().zip(&want).enumerate() {
            if g != w {
                diffs.push(format!(
                    "step {} {}: [RESP{}] streamd {} | redis {}",
                    i + 1,
                    label(acts),
                    n + 2,
                    show(g),
                    show(w)
                ));
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "notify-keyspace-events {conf}: {} divergences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    if !conf.is_empty() {
        assert!(seen > 0, "{conf}: Redis sent no notification at all");
    }
}

fn label(acts: &[Act]) -> String {
    acts.iter()
        .map(|a| match a {
            Cmd(l) => (*l).to_string(),
            Sleep(ms) => format!("sleep {ms}ms"),
            DumpRestore => "DUMP+RESTORE".to_string(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn every_class_on_both_channels_matches_redis() {
    differential("KEA", STEPS);
}

#[test]
fn keyevent_stream_events_only_match_redis() {
    differential("Et", STEPS);
}

#[test]
fn keyspace_stream_events_only_match_redis() {
    differential("Kt", STEPS);
}

#[test]
fn generic_expired_and_new_classes_match_redis() {
    differential("KEgxn", STEPS);
}

#[test]
fn nothing_is_published_when_notifications_are_off() {
    differential("", STEPS);
}

/// Key misses (`m`, not part of `A`): the commands Redis reads keys with fire `keymiss`
/// for a missing key, write commands do not.
#[test]
fn keymiss_matches_redis() {
    const MISSES: &[&[Act]] = &[
        &[Cmd("EXISTS ks:a ks:b")],
        &[Cmd("TYPE ks:a")],
        &[Cmd("TTL ks:a")],
        &[Cmd("PTTL ks:a")],
        &[Cmd("XLEN ks:a")],
        &[Cmd("XRANGE ks:a - +")],
        &[Cmd("XREVRANGE ks:a + -")],
        &[Cmd("XREAD STREAMS ks:a ks:b 0 0")],
        &[Cmd("XREAD STREAMS ks:a $")],
        &[Cmd("XREADGROUP GROUP g c STREAMS ks:a >")],
        &[Cmd("XPENDING ks:a g")],
        &[Cmd("XINFO STREAM ks:a")],
        &[Cmd("XACK ks:a g 1-1")],
        &[Cmd("XCLAIM ks:a g c 0 1-1")],
        &[Cmd("XAUTOCLAIM ks:a g c 0 0")],
        &[Cmd("DUMP ks:a")],
        &[Cmd("COPY ks:a ks:b")],
        &[Cmd("OBJECT ENCODING ks:a")],
        &[Cmd("DEL ks:a")],
        &[Cmd("XADD ks:a NOMKSTREAM 1-1 f v")],
        &[Cmd("XTRIM ks:a MAXLEN 1")],
        &[Cmd("XDEL ks:a 1-1")],
        &[Cmd("XSETID ks:a 1-1")],
        &[Cmd("XGROUP CREATE ks:a g 0")],
        &[Cmd("EXPIRE ks:a 10")],
        &[Cmd("PERSIST ks:a")],
        &[Cmd("RENAME ks:a ks:b")],
        &[Cmd("XADD ks:a 1-1 f v")],
        &[Cmd("COPY ks:a ks:b")],
        &[Cmd("XLEN ks:a")],
    ];
    differential("KEm", MISSES);
    differential("KEAnm", MISSES);
}

/// The (channel, message) pairs of the pmessages in `frames` (RESP2 `*4` frames).
fn messages(frames: &[Vec<u8>]) -> Vec<(String, String)> {
    frames
        .iter()
        .map(|f| {
            let text = String::from_utf8_lossy(f).to_string();
            let parts: Vec<&str> = text.split("\r\n").collect();
            assert_eq!(parts[..3], ["*4", "$8", "pmessage"], "{:?}", escape(f));
            (parts[6].to_string(), parts[8].to_string())
        })
        .collect()
}

fn ks(key: &str, event: &str) -> [(String, String); 2] {
    [
        (format!("__keyspace@0__:{key}"), event.to_string()),
        (format!("__keyevent@0__:{event}"), key.to_string()),
    ]
}

/// XACKDEL and XDELEX announce the entries they removed as `xdel`, as Redis 8.2 does;
/// XNACK and an XADD answered as an IDMP duplicate announce nothing (Redis 8.x has no
/// event for them); a new IDMP entry is an ordinary `xadd`.
#[test]
fn newer_stream_commands_emit_what_redis_8_emits() {
    let server = start_server();
    let mut side = Side::open(server.port, "KEA");
    let mut run = |acts: &[Act]| -> Vec<(String, String)> {
        let [r2, r3] = side.step(acts, "t");
        assert_eq!(r2.len(), r3.len(), "both subscribers get the same messages");
        messages(&r2)
    };
    run(&[
        Cmd("XADD s 1-1 f v"),
        Cmd("XADD s 2-1 f v"),
        Cmd("XADD s 3-1 f v"),
        Cmd("XADD s 4-1 f v"),
        Cmd("XGROUP CREATE s g 0"),
        Cmd("XREADGROUP GROUP g c STREAMS s >"),
    ]);
    assert_eq!(run(&[Cmd("XACKDEL s g IDS 1 1-1")]), ks("s", "xdel"));
    assert_eq!(
        run(&[Cmd("XACKDEL s g IDS 1 1-1")]),
        vec![],
        "not pending any more"
    );
    assert_eq!(run(&[Cmd("XACKDEL s g ACKED IDS 1 99-1")]), vec![]);
    assert_eq!(run(&[Cmd("XDELEX s IDS 2 2-1 98-1")]), ks("s", "xdel"));
    assert_eq!(run(&[Cmd("XDELEX s IDS 1 98-1")]), vec![]);
    assert_eq!(
        run(&[Cmd("XDELEX s ACKED IDS 1 3-1")]),
        vec![],
        "still referenced"
    );
    assert_eq!(run(&[Cmd("XDELEX missing IDS 1 3-1")]), vec![]);
    assert_eq!(run(&[Cmd("XNACK s g FAIL IDS 1 3-1")]), vec![]);
    assert_eq!(run(&[Cmd("XADD s IDMP p i1 * f v")]), ks("s", "xadd"));
    assert_eq!(
        run(&[Cmd("XADD s IDMP p i1 * f v2")]),
        vec![],
        "a duplicate"
    );
    assert_eq!(run(&[Cmd("XADD s IDMPAUTO p * f v")]), ks("s", "xadd"));
    assert_eq!(
        run(&[Cmd("XADD s IDMPAUTO p * f v")]),
        vec![],
        "a duplicate"
    );
}

/// A key whose TTL passes with nobody looking is announced by the `hz` cron.
#[test]
fn active_expiry_announces_expired() {
    let server = start_server();
    let mut side = Side::open(server.port, "Ex");
    side.act.cmd_str(&["XADD", "gone", "1-1", "f", "v"]);
    side.act.cmd_str(&["PEXPIRE", "gone", "50"]);
    let start = Instant::now();
    let mut got = Vec::new();
    while got.is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
        got = side.step(&[], "poll")[0].clone();
    }
    assert_eq!(
        messages(&got),
        vec![("__keyevent@0__:expired".to_string(), "gone".to_string())]
    );
    assert_eq!(side.act.cmd_str(&["DBSIZE"]), b":0\r\n");
}

/// The class letters are Redis's, shown back in Redis's canonical order.
#[test]
fn config_set_accepts_every_redis_class_letter() {
    let server = start_server();
    let mut r = server.raw();
    for (set, shown) in [
        ("KEA", "AKE"),
        ("Ex", "xE"),
        ("Kt", "tK"),
        ("AKEmn", "AnKEm"),
        ("g$lshzxetdKEmn", "AnKEm"),
        ("", ""),
    ] {
        assert_eq!(
            r.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", set]),
            b"+OK\r\n"
        );
        let want = format!(
            "*2\r\n$22\r\nnotify-keyspace-events\r\n${}\r\n{shown}\r\n",
            shown.len()
        );
        assert_eq!(
            escape(&r.cmd_str(&["CONFIG", "GET", "notify-keyspace-events"])),
            escape(want.as_bytes()),
            "{set}"
        );
    }
    let err = r.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", "KEq"]);
    assert!(err.starts_with(b"-ERR"), "{:?}", escape(&err));
}

/// A RESP3 client subscribed to its own events gets them after the reply of the command
/// that caused them, never inside it, as Redis does since 7.2 (`pending_push_messages`;
/// 7.0 wrote them mid-reply, splitting XREADGROUP's map).
#[test]
fn own_events_follow_the_reply_of_the_command_that_caused_them() {
    let server = start_server();
    let mut r = server.raw();
    r.hello3();
    r.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", "Et"]);
    r.cmd_str(&["PSUBSCRIBE", "__keyevent*"]);
    let push = |event: &str| {
        format!(
            ">4\r\n$8\r\npmessage\r\n$11\r\n__keyevent*\r\n${}\r\n__keyevent@0__:{event}\r\n$1\r\ns\r\n",
            15 + event.len()
        )
    };
    assert_eq!(
        escape(&r.cmd_str(&["XADD", "s", "1-1", "f", "v"])),
        escape(b"$3\r\n1-1\r\n")
    );
    assert_eq!(escape(&r.read_reply()), escape(push("xadd").as_bytes()));
    r.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
    assert_eq!(
        escape(&r.read_reply()),
        escape(push("xgroup-create").as_bytes())
    );
    let read = r.cmd_str(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"]);
    assert_eq!(
        escape(&read),
        escape(b"%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n")
    );
    assert_eq!(
        escape(&r.read_reply()),
        escape(push("xgroup-createconsumer").as_bytes())
    );
}
