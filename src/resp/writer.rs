//! Reply encoding straight into an output buffer, for RESP2 or RESP3.
//!
//! Commands write their reply through a [`RespWriter`], which knows the connection's
//! protocol and picks the right shape (reference §1.4):
//!
//! ```text
//! thing            RESP2                      RESP3
//! null             $-1\r\n                    _\r\n
//! null array       *-1\r\n                    _\r\n
//! map of n pairs   *<2n>\r\n k v k v ...      %<n>\r\n k v ...
//! set of n         *<n>\r\n                   ~<n>\r\n
//! double           $<len>\r\n<text>\r\n       ,<text>\r\n
//! boolean          :1 / :0                    #t / #f
//! verbatim text    $<len>\r\n<text>\r\n       =<len+4>\r\ntxt:<text>\r\n
//! ```
//!
//! Lengths not known in advance use [`RespWriter::defer_len`]: a placeholder is
//! recorded and [`RespWriter::finish_array`] writes the header in front of the elements
//! (one `memmove` of the elements, no second buffer).

use crate::error::ReplyError;

/// Appends the RESP array of bulk strings `argv` to `out`: a command exactly as a
/// client sends it (`*3\r\n$4\r\nXDEL\r\n$1\r\ns\r\n$3\r\n1-1\r\n`). The effects the core
/// hands to persistence are written so.
#[inline]
pub fn command<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    let mut num = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(num.format(argv.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in argv {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(num.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// The number of bytes [`command`] writes for `argv`, without writing them.
pub fn command_len<A: AsRef<[u8]>>(argv: &[A]) -> usize {
    let digits = |n: usize| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    let mut len = 1 + digits(argv.len()) + 2;
    for a in argv {
        let n = a.as_ref().len();
        len += 1 + digits(n) + 2 + n + 2;
    }
    len
}

/// The protocol a connection speaks (switched by `HELLO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2, the default.
    #[default]
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
}

/// A reply encoder over a growable byte buffer.
#[derive(Debug, Default)]
pub struct RespWriter {
    /// Encoded bytes, ready for the socket.
    pub buf: Vec<u8>,
    /// The protocol replies are shaped for.
    pub proto: Protocol,
}

/// A header to be written once the element count is known.
#[derive(Debug)]
#[must_use = "finish the deferred length with finish_array/finish_map"]
pub struct DeferredLen {
    pos: usize,
}

impl RespWriter {
    /// A writer for `proto` with an empty buffer.
    pub fn new(proto: Protocol) -> Self {
        RespWriter {
            buf: Vec::new(),
            proto,
        }
    }

    /// True for RESP3 connections.
    pub fn is_resp3(&self) -> bool {
        self.proto == Protocol::Resp3
    }

    /// `<prefix><n>\r\n`: aggregate and bulk headers, integers. Most are below 100 (field
    /// and value lengths, entry counts), which are written without formatting (Redis
    /// keeps shared headers for these).
    fn line(&mut self, prefix: u8, n: i64) {
        match n {
            0..=9 => self
                .buf
                .extend_from_slice(&[prefix, b'0' + n as u8, b'\r', b'\n']),
            10..=99 => self.buf.extend_from_slice(&[
                prefix,
                b'0' + (n / 10) as u8,
                b'0' + (n % 10) as u8,
                b'\r',
                b'\n',
            ]),
            100..=999 => self.buf.extend_from_slice(&[
                prefix,
                b'0' + (n / 100) as u8,
                b'0' + (n / 10 % 10) as u8,
                b'0' + (n % 10) as u8,
                b'\r',
                b'\n',
            ]),
            _ => {
                let mut text = itoa::Buffer::new();
                let digits = text.format(n).as_bytes();
                let mut line = [0u8; 24];
                line[0] = prefix;
                line[1..=digits.len()].copy_from_slice(digits);
                line[digits.len() + 1..digits.len() + 3].copy_from_slice(b"\r\n");
                self.buf.extend_from_slice(&line[..digits.len() + 3]);
            }
        }
    }

    /// `+text\r\n`. `text` must not contain CR or LF.
    pub fn simple(&mut self, text: &[u8]) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(text);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+OK\r\n`.
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// `-<error text>\r\n`, with CR/LF in the text replaced by spaces as Redis does.
    pub fn error(&mut self, err: &ReplyError) {
        let text = err.wire_text();
        self.error_text(&text);
    }

    /// `-<text>\r\n` for a text that already includes its code.
    pub fn error_text(&mut self, text: &[u8]) {
        self.buf.push(b'-');
        self.buf.extend(
            text.iter()
                .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `:n\r\n`.
    pub fn integer(&mut self, n: i64) {
        self.line(b':', n);
    }

    /// `$len\r\nbytes\r\n`.
    pub fn bulk(&mut self, bytes: &[u8]) {
        // Header (at most `$` + 20 digits + CRLF), payload and CRLF in one reservation.
        self.buf.reserve(bytes.len() + 25);
        self.line(b'$', bytes.len() as i64);
        self.buf.extend_from_slice(bytes);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string holding the decimal text of `n`.
    pub fn bulk_int(&mut self, n: i64) {
        let mut b = itoa::Buffer::new();
        let s = b.format(n);
        self.bulk(s.as_bytes());
    }

    /// Null: `$-1` in RESP2, `_` in RESP3 (Redis: addReplyNull).
    pub fn null(&mut self) {
        match self.proto {
            Protocol::Resp2 => self.buf.extend_from_slice(b"$-1\r\n"),
            Protocol::Resp3 => self.buf.extend_from_slice(b"_\r\n"),
        }
    }

    /// Null array: `*-1` in RESP2, `_` in RESP3 (Redis: addReplyNullArray).
    pub fn null_array(&mut self) {
        match self.proto {
            Protocol::Resp2 => self.buf.extend_from_slice(b"*-1\r\n"),
            Protocol::Resp3 => self.buf.extend_from_slice(b"_\r\n"),
        }
    }

    /// Array header of `n` elements.
    pub fn array(&mut self, n: usize) {
        self.line(b'*', n as i64);
    }

    /// Map header of `n` pairs (`*2n` in RESP2).
    pub fn map(&mut self, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.line(b'*', 2 * n as i64),
            Protocol::Resp3 => self.line(b'%', n as i64),
        }
    }

    /// Set header of `n` elements (`*n` in RESP2).
    pub fn set(&mut self, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.line(b'*', n as i64),
            Protocol::Resp3 => self.line(b'~', n as i64),
        }
    }

    /// Push header (RESP3 `>n`; RESP2 uses an array, as Pub/Sub messages do).
    pub fn push(&mut self, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.line(b'*', n as i64),
            Protocol::Resp3 => self.line(b'>', n as i64),
        }
    }

    /// A double (RESP3 `,`; RESP2 bulk string), formatted like Redis's `%.17g`-ish
    /// shortest round-trip text.
    pub fn double(&mut self, d: f64) {
        let text = if d.is_infinite() {
            if d > 0.0 {
                "inf".to_string()
            } else {
                "-inf".to_string()
            }
        } else {
            format!("{d}")
        };
        match self.proto {
            Protocol::Resp2 => self.bulk(text.as_bytes()),
            Protocol::Resp3 => {
                self.buf.push(b',');
                self.buf.extend_from_slice(text.as_bytes());
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A double as Redis 7.0's `addReplyDouble` writes it: C's `%.17g` text
    /// ([`crate::util::fmt_double`]), a RESP3 `,` double or a RESP2 bulk string.
    pub fn double_g17(&mut self, d: f64) {
        let text = crate::util::fmt_double(d);
        match self.proto {
            Protocol::Resp2 => self.bulk(text.as_bytes()),
            Protocol::Resp3 => {
                self.buf.push(b',');
                self.buf.extend_from_slice(text.as_bytes());
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A double already written as text (Redis's `addReplyHumanLongDouble`: a long
    /// double in human form): a RESP3 `,` double or a RESP2 bulk string.
    pub fn double_text(&mut self, text: &[u8]) {
        match self.proto {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                self.buf.push(b',');
                self.buf.extend_from_slice(text);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A boolean (RESP3 `#t`/`#f`; RESP2 `:1`/`:0`).
    pub fn boolean(&mut self, b: bool) {
        match self.proto {
            Protocol::Resp2 => self.integer(i64::from(b)),
            Protocol::Resp3 => self
                .buf
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" }),
        }
    }

    /// Verbatim text (INFO, CLIENT LIST): RESP3 `=len\r\ntxt:...`, RESP2 bulk.
    pub fn verbatim(&mut self, text: &[u8]) {
        match self.proto {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                self.line(b'=', text.len() as i64 + 4);
                self.buf.extend_from_slice(b"txt:");
                self.buf.extend_from_slice(text);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Starts an aggregate whose length is not known yet.
    pub fn defer_len(&mut self) -> DeferredLen {
        DeferredLen {
            pos: self.buf.len(),
        }
    }

    fn finish_deferred(&mut self, d: DeferredLen, prefix: u8, n: usize) {
        let mut header = [0u8; 24];
        header[0] = prefix;
        let mut b = itoa::Buffer::new();
        let digits = b.format(n).as_bytes();
        header[1..1 + digits.len()].copy_from_slice(digits);
        let hlen = 1 + digits.len() + 2;
        header[hlen - 2..hlen].copy_from_slice(b"\r\n");
        let tail = self.buf.len() - d.pos;
        self.buf.resize(self.buf.len() + hlen, 0);
        self.buf.copy_within(d.pos..d.pos + tail, d.pos + hlen);
        self.buf[d.pos..d.pos + hlen].copy_from_slice(&header[..hlen]);
    }

    /// Writes the array header for a deferred aggregate of `n` elements.
    pub fn finish_array(&mut self, d: DeferredLen, n: usize) {
        self.finish_deferred(d, b'*', n);
    }

    /// Writes the map header for a deferred aggregate of `n` pairs.
    pub fn finish_map(&mut self, d: DeferredLen, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.finish_deferred(d, b'*', 2 * n),
            Protocol::Resp3 => self.finish_deferred(d, b'%', n),
        }
    }

    /// Finishes a deferred length as a set (`~n`, an array in RESP2).
    pub fn finish_set(&mut self, d: DeferredLen, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.finish_deferred(d, b'*', n),
            Protocol::Resp3 => self.finish_deferred(d, b'~', n),
        }
    }

    /// Appends bytes already in RESP form.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Takes the encoded bytes, leaving the buffer empty.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_len_counts_what_command_writes() {
        let cases: [&[&[u8]]; 4] = [
            &[],
            &[b"PING"],
            &[b"SET", b"k", b""],
            &[b"XADD", &[b'x'; 1000], b"*", &[b'y'; 9], &[b'z'; 10]],
        ];
        for argv in cases {
            let mut out = Vec::new();
            command(&mut out, argv);
            assert_eq!(command_len(argv), out.len(), "{argv:?}");
        }
    }

    fn w(proto: Protocol) -> RespWriter {
        RespWriter::new(proto)
    }

    #[test]
    fn header_numbers_are_decimal_on_both_sides_of_the_short_paths() {
        for n in [
            i64::MIN,
            -100,
            -10,
            -1,
            0,
            1,
            9,
            10,
            42,
            99,
            100,
            101,
            999,
            i64::MAX,
        ] {
            let mut a = w(Protocol::Resp2);
            a.integer(n);
            assert_eq!(a.buf, format!(":{n}\r\n").into_bytes(), "{n}");
        }
        for len in [0usize, 1, 9, 10, 99, 100, 1000] {
            let mut a = w(Protocol::Resp2);
            let payload = vec![b'x'; len];
            a.bulk(&payload);
            let mut want = format!("${len}\r\n").into_bytes();
            want.extend_from_slice(&payload);
            want.extend_from_slice(b"\r\n");
            assert_eq!(a.buf, want, "{len}");
        }
    }

    #[test]
    fn nulls_differ_between_protocols() {
        let mut a = w(Protocol::Resp2);
        a.null();
        a.null_array();
        assert_eq!(a.buf, b"$-1\r\n*-1\r\n");
        let mut b = w(Protocol::Resp3);
        b.null();
        b.null_array();
        assert_eq!(b.buf, b"_\r\n_\r\n");
    }

    #[test]
    fn map_is_a_flat_array_in_resp2() {
        let mut a = w(Protocol::Resp2);
        a.map(2);
        let mut b = w(Protocol::Resp3);
        b.map(2);
        assert_eq!(a.buf, b"*4\r\n");
        assert_eq!(b.buf, b"%2\r\n");
    }

    #[test]
    fn deferred_length_is_written_before_the_elements() {
        let mut a = w(Protocol::Resp2);
        a.integer(7);
        let d = a.defer_len();
        for i in 0..12 {
            a.integer(i);
        }
        a.finish_array(d, 12);
        let mut expected = b":7\r\n*12\r\n".to_vec();
        for i in 0..12 {
            expected.extend_from_slice(format!(":{i}\r\n").as_bytes());
        }
        assert_eq!(a.buf, expected);
    }

    #[test]
    fn error_text_has_newlines_replaced() {
        let mut a = w(Protocol::Resp2);
        a.error_text(b"ERR a\r\nb");
        assert_eq!(a.buf, b"-ERR a  b\r\n");
    }

    #[test]
    fn verbatim_in_resp3_has_txt_prefix() {
        let mut a = w(Protocol::Resp3);
        a.verbatim(b"hi");
        assert_eq!(a.buf, b"=6\r\ntxt:hi\r\n");
    }
}
