//! Byte accounting the way Redis reports it: every allocation costs the *usable size* of
//! the allocator's size class it lands in (jemalloc, as Redis's `zmalloc_size` sees it),
//! not the size requested. [`crate::alloc`] counts heap use with this rule for the
//! benchmarks, and [`super::Stream::memory_usage`] estimates with it.
//!
//! jemalloc's small classes: 8, then multiples of 16 up to 128, then four classes per
//! doubling (160, 192, 224, 256, 320, 384, 448, 512, 640, ...), which continue the same
//! way for the large sizes.

/// Estimated heap bytes of one radix tree node of the stream index (a rax node with a
/// short compressed path or a few children, at its size class). Used only by
/// [`super::Stream::memory_usage`].
pub const RAX_NODE_ESTIMATE: usize = 48;

/// The usable size of an allocation of `size` bytes: its jemalloc size class (the
/// allocator's rule, kept beside it in [`crate::alloc`]).
pub use crate::alloc::usable_size;

/// Bytes a key's name and table entry take, as Redis counts them for `MEMORY USAGE`
/// (`sdsZmallocSize` of the key plus `dictEntryMemUsage`): a 3-byte sds header, the name
/// and its terminator rounded to 8 bytes, and a 24-byte dict entry. MEMORY USAGE adds it
/// to [`super::Stream::memory_usage`]; MAXBYTES compares the same sum with its cap.
pub fn key_overhead(key: &[u8]) -> usize {
    const DICT_ENTRY: usize = 24;
    (key.len() + 4).next_multiple_of(8) + DICT_ENTRY
}
