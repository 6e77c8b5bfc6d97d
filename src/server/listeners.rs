//! The sockets clients connect to: one listener per `bind` address on `port` (plain) and
//! on `tls-port` (TLS), replaceable at run time (CONFIG SET `bind`, `port`, `tls-port` and
//! the TLS files), as Redis's `changeBindAddr` / `changeListenPort` do.
//!
//! The accept loop never holds the set across an await: [`Accept`] borrows it only inside
//! `poll`, so a command running in a connection task can swap the listeners (closing the
//! old sockets at once, before binding the new ones, so the same port can be taken again)
//! and wake the loop to poll the new ones.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// Linux's "address family not supported" (an IPv6 address on a host without IPv6),
/// which Redis skips.
const EAFNOSUPPORT: i32 = 97;

/// Listeners on every address of a `bind` list for one port.
#[derive(Default)]
pub struct ListenerGroup {
    /// One per address that could be bound.
    listeners: Vec<TcpListener>,
}

impl ListenerGroup {
    /// Binds `port` on every address of `bind` (Redis's `listenToPort`): an address
    /// prefixed with `-` is skipped when it is not available on this host, and so is an
    /// address family the host lacks; any other failure fails the whole group (the
    /// sockets already bound are closed). Port 0 or an empty list binds nothing.
    pub fn bind(bind: &[&str], port: u16, backlog: i64) -> io::Result<Self> {
        let mut listeners = Vec::new();
        if port == 0 {
            return Ok(Self { listeners });
        }
        for entry in bind {
            let optional = entry.starts_with('-');
            // Redis's wildcards: `*` is every IPv4 address, `::*` every IPv6 one.
            let addr = match entry.trim_start_matches('-') {
                "*" => "0.0.0.0",
                "::*" => "::",
                a => a,
            };
            match super::listen(addr, port, backlog) {
                Ok(l) => listeners.push(l),
                Err(e) => {
                    tracing::warn!(
                        "Warning: Could not create server TCP listening socket {addr}:{port}: {e}"
                    );
                    let skippable = e.raw_os_error() == Some(EAFNOSUPPORT)
                        || (optional && e.kind() == io::ErrorKind::AddrNotAvailable);
                    if !skippable {
                        return Err(e);
                    }
                }
            }
        }
        Ok(Self { listeners })
    }

    /// The port the first listener is bound to, if any.
    pub fn port(&self) -> Option<u16> {
        self.listeners
            .first()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port())
    }

    /// True when nothing is bound.
    pub fn is_empty(&self) -> bool {
        self.listeners.is_empty()
    }

    /// Polls every listener once, starting after the one that accepted last time.
    fn poll_accept(
        &self,
        cx: &mut Context<'_>,
        start: &mut usize,
    ) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let n = self.listeners.len();
        for i in 0..n {
            let at = (*start + i) % n;
            if let Poll::Ready(r) = self.listeners[at].poll_accept(cx) {
                *start = at + 1;
                return Poll::Ready(r);
            }
        }
        Poll::Pending
    }
}

/// The plain and TLS listeners and the TLS acceptor, shared between the accept loop and
/// the CONFIG SET hook that replaces them.
#[derive(Default)]
pub struct ListenerSet {
    /// `port` on every `bind` address.
    pub plain: ListenerGroup,
    /// `tls-port` on every `bind` address.
    pub tls: ListenerGroup,
    /// The TLS configuration new TLS connections are handshaken with.
    pub acceptor: Option<TlsAcceptor>,
    /// The accept loop's waker, to re-poll after a replacement.
    waker: Option<Waker>,
    /// Where the next poll starts (fairness between listeners).
    next: usize,
}

/// A [`ListenerSet`] shared on the server's thread.
pub type SharedListeners = Rc<RefCell<ListenerSet>>;

impl ListenerSet {
    /// Replaces the plain listeners and wakes the accept loop.
    pub fn set_plain(&mut self, group: ListenerGroup) {
        self.plain = group;
        self.wake();
    }

    /// Replaces the TLS listeners and acceptor and wakes the accept loop.
    pub fn set_tls(&mut self, group: ListenerGroup, acceptor: Option<TlsAcceptor>) {
        self.tls = group;
        self.acceptor = acceptor;
        self.wake();
    }

    /// Closes the plain listeners now, returning nothing to restore: Redis closes the old
    /// sockets before binding the new ones, so the same port can be bound again.
    pub fn close_plain(&mut self) {
        self.plain = ListenerGroup::default();
    }

    /// Closes the TLS listeners now (see [`ListenerSet::close_plain`]).
    pub fn close_tls(&mut self) {
        self.tls = ListenerGroup::default();
    }

    /// Wakes the accept loop so it polls the current listeners.
    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// What [`Accept`] yields: the socket, its peer, and the TLS acceptor when it came in
/// on a TLS listener.
pub type Accepted = (TcpStream, SocketAddr, Option<TlsAcceptor>);

/// Accepts the next connection on any listener of the set; pending forever while there
/// is none (until a replacement wakes it).
pub struct Accept<'a>(pub &'a SharedListeners);

impl Future for Accept<'_> {
    type Output = io::Result<Accepted>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut set = self.0.borrow_mut();
        let set = &mut *set;
        let mut start = set.next;
        // Plain first, then TLS; the rotation inside each keeps one busy address from
        // starving the others.
        if let Poll::Ready(r) = set.plain.poll_accept(cx, &mut start) {
            set.next = start;
            return Poll::Ready(r.map(|(s, a)| (s, a, None)));
        }
        if let Poll::Ready(r) = set.tls.poll_accept(cx, &mut start) {
            set.next = start;
            let acceptor = set.acceptor.clone();
            return Poll::Ready(r.map(|(s, a)| (s, a, acceptor)));
        }
        set.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_replacement_wakes_the_accept_loop_and_closes_the_old_port() {
        let set: SharedListeners = Rc::default();
        let group = ListenerGroup::bind(&["127.0.0.1"], 0, 16).unwrap();
        assert!(group.is_empty(), "port 0 binds nothing");
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                let accepting = tokio::task::spawn_local({
                    let set = set.clone();
                    async move { Accept(&set).await.map(|(_, peer, _)| peer) }
                });
                tokio::task::yield_now().await;
                // Bind a free port, then hand it over: the loop must notice.
                let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let port = probe.local_addr().unwrap().port();
                drop(probe);
                set.borrow_mut()
                    .set_plain(ListenerGroup::bind(&["127.0.0.1"], port, 16).unwrap());
                assert_eq!(set.borrow().plain.port(), Some(port));
                let client = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                let peer = accepting.await.unwrap().unwrap();
                assert_eq!(peer, client.local_addr().unwrap());
                // Closed at once: the same port can be bound again right away.
                set.borrow_mut().close_plain();
                let again = ListenerGroup::bind(&["127.0.0.1"], port, 16).unwrap();
                assert_eq!(again.port(), Some(port));
            })
            .await;
    }

    #[test]
    fn an_optional_address_that_is_not_here_is_skipped_and_a_required_one_fails() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = probe.local_addr().unwrap().port();
            drop(probe);
            // 192.0.2.1 (TEST-NET-1) is not an address of this host.
            let g = ListenerGroup::bind(&["127.0.0.1", "-192.0.2.1"], port, 16).unwrap();
            assert_eq!(g.port(), Some(port));
            drop(g);
            assert!(ListenerGroup::bind(&["127.0.0.1", "192.0.2.1"], port, 16).is_err());
            // The failure closed what it had bound: the port is free again.
            assert!(ListenerGroup::bind(&["127.0.0.1"], port, 16).is_ok());
        });
    }
}
