//! Access control: users, their passwords, command and key permissions (Redis 7.0 ACLs).
//!
//! ```text
//! Acl ── users: BTreeMap<name, UserRef>   (ACL LIST / USERS order: bytewise by name)
//!    ├── default: UserRef                 (the same Rc as users["default"]; never deleted)
//!    └── log: AclLog                      (denied commands, keys and AUTH failures)
//!
//! Client ── user: UserRef ───────────────▶ User { on/off, nopass, passwords (SHA-256 hex),
//!                                                 allowed[command id], first_args,
//!                                                 allkeys | key patterns (%R~ %W~ ~),
//!                                                 allchannels | channel patterns }
//! ```
//!
//! A user is shared (`Rc<RefCell<User>>`) between the registry and the clients
//! authenticated as it, so `ACL SETUSER` changes apply to connected clients at once, as
//! in Redis. Command permissions are a bitmap over *command ids*: the position of each
//! command and subcommand in the command table ([`CommandIndex`]), plus one extra bit,
//! "future commands", that only `+@all`/`allcommands` sets; `ACL LIST` starts a user's
//! rules with `+@all` exactly when that bit is set. Categories are not stored: `+@stream`
//! sets the bits of every command whose table row carries `@stream`
//! (`CommandSpec::acl_categories`), and the description is rebuilt from the bits by
//! Redis's best-fit algorithm ([`User::describe_commands`]).
//!
//! The check ([`User::check`]) runs in `Core::execute` after authentication and before
//! MULTI queueing, as Redis's `processCommand` does: command bit (or an allowed first
//! argument such as `+select|0`), then every key against the patterns, using the key's
//! [`keyflags`](crate::core::command::keyflags) for `%R~`/`%W~` patterns.
//!
//! Channels (Redis 7.0): after the keys, the channels a command names (SUBSCRIBE,
//! SSUBSCRIBE and PUBLISH/SPUBLISH: channel names, matched against the user's `&`
//! patterns as globs; PSUBSCRIBE: patterns, which must equal one of the user's patterns
//! literally) must be allowed unless the user has `allchannels`. New users and `reset`
//! get `allchannels` when `acl-pubsub-default` says so ([`set_pubsub_default`]). When a
//! user's channel rules shrink, its subscribed clients whose subscriptions are no
//! longer allowed are disconnected (`Core::kill_pubsub_clients_if_needed`).
//!
//! Not implemented: selectors (`(...)` rules; refused with `Syntax error`).

pub mod file;

thread_local! {
    /// `acl-pubsub-default` is `allchannels` (the core runs on one thread and refreshes
    /// it from the config; see [`set_pubsub_default`]).
    static PUBSUB_DEFAULT_ALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Sets what `acl-pubsub-default` gives new users and `reset`: every channel (`true`,
/// `allchannels`) or none (`resetchannels`, Redis 7's default).
pub fn set_pubsub_default(all_channels: bool) {
    PUBSUB_DEFAULT_ALL.with(|c| c.set(all_channels));
}

fn pubsub_default_all() -> bool {
    PUBSUB_DEFAULT_ALL.with(|c| c.get())
}

/// The channel arguments of `spec` as Redis's `getChannelsFromCommand` finds them for
/// the ACL check: (first position, one past the last, names are patterns). The
/// unsubscribe commands and PUBSUB name channels too but need no permission.
pub fn channel_args(spec: &CommandSpec, argc: usize) -> Option<(usize, usize, bool)> {
    match spec.name {
        "subscribe" | "ssubscribe" => Some((1, argc, false)),
        "psubscribe" => Some((1, argc, true)),
        "publish" | "spublish" => Some((1, 2.min(argc), false)),
        _ => None,
    }
}
pub mod log;
pub mod sha256;

use super::command::{self as commands, CATEGORIES, CommandSpec, flags, keyflags};
use crate::error::ReplyError;
use crate::resp::Argv;
use bytes::Bytes;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::LazyLock;

/// The command table seen as ids: every command and subcommand in table order.
pub struct CommandIndex {
    /// Spec of each id.
    pub specs: Vec<&'static CommandSpec>,
    /// Container id of each subcommand id.
    pub parent: Vec<Option<usize>>,
    /// Subcommand ids of each container id.
    pub children: Vec<Vec<usize>>,
    /// Category bits of each id (bit `j` = `CATEGORIES[j]`).
    pub categories: Vec<u32>,
    /// Ids of the top-level commands, in table order.
    pub top: Vec<usize>,
    by_name: HashMap<&'static str, usize>,
}

impl CommandIndex {
    fn build() -> CommandIndex {
        debug_assert!(
            commands::all().next().is_some(),
            "the command table is installed (Core::new) before ACLs are used"
        );
        let mut ix = CommandIndex {
            specs: Vec::new(),
            parent: Vec::new(),
            children: Vec::new(),
            categories: Vec::new(),
            top: Vec::new(),
            by_name: HashMap::new(),
        };
        for spec in commands::all() {
            let id = ix.push(spec, None);
            ix.top.push(id);
            for sub in spec.subcommands {
                let sid = ix.push(sub, Some(id));
                ix.children[id].push(sid);
            }
        }
        ix
    }

    fn push(&mut self, spec: &'static CommandSpec, parent: Option<usize>) -> usize {
        let id = self.specs.len();
        let mut cats = 0u32;
        for c in spec.acl_categories() {
            if let Some(j) = category_index(c.trim_start_matches('@')) {
                cats |= 1 << j;
            }
        }
        self.specs.push(spec);
        self.parent.push(parent);
        self.children.push(Vec::new());
        self.categories.push(cats);
        self.by_name.insert(spec.name, id);
        id
    }

    /// Number of command ids.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// True when the table is empty (never, in practice).
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The id of a command by its full lower-case name (`xgroup|create`).
    pub fn id(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Redis's `ACLLookupCommand`: a command or `container|sub` by name, any case.
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let text = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        self.id(&text)
    }
}

/// The command index, built once from the installed command table (on first use, which
/// comes after `Core::new` installed it).
pub fn index() -> &'static CommandIndex {
    static INDEX: LazyLock<CommandIndex> = LazyLock::new(CommandIndex::build);
    &INDEX
}

/// Position of a category name (without `@`) in [`CATEGORIES`], any case.
pub fn category_index(name: &str) -> Option<usize> {
    CATEGORIES.iter().position(|c| c.eq_ignore_ascii_case(name))
}

/// Why `ACL SETUSER` refused a rule (Redis's `ACLSetUserStringError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    /// EINVAL.
    Syntax,
    /// ENOENT.
    UnknownCommand,
    /// EEXIST.
    KeyAfterAllKeys,
    /// EISDIR.
    ChannelAfterAllChannels,
    /// ENODEV.
    NoSuchPassword,
    /// EBADMSG.
    BadHash,
    /// ECHILD.
    FirstArgOfSubcommand,
}

impl RuleError {
    /// Redis's message for the error.
    pub fn message(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::KeyAfterAllKeys => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelAfterAllChannels => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
            }
            RuleError::FirstArgOfSubcommand => {
                "Allowing first-arg of a subcommand is not supported"
            }
        }
    }
}

/// What a permission check refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// The command (ACL log reason `command`).
    Command,
    /// The key at this argv position (ACL log reason `key`).
    Key(usize),
    /// The channel or pattern at this argv position (ACL log reason `channel`).
    Channel(usize),
}

impl Denied {
    /// The NOPERM error a client gets for this denial of `spec`.
    pub fn reply(self, spec: &CommandSpec) -> ReplyError {
        match self {
            Denied::Command => ReplyError::NoPermCommand(spec.full_name()),
            Denied::Key(_) => ReplyError::NoPermKey,
            Denied::Channel(_) => ReplyError::NoPermChannel,
        }
    }

    /// The NOPERM error for a queued command this denial stops at EXEC.
    pub fn changed_reply(self) -> ReplyError {
        ReplyError::NoPermChanged {
            reason: match self {
                Denied::Command => crate::error::ChangedReason::Command,
                Denied::Key(_) => crate::error::ChangedReason::Key,
                Denied::Channel(_) => crate::error::ChangedReason::Channel,
            },
        }
    }
}

/// A key pattern with the access it grants (`~p` = both, `%R~p`, `%W~p`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    /// Glob pattern, matched case-sensitively.
    pub pattern: Bytes,
    /// Grants reading the value's data.
    pub read: bool,
    /// Grants changing the value's data.
    pub write: bool,
}

/// One ACL user.
#[derive(Debug, Clone)]
pub struct User {
    /// Name (binary-safe, no spaces).
    pub name: Bytes,
    /// `on` / `off`: a disabled user cannot authenticate.
    pub enabled: bool,
    /// `nopass`: any password authenticates. Set clears `passwords`.
    pub nopass: bool,
    /// `sanitize-payload` (Some(true)) / `skip-sanitize-payload` (Some(false)): shown only.
    pub sanitize_payload: Option<bool>,
    /// SHA-256 hex digests of the passwords, in the order they were added, no duplicates.
    pub passwords: Vec<String>,
    /// Redis `SELECTOR_FLAG_ALLCOMMANDS`: set by `+@all`, cleared by any removal.
    all_commands: bool,
    /// Command bitmap by id, plus the "future commands" bit at index `index().len()`.
    allowed: Vec<bool>,
    /// First arguments allowed for a command whose bit is clear (`+select|0`), by id.
    first_args: BTreeMap<usize, Vec<Bytes>>,
    /// `allkeys` / `~*`: every key, patterns empty.
    all_keys: bool,
    /// Key patterns, in the order added (a repeated pattern merges its access).
    patterns: Vec<KeyPattern>,
    /// `allchannels` / `&*`.
    all_channels: bool,
    /// Channel patterns, in the order added (empty with `all_channels`).
    channels: Vec<Bytes>,
}

/// A user shared by the registry and the clients authenticated as it.
pub type UserRef = Rc<RefCell<User>>;

impl User {
    /// A new user as `ACL SETUSER name` creates it: off, no passwords, no commands, no
    /// keys, and no channels or all of them as `acl-pubsub-default` says (Redis 7's
    /// default `resetchannels`: none).
    pub fn new(name: &[u8]) -> User {
        User {
            name: Bytes::copy_from_slice(name),
            enabled: false,
            nopass: false,
            sanitize_payload: None,
            passwords: Vec::new(),
            all_commands: false,
            allowed: vec![false; index().len() + 1],
            first_args: BTreeMap::new(),
            all_keys: false,
            patterns: Vec::new(),
            all_channels: pubsub_default_all(),
            channels: Vec::new(),
        }
    }

    /// The `default` user of a fresh server: `on nopass ~* &* +@all`.
    pub fn new_default() -> User {
        let mut u = User::new(b"default");
        for rule in ["+@all", "~*", "&*", "on", "nopass"] {
            u.apply(rule.as_bytes())
                .expect("the default user's rules are valid");
        }
        u
    }

    /// True when every command is allowed (the fast path of [`User::check`]).
    pub fn all_commands(&self) -> bool {
        self.all_commands
    }

    /// True when every channel is allowed (`allchannels`).
    pub fn all_channels(&self) -> bool {
        self.all_channels
    }

    /// True when every key is allowed.
    pub fn all_keys(&self) -> bool {
        self.all_keys
    }

    /// Applies one rule (Redis's `ACLSetUser`). On error the user may be half-changed:
    /// callers apply rules to a copy ([`Acl::set_user`]).
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize_payload = Some(false);
        } else if is("sanitize-payload") {
            self.sanitize_payload = Some(true);
        } else if is("allkeys") {
            self.all_keys = true;
            self.patterns.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.patterns.clear();
        } else if is("allchannels") {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.allowed.iter_mut().for_each(|b| *b = true);
            self.all_commands = true;
            self.first_args.clear();
        } else if is("nocommands") || is("-@all") {
            self.allowed.iter_mut().for_each(|b| *b = false);
            self.all_commands = false;
            self.first_args.clear();
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if is("clearselectors") {
            // No selectors exist to clear.
        } else if is("reset") {
            let channels = if pubsub_default_all() {
                "allchannels"
            } else {
                "resetchannels"
            };
            for rule in [
                "resetpass",
                "resetkeys",
                channels,
                "off",
                "sanitize-payload",
                "-@all",
            ] {
                self.apply(rule.as_bytes())?;
            }
        } else {
            match op.first() {
                Some(b'>') => self.add_password(sha256::hex_digest(&op[1..])),
                Some(b'#') => self.add_password(valid_hash(&op[1..])?),
                Some(b'<') => self.remove_password(&sha256::hex_digest(&op[1..]))?,
                Some(b'!') => self.remove_password(&valid_hash(&op[1..])?)?,
                Some(b'~') | Some(b'%') => self.add_key_pattern(op)?,
                Some(b'&') => self.add_channel(&op[1..])?,
                Some(b'+') | Some(b'-') if op.get(1) == Some(&b'@') => {
                    let name =
                        std::str::from_utf8(&op[2..]).map_err(|_| RuleError::UnknownCommand)?;
                    let cat = category_index(name).ok_or(RuleError::UnknownCommand)?;
                    self.set_category(cat, op[0] == b'+');
                }
                Some(b'+') => self.allow_command(&op[1..])?,
                Some(b'-') => {
                    let id = index().lookup(&op[1..]).ok_or(RuleError::UnknownCommand)?;
                    self.change_perm(id, false);
                }
                _ => return Err(RuleError::Syntax),
            }
        }
        Ok(())
    }

    fn add_password(&mut self, hash: String) {
        if !self.passwords.contains(&hash) {
            self.passwords.push(hash);
        }
        self.nopass = false;
    }

    fn remove_password(&mut self, hash: &str) -> Result<(), RuleError> {
        let pos = self
            .passwords
            .iter()
            .position(|p| p == hash)
            .ok_or(RuleError::NoSuchPassword)?;
        self.passwords.remove(pos);
        self.nopass = false;
        Ok(())
    }

    /// `~pattern` or `%R~`/`%W~`/`%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAllKeys);
        }
        let (read, write, offset) = if op[0] == b'%' {
            let (mut read, mut write) = (false, false);
            let mut offset = 1;
            while offset < op.len() {
                match op[offset].to_ascii_uppercase() {
                    b'R' if !read => read = true,
                    b'W' if !write => write = true,
                    b'~' => {
                        offset += 1;
                        break;
                    }
                    _ => return Err(RuleError::Syntax),
                }
                offset += 1;
            }
            if !read && !write {
                return Err(RuleError::Syntax);
            }
            (read, write, offset)
        } else {
            (true, true, 1)
        };
        let pattern = &op[offset.min(op.len())..];
        if pattern.contains(&b' ') || pattern.contains(&0) {
            return Err(RuleError::Syntax);
        }
        if pattern == b"*" && read && write {
            self.all_keys = true;
            self.patterns.clear();
            return Ok(());
        }
        match self.patterns.iter_mut().find(|p| p.pattern == pattern) {
            Some(p) => {
                p.read |= read;
                p.write |= write;
            }
            None => self.patterns.push(KeyPattern {
                pattern: Bytes::copy_from_slice(pattern),
                read,
                write,
            }),
        }
        Ok(())
    }

    fn add_channel(&mut self, pattern: &[u8]) -> Result<(), RuleError> {
        if self.all_channels {
            return Err(RuleError::ChannelAfterAllChannels);
        }
        if pattern.contains(&b' ') || pattern.contains(&0) {
            return Err(RuleError::Syntax);
        }
        if pattern == b"*" {
            self.all_channels = true;
            self.channels.clear();
        } else if !self.channels.iter().any(|c| c == pattern) {
            self.channels.push(Bytes::copy_from_slice(pattern));
        }
        Ok(())
    }

    /// `+name`, `+container|sub`, or `+command|first-arg`.
    fn allow_command(&mut self, name: &[u8]) -> Result<(), RuleError> {
        let ix = index();
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let id = ix.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change_perm(id, true);
            return Ok(());
        };
        let (head, sub) = (&name[..bar], &name[bar + 1..]);
        let id = ix.lookup(head).ok_or(RuleError::UnknownCommand)?;
        if ix.parent[id].is_some() {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if ix.specs[id].subcommands.is_empty() {
            // A first argument of a command without subcommands (`+select|0`).
            let list = self.first_args.entry(id).or_default();
            if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                list.push(Bytes::copy_from_slice(sub));
            }
        } else {
            let sid = ix.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change_perm(sid, true);
        }
        Ok(())
    }

    /// Redis's `ACLChangeSelectorPerm`: a command and all its subcommands.
    fn change_perm(&mut self, id: usize, allow: bool) {
        set_perm(&mut self.allowed, id, allow);
        self.first_args.remove(&id);
        if !allow {
            self.all_commands = false;
        }
    }

    /// `+@cat` / `-@cat`: every command (and subcommand) in the category.
    fn set_category(&mut self, cat: usize, allow: bool) {
        let ix = index();
        for id in 0..ix.len() {
            if ix.categories[id] & (1 << cat) != 0 {
                self.change_perm(id, allow);
            }
        }
    }

    /// May this user run `spec` with `argv` (Redis's `ACLSelectorCheckCmd`)?
    pub fn check(&self, spec: &CommandSpec, argv: &Argv) -> Result<(), Denied> {
        if !self.all_commands && spec.flags & flags::NO_AUTH == 0 {
            let ix = index();
            let id = ix.id(spec.name).ok_or(Denied::Command)?;
            if !self.allowed[id] {
                let pos = if ix.parent[id].is_some() { 2 } else { 1 };
                let ok = match (argv.get(pos), self.first_args.get(&id)) {
                    (Some(arg), Some(list)) => list.iter().any(|a| a.eq_ignore_ascii_case(arg)),
                    _ => false,
                };
                if !ok {
                    return Err(Denied::Command);
                }
            }
        }
        if !self.all_keys {
            for (i, pos) in spec.key_positions(argv).into_iter().enumerate() {
                if !self.key_allowed(&argv[pos], spec.key_flags_in(argv, i)) {
                    return Err(Denied::Key(pos));
                }
            }
        }
        if !self.all_channels
            && let Some((first, end, pattern)) = channel_args(spec, argv.len())
        {
            for (pos, name) in argv.iter().enumerate().take(end).skip(first) {
                if !self.channel_allowed(name, pattern) {
                    return Err(Denied::Channel(pos));
                }
            }
        }
        Ok(())
    }

    /// Redis's `ACLCheckChannelAgainstList`: a channel name matches one of the user's
    /// patterns as a glob; a pattern (PSUBSCRIBE) must equal one of them literally.
    pub fn channel_allowed(&self, name: &[u8], is_pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|p| {
                if is_pattern {
                    p.as_ref() == name
                } else {
                    crate::util::glob_match(p, name, false)
                }
            })
    }

    /// True when every channel `before` allowed is still allowed (Redis's shortcut in
    /// `ACLKillPubsubClientsIfNeeded`: `allchannels` now, or every old pattern kept).
    pub fn channels_cover(&self, before: &User) -> bool {
        self.all_channels
            || (!before.all_channels && before.channels.iter().all(|c| self.channels.contains(c)))
    }

    /// True when every subscription in `subs` is allowed (patterns literally, channels
    /// and shard channels as names).
    pub fn allows_subscriptions(&self, subs: &crate::pubsub::ClientSubs) -> bool {
        use crate::pubsub::Kind;
        self.all_channels
            || (subs
                .names(Kind::Pattern)
                .all(|p| self.channel_allowed(p, true))
                && subs
                    .names(Kind::Channel)
                    .all(|c| self.channel_allowed(c, false))
                && subs
                    .names(Kind::Shard)
                    .all(|c| self.channel_allowed(c, false)))
    }

    /// Redis's `ACLSelectorCheckKey`: some pattern matches the key and grants the access
    /// its key flags need.
    pub fn key_allowed(&self, key: &[u8], kflags: u32) -> bool {
        if self.all_keys {
            return true;
        }
        let need_read = kflags & keyflags::ACCESS != 0;
        let need_write = kflags & (keyflags::INSERT | keyflags::DELETE | keyflags::UPDATE) != 0;
        self.patterns.iter().any(|p| {
            (p.read || !need_read)
                && (p.write || !need_write)
                && crate::util::glob_match(&p.pattern, key, false)
        })
    }

    /// True when `password` authenticates this user (it must also be enabled).
    pub fn password_ok(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let hash = sha256::hex_digest(password);
        // Compare every stored hash in full, whatever matches (Redis's time-independent
        // comparison).
        self.passwords.iter().fold(false, |found, p| {
            found | constant_time_eq(p.as_bytes(), hash.as_bytes())
        })
    }

    /// The flags `ACL GETUSER` and `ACL LIST` show, in Redis's order.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut out = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            out.push("nopass");
        }
        match self.sanitize_payload {
            Some(false) => out.push("skip-sanitize-payload"),
            Some(true) => out.push("sanitize-payload"),
            None => {}
        }
        out
    }

    /// Key patterns as `ACL GETUSER` shows them (`~*`, or `%R~a %W~b ~c`).
    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let parts: Vec<String> = self
            .patterns
            .iter()
            .map(|p| {
                let prefix = match (p.read, p.write) {
                    (true, true) => "~",
                    (true, false) => "%R~",
                    _ => "%W~",
                };
                format!("{prefix}{}", String::from_utf8_lossy(&p.pattern))
            })
            .collect();
        parts.join(" ")
    }

    /// Channel patterns as `ACL GETUSER` shows them (`&*`, or `&a &b`).
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let parts: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        parts.join(" ")
    }

    /// Command rules rebuilt from the bitmap (Redis 7.0's
    /// `ACLDescribeSelectorCommandRules`): start from `+@all` (if the "future commands"
    /// bit is set) or `-@all`, repeatedly apply the category that best fits the commands
    /// still to explain, then add or remove single commands until the bitmaps agree.
    pub fn describe_commands(&self) -> String {
        let ix = index();
        let n = ix.len();
        let additive = !self.allowed[n];
        let mut rules = String::from(if additive { "-@all " } else { "+@all " });
        let mut fake = vec![!additive; n + 1];
        let mut temp = self.allowed.clone();
        let mut applied = [false; CATEGORIES.len()];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (usize::MAX, 0usize);
            for (j, done) in applied.iter().enumerate() {
                if *done {
                    continue;
                }
                let (mut on, mut off) = (0usize, 0usize);
                for (cats, allowed) in ix.categories.iter().zip(&temp) {
                    if cats & (1 << j) != 0 {
                        if *allowed {
                            on += 1;
                        } else {
                            off += 1;
                        }
                    }
                }
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(b) = best else { break };
            set_category_bits(&mut fake, b, additive);
            set_category_bits(&mut temp, b, !additive);
            rules.push_str(if additive { "+@" } else { "-@" });
            rules.push_str(CATEGORIES[b]);
            rules.push(' ');
            applied[b] = true;
        }
        for &id in &ix.top {
            self.describe_single(id, &mut fake, &mut rules);
            for &sid in &ix.children[id] {
                self.describe_single(sid, &mut fake, &mut rules);
            }
        }
        rules.pop();
        rules
    }

    fn describe_single(&self, id: usize, fake: &mut [bool], rules: &mut String) {
        let name = index().specs[id].name;
        let userbit = self.allowed[id];
        if userbit != fake[id] {
            rules.push(if userbit { '+' } else { '-' });
            rules.push_str(name);
            rules.push(' ');
            set_perm(fake, id, userbit);
        }
        if !userbit && let Some(args) = self.first_args.get(&id) {
            for a in args {
                rules.push('+');
                rules.push_str(name);
                rules.push('|');
                rules.push_str(&String::from_utf8_lossy(a));
                rules.push(' ');
            }
        }
    }

    /// The `ACL LIST` / ACL file line: `user <name> <rules>`.
    pub fn list_line(&self) -> String {
        format!(
            "user {} {}",
            String::from_utf8_lossy(&self.name),
            self.describe()
        )
    }

    /// The rules part of an `ACL LIST` line (flags, passwords, keys, channels, commands),
    /// which loaded back gives the same user.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for f in self.flag_names() {
            out.push_str(f);
            out.push(' ');
        }
        for p in &self.passwords {
            out.push('#');
            out.push_str(p);
            out.push(' ');
        }
        let keys = self.describe_keys();
        if !keys.is_empty() {
            out.push_str(&keys);
            out.push(' ');
        }
        if self.all_channels {
            out.push_str("&* ");
        } else {
            out.push_str("resetchannels ");
            let chans = self.describe_channels();
            if !chans.is_empty() {
                out.push_str(&chans);
                out.push(' ');
            }
        }
        out.push_str(&self.describe_commands());
        out
    }
}

/// Sets the bit of `id` and of all its subcommands.
fn set_perm(bits: &mut [bool], id: usize, allow: bool) {
    bits[id] = allow;
    for &sid in &index().children[id] {
        bits[sid] = allow;
    }
}

/// Sets the bits of every command in category `cat` (and their subcommands).
fn set_category_bits(bits: &mut [bool], cat: usize, allow: bool) {
    let ix = index();
    for id in 0..ix.len() {
        if ix.categories[id] & (1 << cat) != 0 {
            set_perm(bits, id, allow);
        }
    }
}

/// A `#hash` / `!hash` argument: exactly 64 lower-case hex digits.
fn valid_hash(h: &[u8]) -> Result<String, RuleError> {
    if h.len() != 64
        || !h
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    {
        return Err(RuleError::BadHash);
    }
    Ok(String::from_utf8_lossy(h).into_owned())
}

/// Equal-length comparison whose time does not depend on where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// True when a user name is acceptable (`ACL SETUSER`, the ACL file): no spaces, no NUL.
pub fn valid_username(name: &[u8]) -> bool {
    !name.iter().any(|&c| c == b' ' || c == 0)
}

/// The registry of users and the ACL log.
#[derive(Debug)]
pub struct Acl {
    /// Users by name.
    users: BTreeMap<Bytes, UserRef>,
    /// The `default` user (also in `users`).
    default: UserRef,
    /// Denials and authentication failures (`ACL LOG`).
    pub log: log::AclLog,
}

impl Default for Acl {
    fn default() -> Self {
        Acl::new()
    }
}

impl Acl {
    /// A registry with only the `default` user (`on nopass ~* &* +@all`).
    pub fn new() -> Acl {
        let default = Rc::new(RefCell::new(User::new_default()));
        let mut users = BTreeMap::new();
        users.insert(Bytes::from_static(b"default"), default.clone());
        Acl {
            users,
            default,
            log: log::AclLog::default(),
        }
    }

    /// The `default` user.
    pub fn default_user(&self) -> UserRef {
        self.default.clone()
    }

    /// A user by name.
    pub fn get(&self, name: &[u8]) -> Option<UserRef> {
        self.users.get(name).cloned()
    }

    /// All users, by name.
    pub fn users(&self) -> impl Iterator<Item = &UserRef> {
        self.users.values()
    }

    /// Redis's `authRequired`: clients must authenticate unless the default user is an
    /// enabled `nopass` user.
    pub fn auth_required(&self, client_authenticated: bool) -> bool {
        let d = self.default.borrow();
        (!d.nopass || !d.enabled) && !client_authenticated
    }

    /// Whether a new connection starts authenticated (as the default user).
    pub fn new_client_authenticated(&self) -> bool {
        let d = self.default.borrow();
        d.nopass && d.enabled
    }

    /// The user `name` if `password` authenticates it.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<UserRef> {
        let user = self.get(name)?;
        let ok = user.borrow().password_ok(password);
        ok.then_some(user)
    }

    /// `ACL SETUSER name rules...`: creates the user if needed and applies every rule,
    /// or none if one fails (then the index of the failing rule and why).
    pub fn set_user(&mut self, name: &[u8], rules: &[Bytes]) -> Result<(), (usize, RuleError)> {
        let existing = self.get(name);
        let mut copy = match &existing {
            Some(u) => u.borrow().clone(),
            None => User::new(name),
        };
        for (i, rule) in rules.iter().enumerate() {
            copy.apply(rule).map_err(|e| (i, e))?;
        }
        match existing {
            Some(u) => *u.borrow_mut() = copy,
            None => {
                self.users
                    .insert(Bytes::copy_from_slice(name), Rc::new(RefCell::new(copy)));
            }
        }
        Ok(())
    }

    /// Removes a user (never `default`); returns it when it existed.
    pub fn delete(&mut self, name: &[u8]) -> Option<UserRef> {
        if name == b"default" {
            return None;
        }
        self.users.remove(name)
    }

    /// `requirepass`: the default user's only password, or `nopass` when empty (Redis's
    /// `ACLUpdateDefaultUserPassword`).
    pub fn set_default_password(&mut self, password: &[u8]) {
        let mut d = self.default.borrow_mut();
        let rule: Vec<u8> = if password.is_empty() {
            b"nopass".to_vec()
        } else {
            [b">".as_slice(), password].concat()
        };
        let _ = d.apply(b"resetpass");
        let _ = d.apply(&rule);
    }

    /// Replaces every user with `users` (a successful `ACL LOAD` or the ACL file at
    /// start). The default user keeps its identity (connected clients keep it) and takes
    /// the loaded rules, or a fresh default's when the file has none. Returns the users
    /// that were replaced, whose clients Redis disconnects.
    pub fn replace_users(&mut self, mut users: BTreeMap<Bytes, User>) -> Vec<UserRef> {
        let new_default = users
            .remove(b"default".as_slice())
            .unwrap_or_else(User::new_default);
        *self.default.borrow_mut() = new_default;
        let old = std::mem::take(&mut self.users);
        self.users
            .insert(Bytes::from_static(b"default"), self.default.clone());
        for (name, user) in users {
            self.users.insert(name, Rc::new(RefCell::new(user)));
        }
        old.into_iter()
            .filter(|(name, _)| name.as_ref() != b"default")
            .map(|(_, u)| u)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(rules: &[&str]) -> Result<User, (usize, RuleError)> {
        let mut u = User::new(b"u");
        for (i, r) in rules.iter().enumerate() {
            u.apply(r.as_bytes()).map_err(|e| (i, e))?;
        }
        Ok(u)
    }

    use crate::resp::argv;

    fn can(u: &User, args: &[&str]) -> Result<(), Denied> {
        let argv = argv(args);
        let spec = commands::lookup(&argv[0]).expect("known command");
        let spec = commands::resolve_subcommand(spec, &argv).expect("known subcommand");
        u.check(spec, &argv)
    }

    #[test]
    fn descriptions_match_redis_7_0() {
        crate::core::command::install(crate::commands::FAMILIES);
        // Each pair was produced by `ACL SETUSER u <rules>` + `ACL LIST` on redis-server 7.0.
        let cases: &[(&[&str], &str)] = &[
            (&[], "off resetchannels -@all"),
            (&["+@all", "-xadd"], "off resetchannels +@all -xadd"),
            (&["+xadd", "+xadd"], "off resetchannels -@all +xadd"),
            (&["+xadd", "-xadd"], "off resetchannels -@all"),
            (
                &["+@stream", "-xadd", "+xadd"],
                "off resetchannels -@all +@stream",
            ),
            (&["-xadd", "+@all"], "off resetchannels +@all"),
            (
                &["+xgroup", "-xgroup|create"],
                "off resetchannels -@all +xgroup -xgroup|create",
            ),
            (
                &["-@all", "+xgroup|create", "-xgroup"],
                "off resetchannels -@all",
            ),
            (
                &["+@all", "-@dangerous"],
                "off resetchannels +@all -@dangerous",
            ),
            (&["+xadd", "-@write"], "off resetchannels -@all"),
            (&["reset"], "off sanitize-payload resetchannels -@all"),
            (&["~a", "resetkeys", "~b"], "off ~b resetchannels -@all"),
            (&["%RW~*"], "off ~* resetchannels -@all"),
            (&["~a", "%R~a"], "off ~a resetchannels -@all"),
            (
                &["%R~foo", "%W~bar", "%RW~baz"],
                "off %R~foo %W~bar ~baz resetchannels -@all",
            ),
            (&["%R"], "off %R~ resetchannels -@all"),
            (&["allchannels"], "off &* -@all"),
            (&["+select|0"], "off resetchannels -@all +select|0"),
            (&["+client|list"], "off resetchannels -@all +client|list"),
            (
                &["on", ">a", ">b", "<a"],
                "on #3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d resetchannels -@all",
            ),
            (&[">a", "nopass"], "off nopass resetchannels -@all"),
            (
                &["skip-sanitize-payload"],
                "off skip-sanitize-payload resetchannels -@all",
            ),
        ];
        for (rules, want) in cases {
            let u = user(rules).unwrap_or_else(|e| panic!("{rules:?}: {e:?}"));
            assert_eq!(u.describe(), *want, "{rules:?}");
        }
        assert_eq!(User::new_default().describe(), "on nopass ~* &* +@all");
    }

    #[test]
    fn rule_errors_match_redis_7_0() {
        crate::core::command::install(crate::commands::FAMILIES);
        let cases: &[(&[&str], RuleError)] = &[
            (&["foo"], RuleError::Syntax),
            (&["+nosuch"], RuleError::UnknownCommand),
            (&["+@nosuch"], RuleError::UnknownCommand),
            (&["<nopw"], RuleError::NoSuchPassword),
            (&["#abc"], RuleError::BadHash),
            (&["~*", "~foo"], RuleError::KeyAfterAllKeys),
            (&["allkeys", "%R~foo"], RuleError::KeyAfterAllKeys),
            (&["+xgroup|nosuch"], RuleError::UnknownCommand),
            (&["-select|0"], RuleError::UnknownCommand),
            (&["+xgroup|create|x"], RuleError::FirstArgOfSubcommand),
            (&["%X~foo"], RuleError::Syntax),
            (&["%~foo"], RuleError::Syntax),
            (&["%RR~foo"], RuleError::Syntax),
            (&["allchannels", "&x"], RuleError::ChannelAfterAllChannels),
            (&["(~x +xadd)"], RuleError::Syntax),
        ];
        for (rules, err) in cases {
            assert_eq!(user(rules).unwrap_err().1, *err, "{rules:?}");
        }
    }

    #[test]
    fn stream_permissions_by_category_and_key_pattern() {
        crate::core::command::install(crate::commands::FAMILIES);
        let u = user(&["on", "~orders:*", "+@stream", "-@dangerous"]).unwrap();
        assert_eq!(can(&u, &["xadd", "orders:1", "*", "f", "v"]), Ok(()));
        assert_eq!(
            can(&u, &["xadd", "other", "*", "f", "v"]),
            Err(Denied::Key(1))
        );
        assert_eq!(can(&u, &["ping"]), Err(Denied::Command));
        assert_eq!(can(&u, &["xgroup", "create", "orders:1", "g", "$"]), Ok(()));
        assert_eq!(
            can(&u, &["xread", "streams", "orders:1", "other", "0", "0"]),
            Err(Denied::Key(3))
        );
        // AUTH and HELLO are never refused.
        assert_eq!(can(&u, &["auth", "x"]), Ok(()));
    }

    #[test]
    fn read_and_write_key_patterns_follow_key_flags() {
        crate::core::command::install(crate::commands::FAMILIES);
        let u = user(&["+@all", "%R~r:*", "%W~w:*"]).unwrap();
        assert_eq!(can(&u, &["xrange", "r:1", "-", "+"]), Ok(()));
        assert_eq!(
            can(&u, &["xadd", "r:1", "*", "f", "v"]),
            Err(Denied::Key(1))
        );
        assert_eq!(can(&u, &["xadd", "w:1", "*", "f", "v"]), Ok(()));
        assert_eq!(can(&u, &["xrange", "w:1", "-", "+"]), Err(Denied::Key(1)));
        // XLEN reads no user data: any matching pattern will do.
        assert_eq!(can(&u, &["xlen", "w:1"]), Ok(()));
    }

    #[test]
    fn first_argument_permissions() {
        crate::core::command::install(crate::commands::FAMILIES);
        let u = user(&["+select|0"]).unwrap();
        assert_eq!(can(&u, &["select", "0"]), Ok(()));
        assert_eq!(can(&u, &["select", "1"]), Err(Denied::Command));
        let u = user(&["+select|0", "+select"]).unwrap();
        assert_eq!(u.describe_commands(), "-@all +select");
    }

    #[test]
    fn passwords_and_on_off() {
        crate::core::command::install(crate::commands::FAMILIES);
        let u = user(&["on", ">secret"]).unwrap();
        assert!(u.password_ok(b"secret"));
        assert!(!u.password_ok(b"other"));
        let u = user(&["off", ">secret"]).unwrap();
        assert!(!u.password_ok(b"secret"));
        let u = user(&["on", "nopass"]).unwrap();
        assert!(u.password_ok(b"anything"));
    }

    #[test]
    fn set_user_is_all_or_nothing() {
        crate::core::command::install(crate::commands::FAMILIES);
        let mut acl = Acl::new();
        let rules: Vec<Bytes> = ["on", ">pw", "+nosuch"]
            .iter()
            .map(|r| Bytes::from_static(r.as_bytes()))
            .collect();
        assert_eq!(
            acl.set_user(b"alice", &rules),
            Err((2, RuleError::UnknownCommand))
        );
        assert!(acl.get(b"alice").is_none());
        acl.set_user(b"alice", &rules[..2]).unwrap();
        assert!(acl.authenticate(b"alice", b"pw").is_some());
        assert!(acl.set_user(b"alice", &rules[2..]).is_err());
        assert!(acl.authenticate(b"alice", b"pw").is_some());
    }

    #[test]
    fn requirepass_maps_to_the_default_user() {
        crate::core::command::install(crate::commands::FAMILIES);
        let mut acl = Acl::new();
        assert!(!acl.auth_required(false));
        acl.set_default_password(b"s3cret");
        assert!(acl.auth_required(false));
        assert!(acl.authenticate(b"default", b"s3cret").is_some());
        assert_eq!(
            acl.default_user().borrow().describe(),
            format!("on #{} ~* &* +@all", sha256::hex_digest(b"s3cret"))
        );
        acl.set_default_password(b"");
        assert!(!acl.auth_required(false));
    }
}
