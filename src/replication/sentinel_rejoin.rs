//! `sentinel-rejoin`: an old primary that Sentinel replaced rejoins the new one as
//! soon as Sentinel says so, instead of when Sentinel gets round to telling it.
//!
//! Sentinel reconfigures a server it lists as a replica but that reports `role:master`
//! (an old primary restarted after a crash, or resumed after a stall) only once it has
//! reported that role for `SENTINEL_PUBLISH_PERIOD*4` (8 s), checked at its INFO period
//! (10 s for a replica): 8 to 18 s during which a `WAIT` for every replica cannot
//! succeed on the new primary. Every Sentinel meanwhile publishes, every 2 s, on
//! `__sentinel__:hello` of every server it monitors, which server it holds to be the
//! primary of the group and under which configuration epoch. With `sentinel-rejoin
//! yes`, a primary that has no replicas follows that server as soon as
//!
//! ```text
//!  - two Sentinels' hellos of the last 5 s name the same address under the newest
//!    configuration epoch any of them reports, newer than any epoch that named us;
//!  - we were not promoted in the last 10 s (Sentinels that have not heard of a
//!    promotion still name the old primary: Sentinel's own wait is for that);
//!  - that address answers INFO with another run id than ours (an address Sentinel
//!    knows us by is not recognisable from here: a NAT, a proxy) and role:master.
//! ```
//!
//! which is what Sentinel's `+convert-to-slave` will do a few seconds later. Writes the
//! old primary took alone are discarded by the resync, as they would be then.

use crate::core::{SharedCore, unix_ms};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How often the hellos are looked at.
const PERIOD: Duration = Duration::from_millis(250);
/// Bound on asking the named primary who it is.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The task: runs for the server's life.
pub async fn run(core: SharedCore) {
    loop {
        tokio::time::sleep(PERIOD).await;
        let (candidate, auth) = {
            let c = core.borrow();
            if !c.config.get_bool("sentinel-rejoin") || c.cluster.is_some() {
                continue;
            }
            (
                c.repl.hello_candidate(unix_ms()),
                (
                    c.config.get("masteruser").unwrap_or("").to_string(),
                    c.config.get("masterauth").unwrap_or("").to_string(),
                ),
            )
        };
        let Some((ip, port, epoch)) = candidate else {
            continue;
        };
        let Some((run_id, role)) = probe(&ip, port, &auth).await else {
            continue;
        };
        let mut c = core.borrow_mut();
        if run_id == crate::core::run_id() {
            // Sentinels name us: remember the epoch, so only a newer one moves us.
            c.repl.self_epoch = c.repl.self_epoch.max(epoch);
            continue;
        }
        if role != "master" || c.repl.hello_candidate(unix_ms()) != Some((ip.clone(), port, epoch))
        {
            continue;
        }
        tracing::info!(
            primary = %format!("{ip}:{port}"),
            config_epoch = epoch,
            "Sentinels name another primary for this server's group; following it (sentinel-rejoin)"
        );
        crate::commands::replication::follow(&mut c, ip, port);
    }
}

/// `INFO server` and `INFO replication` of `ip:port`: its run id and role.
async fn probe(ip: &str, port: u16, auth: &(String, String)) -> Option<(String, String)> {
    let work = async {
        let mut sock = TcpStream::connect((ip, port)).await.ok()?;
        let mut out = Vec::new();
        let (user, pass) = auth;
        let replies = match super::replica::auth_argv(user, pass) {
            Some(argv) => {
                crate::resp::writer::command(&mut out, &argv);
                1
            }
            None => 0,
        };
        crate::resp::writer::command(&mut out, &[b"INFO".as_slice(), b"server"]);
        crate::resp::writer::command(&mut out, &[b"INFO".as_slice(), b"replication"]);
        sock.write_all(&out).await.ok()?;
        let mut buf = Vec::new();
        loop {
            if let Some(texts) = bulk_replies(&buf, replies) {
                let field = |name: &str| {
                    texts.iter().find_map(|t| {
                        t.lines()
                            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                            .map(|v| v.trim().to_string())
                    })
                };
                return Some((field("run_id")?, field("role")?));
            }
            let mut chunk = [0u8; 4096];
            let n = sock.read(&mut chunk).await.ok()?;
            if n == 0 || buf.len() > 1 << 20 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(PROBE_TIMEOUT, work)
        .await
        .ok()
        .flatten()
}

/// Skips `skip` one-line replies, then reads two bulk strings; `None` until all of them
/// arrived (or when a reply is not of that shape: an error reply never completes, and
/// the probe times out).
fn bulk_replies(buf: &[u8], skip: usize) -> Option<Vec<String>> {
    let mut at = 0;
    let line = |at: usize| -> Option<(usize, &[u8])> {
        let end = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((end + 2, &buf[at..end]))
    };
    for _ in 0..skip {
        at = line(at)?.0;
    }
    let mut texts = Vec::new();
    for _ in 0..2 {
        let (next, head) = line(at)?;
        let len: usize = std::str::from_utf8(head.strip_prefix(b"$")?)
            .ok()?
            .parse()
            .ok()?;
        let body = buf.get(next..next + len)?;
        texts.push(String::from_utf8_lossy(body).into_owned());
        at = next + len + 2;
        if buf.len() < at {
            return None;
        }
    }
    Some(texts)
}

#[cfg(test)]
mod tests {
    use super::bulk_replies;

    #[test]
    fn two_bulk_replies_after_an_ok_are_read_only_once_complete() {
        let full = b"+OK\r\n$9\r\nrun_id:ab\r\n$11\r\nrole:master\r\n";
        assert_eq!(
            bulk_replies(full, 1),
            Some(vec!["run_id:ab".to_string(), "role:master".to_string()])
        );
        for cut in 0..full.len() {
            assert_eq!(bulk_replies(&full[..cut], 1), None, "cut at {cut}");
        }
        assert_eq!(bulk_replies(b"-ERR no\r\n$1\r\nx\r\n", 0), None);
    }
}
