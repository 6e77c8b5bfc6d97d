//! Workloads with blocked consumers: `produce-consume`, `auction`, `blocked-readers`.
//! Producers put a microsecond timestamp (`ts`, since the tool started) in each entry, so
//! a consumer measures XADD-to-delivery latency on arrival (same process, same clock).

use std::io;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::Ctx;
use crate::client::{Conn, Value, info_field, push_entries, read_entries};
use crate::driver::{Stop, closed_loop};
use crate::measure::{Rng, Sample};

/// Microseconds from `epoch` to now.
pub(super) fn micros(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Nanoseconds from the `ts` value (as written by [`micros`]) to now.
pub(super) fn age_ns(epoch: Instant, ts: &[u8]) -> Option<u64> {
    let ts: u64 = std::str::from_utf8(ts).ok()?.parse().ok()?;
    Some(micros(epoch).saturating_sub(ts) * 1000)
}

/// Counts of one task of a live workload.
#[derive(Default)]
pub(super) struct Tally {
    /// Commands completed.
    pub(super) ops: u64,
    /// Entries delivered to consumers.
    pub(super) delivered: u64,
    /// Latency samples (ns).
    pub(super) lat_ns: Vec<u64>,
}

impl Tally {
    /// Counts the entries of each stream of an XREADGROUP reply (and the age of their
    /// `ts` field) and hands `XACK <key> g <ids...>` for that stream to `ack`.
    pub(super) fn take_delivered(
        &mut self,
        reply: &Value,
        epoch: Instant,
        mut ack: impl FnMut(&[u8], &[&[u8]]),
    ) {
        for stream in reply.items() {
            let [key, list] = stream.items() else {
                continue;
            };
            let mut got = Vec::new();
            push_entries(list, &mut got);
            if got.is_empty() {
                continue;
            }
            let mut args: Vec<&[u8]> = vec![b"XACK", key.bytes(), b"g"];
            for e in &got {
                self.delivered += 1;
                self.lat_ns
                    .extend(e.field(b"ts").and_then(|v| age_ns(epoch, v)));
                args.push(e.id);
            }
            ack(key.bytes(), &args);
        }
    }
}

/// Joins every task and adds their tallies up.
pub(super) async fn join(mut set: JoinSet<io::Result<Tally>>) -> io::Result<Tally> {
    let mut all = Tally::default();
    while let Some(t) = set.join_next().await {
        let t = t.map_err(io::Error::other)??;
        all.ops += t.ops;
        all.delivered += t.delivered;
        all.lat_ns.extend(t.lat_ns);
    }
    Ok(all)
}

/// 1,000 connections on one stream with group `g`; each command is an XADD (70%) or a
/// `XREADGROUP GROUP g c<i> COUNT 10 BLOCK 1000 STREAMS s >` (30%), so most readers wait
/// blocked until an XADD arrives. Only work finished inside the timed phase counts.
/// Latency: XADD sent to entry delivered.
pub async fn produce_consume(ctx: &Ctx) -> io::Result<Sample> {
    const CONNS: usize = 1000;
    let mut ctl = ctx.fresh().await?;
    ctl.ok(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        .await?;
    let conns = ctx.conns(CONNS).await?;
    let epoch = ctx.epoch;
    let phase = ctx.begin(&mut ctl).await?;
    let until = Instant::now() + ctx.timed();
    let mut set = JoinSet::new();
    for (i, mut conn) in conns.into_iter().enumerate() {
        set.spawn_local(async move {
            let mut rng = Rng::new(i as u64 + 1);
            let name = format!("c{i}");
            let mut t = Tally::default();
            let mut ts = itoa::Buffer::new();
            while Instant::now() < until {
                if rng.below(10) < 7 {
                    conn.push(&["XADD", "s", "*", "ts", ts.format(micros(epoch))]);
                    conn.flush().await?;
                    conn.skip(1).await?;
                    if Instant::now() < until {
                        t.ops += 1;
                    }
                } else {
                    let reply = conn
                        .value(&[
                            "XREADGROUP",
                            "GROUP",
                            "g",
                            &name,
                            "COUNT",
                            "10",
                            "BLOCK",
                            "1000",
                            "STREAMS",
                            "s",
                            ">",
                        ])
                        .await?;
                    if Instant::now() >= until {
                        break;
                    }
                    t.ops += 1;
                    for e in read_entries(&reply) {
                        t.delivered += 1;
                        t.lat_ns
                            .extend(e.field(b"ts").and_then(|v| age_ns(epoch, v)));
                    }
                }
            }
            Ok(t)
        });
    }
    tokio::time::sleep_until(until.into()).await;
    let m = phase.end(&mut ctl).await?;
    let t = join(set).await?;
    Ok(Sample::new(m, t.ops, t.delivered, t.lat_ns))
}

/// The sharded auction: bids hashed by bidder to 1,024 streams `auction:<i>`, each with
/// group `g`; 32 consumers, consumer `j` owning the 32 shards `i % 32 == j` and blocking on
/// all of them with one `XREADGROUP ... COUNT 100 BLOCK 1000 STREAMS <32 keys> <32 × '>'>`,
/// then acknowledging what it got with one XACK per shard (pipelined); 16 producers
/// send XADDs one at a time. Entries = bids delivered end to end; latency: bid sent to
/// bid received by its consumer.
pub async fn auction(ctx: &Ctx) -> io::Result<Sample> {
    const SHARDS: usize = 1024;
    const CONSUMERS: usize = 32;
    const PRODUCERS: usize = 16;
    let mut ctl = ctx.fresh().await?;
    let keys: Vec<String> = (0..SHARDS).map(|i| format!("auction:{i}")).collect();
    for key in &keys {
        ctl.push(&["XGROUP", "CREATE", key, "g", "$", "MKSTREAM"]);
    }
    ctl.flush().await?;
    ctl.skip(SHARDS).await?;
    let consumers = ctx.conns(CONSUMERS).await?;
    let producers = ctx.conns(PRODUCERS).await?;
    let epoch = ctx.epoch;
    let phase = ctx.begin(&mut ctl).await?;
    let until = Instant::now() + ctx.timed();
    let mut set = JoinSet::new();
    for (j, mut conn) in consumers.into_iter().enumerate() {
        let mine: Vec<String> = keys.iter().skip(j).step_by(CONSUMERS).cloned().collect();
        set.spawn_local(async move {
            let name = format!("c{j}");
            let mut args: Vec<&str> = vec!["XREADGROUP", "GROUP", "g", &name];
            args.extend(["COUNT", "100", "BLOCK", "1000", "STREAMS"]);
            args.extend(mine.iter().map(String::as_str));
            args.extend(std::iter::repeat_n(">", mine.len()));
            let mut t = Tally::default();
            while Instant::now() < until {
                let reply = conn.value(&args).await?;
                if Instant::now() >= until {
                    break;
                }
                t.ops += 1;
                let mut acks = 0;
                t.take_delivered(&reply, epoch, |_, ack| {
                    conn.push(ack);
                    acks += 1;
                });
                conn.flush().await?;
                conn.skip(acks).await?;
                t.ops += acks as u64;
            }
            Ok(t)
        });
    }
    for (i, mut conn) in producers.into_iter().enumerate() {
        set.spawn_local(async move {
            let mut rng = Rng::new(0xB1D + i as u64);
            let mut t = Tally::default();
            let (mut b, mut a, mut ts) = (
                itoa::Buffer::new(),
                itoa::Buffer::new(),
                itoa::Buffer::new(),
            );
            while Instant::now() < until {
                let bidder = rng.below(1_000_000);
                // Fibonacci hashing of the bidder picks its shard.
                let shard = (bidder.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize;
                let key = format!("auction:{shard}");
                conn.push(&[
                    "XADD",
                    &key,
                    "*",
                    "bidder",
                    b.format(bidder),
                    "amount",
                    a.format(1 + rng.below(100_000)),
                    "ts",
                    ts.format(micros(epoch)),
                ]);
                conn.flush().await?;
                conn.skip(1).await?;
                if Instant::now() < until {
                    t.ops += 1;
                }
            }
            Ok(t)
        });
    }
    tokio::time::sleep_until(until.into()).await;
    let m = phase.end(&mut ctl).await?;
    let t = join(set).await?;
    Ok(Sample::new(m, t.ops, t.delivered, t.lat_ns))
}

/// Polls `INFO clients` until `n` clients are blocked (bounded by `timeout`).
async fn wait_blocked(ctl: &mut Conn, n: usize, timeout: Duration) -> io::Result<()> {
    let until = Instant::now() + timeout;
    loop {
        let info = ctl.ok(&["INFO", "clients"]).await?;
        let blocked: usize = info_field(&info, "blocked_clients")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if blocked >= n {
            return Ok(());
        }
        if Instant::now() > until {
            return Err(io::Error::other(format!(
                "only {blocked} of {n} clients blocked"
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `readers` connections blocked in `XREAD BLOCK 0`, one key each; one connection XADDs
/// to another key for the timed phase (ops/s, CPU per op: does the waiting crowd cost the
/// writer anything?), then XADDs once to each reader's key in turn (latency: XADD sent to
/// that reader woken with its entry). 10,000 readers need `maxclients` above that and an
/// open-file limit to match on both servers (scripts/bench.sh sets them).
pub async fn blocked_readers(ctx: &Ctx, readers: usize) -> io::Result<Sample> {
    let mut ctl = ctx.fresh().await?;
    // Each reader is a task from the start: it sends its XREAD and waits for the reply,
    // so by the time the server reports every client blocked, every reader's socket is
    // registered and its task parked. (Spawning the waiting tasks only just before the
    // wake-up phase put their first polls — milliseconds for thousands of tasks — on the
    // first wake-ups measured, and those made up the p99.)
    let conns = ctx.conns(readers).await?;
    let mut set = JoinSet::new();
    for (i, mut r) in conns.into_iter().enumerate() {
        set.spawn_local(async move {
            r.push(&["XREAD", "BLOCK", "0", "STREAMS", &format!("r{i}"), "$"]);
            r.flush().await?;
            let reply = r.reply().await?;
            crate::client::check(&reply)?;
            Ok::<_, io::Error>((i, Instant::now()))
        });
    }
    wait_blocked(&mut ctl, readers, ctx.timeout).await?;
    let writer = ctx.conns(1).await?;
    let phase = ctx.begin(&mut ctl).await?;
    let done = closed_loop(writer, 1, Stop::For(ctx.timed()), |_, _, _, conn| {
        conn.push(&["XADD", "other", "*", "f", "v"]);
    })
    .await?;
    let m = phase.end(&mut ctl).await?;
    let mut writer = ctx.conn().await?;
    let mut sent = Vec::with_capacity(readers);
    for i in 0..readers {
        sent.push(Instant::now());
        writer
            .ok(&["XADD", &format!("r{i}"), "*", "f", "v"])
            .await?;
    }
    let mut lat = Vec::with_capacity(readers);
    while let Some(woken) = set.join_next().await {
        let (i, at) = woken.map_err(io::Error::other)??;
        let nanos = at.saturating_duration_since(sent[i]).as_nanos();
        lat.push(u64::try_from(nanos).unwrap_or(u64::MAX));
    }
    Ok(Sample::new(m, done.ops, done.ops, lat))
}
