//! The ACL file (`aclfile`): one `user <name> <rules...>` line per user, as `ACL LIST`
//! prints them, read at start and by `ACL LOAD`, written by `ACL SAVE`.
//!
//! ```text
//! # comments and blank lines are skipped
//! user default on nopass ~* &* +@all
//! user alice on #<sha256 hex> ~orders:* resetchannels -@all +@stream
//! ```
//!
//! Loading is all or nothing: every line is checked, every error collected in Redis's
//! words, and the running users change only when there is none. Saving writes a temporary
//! file beside the target and renames it over, so a crash never leaves half a file.

use super::{User, valid_username};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// Parses ACL file text into users. `Err` carries Redis's error text (every problem, then
/// the "no change" warning), for `-ERR` replies and the start-up refusal.
pub fn parse(text: &str, filename: &str) -> Result<BTreeMap<Bytes, User>, String> {
    let mut users: BTreeMap<Bytes, User> = BTreeMap::new();
    let mut errors = String::new();
    for (n, raw) in text.split('\n').enumerate() {
        let linenum = n + 1;
        let line = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Ok(argv) = crate::resp::inline::split_args(&Bytes::copy_from_slice(line.as_bytes()))
        else {
            errors.push_str(&format!(
                "{filename}:{linenum}: unbalanced quotes in acl line. "
            ));
            continue;
        };
        if argv.len() < 2 || argv[0].as_ref() != b"user" {
            errors.push_str(&format!(
                "{filename}:{linenum} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = &argv[1];
        if !valid_username(name) {
            errors.push_str(&format!(
                "'{filename}:{linenum}: username '{}' contains invalid characters. ",
                String::from_utf8_lossy(name)
            ));
            continue;
        }
        if users.contains_key(name) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{}' found on line {linenum}. ",
                String::from_utf8_lossy(name)
            ));
            continue;
        }
        let mut user = User::new(name);
        let mut syntax_error = false;
        for rule in &argv[2..] {
            let Err(e) = user.apply(rule) else { continue };
            if e == super::RuleError::UnknownCommand {
                // Unknown commands are named; other errors are not (they may be passwords).
                errors.push_str(&format!(
                    "{filename}:{linenum}: Error in applying operation '{}': {}. ",
                    String::from_utf8_lossy(rule),
                    e.message()
                ));
            } else if !syntax_error {
                errors.push_str(&format!("{filename}:{linenum}: {}. ", e.message()));
                syntax_error = true;
            }
        }
        users.insert(name.clone(), user);
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
        );
        Err(errors)
    }
}

/// Reads and parses the ACL file at `path`.
pub fn load(path: &Path) -> Result<BTreeMap<Bytes, User>, String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{name}': {e}"))?;
    parse(&text, &name)
}

/// The file text for the users' `ACL LIST` lines ([`User::list_line`]), one per line.
pub fn render(lines: impl Iterator<Item = String>) -> String {
    let mut out = String::new();
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Writes `text` to `path` through a temporary file in the same directory, fsynced and
/// renamed over the target.
pub fn save(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_file_name(format!(
        "{}.tmp-{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_worded_like_redis_7_0() {
        // As Core::new does before any ACL is read: the command index is built once, on
        // first use, from the installed table (built earlier, it would stay empty for every
        // later test of this process).
        crate::core::command::install(crate::commands::FAMILIES);
        let text = "user default on nopass ~* &* +@all\nuser alice on >pw ~x +@stream\nfoo bar\nuser bob on +nosuch\n";
        assert_eq!(
            parse(text, "/tmp/bad.acl").unwrap_err(),
            "/tmp/bad.acl:3 should start with user keyword followed by the username. \
             /tmp/bad.acl:4: Error in applying operation '+nosuch': Unknown command or category name in ACL. \
             WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        );
        assert_eq!(
            parse("user alice on >pw\nuser alice off\n", "f").unwrap_err(),
            "WARNING: Duplicate user 'alice' found on line 2. \
             WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        );
        assert_eq!(
            parse("user al ice on >pw\n", "f").unwrap_err(),
            "f:1: Syntax error. \
             WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        );
    }

    #[test]
    fn render_then_parse_gives_the_same_users() {
        crate::core::command::install(crate::commands::FAMILIES);
        let text = "# users\n\nuser alice on >pw ~orders:* +@stream -@dangerous\nuser default on nopass ~* &* +@all\n";
        let users = parse(text, "f").unwrap();
        let rendered = render(users.values().map(User::list_line));
        let again = parse(&rendered, "f").unwrap();
        assert_eq!(render(again.values().map(User::list_line)), rendered);
        assert!(rendered.starts_with("user alice on #"));
    }
}
