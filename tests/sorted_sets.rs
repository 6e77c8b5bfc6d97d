//! The sorted-set family against the built binary: a differential part (the same
//! scripts to streamd and to Debian's redis-server 7.0, raw reply bytes compared, in
//! RESP2 and RESP3: errors, edge cases, small and large encodings), then blocking pops,
//! encodings and propagation-visible behaviour that a comparison cannot show.

mod common;

use common::{Raw, escape, redis_server, start_server, wait_blocked};
use std::time::Duration;

/// Splits a script line into arguments (space separated; `\x00`-style escapes are not
/// needed here).
fn args(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

/// Runs `script` on both servers in `proto`, asserting identical raw replies.
fn same_replies(script: &[String], proto: u8) {
    let ours = start_server();
    let redis = redis_server();
    let mut a = ours.raw();
    let mut b = redis.raw();
    if proto == 3 {
        a.cmd_str(&["HELLO", "3"]);
        b.cmd_str(&["HELLO", "3"]);
    }
    for line in script {
        let v = args(line);
        let ra = a.cmd_str(&v);
        let rb = b.cmd_str(&v);
        assert_eq!(
            escape(&ra),
            escape(&rb),
            "RESP{proto} `{line}`: streamd vs redis"
        );
    }
}

fn lines(s: &[&str]) -> Vec<String> {
    s.iter().map(|l| l.to_string()).collect()
}

/// The fixed script: every command, its errors and edge cases on a small set.
fn edge_script() -> Vec<String> {
    lines(&[
        "ZADD z 1 a 2 b 3 c 1.5 d inf e -inf f 0.1 g 1e300 h",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZSCORE z g",
        "ZSCORE z nope",
        "ZMSCORE z a nope g",
        "ZMSCORE nokey a",
        "ZADD z NX XX 1 a",
        "ZADD z GT LT 1 a",
        "ZADD z GT NX 1 a",
        "ZADD z INCR 1 a 2 b",
        "ZADD z 1",
        "ZADD z nan a",
        "ZADD z x a",
        "ZADD z 1e999 a",
        "ZADD z XX INCR 1 nope",
        "ZADD z NX INCR 1 a",
        "ZADD z INCR 2 a",
        "ZADD z GT CH 0 a 10 b 4 new",
        "ZADD z LT CH 0 a 10 b",
        "ZADD z XX CH 7 c 8 nope",
        "ZINCRBY z -inf e",
        "ZINCRBY z 1 nope2",
        "ZINCRBY z NX a",
        "ZINCRBY z x a",
        "ZCARD z",
        "ZCARD nokey",
        "ZCOUNT z -inf +inf",
        "ZCOUNT z (1 3",
        "ZCOUNT z x 3",
        "ZCOUNT z ((1 3",
        "ZCOUNT z  3",
        "ZRANK z a",
        "ZREVRANK z a",
        "ZRANK z nope",
        "ZRANK nokey a",
        "ZRANGE z 0 2",
        "ZRANGE z -2 -1 WITHSCORES",
        "ZRANGE z 5 1",
        "ZRANGE z 0 -1 REV WITHSCORES",
        "ZRANGE z (1 +inf BYSCORE LIMIT 1 2 WITHSCORES",
        "ZRANGE z +inf (1 BYSCORE REV LIMIT 0 -1",
        "ZRANGE z 0 -1 LIMIT 0 1",
        "ZRANGE z - + BYLEX WITHSCORES",
        "ZRANGE z (1 5 BYLEX",
        "ZRANGE z 0 -1 BYSCORE BYLEX",
        "ZRANGE z 0 x",
        "ZRANGE z 0 1 LIMIT 1",
        "ZRANGEBYSCORE z [1 2",
        "ZRANGEBYSCORE z -inf +inf WITHSCORES LIMIT -1 5",
        "ZRANGEBYSCORE z -inf +inf LIMIT 2 -1",
        "ZRANGEBYSCORE z -inf +inf LIMIT 100 1",
        "ZRANGEBYSCORE z 0 1 REV",
        "ZREVRANGEBYSCORE z +inf -inf WITHSCORES LIMIT 1 3",
        "ZREVRANGE z 0 2 WITHSCORES",
        "ZREVRANGE z 0 2 LIMIT 0 1",
        "ZRANGESTORE dst z 0 -1 WITHSCORES",
        "ZRANGESTORE dst z 1 3",
        "ZRANGE dst 0 -1 WITHSCORES",
        "ZRANGESTORE dst z (100 +inf BYSCORE",
        "EXISTS dst",
        "ZRANGESTORE dst nokey 0 -1",
        "ZADD lex 0 a 0 b 0 c 0 d 0 e",
        "ZRANGEBYLEX lex [b (d",
        "ZRANGEBYLEX lex - + LIMIT 1 2",
        "ZREVRANGEBYLEX lex + - LIMIT 0 2",
        "ZREVRANGEBYLEX lex (d [a",
        "ZRANGEBYLEX lex a c",
        "ZRANGEBYLEX lex - -",
        "ZRANGEBYLEX lex + +",
        "ZLEXCOUNT lex [b +",
        "ZLEXCOUNT lex x +",
        "ZREMRANGEBYLEX lex [b [c",
        "ZRANGE lex 0 -1",
        "ZREMRANGEBYLEX lex - +",
        "EXISTS lex",
        "ZADD r 1 a 2 b 3 c 4 d 5 e",
        "ZREMRANGEBYRANK r 1 2",
        "ZREMRANGEBYRANK r 10 20",
        "ZREMRANGEBYRANK r x 1",
        "ZREMRANGEBYSCORE r (1 4",
        "ZREMRANGEBYSCORE r x 4",
        "ZRANGE r 0 -1 WITHSCORES",
        "ZREM r a e",
        "EXISTS r",
        "ZREM r a",
        "ZADD p 1 a 2 b 3 c 4 d",
        "ZPOPMIN p",
        "ZPOPMAX p 2",
        "ZPOPMIN p 0",
        "ZPOPMIN p -1",
        "ZPOPMIN p x",
        "ZPOPMIN p 1 2",
        "ZPOPMIN nokey",
        "ZPOPMAX p 5",
        "EXISTS p",
        "ZADD p 1 a 2 b 3 c",
        "ZMPOP 1 p MIN",
        "ZMPOP 2 nokey p MAX COUNT 10",
        "ZMPOP 1 p MIN",
        "ZMPOP 0 p MIN",
        "ZMPOP x p MIN",
        "ZMPOP 1 p MIDDLE",
        "ZMPOP 1 p MIN COUNT 0",
        "ZMPOP 1 p MIN COUNT 1 COUNT 2",
        "ZMPOP 5 p MIN",
        "BZPOPMIN p -1",
        "BZPOPMIN p x",
        "BZMPOP 0 0 p MIN",
        "ZADD s1 1 a 2 b 3 c",
        "ZADD s2 10 b 20 c 30 d",
        "ZUNION 2 s1 s2 WITHSCORES",
        "ZUNION 2 s1 s2 WEIGHTS 2 0.5 AGGREGATE MAX WITHSCORES",
        "ZUNION 2 s1 s2 AGGREGATE MIN",
        "ZUNION 2 s1 s2 WEIGHTS 1",
        "ZUNION 2 s1 s2 WEIGHTS 1 x",
        "ZUNION 2 s1 s2 AGGREGATE foo",
        "ZUNION 0 s1",
        "ZUNION 3 s1 s2",
        "ZUNION x s1",
        "ZINTER 2 s1 s2 WITHSCORES",
        "ZINTER 2 s1 nokey",
        "ZINTER 2 s1 s1 WITHSCORES",
        "ZINTERCARD 2 s1 s2",
        "ZINTERCARD 2 s1 s2 LIMIT 1",
        "ZINTERCARD 2 s1 s2 LIMIT -1",
        "ZINTERCARD 0 s1",
        "ZINTERCARD 1 s1 WITHSCORES",
        "ZDIFF 2 s1 s2 WITHSCORES",
        "ZDIFF 2 s1 s2 WEIGHTS 1 1",
        "ZUNIONSTORE out 2 s1 s2 WEIGHTS 1 2",
        "ZRANGE out 0 -1 WITHSCORES",
        "ZINTERSTORE out 2 s1 s2 AGGREGATE MIN",
        "ZRANGE out 0 -1 WITHSCORES",
        "ZDIFFSTORE out 2 s1 s1",
        "EXISTS out",
        "ZUNIONSTORE out 2 s1 s2 WITHSCORES",
        "ZADD ninf 1 -inf",
        "ZADD pinf 1 inf",
        "ZUNION 2 ninf pinf WEIGHTS 1 1 WITHSCORES",
        "XADD str 1-1 f v",
        "ZADD str 1 a",
        "ZRANGE str 0 -1",
        "ZUNION 2 s1 str",
        "ZUNION 2 s1 str WEIGHTS x",
        "ZPOPMIN str",
        "ZMPOP 2 nokey str MIN",
        "BZPOPMIN str 0.01",
        "ZRANDMEMBER str",
        "ZRANDMEMBER nokey",
        "ZRANDMEMBER nokey 3",
        "ZRANDMEMBER s1 0",
        "ZRANDMEMBER s1 x",
        "ZRANDMEMBER s1 1 WITHSCORES x",
        "ZRANDMEMBER s1 -9223372036854775808",
        "ZRANDMEMBER s1 9223372036854775807 WITHSCORES",
        "ZADD one 2.5 x",
        "ZRANDMEMBER one 5 WITHSCORES",
        "ZRANDMEMBER one -3 WITHSCORES",
        "ZRANDMEMBER one -2",
        "ZRANDMEMBER one",
        "ZSCAN s1 0",
        "ZSCAN s1 x",
        "ZSCAN nokey 0",
        "ZSCAN s1 0 MATCH a*",
        "ZADD f 1.1 a 0.30000000000000004 b 123456789012345678 c 1e-5 d -0.5 e",
        "ZRANGE f 0 -1 WITHSCORES",
        "ZINCRBY f 0.2 a",
        "ZADD f 0x10 hex",
        "ZSCORE f hex",
        "ZADD big 1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "OBJECT ENCODING big",
        "OBJECT ENCODING s1",
    ])
}

#[test]
fn differential_edge_cases_resp2() {
    same_replies(&edge_script(), 2);
}

#[test]
fn differential_edge_cases_resp3() {
    same_replies(&edge_script(), 3);
}

/// A small deterministic generator (the test must be reproducible).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() as usize) % v.len()]
    }
}

/// Large sets (the skip-list encoding in both servers), random commands over them.
fn large_script(seed: u64) -> Vec<String> {
    let mut r = Lcg(seed);
    let mut s = Vec::new();
    for k in ["L1", "L2"] {
        let mut cmd = format!("ZADD {k}");
        for i in 0..400 {
            cmd.push_str(&format!(" {} m{}", (i * 37) % 101, (i * 7919) % 600));
        }
        s.push(cmd);
    }
    let idx = ["0", "1", "-1", "5", "-5", "100", "399", "-400", "1000"];
    let scores = ["-inf", "+inf", "0", "10", "(10", "50", "(99.5", "100", "-1"];
    let lex = ["-", "+", "[m1", "(m2", "[m5", "(m55", "[m9"];
    let members = ["m1", "m7", "m100", "m599", "m333", "nope"];
    for _ in 0..150 {
        let k = r.pick(&["L1", "L2"]);
        let line = match r.next() % 16 {
            0 => format!("ZRANGE {k} {} {} WITHSCORES", r.pick(&idx), r.pick(&idx)),
            1 => format!("ZRANGE {k} {} {} REV", r.pick(&idx), r.pick(&idx)),
            2 => format!(
                "ZRANGEBYSCORE {k} {} {} WITHSCORES LIMIT {} {}",
                r.pick(&scores),
                r.pick(&scores),
                r.pick(&["0", "3", "-1"]),
                r.pick(&["5", "-1", "0"])
            ),
            3 => format!(
                "ZREVRANGEBYSCORE {k} {} {} LIMIT 1 7",
                r.pick(&scores),
                r.pick(&scores)
            ),
            4 => format!("ZCOUNT {k} {} {}", r.pick(&scores), r.pick(&scores)),
            5 => format!("ZRANK {k} {}", r.pick(&members)),
            6 => format!("ZREVRANK {k} {}", r.pick(&members)),
            7 => format!("ZADD {k} {} {}", r.pick(&scores[2..]), r.pick(&members)),
            8 => format!("ZREM {k} {} {}", r.pick(&members), r.pick(&members)),
            9 => format!("ZPOPMIN {k} {}", r.pick(&["1", "3"])),
            10 => format!("ZPOPMAX {k}"),
            11 => format!("ZREMRANGEBYRANK {k} {} {}", r.pick(&idx), r.pick(&idx)),
            12 => format!(
                "ZUNIONSTORE U 2 L1 L2 AGGREGATE {}",
                r.pick(&["SUM", "MIN", "MAX"])
            ),
            13 => "ZINTER 2 L1 L2 WITHSCORES".to_string(),
            14 => format!("ZSCORE {k} {}", r.pick(&members)),
            _ => {
                // Lexicographical ranges over one-score sets only (Redis leaves mixed
                // scores unspecified for the skip list).
                format!(
                    "ZRANGEBYLEX LEX {} {} LIMIT 0 20",
                    r.pick(&lex),
                    r.pick(&lex)
                )
            }
        };
        s.push(line);
    }
    let mut lexset = "ZADD LEX".to_string();
    for i in 0..300 {
        lexset.push_str(&format!(" 0 m{i}"));
    }
    s.insert(0, lexset);
    s.push("ZCARD L1".into());
    s.push("ZRANGE U 0 -1 WITHSCORES".into());
    s.push("OBJECT ENCODING L1".into());
    s
}

#[test]
fn differential_large_sets() {
    for seed in 1..4 {
        same_replies(&large_script(seed), if seed % 2 == 0 { 3 } else { 2 });
    }
}

fn raw3(port: u16) -> Raw {
    let mut c = Raw::connect(port);
    c.cmd_str(&["HELLO", "3"]);
    c
}

#[test]
fn encodings_follow_the_thresholds() {
    let s = start_server();
    let mut c = s.raw();
    let mut add = vec!["ZADD".to_string(), "z".to_string()];
    for i in 0..128 {
        add.push(i.to_string());
        add.push(format!("m{i}"));
    }
    let v: Vec<&str> = add.iter().map(String::as_str).collect();
    assert_eq!(c.cmd_str(&v), b":128\r\n");
    assert_eq!(
        c.cmd_str(&["OBJECT", "ENCODING", "z"]),
        b"$8\r\nlistpack\r\n"
    );
    c.cmd_str(&["ZADD", "z", "1000", "one-more"]);
    assert_eq!(
        c.cmd_str(&["OBJECT", "ENCODING", "z"]),
        b"$8\r\nskiplist\r\n"
    );
    c.cmd_str(&["CONFIG", "SET", "zset-max-listpack-entries", "2"]);
    c.cmd_str(&["ZADD", "y", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(
        c.cmd_str(&["OBJECT", "ENCODING", "y"]),
        b"$8\r\nskiplist\r\n"
    );
    // A store result small enough goes back to a listpack under the new limit.
    c.cmd_str(&["CONFIG", "SET", "zset-max-listpack-entries", "128"]);
    c.cmd_str(&["ZUNIONSTORE", "u", "1", "y"]);
    assert_eq!(
        c.cmd_str(&["OBJECT", "ENCODING", "u"]),
        b"$8\r\nlistpack\r\n"
    );
}

#[test]
fn blocking_pops_wake_in_fifo_order() {
    let s = start_server();
    let mut a = s.raw();
    let mut b = raw3(s.port);
    let mut w = s.raw();
    a.send(&common::encode_cmd(&[b"BZPOPMIN", b"q", b"5"]));
    wait_blocked(&mut w, 1);
    b.send(&common::encode_cmd(&[
        b"BZMPOP", b"5", b"1", b"q", b"MAX", b"COUNT", b"5",
    ]));
    wait_blocked(&mut w, 2);
    assert_eq!(
        w.cmd_str(&["ZADD", "q", "1", "a", "2", "b", "3", "c"]),
        b":3\r\n"
    );
    assert_eq!(a.read_reply(), b"*3\r\n$1\r\nq\r\n$1\r\na\r\n$1\r\n1\r\n");
    assert_eq!(
        b.read_reply(),
        b"*2\r\n$1\r\nq\r\n*2\r\n*2\r\n$1\r\nc\r\n,3\r\n*2\r\n$1\r\nb\r\n,2\r\n"
    );
    assert_eq!(w.cmd_str(&["EXISTS", "q"]), b":0\r\n");
}

#[test]
fn blocking_pop_ignores_a_key_of_another_type_and_times_out() {
    let s = start_server();
    let mut a = raw3(s.port);
    let mut w = s.raw();
    // Timed from before the send: the null reply comes only with the 0.3 s timeout, not
    // when the stream appears.
    let t = std::time::Instant::now();
    a.send(&common::encode_cmd(&[b"BZPOPMAX", b"k", b"0.3"]));
    wait_blocked(&mut w, 1);
    w.cmd_str(&["XADD", "k", "1-1", "f", "v"]);
    w.cmd_str(&["DEL", "k"]);
    assert_eq!(a.read_reply(), b"_\r\n");
    assert!(t.elapsed() >= Duration::from_millis(300));
}

#[test]
fn multi_answers_at_once_and_wakes_after_exec() {
    let s = start_server();
    let mut a = s.raw();
    let mut w = s.raw();
    // Inside MULTI an empty pop answers the null array at once.
    w.cmd_str(&["MULTI"]);
    w.cmd_str(&["BZPOPMIN", "m", "0"]);
    assert_eq!(w.cmd_str(&["EXEC"]), b"*1\r\n*-1\r\n");
    a.send(&common::encode_cmd(&[b"BZPOPMIN", b"m", b"5"]));
    wait_blocked(&mut w, 1);
    w.cmd_str(&["MULTI"]);
    w.cmd_str(&["ZADD", "m", "1", "a"]);
    w.cmd_str(&["ZADD", "m", "0", "b"]);
    assert_eq!(w.cmd_str(&["EXEC"]), b"*2\r\n:1\r\n:1\r\n");
    // Served after EXEC: it sees both adds.
    assert_eq!(a.read_reply(), b"*3\r\n$1\r\nm\r\n$1\r\nb\r\n$1\r\n0\r\n");
}

#[test]
fn keyspace_notifications_as_redis() {
    let s = start_server();
    let mut w = s.raw();
    let mut sub = s.raw();
    w.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    sub.cmd_str(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    w.cmd_str(&["ZADD", "z", "1", "a"]);
    w.cmd_str(&["ZINCRBY", "z", "1", "a"]);
    w.cmd_str(&["ZPOPMIN", "z"]);
    let mut events = Vec::new();
    for _ in 0..4 {
        let r = String::from_utf8_lossy(&sub.read_reply()).into_owned();
        let ev = r
            .split("__keyevent@0__:")
            .nth(2)
            .unwrap_or("")
            .split('\r')
            .next()
            .unwrap_or("")
            .to_string();
        events.push(ev);
    }
    assert_eq!(events, ["zadd", "zincr", "zpopmin", "del"]);
}

#[test]
fn restart_keeps_sorted_sets() {
    let s = common::start_server_with(&["--appendonly", "yes"]);
    let mut c = s.raw();
    c.cmd_str(&["ZADD", "small", "1.5", "a", "-inf", "b"]);
    let mut add = vec!["ZADD".to_string(), "large".to_string()];
    for i in 0..300 {
        add.push(format!("{}", i as f64 / 3.0));
        add.push(format!("m{i}"));
    }
    let v: Vec<&str> = add.iter().map(String::as_str).collect();
    c.cmd_str(&v);
    c.cmd_str(&["ZPOPMAX", "large", "10"]);
    c.cmd_str(&["BZPOPMIN", "large", "1"]);
    let before = (
        c.cmd_str(&["ZRANGE", "small", "0", "-1", "WITHSCORES"]),
        c.cmd_str(&["ZRANGE", "large", "0", "-1", "WITHSCORES"]),
    );
    let dir = s.dir().to_path_buf();
    let copy = tempdir_copy(&dir);
    drop(s);
    let s2 =
        common::start_server_with(&["--appendonly", "yes", "--dir", copy.to_str().unwrap_or(".")]);
    let mut c2 = s2.raw();
    let after = (
        c2.cmd_str(&["ZRANGE", "small", "0", "-1", "WITHSCORES"]),
        c2.cmd_str(&["ZRANGE", "large", "0", "-1", "WITHSCORES"]),
    );
    assert_eq!(before, after);
    let _ = std::fs::remove_dir_all(&copy);
}

/// Copies a data directory (the server's own is removed when it is dropped).
fn tempdir_copy(dir: &std::path::Path) -> std::path::PathBuf {
    let to = std::env::temp_dir().join(format!("zset-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&to);
    copy_dir(dir, &to);
    to
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).expect("copy");
        }
    }
}
