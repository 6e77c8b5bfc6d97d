//! Per-client state visible to commands: id, name, db, protocol, library info, the
//! MULTI queue and watched keys, and the mailbox back to the connection task.

use super::limits::OutputState;
use crate::config::BufferLimit;
use crate::resp::Argv;
use crate::resp::writer::Protocol;
use bytes::Bytes;
use std::rc::Rc;

pub use super::mailbox::ClientMsg;

/// What a connection is to replication (CLIENT LIST flags `S` and `M`, CLIENT KILL
/// TYPE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientRepl {
    /// An ordinary client.
    #[default]
    Normal,
    /// A replica of this server (after PSYNC/SYNC).
    Replica,
    /// This server's primary (the link's client).
    Master,
}

/// What a would-be replica said in REPLCONF before its PSYNC.
#[derive(Debug, Clone, Default)]
pub struct ReplConf {
    /// `listening-port`.
    pub port: u16,
    /// `ip-address`.
    pub ip: Option<String>,
    /// `capa eof`.
    pub capa_eof: bool,
    /// `capa psync2`.
    pub capa_psync2: bool,
    /// `capa streamd`: another streamd (native stream and snapshots).
    pub native: bool,
    /// `sync-id`: its id in sync sets (core/syncrepl.rs).
    pub sync_id: Option<String>,
}

/// Blocking state of a client waiting in XREAD/XREADGROUP BLOCK.
///
/// The command and its keys are shared (`Rc`): a blocked reader is re-executed each
/// time one of its keys is signalled, and one that still finds nothing blocks again with
/// the same state, so neither is copied per wake.
#[derive(Debug, Clone)]
pub struct BlockState {
    /// The command to re-execute when a key is signalled (with `$` already resolved).
    pub argv: Rc<Argv>,
    /// Database of the keys.
    pub db: usize,
    /// Keys waited on.
    pub keys: Rc<[Bytes]>,
    /// Absolute deadline in unix ms, or `None` for BLOCK 0.
    pub deadline_ms: Option<u64>,
    /// Wake also when a key is deleted or changes (XREADGROUP: "unblock on no key").
    pub unblock_on_nokey: bool,
}

impl BlockState {
    /// A block on no key and with no deadline: only the code that put the client there
    /// ends it (a busy script's driver, WAIT's waiter list, a failover's pause).
    pub fn held(argv: Argv, db: usize) -> BlockState {
        BlockState {
            argv: Rc::new(argv),
            db,
            keys: Rc::from(Vec::new()),
            deadline_ms: None,
            unblock_on_nokey: false,
        }
    }
}

/// CLIENT REPLY's modes (Redis's `CLIENT_REPLY_OFF`, `CLIENT_REPLY_SKIP_NEXT` and
/// `CLIENT_REPLY_SKIP` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    /// Replies are sent (the default, CLIENT REPLY ON).
    On,
    /// No reply is sent until CLIENT REPLY ON (CLIENT REPLY OFF).
    Off,
    /// CLIENT REPLY SKIP was the last command: the next command's reply is dropped.
    SkipNext,
    /// The command running now is the one whose reply is dropped.
    Skip,
}

/// One connected client.
#[derive(Debug)]
pub struct Client {
    /// Unique, increasing id (CLIENT ID).
    pub id: u64,
    /// Peer address `ip:port`.
    pub addr: String,
    /// Local address `ip:port`.
    pub laddr: String,
    /// CLIENT SETNAME.
    pub name: Option<Bytes>,
    /// CLIENT SETINFO LIB-NAME.
    pub lib_name: Option<Bytes>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Option<Bytes>,
    /// Selected database.
    pub db: usize,
    /// Reply protocol.
    pub proto: Protocol,
    /// Passed AUTH, or connected while the default user needed no password (Redis's
    /// `c->authenticated`; whether a client must still authenticate is
    /// `Acl::auth_required`, which also looks at the default user now).
    pub authenticated: bool,
    /// The ACL user the client runs as; `None` for internal clients (the loader), which
    /// no permission check applies to (Redis's `c->user == NULL`).
    pub user: Option<crate::core::acl::UserRef>,
    /// Queued commands while in MULTI.
    pub multi: Option<Vec<Argv>>,
    /// A command queued in this MULTI had an error: EXEC answers EXECABORT.
    pub multi_error: bool,
    /// Watched keys: (db, key, version seen at WATCH time).
    pub watched: Vec<(usize, Bytes, u64)>,
    /// Creation time, unix ms.
    pub created_ms: u64,
    /// Last command time, unix ms.
    pub last_interaction_ms: u64,
    /// The `last_interaction_ms` the cron last sent an [`ClientMsg::IdleCheck`] for
    /// (`Core::check_idle_clients`): one per stretch of idleness.
    pub idle_checked_ms: u64,
    /// Name of the last command run (CLIENT LIST `cmd=`).
    pub last_cmd: &'static str,
    /// In MONITOR mode.
    pub monitor: bool,
    /// Close once the pending replies are written (QUIT, CLIENT KILL of self).
    pub close_after_reply: bool,
    /// CLIENT NO-EVICT flag.
    pub no_evict: bool,
    /// CLIENT NO-TOUCH flag.
    pub no_touch: bool,
    /// CLIENT REPLY: whether this client's replies are sent.
    pub reply_mode: ReplyMode,
    /// For a script's client: the id of the client whose EVAL/FCALL runs (its keys
    /// are tracked for that client); 0 otherwise.
    pub script_caller: u64,
    /// True while EXEC runs this client's queued commands (blocking reads answer at
    /// once instead of blocking).
    pub in_exec: bool,
    /// True for the client a Lua script's commands run as (`redis.call`): blocking
    /// commands answer at once, as inside EXEC.
    pub in_script: bool,
    /// READONLY was sent (Redis's `CLIENT_READONLY`).
    pub cluster_readonly: bool,
    /// ASKING was sent and no command ran since (Redis's `CLIENT_ASKING`).
    pub asking: bool,
    /// The last `__sentinel__:hello` this client published names this server as its
    /// group's primary: a Sentinel that thinks so. A fenced restarted primary (see
    /// `core/syncrepl.rs`) answers its PINGs with an error Sentinel does not count as
    /// available, so that Sentinel fails it over.
    pub sentinel_names_me_primary: bool,
    /// Set while blocked in a stream read.
    pub blocked: Option<BlockState>,
    /// Mailbox to the connection task. Send through [`Client::send`], which accounts
    /// for the queued bytes.
    pub tx: super::mailbox::Sender,
    /// Pending output shared with the connection task (`client-output-buffer-limit`).
    pub output: Rc<OutputState>,
    /// Pub/Sub subscriptions (channels, patterns, shard channels); the server's side
    /// of them is `Core::pubsub`, and the two change together (`pubsub` module doc).
    pub subs: crate::pubsub::ClientSubs,
    /// Replica, primary or neither.
    pub repl: ClientRepl,
    /// REPLCONF settings before PSYNC.
    pub repl_conf: Option<Box<ReplConf>>,
    /// Commands this client ran (`tot-cmds`): counted when answered, as Redis counts a
    /// blocking command once it is served.
    pub cmds: u64,
    /// Request bytes of the command being parsed or run (Redis's
    /// `net_input_bytes_curr_cmd`), for CLUSTER SLOT-STATS `network-bytes-in`.
    pub cmd_input_bytes: u64,
    /// Commands run from reads, and reads that ran at least one (`avg-pipeline-len-sum`
    /// and `avg-pipeline-len-cnt`).
    pub pipeline_sum: u64,
    /// See [`Client::pipeline_sum`].
    pub pipeline_batches: u64,
    /// The connection's query buffer (`qbuf`, `qbuf-free`, `argv-mem`), as the front end
    /// last reported it.
    pub query_buf: QueryBuf,
    /// A command parked for cold stream nodes (tiering), whose nodes are now read: the
    /// connection's next batch runs it first.
    pub resume: Option<crate::resp::Argv>,
}

/// What a client's query buffer holds, for CLIENT LIST / CLIENT INFO. While a read's
/// commands run, `len` counts every byte of that read not yet parsed before it started (as
/// Redis keeps the buffer until the whole read is processed); between reads, the partial
/// command left over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryBuf {
    /// Bytes in the buffer (`qbuf`).
    pub len: usize,
    /// Capacity not yet used (`qbuf-free`).
    pub free: usize,
    /// Bytes of the arguments of the command being run (`argv-mem`), 0 between commands.
    pub argv_mem: usize,
}

/// Which CLIENT LIST / CLIENT INFO fields `compat-version` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InfoFields {
    /// Redis 8.0: `io-thread`, `tot-net-in`, `tot-net-out`, `tot-cmds`.
    pub since_8_0: bool,
    /// Redis 8.8: `omem-shared`, `omem-unshared`, `read-events`, `avg-pipeline-len-sum`,
    /// `avg-pipeline-len-cnt`.
    pub since_8_8: bool,
}

impl Client {
    /// A fresh client with defaults (db 0, RESP2).
    pub fn new(
        id: u64,
        addr: String,
        laddr: String,
        authenticated: bool,
        now_ms: u64,
        tx: super::mailbox::Sender,
    ) -> Client {
        Client {
            id,
            addr,
            laddr,
            name: None,
            lib_name: None,
            lib_ver: None,
            db: 0,
            proto: Protocol::Resp2,
            authenticated,
            user: None,
            multi: None,
            multi_error: false,
            watched: Vec::new(),
            created_ms: now_ms,
            last_interaction_ms: now_ms,
            idle_checked_ms: 0,
            last_cmd: "NULL",
            monitor: false,
            close_after_reply: false,
            no_evict: false,
            no_touch: false,
            reply_mode: ReplyMode::On,
            script_caller: 0,
            in_exec: false,
            in_script: false,
            cluster_readonly: false,
            asking: false,
            sentinel_names_me_primary: false,
            blocked: None,
            tx,
            output: Rc::default(),
            subs: Default::default(),
            repl: ClientRepl::Normal,
            repl_conf: None,
            cmds: 0,
            cmd_input_bytes: 0,
            pipeline_sum: 0,
            pipeline_batches: 0,
            query_buf: QueryBuf::default(),
            resume: None,
        }
    }

    /// The name of the client's ACL user (`default` for internal clients).
    pub fn username(&self) -> bytes::Bytes {
        match &self.user {
            Some(u) => u.borrow().name.clone(),
            None => bytes::Bytes::from_static(b"default"),
        }
    }

    fn username_lossy(&self) -> String {
        String::from_utf8_lossy(&self.username()).into_owned()
    }

    /// True while subscribed to any channel, pattern or shard channel (Redis's
    /// `CLIENT_PUBSUB`): RESP2 clients then accept only the subscribe family, PING,
    /// QUIT and RESET, and the `pubsub` class of `client-output-buffer-limit` applies.
    pub fn in_pubsub(&self) -> bool {
        self.subs.total() > 0
    }

    /// Queues `msg` for the connection task, counting its bytes as pending output; a
    /// client whose pending output goes over `limit` is killed (its connection closes
    /// and drops what is queued).
    pub fn send(&self, msg: ClientMsg, limit: BufferLimit) {
        if self.output.killed() {
            return;
        }
        // Messages the core was to write directly come first (`core/direct_write.rs`);
        // from now on everything goes through the mailbox until the task waits again.
        if self.output.direct.accepts() {
            let early = self.output.direct.close();
            if !early.is_empty() && self.tx.send(ClientMsg::Shared(early)).is_err() {
                return;
            }
        }
        let len = match &msg {
            ClientMsg::Write(b) | ClientMsg::Unblocked(b) => b.len(),
            ClientMsg::Shared(b) => b.len(),
            ClientMsg::Close | ClientMsg::IdleCheck => 0,
        };
        self.output.add_queued(len);
        if self.tx.send(msg).is_err() {
            self.output.remove_queued(len);
            return;
        }
        self.output.check(limit, self.output.queued());
    }

    /// Appends a Pub/Sub message for the core to write directly (only while
    /// [`DirectOutput::accepts`](super::direct_write::DirectOutput::accepts)); true when
    /// it is the first pending one, so the client must be noted for the flusher.
    pub fn push_direct(&self, bytes: &bytes::Bytes, limit: BufferLimit) -> bool {
        if self.output.killed() {
            return false;
        }
        self.output.add_queued(bytes.len());
        let first = self.output.direct.push(bytes);
        self.output.check(limit, self.output.queued());
        first
    }

    /// Puts bytes the flusher could not write at the head of the mailbox (they are
    /// counted as queued already).
    pub fn requeue_first(&self, bytes: bytes::Bytes) {
        let len = bytes.len();
        if self.tx.send_front(ClientMsg::Shared(bytes)).is_err() {
            self.output.remove_queued(len);
        }
    }

    /// The CLIENT LIST / CLIENT INFO line for this client (no trailing newline).
    pub fn info_line(&self, now_ms: u64, fields: InfoFields) -> String {
        // Redis's order (networking.c `getClientInfoString`).
        let mut flags = String::new();
        match self.repl {
            ClientRepl::Replica => flags.push('S'),
            ClientRepl::Master => flags.push('M'),
            ClientRepl::Normal => {}
        }
        if self.monitor {
            flags.push('O');
        }
        if self.in_pubsub() {
            flags.push('P');
        }
        if self.multi.is_some() {
            flags.push('x');
        }
        if self.blocked.is_some() {
            flags.push('b');
        }
        if self.no_evict {
            flags.push('e');
        }
        if self.no_touch {
            flags.push('T');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let lossy = |b: &Option<Bytes>| {
            b.as_ref()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default()
        };
        // The queued commands' arguments plus a pointer each (what Redis 7.0 counts: 35
        // for a queued `SET key value`), and the replies waiting for the socket.
        let multi_mem: usize = self
            .multi
            .iter()
            .flatten()
            .flatten()
            .map(|a| a.len() + std::mem::size_of::<usize>())
            .sum();
        let omem = self.output.queued();
        let tot_mem = std::mem::size_of::<Self>()
            + self.query_buf.len
            + self.query_buf.free
            + self.query_buf.argv_mem
            + multi_mem
            + omem;
        let mut line = format!(
            "id={} addr={} laddr={} fd=8 name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} watch={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs=0 rbp=0 obl=0 oll={} omem={}{} tot-mem={} events=r cmd={} user={} redir=-1 resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            lossy(&self.name),
            now_ms.saturating_sub(self.created_ms) / 1000,
            now_ms.saturating_sub(self.last_interaction_ms) / 1000,
            flags,
            self.db,
            self.subs.count(crate::pubsub::Kind::Channel),
            self.subs.count(crate::pubsub::Kind::Pattern),
            self.subs.count(crate::pubsub::Kind::Shard),
            self.multi.as_ref().map(|q| q.len() as i64).unwrap_or(-1),
            self.watched.len(),
            self.query_buf.len,
            self.query_buf.free,
            self.query_buf.argv_mem,
            multi_mem,
            usize::from(omem > 0),
            omem,
            if fields.since_8_8 {
                " omem-shared=0 omem-unshared=0"
            } else {
                ""
            },
            tot_mem,
            self.last_cmd,
            self.username_lossy(),
            if self.proto == Protocol::Resp3 { 3 } else { 2 },
            lossy(&self.lib_name),
            lossy(&self.lib_ver),
        );
        if fields.since_8_0 {
            use std::fmt::Write;
            let (net_in, net_out, reads) = self.output.net_totals();
            // One thread serves every connection: Redis's main thread is io-thread 0.
            let _ = write!(
                line,
                " io-thread=0 tot-net-in={net_in} tot-net-out={net_out} tot-cmds={}",
                self.cmds
            );
            if fields.since_8_8 {
                let _ = write!(
                    line,
                    " read-events={reads} avg-pipeline-len-sum={} avg-pipeline-len-cnt={}",
                    self.pipeline_sum, self.pipeline_batches
                );
            }
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_block_waits_on_no_key_and_no_deadline() {
        let argv: Argv = vec![Bytes::from_static(b"WAIT")];
        let b = BlockState::held(argv.clone(), 3);
        assert_eq!((&*b.argv, b.db), (&argv, 3));
        assert!(b.keys.is_empty() && b.deadline_ms.is_none() && !b.unblock_on_nokey);
    }
}
