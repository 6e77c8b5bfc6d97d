//! MIGRATE (Redis 7.0 `cluster.c` `migrateCommand`): moves keys to another instance, a
//! Redis or a streamd, by sending it `RESTORE` (or `RESTORE-ASKING` when this node is in
//! cluster mode) with each key's DUMP payload and remaining TTL, then deleting the keys
//! it accepted. `redis-cli --cluster reshard` moves slots with it.
//!
//! `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//! [AUTH2 username password] [KEYS key [key ...]]`, in Redis's order:
//!
//! 1. Options from argument 6: `COPY`, `REPLACE`, `AUTH` (one value), `AUTH2` (two
//!    values), `KEYS` (the rest are keys; only with an empty key argument). Anything else,
//!    or a missing value, is `ERR syntax error`.
//! 2. The timeout, then the database, as integers; a timeout `<= 0` means 1000 ms.
//! 3. Keys that do not exist are skipped; none left: `+NOKEY`.
//! 4. A connection to `host:port` (kept between calls, `core/migrate_sockets.rs`). A name
//!    that does not resolve is `-IOERR error or timeout connecting to the client`; a
//!    refused or timed-out connect counts as a failed write (step 7), as in Redis 7.0,
//!    whose blocking connect reports success and leaves the error to the first write.
//! 5. One pipelined write: `AUTH`, `SELECT db` unless the connection has it selected,
//!    and one `RESTORE key ttl payload [REPLACE]` per key still alive (TTL in ms from
//!    now, 0 for none, at least 1).
//! 6. The replies, one line each. The first error (AUTH's, then SELECT's, then a key's)
//!    becomes `-ERR Target instance replied with error: <its text>`; every key the target
//!    accepted is deleted here unless `COPY`. Success: `+OK`.
//! 7. A failed write, or a failed read before the first key's reply, closes the
//!    connection and tries once more on a new one unless it timed out; otherwise
//!    `-IOERR error or timeout writing to target instance` (or `reading`).
//!
//! The I/O is synchronous with the timeout, as Redis does it (`syncWrite` /
//! `syncReadLine`): the core waits for the target, as Redis's event loop does.
//!
//! Side effects of the deletions, as DEL's: WATCH invalidation and blocked readers woken
//! (`key_deleted`), a `del` keyspace event, the dirty counter, and one logged `DEL key
//! ...` naming the keys the target accepted (Redis rewrites the command so).

use super::{CommandSpec, flags::*, is, keyflags, parse_i64};
use crate::core::migrate_sockets::{MigrateSocket, UNKNOWN_DB};
use crate::core::{Ctx, unix_ms};
use crate::error::ReplyError;
use crate::rdb::payload;
use crate::resp::writer::command;
use bytes::Bytes;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "migrate",
    arity: -6,
    flags: WRITE | MOVABLEKEYS,
    first_key: 3,
    last_key: 3,
    key_step: 1,
    acl: &["@keyspace", "@dangerous"],
    key_flags: &[keyflags::RW | keyflags::ACCESS | keyflags::DELETE],
    summary: "Atomically transfer a key from a Redis instance to another one.",
    since: "2.6.0",
    group: "generic",
    handler: migrate,
    subcommands: &[],
}];

const KEYS_NEED_EMPTY_KEY: ReplyError = ReplyError::msg(
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
);
const IOERR_CONNECT: ReplyError =
    ReplyError::msg("IOERR error or timeout connecting to the client");
const IOERR_WRITE: ReplyError =
    ReplyError::msg("IOERR error or timeout writing to target instance");
const IOERR_READ: ReplyError = ReplyError::msg("IOERR error or timeout reading to target instance");

/// Longest reply line read from the target, terminator included (Redis reads replies
/// into 1024-byte buffers).
const LINE_MAX: usize = 1024;

/// Largest piece of the request written at once (Redis writes 64 KiB chunks, each with
/// the whole timeout).
const WRITE_CHUNK: usize = 64 * 1024;

/// MIGRATE's parsed options.
struct Options<'a> {
    copy: bool,
    replace: bool,
    username: Option<&'a [u8]>,
    password: Option<&'a [u8]>,
    /// Index of the first key argument.
    first_key: usize,
    /// Number of key arguments.
    num_keys: usize,
}

impl<'a> Options<'a> {
    /// Redis's option loop from argument 6 (AUTH and AUTH2 consume their values; KEYS
    /// takes every remaining argument).
    fn parse(argv: &'a [Bytes]) -> Result<Options<'a>, ReplyError> {
        let mut o = Options {
            copy: false,
            replace: false,
            username: None,
            password: None,
            first_key: 3,
            num_keys: 1,
        };
        let mut j = 6;
        while j < argv.len() {
            let more = argv.len() - 1 - j;
            let a = &argv[j];
            if is(a, "COPY") {
                o.copy = true;
            } else if is(a, "REPLACE") {
                o.replace = true;
            } else if is(a, "AUTH") {
                if more == 0 {
                    return Err(ReplyError::Syntax);
                }
                j += 1;
                o.password = Some(&argv[j]);
            } else if is(a, "AUTH2") {
                if more < 2 {
                    return Err(ReplyError::Syntax);
                }
                o.username = Some(&argv[j + 1]);
                o.password = Some(&argv[j + 2]);
                j += 2;
            } else if is(a, "KEYS") {
                if !argv[3].is_empty() {
                    return Err(KEYS_NEED_EMPTY_KEY);
                }
                o.first_key = j + 1;
                o.num_keys = argv.len() - j - 1;
                break;
            } else {
                return Err(ReplyError::Syntax);
            }
            j += 1;
        }
        Ok(o)
    }
}

/// A key to move: its name and DUMP payload.
struct Moving {
    key: Bytes,
    payload: Vec<u8>,
}

/// Why an exchange with the target failed, and whether another connection may help.
#[derive(Debug)]
struct IoFailure {
    /// The write failed (else a read).
    writing: bool,
    /// It timed out (Redis retries only other errors: `errno != ETIMEDOUT`).
    timed_out: bool,
}

impl IoFailure {
    fn new(writing: bool, e: &io::Error) -> IoFailure {
        IoFailure {
            writing,
            timed_out: matches!(
                e.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ),
        }
    }

    fn reply(&self) -> ReplyError {
        if self.writing {
            IOERR_WRITE
        } else {
            IOERR_READ
        }
    }
}

/// C's `atoi` on the port argument (as Redis reads it): leading spaces, a sign, digits;
/// anything else ends the number, nothing gives 0.
fn atoi(arg: &[u8]) -> i64 {
    let mut rest = arg
        .iter()
        .skip_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .peekable();
    let negative = match rest.peek() {
        Some(b'-') => {
            rest.next();
            true
        }
        Some(b'+') => {
            rest.next();
            false
        }
        _ => false,
    };
    let mut n: i64 = 0;
    for c in rest.take_while(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    if negative { -n } else { n }
}

/// Why no connection came out of [`connect`].
enum ConnectError {
    /// The name or port does not resolve to an address (Redis's
    /// `anetTcpNonBlockConnect` fails): `IOERR error or timeout connecting to the client`.
    Unresolved,
    /// The connect was refused or timed out. Redis 7.0 does not see this at connect time
    /// (`connSocketBlockingConnect` returns success after its wait either way), but at
    /// the first write, so it is reported as that write's failure.
    Failed(IoFailure),
}

/// Connects to `host:port` within `timeout` (Redis's `connBlockingConnect`): each
/// address the name resolves to in turn.
fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Result<MigrateSocket, ConnectError> {
    let host = std::str::from_utf8(host).map_err(|_| ConnectError::Unresolved)?;
    let port = u16::try_from(atoi(port)).map_err(|_| ConnectError::Unresolved)?;
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|_| ConnectError::Unresolved)?
        .collect();
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => {
                // Nagle off, as Redis's connEnableTcpNoDelay.
                let _ = stream.set_nodelay(true);
                return Ok(MigrateSocket {
                    conn: BufReader::new(stream),
                    last_db: UNKNOWN_DB,
                    last_use: unix_ms() / 1000,
                });
            }
            Err(e) => last = Some(IoFailure::new(true, &e)),
        }
    }
    Err(last.map_or(ConnectError::Unresolved, ConnectError::Failed))
}

/// Reads one reply line (Redis's `syncReadLine`): up to `\n`, without `\r\n`, at most
/// [`LINE_MAX`] - 1 bytes. End of stream is an error.
fn read_line(conn: &mut BufReader<TcpStream>) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    while line.len() < LINE_MAX - 1 {
        let buf = conn.fill_buf()?;
        if buf.is_empty() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let room = LINE_MAX - 1 - line.len();
        let take = buf.len().min(room);
        if let Some(nl) = buf[..take].iter().position(|&c| c == b'\n') {
            line.extend_from_slice(&buf[..nl]);
            conn.consume(nl + 1);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(line);
        }
        line.extend_from_slice(&buf[..take]);
        conn.consume(take);
    }
    Ok(line)
}

/// What one exchange with the target came to.
struct Exchange {
    /// The keys the target restored, in order.
    accepted: Vec<usize>,
    /// The first error the target replied, without its `-`.
    target_error: Option<Vec<u8>>,
    /// The read that failed after the first key's reply was read, if one did.
    late_failure: Option<IoFailure>,
}

/// Sends the request on `sock` for `keys` (each with its TTL in ms, 0 for none) and
/// reads the replies (the part of Redis's
/// `migrateCommand` between `try_again` and the deletions). An `Err` is a failure
/// before any key's reply was read: nothing was accepted, another connection may be
/// tried.
fn exchange(
    sock: &mut MigrateSocket,
    opts: &Options<'_>,
    db: i64,
    cluster: bool,
    keys: &[(&Moving, i64)],
    timeout: Duration,
) -> Result<Exchange, IoFailure> {
    let mut cmd = Vec::new();
    if let Some(password) = opts.password {
        match opts.username {
            Some(user) => command(&mut cmd, &[&b"AUTH"[..], user, password]),
            None => command(&mut cmd, &[&b"AUTH"[..], password]),
        }
    }
    let select = sock.last_db != db;
    if select {
        command(
            &mut cmd,
            &[&b"SELECT"[..], itoa::Buffer::new().format(db).as_bytes()],
        );
    }
    let restore: &[u8] = if cluster {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    for (m, ttl) in keys {
        let ttl_text = itoa::Buffer::new().format(*ttl).to_owned();
        let mut args: Vec<&[u8]> = vec![restore, &m.key[..], ttl_text.as_bytes(), &m.payload[..]];
        if opts.replace {
            args.push(b"REPLACE");
        }
        command(&mut cmd, &args);
    }
    let stream = sock.conn.get_mut();
    let set = stream
        .set_write_timeout(Some(timeout))
        .and_then(|()| stream.set_read_timeout(Some(timeout)));
    if let Err(e) = set {
        return Err(IoFailure::new(true, &e));
    }
    for chunk in cmd.chunks(WRITE_CHUNK) {
        stream
            .write_all(chunk)
            .map_err(|e| IoFailure::new(true, &e))?;
    }
    let read =
        |sock: &mut MigrateSocket| read_line(&mut sock.conn).map_err(|e| IoFailure::new(false, &e));
    let auth_reply = match opts.password {
        Some(_) => Some(read(sock)?),
        None => None,
    };
    let select_reply = if select { Some(read(sock)?) } else { None };
    let is_error = |r: &Option<Vec<u8>>| r.as_ref().is_some_and(|l| l.first() == Some(&b'-'));
    let mut done = Exchange {
        accepted: Vec::new(),
        target_error: None,
        late_failure: None,
    };
    for j in 0..keys.len() {
        let reply = match read_line(&mut sock.conn) {
            Ok(line) => line,
            Err(e) => {
                let failure = IoFailure::new(false, &e);
                // Nothing read yet and no target error: a new connection may succeed.
                if j == 0 && !failure.timed_out {
                    return Err(failure);
                }
                done.late_failure = Some(failure);
                break;
            }
        };
        let reply = Some(reply);
        if is_error(&auth_reply) || is_error(&select_reply) || is_error(&reply) {
            if done.target_error.is_none() {
                let line = [&auth_reply, &select_reply, &reply]
                    .into_iter()
                    .find(|r| is_error(r))
                    .and_then(|r| r.as_deref())
                    .unwrap_or_default();
                done.target_error = Some(line.get(1..).unwrap_or_default().to_vec());
            }
        } else {
            done.accepted.push(j);
        }
    }
    Ok(done)
}

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
/// [AUTH2 username password] [KEYS key [key ...]].
fn migrate(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let opts = Options::parse(argv)?;
    let timeout_ms = parse_i64(&argv[5])?;
    let db = parse_i64(&argv[4])?;
    let timeout = Duration::from_millis(if timeout_ms <= 0 {
        1000
    } else {
        timeout_ms as u64
    });

    // The keys that exist (duplicates kept, as Redis does).
    let defaults = ctx.core.idmp_defaults;
    let mut found: Vec<Moving> = Vec::new();
    for key in &argv[opts.first_key..opts.first_key + opts.num_keys] {
        if ctx.lookup_value(key).is_some() {
            let d = &ctx.core.dbs[ctx.client.db];
            let Some(value) = d.get(key) else {
                continue;
            };
            let payload = payload::dump_value(value, d.hexpires.of(key), defaults);
            found.push(Moving {
                key: key.clone(),
                payload,
            });
        }
    }
    if found.is_empty() {
        ctx.out.simple(b"NOKEY");
        return Ok(());
    }

    let name = [&argv[1][..], b":", &argv[2][..]].concat();
    let cluster = ctx.core.cluster.is_some();
    let here = ctx.client.db;
    let mut may_retry = true;
    let (mut sock, done, sent) = loop {
        let connected = match ctx.core.migrate_sockets.take(&name, unix_ms() / 1000) {
            Some(s) => Ok(s),
            None => connect(&argv[1], &argv[2], timeout),
        };
        let mut sock = match connected {
            Ok(s) => s,
            Err(ConnectError::Unresolved) => return Err(IOERR_CONNECT),
            // As a failed write: once more unless it timed out.
            Err(ConnectError::Failed(failure)) => {
                if may_retry && !failure.timed_out {
                    may_retry = false;
                    continue;
                }
                return Err(failure.reply());
            }
        };
        // Remaining TTLs now; a key whose deadline passed since the lookup stays here.
        let now = unix_ms();
        let mut sending: Vec<(&Moving, i64)> = Vec::new();
        for m in &found {
            let ttl = match ctx.core.dbs[here].expires.get(&m.key[..]) {
                None => 0,
                Some(&at) => {
                    let left = at as i64 - now as i64;
                    if left < 0 {
                        continue;
                    }
                    left.max(1)
                }
            };
            sending.push((m, ttl));
        }
        match exchange(&mut sock, &opts, db, cluster, &sending, timeout) {
            Ok(done) => break (sock, done, sending),
            // The connection is dropped (closed); once more on a new one unless it
            // timed out.
            Err(failure) => {
                if may_retry && !failure.timed_out {
                    may_retry = false;
                    continue;
                }
                return Err(failure.reply());
            }
        }
    };

    // The keys the target accepted leave this node, unless COPY.
    if !opts.copy && !done.accepted.is_empty() {
        let mut del: Vec<&[u8]> = vec![&b"DEL"[..]];
        for &j in &done.accepted {
            let key = &sent[j].0.key;
            ctx.delete_key(key);
            ctx.core.dirty += 1;
            del.push(key);
        }
        ctx.propagate(&del);
    }
    if let Some(failure) = done.late_failure {
        // The connection is dropped (closed).
        return match done.target_error {
            Some(text) => Err(target_error(&text)),
            None => Err(failure.reply()),
        };
    }
    if let Some(text) = done.target_error {
        // What the target has selected is no longer known.
        sock.last_db = UNKNOWN_DB;
        ctx.core.migrate_sockets.put(name, sock);
        return Err(target_error(&text));
    }
    sock.last_db = db;
    ctx.core.migrate_sockets.put(name, sock);
    ctx.out.ok();
    Ok(())
}

/// `ERR Target instance replied with error: <text>`.
fn target_error(text: &[u8]) -> ReplyError {
    ReplyError::owned(format!(
        "ERR Target instance replied with error: {}",
        String::from_utf8_lossy(text)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn options_follow_redis_order() {
        let a = args(&[
            "MIGRATE", "h", "1", "", "0", "5", "copy", "AUTH2", "u", "p", "KEYS", "a", "b",
        ]);
        let o = Options::parse(&a).expect("valid");
        assert!(o.copy && !o.replace);
        assert_eq!(o.username, Some(&b"u"[..]));
        assert_eq!(o.password, Some(&b"p"[..]));
        assert_eq!((o.first_key, o.num_keys), (11, 2));
        let a = args(&["MIGRATE", "h", "1", "k", "0", "5", "KEYS", "a"]);
        assert!(matches!(Options::parse(&a), Err(ReplyError::Other(_))));
        let a = args(&["MIGRATE", "h", "1", "k", "0", "5", "AUTH"]);
        assert!(matches!(Options::parse(&a), Err(ReplyError::Syntax)));
        let a = args(&["MIGRATE", "h", "1", "k", "0", "5", "AUTH2", "u"]);
        assert!(matches!(Options::parse(&a), Err(ReplyError::Syntax)));
        let a = args(&["MIGRATE", "h", "1", "k", "0", "5", "REPLACE", "x"]);
        assert!(matches!(Options::parse(&a), Err(ReplyError::Syntax)));
        // KEYS as AUTH's password is a password.
        let a = args(&["MIGRATE", "h", "1", "k", "0", "5", "AUTH", "KEYS"]);
        let o = Options::parse(&a).expect("valid");
        assert_eq!((o.first_key, o.num_keys), (3, 1));
    }

    #[test]
    fn port_reads_as_atoi() {
        assert_eq!(atoi(b"6379"), 6379);
        assert_eq!(atoi(b" 12x"), 12);
        assert_eq!(atoi(b"-5"), -5);
        assert_eq!(atoi(b"abc"), 0);
        assert_eq!(atoi(b""), 0);
    }
}
