//! Exact-bytes tests of the wire protocol against the real binary: inline commands,
//! pipelining, protocol errors (reply text and closed connection), malformed and partial input,
//! RESP2 vs RESP3 shapes, HELLO, unknown-command text, and the real tools and clients users
//! point at a server (`redis-cli`, `redis-benchmark`, redis-rs in both protocols).
//!
//! Every expected byte string here was checked against Redis 7.0 (Debian's `redis-server`),
//! except where a comment says the newest Redis differs and streamd follows it.

mod common;

use common::*;
use redis::Value;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use streamd::core::REDIS_VERSION;

/// HELLO's reply, exactly, for a connection with `id` switched to protocol `proto`.
fn hello_reply(proto: u8, id: &str) -> Vec<u8> {
    let fields = [
        ("server", "$5\r\nredis\r\n".to_string()),
        (
            "version",
            format!("${}\r\n{REDIS_VERSION}\r\n", REDIS_VERSION.len()),
        ),
        ("proto", format!(":{proto}\r\n")),
        ("id", format!(":{id}\r\n")),
        ("mode", "$10\r\nstandalone\r\n".to_string()),
        ("role", "$6\r\nmaster\r\n".to_string()),
        ("modules", "*0\r\n".to_string()),
    ];
    let mut out = if proto == 3 {
        "%7\r\n".to_string()
    } else {
        "*14\r\n".to_string()
    };
    for (k, v) in fields {
        out.push_str(&format!("${}\r\n{k}\r\n{v}", k.len()));
    }
    out.into_bytes()
}

/// The connection's id, from `CLIENT ID`, as the digits of the integer reply.
fn client_id(r: &mut Raw) -> String {
    let reply = r.cmd(&[b"CLIENT", b"ID"]);
    assert!(reply.starts_with(b":"), "{}", escape(&reply));
    String::from_utf8(reply[1..reply.len() - 2].to_vec()).unwrap()
}

/// Sends `input` on a fresh connection, expects exactly `reply` and then the server closing
/// the connection (what Redis does after a protocol error).
fn assert_protocol_error(port: u16, input: &[u8], reply: &[u8]) {
    let mut r = Raw::connect(port);
    r.send(input);
    let got = r.read_to_close();
    assert_eq!(
        escape(&got),
        escape(reply),
        "input {:?}: reply then close expected",
        escape(&input[..input.len().min(80)])
    );
}

// ---------------------------------------------------------------------------------------------
// Inline commands

#[test]
fn inline_commands_are_answered_like_multibulk_ones() {
    let s = start_server();
    let mut r = s.raw();
    let cases: &[(&[u8], &[u8])] = &[
        (b"PING\r\n", b"+PONG\r\n"),
        (b"PING\n", b"+PONG\r\n"),
        (b"ping hello\r\n", b"$5\r\nhello\r\n"),
        (b"  ECHO   spaced  \r\n", b"$6\r\nspaced\r\n"),
        (b"ECHO \"a b\"\r\n", b"$3\r\na b\r\n"),
        (b"ECHO 'a\\'b'\r\n", b"$3\r\na'b\r\n"),
        (b"ECHO \"\\x41\\n\"\r\n", b"$2\r\nA\n\r\n"),
        (b"ECHO \"\"\r\n", b"$0\r\n\r\n"),
        // Blank lines are skipped without a reply.
        (b"\r\n   \r\n\nPING\r\n", b"+PONG\r\n"),
        (
            b"ECHO a b c\r\n",
            b"-ERR wrong number of arguments for 'echo' command\r\n",
        ),
    ];
    for (input, reply) in cases {
        r.send(input);
        assert_eq!(
            escape(&r.read_reply()),
            escape(reply),
            "input {:?}",
            escape(input)
        );
    }
}

#[test]
fn inline_unbalanced_quotes_are_a_protocol_error_that_closes_the_connection() {
    let s = start_server();
    for input in [
        &b"ECHO \"unbalanced\r\n"[..],
        b"\"unterminated\r\nPING\r\n",
        // A closing quote must be followed by a space.
        b"ECHO \"a\"b\r\nPING\r\n",
    ] {
        assert_protocol_error(
            s.port,
            input,
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        );
    }
}

#[test]
fn inline_request_longer_than_64k_without_newline_is_refused() {
    let s = start_server();
    assert_protocol_error(
        s.port,
        &vec![b'x'; 70_000],
        b"-ERR Protocol error: too big inline request\r\n",
    );
    // A long inline line that does end is fine.
    let mut r = s.raw();
    let mut line = b"PING ".to_vec();
    line.extend(std::iter::repeat_n(b'a', 70_000));
    line.extend_from_slice(b"\r\n");
    r.send(&line);
    let reply = r.read_reply();
    assert!(reply.starts_with(b"$70000\r\naaa"), "{}", reply.len());
}

// ---------------------------------------------------------------------------------------------
// Pipelining and partial input

#[test]
fn pipelined_commands_in_one_write_are_answered_in_order() {
    let s = start_server();
    let mut r = s.raw();
    let mut input = Vec::new();
    let mut expected = Vec::new();
    for i in 0..300 {
        let arg = format!("message-{i}");
        match i % 4 {
            0 => {
                input.extend(encode_cmd(&[b"ECHO", arg.as_bytes()]));
                expected.extend(format!("${}\r\n{arg}\r\n", arg.len()).into_bytes());
            }
            1 => {
                input.extend_from_slice(b"PING\r\n");
                expected.extend_from_slice(b"+PONG\r\n");
            }
            2 => {
                input.extend(encode_cmd(&[b"CLIENT", b"GETNAME"]));
                expected.extend_from_slice(b"$-1\r\n");
            }
            _ => {
                input.extend(encode_cmd(&[b"NOSUCHCMD", arg.as_bytes()]));
                expected.extend(
                    format!(
                        "-ERR unknown command 'NOSUCHCMD', with args beginning with: '{arg}' \r\n"
                    )
                    .into_bytes(),
                );
            }
        }
    }
    r.send(&input);
    let got = r.read_exact_bytes(expected.len());
    assert_eq!(escape(&got), escape(&expected));
    // Nothing more comes.
    r.set_timeout(Duration::from_millis(200));
    assert!(
        r.try_read_reply().is_err(),
        "extra bytes {:?}",
        escape(r.pending())
    );
}

#[test]
fn a_pipeline_sent_one_byte_at_a_time_gives_the_same_replies() {
    let s = start_server();
    let mut r = s.raw();
    let mut input = encode_cmd(&[b"ECHO", b"split\r\nacross"]);
    input.extend_from_slice(b"ECHO \"in line\"\r\n");
    input.extend(encode_cmd(&[b"PING"]));
    for b in &input {
        r.send(std::slice::from_ref(b));
    }
    assert_eq!(r.read_reply(), b"$13\r\nsplit\r\nacross\r\n");
    assert_eq!(r.read_reply(), b"$7\r\nin line\r\n");
    assert_eq!(r.read_reply(), b"+PONG\r\n");
}

#[test]
fn replies_before_a_protocol_error_in_the_same_write_are_sent() {
    let s = start_server();
    assert_protocol_error(
        s.port,
        b"PING\r\n*1\r\n:5\r\n",
        b"+PONG\r\n-ERR Protocol error: expected '$', got ':'\r\n",
    );
}

#[test]
fn a_half_sent_command_waits_for_the_rest_while_others_are_served() {
    let s = start_server();
    let mut slow = s.raw();
    slow.send(b"*2\r\n$4\r\nECHO\r\n$5\r\nhel");
    let mut other = s.raw();
    assert_eq!(other.cmd(&[b"PING"]), b"+PONG\r\n");
    slow.set_timeout(Duration::from_millis(200));
    assert!(slow.try_read_reply().is_err(), "replied to half a command");
    slow.set_timeout(Duration::from_secs(10));
    slow.send(b"lo\r\n");
    assert_eq!(slow.read_reply(), b"$5\r\nhello\r\n");
}

#[test]
fn a_client_that_disconnects_mid_command_does_not_disturb_others() {
    let s = start_server();
    let mut other = s.raw();
    for half in [
        &b"*3\r\n$4\r\nECHO\r\n$5\r\nhel"[..],
        b"*2\r\n$4\r\nECHO\r\n$100000000\r\nabc",
        b"*5\r\n",
        b"PING",
        b"*1\r\n$4\r\nPI",
    ] {
        let mut r = s.raw();
        r.send(half);
        assert_eq!(other.cmd(&[b"PING"]), b"+PONG\r\n");
        drop(r);
        assert_eq!(other.cmd(&[b"ECHO", b"still"]), b"$5\r\nstill\r\n");
    }
    // New connections are still accepted.
    assert_eq!(s.raw().cmd(&[b"PING"]), b"+PONG\r\n");
}

// ---------------------------------------------------------------------------------------------
// Protocol errors

#[test]
fn protocol_errors_reply_redis_text_and_close_the_connection() {
    let s = start_server();
    const MBULK: &[u8] = b"-ERR Protocol error: invalid multibulk length\r\n";
    const BULK: &[u8] = b"-ERR Protocol error: invalid bulk length\r\n";
    let mut too_long_count = b"*".to_vec();
    too_long_count.extend(std::iter::repeat_n(b'1', 70_000));
    let cases: &[(&[u8], &[u8])] = &[
        // Multibulk length above INT_MAX.
        (b"*2147483648\r\n", MBULK),
        (b"*abc\r\n", MBULK),
        (b"*+1\r\n$4\r\nPING\r\n", MBULK),
        (b"*01\r\n$4\r\nPING\r\n", MBULK),
        // Negative, non-numeric, oversized (above proto-max-bulk-len 512 MB) bulk lengths.
        (b"*1\r\n$-5\r\n", BULK),
        (b"*2\r\n$4\r\nECHO\r\n$-1\r\n", BULK),
        (b"*1\r\n$abc\r\n", BULK),
        (b"*1\r\n$+4\r\nPING\r\n", BULK),
        (b"*1\r\n$04\r\nPING\r\n", BULK),
        (b"*1\r\n$536870913\r\n", BULK),
        (b"*1\r\n$99999999999\r\n", BULK),
        (b"*1\r\n$111111111111111111111111111111\r\n", BULK),
        // Array items must be bulk strings.
        (
            b"*1\r\n:5\r\n",
            b"-ERR Protocol error: expected '$', got ':'\r\n",
        ),
        (
            b"*1\r\n+PING\r\n",
            b"-ERR Protocol error: expected '$', got '+'\r\n",
        ),
        (
            &too_long_count,
            b"-ERR Protocol error: too big mbulk count string\r\n",
        ),
    ];
    for (input, reply) in cases {
        assert_protocol_error(s.port, input, reply);
    }
    // The server is fine afterwards.
    assert_eq!(s.raw().cmd(&[b"PING"]), b"+PONG\r\n");
}

#[test]
fn resp_lookalikes_that_are_not_multibulk_are_inline_commands() {
    let s = start_server();
    let mut r = s.raw();
    // Only '*' starts a multibulk request; "$-5" is an inline command name.
    r.send(b"$-5\r\n");
    assert_eq!(
        r.read_reply(),
        b"-ERR unknown command '$-5', with args beginning with: \r\n"
    );
    // Empty and null multibulks are skipped silently.
    r.send(b"*0\r\n*-1\r\nPING\r\n");
    assert_eq!(r.read_reply(), b"+PONG\r\n");
    // An empty command name is an unknown command.
    assert_eq!(
        r.cmd(&[b""]),
        b"-ERR unknown command '', with args beginning with: \r\n"
    );
}

#[test]
fn unauthenticated_clients_get_the_small_request_limits() {
    let s = start_server_with(&["--requirepass", "pw"]);
    assert_protocol_error(
        s.port,
        b"*11\r\n",
        b"-ERR Protocol error: unauthenticated multibulk length\r\n",
    );
    assert_protocol_error(
        s.port,
        b"*1\r\n$16385\r\n",
        b"-ERR Protocol error: unauthenticated bulk length\r\n",
    );
    let mut r = s.raw();
    // At the limits: accepted by the parser. Redis checks arity before authentication.
    let mut ten = vec![&b"ECHO"[..]];
    ten.extend(std::iter::repeat_n(&b"x"[..], 9));
    assert_eq!(
        r.cmd(&ten),
        b"-ERR wrong number of arguments for 'echo' command\r\n"
    );
    let big = vec![b'y'; 16384];
    assert_eq!(
        r.cmd(&[b"ECHO", &big]),
        b"-NOAUTH Authentication required.\r\n"
    );
    // After AUTH the limits are the normal ones.
    assert_eq!(r.cmd(&[b"AUTH", b"pw"]), b"+OK\r\n");
    let mut eleven = ten.clone();
    eleven.push(b"x");
    assert_eq!(
        r.cmd(&eleven),
        b"-ERR wrong number of arguments for 'echo' command\r\n"
    );
    let bigger = vec![b'y'; 100_000];
    let reply = r.cmd(&[b"ECHO", &bigger]);
    assert_eq!(reply.len(), 100_000 + b"$100000\r\n\r\n".len());
}

#[test]
fn garbage_bytes_never_stop_the_server() {
    let s = start_server();
    let mut other = s.raw();
    // Deterministic pseudo-random bytes (xorshift), with and without line breaks.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..8 {
        let mut garbage = Vec::with_capacity(64 * 1024);
        for _ in 0..64 * 1024 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let b = (x >> 24) as u8;
            garbage.push(if round % 2 == 0 && b.is_multiple_of(50) {
                b'\n'
            } else {
                b
            });
        }
        let mut r = s.raw();
        // The server may answer errors, close the connection, or wait for more; any is fine.
        let _ = r.stream.set_write_timeout(Some(Duration::from_secs(5)));
        let _ = std::io::Write::write_all(&mut r.stream, &garbage);
        drop(r);
        assert_eq!(other.cmd(&[b"PING"]), b"+PONG\r\n", "after round {round}");
    }
    assert_eq!(s.raw().cmd(&[b"PING"]), b"+PONG\r\n");
}

// ---------------------------------------------------------------------------------------------
// RESP2 vs RESP3, HELLO

#[test]
fn null_replies_have_the_protocol_s_shape() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(r.cmd(&[b"CLIENT", b"GETNAME"]), b"$-1\r\n");
    r.hello3();
    assert_eq!(r.cmd(&[b"CLIENT", b"GETNAME"]), b"_\r\n");
    r.cmd(&[b"HELLO", b"2"]);
    assert_eq!(r.cmd(&[b"CLIENT", b"GETNAME"]), b"$-1\r\n");
}

#[test]
fn hello_replies_the_seven_field_map_or_flat_array() {
    let s = start_server();
    let mut r = s.raw();
    let id = client_id(&mut r);
    // HELLO with no argument keeps RESP2: a flat array of 14.
    assert_eq!(escape(&r.cmd(&[b"HELLO"])), escape(&hello_reply(2, &id)));
    assert_eq!(
        escape(&r.cmd(&[b"HELLO", b"3"])),
        escape(&hello_reply(3, &id))
    );
    // In RESP3 a bare HELLO reports proto 3, still as a map.
    assert_eq!(escape(&r.cmd(&[b"HELLO"])), escape(&hello_reply(3, &id)));
    assert_eq!(
        escape(&r.cmd(&[b"HELLO", b"2", b"SETNAME", b"conn-a"])),
        escape(&hello_reply(2, &id))
    );
    assert_eq!(r.cmd(&[b"CLIENT", b"GETNAME"]), b"$6\r\nconn-a\r\n");
    // SETNAME given twice: the last wins.
    r.cmd(&[b"HELLO", b"3", b"SETNAME", b"a", b"SETNAME", b"b"]);
    assert_eq!(r.cmd(&[b"CLIENT", b"GETNAME"]), b"$1\r\nb\r\n");
    // Without a password, AUTH default <anything> succeeds (the default user is nopass).
    assert_eq!(
        escape(&r.cmd(&[b"HELLO", b"3", b"AUTH", b"default", b"whatever"])),
        escape(&hello_reply(3, &id))
    );
}

#[test]
fn hello_errors_leave_the_protocol_unchanged() {
    let s = start_server();
    let mut r = s.raw();
    let cases: &[(&[&[u8]], &[u8])] = &[
        (
            &[b"HELLO", b"4"],
            b"-NOPROTO unsupported protocol version\r\n",
        ),
        (
            &[b"HELLO", b"1"],
            b"-NOPROTO unsupported protocol version\r\n",
        ),
        (
            &[b"HELLO", b"0"],
            b"-NOPROTO unsupported protocol version\r\n",
        ),
        (
            &[b"HELLO", b"-1"],
            b"-NOPROTO unsupported protocol version\r\n",
        ),
        (
            &[b"HELLO", b"4", b"SETNAME", b"a"],
            b"-NOPROTO unsupported protocol version\r\n",
        ),
        (
            &[b"HELLO", b"x"],
            b"-ERR Protocol version is not an integer or out of range\r\n",
        ),
        (
            &[b"HELLO", b"3", b"foo"],
            b"-ERR Syntax error in HELLO option 'foo'\r\n",
        ),
        (
            &[b"HELLO", b"3", b"SETNAME"],
            b"-ERR Syntax error in HELLO option 'SETNAME'\r\n",
        ),
        (
            &[b"HELLO", b"3", b"AUTH", b"a"],
            b"-ERR Syntax error in HELLO option 'AUTH'\r\n",
        ),
        (
            &[b"HELLO", b"3", b"AUTH", b"nosuchuser", b"b"],
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
        ),
        (
            &[b"HELLO", b"3", b"SETNAME", b"a b"],
            b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
        ),
    ];
    for (cmd, reply) in cases {
        assert_eq!(
            escape(&r.cmd(cmd)),
            escape(reply),
            "{:?}",
            cmd.iter().map(|a| escape(a)).collect::<Vec<_>>()
        );
        assert_eq!(
            r.cmd(&[b"CLIENT", b"GETNAME"]),
            b"$-1\r\n",
            "still RESP2, no name"
        );
    }
}

#[test]
fn hello_before_auth_needs_the_auth_option() {
    let s = start_server_with(&["--requirepass", "pw"]);
    let mut r = s.raw();
    let id = client_id_after_auth_check(&mut r);
    // The newest Redis names `<proto>` in this text; 7.0 said "HELLO AUTH <user> <pass>".
    assert_eq!(
        escape(&r.cmd(&[b"HELLO", b"3"])),
        escape(
            b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the \
              HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
              select the RESP protocol version at the same time\r\n"
        )
    );
    assert_eq!(
        r.cmd(&[b"HELLO", b"3", b"AUTH", b"default", b"wrong"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(
        escape(&r.cmd(&[b"HELLO", b"3", b"AUTH", b"default", b"pw"])),
        escape(&hello_reply(3, &id))
    );
    assert_eq!(r.cmd(&[b"PING"]), b"+PONG\r\n");
}

/// The id of a connection that must stay unauthenticated: CLIENT ID is refused before AUTH, so
/// authenticate, read it, and RESET (which, with a password set, drops the authentication).
fn client_id_after_auth_check(r: &mut Raw) -> String {
    assert_eq!(
        r.cmd(&[b"CLIENT", b"ID"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(r.cmd(&[b"AUTH", b"pw"]), b"+OK\r\n");
    let id = client_id(r);
    assert_eq!(r.cmd(&[b"RESET"]), b"+RESET\r\n");
    assert_eq!(r.cmd(&[b"PING"]), b"-NOAUTH Authentication required.\r\n");
    id
}

#[test]
fn redis_rs_handshake_pipeline_gets_one_reply_per_command() {
    let s = start_server();
    let mut r = s.raw();
    let id = client_id(&mut r);
    let mut input = encode_cmd(&[b"HELLO", b"3"]);
    input.extend(encode_cmd(&[
        b"CLIENT",
        b"SETINFO",
        b"LIB-NAME",
        b"redis-rs",
    ]));
    input.extend(encode_cmd(&[b"CLIENT", b"SETINFO", b"LIB-VER", b"1.8.1"]));
    input.extend(encode_cmd(&[b"SELECT", b"3"]));
    r.send(&input);
    assert_eq!(escape(&r.read_reply()), escape(&hello_reply(3, &id)));
    assert_eq!(r.read_reply(), b"+OK\r\n");
    assert_eq!(r.read_reply(), b"+OK\r\n");
    assert_eq!(r.read_reply(), b"+OK\r\n");
}

// ---------------------------------------------------------------------------------------------
// Error texts

#[test]
fn unknown_commands_and_arity_errors_have_redis_text() {
    let s = start_server();
    let mut r = s.raw();
    let a60 = "a".repeat(60);
    let b60 = "b".repeat(60);
    let c60 = "c".repeat(60);
    let z200 = "z".repeat(200);
    let z128 = "z".repeat(128);
    let cases: Vec<(Vec<&[u8]>, String)> = vec![
        (
            vec![b"FOOBAR", b"a", b"b"],
            "-ERR unknown command 'FOOBAR', with args beginning with: 'a' 'b' \r\n".into(),
        ),
        (
            vec![b"foobar"],
            "-ERR unknown command 'foobar', with args beginning with: \r\n".into(),
        ),
        // A trailing space in the name is part of it.
        (
            vec![b"FOOBAR "],
            "-ERR unknown command 'FOOBAR ', with args beginning with: \r\n".into(),
        ),
        (
            vec![b"foo", b"x "],
            "-ERR unknown command 'foo', with args beginning with: 'x ' \r\n".into(),
        ),
        // CR and LF would break the reply line: they become spaces.
        (
            vec![b"a\r\nb "],
            "-ERR unknown command 'a  b ', with args beginning with: \r\n".into(),
        ),
        (
            vec![b"foo", b"x\ny"],
            "-ERR unknown command 'foo', with args beginning with: 'x y' \r\n".into(),
        ),
        // Arguments are listed until the list reaches 128 characters, the last one cut.
        (
            vec![
                b"FOOBAR",
                a60.as_bytes(),
                b60.as_bytes(),
                c60.as_bytes(),
                b"d",
            ],
            format!(
                "-ERR unknown command 'FOOBAR', with args beginning with: '{a60}' '{b60}' 'cc' \r\n"
            ),
        ),
        (
            vec![b"FOOBAR", z200.as_bytes()],
            format!("-ERR unknown command 'FOOBAR', with args beginning with: '{z128}' \r\n"),
        ),
        (
            vec![b"PING", b"a", b"b"],
            "-ERR wrong number of arguments for 'ping' command\r\n".into(),
        ),
        (
            vec![b"ECHO"],
            "-ERR wrong number of arguments for 'echo' command\r\n".into(),
        ),
        (
            vec![b"CLIENT", b"NOSUCH"],
            "-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.\r\n".into(),
        ),
        (
            vec![b"SELECT", b"16"],
            "-ERR DB index is out of range\r\n".into(),
        ),
        (
            vec![b"SELECT", b"x"],
            "-ERR value is not an integer or out of range\r\n".into(),
        ),
    ];
    for (cmd, reply) in cases {
        assert_eq!(
            escape(&r.cmd(&cmd)),
            escape(reply.as_bytes()),
            "{:?}",
            cmd.iter().map(|a| escape(a)).collect::<Vec<_>>()
        );
    }
}

#[test]
fn quit_answers_ok_and_closes() {
    let s = start_server();
    let mut r = s.raw();
    r.send(b"QUIT\r\nPING\r\n");
    assert_eq!(r.read_to_close(), b"+OK\r\n");
}

// ---------------------------------------------------------------------------------------------
// redis-cli and redis-benchmark

/// Runs a tool with a deadline; panics with a clear message if it is not installed.
fn run_tool(program: &str, args: &[&str], deadline: Duration) -> Output {
    let path = format!("/usr/bin/{program}");
    assert!(
        std::path::Path::new(&path).exists(),
        "{path} not found: these tests need it; install it with `apt-get install redis-tools` \
         (scripts/test does)"
    );
    let mut child = Command::new(&path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {path}: {e}"));
    let start = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if start.elapsed() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "{program} {args:?} did not finish within {deadline:?}; stdout {:?}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("wait_with_output")
}

fn cli(port: u16, args: &[&str]) -> String {
    let port = port.to_string();
    let mut all = vec!["-p", &port];
    all.extend_from_slice(args);
    let out = run_tool("redis-cli", &all, Duration::from_secs(20));
    assert!(out.status.success(), "redis-cli {all:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn redis_cli_non_interactive_resp2_and_resp3() {
    let s = start_server();
    assert_eq!(cli(s.port, &["ping"]), "PONG\n");
    assert_eq!(cli(s.port, &["echo", "a b"]), "a b\n");
    assert_eq!(cli(s.port, &["--no-raw", "client", "getname"]), "(nil)\n");
    assert_eq!(
        cli(s.port, &["foo", "bar"]),
        "ERR unknown command 'foo', with args beginning with: 'bar' \n\n"
    );
    // -3: redis-cli sends HELLO 3 first, then shows RESP3 types.
    assert_eq!(cli(s.port, &["-3", "ping"]), "PONG\n");
    assert_eq!(
        cli(s.port, &["-3", "--no-raw", "client", "getname"]),
        "(nil)\n"
    );
    let hello = cli(s.port, &["-3", "--no-raw", "hello", "3"]);
    let lines: Vec<&str> = hello.lines().collect();
    assert_eq!(lines.len(), 7, "{hello}");
    assert_eq!(lines[0], "1# \"server\" => \"redis\"");
    assert_eq!(lines[1], format!("2# \"version\" => \"{REDIS_VERSION}\""));
    assert_eq!(lines[2], "3# \"proto\" => (integer) 3");
    assert!(lines[3].starts_with("4# \"id\" => (integer) "), "{hello}");
    assert_eq!(lines[4], "5# \"mode\" => \"standalone\"");
    assert_eq!(lines[5], "6# \"role\" => \"master\"");
    assert_eq!(lines[6], "7# \"modules\" => (empty array)");
    let config = cli(s.port, &["-3", "--no-raw", "config", "get", "port"]);
    assert_eq!(config, format!("1# \"port\" => \"{}\"\n", s.port));
}

#[test]
fn redis_benchmark_ping_completes() {
    let s = start_server();
    let port = s.port.to_string();
    let out = run_tool(
        "redis-benchmark",
        &["-p", &port, "-t", "ping", "-n", "10000", "-q"],
        Duration::from_secs(120),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    // -q rewrites a progress line with '\r'; the final results end with '\n'.
    let results: Vec<&str> = text
        .split(['\r', '\n'])
        .filter(|l| l.contains("requests per second"))
        .collect();
    assert_eq!(results.len(), 2, "{text:?}");
    assert!(results[0].starts_with("PING_INLINE: "), "{text:?}");
    assert!(results[1].starts_with("PING_MBULK: "), "{text:?}");
    assert_eq!(s.raw().cmd(&[b"PING"]), b"+PONG\r\n");
}

// ---------------------------------------------------------------------------------------------
// Pipelines over a large keyspace: the connection parses ahead and prefetches keys
// (server/lookahead.rs, core/prefetch.rs), which must change no reply and no order.

/// Puts `n` string keys `fill:<i>` = `<i>` into the connection's database, in pipelined
/// writes of 500, so that the keyspace is past the size where connections parse ahead.
fn fill_keys(r: &mut Raw, n: usize) {
    for start in (0..n).step_by(500) {
        let end = (start + 500).min(n);
        let mut input = Vec::new();
        for i in start..end {
            let (k, v) = (format!("fill:{i}"), i.to_string());
            input.extend(encode_cmd(&[b"SET", k.as_bytes(), v.as_bytes()]));
        }
        r.send(&input);
        for reply in r.read_replies(end - start) {
            assert_eq!(reply, b"+OK\r\n");
        }
    }
}

/// Keys enough that every connection on the database parses ahead.
const LARGE_KEYSPACE: usize = streamd::core::prefetch::LOOKAHEAD_MIN_KEYS + 100;

/// Sends `input` in one write to streamd and to Redis, each filled with
/// [`LARGE_KEYSPACE`] keys first (and `AUTH pw` for that when `auth`), and compares
/// everything each sends back until it closes the connection.
fn same_as_redis_until_close(args: &[&str], auth: bool, input: &[u8]) {
    let s = start_server_with(args);
    let redis = redis_server_with(args);
    let mut replies = Vec::new();
    for port in [s.port, redis.port] {
        let mut filler = Raw::connect(port);
        if auth {
            assert_eq!(filler.cmd(&[b"AUTH", b"pw"]), b"+OK\r\n");
        }
        fill_keys(&mut filler, LARGE_KEYSPACE);
        let mut r = Raw::connect(port);
        r.send(input);
        replies.push(r.read_to_close());
    }
    assert_eq!(
        escape(&replies[0]),
        escape(&replies[1]),
        "streamd, then Redis"
    );
}

#[test]
fn a_pipeline_over_a_large_keyspace_is_answered_as_redis_answers_it() {
    let mut input = Vec::new();
    let mut cmd = |args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        input.extend(encode_cmd(&args));
    };
    // More keyed commands in a row than the look-ahead holds, reading and writing the
    // same keys, present and missing.
    for i in 0..40 {
        let (k, f) = (format!("k{}", i % 7), format!("fill:{}", i * 13));
        cmd(&["SET", &k, &i.to_string()]);
        cmd(&["GET", &f]);
        cmd(&["INCR", &k]);
        cmd(&["DEL", &format!("fill:{}", i * 3)]);
        cmd(&["EXISTS", &format!("fill:{}", i * 3)]);
        cmd(&["GET", "missing"]);
    }
    // Errors between keyed commands: arity (too short to have its key), unknown command.
    cmd(&["GET"]);
    cmd(&["GET", "k3"]);
    cmd(&["NOSUCH", "k3"]);
    cmd(&["GET", "k4"]);
    // SELECT in the middle: the commands after it run on the other database.
    cmd(&["SET", "k1", "zero"]);
    cmd(&["SELECT", "1"]);
    cmd(&["GET", "k1"]);
    cmd(&["SET", "k1", "one"]);
    cmd(&["GET", "fill:1"]);
    cmd(&["SELECT", "0"]);
    cmd(&["GET", "k1"]);
    // A transaction, its commands queued.
    cmd(&["MULTI"]);
    cmd(&["SET", "m", "1"]);
    cmd(&["INCR", "m"]);
    cmd(&["GET", "fill:7"]);
    cmd(&["EXEC"]);
    // Other types and multi-key commands.
    cmd(&["APPEND", "k2", "x"]);
    cmd(&["STRLEN", "k2"]);
    cmd(&["MSET", "a", "1", "b", "2"]);
    cmd(&["MGET", "a", "b", "fill:2", "missing"]);
    cmd(&["LPUSH", "l", "a", "b", "c"]);
    cmd(&["LRANGE", "l", "0", "-1"]);
    cmd(&["HSET", "h", "f", "v"]);
    cmd(&["HGETALL", "h"]);
    cmd(&["GET", "l"]);
    // Values in allocations of their own (the look-ahead prefetches them).
    let long = "v".repeat(100);
    cmd(&["SET", "long", &long]);
    cmd(&["GET", "long"]);
    cmd(&["APPEND", "long", "w"]);
    cmd(&["GET", "long"]);
    cmd(&["ZADD", "z", "1", "a", "2", "b"]);
    cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]);
    cmd(&["XADD", "s", "1-1", "f", "v"]);
    cmd(&["XADD", "s", "1-2", "f", "w"]);
    cmd(&["XLEN", "s"]);
    cmd(&["XRANGE", "s", "-", "+"]);
    cmd(&["LPOP", "l"]);
    cmd(&["DBSIZE"]);
    // A protocol error after keyed commands ends it: their replies, then the error.
    cmd(&["SET", "last", "1"]);
    cmd(&["GET", "last"]);
    input.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$abc\r\n");
    input.extend(encode_cmd(&[b"SET", b"never", b"1"]));
    same_as_redis_until_close(&[], false, &input);
}

/// XADDs to many streams in one write over a large keyspace: the look-ahead walks each
/// stream's path to its tail node before the batch runs (core/prefetch.rs), while the
/// commands in between reshape those paths (new nodes every three entries, trims that
/// drop nodes, deletions that empty the tail node, a stream deleted and made again).
#[test]
fn xadds_to_many_streams_in_one_pipeline_are_answered_as_redis_answers_them() {
    let mut input = Vec::new();
    let mut cmd = |args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        input.extend(encode_cmd(&args));
    };
    for round in 0..12u64 {
        for i in 0..40u64 {
            let (key, id) = (
                format!("s:{}", i % 23),
                format!("{}-{}", round * 100 + i, 1),
            );
            cmd(&[
                "XADD",
                &key,
                &id,
                "bidder",
                &i.to_string(),
                "amount",
                &round.to_string(),
            ]);
            match i % 10 {
                3 => {
                    let next = format!("{}-2", round * 100 + i);
                    cmd(&["XADD", &key, "MAXLEN", "4", &next, "f", "v"]);
                }
                5 => cmd(&["XDEL", &key, &id]),
                7 => cmd(&["XTRIM", &key, "MINID", &format!("{}", round * 100)]),
                _ => {}
            }
        }
        cmd(&["XADD", "fill:5", "1-1", "f", "v"]);
        cmd(&["XADD", "nosuch", "NOMKSTREAM", "1-1", "f", "v"]);
        cmd(&["XADD", "s:1", "1-1", "f", "v"]);
        if round == 6 {
            cmd(&["DEL", "s:2"]);
        }
    }
    for i in 0..23 {
        let key = format!("s:{i}");
        cmd(&["XLEN", &key]);
        cmd(&["XRANGE", &key, "-", "+"]);
    }
    cmd(&["QUIT"]);
    same_as_redis_until_close(&["--stream-node-max-entries", "3"], false, &input);
}

#[test]
fn an_unauthenticated_pipeline_over_a_large_keyspace_keeps_the_small_limits_until_auth() {
    let mut input = Vec::new();
    // Refused one by one before AUTH; after it, in the same write, a request past the
    // unauthenticated limits (21 arguments) is accepted.
    for i in 0..20 {
        input.extend(encode_cmd(&[b"GET", format!("fill:{i}").as_bytes()]));
    }
    input.extend(encode_cmd(&[b"AUTH", b"pw"]));
    let mut mset: Vec<Vec<u8>> = vec![b"MSET".to_vec()];
    for i in 0..10 {
        mset.push(format!("m{i}").into_bytes());
        mset.push(i.to_string().into_bytes());
    }
    let mset: Vec<&[u8]> = mset.iter().map(Vec::as_slice).collect();
    input.extend(encode_cmd(&mset));
    for i in 0..20 {
        input.extend(encode_cmd(&[b"GET", format!("m{}", i % 10).as_bytes()]));
    }
    // RESET logs the client out again: the small limits are back for what follows it.
    input.extend(encode_cmd(&[b"RESET"]));
    input.extend(encode_cmd(&[b"GET", b"m1"]));
    input.extend_from_slice(b"*11\r\n");
    same_as_redis_until_close(&["--requirepass", "pw"], true, &input);
}

#[test]
fn commands_pipelined_after_a_blocked_one_wait_for_it_over_a_large_keyspace() {
    let s = start_server();
    let redis = redis_server();
    for port in [s.port, redis.port] {
        let mut other = Raw::connect(port);
        fill_keys(&mut other, LARGE_KEYSPACE);
        let mut r = Raw::connect(port);
        let mut input = encode_cmd(&[b"SET", b"before", b"1"]);
        input.extend(encode_cmd(&[b"BLPOP", b"queue", b"0"]));
        for i in 0..20 {
            input.extend(encode_cmd(&[b"SET", format!("after:{i}").as_bytes(), b"1"]));
        }
        input.extend(encode_cmd(&[b"GET", b"before"]));
        r.send(&input);
        assert_eq!(r.read_reply(), b"+OK\r\n", "port {port}");
        wait_blocked(&mut other, 1);
        // Parsed perhaps, but not run while BLPOP waits.
        assert_eq!(
            other.cmd_str(&["EXISTS", "after:0"]),
            b":0\r\n",
            "port {port}"
        );
        assert_eq!(other.cmd_str(&["LPUSH", "queue", "v"]), b":1\r\n");
        assert_eq!(r.read_reply(), b"*2\r\n$5\r\nqueue\r\n$1\r\nv\r\n");
        for _ in 0..20 {
            assert_eq!(r.read_reply(), b"+OK\r\n", "port {port}");
        }
        assert_eq!(r.read_reply(), b"$1\r\n1\r\n");
        assert_eq!(other.cmd_str(&["EXISTS", "after:19"]), b":1\r\n");
    }
}

// ---------------------------------------------------------------------------------------------
// redis-rs

/// The `CLIENT INFO` line of this connection.
async fn client_info(c: &mut redis::aio::MultiplexedConnection) -> String {
    match redis::cmd("CLIENT")
        .arg("INFO")
        .query_async::<Value>(c)
        .await
        .unwrap()
    {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        Value::VerbatimString { format, text } => {
            assert_eq!(format, redis::VerbatimFormat::Text);
            text
        }
        other => panic!("CLIENT INFO gave {other:?}"),
    }
}

#[tokio::test]
async fn redis_rs_resp2_handshake_ping_and_pipeline() {
    let s = start_server();
    let mut c = client(s.port).await;
    let info = client_info(&mut c).await;
    // The connect-time CLIENT SETINFO pipeline took effect.
    assert!(info.contains(" resp=2"), "{info}");
    assert!(info.contains(" lib-name=redis-rs "), "{info}");
    assert!(info.contains(" lib-ver=1.8.1"), "{info}");
    let pong: String = redis::cmd("PING").query_async(&mut c).await.unwrap();
    assert_eq!(pong, "PONG");
    let (echo, pong, name): (String, String, Option<String>) = redis::pipe()
        .cmd("ECHO")
        .arg("hi")
        .cmd("PING")
        .cmd("CLIENT")
        .arg("GETNAME")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!((echo.as_str(), pong.as_str(), name), ("hi", "PONG", None));
    let raw: Value = redis::cmd("HELLO").query_async(&mut c).await.unwrap();
    let Value::Array(items) = raw else {
        panic!("{raw:?}")
    };
    assert_eq!(items.len(), 14);
    let err = redis::cmd("FOOBAR")
        .arg("x")
        .query_async::<Value>(&mut c)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("ERR"), "{err:?}");
    assert!(
        err.to_string()
            .contains("unknown command 'FOOBAR', with args beginning with: 'x'"),
        "{err}"
    );
    // The connection is still usable after an error.
    let pong: String = redis::cmd("PING").query_async(&mut c).await.unwrap();
    assert_eq!(pong, "PONG");
}

#[tokio::test]
async fn redis_rs_resp3_handshake_ping_and_pipeline() {
    let s = start_server();
    let mut c = client_resp3(s.port).await;
    let info = client_info(&mut c).await;
    assert!(info.contains(" resp=3"), "{info}");
    assert!(info.contains(" lib-name=redis-rs "), "{info}");
    let pong: String = redis::cmd("PING").query_async(&mut c).await.unwrap();
    assert_eq!(pong, "PONG");
    let replies: Vec<Value> = redis::pipe()
        .cmd("CLIENT")
        .arg("GETNAME")
        .cmd("CONFIG")
        .arg("GET")
        .arg("port")
        .cmd("HELLO")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(replies[0], Value::Nil);
    assert_eq!(
        replies[1],
        Value::Map(vec![(
            Value::BulkString(b"port".to_vec()),
            Value::BulkString(s.port.to_string().into_bytes())
        )])
    );
    let Value::Map(hello) = &replies[2] else {
        panic!("{:?}", replies[2])
    };
    assert_eq!(hello.len(), 7);
    assert_eq!(
        hello[2],
        (Value::BulkString(b"proto".to_vec()), Value::Int(3))
    );
}

#[tokio::test]
async fn redis_rs_selects_the_database_of_the_url() {
    let s = start_server();
    let mut c = connect_url(&format!("redis://127.0.0.1:{}/3", s.port)).await;
    let info = client_info(&mut c).await;
    assert!(info.contains(" db=3 "), "{info}");
}

#[tokio::test]
async fn redis_rs_authenticates_with_a_password() {
    let s = start_server_with(&["--requirepass", "secret"]);
    for url in [
        format!("redis://:secret@127.0.0.1:{}/", s.port),
        format!("redis://:secret@127.0.0.1:{}/?protocol=resp3", s.port),
    ] {
        let mut c = connect_url(&url).await;
        let pong: String = redis::cmd("PING").query_async(&mut c).await.unwrap();
        assert_eq!(pong, "PONG", "{url}");
    }
    let client = redis::Client::open(format!("redis://:wrong@127.0.0.1:{}/", s.port)).unwrap();
    let cfg = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let err = client
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .expect_err("a wrong password must fail the connect");
    assert_eq!(err.kind(), redis::ErrorKind::AuthenticationFailed, "{err}");
}
