//! CLUSTER, READONLY, READWRITE, ASKING and RESTORE-ASKING as a Redis node started with
//! `cluster-enabled no` answers them: the cluster commands exist (so the command table,
//! `COMMAND INFO/DOCS`, ACL categories and the script rules know them) and each answers
//! `-ERR This instance has cluster support disabled`, which is how clients tell a
//! standalone node from a cluster member. RESTORE-ASKING is RESTORE there.
//!
//! The summaries, arities and flags are Redis's command table (its `commands/*.json`);
//! Redis's `NO_ASYNC_LOADING` and `ASKING` flags are not modelled here (no command of
//! this server has them).
//!
//! Cluster mode itself (the bus, slots, redirections) is the `cluster` layer's work; these
//! rows are the standalone node's.

use super::{CommandSpec, flags::*};
use crate::core::Ctx;
use crate::error::ReplyError;

/// What every cluster command answers on a standalone node (Redis's text).
const DISABLED: &str = "ERR This instance has cluster support disabled";

fn disabled(_ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    Err(ReplyError::msg(DISABLED))
}

const fn sub(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "cluster", summary, since, disabled)
}

/// The flags Redis 7.0 gives the subcommands that change the cluster's configuration.
const CONFIGURE: u32 = ADMIN | STALE;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::container(
        "cluster",
        "cluster",
        "A container for Redis Cluster commands.",
        "3.0.0",
        SUBCOMMANDS,
    ),
    CommandSpec {
        acl: &["@connection"],
        ..CommandSpec::new(
            "readonly",
            1,
            FAST | LOADING | STALE,
            "cluster",
            "Enables read-only queries for a connection to a Redis Cluster replica node.",
            "3.0.0",
            disabled,
        )
    },
    CommandSpec {
        acl: &["@connection"],
        ..CommandSpec::new(
            "readwrite",
            1,
            FAST | LOADING | STALE,
            "cluster",
            "Enables read-write queries for a connection to a Reids Cluster replica node.",
            "3.0.0",
            disabled,
        )
    },
    CommandSpec {
        acl: &["@connection"],
        ..CommandSpec::new(
            "asking",
            1,
            FAST,
            "cluster",
            "Signals that a cluster client is following an -ASK redirect.",
            "3.0.0",
            disabled,
        )
    },
    CommandSpec {
        name: "restore-asking",
        summary: "An internal command for migrating keys in a cluster.",
        since: "3.0.0",
        group: "server",
        ..super::dump::COMMANDS[super::dump::RESTORE_ROW]
    },
];

const SUBCOMMANDS: &[CommandSpec] = &[
    sub(
        "cluster|addslots",
        -3,
        CONFIGURE,
        "Assigns new hash slots to a node.",
        "3.0.0",
    ),
    sub(
        "cluster|addslotsrange",
        -4,
        CONFIGURE,
        "Assigns new hash slot ranges to a node.",
        "7.0.0",
    ),
    sub(
        "cluster|bumpepoch",
        2,
        CONFIGURE,
        "Advances the cluster config epoch.",
        "3.0.0",
    ),
    sub(
        "cluster|count-failure-reports",
        3,
        CONFIGURE,
        "Returns the number of active failure reports active for a node.",
        "3.0.0",
    ),
    sub(
        "cluster|countkeysinslot",
        3,
        STALE,
        "Returns the number of keys in a hash slot.",
        "3.0.0",
    ),
    sub(
        "cluster|delslots",
        -3,
        CONFIGURE,
        "Sets hash slots as unbound for a node.",
        "3.0.0",
    ),
    sub(
        "cluster|delslotsrange",
        -4,
        CONFIGURE,
        "Sets hash slot ranges as unbound for a node.",
        "7.0.0",
    ),
    sub(
        "cluster|failover",
        -2,
        CONFIGURE,
        "Forces a replica to perform a manual failover of its master.",
        "3.0.0",
    ),
    sub(
        "cluster|flushslots",
        2,
        CONFIGURE,
        "Deletes all slots information from a node.",
        "3.0.0",
    ),
    sub(
        "cluster|forget",
        3,
        CONFIGURE,
        "Removes a node from the nodes table.",
        "3.0.0",
    ),
    sub(
        "cluster|getkeysinslot",
        4,
        STALE,
        "Returns the key names in a hash slot.",
        "3.0.0",
    ),
    sub(
        "cluster|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "5.0.0",
    ),
    sub(
        "cluster|info",
        2,
        STALE,
        "Returns information about the state of a node.",
        "3.0.0",
    ),
    sub(
        "cluster|keyslot",
        3,
        STALE,
        "Returns the hash slot for a key.",
        "3.0.0",
    ),
    sub(
        "cluster|links",
        2,
        STALE,
        "Returns a list of all TCP links to and from peer nodes.",
        "7.0.0",
    ),
    sub(
        "cluster|meet",
        -4,
        CONFIGURE,
        "Forces a node to handshake with another node.",
        "3.0.0",
    ),
    sub(
        "cluster|myid",
        2,
        STALE,
        "Returns the ID of a node.",
        "3.0.0",
    ),
    sub(
        "cluster|myshardid",
        2,
        STALE,
        "Returns the shard ID of a node.",
        "7.2.0",
    ),
    sub(
        "cluster|nodes",
        2,
        STALE,
        "Returns the cluster configuration for a node.",
        "3.0.0",
    ),
    sub(
        "cluster|replicas",
        3,
        CONFIGURE,
        "Lists the replica nodes of a master node.",
        "5.0.0",
    ),
    sub(
        "cluster|replicate",
        3,
        CONFIGURE,
        "Configure a node as replica of a master node.",
        "3.0.0",
    ),
    sub(
        "cluster|reset",
        -2,
        CONFIGURE | NOSCRIPT,
        "Resets a node.",
        "3.0.0",
    ),
    sub(
        "cluster|saveconfig",
        2,
        CONFIGURE,
        "Forces a node to save the cluster configuration to disk.",
        "3.0.0",
    ),
    sub(
        "cluster|set-config-epoch",
        3,
        CONFIGURE,
        "Sets the configuration epoch for a new node.",
        "3.0.0",
    ),
    sub(
        "cluster|setslot",
        -4,
        CONFIGURE,
        "Binds a hash slot to a node.",
        "3.0.0",
    ),
    sub(
        "cluster|shards",
        2,
        LOADING | STALE,
        "Returns the mapping of cluster slots to shards.",
        "7.0.0",
    ),
    sub(
        "cluster|slaves",
        3,
        CONFIGURE,
        "Lists the replica nodes of a master node.",
        "3.0.0",
    ),
    sub(
        "cluster|slots",
        2,
        LOADING | STALE,
        "Returns the mapping of cluster slots to nodes.",
        "3.0.0",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_asking_is_a_copy_of_restore() {
        let restore = &super::super::dump::COMMANDS[super::super::dump::RESTORE_ROW];
        assert_eq!(restore.name, "restore");
        let asking = COMMANDS
            .iter()
            .find(|c| c.name == "restore-asking")
            .expect("a row");
        assert_eq!((asking.arity, asking.flags), (restore.arity, restore.flags));
        assert_eq!(asking.key_flags, restore.key_flags);
    }

    #[test]
    fn subcommands_are_sorted_and_named_under_the_container() {
        let names: Vec<&str> = SUBCOMMANDS.iter().map(|c| c.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert!(names.iter().all(|n| n.starts_with("cluster|")));
    }
}
