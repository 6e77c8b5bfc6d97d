//! A plain TCP connection shared by its task and the core's flusher
//! (`core/direct_write.rs`): the task reads and writes it as any stream, and while the
//! task waits idle the flusher writes Pub/Sub messages into it without waking the task.
//!
//! Both go through tokio's readiness-aware `try_read_buf`/`try_write` on the same
//! `TcpStream` (behind an `Rc`: everything runs on one thread), so a `WouldBlock` from
//! either clears the readiness the other waits on, as tokio's own stream does.

use crate::core::direct_write::Sink;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The task's end: an `AsyncRead + AsyncWrite` over the shared stream.
pub struct SharedTcp(Rc<TcpStream>);

/// The flusher's end.
struct TcpSink(Rc<TcpStream>);

impl SharedTcp {
    /// Wraps `stream`; the second value is the flusher's sink for it.
    pub fn new(stream: TcpStream) -> (SharedTcp, Rc<dyn Sink>) {
        let stream = Rc::new(stream);
        (SharedTcp(stream.clone()), Rc::new(TcpSink(stream)))
    }
}

impl Sink for TcpSink {
    /// One `send` on the socket, without tokio's readiness bookkeeping: the flusher
    /// never waits for readiness (a `WouldBlock` hands the rest to the task, whose own
    /// write then finds the socket full, clears the readiness and waits as usual), and
    /// skipping it spares a cache miss per subscriber in a fan-out.
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        socket2::SockRef::from(&*self.0).send(buf)
    }

    fn prefetch(&self) {
        crate::util::prefetch(Rc::as_ptr(&self.0));
    }
}

impl AsyncRead for SharedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            // A read that returns less than it asked for has emptied the socket's queue:
            // the readiness is cleared right away (through `try_io`'s WouldBlock, which
            // clears it only if no new event came in since it was sampled), so the next
            // poll waits for new data instead of asking the kernel once more only to hear
            // EAGAIN: one `recvfrom` per request, as Redis reads, instead of two.
            let space = buf.remaining();
            let mut got = None;
            let read = self.0.try_io(tokio::io::Interest::READABLE, || {
                let n = self.0.try_read_buf(buf)?;
                got = Some(n);
                if n > 0 && n < space {
                    Err(io::ErrorKind::WouldBlock.into())
                } else {
                    Ok(())
                }
            });
            match (read, got) {
                (_, Some(_)) | (Ok(()), None) => return Poll::Ready(Ok(())),
                (Err(e), None) if e.kind() == io::ErrorKind::WouldBlock => continue,
                (Err(e), None) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for SharedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(buf) {
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(socket2::SockRef::from(&*self.0).shutdown(std::net::Shutdown::Write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Runs `test` on a one-thread runtime with a listener bound to a free loopback port.
    fn on_loopback<F, Fut>(test: F)
    where
        F: FnOnce(tokio::net::TcpListener, std::net::SocketAddr) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            test(listener, addr).await;
        });
    }

    /// Short reads clear the read readiness without a WouldBlock read: data that arrives
    /// afterwards must still wake the reader, whether it comes in the same instant (a
    /// burst split across reads) or after the reader went back to waiting.
    #[test]
    fn short_reads_never_miss_data_that_arrives_after_them() {
        on_loopback(|listener, addr| async move {
            let client = tokio::spawn(async move {
                let mut c = TcpStream::connect(addr).await.expect("connect");
                c.set_nodelay(true).expect("nodelay");
                let mut echo = [0u8; 1];
                for round in 0u32..2000 {
                    // Request-response (the reader waits between requests), then every
                    // 16th round a burst written in pieces while the reader is reading.
                    c.write_all(&[b'a' + (round % 26) as u8])
                        .await
                        .expect("write");
                    c.read_exact(&mut echo).await.expect("echo");
                    if round % 16 == 0 {
                        for piece in 0..8u8 {
                            c.write_all(&[b'0' + piece; 3]).await.expect("burst");
                        }
                        c.read_exact(&mut echo).await.expect("burst echo");
                    }
                }
            });
            let (accepted, _) = listener.accept().await.expect("accept");
            accepted.set_nodelay(true).expect("nodelay");
            let (mut task, _sink) = SharedTcp::new(accepted);
            let mut buf = [0u8; 64];
            for round in 0u32..2000 {
                let wait = std::time::Duration::from_secs(10);
                let n = tokio::time::timeout(wait, task.read(&mut buf))
                    .await
                    .expect("the request wakes the reader")
                    .expect("read");
                assert_eq!(&buf[..n], &[b'a' + (round % 26) as u8]);
                task.write_all(b"k").await.expect("reply");
                if round % 16 == 0 {
                    let mut burst = 0;
                    while burst < 24 {
                        burst += tokio::time::timeout(wait, task.read(&mut buf))
                            .await
                            .expect("every piece of the burst wakes the reader")
                            .expect("read");
                    }
                    assert_eq!(burst, 24);
                    task.write_all(b"k").await.expect("reply");
                }
            }
            client.await.expect("client");
        });
    }

    /// A client that sends a request and closes at once: the short read of the request
    /// clears the readiness, and the end of the stream must still be seen (tokio never
    /// clears a read-closed readiness), whether the FIN came with the data or after it.
    #[test]
    fn the_end_of_the_stream_is_seen_after_a_short_read() {
        on_loopback(|listener, addr| async move {
            for pause in [false, true] {
                let client = tokio::spawn(async move {
                    let mut c = TcpStream::connect(addr).await.expect("connect");
                    c.write_all(b"PING\r\n").await.expect("write");
                    if pause {
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                    c.shutdown().await.expect("shutdown");
                    c
                });
                let (accepted, _) = listener.accept().await.expect("accept");
                let (mut task, _sink) = SharedTcp::new(accepted);
                let mut got = Vec::new();
                let mut buf = [0u8; 64];
                loop {
                    let wait = std::time::Duration::from_secs(10);
                    let n = tokio::time::timeout(wait, task.read(&mut buf))
                        .await
                        .expect("data, then the end of the stream")
                        .expect("read");
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                assert_eq!(got, b"PING\r\n");
                drop(client.await.expect("client"));
            }
        });
    }

    #[test]
    fn the_task_and_the_sink_write_the_same_stream_in_order() {
        on_loopback(|listener, addr| async move {
            let mut client = TcpStream::connect(addr).await.expect("connect");
            let (accepted, _) = listener.accept().await.expect("accept");
            let (mut task, sink) = SharedTcp::new(accepted);
            task.write_all(b"reply;").await.expect("write");
            assert_eq!(sink.try_write(b"message;").expect("try_write"), 8);
            client.write_all(b"ping").await.expect("client write");
            let mut got = [0u8; 4];
            task.read_exact(&mut got).await.expect("read");
            assert_eq!(&got, b"ping");
            task.shutdown().await.expect("shutdown");
            drop(task);
            drop(sink);
            let mut all = Vec::new();
            client.read_to_end(&mut all).await.expect("read to end");
            assert_eq!(all, b"reply;message;");
        });
    }
}
