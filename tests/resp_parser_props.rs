//! Properties of the request parser against an independent implementation.
//!
//! `redis-protocol` (the test oracle, see `reference/rust-crates.md`) encodes random
//! commands as RESP2 arrays of bulk strings; the bytes are cut at random points and fed to
//! our parser piece by piece, which must give back exactly the commands that went in. Inline
//! lines without quotes must split on whitespace, and the two kinds may be pipelined
//! together.

use bytes::BytesMut;
use proptest::collection::vec;
use proptest::prelude::*;
use redis_protocol::resp2::encode::encode;
use redis_protocol::resp2::types::{OwnedFrame, Resp2Frame};
use streamd::resp::parser::{ParserLimits, RequestParser};

/// One request as a client would send it.
#[derive(Debug, Clone)]
enum Request {
    /// A RESP array of bulk strings (possibly empty: `*0\r\n`, which the parser skips).
    Multibulk(Vec<Vec<u8>>),
    /// An inline line: words, the blanks before/between/after them, and the terminator.
    Inline {
        words: Vec<Vec<u8>>,
        blanks: Vec<Vec<u8>>,
        crlf: bool,
    },
}

impl Request {
    /// The bytes on the wire; multibulks encoded by redis-protocol.
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Request::Multibulk(argv) => {
                let frame = OwnedFrame::Array(
                    argv.iter()
                        .map(|a| OwnedFrame::BulkString(a.clone()))
                        .collect(),
                );
                let start = out.len();
                out.resize(start + frame.encode_len(false), 0);
                let written = encode(&mut out[start..], &frame, false).expect("encodes");
                assert_eq!(written, out.len() - start);
            }
            Request::Inline {
                words,
                blanks,
                crlf,
            } => {
                // blanks has words.len() + 1 entries: before, between..., after.
                for (blank, word) in blanks.iter().zip(words) {
                    out.extend_from_slice(blank);
                    out.extend_from_slice(word);
                }
                out.extend_from_slice(blanks.last().map_or(&[][..], |b| &b[..]));
                out.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
            }
        }
    }

    /// What the parser must return for it; `None` if it is an empty command to be skipped.
    fn expected(&self) -> Option<Vec<Vec<u8>>> {
        let argv = match self {
            Request::Multibulk(argv) => argv,
            Request::Inline { words, .. } => words,
        };
        (!argv.is_empty()).then(|| argv.clone())
    }
}

/// An argument: any bytes, or bytes rich in the protocol's own characters; often empty.
fn arg() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..100),
        vec(prop::sample::select(&b"\r\n$*:0123456789 a"[..]), 0..100),
        Just(Vec::new()),
        Just(b"\r\n".to_vec()),
    ]
}

fn multibulk() -> impl Strategy<Value = Request> {
    vec(arg(), 0..20).prop_map(Request::Multibulk)
}

/// A word without quotes, blanks or NUL: printable ASCII except `"` and `'`.
fn word() -> impl Strategy<Value = Vec<u8>> {
    "[!#-&(-~]{1,12}".prop_map(String::into_bytes)
}

/// A run of spaces and tabs.
fn blank(min: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(prop::sample::select(&b" \t"[..]), min..4)
}

fn inline() -> impl Strategy<Value = Request> {
    (vec(word(), 0..10), any::<bool>()).prop_flat_map(|(words, crlf)| {
        let n = words.len();
        (
            Just(words),
            blank(0),
            vec(blank(1), n.saturating_sub(1)),
            blank(0),
            Just(crlf),
        )
            .prop_map(|(words, before, between, after, crlf)| {
                let mut blanks = vec![before];
                // A line starting with '*' would be a multibulk: keep a blank in front.
                if blanks[0].is_empty() && words.first().is_some_and(|w| w[0] == b'*') {
                    blanks[0].push(b' ');
                }
                blanks.extend(between);
                blanks.push(after);
                Request::Inline {
                    words,
                    blanks,
                    crlf,
                }
            })
    })
}

/// Feeds `wire` cut at `cuts` and returns every command parsed, checking that nothing is
/// left over.
fn parse_in_pieces(wire: &[u8], cuts: &[usize]) -> Vec<Vec<Vec<u8>>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.push(wire.len());
    let mut parser = RequestParser::new(ParserLimits::default());
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    let mut from = 0;
    for to in cuts {
        buf.extend_from_slice(&wire[from..to]);
        from = to;
        while let Some(argv) = parser.parse(&mut buf).expect("valid requests parse") {
            got.push(argv.iter().map(|a| a.to_vec()).collect());
        }
    }
    assert!(buf.is_empty(), "{} bytes left unparsed", buf.len());
    got
}

proptest! {
    #[test]
    fn multibulks_encoded_by_redis_protocol_parse_back_in_any_chunking(
        requests in vec(multibulk(), 1..10),
        cuts in vec(any::<usize>(), 0..12),
    ) {
        let mut wire = Vec::new();
        for r in &requests {
            r.encode(&mut wire);
        }
        let expected: Vec<_> = requests.iter().filter_map(Request::expected).collect();
        prop_assert_eq!(parse_in_pieces(&wire, &cuts), expected);
    }

    #[test]
    fn inline_lines_without_quotes_split_on_whitespace(
        requests in vec(inline(), 1..10),
        cuts in vec(any::<usize>(), 0..12),
    ) {
        let mut wire = Vec::new();
        for r in &requests {
            r.encode(&mut wire);
        }
        let expected: Vec<_> = requests.iter().filter_map(Request::expected).collect();
        prop_assert_eq!(parse_in_pieces(&wire, &cuts), expected);
    }

    #[test]
    fn multibulk_and_inline_requests_pipeline_together(
        requests in vec(prop_oneof![multibulk(), inline()], 1..10),
        cuts in vec(any::<usize>(), 0..12),
    ) {
        let mut wire = Vec::new();
        for r in &requests {
            r.encode(&mut wire);
        }
        let expected: Vec<_> = requests.iter().filter_map(Request::expected).collect();
        prop_assert_eq!(parse_in_pieces(&wire, &cuts), expected);
    }

    #[test]
    fn arbitrary_bytes_give_the_same_outcome_in_any_chunking(
        wire in vec(prop_oneof![
            any::<u8>(),
            prop::sample::select(&b"*$\r\n0123456789-\"' \\x"[..]),
        ], 0..300),
        cuts in vec(any::<usize>(), 0..12),
    ) {
        prop_assert_eq!(outcome(&wire, &cuts), outcome(&wire, &[]));
    }

    /// Near-valid multibulk requests (counts and lengths at the edges of the parser's
    /// fast path: 0, leading zeros, 16/17 arguments, negative, long digit runs, payloads
    /// shorter or longer than announced) parse the same in one piece, where whole
    /// commands take the fast path, as fed one byte at a time, where they cannot.
    #[test]
    fn edge_headers_parse_the_same_whole_and_byte_by_byte(
        tokens in vec(prop_oneof![
            prop::sample::select(vec![
                "*0", "*1", "*2", "*3", "*01", "*16", "*17", "*-1", "*10", "*11",
                "*99999999999999999999",
            ]).prop_map(|t| format!("{t}\r\n").into_bytes()),
            (prop::sample::select(vec![
                "0", "1", "2", "3", "00", "01", "-1", "32767", "32768", "16385",
                "123456789012345678901",
            ]), 0usize..5).prop_map(|(len, extra)| {
                let n: usize = len.parse().unwrap_or(0).min(4);
                let mut t = format!("${len}\r\n").into_bytes();
                t.extend(std::iter::repeat_n(b'x', n + extra % 2));
                t.extend_from_slice(b"\r\n");
                t
            }),
            prop::sample::select(vec![&b"$1\r\na\r\n"[..], b"\r\n", b"$", b"\0"])
                .prop_map(|t| t.to_vec()),
        ], 0..40),
    ) {
        let wire: Vec<u8> = tokens.concat();
        let every_byte: Vec<usize> = (0..wire.len()).collect();
        prop_assert_eq!(outcome(&wire, &every_byte), outcome(&wire, &[]));
    }
}

/// Every command parsed and the error that stopped parsing, if any, feeding `wire` cut at
/// `cuts`. Never panics, whatever the bytes.
fn outcome(wire: &[u8], cuts: &[usize]) -> (Vec<Vec<Vec<u8>>>, Option<&'static str>) {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.push(wire.len());
    let mut parser = RequestParser::new(ParserLimits::default());
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    let mut from = 0;
    for to in cuts {
        buf.extend_from_slice(&wire[from..to]);
        from = to;
        loop {
            match parser.parse(&mut buf) {
                Ok(Some(argv)) => got.push(argv.iter().map(|a| a.to_vec()).collect()),
                Ok(None) => break,
                Err(err) => return (got, Some(err.0)),
            }
        }
    }
    (got, None)
}
