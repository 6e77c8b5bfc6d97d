//! The closed-loop request driver most workloads share: `clients` connections, each
//! sending batches of `pipeline` commands (one write) and waiting for all their replies
//! before the next batch, until a time limit or a total command count is reached.
//!
//! ```text
//!  client 0: [push×P │ flush]───wait P replies───[push×P │ flush]─── ... until Stop
//!  client 1:    [push×P │ flush]───wait P replies───[push×P ...
//!             ◄──── latency sample per batch ────►
//! ```
//!
//! Commands are numbered globally (`0..count` for [`Stop::Count`]), so a workload can walk
//! a shared list (IDs to acknowledge) exactly once across all clients.

use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::client::Conn;
use crate::measure::{Rng, ns_since};

/// When the driver stops sending.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// Send new batches for this long.
    For(Duration),
    /// Send exactly this many commands in all.
    Count(u64),
}

/// What the driver did.
#[derive(Debug, Default)]
pub struct Done {
    /// Commands completed (replies received).
    pub ops: u64,
    /// Batch round-trip times in nanoseconds.
    pub lat_ns: Vec<u64>,
}

/// Pushes command number `seq` of client `client` onto `conn`.
pub trait MakeCommand: Fn(usize, u64, &mut Rng, &mut Conn) + 'static {}
impl<F: Fn(usize, u64, &mut Rng, &mut Conn) + 'static> MakeCommand for F {}

/// Runs the closed loop over already connected `conns` (connecting is not measured).
pub async fn closed_loop<F: MakeCommand>(
    conns: Vec<Conn>,
    pipeline: usize,
    stop: Stop,
    make: F,
) -> io::Result<Done> {
    let make = Rc::new(make);
    let next = Rc::new(Cell::new(0u64));
    let until = match stop {
        Stop::For(d) => Some(Instant::now() + d),
        Stop::Count(_) => None,
    };
    let pipeline = pipeline.max(1) as u64;
    let mut tasks = tokio::task::JoinSet::new();
    for (client, mut conn) in conns.into_iter().enumerate() {
        let make = Rc::clone(&make);
        let next = Rc::clone(&next);
        tasks.spawn_local(async move {
            let mut rng = Rng::new(client as u64 + 1);
            let mut done = Done::default();
            loop {
                let first = next.get();
                let n = match (stop, until) {
                    (Stop::Count(total), _) => pipeline.min(total.saturating_sub(first)),
                    (_, Some(t)) if Instant::now() < t => pipeline,
                    _ => 0,
                };
                if n == 0 {
                    break;
                }
                next.set(first + n);
                for seq in first..first + n {
                    make(client, seq, &mut rng, &mut conn);
                }
                let sent = Instant::now();
                conn.flush().await?;
                conn.skip(n as usize).await?;
                done.lat_ns.push(ns_since(sent));
                done.ops += n;
            }
            Ok::<Done, io::Error>(done)
        });
    }
    // Dropping the set on an error aborts the other clients.
    let mut all = Done::default();
    while let Some(done) = tasks.join_next().await {
        let done = done.map_err(io::Error::other)??;
        all.ops += done.ops;
        all.lat_ns.extend(done.lat_ns);
    }
    Ok(all)
}
