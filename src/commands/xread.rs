//! XREAD (and the option parser XREADGROUP shares): read new entries from one or many
//! streams, optionally blocking until some arrive (reference §2.4, §3.4).

use super::xrange::write_range;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::error::ReplyError;
use crate::resp::Argv;
use crate::stream::StreamId;
use crate::stream::id::parse_strict_id;
use bytes::Bytes;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "xread",
    arity: -4,
    flags: READONLY | BLOCKING | MOVABLEKEYS,
    first_key: 0,
    last_key: 0,
    key_step: 0,
    acl: &["@stream"],
    summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.",
    since: "5.0.0",
    group: "stream",
    handler: xread,
    subcommands: &[],
}];

/// Options of XREAD / XREADGROUP, parsed before any key is looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// Per-stream COUNT (0 = unlimited; negative values become 0).
    pub count: usize,
    /// BLOCK timeout in ms (`Some(0)` = forever), `None` without BLOCK.
    pub block_ms: Option<u64>,
    /// `GROUP group consumer` (XREADGROUP only).
    pub group: Option<(Bytes, Bytes)>,
    /// NOACK (XREADGROUP only).
    pub noack: bool,
    /// CLAIM min-idle-time (XREADGROUP only).
    pub claim: Option<u64>,
    /// Index in argv of the first key (just after STREAMS).
    pub streams_at: usize,
    /// Number of keys (= number of IDs).
    pub nkeys: usize,
}

impl ReadOptions {
    /// The keys, `argv[streams_at .. streams_at + nkeys]`.
    pub fn keys<'a>(&self, argv: &'a Argv) -> &'a [Bytes] {
        &argv[self.streams_at..self.streams_at + self.nkeys]
    }

    /// The ID arguments, after the keys.
    pub fn ids<'a>(&self, argv: &'a Argv) -> &'a [Bytes] {
        &argv[self.streams_at + self.nkeys..self.streams_at + 2 * self.nkeys]
    }
}

/// Parses the options of XREAD (`group_cmd` false) or XREADGROUP, with Redis's errors
/// and precedence (the option loop of `xreadCommand`).
pub fn parse_read_options(argv: &Argv, group_cmd: bool) -> Result<ReadOptions, ReplyError> {
    let mut opts = ReadOptions {
        count: 0,
        block_ms: None,
        group: None,
        noack: false,
        claim: None,
        streams_at: 0,
        nkeys: 0,
    };
    let name = if group_cmd { "xreadgroup" } else { "xread" };
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let a = &argv[i];
        if is(a, "BLOCK") && more >= 1 {
            i += 1;
            opts.block_ms = Some(parse_timeout(&argv[i])?);
        } else if is(a, "COUNT") && more >= 1 {
            i += 1;
            opts.count = parse_i64(&argv[i])?.max(0) as usize;
        } else if is(a, "STREAMS") && more >= 1 {
            opts.streams_at = i + 1;
            let n = argv.len() - opts.streams_at;
            if n % 2 != 0 {
                let what = if group_cmd {
                    "an ID or '>'"
                } else {
                    "an ID, '+', or '$'"
                };
                return Err(ReplyError::owned(format!(
                    "ERR Unbalanced '{name}' list of streams: for each stream key {what} must be specified."
                )));
            }
            opts.nkeys = n / 2;
            break;
        } else if is(a, "GROUP") && more >= 2 {
            if !group_cmd {
                return Err(only_for_xreadgroup("GROUP"));
            }
            opts.group = Some((argv[i + 1].clone(), argv[i + 2].clone()));
            i += 2;
        } else if is(a, "NOACK") {
            if !group_cmd {
                return Err(only_for_xreadgroup("NOACK"));
            }
            opts.noack = true;
        } else if is(a, "CLAIM") && more >= 1 {
            if !group_cmd {
                return Err(only_for_xreadgroup("CLAIM"));
            }
            i += 1;
            let v = parse_i64(&argv[i]).map_err(|_| {
                ReplyError::msg("ERR min-idle-time is not an integer or out of range")
            })?;
            if v < 0 {
                return Err(ReplyError::msg(
                    "ERR min-idle-time must be a positive integer",
                ));
            }
            opts.claim = Some(v as u64);
        } else {
            return Err(ReplyError::Syntax);
        }
        i += 1;
    }
    if opts.streams_at == 0 {
        return Err(ReplyError::Syntax);
    }
    if group_cmd && opts.group.is_none() {
        return Err(ReplyError::msg("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(opts)
}

fn only_for_xreadgroup(option: &str) -> ReplyError {
    ReplyError::owned(format!(
        "ERR The {option} option is only supported by XREADGROUP. You called XREAD instead."
    ))
}

/// BLOCK's argument: milliseconds, strict integer, not negative (Redis:
/// `getTimeoutFromObjectOrReply`).
fn parse_timeout(arg: &[u8]) -> Result<u64, ReplyError> {
    let v = parse_i64(arg)
        .map_err(|_| ReplyError::msg("ERR timeout is not an integer or out of range"))?;
    if v < 0 {
        return Err(ReplyError::msg("ERR timeout is negative"));
    }
    if v > 0 && v > i64::MAX - crate::core::unix_ms() as i64 {
        return Err(ReplyError::msg("ERR timeout is out of range"));
    }
    Ok(v as u64)
}

/// Where an XREAD starts on one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadFrom {
    /// Entries with ID strictly greater than this one.
    After(StreamId),
    /// `+`: only the last entry.
    LastEntry,
}

fn xread(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let opts = parse_read_options(argv, false)?;
    let keys = opts.keys(argv);
    // Resolve the IDs against the current streams (`$` = last_id now).
    let mut from = Vec::with_capacity(keys.len());
    for (key, id) in keys.iter().zip(opts.ids(argv)) {
        let last_id = ctx.lookup(key).map(|s| s.last_id()).unwrap_or_default();
        let f = if id.as_ref() == b"$" {
            ReadFrom::After(last_id)
        } else if id.as_ref() == b"+" {
            ReadFrom::LastEntry
        } else if id.as_ref() == b">" {
            return Err(ReplyError::msg(
                "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
            ));
        } else {
            ReadFrom::After(parse_strict_id(id)?)
        };
        from.push(f);
    }
    // Serve what is there.
    let resp3 = ctx.out.is_resp3();
    let mut served = 0;
    let mut header = None;
    let db = &ctx.core.dbs[ctx.client.db];
    for (key, f) in keys.iter().zip(&from) {
        let Some(stream) = db.get(key) else { continue };
        let (start, count) = match *f {
            ReadFrom::LastEntry => match stream.last_entry() {
                Some(e) => (e.id, 1),
                None => continue,
            },
            ReadFrom::After(after) => {
                if stream.last_id() <= after {
                    continue;
                }
                match after.incr() {
                    Some(s) => (s, opts.count),
                    None => continue,
                }
            }
        };
        let out = &mut *ctx.out;
        if header.is_none() {
            header = Some(out.defer_len());
        }
        if !resp3 {
            out.array(2);
        }
        out.bulk(key);
        write_range(out, stream, start, StreamId::MAX, false, count);
        served += 1;
    }
    if let Some(h) = header {
        if resp3 {
            ctx.out.finish_map(h, served);
        } else {
            ctx.out.finish_array(h, served);
        }
        return Ok(());
    }
    match opts.block_ms {
        Some(timeout) if ctx.can_block() => {
            // Re-execute later with `$` replaced by the IDs it meant now.
            let mut again = argv.clone();
            let ids_at = opts.streams_at + opts.nkeys;
            for (i, f) in from.iter().enumerate() {
                if let ReadFrom::After(id) = f {
                    if argv[ids_at + i].as_ref() == b"$" {
                        again[ids_at + i] = Bytes::from(id.to_string());
                    }
                }
            }
            ctx.block(keys.to_vec(), timeout, false, again);
        }
        _ => ctx.out.null_array(),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Argv {
        s.split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    #[test]
    fn options_in_any_order_and_streams_last() {
        let o =
            parse_read_options(&argv("XREAD BLOCK 10 COUNT -5 STREAMS a b 0 0"), false).unwrap();
        assert_eq!(o.block_ms, Some(10));
        assert_eq!(o.count, 0);
        assert_eq!(o.nkeys, 2);
        assert_eq!(o.streams_at, 5);
    }

    #[test]
    fn xread_errors_match_redis() {
        let err = |s: &str| parse_read_options(&argv(s), false).unwrap_err().to_string();
        assert_eq!(
            err("XREAD STREAMS a b c"),
            "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be specified."
        );
        assert_eq!(
            err("XREAD GROUP g c STREAMS a 0"),
            "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
        );
        assert_eq!(err("XREAD BLOCK -1 STREAMS a 0"), "ERR timeout is negative");
        assert_eq!(
            err("XREAD BLOCK x STREAMS a 0"),
            "ERR timeout is not an integer or out of range"
        );
        assert_eq!(
            err("XREAD COUNT x STREAMS a 0"),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(err("XREAD FOO STREAMS a 0"), "ERR syntax error");
        assert_eq!(err("XREAD COUNT 1 BLOCK 1"), "ERR syntax error");
    }

    #[test]
    fn xreadgroup_options() {
        let o = parse_read_options(
            &argv("XREADGROUP CLAIM 5 GROUP g c NOACK STREAMS s >"),
            true,
        )
        .unwrap();
        assert_eq!(o.claim, Some(5));
        assert!(o.noack);
        assert_eq!(o.group, Some((Bytes::from("g"), Bytes::from("c"))));
        let err = |s: &str| parse_read_options(&argv(s), true).unwrap_err().to_string();
        assert_eq!(
            err("XREADGROUP STREAMS s >"),
            "ERR Missing GROUP option for XREADGROUP"
        );
        assert_eq!(
            err("XREADGROUP GROUP g c CLAIM -1 STREAMS s >"),
            "ERR min-idle-time must be a positive integer"
        );
        assert_eq!(
            err("XREADGROUP GROUP g c CLAIM STREAMS s >"),
            "ERR min-idle-time is not an integer or out of range"
        );
    }
}
