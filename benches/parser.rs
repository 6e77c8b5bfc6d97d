//! Request parser benchmarks: the two shapes that matter on the wire.
//!
//! - `pipelined_xadd`: one read holding 1000 pipelined 7-argument XADDs
//!   (`XADD stream * field value field value`), decoded into 1000 argvs. Divided by 1000,
//!   this is the per-command parse cost. `redis_protocol_decode_range` decodes the same bytes
//!   with redis-protocol's zero-copy range decoder, for scale.
//! - `huge_command_in_16k_reads`: one 100 000-argument command arriving in 16 KiB reads, each
//!   appended to the buffer and offered to the parser, as the connection loop does. A parser
//!   that re-parses from byte 0 on every read is quadratic here.
//! - `big_bulk_in_16k_reads`: a 1 MiB argument arriving in 16 KiB reads; the allocation
//!   profile shows it landing in a single buffer.
//!
//! Run: `cargo bench --bench parser`.

use bytes::BytesMut;
use divan::counter::{BytesCount, ItemsCount};
use divan::{AllocProfiler, Bencher, black_box};
use streamd::resp::parser::{ParserLimits, RequestParser};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    divan::main();
}

/// RESP2 array of bulk strings.
fn encode(argv: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", argv.len()).as_bytes());
    for arg in argv {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

const XADDS: usize = 1000;

fn pipelined_xadds() -> Vec<u8> {
    let mut wire = Vec::new();
    for i in 0..XADDS {
        let value = format!("{i:08}");
        encode(
            &[
                b"XADD",
                b"sensor:1",
                b"*",
                b"temperature",
                value.as_bytes(),
                b"humidity",
                b"42.5",
            ],
            &mut wire,
        );
    }
    wire
}

#[divan::bench]
fn pipelined_xadd(bencher: Bencher) {
    let wire = pipelined_xadds();
    bencher
        .counter(ItemsCount::new(XADDS))
        .counter(BytesCount::new(wire.len()))
        .with_inputs(|| BytesMut::from(&wire[..]))
        .bench_local_values(|mut buf| {
            let mut parser = RequestParser::new(ParserLimits::default());
            let mut commands = Vec::with_capacity(XADDS);
            while let Some(argv) = parser.parse(&mut buf).expect("valid") {
                commands.push(argv);
            }
            assert_eq!(commands.len(), XADDS);
            commands
        });
}

#[divan::bench]
fn redis_protocol_decode_range(bencher: Bencher) {
    let wire = pipelined_xadds();
    bencher
        .counter(ItemsCount::new(XADDS))
        .counter(BytesCount::new(wire.len()))
        .bench_local(|| {
            let mut rest = black_box(&wire[..]);
            let mut n = 0;
            while let Some((frame, used)) =
                redis_protocol::resp2::decode::decode_range(rest).expect("valid")
            {
                black_box(frame);
                rest = &rest[used..];
                n += 1;
            }
            assert_eq!(n, XADDS);
        });
}

const READ_SIZE: usize = 16 * 1024;

/// Feeds `wire` in `READ_SIZE` reads and returns the one command it holds. Like a
/// connection, it grows the buffer only when a read would not fit.
fn feed_in_reads(wire: &[u8]) -> streamd::resp::Argv {
    let mut parser = RequestParser::new(ParserLimits::default());
    let mut buf = BytesMut::with_capacity(READ_SIZE);
    for read in wire.chunks(READ_SIZE) {
        if buf.capacity() - buf.len() < read.len() {
            buf.reserve(READ_SIZE);
        }
        buf.extend_from_slice(read);
        if let Some(argv) = parser.parse(&mut buf).expect("valid") {
            return argv;
        }
    }
    panic!("the command did not complete");
}

const HUGE_ARGS: usize = 100_000;

#[divan::bench]
fn huge_command_in_16k_reads(bencher: Bencher) {
    let args: Vec<String> = (0..HUGE_ARGS).map(|i| format!("field-{i}")).collect();
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let mut wire = Vec::new();
    encode(&refs, &mut wire);
    bencher
        .counter(ItemsCount::new(HUGE_ARGS))
        .counter(BytesCount::new(wire.len()))
        .bench_local(|| {
            let argv = feed_in_reads(black_box(&wire));
            assert_eq!(argv.len(), HUGE_ARGS);
            argv
        });
}

#[divan::bench]
fn big_bulk_in_16k_reads(bencher: Bencher) {
    let payload = vec![b'v'; 1 << 20];
    let mut wire = Vec::new();
    encode(&[b"SET", b"key", &payload], &mut wire);
    bencher
        .counter(BytesCount::new(wire.len()))
        .bench_local(|| {
            let argv = feed_in_reads(black_box(&wire));
            assert_eq!(argv[2].len(), 1 << 20);
            argv
        });
}
