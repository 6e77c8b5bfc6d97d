//! Redis Cluster: the data and wire formats a streamd node needs to be a member of a
//! cluster of Redis 7.0 nodes.
//!
//! This layer is plain data with no I/O of its own, so it sits low in the layer graph: it
//! uses only `std` and `bytes`, nothing of `core`, `commands` or `server`.
//!
//! What is here:
//!
//! - [`slots`]: the hash slot of a key (CRC16/XMODEM mod 16384 with the `{hash tag}` rule)
//!   and [`slots::SlotBitmap`], the 2048-byte slot set in the bit order Redis puts on the
//!   wire.
//! - [`nodes_conf`]: the `nodes.conf` file of Redis 7.0 (one line per node and the `vars`
//!   line), parsed into plain structs and written back byte for byte, and the atomic
//!   replace (temp file, fsync, rename) used to save it.
//! - [`slot_stats`]: the per-slot CPU and network counters CLUSTER SLOT-STATS reports.
//! - [`bus`]: the cluster bus frame of Redis 7.0, header and every message body (PING,
//!   PONG, MEET with gossip and ping extensions; FAIL, PUBLISH, PUBLISHSHARD, UPDATE,
//!   FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART, MODULE), typed encode and decode
//!   with the length checks Redis makes. `tests/cluster.rs` pins it against a live
//!   redis-server.
//!
//! What is still to come (issue 23): the cluster bus task (listening on the cluster port,
//! one link per peer), failure detection (PFAIL → FAIL by majority), replica elections with
//! config epochs and manual failover, the `CLUSTER` commands, and routing (`-MOVED`, `-ASK`,
//! `-CROSSSLOT`, `-TRYAGAIN`, `-CLUSTERDOWN`). `docs/cluster.md` lists every rule with its
//! source in Redis.

pub mod bus;
pub mod nodes_conf;
pub mod owners;
pub mod slot_stats;
pub mod slots;
