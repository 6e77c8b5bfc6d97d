//! The primary's side of one replica connection, from the moment PSYNC (or SYNC) was
//! accepted (`commands/replication.rs`) until the connection ends.
//!
//! ```text
//!  full sync:  wait repl-diskless-sync-delay ─▶ clone the keyspace at offset O (one
//!              borrow of the core) ─▶ "+FULLRESYNC <replid> <O>" ─▶ serialize the clone
//!              on a thread ("\n" every second meanwhile) ─▶ "$<len>\r\n" <payload>
//!              (a streamd replica: "$EOF:<mark>\r\n" <snapshot as it is written> <mark>)
//!  then:       the stream from the replica's offset, read out of the backlog
//!              (with patches for a replica that is not streamd), and REPLCONF ACKs read
//!              back and run as commands
//! ```
//!
//! The payload is streamd's own snapshot for a replica that announced `capa streamd`,
//! and an RDB (version 10, what Redis 7.0 loads) for any other. It is produced off the
//! core from a clone that shares the stream nodes, as BGSAVE does; the backlog keeps
//! every byte from O meanwhile, so the replica continues exactly where the clone was.

use crate::core::client::ClientMsg;
use crate::core::mailbox::Receiver;
use crate::core::replication::{DropReason, ReplicaState};
use crate::core::{SharedCore, unix_ms};
use crate::resp::parser::RequestParser;
use crate::resp::writer::RespWriter;
use bytes::BytesMut;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Most stream bytes sent to a replica in one write.
const CHUNK: usize = 256 * 1024;

/// Serves the replica `id` on `socket` until it disconnects, is dropped (too far
/// behind, CLIENT KILL) or the server stops. `parser`/`inbuf` hold what the replica
/// sent after its PSYNC.
pub async fn serve<S>(
    socket: &mut S,
    core: &SharedCore,
    id: u64,
    parser: &mut RequestParser,
    inbuf: &mut BytesMut,
    rx: &mut Receiver,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let full = {
        let c = core.borrow();
        c.repl
            .replicas
            .get(&id)
            .is_some_and(|r| r.state == ReplicaState::WaitBgsave)
    };
    if full && full_sync(socket, core, id, rx).await.is_err() {
        return;
    }
    stream(socket, core, id, parser, inbuf, rx).await;
}

/// Waits the diskless delay, clones, serializes and sends the payload.
async fn full_sync<S>(
    socket: &mut S,
    core: &SharedCore,
    id: u64,
    rx: &mut Receiver,
) -> Result<(), ()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (delay, max) = {
        let c = core.borrow();
        (
            c.config.get_i64("repl-diskless-sync-delay").max(0) as u64,
            c.config.get_i64("repl-diskless-sync-max-replicas").max(0) as usize,
        )
    };
    let start = tokio::time::Instant::now();
    while start.elapsed() < Duration::from_secs(delay) {
        let waiting = core
            .borrow()
            .repl
            .replicas
            .values()
            .filter(|r| r.state == ReplicaState::WaitBgsave)
            .count();
        if max > 0 && waiting >= max {
            break;
        }
        // The delay gathers replicas that arrive together into one sync; when every
        // replica this server has had is here already, none is coming (a promoted
        // replica's old primary rejoining, a restarted primary's first replicas).
        if core.borrow().repl.every_known_replica_connected() {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            msg = rx.recv() => if matches!(msg, Some(ClientMsg::Close) | None) { return Err(()) },
        }
    }
    // The point in time: clone and offset in one borrow.
    let (dbs, functions, offset, replid, native, old_sync, eof, defaults, stream_db) = {
        let mut c = core.borrow_mut();
        let started = std::time::Instant::now();
        let dbs = c.dbs.clone();
        let functions = crate::scripting::library_codes(&c);
        let offset = c.repl.offset;
        c.repl.force_select();
        let replid = c.repl.replid.clone();
        let defaults = c.idmp_defaults;
        let Some(r) = c.repl.replicas.get_mut(&id) else {
            return Err(());
        };
        r.state = ReplicaState::SendBulk;
        r.sent = offset;
        let (native, old_sync, eof) = (r.native, r.old_sync, r.capa_eof);
        tracing::info!(
            replica_id = id,
            offset,
            clone_usec = started.elapsed().as_micros() as u64,
            "Starting diskless full sync ({} payload)",
            if native { "streamd snapshot" } else { "RDB" }
        );
        (
            dbs,
            functions,
            offset,
            replid,
            native,
            old_sync,
            eof,
            defaults,
            c.repl.master_db.unwrap_or(0),
        )
    };
    // The clone may name cold nodes, which the payload reads back: their segments stay
    // until it is written.
    let _reading = SegmentReader::start(core);
    if !old_sync {
        let line = format!("+FULLRESYNC {replid} {offset}\r\n");
        socket.write_all(line.as_bytes()).await.map_err(|_| ())?;
    }
    let aux = [
        ("redis-ver", "7.0.15".to_string()),
        ("redis-bits", "64".to_string()),
        ("ctime", (unix_ms() / 1000).to_string()),
        ("used-mem", "0".to_string()),
        ("repl-stream-db", stream_db.to_string()),
        ("repl-id", replid.clone()),
        ("repl-offset", offset.to_string()),
        ("aof-base", "0".to_string()),
    ];
    if native {
        return stream_payload(socket, core, id, rx, move |out| {
            let mut w = crate::persist::snapshot::SnapshotWriter::new(out, unix_ms())?;
            w.materialize_cold();
            crate::persist::snapshot::write_dataset(&mut w, &dbs, &functions)?;
            w.finish().map(|_| ())
        })
        .await;
    }
    if eof && !old_sync {
        // A Redis replica that reads the diskless form (and will ACK: not the old SYNC)
        // gets the RDB as it is produced.
        return stream_payload(socket, core, id, rx, move |out| {
            crate::rdb::file::write_to(&dbs, &aux, defaults, &mut |bytes| {
                std::io::Write::write_all(out, bytes)
            })
        })
        .await;
    }
    let job = tokio::task::spawn_blocking(move || crate::rdb::file::write(&dbs, &aux, defaults));
    tokio::pin!(job);
    let payload = loop {
        tokio::select! {
            r = &mut job => break job_result(id, r)?,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                // Keeps the replica from timing out while the payload is produced.
                socket.write_all(b"\n").await.map_err(|_| ())?;
            }
            msg = rx.recv() => if matches!(msg, Some(ClientMsg::Close) | None) { return Err(()) },
        }
    };
    let header = format!("${}\r\n", payload.len());
    socket.write_all(header.as_bytes()).await.map_err(|_| ())?;
    socket.write_all(&payload).await.map_err(|_| ())?;
    {
        let mut c = core.borrow_mut();
        c.stats.net_output_bytes += payload.len() as u64;
        c.repl.set_online(id, unix_ms());
    }
    tracing::info!(
        replica_id = id,
        bytes = payload.len(),
        "Synchronization with replica succeeded"
    );
    Ok(())
}

/// The payload job's outcome for replica `id`; a failure is logged.
fn job_result<T>(id: u64, r: Result<std::io::Result<T>, tokio::task::JoinError>) -> Result<T, ()> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            tracing::warn!(replica_id = id, error = %e, "could not produce the full sync payload");
            Err(())
        }
        Err(e) => {
            tracing::warn!(replica_id = id, error = %e, "the full sync job failed");
            Err(())
        }
    }
}

/// Chunks of a streamed snapshot in flight between the serializing thread and the
/// socket: at most this many of [`CHUNK`] bytes are held at once.
const SNAPSHOT_CHUNKS_IN_FLIGHT: usize = 8;

/// A `Write` that hands [`CHUNK`]-sized pieces to the task sending them (blocking while
/// the socket is behind); an error once that task is gone.
struct ChunkSender {
    buf: Vec<u8>,
    tx: tokio::sync::mpsc::Sender<Vec<u8>>,
}

impl ChunkSender {
    fn send_buf(&mut self) -> std::io::Result<()> {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx
            .blocking_send(chunk)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "replica gone"))
    }
}

impl std::io::Write for ChunkSender {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send_buf()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.send_buf()
    }
}

/// Sends the replica the payload as `produce` writes it (the snapshot for a streamd
/// replica, the RDB for a Redis one that announced `capa eof`), framed by Redis's
/// diskless form (`$EOF:<40-byte mark>\r\n`, the bytes, the mark): the payload is never
/// whole in memory, so a tiered stream's cold history passes through
/// [`SNAPSHOT_CHUNKS_IN_FLIGHT`] chunks of memory, not the dataset's size.
async fn stream_payload<S>(
    socket: &mut S,
    core: &SharedCore,
    id: u64,
    rx: &mut Receiver,
    produce: impl FnOnce(&mut ChunkSender) -> std::io::Result<()> + Send + 'static,
) -> Result<(), ()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (tx, mut chunks) = tokio::sync::mpsc::channel::<Vec<u8>>(SNAPSHOT_CHUNKS_IN_FLIGHT);
    let job = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let mut out = ChunkSender {
            buf: Vec::with_capacity(CHUNK),
            tx,
        };
        produce(&mut out)?;
        std::io::Write::flush(&mut out)
    });
    tokio::pin!(job);
    let mark = crate::core::replication::random_replid();
    let mut sent = 0usize;
    let mut started = false;
    loop {
        tokio::select! {
            chunk = chunks.recv() => match chunk {
                Some(chunk) => {
                    if !started {
                        started = true;
                        let header = format!("$EOF:{mark}\r\n");
                        socket.write_all(header.as_bytes()).await.map_err(|_| ())?;
                    }
                    socket.write_all(&chunk).await.map_err(|_| ())?;
                    sent += chunk.len();
                }
                // Every chunk is out: the job has finished (or failed, said below).
                None => break,
            },
            _ = tokio::time::sleep(Duration::from_secs(1)), if !started => {
                // Keeps the replica from timing out until the first bytes come.
                socket.write_all(b"\n").await.map_err(|_| ())?;
            }
            msg = rx.recv() => if matches!(msg, Some(ClientMsg::Close) | None) { return Err(()) },
        }
    }
    job_result(id, job.await)?;
    if !started {
        let header = format!("$EOF:{mark}\r\n");
        socket.write_all(header.as_bytes()).await.map_err(|_| ())?;
    }
    socket.write_all(mark.as_bytes()).await.map_err(|_| ())?;
    {
        let mut c = core.borrow_mut();
        c.stats.net_output_bytes += sent as u64;
        c.repl.set_online(id, unix_ms());
        if let Some(r) = c.repl.replicas.get_mut(&id) {
            r.online_on_ack = true;
        }
    }
    tracing::info!(
        replica_id = id,
        bytes = sent,
        "Synchronization with replica succeeded"
    );
    Ok(())
}

/// Streams the backlog to the replica and runs what it sends (REPLCONF ACK).
async fn stream<S>(
    socket: &mut S,
    core: &SharedCore,
    id: u64,
    parser: &mut RequestParser,
    inbuf: &mut BytesMut,
    rx: &mut Receiver,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let wake = core.borrow().repl.wake.clone();
    let mut ping = tokio::time::interval(Duration::from_secs(1));
    loop {
        let notified = wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let chunk = {
            let mut c = core.borrow_mut();
            // New writes to send: while clients use WAIT, an ACK is asked for behind them.
            if c.repl
                .replicas
                .get(&id)
                .is_some_and(|r| r.sent < c.repl.offset && !r.online_on_ack)
            {
                c.ask_acks_for_waiters();
            }
            let offset = c.repl.offset;
            let (start, end) = match &c.repl.backlog {
                Some(b) => (b.start(), b.start() + b.histlen()),
                None => (offset, offset),
            };
            let Some(r) = c.repl.replicas.get(&id) else {
                return;
            };
            if r.drop == Some(DropReason::Timeout) {
                // Its connection closes; the warning was logged when it timed out.
                return;
            }
            if r.drop.is_some() || r.sent < start {
                tracing::warn!(
                    replica_id = id,
                    "Client scheduled to be closed ASAP for overcoming of output buffer limits."
                );
                c.stats.client_output_buffer_limit_disconnections += 1;
                return;
            }
            let (sent, native) = (r.sent, r.native);
            if sent < end && !r.online_on_ack {
                let bytes = c
                    .repl
                    .backlog
                    .as_ref()
                    .map(|b| b.read(sent, CHUNK, native))
                    .unwrap_or_default();
                if let Some(r) = c.repl.replicas.get_mut(&id) {
                    r.sent += bytes.len() as u64;
                }
                c.stats.net_output_bytes += bytes.len() as u64;
                bytes
            } else {
                Vec::new()
            }
        };
        if !chunk.is_empty() {
            if socket.write_all(&chunk).await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = ping.tick() => {}
            read = socket.read_buf(inbuf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    core.borrow_mut().stats.net_input_bytes += n as u64;
                    if !run_replica_commands(core, id, parser, inbuf) {
                        return;
                    }
                }
            },
            msg = rx.recv() => match msg {
                Some(ClientMsg::Close) | None => return,
                _ => {}
            },
        }
    }
}

/// Runs the commands a replica sent (REPLCONF ACK, keepalive newlines); their replies
/// are dropped, as Redis sends a replica none. False on a protocol error.
fn run_replica_commands(
    core: &SharedCore,
    id: u64,
    parser: &mut RequestParser,
    inbuf: &mut BytesMut,
) -> bool {
    let mut c = core.borrow_mut();
    let Some(mut client) = c.clients.remove(&id) else {
        return false;
    };
    c.begin_batch();
    let mut out = RespWriter::default();
    let ok = loop {
        match parser.parse(inbuf) {
            Ok(Some(argv)) => {
                c.execute(&mut client, argv, &mut out);
                out.buf.clear();
            }
            Ok(None) => break true,
            Err(_) => break false,
        }
    };
    c.clients.insert(id, client);
    ok
}

/// Keeps the tier's segments from being unlinked while a full sync's payload is
/// produced from a clone (see `core/tier.rs`, "Garbage").
struct SegmentReader {
    core: SharedCore,
}

impl SegmentReader {
    fn start(core: &SharedCore) -> SegmentReader {
        core.borrow_mut().tier.reader_started();
        SegmentReader { core: core.clone() }
    }
}

impl Drop for SegmentReader {
    fn drop(&mut self) {
        if let Ok(mut c) = self.core.try_borrow_mut() {
            c.tier.reader_finished();
        }
    }
}
