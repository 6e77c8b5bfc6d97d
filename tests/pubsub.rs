//! Pub/Sub: SUBSCRIBE / PSUBSCRIBE / SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH, SPUBLISH and
//! PUBSUB, in RESP2 and RESP3, compared frame by frame with Debian's redis-server 7.0; ACL
//! channel permissions and the disconnection of subscribers that lose one; the `pubsub`
//! output buffer limit; CLIENT LIST and INFO counts; and redis-rs as a subscriber.
//!
//! The differential scripts run each step on several connections of both servers; after
//! every step each connection sends `PING <token>` and everything it received before that
//! PING's reply is the step's outcome (no timing windows). Compared exactly, except where
//! Redis's own order is a hash table's: several replies of one argument-less UNSUBSCRIBE
//! (compared as a sorted set) and PUBSUB CHANNELS (sorted).

mod common;

use common::{Raw, encode_cmd, escape, redis_server, start_server, start_server_with};
use std::time::Duration;

/// One step: connection `conn` sends `cmd` (`HELLO 3` switches that connection to RESP3).
struct Step {
    conn: usize,
    cmd: Vec<Vec<u8>>,
    /// Sort this step's frames on the sending connection before comparing (replies whose
    /// order is a hash table's in Redis).
    sorted: bool,
    /// Do not compare what the sending connection gets (HELLO: version and id differ).
    quiet: bool,
}

fn step(conn: usize, line: &str) -> Step {
    Step {
        conn,
        cmd: line.split(' ').map(|w| w.as_bytes().to_vec()).collect(),
        sorted: false,
        quiet: false,
    }
}

/// A step whose reply on the sending connection is not compared (HELLO's map names the
/// server's version and the client's id).
fn quiet(conn: usize, line: &str) -> Step {
    Step {
        quiet: true,
        ..step(conn, line)
    }
}

fn sorted(conn: usize, line: &str) -> Step {
    Step {
        sorted: true,
        ..step(conn, line)
    }
}

fn step_bytes(conn: usize, args: &[&[u8]]) -> Step {
    Step {
        conn,
        cmd: args.iter().map(|a| a.to_vec()).collect(),
        sorted: false,
        quiet: false,
    }
}

/// Sends `PING <token>` and returns every reply that came before its answer (bulk `token`,
/// or `[pong, token]` in subscribed RESP2 mode), or `<closed>` if the connection closed.
/// Not for a connection inside MULTI (the PING would be queued).
fn until_ping(raw: &mut Raw, token: &str) -> Vec<Vec<u8>> {
    use std::io::Write as _;
    let mut frames = Vec::new();
    if raw
        .stream
        .write_all(&encode_cmd(&[b"PING", token.as_bytes()]))
        .is_err()
    {
        frames.push(b"<closed>".to_vec());
        return frames;
    }
    let bulk = format!("${}\r\n{token}\r\n", token.len()).into_bytes();
    let pong = [b"*2\r\n$4\r\npong\r\n".as_slice(), &bulk].concat();
    loop {
        match raw.try_read_reply() {
            Ok(r) if r == bulk || r == pong => return frames,
            Ok(r) => frames.push(r),
            Err(_) => {
                frames.push(b"<closed>".to_vec());
                return frames;
            }
        }
        assert!(frames.len() < 10_000, "no end of frames for {token}");
    }
}

/// Sorts pmessage runs (one publish matching several patterns of one client: Redis's order
/// is its pattern dict's) and, for `sort_all`, every frame.
fn normalise(mut frames: Vec<Vec<u8>>, sort_all: bool) -> Vec<Vec<u8>> {
    if sort_all {
        // Several subscription replies: the names in any order, the counts in order
        // (each reply carries what is left after it). Other replies sort whole.
        let mut heads = Vec::new();
        let mut counts = Vec::new();
        for f in frames {
            let tail = f.windows(3).rposition(|w| w == b"\r\n:");
            match tail {
                Some(i) if f.starts_with(b"*3\r\n") || f.starts_with(b">3\r\n") => {
                    counts.push(f[i..].to_vec());
                    heads.push(f[..i].to_vec());
                }
                _ => heads.push(sort_bulk_array(f)),
            }
        }
        heads.sort();
        heads.extend(counts);
        return heads;
    }
    let is_pmessage =
        |f: &[u8]| f.starts_with(b"*4\r\n$8\r\npmessage") || f.starts_with(b">4\r\n$8\r\npmessage");
    let mut i = 0;
    while i < frames.len() {
        let mut j = i;
        while j < frames.len() && is_pmessage(&frames[j]) {
            j += 1;
        }
        if j > i + 1 {
            frames[i..j].sort();
        }
        i = j.max(i + 1);
    }
    frames
}

/// An array of bulk strings with its elements sorted (PUBSUB CHANNELS lists a hash
/// table); anything else as it is.
fn sort_bulk_array(frame: Vec<u8>) -> Vec<u8> {
    let text = frame.clone();
    let mut parts = text.split(|&b| b == b'\n');
    let Some(head) = parts.next() else {
        return frame;
    };
    if !head.starts_with(b"*") {
        return frame;
    }
    // Bulk strings come as `$len\r` / `bytes\r` line pairs when they hold no newline.
    let lines: Vec<&[u8]> = parts.filter(|l| !l.is_empty()).collect();
    if !lines.len().is_multiple_of(2) || lines.iter().step_by(2).any(|l| !l.starts_with(b"$")) {
        return frame;
    }
    let mut items: Vec<Vec<u8>> = lines
        .chunks(2)
        .map(|pair| [pair[0], b"\n", pair[1], b"\n"].concat())
        .collect();
    items.sort();
    [[head, b"\n"].concat(), items.concat()].concat()
}

/// Runs `steps` on `nconn` connections of streamd and of redis-server; returns the
/// mismatches (empty when every frame agrees).
fn differential(nconn: usize, steps: &[Step]) -> Vec<String> {
    use std::io::Write as _;
    let redis = redis_server();
    let streamd = start_server();
    let mut sides: Vec<Vec<Raw>> = [streamd.port, redis.port]
        .iter()
        .map(|&p| (0..nconn).map(|_| Raw::connect(p)).collect())
        .collect();
    let mut diffs = Vec::new();
    // Connections inside MULTI (as the scripts are written: a barrier PING would be
    // queued there, so a queued command's one reply is read instead).
    let mut in_multi = vec![false; nconn];
    for (i, s) in steps.iter().enumerate() {
        let name = s.cmd[0].to_ascii_uppercase();
        let mut outcomes = Vec::new();
        for conns in sides.iter_mut() {
            let args: Vec<&[u8]> = s.cmd.iter().map(Vec::as_slice).collect();
            // A connection the server closed stays closed: its steps see `<closed>`.
            let _ = conns[s.conn].stream.write_all(&encode_cmd(&args));
            let per_conn: Vec<Vec<Vec<u8>>> = conns
                .iter_mut()
                .enumerate()
                .map(|(c, raw)| {
                    let queued = c == s.conn
                        && (in_multi[c] || name == b"MULTI")
                        && !matches!(&name[..], b"EXEC" | b"DISCARD" | b"RESET");
                    if queued {
                        let reply = raw
                            .try_read_reply()
                            .unwrap_or_else(|_| b"<closed>".to_vec());
                        return vec![reply];
                    }
                    let frames = until_ping(raw, &format!("t{i}-{c}"));
                    normalise(frames, s.sorted && c == s.conn)
                })
                .collect();
            outcomes.push(per_conn);
        }
        if name == b"MULTI" {
            // A refused MULTI (subscribed RESP2 mode) starts no transaction.
            in_multi[s.conn] = outcomes[0][s.conn] == [b"+OK\r\n".to_vec()];
        } else if matches!(&name[..], b"EXEC" | b"DISCARD" | b"RESET") {
            in_multi[s.conn] = false;
        }
        for (c, (ours, theirs)) in outcomes[0].iter().zip(&outcomes[1]).enumerate() {
            if !(s.quiet && c == s.conn) && ours != theirs {
                let show =
                    |f: &Vec<Vec<u8>>| f.iter().map(|x| escape(x)).collect::<Vec<_>>().join(" ");
                diffs.push(format!(
                    "step {i} (conn {} {}), conn {c}:\n  streamd {}\n  redis   {}",
                    s.conn,
                    escape(&s.cmd.join(&b' ')),
                    show(ours),
                    show(theirs),
                ));
            }
        }
    }
    diffs
}

fn assert_same(nconn: usize, steps: &[Step]) {
    let diffs = differential(nconn, steps);
    assert!(
        diffs.is_empty(),
        "{} divergences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[test]
fn subscribe_publish_and_unsubscribe_frames_match_redis_in_resp2() {
    assert_same(
        3,
        &[
            step(0, "SUBSCRIBE a b"),
            step(0, "SUBSCRIBE a"),
            step(1, "PSUBSCRIBE a* ?"),
            step(2, "PUBLISH a hello"),
            step(2, "PUBLISH b x"),
            step(2, "PUBLISH zz x"),
            step(2, "PUBSUB NUMSUB a b c"),
            step(2, "PUBSUB NUMPAT"),
            sorted(2, "PUBSUB CHANNELS"),
            step(2, "PUBSUB CHANNELS [a]"),
            step(0, "PING"),
            step(0, "PING hi"),
            step(0, "PING a b"),
            step(0, "XLEN x"),
            step(0, "MULTI"),
            step(0, "CLIENT LIST"),
            step(0, "HELLO 3"),
            step(0, "UNSUBSCRIBE nope a"),
            step(0, "PSUBSCRIBE x*"),
            sorted(0, "UNSUBSCRIBE"),
            step(0, "PUNSUBSCRIBE"),
            step(0, "PUNSUBSCRIBE"),
            step(0, "UNSUBSCRIBE"),
            step(0, "ECHO back"),
            step(1, "PUNSUBSCRIBE ?"),
            step(2, "PUBLISH a again"),
            step(1, "QUIT"),
            step(2, "PUBSUB NUMPAT"),
            step(2, "PUBSUB NOSUCH"),
            step(2, "PUBSUB CHANNELS a b"),
            step(2, "PUBSUB NUMPAT x"),
            step(2, "SUBSCRIBE"),
            step(2, "PUBLISH a"),
        ],
    );
}

#[test]
fn resp3_pushes_interleave_with_replies_like_redis() {
    assert_same(
        2,
        &[
            quiet(0, "HELLO 3"),
            step(0, "SUBSCRIBE c"),
            // A RESP3 subscriber may run anything; its own message comes before the reply.
            step(0, "PUBLISH c self"),
            step(0, "ECHO e"),
            step(0, "PING"),
            step(0, "PSUBSCRIBE c*"),
            step(0, "PUBLISH c twice"),
            step(1, "PUBLISH c other"),
            step(0, "UNSUBSCRIBE"),
            step(0, "PUNSUBSCRIBE nope"),
            step(0, "UNSUBSCRIBE"),
            step(0, "SSUBSCRIBE s"),
            step(1, "SPUBLISH s m"),
            step(0, "SPUBLISH s own"),
            // Back to RESP2 while subscribed: subscribed mode applies from then on.
            quiet(0, "HELLO 2"),
            step(0, "PING"),
            step(0, "ECHO refused"),
            step(0, "SUNSUBSCRIBE"),
            step(0, "SUNSUBSCRIBE"),
            step(0, "ECHO allowed"),
        ],
    );
}

#[test]
fn transactions_and_reset_interplay_like_redis() {
    assert_same(
        2,
        &[
            step(0, "MULTI"),
            step(0, "SUBSCRIBE m"),
            step(0, "PUBLISH m inside"),
            // Redis 7.0 writes the message inside EXEC's array (an element too many);
            // streamd sends it after the array, as 7.2+ (checked below, not against 7.0).
            quiet(0, "EXEC"),
            step(1, "PUBLISH m outside"),
            step(0, "RESET"),
            step(1, "PUBLISH m gone"),
            step(1, "PUBSUB NUMSUB m"),
            quiet(0, "HELLO 3"),
            step(0, "MULTI"),
            step(0, "SUBSCRIBE m"),
            step(0, "PUBLISH m inside3"),
            quiet(0, "EXEC"),
            step(0, "RESET"),
            step(0, "PSUBSCRIBE p*"),
            step(0, "RESET"),
            step(1, "PUBSUB NUMPAT"),
        ],
    );
}

/// A client's own message published inside EXEC or a script follows the whole reply, as
/// Redis 7.2+ sends it (Redis 7.2.6's "publish to self inside multi" and "inside script"):
/// 7.0 wrote it into the middle of EXEC's array. No 7.2 oracle here: written out.
#[test]
fn own_messages_inside_exec_or_a_script_follow_the_whole_reply() {
    let s = start_server();
    let mut r = Raw::connect(s.port);
    r.hello3();
    r.cmd_str(&["SUBSCRIBE", "foo"]);
    for cmd in [
        &["MULTI"][..],
        &["PING", "abc"],
        &["PUBLISH", "foo", "bar"],
        &["PING", "def"],
    ] {
        r.cmd_str(cmd);
    }
    let push = |m: &str| format!(">3\r\n$7\r\nmessage\r\n$3\r\nfoo\r\n$3\r\n{m}\r\n");
    assert_eq!(
        escape(&r.cmd_str(&["EXEC"])),
        escape(b"*3\r\n$3\r\nabc\r\n:1\r\n$3\r\ndef\r\n")
    );
    assert_eq!(escape(&r.read_reply()), escape(push("bar").as_bytes()));
    let script = "redis.call('publish', 'foo', 'vaz') return 'bla'";
    assert_eq!(r.cmd_str(&["EVAL", script, "0"]), b"$3\r\nbla\r\n");
    assert_eq!(escape(&r.read_reply()), escape(push("vaz").as_bytes()));
    assert_eq!(r.cmd_str(&["PING"]), b"+PONG\r\n");
}

#[test]
fn binary_channels_messages_and_glob_patterns_match_redis() {
    let long = vec![b'x'; 70_000];
    assert_same(
        3,
        &[
            step_bytes(0, &[b"SUBSCRIBE", b"\x00bin\r\n", b""]),
            step_bytes(
                1,
                &[b"PSUBSCRIBE", b"h[ae]llo", b"h\\*", b"[^a]*", b"*\x00*"],
            ),
            step_bytes(2, &[b"PUBLISH", b"\x00bin\r\n", b"\xff\x00\r\n"]),
            step_bytes(2, &[b"PUBLISH", b"", b"empty channel"]),
            step_bytes(2, &[b"PUBLISH", b"hello", &long]),
            step(2, "PUBLISH h* star"),
            step(2, "PUBLISH hxllo x"),
            step(2, "PUBLISH ab x"),
            step(2, "PUBSUB NUMPAT"),
            step_bytes(2, &[b"PUBSUB", b"NUMSUB", b"", b"\x00bin\r\n"]),
        ],
    );
}

/// A client's own message comes before PUBLISH's count (Redis 7.0, as the differential
/// scripts compare); the keyspace events of its own writes come after the reply (Redis
/// 7.2+, tests/notifications.rs).
#[test]
fn own_messages_precede_the_count_and_own_events_follow_the_reply() {
    let server = start_server();
    let mut r = server.raw();
    r.hello3();
    r.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", "E$t"]);
    r.cmd_str(&["SUBSCRIBE", "c", "__keyevent@0__:xadd"]);
    r.read_reply();
    let message = |ch: &str, m: &str| {
        format!(
            ">3\r\n$7\r\nmessage\r\n${}\r\n{ch}\r\n${}\r\n{m}\r\n",
            ch.len(),
            m.len()
        )
    };
    assert_eq!(
        escape(&r.cmd_str(&["PUBLISH", "c", "x"])),
        escape(message("c", "x").as_bytes())
    );
    assert_eq!(r.read_reply(), b":1\r\n");
    assert_eq!(r.cmd_str(&["XADD", "s", "1-1", "f", "v"]), b"$3\r\n1-1\r\n");
    assert_eq!(
        escape(&r.read_reply()),
        escape(message("__keyevent@0__:xadd", "s").as_bytes())
    );
}

// ---------------------------------------------------------------------------------------
// ACL channel permissions

#[test]
fn acl_channel_rules_match_redis() {
    assert_same(
        2,
        &[
            step(
                0,
                "ACL SETUSER u on nopass +@all ~* resetchannels &news.* &exact",
            ),
            step(0, "ACL GETUSER u"),
            step(1, "AUTH u x"),
            step(1, "SUBSCRIBE news.a exact"),
            step(1, "SUBSCRIBE other"),
            step(1, "SUBSCRIBE news.b other"),
            step(1, "PSUBSCRIBE news.*"),
            step(1, "PSUBSCRIBE news.a*"),
            step(1, "SSUBSCRIBE exact"),
            step(1, "SSUBSCRIBE exacto"),
            step(1, "UNSUBSCRIBE other"),
            step(1, "PUNSUBSCRIBE"),
            sorted(1, "UNSUBSCRIBE"),
            step(1, "SUNSUBSCRIBE"),
            step(1, "PUBLISH other x"),
            step(1, "PUBLISH news.z x"),
            step(1, "SPUBLISH other x"),
            step(1, "PUBSUB NUMSUB other"),
            step(0, "ACL DRYRUN u PUBLISH other x"),
            step(0, "ACL DRYRUN u PUBLISH news.x x"),
            step(0, "ACL DRYRUN u PSUBSCRIBE news.x*"),
            step(0, "ACL SETUSER u allchannels"),
            step(1, "SUBSCRIBE anything"),
            step(0, "ACL SETUSER v on nopass +@all ~*"),
            step(0, "ACL GETUSER v"),
            step(0, "ACL LIST"),
            step(0, "CONFIG SET acl-pubsub-default allchannels"),
            step(0, "ACL SETUSER w on nopass +@all ~*"),
            step(0, "ACL GETUSER w"),
            step(0, "ACL SETUSER w reset"),
            step(0, "ACL GETUSER w"),
            step(0, "CONFIG GET acl-pubsub-default"),
            step(0, "CONFIG SET acl-pubsub-default resetchannels"),
            step(0, "ACL SETUSER x"),
            step(0, "ACL GETUSER x"),
            step(1, "MULTI"),
            step(1, "PUBLISH news.q x"),
            step(0, "ACL SETUSER u resetchannels &other"),
            step(1, "EXEC"),
        ],
    );
}

/// The ACL LOG entry of a denied channel: reason `channel`, object the channel.
#[test]
fn denied_channels_are_logged_with_reason_channel() {
    let server = start_server();
    let mut admin = server.raw();
    admin.cmd_str(&["ACL", "SETUSER", "u", "on", "nopass", "+@all", "~*", "&ok"]);
    let mut u = server.raw();
    assert_eq!(u.cmd_str(&["AUTH", "u", "x"]), b"+OK\r\n");
    assert_eq!(
        u.cmd_str(&["PUBLISH", "secret", "x"]),
        b"-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"
    );
    let log = String::from_utf8_lossy(&admin.cmd_str(&["ACL", "LOG", "1"])).into_owned();
    assert!(log.contains("$6\r\nreason\r\n$7\r\nchannel\r\n"), "{log}");
    assert!(log.contains("$6\r\nobject\r\n$6\r\nsecret\r\n"), "{log}");
    assert!(log.contains("$7\r\ncontext\r\n$8\r\ntoplevel\r\n"), "{log}");
}

/// Redis 7 closes the connections of a user's subscribers when ACL SETUSER takes away a
/// channel they listen to; others of the same user (and subscribers it still allows) stay.
#[test]
fn subscribers_that_lose_a_channel_are_disconnected() {
    let server = start_server();
    let mut admin = server.raw();
    admin.cmd_str(&[
        "ACL", "SETUSER", "u", "on", "nopass", "+@all", "~*", "&a", "&b*",
    ]);
    let login = |raw: &mut Raw| assert_eq!(raw.cmd_str(&["AUTH", "u", "x"]), b"+OK\r\n");
    let (mut on_a, mut on_b, mut on_pattern, mut idle) =
        (server.raw(), server.raw(), server.raw(), server.raw());
    for r in [&mut on_a, &mut on_b, &mut on_pattern, &mut idle] {
        login(r);
    }
    on_a.cmd_str(&["SUBSCRIBE", "a"]);
    on_b.cmd_str(&["SUBSCRIBE", "bx"]);
    on_pattern.cmd_str(&["PSUBSCRIBE", "b*"]);
    // Adding a channel never disconnects anyone.
    assert_eq!(admin.cmd_str(&["ACL", "SETUSER", "u", "&c"]), b"+OK\r\n");
    assert_eq!(admin.cmd_str(&["PUBLISH", "a", "m"]), b":1\r\n");
    // Taking `a` away closes only the subscriber of `a`, and at once: PUBLISH counts 0.
    assert_eq!(
        admin.cmd_str(&["ACL", "SETUSER", "u", "resetchannels", "&b*", "&c"]),
        b"+OK\r\n"
    );
    assert_eq!(admin.cmd_str(&["PUBLISH", "a", "m"]), b":0\r\n");
    on_a.set_timeout(Duration::from_secs(5));
    assert!(
        on_a.is_closed(),
        "the subscriber of a revoked channel stays connected"
    );
    assert_eq!(admin.cmd_str(&["PUBLISH", "bx", "m"]), b":2\r\n");
    // `b*` literally is needed for the pattern; `bx` is still matched by `bx*`.
    assert_eq!(
        admin.cmd_str(&["ACL", "SETUSER", "u", "resetchannels", "&bx*"]),
        b"+OK\r\n"
    );
    assert_eq!(admin.cmd_str(&["PUBLISH", "bx", "m"]), b":1\r\n");
    on_pattern.set_timeout(Duration::from_secs(5));
    assert!(on_pattern.is_closed());
    assert_eq!(idle.cmd_str(&["PING"]), b"+PONG\r\n");
    // Deleting the user closes every connection it has.
    assert_eq!(admin.cmd_str(&["ACL", "DELUSER", "u"]), b":1\r\n");
    assert_eq!(
        admin.cmd_str(&["PUBSUB", "NUMSUB", "bx"]),
        b"*2\r\n$2\r\nbx\r\n:0\r\n"
    );
    on_b.set_timeout(Duration::from_secs(5));
    assert!(on_b.is_closed());
}

/// A subscriber changing its own user's channels is closed once its reply is out.
#[test]
fn a_subscriber_revoking_its_own_channel_gets_its_reply_then_is_closed() {
    let server = start_server();
    let mut c = server.raw();
    c.hello3();
    c.cmd_str(&["SUBSCRIBE", "mine"]);
    assert_eq!(
        c.cmd_str(&["ACL", "SETUSER", "default", "resetchannels"]),
        b"+OK\r\n"
    );
    c.set_timeout(Duration::from_secs(5));
    assert!(c.is_closed());
    let mut other = server.raw();
    assert_eq!(
        other.cmd_str(&["PUBSUB", "NUMSUB", "mine"]),
        b"*2\r\n$4\r\nmine\r\n:0\r\n"
    );
}

// ---------------------------------------------------------------------------------------
// Output buffer limit, counts, redis-rs

/// A subscriber that stops reading is cut off at the pubsub class's hard limit while the
/// server keeps serving everyone else; its memory comes back.
#[test]
fn a_stalled_subscriber_is_disconnected_and_the_server_keeps_serving() {
    let server = start_server_with(&["--client-output-buffer-limit", "pubsub 1mb 512kb 5"]);
    let mut publisher = server.raw();
    let mut stalled = server.raw();
    let _ = socket2::SockRef::from(&stalled.stream).set_recv_buffer_size(64 * 1024);
    stalled.cmd_str(&["SUBSCRIBE", "big"]);
    let payload = vec![b'p'; 100_000];
    let before = used_memory(&mut publisher);
    let mut counts = Vec::new();
    for _ in 0..200 {
        counts.push(publisher.cmd(&[b"PUBLISH", b"big", &payload]));
    }
    assert!(
        counts.contains(&b":0\r\n".to_vec()),
        "never cut off: {:?}",
        counts.last()
    );
    assert_eq!(publisher.cmd_str(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        publisher.cmd_str(&["PUBSUB", "NUMSUB", "big"]),
        b"*2\r\n$3\r\nbig\r\n:0\r\n"
    );
    stalled.set_timeout(Duration::from_secs(10));
    assert!(stalled.is_closed());
    let after = used_memory(&mut publisher);
    assert!(
        after < before + 4 * 1024 * 1024,
        "memory did not come back: {before} before, {after} after"
    );
    let info = String::from_utf8_lossy(&publisher.cmd_str(&["INFO", "stats"])).into_owned();
    assert!(
        info.contains("client_output_buffer_limit_disconnections:1"),
        "{info}"
    );
}

fn used_memory(raw: &mut Raw) -> u64 {
    let info = String::from_utf8_lossy(&raw.cmd_str(&["INFO", "memory"])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO")
}

#[test]
fn client_list_and_info_count_subscriptions() {
    let server = start_server();
    let mut c = server.raw();
    // One reply per channel: read both, so that every later reply read is the one of
    // the command just sent (and the server has run it before `other` looks).
    c.cmd_str(&["SUBSCRIBE", "a", "b"]);
    c.read_reply();
    c.cmd_str(&["PSUBSCRIBE", "p*"]);
    c.cmd_str(&["SSUBSCRIBE", "s"]);
    let mut other = server.raw();
    let list = String::from_utf8_lossy(&other.cmd_str(&["CLIENT", "LIST"])).into_owned();
    let line = list
        .lines()
        .find(|l| l.contains("sub=2"))
        .unwrap_or_else(|| panic!("no subscriber line in {list}"));
    assert!(line.contains(" flags=P "), "{line}");
    assert!(line.contains(" sub=2 psub=1 ssub=1 "), "{line}");
    let info = String::from_utf8_lossy(&other.cmd_str(&["INFO"])).into_owned();
    for field in [
        "pubsub_channels:2",
        "pubsub_patterns:1",
        "pubsubshard_channels:1",
        "pubsub_clients:1",
    ] {
        assert!(info.contains(field), "{field} missing in {info}");
    }
    // TYPE pubsub is the subscriber alone, TYPE normal everyone else.
    let only = |raw: &mut Raw, t: &str| {
        let text =
            String::from_utf8_lossy(&raw.cmd_str(&["CLIENT", "LIST", "TYPE", t])).into_owned();
        text.lines().filter(|l| l.contains("id=")).count()
    };
    assert_eq!(only(&mut other, "pubsub"), 1);
    assert_eq!(only(&mut other, "normal"), 1);
    assert_eq!(only(&mut other, "master"), 0);
    c.cmd_str(&["RESET"]);
    assert_eq!(only(&mut other, "pubsub"), 0);
    assert_eq!(only(&mut other, "normal"), 2);
    c.cmd_str(&["SUBSCRIBE", "again"]);
    assert_eq!(
        other.cmd_str(&["CLIENT", "KILL", "TYPE", "pubsub"]),
        b":1\r\n"
    );
    assert_eq!(other.cmd_str(&["PUBLISH", "again", "x"]), b":0\r\n");
    c.set_timeout(Duration::from_secs(5));
    assert!(c.is_closed());
    let info = String::from_utf8_lossy(&other.cmd_str(&["INFO", "stats"])).into_owned();
    assert!(
        info.contains("pubsub_channels:0\r\npubsub_patterns:0\r\npubsubshard_channels:0"),
        "{info}"
    );
}

/// `timeout` never closes a subscriber (it waits for messages, as Redis's
/// `clientsCronHandleTimeout` knows), while an idle ordinary client goes.
#[test]
fn idle_timeout_spares_subscribers() {
    let server = start_server_with(&["--timeout", "1"]);
    let mut subscriber = server.raw();
    subscriber.cmd_str(&["SUBSCRIBE", "quiet"]);
    let mut idle = server.raw();
    idle.cmd_str(&["PING"]);
    std::thread::sleep(Duration::from_millis(2500));
    idle.set_timeout(Duration::from_secs(5));
    assert!(idle.is_closed(), "the idle client was not closed");
    let mut publisher = server.raw();
    assert_eq!(publisher.cmd_str(&["PUBLISH", "quiet", "still"]), b":1\r\n");
    assert_eq!(
        subscriber.read_reply(),
        b"*3\r\n$7\r\nmessage\r\n$5\r\nquiet\r\n$5\r\nstill\r\n"
    );
}

/// Closing a subscriber's connection frees its subscriptions.
#[test]
fn a_closed_subscriber_leaves_no_subscription_behind() {
    let server = start_server();
    let mut c = server.raw();
    c.cmd_str(&["SUBSCRIBE", "gone"]);
    c.cmd_str(&["PSUBSCRIBE", "go*"]);
    drop(c);
    let mut p = server.raw();
    for _ in 0..100 {
        if p.cmd_str(&["PUBLISH", "gone", "x"]) == b":0\r\n" {
            assert_eq!(p.cmd_str(&["PUBSUB", "NUMPAT"]), b":0\r\n");
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the closed subscriber still receives");
}

/// redis-rs over RESP3 (pushes to a channel, as its multiplexed connection delivers them)
/// sees the messages, in order, with their patterns, on the connection that also runs
/// ordinary commands.
#[tokio::test]
async fn redis_rs_resp3_subscriber_receives_messages_in_order() {
    let server = start_server();
    let url = format!("{}?protocol=resp3", server.url());
    let client = redis::Client::open(url).expect("client");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let config = redis::AsyncConnectionConfig::new()
        .set_push_sender(tx)
        .set_response_timeout(None);
    let mut con = client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connection");
    con.subscribe("orders").await.expect("subscribe");
    con.psubscribe("ord*").await.expect("psubscribe");
    let mut publisher = common::client(server.port).await;
    for i in 0..50 {
        let n: i64 = redis::cmd("PUBLISH")
            .arg("orders")
            .arg(i.to_string())
            .query_async(&mut publisher)
            .await
            .expect("publish");
        assert_eq!(n, 2);
    }
    // The subscribed RESP3 connection still answers commands.
    let pong: String = redis::cmd("PING")
        .query_async(&mut con)
        .await
        .expect("ping");
    assert_eq!(pong, "PONG");
    let (mut direct, mut via_pattern) = (Vec::new(), Vec::new());
    while direct.len() + via_pattern.len() < 100 {
        let push = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a push within 10 s")
            .expect("pushes go on");
        let text = |v: &redis::Value| match v {
            redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            other => format!("{other:?}"),
        };
        match push.kind {
            redis::PushKind::Message => direct.push(text(&push.data[1])),
            redis::PushKind::PMessage => {
                assert_eq!(text(&push.data[0]), "ord*");
                via_pattern.push(text(&push.data[2]));
            }
            _ => {}
        }
    }
    let want: Vec<String> = (0..50).map(|i| i.to_string()).collect();
    assert_eq!(direct, want);
    assert_eq!(via_pattern, want);
}

/// The core writes an idle subscriber's messages into its socket itself
/// (`core/direct_write.rs`); once the socket is full the rest goes through the
/// connection's queue. A subscriber that does not read while 20 MB are published (far
/// more than the socket buffers hold) then gets every message exactly once and in
/// order, and a command it sends afterwards is answered after them.
#[test]
fn messages_stay_in_order_when_a_subscribers_socket_fills() {
    let server = start_server();
    let mut sub = server.raw();
    sub.set_timeout(Duration::from_secs(30));
    sub.cmd_str(&["SUBSCRIBE", "ch"]);
    let mut publisher = server.raw();
    publisher.set_timeout(Duration::from_secs(30));
    let pad = "x".repeat(1000);
    let total = 20_000;
    for batch in 0..20 {
        let mut pipeline = Vec::new();
        for i in batch * 1000..(batch + 1) * 1000 {
            let payload = format!("{i:06}{pad}");
            pipeline.extend(encode_cmd(&[b"PUBLISH", b"ch", payload.as_bytes()]));
        }
        publisher.send(&pipeline);
        for reply in publisher.read_replies(1000) {
            assert_eq!(reply, b":1\r\n");
        }
    }
    sub.send(&encode_cmd(&[b"PING"]));
    for i in 0..total {
        let reply = sub.read_reply();
        let want = format!("{i:06}{pad}");
        let head = format!("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n${}\r\n", want.len());
        assert!(
            reply.starts_with(head.as_bytes()) && reply.ends_with(format!("{want}\r\n").as_bytes()),
            "message {i}: {}",
            escape(&reply[..reply.len().min(80)])
        );
    }
    assert_eq!(sub.read_reply(), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n");
}
