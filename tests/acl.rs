//! Access control: ACL commands, permission checks on stream commands, AUTH and HELLO AUTH,
//! requirepass, the ACL file and protected mode.
//!
//! The ACL command replies and errors, and the NOPERM errors, are compared byte for byte with
//! Debian's redis-server 7.0 running the same script. Normalised, and nothing else:
//! - `ACL GENPASS`: random, so only the length is compared.
//! - `ACL LOG`: `age-seconds` (a clock reading) and `client-info` (addresses, ids, buffer
//!   sizes differ between servers; the `user=` and `cmd=` fields are checked separately),
//!   and the three fields Redis 7.2 added after them (`entry-id`, `timestamp-created`,
//!   `timestamp-last-updated`), which 7.0 lacks: checked on their own.
//! - `ACL CAT stream`: the order is a hash table's in Redis, and streamd has the stream
//!   commands added after 7.0 (XACKDEL, XDELEX, XNACK, XCFGSET): compared as sets, with
//!   those named.
//! - `ACL HELP`: the last line is `Print this help.` since Redis 8 (7.0: `Prints this help.`).

mod common;

use common::{Raw, escape, redis_server, start_server, start_server_with};
use std::collections::BTreeSet;
use std::process::Command;

/// Sends `args` to both servers and returns (redis's reply, streamd's reply).
fn both(redis: &mut Raw, ours: &mut Raw, args: &[&str]) -> (Vec<u8>, Vec<u8>) {
    (redis.cmd_str(args), ours.cmd_str(args))
}

/// Sends `args` to both servers and asserts the replies are identical.
fn same(redis: &mut Raw, ours: &mut Raw, args: &[&str]) -> Vec<u8> {
    let (want, got) = both(redis, ours, args);
    assert_eq!(
        escape(&got),
        escape(&want),
        "reply to {args:?} differs (left: streamd, right: redis-server)"
    );
    got
}

/// Fields of an `ACL LOG` entry that Redis 7.2 added (7.0 has the first seven).
const LOG_FIELDS_7_2: [&str; 3] = ["entry-id", "timestamp-created", "timestamp-last-updated"];

/// Replaces the `age-seconds` value and the `client-info` text of `ACL LOG` replies (RESP2
/// bulk strings or RESP3 doubles) with placeholders, each entry's header with `<entry>`,
/// and leaves out the 7.2 fields.
fn normalise_log(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply).into_owned();
    let lines: Vec<&str> = text.split("\r\n").collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let field = lines[i];
        if (field.starts_with('*') || field.starts_with('%')) && lines.get(i + 2) == Some(&"count")
        {
            out.push("<entry>".into());
            i += 1;
            continue;
        }
        if LOG_FIELDS_7_2.contains(&field) && out.last().is_some_and(|l| l.starts_with('$')) {
            out.pop();
            i += 2;
            continue;
        }
        out.push(lines[i].to_string());
        if (field == "age-seconds" || field == "client-info") && i + 1 < lines.len() {
            if lines[i + 1].starts_with('$') {
                out.push("$?".into());
                out.push(format!("<{field}>"));
                i += 3;
                continue;
            }
            out.push(format!(",<{field}>"));
            i += 2;
            continue;
        }
        i += 1;
    }
    out.join("\r\n")
}

/// The integers that follow `field` in an `ACL LOG` reply, in order.
fn log_integers(reply: &[u8], field: &str) -> Vec<i64> {
    let text = String::from_utf8_lossy(reply).into_owned();
    let lines: Vec<&str> = text.split("\r\n").collect();
    lines
        .windows(2)
        .filter(|w| w[0] == field)
        .filter_map(|w| w[1].strip_prefix(':')?.parse().ok())
        .collect()
}

/// The elements of a RESP2 array of bulk strings, as a set.
fn bulk_set(reply: &[u8]) -> BTreeSet<String> {
    String::from_utf8_lossy(reply)
        .split("\r\n")
        .skip(1)
        .filter(|l| !l.starts_with('$') && !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn acl_commands_reply_like_redis() {
    let r = redis_server();
    let s = start_server();
    let (mut redis, mut ours) = (r.raw(), s.raw());
    let script: &[&[&str]] = &[
        &["ACL", "WHOAMI"],
        &["ACL", "USERS"],
        &["ACL", "LIST"],
        &[
            "ACL",
            "SETUSER",
            "alice",
            "on",
            ">pw",
            "~orders:*",
            "+@stream",
            "-@dangerous",
        ],
        &["ACL", "GETUSER", "alice"],
        &["ACL", "LIST"],
        &["ACL", "USERS"],
        // Rule errors.
        &["ACL", "SETUSER", "bob", "foo"],
        &["ACL", "SETUSER", "bob", "+nosuch"],
        &["ACL", "SETUSER", "bob", "+@nosuch"],
        &["ACL", "SETUSER", "bob", "<nopw"],
        &["ACL", "SETUSER", "bob", "!0123"],
        &["ACL", "SETUSER", "bob", "#abc"],
        &["ACL", "SETUSER", "bob", "~*", "~foo"],
        &["ACL", "SETUSER", "bob", "allkeys", "%R~foo"],
        &["ACL", "SETUSER", "bob", "+xgroup|nosuch"],
        &["ACL", "SETUSER", "bob", "+xgroup|create|x"],
        &["ACL", "SETUSER", "bob", "-select|0"],
        &["ACL", "SETUSER", "bob", "%X~foo"],
        &["ACL", "SETUSER", "bob", "%~foo"],
        &["ACL", "SETUSER", "bob", "allchannels", "&x"],
        &["ACL", "SETUSER", "b ob"],
        // A failed SETUSER creates nothing.
        &["ACL", "GETUSER", "bob"],
        &[
            "ACL", "SETUSER", "bob", "%R~foo", "%W~bar", "%RW~baz", "&chan", "on", "nopass",
        ],
        &["ACL", "SETUSER", "bob", "+xgroup", "-xgroup|create"],
        // Redis lists single-command rules in its hash table's (random) order: one
        // command (with its subcommands) per user keeps the comparison exact.
        &["ACL", "SETUSER", "gina", "+select|0", "+select|1"],
        &["ACL", "GETUSER", "bob"],
        &[
            "ACL", "SETUSER", "carol", "+@all", "-xadd", ">a", ">b", "<a", "allkeys",
        ],
        &["ACL", "GETUSER", "carol"],
        &["ACL", "SETUSER", "carol", "reset"],
        &[
            "ACL",
            "SETUSER",
            "dave",
            "+@stream",
            "-xadd",
            "+xadd",
            "skip-sanitize-payload",
        ],
        &[
            "ACL",
            "SETUSER",
            "erin",
            "+@all",
            "-@dangerous",
            "nocommands",
            "+xgroup|create",
        ],
        &[
            "ACL",
            "SETUSER",
            "frank",
            "allcommands",
            "-@write",
            "allchannels",
        ],
        &["ACL", "LIST"],
        &["ACL", "GETUSER", "nosuch"],
        &["ACL", "DELUSER", "default"],
        &["ACL", "DELUSER", "nosuch", "bob"],
        &["ACL", "USERS"],
        &["ACL", "CAT"],
        &["ACL", "CAT", "nosuch"],
        &["ACL", "GENPASS", "0"],
        &["ACL", "GENPASS", "5000"],
        &["ACL", "GENPASS", "x"],
        &["ACL", "LOG", "x"],
        &["ACL", "LOG", "RESET"],
        &["ACL", "LOG"],
        &["ACL", "LOAD"],
        &["ACL", "SAVE"],
        &["ACL", "NOSUCH"],
        &["ACL"],
        &["ACL", "SETUSER"],
        &["ACL", "GETUSER", "a", "b"],
        &["ACL", "DRYRUN", "alice", "xadd", "foo", "*", "a", "b"],
        &["ACL", "DRYRUN", "alice", "xadd", "orders:1", "*", "a", "b"],
        &["ACL", "DRYRUN", "alice", "ping"],
        &[
            "ACL", "DRYRUN", "alice", "xgroup", "create", "orders:1", "g", "$",
        ],
        &["ACL", "DRYRUN", "nouser", "ping"],
        &["ACL", "DRYRUN", "alice", "nosuch"],
        &["ACL", "DRYRUN", "alice", "xadd"],
        &["AUTH", "alice", "wrong"],
        &["AUTH", "nobody", "pw"],
        &["AUTH", "a", "b", "c"],
        &["AUTH", "pw"],
        &["HELLO", "2", "AUTH", "alice", "wrong"],
        &["CLIENT", "KILL", "USER", "nosuch"],
        &["CLIENT", "KILL", "USER", "alice"],
    ];
    for cmd in script {
        same(&mut redis, &mut ours, cmd);
    }
    // GENPASS: random hex of the asked size.
    for (bits, len) in [(None, 64), (Some("5"), 2), (Some("4096"), 1024)] {
        let mut args = vec!["ACL", "GENPASS"];
        args.extend(bits);
        let (a, b) = both(&mut redis, &mut ours, &args);
        assert_eq!(a.len(), b.len(), "{args:?}");
        let text = String::from_utf8_lossy(&b);
        let pass = text.lines().nth(1).unwrap_or_default();
        assert_eq!(pass.len(), len);
        assert!(
            pass.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }
    // ACL CAT <category>: the same commands, plus the stream commands newer than 7.0 and
    // streamd's own (XGROUP SETDLQ).
    let (a, b) = both(&mut redis, &mut ours, &["ACL", "CAT", "stream"]);
    let (a, b) = (bulk_set(&a), bulk_set(&b));
    let newer: BTreeSet<String> = [
        "xackdel",
        "xdelex",
        "xnack",
        "xcfgset",
        "xidmprecord",
        "xgroup|setdlq",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert!(
        a.is_subset(&b),
        "missing from streamd: {:?}",
        a.difference(&b)
    );
    assert!(
        b.difference(&a).all(|c| newer.contains(c)),
        "extra in streamd: {:?}",
        b.difference(&a)
    );
    // ACL HELP: identical but for the 8.x wording of the last line.
    let (a, b) = both(&mut redis, &mut ours, &["ACL", "HELP"]);
    let a = String::from_utf8_lossy(&a).replace("Prints this help.", "Print this help.");
    assert_eq!(String::from_utf8_lossy(&b), a);
    // RESP3 shapes: GETUSER is a map with a set of flags; the null user is `_`.
    // (HELLO's version and id differ by design.)
    both(&mut redis, &mut ours, &["HELLO", "3"]);
    for cmd in [
        &["ACL", "GETUSER", "alice"][..],
        &["ACL", "GETUSER", "frank"],
        &["ACL", "GETUSER", "nosuch"],
        &["ACL", "USERS"],
        &["ACL", "LIST"],
    ] {
        same(&mut redis, &mut ours, cmd);
    }
}

#[test]
fn stream_permissions_and_noperm_errors_match_redis() {
    let r = redis_server();
    let s = start_server();
    let (mut redis_admin, mut ours_admin) = (r.raw(), s.raw());
    same(
        &mut redis_admin,
        &mut ours_admin,
        &[
            "ACL",
            "SETUSER",
            "alice",
            "on",
            ">pw",
            "~orders:*",
            "+@stream",
            "-@dangerous",
            "+@transaction",
        ],
    );
    same(&mut redis_admin, &mut ours_admin, &["ACL", "LOG", "RESET"]);
    let (mut redis, mut ours) = (r.raw(), s.raw());
    let script: &[&[&str]] = &[
        &["AUTH", "alice", "pw"],
        &["ACL", "WHOAMI"],
        &["XADD", "orders:1", "1-1", "item", "book"],
        &["XADD", "other", "1-1", "item", "book"],
        &["XRANGE", "orders:1", "-", "+"],
        &["XRANGE", "other", "-", "+"],
        &["XLEN", "other"],
        &["PING"],
        &["XGROUP", "CREATE", "orders:1", "g", "0"],
        &["XGROUP", "CREATE", "other", "g", "0", "MKSTREAM"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "orders:1", ">"],
        &["XREAD", "STREAMS", "orders:1", "other", "0", "0"],
        &["XREAD", "BLOCK", "100", "STREAMS", "other", "$"],
        &["CLIENT", "LIST"],
        &["CONFIG", "GET", "maxclients"],
        &["MULTI"],
        &["XADD", "orders:1", "2-1", "item", "pen"],
        &["XLEN", "foo"],
        &["PING"],
        &["EXEC"],
        &["XLEN", "orders:1"],
        &["AUTH", "default", "nopass-accepts-anything"],
        &["ACL", "WHOAMI"],
        &["PING"],
    ];
    for cmd in script {
        same(&mut redis, &mut ours, cmd);
    }
    // The log: newest first, counts grouped, contexts multi/toplevel; reasons key/command.
    let (a, b) = both(&mut redis_admin, &mut ours_admin, &["ACL", "LOG"]);
    assert_eq!(normalise_log(&b), normalise_log(&a));
    let text = String::from_utf8_lossy(&b);
    assert!(text.contains("user=alice"), "{text}");
    // Redis 7.2's fields: one id per entry, given in creation order from 0 (a grouped
    // entry keeps its id when it moves to the front); an entry created no later than
    // its last update, both recent.
    let ids = log_integers(&b, "entry-id");
    let created = log_integers(&b, "timestamp-created");
    let updated = log_integers(&b, "timestamp-last-updated");
    let n = ids.len();
    assert!(n >= 2, "{text}");
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..n as i64).collect::<Vec<_>>(), "{text}");
    assert_eq!((created.len(), updated.len()), (n, n), "{text}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    for (c, u) in created.iter().zip(&updated) {
        assert!(c <= u && now - c < 600_000, "{text}");
    }
    both(&mut redis_admin, &mut ours_admin, &["HELLO", "3"]);
    let (a, b) = both(&mut redis_admin, &mut ours_admin, &["ACL", "LOG", "2"]);
    assert_eq!(normalise_log(&b), normalise_log(&a));
}

#[test]
fn permissions_changed_after_queueing_fail_at_exec() {
    let r = redis_server();
    let s = start_server();
    let (mut redis_admin, mut ours_admin) = (r.raw(), s.raw());
    let (mut redis, mut ours) = (r.raw(), s.raw());
    same(
        &mut redis_admin,
        &mut ours_admin,
        &[
            "ACL", "SETUSER", "alice", "on", "nopass", "allkeys", "+@all",
        ],
    );
    for cmd in [
        &["AUTH", "alice", "x"][..],
        &["MULTI"],
        &["XADD", "s", "1-1", "f", "v"],
        &["XLEN", "s"],
    ] {
        same(&mut redis, &mut ours, cmd);
    }
    same(
        &mut redis_admin,
        &mut ours_admin,
        &["ACL", "SETUSER", "alice", "-xadd", "resetkeys", "~t"],
    );
    same(&mut redis, &mut ours, &["EXEC"]);
}

/// Redis 7.2+ re-runs a woken blocked command with every check (7.0 served it unchecked:
/// not compared with the 7.0 server here).
#[test]
fn a_blocked_read_whose_permission_is_revoked_gets_noperm() {
    let s = start_server();
    let mut admin = s.raw();
    admin.cmd_str(&["ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all"]);
    let mut alice = s.raw();
    assert_eq!(alice.cmd_str(&["AUTH", "alice", "pw"]), b"+OK\r\n");
    common::send(&mut alice, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    // CLIENT LIST shows the blocked client once it is registered.
    for _ in 0..500 {
        let list = String::from_utf8_lossy(&admin.cmd_str(&["CLIENT", "LIST"])).into_owned();
        if list.contains("flags=b") {
            assert!(list.contains("user=alice"), "{list}");
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    admin.cmd_str(&["ACL", "SETUSER", "alice", "resetkeys", "~other"]);
    admin.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
    assert_eq!(
        alice.read_reply(),
        b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
    );
}

#[tokio::test]
async fn redis_rs_authenticates_with_user_and_password() {
    use redis::AsyncCommands;
    let s = start_server_with(&["--requirepass", "s3cret"]);
    let mut admin = common::connect_url(&format!("redis://:s3cret@127.0.0.1:{}/", s.port)).await;
    let ok: String = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "alice",
            "on",
            ">pw",
            "~orders:*",
            "+@stream",
            "-@dangerous",
        ])
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    // RESP2: AUTH alice pw; RESP3: HELLO 3 AUTH alice pw.
    for url in [
        format!("redis://alice:pw@127.0.0.1:{}/", s.port),
        format!("redis://alice:pw@127.0.0.1:{}/?protocol=resp3", s.port),
    ] {
        let mut alice = common::connect_url(&url).await;
        let id: String = alice
            .xadd("orders:1", "*", &[("item", "book")])
            .await
            .unwrap();
        assert!(id.contains('-'));
        let err = alice
            .xadd::<_, _, _, _, String>("payments:1", "*", &[("x", "1")])
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some("NOPERM"), "{err}");
        let who: redis::RedisResult<String> = redis::cmd("ACL")
            .arg("WHOAMI")
            .query_async(&mut alice)
            .await;
        assert_eq!(who.unwrap_err().code(), Some("NOPERM"));
    }
    // A wrong password is refused at connect time.
    let client = redis::Client::open(format!("redis://alice:nope@127.0.0.1:{}/", s.port)).unwrap();
    let err = client.get_multiplexed_async_connection().await.unwrap_err();
    assert_eq!(err.kind(), redis::ErrorKind::AuthenticationFailed, "{err}");
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .expect("redis-cli (apt-get install redis-tools)");
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

#[test]
fn redis_cli_user_and_pass_flags_and_hello_auth() {
    let s = start_server_with(&["--requirepass", "s3cret"]);
    assert_eq!(
        redis_cli(s.port, &["XLEN", "s"]),
        "NOAUTH Authentication required."
    );
    assert_eq!(
        redis_cli(
            s.port,
            &["-a", "s3cret", "--no-auth-warning", "ACL", "WHOAMI"]
        ),
        "default"
    );
    assert_eq!(
        redis_cli(
            s.port,
            &[
                "-a",
                "s3cret",
                "--no-auth-warning",
                "ACL",
                "SETUSER",
                "bob",
                "on",
                ">b0b",
                "allkeys",
                "+@read",
                "+acl|whoami",
                "+client|info"
            ]
        ),
        "OK"
    );
    assert_eq!(
        redis_cli(
            s.port,
            &[
                "--user",
                "bob",
                "--pass",
                "b0b",
                "--no-auth-warning",
                "ACL",
                "WHOAMI"
            ]
        ),
        "bob"
    );
    assert_eq!(
        redis_cli(
            s.port,
            &[
                "--user",
                "bob",
                "--pass",
                "b0b",
                "--no-auth-warning",
                "XADD",
                "s",
                "*",
                "f",
                "v"
            ]
        ),
        "NOPERM this user has no permissions to run the 'xadd' command"
    );
    // redis-cli -3 sends HELLO 3 AUTH user pass.
    assert_eq!(
        redis_cli(
            s.port,
            &[
                "-3",
                "--user",
                "bob",
                "--pass",
                "b0b",
                "--no-auth-warning",
                "ACL",
                "WHOAMI"
            ]
        ),
        "bob"
    );
    let mut raw = s.raw();
    let hello = raw.cmd_str(&["HELLO", "3", "AUTH", "bob", "b0b", "SETNAME", "x"]);
    assert!(hello.starts_with(b"%7\r\n"), "{}", escape(&hello));
    let list = String::from_utf8_lossy(&raw.cmd_str(&["CLIENT", "INFO"])).into_owned();
    assert!(
        list.contains(" name=x ") && list.contains(" user=bob "),
        "{list}"
    );
    // CLIENT KILL USER closes the connections of that user only.
    let mut admin = s.raw();
    admin.cmd_str(&["AUTH", "s3cret"]);
    let mut other_bob = s.raw();
    assert_eq!(other_bob.cmd_str(&["AUTH", "bob", "b0b"]), b"+OK\r\n");
    assert_eq!(admin.cmd_str(&["CLIENT", "KILL", "USER", "bob"]), b":2\r\n");
    assert!(other_bob.is_closed());
    assert_eq!(admin.cmd_str(&["PING"]), b"+PONG\r\n");
    let mut raw = s.raw();
    raw.cmd_str(&["HELLO", "3", "AUTH", "bob", "b0b"]);
    // RESET goes back to the default user, unauthenticated since it has a password.
    assert_eq!(raw.cmd_str(&["RESET"]), b"+RESET\r\n");
    assert_eq!(
        raw.cmd_str(&["PING"]),
        b"-NOAUTH Authentication required.\r\n"
    );
}

#[test]
fn requirepass_is_the_default_users_password() {
    let s = start_server_with(&["--requirepass", "s3cret"]);
    let mut raw = s.raw();
    assert_eq!(raw.cmd_str(&["AUTH", "default", "s3cret"]), b"+OK\r\n");
    let list = String::from_utf8_lossy(&raw.cmd_str(&["ACL", "LIST"])).into_owned();
    // sha256("s3cret")
    assert!(
        list.contains("user default on #1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0 ~* &* +@all"),
        "{list}"
    );
    assert!(!list.contains("nopass"), "{list}");
    // CONFIG SET requirepass "" opens the server: new connections need no AUTH.
    assert_eq!(
        raw.cmd_str(&["CONFIG", "SET", "requirepass", ""]),
        b"+OK\r\n"
    );
    assert_eq!(s.raw().cmd_str(&["PING"]), b"+PONG\r\n");
    let list = String::from_utf8_lossy(&raw.cmd_str(&["ACL", "LIST"])).into_owned();
    assert!(
        list.contains("user default on nopass ~* &* +@all"),
        "{list}"
    );
    // And CONFIG SET requirepass closes it again.
    assert_eq!(
        raw.cmd_str(&["CONFIG", "SET", "requirepass", "n3w"]),
        b"+OK\r\n"
    );
    let mut fresh = s.raw();
    assert_eq!(
        fresh.cmd_str(&["PING"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(
        fresh.cmd_str(&["AUTH", "s3cret"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(fresh.cmd_str(&["AUTH", "n3w"]), b"+OK\r\n");
}

#[test]
fn aclfile_is_loaded_at_start_saved_and_loaded_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.acl");
    std::fs::write(
        &path,
        "# streamd users\nuser alice on >pw ~orders:* +@stream -@dangerous\n\nuser default on nopass ~* &* +@all\n",
    )
    .unwrap();
    let path_text = path.display().to_string();
    let s = start_server_with(&["--aclfile", &path_text]);
    let mut raw = s.raw();
    let list = String::from_utf8_lossy(&raw.cmd_str(&["ACL", "LIST"])).into_owned();
    assert!(
        list.contains("user alice on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~orders:* resetchannels -@all +@stream"),
        "{list}"
    );
    // SAVE writes what LIST shows.
    raw.cmd_str(&["ACL", "SETUSER", "bob", "on", ">b", "%R~logs:*", "+xrange"]);
    assert_eq!(raw.cmd_str(&["ACL", "SAVE"]), b"+OK\r\n");
    let saved = std::fs::read_to_string(&path).unwrap();
    let listed: Vec<String> = String::from_utf8_lossy(&raw.cmd_str(&["ACL", "LIST"]))
        .split("\r\n")
        .filter(|l| l.starts_with("user "))
        .map(str::to_string)
        .collect();
    assert_eq!(
        saved.lines().map(str::to_string).collect::<Vec<_>>(),
        listed
    );
    // LOAD brings back the file after a change, and disconnects users it replaced.
    let mut bob = s.raw();
    assert_eq!(bob.cmd_str(&["AUTH", "bob", "b"]), b"+OK\r\n");
    raw.cmd_str(&["ACL", "DELUSER", "alice"]);
    assert_eq!(raw.cmd_str(&["ACL", "LOAD"]), b"+OK\r\n");
    let again: Vec<String> = String::from_utf8_lossy(&raw.cmd_str(&["ACL", "LIST"]))
        .split("\r\n")
        .filter(|l| l.starts_with("user "))
        .map(str::to_string)
        .collect();
    assert_eq!(again, listed);
    assert!(bob.is_closed(), "bob's user was replaced by ACL LOAD");
    // A broken file is refused by ACL LOAD with Redis's message, and nothing changes.
    std::fs::write(&path, "user carol on +nosuch\nnot a user line\n").unwrap();
    let reply = String::from_utf8_lossy(&raw.cmd_str(&["ACL", "LOAD"])).into_owned();
    assert_eq!(
        reply,
        format!(
            "-ERR {path_text}:1: Error in applying operation '+nosuch': Unknown command or category name in ACL. {path_text}:2 should start with user keyword followed by the username. WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n"
        )
    );
    let users = String::from_utf8_lossy(&raw.cmd_str(&["ACL", "USERS"])).into_owned();
    assert!(users.contains("alice") && users.contains("bob") && !users.contains("carol"));
}

#[test]
fn a_broken_aclfile_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.acl");
    std::fs::write(&path, "user alice on +nosuch\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_streamd"))
        .args(["--port", "0", "--appendonly", "no", "--save", ""])
        .arg("--dir")
        .arg(dir.path())
        .arg("--aclfile")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Aborting startup because of ACL errors")
            && err.contains("Error in applying operation '+nosuch'"),
        "{err}"
    );
    // A missing file too.
    let out = Command::new(env!("CARGO_BIN_EXE_streamd"))
        .args(["--port", "0", "--appendonly", "no", "--save", ""])
        .arg("--dir")
        .arg(dir.path())
        .arg("--aclfile")
        .arg(dir.path().join("missing.acl"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Error loading ACLs, opening file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `script` with bash in a new network namespace whose loopback interface also has
/// the documentation address 192.0.2.10: a connection to that address comes from a
/// non-loopback address, all inside the namespace. `None` when namespaces are unavailable
/// (not root); a panic with the install hint when `unshare` or `ip` is missing.
fn in_private_netns(script: &str) -> Option<String> {
    let ip = common::require_program("ip", "iproute2");
    let ip = ip.display();
    let setup = format!("{ip} link set lo up && {ip} addr add 192.0.2.10/32 dev lo || exit 99\n");
    let out = Command::new(common::require_program("unshare", "util-linux"))
        .args(["-n", "bash", "-c"])
        .arg(format!("{setup}{script}"))
        .output()
        .expect("run unshare");
    if out.status.code() == Some(99) || !out.status.success() {
        eprintln!(
            "skipping: cannot make a network namespace ({})",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Shell: start `$1` (server command line) on 192.0.2.10:7777, wait until it listens, send
/// PING over a raw socket and print everything the server sends until it closes or 1 s
/// passes, then stop the server.
const PROBE: &str = r#"
probe() {
  "$@" > /dev/null 2>&1 &
  pid=$!
  for i in $(seq 1 100); do (exec 3<>/dev/tcp/192.0.2.10/7777) 2>/dev/null && break; sleep 0.05; done
  exec 3<>/dev/tcp/192.0.2.10/7777
  printf 'PING\r\n' >&3
  timeout 1 cat <&3
  exec 3<&-
  echo "|end"
  kill $pid; wait $pid 2>/dev/null
}
"#;

#[test]
fn protected_mode_refuses_remote_clients_of_an_open_server_like_redis() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let streamd = env!("CARGO_BIN_EXE_streamd");
    let ours = |extra: &str| {
        format!(
            "probe {streamd} --bind 192.0.2.10 --port 7777 --appendonly no --save '' --dir {d} {extra}\n"
        )
    };
    let script = format!(
        "{PROBE}{}{}{}{}",
        ours(""),
        ours("--requirepass pw"),
        ours("--protected-mode no"),
        if std::path::Path::new(common::REDIS_SERVER_BIN).exists() {
            format!(
                "probe {} --bind 192.0.2.10 --port 7777 --save '' --appendonly no --dir {d}\n",
                common::REDIS_SERVER_BIN
            )
        } else {
            String::new()
        }
    );
    let Some(out) = in_private_netns(&script) else {
        return;
    };
    let runs: Vec<&str> = out.split("|end\n").collect();
    let denied = String::from_utf8_lossy(streamd::server::protected::DENIED).into_owned();
    assert_eq!(runs[0], denied, "open server, remote client");
    assert_eq!(
        runs[1], "-NOAUTH Authentication required.\r\n",
        "with a password"
    );
    assert_eq!(runs[2], "+PONG\r\n", "protected-mode no");
    if runs.len() > 4 {
        assert_eq!(runs[3], runs[0], "redis-server's refusal is the same bytes");
    }
}

#[test]
fn command_info_shows_the_key_flags_acl_checks_use() {
    let r = redis_server();
    let s = start_server();
    let (mut redis, mut ours) = (r.raw(), s.raw());
    // From each key spec's `flags` to the end: the key specs (and the empty subcommands).
    let key_specs = |reply: &[u8]| {
        let text = String::from_utf8_lossy(reply).into_owned();
        let at = text.find("$5\r\nflags\r\n").unwrap_or(text.len());
        text[at..].to_string()
    };
    for name in [
        "xadd",
        "xrange",
        "xlen",
        "xdel",
        "xtrim",
        "xautoclaim",
        "xgroup|create",
        "xgroup|destroy",
        "xinfo|stream",
        "del",
        "exists",
        "expire",
        "rename",
        "renamenx",
        "copy",
        "move",
        "watch",
        "object|encoding",
        "memory|usage",
    ] {
        let (a, b) = both(&mut redis, &mut ours, &["COMMAND", "INFO", name]);
        assert_eq!(key_specs(&b), key_specs(&a), "{name}");
    }
}

#[test]
fn monitor_hides_credentials_and_admin_commands_like_redis() {
    let r = redis_server();
    let s = start_server();
    let (mut redis, mut ours) = (r.raw(), s.raw());
    same(
        &mut redis,
        &mut ours,
        &["ACL", "SETUSER", "u", "on", "nopass", "~*", "+@all"],
    );
    let (mut redis_mon, mut ours_mon) = (r.raw(), s.raw());
    same(&mut redis_mon, &mut ours_mon, &["MONITOR"]);
    for cmd in [
        &["AUTH", "u", "secret"][..],
        &["HELLO", "2", "AUTH", "u", "secret", "SETNAME", "n"],
        &["ACL", "SETUSER", "zz", "on", ">secret"],
        &["CONFIG", "SET", "requirepass", ""],
        &["PING"],
    ] {
        // (HELLO's version and id differ by design.)
        both(&mut redis, &mut ours, cmd);
    }
    // The command part of each line, after `+<time> [<db> <addr>] `.
    let strip = |line: Vec<u8>| {
        let text = String::from_utf8_lossy(&line).into_owned();
        text.split_once("] ")
            .map(|(_, c)| c.to_string())
            .unwrap_or(text)
    };
    for _ in 0..3 {
        let (a, b) = (strip(redis_mon.read_reply()), strip(ours_mon.read_reply()));
        assert_eq!(b, a);
    }
}
