//! A connection's parsed-ahead commands: the complete commands of its buffer that it has
//! parsed before running them, so that the core can prefetch their keys together
//! (`core/prefetch.rs` says why and which commands qualify).
//!
//! ```text
//!   inbuf:  SET a 1 | SET b 2 | GET c | PING | SET d 4 | SET e (partial)
//!           \_______ parsed ahead ________/  \__ parsed once PING has run __/
//!   queue:  [SET a, SET b, GET c, PING]     keys a, b, c prefetched together
//! ```
//!
//! The queue is filled only when it is empty, parses at most
//! [`LOOKAHEAD`](crate::core::prefetch::LOOKAHEAD) commands, and ends with the first one
//! that has no fixed first key (PING above): anything that can change how later
//! commands parse (AUTH, RESET, HELLO, SELECT, CONFIG SET, MULTI's EXEC, PSYNC) runs
//! before the next command is parsed, exactly as without the queue. An unauthenticated
//! client, and one whose database is small enough to stay in the caches
//! ([`LOOKAHEAD_MIN_KEYS`](crate::core::prefetch::LOOKAHEAD_MIN_KEYS)), parses one
//! command at a time. A protocol error ends the queue too and is
//! reported in its turn, after the commands before it ran.
//!
//! Commands stay queued while the connection waits (a blocked or parked command, a
//! pause): the queue lives as long as the connection, next to the parser and the
//! buffer, and the next batch takes from it before it parses more.

use crate::core::Core;
use crate::core::client::Client;
use crate::core::prefetch::LOOKAHEAD;
use crate::resp::Argv;
use crate::resp::parser::{ProtocolError, RequestParser};
use bytes::BytesMut;
use std::collections::VecDeque;

/// One parsed-ahead item.
enum Ahead {
    /// A complete command, the bytes of its request, and where its first key is with
    /// that key's hash (when its keys are prefetched).
    Command {
        argv: Argv,
        bytes: u64,
        key: Option<(usize, u64)>,
        /// The command appends to the stream at its key (`LookaheadKey::appends`).
        appends: bool,
    },
    /// The buffer's bytes after the commands before it are not a valid request.
    Error(ProtocolError),
}

/// A connection's queue of parsed-ahead commands (see the module docs).
#[derive(Default)]
pub struct Lookahead {
    queue: VecDeque<Ahead>,
    /// Bytes the parser took of a command it has not completed yet (a request that
    /// arrives over several reads).
    partial_bytes: u64,
}

impl Lookahead {
    /// The next command to run and the bytes of its request: from the queue, else
    /// parsed from `inbuf` (filling the queue and prefetching its keys). `Ok(None)`
    /// when no complete command is left.
    pub fn next(
        &mut self,
        core: &mut Core,
        client: &Client,
        parser: &mut RequestParser,
        inbuf: &mut BytesMut,
    ) -> Result<Option<(Argv, u64)>, ProtocolError> {
        if self.queue.is_empty() {
            let authenticated = !core.auth_required(client);
            parser.set_authenticated(authenticated);
            if !(authenticated && core.worth_reading_ahead(client.db)) {
                // One at a time: parsed and handed over without a pass through the queue.
                return self.parse_one(parser, inbuf);
            }
            self.fill(core, client, parser, inbuf);
        }
        let next = match self.queue.pop_front() {
            None => return Ok(None),
            Some(Ahead::Command { argv, bytes, .. }) => (argv, bytes),
            Some(Ahead::Error(e)) => return Err(e),
        };
        // While this one runs, the value of the one after it (its slot is in by now); an
        // XADD's stream was asked for with its path when the queue was filled.
        if let Some(Ahead::Command {
            argv,
            key: Some((at, hash)),
            appends: false,
            ..
        }) = self.queue.front()
        {
            core.prefetch_value(client.db, *hash, &argv[*at]);
        }
        Ok(Some(next))
    }

    /// Bytes of the arguments of the commands queued (CLIENT LIST `argv-mem`).
    pub fn argv_bytes(&self) -> usize {
        self.queue
            .iter()
            .map(|a| match a {
                Ahead::Command { argv, .. } => argv.iter().map(|x| x.len()).sum(),
                Ahead::Error(_) => 0,
            })
            .sum()
    }

    /// Parses commands from `inbuf` into the empty queue of a client that reads ahead (see
    /// the module docs), asking for each key's bucket as its command is parsed, then for
    /// the slots.
    fn fill(
        &mut self,
        core: &mut Core,
        client: &Client,
        parser: &mut RequestParser,
        inbuf: &mut BytesMut,
    ) {
        loop {
            match self.parse_one(parser, inbuf) {
                Ok(Some((argv, bytes))) => {
                    let at = core.lookahead_key(&argv);
                    let key = at
                        .and_then(|k| Some((k.at, core.prefetch_bucket(client.db, &argv[k.at])?)));
                    let appends = at.is_some_and(|k| k.appends);
                    self.queue.push_back(Ahead::Command {
                        argv,
                        bytes,
                        key,
                        appends,
                    });
                    if at.is_none() || self.queue.len() >= LOOKAHEAD {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.queue.push_back(Ahead::Error(e));
                    break;
                }
            }
        }
        core.prefetch_slots(
            client.db,
            self.queue.iter().filter_map(|a| match a {
                Ahead::Command {
                    key: Some((_, hash)),
                    ..
                } => Some(*hash),
                _ => None,
            }),
        );
        core.prefetch_stream_tails(
            client.db,
            self.queue.iter().filter_map(|a| match a {
                Ahead::Command {
                    argv,
                    key: Some((at, hash)),
                    appends: true,
                    ..
                } => Some((*hash, &argv[*at][..])),
                _ => None,
            }),
        );
    }

    /// Parses the next command of `inbuf`, with the bytes of its request (those taken by
    /// earlier reads of a request split over several included).
    fn parse_one(
        &mut self,
        parser: &mut RequestParser,
        inbuf: &mut BytesMut,
    ) -> Result<Option<(Argv, u64)>, ProtocolError> {
        let unparsed = inbuf.len();
        let parsed = parser.parse(inbuf);
        self.partial_bytes += unparsed.saturating_sub(inbuf.len()) as u64;
        Ok(parsed?.map(|argv| (argv, std::mem::take(&mut self.partial_bytes))))
    }
}
