//! The bitmap commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO)
//! against the real `redis-server` 7.0, reply bytes compared exactly, in RESP2 and RESP3:
//!
//! - a fixed script of edge cases: every error and its order among the arguments,
//!   negative ranges, ranges past the end, BIT ranges, missing and empty keys, `int`
//!   and `embstr` values read as their text, huge offsets against `proto-max-bulk-len`,
//!   every BITFIELD overflow policy at the edges of `i1`, `u1`, `i8`, `u8`, `i64` and
//!   `u63`, `#` offsets, wrong types, arity;
//! - seeded random sequences over a few keys, compared command by command, with `GET`,
//!   `OBJECT ENCODING` and the dirty counter among the probes;
//! - keyspace notifications: the same commands give the same events in the same order;
//! - the log: writes that changed nothing and reads are not logged, and replaying the
//!   log (`DEBUG LOADAOF`) gives back the same bitmaps.
//!
//! Redis 8.2's BITOP DIFF, DIFF1, ANDOR and ONE are not in 7.0: their results are
//! written out (from the definitions on redis.io's BITOP page) and compared with what
//! streamd answers.

mod common;

use common::differential::{Mode, differential, exact, keyevents, newer};
use common::{Raw, Rng, escape, redis_server, start_server, start_server_with};
use std::time::Duration;

const BITOP_NEEDS_TWO: &str = "must be called with at least two source keys.";

/// The fixed edge-case script.
fn edge_cases() -> Vec<(Mode, Vec<&'static str>)> {
    let mut cases = exact(&[
        &["FLUSHALL"],
        // --- SETBIT / GETBIT ---------------------------------------------------------
        &["SETBIT", "k"],
        &["SETBIT", "k", "0"],
        &["SETBIT", "k", "0", "1", "x"],
        &["GETBIT", "k"],
        &["SETBIT", "k", "-1", "1"],
        &["SETBIT", "k", "abc", "1"],
        &["SETBIT", "k", "1.5", "1"],
        &["SETBIT", "k", "", "1"],
        &["SETBIT", "k", "01", "1"],
        &["SETBIT", "k", "#1", "1"],
        &["SETBIT", "k", "0", "2"],
        &["SETBIT", "k", "0", "-1"],
        &["SETBIT", "k", "0", "abc"],
        &["SETBIT", "k", "-1", "abc"],
        &["SETBIT", "k", "4294967296", "1"],
        &["SETBIT", "k", "9223372036854775807", "1"],
        &["SETBIT", "k", "9223372036854775808", "1"],
        &["EXISTS", "k"],
        &["SETBIT", "k", "7", "1"],
        &["SETBIT", "k", "7", "1"],
        &["SETBIT", "k", "7", "0"],
        &["SETBIT", "k", "7", "0"],
        &["SETBIT", "k", "100", "0"],
        &["GET", "k"],
        &["STRLEN", "k"],
        &["OBJECT", "ENCODING", "k"],
        &["GETBIT", "k", "7"],
        &["GETBIT", "k", "100"],
        &["GETBIT", "k", "101"],
        &["GETBIT", "k", "4294967295"],
        &["GETBIT", "k", "4294967296"],
        &["GETBIT", "k", "-1"],
        &["GETBIT", "k", "x"],
        &["GETBIT", "nokey", "0"],
        &["GETBIT", "nokey", "x"],
        &["SET", "n", "12345"],
        &["OBJECT", "ENCODING", "n"],
        &["GETBIT", "n", "2"],
        &["GETBIT", "n", "39"],
        &["GETBIT", "n", "40"],
        &["SETBIT", "n", "2", "1"],
        &["OBJECT", "ENCODING", "n"],
        &["SET", "n", "12345"],
        &["SETBIT", "n", "6", "0"],
        &["GET", "n"],
        &["OBJECT", "ENCODING", "n"],
        &["SET", "e", "abc"],
        &["OBJECT", "ENCODING", "e"],
        &["SETBIT", "e", "1", "1"],
        &["OBJECT", "ENCODING", "e"],
        &["GET", "e"],
        &["SETBIT", "e", "30", "1"],
        &["GET", "e"],
        &["LPUSH", "l", "a"],
        &["SETBIT", "l", "0", "1"],
        &["SETBIT", "l", "x", "1"],
        &["SETBIT", "l", "0", "x"],
        &["GETBIT", "l", "0"],
        &["GETBIT", "l", "x"],
        &["SET", "ttl", "x", "EX", "1000"],
        &["SETBIT", "ttl", "0", "1"],
        &["TTL", "ttl"],
        // --- BITCOUNT ----------------------------------------------------------------
        &["BITCOUNT"],
        &["BITCOUNT", "nokey"],
        &["BITCOUNT", "nokey", "0"],
        &["BITCOUNT", "nokey", "x", "y", "z", "w"],
        &["SET", "s", "foobar"],
        &["BITCOUNT", "s"],
        &["BITCOUNT", "s", "0"],
        &["BITCOUNT", "s", "0", "0"],
        &["BITCOUNT", "s", "1", "1"],
        &["BITCOUNT", "s", "0", "-1"],
        &["BITCOUNT", "s", "-1", "-1"],
        &["BITCOUNT", "s", "-2", "-1"],
        &["BITCOUNT", "s", "-1", "-2"],
        &["BITCOUNT", "s", "-1", "-2", "FOO"],
        &["BITCOUNT", "s", "-2", "-1", "FOO"],
        &["BITCOUNT", "s", "-100", "100"],
        &["BITCOUNT", "s", "100", "200"],
        &["BITCOUNT", "s", "3", "1"],
        &["BITCOUNT", "s", "-100", "-50"],
        &["BITCOUNT", "s", "0", "-1", "BYTE"],
        &["BITCOUNT", "s", "0", "-1", "bit"],
        &["BITCOUNT", "s", "5", "30", "BIT"],
        &["BITCOUNT", "s", "5", "5", "BIT"],
        &["BITCOUNT", "s", "1", "6", "BIT"],
        &["BITCOUNT", "s", "-5", "-1", "BIT"],
        &["BITCOUNT", "s", "-1", "-5", "BIT"],
        &["BITCOUNT", "s", "47", "1000", "BIT"],
        &["BITCOUNT", "s", "0", "-1", "FOO"],
        &["BITCOUNT", "s", "a", "1"],
        &["BITCOUNT", "s", "1", "a"],
        &["BITCOUNT", "s", "a", "b", "FOO"],
        &["BITCOUNT", "s", "0", "1", "BIT", "x"],
        &["BITCOUNT", "n"],
        &["BITCOUNT", "n", "1", "2"],
        &["BITCOUNT", "l"],
        &["BITCOUNT", "l", "x"],
        &["SET", "empty", ""],
        &["BITCOUNT", "empty"],
        &["BITCOUNT", "empty", "0", "-1", "BIT"],
        // --- BITPOS ------------------------------------------------------------------
        &["BITPOS", "nokey"],
        &["BITPOS", "nokey", "0"],
        &["BITPOS", "nokey", "1"],
        &["BITPOS", "nokey", "1", "x", "y", "z", "w"],
        &["BITPOS", "nokey", "2"],
        &["BITPOS", "nokey", "x"],
        &["BITPOS", "l", "1"],
        &["BITPOS", "l", "2"],
        &["BITPOS", "empty", "0"],
        &["BITPOS", "empty", "1"],
        &["BITPOS", "empty", "0", "0"],
        &["BITPOS", "s", "1"],
        &["BITPOS", "s", "0"],
        &["BITPOS", "s", "1", "2"],
        &["BITPOS", "s", "1", "-1"],
        &["BITPOS", "s", "1", "2", "-1"],
        &["BITPOS", "s", "0", "2", "1"],
        &["BITPOS", "s", "1", "7", "15", "BIT"],
        &["BITPOS", "s", "1", "7", "-3", "bit"],
        &["BITPOS", "s", "0", "1", "1", "BIT"],
        &["BITPOS", "s", "1", "2", "2", "BIT"],
        &["BITPOS", "s", "1", "-100", "100", "BYTE"],
        &["BITPOS", "s", "1", "100"],
        &["BITPOS", "s", "0", "100"],
        &["BITPOS", "s", "1", "x"],
        &["BITPOS", "s", "1", "0", "x"],
        &["BITPOS", "s", "1", "0", "x", "BIT"],
        &["BITPOS", "s", "1", "0", "x", "FOO"],
        &["BITPOS", "s", "1", "0", "1", "FOO"],
        &["BITPOS", "s", "1", "0", "1", "BIT", "x"],
        &["BITFIELD", "ones", "SET", "u24", "0", "16777215"],
        &["BITPOS", "ones", "0"],
        &["BITPOS", "ones", "0", "1"],
        &["BITPOS", "ones", "0", "0", "-1"],
        &["BITPOS", "ones", "0", "3", "BIT"],
        &["BITPOS", "ones", "0", "3", "-1", "BIT"],
        &["BITPOS", "ones", "0", "9", "10", "BIT"],
        &["BITPOS", "ones", "1", "9", "10", "BIT"],
        &["BITPOS", "ones", "0", "-1"],
        &["BITPOS", "ones", "0", "100"],
        &["BITPOS", "n", "0"],
        &["BITPOS", "n", "1", "1"],
        &["SETBIT", "far", "1000", "1"],
        &["BITPOS", "far", "1"],
        &["BITPOS", "far", "1", "3", "-1"],
        &["BITPOS", "far", "1", "100", "1000", "BIT"],
        &["BITPOS", "far", "1", "1001", "-1", "BIT"],
        &["BITPOS", "far", "0", "-1", "-1", "BIT"],
        // --- BITOP -------------------------------------------------------------------
        &["BITOP", "AND", "d"],
        &["BITOP", "NAND", "d", "s"],
        &["BITOP", "NOT", "d", "s", "e"],
        &["BITOP", "NOT", "d", "nokey"],
        &["EXISTS", "d"],
        &["SET", "d", "x"],
        &["BITOP", "OR", "d", "nokey", "nokey2"],
        &["EXISTS", "d"],
        &["BITOP", "and", "d", "s", "e"],
        &["GET", "d"],
        &["OBJECT", "ENCODING", "d"],
        &["BITOP", "Or", "d", "s", "e", "nokey"],
        &["GET", "d"],
        &["BITOP", "XOR", "d", "s", "e", "n"],
        &["GET", "d"],
        &["BITOP", "NOT", "d", "s"],
        &["STRLEN", "d"],
        &["BITOP", "NOT", "d", "n"],
        &["STRLEN", "d"],
        &["BITOP", "AND", "d", "s", "nokey"],
        &["BITCOUNT", "d"],
        &["STRLEN", "d"],
        &["BITOP", "AND", "d", "s", "l"],
        &["BITOP", "AND", "d", "l", "nokey"],
        &["BITOP", "NOT", "d", "l"],
        &["BITOP", "AND", "l", "s"],
        &["TYPE", "l"],
        &["GET", "l"],
        &["DEL", "l"],
        &["LPUSH", "l", "a"],
        &["SET", "dt", "x", "EX", "1000"],
        &["BITOP", "OR", "dt", "s"],
        &["TTL", "dt"],
        &["BITOP", "AND", "d", "empty", "empty"],
        &["EXISTS", "d"],
        &["BITOP", "OR", "s2", "s", "s"],
        &["GET", "s2"],
        &["BITOP", "OR", "s", "s", "e"],
        &["GET", "s"],
        // 8.2's operations (7.0 answers a syntax error; marked newer below).
        &["BITOP", "DIFF", "d", "s"],
        &["BITOP", "DIFF1", "d", "s"],
        &["BITOP", "ANDOR", "d", "s"],
        &["BITOP", "ONE", "d", "s"],
        &["BITFIELD", "x1", "SET", "u16", "0", "61695"],
        &["BITFIELD", "x2", "SET", "u8", "0", "60"],
        &["BITFIELD", "x3", "SET", "u16", "0", "3841"],
        &["BITOP", "DIFF", "d", "x1", "x2", "x3"],
        &["BITFIELD", "d", "GET", "u16", "0"],
        &["BITOP", "DIFF1", "d", "x1", "x2", "x3"],
        &["BITFIELD", "d", "GET", "u16", "0"],
        &["BITOP", "ANDOR", "d", "x1", "x2", "x3"],
        &["BITFIELD", "d", "GET", "u16", "0"],
        &["BITOP", "ONE", "d", "x1", "x2", "x3"],
        &["BITFIELD", "d", "GET", "u16", "0"],
        &["BITOP", "diff", "d", "x1", "l"],
        &["BITOP", "AndOr", "d", "nokey", "nokey2"],
        &["EXISTS", "d"],
        // --- BITFIELD ----------------------------------------------------------------
        &["BITFIELD"],
        &["BITFIELD", "bf"],
        &["BITFIELD_RO", "bf"],
        &["BITFIELD", "bf", "GET", "u8"],
        &["BITFIELD", "bf", "GET"],
        &["BITFIELD", "bf", "SET", "u8", "0"],
        &["BITFIELD", "bf", "INCRBY", "u8", "0"],
        &["BITFIELD", "bf", "OVERFLOW"],
        &["BITFIELD", "bf", "OVERFLOW", "FOO", "GET", "u8", "0"],
        &["BITFIELD", "bf", "OVERFLOW", "wrap", "OVERFLOW", "x"],
        &["BITFIELD", "bf", "FOO", "u8", "0"],
        &["BITFIELD", "bf", "GET", "u64", "0"],
        &["BITFIELD", "bf", "GET", "i65", "0"],
        &["BITFIELD", "bf", "GET", "i0", "0"],
        &["BITFIELD", "bf", "GET", "u0", "0"],
        &["BITFIELD", "bf", "GET", "U8", "0"],
        &["BITFIELD", "bf", "GET", "x8", "0"],
        &["BITFIELD", "bf", "GET", "8", "0"],
        &["BITFIELD", "bf", "GET", "", "0"],
        &["BITFIELD", "bf", "GET", "u-1", "0"],
        &["BITFIELD", "bf", "GET", "u08", "0"],
        &["BITFIELD", "bf", "GET", "u8", "-1"],
        &["BITFIELD", "bf", "GET", "u8", "#-1"],
        &["BITFIELD", "bf", "GET", "u8", "#x"],
        &["BITFIELD", "bf", "GET", "u8", "x"],
        &["BITFIELD", "bf", "GET", "u8", "4294967296"],
        &["BITFIELD", "bf", "GET", "u8", "4294967295"],
        &["BITFIELD", "bf", "GET", "u8", "#536870911"],
        &["BITFIELD", "bf", "GET", "u8", "#536870912"],
        &["BITFIELD", "bf", "SET", "u8", "0", "x"],
        &["BITFIELD", "bf", "SET", "u8", "0", "1.5"],
        &["BITFIELD", "bf", "INCRBY", "u8", "0", "9223372036854775808"],
        &["BITFIELD", "bf", "GET", "u8", "0", "SET", "u64", "0", "1"],
        &["BITFIELD", "bf", "SET", "u8", "x", "1", "GET", "i99", "0"],
        &["EXISTS", "bf"],
        &["BITFIELD", "bf", "GET", "u8", "0", "GET", "i64", "100"],
        &["EXISTS", "bf"],
        &[
            "BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "7",
        ],
        &["EXISTS", "bf"],
        &["STRLEN", "bf"],
        &["GET", "bf"],
        &["BITFIELD", "bf", "SET", "i8", "0", "-100", "GET", "u8", "0"],
        &[
            "BITFIELD", "bf", "SET", "i8", "#1", "100", "GET", "i8", "#1",
        ],
        &["BITFIELD", "bf", "get", "u4", "#3", "gEt", "i4", "#3"],
        &[
            "BITFIELD", "bf", "INCRBY", "i5", "3", "1", "GET", "u16", "0",
        ],
        &["GET", "bf"],
        &["OBJECT", "ENCODING", "bf"],
        // Overflow at the edges of each width, every policy.
        &[
            "BITFIELD", "o", "SET", "i8", "0", "127", "INCRBY", "i8", "0", "1",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "SAT", "SET", "i8", "0", "127", "INCRBY", "i8", "0", "1",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "1", "GET", "i8", "0",
        ],
        &[
            "BITFIELD", "o", "SET", "i8", "0", "-128", "INCRBY", "i8", "0", "-1",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "SAT", "SET", "i8", "0", "-128", "INCRBY", "i8", "0", "-1",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "-1", "INCRBY", "i8", "0",
            "-256",
        ],
        &[
            "BITFIELD", "o", "SET", "i8", "0", "200", "SET", "i8", "0", "-200", "GET", "i8", "0",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "SAT", "SET", "i8", "0", "200", "SET", "i8", "0", "-200",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "FAIL", "SET", "i8", "0", "200", "SET", "i8", "0", "-129",
        ],
        &[
            "BITFIELD", "o", "SET", "u8", "0", "255", "INCRBY", "u8", "0", "1",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "SAT", "SET", "u8", "0", "255", "INCRBY", "u8", "0", "1",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "-1000", "GET", "u8", "0",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "WRAP", "INCRBY", "u8", "0", "-1", "GET", "u8", "0",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "-1", "INCRBY", "u8", "0",
            "256",
        ],
        &[
            "BITFIELD", "o", "SET", "u8", "0", "-1", "SET", "u8", "0", "256", "GET", "u8", "0",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "SAT", "SET", "u8", "0", "-1", "SET", "u8", "0", "300",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "FAIL", "SET", "u8", "0", "-1", "SET", "u8", "0", "255",
        ],
        &[
            "BITFIELD", "o", "SET", "i1", "0", "1", "GET", "i1", "0", "INCRBY", "i1", "0", "1",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "SAT", "INCRBY", "i1", "0", "5", "INCRBY", "i1", "0", "-5",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "FAIL", "SET", "i1", "0", "-1", "SET", "i1", "0", "1",
        ],
        &[
            "BITFIELD", "o", "SET", "u1", "0", "3", "OVERFLOW", "SAT", "INCRBY", "u1", "0", "3",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "FAIL", "INCRBY", "u1", "0", "1", "INCRBY", "u1", "0",
            "-1",
        ],
        &[
            "BITFIELD",
            "o",
            "SET",
            "i64",
            "3",
            "9223372036854775807",
            "INCRBY",
            "i64",
            "3",
            "1",
        ],
        &[
            "BITFIELD",
            "o",
            "SET",
            "i64",
            "3",
            "-9223372036854775808",
            "INCRBY",
            "i64",
            "3",
            "-1",
        ],
        &[
            "BITFIELD",
            "o",
            "OVERFLOW",
            "SAT",
            "SET",
            "i64",
            "3",
            "9223372036854775807",
            "INCRBY",
            "i64",
            "3",
            "9223372036854775807",
        ],
        &[
            "BITFIELD",
            "o",
            "OVERFLOW",
            "SAT",
            "SET",
            "i64",
            "3",
            "-9223372036854775808",
            "INCRBY",
            "i64",
            "3",
            "-9223372036854775808",
        ],
        &[
            "BITFIELD",
            "o",
            "OVERFLOW",
            "FAIL",
            "INCRBY",
            "i64",
            "3",
            "-1",
            "INCRBY",
            "i64",
            "3",
            "9223372036854775807",
        ],
        &[
            "BITFIELD",
            "o",
            "INCRBY",
            "i64",
            "3",
            "-9223372036854775808",
            "GET",
            "i64",
            "3",
        ],
        &[
            "BITFIELD",
            "o",
            "SET",
            "u63",
            "5",
            "9223372036854775807",
            "INCRBY",
            "u63",
            "5",
            "1",
        ],
        &["BITFIELD", "o", "SET", "u63", "5", "-1", "GET", "u63", "5"],
        &[
            "BITFIELD", "o", "OVERFLOW", "SAT", "SET", "u63", "5", "-1", "INCRBY", "u63", "5", "1",
        ],
        &[
            "BITFIELD",
            "o",
            "OVERFLOW",
            "SAT",
            "INCRBY",
            "u63",
            "5",
            "-9223372036854775808",
        ],
        &[
            "BITFIELD", "o", "OVERFLOW", "FAIL", "INCRBY", "u63", "5", "1", "INCRBY", "u63", "5",
            "-1",
        ],
        &[
            "BITFIELD",
            "o",
            "OVERFLOW",
            "WRAP",
            "INCRBY",
            "u63",
            "5",
            "-9223372036854775808",
            "GET",
            "u63",
            "5",
        ],
        &[
            "BITFIELD", "o", "SET", "u7", "#100", "100", "INCRBY", "u7", "#100", "100",
        ],
        &[
            "BITFIELD", "o", "SET", "i13", "4001", "-4096", "INCRBY", "i13", "4001", "-1",
        ],
        &["GET", "o"],
        &["STRLEN", "o"],
        // Integer-encoded and embstr values read as their text.
        &["SET", "n", "255"],
        &[
            "BITFIELD", "n", "GET", "u8", "0", "GET", "i16", "4", "GET", "u8", "20",
        ],
        &["BITFIELD_RO", "n", "GET", "u8", "0", "GET", "i64", "1"],
        &["OBJECT", "ENCODING", "n"],
        &["BITFIELD", "n", "SET", "u8", "0", "50"],
        &["OBJECT", "ENCODING", "n"],
        &["GET", "n"],
        &["BITFIELD", "n", "INCRBY", "u8", "0", "1"],
        &["GET", "n"],
        // Wrong types and BITFIELD_RO.
        &["BITFIELD", "l", "GET", "u8", "0"],
        &["BITFIELD", "l", "SET", "u8", "0", "1"],
        &["BITFIELD", "l", "SET", "u8", "x", "1"],
        &["BITFIELD", "l"],
        &["BITFIELD_RO", "l", "GET", "u8", "0"],
        &["BITFIELD_RO", "l"],
        &["BITFIELD_RO", "o", "SET", "u8", "0", "1"],
        &["BITFIELD_RO", "l", "SET", "u8", "0", "1"],
        &["BITFIELD_RO", "o", "SET", "u8", "x", "1"],
        &[
            "BITFIELD_RO",
            "nokey",
            "GET",
            "u8",
            "0",
            "GET",
            "i64",
            "#1000",
        ],
        &["BITFIELD_RO", "o", "OVERFLOW", "FAIL", "GET", "u8", "0"],
        &["BITFIELD_RO", "o", "INCRBY", "u8", "0", "1"],
        &["BITFIELD_RO", "o", "FOO"],
        &["BITFIELD_RO"],
        &["EXISTS", "nokey"],
        // The size limit, lowered so that the edge is cheap to reach.
        &["CONFIG", "SET", "proto-max-bulk-len", "1048576"],
        &["SETBIT", "big", "8388608", "1"],
        &["SETBIT", "big", "8388607", "1"],
        &["STRLEN", "big"],
        &["BITCOUNT", "big"],
        &["BITPOS", "big", "1"],
        &["BITPOS", "big", "0", "-1"],
        &["GETBIT", "big", "8388608"],
        &[
            "BITFIELD", "big", "GET", "u8", "8388600", "GET", "u8", "8388601",
        ],
        &["BITFIELD", "big", "SET", "u8", "8388601", "1"],
        &[
            "BITFIELD", "big", "SET", "u8", "#1048575", "1", "GET", "u8", "#1048575",
        ],
        &["BITFIELD", "big", "SET", "u8", "#1048576", "1"],
        &["BITFIELD", "big", "SET", "i64", "#131072", "1"],
        &["BITFIELD", "big", "SET", "i64", "#131071", "-1"],
        &["STRLEN", "big"],
        &["CONFIG", "SET", "proto-max-bulk-len", "536870912"],
        &["SETBIT", "big", "8388608", "1"],
        &["STRLEN", "big"],
        &["DEL", "big"],
    ]);
    let two = |op: &str| -> String { format!("-ERR BITOP {op} {BITOP_NEEDS_TWO}\r\n") };
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    newer(
        &mut cases,
        &[
            (&["BITOP", "DIFF", "d", "s"], leak(two("DIFF"))),
            (&["BITOP", "DIFF1", "d", "s"], leak(two("DIFF1"))),
            (&["BITOP", "ANDOR", "d", "s"], leak(two("ANDOR"))),
            (&["BITOP", "ONE", "d", "s"], ":6\r\n"),
            // x1 = f0ff, x2 = 3c, x3 = 0f01: DIFF = x1 & !(x2|x3) = c0fe.
            (&["BITOP", "DIFF", "d", "x1", "x2", "x3"], ":2\r\n"),
            (&["BITFIELD", "d", "GET", "u16", "0"], "*1\r\n:49406\r\n"),
            // DIFF1 = !x1 & (x2|x3) = 0f00.
            (&["BITOP", "DIFF1", "d", "x1", "x2", "x3"], ":2\r\n"),
            (&["BITFIELD", "d", "GET", "u16", "0"], "*1\r\n:3840\r\n"),
            // ANDOR = x1 & (x2|x3) = 3001.
            (&["BITOP", "ANDOR", "d", "x1", "x2", "x3"], ":2\r\n"),
            (&["BITFIELD", "d", "GET", "u16", "0"], "*1\r\n:12289\r\n"),
            // ONE: bits set in exactly one source = c3fe.
            (&["BITOP", "ONE", "d", "x1", "x2", "x3"], ":2\r\n"),
            (&["BITFIELD", "d", "GET", "u16", "0"], "*1\r\n:50174\r\n"),
            (
                &["BITOP", "diff", "d", "x1", "l"],
                "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            ),
            (&["BITOP", "AndOr", "d", "nokey", "nokey2"], ":0\r\n"),
        ],
    );
    cases
}

#[test]
fn edge_cases_answer_as_redis_7_0_in_resp2_and_resp3() {
    let st = start_server();
    let rd = redis_server();
    for proto in [2, 3] {
        let bad = differential(st.port, rd.port, proto, &edge_cases());
        assert!(
            bad.is_empty(),
            "{} divergences:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }
}

/// One random bitmap command over the keys `a`, `b`, `c` (and `l`, a list).
fn random_command(rng: &mut Rng) -> Vec<String> {
    let keys = ["a", "b", "c", "a", "b", "l"];
    let key = rng.pick(&keys).to_string();
    let num = |rng: &mut Rng, lo: i64, hi: i64| lo + (rng.next() % (hi - lo + 1) as u64) as i64;
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match rng.below(12) {
        0 | 1 => {
            let bit = if rng.chance(10) {
                "2"
            } else {
                rng.pick(&["0", "1"])
            };
            vec![
                "SETBIT".into(),
                key,
                num(rng, 0, 300).to_string(),
                bit.into(),
            ]
        }
        2 => vec!["GETBIT".into(), key, num(rng, 0, 320).to_string()],
        3 => {
            let mut c = vec!["BITCOUNT".into(), key];
            if rng.chance(80) {
                c.push(num(rng, -45, 45).to_string());
                c.push(num(rng, -45, 45).to_string());
                if rng.chance(60) {
                    c.push(rng.pick(&["BIT", "BYTE", "bit"]).into());
                }
            }
            c
        }
        4 | 5 => {
            let mut c = vec!["BITPOS".into(), key, rng.pick(&["0", "1"]).into()];
            let n = rng.below(4);
            if n >= 1 {
                c.push(num(rng, -45, 45).to_string());
            }
            if n >= 2 {
                c.push(num(rng, -45, 45).to_string());
            }
            if n >= 3 {
                c.push(rng.pick(&["BIT", "BYTE"]).into());
            }
            c
        }
        6 => {
            let op = rng.pick(&["AND", "OR", "XOR", "NOT"]);
            let n = if op == "NOT" { 1 } else { 1 + rng.below(3) };
            let mut c = vec![
                "BITOP".into(),
                op.into(),
                rng.pick(&["a", "b", "c", "d"]).into(),
            ];
            for _ in 0..n {
                c.push(rng.pick(&["a", "b", "c", "d", "none"]).into());
            }
            c
        }
        7 | 8 => {
            let mut c = vec![
                if rng.chance(15) {
                    "BITFIELD_RO"
                } else {
                    "BITFIELD"
                }
                .to_string(),
                key,
            ];
            for _ in 0..1 + rng.below(4) {
                if rng.chance(25) {
                    c.push("OVERFLOW".into());
                    c.push(rng.pick(&["WRAP", "SAT", "FAIL"]).into());
                }
                let signed = rng.chance(50);
                let bits = if signed {
                    num(rng, 1, 64)
                } else {
                    num(rng, 1, 63)
                };
                let ty = format!("{}{bits}", if signed { "i" } else { "u" });
                let offset = if rng.chance(20) {
                    format!("#{}", num(rng, 0, 4))
                } else {
                    num(rng, 0, 250).to_string()
                };
                let value = match rng.below(4) {
                    0 => num(rng, -3, 3),
                    1 => num(rng, -300, 300),
                    2 => rng.next() as i64,
                    _ => *[i64::MAX, i64::MIN, 1 << 62, -(1 << 62)]
                        .get(rng.below(4))
                        .unwrap_or(&0),
                };
                match rng.below(3) {
                    0 => c.extend([String::from("GET"), ty, offset]),
                    1 => c.extend([String::from("SET"), ty, offset, value.to_string()]),
                    _ => c.extend([String::from("INCRBY"), ty, offset, value.to_string()]),
                }
            }
            c
        }
        9 => s(&["GET", &key]),
        10 => match rng.below(4) {
            0 => s(&["SET", &key, &num(rng, -1000, 100000).to_string()]),
            1 => s(&["SET", &key, "foobar"]),
            2 => s(&["APPEND", &key, "xyz"]),
            // Not of the list: Redis 7.0 names its small-list encoding differently.
            _ if key == "l" => s(&["TYPE", &key]),
            _ => s(&["OBJECT", "ENCODING", &key]),
        },
        _ => s(&["INFO", "persistence"]),
    }
}

/// `rdb_changes_since_last_save` out of an INFO reply (the dirty counter).
fn dirty(reply: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(reply);
    text.lines()
        .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(-1)
}

#[test]
fn random_sequences_answer_as_redis_7_0() {
    let st = start_server();
    let rd = redis_server();
    for (proto, seed) in [(2u8, 11u64), (3, 12), (2, 13)] {
        let (mut s, mut r) = (st.raw(), rd.raw());
        if proto == 3 {
            s.hello3();
            r.hello3();
        }
        for c in [&mut s, &mut r] {
            c.cmd_str(&["FLUSHALL"]);
            c.cmd_str(&["LPUSH", "l", "x"]);
            c.cmd_str(&["CONFIG", "RESETSTAT"]);
        }
        let base = (dirty(&s.cmd_str(&["INFO"])), dirty(&r.cmd_str(&["INFO"])));
        let mut rng = Rng(seed);
        let mut bad = Vec::new();
        for step in 0..1500 {
            let cmd = random_command(&mut rng);
            let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            let (a, b) = (s.cmd_str(&args), r.cmd_str(&args));
            // The dirty counter compares as the change since the sequence began.
            let (a, b) = if args[0] == "INFO" {
                let (da, db) = (dirty(&a) - base.0, dirty(&b) - base.1);
                (da.to_string().into_bytes(), db.to_string().into_bytes())
            } else {
                (a, b)
            };
            if a != b {
                bad.push(format!(
                    "RESP{proto} step {step}: {args:?}\n  streamd: {}\n  redis:   {}",
                    escape(&a),
                    escape(&b)
                ));
            }
        }
        assert!(
            bad.is_empty(),
            "{} divergences:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }
}

#[test]
fn keyspace_events_match_redis() {
    let st = start_server();
    let rd = redis_server();
    let cmds: &[&[&str]] = &[
        &["SETBIT", "k", "3", "1"],
        &["SETBIT", "k", "3", "1"],
        &["SETBIT", "k", "3", "0"],
        &["SETBIT", "k", "100", "0"],
        &["SETBIT", "k", "0", "0"],
        &["SET", "n", "1"],
        &["SETBIT", "n", "0", "0"],
        &["BITFIELD", "f", "GET", "u8", "0"],
        &[
            "BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9",
        ],
        &["BITFIELD", "f", "SET", "u8", "0", "0"],
        &[
            "BITFIELD", "f", "SET", "u8", "0", "1", "INCRBY", "u8", "0", "1",
        ],
        &["BITFIELD", "g", "SET", "u8", "0", "0"],
        &["BITFIELD_RO", "f", "GET", "u8", "0"],
        &["BITOP", "OR", "d", "k", "f"],
        &["BITOP", "OR", "d", "k", "f"],
        &["BITOP", "AND", "d", "none"],
        &["BITOP", "AND", "d", "none"],
        &["GETBIT", "k", "3"],
        &["BITCOUNT", "k"],
        &["BITPOS", "k", "1"],
    ];
    let ours = keyevents(st.port, "KEA$gn", cmds);
    let theirs = keyevents(rd.port, "KEA$gn", cmds);
    assert!(theirs.len() > 8, "Redis sent {theirs:?}");
    assert_eq!(ours, theirs);
}

/// The bytes of the append-only files under `dir`.
fn log_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut log = Vec::new();
    for entry in std::fs::read_dir(dir.join("appendonlydir")).expect("appendonlydir") {
        let path = entry.expect("entry").path();
        log.extend(std::fs::read(path).unwrap_or_default());
    }
    log
}

#[test]
fn only_changes_are_logged_and_the_log_replays_them() {
    let st = start_server_with(&["--appendonly", "yes"]);
    let mut c: Raw = st.raw();
    for step in [
        &["SETBIT", "k", "3", "1"][..],
        &["SETBIT", "k", "3", "1"],
        &["SETBIT", "k", "700", "0"],
        &["GETBIT", "k", "3"],
        &["BITFIELD", "k", "GET", "u8", "0"],
        &["BITFIELD_RO", "k", "GET", "u8", "0"],
        &["BITFIELD", "k", "SET", "u4", "0", "1"],
        &["BITFIELD", "k", "SET", "u4", "0", "2"],
        &[
            "BITFIELD", "f", "SET", "i16", "#3", "-2", "INCRBY", "u5", "7", "40",
        ],
        &[
            "BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9",
        ],
        &["BITOP", "XOR", "x", "k", "f"],
        &["BITOP", "NOT", "y", "nothing"],
        &["SET", "z", "v"],
        &["BITOP", "AND", "z", "nothing"],
    ] {
        c.cmd_str(step);
    }
    let probe: &[&[&str]] = &[
        &["GET", "k"],
        &["GET", "f"],
        &["GET", "x"],
        &["EXISTS", "y", "z"],
        &["DBSIZE"],
    ];
    let before: Vec<Vec<u8>> = probe.iter().map(|p| c.cmd_str(p)).collect();
    std::thread::sleep(Duration::from_millis(100));
    let log = log_bytes(st.dir());
    let count = |needle: &[u8]| log.windows(needle.len()).filter(|w| *w == needle).count();
    assert_eq!(count(b"SETBIT"), 2, "{}", escape(&log));
    assert_eq!(count(b"BITFIELD"), 2, "{}", escape(&log));
    assert_eq!(count(b"u4"), 1, "{}", escape(&log));
    assert_eq!(count(b"BITFIELD_RO") + count(b"GETBIT") + count(b"FAIL"), 0);
    assert_eq!(count(b"BITOP"), 2, "{}", escape(&log));
    assert_eq!(c.cmd_str(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    let after: Vec<Vec<u8>> = probe.iter().map(|p| c.cmd_str(p)).collect();
    assert_eq!(before, after);
}

/// BITFIELD's key is only read when its arguments only read (Redis's `bitfieldGetKeys`),
/// and the ACL check and `COMMAND GETKEYSANDFLAGS` both follow the arguments.
#[test]
fn acl_key_permissions_follow_bitfields_arguments() {
    let st = start_server();
    let rd = redis_server();
    let cases = exact(&[
        &["SET", "k", "abc"],
        &[
            "COMMAND",
            "GETKEYSANDFLAGS",
            "BITFIELD",
            "k",
            "GET",
            "u8",
            "0",
        ],
        &[
            "COMMAND",
            "GETKEYSANDFLAGS",
            "BITFIELD",
            "k",
            "GET",
            "u8",
            "0",
            "SET",
            "u8",
            "0",
            "1",
        ],
        &[
            "COMMAND",
            "GETKEYSANDFLAGS",
            "BITFIELD",
            "k",
            "OVERFLOW",
            "SAT",
            "GET",
            "u8",
        ],
        &["COMMAND", "GETKEYSANDFLAGS", "BITOP", "AND", "d", "k", "k2"],
        &["ACL", "SETUSER", "reader", "on", "nopass", "%R~*", "+@all"],
        &["AUTH", "reader", "x"],
        &["BITFIELD", "k", "GET", "u8", "0", "OVERFLOW", "FAIL"],
        &["BITFIELD", "k", "GET", "u8", "0", "INCRBY", "u8", "0", "1"],
        &["BITFIELD_RO", "k", "GET", "u8", "0"],
        &["GETBIT", "k", "1"],
        &["BITCOUNT", "k"],
        &["BITPOS", "k", "1"],
        &["SETBIT", "k", "0", "1"],
        &["BITOP", "AND", "d", "k"],
    ]);
    for proto in [2, 3] {
        let bad = differential(st.port, rd.port, proto, &cases);
        assert!(
            bad.is_empty(),
            "{} divergences:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }
}

/// Strings of several kilobytes: BITOP combines them a 4 KiB piece at a time, BITPOS
/// skips 256-byte blocks, BITCOUNT counts with the CPU's popcount instructions
/// (`types/string/cpu.rs`). Random bytes, long runs of zeros or ones with one bit
/// different, lengths on both sides of the pieces' edges; every reply compared with
/// Redis 7.0's.
#[test]
fn bitmaps_of_many_blocks_answer_as_redis_7_0() {
    let st = start_server();
    let rd = redis_server();
    let (mut s, mut r) = (st.raw(), rd.raw());
    let mut rng = Rng(41);
    let mut bad = Vec::new();
    let mut both = |args: &[&[u8]], bad: &mut Vec<String>| {
        let (a, b) = (s.cmd(args), r.cmd(args));
        if a != b {
            let shown: Vec<String> = args
                .iter()
                .map(|x| String::from_utf8_lossy(&x[..x.len().min(20)]).into_owned())
                .collect();
            bad.push(format!(
                "{shown:?}\n  streamd: {}\n  redis:   {}",
                escape(&a[..a.len().min(200)]),
                escape(&b[..b.len().min(200)])
            ));
        }
    };
    let lens = [1usize, 255, 256, 257, 4095, 4096, 4097, 9000];
    for round in 0..6 {
        both(&[b"FLUSHALL"], &mut bad);
        for key in ["a", "b", "c"] {
            let len = lens[rng.below(lens.len())];
            let value: Vec<u8> = match (round + key.len() * rng.below(3)) % 3 {
                0 => (0..len).map(|_| rng.next() as u8).collect(),
                // A run of zeros (or of ones) with one bit different somewhere.
                shape => {
                    let fill = if shape == 1 { 0u8 } else { 0xFF };
                    let mut v = vec![fill; len];
                    let at = rng.below(len * 8);
                    v[at / 8] ^= 0x80 >> (at % 8);
                    v
                }
            };
            both(&[b"SET", key.as_bytes(), &value], &mut bad);
        }
        for op in ["AND", "OR", "XOR"] {
            both(&[b"BITOP", op.as_bytes(), b"d", b"a", b"b", b"c"], &mut bad);
            both(&[b"GET", b"d"], &mut bad);
            both(
                &[b"BITOP", op.as_bytes(), b"d", b"c", b"none", b"a"],
                &mut bad,
            );
            both(&[b"GET", b"d"], &mut bad);
        }
        both(&[b"BITOP", b"NOT", b"d", b"b"], &mut bad);
        both(&[b"GET", b"d"], &mut bad);
        for key in ["a", "b", "c", "d"] {
            let k = key.as_bytes();
            both(&[b"BITCOUNT", k], &mut bad);
            for bit in [&b"0"[..], b"1"] {
                both(&[b"BITPOS", k, bit], &mut bad);
            }
            for _ in 0..12 {
                let from = (rng.next() % 20_000) as i64 - 10_000;
                let to = (rng.next() % 20_000) as i64 - 10_000;
                let (from, to) = (from.to_string(), to.to_string());
                let unit: &[u8] = if rng.chance(50) { b"BIT" } else { b"BYTE" };
                let bit: &[u8] = if rng.chance(50) { b"1" } else { b"0" };
                both(
                    &[b"BITCOUNT", k, from.as_bytes(), to.as_bytes(), unit],
                    &mut bad,
                );
                both(
                    &[b"BITPOS", k, bit, from.as_bytes(), to.as_bytes(), unit],
                    &mut bad,
                );
                both(&[b"BITPOS", k, bit, from.as_bytes()], &mut bad);
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} divergences:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
