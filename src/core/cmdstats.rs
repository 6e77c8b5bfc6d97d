//! INFO commandstats' counters, one [`CommandStats`] per command name, and the way every
//! executed command finds its own.
//!
//! Each command updates its counters once (twice when it fails), so the lookup is on
//! the path of every command. A map keyed by the name string hashes the name and
//! compares it byte by byte each time: in a profile of pipelined RPUSH that was ~2.7% of
//! the server's samples (`rustc_entry` and `memcmp`). Redis keeps the counters in the
//! command's own table entry; our command table is immutable (`static`), so the counters
//! live here, in a vector, and the two names looked up last are remembered by the
//! address and length of their `&'static str` (the spec's name): a pipeline of one
//! command, or of two alternating, finds its counters with two integer compares. The
//! map by name content stays for everything else (a name given from elsewhere, such as
//! WAIT's served later by the cron, and the readers: INFO, LATENCY HISTOGRAM, metrics).

use super::CommandStats;
use std::collections::HashMap;

/// The per-command counters by full lower-case name (see the module doc).
#[derive(Debug, Default, Clone)]
pub struct CommandStatsTable {
    /// Index into `entries` by name.
    by_name: HashMap<&'static str, usize, foldhash::fast::FixedState>,
    /// The counters, in the order the commands first ran.
    entries: Vec<(&'static str, CommandStats)>,
    /// The two names looked up last, most recent first, as (address, length, index).
    recent: [(usize, usize, usize); 2],
}

impl CommandStatsTable {
    /// The counters of `name`, created empty at its first use.
    pub fn entry(&mut self, name: &'static str) -> &mut CommandStats {
        let key = (name.as_ptr() as usize, name.len());
        let [first, second] = self.recent;
        // Address and length equal: the same bytes, so the same name. (A name never
        // looked up has address 0 here, which no `&'static str` has.)
        let at = if (first.0, first.1) == key {
            first.2
        } else if (second.0, second.1) == key {
            self.recent = [second, first];
            second.2
        } else {
            let entries = &mut self.entries;
            let at = *self.by_name.entry(name).or_insert_with(|| {
                entries.push((name, CommandStats::default()));
                entries.len() - 1
            });
            self.recent = [(key.0, key.1, at), first];
            at
        };
        &mut self.entries[at].1
    }

    /// The counters of `name`, if it ever ran (or was refused).
    pub fn get(&self, name: &str) -> Option<&CommandStats> {
        self.by_name.get(name).map(|&at| &self.entries[at].1)
    }

    /// Every name with its counters, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &CommandStats)> {
        self.entries.iter().map(|(name, stats)| (*name, stats))
    }

    /// Every name that has counters, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.iter().map(|(name, _)| *name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_the_same_text_share_their_counters_wherever_they_come_from() {
        let mut t = CommandStatsTable::default();
        // The same text at another address (built at run time, then leaked): one entry.
        let other: &'static str = Box::leak(String::from("xadd").into_boxed_str());
        t.entry("xadd").calls += 1;
        t.entry("get").calls += 1;
        t.entry(other).calls += 1;
        t.entry("xadd").calls += 1;
        t.entry("set").calls += 1;
        t.entry("get").calls += 1;
        assert_eq!(t.get("xadd").map(|s| s.calls), Some(3));
        assert_eq!(t.get("get").map(|s| s.calls), Some(2));
        assert_eq!(t.get("set").map(|s| s.calls), Some(1));
        assert!(t.get("del").is_none());
        let mut names: Vec<_> = t.keys().collect();
        names.sort_unstable();
        assert_eq!(names, ["get", "set", "xadd"]);
        // A prefix of a remembered name (same address, shorter) is another name.
        let long: &'static str = "object|encoding";
        t.entry(long).calls += 1;
        t.entry(&long[..6]).failed_calls += 1;
        assert_eq!(t.get("object|encoding").map(|s| s.calls), Some(1));
        assert_eq!(t.get("object").map(|s| s.failed_calls), Some(1));
        t.entry("set").rejected_calls += 1;
        let total: u64 = t.iter().map(|(_, s)| s.calls + s.rejected_calls).sum();
        assert_eq!(total, 8);
    }
}
