//! Our reply writer checked against an independent implementation: random reply trees
//! encoded by `RespWriter` (for RESP2 and for RESP3, with known and deferred lengths)
//! must decode with the `redis-protocol` crate to exactly the frame the tree describes,
//! consuming every byte.

use proptest::prelude::*;
use redis_protocol::resp2::types::OwnedFrame as F2;
use redis_protocol::resp3::types::{OwnedFrame as F3, VerbatimStringFormat};
use streamd::resp::writer::{Protocol, RespWriter};

/// A reply, as a command would build it.
#[derive(Debug, Clone)]
enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    NullArray,
    Bool(bool),
    Verbatim(Vec<u8>),
    Array(Vec<Reply>),
    /// Written with a deferred length.
    DeferredArray(Vec<Reply>),
    /// Keys are distinct bulk strings.
    Map(Vec<(Vec<u8>, Reply)>),
}

fn line_text() -> impl Strategy<Value = String> {
    "[ -~]{0,20}".prop_filter("no CR/LF", |s| !s.contains('\r') && !s.contains('\n'))
}

fn reply() -> impl Strategy<Value = Reply> {
    let leaf = prop_oneof![
        line_text().prop_map(Reply::Simple),
        line_text().prop_map(|s| Reply::Error(format!("ERR {s}"))),
        any::<i64>().prop_map(Reply::Int),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Reply::Bulk),
        Just(Reply::Null),
        Just(Reply::NullArray),
        any::<bool>().prop_map(Reply::Bool),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Reply::Verbatim),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Reply::Array),
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Reply::DeferredArray),
            proptest::collection::vec(inner, 0..5).prop_map(|vals| {
                Reply::Map(
                    vals.into_iter()
                        .enumerate()
                        .map(|(i, v)| (format!("field-{i}").into_bytes(), v))
                        .collect(),
                )
            }),
        ]
    })
}

fn write(w: &mut RespWriter, r: &Reply) {
    match r {
        Reply::Simple(s) => w.simple(s.as_bytes()),
        Reply::Error(s) => w.error_text(s.as_bytes()),
        Reply::Int(i) => w.integer(*i),
        Reply::Bulk(b) => w.bulk(b),
        Reply::Null => w.null(),
        Reply::NullArray => w.null_array(),
        Reply::Bool(b) => w.boolean(*b),
        Reply::Verbatim(t) => w.verbatim(t),
        Reply::Array(items) => {
            w.array(items.len());
            items.iter().for_each(|i| write(w, i));
        }
        Reply::DeferredArray(items) => {
            let d = w.defer_len();
            items.iter().for_each(|i| write(w, i));
            w.finish_array(d, items.len());
        }
        Reply::Map(pairs) => {
            w.map(pairs.len());
            for (k, v) in pairs {
                w.bulk(k);
                write(w, v);
            }
        }
    }
}

/// What a RESP2 client must see.
fn expect2(r: &Reply) -> F2 {
    match r {
        Reply::Simple(s) => F2::SimpleString(s.clone().into_bytes()),
        Reply::Error(s) => F2::Error(s.clone()),
        Reply::Int(i) => F2::Integer(*i),
        Reply::Bulk(b) | Reply::Verbatim(b) => F2::BulkString(b.clone()),
        Reply::Null | Reply::NullArray => F2::Null,
        Reply::Bool(b) => F2::Integer(i64::from(*b)),
        Reply::Array(items) | Reply::DeferredArray(items) => {
            F2::Array(items.iter().map(expect2).collect())
        }
        Reply::Map(pairs) => F2::Array(
            pairs
                .iter()
                .flat_map(|(k, v)| [F2::BulkString(k.clone()), expect2(v)])
                .collect(),
        ),
    }
}

/// What a RESP3 client must see.
fn expect3(r: &Reply) -> F3 {
    match r {
        Reply::Simple(s) => F3::SimpleString {
            data: s.clone().into_bytes(),
            attributes: None,
        },
        Reply::Error(s) => F3::SimpleError {
            data: s.clone(),
            attributes: None,
        },
        Reply::Int(i) => F3::Number {
            data: *i,
            attributes: None,
        },
        Reply::Bulk(b) => F3::BlobString {
            data: b.clone(),
            attributes: None,
        },
        Reply::Verbatim(b) => F3::VerbatimString {
            data: b.clone(),
            format: VerbatimStringFormat::Text,
            attributes: None,
        },
        Reply::Null | Reply::NullArray => F3::Null,
        Reply::Bool(b) => F3::Boolean {
            data: *b,
            attributes: None,
        },
        Reply::Array(items) | Reply::DeferredArray(items) => F3::Array {
            data: items.iter().map(expect3).collect(),
            attributes: None,
        },
        Reply::Map(pairs) => F3::Map {
            data: pairs
                .iter()
                .map(|(k, v)| {
                    (
                        F3::BlobString {
                            data: k.clone(),
                            attributes: None,
                        },
                        expect3(v),
                    )
                })
                .collect(),
            attributes: None,
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn resp2_replies_decode_with_redis_protocol_to_the_expected_frame(r in reply()) {
        let mut w = RespWriter::new(Protocol::Resp2);
        write(&mut w, &r);
        let decoded = redis_protocol::resp2::decode::decode(&w.buf)
            .map_err(|e| TestCaseError::fail(format!("{e:?} on {:?}", String::from_utf8_lossy(&w.buf))))?;
        let (frame, used) = decoded.ok_or_else(|| TestCaseError::fail("incomplete"))?;
        prop_assert_eq!(used, w.buf.len());
        prop_assert_eq!(frame, expect2(&r));
    }

    #[test]
    fn resp3_replies_decode_with_redis_protocol_to_the_expected_frame(r in reply()) {
        let mut w = RespWriter::new(Protocol::Resp3);
        write(&mut w, &r);
        let decoded = redis_protocol::resp3::decode::complete::decode(&w.buf)
            .map_err(|e| TestCaseError::fail(format!("{e:?} on {:?}", String::from_utf8_lossy(&w.buf))))?;
        let (frame, used) = decoded.ok_or_else(|| TestCaseError::fail("incomplete"))?;
        prop_assert_eq!(used, w.buf.len());
        prop_assert_eq!(frame, expect3(&r));
    }
}
