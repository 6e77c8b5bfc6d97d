//! The load tool's own RESP client: commands are encoded into an output buffer (so a
//! pipeline is one `write`), replies are framed in place in an input buffer, and every
//! read, write and connect is bounded by a timeout so a stuck server fails the round
//! instead of hanging the tool.
//!
//! ```text
//!   push(cmd) ─► out: *3\r\n$4\r\nXADD\r\n...*3\r\n...   flush() = one write_all
//!   in: +OK\r\n:1\r\n*2\r\n$1\r\na\r\n... ◄─ read_buf (into spare capacity)
//!       ^consumed                          FrameScan finds where each reply ends,
//!                                          walking each byte once across reads
//! ```
//!
//! Only RESP2 is spoken (no `HELLO 3`), but the framing also understands RESP3 types.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Least spare room made in the input buffer before each read (more while a large reply
/// is arriving: as much as the reply has so far, so a reply of n bytes takes O(log n)
/// buffer growths and reads of growing size).
const READ_CHUNK: usize = 16384;

/// One connection to a server.
pub struct Conn {
    stream: TcpStream,
    /// Encoded commands not yet written.
    out: Vec<u8>,
    /// Bytes read and not yet consumed start at `at`.
    buf: Vec<u8>,
    at: usize,
    /// How far the reply starting at `at` has been framed, kept across reads so a reply
    /// that arrives in many reads is walked once, not once per read.
    scan: FrameScan,
    /// Bound on every connect, write and reply.
    timeout: Duration,
}

impl Conn {
    /// Connects to `addr` (TCP_NODELAY), failing after `timeout`.
    pub async fn connect(addr: &str, timeout: Duration) -> io::Result<Conn> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, format!("connect {addr}")))??;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            out: Vec::with_capacity(4096),
            buf: Vec::with_capacity(READ_CHUNK),
            at: 0,
            scan: FrameScan::default(),
            timeout,
        })
    }

    /// Opens `n` connections to `addr`.
    pub async fn connect_many(addr: &str, n: usize, timeout: Duration) -> io::Result<Vec<Conn>> {
        let mut conns = Vec::with_capacity(n);
        for _ in 0..n {
            conns.push(Conn::connect(addr, timeout).await?);
        }
        Ok(conns)
    }

    /// Appends one command to the output buffer (sent by the next `flush`).
    pub fn push<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        encode(&mut self.out, args);
    }

    /// Appends one command already RESP-encoded by [`encode`] (a cluster client keeps
    /// the encoded commands of a batch to resend those a node redirects).
    pub fn push_encoded(&mut self, command: &[u8]) {
        self.out.extend_from_slice(command);
    }

    /// Writes every pushed command in one `write_all`.
    pub async fn flush(&mut self) -> io::Result<()> {
        let write = self.stream.write_all(&self.out);
        tokio::time::timeout(self.timeout, write)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "write timed out"))??;
        self.out.clear();
        Ok(())
    }

    /// Waits for the next whole reply and returns where it lies in `self.buf`.
    async fn frame(&mut self) -> io::Result<std::ops::Range<usize>> {
        loop {
            if let Some(n) = self.scan.resume(&self.buf[self.at..]) {
                let range = self.at..self.at + n;
                self.at += n;
                return Ok(range);
            }
            if self.at > 0 {
                self.buf.drain(..self.at);
                self.at = 0;
            }
            // Reads into the spare capacity (no zero-filling).
            self.buf.reserve(READ_CHUNK.max(self.buf.len()));
            let read = self.stream.read_buf(&mut self.buf);
            let n = tokio::time::timeout(self.timeout, read)
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "reply timed out"))??;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "server closed",
                ));
            }
        }
    }

    /// The next reply, copied out (error replies included, as `-...` bytes).
    pub async fn reply(&mut self) -> io::Result<Vec<u8>> {
        Ok(self.reply_ref().await?.to_vec())
    }

    /// The next reply where it lies in the input buffer (valid until the next read).
    pub async fn reply_ref(&mut self) -> io::Result<&[u8]> {
        let range = self.frame().await?;
        Ok(&self.buf[range])
    }

    /// Consumes `n` replies without copying; fails on the first error reply.
    pub async fn skip(&mut self, n: usize) -> io::Result<()> {
        for _ in 0..n {
            let range = self.frame().await?;
            check(&self.buf[range])?;
        }
        Ok(())
    }

    /// Sends one command and returns its reply, failing on an error reply.
    pub async fn ok<A: AsRef<[u8]>>(&mut self, args: &[A]) -> io::Result<Vec<u8>> {
        self.push(args);
        self.flush().await?;
        let reply = self.reply().await?;
        check(&reply)?;
        Ok(reply)
    }

    /// The next reply parsed, without sending anything (a subscriber's messages).
    pub async fn next_value(&mut self) -> io::Result<Value> {
        let range = self.frame().await?;
        check(&self.buf[range.clone()])?;
        parse(&self.buf[range]).ok_or_else(|| io::Error::other("unparsable reply"))
    }

    /// Sends one command and parses its reply, failing on an error reply.
    pub async fn value<A: AsRef<[u8]>>(&mut self, args: &[A]) -> io::Result<Value> {
        let reply = self.ok(args).await?;
        parse(&reply).ok_or_else(|| io::Error::other("unparsable reply"))
    }
}

/// RESP multibulk encoding of one command:
///
/// ```text
/// *<argc>\r\n  then per argument  $<len>\r\n<bytes>\r\n
/// ```
pub fn encode<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    let mut num = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(num.format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(num.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// An error reply (`-ERR ...` or RESP3 `!`) as an `io::Error`.
pub fn check(reply: &[u8]) -> io::Result<()> {
    match reply.first() {
        Some(b'-') | Some(b'!') => Err(io::Error::other(format!(
            "server replied {}",
            String::from_utf8_lossy(reply).trim_end()
        ))),
        _ => Ok(()),
    }
}

/// Parses the decimal integer of a header line (`-1`, `42`); `None` if malformed.
fn parse_int(text: &[u8]) -> Option<i64> {
    let (neg, digits) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + i64::from(d - b'0');
    }
    Some(if neg { -n } else { n })
}

/// The header line at `at` (type byte excluded) and the offset after its `\r\n`.
fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rel = memchr::memchr(b'\n', buf.get(at..)?)?;
    let end = at + rel;
    if end == at || buf[end - 1] != b'\r' {
        return None;
    }
    Some((&buf[at + 1..end - 1], end + 1))
}

/// Length of the first complete RESP2/RESP3 reply in `buf`; `None` while incomplete
/// (or malformed, which then ends in the read timeout).
#[cfg(test)]
fn frame_len(buf: &[u8]) -> Option<usize> {
    FrameScan::default().resume(buf)
}

/// Framing of one reply that may arrive over many reads: where the walk stands (the
/// offset after the last whole item) and, for each aggregate it is inside, how many items
/// are still to skip (an explicit stack, so deep replies cannot overflow the call stack).
#[derive(Debug, Default)]
struct FrameScan {
    /// Offset after the last item walked, from the reply's first byte.
    pos: usize,
    /// Items still to skip in each open aggregate, innermost last.
    pending: Vec<i64>,
}

impl FrameScan {
    /// Walks on over `buf` (the reply from its first byte, longer than at the last call):
    /// the reply's length once it is whole (and the scan is reset for the next reply),
    /// `None` while it is not. Only whole items move the walk on.
    fn resume(&mut self, buf: &[u8]) -> Option<usize> {
        loop {
            let kind = *buf.get(self.pos)?;
            let (text, next) = line(buf, self.pos)?;
            match kind {
                b'$' | b'=' | b'!' => {
                    let n = parse_int(text)?;
                    self.pos = if n >= 0 {
                        let end = next.checked_add(usize::try_from(n).ok()? + 2)?;
                        if buf.len() < end {
                            return None;
                        }
                        end
                    } else {
                        next
                    };
                }
                b'*' | b'~' | b'>' | b'%' | b'|' => {
                    let n = parse_int(text)?;
                    let items = if kind == b'%' || kind == b'|' {
                        n * 2
                    } else {
                        n
                    };
                    self.pos = next;
                    if items > 0 {
                        self.pending.push(items);
                        continue;
                    }
                }
                _ => self.pos = next,
            }
            // One item finished: pop every aggregate it completed.
            loop {
                match self.pending.last_mut() {
                    None => return Some(std::mem::take(&mut self.pos)),
                    Some(left) => {
                        *left -= 1;
                        if *left > 0 {
                            break;
                        }
                        self.pending.pop();
                    }
                }
            }
        }
    }
}

/// A parsed reply, for the few workloads that read what comes back.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Bulk or simple string.
    Str(Vec<u8>),
    /// Integer.
    Int(i64),
    /// Array, set, push or map (flattened key, value, ...).
    Array(Vec<Value>),
    /// Null bulk, null array or RESP3 null.
    Null,
    /// Error reply text.
    Error(String),
}

impl Value {
    /// The items of an array, or none.
    pub fn items(&self) -> &[Value] {
        match self {
            Value::Array(v) => v,
            _ => &[],
        }
    }

    /// The bytes of a string, or none.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Value::Str(s) => s,
            _ => b"",
        }
    }
}

/// Parses one whole reply.
pub fn parse(buf: &[u8]) -> Option<Value> {
    parse_at(buf, 0, 0).map(|(v, _)| v)
}

fn parse_at(buf: &[u8], at: usize, depth: usize) -> Option<(Value, usize)> {
    if depth > 64 {
        return None;
    }
    let kind = *buf.get(at)?;
    let (text, next) = line(buf, at)?;
    match kind {
        b'+' => Some((Value::Str(text.to_vec()), next)),
        b'-' => Some((
            Value::Error(String::from_utf8_lossy(text).into_owned()),
            next,
        )),
        b':' => Some((Value::Int(parse_int(text)?), next)),
        b'_' => Some((Value::Null, next)),
        b'$' | b'=' | b'!' => {
            let n = parse_int(text)?;
            if n < 0 {
                return Some((Value::Null, next));
            }
            let end = next.checked_add(usize::try_from(n).ok()?)?;
            let body = buf.get(next..end)?;
            buf.get(end..end + 2)?;
            let v = if kind == b'!' {
                Value::Error(String::from_utf8_lossy(body).into_owned())
            } else {
                Value::Str(body.to_vec())
            };
            Some((v, end + 2))
        }
        b'*' | b'~' | b'>' | b'%' => {
            let n = parse_int(text)?;
            if n < 0 {
                return Some((Value::Null, next));
            }
            let items = if kind == b'%' { n * 2 } else { n };
            let mut out = Vec::with_capacity(usize::try_from(items).ok()?.min(4096));
            let mut pos = next;
            for _ in 0..items {
                let (v, p) = parse_at(buf, pos, depth + 1)?;
                out.push(v);
                pos = p;
            }
            Some((Value::Array(out), pos))
        }
        _ => Some((Value::Str(text.to_vec()), next)),
    }
}

/// One delivered stream entry of an XREAD/XREADGROUP/XAUTOCLAIM reply.
pub struct Entry<'a> {
    /// The entry ID.
    pub id: &'a [u8],
    /// Field, value, field, value...
    pub fields: &'a [Value],
}

impl Entry<'_> {
    /// The value of `field`, if the entry has it.
    pub fn field(&self, field: &[u8]) -> Option<&[u8]> {
        self.fields
            .chunks(2)
            .find(|kv| kv[0].bytes() == field)
            .and_then(|kv| kv.get(1))
            .map(Value::bytes)
    }
}

/// The entries of an XREAD/XREADGROUP reply in RESP2 shape:
/// `[[key, [[id, [f, v, ...]], ...]], ...]` (null when nothing was delivered).
/// Entries deleted since delivery (`[id, nil]`) are skipped.
pub fn read_entries(reply: &Value) -> Vec<Entry<'_>> {
    let mut out = Vec::new();
    for stream in reply.items() {
        if let [_key, entries] = stream.items() {
            push_entries(entries, &mut out);
        }
    }
    out
}

/// Appends the entries of an `[[id, [f, v, ...]], ...]` list to `out`.
pub fn push_entries<'a>(entries: &'a Value, out: &mut Vec<Entry<'a>>) {
    for e in entries.items() {
        if let [id, Value::Array(fields)] = e.items() {
            out.push(Entry {
                id: id.bytes(),
                fields,
            });
        }
    }
}

/// The value of `name:` in an INFO reply.
pub fn info_field<'a>(info: &'a [u8], name: &str) -> Option<&'a str> {
    std::str::from_utf8(info).ok()?.lines().find_map(|l| {
        l.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(str::trim)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_of_whole_and_partial_replies() {
        assert_eq!(frame_len(b"+OK\r\n"), Some(5));
        assert_eq!(frame_len(b"$3\r\nabc\r\n:1\r\n"), Some(9));
        assert_eq!(frame_len(b"$3\r\nab"), None);
        assert_eq!(frame_len(b"*2\r\n$1\r\na\r\n"), None);
        assert_eq!(frame_len(b"*2\r\n$1\r\na\r\n:5\r\n+x\r\n"), Some(15));
        assert_eq!(frame_len(b"*-1\r\n"), Some(5));
        assert_eq!(frame_len(b"*0\r\n"), Some(4));
        assert_eq!(frame_len(b"$-1\r\n"), Some(5));
        assert_eq!(frame_len(b"%1\r\n+a\r\n*0\r\n"), Some(12));
        assert_eq!(frame_len(b"*1\r\n*1\r\n*0\r\n+tail\r\n"), Some(12));
        assert_eq!(frame_len(b"+OK\r"), None);
        assert_eq!(frame_len(b""), None);
        // Every prefix of a nested reply is incomplete; the whole is exact.
        let whole = b"*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n:7\r\n";
        for cut in 0..whole.len() {
            assert_eq!(frame_len(&whole[..cut]), None, "prefix {cut}");
        }
        assert_eq!(frame_len(whole), Some(whole.len()));
    }

    #[test]
    fn a_reply_framed_across_reads_is_walked_once_and_the_scan_resets() {
        let whole: &[u8] = b"*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n:7\r\n+next\r\n";
        let first = whole.len() - 7;
        let mut scan = FrameScan::default();
        // The bytes arrive one at a time: the walk never gets ahead of a whole item.
        for cut in 0..first {
            assert_eq!(scan.resume(&whole[..cut]), None, "prefix {cut}");
            assert!(scan.pos <= cut);
        }
        assert_eq!(scan.resume(&whole[..first]), Some(first));
        assert_eq!((scan.pos, scan.pending.len()), (0, 0));
        assert_eq!(scan.resume(&whole[first..]), Some(7));
    }

    #[test]
    fn encoding_matches_the_multibulk_layout() {
        let mut out = Vec::new();
        encode(&mut out, &[&b"XADD"[..], b"s", b"*", b"", b"v"]);
        assert_eq!(
            out,
            b"*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$0\r\n\r\n$1\r\nv\r\n"
        );
        assert_eq!(frame_len(&out), Some(out.len()));
    }

    #[test]
    fn parsing_a_readgroup_reply() {
        let r = b"*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*4\r\n$2\r\nts\r\n$2\r\n42\r\n\
                  $1\r\na\r\n$1\r\nb\r\n*2\r\n$3\r\n2-0\r\n*-1\r\n";
        let v = parse(r).expect("parses");
        let entries = read_entries(&v);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].id, b"1-0");
        assert_eq!(entries[0].field(b"ts"), Some(&b"42"[..]));
        assert_eq!(entries[0].field(b"a"), Some(&b"b"[..]));
        assert_eq!(entries[0].field(b"zz"), None);
        assert_eq!(parse(b"*-1\r\n"), Some(Value::Null));
        assert_eq!(parse(b"-ERR x\r\n"), Some(Value::Error("ERR x".into())));
        assert_eq!(parse(b":-12\r\n"), Some(Value::Int(-12)));
        assert_eq!(parse(b"*2\r\n:1\r\n"), None);
        assert!(check(b"-ERR no\r\n").is_err());
        assert!(check(b"+OK\r\n").is_ok());
    }

    #[test]
    fn info_fields() {
        let info = b"# Server\r\nprocess_id:123\r\nused_memory:99\r\nused_memory_rss:5\r\n";
        assert_eq!(info_field(info, "process_id"), Some("123"));
        assert_eq!(info_field(info, "used_memory"), Some("99"));
        assert_eq!(info_field(info, "used_memory_peak"), None);
    }
}
