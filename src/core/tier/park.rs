//! Cold nodes read back for commands, off the core thread. A command that needs cold
//! nodes ([`Core::cold_needs`], from the stubs alone) is parked like a blocked client
//! while a pool thread reads, checks and decodes them ([`Core::park`]); the core serves
//! other connections meanwhile and installs the nodes as warm copies before the command
//! runs again ([`Core::unpark`]), so the command itself never waits for the disk.
//!
//! **Read-ahead.** A paged read (`XRANGE ... COUNT n`, `XREAD`/`XREADGROUP COUNT n`) also
//! names the nodes of the page after its own. Those are read in the background (a
//! prefetch, on the other pool thread) while the reply goes out and the client asks for
//! the next page; that page's command then waits for the prefetch in flight (or finds its
//! nodes warm) instead of starting its read only when it arrives. A scan page after page
//! so keeps the disk busy while the core builds replies.
//!
//! **Rendered entries.** For a read that a range reply will copy out (forward XRANGE,
//! XREAD), the pool thread also encodes each node's live entries the way the reply
//! carries them (with the encoder the reply layer installs,
//! [`super::Tiering::render_node`]), so the core copies spans of bytes instead of
//! decoding and encoding every entry: the costly part of a page moves off the core
//! thread, which then holds other clients up for less time per page.
//!
//! ```text
//!  page k:   cold_needs ─▶ now: read k (park) ─────────▶ unpark ─▶ run
//!                      └─▶ ahead: prefetch k+1 ─────────────┐ (pool thread 2)
//!  page k+1: cold_needs ─▶ now: k+1 in flight: wait for it ◀┘ ─▶ unpark ─▶ run
//!                      └─▶ ahead: prefetch k+2 ...
//! ```

use super::{decode, poll_answer};
use crate::core::Core;
use crate::stream::StreamId;
use crate::stream::cold::{NodeLocation, Rendered};
use crate::stream::listpack::Listpack;
use crate::tier::TierError;
use bytes::Bytes;
use tokio::sync::oneshot;

/// Most prefetches in flight at once (each at most half the warm copies' room).
const PREFETCH_MAX: usize = 2;

/// Most warm copies remembered for [`Core::tier_cool_oldest`] (a 1 GiB budget's warm
/// room holds ~32k nodes of 4 KB).
const INSTALLED_MAX: usize = 1 << 16;

/// A cold node a command needs: database, key, master ID and where it lives.
pub type Need = (usize, Bytes, StreamId, NodeLocation);

/// A node in walk order as [`crate::stream::Stream::cold_needed`] names it.
type Found = (StreamId, NodeLocation);

/// What a command needs from the cold tier ([`Core::cold_needs`]).
#[derive(Debug, Default)]
pub struct ColdNeeds {
    /// The nodes it reads and that are not warm: it is parked for them.
    pub now: Vec<Need>,
    /// The nodes of the page after a paged read's: read ahead, nobody waits for them.
    pub ahead: Vec<Need>,
    /// The command copies ranges of entries out whole (forward XRANGE, XREAD): the pool
    /// also encodes the nodes' entries for replies.
    pub render: bool,
}

impl ColdNeeds {
    /// True when the command needs nothing from the disk.
    pub fn is_empty(&self) -> bool {
        self.now.is_empty() && self.ahead.is_empty()
    }
}

/// Encodes the live entries of a node (keyed by the master ID) the way range replies
/// carry them, on a pool thread ([`super::Tiering::render_node`]).
pub type RenderNode = fn(&Listpack, StreamId) -> Option<Rendered>;

/// A node read back and decoded by a pool thread: its byte count and the node with its
/// entries encoded for replies when asked (or why it is damaged).
type DecodedNode = (usize, Result<(Listpack, Option<Rendered>), String>);

/// A pool read's answer: every node decoded, or the read's error.
type ReadAnswer = Result<Vec<DecodedNode>, TierError>;

/// One read on the pool: the nodes it reads, in order, and its answer.
struct PoolRead {
    /// Database, key, master ID and location of each node, in the read's order.
    wants: Vec<Need>,
    /// The answer: each node decoded, or the read's error.
    rx: oneshot::Receiver<ReadAnswer>,
}

/// Prefetches in flight, in the order they were started.
#[derive(Default)]
pub(super) struct Prefetches {
    /// The reads in flight (at most [`PREFETCH_MAX`]).
    reads: Vec<PoolRead>,
    /// The nodes installed warm from pool reads, oldest first: over the warm limit, the
    /// oldest are cooled one by one as new ones come in (a scan keeps about the limit
    /// warm behind it instead of piling copies up until the cron drops them all).
    installed: std::collections::VecDeque<(usize, Bytes, StreamId)>,
}

impl PoolRead {
    /// True when this read reads the stream node `need` names (database, key, master).
    fn reads(&self, need: &Need) -> bool {
        self.wants
            .iter()
            .any(|w| w.0 == need.0 && w.2 == need.2 && w.1 == need.1)
    }
}

/// True when one of `reads` reads the node `need` names.
fn any_reads(reads: &[PoolRead], need: &Need) -> bool {
    reads.iter().any(|r| r.reads(need))
}

/// Most cold nodes one command is parked for; a command that needs more reads the rest
/// synchronously when it runs (a whole-history XRANGE builds a reply that large anyway).
const PARK_MAX_NODES: usize = 1024;

/// What a parked command waits for: its own read and the prefetches that cover it.
pub struct Parked {
    reads: Vec<PoolRead>,
}

impl Parked {
    /// Waits for the reads (off the core: other connections run meanwhile).
    pub async fn wait(self) -> ParkedRead {
        let mut done = Vec::with_capacity(self.reads.len());
        for r in self.reads {
            let result = r.rx.await.unwrap_or(Err(TierError::PoolClosed));
            done.push((r.wants, result));
        }
        ParkedRead { done }
    }
}

/// A parked command's reads, done.
pub struct ParkedRead {
    done: Vec<(Vec<Need>, ReadAnswer)>,
}

/// Parses a range bound leniently for [`Core::cold_needs`] (a bad one needs nothing:
/// the command answers the error itself).
fn bound(arg: Option<&Bytes>, start: bool) -> Option<StreamId> {
    use crate::stream::id::{parse_range_end, parse_range_start};
    let a = arg?;
    if start {
        parse_range_start(a).ok()
    } else {
        parse_range_end(a).ok()
    }
}

/// `COUNT n` anywhere in `args` (0 when absent or unparsable: all).
fn count_arg(args: &[Bytes]) -> u64 {
    args.windows(2)
        .find(|w| w[0].eq_ignore_ascii_case(b"COUNT"))
        .and_then(|w| std::str::from_utf8(&w[1]).ok()?.parse::<u64>().ok())
        .unwrap_or(0)
}

impl Core {
    /// The cold nodes (not warm) that the stream command `argv` on database `db` would
    /// read: XRANGE, XREVRANGE, XREAD, XREADGROUP, XCLAIM, XAUTOCLAIM, XINFO STREAM and
    /// XDEL. Found from the stubs and the group state alone; may name more than the
    /// command reads, never a node it does not touch beyond its range. A paged read also
    /// names the next page's nodes ([`ColdNeeds::ahead`]). `None` for every other command
    /// and when it needs no cold node (run before every command: without tiering, a test
    /// and a branch, nothing to drop).
    #[inline]
    pub fn cold_needs(&self, db: usize, argv: &[Bytes]) -> Option<ColdNeeds> {
        if !self.tier.is_open()
            || argv.len() < 2
            || argv[0].first().is_none_or(|c| c | 0x20 != b'x')
        {
            return None;
        }
        Some(self.stream_cold_needs(db, argv)).filter(|needs| !needs.is_empty())
    }

    /// [`Core::cold_needs`] of a stream command while a store is open.
    fn stream_cold_needs(&self, db: usize, argv: &[Bytes]) -> ColdNeeds {
        let mut out = ColdNeeds::default();
        let Some(dbv) = self.dbs.get(db) else {
            return out;
        };
        let cold_stream = |key: &Bytes| dbv.get_stream(key).filter(|s| s.cold().is_some());
        // A paged read (COUNT n) also names the nodes of the next page, read ahead in the
        // background (within half the warm copies' room).
        let paged = |s: &crate::stream::Stream, start: StreamId, end: StreamId, rev, count| {
            let now = s.cold_needed(start, end, rev, count);
            if count == 0 {
                return (now, Vec::new());
            }
            let ahead_bytes = (self.warm_limit() / 2) as u64;
            let mut ahead = s.cold_needed(start, end, rev, count.saturating_mul(2));
            let bytes: u64 = ahead.iter().map(|(_, l)| u64::from(l.len)).sum();
            if bytes > ahead_bytes {
                return (now, Vec::new());
            }
            ahead.retain(|n| !now.contains(n));
            (now, ahead)
        };
        let mut add = |key: &Bytes, (now, ahead): (Vec<Found>, Vec<Found>)| {
            out.now
                .extend(now.into_iter().map(|(m, l)| (db, key.clone(), m, l)));
            out.ahead
                .extend(ahead.into_iter().map(|(m, l)| (db, key.clone(), m, l)));
        };
        // Upper-cased on the stack: this runs before every X command while a store is open.
        let mut upper = [0u8; 10];
        let Some(name) = upper.get_mut(..argv[0].len()) else {
            return out;
        };
        name.copy_from_slice(&argv[0]);
        name.make_ascii_uppercase();
        let name: &[u8] = name;
        match name {
            b"XRANGE" | b"XREVRANGE" if argv.len() >= 4 => {
                let rev = name == b"XREVRANGE";
                out.render = !rev;
                let (a, b) = if rev { (3, 2) } else { (2, 3) };
                if let (Some(s), Some(start), Some(end)) = (
                    cold_stream(&argv[1]),
                    bound(argv.get(a), true),
                    bound(argv.get(b), false),
                ) {
                    add(&argv[1], paged(s, start, end, rev, count_arg(&argv[4..])));
                }
            }
            b"XREAD" | b"XREADGROUP" => {
                let Some(at) = argv.iter().position(|a| a.eq_ignore_ascii_case(b"STREAMS")) else {
                    return out;
                };
                let count = count_arg(&argv[1..at]);
                let rest = &argv[at + 1..];
                if rest.is_empty() || !rest.len().is_multiple_of(2) {
                    return out;
                }
                let (keys, ids) = rest.split_at(rest.len() / 2);
                let group = (name == b"XREADGROUP")
                    .then(|| argv.get(2).zip(argv.get(3)))
                    .flatten();
                // XREAD writes ranges whole; XREADGROUP writes entry by entry (PEL).
                out.render = group.is_none();
                for (key, id) in keys.iter().zip(ids) {
                    let Some(s) = cold_stream(key) else { continue };
                    if let Some((g, consumer)) = group {
                        let Some(grp) = s.groups().get(g) else {
                            continue;
                        };
                        if id.as_ref() == b">" {
                            if let Some(after) = grp.last_id().incr() {
                                add(key, paged(s, after, StreamId::MAX, false, count));
                            }
                        } else if let (Ok(from), Some(cid)) = (
                            crate::stream::id::parse_id(id, 0),
                            grp.consumer_id(consumer),
                        ) {
                            let n = if count == 0 {
                                usize::MAX
                            } else {
                                count as usize
                            };
                            let ids = grp
                                .consumer_pel(cid, from, StreamId::MAX)
                                .take(n)
                                .map(|p| p.id);
                            add(key, (s.cold_needed_for(ids), Vec::new()));
                        }
                    } else if id.as_ref() != b"$"
                        && id.as_ref() != b"+"
                        && let Some(after) = crate::stream::id::parse_id(id, 0)
                            .ok()
                            .and_then(|x| x.incr())
                    {
                        add(key, paged(s, after, StreamId::MAX, false, count));
                    }
                }
            }
            b"XCLAIM" if argv.len() >= 6 => {
                if let Some(s) = cold_stream(&argv[1]) {
                    let ids = argv[5..]
                        .iter()
                        .map_while(|a| crate::stream::id::parse_strict_id(a).ok());
                    add(&argv[1], (s.cold_needed_for(ids), Vec::new()));
                }
            }
            b"XAUTOCLAIM" if argv.len() >= 6 => {
                if let (Some(s), Ok(start)) = (
                    cold_stream(&argv[1]),
                    crate::stream::id::parse_range_start(&argv[5]),
                ) && let Some(grp) = s.groups().get(&argv[2])
                {
                    let count = match count_arg(&argv[6..]) {
                        0 => 100,
                        n => n,
                    };
                    // XAUTOCLAIM looks at up to ten times COUNT pending entries.
                    let ids = grp
                        .pel_range(start, StreamId::MAX)
                        .take((count * 10) as usize)
                        .map(|p| p.id);
                    add(&argv[1], (s.cold_needed_for(ids), Vec::new()));
                }
            }
            b"XDEL" if argv.len() >= 3 => {
                if let Some(s) = cold_stream(&argv[1]) {
                    let ids = argv[2..]
                        .iter()
                        .filter_map(|a| crate::stream::id::parse_strict_id(a).ok());
                    add(&argv[1], (s.cold_needed_for(ids), Vec::new()));
                }
            }
            b"XINFO" if argv.len() >= 3 && argv[1].eq_ignore_ascii_case(b"STREAM") => {
                if let Some(s) = cold_stream(&argv[2]) {
                    let full = argv.get(3).is_some_and(|a| a.eq_ignore_ascii_case(b"FULL"));
                    // Plain XINFO STREAM shows the first and last entries; FULL shows
                    // COUNT entries (10 by default, 0 for all).
                    let count = if !full {
                        1
                    } else {
                        argv[4..]
                            .windows(2)
                            .find(|w| w[0].eq_ignore_ascii_case(b"COUNT"))
                            .map_or(10, |w| {
                                std::str::from_utf8(&w[1])
                                    .ok()
                                    .and_then(|t| t.parse::<u64>().ok())
                                    .unwrap_or(10)
                            })
                    };
                    let now = s.cold_needed(StreamId::MIN, StreamId::MAX, false, count);
                    add(&argv[2], (now, Vec::new()));
                }
            }
            _ => {}
        }
        out.now.truncate(PARK_MAX_NODES);
        out.ahead.truncate(PARK_MAX_NODES);
        out
    }

    /// Starts what `needs` asks for: the read of the nodes the command needs now (or
    /// takes over the prefetches already reading them) and the prefetch of the next
    /// page's. `Some` when the command must wait ([`Parked::wait`], then
    /// [`Core::unpark`]); `None` when it can run now (its nodes are warm, or there is no
    /// pool and it reads synchronously).
    pub fn park(&mut self, needs: ColdNeeds) -> Option<Parked> {
        self.tier.pool.as_ref()?;
        let ColdNeeds { now, ahead, render } = needs;
        // Prefetches reading what this command needs are now its own reads.
        let mut reads: Vec<PoolRead> = self
            .tier
            .prefetches
            .reads
            .extract_if(.., |r| now.iter().any(|n| r.reads(n)))
            .collect();
        let missing: Vec<Need> = now.into_iter().filter(|n| !any_reads(&reads, n)).collect();
        if !missing.is_empty()
            && let Some(read) = self.tier_pool_read(missing, render)
        {
            reads.push(read);
        }
        let ahead: Vec<Need> = ahead
            .into_iter()
            .filter(|n| !any_reads(&self.tier.prefetches.reads, n) && !any_reads(&reads, n))
            .collect();
        if !ahead.is_empty()
            && self.tier.prefetches.reads.len() < PREFETCH_MAX
            && let Some(read) = self.tier_pool_read(ahead, render)
        {
            self.tier.stats.readahead_reads += read.wants.len() as u64;
            self.tier.prefetches.reads.push(read);
        }
        if reads.is_empty() {
            return None;
        }
        self.tier.stats.parked_commands += 1;
        Some(Parked { reads })
    }

    /// Queues the read of `wants` on the pool: read, checked and decoded there (and with
    /// `render`, their entries encoded for replies), so the core only installs the nodes.
    /// `None` when there is no pool or store.
    fn tier_pool_read(&mut self, wants: Vec<Need>, render: bool) -> Option<PoolRead> {
        let locs: Vec<NodeLocation> = wants.iter().map(|n| n.3).collect();
        let batch = self.tier.read_batch(&locs).ok()?;
        let masters: Vec<StreamId> = wants.iter().map(|n| n.2).collect();
        let render = self.tier.render_node.filter(|_| render);
        let rx = self.tier.pool.as_ref()?.run(move || {
            let nodes = batch.run()?;
            Ok(nodes
                .into_iter()
                .zip(masters)
                .map(|(n, master)| {
                    let len = n.node.len();
                    let node = decode(n.node, master).map(|lp| {
                        let r = render.and_then(|f| f(&lp, master));
                        (lp, r)
                    });
                    (len, node)
                })
                .collect())
        });
        Some(PoolRead { wants, rx })
    }

    /// Installs a parked command's nodes as warm copies before it runs again. A node
    /// that failed to read, or changed meanwhile, is simply not installed: the command
    /// then reads it synchronously (and a failure shows there, counted and logged).
    pub fn unpark(&mut self, read: ParkedRead) {
        for (wants, result) in read.done {
            self.tier_install(wants, result);
        }
    }

    /// Installs the prefetches that completed while nobody waited for them (the mover's
    /// tick), so that their answers do not sit in the channel.
    pub(super) fn tier_install_prefetches(&mut self) {
        let mut i = 0;
        while i < self.tier.prefetches.reads.len() {
            match poll_answer(&mut self.tier.prefetches.reads[i].rx) {
                Some(result) => {
                    let read = self.tier.prefetches.reads.remove(i);
                    self.tier_install(read.wants, result);
                }
                None => i += 1,
            }
        }
    }

    /// Installs the nodes of one pool read as warm copies, each only if its stub still
    /// names the same bytes (length and checksum).
    fn tier_install(&mut self, wants: Vec<Need>, result: ReadAnswer) {
        let mut nodes = match result {
            Ok(nodes) => nodes,
            Err(e) => {
                tracing::error!(error = %e, "cold stream nodes could not be read back");
                return;
            }
        };
        // Rendered entries take 1.2x (200-byte values) to several times (small ones) the
        // node again. They are kept only while the read's warm copies and renderings fit
        // in three quarters of the warm copies' room, so that installing them never cools
        // the nodes of the command waiting for them; beyond that the command encodes its
        // entries itself, as it would from memory.
        let with_rendered: usize = nodes
            .iter()
            .filter_map(|(_, n)| n.as_ref().ok())
            .map(|(lp, r)| lp.heap_size() + r.as_ref().map_or(0, Rendered::heap_size))
            .sum();
        if with_rendered > self.warm_limit() / 4 * 3 {
            for (_, node) in nodes.iter_mut() {
                if let Ok((_, r)) = node {
                    *r = None;
                }
            }
        }
        for ((db, key, master, loc), (len, node)) in wants.into_iter().zip(nodes) {
            self.tier.stats.pool_reads += 1;
            self.tier.stats.pool_read_bytes += len as u64;
            let Some(s) = self.dbs.get(db).and_then(|d| d.get_stream(&key)) else {
                continue;
            };
            match node {
                Ok((lp, rendered)) => {
                    if s.warm_node(master, loc, lp, rendered) {
                        self.tier.prefetches.installed.push_back((db, key, master));
                    }
                }
                Err(e) => tracing::error!(error = %e, "a cold node read back is damaged"),
            }
        }
        self.tier_cool_oldest();
    }

    /// Cools the oldest warm copies installed from pool reads while the warm copies
    /// take more than the limit (a stale entry, a node already cooled or gone, frees 0).
    fn tier_cool_oldest(&mut self) {
        let limit = self.warm_limit();
        let installed = &mut self.tier.prefetches.installed;
        // Entries whose nodes something else cooled stay until popped: bound them.
        while installed.len() > INSTALLED_MAX {
            installed.pop_front();
        }
        while crate::stream::cold::warm_bytes() > limit
            && let Some((db, key, master)) = self.tier.prefetches.installed.pop_front()
        {
            if let Some(s) = self.dbs.get_mut(db).and_then(|d| d.get_stream_mut(&key)) {
                s.cool_node(master);
            }
        }
    }
}
