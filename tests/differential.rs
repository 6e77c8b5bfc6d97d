//! Differential tests: the same command scripts sent to streamd and to a real `redis-server`
//! (Debian's 7.0, started by the test on a free port with persistence off), replies compared
//! byte for byte after normalising only what must differ.
//!
//! Normalised, and nothing else:
//! - **Generated IDs.** An ID whose milliseconds part is a wall-clock time (≥ 10^12, i.e. it
//!   came from `*`) is replaced, wherever it appears, by `<id-N>` in order of first
//!   appearance, independently on each side. Scripts use small explicit IDs otherwise.
//! - **Times.** `idle`, `seen-time`, `active-time`, `inactive` and `delivery-time` in XINFO
//!   replies.
//! - **XPENDING's extended form**: each entry's idle time (milliseconds since delivery).
//! - **XINFO `radix-tree-nodes`**: the tree's internal shape may differ (issue 3);
//!   `radix-tree-keys` (node boundaries) must not, so it is compared.
//! - **HELLO's `version` and `id`, and CLIENT ID**: streamd advertises the newest Redis it
//!   implements, not 7.0.15; ids are per-server counters.
//! - **Version differences where the newest Redis is the reference** (each named where it is
//!   applied):
//!   * XINFO STREAM: 8.6 added the six IDMP fields (`idmp-duration` … `iids-duplicates`), 8.8
//!     the FULL group field `nacked-count`, 7.2 the consumer fields `active-time` / `inactive`.
//!     7.0 lacks them, so those named fields are removed from both replies before comparing,
//!     which compares field by field exactly the fields 7.0 has, in order.
//!   * HELP texts end with `Print this help.` since Redis 8 (7.0: `Prints this help.`).
//!   * HELLO's NOAUTH text names `<proto>` in the newest Redis (not used in these scripts).
//!
//! Not comparable, so not scripted: wrong-type errors (streamd stores only streams and has no
//! command that creates another type; Redis's GET/SET/LPUSH are unknown commands here),
//! `CLIENT SETINFO` (added in 7.2, unknown to 7.0), and replies whose order is a hash table's
//! (KEYS, SCAN).
//!
//! Each test runs one script and fails listing every mismatch with the step, the command, and
//! both replies, after a per-command pass count (printed with `--nocapture` too).

mod common;

use common::{Raw, encode_cmd, escape, redis_server, start_server};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

// ---------------------------------------------------------------------------------------------
// Scripts

/// One step of a script, run identically on both servers.
enum Step {
    /// One command; its one reply is compared.
    Cmd(Vec<Vec<u8>>),
    /// Several commands sent in a single write; each reply is compared.
    Pipeline(Vec<Vec<Vec<u8>>>),
    /// Exact bytes (inline commands, ...) producing `replies` replies.
    Raw(Vec<u8>, usize),
    /// Exact bytes after which the server must close the connection: everything it sends
    /// until then is compared. The main connection is then reopened (in RESP2).
    RawUntilClose(Vec<u8>),
    /// A command on a second connection (to modify a key another client WATCHes).
    Other(Vec<Vec<u8>>),
    /// A command whose reply differs between Redis 7.0 and the newest Redis, which streamd
    /// follows: sent to streamd only and compared with `newest`, the newest Redis's reply.
    /// Only for commands that change nothing on either server (errors, reads), so that both
    /// servers' states stay comparable. `why` names the difference.
    Newer {
        cmd: Vec<Vec<u8>>,
        newest: &'static [u8],
        why: &'static str,
    },
}

/// See [`Step::Newer`].
fn newer(line: &str, newest: &'static [u8], why: &'static str) -> Step {
    Step::Newer {
        cmd: words(line),
        newest,
        why,
    }
}

/// Redis after 7.0 checks XSETID's ID against the stream's max_deleted_entry_id even without
/// the MAXDELETEDID option, before the top-item check (reference §2.17); 7.0 did not (it
/// accepted the ID, or reported the top item).
const XSETID_MAX_DELETED: &str =
    "after 7.0, XSETID refuses an ID below max_deleted_entry_id (reference §2.17)";
const XSETID_MAX_DELETED_ERR: &[u8] =
    b"-ERR The ID specified in XSETID is smaller than current max_deleted_entry_id\r\n";

/// A command from a line: arguments separated by spaces; `''` is the empty argument.
fn c(line: &str) -> Step {
    Step::Cmd(words(line))
}

fn words(line: &str) -> Vec<Vec<u8>> {
    line.split_whitespace()
        .map(|w| {
            if w == "''" {
                Vec::new()
            } else {
                w.as_bytes().to_vec()
            }
        })
        .collect()
}

/// A command from explicit arguments (spaces, binary).
fn a(args: &[&[u8]]) -> Step {
    Step::Cmd(args.iter().map(|x| x.to_vec()).collect())
}

/// Several command lines in one write.
fn pipe(lines: &[&str]) -> Step {
    Step::Pipeline(lines.iter().map(|l| words(l)).collect())
}

/// The steps that reset both servers between scripts' parts.
fn reset() -> Vec<Step> {
    vec![
        c("FLUSHALL"),
        c("CONFIG SET stream-node-max-entries 100 stream-node-max-bytes 4096"),
    ]
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn xadd_xrange_xrevrange_xlen_xdel() {
    let mut s = reset();
    s.extend([
        c("XADD s 1-1 f v"),
        c("XADD s 1-2 a 1 b 2"),
        c("XADD s 1-* c 3"),
        c("XADD s 2 d 4"),
        c("XADD s 2-0 e 5"),
        c("XADD s 1-5 x y"),
        c("XADD t 0-0 f v"),
        c("XADD t 0-* f v"),
        c("XADD s 007-01 f v"),
        c("XADD s +8 f v"),
        a(&[b"XADD", b"s", b" 9", b"f", b"v"]),
        c("XADD s 10- f v"),
        c("XADD s -5 f v"),
        c("XADD s 18446744073709551616 f v"),
        c("XADD s 18446744073709551615-18446744073709551615 f v"),
        c("XADD s abc f v"),
        c("XADD s 1-2-3 f v"),
        c("XADD s 11-x f v"),
        c("XADD s * f"),
        c("XADD s *"),
        c("XADD s"),
        c("XADD s NOMKSTREAM 12-0"),
        c("XADD nomk NOMKSTREAM * f v"),
        c("EXISTS nomk"),
        c("XADD s NOMKSTREAM 12-0 f v"),
        c("XADD s 13-0 f v f v2 f v3"),
        a(&[
            b"XADD",
            b"s",
            b"14-0",
            b"field with spaces",
            b"",
            b"",
            b"\x00\xff",
        ]),
        c("XADD gen * a 1"),
        c("XADD gen * a 2"),
        c("XADD gen * a 3"),
        c("XRANGE gen - +"),
        c("XREVRANGE gen + - COUNT 2"),
        c("XLEN gen"),
        c("XLEN s"),
        c("XLEN missing"),
        c("XRANGE s - +"),
        c("XRANGE s - + COUNT 2"),
        c("XRANGE s - + COUNT 0"),
        c("XRANGE missing - + COUNT 0"),
        c("XRANGE s - + COUNT -1"),
        c("XRANGE s - + COUNT abc"),
        c("XRANGE s - + COUNT"),
        c("XRANGE s - + FOO 1"),
        c("XRANGE s - + count 1"),
        c("XRANGE s (1-1 +"),
        c("XRANGE s - (2-0"),
        c("XRANGE s (1-2 (7-1"),
        c("XRANGE s (18446744073709551615-18446744073709551615 +"),
        c("XRANGE s - (0-0"),
        c("XRANGE s ( +"),
        c("XRANGE s (- +"),
        c("XRANGE s - (+"),
        c("XRANGE s 1 1"),
        c("XRANGE s 2 1"),
        c("XRANGE s 7-1 7-1"),
        c("XRANGE s abc +"),
        c("XRANGE s - abc"),
        c("XRANGE s -"),
        c("XRANGE s"),
        c("XREVRANGE s + -"),
        c("XREVRANGE s + - COUNT 1"),
        c("XREVRANGE s (8-0 -"),
        c("XREVRANGE s + (8-0"),
        c("XREVRANGE s - +"),
        c("XREVRANGE s + - COUNT 0"),
        c("XREVRANGE s 1"),
        c("XDEL s 1-1 1-1 99-0"),
        c("XDEL s 1-2 bad"),
        c("XDEL s bad"),
        c("XDEL missing bad"),
        c("XDEL missing 1-1"),
        c("XDEL s"),
        c("XLEN s"),
        c("XRANGE s - +"),
        c("XREVRANGE s + -"),
        c("XADD s 1-9 f v"),
        c("XDEL s 14-0 13-0 12-0 9-0 8-0 7-1 2-0 1-3"),
        c("XLEN s"),
        c("XRANGE s - +"),
        c("EXISTS s"),
        c("TYPE s"),
        c("XADD s * f v"),
        c("XLEN s"),
    ]);
    compare("xadd_xrange_xrevrange_xlen_xdel", s);
}

#[test]
fn trimming_exact_approximate_minid_limit() {
    let mut s = reset();
    // Small nodes make `~` observable: whole nodes are removed.
    s.push(c("CONFIG SET stream-node-max-entries 10"));
    for i in 1..=100 {
        s.push(c(&format!("XADD t {i}-0 f {i}")));
    }
    s.extend([
        c("XINFO STREAM t"),
        c("XTRIM t MAXLEN ~ 55"),
        c("XLEN t"),
        c("XTRIM t MAXLEN ~ 5 LIMIT 20"),
        c("XLEN t"),
        c("XTRIM t MAXLEN = 30"),
        c("XLEN t"),
        c("XTRIM t MAXLEN 25 LIMIT 5"),
        c("XTRIM t MAXLEN = 25 LIMIT 5"),
        c("XTRIM t MINID ~ 80-0"),
        c("XRANGE t - + COUNT 1"),
        c("XTRIM t MINID 85-0"),
        c("XRANGE t - + COUNT 1"),
        c("XTRIM t MINID ~ 95 LIMIT 0"),
        c("XRANGE t - + COUNT 1"),
        c("XINFO STREAM t"),
        c("XTRIM t MAXLEN -1"),
        c("XTRIM t MAXLEN abc"),
        c("XTRIM t MINID abc"),
        c("XTRIM t MINID -"),
        c("XTRIM t MAXLEN ~ 10 LIMIT -1"),
        c("XTRIM t MAXLEN ~ 10 LIMIT abc"),
        c("XTRIM t FOO 1"),
        c("XTRIM t MAXLEN"),
        c("XTRIM t MAXLEN 1 MINID 1"),
        c("XTRIM t"),
        c("XTRIM missing MAXLEN 0"),
        c("EXISTS missing"),
        c("XADD t MAXLEN ~ 10 * f v"),
        c("XADD t MAXLEN 3 200-0 f v"),
        c("XRANGE t - +"),
        c("XADD t MINID 200 201-0 f v"),
        c("XADD t MAXLEN ~ 2 LIMIT 10 202-0 f v"),
        c("XADD t LIMIT 10 203-0 f v"),
        c("XADD t MAXLEN 5 LIMIT 10 203-0 f v"),
        c("XADD t MAXLEN -5 203-0 f v"),
        c("XADD t MINID bad 203-0 f v"),
        c("XADD t MAXLEN 0 204-0 f v"),
        c("XLEN t"),
        c("EXISTS t"),
        c("XINFO STREAM t"),
    ]);
    // Trimming with deleted entries inside nodes.
    s.push(c("CONFIG SET stream-node-max-entries 5"));
    for i in 1..=40 {
        s.push(c(&format!("XADD u {i}-0 f {i}")));
    }
    s.extend([
        c("XDEL u 1-0 2-0 3-0 7-0 12-0"),
        c("XINFO STREAM u"),
        c("XTRIM u MAXLEN ~ 30"),
        c("XTRIM u MAXLEN ~ 20"),
        c("XINFO STREAM u"),
        c("XTRIM u MINID ~ 30"),
        c("XINFO STREAM u FULL"),
    ]);
    // Node splits by size: small byte budget, larger values.
    s.push(c(
        "CONFIG SET stream-node-max-entries 100 stream-node-max-bytes 200",
    ));
    for i in 1..=30 {
        s.push(c(&format!(
            "XADD b {i}-0 field-{i} value-{:0>20}",
            i * 7919
        )));
    }
    s.extend([
        c("XINFO STREAM b"),
        c("XTRIM b MAXLEN ~ 20"),
        c("XINFO STREAM b"),
        c("CONFIG GET stream-node-max-*"),
    ]);
    compare("trimming_exact_approximate_minid_limit", s);
}

#[test]
fn xsetid_and_its_checks() {
    let mut s = reset();
    s.extend([
        c("XSETID missing 1-0"),
        c("XADD s 5-0 f v"),
        c("XSETID s 4-0"),
        c("XSETID s 5-0"),
        c("XSETID s 10-0"),
        c("XADD s 9-0 f v"),
        c("XADD s 10-* f v"),
        c("XINFO STREAM s"),
        c("XSETID s 20-0 ENTRIESADDED 1"),
        c("XSETID s 20-0 ENTRIESADDED 5 MAXDELETEDID 25-0"),
        c("XSETID s 20-0 ENTRIESADDED 5 MAXDELETEDID 15-0"),
        c("XINFO STREAM s"),
        c("XSETID s 21-0 ENTRIESADDED -1"),
        c("XSETID s 21-0 ENTRIESADDED abc"),
        c("XSETID s 21-0 MAXDELETEDID bad"),
        c("XSETID s 21-0 MAXDELETEDID"),
        c("XSETID s 21-0 FOO"),
        c("XSETID s 21-0 FOO 1"),
        c("XSETID s bad"),
        c("XSETID s -"),
        c("XSETID s +"),
        newer("XSETID s 0-0", XSETID_MAX_DELETED_ERR, XSETID_MAX_DELETED),
        c("XSETID s"),
        c("XDEL s 5-0 10-1"),
        c("XINFO STREAM s"),
        newer("XSETID s 1-0", XSETID_MAX_DELETED_ERR, XSETID_MAX_DELETED),
        c("XSETID s 19-0"),
        c("XSETID s 20-0"),
        c("XSETID s 30-0 ENTRIESADDED 5 MAXDELETEDID 30-0"),
        c("XINFO STREAM s"),
        c("XADD s * f v"),
        c("XADD e 1-0 f v"),
        c("XDEL e 1-0"),
        newer("XSETID e 0-1", XSETID_MAX_DELETED_ERR, XSETID_MAX_DELETED),
        newer("XSETID e 0-0", XSETID_MAX_DELETED_ERR, XSETID_MAX_DELETED),
        c("XINFO STREAM e"),
    ]);
    compare("xsetid_and_its_checks", s);
}

#[test]
fn xinfo_stream_summary_and_full() {
    let mut s = reset();
    s.extend([
        c("XINFO STREAM missing"),
        c("XADD s 1-1 a 1"),
        c("XADD s 1-2 b 2 c 3"),
        c("XADD s 2-0 d 4"),
        c("XINFO STREAM s"),
        c("XINFO STREAM s FULL"),
        c("XINFO STREAM s FULL COUNT 1"),
        c("XINFO STREAM s FULL COUNT 0"),
        c("XINFO STREAM s FULL COUNT -5"),
        c("XINFO STREAM s FULL COUNT abc"),
        c("XINFO STREAM s FULL COUNT"),
        c("XINFO STREAM s FOO"),
        c("XINFO STREAM s FULL FOO 1"),
        c("XINFO STREAM"),
        c("XINFO"),
        c("XINFO HELP"),
        c("XINFO help"),
        c("XINFO NOSUCH"),
        c("XINFO NOSUCH s"),
        c("XDEL s 1-1 1-2 2-0"),
        c("XINFO STREAM s"),
        c("XINFO STREAM s FULL"),
        c("XADD gen * f v"),
        c("XADD gen * f v"),
        c("XDEL gen 0-1"),
        c("XINFO STREAM gen"),
    ]);
    compare("xinfo_stream_summary_and_full", s);
}

#[test]
fn xread_without_blocking_or_with_a_short_timeout() {
    let mut s = reset();
    s.extend([
        c("XREAD STREAMS x 0"),
        c("XADD x 1-1 f v"),
        c("XADD x 2-2 g w"),
        c("XADD y 5-1 h u"),
        c("XREAD STREAMS x 0"),
        c("XREAD COUNT 1 STREAMS x 0"),
        c("XREAD COUNT 1 STREAMS x y 1-1 0"),
        c("XREAD STREAMS x y nosuch 0 0 0"),
        c("XREAD STREAMS x 2-2"),
        c("XREAD STREAMS x $"),
        c("XREAD STREAMS x 1"),
        // The last entry deleted: nothing after 1-1 is left to serve.
        c("XDEL x 2-2"),
        c("XREAD STREAMS x 1-1"),
        c("XREAD STREAMS x y 1-1 5-1"),
        c("XREAD COUNT 0 STREAMS x 0"),
        c("XREAD COUNT -1 STREAMS x 0"),
        c("XREAD COUNT abc STREAMS x 0"),
        c("XREAD FOO STREAMS x 0"),
        c("XREAD STREAMS x"),
        c("XREAD STREAMS x bad"),
        c("XREAD STREAMS x >"),
        c("XREAD BLOCK -1 STREAMS x 0"),
        c("XREAD BLOCK abc STREAMS x 0"),
        c("XREAD BLOCK 50 STREAMS x $"),
        c("XREAD BLOCK 50 STREAMS x 0"),
        newer(
            "XREAD STREAMS x +",
            b"*1\r\n*2\r\n$1\r\nx\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n",
            "7.4 added the XREAD ID '+' (the last entry); 7.0 says invalid ID",
        ),
        newer(
            "XREAD STREAMS x y 0",
            b"-ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' \
              must be specified.\r\n",
            "7.4 names '+' in XREAD's unbalanced-streams error (reference §2.4)",
        ),
        c("HELLO 3"),
        c("XREAD STREAMS x y 0 0"),
        c("XREAD STREAMS x 1-1"),
        c("XREAD BLOCK 50 STREAMS x $"),
    ]);
    compare("xread_without_blocking_or_with_a_short_timeout", s);
}

#[test]
fn reads_over_nodes_mixing_shared_and_own_field_names() {
    // Nodes of 4 entries: most entries repeat their node's first field names (stored
    // without them), some carry other names, more or fewer pairs, integers; tombstones.
    // Every read that writes ranges of entries must give each its own names.
    let mut s = reset();
    s.push(c("CONFIG SET stream-node-max-entries 4"));
    for i in 1..=40u32 {
        let line = match i % 5 {
            0 => format!("XADD m {i}-0 f {i}"),
            1 => format!(
                "XADD m {i}-0 f {i} g {} h -12",
                "y".repeat((i * 7 % 90) as usize)
            ),
            2 => format!("XADD m {i}-0 g {i} f v{i}"),
            _ => format!("XADD m {i}-0 f {i} g long-value-{i}"),
        };
        s.push(c(&line));
    }
    s.extend([
        c("XDEL m 2-0 9-0 10-0 11-0 12-0 31-0"),
        c("XRANGE m - +"),
        c("XRANGE m 3 37 COUNT 9"),
        c("XREVRANGE m + - COUNT 13"),
        c("XREAD COUNT 17 STREAMS m 5-0"),
        c("XGROUP CREATE m g 0"),
        c("XREADGROUP GROUP g c COUNT 11 STREAMS m >"),
        c("XREADGROUP GROUP g c STREAMS m >"),
        c("XREADGROUP GROUP g c COUNT 5 STREAMS m 0"),
        c("CONFIG SET stream-node-max-entries 100"),
    ]);
    compare("reads_over_nodes_mixing_shared_and_own_field_names", s);
}

#[test]
fn keyspace_commands_on_streams() {
    let mut s = reset();
    s.extend([
        c("XADD s 1-1 f v"),
        c("XADD t 1-1 f v"),
        c("EXISTS s"),
        c("EXISTS s s t missing"),
        c("EXISTS"),
        c("TYPE s"),
        c("TYPE missing"),
        c("TYPE"),
        c("DBSIZE"),
        c("DEL s missing"),
        c("DEL s"),
        c("DEL"),
        c("UNLINK t"),
        c("EXISTS s t"),
        c("DBSIZE"),
        c("XADD s 1-1 f v"),
        c("SELECT 1"),
        c("EXISTS s"),
        c("XADD s 2-2 f v"),
        c("XRANGE s - +"),
        c("SELECT 0"),
        c("XRANGE s - +"),
        c("FLUSHDB"),
        c("EXISTS s"),
        c("SELECT 1"),
        c("EXISTS s"),
        c("FLUSHALL"),
        c("EXISTS s"),
        c("SELECT 0"),
    ]);
    compare("keyspace_commands_on_streams", s);
}

/// 100 × "é": 200 bytes of two-byte UTF-8 sequences.
const E_ACUTE_100: &[u8] = "éééééééééééééééééééééééééééééééééééééééééééééééééé\
                            éééééééééééééééééééééééééééééééééééééééééééééééééé"
    .as_bytes();

#[test]
fn errors_arity_unknown_commands_and_subcommands() {
    let mut s = reset();
    s.extend([
        c("XADD"),
        c("XADD s"),
        c("XRANGE s -"),
        c("XREVRANGE s +"),
        c("XLEN"),
        c("XLEN a b"),
        c("XDEL s"),
        c("XTRIM s"),
        c("XSETID s"),
        c("XINFO"),
        c("XINFO STREAM"),
        c("PING a b"),
        c("ECHO"),
        c("FOOBAR"),
        c("foobar a b"),
        c("XADDD s * f v"),
        a(&[b"FOOBAR ", b"x "]),
        a(&[b"\xff\xfe", b"garbage"]),
        a(&[b"FOOBAR", b"\xff\xfe"]),
        a(&[b"FOOBAR", b"a\r\nb"]),
        // Names and arguments are cut at 128 *bytes* (C `%.128s`), even inside a UTF-8
        // sequence, and sent as raw bytes.
        a(&[E_ACUTE_100]),
        a(&[b"FOOBAR", E_ACUTE_100]),
        a(&[b"XINFO", E_ACUTE_100]),
        a(&[b"CLIENT", b"\xff\xfe"]),
        c("CONFIG NOSUCH"),
        c("CLIENT NOSUCH"),
        c("CONFIG SET stream-node-max-entries abc"),
        c("CONFIG SET stream-node-max-entries -1"),
        c("CONFIG SET nosuch-parameter 1"),
        c("CONFIG GET stream-node-max-entries"),
        c("SELECT 16"),
        c("SELECT abc"),
    ]);
    compare("errors_arity_unknown_commands_and_subcommands", s);
}

#[test]
fn multi_exec_discard_watch() {
    let mut s = reset();
    s.extend([
        c("MULTI"),
        c("XADD s 1-1 f v"),
        c("XLEN s"),
        c("XADD s bad f v"),
        c("XADD s 2-2 f v"),
        c("EXEC"),
        c("XRANGE s - +"),
        // A syntax error while queueing aborts the whole transaction.
        c("MULTI"),
        c("XADD s 3-3 f v"),
        c("XADD s"),
        c("EXEC"),
        c("XLEN s"),
        c("MULTI"),
        c("FOOBAR x"),
        c("EXEC"),
        c("MULTI"),
        c("MULTI"),
        c("DISCARD"),
        c("EXEC"),
        c("DISCARD"),
        c("MULTI"),
        c("EXEC"),
        // WATCH: a write by another client fails the EXEC.
        c("WATCH s"),
        Step::Other(words("XADD s 4-4 f v")),
        c("MULTI"),
        c("XLEN s"),
        c("EXEC"),
        c("WATCH s"),
        c("MULTI"),
        c("WATCH s"),
        c("XLEN s"),
        c("EXEC"),
        // A watched key that is not touched does not fail EXEC; UNWATCH forgets.
        c("WATCH s other"),
        Step::Other(words("XADD unrelated 1-1 f v")),
        c("MULTI"),
        c("XLEN s"),
        c("EXEC"),
        c("WATCH s"),
        Step::Other(words("DEL s")),
        c("UNWATCH"),
        c("MULTI"),
        c("EXISTS s"),
        c("EXEC"),
        c("WATCH"),
        c("UNWATCH x"),
        c("MULTI"),
        c("XADD m * f v"),
        c("XADD m * f v"),
        c("XRANGE m - +"),
        c("EXEC"),
    ]);
    compare("multi_exec_discard_watch", s);
}

#[test]
fn pipelines_of_several_commands_in_one_write() {
    let mut s = reset();
    s.extend([
        pipe(&[
            "XADD p 1-1 f v",
            "XADD p 1-2 f v",
            "XLEN p",
            "XRANGE p - +",
            "FOOBAR",
            "XADD p 1-1 f v",
            "XDEL p 1-1",
            "XREVRANGE p + -",
            "EXISTS p",
            "TYPE p",
        ]),
        pipe(&["MULTI", "XADD q 1-1 f v", "XLEN q", "EXEC", "XLEN q"]),
        Step::Raw(
            b"XADD r 1-1 f v\r\nXLEN r\r\n*3\r\n$6\r\nXRANGE\r\n$1\r\nr\r\n$1\r\n-\r\n\
              XRANGE r - +\r\nECHO \"a b\"\r\n"
                .to_vec(),
            5,
        ),
        // Replies to what precedes a protocol error are sent, then the connection closes.
        Step::RawUntilClose(b"XLEN r\r\nPING\r\n*1\r\n:5\r\nPING\r\n".to_vec()),
        Step::RawUntilClose(b"XLEN r\r\n*2147483648\r\n".to_vec()),
        Step::RawUntilClose(b"XLEN r\r\nECHO \"unbalanced\r\n".to_vec()),
        c("XLEN r"),
    ]);
    let mut big = Vec::new();
    let mut big_replies = 0;
    for i in 1..=200 {
        big.extend(encode_cmd(&[
            b"XADD",
            b"big",
            format!("{i}-0").as_bytes(),
            b"f",
            b"v",
        ]));
        big.extend(encode_cmd(&[b"XLEN", b"big"]));
        big_replies += 2;
    }
    big.extend(encode_cmd(&[b"XRANGE", b"big", b"-", b"+"]));
    s.push(Step::Raw(big, big_replies + 1));
    compare("pipelines_of_several_commands_in_one_write", s);
}

#[test]
fn resp3_after_hello_3() {
    let mut s = reset();
    s.extend([
        c("HELLO 3"),
        c("XADD s 1-1 f v"),
        c("XADD s 1-2 a 1 b 2"),
        c("XRANGE s - +"),
        c("XREVRANGE s + - COUNT 1"),
        c("XRANGE s - + COUNT 0"),
        c("XRANGE missing - +"),
        c("XADD missing NOMKSTREAM * f v"),
        c("XLEN s"),
        c("XINFO STREAM s"),
        c("XINFO STREAM s FULL"),
        c("XDEL s 1-1 1-2"),
        c("XINFO STREAM s"),
        c("XTRIM s MAXLEN 0"),
        c("XSETID s 5-0"),
        c("EXISTS s"),
        c("TYPE s"),
        c("CLIENT GETNAME"),
        c("CONFIG GET stream-node-max-entries"),
        c("XADD s bad f v"),
        c("FOOBAR"),
        c("MULTI"),
        c("XADD s 6-0 f v"),
        c("XRANGE s - +"),
        c("EXEC"),
        c("WATCH s"),
        Step::Other(words("XADD s 7-0 f v")),
        c("MULTI"),
        c("XLEN s"),
        c("EXEC"),
        c("MULTI"),
        c("XADD s"),
        c("EXEC"),
        c("HELLO 2"),
        c("XRANGE s - + COUNT 0"),
        c("CLIENT GETNAME"),
        c("CONFIG GET stream-node-max-entries"),
    ]);
    compare("resp3_after_hello_3", s);
}

#[test]
fn resp3_inline_hello_and_pipeline() {
    let mut s = reset();
    s.extend([
        Step::Raw(
            b"HELLO 3\r\nXADD s 1-1 f v\r\nXINFO STREAM s\r\n".to_vec(),
            3,
        ),
        pipe(&["XRANGE s - +", "XRANGE s - + COUNT 0", "XLEN s"]),
    ]);
    compare("resp3_inline_hello_and_pipeline", s);
}

#[test]
fn consumer_groups_xgroup_xreadgroup_xack_xpending() {
    let mut s = reset();
    s.extend([
        // XGROUP CREATE and its errors.
        c("XGROUP CREATE missing g $"),
        c("XGROUP CREATE missing g $ MKSTREAM"),
        c("XINFO STREAM missing"),
        c("XINFO GROUPS missing"),
        c("XGROUP CREATE missing g $"),
        c("XGROUP CREATE missing g2 0 MKSTREAM"),
        c("XGROUP CREATE nokey g2 bad MKSTREAM"),
        c("EXISTS nokey"),
        c("XADD s 1-0 f 1"),
        c("XADD s 2-0 f 2"),
        c("XADD s 3-0 f 3"),
        c("XADD s 4-0 f 4"),
        c("XADD s 5-0 f 5"),
        c("XGROUP CREATE s g 0"),
        c("XGROUP CREATE s g $"),
        c("XGROUP CREATE s g2 $"),
        c("XGROUP CREATE s g3 2-0 ENTRIESREAD 2"),
        c("XGROUP CREATE s g4 0 ENTRIESREAD -1"),
        c("XGROUP CREATE s g5 0 ENTRIESREAD -2"),
        c("XGROUP CREATE s g5 0 ENTRIESREAD abc"),
        c("XGROUP CREATE s g5 0 ENTRIESREAD"),
        c("XGROUP CREATE s g5 bad"),
        c("XGROUP CREATE s g5 0 FOO"),
        c("XGROUP CREATE s g5"),
        c("XGROUP CREATE s"),
        c("XGROUP"),
        c("XGROUP NOSUCH s g"),
        c("XINFO GROUPS s"),
        // SETID, CREATECONSUMER, DELCONSUMER, DESTROY.
        c("XGROUP SETID s g2 0"),
        c("XGROUP SETID s g2 3-0 ENTRIESREAD 3"),
        c("XGROUP SETID s g2 $"),
        c("XGROUP SETID s nosuch 0"),
        c("XGROUP SETID missing2 g 0"),
        c("XGROUP SETID s g2 bad"),
        c("XGROUP SETID s g2 0 ENTRIESREAD bad"),
        c("XINFO GROUPS s"),
        c("XGROUP CREATECONSUMER s g alice"),
        c("XGROUP CREATECONSUMER s g alice"),
        c("XGROUP CREATECONSUMER s nosuch alice"),
        c("XGROUP CREATECONSUMER missing2 g alice"),
        c("XGROUP CREATECONSUMER s g"),
        c("XGROUP DELCONSUMER s g nobody"),
        c("XGROUP DELCONSUMER s nosuch alice"),
        c("XGROUP DELCONSUMER s g alice"),
        c("XGROUP DESTROY s g4"),
        c("XGROUP DESTROY s g4"),
        c("XGROUP DESTROY missing2 g4"),
        c("XGROUP DESTROY s"),
        c("XGROUP HELP"),
        // XREADGROUP `>`.
        c("XREADGROUP GROUP g alice COUNT 2 STREAMS s >"),
        c("XREADGROUP GROUP g bob COUNT 1 STREAMS s >"),
        c("XREADGROUP GROUP g alice STREAMS s >"),
        c("XREADGROUP GROUP g alice STREAMS s >"),
        c("XREADGROUP GROUP nosuch alice STREAMS s >"),
        c("XREADGROUP GROUP g alice STREAMS missing2 >"),
        c("XREADGROUP GROUP g alice STREAMS s"),
        c("XREADGROUP GROUP g alice STREAMS s bad"),
        c("XREADGROUP GROUP g alice COUNT -1 STREAMS s >"),
        c("XREADGROUP GROUP g alice BLOCK -1 STREAMS s >"),
        c("XREADGROUP GROUP g STREAMS s >"),
        c("XREADGROUP STREAMS s >"),
        c("XREADGROUP GROUP g alice BLOCK 50 STREAMS s >"),
        c("XINFO GROUPS s"),
        c("XINFO CONSUMERS s g"),
        c("XINFO CONSUMERS s nosuch"),
        c("XINFO CONSUMERS missing2 g"),
        // History: the consumer's own pending entries, deleted ones as [id, nil].
        c("XREADGROUP GROUP g alice STREAMS s 0"),
        c("XREADGROUP GROUP g alice COUNT 1 STREAMS s 0"),
        c("XREADGROUP GROUP g alice STREAMS s 1-0"),
        c("XREADGROUP GROUP g bob STREAMS s 0"),
        c("XREADGROUP GROUP g carol STREAMS s 0"),
        c("XDEL s 2-0"),
        c("XREADGROUP GROUP g alice STREAMS s 0"),
        c("XREADGROUP GROUP g alice STREAMS s 0 s >"),
        // NOACK.
        c("XADD s 6-0 f 6"),
        c("XADD s 7-0 f 7"),
        c("XREADGROUP GROUP g dave NOACK COUNT 1 STREAMS s >"),
        c("XREADGROUP GROUP g dave STREAMS s 0"),
        c("XINFO GROUPS s"),
        // XPENDING: summary, extended, IDLE 0, consumer filter, exclusive ranges.
        c("XPENDING s g"),
        c("XPENDING s g - + 10"),
        c("XPENDING s g - + 2"),
        c("XPENDING s g (1-0 + 10"),
        c("XPENDING s g - (5-0 10"),
        c("XPENDING s g - + 10 alice"),
        c("XPENDING s g - + 10 nobody"),
        c("XPENDING s g IDLE 0 - + 10"),
        c("XPENDING s g IDLE 0 - + 10 bob"),
        c("XPENDING s g - + 0"),
        c("XPENDING s g - + -1"),
        c("XPENDING s g - +"),
        c("XPENDING s g IDLE abc - + 10"),
        c("XPENDING s g - + abc"),
        c("XPENDING s g bad + 10"),
        c("XPENDING s nosuch"),
        c("XPENDING missing2 g"),
        c("XPENDING s g2"),
        c("XPENDING s g2 - + 10"),
        // XACK.
        c("XACK s g 1-0 1-0 99-0"),
        c("XACK s g 3-0"),
        c("XACK s g bad"),
        c("XACK s nosuch 1-0"),
        c("XACK missing2 g 1-0"),
        c("XACK s g"),
        c("XPENDING s g"),
        c("XINFO CONSUMERS s g"),
        c("XGROUP DELCONSUMER s g bob"),
        c("XPENDING s g"),
        c("XINFO GROUPS s"),
        c("XINFO STREAM s"),
        c("XGROUP DESTROY s g"),
        c("XINFO GROUPS s"),
    ]);
    compare("consumer_groups_xgroup_xreadgroup_xack_xpending", s);
}

#[test]
fn consumer_groups_xclaim_xautoclaim_and_resp3() {
    let mut s = reset();
    for i in 1..=10 {
        s.push(c(&format!("XADD s {i}-0 f {i}")));
    }
    s.extend([
        c("XGROUP CREATE s g 0"),
        c("XREADGROUP GROUP g alice COUNT 6 STREAMS s >"),
        // XCLAIM with min-idle 0 (no time-dependent options).
        c("XCLAIM s g bob 0 1-0 2-0"),
        c("XCLAIM s g bob 0 3-0 JUSTID"),
        c("XCLAIM s g bob 0 4-0 RETRYCOUNT 7"),
        c("XCLAIM s g bob 0 9-0"),
        c("XCLAIM s g bob 0 9-0 FORCE JUSTID"),
        c("XCLAIM s g bob 0 99-0 FORCE"),
        c("XCLAIM s g bob 0 5-0 JUSTID LASTID 8-0"),
        c("XINFO GROUPS s"),
        c("XCLAIM s g bob 0 5-0 LASTID bad"),
        c("XCLAIM s g bob 0 5-0 RETRYCOUNT -1"),
        c("XCLAIM s g bob 0 5-0 RETRYCOUNT abc"),
        c("XCLAIM s g bob 0 5-0 FOO"),
        c("XCLAIM s g bob abc 5-0"),
        c("XCLAIM s g bob 0 bad"),
        c("XCLAIM s nosuch bob 0 1-0"),
        c("XCLAIM missing g bob 0 1-0"),
        c("XCLAIM s g bob 0"),
        c("XPENDING s g - + 20"),
        c("XPENDING s g"),
        c("XDEL s 1-0 6-0"),
        c("XCLAIM s g carol 0 1-0 6-0 2-0"),
        c("XPENDING s g - + 20"),
        // XAUTOCLAIM, deleted entries purged and reported.
        c("XDEL s 3-0"),
        c("XAUTOCLAIM s g dave 0 0-0 COUNT 2"),
        c("XAUTOCLAIM s g dave 0 2-0 COUNT 2"),
        c("XAUTOCLAIM s g dave 0 0 JUSTID"),
        c("XAUTOCLAIM s g erin 0 (4-0 COUNT 1"),
        c("XAUTOCLAIM s g erin 0 - COUNT 100"),
        c("XAUTOCLAIM s g erin 0 0 COUNT 0"),
        c("XAUTOCLAIM s g erin 0 0 COUNT -1"),
        c("XAUTOCLAIM s g erin 0 0 COUNT abc"),
        c("XAUTOCLAIM s g erin 0 bad"),
        c("XAUTOCLAIM s g erin abc 0"),
        c("XAUTOCLAIM s g erin 0 0 FOO"),
        c("XAUTOCLAIM s nosuch erin 0 0"),
        c("XAUTOCLAIM missing g erin 0 0"),
        c("XPENDING s g"),
        c("XINFO CONSUMERS s g"),
        c("XINFO GROUPS s"),
        // RESP3 shapes.
        c("HELLO 3"),
        c("XGROUP CREATE s g3 0"),
        c("XREADGROUP GROUP g3 r3 COUNT 2 STREAMS s >"),
        c("XREADGROUP GROUP g3 r3 STREAMS s 0"),
        c("XDEL s 4-0"),
        c("XREADGROUP GROUP g3 r3 STREAMS s 0"),
        c("XREADGROUP GROUP g3 r3 COUNT 1 STREAMS s >"),
        c("XGROUP CREATE e g 0 MKSTREAM"),
        c("XREADGROUP GROUP g r3 STREAMS e >"),
        c("XREADGROUP GROUP g r3 BLOCK 50 STREAMS e >"),
        // Since 7.2 XREADGROUP creates its consumer even when nothing is read (reference
        // §2.5); 7.0 creates it only when it serves entries. The newest Redis's count, then
        // the consumer deleted on both (0 pending either way) so that the states agree again.
        newer(
            "XINFO GROUPS e",
            b"*1\r\n%6\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:1\r\n\
              $7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n\
              $12\r\nentries-read\r\n_\r\n$3\r\nlag\r\n:0\r\n",
            "since 7.2 XREADGROUP creates the consumer even when it reads nothing; 7.0 does not",
        ),
        c("XGROUP DELCONSUMER e g r3"),
        c("XPENDING s g3"),
        c("XPENDING e g"),
        c("XPENDING s g3 - + 10"),
        c("XCLAIM s g3 r4 0 5-0 7-0"),
        c("XCLAIM s g3 r4 0 5-0 JUSTID"),
        c("XAUTOCLAIM s g3 r5 0 0"),
        c("XAUTOCLAIM s g3 r5 0 0 JUSTID"),
        c("XACK s g3 5-0 7-0"),
        c("XINFO GROUPS s"),
        c("XINFO CONSUMERS s g3"),
        c("XINFO GROUPS e"),
        c("XINFO CONSUMERS e g"),
        c("XGROUP CREATE s g3 0"),
        c("XREADGROUP GROUP nosuch r STREAMS s >"),
        c("HELLO 2"),
        c("XINFO CONSUMERS s g3"),
    ]);
    compare("consumer_groups_xclaim_xautoclaim_and_resp3", s);
}

// ---------------------------------------------------------------------------------------------
// Running a script on both servers

/// One server's side of a comparison: its connections and its ID normaliser.
struct Side {
    port: u16,
    main: Raw,
    other: Option<Raw>,
    ids: HashMap<Vec<u8>, Vec<u8>>,
}

impl Side {
    fn new(port: u16) -> Side {
        Side {
            port,
            main: Raw::connect(port),
            other: None,
            ids: HashMap::new(),
        }
    }

    /// Runs one step; returns (argv of each reply, raw reply bytes).
    fn run(&mut self, step: &Step) -> Vec<(Vec<Vec<u8>>, Vec<u8>)> {
        match step {
            Step::Cmd(argv) => {
                let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
                vec![(argv.clone(), self.main.cmd(&args))]
            }
            Step::Other(argv) => {
                let port = self.port;
                let other = self.other.get_or_insert_with(|| Raw::connect(port));
                let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
                vec![(argv.clone(), other.cmd(&args))]
            }
            Step::Pipeline(cmds) => {
                let mut bytes = Vec::new();
                for argv in cmds {
                    let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
                    bytes.extend(encode_cmd(&args));
                }
                self.main.send(&bytes);
                cmds.iter()
                    .map(|argv| (argv.clone(), self.main.read_reply()))
                    .collect()
            }
            Step::Raw(bytes, n) => {
                self.main.send(bytes);
                (0..*n)
                    .map(|_| (vec![b"<raw>".to_vec()], self.main.read_reply()))
                    .collect()
            }
            Step::Newer { .. } => unreachable!("run on streamd only, by compare()"),
            Step::RawUntilClose(bytes) => {
                self.main.send(bytes);
                let all = self.main.read_to_close();
                self.main = Raw::connect(self.port);
                vec![(vec![b"<raw until close>".to_vec()], all)]
            }
        }
    }
}

/// Pass/fail counts of one command name.
#[derive(Default)]
struct Tally {
    pass: usize,
    fail: usize,
}

/// Runs `steps` on a fresh streamd and a fresh redis-server (both starting in RESP2) and fails
/// on any difference.
fn compare(name: &str, steps: Vec<Step>) {
    let redis = redis_server();
    let streamd = start_server();
    let mut reference = Side::new(redis.port);
    let mut ours = Side::new(streamd.port);
    let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
    let mut mismatches = Vec::new();

    for (i, step) in steps.iter().enumerate() {
        if let Step::Newer { cmd, newest, why } = step {
            let got = ours.run(&Step::Cmd(cmd.clone()));
            let t = tally.entry(command_label(cmd)).or_default();
            if got[0].1 == *newest {
                t.pass += 1;
            } else {
                t.fail += 1;
                mismatches.push(format!(
                    "step {i}: {} ({why})\n    newest Redis: \"{}\"\n    streamd:      \"{}\"",
                    show_argv(cmd),
                    escape(newest),
                    escape(&got[0].1)
                ));
            }
            continue;
        }
        let want = reference.run(step);
        let got = ours.run(step);
        assert_eq!(want.len(), got.len());
        for ((argv, w), (_, g)) in want.into_iter().zip(got) {
            let label = command_label(&argv);
            let w_norm = normalise(&argv, &w, &mut reference.ids, true);
            let g_norm = normalise(&argv, &g, &mut ours.ids, false);
            let t = tally.entry(label).or_default();
            if w_norm == g_norm {
                t.pass += 1;
            } else {
                t.fail += 1;
                mismatches.push(format!(
                    "step {i}: {}\n    redis 7.0: \"{}\"\n    streamd:   \"{}\"",
                    show_argv(&argv),
                    escape(&w),
                    escape(&g)
                ));
            }
        }
    }

    let mut report = format!("differential {name}:\n");
    for (cmd, t) in &tally {
        let _ = writeln!(
            report,
            "  {cmd:<24} {:>4}/{:<4} {}",
            t.pass,
            t.pass + t.fail,
            if t.fail == 0 { "ok" } else { "FAIL" }
        );
    }
    eprintln!("{report}");
    if !mismatches.is_empty() {
        let shown = mismatches.len().min(40);
        panic!(
            "{report}{} mismatches (first {shown}):\n{}",
            mismatches.len(),
            mismatches[..shown].join("\n")
        );
    }
    drop(redis);
}

/// The name a reply is counted under: the command, plus the subcommand of containers
/// (escaped and cut, for odd names).
fn command_label(argv: &[Vec<u8>]) -> String {
    let word = |b: &[u8]| -> String { escape(&b.to_ascii_uppercase()).chars().take(24).collect() };
    let name = word(&argv[0]);
    match name.as_str() {
        "XINFO" | "CONFIG" | "CLIENT" if argv.len() > 1 => format!("{name} {}", word(&argv[1])),
        _ => name,
    }
}

fn show_argv(argv: &[Vec<u8>]) -> String {
    argv.iter()
        .map(|a| format!("\"{}\"", escape(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------------------------
// Normalisation on a reply tree

/// A parsed RESP2/RESP3 reply.
#[derive(Clone, PartialEq, Debug)]
enum V {
    /// One-line types `+ - : _ , # (`: type byte and line.
    Line(u8, Vec<u8>),
    /// Length-prefixed `$ ! =`: type byte and payload (`None` = `$-1`).
    Blob(u8, Option<Vec<u8>>),
    /// Aggregates `* ~ > % |`: type byte and items (maps flattened; `None` = `*-1`).
    Agg(u8, Option<Vec<V>>),
}

fn parse(buf: &[u8]) -> (V, usize) {
    let line_end = buf.windows(2).position(|w| w == b"\r\n").expect("CRLF");
    let kind = buf[0];
    let header = &buf[1..line_end];
    let next = line_end + 2;
    let num = || -> i64 { std::str::from_utf8(header).unwrap().parse().unwrap() };
    match kind {
        b'$' | b'!' | b'=' => {
            let n = num();
            if n < 0 {
                return (V::Blob(kind, None), next);
            }
            let n = n as usize;
            (
                V::Blob(kind, Some(buf[next..next + n].to_vec())),
                next + n + 2,
            )
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = num();
            if n < 0 {
                return (V::Agg(kind, None), next);
            }
            let count = if kind == b'%' || kind == b'|' {
                2 * n as usize
            } else {
                n as usize
            };
            let mut items = Vec::with_capacity(count);
            let mut p = next;
            for _ in 0..count {
                let (v, used) = parse(&buf[p..]);
                items.push(v);
                p += used;
            }
            (V::Agg(kind, Some(items)), p)
        }
        _ => (V::Line(kind, header.to_vec()), next),
    }
}

fn encode(v: &V, out: &mut Vec<u8>) {
    match v {
        V::Line(k, l) => {
            out.push(*k);
            out.extend_from_slice(l);
            out.extend_from_slice(b"\r\n");
        }
        V::Blob(k, None) => {
            out.push(*k);
            out.extend_from_slice(b"-1\r\n");
        }
        V::Blob(k, Some(b)) => {
            out.push(*k);
            out.extend_from_slice(format!("{}\r\n", b.len()).as_bytes());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        V::Agg(k, None) => {
            out.push(*k);
            out.extend_from_slice(b"-1\r\n");
        }
        V::Agg(k, Some(items)) => {
            out.push(*k);
            let n = if *k == b'%' || *k == b'|' {
                items.len() / 2
            } else {
                items.len()
            };
            out.extend_from_slice(format!("{n}\r\n").as_bytes());
            for i in items {
                encode(i, out);
            }
        }
    }
}

/// XINFO fields 7.0 does not have, removed from both sides (see the module doc).
const FIELDS_NEWER_THAN_7_0: &[&[u8]] = &[
    // 8.6: idempotent-producer state in XINFO STREAM (summary and FULL).
    b"idmp-duration",
    b"idmp-maxsize",
    b"pids-tracked",
    b"iids-tracked",
    b"iids-added",
    b"iids-duplicates",
    // 8.8: FULL group field.
    b"nacked-count",
    // 7.2: FULL consumer `active-time`, XINFO CONSUMERS `inactive`.
    b"active-time",
    b"inactive",
];

/// XINFO fields whose values are clock readings or tree internals.
const FIELDS_NOT_COMPARED: &[&[u8]] =
    &[b"radix-tree-nodes", b"idle", b"seen-time", b"delivery-time"];

/// Parses `reply`, applies the normalisations of the module doc and re-encodes it.
/// `reference` is true for redis-server's side (where the 7.0 texts are mapped to the
/// newest Redis's).
fn normalise(
    argv: &[Vec<u8>],
    reply: &[u8],
    ids: &mut HashMap<Vec<u8>, Vec<u8>>,
    reference: bool,
) -> Vec<u8> {
    if argv[0].starts_with(b"<raw") {
        // Several replies (or a closing error) in one buffer: normalise IDs in each.
        let mut out = Vec::new();
        let mut p = 0;
        while p < reply.len() {
            match common::reply_len(&reply[p..]) {
                Ok(Some(n)) => {
                    let (mut v, _) = parse(&reply[p..p + n]);
                    generated_ids(&mut v, ids);
                    xinfo_fields(&mut v);
                    hello_fields(&mut v);
                    encode(&v, &mut out);
                    p += n;
                }
                _ => {
                    out.extend_from_slice(&reply[p..]);
                    break;
                }
            }
        }
        return out;
    }
    let (mut v, used) = parse(reply);
    assert_eq!(used, reply.len(), "one reply");
    generated_ids(&mut v, ids);
    let cmd = String::from_utf8_lossy(&argv[0]).to_ascii_uppercase();
    let sub = argv
        .get(1)
        .map(|s| String::from_utf8_lossy(s).to_ascii_uppercase())
        .unwrap_or_default();
    match (cmd.as_str(), sub.as_str()) {
        ("XINFO", "STREAM" | "GROUPS" | "CONSUMERS") => xinfo_fields(&mut v),
        ("HELLO", _) => hello_fields(&mut v),
        ("CLIENT", "ID") => v = V::Line(b':', b"<client-id>".to_vec()),
        ("XPENDING", _) if argv.len() >= 6 => {
            // Extended form: each entry is [id, consumer, idle ms, deliveries]; the idle
            // time is a clock reading.
            if let V::Agg(_, Some(entries)) = &mut v {
                for e in entries {
                    if let V::Agg(_, Some(fields)) = e
                        && fields.len() == 4
                    {
                        fields[2] = V::Line(b':', b"<idle>".to_vec());
                    }
                }
            }
        }
        ("CONFIG", "GET") => {
            // Redis walks its config dict in hash order, which changes with every
            // process's hash seed: compare the name/value pairs sorted by name.
            if let V::Agg(_, Some(items)) = &mut v {
                let mut pairs: Vec<Vec<V>> = items.chunks(2).map(|p| p.to_vec()).collect();
                pairs.sort_by(|a, b| format!("{:?}", a[0]).cmp(&format!("{:?}", b[0])));
                *items = pairs.concat();
            }
        }
        (_, "HELP") if reference => {
            // Redis 8 changed the last line of every HELP from "Prints" to "Print".
            if let V::Agg(_, Some(items)) = &mut v {
                for i in items {
                    if *i == V::Line(b'+', b"    Prints this help.".to_vec()) {
                        *i = V::Line(b'+', b"    Print this help.".to_vec());
                    }
                }
            }
        }
        _ => {}
    }
    let mut out = Vec::new();
    encode(&v, &mut out);
    out
}

/// Replaces IDs generated from the clock by `<id-N>`, N in order of first appearance.
fn generated_ids(v: &mut V, ids: &mut HashMap<Vec<u8>, Vec<u8>>) {
    match v {
        V::Blob(b'$', Some(b)) if is_generated_id(b) => {
            let n = ids.len() + 1;
            *b = ids
                .entry(b.clone())
                .or_insert_with(|| format!("<id-{n}>").into_bytes())
                .clone();
        }
        V::Agg(_, Some(items)) => {
            for i in items {
                generated_ids(i, ids);
            }
        }
        _ => {}
    }
}

/// `ms-seq` with ms a wall-clock reading (≥ 10^12 ms, i.e. after 2001).
fn is_generated_id(b: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(b) else {
        return false;
    };
    let Some((ms, seq)) = s.split_once('-') else {
        return false;
    };
    matches!(ms.parse::<u64>(), Ok(ms) if (1_000_000_000_000..u64::MAX).contains(&ms))
        && seq.parse::<u64>().is_ok()
}

fn key_of(v: &V) -> Option<&[u8]> {
    match v {
        V::Blob(b'$', Some(b)) => Some(b),
        V::Line(b'+', b) => Some(b),
        _ => None,
    }
}

/// In every key/value list (RESP2 flat array with string keys, or RESP3 map) inside an XINFO
/// reply: drops the fields 7.0 lacks and blanks the values that are times or tree internals.
fn xinfo_fields(v: &mut V) {
    let V::Agg(kind, Some(items)) = v else {
        return;
    };
    let looks_like_fields = *kind == b'%'
        || (*kind == b'*'
            && items.len() >= 2
            && items.len().is_multiple_of(2)
            && items.iter().step_by(2).all(|k| {
                key_of(k).is_some_and(|k| k.iter().all(|c| c.is_ascii_lowercase() || *c == b'-'))
            }));
    if looks_like_fields {
        let mut kept = Vec::with_capacity(items.len());
        let mut it = std::mem::take(items).into_iter();
        while let (Some(k), Some(mut val)) = (it.next(), it.next()) {
            let name = key_of(&k).map(<[u8]>::to_vec).unwrap_or_default();
            if FIELDS_NEWER_THAN_7_0.contains(&name.as_slice()) {
                continue;
            }
            if FIELDS_NOT_COMPARED.contains(&name.as_slice()) {
                val = V::Line(b':', b"<not compared>".to_vec());
            } else {
                xinfo_fields(&mut val);
            }
            kept.push(k);
            kept.push(val);
        }
        *items = kept;
    } else {
        for i in items {
            xinfo_fields(i);
        }
    }
}

/// HELLO's `version` (7.0.15 vs the newest Redis streamd implements) and `id` values.
fn hello_fields(v: &mut V) {
    let V::Agg(b'*' | b'%', Some(items)) = v else {
        return;
    };
    if items.len() != 14 || key_of(&items[0]) != Some(b"server") {
        return;
    }
    for pair in items.chunks_mut(2) {
        match key_of(&pair[0]) {
            Some(b"version") => pair[1] = V::Blob(b'$', Some(b"<version>".to_vec())),
            Some(b"id") => pair[1] = V::Line(b':', b"<client-id>".to_vec()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod normaliser {
    use super::*;

    fn norm(argv: &str, reply: &[u8], ids: &mut HashMap<Vec<u8>, Vec<u8>>) -> String {
        escape(&normalise(&words(argv), reply, ids, false))
    }

    #[test]
    fn generated_ids_map_consistently_and_explicit_ids_are_kept() {
        let mut ids = HashMap::new();
        assert_eq!(
            norm("XADD s * f v", b"$15\r\n1795985860599-0\r\n", &mut ids),
            "$6\\r\\n<id-1>\\r\\n"
        );
        assert_eq!(
            norm("XADD s * f v", b"$15\r\n1795985860599-1\r\n", &mut ids),
            "$6\\r\\n<id-2>\\r\\n"
        );
        assert_eq!(
            norm(
                "XRANGE s - +",
                b"*2\r\n$15\r\n1795985860599-1\r\n$3\r\n5-0\r\n",
                &mut ids
            ),
            "*2\\r\\n$6\\r\\n<id-2>\\r\\n$3\\r\\n5-0\\r\\n"
        );
    }

    #[test]
    fn xinfo_drops_only_newer_fields_and_blanks_only_tree_nodes() {
        let mut ids = HashMap::new();
        let ours = b"*8\r\n$15\r\nradix-tree-keys\r\n:3\r\n$16\r\nradix-tree-nodes\r\n:7\r\n\
                     $13\r\nidmp-duration\r\n:100\r\n$6\r\ngroups\r\n:0\r\n";
        let theirs = b"*6\r\n$15\r\nradix-tree-keys\r\n:3\r\n$16\r\nradix-tree-nodes\r\n:9\r\n\
                       $6\r\ngroups\r\n:0\r\n";
        let other_keys = b"*6\r\n$15\r\nradix-tree-keys\r\n:4\r\n$16\r\nradix-tree-nodes\r\n:9\r\n\
                           $6\r\ngroups\r\n:0\r\n";
        let a = norm("XINFO STREAM s", ours, &mut ids);
        assert_eq!(a, norm("XINFO STREAM s", theirs, &mut ids));
        assert_ne!(a, norm("XINFO STREAM s", other_keys, &mut ids));
        // Outside XINFO nothing is dropped.
        assert_ne!(
            norm("XRANGE s - +", ours, &mut ids),
            norm("XRANGE s - +", theirs, &mut ids)
        );
    }
}
