//! `COMMAND DOCS` entries of the cluster commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The cluster group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("asking", "O(1)"),
    Doc::new("cluster", "Depends on subcommand."),
    Doc::new("cluster|addslots", "O(N) where N is the total number of hash slot arguments")
        .args(
            r"slot:integer...",
        ),
    Doc::new("cluster|addslotsrange", "O(N) where N is the total number of the slots between the start slot and end slot arguments.")
        .args(
            r"range{start-slot:integer end-slot:integer}...",
        ),
    Doc::new("cluster|bumpepoch", "O(1)"),
    Doc::new("cluster|count-failure-reports", "O(N) where N is the number of failure reports")
        .args(
            r"node-id:string",
        ),
    Doc::new("cluster|countkeysinslot", "O(1)")
        .args(
            r"slot:integer",
        ),
    Doc::new("cluster|delslots", "O(N) where N is the total number of hash slot arguments")
        .args(
            r"slot:integer...",
        ),
    Doc::new("cluster|delslotsrange", "O(N) where N is the total number of the slots between the start slot and end slot arguments.")
        .args(
            r"range{start-slot:integer end-slot:integer}...",
        ),
    Doc::new("cluster|failover", "O(1)")
        .args(
            r"[options(FORCE | TAKEOVER)]",
        ),
    Doc::new("cluster|flushslots", "O(1)"),
    Doc::new("cluster|forget", "O(1)")
        .args(
            r"node-id:string",
        ),
    Doc::new("cluster|getkeysinslot", "O(N) where N is the number of requested keys")
        .args(
            r"slot:integer count:integer",
        ),
    Doc::new("cluster|help", "O(1)"),
    Doc::new("cluster|info", "O(1)"),
    Doc::new("cluster|keyslot", "O(N) where N is the number of bytes in the key")
        .args(
            r"key:string",
        ),
    Doc::new("cluster|links", "O(N) where N is the total number of Cluster nodes"),
    Doc::new("cluster|meet", "O(1)")
        .history(&[
            ("4.0.0", "Added the optional `cluster_bus_port` argument."),
        ])
        .args(
            r"ip:string port:integer [cluster-bus-port:integer]<since 4.0.0>",
        ),
    Doc::new("cluster|myid", "O(1)"),
    Doc::new("cluster|myshardid", "O(1)"),
    Doc::new("cluster|nodes", "O(N) where N is the total number of Cluster nodes"),
    Doc::new("cluster|replicas", "O(N) where N is the number of replicas.")
        .args(
            r"node-id:string",
        ),
    Doc::new("cluster|replicate", "O(1)")
        .args(
            r"node-id:string",
        ),
    Doc::new("cluster|reset", "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.")
        .args(
            r"[reset-type(HARD | SOFT)]",
        ),
    Doc::new("cluster|saveconfig", "O(1)"),
    Doc::new("cluster|set-config-epoch", "O(1)")
        .args(
            r"config-epoch:integer",
        ),
    Doc::new("cluster|setslot", "O(1)")
        .args(
            r"slot:integer
             subcommand(IMPORTING importing:string<display node-id> | MIGRATING
             migrating:string<display node-id> | NODE node:string<display node-id> | STABLE)",
        ),
    Doc::new("cluster|shards", "O(N) where N is the total number of cluster nodes"),
    Doc::new("cluster|slaves", "O(N) where N is the number of replicas.")
        .deprecated("5.0.0", "`CLUSTER REPLICAS`")
        .args(
            r"node-id:string",
        ),
    Doc::new("cluster|slots", "O(N) where N is the total number of Cluster nodes")
        .deprecated("7.0.0", "`CLUSTER SHARDS`")
        .history(&[
            ("4.0.0", "Added node IDs."),
            ("7.0.0", "Added additional networking metadata field."),
        ]),
    Doc::new("readonly", "O(1)"),
    Doc::new("readwrite", "O(1)"),
    Doc::new("cluster|slot-stats", "O(N) where N is the total number of slots based on arguments. O(N log N) with ORDERBY subcommand.")
        .args(
            r"filter(SLOTSRANGE slotsrange{start-slot:integer end-slot:integer} |
             ORDERBY orderby{metric:string [LIMIT limit:integer] [order(ASC | DESC)]})",
        ),
];
