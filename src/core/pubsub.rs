//! Pub/Sub delivery: the core's side of the tables in `crate::pubsub` — subscribing with
//! Redis's replies, publishing to subscribers' mailboxes, and the running client's own
//! messages.
//!
//! ```text
//!  PUBLISH ch msg ──▶ Core::publish ──▶ pubsub.subscribers(ch)       ─┐ one frame per
//!                                   └─▶ pubsub.matching_patterns(ch) ─┤ protocol, shared
//!                                                                    ▼
//!      subscriber in `clients`:   Client::send(ClientMsg::Shared(frame), pubsub limit)
//!      subscriber out of the table (its command is running, or it is being re-executed
//!      after a block): appended to its entry in `Core::detached`, which goes into its
//!      reply writer where the message was published (see below)
//! ```
//!
//! **Order for the running client.** The running client is not in `Core::clients` (its
//! batch holds it), so [`Core::publish`] keeps what it gets in [`Core::detached`], and it
//! is moved into the client's writer in one of two places:
//!
//! - PUBLISH and SPUBLISH move it at once, before writing their count: a subscriber
//!   publishing to itself reads its message, then the count, and inside MULTI the message
//!   sits in EXEC's reply where the PUBLISH ran — Redis 7.0's order, which
//!   `../shared/checks/pubsub` compares against;
//! - everything else published while a command runs (the keyspace events of the client's
//!   own writes) goes in after the command's reply, and after EXEC's whole reply in a
//!   transaction: Redis 7.2+'s `pending_push_messages`, which keeps a reply such as
//!   XREADGROUP's from being split by a push (7.0 wrote events where they were raised).
//!
//! The connection's batch keeps its client detached between commands too, so messages
//! published while blocked clients are served after its command still reach it, after
//! that reply.

use super::Core;
use super::client::{Client, ClientMsg};
use crate::config::BufferLimit;
use crate::pubsub::Kind;
use crate::resp::writer::{Protocol, RespWriter};
use bytes::Bytes;

/// A client taken out of `Core::clients` for now, and the Pub/Sub frames published to
/// it meanwhile (already encoded for its protocol), not yet in its reply writer.
#[derive(Debug)]
pub struct Detached {
    /// The client's id.
    pub id: u64,
    /// Its protocol when detached (updated at each command).
    pub proto: Protocol,
    /// Frames waiting to go into its reply writer, in publish order.
    pub pushes: Vec<u8>,
}

/// One message's frame, encoded at most once per protocol and shared by all its
/// subscribers: `message`/`smessage` `[kind, channel, message]` or `pmessage`
/// `[kind, pattern, channel, message]`, as a RESP2 array or a RESP3 push.
struct Frame<'a> {
    kind: &'static [u8],
    pattern: Option<&'a [u8]>,
    channel: &'a [u8],
    message: &'a [u8],
    encoded: [Option<Bytes>; 2],
}

impl<'a> Frame<'a> {
    fn new(
        kind: &'static [u8],
        pattern: Option<&'a [u8]>,
        channel: &'a [u8],
        message: &'a [u8],
    ) -> Self {
        Frame {
            kind,
            pattern,
            channel,
            message,
            encoded: [None, None],
        }
    }

    fn bytes(&mut self, proto: Protocol) -> &Bytes {
        let slot = usize::from(proto == Protocol::Resp3);
        self.encoded[slot].get_or_insert_with(|| {
            let mut out = RespWriter::new(proto);
            out.buf.reserve(
                32 + self.channel.len() + self.message.len() + self.pattern.map_or(0, <[u8]>::len),
            );
            out.push(if self.pattern.is_some() { 4 } else { 3 });
            out.bulk(self.kind);
            if let Some(p) = self.pattern {
                out.bulk(p);
            }
            out.bulk(self.channel);
            out.bulk(self.message);
            Bytes::from(out.buf)
        })
    }
}

/// The word of a subscription reply for `kind`, subscribing or not.
fn reply_word(kind: Kind, subscribe: bool) -> &'static [u8] {
    match (kind, subscribe) {
        (Kind::Channel, true) => b"subscribe",
        (Kind::Channel, false) => b"unsubscribe",
        (Kind::Pattern, true) => b"psubscribe",
        (Kind::Pattern, false) => b"punsubscribe",
        (Kind::Shard, true) => b"ssubscribe",
        (Kind::Shard, false) => b"sunsubscribe",
    }
}

/// The count a subscription reply carries: channels plus patterns, or shard channels.
fn reply_count(client: &Client, kind: Kind) -> i64 {
    let n = match kind {
        Kind::Shard => client.subs.count(Kind::Shard),
        _ => client.subs.channels_and_patterns(),
    };
    n as i64
}

/// `[word, name or null, count]`: an array in RESP2, a push in RESP3.
fn subscription_reply(out: &mut RespWriter, word: &[u8], name: Option<&[u8]>, count: i64) {
    out.push(3);
    out.bulk(word);
    match name {
        Some(n) => out.bulk(n),
        None => out.null(),
    }
    out.integer(count);
}

/// Hands `frame` to subscriber `id`: through its mailbox when it is in `clients`,
/// into its detached entry when its command is running; nowhere if it is gone.
fn deliver(
    clients: &super::ClientTable,
    detached: &mut [Detached],
    id: u64,
    frame: &mut Frame<'_>,
    limit: BufferLimit,
    direct_pending: &mut Vec<(u64, std::rc::Rc<super::limits::OutputState>)>,
) {
    if let Some(c) = clients.get(&id) {
        // An idle subscriber's socket is written by the core (`core/direct_write.rs`).
        if c.output.direct.accepts() {
            if c.push_direct(frame.bytes(c.proto), limit) {
                direct_pending.push((id, c.output.clone()));
            }
        } else {
            c.send(ClientMsg::Shared(frame.bytes(c.proto).clone()), limit);
        }
    } else if let Some(d) = detached.iter_mut().find(|d| d.id == id) {
        d.pushes.extend_from_slice(frame.bytes(d.proto));
    }
}

impl Core {
    /// PUBLISH: delivers `message` to the subscribers of `channel`, then to those of
    /// every pattern matching it (Redis's `pubsubPublishMessage`); returns the number of
    /// deliveries (a client subscribed to the channel and to two matching patterns
    /// counts three times). Nothing is allocated when nobody is subscribed to anything.
    pub fn publish(&mut self, channel: &[u8], message: &[u8]) -> usize {
        self.publish_to(Kind::Channel, channel, message)
    }

    /// SPUBLISH: delivers `message` to the subscribers of shard channel `channel`
    /// (patterns never see shard messages); returns the number of receivers.
    pub fn spublish(&mut self, channel: &[u8], message: &[u8]) -> usize {
        self.publish_to(Kind::Shard, channel, message)
    }

    fn publish_to(&mut self, kind: Kind, channel: &[u8], message: &[u8]) -> usize {
        if self.pubsub.is_empty() {
            return 0;
        }
        let limit = self.limits.pubsub;
        let mut receivers = 0;
        let word: &'static [u8] = if kind == Kind::Shard {
            b"smessage"
        } else {
            b"message"
        };
        let (clients, detached, pending) =
            (&self.clients, &mut self.detached, &mut self.direct_pending);
        let mut to = |id: u64, frame: &mut Frame<'_>| {
            deliver(clients, detached, id, frame, limit, pending);
            receivers += 1;
        };
        if let Some(subs) = self.pubsub.subscribers(kind, channel) {
            let mut frame = Frame::new(word, None, channel, message);
            for &id in subs.iter() {
                to(id, &mut frame);
            }
        }
        if kind == Kind::Channel && self.pubsub.has_patterns() {
            for (pattern, subs) in self.pubsub.matching_patterns(channel) {
                let mut frame = Frame::new(b"pmessage", Some(pattern), channel, message);
                for &id in subs.iter() {
                    to(id, &mut frame);
                }
            }
        }
        self.stats.pubsub_deliveries += receivers as u64;
        if !self.direct_pending.is_empty() {
            // One wake-up per batch: a permit is kept until the flusher runs.
            self.direct_wake.notify_one();
        }
        receivers
    }

    /// (P|S)SUBSCRIBE: subscribes `client` to each of `names` and writes one reply per
    /// name, `[subscribe, name, count]` (already-subscribed names reply too).
    pub fn subscribe(
        &mut self,
        client: &mut Client,
        kind: Kind,
        names: &[Bytes],
        out: &mut RespWriter,
    ) {
        for name in names {
            self.pubsub
                .subscribe(kind, &mut client.subs, client.id, name);
            subscription_reply(
                out,
                reply_word(kind, true),
                Some(name),
                reply_count(client, kind),
            );
        }
    }

    /// (P|S)UNSUBSCRIBE: unsubscribes `client` from each of `names`, or from every
    /// `kind` subscription when `names` is empty, writing one reply per name; with
    /// nothing to unsubscribe from, one reply `[unsubscribe, null, count]`.
    pub fn unsubscribe(
        &mut self,
        client: &mut Client,
        kind: Kind,
        names: &[Bytes],
        out: &mut RespWriter,
    ) {
        let word = reply_word(kind, false);
        if names.is_empty() {
            let gone = self
                .pubsub
                .unsubscribe_all(kind, &mut client.subs, client.id);
            // Redis counts down as it goes: each reply carries what is left after it.
            let mut left = reply_count(client, kind) + gone.len() as i64;
            for name in &gone {
                left -= 1;
                subscription_reply(out, word, Some(name), left);
            }
            if gone.is_empty() {
                subscription_reply(out, word, None, reply_count(client, kind));
            }
            return;
        }
        for name in names {
            self.pubsub
                .unsubscribe(kind, &mut client.subs, client.id, name);
            subscription_reply(out, word, Some(name), reply_count(client, kind));
        }
    }

    /// Drops every subscription of `client` without replies (RESET, disconnection,
    /// Redis's `pubsubUnsubscribeAll*(c, 0)`).
    pub fn unsubscribe_everything(&mut self, client: &mut Client) {
        if !client.in_pubsub() {
            return;
        }
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            self.pubsub
                .unsubscribe_all(kind, &mut client.subs, client.id);
        }
    }

    /// After `user`'s rules changed from `before` (ACL SETUSER, ACL LOAD): closes the
    /// clients authenticated as it whose subscriptions are no longer all allowed
    /// (Redis's `ACLKillPubsubClientsIfNeeded`), dropping their subscriptions at once so
    /// the next PUBLISH no longer counts them. `running`, the client that changed the
    /// rules, is out of the table: it is closed after its reply if it is one of them.
    pub fn kill_pubsub_clients_if_needed(
        &mut self,
        user: &super::acl::UserRef,
        before: &super::acl::User,
        running: &mut Client,
    ) {
        if user.borrow().channels_cover(before) {
            return;
        }
        let of_user = |c: &Client| {
            c.user
                .as_ref()
                .is_some_and(|u| std::rc::Rc::ptr_eq(u, user))
        };
        let u = user.borrow();
        let doomed: Vec<u64> = self
            .clients
            .values()
            .filter(|c| of_user(c) && c.in_pubsub() && !u.allows_subscriptions(&c.subs))
            .map(|c| c.id)
            .collect();
        if of_user(running) && running.in_pubsub() && !u.allows_subscriptions(&running.subs) {
            running.close_after_reply = true;
        }
        drop(u);
        for id in doomed {
            if let Some(mut c) = self.clients.remove(&id) {
                self.unsubscribe_everything(&mut c);
                let _ = c.tx.send(ClientMsg::Close);
                self.clients.insert(id, c);
            }
        }
    }

    /// The output buffer limit that applies to `client` now: class `pubsub` while it is
    /// subscribed to anything, else `normal`.
    pub fn output_limit(&self, client: &Client) -> BufferLimit {
        if client.in_pubsub() {
            self.limits.pubsub
        } else {
            self.limits.output
        }
    }

    /// Records that `client` is out of `Core::clients` for now, so messages published
    /// to it are kept in [`Core::detached`]; true if it was not recorded yet (the caller
    /// then ends it with [`Core::attach`]).
    pub fn detach(&mut self, client: &Client) -> bool {
        if let Some(d) = self.detached.iter_mut().find(|d| d.id == client.id) {
            d.proto = client.proto;
            return false;
        }
        self.detached.push(Detached {
            id: client.id,
            proto: client.proto,
            pushes: Vec::new(),
        });
        true
    }

    /// Moves the messages published to detached client `id` into its reply writer.
    pub fn flush_pushes(&mut self, id: u64, out: &mut RespWriter) {
        if let Some(d) = self.detached.iter_mut().find(|d| d.id == id)
            && !d.pushes.is_empty()
        {
            out.buf.extend_from_slice(&d.pushes);
            d.pushes.clear();
        }
    }

    /// Ends what [`Core::detach`] started, moving what is left into `out`.
    pub fn attach(&mut self, id: u64, out: &mut RespWriter) {
        if let Some(i) = self.detached.iter().position(|d| d.id == id) {
            let d = self.detached.swap_remove(i);
            out.buf.extend_from_slice(&d.pushes);
        }
    }
}
