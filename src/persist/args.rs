//! The arguments of the loader-only `STREAMD.*` records (`groups.rs`, `idmp.rs`) as the
//! loader reads them: decimal `u64`s, `-1` for "unknown", explicit stream IDs. An error
//! names the argument it could not read.

use crate::stream::StreamId;

/// A decimal `u64`.
pub fn parse_u64(a: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(a)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad number {:?}", String::from_utf8_lossy(a)))
}

/// A decimal `u64`, or `-1` for `None` (as `signed` in `commands/effects.rs` writes it).
pub fn parse_opt(a: &[u8]) -> Result<Option<u64>, String> {
    if a == b"-1" {
        Ok(None)
    } else {
        parse_u64(a).map(Some)
    }
}

/// An explicit stream ID, `<ms>[-<seq>]` (`stream::id::parse_strict_id`: no `-`/`+`).
pub fn parse_id(a: &[u8]) -> Result<StreamId, String> {
    crate::stream::id::parse_strict_id(a)
        .map_err(|_| format!("bad ID {:?}", String::from_utf8_lossy(a)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_unknowns_and_ids() {
        assert_eq!(parse_u64(b"42"), Ok(42));
        assert_eq!(parse_u64(b"-1"), Err("bad number \"-1\"".into()));
        assert_eq!(parse_opt(b"-1"), Ok(None));
        assert_eq!(parse_opt(b"7"), Ok(Some(7)));
        assert_eq!(parse_id(b"5-3"), Ok(StreamId::new(5, 3)));
        assert_eq!(parse_id(b"+"), Err("bad ID \"+\"".into()));
    }
}
