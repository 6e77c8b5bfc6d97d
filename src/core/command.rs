//! The command model: what one row of the command table says ([`CommandSpec`]: name,
//! arity, flags, key positions, ACL categories, documentation, handler, subcommands) and
//! the table's lookup.
//!
//! The core owns the *shape* of a command, because the dispatcher ([`super::Core::execute`]),
//! the ACL check and blocking re-execution read it; the *rows* live with their handlers
//! in `commands/` (one `COMMANDS` slice per family), which sits above the core. The top
//! layer hands those rows to [`install`] (through `Core::new`), so the core finds
//! commands without importing the layer that defines them.
//!
//! Arity follows Redis: a positive number is the exact argument count including the
//! name; a negative `-n` means "at least n". Containers (XGROUP, XINFO, CONFIG, CLIENT,
//! ...) have `subcommands`, each a full spec named `container|sub`.

use super::Ctx;
use crate::error::ReplyError;
use crate::resp::Argv;
use std::collections::HashMap;
use std::sync::OnceLock;

/// A command handler: parse `ctx.argv`, act, write the reply to `ctx.out`. Returning
/// `Err` makes the dispatcher reply with the error; handlers find every argument error
/// before changing anything.
pub type Handler = fn(&mut Ctx<'_>) -> Result<(), ReplyError>;

/// Command flags (Redis's `CMD_*`), as a bit set.
pub mod flags {
    /// May modify the keyspace.
    pub const WRITE: u32 = 1 << 0;
    /// Only reads.
    pub const READONLY: u32 = 1 << 1;
    /// May grow memory (refused at maxmemory).
    pub const DENYOOM: u32 = 1 << 2;
    /// O(1) or O(log N).
    pub const FAST: u32 = 1 << 3;
    /// May block the client.
    pub const BLOCKING: u32 = 1 << 4;
    /// Administrative.
    pub const ADMIN: u32 = 1 << 5;
    /// Allowed before authentication.
    pub const NO_AUTH: u32 = 1 << 6;
    /// Key positions depend on the arguments.
    pub const MOVABLEKEYS: u32 = 1 << 7;
    /// Runs immediately inside MULTI instead of being queued (EXEC, DISCARD, MULTI,
    /// WATCH, QUIT, RESET).
    pub const NO_MULTI_QUEUE: u32 = 1 << 8;
    /// Allowed while loading.
    pub const LOADING: u32 = 1 << 9;
    /// Allowed on a stale replica.
    pub const STALE: u32 = 1 << 10;
    /// Not allowed from scripts.
    pub const NOSCRIPT: u32 = 1 << 11;
    /// A Pub/Sub command (implies the `@pubsub` ACL category).
    pub const PUBSUB: u32 = 1 << 12;
    /// Not shown to MONITOR once it ran (`skip_monitor`: EVAL and friends are shown
    /// before the commands their script runs, not after).
    pub const SKIP_MONITOR: u32 = 1 << 13;
    /// May run without any key although it takes keys (`no_mandatory_keys`: EVAL with
    /// numkeys 0). Documentation only.
    pub const NO_MANDATORY_KEYS: u32 = 1 << 14;
    /// Allowed while a script is busy (`allow_busy`: SCRIPT KILL, FUNCTION KILL,
    /// FUNCTION STATS). Documentation only: the busy-script check names its commands.
    pub const ALLOW_BUSY: u32 = 1 << 15;
    /// Not logged by SLOWLOG (`skip_slowlog`: EXEC, whose commands are logged instead).
    /// Documentation only: the slow log skips EXEC by name.
    pub const SKIP_SLOWLOG: u32 = 1 << 16;
    /// Served for a client that sent ASKING on an importing slot (`asking`:
    /// RESTORE-ASKING). Documentation only.
    pub const ASKING: u32 = 1 << 17;
    /// Refused while an asynchronous (diskless) load runs (`no_async_loading`: SAVE,
    /// BGSAVE, REPLICAOF...). Documentation only: streamd loads before it serves.
    pub const NO_ASYNC_LOADING: u32 = 1 << 18;
    /// Refused inside MULTI (`no_multi`: SAVE, SHUTDOWN, SYNC, PSYNC).
    pub const NO_MULTI: u32 = 1 << 19;
    /// Flag names in `COMMAND INFO` order (Redis's `addReplyFlagsForCommand`), with
    /// their bit.
    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (ASKING, "asking"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLEKEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// The flags of a transaction's queued commands: those any of them has, and those all
/// of them have (Redis's `mstate.cmd_flags` and the complement of `cmd_inv_flags`).
/// An empty queue gives `(0, u32::MAX)`.
pub fn queued_flags(queue: &[crate::resp::Argv]) -> (u32, u32) {
    queue.iter().fold((0, u32::MAX), |(any, all), argv| {
        let f = argv
            .first()
            .and_then(|n| lookup(n))
            .and_then(|s| resolve_subcommand(s, argv).ok())
            .map_or(0, |s| s.flags);
        (any | f, all & f)
    })
}

/// One row of the command table.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lower-case full name (`xadd`, `xgroup|create`).
    pub name: &'static str,
    /// Arity (see the module doc).
    pub arity: i32,
    /// [`flags`] bits.
    pub flags: u32,
    /// First key position (0 = no keys).
    pub first_key: i32,
    /// Last key position (-1 = last argument).
    pub last_key: i32,
    /// Step between keys.
    pub key_step: i32,
    /// ACL categories beyond those implied by the flags (`@stream`, `@keyspace`, ...).
    pub acl: &'static [&'static str],
    /// One-line summary (COMMAND DOCS).
    pub summary: &'static str,
    /// Redis version that introduced it.
    pub since: &'static str,
    /// Documentation group (`stream`, `generic`, `server`, `connection`, `transactions`).
    pub group: &'static str,
    /// The handler.
    pub handler: Handler,
    /// Subcommands of a container, else empty.
    pub subcommands: &'static [CommandSpec],
    /// [`keyflags`] of each key the command names, in [`CommandSpec::key_positions`]
    /// order; the last entry applies to any further keys. Empty without keys. ACL key
    /// permissions read them (`%R~` needs `ACCESS`, `%W~` needs `INSERT`, `UPDATE` or
    /// `DELETE`), exactly as Redis reads its key specs.
    pub key_flags: &'static [u32],
}

/// ACL categories, in Redis's `ACLCommandCategories` order (`ACL CAT` lists them so, and
/// the description algorithm tries them so).
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Key-spec flags (Redis's `CMD_KEY_*`): how a command uses each of its keys.
pub mod keyflags {
    /// Read-only: the key's value is not changed.
    pub const RO: u32 = 1 << 0;
    /// Read-write: the value is read and changed.
    pub const RW: u32 = 1 << 1;
    /// Overwrite: the value is replaced without being read.
    pub const OW: u32 = 1 << 2;
    /// Remove: the key may be deleted.
    pub const RM: u32 = 1 << 3;
    /// The user's data in the value is returned (or copied).
    pub const ACCESS: u32 = 1 << 4;
    /// Data in the value is updated.
    pub const UPDATE: u32 = 1 << 5;
    /// Data is added to the value.
    pub const INSERT: u32 = 1 << 6;
    /// Data is removed from the value.
    pub const DELETE: u32 = 1 << 7;
    /// Flag names in `COMMAND INFO` order, with their bit.
    pub const NAMES: &[(u32, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
    ];

    /// Read-only access to the value (`XRANGE`, `XINFO`).
    pub const RO_ACCESS: &[u32] = &[RO | ACCESS];
    /// Read-only without touching the value's data (`XLEN`, `EXISTS`, `TYPE`).
    pub const RO_ONLY: &[u32] = &[RO];
    /// Read-write updating data (`XADD`, `XACK`, `EXPIRE`).
    pub const RW_UPDATE: &[u32] = &[RW | UPDATE];
    /// Read-write inserting data (`XGROUP CREATE`).
    pub const RW_INSERT: &[u32] = &[RW | INSERT];
    /// Read-write deleting data (`XDEL`, `XTRIM`, `XAUTOCLAIM`).
    pub const RW_DELETE: &[u32] = &[RW | DELETE];
    /// Read-write returning and deleting data (`ZPOPMIN`, `BZPOPMAX`).
    pub const RW_ACCESS_DELETE: &[u32] = &[RW | ACCESS | DELETE];
    /// Read-write returning and updating data (`ZINCRBY`).
    pub const RW_ACCESS_UPDATE: &[u32] = &[RW | ACCESS | UPDATE];
    /// Removal of the whole key (`DEL`, `UNLINK`).
    pub const RM_DELETE: &[u32] = &[RM | DELETE];
}

/// The key flags a command row gets unless it says otherwise: writes update their keys,
/// reads access them (the common case of Redis's key specs); no keys, no flags.
pub const fn default_key_flags(flags: u32, first_key: i32) -> &'static [u32] {
    if first_key <= 0 && flags & flags::MOVABLEKEYS == 0 {
        &[]
    } else if flags & flags::WRITE != 0 {
        keyflags::RW_UPDATE
    } else {
        keyflags::RO_ACCESS
    }
}

/// What the rows of one command family share: the documentation group (`COMMAND
/// DOCS`), the ACL categories beyond the ones the flags imply, and where the keys of
/// most of its rows stand. Every family file builds its rows with [`Family::row`] and
/// its containers with [`Family::container`], then adds what a row has of its own
/// ([`CommandSpec::keys`], [`CommandSpec::with_key_flags`]).
///
/// ```text
/// const SERVER: Family = Family::new("server");
/// const XGROUP: Family = Family::new("stream").categories(STREAM).keys(2, 2, 1);
/// XGROUP.row("xgroup|destroy", 4, WRITE, "Destroys a consumer group.", "5.0.0", destroy)
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Family {
    group: &'static str,
    acl: &'static [&'static str],
    keys: (i32, i32, i32),
}

impl Family {
    /// A family documented under `group`, without extra ACL categories or keys.
    pub const fn new(group: &'static str) -> Family {
        Family {
            group,
            acl: &[],
            keys: (0, 0, 0),
        }
    }

    /// The same family with these ACL categories on every row.
    pub const fn categories(self, acl: &'static [&'static str]) -> Family {
        Family { acl, ..self }
    }

    /// The same family with keys at `first, first + step, ... last` on every row.
    pub const fn keys(self, first: i32, last: i32, step: i32) -> Family {
        Family {
            keys: (first, last, step),
            ..self
        }
    }

    /// A row of this family (see [`CommandSpec::new`] for the fields).
    pub const fn row(
        &self,
        name: &'static str,
        arity: i32,
        flags: u32,
        summary: &'static str,
        since: &'static str,
        handler: Handler,
    ) -> CommandSpec {
        let (first, last, step) = self.keys;
        CommandSpec::new(name, arity, flags, self.group, summary, since, handler)
            .keys(first, last, step)
            .categories(self.acl)
    }

    /// A container row of this family ([`CommandSpec::container`]).
    pub const fn container(
        &self,
        name: &'static str,
        summary: &'static str,
        since: &'static str,
        subcommands: &'static [CommandSpec],
    ) -> CommandSpec {
        CommandSpec::container(name, self.group, summary, since, subcommands)
    }
}

impl CommandSpec {
    /// A row for a command without keys, ACL categories beyond its flags' or
    /// subcommands; the family helpers add those with [`CommandSpec::keys`],
    /// [`CommandSpec::categories`] and [`CommandSpec::container`].
    pub const fn new(
        name: &'static str,
        arity: i32,
        flags: u32,
        group: &'static str,
        summary: &'static str,
        since: &'static str,
        handler: Handler,
    ) -> CommandSpec {
        CommandSpec {
            name,
            arity,
            flags,
            first_key: 0,
            last_key: 0,
            key_step: 0,
            acl: &[],
            summary,
            since,
            group,
            handler,
            subcommands: &[],
            key_flags: default_key_flags(flags, 0),
        }
    }

    /// The same row with keys at `first, first + step, ... last` (`last` -1: up to the
    /// last argument) and the key flags those imply ([`default_key_flags`]).
    pub const fn keys(self, first: i32, last: i32, step: i32) -> CommandSpec {
        CommandSpec {
            first_key: first,
            last_key: last,
            key_step: step,
            key_flags: default_key_flags(self.flags, first),
            ..self
        }
    }

    /// The same row with these ACL categories beyond the ones its flags imply.
    pub const fn categories(self, acl: &'static [&'static str]) -> CommandSpec {
        CommandSpec { acl, ..self }
    }

    /// The same row with these [`keyflags`] for its keys (a family's default is
    /// [`default_key_flags`]).
    pub const fn with_key_flags(self, key_flags: &'static [u32]) -> CommandSpec {
        CommandSpec { key_flags, ..self }
    }

    /// A container row (`XINFO`, `CONFIG`, ...): it only dispatches to `subcommands`, so
    /// running it bare is a syntax error.
    pub const fn container(
        name: &'static str,
        group: &'static str,
        summary: &'static str,
        since: &'static str,
        subcommands: &'static [CommandSpec],
    ) -> CommandSpec {
        CommandSpec {
            subcommands,
            ..CommandSpec::new(name, -2, 0, group, summary, since, |_| {
                Err(crate::error::ReplyError::Syntax)
            })
        }
    }

    /// The full name (`xgroup|create`).
    pub fn full_name(&self) -> &'static str {
        self.name
    }

    /// The name after `|` for subcommands, else the name.
    pub fn short_name(&self) -> &'static str {
        self.name.rsplit('|').next().unwrap_or(self.name)
    }

    /// Does `argc` (name included) satisfy the arity?
    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    /// ACL categories, implied by flags or explicit, in Redis's category order (the
    /// order `COMMAND INFO` lists them in).
    pub fn acl_categories(&self) -> Vec<&'static str> {
        let mut cats = self.acl_categories_unordered();
        let rank = |c: &str| {
            CATEGORIES
                .iter()
                .position(|k| c.strip_prefix('@') == Some(k))
                .unwrap_or(usize::MAX)
        };
        cats.sort_by_key(|c| rank(c));
        cats.dedup();
        cats
    }

    /// ACL categories: implied by flags, then explicit.
    fn acl_categories_unordered(&self) -> Vec<&'static str> {
        let mut cats = Vec::new();
        if self.flags & flags::WRITE != 0 {
            cats.push("@write");
        }
        // Redis's `setImplicitACLCategories` leaves the scripting commands (EVAL_RO,
        // FCALL_RO) out of `@read`: a read-only script is still a script.
        if self.flags & flags::READONLY != 0 && !self.acl.contains(&"@scripting") {
            cats.push("@read");
        }
        if self.flags & flags::ADMIN != 0 {
            cats.push("@admin");
            cats.push("@dangerous");
        }
        if self.flags & flags::PUBSUB != 0 {
            cats.push("@pubsub");
        }
        if self.flags & flags::FAST != 0 {
            cats.push("@fast");
        } else {
            cats.push("@slow");
        }
        if self.flags & flags::BLOCKING != 0 {
            cats.push("@blocking");
        }
        cats.extend(self.acl.iter().copied());
        cats
    }

    /// The [`keyflags`] of the `i`-th key of [`CommandSpec::key_positions`].
    pub fn key_flags_at(&self, i: usize) -> u32 {
        self.key_flags
            .get(i)
            .or(self.key_flags.last())
            .copied()
            .unwrap_or(0)
    }

    /// The [`keyflags`] of the `n`-th key `argv` names, where a key spec's flags depend
    /// on the arguments (Redis's `VARIABLE_FLAGS`, resolved by the command's getkeys
    /// function): BITFIELD only reads its key (`RO access`) when its arguments are GETs
    /// and OVERFLOWs (`bitfieldGetKeys`). Otherwise [`CommandSpec::key_flags_at`]. The
    /// ACL check and `COMMAND GETKEYSANDFLAGS` both read it.
    pub fn key_flags_in(&self, argv: &[bytes::Bytes], n: usize) -> u32 {
        if self.name == "bitfield" {
            return if bitfield_reads_only(argv) {
                keyflags::RO | keyflags::ACCESS
            } else {
                keyflags::RW | keyflags::ACCESS | keyflags::UPDATE
            };
        }
        self.key_flags_at(n)
    }

    /// Key argument positions for `argv` (COMMAND GETKEYS), using the first/last/step
    /// spec, or the command's own rule for movable-key commands.
    pub fn key_positions(&self, argv: &Argv) -> Vec<usize> {
        if self.flags & flags::MOVABLEKEYS != 0 {
            return movable_keys(self, argv);
        }
        if self.first_key <= 0 {
            return Vec::new();
        }
        let argc = argv.len() as i32;
        let last = if self.last_key < 0 {
            argc + self.last_key
        } else {
            self.last_key
        };
        let step = self.key_step.max(1);
        (self.first_key..=last.min(argc - 1))
            .step_by(step as usize)
            .map(|i| i as usize)
            .collect()
    }
}

/// Keys of commands whose key positions depend on their arguments (XREAD,
/// XREADGROUP: the first half of what follows STREAMS; XGROUP SETDLQ: the dead-letter
/// key when one is given; MIGRATE: its key or its KEYS list). Redis describes this as a key
/// spec (search for the keyword `STREAMS`, then keys up to half of the rest); the
/// table has no other movable-key form, so the rule is written here by name rather
/// than as a key-spec field on every row.
fn movable_keys(spec: &CommandSpec, argv: &Argv) -> Vec<usize> {
    match spec.name {
        "xread" | "xreadgroup" => {
            let Some(pos) = argv.iter().position(|a| a.eq_ignore_ascii_case(b"streams")) else {
                return Vec::new();
            };
            let rest = argv.len() - pos - 1;
            (pos + 1..pos + 1 + rest / 2).collect()
        }
        // XGROUP SETDLQ key group <dlq-key MAXDELIVERIES n | NONE>: the stream, and the
        // dead-letter stream it will write to.
        "xgroup|setdlq" if argv.len() >= 7 => vec![2, 4],
        "xgroup|setdlq" if argv.len() >= 3 => vec![2],
        // SINTERCARD, SUNIONCARD, SDIFFCARD numkeys key [key ...] (Redis's keynum key spec).
        "sintercard" | "sunioncard" | "sdiffcard" => numkeys_keys(argv, 1),
        // MSETEX numkeys key value [key value ...]: every other argument after numkeys.
        "msetex" => numkeys_keys(argv, 1)
            .into_iter()
            .map(|i| 2 * i - 2)
            .take_while(|&i| i < argv.len())
            .collect(),
        // LMPOP numkeys key... / BLMPOP timeout numkeys key...
        "lmpop" => numkeys_keys(argv, 1),
        "blmpop" => numkeys_keys(argv, 2),
        // SORT key ... [STORE dst]: the key, and the destination of the *last* STORE,
        // the one SORT writes (Redis's `sortGetKeys`, which reads every word after a
        // STORE as an option again); SORT_RO has no STORE, so a `STORE` word there is no
        // key.
        "sort" | "sort_ro" if argv.len() >= 2 => {
            let mut store = None;
            let mut i = 2;
            while i < argv.len() {
                let a = &argv[i];
                if a.eq_ignore_ascii_case(b"limit") {
                    i += 2;
                } else if a.eq_ignore_ascii_case(b"by") || a.eq_ignore_ascii_case(b"get") {
                    i += 1;
                } else if spec.name == "sort"
                    && a.eq_ignore_ascii_case(b"store")
                    && i + 1 < argv.len()
                {
                    store = Some(i + 1);
                }
                i += 1;
            }
            std::iter::once(1).chain(store).collect()
        }
        // The sorted-set family's numkeys commands: the keys follow `numkeys`; the
        // STORE forms also name their destination.
        "zunion" | "zinter" | "zdiff" | "zintercard" | "zmpop" => numkeys_keys(argv, 1),
        "zunionstore" | "zinterstore" | "zdiffstore" => {
            let mut keys = vec![1];
            keys.extend(numkeys_keys(argv, 2));
            keys
        }
        "bzmpop" => numkeys_keys(argv, 2),
        // EVAL script numkeys key... / FCALL function numkeys key...
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => {
            numkeys_keys(argv, 2)
        }
        "migrate" => migrate_keys(argv),
        // GEORADIUS[BYMEMBER] key ... [STORE dst] [STOREDIST dst]: the key, then each
        // keyword-searched key (Redis 7.0 finds them with its key specs).
        "georadius" | "georadiusbymember" if argv.len() >= 2 => {
            let mut keys = vec![1];
            keys.extend(keyword_keys(spec.name).iter().filter_map(|k| k.find(argv)));
            keys
        }
        _ => Vec::new(),
    }
}

/// A key found by a keyword (Redis's `KSPEC_BS_KEYWORD` begin-search with a one-key
/// range): the argument after the first `keyword` from argument `startfrom` up to the
/// second-to-last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeywordKey {
    /// The keyword, as COMMAND INFO spells it.
    pub keyword: &'static str,
    /// The first argument searched.
    pub startfrom: usize,
    /// Its [`keyflags`].
    pub flags: u32,
}

impl KeywordKey {
    /// The key's position in `argv`, if the keyword is there.
    pub fn find(&self, argv: &Argv) -> Option<usize> {
        (self.startfrom..argv.len().saturating_sub(1))
            .find(|&i| argv[i].eq_ignore_ascii_case(self.keyword.as_bytes()))
            .map(|i| i + 1)
    }
}

/// GEORADIUS's and GEORADIUSBYMEMBER's destinations (STORE and STOREDIST), searched
/// from the first argument after the radius's unit.
const fn geo_store_keys(startfrom: usize) -> [KeywordKey; 2] {
    let flags = keyflags::OW | keyflags::UPDATE;
    [
        KeywordKey {
            keyword: "STORE",
            startfrom,
            flags,
        },
        KeywordKey {
            keyword: "STOREDIST",
            startfrom,
            flags,
        },
    ]
}

/// The keys a command finds by keyword after its first key (the only kind of movable
/// key COMMAND INFO describes beside the index ones); empty for most commands.
pub fn keyword_keys(name: &str) -> &'static [KeywordKey] {
    const GEORADIUS: [KeywordKey; 2] = geo_store_keys(6);
    const GEORADIUSBYMEMBER: [KeywordKey; 2] = geo_store_keys(5);
    match name {
        "georadius" => &GEORADIUS,
        "georadiusbymember" => &GEORADIUSBYMEMBER,
        _ => &[],
    }
}

/// True when BITFIELD's arguments only read (Redis's `bitfieldGetKeys`): GET and
/// OVERFLOW with their arguments to the end; a SET, an INCRBY or anything it does not
/// know (a syntax error to be) counts as a write. Words compare as C strings, as
/// Redis's `strcasecmp` does.
pub fn bitfield_reads_only(argv: &[bytes::Bytes]) -> bool {
    let word = |arg: &[u8], w: &str| {
        let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
        arg[..end].eq_ignore_ascii_case(w.as_bytes())
    };
    let mut i = 2;
    while i < argv.len() {
        let remaining = argv.len() - i - 1;
        if word(&argv[i], "get") && remaining >= 2 {
            i += 3;
        } else if word(&argv[i], "overflow") && remaining >= 1 {
            i += 2;
        } else {
            return false;
        }
    }
    true
}

/// MIGRATE's keys, as Redis 7.0 finds them: its first key spec (argument 3) stands
/// unless its second, incomplete one (the keyword `KEYS`, searched from the
/// second-to-last argument back) matches, and then `migrateGetKeys` decides: every
/// argument after the first `KEYS` of the options, or none when the key argument is not
/// empty (the command refuses that itself). The options before `KEYS` are skipped with
/// their values (`AUTH password`, `AUTH2 username password`), as Redis skips them.
fn migrate_keys(argv: &Argv) -> Vec<usize> {
    if argv.len() < 4 {
        return Vec::new();
    }
    if !argv[1..argv.len() - 1]
        .iter()
        .any(|a| a.eq_ignore_ascii_case(b"keys"))
    {
        return vec![3];
    }
    let mut i = 6;
    while i < argv.len() {
        let a = &argv[i];
        if a.eq_ignore_ascii_case(b"keys") {
            if !argv[3].is_empty() {
                return Vec::new();
            }
            return (i + 1..argv.len()).collect();
        }
        if a.eq_ignore_ascii_case(b"auth") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"auth2") {
            i += 2;
        }
        i += 1;
    }
    vec![3]
}

/// The `numkeys` keys after `argv[at]` (LMPOP `at` = 1, BLMPOP 2), as far as the
/// arguments go.
fn numkeys_keys(argv: &Argv, at: usize) -> Vec<usize> {
    let n = argv
        .get(at)
        .and_then(|a| std::str::from_utf8(a).ok())
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(0);
    let last = (at as u64).saturating_add(n).min(argv.len() as u64 - 1) as usize;
    (at + 1..=last).collect()
}

/// The installed table: the families' rows and the name index over them.
struct Table {
    /// Every family's rows, as [`install`] got them.
    families: &'static [&'static [CommandSpec]],
    /// Command name (lowercase bytes) → its row. Looked up once per command, so it
    /// hashes with foldhash rather than SipHash: the table is fixed at start-up (nothing
    /// a client sends is ever inserted), so a client cannot lengthen its chains.
    index: HashMap<&'static [u8], &'static CommandSpec, foldhash::fast::FixedState>,
}

/// The process's command table, like Redis's `server.commands`: installed once, before
/// the first command runs, and never changed.
static TABLE: OnceLock<Table> = OnceLock::new();

/// Installs `families` as the command table (`Core::new` does, with the whole table
/// the top layer assembles). The table is process-wide and fixed: a second call keeps
/// the first table (every caller passes the same one).
pub fn install(families: &'static [&'static [CommandSpec]]) {
    install_unless_installed(families);
    debug_assert!(
        TABLE
            .get()
            .is_some_and(|t| std::ptr::eq(t.families, families)),
        "one command table per process"
    );
}

/// Installs `families` only when no table is installed yet: for readers of the table
/// that may run without a core (unit tests, `--check-aof` before it installs the whole
/// table), which then read whatever a core installed.
pub fn install_unless_installed(families: &'static [&'static [CommandSpec]]) {
    TABLE.get_or_init(|| Table {
        families,
        index: families
            .iter()
            .flat_map(|f| f.iter())
            .map(|c| (c.name.as_bytes(), c))
            .collect(),
    });
}

/// The Redis version a `since` text such as `"8.6.0"` names, as `(major, minor)`.
/// A part that is not a number (or above 255) reads as 0. Runs on every command (the
/// `compat-version` check), so it reads the bytes once instead of splitting and parsing.
pub fn since_version(since: &str) -> (u8, u8) {
    let mut parts = [Some(0u8); 2];
    let mut part = 0;
    for b in since.bytes() {
        if b == b'.' {
            part += 1;
            if part == parts.len() {
                break;
            }
            continue;
        }
        parts[part] = match b {
            b'0'..=b'9' => parts[part]
                .and_then(|v| v.checked_mul(10))
                .and_then(|v| v.checked_add(b - b'0')),
            _ => None,
        };
    }
    (parts[0].unwrap_or(0), parts[1].unwrap_or(0))
}

/// All top-level commands.
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    TABLE
        .get()
        .into_iter()
        .flat_map(|t| t.families.iter())
        .flat_map(|f| f.iter())
}

/// Looks a command name up, case-insensitively, without allocating (`None` also before
/// a table is installed).
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut buf = [0u8; 32];
    if name.len() > buf.len() {
        return None;
    }
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    TABLE.get()?.index.get(&*lower).copied()
}

/// For a container, the subcommand `argv[1]` names; for other commands, the command.
pub fn resolve_subcommand(
    spec: &'static CommandSpec,
    argv: &Argv,
) -> Result<&'static CommandSpec, ReplyError> {
    if spec.subcommands.is_empty() {
        return Ok(spec);
    }
    let Some(sub) = argv.get(1) else {
        // A container that is also a command on its own (bare COMMAND).
        if spec.arity == -1 {
            return Ok(spec);
        }
        return Err(ReplyError::WrongArity(spec.name.to_string()));
    };
    spec.subcommands
        .iter()
        .find(|s| s.short_name().as_bytes().eq_ignore_ascii_case(sub))
        .ok_or_else(|| ReplyError::UnknownSubcommand {
            sub: crate::error::c_str_prefix(sub, 128).to_vec(),
            container: String::from_utf8_lossy(&argv[0]).to_ascii_uppercase(),
        })
}
