//! MEMORY STATS/DOCTOR/USAGE/MALLOC-STATS/PURGE/HELP.
//!
//! The figures come from the counting allocator ([`crate::alloc`], usable sizes as
//! Redis's zmalloc counts them, through [`Core::used_memory`]), the core's marks
//! (`startup_allocated`, the peak) and the process's resident set (`/proc/self/statm`).
//! streamd has no jemalloc, so where Redis reads jemalloc's `active` and `resident`
//! counters, we report the allocated bytes for both: the allocator ratios come out 1 and
//! all fragmentation shows in `fragmentation` (RSS over allocated), which is honest about
//! what we can see.

use super::SERVER;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::keyspace::Db;
use crate::core::{Core, Ctx};
use crate::error::ReplyError;
use crate::stream::memory::key_overhead;
use crate::types::Value;
use std::fmt::Write as _;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec::container(
    "memory",
    "server",
    "A container for memory diagnostics commands.",
    "4.0.0",
    SUBCOMMANDS,
)];

const SUBCOMMANDS: &[CommandSpec] = &[
    SERVER.row(
        "memory|doctor",
        2,
        0,
        "Outputs a memory problems report.",
        "4.0.0",
        memory_doctor,
    ),
    SERVER.row(
        "memory|malloc-stats",
        2,
        0,
        "Returns the allocator statistics.",
        "4.0.0",
        memory_malloc_stats,
    ),
    SERVER.row(
        "memory|purge",
        2,
        0,
        "Asks the allocator to release memory.",
        "4.0.0",
        memory_purge,
    ),
    SERVER.row(
        "memory|stats",
        2,
        0,
        "Returns details about memory usage.",
        "4.0.0",
        memory_stats,
    ),
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..SERVER
            .row(
                "memory|usage",
                -3,
                READONLY,
                "Estimates the memory usage of a key.",
                "4.0.0",
                memory_usage,
            )
            .keys(2, 2, 1)
    },
    SERVER.row(
        "memory|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "4.0.0",
        memory_help,
    ),
];

/// Redis's size of a `dictEntry` (key pointer, value pointer, next pointer).
const DICT_ENTRY: usize = 24;
/// Redis's size of a bucket pointer.
const DICT_BUCKET: usize = 8;
/// Redis's size of the `robj` a key's value hangs from.
const ROBJ: usize = 16;
/// Below this much allocated memory, MEMORY DOCTOR does not judge (as Redis).
const DOCTOR_MIN_BYTES: usize = 5 << 20;

/// The numbers behind MEMORY STATS and DOCTOR (Redis: `redisMemOverhead`).
#[derive(Debug, Clone, Default, PartialEq)]
struct Overhead {
    peak_allocated: usize,
    total_allocated: usize,
    startup_allocated: usize,
    clients_normal: usize,
    /// Per non-empty database: (index, main table bytes, expires table bytes).
    dbs: Vec<(usize, usize, usize)>,
    overhead_total: usize,
    keys_count: usize,
    rss: usize,
}

impl Overhead {
    fn of(core: &Core) -> Overhead {
        let total_allocated = core.used_memory();
        let peak_allocated = core.peak_allocated.max(total_allocated);
        let startup_allocated = core.startup_allocated.min(total_allocated);
        let clients_normal =
            core.connected_clients() * std::mem::size_of::<crate::core::client::Client>();
        let dbs: Vec<_> = core
            .dbs
            .iter()
            .enumerate()
            .filter(|(_, db)| !db.is_empty())
            .map(|(i, db)| {
                let main = db.len() * (DICT_ENTRY + ROBJ) + db.keys.buckets() * DICT_BUCKET;
                let expires = db.expires.len() * DICT_ENTRY + db.expires.buckets() * DICT_BUCKET;
                (i, main, expires)
            })
            .collect();
        let overhead_total =
            startup_allocated + clients_normal + dbs.iter().map(|(_, m, e)| m + e).sum::<usize>();
        Overhead {
            peak_allocated,
            total_allocated,
            startup_allocated,
            clients_normal,
            keys_count: core.dbs.iter().map(|db| db.len()).sum(),
            dbs,
            overhead_total,
            rss: resident_bytes().unwrap_or(0),
        }
    }

    fn dataset(&self) -> usize {
        self.total_allocated.saturating_sub(self.overhead_total)
    }

    /// RSS over allocated bytes (Redis: `total_frag`), computed in `float` as Redis does.
    fn fragmentation(&self) -> f64 {
        ratio(self.rss, self.total_allocated)
    }
}

/// `a / b` in single precision, as Redis computes its ratios (then prints them with
/// `%.17g`, which shows the float's digits).
fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        return 0.0;
    }
    f64::from(a as f32 / b as f32)
}

/// The process's resident set in bytes, from `/proc/self/statm` (Linux); `None` where
/// that file does not exist.
fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The host's memory, from `/proc/meminfo` (INFO `total_system_memory`); 0 where that
/// file does not exist.
fn total_system_memory() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        })
        .unwrap_or(0)
}

/// INFO's `memory` section, in Redis 7.0's field order (`script_lines` are the
/// scripting fields, which sit in the middle). The RSS comes from `/proc/self/statm`;
/// `mem_fragmentation_ratio` and `_bytes` are RSS over, and minus, the allocated bytes,
/// as Redis computes them. Without jemalloc, the allocator fields repeat the allocated
/// bytes and their ratios are 1 (see the module doc).
pub(super) fn info_section(core: &Core, script_lines: &str) -> String {
    let mh = Overhead::of(core);
    let used = mh.total_allocated;
    let net = used.saturating_sub(mh.startup_allocated);
    let human = super::server::human_bytes;
    let maxmemory = usize::try_from(core.limits.maxmemory).unwrap_or(usize::MAX);
    let backlog = core
        .repl
        .backlog
        .as_ref()
        .map_or(0, |b| b.histlen() as usize);
    let system = total_system_memory();
    let mut s = String::with_capacity(2048);
    let _ = write!(
        s,
        "used_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\nused_memory_overhead:{}\r\nused_memory_startup:{}\r\nused_memory_dataset:{}\r\nused_memory_dataset_perc:{:.2}%\r\nallocator_allocated:{used}\r\nallocator_active:{used}\r\nallocator_resident:{used}\r\ntotal_system_memory:{system}\r\ntotal_system_memory_human:{}\r\n",
        human(used),
        human(mh.rss),
        human(mh.peak_allocated),
        ratio(used, mh.peak_allocated) * 100.0,
        mh.overhead_total,
        mh.startup_allocated,
        mh.dataset(),
        ratio(mh.dataset(), net) * 100.0,
        human(system),
        rss = mh.rss,
        peak = mh.peak_allocated,
    );
    s.push_str(script_lines);
    let frag_bytes = mh.rss as i64 - used as i64;
    let _ = write!(
        s,
        "maxmemory:{maxmemory}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nallocator_frag_ratio:1.00\r\nallocator_frag_bytes:0\r\nallocator_rss_ratio:1.00\r\nallocator_rss_bytes:0\r\nrss_overhead_ratio:{:.2}\r\nrss_overhead_bytes:{frag_bytes}\r\nmem_fragmentation_ratio:{:.2}\r\nmem_fragmentation_bytes:{frag_bytes}\r\nmem_not_counted_for_evict:{}\r\nmem_replication_backlog:{backlog}\r\nmem_total_replication_buffers:{backlog}\r\nmem_clients_slaves:0\r\nmem_clients_normal:{}\r\nmem_cluster_links:0\r\nmem_aof_buffer:0\r\nmem_allocator:libc\r\nactive_defrag_running:0\r\nlazyfree_pending_objects:{}\r\nlazyfreed_objects:{}\r\n",
        human(maxmemory),
        core.config.get("maxmemory-policy").unwrap_or("noeviction"),
        mh.fragmentation(),
        mh.fragmentation(),
        core.mem_not_counted_for_evict(),
        mh.clients_normal,
        core.lazyfree.pending(),
        core.lazyfree.freed(),
    );
    s
}

fn memory_stats(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let mh = Overhead::of(ctx.core);
    let out = &mut *ctx.out;
    let int = |out: &mut crate::resp::writer::RespWriter, k: &str, v: usize| {
        out.bulk(k.as_bytes());
        out.integer(i64::try_from(v).unwrap_or(i64::MAX));
    };
    let dbl = |out: &mut crate::resp::writer::RespWriter, k: &str, v: f64| {
        out.bulk(k.as_bytes());
        out.double(v);
    };
    out.map(27 + mh.dbs.len());
    int(out, "peak.allocated", mh.peak_allocated);
    int(out, "total.allocated", mh.total_allocated);
    int(out, "startup.allocated", mh.startup_allocated);
    int(out, "replication.backlog", 0);
    int(out, "clients.slaves", 0);
    int(out, "clients.normal", mh.clients_normal);
    int(out, "cluster.links", 0);
    int(out, "aof.buffer", 0);
    int(out, "lua.caches", 0);
    int(out, "functions.caches", 0);
    for &(i, main, expires) in &mh.dbs {
        out.bulk(format!("db.{i}").as_bytes());
        out.map(3);
        int(out, "overhead.hashtable.main", main);
        int(out, "overhead.hashtable.expires", expires);
        int(out, "overhead.hashtable.slot-to-keys", 0);
    }
    int(out, "overhead.total", mh.overhead_total);
    int(out, "keys.count", mh.keys_count);
    let net = mh.total_allocated.saturating_sub(mh.startup_allocated);
    int(
        out,
        "keys.bytes-per-key",
        net.checked_div(mh.keys_count).unwrap_or(0),
    );
    int(out, "dataset.bytes", mh.dataset());
    dbl(out, "dataset.percentage", ratio(mh.dataset(), net) * 100.0);
    dbl(
        out,
        "peak.percentage",
        ratio(mh.total_allocated, mh.peak_allocated) * 100.0,
    );
    // No jemalloc: active and resident are the allocated bytes (module doc).
    int(out, "allocator.allocated", mh.total_allocated);
    int(out, "allocator.active", mh.total_allocated);
    int(out, "allocator.resident", mh.total_allocated);
    dbl(out, "allocator-fragmentation.ratio", 1.0);
    int(out, "allocator-fragmentation.bytes", 0);
    dbl(out, "allocator-rss.ratio", 1.0);
    int(out, "allocator-rss.bytes", 0);
    dbl(out, "rss-overhead.ratio", ratio(mh.rss, mh.total_allocated));
    int(
        out,
        "rss-overhead.bytes",
        mh.rss.saturating_sub(mh.total_allocated),
    );
    dbl(out, "fragmentation", mh.fragmentation());
    int(
        out,
        "fragmentation.bytes",
        mh.rss.saturating_sub(mh.total_allocated),
    );
    Ok(())
}

fn memory_doctor(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let mh = Overhead::of(ctx.core);
    let report = doctor(&mh, ctx.core.connected_clients());
    ctx.out.verbatim(report.as_bytes());
    Ok(())
}

/// The MEMORY DOCTOR text (Redis's `getMemoryDoctorReport` conditions, in our words
/// where it reports a problem).
fn doctor(mh: &Overhead, clients: usize) -> String {
    if mh.total_allocated < DOCTOR_MIN_BYTES {
        return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".to_string();
    }
    let mut issues = Vec::new();
    if ratio(mh.peak_allocated, mh.total_allocated) > 1.5 {
        issues.push(" * Peak memory: this instance once used more than 150% of the memory it uses now. The allocator does not always give memory back after a peak, so the RSS and the fragmentation ratio may stay high; that is harmless. MEMORY PURGE may release some of it.");
    }
    if mh.fragmentation() > 1.4 && mh.rss.saturating_sub(mh.total_allocated) > 10 << 20 {
        issues.push(" * High total RSS: the resident set is more than 1.4 times the memory allocated (and more than 10 MB above it). This comes from a past peak (see above) or from a workload that fragments the heap, such as many streams trimmed in small steps.");
    }
    if clients > 0 && mh.clients_normal / clients > 200 << 10 {
        issues.push(" * Big client buffers: clients use more than 200 KB each on average. Check `client-output-buffer-limit` and clients that read large replies slowly.");
    }
    if issues.is_empty() {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".to_string();
    }
    let mut s =
        String::from("Sam, I detected a few issues in this Redis instance memory implants:\n\n");
    for i in issues {
        s.push_str(i);
        s.push_str("\n\n");
    }
    s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    s
}

fn memory_malloc_stats(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let mh = Overhead::of(ctx.core);
    let mut s = String::from("___ Begin streamd allocator statistics ___\n");
    let _ = writeln!(
        s,
        "allocator: system allocator behind a counting wrapper (sizes rounded to jemalloc's classes)"
    );
    let _ = writeln!(s, "allocated: {}", mh.total_allocated);
    let _ = writeln!(s, "peak: {}", mh.peak_allocated);
    let _ = writeln!(s, "startup: {}", mh.startup_allocated);
    let _ = writeln!(s, "resident: {}", mh.rss);
    s.push_str("___ End streamd allocator statistics ___\n");
    ctx.out.verbatim(s.as_bytes());
    Ok(())
}

fn memory_purge(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    // The system allocator has no purge call we can reach without unsafe code; Redis
    // built with libc malloc also just answers OK.
    ctx.out.ok();
    Ok(())
}

/// MEMORY USAGE key [SAMPLES n]: estimated bytes of the key and its stream, or null.
/// Like Redis, it looks the key up without expiring it. SAMPLES is validated and
/// ignored (the estimate always covers every node).
fn memory_usage(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let mut i = 3;
    while i < argv.len() {
        if is(&argv[i], "SAMPLES") && i + 1 < argv.len() {
            if parse_i64(&argv[i + 1])? < 0 {
                return Err(ReplyError::Syntax);
            }
            i += 2;
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    let key = &argv[2];
    let db = &ctx.core.dbs[ctx.client.db];
    match db.get(key) {
        Some(value) => {
            let usage = key_usage(db, key, value);
            ctx.out.integer(i64::try_from(usage).unwrap_or(i64::MAX));
        }
        None => ctx.out.null(),
    }
    Ok(())
}

/// What MEMORY USAGE reports for `key`, whose value in `db` is `value`: the value, the
/// key's name and table entry, and a hash's field TTLs. For a stream this walks its
/// nodes. The metrics endpoint's `streamd_stream_memory_bytes` starts from the same
/// figure.
pub(crate) fn key_usage(db: &Db, key: &[u8], value: &Value) -> usize {
    // A hash's field TTLs live beside it (types/hash_ttl.rs) but are its bytes.
    let field_ttls = db.hexpires.of(key).map_or(0, |t| t.heap_size());
    value.memory_usage() + key_overhead(key) + field_ttls
}

fn memory_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "MEMORY",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overhead(total: usize, peak: usize, rss: usize) -> Overhead {
        Overhead {
            total_allocated: total,
            peak_allocated: peak,
            rss,
            ..Overhead::default()
        }
    }

    #[test]
    fn doctor_declines_to_judge_a_small_instance() {
        assert!(
            doctor(&overhead(1 << 20, 1 << 20, 4 << 20), 1)
                .starts_with("Hi Sam, this instance is empty")
        );
    }

    #[test]
    fn doctor_reports_a_big_peak_and_high_rss() {
        let healthy = doctor(&overhead(100 << 20, 100 << 20, 110 << 20), 1);
        assert!(healthy.starts_with("Hi Sam, I can't find any memory issue"));
        let text = doctor(&overhead(100 << 20, 200 << 20, 300 << 20), 1);
        assert!(text.contains("Peak memory"), "{text}");
        assert!(text.contains("High total RSS"), "{text}");
    }

    #[test]
    fn ratios_are_single_precision_as_redis_prints_them() {
        assert_eq!(ratio(1, 3), f64::from(1f32 / 3f32));
        assert_eq!(ratio(5, 0), 0.0);
    }
}
