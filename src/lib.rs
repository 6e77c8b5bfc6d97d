//! streamd: a Redis-protocol stream server.
//!
//! # Layout
//!
//! ```text
//! client ──TCP──▶ server (tokio tasks: read, parse, write)  ──▶ core (keyspace, commands)
//!                 resp/   parser + writer                        commands/  one file per family
//!                                                                stream/    the data structures
//! ```
//!
//! See `docs/architecture.md` for the full picture.

pub mod error;
pub mod resp;
pub mod stream;
