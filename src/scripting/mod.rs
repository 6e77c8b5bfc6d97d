//! Lua scripting and functions: EVAL and friends, the script cache, FUNCTION libraries,
//! and the Lua 5.1 VM they run in.
//!
//! This layer sits above `commands`: a script's `redis.call` goes through the core's
//! dispatcher like a client's command, and the EVAL family's rows join the command
//! table through [`table`].

#![allow(unsafe_code)]

pub mod libs;
