//! (being written)

use super::CommandSpec;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[];
