//! Pub/Sub workloads: `pubsub/fanout-s<N>` (one publisher, N subscribers of one channel)
//! and `pubsub/mem-*` (bytes per subscription).
//!
//! Fan-out: every subscriber connection is a task reading its messages; the publisher
//! sends `PUBLISH ch <ts>` (`ts`: microseconds since the tool started) and keeps at most a
//! window of messages in flight, counted in deliveries (published × N − delivered ≤
//! window × N), so neither server is measured on how far its output buffers can run
//! ahead of a client that cannot keep up. Entries = messages delivered (received by a
//! subscriber inside the timed phase); ops = PUBLISH commands; latency: PUBLISH sent to
//! that message read by a subscriber, every delivery sampled.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::time::Instant;

use tokio::sync::Notify;
use tokio::task::JoinSet;

use super::Ctx;
use crate::client::Conn;
use crate::measure::Sample;

/// Microseconds from `epoch` to now.
fn micros(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Messages in flight per subscriber: deep enough to keep one subscriber's server busy,
/// shallow for thousands (each PUBLISH is already thousands of deliveries).
fn window(subscribers: usize) -> u64 {
    match subscribers {
        0..=1 => 64,
        2..=100 => 8,
        _ => 2,
    }
}

/// What the subscriber tasks share with the publisher.
struct Shared {
    /// Messages received by all subscribers so far.
    delivered: Cell<u64>,
    /// Woken as deliveries come in (the publisher waits on it when its window is full).
    progress: Notify,
}

/// One publisher, `subscribers` connections subscribed to `ch`.
pub async fn fanout(ctx: &Ctx, subscribers: usize) -> io::Result<Sample> {
    let mut ctl = ctx.fresh().await?;
    let epoch = ctx.epoch;
    let shared = Rc::new(Shared {
        delivered: Cell::new(0),
        progress: Notify::new(),
    });
    let mut conns = ctx.conns(subscribers).await?;
    for c in &mut conns {
        c.push(&["SUBSCRIBE", "ch"]);
        c.flush().await?;
    }
    for c in &mut conns {
        c.skip(1).await?;
    }
    let until = Instant::now() + ctx.timed();
    let mut set = JoinSet::new();
    for mut conn in conns {
        let shared = Rc::clone(&shared);
        set.spawn_local(async move {
            let (mut got, mut lat) = (0u64, Vec::new());
            loop {
                let msg = conn.next_value().await?;
                let payload = msg.items().get(2).map(|v| v.bytes()).unwrap_or(b"");
                if payload == b"stop" {
                    return Ok::<_, io::Error>((got, lat));
                }
                shared.delivered.set(shared.delivered.get() + 1);
                shared.progress.notify_one();
                if Instant::now() < until
                    && let Some(ts) = std::str::from_utf8(payload)
                        .ok()
                        .and_then(|t| t.parse::<u64>().ok())
                {
                    got += 1;
                    lat.push(micros(epoch).saturating_sub(ts) * 1000);
                }
            }
        });
    }
    let mut publisher = ctx.conn().await?;
    let n = subscribers as u64;
    let limit = window(subscribers) * n;
    let phase = ctx.begin(&mut ctl).await?;
    let mut published = 0u64;
    let mut ts = itoa::Buffer::new();
    while Instant::now() < until {
        while published * n - shared.delivered.get() >= limit {
            shared.progress.notified().await;
        }
        publisher.push(&["PUBLISH", "ch", ts.format(micros(epoch))]);
        publisher.flush().await?;
        publisher.skip(1).await?;
        published += 1;
    }
    let m = phase.end(&mut ctl).await?;
    publisher.ok(&["PUBLISH", "ch", "stop"]).await?;
    let (mut delivered, mut lat) = (0, Vec::new());
    while let Some(done) = set.join_next().await {
        let (got, l) = done.map_err(io::Error::other)??;
        delivered += got;
        lat.extend(l);
    }
    Ok(Sample::new(m, published, delivered, lat))
}

/// SUBSCRIBEs per write in [`memory`]: shallow enough that the replies of one batch
/// (which a connection's reply buffer keeps room for) stay small per subscription.
const BATCH: u64 = 100;

/// Long enough for Redis's cron to have trimmed the buffers of idle clients.
const IDLE_SETTLE: std::time::Duration = std::time::Duration::from_millis(3500);

/// `clients` connections, each subscribing to `per_client` channels (`c<k>:<i>` of its
/// own when `distinct`, the same `c<i>` for all otherwise), [`BATCH`] per write; the phase
/// covers the subscribing only (each connection has answered a PING before, and the
/// readings wait for idle buffers to be trimmed): bytes per subscription.
pub async fn memory(
    ctx: &Ctx,
    clients: usize,
    per_client: u64,
    distinct: bool,
) -> io::Result<Sample> {
    let mut ctl = ctx.fresh().await?;
    let mut conns: Vec<Conn> = ctx.conns(clients).await?;
    // One command each first, so that what a connection allocates for its replies
    // (reply buffers) is not counted as subscription memory.
    for conn in &mut conns {
        conn.ok(&["PING", "a reply as long as a subscription reply........"])
            .await?;
    }
    // Redis frees the query buffer of a client idle for 2 s (clientsCron): let that
    // happen before and after the subscribing, so that neither reading counts buffers.
    tokio::time::sleep(IDLE_SETTLE).await;
    let phase = ctx.begin(&mut ctl).await?;
    let mut name = String::new();
    for (k, conn) in conns.iter_mut().enumerate() {
        let mut next = 0;
        while next < per_client {
            let end = (next + BATCH).min(per_client);
            for i in next..end {
                name.clear();
                if distinct {
                    name.push_str(&format!("c{k}:{i}"));
                } else {
                    name.push_str(&format!("c{i}"));
                }
                conn.push(&["SUBSCRIBE", &name]);
            }
            conn.flush().await?;
            conn.skip((end - next) as usize).await?;
            next = end;
        }
    }
    tokio::time::sleep(IDLE_SETTLE).await;
    let m = phase.end(&mut ctl).await?;
    let subs = clients as u64 * per_client;
    // Keep the connections (and their subscriptions) until the memory was read.
    drop(conns);
    Ok(Sample::new(m, subs, subs, Vec::new()))
}
