//! One client connection: read → parse the batch → execute → write, in a loop.

use super::SharedCore;
use super::client::{Client, ClientMsg};
use crate::core::{Outcome, unix_ms};
use crate::resp::parser::{ParserLimits, RequestParser};
use crate::resp::writer::RespWriter;
use bytes::BytesMut;
use std::net::SocketAddr;
use std::rc::Rc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{Notify, mpsc};

/// Read buffer size per read call (Redis's PROTO_IOBUF_LEN).
const PROTO_IOBUF_LEN: usize = 16 * 1024;

/// What the batch processing asks the connection loop to do next.
enum Next {
    /// Keep reading.
    Read,
    /// Wait for the core to serve the blocked command.
    Blocked,
    /// Write what is pending, then close.
    Close,
}

/// Serves one client until it disconnects, is killed, or the server stops.
pub async fn serve(mut socket: TcpStream, peer: SocketAddr, core: SharedCore, stop: Rc<Notify>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let laddr = socket
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
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
            Some((c.add_client(client), parser_limits(&c)))
        }
    };
    let Some((id, limits)) = admitted else {
        let _ = socket
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return;
    };
    let mut parser = RequestParser::new(limits);
    let mut inbuf = BytesMut::with_capacity(PROTO_IOBUF_LEN);
    let mut out = RespWriter::default();
    let mut blocked = false;
    loop {
        if !blocked {
            let woken_before = core.borrow().stats.unblocked_served;
            let next = process_batch(&core, id, &mut parser, &mut inbuf, &mut out);
            if core.borrow().stats.unblocked_served != woken_before {
                // This batch served blocked readers: let their replies go out before
                // this one, as Redis writes the clients it unblocked first (they are
                // queued at the head of its pending-write list).
                tokio::task::yield_now().await;
            }
            if !out.buf.is_empty() {
                // The replies go out only once the effects they report are as durable
                // as appendfsync promises (group commit with the other connections).
                if crate::persist::commit(&core).await.is_err() {
                    break;
                }
                core.borrow_mut().stats.net_output_bytes += out.buf.len() as u64;
                if socket.write_all(&out.buf).await.is_err() {
                    break;
                }
                out.buf.clear();
                if out.buf.capacity() > 64 * 1024 {
                    out.buf.shrink_to(PROTO_IOBUF_LEN);
                }
            }
            if core.borrow().shutdown.is_some() {
                stop.notify_one();
            }
            match next {
                Next::Close => break,
                Next::Blocked => blocked = true,
                Next::Read => {}
            }
        }
        if inbuf.capacity() - inbuf.len() < PROTO_IOBUF_LEN / 2 {
            inbuf.reserve(PROTO_IOBUF_LEN);
        }
        tokio::select! {
            read = socket.read_buf(&mut inbuf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => core.borrow_mut().stats.net_input_bytes += n as u64,
            },
            msg = rx.recv() => match msg {
                Some(ClientMsg::Write(bytes)) => {
                    if socket.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                Some(ClientMsg::Unblocked(bytes)) => {
                    blocked = false;
                    // Served by another client's write: wait for its effects too.
                    if crate::persist::commit(&core).await.is_err() {
                        break;
                    }
                    if socket.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                Some(ClientMsg::Close) | None => break,
            },
        }
    }
    core.borrow_mut().remove_client(id);
}

fn parser_limits(core: &crate::core::Core) -> ParserLimits {
    ParserLimits {
        proto_max_bulk_len: core.config.get_i64("proto-max-bulk-len").max(0) as u64,
        client_query_buffer_limit: core.config.get_i64("client-query-buffer-limit").max(0) as usize,
    }
}

/// Parses and executes every complete command in `inbuf`, appending replies to `out`.
fn process_batch(
    core: &SharedCore,
    id: u64,
    parser: &mut RequestParser,
    inbuf: &mut BytesMut,
    out: &mut RespWriter,
) -> Next {
    let mut core = core.borrow_mut();
    let Some(mut client) = core.clients.remove(&id) else {
        return Next::Close;
    };
    parser.set_limits(parser_limits(&core));
    core.begin_batch();
    let mut next = Next::Read;
    loop {
        parser.set_authenticated(!core.auth_required(&client));
        match parser.parse(inbuf) {
            Ok(Some(argv)) => {
                let outcome = core.execute(&mut client, argv, out);
                if !core.ready_keys.is_empty() {
                    core.handle_ready_keys();
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
            Err(e) => {
                out.proto = client.proto;
                out.error_text(format!("ERR {}", e.0).as_bytes());
                tracing::debug!(client_id = id, error = e.0, "protocol error, closing");
                next = Next::Close;
                break;
            }
        }
    }
    core.clients.insert(id, client);
    next
}
