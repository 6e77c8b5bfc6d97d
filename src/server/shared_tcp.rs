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
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
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
            match self.0.try_read_buf(buf) {
                Ok(_) => return Poll::Ready(Ok(())),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
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

    #[test]
    fn the_task_and_the_sink_write_the_same_stream_in_order() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
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
