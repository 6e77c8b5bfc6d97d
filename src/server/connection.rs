//! One client connection: read → parse the batch → execute → write, in a loop.
//!
//! The same code serves plain TCP and TLS clients: [`serve`] is generic over the
//! stream. Limits enforced here (see `core/limits.rs`): `maxclients` at admission, the idle
//! `timeout` (never for blocked, MONITOR or subscribed clients), the output buffer limit after every
//! command of a batch and while a write is stuck, and the query buffer limit (the parser;
//! the connection is closed without a reply, as Redis does).

use super::idle_poll::IdlePoll;
use super::lookahead::Lookahead;
use crate::core::client::{Client, ClientMsg};
use crate::core::limits::OutputState;
use crate::core::{Outcome, SharedCore, unix_ms};
use crate::resp::Argv;
use crate::resp::parser::{ParserLimits, ProtocolError, RequestParser};
use crate::resp::writer::RespWriter;
use bytes::BytesMut;
use std::net::SocketAddr;
use std::rc::Rc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Read buffer size per read call (Redis's PROTO_IOBUF_LEN).
const PROTO_IOBUF_LEN: usize = 16 * 1024;

/// Most bytes of queued messages gathered into one socket write.
const GATHER_MAX: usize = 256 * 1024;

/// A message's bytes, owned or shared with other clients' mailboxes.
enum Chunk {
    Owned(Vec<u8>),
    Shared(bytes::Bytes),
}

impl std::ops::Deref for Chunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Chunk::Owned(v) => v,
            Chunk::Shared(b) => b,
        }
    }
}

/// What the batch processing asks the connection loop to do next.
enum Next {
    /// Keep reading.
    Read,
    /// Wait for the core to serve the blocked command.
    Blocked,
    /// Write what is pending, then close.
    Close,
    /// Close at once, dropping what is pending (output or query buffer limit).
    Kill,
    /// The command `Argv` needs cold stream nodes: wait for their read, then run it
    /// (before anything after it in the input).
    Parked(Argv, crate::core::tier::Parked),
}

/// Why a write did not complete.
enum WriteEnd {
    /// The peer is gone (or the write failed).
    Failed,
    /// The client went over its output buffer limit while the write was stuck.
    Killed,
}

/// Largest piece of a reply written before the connection lets the others run.
const WRITE_SLICE: usize = 64 * 1024;

/// Writes `bytes`, giving up when the client is killed for its output meanwhile (a
/// peer that stopped reading never lets `write_all` finish).
///
/// A large reply (an XRANGE page of a few hundred KB) goes out in [`WRITE_SLICE`]
/// pieces with a yield between them: copying it into the socket holds the thread
/// ~60-90 µs here, and another client's command that arrived meanwhile then runs after
/// the first piece instead of after the whole reply (Redis writes at most 64 KB per
/// client per turn of its event loop, NET_MAX_WRITES_PER_EVENT, for the same reason).
async fn write_out<S: AsyncWrite + Unpin>(
    socket: &mut S,
    bytes: &[u8],
    output: &OutputState,
) -> Result<(), WriteEnd> {
    let write = async {
        let mut pieces = bytes.chunks(WRITE_SLICE);
        while let Some(piece) = pieces.next() {
            socket.write_all(piece).await?;
            if pieces.len() > 0 {
                tokio::task::yield_now().await;
            }
        }
        Ok::<(), std::io::Error>(())
    };
    tokio::select! {
        r = write => r.map_err(|_| WriteEnd::Failed),
        _ = output.wait_killed() => Err(WriteEnd::Killed),
    }
}

/// Serves one client until it disconnects, is killed, times out, or the server stops.
/// `socket` is a plain TCP stream or a TLS stream over one; `laddr` is the local
/// address it was accepted on.
pub async fn serve<S>(
    mut socket: S,
    peer: SocketAddr,
    laddr: String,
    core: SharedCore,
    stop: Rc<Notify>,
    idle_poll: Rc<IdlePoll>,
    sink: Option<Rc<dyn crate::core::direct_write::Sink>>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (tx, mut rx) = crate::core::mailbox::mailbox();
    let refused = {
        let c = core.borrow();
        super::protected::refuses(
            c.config.get_bool("protected-mode"),
            c.acl.default_user().borrow().nopass,
            peer.ip(),
        )
    };
    if refused {
        core.borrow_mut().stats.rejected_connections += 1;
        tracing::warn!(addr = %peer, "protected mode: refused a non-loopback client");
        let _ = socket.write_all(super::protected::DENIED).await;
        return;
    }
    let admitted = {
        let mut c = core.borrow_mut();
        let maxclients = c.config.get_i64("maxclients").max(1) as usize;
        if c.clients.len() >= maxclients {
            c.stats.rejected_connections += 1;
            None
        } else {
            let authenticated = c.acl.new_client_authenticated();
            let mut client = Client::new(0, peer.to_string(), laddr, authenticated, unix_ms(), tx);
            client.user = Some(c.acl.default_user());
            let output = client.output.clone();
            Some((c.add_client(client), parser_limits(&c), output))
        }
    };
    let Some((id, limits, output)) = admitted else {
        let _ = socket
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return;
    };
    if let Some(sink) = sink {
        output.direct.set_sink(sink);
    }
    let mut parser = RequestParser::new(limits);
    // Commands parsed but not yet run (server/lookahead.rs).
    let mut lookahead = Lookahead::default();
    let mut inbuf = BytesMut::with_capacity(PROTO_IOBUF_LEN);
    let mut out = RespWriter::default();
    // Where each reply of the current batch ends (a held batch that times out answers
    // an error per reply, replication/sync.rs).
    let mut marks: Vec<usize> = Vec::new();
    let mut blocked = false;
    // Bytes arrived (or the client was unblocked) since the last batch: only then is
    // there anything to parse. A subscriber woken for its messages skips the batch.
    let mut new_input = true;
    let mut last_activity = Instant::now();
    loop {
        if !blocked && new_input {
            new_input = false;
            // Messages queued before these commands ran (Pub/Sub messages, MONITOR
            // lines) come before their replies, as Redis appends both to one buffer.
            while let Some(msg) = rx.try_recv_write() {
                let bytes: &[u8] = match &msg {
                    ClientMsg::Write(b) => b,
                    ClientMsg::Shared(b) => b,
                    _ => &[],
                };
                out.buf.extend_from_slice(bytes);
                output.remove_queued(bytes.len());
            }
            let (woken_before, data_before, delivered_before) = {
                let c = core.borrow();
                (
                    c.stats.unblocked_served,
                    c.data_calls,
                    c.stats.pubsub_deliveries,
                )
            };
            let batch_from = out.buf.len();
            marks.clear();
            let next = process_batch(
                &core,
                &idle_poll,
                id,
                BatchInput {
                    parser: &mut parser,
                    lookahead: &mut lookahead,
                    inbuf: &mut inbuf,
                },
                BatchReplies {
                    out: &mut out,
                    marks: &mut marks,
                },
                &output,
            );
            let (shows_data, published) = {
                let c = core.borrow();
                (
                    c.data_calls != data_before,
                    c.stats.pubsub_deliveries != delivered_before,
                )
            };
            if matches!(next, Next::Kill) {
                break;
            }
            if core.borrow().stats.unblocked_served != woken_before {
                // This batch served blocked readers: let their replies go out before
                // this one, as Redis writes the clients it unblocked first (they are
                // queued at the head of its pending-write list).
                tokio::task::yield_now().await;
            }
            if !out.buf.is_empty() {
                // Let the other ready connections run their commands first, so that the
                // replies of one turn of the event loop go out together, as Redis writes
                // its pending clients in `beforeSleep`. Writing each reply as soon as it
                // is ready spreads the sends out, and each one then wakes a client that
                // had gone back to sleep: at -P 1 with a 20-command script, a third of
                // the server's time went to those wake-ups (EVALSHA 0.67× Redis; 1.07×
                // with this yield; plain commands unchanged or better).
                // A publisher's replies go first, before its subscribers' messages, as
                // Redis writes the client that became pending last (the publisher, after
                // its subscribers) first: the publisher sends its next commands while the
                // messages go out.
                if !published {
                    tokio::task::yield_now().await;
                }
                // The replies go out only once the effects they report are as durable
                // as appendfsync promises (group commit with the other connections).
                if crate::persist::commit(&core).await.is_err() {
                    break;
                }
                // ... and, with a sync set, once its members acknowledged them.
                if !crate::replication::sync::hold(&core, shows_data).await {
                    crate::replication::sync::fail_replies(&mut out.buf, batch_from, &marks);
                }
                core.borrow_mut().stats.net_output_bytes += out.buf.len() as u64;
                output.count_written(out.buf.len());
                if write_out(&mut socket, &out.buf, &output).await.is_err() {
                    break;
                }
                last_activity = Instant::now();
                out.buf.clear();
                if out.buf.capacity() > 64 * 1024 {
                    out.buf.shrink_to(PROTO_IOBUF_LEN);
                }
            }
            if core.borrow().shutdown.is_some() {
                stop.notify_one();
            }
            // PSYNC/SYNC accepted: from now on this connection carries the stream.
            if core
                .borrow()
                .clients
                .get(&id)
                .is_some_and(|c| c.repl == crate::core::client::ClientRepl::Replica)
            {
                crate::replication::primary::serve(
                    &mut socket,
                    &core,
                    id,
                    &mut parser,
                    &mut inbuf,
                    &mut rx,
                )
                .await;
                break;
            }
            match next {
                Next::Close | Next::Kill => break,
                Next::Blocked => blocked = true,
                Next::Read => {}
                Next::Parked(argv, parked) => {
                    // The replies before it went out above; the core serves others
                    // while the nodes are read.
                    let read = parked.wait().await;
                    let mut c = core.borrow_mut();
                    c.unpark(read);
                    if let Some(client) = c.clients.get_mut(&id) {
                        client.resume = Some(argv);
                    }
                    new_input = true;
                    continue;
                }
            }
        }
        if inbuf.capacity() - inbuf.len() < PROTO_IOBUF_LEN / 2 {
            inbuf.reserve(PROTO_IOBUF_LEN);
        }
        let idle_deadline = idle_deadline(&core, id, blocked, last_activity);
        // While it waits with nothing queued, the core writes its Pub/Sub messages
        // itself (`core/direct_write.rs`).
        if rx.is_empty() {
            output.direct.open();
        }
        let event = tokio::select! {
            read = socket.read_buf(&mut inbuf) => Event::Read(read),
            msg = rx.recv() => Event::Message(msg),
            _ = output.wait_killed() => Event::Killed,
            _ = sleep_until(idle_deadline) => Event::Idle,
        };
        // Awake: messages still pending go out before anything else.
        let early = output.direct.close();
        if !early.is_empty() && !output.killed() {
            let written = write_out(&mut socket, &early, &output).await;
            output.remove_queued(early.len());
            core.borrow_mut().stats.net_output_bytes += early.len() as u64;
            output.count_written(early.len());
            if written.is_err() {
                break;
            }
        }
        match event {
            Event::Read(read) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    new_input = true;
                    last_activity = Instant::now();
                    core.borrow_mut().stats.net_input_bytes += n as u64;
                    output.count_read(n);
                }
            },
            Event::Message(msg) => {
                let (bytes, unblocked) = match msg {
                    Some(ClientMsg::Write(bytes)) => (Chunk::Owned(bytes), false),
                    Some(ClientMsg::Shared(bytes)) => (Chunk::Shared(bytes), false),
                    Some(ClientMsg::Unblocked(bytes)) => (Chunk::Owned(bytes), true),
                    Some(ClientMsg::Close) | None => break,
                    // The deadline is worked out again from this connection's own
                    // activity before it waits: past, it closes; else it waits on.
                    Some(ClientMsg::IdleCheck) => continue,
                };
                if unblocked {
                    blocked = false;
                    new_input = true;
                    // Served by another client's write: wait for its effects too.
                    if crate::persist::commit(&core).await.is_err() {
                        break;
                    }
                }
                // A reader served by another client's write shows that write: it waits
                // for the sync set like the writer's own reply.
                let bytes = if unblocked && !crate::replication::sync::hold(&core, true).await {
                    Chunk::Owned(crate::replication::sync::TIMED_OUT.to_vec())
                } else {
                    bytes
                };
                // Writes queued behind this one (a subscriber's messages) go out in the
                // same socket write.
                let mut gathered = Vec::new();
                let bytes: &[u8] = match rx.try_recv_write() {
                    None => &bytes,
                    Some(next) => {
                        gathered.extend_from_slice(&bytes);
                        let mut next = Some(next);
                        while let Some(m) = next {
                            match &m {
                                ClientMsg::Write(b) => gathered.extend_from_slice(b),
                                ClientMsg::Shared(b) => gathered.extend_from_slice(b),
                                _ => {}
                            }
                            next = if gathered.len() < GATHER_MAX {
                                rx.try_recv_write()
                            } else {
                                None
                            };
                        }
                        &gathered
                    }
                };
                let written = write_out(&mut socket, bytes, &output).await;
                output.remove_queued(bytes.len());
                core.borrow_mut().stats.net_output_bytes += bytes.len() as u64;
                output.count_written(bytes.len());
                if written.is_err() {
                    break;
                }
                last_activity = Instant::now();
            }
            Event::Killed => break,
            Event::Idle => {
                tracing::debug!(client_id = id, "Closing idle client");
                break;
            }
        }
    }
    if output.killed() {
        tracing::warn!(
            client_id = id,
            "Client scheduled to be closed ASAP for overcoming of output buffer limits."
        );
        core.borrow_mut()
            .stats
            .client_output_buffer_limit_disconnections += 1;
    }
    core.borrow_mut().remove_client(id);
}

/// When an idle client must be closed: `timeout` after its last activity, unless it is
/// blocked, a MONITOR or a subscriber (Redis's `clientsCronHandleTimeout` spares all three).
fn idle_deadline(core: &SharedCore, id: u64, blocked: bool, last: Instant) -> Option<Instant> {
    let core = core.borrow();
    let timeout = core.limits.timeout?;
    if blocked
        || core
            .clients
            .get(&id)
            .is_some_and(|c| c.monitor || c.in_pubsub())
    {
        return None;
    }
    Some(last + timeout)
}

/// What woke a waiting connection.
enum Event {
    /// Its socket had bytes (or closed).
    Read(std::io::Result<usize>),
    /// Its mailbox had a message.
    Message(Option<ClientMsg>),
    /// It went over its output limit.
    Killed,
    /// It was idle past `timeout`.
    Idle,
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The parser's limits as the config sets them now (cached by the core, refreshed on
/// CONFIG SET).
fn parser_limits(core: &crate::core::Core) -> ParserLimits {
    core.limits.parser
}

/// Where a batch takes its commands from: the bytes read, the parser (holding a partial
/// request), and the commands parsed ahead of running them.
struct BatchInput<'a> {
    parser: &'a mut RequestParser,
    lookahead: &'a mut Lookahead,
    inbuf: &'a mut BytesMut,
}

/// Where a batch writes its replies: the buffer, and the end of each reply in it.
struct BatchReplies<'a> {
    out: &'a mut RespWriter,
    marks: &'a mut Vec<usize>,
}

/// Parses (through the look-ahead, `server/lookahead.rs`) and executes every complete
/// command in `inbuf`, appending replies to `out`;
/// stops early when the replies (plus what is queued) go over the output buffer limit.
fn process_batch(
    core: &SharedCore,
    idle_poll: &IdlePoll,
    id: u64,
    input: BatchInput<'_>,
    replies: BatchReplies<'_>,
    output: &OutputState,
) -> Next {
    let BatchInput {
        parser,
        lookahead,
        inbuf,
    } = input;
    let BatchReplies { out, marks } = replies;
    let mut core = core.borrow_mut();
    idle_poll.set_window(core.limits.idle_poll);
    idle_poll.note_activity();
    let Some(mut client) = core.clients.remove(&id) else {
        return Next::Close;
    };
    parser.set_limits(parser_limits(&core));
    core.begin_batch();
    // Out of the table for the batch: Pub/Sub messages for it wait in the core.
    core.detach(&client);
    let mut next = Next::Read;
    let mut batch_cmds = 0u64;
    client.query_buf.len = inbuf.len();
    client.query_buf.free = inbuf.capacity() - inbuf.len();
    loop {
        let resumed = client.resume.take();
        let was_resumed = resumed.is_some();
        let parsed = match resumed {
            Some(argv) => Ok(Some(argv)),
            None => match lookahead.next(&mut core, &client, parser, inbuf) {
                Ok(Some((argv, bytes))) => {
                    // The request's bytes, over however many reads it came in (SLOT-STATS).
                    client.cmd_input_bytes += bytes;
                    Ok(Some(argv))
                }
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            },
        };
        match parsed {
            Ok(Some(argv)) => {
                // A command that needs cold stream nodes waits for them off the core
                // (once: run again, it reads whatever is still cold synchronously).
                if !was_resumed
                    && client.multi.is_none()
                    && let Some(needs) = core.cold_needs(client.db, &argv)
                    && let Some(parked) = core.park(needs)
                {
                    next = Next::Parked(argv, parked);
                    break;
                }
                batch_cmds += 1;
                client.query_buf.argv_mem = argv.iter().map(|a| a.len()).sum();
                let outcome = core.execute(&mut client, argv, out);
                client.query_buf.argv_mem = 0;
                // A blocked command keeps its request's bytes until it is served.
                if outcome != Outcome::Blocked {
                    client.cmd_input_bytes = 0;
                }
                if !core.ready_keys.is_empty() {
                    core.handle_ready_keys();
                    core.flush_pushes(id, out);
                }
                marks.push(out.buf.len());
                let pending = out.buf.len() + output.queued();
                if output.check(core.output_limit(&client), pending) {
                    out.buf.clear();
                    next = Next::Kill;
                    break;
                }
                if client.close_after_reply {
                    next = Next::Close;
                    break;
                }
                if outcome == Outcome::Blocked {
                    next = Next::Blocked;
                    break;
                }
                if core.shutdown.is_some() {
                    break;
                }
            }
            Ok(None) => break,
            Err(ProtocolError::QUERY_BUFFER_LIMIT) => {
                // Redis closes such a client without a reply.
                tracing::warn!(
                    client_id = id,
                    "Closing client that reached max query buffer length"
                );
                core.stats.client_query_buffer_limit_disconnections += 1;
                next = Next::Kill;
                break;
            }
            Err(e) => {
                out.proto = client.proto;
                out.error_text(format!("ERR {}", e.0).as_bytes());
                tracing::debug!(client_id = id, error = e.0, "protocol error, closing");
                next = Next::Close;
                break;
            }
        }
    }
    client.query_buf.len = inbuf.len();
    client.query_buf.free = inbuf.capacity() - inbuf.len();
    client.query_buf.argv_mem = parser.partial_argv_bytes() + lookahead.argv_bytes();
    if batch_cmds > 0 {
        // CLIENT LIST `avg-pipeline-len-sum` / `avg-pipeline-len-cnt`.
        client.pipeline_sum += batch_cmds;
        client.pipeline_batches += 1;
    }
    core.attach(id, out);
    core.clients.insert(id, client);
    next
}
