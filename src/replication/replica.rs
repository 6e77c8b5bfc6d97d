//! The replica's link to its primary: one task for the server's life, which connects
//! whenever `REPLICAOF` (or the `replicaof` directive) names a primary, and runs the
//! handshake, the full or partial sync and the command stream.
//!
//! ```text
//!  connect ─▶ PING ─▶ [AUTH [masteruser] masterauth] ─▶ REPLCONF listening-port <p>
//!  ─▶ [REPLCONF ip-address <ip>] ─▶ REPLCONF capa eof capa psync2 capa streamd
//!  ─▶ PSYNC <replid> <offset+1>
//!       +CONTINUE [<new id>]          the stream follows from our offset
//!       +FULLRESYNC <replid> <offset> then "$<len>\r\n" or "$EOF:<40 bytes>\r\n" and
//!                                     the payload (streamd snapshot or Redis RDB),
//!                                     loaded in place of the dataset, then the stream
//!  stream: every command runs as the primary's client (no replies; READONLY does not
//!          apply), is counted into our offset and fed on to our own replicas;
//!          REPLCONF ACK <offset> [FACK <durable offset>] every second and on GETACK
//! ```
//!
//! A link that was streaming is tried again at once when it ends; a failed attempt is
//! retried every second. The dataset is replaced only once a
//! whole payload arrived and loaded: a primary that dies during a full sync leaves
//! the replica with its previous data, still a replica, retrying.

use crate::core::client::{Client, ClientMsg, ClientRepl};
use crate::core::replication::LinkState;
use crate::core::{SharedCore, unix_ms};
use crate::resp::Argv;
use crate::resp::parser::{ParserLimits, RequestParser};
use crate::resp::writer::RespWriter;
use bytes::{Buf, Bytes, BytesMut};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why a link attempt ended.
#[derive(Debug)]
enum LinkEnd {
    /// REPLICAOF changed the primary (or made this server a primary).
    Changed,
    /// I/O failed, timed out, or the primary refused; retry.
    Failed(String),
}

type LinkResult<T> = Result<T, LinkEnd>;

/// The link task: waits for a primary to follow, follows it, and retries.
pub async fn run(core: SharedCore, activity: super::Activity) {
    let changed = core.borrow().repl.link_changed.clone();
    loop {
        let target = {
            let c = core.borrow();
            c.repl
                .master
                .as_ref()
                .map(|m| (c.repl.link_generation, m.host.clone(), m.port))
        };
        let Some((generation, host, port)) = target else {
            changed.notified().await;
            continue;
        };
        match link(&core, generation, &host, port, &activity).await {
            LinkEnd::Changed => continue,
            LinkEnd::Failed(why) => {
                tracing::warn!(primary = %format!("{host}:{port}"), "replication link: {why}");
                // A link that was streaming is tried again at once (Redis 7.0's
                // replicationHandleMasterDisconnection: waiting risks the backlog moving
                // past us); a failed attempt waits a second before the next.
                if !link_down(&core, generation) {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = changed.notified() => {}
                    }
                }
            }
        }
    }
}

/// Marks the link down (if it is still the current one); true when it was streaming.
fn link_down(core: &SharedCore, generation: u64) -> bool {
    let mut c = core.borrow_mut();
    if c.repl.link_generation != generation {
        return false;
    }
    let now = unix_ms();
    let Some(m) = c.repl.master.as_mut() else {
        return false;
    };
    let was_up = m.state == LinkState::Connected;
    if was_up {
        m.down_since_ms = now;
    }
    m.state = LinkState::Connect;
    m.client_id = None;
    was_up
}

/// The AUTH a replica sends its primary (`masteruser`, `masterauth`), `None` without a
/// password.
pub(crate) fn auth_argv<'a>(user: &'a str, pass: &'a str) -> Option<Vec<&'a [u8]>> {
    match (user.is_empty(), pass.is_empty()) {
        (_, true) => None,
        (true, false) => Some(vec![b"AUTH", pass.as_bytes()]),
        (false, false) => Some(vec![b"AUTH", user.as_bytes(), pass.as_bytes()]),
    }
}

fn current(core: &SharedCore, generation: u64) -> LinkResult<()> {
    if core.borrow().repl.link_generation == generation {
        Ok(())
    } else {
        Err(LinkEnd::Changed)
    }
}

fn set_state(core: &SharedCore, state: LinkState) {
    if let Some(m) = core.borrow_mut().repl.master.as_mut() {
        m.state = state;
        m.last_io_ms = unix_ms();
    }
}

/// One connection to the primary, from connect to the end of the stream.
async fn link(
    core: &SharedCore,
    generation: u64,
    host: &str,
    port: u16,
    activity: &super::Activity,
) -> LinkEnd {
    match link_inner(core, generation, host, port, activity).await {
        Ok(()) => LinkEnd::Failed("connection closed".into()),
        Err(e) => e,
    }
}

/// Bytes read from the primary that no one consumed yet, and the socket.
struct Conn {
    sock: TcpStream,
    buf: BytesMut,
    timeout: Duration,
    /// Reports each applied batch to the server's idle poller (see [`super::Activity`]).
    activity: super::Activity,
}

impl Conn {
    /// Reads more bytes; an error on EOF or timeout.
    async fn fill(&mut self) -> LinkResult<()> {
        if self.buf.capacity() - self.buf.len() < 16 * 1024 {
            self.buf.reserve(64 * 1024);
        }
        match tokio::time::timeout(self.timeout, self.sock.read_buf(&mut self.buf)).await {
            Err(_) => Err(LinkEnd::Failed("timeout reading from the primary".into())),
            Ok(Err(e)) => Err(LinkEnd::Failed(format!("read error: {e}"))),
            Ok(Ok(0)) => Err(LinkEnd::Failed("the primary closed the connection".into())),
            Ok(Ok(_)) => Ok(()),
        }
    }

    /// One line without its CRLF (keepalive newlines come back as empty lines).
    async fn line(&mut self) -> LinkResult<String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let mut l = self.buf.split_to(i + 1);
                l.truncate(i);
                if l.last() == Some(&b'\r') {
                    l.truncate(i - 1);
                }
                return Ok(String::from_utf8_lossy(&l).into_owned());
            }
            if self.buf.len() > 64 * 1024 {
                return Err(LinkEnd::Failed("line too long from the primary".into()));
            }
            self.fill().await?;
        }
    }

    /// Sends `argv` and reads the one-line reply (skipping keepalive newlines).
    async fn call(&mut self, argv: &[&[u8]]) -> LinkResult<String> {
        let mut out = Vec::new();
        crate::resp::writer::command(&mut out, argv);
        self.send(&out).await?;
        loop {
            let l = self.line().await?;
            if !l.is_empty() {
                return Ok(l);
            }
        }
    }

    async fn send(&mut self, bytes: &[u8]) -> LinkResult<()> {
        match tokio::time::timeout(self.timeout, self.sock.write_all(bytes)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(LinkEnd::Failed(format!("write error: {e}"))),
            Err(_) => Err(LinkEnd::Failed("timeout writing to the primary".into())),
        }
    }
}

async fn link_inner(
    core: &SharedCore,
    generation: u64,
    host: &str,
    port: u16,
    activity: &super::Activity,
) -> LinkResult<()> {
    set_state(core, LinkState::Connecting);
    let timeout = Duration::from_secs(core.borrow().config.get_i64("repl-timeout").max(1) as u64);
    let sock = match tokio::time::timeout(timeout, TcpStream::connect((host, port))).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Err(LinkEnd::Failed(format!(
                "Error condition on socket for SYNC: {e}"
            )));
        }
        Err(_) => {
            return Err(LinkEnd::Failed(
                "Timeout connecting to the MASTER...".into(),
            ));
        }
    };
    let _ = sock.set_nodelay(true);
    tracing::info!(primary = %format!("{host}:{port}"), "Connecting to MASTER: MASTER <-> REPLICA sync started");
    let mut conn = Conn {
        sock,
        buf: BytesMut::with_capacity(64 * 1024),
        timeout,
        activity: activity.clone(),
    };
    let pong = conn.call(&[b"PING"]).await?;
    if !pong.starts_with('+')
        && !pong.starts_with("-NOAUTH")
        && !pong.starts_with("-NOPERM")
        && !pong.starts_with("-ERR operation not permitted")
    {
        return Err(LinkEnd::Failed(format!(
            "Error reply to PING from master: '{pong}'"
        )));
    }
    current(core, generation)?;
    let (auth, user, listen, announce_ip) = {
        let c = core.borrow();
        (
            c.config.get("masterauth").unwrap_or("").to_string(),
            c.config.get("masteruser").unwrap_or("").to_string(),
            c.replica_announced_port(),
            c.replica_announced_ip().unwrap_or("").to_string(),
        )
    };
    if let Some(argv) = auth_argv(&user, &auth) {
        let r = conn.call(&argv).await?;
        if r.starts_with('-') {
            return Err(LinkEnd::Failed(format!("Unable to AUTH to MASTER: {r}")));
        }
    }
    let port_text = listen.to_string();
    let _ = conn
        .call(&[b"REPLCONF", b"listening-port", port_text.as_bytes()])
        .await?;
    if !announce_ip.is_empty() {
        let _ = conn
            .call(&[b"REPLCONF", b"ip-address", announce_ip.as_bytes()])
            .await?;
    }
    let _ = conn
        .call(&[
            b"REPLCONF",
            b"capa",
            b"eof",
            b"capa",
            b"psync2",
            b"capa",
            b"streamd",
        ])
        .await?;
    // Our id in the primary's sync set (core/syncrepl.rs); a primary that does not know
    // the option (Redis) answers an error, which changes nothing.
    let sync_id = core.borrow().sync.self_id.clone();
    let _ = conn
        .call(&[b"REPLCONF", b"sync-id", sync_id.as_bytes()])
        .await?;
    current(core, generation)?;
    let (replid, offset) = {
        let c = core.borrow();
        (c.repl.replid.clone(), c.repl.offset)
    };
    let want = (offset + 1).to_string();
    let failover = std::mem::take(&mut core.borrow_mut().repl.psync_failover);
    let reply = if failover {
        conn.call(&[b"PSYNC", replid.as_bytes(), want.as_bytes(), b"FAILOVER"])
            .await?
    } else {
        conn.call(&[b"PSYNC", replid.as_bytes(), want.as_bytes()])
            .await?
    };
    current(core, generation)?;
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC ") {
        let mut parts = rest.split(' ');
        let new_id = parts.next().unwrap_or("").to_string();
        let new_offset: u64 = parts.next().and_then(|o| o.parse().ok()).unwrap_or(0);
        tracing::info!(replid = %new_id, offset = new_offset, "Full resync from master");
        full_sync(core, generation, &mut conn, new_id, new_offset).await?;
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        let new_id = rest.trim();
        let mut c = core.borrow_mut();
        if !new_id.is_empty() && new_id != c.repl.replid {
            // The primary's history has a new id (it was promoted): ours becomes the
            // second one, and our own replicas must sync again to learn it.
            tracing::info!(replid = %new_id, "Master replication ID changed");
            c.repl.replid2 = std::mem::replace(&mut c.repl.replid, new_id.to_string());
            c.repl.second_replid_offset = c.repl.offset as i64 + 1;
            disconnect_replicas(&mut c);
        }
        c.repl.ensure_backlog();
        tracing::info!("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
    } else if reply.starts_with("-NOMASTERLINK") || reply.starts_with("-LOADING") {
        return Err(LinkEnd::Failed(format!(
            "Master is currently unable to PSYNC but should be in the future: {reply}"
        )));
    } else {
        return Err(LinkEnd::Failed(format!(
            "Unexpected reply to PSYNC from master: {reply}"
        )));
    }
    stream(core, generation, conn, host, port).await
}

/// Closes the connections of this server's own replicas (their history changed).
fn disconnect_replicas(c: &mut crate::core::Core) {
    let ids: Vec<u64> = c.repl.replicas.keys().copied().collect();
    for id in ids {
        if let Some(cl) = c.clients.get(&id) {
            let _ = cl.tx.send(ClientMsg::Close);
        }
        c.repl.replicas.remove(&id);
    }
}

/// Receives and loads the payload of a full sync.
async fn full_sync(
    core: &SharedCore,
    generation: u64,
    conn: &mut Conn,
    replid: String,
    offset: u64,
) -> LinkResult<()> {
    set_state(core, LinkState::Sync);
    {
        let mut c = core.borrow_mut();
        // Our data is replaced: whatever sync set we were in, we are not any more.
        c.sync.member_of = None;
        c.sync.primary_sync_on = false;
        if let Some(m) = c.repl.master.as_mut() {
            m.sync_read = 0;
            m.sync_total = -1;
        }
    }
    let header = loop {
        let l = conn.line().await?;
        if l.is_empty() {
            set_state(core, LinkState::Sync);
            continue;
        }
        break l;
    };
    if header.starts_with('-') {
        return Err(LinkEnd::Failed(format!(
            "MASTER aborted replication with an error: {header}"
        )));
    }
    let Some(spec) = header.strip_prefix('$') else {
        return Err(LinkEnd::Failed(format!(
            "Bad protocol from MASTER, the first byte is not '$': {header}"
        )));
    };
    let end = match spec.strip_prefix("EOF:") {
        Some(mark) if mark.len() == 40 => PayloadEnd::Mark(mark.as_bytes().to_vec()),
        Some(_) => return Err(LinkEnd::Failed("bad EOF mark from the primary".into())),
        None => PayloadEnd::Length(spec.trim().parse().map_err(|_| {
            LinkEnd::Failed(format!("bad payload length from the primary: {spec}"))
        })?),
    };
    // Every payload goes to a file as it arrives, so a replica never holds a streamd
    // snapshot whole (a tiered stream's history may be many times its memory); an RDB
    // (a Redis primary) is then read back whole, as its loader wants.
    let tmp = {
        let c = core.borrow();
        crate::persist::dump_path(&c)
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default()
            .join(format!("temp-sync-{}.snap", std::process::id()))
    };
    let loaded = receive_to_file(core, generation, conn, &end, &tmp)
        .await
        .and_then(|bytes| {
            tracing::info!(
                bytes,
                "MASTER <-> REPLICA sync: received the payload; loading it"
            );
            load_payload_file(core, &tmp, replid, offset).map_err(LinkEnd::Failed)
        });
    let _ = std::fs::remove_file(&tmp);
    loaded
}

/// Where a full sync's payload ends.
enum PayloadEnd {
    /// After this many bytes (`$<len>`).
    Length(usize),
    /// Before this 40-byte mark (`$EOF:<mark>`, the diskless form).
    Mark(Vec<u8>),
}

/// Writes a payload to `path` as it arrives, up to its `end` (a possible start of the
/// mark is kept in memory until more bytes show it was not the end). Returns the bytes
/// written.
async fn receive_to_file(
    core: &SharedCore,
    generation: u64,
    conn: &mut Conn,
    end: &PayloadEnd,
    path: &std::path::Path,
) -> LinkResult<u64> {
    use std::io::Write;
    let failed = |e: std::io::Error| LinkEnd::Failed(format!("cannot store the sync payload: {e}"));
    let mut file =
        std::io::BufWriter::with_capacity(256 * 1024, std::fs::File::create(path).map_err(failed)?);
    let mut written = 0usize;
    loop {
        // What of the buffer is payload for sure, and whether the payload ends there.
        let (n, done) = match end {
            PayloadEnd::Length(t) => {
                let n = (t - written).min(conn.buf.len());
                (n, written + n == *t)
            }
            PayloadEnd::Mark(mark) if conn.buf.ends_with(mark) => {
                (conn.buf.len() - mark.len(), true)
            }
            PayloadEnd::Mark(mark) => (conn.buf.len().saturating_sub(mark.len()), false),
        };
        file.write_all(&conn.buf[..n]).map_err(failed)?;
        written += n;
        if done {
            // The mark, if any, goes too; what follows the payload must not keep its
            // allocation alive.
            let rest = match end {
                PayloadEnd::Length(_) => &conn.buf[n..],
                PayloadEnd::Mark(_) => &[][..],
            };
            conn.buf = BytesMut::from(rest);
            break;
        }
        let _ = conn.buf.split_to(n);
        let total = match end {
            PayloadEnd::Length(t) => *t as i64,
            PayloadEnd::Mark(_) => -1,
        };
        progress(core, written as u64, total);
        current(core, generation)?;
        conn.fill().await?;
    }
    file.flush().map_err(failed)?;
    current(core, generation)?;
    Ok(written as u64)
}

fn progress(core: &SharedCore, read: u64, total: i64) {
    if let Some(m) = core.borrow_mut().repl.master.as_mut() {
        m.sync_read = read;
        m.sync_total = total;
        m.last_io_ms = unix_ms();
    }
}

/// Loads a received payload (at `path`) in place of the dataset and takes the primary's
/// history: a Redis primary's RDB, or a streamd primary's snapshot.
fn load_payload_file(
    core: &SharedCore,
    path: &std::path::Path,
    replid: String,
    offset: u64,
) -> Result<(), String> {
    let mut head = [0u8; 5];
    let is_rdb = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && &head == b"REDIS";
    if is_rdb {
        let payload =
            std::fs::read(path).map_err(|e| format!("cannot read the sync payload: {e}"))?;
        return load_rdb_payload(core, &payload, replid, offset);
    }
    load_snapshot_payload(core, path, replid, offset)
}

/// Loads a Redis primary's RDB payload in place of the dataset and takes the primary's
/// history.
fn load_rdb_payload(
    core: &SharedCore,
    payload: &[u8],
    replid: String,
    offset: u64,
) -> Result<(), String> {
    let mut c = core.borrow_mut();
    let started = std::time::Instant::now();
    let databases = c.dbs.len();
    let defaults = c.idmp_defaults;
    let (dbs, stats) =
        crate::rdb::file::read(payload, databases, unix_ms(), defaults, &mut |_, _| {})
            .map_err(|e| format!("the primary's RDB does not load: {e}"))?;
    if !stats.skipped.is_empty() {
        let skipped: Vec<String> = stats
            .skipped
            .iter()
            .map(|(t, n)| format!("{t}={n}"))
            .collect();
        tracing::warn!(
            skipped = %skipped.join(","),
            "the primary's dataset holds keys of types streamd does not store; they were skipped"
        );
    }
    c.dbs = dbs;
    c.touch_all(None);
    loaded(&mut c, started, replid, offset);
    Ok(())
}

/// Loads a streamd primary's snapshot, received into `path`, in place of the dataset
/// and takes the primary's history.
fn load_snapshot_payload(
    core: &SharedCore,
    path: &std::path::Path,
    replid: String,
    offset: u64,
) -> Result<(), String> {
    let mut c = core.borrow_mut();
    let started = std::time::Instant::now();
    crate::persist::sync::load_snapshot_file(&mut c, path)
        .map_err(|e| format!("the primary's snapshot does not load: {e}"))?;
    loaded(&mut c, started, replid, offset);
    Ok(())
}

/// After a full sync's dataset is in place: wakes the readers blocked here, drops
/// this server's own replicas and takes the primary's history from `offset`.
fn loaded(c: &mut crate::core::Core, started: std::time::Instant, replid: String, offset: u64) {
    // Readers blocked on this replica see the new data.
    let waited: Vec<(usize, Bytes)> = c.blocked.all_keys();
    for (db, key) in waited {
        c.signal_ready(db, &key);
    }
    c.handle_ready_keys();
    disconnect_replicas(c);
    c.repl.replid = replid;
    c.repl.replid2 = "0".repeat(40);
    c.repl.second_replid_offset = -1;
    c.repl.reset_offset(offset);
    c.repl.backlog = None;
    c.repl.ensure_backlog();
    c.repl.master_db = Some(0);
    c.dirty += 1;
    tracing::info!(
        keys = c.dbs.iter().map(|d| d.len()).sum::<usize>(),
        secs = started.elapsed().as_secs_f64(),
        "MASTER <-> REPLICA sync: Finished with success"
    );
    crate::persist::sync::after_full_sync(c);
}

/// Applies the primary's command stream until the link ends.
async fn stream(
    core: &SharedCore,
    generation: u64,
    mut conn: Conn,
    host: &str,
    port: u16,
) -> LinkResult<()> {
    let (tx, mut rx) = crate::core::mailbox::mailbox();
    let id = {
        let mut c = core.borrow_mut();
        let laddr = conn
            .sock
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let mut client = Client::new(0, format!("{host}:{port}"), laddr, true, unix_ms(), tx);
        client.repl = ClientRepl::Master;
        client.db = c.repl.master_db.unwrap_or(0);
        let id = c.add_client(client);
        let now = unix_ms();
        if let Some(m) = c.repl.master.as_mut() {
            m.state = LinkState::Connected;
            m.client_id = Some(id);
            m.last_io_ms = now;
        }
        id
    };
    tracing::info!("MASTER <-> REPLICA sync: the link is up, applying the stream");
    let r = stream_loop(core, generation, &mut conn, id, &mut rx).await;
    let mut c = core.borrow_mut();
    if let Some(client) = c.clients.get(&id) {
        c.repl.master_db = Some(client.db);
    }
    c.remove_client(id);
    r
}

async fn stream_loop(
    core: &SharedCore,
    generation: u64,
    conn: &mut Conn,
    id: u64,
    rx: &mut crate::core::mailbox::Receiver,
) -> LinkResult<()> {
    let limits: ParserLimits = core.borrow().limits.parser;
    let mut parser = RequestParser::new(limits);
    parser.set_authenticated(true);
    parser.keep_frames();
    let mut ack_timer = tokio::time::interval(Duration::from_secs(1));
    let mut tx: Option<Vec<Received>> = None;
    // Send the first ACK at once: the primary learns our offset.
    send_ack(core, conn).await?;
    loop {
        if !conn.buf.is_empty() {
            let ack = apply(core, id, &mut parser, &mut conn.buf, &mut tx)?;
            // Effects of the primary's commands go to our log like any write.
            if crate::persist::commit(core).await.is_err() {
                return Err(LinkEnd::Failed(
                    "the append only file cannot be made durable".into(),
                ));
            }
            // `commit` moved `fsynced_offset` if it waited for an fsync (appendfsync
            // always); under everysec the cron moves it once the records are on disk.
            // Only now: the ACK's FACK then covers this batch (WAITAOF counts on it).
            // A primary in synchronous mode releases replies on our ACKs: one per
            // applied batch (group commit), not once a second.
            if ack || core.borrow().sync.primary_sync_on {
                send_ack(core, conn).await?;
            }
            // The next batch is likely near (and under min-sync-replicas the primary
            // waits for our ACK of it): look for it before letting the thread sleep.
            (conn.activity)();
            // The primary's client is one client among others, as in Redis's event loop:
            // readers this batch woke (and every other client) run before the next read.
            tokio::task::yield_now().await;
        }
        current(core, generation)?;
        let timeout = conn.timeout;
        tokio::select! {
            r = tokio::time::timeout(timeout, conn.sock.read_buf(&mut conn.buf)) => match r {
                Err(_) => return Err(LinkEnd::Failed("MASTER timeout: no data nor PING received...".into())),
                Ok(Err(e)) => return Err(LinkEnd::Failed(format!("read error: {e}"))),
                Ok(Ok(0)) => return Err(LinkEnd::Failed("Connection with master lost.".into())),
                Ok(Ok(n)) => {
                    let mut c = core.borrow_mut();
                    c.stats.net_input_bytes += n as u64;
                    if let Some(m) = c.repl.master.as_mut() {
                        m.last_io_ms = unix_ms();
                    }
                }
            },
            _ = ack_timer.tick() => send_ack(core, conn).await?,
            msg = rx.recv() => match msg {
                Some(ClientMsg::Close) | None => {
                    current(core, generation)?;
                    return Err(LinkEnd::Failed("the primary's client was killed".into()));
                }
                _ => {}
            },
        }
        if conn.buf.capacity() - conn.buf.len() < 16 * 1024 {
            conn.buf.reserve(64 * 1024);
        }
    }
}

/// `REPLCONF ACK <offset> FACK <durable offset>`.
async fn send_ack(core: &SharedCore, conn: &mut Conn) -> LinkResult<()> {
    let (off, fack) = {
        let c = core.borrow();
        (c.repl.offset, c.repl.fsynced_offset)
    };
    let (off, fack) = (off.to_string(), fack.to_string());
    let mut out = Vec::new();
    crate::resp::writer::command(
        &mut out,
        &[
            b"REPLCONF".as_slice(),
            b"ACK",
            off.as_bytes(),
            b"FACK",
            fack.as_bytes(),
        ],
    );
    conn.send(&out).await
}

/// A command from the primary: its arguments, and its bytes as received when they came
/// in one piece.
type Received = (Argv, Option<bytes::Bytes>);

/// Runs every complete command in `buf` as the primary's client; true when one asked
/// for an ACK. A transaction from the primary (`MULTI` ... `EXEC`) is gathered in `tx`
/// (it may span reads) and run at its EXEC, in order, state records included.
fn apply(
    core: &SharedCore,
    id: u64,
    parser: &mut RequestParser,
    buf: &mut BytesMut,
    tx: &mut Option<Vec<Received>>,
) -> LinkResult<bool> {
    let mut c = core.borrow_mut();
    let Some(mut client) = c.clients.remove(&id) else {
        return Err(LinkEnd::Failed("the primary's client is gone".into()));
    };
    c.begin_batch();
    let (size, hard) = (c.repl_backlog_size(), c.replica_hard_limit());
    let mut out = RespWriter::default();
    let mut result = Ok(());
    loop {
        // Keepalive newlines between commands carry nothing.
        while buf.first() == Some(&b'\n') {
            buf.advance(1);
        }
        match parser.parse(buf) {
            Ok(Some(argv)) => {
                // The command's bytes as the primary sent them: they go on to our
                // backlog as they are (re-encoded only when they came in pieces).
                let raw = parser.take_frame();
                let name = argv.first().map_or(&[][..], |n| &n[..]);
                let (multi, exec) = (
                    name.eq_ignore_ascii_case(b"MULTI"),
                    name.eq_ignore_ascii_case(b"EXEC"),
                );
                // Each command is fed to our backlog before it runs, so that it can then
                // be handed over whole (no copy of its arguments): feeding reads only the
                // command's bytes, and nothing between the two looks at the offset (the
                // ACK it may ask for goes out after the whole read is applied, and the
                // log's fsync marks pair offsets with records in the cron).
                //
                // A transaction counts toward our offset (and goes on to our replicas)
                // only once applied whole, as Redis advances its offset at EXEC: a link
                // lost in its middle resumes from before its MULTI.
                if multi && tx.is_none() {
                    *tx = Some(vec![(argv, raw)]);
                } else if exec && tx.is_some() {
                    let mut queued = tx.take().unwrap_or_default();
                    queued.push((argv, raw));
                    for (q, raw) in &queued {
                        c.repl.feed_from_master(q, raw.as_deref(), size, hard);
                    }
                    let last = queued.len() - 1;
                    c.persist.exec_begin();
                    for (q, _) in queued.drain(..).take(last).skip(1) {
                        run_one(&mut c, &mut client, q, &mut out);
                    }
                    c.persist.exec_end();
                } else if let Some(queue) = tx.as_mut() {
                    queue.push((argv, raw));
                } else {
                    c.repl.feed_from_master(&argv, raw.as_deref(), size, hard);
                    run_one(&mut c, &mut client, argv, &mut out);
                }
            }
            Ok(None) => break,
            Err(e) => {
                result = Err(LinkEnd::Failed(format!(
                    "protocol error from the primary: {}",
                    e.0
                )));
                break;
            }
        }
    }
    c.repl.wake.notify_waiters();
    let ack = std::mem::take(&mut c.repl.ack_requested);
    c.clients.insert(id, client);
    result.map(|()| ack)
}

/// Runs one command from the primary: a `STREAMD.*` state record as the loader applies
/// it (and logged here too), a known command through the normal path (its reply
/// dropped), an unknown one skipped and counted.
fn run_one(c: &mut crate::core::Core, client: &mut Client, argv: Argv, out: &mut RespWriter) {
    let Some(name) = argv.first() else {
        return;
    };
    c.repl.applying_master = true;
    if name.eq_ignore_ascii_case(crate::core::syncrepl::SYNCSET) {
        // The primary's sync set: are we in it (core/syncrepl.rs)?
        let replid = c.repl.replid.clone();
        c.sync.apply_record(&replid, &argv[1..]);
    } else if crate::persist::load::is_internal(name) {
        let db = client.db;
        match crate::persist::load::apply_internal(c, db, &argv) {
            Ok(()) => {
                c.dirty += 1;
                c.propagate(db, &argv);
            }
            Err(why) => tracing::warn!(%why, "a state record from the primary did not apply"),
        }
    } else if c.lookup_command(name).is_some() {
        let ack = is_ack_command(&argv);
        c.execute(client, argv, out);
        if !c.ready_keys.is_empty() {
            c.handle_ready_keys();
        }
        if out.buf.first() == Some(&b'-') && !ack {
            tracing::debug!(
                reply = %String::from_utf8_lossy(&out.buf[..out.buf.len().min(200)]),
                "a command from the primary failed"
            );
        }
        out.buf.clear();
    } else {
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        let n = c.repl.unknown_from_master.entry(name.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            tracing::warn!(
                command = %name,
                "the primary sent a command streamd does not implement; skipped (counted in INFO replication master_skipped_commands)"
            );
        }
    }
    c.repl.applying_master = false;
}

fn is_ack_command(argv: &[Bytes]) -> bool {
    argv.first()
        .is_some_and(|n| n.eq_ignore_ascii_case(b"REPLCONF"))
}
