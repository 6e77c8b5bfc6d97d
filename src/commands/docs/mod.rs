//! What `COMMAND DOCS` says about each command beyond its table row: complexity, doc
//! flags, deprecation, history and the argument tree redis-cli builds its hints from.
//!
//! The dispatch rows (`CommandSpec`, one slice per family in `commands/*.rs`) keep the
//! facts dispatch needs plus `summary`, `since` and `group`. Everything else `COMMAND
//! DOCS` replies lives here, one [`Doc`] per command or subcommand, keyed by the full
//! name (`set`, `xgroup|create`), in one file per Redis documentation group
//! (`string.rs`, `stream.rs`, ...). A row without a `Doc` is documented with its row's
//! three fields only; a `Doc` without a row (a command another branch adds) is unused.
//!
//! # The argument grammar
//!
//! Each `Doc` writes its arguments as one line of text in a small grammar of our own,
//! close to the synopsis on a command's manual page but lossless: every field Redis's
//! argument model has (name, type, display text, key-spec index, token, summary, since,
//! deprecated-since, the optional / multiple / multiple_token flags and nested
//! arguments) can be written, and anything not written takes Redis's default.
//!
//! ```text
//!  args   := item*                               items are separated by white space
//!  item   := '[' body ']' repeat note*           an optional argument
//!          | body repeat note*
//!  repeat := ''  |  '...'  |  '...+'             multiple; '...+': the token repeats too
//!                                                (multiple_token, SORT's GET pattern)
//!  body   := TOKEN? value note*                  a word before a value is its token
//!  value  := name ':' type ('@' index)?          a typed argument; '@n' is key_spec_index
//!          | name '(' item ('|' item)* ')'       oneof: exactly one of the alternatives
//!          | name '{' item+ '}'                  block: all of them, in order
//!          | name '=' TOKEN                      pure-token with a name of its own
//!          | TOKEN                               pure-token named after the token, lower-cased
//!  note   := '<since V>' | '<deprecated V>'      the argument's since / deprecated_since
//!          | '<display TEXT>' | '<summary TEXT>' display_text (default: the name), summary
//!  type   := string | integer | double | key | pattern | unix-time
//! ```
//!
//! A word is anything but white space and `[ ] ( ) { } | < > " '`; double or single
//! quotes take those characters literally (`auto-id="*"`, `empty-string='""'`,
//! `<summary "the new value">`); in a note each run of white space, line breaks
//! included, reads as one space. A trailing
//! `...` or `...+` is split off a word. A plain word (no unquoted `:` or `=`) is a token
//! when a value follows it in the same item (`EX seconds:integer`, `LIMIT
//! limit{offset:integer count:integer}`), else a pure-token (`[NX]`, `condition(NX | XX)`);
//! write `name=TOKEN` where a pure-token stands right before a value. So SET reads
//!
//! ```text
//! key:key@0 value:string [condition(NX | XX)]<since 2.6.12> [GET]<since 6.2.0>
//! [expiration(EX seconds:integer<since 2.6.12> | ... | KEEPTTL<since 6.0.0>)]
//! ```
//!
//! The texts are parsed once, on the first `COMMAND DOCS`, into [`Arg`] trees; a unit
//! test parses every entry, so a typo fails the build's tests rather than a client.
//!
//! # The reply
//!
//! [`write`] writes one command's map in Redis's field order (`summary`, `since`,
//! `group`, `complexity`, `doc_flags`, `deprecated_since`, `replaced_by`, `history`,
//! `arguments`, `subcommands`; within an argument `name`, `type`, `display_text`,
//! `key_spec_index`, `token`, `summary`, `since`, `deprecated_since`, `flags`,
//! `arguments`), leaving out what a client's `compat-version` does not have yet:
//! arguments and history entries newer than it. `doc_flags`, `history` and an argument's
//! `flags` are RESP3 sets, as in Redis.

mod bitmap;
mod cluster;
mod connection;
mod generic;
mod geo;
mod hash;
mod hyperloglog;
mod list;
mod pubsub;
mod scripting;
mod server;
mod set;
mod sorted_set;
mod stream;
mod string;
mod transactions;

use crate::core::command::{CommandSpec, since_version};
use crate::resp::writer::RespWriter;
use std::collections::HashMap;
use std::sync::OnceLock;

/// `doc_flags` bit: the command is deprecated (Redis's `CMD_DOC_DEPRECATED`).
pub const DEPRECATED: u8 = 1 << 0;
/// `doc_flags` bit: a system command, not meant for users (Redis's `CMD_DOC_SYSCMD`).
pub const SYSCMD: u8 = 1 << 1;

/// The documentation of one command or subcommand, as written in the data files.
#[derive(Debug, Clone, Copy)]
pub struct Doc {
    /// Lower-case full name, as the table row's (`xgroup|create`).
    pub name: &'static str,
    /// Time complexity; empty for none.
    pub complexity: &'static str,
    /// [`DEPRECATED`] / [`SYSCMD`] bits.
    pub doc_flags: u8,
    /// Version that deprecated the command; empty for none.
    pub deprecated_since: &'static str,
    /// What replaces a deprecated command (Redis's markdown text); empty for none.
    pub replaced_by: &'static str,
    /// `(version, change)` pairs, oldest first.
    pub history: &'static [(&'static str, &'static str)],
    /// The arguments in the grammar of the module doc; empty for none.
    pub args: &'static str,
}

impl Doc {
    /// A command of this complexity without history, flags or arguments yet.
    pub const fn new(name: &'static str, complexity: &'static str) -> Doc {
        Doc {
            name,
            complexity,
            doc_flags: 0,
            deprecated_since: "",
            replaced_by: "",
            history: &[],
            args: "",
        }
    }

    /// The same doc with these arguments (module-doc grammar).
    pub const fn args(self, args: &'static str) -> Doc {
        Doc { args, ..self }
    }

    /// The same doc with this history, oldest first.
    pub const fn history(self, history: &'static [(&'static str, &'static str)]) -> Doc {
        Doc { history, ..self }
    }

    /// The same doc, deprecated since `since` in favour of `replaced_by`.
    pub const fn deprecated(self, since: &'static str, replaced_by: &'static str) -> Doc {
        Doc {
            doc_flags: self.doc_flags | DEPRECATED,
            deprecated_since: since,
            replaced_by,
            ..self
        }
    }

    /// The same doc flagged as a system command.
    pub const fn syscmd(self) -> Doc {
        Doc {
            doc_flags: self.doc_flags | SYSCMD,
            ..self
        }
    }
}

/// Every data file's entries.
const FILES: &[&[Doc]] = &[
    bitmap::DOCS,
    cluster::DOCS,
    connection::DOCS,
    generic::DOCS,
    geo::DOCS,
    hash::DOCS,
    hyperloglog::DOCS,
    list::DOCS,
    pubsub::DOCS,
    scripting::DOCS,
    server::DOCS,
    set::DOCS,
    sorted_set::DOCS,
    stream::DOCS,
    string::DOCS,
    transactions::DOCS,
];

/// Every [`Doc`] in the data files.
pub fn all() -> impl Iterator<Item = &'static Doc> {
    FILES.iter().flat_map(|f| f.iter())
}

/// The type of an argument (Redis's `redisCommandArgType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    /// Any string.
    String,
    /// An integer.
    Integer,
    /// A floating-point number.
    Double,
    /// A key name.
    Key,
    /// A glob-style pattern.
    Pattern,
    /// A Unix time.
    UnixTime,
    /// A token standing alone.
    PureToken,
    /// Exactly one of the nested arguments.
    Oneof,
    /// All the nested arguments, in order.
    Block,
}

impl ArgType {
    /// The name `COMMAND DOCS` gives the type.
    pub fn as_str(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Double => "double",
            ArgType::Key => "key",
            ArgType::Pattern => "pattern",
            ArgType::UnixTime => "unix-time",
            ArgType::PureToken => "pure-token",
            ArgType::Oneof => "oneof",
            ArgType::Block => "block",
        }
    }

    /// The type a grammar word names, if any.
    fn parse(word: &str) -> Option<ArgType> {
        Some(match word {
            "string" => ArgType::String,
            "integer" => ArgType::Integer,
            "double" => ArgType::Double,
            "key" => ArgType::Key,
            "pattern" => ArgType::Pattern,
            "unix-time" => ArgType::UnixTime,
            _ => return None,
        })
    }
}

/// One parsed argument (Redis's `redisCommandArg`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    /// Its name.
    pub name: String,
    /// Its type.
    pub kind: ArgType,
    /// Display text when not the name (never for oneof and block).
    pub display: Option<String>,
    /// Index of the key spec that finds it (keys, and patterns that name keys).
    pub key_spec_index: Option<u32>,
    /// The token before it (`EX`), or the pure-token itself.
    pub token: Option<String>,
    /// One-line summary.
    pub summary: Option<String>,
    /// Version that added it.
    pub since: Option<String>,
    /// Version that deprecated it.
    pub deprecated_since: Option<String>,
    /// May be left out.
    pub optional: bool,
    /// May repeat.
    pub multiple: bool,
    /// Repeats together with its token (implies `multiple`).
    pub multiple_token: bool,
    /// The alternatives of a oneof, the parts of a block; else empty.
    pub args: Vec<Arg>,
}

impl Arg {
    /// An argument of this name and type, every other field at its default.
    fn new(name: String, kind: ArgType) -> Arg {
        Arg {
            name,
            kind,
            display: None,
            key_spec_index: None,
            token: None,
            summary: None,
            since: None,
            deprecated_since: None,
            optional: false,
            multiple: false,
            multiple_token: false,
            args: Vec::new(),
        }
    }
}

/// A lexeme of the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Lex {
    /// `[ ] ( ) { } |`.
    Punct(u8),
    /// `...` (false) or `...+` (true).
    Repeat(bool),
    /// `<key text>`.
    Note(String, String),
    /// A word: its text (quotes removed) and where its first unquoted `=` and last
    /// unquoted `:` stand in that text.
    Word {
        /// The text.
        text: String,
        /// Byte offset of the first unquoted `=`.
        eq: Option<usize>,
        /// Byte offset of the last unquoted `:`.
        colon: Option<usize>,
    },
}

/// Characters that end a word.
const PUNCT: &[u8] = b"[](){}|<>";

/// Reads one word (quoted segments literal) from `s` at `*i`.
fn read_word(s: &[u8], i: &mut usize) -> Result<Lex, String> {
    let mut text = Vec::new();
    let (mut eq, mut colon) = (None, None);
    while *i < s.len() {
        let c = s[*i];
        if c.is_ascii_whitespace() || PUNCT.contains(&c) {
            break;
        }
        if c == b'"' || c == b'\'' {
            let end = s[*i + 1..]
                .iter()
                .position(|&b| b == c)
                .ok_or("unclosed quote")?;
            text.extend_from_slice(&s[*i + 1..*i + 1 + end]);
            *i += end + 2;
            continue;
        }
        if c == b'=' && eq.is_none() {
            eq = Some(text.len());
        }
        if c == b':' {
            colon = Some(text.len());
        }
        text.push(c);
        *i += 1;
    }
    let text = String::from_utf8(text).map_err(|_| "not UTF-8")?;
    Ok(Lex::Word { text, eq, colon })
}

/// Splits a grammar text into lexemes.
fn lex(text: &str) -> Result<Vec<Lex>, String> {
    let s = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'<' {
            let end = s[i..]
                .iter()
                .position(|&b| b == b'>')
                .ok_or("unclosed <note>")?;
            // Notes hold no `>`, quoted or not.
            let inner = text.get(i + 1..i + end).ok_or("bad note")?.trim();
            let (key, value) = inner.split_once(' ').ok_or("note without a value")?;
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            // A long note may wrap: each run of white space reads as one space.
            let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
            out.push(Lex::Note(key.to_string(), value));
            i += end + 1;
        } else if PUNCT.contains(&c) {
            out.push(Lex::Punct(c));
            i += 1;
        } else {
            let start = i;
            let word = read_word(s, &mut i)?;
            let raw = &text[start..i];
            let repeat = if raw.ends_with("...+") {
                Some((true, 4))
            } else if raw.ends_with("...") {
                Some((false, 3))
            } else {
                None
            };
            match (word, repeat) {
                (Lex::Word { text, eq, colon }, Some((tok, n))) => {
                    let text = text[..text.len() - n].to_string();
                    if !text.is_empty() {
                        out.push(Lex::Word { text, eq, colon });
                    }
                    out.push(Lex::Repeat(tok));
                }
                (word, _) => out.push(word),
            }
        }
    }
    Ok(out)
}

/// A recursive-descent parser over the lexemes.
struct Parser {
    /// The lexemes.
    lex: Vec<Lex>,
    /// The next one's index.
    pos: usize,
}

impl Parser {
    /// The lexeme `k` ahead of the next one.
    fn peek(&self, k: usize) -> Option<&Lex> {
        self.lex.get(self.pos + k)
    }

    /// Is the lexeme `k` ahead this punctuation?
    fn is_punct(&self, k: usize, p: u8) -> bool {
        self.peek(k) == Some(&Lex::Punct(p))
    }

    /// Does a value start `k` lexemes ahead (a typed word, or a name before `(` / `{`)?
    fn value_starts(&self, k: usize) -> bool {
        match self.peek(k) {
            Some(Lex::Word {
                eq: None, colon, ..
            }) => colon.is_some() || self.is_punct(k + 1, b'(') || self.is_punct(k + 1, b'{'),
            _ => false,
        }
    }

    /// Items until `end` (`]`, `)`, `}`, `|`) or the end of the text.
    fn items(&mut self) -> Result<Vec<Arg>, String> {
        let mut out = Vec::new();
        while let Some(l) = self.peek(0) {
            if matches!(l, Lex::Punct(b']' | b')' | b'}' | b'|')) {
                break;
            }
            out.push(self.item()?);
        }
        Ok(out)
    }

    /// One item: an optional or required argument with its repeat and notes.
    fn item(&mut self) -> Result<Arg, String> {
        let mut arg = if self.is_punct(0, b'[') {
            self.pos += 1;
            let mut a = self.body()?;
            if !self.is_punct(0, b']') {
                return Err(format!("expected ] after {}", a.name));
            }
            self.pos += 1;
            a.optional = true;
            a
        } else {
            self.body()?
        };
        if let Some(Lex::Repeat(tok)) = self.peek(0) {
            arg.multiple = true;
            arg.multiple_token = *tok;
            self.pos += 1;
        }
        self.notes(&mut arg)?;
        Ok(arg)
    }

    /// Applies the notes that follow to `arg`.
    fn notes(&mut self, arg: &mut Arg) -> Result<(), String> {
        while let Some(Lex::Note(k, v)) = self.peek(0) {
            let v = Some(v.clone());
            match k.as_str() {
                "since" => arg.since = v,
                "deprecated" => arg.deprecated_since = v,
                "display" => arg.display = v,
                "summary" => arg.summary = v,
                other => return Err(format!("unknown note <{other}>")),
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// A token (when a value follows) and its value, with the value's notes.
    fn body(&mut self) -> Result<Arg, String> {
        let token = match self.peek(0) {
            Some(Lex::Word {
                text,
                eq: None,
                colon: None,
            }) if !self.is_punct(1, b'(') && !self.is_punct(1, b'{') && self.value_starts(1) => {
                let t = text.clone();
                self.pos += 1;
                Some(t)
            }
            _ => None,
        };
        let mut arg = self.value()?;
        if token.is_some() {
            arg.token = token;
        }
        self.notes(&mut arg)?;
        Ok(arg)
    }

    /// One value (see the grammar).
    fn value(&mut self) -> Result<Arg, String> {
        let Some(Lex::Word { text, eq, colon }) = self.peek(0).cloned() else {
            return Err(format!("expected a word, found {:?}", self.peek(0)));
        };
        self.pos += 1;
        if let Some(e) = eq {
            let mut a = Arg::new(text[..e].to_string(), ArgType::PureToken);
            a.token = Some(text[e + 1..].to_string());
            return Ok(a);
        }
        if let Some(c) = colon {
            let (name, ty) = (&text[..c], &text[c + 1..]);
            let (ty, index) = match ty.split_once('@') {
                Some((t, n)) => (t, Some(n.parse::<u32>().map_err(|e| e.to_string())?)),
                None => (ty, None),
            };
            let kind = ArgType::parse(ty).ok_or_else(|| format!("unknown type {ty}"))?;
            let mut a = Arg::new(name.to_string(), kind);
            a.key_spec_index = index;
            return Ok(a);
        }
        if self.is_punct(0, b'(') {
            self.pos += 1;
            let mut a = Arg::new(text, ArgType::Oneof);
            loop {
                a.args.push(self.item()?);
                match self.peek(0) {
                    Some(Lex::Punct(b'|')) => self.pos += 1,
                    Some(Lex::Punct(b')')) => break,
                    other => return Err(format!("expected | or ) in {}: {other:?}", a.name)),
                }
            }
            self.pos += 1;
            return Ok(a);
        }
        if self.is_punct(0, b'{') {
            self.pos += 1;
            let mut a = Arg::new(text, ArgType::Block);
            a.args = self.items()?;
            if !self.is_punct(0, b'}') || a.args.is_empty() {
                return Err(format!("expected items and }} in {}", a.name));
            }
            self.pos += 1;
            return Ok(a);
        }
        let mut a = Arg::new(text.to_ascii_lowercase(), ArgType::PureToken);
        a.token = Some(text);
        Ok(a)
    }
}

/// Parses a text of the grammar (module doc) into its argument list.
pub fn parse(text: &str) -> Result<Vec<Arg>, String> {
    let mut p = Parser {
        lex: lex(text)?,
        pos: 0,
    };
    let args = p.items()?;
    match p.peek(0) {
        None => Ok(args),
        Some(l) => Err(format!("unexpected {l:?}")),
    }
}

/// A [`Doc`] with its arguments parsed.
#[derive(Debug)]
pub struct Parsed {
    /// The doc as written.
    pub doc: &'static Doc,
    /// Its arguments.
    pub args: Vec<Arg>,
}

/// Every doc by full name, parsed once. A doc whose text does not parse (the unit
/// tests make sure none does) is logged and kept without arguments.
fn table() -> &'static HashMap<&'static str, Parsed> {
    static TABLE: OnceLock<HashMap<&'static str, Parsed>> = OnceLock::new();
    TABLE.get_or_init(|| {
        all()
            .map(|doc| {
                let args = parse(doc.args).unwrap_or_else(|e| {
                    tracing::error!(command = doc.name, error = %e, "bad COMMAND DOCS grammar");
                    Vec::new()
                });
                (doc.name, Parsed { doc, args })
            })
            .collect()
    })
}

/// The parsed doc of a command or subcommand by full name.
pub fn lookup(name: &str) -> Option<&'static Parsed> {
    table().get(name)
}

/// Is a `since` version at or below the client's `compat-version`? An absent or
/// unparsable version counts as old.
fn known(since: Option<&str>, compat: (u8, u8)) -> bool {
    since.is_none_or(|v| since_version(v) <= compat)
}

/// Writes `c`'s `COMMAND DOCS` entry: its name, then its map (module doc, "The reply");
/// `sub` says which of its subcommands to include.
pub fn write(
    out: &mut RespWriter,
    c: &CommandSpec,
    compat: (u8, u8),
    sub: &dyn Fn(&CommandSpec) -> bool,
) {
    out.bulk(c.name.as_bytes());
    let parsed = lookup(c.name);
    let doc = parsed.map(|p| p.doc);
    let args: Vec<&Arg> = parsed
        .map(|p| {
            p.args
                .iter()
                .filter(|a| known(a.since.as_deref(), compat))
                .collect()
        })
        .unwrap_or_default();
    let history: Vec<&(&str, &str)> = doc
        .map(|d| {
            d.history
                .iter()
                .filter(|(v, _)| known(Some(v), compat))
                .collect()
        })
        .unwrap_or_default();
    let subs: Vec<&CommandSpec> = c.subcommands.iter().filter(|s| sub(s)).collect();
    let complexity = doc.map_or("", |d| d.complexity);
    let flags = doc.map_or(0, |d| d.doc_flags);
    let deprecated_since = doc.map_or("", |d| d.deprecated_since);
    let replaced_by = doc.map_or("", |d| d.replaced_by);
    let len = 3
        + usize::from(!complexity.is_empty())
        + usize::from(flags != 0)
        + usize::from(!deprecated_since.is_empty())
        + usize::from(!replaced_by.is_empty())
        + usize::from(!history.is_empty())
        + usize::from(!args.is_empty())
        + usize::from(!c.subcommands.is_empty());
    out.map(len);
    out.bulk(b"summary");
    out.bulk(c.summary.as_bytes());
    out.bulk(b"since");
    out.bulk(c.since.as_bytes());
    out.bulk(b"group");
    out.bulk(c.group.as_bytes());
    if !complexity.is_empty() {
        out.bulk(b"complexity");
        out.bulk(complexity.as_bytes());
    }
    if flags != 0 {
        out.bulk(b"doc_flags");
        let names: Vec<&[u8]> = [(DEPRECATED, &b"deprecated"[..]), (SYSCMD, b"syscmd")]
            .into_iter()
            .filter(|(bit, _)| flags & bit != 0)
            .map(|(_, n)| n)
            .collect();
        out.set(names.len());
        for n in names {
            out.simple(n);
        }
    }
    if !deprecated_since.is_empty() {
        out.bulk(b"deprecated_since");
        out.bulk(deprecated_since.as_bytes());
    }
    if !replaced_by.is_empty() {
        out.bulk(b"replaced_by");
        out.bulk(replaced_by.as_bytes());
    }
    if !history.is_empty() {
        out.bulk(b"history");
        // A set in RESP3, as Redis writes it.
        out.set(history.len());
        for (v, text) in history {
            out.array(2);
            out.bulk(v.as_bytes());
            out.bulk(text.as_bytes());
        }
    }
    if !args.is_empty() {
        out.bulk(b"arguments");
        write_args(out, &args, compat);
    }
    if !c.subcommands.is_empty() {
        out.bulk(b"subcommands");
        out.map(subs.len());
        for s in subs {
            write(out, s, compat, sub);
        }
    }
}

/// Writes an argument list (module doc, "The reply").
fn write_args(out: &mut RespWriter, args: &[&Arg], compat: (u8, u8)) {
    out.array(args.len());
    for a in args {
        let nested = matches!(a.kind, ArgType::Oneof | ArgType::Block);
        let flags: Vec<&[u8]> = [
            (a.optional, &b"optional"[..]),
            (a.multiple, b"multiple"),
            (a.multiple_token, b"multiple_token"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| n)
        .collect();
        let len = 3
            + usize::from(a.key_spec_index.is_some())
            + usize::from(a.token.is_some())
            + usize::from(a.summary.is_some())
            + usize::from(a.since.is_some())
            + usize::from(a.deprecated_since.is_some())
            + usize::from(!flags.is_empty());
        out.map(len);
        out.bulk(b"name");
        out.bulk(a.name.as_bytes());
        out.bulk(b"type");
        out.bulk(a.kind.as_str().as_bytes());
        if !nested {
            out.bulk(b"display_text");
            out.bulk(a.display.as_deref().unwrap_or(&a.name).as_bytes());
        }
        if let Some(i) = a.key_spec_index {
            out.bulk(b"key_spec_index");
            out.integer(i64::from(i));
        }
        let texts = [
            ("token", &a.token),
            ("summary", &a.summary),
            ("since", &a.since),
            ("deprecated_since", &a.deprecated_since),
        ];
        for (field, value) in texts {
            if let Some(v) = value {
                out.bulk(field.as_bytes());
                out.bulk(v.as_bytes());
            }
        }
        if !flags.is_empty() {
            out.bulk(b"flags");
            out.set(flags.len());
            for f in flags {
                out.simple(f);
            }
        }
        if nested {
            out.bulk(b"arguments");
            let inner: Vec<&Arg> = a
                .args
                .iter()
                .filter(|x| known(x.since.as_deref(), compat))
                .collect();
            write_args(out, &inner, compat);
        }
    }
}

/// The one-line synopsis redis-cli shows as a hint after a command's name, rendered
/// from the argument tree as redis-cli 7.0 renders it from `COMMAND DOCS` (`key value
/// [NX|XX] [GET] ...`).
pub fn hint(args: &[Arg]) -> String {
    let parts: Vec<String> = args.iter().map(hint_arg).collect();
    parts.join(" ")
}

/// One argument of [`hint`]: its token, then its value (a typed argument's name, a
/// oneof's alternatives joined by `|`, a block's parts joined by spaces), repeated as
/// `[value ...]` (with the token again for multiple_token) and bracketed if optional.
fn hint_arg(a: &Arg) -> String {
    let repeat = match a.kind {
        ArgType::PureToken => String::new(),
        ArgType::Oneof => a.args.iter().map(hint_arg).collect::<Vec<_>>().join("|"),
        ArgType::Block => hint(&a.args),
        _ => a.name.clone(),
    };
    let mut token = a.token.clone().unwrap_or_default();
    if !token.is_empty() && !repeat.is_empty() {
        token.push(' ');
    }
    let mut s = format!("{token}{repeat}");
    if a.multiple {
        let again = if a.multiple_token { token.as_str() } else { "" };
        s = format!("{s} [{again}{repeat} ...]");
    }
    if a.optional {
        s = format!("[{s}]");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_arguments_carry_type_and_key_spec_index() {
        let a = parse("key:key@0 value:string").expect("parses");
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].name, "key");
        assert_eq!(a[0].kind, ArgType::Key);
        assert_eq!(a[0].key_spec_index, Some(0));
        assert_eq!(a[1].kind, ArgType::String);
        assert_eq!(a[1].key_spec_index, None);
    }

    #[test]
    fn a_word_before_a_value_is_its_token_and_alone_a_pure_token() {
        let a = parse("[EX seconds:integer] [GET] [nx=NX]").expect("parses");
        assert_eq!(a[0].name, "seconds");
        assert_eq!(a[0].token.as_deref(), Some("EX"));
        assert!(a[0].optional);
        assert_eq!(a[1].kind, ArgType::PureToken);
        assert_eq!(
            (a[1].name.as_str(), a[1].token.as_deref()),
            ("get", Some("GET"))
        );
        assert_eq!(
            (a[2].name.as_str(), a[2].token.as_deref()),
            ("nx", Some("NX"))
        );
    }

    #[test]
    fn oneof_and_block_nest_with_notes() {
        let a = parse(
            "[condition(NX | XX)]<since 2.6.12> \
             [LIMIT limit{offset:integer count:integer}] \
             id(auto-id=\"*\" | id:string)",
        )
        .expect("parses");
        assert_eq!(a[0].kind, ArgType::Oneof);
        assert_eq!(a[0].since.as_deref(), Some("2.6.12"));
        assert_eq!(a[0].args.len(), 2);
        assert_eq!(a[1].kind, ArgType::Block);
        assert_eq!(a[1].token.as_deref(), Some("LIMIT"));
        assert_eq!(a[1].args[1].name, "count");
        assert_eq!(a[2].args[0].token.as_deref(), Some("*"));
        assert_eq!(a[2].args[0].name, "auto-id");
    }

    #[test]
    fn repeats_and_text_notes_parse() {
        let a = parse(
            "key:key@0... [GET pattern:pattern@1]...+ \
             x:string<display \"a b\"><summary \"some |\n   text\"><deprecated 6.2.0>",
        )
        .expect("parses");
        assert!(a[0].multiple && !a[0].multiple_token);
        assert!(a[1].optional && a[1].multiple && a[1].multiple_token);
        assert_eq!(a[2].display.as_deref(), Some("a b"));
        assert_eq!(a[2].summary.as_deref(), Some("some | text"));
        assert_eq!(a[2].deprecated_since.as_deref(), Some("6.2.0"));
    }

    #[test]
    fn names_with_a_colon_split_at_the_last_one() {
        let a = parse("ip:port:string").expect("parses");
        assert_eq!(a[0].name, "ip:port");
        assert_eq!(a[0].kind, ArgType::String);
    }

    #[test]
    fn malformed_texts_are_refused() {
        for bad in [
            "[key:key",
            "x(a | b",
            "x:nosuchtype",
            "x{}",
            "a:string <bogus 1>",
            "\"open",
            "]",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn every_doc_parses_and_names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for d in all() {
            assert!(seen.insert(d.name), "{} documented twice", d.name);
            assert_eq!(d.name, d.name.to_ascii_lowercase());
            if let Err(e) = parse(d.args) {
                panic!("{}: {e}", d.name);
            }
        }
    }

    #[test]
    fn every_command_is_documented_and_every_doc_names_a_command() {
        let mut installed = std::collections::HashSet::new();
        // The scripting family is installed by the top layer, so unit tests add it here.
        let scripting = crate::scripting::COMMANDS.iter();
        for c in crate::commands::all().chain(scripting) {
            installed.insert(c.name);
            installed.extend(c.subcommands.iter().map(|s| s.name));
        }
        for name in &installed {
            assert!(lookup(name).is_some(), "{name} has no COMMAND DOCS entry");
        }
        for d in all() {
            assert!(
                installed.contains(d.name),
                "{} is documented but no command has that name (a typo?)",
                d.name
            );
        }
    }

    #[test]
    fn hints_read_like_the_synopsis() {
        let a = parse(
            "key:key@0 value:string [condition(NX | XX)] [GET] \
             [expiration(EX seconds:integer | KEEPTTL)] [GET pattern:pattern@1]...+ \
             STREAMS streams{key:key@0... id:string...}",
        )
        .expect("parses");
        assert_eq!(
            hint(&a),
            "key value [NX|XX] [GET] [EX seconds|KEEPTTL] [GET pattern [GET pattern ...]] \
             STREAMS key [key ...] id [id ...]"
        );
    }
}
