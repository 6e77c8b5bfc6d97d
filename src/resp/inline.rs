//! The inline-command splitter: one text line → arguments, as Redis's `sdssplitargs` does it.
//!
//! Inline commands are what telnet users and `redis-benchmark`'s `PING_INLINE` send: a line
//! such as `SET "my key" 'it\'s' "\x00\xff"\r\n` instead of a RESP array. The request parser
//! cuts the line (see `parser.rs`) and this module splits it:
//!
//! ```text
//! between arguments   any of ' ' \t \n \v \f \r (C isspace) is skipped
//! plain argument      runs until ' ' \t \n \r (note: \v and \f are part of the argument)
//! "double quotes"     escapes \n \r \t \b \a, \xHH (two hex digits), and \<c> → c for any other c
//! 'single quotes'     only \' is an escape; every other byte, backslashes too, is literal
//! after a quote       the closing quote must be followed by a space or the end of the line
//! a quote mid-word    starts quoting: ab"c d"  →  `abc d`  (sdssplitargs does the same)
//! ```
//!
//! The line is read as a C string, as `sdssplitargs` reads it: a NUL byte ends it, so an
//! open quote before a NUL is unbalanced. (The request parser never hands over a line with
//! a NUL in it; see `parser.rs`.)
//!
//! Arguments without quotes are zero-copy slices of the line; only a quoted argument is
//! copied, because its escapes make it differ from its bytes on the wire.

use bytes::Bytes;

use crate::resp::Argv;

/// The line has an opening quote without its closing quote, or a closing quote followed by
/// something other than a space (Redis: `sdssplitargs` returns NULL). The request parser
/// turns it into `Protocol error: unbalanced quotes in request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnbalancedQuotes;

impl std::fmt::Display for UnbalancedQuotes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unbalanced quotes")
    }
}

impl std::error::Error for UnbalancedQuotes {}

/// C `isspace` in the "C" locale: what `sdssplitargs` skips between arguments.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The value of one hex digit (either case), or `None`.
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The argument being built: still a plain run of the line (zero-copy) or, once a quote has
/// been seen, its own bytes.
enum Token {
    /// Starts at this offset of the line and has had no quotes so far.
    Plain(usize),
    /// Has been (or is being) quoted; escapes already resolved.
    Quoted(Vec<u8>),
}

/// Splits an inline command line into arguments with `sdssplitargs` semantics.
///
/// `line` excludes the line terminator. An empty or all-blank line gives an empty `Argv`
/// (the parser skips it, as Redis does).
pub fn split_args(line: &Bytes) -> Result<Argv, UnbalancedQuotes> {
    // sdssplitargs walks a NUL-terminated C string: nothing after the first NUL exists.
    let s = match memchr::memchr(0, line) {
        Some(nul) => &line[..nul],
        None => &line[..],
    };
    // The byte at `i`, or NUL past the end, exactly like dereferencing the C string.
    let at = |i: usize| s.get(i).copied().unwrap_or(0);

    let mut args = Argv::new();
    let mut p = 0;
    loop {
        while p < s.len() && is_space(s[p]) {
            p += 1;
        }
        if p >= s.len() {
            return Ok(args);
        }

        let mut token = Token::Plain(p);
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let c = at(p);
            if in_double {
                let next = at(p + 1);
                if c == b'\\'
                    && next == b'x'
                    && let (Some(hi), Some(lo)) = (hex_value(at(p + 2)), hex_value(at(p + 3)))
                {
                    push(&mut token, hi * 16 + lo);
                    p += 4;
                    continue;
                }
                if c == b'\\' && next != 0 {
                    let unescaped = match next {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    };
                    push(&mut token, unescaped);
                    p += 2;
                } else if c == b'"' {
                    // The closing quote must be followed by a space or by nothing at all.
                    if next != 0 && !is_space(next) {
                        return Err(UnbalancedQuotes);
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return Err(UnbalancedQuotes);
                } else {
                    push(&mut token, c);
                    p += 1;
                }
            } else if in_single {
                let next = at(p + 1);
                if c == b'\\' && next == b'\'' {
                    push(&mut token, b'\'');
                    p += 2;
                } else if c == b'\'' {
                    if next != 0 && !is_space(next) {
                        return Err(UnbalancedQuotes);
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return Err(UnbalancedQuotes);
                } else {
                    push(&mut token, c);
                    p += 1;
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        // The terminator is left for the blank-skipping loop (a NUL ends
                        // the line there too).
                        break;
                    }
                    b'"' | b'\'' => {
                        if let Token::Plain(start) = token {
                            token = Token::Quoted(s[start..p].to_vec());
                        }
                        if c == b'"' {
                            in_double = true;
                        } else {
                            in_single = true;
                        }
                        p += 1;
                    }
                    _ => {
                        push(&mut token, c);
                        p += 1;
                    }
                }
            }
        }
        args.push(match token {
            Token::Plain(start) => line.slice(start..p),
            Token::Quoted(bytes) => Bytes::from(bytes),
        });
    }
}

/// Appends `b` to a quoted token. A plain token needs nothing: its bytes are already the
/// line's, and its end is found when it is cut.
fn push(token: &mut Token, b: u8) {
    if let Token::Quoted(bytes) = token {
        bytes.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &[u8]) -> Result<Vec<Vec<u8>>, UnbalancedQuotes> {
        split_args(&Bytes::copy_from_slice(line))
            .map(|args| args.into_iter().map(|a| a.to_vec()).collect())
    }

    fn ok(line: &[u8]) -> Vec<Vec<u8>> {
        split(line).expect("balanced line")
    }

    fn v(args: &[&[u8]]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.to_vec()).collect()
    }

    #[test]
    fn plain_words_are_split_on_spaces_and_tabs() {
        assert_eq!(ok(b"SET key value"), v(&[b"SET", b"key", b"value"]));
        assert_eq!(
            ok(b"  SET\t\tkey   value  "),
            v(&[b"SET", b"key", b"value"])
        );
        assert_eq!(ok(b"PING"), v(&[b"PING"]));
    }

    #[test]
    fn empty_and_blank_lines_have_no_arguments() {
        assert!(ok(b"").is_empty());
        assert!(ok(b" \t \r \x0b\x0c ").is_empty());
    }

    #[test]
    fn vertical_tab_and_form_feed_separate_only_between_words() {
        // isspace() skips them before a word, but a plain word ends only at ' ' \t \n \r.
        assert_eq!(ok(b"\x0ba\x0bb c"), v(&[b"a\x0bb", b"c"]));
        assert_eq!(ok(b"a\x0cb"), v(&[b"a\x0cb"]));
        assert_eq!(ok(b"a\rb\nc"), v(&[b"a", b"b", b"c"]));
    }

    #[test]
    fn double_quotes_resolve_escapes() {
        assert_eq!(
            ok(br#""a\n\r\t\b\a\\\"\q" x"#),
            v(&[b"a\n\r\t\x08\x07\\\"q", b"x"])
        );
        assert_eq!(ok(br#""\x41\x7a\xff\x00""#), v(&[b"Az\xff\x00"]));
        assert_eq!(ok(br#""\xAb\xaB""#), v(&[b"\xab\xab"]));
    }

    #[test]
    fn incomplete_hex_escapes_are_plain_escapes() {
        // \x without two hex digits is the `\<c> → c` escape: "\xg" → "xg".
        assert_eq!(ok(br#""\xg1""#), v(&[b"xg1"]));
        assert_eq!(ok(br#""\x4""#), v(&[b"x4"]));
    }

    #[test]
    fn single_quotes_only_escape_the_single_quote() {
        assert_eq!(ok(br"'it\'s' x"), v(&[b"it's", b"x"]));
        assert_eq!(ok(br"'a\nb\\x'"), v(&[b"a\\nb\\\\x"]));
        assert_eq!(ok(br#"'say "hi"'"#), v(&[b"say \"hi\""]));
    }

    #[test]
    fn empty_quotes_give_an_empty_argument() {
        assert_eq!(ok(br#"SET k """#), v(&[b"SET", b"k", b""]));
        assert_eq!(ok(b"SET k ''"), v(&[b"SET", b"k", b""]));
    }

    #[test]
    fn quotes_inside_a_word_start_quoting() {
        assert_eq!(ok(br#"ab"c d" e"#), v(&[b"abc d", b"e"]));
        assert_eq!(ok(b"ab'c d'"), v(&[b"abc d"]));
    }

    #[test]
    fn a_closing_quote_must_be_followed_by_a_space_or_the_end() {
        assert_eq!(split(br#""a"b"#), Err(UnbalancedQuotes));
        assert_eq!(split(b"'a'b"), Err(UnbalancedQuotes));
        assert_eq!(ok(b"\"a\"\tb"), v(&[b"a", b"b"]));
        assert_eq!(ok(b"'a'\x0bb"), v(&[b"a", b"b"]));
    }

    #[test]
    fn unterminated_quotes_are_unbalanced() {
        assert_eq!(split(br#""abc"#), Err(UnbalancedQuotes));
        assert_eq!(split(b"'abc"), Err(UnbalancedQuotes));
        assert_eq!(split(br#""abc\""#), Err(UnbalancedQuotes));
        assert_eq!(split(br"'abc\'"), Err(UnbalancedQuotes));
        assert_eq!(split(br#"x ""#), Err(UnbalancedQuotes));
        // A trailing backslash has nothing to escape; the quote is still open.
        assert_eq!(split(br#""abc\"#), Err(UnbalancedQuotes));
    }

    #[test]
    fn a_nul_byte_ends_the_line() {
        assert_eq!(ok(b"SET a b\0c d"), v(&[b"SET", b"a", b"b"]));
        assert_eq!(split(b"SET \"a\0\""), Err(UnbalancedQuotes));
        assert!(ok(b"\0PING").is_empty());
    }

    #[test]
    fn bytes_outside_ascii_are_ordinary() {
        assert_eq!(ok(b"\xff\xfe \x80"), v(&[b"\xff\xfe", b"\x80"]));
    }

    #[test]
    fn plain_arguments_share_the_line_buffer() {
        let line = Bytes::from_static(b"XADD s * f v");
        let args = split_args(&line).expect("balanced");
        let base = line.as_ptr() as usize;
        assert_eq!(args[1].as_ptr() as usize, base + 5);
        assert_eq!(args[4].as_ptr() as usize, base + 11);
    }
}
