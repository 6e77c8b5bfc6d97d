//! The incremental request parser: bytes from a client → one [`Argv`] per command.
//!
//! It behaves like Redis's `processInputBuffer` / `processMultibulkBuffer` /
//! `processInlineBuffer` (networking.c), limits and error strings included. A request whose
//! first byte is `*` is a multibulk (RESP array of bulk strings); anything else is an inline
//! command line:
//!
//! ```text
//! multibulk   *<count>\r\n  then <count> times  $<len>\r\n<len bytes>\r\n
//!             count line: '\r' within 64 KiB          else "too big mbulk count string"
//!                         string2ll integer ≤ INT_MAX  else "invalid multibulk length"
//!                         count ≤ 0                    → empty command, skipped
//!             bulk line:  '\r' within 64 KiB          else "too big bulk count string"
//!                         first byte '$'               else "expected '$', got 'X'"
//!                         0 ≤ len ≤ proto-max-bulk-len else "invalid bulk length"
//! inline      <line>\n or <line>\r\n, '\n' within 64 KiB   else "too big inline request"
//!             split by `inline::split_args` (sdssplitargs) else "unbalanced quotes in request"
//!             no arguments (blank line)                    → skipped
//! ```
//!
//! Before `AUTH` (see [`RequestParser::set_authenticated`]) a count above 10 and a bulk
//! above 16384 bytes are refused, as Redis refuses them to unauthenticated clients.
//!
//! # State between calls
//!
//! A command that arrives in pieces is not re-parsed from its first byte: the parser keeps
//! Redis's `multibulklen` (arguments still to come), `bulklen` (length of the argument whose
//! header has been read) and the arguments already cut off, so each byte is looked at a
//! bounded number of times however the command is chunked. What is left in the caller's
//! buffer is always the unparsed tail; the parser never keeps bytes of its own.
//!
//! # Zero copy
//!
//! Every argument of a multibulk, and every unquoted inline argument, is a
//! `split_to(..).freeze()` slice of the caller's buffer. For a bulk of 32 KiB or more
//! (Redis's `PROTO_MBULK_BIG_ARG`) the buffer is grown once, to hold the whole argument, as
//! soon as its header is read, so that the argument lands in one allocation however many
//! reads it takes.
//!
//! # Faithful quirks
//!
//! Redis finds header lines with `strchr` on its NUL-terminated query buffer. Two
//! consequences are kept on purpose: the byte after a header's `\r` and the two bytes after
//! a bulk's payload are skipped without being checked to be `\n` / `\r\n`; and a NUL byte
//! before the `\r` (multibulk) or `\n` (inline) that ends a line hides that line's end, so
//! the request waits for more bytes until the 64 KiB line limit rejects it.

use bytes::{Buf, Bytes, BytesMut};

use crate::resp::Argv;
use crate::resp::inline;

/// Longest inline request, and longest multibulk count or bulk length line, in bytes
/// (networking.c `PROTO_INLINE_MAX_SIZE`).
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;

/// Bulks at least this long get their whole buffer reserved as soon as their header is read
/// (networking.c `PROTO_MBULK_BIG_ARG`).
pub const PROTO_MBULK_BIG_ARG: usize = 32 * 1024;

/// How far ahead of the bytes received the buffer of a big bulk is grown at once (see
/// "Zero copy" above).
pub const BIG_ARG_RESERVE_MAX: usize = 1024 * 1024;

/// Bytes counted per argument on top of its payload for the query buffer limit: the
/// slice handle kept in the argument vector.
const ARG_OVERHEAD: usize = std::mem::size_of::<bytes::Bytes>();

/// Most arguments an unauthenticated client may announce (networking.c, literal `10`).
pub const UNAUTH_MAX_MULTIBULK_LEN: i64 = 10;

/// Longest bulk an unauthenticated client may announce (networking.c, literal `16384`).
pub const UNAUTH_MAX_BULK_LEN: i64 = 16384;

/// The argument vector of a new multibulk is allocated for at most this many arguments and
/// grows from there, so that a hostile `*2147483647` costs nothing up front (networking.c
/// caps `argv_len` the same way).
const ARGV_INITIAL_CAPACITY_MAX: usize = 1024;

/// Integers longer than this are not integers (util.h `LONG_STR_SIZE`, used by `string2ll`).
const LONG_STR_SIZE: usize = 21;

/// The limits the parser enforces; the connection sets them from the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParserLimits {
    /// Longest bulk argument accepted (`proto-max-bulk-len`, default 512 MiB).
    pub proto_max_bulk_len: u64,
    /// Most unparsed bytes a client may leave buffered (`client-query-buffer-limit`,
    /// default 1 GiB).
    pub client_query_buffer_limit: usize,
}

impl Default for ParserLimits {
    fn default() -> Self {
        ParserLimits {
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
        }
    }
}

/// A malformed request. The text is what follows `-ERR ` in the reply; after sending it the
/// connection is closed, as Redis closes it (`CLIENT_CLOSE_AFTER_REPLY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolError(pub &'static str);

impl ProtocolError {
    /// The multibulk count line has no `\r` within 64 KiB.
    pub const TOO_BIG_MBULK_COUNT: ProtocolError =
        ProtocolError("Protocol error: too big mbulk count string");
    /// The multibulk count is not an integer or is above `INT_MAX`.
    pub const INVALID_MULTIBULK_LENGTH: ProtocolError =
        ProtocolError("Protocol error: invalid multibulk length");
    /// More than 10 arguments before `AUTH`.
    pub const UNAUTHENTICATED_MULTIBULK_LENGTH: ProtocolError =
        ProtocolError("Protocol error: unauthenticated multibulk length");
    /// A bulk length line has no `\r` within 64 KiB.
    pub const TOO_BIG_BULK_COUNT: ProtocolError =
        ProtocolError("Protocol error: too big bulk count string");
    /// A bulk length is not an integer, is negative, or is above `proto-max-bulk-len`.
    pub const INVALID_BULK_LENGTH: ProtocolError =
        ProtocolError("Protocol error: invalid bulk length");
    /// A bulk above 16384 bytes before `AUTH`.
    pub const UNAUTHENTICATED_BULK_LENGTH: ProtocolError =
        ProtocolError("Protocol error: unauthenticated bulk length");
    /// An inline request has no `\n` within 64 KiB.
    pub const TOO_BIG_INLINE_REQUEST: ProtocolError =
        ProtocolError("Protocol error: too big inline request");
    /// An inline request has an open quote, or a closing quote glued to the next word.
    pub const UNBALANCED_QUOTES: ProtocolError =
        ProtocolError("Protocol error: unbalanced quotes in request");
    /// The client left more than `client-query-buffer-limit` unparsed bytes. Redis logs and
    /// closes the connection without a reply; this text is ours.
    pub const QUERY_BUFFER_LIMIT: ProtocolError =
        ProtocolError("Protocol error: query buffer limit exceeded");

    /// `Protocol error: expected '$', got 'X'` for the byte `got` found where a bulk header
    /// should start. As in Redis, `\r` and `\n` are shown as a space; a byte above 0x7f is
    /// shown as the Unicode character of that number (Redis sends the raw byte, which a
    /// `&str` cannot hold).
    pub fn expected_dollar(got: u8) -> ProtocolError {
        ProtocolError(EXPECTED_DOLLAR[usize::from(got)])
    }
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for ProtocolError {}

const EXPECTED_DOLLAR_PREFIX: &[u8] = b"Protocol error: expected '$', got '";
/// Prefix, the byte as UTF-8 (at most two bytes for U+0000..=U+00FF), closing quote.
const EXPECTED_DOLLAR_MAX: usize = EXPECTED_DOLLAR_PREFIX.len() + 3;

/// The 256 `expected '$'` messages, as bytes and lengths, built at compile time.
static EXPECTED_DOLLAR_BYTES: [([u8; EXPECTED_DOLLAR_MAX], usize); 256] = {
    let mut out = [([0u8; EXPECTED_DOLLAR_MAX], 0usize); 256];
    let mut byte = 0;
    while byte < 256 {
        let mut msg = [0u8; EXPECTED_DOLLAR_MAX];
        let mut n = 0;
        while n < EXPECTED_DOLLAR_PREFIX.len() {
            msg[n] = EXPECTED_DOLLAR_PREFIX[n];
            n += 1;
        }
        // Redis maps '\r' and '\n' in error text to spaces (addReplyErrorFormat).
        let ch = if byte == b'\r' as usize || byte == b'\n' as usize {
            b' ' as usize
        } else {
            byte
        };
        if ch < 0x80 {
            msg[n] = ch as u8;
            n += 1;
        } else {
            msg[n] = 0xc0 | (ch >> 6) as u8;
            msg[n + 1] = 0x80 | (ch & 0x3f) as u8;
            n += 2;
        }
        msg[n] = b'\'';
        n += 1;
        out[byte] = (msg, n);
        byte += 1;
    }
    out
};

/// The 256 `expected '$'` messages as `&'static str`; a build error if any is not UTF-8.
static EXPECTED_DOLLAR: [&str; 256] = {
    let mut out = [""; 256];
    let mut byte = 0;
    while byte < 256 {
        let (msg, len) = &EXPECTED_DOLLAR_BYTES[byte];
        let (msg, _) = msg.split_at(*len);
        out[byte] = match std::str::from_utf8(msg) {
            Ok(text) => text,
            Err(_) => panic!("expected-'$' message is not UTF-8"),
        };
        byte += 1;
    }
    out
};

/// Parses a whole byte string as a signed 64-bit integer, exactly as Redis's `string2ll`:
/// optional `-`, then `0` alone or a digit 1-9 followed by digits; no `+`, no spaces, no
/// leading zeros, no `-0`, at most 20 bytes, no overflow.
fn string2ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= LONG_STR_SIZE {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        // -(v) must fit: v ≤ 2^63.
        0i64.checked_sub_unsigned(v)
    } else {
        i64::try_from(v).ok()
    }
}

/// Where the first `needle` is in `buf` as Redis's `strchr` on the NUL-terminated query
/// buffer sees it: a NUL byte before the needle hides it (see "Faithful quirks" above).
fn strchr(buf: &[u8], needle: u8) -> Option<usize> {
    let at = memchr::memchr2(needle, 0, buf)?;
    (buf.get(at) == Some(&needle)).then_some(at)
}

/// Most arguments of a command taken by [`RequestParser::parse_whole`].
const WHOLE_MAX_ARGS: usize = 1024;

/// Reads a `<kind><digits>\r\n` header at `at`: its value and the index after it, when
/// the digits are 1 to 17 decimal digits without a leading zero (or just `0`) followed by
/// `'\r'` and one more byte. `None` otherwise, also for a header not complete yet.
fn decimal_header(bytes: &[u8], at: usize, kind: u8) -> Option<(u64, usize)> {
    // Most headers have one or two digits (command names, keys, IDs, small values): read
    // those with one pattern instead of the loop (the answers are the loop's).
    match bytes.get(at..)? {
        [k, d @ b'0'..=b'9', b'\r', _, ..] if *k == kind => {
            return Some((u64::from(d - b'0'), at + 4));
        }
        [k, d1 @ b'1'..=b'9', d2 @ b'0'..=b'9', b'\r', _, ..] if *k == kind => {
            return Some((u64::from(d1 - b'0') * 10 + u64::from(d2 - b'0'), at + 5));
        }
        _ => {}
    }
    if *bytes.get(at)? != kind {
        return None;
    }
    let mut value: u64 = 0;
    let mut i = at + 1;
    loop {
        let b = *bytes.get(i)?;
        if !b.is_ascii_digit() {
            break;
        }
        value = value * 10 + u64::from(b - b'0');
        i += 1;
        if i - at > 18 {
            return None;
        }
    }
    let digits = i - at - 1;
    if digits == 0 || (digits > 1 && bytes[at + 1] == b'0') || bytes[i] != b'\r' {
        return None;
    }
    // The byte after '\r' (taken to be '\n') must be there too.
    if i + 1 >= bytes.len() {
        return None;
    }
    Some((value, i + 2))
}

/// Where the `'\r'` ending a `*<count>` or `$<len>` header line is: [`strchr`]`(buf,
/// b'\r')`, found without a vector search when the line is the usual type byte, a few
/// digits and `'\r'` (a short scan beats setting up the search on these 3-8 byte lines).
fn header_cr(buf: &[u8]) -> Option<usize> {
    let digits = buf
        .iter()
        .skip(1)
        .take(LONG_STR_SIZE)
        .take_while(|b| b.is_ascii_digit())
        .count();
    match buf.get(1 + digits) {
        // Only digits precede it, so it is the first '\r' and no NUL comes before it.
        Some(b'\r') => Some(1 + digits),
        _ => strchr(buf, b'\r'),
    }
}

/// The incremental parser for one connection's requests.
#[derive(Debug)]
pub struct RequestParser {
    /// The limits in force.
    limits: ParserLimits,
    /// False until the client has authenticated when a password is required; while false
    /// the unauthenticated limits apply (Redis: `authRequired(c)`).
    authenticated: bool,
    /// Bulks still to read in the current multibulk request; 0 between requests
    /// (Redis: `multibulklen`). Invariant: 0 ⇒ `argv` is empty and `bulk_len` is `None`.
    multibulk_len: usize,
    /// Payload length of the bulk whose `$<len>\r\n` header has been consumed but whose
    /// payload has not (Redis: `bulklen`, -1 = `None`).
    bulk_len: Option<usize>,
    /// The arguments read so far of the current multibulk request.
    argv: Argv,
    /// Payload bytes plus [`ARG_OVERHEAD`] per argument in `argv`.
    argv_bytes: usize,
    /// The first protocol error; once set, every call returns it, because the request
    /// stream is no longer in sync (the connection is being closed).
    failed: Option<ProtocolError>,
    /// Scratch of [`RequestParser::parse_whole`]: each argument's `(start, end)` in the
    /// command's bytes, kept to reuse its allocation.
    spans: Vec<(usize, usize)>,
    /// Whether [`RequestParser::take_frame`] is wanted (a replica's link to its primary).
    keep_frames: bool,
    /// With `keep_frames`: the bytes of the command the last parse returned, when they
    /// came in one piece (the usual case); the arguments are slices of them.
    frame: Option<Bytes>,
}

/// What happened to the start of a new request.
enum Start {
    /// A multibulk header was read; its arguments follow.
    Multibulk,
    /// An inline command (possibly empty) was read.
    Inline(Argv),
    /// An empty multibulk (`*0`, `*-1`) was consumed.
    Empty,
    /// The header is not complete yet.
    Incomplete,
}

impl RequestParser {
    /// A parser for a new connection, authenticated (no password required) until told
    /// otherwise.
    pub fn new(limits: ParserLimits) -> Self {
        RequestParser {
            limits,
            authenticated: true,
            multibulk_len: 0,
            bulk_len: None,
            argv: Argv::new(),
            argv_bytes: 0,
            failed: None,
            spans: Vec::new(),
            keep_frames: false,
            frame: None,
        }
    }

    /// Keeps each command's own bytes for [`RequestParser::take_frame`]: a replica
    /// forwards what its primary sent to its own backlog as it came, instead of
    /// encoding the arguments again.
    pub fn keep_frames(&mut self) {
        self.keep_frames = true;
    }

    /// The bytes of the command the last [`RequestParser::parse`] returned, exactly as
    /// received, when it was parsed in one piece and [`RequestParser::keep_frames`] is
    /// on; `None` otherwise (a command that arrived across reads).
    pub fn take_frame(&mut self) -> Option<Bytes> {
        self.frame.take()
    }

    /// While false, Redis's unauthenticated limits apply: a multibulk count above 10 is
    /// `Protocol error: unauthenticated multibulk length`, a bulk length above 16384 is
    /// `Protocol error: unauthenticated bulk length`. Defaults to true.
    pub fn set_authenticated(&mut self, yes: bool) {
        self.authenticated = yes;
    }

    /// Payload bytes of the arguments already read of a request not complete yet (Redis
    /// moves them out of the query buffer into `argv` as it goes: CLIENT LIST `argv-mem`).
    pub fn partial_argv_bytes(&self) -> usize {
        self.argv.iter().map(|a| a.len()).sum()
    }

    /// Replaces the limits (`CONFIG SET proto-max-bulk-len` / `client-query-buffer-limit`);
    /// they apply from the next header or check on.
    pub fn set_limits(&mut self, limits: ParserLimits) {
        self.limits = limits;
    }

    /// Parses the next complete command out of `buf`, consuming the bytes it used.
    ///
    /// Arguments are zero-copy slices of `buf`. `Ok(None)` means more bytes are needed: the
    /// partial command is kept inside the parser and `buf` holds only its unparsed tail, so
    /// the caller appends the next read to `buf` and calls again. Empty commands (`*0\r\n`,
    /// `*-1\r\n`, blank inline lines) are skipped, as Redis skips them. After an error the
    /// connection must be closed; later calls return the same error.
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<Argv>, ProtocolError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        if self.keep_frames {
            self.frame = None;
        }
        let result = self.parse_inner(buf);
        if let Err(err) = result {
            self.failed = Some(err);
        }
        result
    }

    fn parse_inner(&mut self, buf: &mut BytesMut) -> Result<Option<Argv>, ProtocolError> {
        loop {
            if self.multibulk_len == 0 {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first == b'*'
                    && let Some(argv) = self.parse_whole(buf)
                {
                    return Ok(Some(argv));
                }
                let start = if first == b'*' {
                    self.start_multibulk(buf)?
                } else {
                    self.read_inline(buf)?
                };
                match start {
                    Start::Multibulk => {}
                    Start::Inline(argv) if argv.is_empty() => continue,
                    Start::Inline(argv) => return Ok(Some(argv)),
                    Start::Empty => continue,
                    Start::Incomplete => return self.need_more(buf),
                }
            }
            return match self.read_bulks(buf)? {
                true => {
                    self.argv_bytes = 0;
                    Ok(Some(std::mem::take(&mut self.argv)))
                }
                false => self.need_more(buf),
            };
        }
    }

    /// The fast path for the usual request: a whole multibulk command of at most
    /// [`WHOLE_MAX_ARGS`] short arguments already in `buf`, with plain decimal headers.
    /// It finds every argument without touching `buf`, then takes the command's bytes in
    /// one split and hands out each argument as a slice of them. Anything else (a partial
    /// command, a long or big argument, an odd header, an error to report) returns `None`
    /// with `buf` untouched, and the general path below parses it, so both paths accept
    /// and refuse exactly the same input.
    fn parse_whole(&mut self, buf: &mut BytesMut) -> Option<Argv> {
        let bytes = &buf[..];
        let (count, mut pos) = decimal_header(bytes, 0, b'*')?;
        if count == 0 || count > WHOLE_MAX_ARGS as u64 {
            return None;
        }
        if !self.authenticated && count > UNAUTH_MAX_MULTIBULK_LEN as u64 {
            return None;
        }
        let mut max_len = self
            .limits
            .proto_max_bulk_len
            .min(PROTO_MBULK_BIG_ARG as u64 - 1);
        if !self.authenticated {
            max_len = max_len.min(UNAUTH_MAX_BULK_LEN as u64);
        }
        let count = count as usize;
        // Most commands are short: their spans live on the stack.
        let mut short = [(0usize, 0usize); 16];
        let spans: &mut [(usize, usize)] = if count <= short.len() {
            &mut short[..count]
        } else {
            self.spans.clear();
            self.spans.resize(count, (0, 0));
            &mut self.spans
        };
        for span in spans.iter_mut() {
            let (len, start) = decimal_header(bytes, pos, b'$')?;
            if len > max_len {
                return None;
            }
            let len = len as usize;
            // The payload and its (unchecked) trailing "\r\n".
            let end = start.checked_add(len)?;
            if end.checked_add(2)? > bytes.len() {
                return None;
            }
            *span = (start, end);
            pos = end + 2;
        }
        let frame = buf.split_to(pos).freeze();
        let mut argv = Argv::with_capacity(count);
        if self.keep_frames {
            argv.extend(spans.iter().map(|&(a, b)| frame.slice(a..b)));
            self.frame = Some(frame);
            return Some(argv);
        }
        // Each slice takes a reference to the frame's bytes (an atomic increment, and a
        // decrement when dropped): the last argument is the frame itself, narrowed.
        let (&(last_start, last_end), rest) = spans.split_last()?;
        argv.extend(rest.iter().map(|&(a, b)| frame.slice(a..b)));
        let mut last = frame;
        last.truncate(last_end);
        last.advance(last_start);
        argv.push(last);
        Some(argv)
    }

    /// The answer when the buffer holds no complete command: wait for more bytes, unless the
    /// client has already left more unparsed bytes than it may.
    fn need_more(&self, buf: &BytesMut) -> Result<Option<Argv>, ProtocolError> {
        if self.pending_bytes(buf) > self.limits.client_query_buffer_limit {
            return Err(ProtocolError::QUERY_BUFFER_LIMIT);
        }
        Ok(None)
    }

    /// The memory a client holds in requests not yet complete: the unparsed bytes in
    /// `buf` plus the arguments already read of the current command.
    pub fn pending_bytes(&self, buf: &BytesMut) -> usize {
        buf.len().saturating_add(self.argv_bytes)
    }

    /// Reads `*<count>\r\n` (Redis: the `multibulklen == 0` half of `processMultibulkBuffer`).
    fn start_multibulk(&mut self, buf: &mut BytesMut) -> Result<Start, ProtocolError> {
        let Some(cr) = header_cr(buf) else {
            if buf.len() > PROTO_INLINE_MAX_SIZE {
                return Err(ProtocolError::TOO_BIG_MBULK_COUNT);
            }
            return Ok(Start::Incomplete);
        };
        // The byte after '\r' (taken to be '\n') must be there too.
        if cr + 2 > buf.len() {
            return Ok(Start::Incomplete);
        }
        let count = buf
            .get(1..cr)
            .and_then(string2ll)
            .filter(|&n| n <= i64::from(i32::MAX))
            .ok_or(ProtocolError::INVALID_MULTIBULK_LENGTH)?;
        if count > UNAUTH_MAX_MULTIBULK_LEN && !self.authenticated {
            return Err(ProtocolError::UNAUTHENTICATED_MULTIBULK_LENGTH);
        }
        buf.advance(cr + 2);
        let Ok(count) = usize::try_from(count) else {
            return Ok(Start::Empty);
        };
        if count == 0 {
            return Ok(Start::Empty);
        }
        self.multibulk_len = count;
        self.bulk_len = None;
        self.argv = Argv::with_capacity(count.min(ARGV_INITIAL_CAPACITY_MAX));
        self.argv_bytes = 0;
        Ok(Start::Multibulk)
    }

    /// Reads as many `$<len>\r\n<payload>\r\n` bulks as `buf` holds; true once the request's
    /// last bulk is in `argv` (Redis: the loop of `processMultibulkBuffer`).
    fn read_bulks(&mut self, buf: &mut BytesMut) -> Result<bool, ProtocolError> {
        while self.multibulk_len > 0 {
            let len = match self.bulk_len {
                Some(len) => len,
                None => match self.read_bulk_header(buf)? {
                    Some(len) => len,
                    None => return Ok(false),
                },
            };
            // Payload plus its (unchecked) trailing "\r\n".
            if buf.len() < len.saturating_add(2) {
                return Ok(false);
            }
            // One split takes the payload with its "\r\n", which the slice then drops.
            let mut arg = buf.split_to(len + 2).freeze();
            arg.truncate(len);
            self.argv_bytes = self.argv_bytes.saturating_add(len + ARG_OVERHEAD);
            self.argv.push(arg);
            self.bulk_len = None;
            self.multibulk_len -= 1;
        }
        Ok(true)
    }

    /// Reads one `$<len>\r\n` header and records `len` in `bulk_len`; `None` if the line is
    /// not complete yet.
    fn read_bulk_header(&mut self, buf: &mut BytesMut) -> Result<Option<usize>, ProtocolError> {
        let Some(cr) = header_cr(buf) else {
            if buf.len() > PROTO_INLINE_MAX_SIZE {
                return Err(ProtocolError::TOO_BIG_BULK_COUNT);
            }
            return Ok(None);
        };
        if cr + 2 > buf.len() {
            return Ok(None);
        }
        match buf.first() {
            Some(b'$') => {}
            Some(&other) => return Err(ProtocolError::expected_dollar(other)),
            None => return Ok(None),
        }
        let len = buf
            .get(1..cr)
            .and_then(string2ll)
            .filter(|&n| n >= 0 && n.unsigned_abs() <= self.limits.proto_max_bulk_len)
            .ok_or(ProtocolError::INVALID_BULK_LENGTH)?;
        if len > UNAUTH_MAX_BULK_LEN && !self.authenticated {
            return Err(ProtocolError::UNAUTHENTICATED_BULK_LENGTH);
        }
        let len = usize::try_from(len).map_err(|_| ProtocolError::INVALID_BULK_LENGTH)?;
        buf.advance(cr + 2);
        let wanted = len.saturating_add(2);
        if len >= PROTO_MBULK_BIG_ARG && buf.len() <= wanted {
            // Make room for the whole argument now, so it is read into one allocation and
            // leaves as one zero-copy slice (Redis: sdsMakeRoomForNonGreedy), but never
            // far ahead of the bytes that came: an announced length is only a claim.
            buf.reserve((wanted - buf.len()).min(BIG_ARG_RESERVE_MAX));
        }
        self.bulk_len = Some(len);
        Ok(Some(len))
    }

    /// Reads one inline command line (Redis: `processInlineBuffer`).
    fn read_inline(&mut self, buf: &mut BytesMut) -> Result<Start, ProtocolError> {
        let Some(lf) = strchr(buf, b'\n') else {
            if buf.len() > PROTO_INLINE_MAX_SIZE {
                return Err(ProtocolError::TOO_BIG_INLINE_REQUEST);
            }
            return Ok(Start::Incomplete);
        };
        let mut line = buf.split_to(lf + 1).freeze();
        line.truncate(lf);
        if line.last() == Some(&b'\r') {
            line.truncate(lf - 1);
        }
        inline::split_args(&line)
            .map(Start::Inline)
            .map_err(|_| ProtocolError::UNBALANCED_QUOTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// Feeds `input` in one piece and collects every command until the parser wants more.
    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        parse_all_with(&mut RequestParser::new(ParserLimits::default()), input)
    }

    fn parse_all_with(
        parser: &mut RequestParser,
        input: &[u8],
    ) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(argv) = parser.parse(&mut buf)? {
            out.push(to_vecs(argv));
        }
        Ok(out)
    }

    fn to_vecs(argv: Argv) -> Vec<Vec<u8>> {
        argv.into_iter().map(|a| a.to_vec()).collect()
    }

    fn cmd(args: &[&[u8]]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.to_vec()).collect()
    }

    /// The error for `input` fed in one piece.
    fn error_of(input: &[u8]) -> &'static str {
        match parse_all(input) {
            Err(ProtocolError(text)) => text,
            Ok(cmds) => panic!("no error for {input:?}: {cmds:?}"),
        }
    }

    /// True if `input` fed in one piece parses to nothing and waits for more.
    fn waits(input: &[u8]) -> bool {
        let mut buf = BytesMut::from(input);
        let mut parser = RequestParser::new(ParserLimits::default());
        matches!(parser.parse(&mut buf), Ok(None))
    }

    /// With frames kept, a command that came whole hands back its exact bytes (and only
    /// until the next parse); one that came in pieces, or an inline one, hands back none.
    #[test]
    fn kept_frames_are_the_commands_own_bytes() {
        let mut parser = RequestParser::new(ParserLimits::default());
        let first = encode(&[b"XADD", b"s", b"1-1", b"f", b"v"]);
        let second = encode(&[b"SET", b"k", b"value"]);
        let mut buf = BytesMut::from([first.as_slice(), second.as_slice()].concat().as_slice());
        assert!(parser.parse(&mut buf).expect("parse").is_some());
        assert_eq!(parser.take_frame(), None, "not kept unless asked");
        parser.keep_frames();
        assert!(parser.parse(&mut buf).expect("parse").is_some());
        assert_eq!(parser.take_frame().as_deref(), Some(second.as_slice()));
        assert_eq!(parser.take_frame(), None, "taken once");
        // In two pieces: the arguments, but no frame.
        let (a, b) = first.split_at(9);
        let mut buf = BytesMut::from(a);
        assert!(parser.parse(&mut buf).expect("parse").is_none());
        buf.extend_from_slice(b);
        assert!(parser.parse(&mut buf).expect("parse").is_some());
        assert_eq!(parser.take_frame(), None);
        let mut buf = BytesMut::from(&b"PING\r\n"[..]);
        assert!(parser.parse(&mut buf).expect("parse").is_some());
        assert_eq!(parser.take_frame(), None, "inline commands have no frame");
    }

    fn encode(argv: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", argv.len()).into_bytes();
        for arg in argv {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    /// The one- and two-digit shortcut of `decimal_header` answers exactly as its loop:
    /// checked against a plain reading of the rule on every header of up to three digits
    /// (leading zeros included), cut short at every length, at two offsets.
    #[test]
    fn decimal_header_shortcut_matches_the_rule() {
        fn by_the_rule(bytes: &[u8], at: usize, kind: u8) -> Option<(u64, usize)> {
            if *bytes.get(at)? != kind {
                return None;
            }
            let digits = bytes[at + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits == 0 || digits > 17 || (digits > 1 && bytes[at + 1] == b'0') {
                return None;
            }
            let cr = at + 1 + digits;
            if *bytes.get(cr)? != b'\r' || cr + 1 >= bytes.len() {
                return None;
            }
            let text = std::str::from_utf8(&bytes[at + 1..cr]).ok()?;
            Some((text.parse().ok()?, cr + 2))
        }
        let mut bodies: Vec<String> = Vec::new();
        for n in 0..1000 {
            bodies.push(n.to_string());
            bodies.push(format!("0{n}"));
        }
        bodies.push(String::new());
        for kind in [b'$', b'*'] {
            for body in &bodies {
                for other_kind in [kind, b'+'] {
                    let full = [&b"xx"[..], &[other_kind], body.as_bytes(), b"\r\nrest"].concat();
                    for end in 0..=full.len() {
                        for at in [0, 2] {
                            let bytes = &full[..end];
                            let want = if at <= bytes.len() {
                                by_the_rule(bytes, at, kind)
                            } else {
                                None
                            };
                            let got = if at <= bytes.len() {
                                decimal_header(bytes, at, kind)
                            } else {
                                None
                            };
                            assert_eq!(got, want, "{:?} at {at}", String::from_utf8_lossy(bytes));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_multibulk_command_is_parsed() {
        assert_eq!(
            parse_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\nv\r\nx\r\n").unwrap(),
            vec![cmd(&[b"SET", b"k", b"v\r\nx"])]
        );
        assert_eq!(parse_all(b"*1\r\n$0\r\n\r\n").unwrap(), vec![cmd(&[b""])]);
    }

    #[test]
    fn pipelined_commands_in_one_buffer_come_out_in_order() {
        let mut input = encode(&[b"PING"]);
        input.extend_from_slice(b"ECHO hi\r\n");
        input.extend_from_slice(&encode(&[b"XADD", b"s", b"*", b"f", b"v"]));
        input.extend_from_slice(b"*0\r\n\r\n*-1\r\n  \n");
        input.extend_from_slice(&encode(&[b"GET", b"k"]));
        input.extend_from_slice(b"*2\r\n$3\r\nGE"); // partial
        let mut buf = BytesMut::from(&input[..]);
        let mut parser = RequestParser::new(ParserLimits::default());
        let mut got = Vec::new();
        while let Some(argv) = parser.parse(&mut buf).unwrap() {
            got.push(to_vecs(argv));
        }
        assert_eq!(
            got,
            vec![
                cmd(&[b"PING"]),
                cmd(&[b"ECHO", b"hi"]),
                cmd(&[b"XADD", b"s", b"*", b"f", b"v"]),
                cmd(&[b"GET", b"k"]),
            ]
        );
        assert_eq!(&buf[..], b"GE");
        buf.extend_from_slice(b"T\r\n$1\r\nk\r\n");
        assert_eq!(
            parser.parse(&mut buf).unwrap().map(to_vecs),
            Some(cmd(&[b"GET", b"k"]))
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn commands_split_at_every_byte_boundary_parse_the_same() {
        let mut input = encode(&[b"XADD", b"stream", b"*", b"field", b"va\r\nlue"]);
        input.extend_from_slice(b"PING\r\nSET 'a b' \"c\\x41\"\n*0\r\n");
        input.extend_from_slice(&encode(&[b"", b"x"]));
        let expected = parse_all(&input).unwrap();
        assert_eq!(expected.len(), 4);
        for cut in 0..=input.len() {
            for second_cut in cut..=input.len() {
                let mut parser = RequestParser::new(ParserLimits::default());
                let mut buf = BytesMut::new();
                let mut got = Vec::new();
                for piece in [&input[..cut], &input[cut..second_cut], &input[second_cut..]] {
                    buf.extend_from_slice(piece);
                    while let Some(argv) = parser.parse(&mut buf).unwrap() {
                        got.push(to_vecs(argv));
                    }
                }
                assert_eq!(got, expected, "cut at {cut} and {second_cut}");
                assert!(buf.is_empty());
            }
        }
    }

    #[test]
    fn a_command_fed_one_byte_at_a_time_parses() {
        let input = encode(&[b"XADD", b"s", b"*", b"f", b"v"]);
        let mut parser = RequestParser::new(ParserLimits::default());
        let mut buf = BytesMut::new();
        for (i, &b) in input.iter().enumerate() {
            buf.extend_from_slice(&[b]);
            let got = parser.parse(&mut buf).unwrap();
            assert_eq!(got.is_some(), i == input.len() - 1, "byte {i}");
            if let Some(argv) = got {
                assert_eq!(to_vecs(argv), cmd(&[b"XADD", b"s", b"*", b"f", b"v"]));
            }
        }
    }

    #[test]
    fn empty_multibulks_are_skipped() {
        assert!(parse_all(b"*0\r\n").unwrap().is_empty());
        assert!(parse_all(b"*-1\r\n*-100\r\n").unwrap().is_empty());
        assert_eq!(
            parse_all(b"*0\r\n*1\r\n$4\r\nPING\r\n").unwrap(),
            vec![cmd(&[b"PING"])]
        );
    }

    #[test]
    fn blank_inline_lines_are_skipped() {
        assert!(parse_all(b"\r\n\n  \t \r\n").unwrap().is_empty());
        assert_eq!(parse_all(b"\r\n\nPING\r\n").unwrap(), vec![cmd(&[b"PING"])]);
    }

    #[test]
    fn inline_lines_end_at_lf_with_an_optional_cr() {
        assert_eq!(
            parse_all(b"PING\nECHO a\r\nECHO \"b\r\"\r\n").unwrap(),
            vec![
                cmd(&[b"PING"]),
                cmd(&[b"ECHO", b"a"]),
                cmd(&[b"ECHO", b"b\r"])
            ]
        );
        // Only one '\r' before the '\n' is stripped; an earlier one is a separator.
        assert_eq!(parse_all(b"A B\r\r\n").unwrap(), vec![cmd(&[b"A", b"B"])]);
        assert!(waits(b"PING"));
        assert!(waits(b"PING\r"));
    }

    #[test]
    fn inline_arguments_follow_sdssplitargs() {
        assert_eq!(
            parse_all(b"SET \"a b\" 'c\\'d' \"\\x00\\xff\"\r\n").unwrap(),
            vec![cmd(&[b"SET", b"a b", b"c'd", b"\x00\xff"])]
        );
    }

    #[test]
    fn unbalanced_quotes_are_a_protocol_error() {
        for input in [
            &b"ECHO \"a\r\n"[..],
            b"ECHO 'a\n",
            b"ECHO \"a\"x\n",
            b"ECHO 'a'x\n",
            b"ECHO \"a\\\"\n",
            b"ECHO 'a\\'\n",
        ] {
            assert_eq!(
                error_of(input),
                "Protocol error: unbalanced quotes in request",
                "{input:?}"
            );
        }
    }

    #[test]
    fn an_inline_request_without_lf_within_64_kib_is_too_big() {
        assert!(waits(&vec![b'x'; PROTO_INLINE_MAX_SIZE]));
        assert_eq!(
            error_of(&vec![b'x'; PROTO_INLINE_MAX_SIZE + 1]),
            "Protocol error: too big inline request"
        );
        // A line of exactly 64 KiB plus its newline is fine.
        let mut line = vec![b'x'; PROTO_INLINE_MAX_SIZE];
        line.push(b'\n');
        assert_eq!(parse_all(&line).unwrap().len(), 1);
    }

    #[test]
    fn a_multibulk_count_without_cr_within_64_kib_is_too_big() {
        let mut input = vec![b'*'];
        input.extend(std::iter::repeat_n(b'1', PROTO_INLINE_MAX_SIZE - 1));
        assert!(waits(&input)); // 64 KiB exactly
        input.push(b'1');
        assert_eq!(
            error_of(&input),
            "Protocol error: too big mbulk count string"
        );
    }

    #[test]
    fn a_long_but_terminated_count_line_is_an_invalid_length() {
        let mut input = vec![b'*'];
        input.extend(std::iter::repeat_n(b'0', PROTO_INLINE_MAX_SIZE - 1));
        input.push(b'\r');
        assert!(waits(&input));
        input.push(b'\n');
        assert_eq!(error_of(&input), "Protocol error: invalid multibulk length");
    }

    #[test]
    fn invalid_multibulk_counts_are_rejected() {
        for input in [
            &b"*2147483648\r\n"[..],
            b"*abc\r\n",
            b"*\r\n",
            b"*+1\r\n",
            b"*01\r\n",
            b"*-0\r\n",
            b"* 1\r\n",
            b"*1 \r\n",
            b"*-\r\n",
            b"*99999999999999999999\r\n",
            b"*123456789012345678901\r\n",
        ] {
            assert_eq!(
                error_of(input),
                "Protocol error: invalid multibulk length",
                "{input:?}"
            );
        }
    }

    #[test]
    fn the_largest_multibulk_count_is_accepted_without_allocating_for_it() {
        let mut parser = RequestParser::new(ParserLimits::default());
        let mut buf = BytesMut::from(&b"*2147483647\r\n$1\r\na\r\n"[..]);
        assert_eq!(parser.parse(&mut buf), Ok(None));
        assert!(parser.argv.capacity() <= ARGV_INITIAL_CAPACITY_MAX);
        assert_eq!(parser.multibulk_len, i32::MAX as usize - 1);
    }

    #[test]
    fn a_bulk_header_without_dollar_is_rejected_with_the_byte_found() {
        assert_eq!(
            error_of(b"*1\r\n:5\r\n"),
            "Protocol error: expected '$', got ':'"
        );
        assert_eq!(
            error_of(b"*2\r\n$1\r\na\r\nxyz\r\n"),
            "Protocol error: expected '$', got 'x'"
        );
        // An empty line: the byte is '\r', shown as a space like Redis does.
        assert_eq!(
            error_of(b"*1\r\n\r\n"),
            "Protocol error: expected '$', got ' '"
        );
        assert_eq!(
            error_of(b"*1\r\n\n\r\n"),
            "Protocol error: expected '$', got ' '"
        );
        assert_eq!(
            error_of(b"*1\r\n\x01\r\n"),
            "Protocol error: expected '$', got '\u{1}'"
        );
        assert_eq!(
            error_of(b"*1\r\n\xe9\r\n"),
            "Protocol error: expected '$', got '\u{e9}'"
        );
        // Without a complete line, nothing is decided yet.
        assert!(waits(b"*1\r\nxyz"));
    }

    #[test]
    fn every_expected_dollar_message_names_its_byte() {
        for byte in 0..=255u8 {
            let ProtocolError(text) = ProtocolError::expected_dollar(byte);
            let shown = if byte == b'\r' || byte == b'\n' {
                ' '
            } else {
                char::from(byte)
            };
            assert_eq!(text, format!("Protocol error: expected '$', got '{shown}'"));
        }
    }

    #[test]
    fn a_bulk_length_line_without_cr_within_64_kib_is_too_big() {
        let mut input = b"*1\r\n$".to_vec();
        input.extend(std::iter::repeat_n(b'1', PROTO_INLINE_MAX_SIZE - 1));
        assert!(waits(&input)); // 64 KiB exactly
        input.push(b'1');
        assert_eq!(
            error_of(&input),
            "Protocol error: too big bulk count string"
        );
    }

    #[test]
    fn invalid_bulk_lengths_are_rejected() {
        for input in [
            &b"*1\r\n$-1\r\n"[..],
            b"*1\r\n$-5\r\n",
            b"*1\r\n$\r\n",
            b"*1\r\n$x\r\n",
            b"*1\r\n$01\r\n",
            b"*1\r\n$1 \r\n",
            b"*1\r\n$99999999999\r\n",
            b"*1\r\n$536870913\r\n",
            b"*1\r\n$9223372036854775808\r\n",
        ] {
            assert_eq!(
                error_of(input),
                "Protocol error: invalid bulk length",
                "{input:?}"
            );
        }
    }

    #[test]
    fn proto_max_bulk_len_is_inclusive_and_settable() {
        let limits = ParserLimits {
            proto_max_bulk_len: 3,
            ..ParserLimits::default()
        };
        let mut parser = RequestParser::new(limits);
        assert_eq!(
            parse_all_with(&mut parser, b"*1\r\n$3\r\nabc\r\n").unwrap(),
            vec![cmd(&[b"abc"])]
        );
        assert_eq!(
            parse_all_with(&mut parser, b"*1\r\n$4\r\nabcd\r\n"),
            Err(ProtocolError::INVALID_BULK_LENGTH)
        );
        let mut parser = RequestParser::new(ParserLimits::default());
        parser.set_limits(limits);
        assert_eq!(
            parse_all_with(&mut parser, b"*1\r\n$4\r\n"),
            Err(ProtocolError::INVALID_BULK_LENGTH)
        );
        // The default limit, 512 MiB, is accepted (and waits for its bytes).
        assert!(waits(b"*1\r\n$536870912\r\n"));
    }

    #[test]
    fn unauthenticated_clients_get_redis_limits() {
        let mut parser = RequestParser::new(ParserLimits::default());
        parser.set_authenticated(false);
        assert_eq!(
            parse_all_with(&mut parser, b"*11\r\n"),
            Err(ProtocolError::UNAUTHENTICATED_MULTIBULK_LENGTH)
        );
        assert_eq!(
            ProtocolError::UNAUTHENTICATED_MULTIBULK_LENGTH.to_string(),
            "Protocol error: unauthenticated multibulk length"
        );

        let mut parser = RequestParser::new(ParserLimits::default());
        parser.set_authenticated(false);
        assert_eq!(
            parse_all_with(&mut parser, b"*2\r\n$4\r\nAUTH\r\n$16385\r\n"),
            Err(ProtocolError::UNAUTHENTICATED_BULK_LENGTH)
        );
        assert_eq!(
            ProtocolError::UNAUTHENTICATED_BULK_LENGTH.to_string(),
            "Protocol error: unauthenticated bulk length"
        );

        // At the limits, and after authenticating, all is well.
        let mut parser = RequestParser::new(ParserLimits::default());
        parser.set_authenticated(false);
        let ten: Vec<&[u8]> = vec![b"a"; 10];
        assert_eq!(parse_all_with(&mut parser, &encode(&ten)).unwrap().len(), 1);
        let big = vec![b'x'; 16384];
        assert_eq!(
            parse_all_with(&mut parser, &encode(&[b"AUTH", &big]))
                .unwrap()
                .len(),
            1
        );
        parser.set_authenticated(true);
        let eleven: Vec<&[u8]> = vec![b"a"; 11];
        assert_eq!(
            parse_all_with(&mut parser, &encode(&eleven)).unwrap().len(),
            1
        );
        // Inline requests have no unauthenticated limit of their own (64 KiB applies).
        let mut parser = RequestParser::new(ParserLimits::default());
        parser.set_authenticated(false);
        let line = b"a b c d e f g h i j k l\r\n";
        assert_eq!(parse_all_with(&mut parser, line).unwrap()[0].len(), 12);
    }

    #[test]
    fn the_query_buffer_limit_applies_to_unparsed_bytes() {
        let limits = ParserLimits {
            client_query_buffer_limit: 100,
            ..ParserLimits::default()
        };
        let mut parser = RequestParser::new(limits);
        // Complete commands are taken out first, however many bytes they add up to.
        let mut input = Vec::new();
        for _ in 0..20 {
            input.extend_from_slice(&encode(&[b"PING"]));
        }
        assert_eq!(parse_all_with(&mut parser, &input).unwrap().len(), 20);
        // A partial bulk of more than 100 bytes is too much.
        let mut buf = BytesMut::from(&b"*1\r\n$200\r\n"[..]);
        assert_eq!(parser.parse(&mut buf), Ok(None));
        buf.extend_from_slice(&[b'x'; 100]);
        assert_eq!(parser.parse(&mut buf), Ok(None));
        buf.extend_from_slice(b"x");
        assert_eq!(
            parser.parse(&mut buf),
            Err(ProtocolError::QUERY_BUFFER_LIMIT)
        );
        assert_eq!(
            ProtocolError::QUERY_BUFFER_LIMIT.to_string(),
            "Protocol error: query buffer limit exceeded"
        );
    }

    #[test]
    fn arguments_already_read_count_toward_the_query_buffer_limit() {
        let limits = ParserLimits {
            client_query_buffer_limit: 1000,
            ..ParserLimits::default()
        };
        let mut parser = RequestParser::new(limits);
        // A command announcing a million arguments, sent one small argument at a time.
        let mut buf = BytesMut::from(&b"*1000000\r\n"[..]);
        let mut fed = 0;
        let result = loop {
            buf.extend_from_slice(b"$1\r\nx\r\n");
            fed += 1;
            match parser.parse(&mut buf) {
                Ok(None) => assert!(fed < 1000, "never refused"),
                other => break other,
            }
        };
        assert_eq!(result, Err(ProtocolError::QUERY_BUFFER_LIMIT));
        // Each argument counts its byte and its handle.
        assert_eq!(fed, 1000 / (1 + ARG_OVERHEAD) + 1);
    }

    #[test]
    fn a_huge_announced_bulk_reserves_a_bounded_buffer() {
        let limits = ParserLimits {
            proto_max_bulk_len: 4 << 30,
            ..ParserLimits::default()
        };
        let mut parser = RequestParser::new(limits);
        let mut buf = BytesMut::from(&b"*1\r\n$1073741824\r\n"[..]);
        assert_eq!(parser.parse(&mut buf), Ok(None));
        assert!(
            buf.capacity() <= BIG_ARG_RESERVE_MAX + 64,
            "{}",
            buf.capacity()
        );
        // A big argument that does arrive still parses whole.
        let mut parser = RequestParser::new(ParserLimits::default());
        let payload = vec![b'y'; 3 * BIG_ARG_RESERVE_MAX];
        let mut buf = BytesMut::from(&b"*1\r\n$3145728\r\n"[..]);
        for chunk in payload.chunks(16 * 1024) {
            assert_eq!(parser.parse(&mut buf), Ok(None));
            buf.extend_from_slice(chunk);
        }
        buf.extend_from_slice(b"\r\n");
        let argv = parser.parse(&mut buf).unwrap().unwrap();
        assert_eq!(argv[0].len(), payload.len());
    }

    #[test]
    fn an_error_is_sticky() {
        let mut parser = RequestParser::new(ParserLimits::default());
        let mut buf = BytesMut::from(&b"*x\r\n"[..]);
        assert_eq!(
            parser.parse(&mut buf),
            Err(ProtocolError::INVALID_MULTIBULK_LENGTH)
        );
        let mut buf = BytesMut::from(&b"PING\r\n"[..]);
        assert_eq!(
            parser.parse(&mut buf),
            Err(ProtocolError::INVALID_MULTIBULK_LENGTH)
        );
    }

    #[test]
    fn every_error_displays_its_redis_text() {
        for (err, text) in [
            (
                ProtocolError::TOO_BIG_MBULK_COUNT,
                "Protocol error: too big mbulk count string",
            ),
            (
                ProtocolError::INVALID_MULTIBULK_LENGTH,
                "Protocol error: invalid multibulk length",
            ),
            (
                ProtocolError::TOO_BIG_BULK_COUNT,
                "Protocol error: too big bulk count string",
            ),
            (
                ProtocolError::INVALID_BULK_LENGTH,
                "Protocol error: invalid bulk length",
            ),
            (
                ProtocolError::TOO_BIG_INLINE_REQUEST,
                "Protocol error: too big inline request",
            ),
            (
                ProtocolError::UNBALANCED_QUOTES,
                "Protocol error: unbalanced quotes in request",
            ),
        ] {
            assert_eq!(err.to_string(), text);
        }
    }

    #[test]
    fn a_nul_before_the_line_end_hides_it_like_redis_strchr() {
        assert!(waits(b"PING\0\r\n"));
        assert!(waits(b"*1\0\r\n$4\r\nPING\r\n"));
        assert!(waits(b"*1\r\n$4\0\r\nPING\r\n"));
        let mut input = b"PING\0\r\n".to_vec();
        input.resize(PROTO_INLINE_MAX_SIZE + 1, b'x');
        assert_eq!(error_of(&input), "Protocol error: too big inline request");
        // NUL inside a bulk payload is ordinary data.
        assert_eq!(
            parse_all(b"*1\r\n$3\r\na\0b\r\n").unwrap(),
            vec![cmd(&[b"a\0b"])]
        );
    }

    #[test]
    fn the_bytes_after_cr_and_after_a_payload_are_skipped_unchecked_like_redis() {
        assert_eq!(
            parse_all(b"*1\rX$4\rYPINGab").unwrap(),
            vec![cmd(&[b"PING"])]
        );
    }

    #[test]
    fn arguments_are_slices_of_the_read_buffer() {
        let input = encode(&[b"XADD", b"s", b"*", b"f", b"v"]);
        let mut buf = BytesMut::from(&input[..]);
        let base = buf.as_ptr() as usize;
        let argv = RequestParser::new(ParserLimits::default())
            .parse(&mut buf)
            .unwrap()
            .unwrap();
        // "*5\r\n$4\r\n" is 8 bytes: XADD starts right after.
        assert_eq!(argv[0].as_ptr() as usize, base + 8);
    }

    #[test]
    fn a_big_bulk_is_read_into_one_allocation() {
        let payload = vec![b'z'; 1 << 20];
        let input = encode(&[b"SET", b"k", &payload]);
        let mut parser = RequestParser::new(ParserLimits::default());
        let mut buf = BytesMut::with_capacity(16 * 1024);
        let mut pieces = input.chunks(16 * 1024);
        let mut first_data_ptr = None;
        let argv = loop {
            let piece = pieces.next().expect("the command completes");
            if buf.capacity() - buf.len() < piece.len() {
                buf.reserve(piece.len());
            }
            buf.extend_from_slice(piece);
            if let Some(argv) = parser.parse(&mut buf).unwrap() {
                break argv;
            }
            if parser.bulk_len == Some(payload.len()) {
                // From the big header on, the buffer never moves again.
                let ptr = buf.as_ptr() as usize;
                assert_eq!(*first_data_ptr.get_or_insert(ptr), ptr);
                assert!(buf.capacity() >= payload.len() + 2);
            }
        };
        assert!(first_data_ptr.is_some());
        assert_eq!(argv[2], Bytes::from(payload));
        assert_eq!(argv[2].as_ptr() as usize, first_data_ptr.unwrap());
    }

    #[test]
    fn a_huge_command_in_small_pieces_is_parsed_in_linear_time() {
        let args: Vec<Vec<u8>> = (0..100_000).map(|i| format!("{i}").into_bytes()).collect();
        let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let input = encode(&refs);
        let mut parser = RequestParser::new(ParserLimits::default());
        let mut buf = BytesMut::new();
        let started = std::time::Instant::now();
        let mut done = None;
        for piece in input.chunks(16 * 1024) {
            buf.extend_from_slice(piece);
            if let Some(argv) = parser.parse(&mut buf).unwrap() {
                done = Some(argv);
            }
        }
        let argv = done.expect("complete");
        assert_eq!(argv.len(), 100_000);
        assert_eq!(&argv[99_999][..], b"99999");
        // Quadratic re-parsing takes hundreds of milliseconds here; linear is ~10 ms.
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn string2ll_matches_redis() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-1"), Some(-1));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"00",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"000000000000000000001",
        ] {
            assert_eq!(string2ll(bad), None, "{bad:?}");
        }
    }
}
