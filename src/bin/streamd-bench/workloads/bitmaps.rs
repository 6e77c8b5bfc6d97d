//! The bitmap commands: `bitmaps/<op>`. Each sets a bitmap up on a flushed server, then
//! runs one command for a timed phase from one connection, pipelined (the bit-level
//! commands 32 deep; the scans of a whole megabyte one at a time), or loads a bitmap and
//! reports memory per bit.
//!
//! ```text
//! variant            setup                          timed command
//! setbit-p32         -                              SETBIT bm <random bit of 8M> 0|1
//! getbit-p32         1 MiB of random bytes          GETBIT bm <random bit of 8M>
//! bitfield-p32       1 MiB of random bytes          BITFIELD bm INCRBY u8 #<random> 1
//! bitcount-1mib      1 MiB of random bytes          BITCOUNT bm   (8M bits counted)
//! bitcount-bit-1mib  1 MiB of random bytes          BITCOUNT bm 3 -5 BIT
//! bitpos-1mib        1 MiB of zeros, last bit set   BITPOS bm 1   (the whole string scanned)
//! bitop-and-4x256k   four 256 KiB random bitmaps    BITOP AND dst a b c d
//! mem-1mbit          SETBIT 0..1M in order (measured: used_memory per bit set)
//! ```
//!
//! "Random bytes" are written with SETRANGE in 1 KiB pieces of a fixed-seed stream, so
//! both servers hold the same bitmap.

use std::io;

use super::Ctx;
use crate::client::Conn;
use crate::driver::{Stop, closed_loop};
use crate::measure::{Rng, Sample};

/// Bits in the one-megabyte bitmap.
const BITS: u64 = 8 * 1024 * 1024;

/// What a `bitmaps/*` variant measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitmapOp {
    /// SETBIT of random bits, growing an empty key up to 1 MiB.
    SetBit,
    /// GETBIT of random bits.
    GetBit,
    /// BITFIELD INCRBY of a random byte-aligned u8.
    BitField,
    /// BITCOUNT of the whole 1 MiB string.
    BitCount,
    /// BITCOUNT of a BIT range with ragged ends.
    BitCountBit,
    /// BITPOS 1 over a string whose only set bit is the last.
    BitPos,
    /// BITOP AND of four 256 KiB strings.
    BitOpAnd,
    /// Memory per bit of a bitmap set bit by bit.
    Memory,
}

impl BitmapOp {
    /// Every variant with its name and pipeline depth.
    pub const ALL: &[(&str, BitmapOp, usize)] = &[
        ("setbit-p32", BitmapOp::SetBit, 32),
        ("getbit-p32", BitmapOp::GetBit, 32),
        ("bitfield-p32", BitmapOp::BitField, 32),
        ("bitcount-1mib", BitmapOp::BitCount, 1),
        ("bitcount-bit-1mib", BitmapOp::BitCountBit, 1),
        ("bitpos-1mib", BitmapOp::BitPos, 1),
        ("bitop-and-4x256k", BitmapOp::BitOpAnd, 1),
        ("mem-1mbit", BitmapOp::Memory, 1),
    ];
}

/// Writes `len` bytes of a fixed-seed random stream into `key` (SETRANGE, 1 KiB at a
/// time, pipelined).
async fn random_bytes(conn: &mut Conn, key: &[u8], len: u64, seed: u64) -> io::Result<()> {
    let mut rng = Rng::new(seed);
    let mut sent = 0;
    for at in (0..len).step_by(1024) {
        let piece: Vec<u8> = (0..1024.min(len - at))
            .map(|_| rng.below(256) as u8)
            .collect();
        conn.push(&[&b"SETRANGE"[..], key, at.to_string().as_bytes(), &piece[..]]);
        sent += 1;
    }
    conn.flush().await?;
    conn.skip(sent).await
}

/// Runs one `bitmaps/*` variant.
pub async fn run(ctx: &Ctx, op: BitmapOp, pipeline: usize) -> io::Result<Sample> {
    let mut ctl = ctx.fresh().await?;
    match op {
        BitmapOp::SetBit => {}
        BitmapOp::GetBit | BitmapOp::BitField | BitmapOp::BitCount | BitmapOp::BitCountBit => {
            random_bytes(&mut ctl, b"bm", BITS / 8, 0xB17).await?
        }
        BitmapOp::BitPos => {
            ctl.ok(&["SETBIT", "bm", &(BITS - 1).to_string(), "1"])
                .await?;
        }
        BitmapOp::BitOpAnd => {
            for (i, key) in ["a", "b", "c", "d"].iter().enumerate() {
                random_bytes(&mut ctl, key.as_bytes(), 256 * 1024, 0xB17 + i as u64).await?;
            }
        }
        BitmapOp::Memory => {
            let bits = ctx.n(1_000_000, 10_000);
            let mut conn = ctx.conn().await?;
            let phase = ctx.begin(&mut ctl).await?;
            let mut pending = 0;
            for i in 0..bits {
                conn.push(&[&b"SETBIT"[..], b"bm", i.to_string().as_bytes(), b"1"]);
                pending += 1;
                if pending == 1000 {
                    conn.flush().await?;
                    conn.skip(pending).await?;
                    pending = 0;
                }
            }
            conn.flush().await?;
            conn.skip(pending).await?;
            let m = phase.end(&mut ctl).await?;
            return Ok(Sample::new(m, bits, bits, Vec::new()));
        }
    }
    let conns = ctx.conns(1).await?;
    let phase = ctx.begin(&mut ctl).await?;
    let done = closed_loop(
        conns,
        pipeline,
        Stop::For(ctx.timed()),
        move |_, _, rng, conn| {
            let mut b = itoa::Buffer::new();
            match op {
                BitmapOp::SetBit => {
                    let bit = b.format(rng.below(BITS));
                    let on: &[u8] = if rng.below(2) == 0 { b"0" } else { b"1" };
                    conn.push(&[&b"SETBIT"[..], b"bm", bit.as_bytes(), on]);
                }
                BitmapOp::GetBit => {
                    let bit = b.format(rng.below(BITS));
                    conn.push(&[&b"GETBIT"[..], b"bm", bit.as_bytes()]);
                }
                BitmapOp::BitField => {
                    let at = format!("#{}", rng.below(BITS / 8));
                    conn.push(&["BITFIELD", "bm", "INCRBY", "u8", &at, "1"]);
                }
                BitmapOp::BitCount => conn.push(&["BITCOUNT", "bm"]),
                BitmapOp::BitCountBit => conn.push(&["BITCOUNT", "bm", "3", "-5", "BIT"]),
                BitmapOp::BitPos => conn.push(&["BITPOS", "bm", "1"]),
                BitmapOp::BitOpAnd => conn.push(&["BITOP", "AND", "dst", "a", "b", "c", "d"]),
                BitmapOp::Memory => {}
            }
        },
    )
    .await?;
    let m = phase.end(&mut ctl).await?;
    Ok(Sample::new(m, done.ops, done.ops, done.lat_ns))
}
