//! The log directory's manifest: which base snapshot and which incremental logs make up
//! the dataset, in Redis 7's multi-part shape.
//!
//! ```text
//! <dir>/<appenddirname>/
//!   <appendfilename>.manifest        ← this file, replaced atomically
//!   <appendfilename>.3.base.snap     ← base: a snapshot (snapshot.rs format)
//!   <appendfilename>.5.incr.log      ← effect records written since the base, in order
//!   <appendfilename>.6.incr.log      ← the one being appended to (always the last)
//! ```
//!
//! The manifest is text, one file per line, base first, then incremental logs in replay
//! order:
//!
//! ```text
//! file appendonly.3.base.snap seq 3 type b\n
//! file appendonly.5.incr.log seq 5 type i\n
//! file appendonly.6.incr.log seq 6 type i\n
//! ```
//!
//! It is written to `<name>.manifest.tmp`, fsynced, renamed over the old one and the
//! directory fsynced, so a crash leaves either the old or the new manifest, and every
//! file either one names exists (files are created before and deleted after the
//! manifest that names them).

use super::PersistError;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One file named by the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile {
    /// File name inside the log directory.
    pub name: String,
    /// Its sequence number.
    pub seq: u64,
}

/// The parsed manifest.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    /// The base snapshot, if any.
    pub base: Option<ManifestFile>,
    /// Incremental logs in replay order; the last is the one appended to.
    pub incrs: Vec<ManifestFile>,
}

/// File names for a given `appendfilename`.
#[derive(Debug, Clone)]
pub struct Names {
    /// The log directory.
    pub dir: PathBuf,
    /// `appendfilename`.
    pub stem: String,
}

impl Names {
    /// Path of the manifest.
    pub fn manifest(&self) -> PathBuf {
        self.dir.join(format!("{}.manifest", self.stem))
    }
    /// Name of base snapshot number `seq`.
    pub fn base(&self, seq: u64) -> String {
        format!("{}.{seq}.base.snap", self.stem)
    }
    /// Name of incremental log number `seq`.
    pub fn incr(&self, seq: u64) -> String {
        format!("{}.{seq}.incr.log", self.stem)
    }
    /// Full path of a file in the log directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Manifest {
    /// What a rewrite to number `seq` leaves: base `seq` and, after it, incremental log
    /// `seq`, the one appended to.
    pub fn rewritten(names: &Names, seq: u64) -> Manifest {
        Manifest {
            base: Some(ManifestFile {
                name: names.base(seq),
                seq,
            }),
            incrs: vec![ManifestFile {
                name: names.incr(seq),
                seq,
            }],
        }
    }

    /// Parses the manifest text; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, PersistError> {
        let mut m = Manifest::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| PersistError::Manifest {
                path: path.to_path_buf(),
                line: n + 1,
                why: why.to_string(),
            };
            let words: Vec<&str> = line.split_whitespace().collect();
            let mut name = None;
            let mut seq = None;
            let mut kind = None;
            for pair in words.chunks(2) {
                let [k, v] = pair else {
                    return Err(bad("odd number of words"));
                };
                match *k {
                    "file" => name = Some(v.to_string()),
                    "seq" => seq = Some(v.parse::<u64>().map_err(|_| bad("invalid seq"))?),
                    "type" => kind = Some(*v),
                    _ => {} // unknown keys are ignored, as Redis does
                }
            }
            let (Some(name), Some(seq), Some(kind)) = (name, seq, kind) else {
                return Err(bad("a line needs file, seq and type"));
            };
            if name.contains('/') {
                return Err(bad("file names must not contain '/'"));
            }
            let f = ManifestFile { name, seq };
            match kind {
                "b" => {
                    if m.base.is_some() {
                        return Err(bad("more than one base file"));
                    }
                    m.base = Some(f);
                }
                "i" => m.incrs.push(f),
                "h" => {} // history (Redis): files kept for deletion only
                _ => return Err(bad("unknown file type")),
            }
        }
        Ok(m)
    }

    /// Reads the manifest at `path`; `Ok(None)` if there is none.
    pub fn load(path: &Path) -> Result<Option<Manifest>, PersistError> {
        match fs::read_to_string(path) {
            Ok(text) => Manifest::parse(&text, path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(PersistError::io("reading", path, e)),
        }
    }

    /// The manifest text.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        if let Some(b) = &self.base {
            s.push_str(&format!("file {} seq {} type b\n", b.name, b.seq));
        }
        for f in &self.incrs {
            s.push_str(&format!("file {} seq {} type i\n", f.name, f.seq));
        }
        s
    }

    /// The highest sequence number in use.
    pub fn max_seq(&self) -> u64 {
        self.incrs
            .iter()
            .map(|f| f.seq)
            .chain(self.base.as_ref().map(|b| b.seq))
            .max()
            .unwrap_or(0)
    }

    /// Writes the manifest atomically (temp file, fsync, rename, directory fsync).
    pub fn store(&self, path: &Path) -> Result<(), PersistError> {
        write_atomically(path, self.to_text().as_bytes())
    }
}

/// Writes `bytes` to `path` so that a crash leaves the old or the new content: write a
/// temp file beside it, fsync, rename over, fsync the directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), PersistError> {
    let tmp = tmp_path(path);
    let mut f = fs::File::create(&tmp).map_err(|e| PersistError::io("creating", &tmp, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| PersistError::io("writing", &tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| PersistError::io("renaming", &tmp, e))?;
    sync_dir(path)
}

/// `path` with `.tmp` appended.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// fsyncs the directory holding `path`, so a rename or a new file in it is durable.
pub fn sync_dir(path: &Path) -> Result<(), PersistError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| PersistError::io("syncing directory", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_leaves_its_base_and_one_log_of_the_same_number() {
        let names = Names {
            dir: PathBuf::from("/d"),
            stem: "appendonly".into(),
        };
        let m = Manifest::rewritten(&names, 4);
        assert_eq!(
            m.to_text(),
            "file appendonly.4.base.snap seq 4 type b\nfile appendonly.4.incr.log seq 4 type i\n"
        );
        assert_eq!(m.max_seq(), 4);
    }

    #[test]
    fn manifest_round_trips_and_keeps_order() {
        let m = Manifest {
            base: Some(ManifestFile {
                name: "appendonly.3.base.snap".into(),
                seq: 3,
            }),
            incrs: vec![
                ManifestFile {
                    name: "appendonly.5.incr.log".into(),
                    seq: 5,
                },
                ManifestFile {
                    name: "appendonly.6.incr.log".into(),
                    seq: 6,
                },
            ],
        };
        let text = m.to_text();
        assert_eq!(
            text,
            "file appendonly.3.base.snap seq 3 type b\nfile appendonly.5.incr.log seq 5 type i\nfile appendonly.6.incr.log seq 6 type i\n"
        );
        assert_eq!(Manifest::parse(&text, Path::new("m")).unwrap(), m);
        assert_eq!(m.max_seq(), 6);
    }

    #[test]
    fn bad_manifests_name_the_line() {
        let e = Manifest::parse("file a seq 1 type i\nfile b seq x type i\n", Path::new("m"))
            .unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(Manifest::parse("file ../x seq 1 type i", Path::new("m")).is_err());
        assert!(Manifest::parse("file a seq 1 type z", Path::new("m")).is_err());
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.manifest");
        write_atomically(&p, b"one").unwrap();
        write_atomically(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert!(!tmp_path(&p).exists());
    }
}
