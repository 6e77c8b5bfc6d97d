//! Where log bytes go: [`LogSink`], implemented by [`FileSink`] for the real log file and,
//! in tests, by [`CrashSink`], a fake disk that keeps what was written apart from what
//! is durable and can fail a chosen sync.
//!
//! The core thread writes through one handle; the sync thread fsyncs through a clone of
//! it ([`LogSink::try_clone`], a `dup` of the descriptor for files), so a slow fsync never
//! holds the core.

use std::fs::File;
use std::io::{self, Write};

/// An append-only byte sink with an explicit durability point.
pub trait LogSink: Send {
    /// Appends all of `buf` (to the OS page cache for a file).
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes everything written so far durable (`fdatasync` for a file).
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the sink back to `len` bytes (after a failed partial write).
    fn truncate(&mut self, len: u64) -> io::Result<()>;
    /// A second handle on the same sink, for the sync thread.
    fn try_clone(&self) -> io::Result<Box<dyn LogSink>>;
}

/// The log file, opened for appending.
#[derive(Debug)]
pub struct FileSink {
    file: File,
}

impl FileSink {
    /// Wraps a file opened in append mode.
    pub fn new(file: File) -> FileSink {
        FileSink { file }
    }
}

impl LogSink for FileSink {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn try_clone(&self) -> io::Result<Box<dyn LogSink>> {
        Ok(Box::new(FileSink {
            file: self.file.try_clone()?,
        }))
    }
}

#[cfg(test)]
pub use fake::{CrashSink, Disk};

#[cfg(test)]
mod fake {
    use super::LogSink;
    use std::io;
    use std::sync::{Arc, Mutex};

    /// The fake disk's two images and its fault plan.
    #[derive(Debug, Default)]
    pub struct Disk {
        /// Every byte written (what a reader sees while the machine is up).
        pub written: Vec<u8>,
        /// What survives a power loss: the written image as of the last good sync.
        pub durable: Vec<u8>,
        /// Syncs attempted so far.
        pub syncs: u32,
        /// Fail the sync with this number (1-based), and every later one.
        pub fail_sync_from: Option<u32>,
        /// Fail every write once set.
        pub fail_writes: bool,
    }

    /// A [`LogSink`] over a shared [`Disk`]; clones share the disk.
    #[derive(Debug, Clone, Default)]
    pub struct CrashSink {
        /// The disk.
        pub disk: Arc<Mutex<Disk>>,
    }

    impl CrashSink {
        /// A crash image: the durable bytes plus the first `extra` bytes written after
        /// them (a power loss may keep any prefix of unsynced data).
        pub fn crash_image(&self, extra: usize) -> Vec<u8> {
            let d = self.disk.lock().expect("disk lock");
            let mut img = d.durable.clone();
            let tail = &d.written[d.durable.len()..];
            img.extend_from_slice(&tail[..extra.min(tail.len())]);
            img
        }
    }

    impl LogSink for CrashSink {
        fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
            let mut d = self.disk.lock().expect("disk lock");
            if d.fail_writes {
                return Err(io::Error::other("injected write failure"));
            }
            d.written.extend_from_slice(buf);
            Ok(())
        }

        fn sync(&mut self) -> io::Result<()> {
            let mut d = self.disk.lock().expect("disk lock");
            d.syncs += 1;
            if d.fail_sync_from.is_some_and(|n| d.syncs >= n) {
                return Err(io::Error::other("injected fsync failure"));
            }
            d.durable = d.written.clone();
            Ok(())
        }

        fn truncate(&mut self, len: u64) -> io::Result<()> {
            let mut d = self.disk.lock().expect("disk lock");
            let len = usize::try_from(len).expect("test sizes fit");
            d.written.truncate(len);
            if d.durable.len() > len {
                d.durable.truncate(len);
            }
            Ok(())
        }

        fn try_clone(&self) -> io::Result<Box<dyn LogSink>> {
            Ok(Box::new(self.clone()))
        }
    }
}
