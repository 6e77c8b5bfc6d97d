//! Fuzz targets, run as property tests (proptest) because `cargo fuzz` needs a nightly
//! toolchain and this project builds on stable.
//!
//! - [`resp_decoder`]: arbitrary, RESP-flavoured bytes cut into arbitrary pieces go
//!   through the request parser. It must never panic, and the pieces must not matter:
//!   fed whole or chunked, it yields the same commands and the same error.
//! - [`command_arguments`]: every command of the table (subcommands included) gets random
//!   argument vectors, drawn from the words the commands know plus random bytes, and runs
//!   in-process on a [`Core`] holding a small dataset (streams, a group with pending
//!   entries). No command may panic, and a command answered with an error must leave the
//!   dataset exactly as it was (compared through the snapshot serialisation of every
//!   database).
//! - [`stream_ids`]: the ID parsers never panic and formatting a parsed ID parses back to
//!   the same ID.
//!
//! Each target runs a small fixed budget under `cargo test` (a few seconds in all);
//! `STREAMD_FUZZ_CASES=200000 cargo test --release --test fuzz` runs it longer by hand.
//! The checked-in corpus in `tests/fuzz-corpus/` (inputs that once found bugs or reach
//! deep paths) is replayed by the `corpus_*` tests on every run, and every bug found gets
//! a named regression test at the end of this file.

use bytes::{Bytes, BytesMut};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use streamd::config::Config;
use streamd::core::client::Client;
use streamd::core::keyspace::Db;
use streamd::core::{Core, Outcome, unix_ms};
use streamd::persist::snapshot::{SnapshotWriter, write_dataset};
use streamd::resp::Argv;
use streamd::resp::parser::{ParserLimits, ProtocolError, RequestParser};
use streamd::resp::writer::RespWriter;

/// Where the corpus lives.
const CORPUS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz-corpus");

/// Cases per target: `STREAMD_FUZZ_CASES`, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("STREAMD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A runner with `n` cases; failures are shrunk and reported, not persisted (a bug
/// found becomes a named regression test instead).
fn runner(n: u32) -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    })
}

// ---------------------------------------------------------------------------------------
// RESP decoder
// ---------------------------------------------------------------------------------------

/// What the parser made of some input: the commands, and the error that ended it.
type Parsed = (Vec<Argv>, Option<ProtocolError>);

/// Feeds `input` to a fresh parser in pieces of the given sizes (cycled; the whole input
/// at once when empty) and collects everything it yields.
fn decode(input: &[u8], pieces: &[usize], authenticated: bool) -> Parsed {
    let mut parser = RequestParser::new(ParserLimits::default());
    parser.set_authenticated(authenticated);
    let mut buf = BytesMut::new();
    let mut cmds = Vec::new();
    let mut at = 0;
    let mut sizes = pieces.iter().cycle();
    while at < input.len() {
        let n = match sizes.next() {
            Some(&n) => n.max(1),
            None => input.len(),
        };
        let end = (at + n).min(input.len());
        buf.extend_from_slice(&input[at..end]);
        at = end;
        loop {
            match parser.parse(&mut buf) {
                Ok(Some(argv)) => cmds.push(argv),
                Ok(None) => break,
                Err(e) => return (cmds, Some(e)),
            }
        }
    }
    (cmds, None)
}

/// Input bytes that look like RESP often enough to get past the first byte.
fn resp_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(b"*".to_vec()),
        Just(b"$".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"-1".to_vec()),
        Just(b"0".to_vec()),
        Just(b"2147483648".to_vec()),
        Just(b"99999999999999999999999".to_vec()),
        Just(b"\"".to_vec()),
        Just(b"'".to_vec()),
        Just(b"\\x4".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\0".to_vec()),
        Just(b"PING".to_vec()),
        Just(b"*2\r\n$4\r\nECHO\r\n$3\r\nhey\r\n".to_vec()),
        (0u32..40).prop_map(|n| n.to_string().into_bytes()),
        vec(any::<u8>(), 0..8),
    ];
    vec(token, 0..40).prop_map(|ts| ts.concat())
}

/// Decodes `input` whole and in `pieces`; both must agree. Returns what was decoded.
fn check_decoder(input: &[u8], pieces: &[usize], authenticated: bool) -> Parsed {
    let whole = decode(input, &[], authenticated);
    let chunked = decode(input, pieces, authenticated);
    assert_eq!(
        whole,
        chunked,
        "chunking changed the result for {:?} in pieces {pieces:?}",
        Bytes::copy_from_slice(input)
    );
    whole
}

#[test]
fn resp_decoder() {
    let strategy = (resp_bytes(), vec(1usize..24, 1..8), any::<bool>());
    runner(cases(3000))
        .run(&strategy, |(input, pieces, authenticated)| {
            check_decoder(&input, &pieces, authenticated);
            Ok(())
        })
        .unwrap();
}

#[test]
fn corpus_resp_decoder() {
    let files = corpus_files("resp");
    assert!(!files.is_empty(), "no RESP corpus in {CORPUS_DIR}/resp");
    for (_, bytes) in files {
        for pieces in [&[1][..], &[2, 3], &[7]] {
            for authenticated in [true, false] {
                check_decoder(&bytes, pieces, authenticated);
            }
        }
    }
}

/// The files of one corpus directory, by name.
fn corpus_files(sub: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("{CORPUS_DIR}/{sub}")) else {
        return out;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Ok(bytes) = std::fs::read(entry.path()) {
            out.push((name, bytes));
        }
    }
    out.sort();
    out
}

// ---------------------------------------------------------------------------------------
// Command argument parsers, executed in-process
// ---------------------------------------------------------------------------------------

/// Commands not fuzzed: they stop the server, write files whose place random arguments
/// could choose (`CONFIG SET dir`), or connect, synchronously, to a host random
/// arguments name (`MIGRATE`: a name resolution or a connect of up to its timeout per
/// call; tests/migrate.rs covers its parser against Redis).
const NOT_FUZZED: &[&str] = &[
    "migrate",
    "shutdown",
    "config|set",
    "config|rewrite",
    "save",
    "bgsave",
    "bgrewriteaof",
    "debug",
];

/// A core with a small dataset and one client, run without a network.
struct Harness {
    core: Core,
    client: Client,
    _dir: tempfile::TempDir,
}

impl Harness {
    fn new() -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        let args: Vec<String> = [
            "--appendonly",
            "no",
            "--save",
            "",
            "--dir",
            dir.path().to_str().expect("utf-8 temp path"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let config = Config::load(None, &args).expect("config");
        let (tx, _rx) = streamd::core::mailbox::mailbox();
        let client = Client::new(1 << 40, "fuzz".into(), String::new(), true, unix_ms(), tx);
        let mut h = Harness {
            core: Core::new(config, 0, streamd::commands::FAMILIES),
            client,
            _dir: dir,
        };
        for cmd in [
            "XADD s 1-1 f v",
            "XADD s 2-1 a 1 b 2",
            "XADD s 3-1 f v2",
            "XADD s 4-1 f v3",
            "XGROUP CREATE s g 0",
            "XREADGROUP GROUP g alice COUNT 2 STREAMS s >",
            "XGROUP CREATE s g2 $",
            "XADD s2 5-5 x y",
            "XDEL s 3-1",
            "XGROUP CREATECONSUMER s g bob",
        ] {
            let argv = cmd.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes()));
            let reply = h.run(argv.collect());
            assert!(!reply.starts_with(b"-"), "fixture {cmd}: {reply:?}");
        }
        h
    }

    /// Executes one command and returns its reply bytes. A command that blocks is taken
    /// out of the blocked registry at once (there is nobody to wake it).
    fn run(&mut self, argv: Argv) -> Vec<u8> {
        let mut out = RespWriter::new(self.client.proto);
        let outcome = self.core.execute(&mut self.client, argv, &mut out);
        if !self.core.ready_keys.is_empty() {
            self.core.handle_ready_keys();
        }
        if let Some(state) = self.client.blocked.take() {
            assert_eq!(outcome, Outcome::Blocked);
            self.core
                .blocked
                .remove(self.client.id, state.db, &state.keys, state.deadline_ms);
            // Blocking commands reply only when served.
            assert!(out.buf.is_empty(), "a blocked command replied");
        }
        out.take()
    }

    /// Every database key by key in key order, each serialised as the snapshot writer
    /// does: equal bytes, equal data. Key by key because the keyspace's iteration order
    /// is its buckets' (a lookup moves a rehash along), which is no part of the data.
    fn fingerprint(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, db) in self.core.dbs.iter().enumerate() {
            let mut keys: Vec<&[u8]> = db.keys.keys().collect();
            keys.sort();
            for key in keys {
                let mut one = vec![Db::default(); i + 1];
                one[i].insert(key, db.get(key).cloned().expect("a listed key"));
                if let Some(&at) = db.expires.get(key) {
                    one[i].set_expire(key, at);
                }
                let mut w = SnapshotWriter::new(Vec::new(), 0).expect("in-memory snapshot");
                write_dataset(&mut w, &one, &[]).expect("in-memory snapshot");
                out.extend(w.finish().expect("in-memory snapshot").0);
            }
        }
        out
    }
}

/// Every command name the table knows, with its subcommands as two words.
fn command_names() -> Vec<Vec<&'static str>> {
    let mut out = Vec::new();
    for spec in streamd::commands::all() {
        if spec.subcommands.is_empty() || spec.arity == -1 {
            out.push(vec![spec.name]);
        }
        for sub in spec.subcommands {
            out.push(vec![spec.name, sub.short_name()]);
        }
    }
    out.retain(|words| !NOT_FUZZED.contains(&words.join("|").as_str()));
    out
}

/// Words the stream commands know: keywords, IDs, numbers and keys.
const WORDS: &[&str] = &[
    "s",
    "s2",
    "missing",
    "g",
    "g2",
    "nogroup",
    "alice",
    "bob",
    "f",
    "v",
    "*",
    "$",
    ">",
    "+",
    "-",
    "0",
    "0-0",
    "1-1",
    "2-1",
    "3-1",
    "4-1",
    "5-5",
    "(1-1",
    "(4-1",
    "1-*",
    "18446744073709551615",
    "18446744073709551615-18446744073709551615",
    "-1",
    "1",
    "2",
    "10",
    "1000",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "abc",
    "",
    "COUNT",
    "BLOCK",
    "STREAMS",
    "GROUP",
    "NOACK",
    "MAXLEN",
    "MINID",
    "~",
    "=",
    "LIMIT",
    "NOMKSTREAM",
    "MKSTREAM",
    "ENTRIESREAD",
    "IDLE",
    "TIME",
    "RETRYCOUNT",
    "FORCE",
    "JUSTID",
    "LASTID",
    "IDS",
    "KEEPREF",
    "DELREF",
    "ACKED",
    "FULL",
    "CLAIM",
    "IDMP",
    "IDMPAUTO",
    "DURATION",
    "MAXSIZE",
    "TYPE",
    "MATCH",
    "EX",
    "PX",
    "NX",
    "XX",
    "GT",
    "LT",
    "ID",
    "SETNAME",
    "GETNAME",
    "INFO",
    "KILL",
    "ON",
    "OFF",
    "stream",
    "3",
    "AUTH",
    "default",
    "pass",
    "RESP",
    "KEYS",
    "LIB-NAME",
    "CONSUMERS",
    "GROUPS",
    "STREAM",
    "DB",
    "REPLACE",
    "ABSTTL",
    "SILENT",
    "FAIL",
    "NORMAL",
    "ASYNC",
    "SYNC",
    "WITHSCORES",
    "HELP",
];

/// One random argument: mostly a known word, sometimes random bytes.
fn argument() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::sample::select(WORDS).prop_map(|w| w.as_bytes().to_vec()),
        1 => vec(any::<u8>(), 0..12),
        1 => (any::<u64>(), any::<u64>()).prop_map(|(a, b)| format!("{a}-{b}").into_bytes()),
    ]
}

/// A random command: a table name (random case) and random arguments.
fn command() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let names = command_names();
    (
        proptest::sample::select(names),
        any::<bool>(),
        vec(argument(), 0..10),
    )
        .prop_map(|(name, upper, args)| {
            let mut argv: Vec<Vec<u8>> = name
                .iter()
                .map(|w| {
                    if upper {
                        w.to_ascii_uppercase().into_bytes()
                    } else {
                        w.as_bytes().to_vec()
                    }
                })
                .collect();
            argv.extend(args);
            argv
        })
}

/// Runs `cmds` on a fresh harness: no panic, and every error leaves the data unchanged.
fn check_commands(cmds: &[Vec<Vec<u8>>]) {
    let mut h = Harness::new();
    for argv in cmds {
        let before = h.fingerprint();
        let argv: Argv = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let reply = h.run(argv.clone());
        if reply.starts_with(b"-") {
            assert!(
                h.fingerprint() == before,
                "{:?} answered {:?} but changed the data",
                argv,
                Bytes::from(reply)
            );
        }
    }
}

#[test]
fn command_arguments() {
    runner(cases(2000))
        .run(&vec(command(), 1..6), |cmds| {
            check_commands(&cmds);
            Ok(())
        })
        .unwrap();
}

/// Each line of the command corpus is one command (space-separated arguments, `\xHH`
/// escapes allowed); each file is one sequence run on a fresh harness.
#[test]
fn corpus_command_arguments() {
    let files = corpus_files("commands");
    assert!(
        !files.is_empty(),
        "no command corpus in {CORPUS_DIR}/commands"
    );
    for (_, text) in files {
        let text = String::from_utf8_lossy(&text);
        let cmds: Vec<Vec<Vec<u8>>> = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| {
                streamd::resp::inline::split_args(&Bytes::copy_from_slice(l.as_bytes()))
                    .expect("corpus line with balanced quotes")
                    .iter()
                    .map(|a| a.to_vec())
                    .collect()
            })
            .collect();
        check_commands(&cmds);
    }
}

#[test]
fn every_command_is_fuzzed_except_the_listed_few() {
    let names = command_names();
    for must in [
        "xadd",
        "xreadgroup",
        "xautoclaim",
        "xinfo",
        "xgroup",
        "client",
        "config",
        "subscribe",
        "psubscribe",
        "ssubscribe",
        "unsubscribe",
        "publish",
        "spublish",
        "pubsub",
    ] {
        assert!(names.iter().any(|n| n[0] == must), "{must} is not fuzzed");
    }
    assert!(names.len() > 60, "only {} commands", names.len());
}

// ---------------------------------------------------------------------------------------
// Stream IDs
// ---------------------------------------------------------------------------------------

#[test]
fn stream_ids() {
    use streamd::stream::id::{parse_id, parse_range_end, parse_range_start, parse_strict_id};
    let text = prop_oneof![
        vec(
            proptest::sample::select(b"0123456789-*+$>( ".to_vec()),
            0..44
        ),
        vec(any::<u8>(), 0..44),
        (any::<u64>(), any::<u64>()).prop_map(|(a, b)| format!("{a}-{b}").into_bytes()),
    ];
    runner(cases(5000))
        .run(&text, |s| {
            let _ = parse_range_start(&s);
            let _ = parse_range_end(&s);
            let _ = streamd::stream::id::parse_xadd_id(&s);
            if let Ok(id) = parse_strict_id(&s) {
                let (buf, len) = id.format();
                prop_assert_eq!(parse_strict_id(&buf[..len]).ok(), Some(id));
            }
            if let Ok(id) = parse_id(&s, 0) {
                let (buf, len) = id.format();
                prop_assert_eq!(parse_id(&buf[..len], 0).ok(), Some(id));
            }
            Ok(())
        })
        .unwrap();
}

// ---------------------------------------------------------------------------------------
// Regression tests: one per bug the fuzzers found.
// ---------------------------------------------------------------------------------------
