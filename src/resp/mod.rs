//! The wire protocol: request parsing and reply writing (RESP2 and RESP3).
pub mod inline;
pub mod parser;
pub mod writer;
/// A parsed command: its name and arguments, as zero-copy byte strings.
pub type Argv = Vec<bytes::Bytes>;

/// An argv from string literals, for unit tests of command parsers.
#[cfg(test)]
pub fn argv(args: &[&str]) -> Argv {
    args.iter()
        .map(|a| bytes::Bytes::copy_from_slice(a.as_bytes()))
        .collect()
}
