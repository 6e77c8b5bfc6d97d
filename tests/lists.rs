//! The list family and SORT against the real binary, compared byte for byte with Redis 7.0
//! (`/usr/bin/redis-server`) in RESP2 and RESP3: a fixed script of edge cases and errors,
//! seeded random command sequences, keyspace notifications, and blocking (wake order,
//! wrong types, MULTI/EXEC, BLMOVE chains, timeouts).

mod common;

use common::*;
use std::time::Duration;

/// Runs every command on both servers (fresh connections, protocol `proto`) and collects
/// the differences.
fn diff_script(script: &[Vec<&[u8]>], proto: u8) -> Vec<String> {
    let redis = redis_server();
    let ours = start_server();
    let mut r = redis.raw();
    let mut s = ours.raw();
    if proto == 3 {
        r.cmd_str(&["HELLO", "3"]);
        s.cmd_str(&["HELLO", "3"]);
    }
    let mut bad = Vec::new();
    for (i, cmd) in script.iter().enumerate() {
        let mut want = r.cmd(cmd);
        let got = s.cmd(cmd);
        // Where Redis 7.2+ answers differently from Debian's 7.0, its answer.
        let line = cmd.join(&b' ');
        if let Some((_, newer)) = NEWER.iter().find(|(l, _)| l.as_bytes() == line) {
            want = newer.to_vec();
        }
        if want != got {
            let shown: Vec<String> = cmd.iter().map(|a| escape(a)).collect();
            bad.push(format!(
                "step {i} {:?} (RESP{proto})\n  redis:   {}\n  streamd: {}",
                shown,
                escape(&want),
                escape(&got)
            ));
        }
    }
    bad
}

fn words(line: &str) -> Vec<&[u8]> {
    line.split(' ')
        .map(|w| if w == "''" { &b""[..] } else { w.as_bytes() })
        .collect()
}

/// Steps Redis 7.2+ answers differently from the Debian 7.0 reference: small lists are
/// `listpack`s (7.0 says `quicklist` at every size).
const NEWER: &[(&str, &[u8])] = &[
    ("OBJECT ENCODING n", b"$8\r\nlistpack\r\n"),
    ("OBJECT ENCODING big", b"$8\r\nlistpack\r\n"),
];

const EDGES: &[&str] = &[
    "LPUSH l a b c 1 2 -3 99999999999999999999 x",
    "RPUSH l 127 128 4095 4096 -4096 -4097 32767 32768 9223372036854775807 -9223372036854775808",
    "LRANGE l 0 -1",
    "LRANGE l -100 100",
    "LRANGE l 5 2",
    "LRANGE l 0 x",
    "LRANGE nokey 0 -1",
    "LINDEX l 0",
    "LINDEX l -1",
    "LINDEX l 100",
    "LINDEX l x",
    "LINDEX nokey x",
    "LSET l 5 x",
    "LSET l 100 x",
    "LSET l -100 x",
    "LSET nokey 0 x",
    "LSET l x y",
    "LPOS l a RANK 0",
    "LPOS l a MAXLEN -1",
    "LPOS l a COUNT -1",
    "LPOS l a COUNT x",
    "LPOS l a RANK x",
    "LPOS l a BOGUS",
    "LPOS l a COUNT",
    "LPOS l x",
    "LPOS l x COUNT 0",
    "LPOS l x RANK -1 COUNT 2",
    "LPOS l x RANK 2 MAXLEN 3",
    "LPOS l a RANK 9223372036854775807 COUNT 0",
    "LPOS nokey x",
    "LPOS nokey x COUNT 1",
    "LINSERT l MIDDLE a b",
    "LINSERT l BEFORE a b",
    "LINSERT l AFTER nothere b",
    "LINSERT nokey AFTER a b",
    "LPOP l 0",
    "LPOP l -1",
    "LPOP l x",
    "LPOP l 1 2",
    "LPOP nokey",
    "LPOP nokey 2",
    "RPOP l 3",
    "LPOP l 2",
    "LREM l 0 x",
    "LREM l x x",
    "LREM l -1 b",
    "LLEN l",
    "LTRIM l 1 -2",
    "LTRIM l x 1",
    "LRANGE l 0 -1",
    "LMOVE l l LEFT RIGHT",
    "LMOVE l m MIDDLE LEFT",
    "LMOVE nokey m LEFT LEFT",
    "RPOPLPUSH l m",
    "LRANGE m 0 -1",
    "LMPOP 1 l MIDDLE",
    "LMPOP 0 l LEFT",
    "LMPOP x l LEFT",
    "LMPOP 5 l LEFT",
    "LMPOP 1 l LEFT COUNT 0",
    "LMPOP 1 l LEFT COUNT x",
    "LMPOP 1 l LEFT COUNT 1 COUNT 2",
    "LMPOP 2 nokey l RIGHT COUNT 2",
    "LMPOP 2 nokey nokey2 RIGHT",
    "BLPOP l -1",
    "BLPOP l x",
    "BLPOP l nan",
    "BLMPOP x 1 l LEFT",
    "BLMPOP 0 0 l LEFT",
    "BLMOVE l m LEFT LEFT -1",
    "BRPOPLPUSH l m x",
    "BLPOP l 0",
    "BRPOP l m 0",
    "BLMPOP 0 2 nokey m LEFT COUNT 10",
    "XADD st 1-1 f v",
    "LPUSH st a",
    "LPUSHX st a",
    "LLEN st",
    "LRANGE st 0 -1",
    "LINDEX st 0",
    "LPOP st",
    "LMOVE st l LEFT LEFT",
    "RPUSH l2 z",
    "LMOVE l2 st LEFT LEFT",
    "RPOPLPUSH l2 st",
    "BLPOP st 0.01",
    "BLMPOP 0.01 1 st LEFT",
    "LMPOP 1 st LEFT",
    "SORT st",
    "SORT_RO st",
    "LPUSHX nokey a",
    "RPUSHX l2 a b",
    "DEL l l2 m",
    "RPUSH n 3 1 2 10 -1 1.5 1e2",
    "SORT n",
    "SORT n DESC",
    "SORT n ALPHA",
    "SORT n LIMIT 1 3",
    "SORT n LIMIT -5 2",
    "SORT n LIMIT 2 -1",
    "SORT n LIMIT 100 2",
    "SORT n LIMIT x 2",
    "SORT n BY nosort",
    "SORT n BY nosort DESC LIMIT 1 2",
    "SORT n GET # GET nokey_*",
    "SORT n BY w_* GET #",
    "SORT n STORE dst",
    "LRANGE dst 0 -1",
    "SORT n BY nosort GET x_* STORE dst",
    "LRANGE dst 0 -1",
    "SORT nokey STORE dst",
    "EXISTS dst",
    "SORT_RO n STORE dst",
    "SORT n BOGUS",
    "RPUSH w a 1 b",
    "SORT w",
    "SORT w ALPHA DESC",
    "RPUSH e 1 '' 2",
    "SORT e",
    "OBJECT ENCODING n",
    "LPUSH big zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
    "OBJECT ENCODING big",
    "MULTI",
    "BLPOP nokey 0",
    "BLMOVE nokey m LEFT LEFT 0",
    "BRPOPLPUSH nokey m 0",
    "BLMPOP 0 1 nokey LEFT",
    "EXEC",
];

#[test]
fn edge_cases_match_redis_in_resp2_and_resp3() {
    let script: Vec<Vec<&[u8]>> = EDGES.iter().map(|l| words(l)).collect();
    let mut bad = diff_script(&script, 2);
    bad.extend(diff_script(&script, 3));
    assert!(
        bad.is_empty(),
        "{} differences:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
    fn upto(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KEYS: &[&str] = &["k0", "k1", "k2", "k3"];
const VALS: &[&str] = &[
    "a", "b", "c", "1", "2", "10", "-1", "3.5", "''", "300", "x y",
];
const IDX: &[&str] = &["0", "1", "-1", "2", "-2", "3", "-100", "100", "x"];
const COUNTS: &[&str] = &["0", "1", "2", "5", "-1", "x"];
const TO: &[&str] = &["0.01", "0.01", "0.01", "-1", "x"];
const ENDS: &[&str] = &["LEFT", "RIGHT", "LEFT", "RIGHT", "UP"];

fn random_command(g: &mut Rng) -> String {
    let k = |g: &mut Rng| g.pick(KEYS).to_string();
    let many = |g: &mut Rng, pool: &[&str]| {
        (0..1 + g.upto(3))
            .map(|_| g.pick(pool))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let keys = |g: &mut Rng| {
        (0..1 + g.upto(3))
            .map(|_| g.pick(KEYS))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match g.upto(24) {
        0..=2 => format!("LPUSH {} {}", k(g), many(g, VALS)),
        3..=5 => format!("RPUSH {} {}", k(g), many(g, VALS)),
        6 => format!("LPUSHX {} {}", k(g), many(g, VALS)),
        7 => format!("LPOP {} {}", k(g), g.pick(COUNTS)),
        8 => format!("RPOP {} {}", k(g), g.pick(&["", "", "3"])),
        9 => format!("LINDEX {} {}", k(g), g.pick(IDX)),
        10 => format!("LSET {} {} {}", k(g), g.pick(IDX), g.pick(VALS)),
        11 => format!(
            "LINSERT {} {} {} {}",
            k(g),
            g.pick(&["BEFORE", "AFTER"]),
            g.pick(VALS),
            g.pick(VALS)
        ),
        12 => format!("LRANGE {} {} {}", k(g), g.pick(IDX), g.pick(IDX)),
        13 => format!("LTRIM {} {} {}", k(g), g.pick(IDX), g.pick(IDX)),
        14 => format!(
            "LREM {} {} {}",
            k(g),
            g.pick(&["0", "1", "-1", "2"]),
            g.pick(VALS)
        ),
        15 => format!(
            "LPOS {} {} {} {}",
            k(g),
            g.pick(VALS),
            g.pick(&["", "RANK 1", "RANK -1", "RANK 2"]),
            g.pick(&["", "COUNT 0", "COUNT 2", "MAXLEN 2"])
        ),
        16 => format!("LMOVE {} {} {} {}", k(g), k(g), g.pick(ENDS), g.pick(ENDS)),
        17 => format!("RPOPLPUSH {} {}", k(g), k(g)),
        18 => {
            let n = 1 + g.upto(2);
            let ks: Vec<String> = (0..n).map(|_| k(g)).collect();
            format!(
                "LMPOP {n} {} {} {}",
                ks.join(" "),
                g.pick(ENDS),
                g.pick(&["", "COUNT 2", "COUNT 9"])
            )
        }
        19 => format!("BLPOP {} {}", keys(g), g.pick(TO)),
        20 => format!(
            "BLMOVE {} {} {} {} {}",
            k(g),
            k(g),
            g.pick(ENDS),
            g.pick(ENDS),
            g.pick(TO)
        ),
        21 => format!(
            "SORT {} {} {} {} {}",
            k(g),
            g.pick(&["", "LIMIT 0 2", "LIMIT 1 10"]),
            g.pick(&["", "ASC", "DESC"]),
            g.pick(&["", "ALPHA"]),
            g.pick(&["", "", "STORE k1"])
        ),
        22 => format!("XADD {} 1-1 f v", k(g)),
        _ => format!("DEL {}", k(g)),
    }
}

#[test]
fn random_sequences_match_redis() {
    let redis = redis_server();
    let ours = start_server();
    for seed in 0..16u64 {
        let proto = if seed % 2 == 0 { 2 } else { 3 };
        let mut r = redis.raw();
        let mut s = ours.raw();
        if proto == 3 {
            r.cmd_str(&["HELLO", "3"]);
            s.cmd_str(&["HELLO", "3"]);
        }
        r.cmd_str(&["FLUSHALL"]);
        s.cmd_str(&["FLUSHALL"]);
        let mut g = Rng(seed);
        for step in 0..250 {
            let line = random_command(&mut g);
            let cmd: Vec<&[u8]> = line
                .split_whitespace()
                .map(|w| if w == "''" { &b""[..] } else { w.as_bytes() })
                .collect();
            let want = r.cmd(&cmd);
            let got = s.cmd(&cmd);
            assert_eq!(
                escape(&got),
                escape(&want),
                "seed {seed} step {step}: {line} (RESP{proto})"
            );
        }
    }
}

/// Keyspace events seen by a subscriber while `cmds` run, for one server.
fn events(port: u16, cmds: &[&str]) -> Vec<String> {
    let mut c = Raw::connect(port);
    c.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = Raw::connect(port);
    sub.cmd_str(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    for line in cmds {
        c.cmd(&words(line));
    }
    // A last message on a channel the pattern matches marks the end: events come in order,
    // so no wait for silence (which a busy machine can break) is needed.
    const END: &str = "__keyevent@0__:end-of-events";
    c.cmd_str(&["PUBLISH", END, "."]);
    let mut seen = Vec::new();
    loop {
        let m = escape(&sub.read_reply());
        if m.contains(END) {
            return seen;
        }
        seen.push(m);
    }
}

#[test]
fn keyspace_events_match_redis() {
    let cmds = [
        "RPUSH l a b c d e",
        "LPUSH l z",
        "LPOP l",
        "RPOP l 2",
        "LINSERT l BEFORE b q",
        "LSET l 0 y",
        "LREM l 1 q",
        "LTRIM l 0 1",
        "LMOVE l m LEFT RIGHT",
        "RPOPLPUSH l m",
        "LMPOP 1 m RIGHT COUNT 5",
        "RPUSH s 3 1 2",
        "SORT s STORE t",
        "SORT nokey STORE t",
        "RPUSH one x",
        "LREM one 0 x",
        "RPUSH two x",
        "LTRIM two 1 0",
    ];
    let redis = redis_server();
    let ours = start_server();
    let want = events(redis.port, &cmds);
    assert!(want.len() > 20, "{want:?}");
    assert_eq!(events(ours.port, &cmds), want);
}

/// Sends a blocking command on a fresh connection and waits until the server has it.
fn blocked(port: u16, proto: u8, cmd: &str) -> Raw {
    let mut c = Raw::connect(port);
    if proto == 3 {
        c.cmd_str(&["HELLO", "3"]);
    }
    let mut admin = Raw::connect(port);
    let before = blocked_clients(&mut admin);
    c.send(&encode_cmd(&words(cmd)));
    wait_blocked(&mut admin, before + 1);
    c
}

/// The blocking scenarios; returns what each step saw, for comparison with Redis.
fn blocking_transcript(port: u16, proto: u8) -> Vec<String> {
    let mut out = Vec::new();
    let mut c = Raw::connect(port);
    let quiet = |r: &mut Raw| -> String {
        r.set_timeout(Duration::from_millis(300));
        match r.try_read_reply() {
            Ok(m) => format!("answered {}", escape(&m)),
            Err(_) => "still blocked".to_string(),
        }
    };
    // FIFO between clients and serving from the key that became ready.
    let mut a = blocked(port, proto, "BLPOP q1 q2 5");
    let mut b = blocked(port, proto, "BRPOP q2 5");
    out.push(escape(&c.cmd_str(&["RPUSH", "q2", "x"])));
    out.push(escape(&a.read_reply()));
    out.push(quiet(&mut b));
    out.push(escape(&c.cmd_str(&["RPUSH", "q2", "y", "z"])));
    out.push(escape(&b.read_reply()));
    out.push(escape(&c.cmd_str(&["LRANGE", "q2", "0", "-1"])));
    // A key of another type neither wakes nor answers; a list later does.
    let mut a = blocked(port, proto, "BLPOP w 5");
    out.push(escape(&c.cmd_str(&["XADD", "w", "1-1", "f", "v"])));
    out.push(quiet(&mut a));
    out.push(escape(&c.cmd_str(&["DEL", "w"])));
    out.push(escape(&c.cmd_str(&["RPUSH", "w", "v"])));
    out.push(escape(&a.read_reply()));
    // Pushes in MULTI wake after EXEC, with the state after the whole transaction.
    let mut a = blocked(port, proto, "BLMPOP 5 1 m LEFT COUNT 5");
    for cmd in ["MULTI", "RPUSH m a", "RPUSH m b", "LPUSH m c", "EXEC"] {
        out.push(escape(&c.cmd(&words(cmd))));
    }
    out.push(escape(&a.read_reply()));
    // BLMOVE chain: the destination's own waiter is served next.
    let mut a = blocked(port, proto, "BLMOVE c1 c2 LEFT RIGHT 5");
    let mut b = blocked(port, proto, "BRPOPLPUSH c2 c3 5");
    out.push(escape(&c.cmd_str(&["RPUSH", "c1", "v"])));
    out.push(escape(&a.read_reply()));
    out.push(escape(&b.read_reply()));
    out.push(escape(&c.cmd_str(&["LRANGE", "c3", "0", "-1"])));
    out.push(escape(&c.cmd_str(&["EXISTS", "c1", "c2"])));
    // Wrong-type destination: the blocked BLMOVE answers WRONGTYPE.
    let mut a = blocked(port, proto, "BLMOVE d1 d2 LEFT LEFT 5");
    out.push(escape(&c.cmd_str(&["XADD", "d2", "1-1", "f", "v"])));
    out.push(escape(&c.cmd_str(&["RPUSH", "d1", "v"])));
    out.push(escape(&a.read_reply()));
    out.push(escape(&c.cmd_str(&["LLEN", "d1"])));
    // Timeouts: a null array for every list command.
    for cmd in [
        "BLPOP none 0.05",
        "BRPOP none none2 0.05",
        "BLMOVE none x LEFT LEFT 0.05",
        "BRPOPLPUSH none x 0.05",
        "BLMPOP 0.05 1 none RIGHT",
    ] {
        let mut t = Raw::connect(port);
        if proto == 3 {
            t.cmd_str(&["HELLO", "3"]);
        }
        out.push(escape(&t.cmd(&words(cmd))));
    }
    out
}

#[test]
fn blocking_matches_redis_in_resp2_and_resp3() {
    let redis = redis_server();
    let ours = start_server();
    for proto in [2, 3] {
        let want = blocking_transcript(redis.port, proto);
        let got = blocking_transcript(ours.port, proto);
        assert_eq!(got, want, "RESP{proto}");
        Raw::connect(redis.port).cmd_str(&["FLUSHALL"]);
        Raw::connect(ours.port).cmd_str(&["FLUSHALL"]);
    }
}

#[test]
fn blocked_pops_are_logged_as_their_non_blocking_forms() {
    let ours = start_server_with(&["--appendonly", "yes"]);
    let mut c = ours.raw();
    let mut a = blocked(ours.port, 2, "BLMPOP 0 1 p LEFT COUNT 3");
    c.cmd_str(&["RPUSH", "p", "1", "2"]);
    a.read_reply();
    // LEFT/RIGHT keep the case they were sent in (Redis 7.2.6's "Command being unblocked
    // cause another command to get unblocked execution order test").
    let mut a = blocked(ours.port, 2, "BLMOVE p2 p3 right Left 0");
    c.cmd_str(&["RPUSH", "p2", "x"]);
    a.read_reply();
    c.cmd_str(&["RPUSH", "p4", "y"]);
    c.cmd_str(&["BRPOP", "p4", "0"]);
    // A restart replays the log: the same state comes back.
    let before: Vec<Vec<u8>> = ["p", "p2", "p3", "p4"]
        .iter()
        .map(|k| c.cmd_str(&["LRANGE", k, "0", "-1"]))
        .collect();
    assert_eq!(escape(&before[2]), "*1\\r\\n$1\\r\\nx\\r\\n");
    let dir = ours.dir().to_path_buf();
    let mut log = Vec::new();
    let mut dirs = vec![dir];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("data dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                log.extend(std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    let text = String::from_utf8_lossy(&log).to_string();
    assert!(text.contains("LMOVE") && text.contains("LPOP"), "{text}");
    assert!(text.contains("$5\r\nright\r\n$4\r\nLeft\r\n"), "{text}");
    assert!(
        !text.contains("BLMPOP") && !text.contains("BLMOVE") && !text.contains("BRPOP"),
        "{text}"
    );
}
