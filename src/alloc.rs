//! A counting global allocator: forwards to the system allocator and keeps the number of
//! heap bytes in use, each allocation counted at its *usable size* (the jemalloc size
//! class of the request, [`usable_size`]), which is what Redis's
//! `zmalloc` reports as `used_memory`. Memory figures measured with it compare honestly
//! with Redis's.
//!
//! Install it in a binary or benchmark with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: streamd::alloc::CountingAlloc = streamd::alloc::CountingAlloc;
//! ```
//!
//! and read [`allocated`]. Without it installed, [`allocated`] stays 0. [`PeakAlloc`] does
//! the same and also keeps the highest value reached ([`peak`]), for tests.
//!
//! This module is the only place in the crate allowed `unsafe`: `GlobalAlloc` is an
//! unsafe trait, and each block below only forwards the caller's own arguments to the
//! system allocator under the same contract.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The usable size of an allocation of `size` bytes: its jemalloc size class (as
/// Redis's `zmalloc_size` sees it). jemalloc's small classes: 8, then multiples of 16
/// up to 128, then four classes per doubling (160, 192, 224, 256, 320, 384, 448, 512,
/// 640, ...), which continue the same way for the large sizes.
pub fn usable_size(size: usize) -> usize {
    if size == 0 {
        return 0;
    }
    if size <= 8 {
        return 8;
    }
    if size <= 128 {
        return size.div_ceil(16) * 16;
    }
    // Four classes per doubling: (2^k, 2^(k+1)] is split in steps of 2^(k-2).
    let k = usize::BITS - 1 - (size - 1).leading_zeros();
    let step = 1usize << (k - 2);
    size.div_ceil(step) * step
}

/// Heap bytes in use, at size-class granularity. Only [`CountingAlloc`] changes it.
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

/// Heap bytes in use (usable sizes) through [`CountingAlloc`].
pub fn allocated() -> usize {
    ALLOCATED.load(Ordering::Relaxed)
}

/// The system allocator, counting usable bytes into [`allocated`].
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

// SAFETY: every method forwards to `System`, which upholds `GlobalAlloc`'s contract, with
// the arguments it was given; the counter is only bookkeeping.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `layout` comes from our caller, who guarantees a non-zero size as
        // `GlobalAlloc::alloc` requires; we pass it on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(usable_size(layout.size()), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`: the caller's layout, passed on unchanged.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(usable_size(layout.size()), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` was allocated by this allocator (hence by
        // `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        ALLOCATED.fetch_sub(usable_size(layout.size()), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `ptr` came from this allocator with `layout` and
        // that `new_size` is valid for `layout`'s alignment; forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            ALLOCATED.fetch_sub(usable_size(layout.size()), Ordering::Relaxed);
            ALLOCATED.fetch_add(usable_size(new_size), Ordering::Relaxed);
        }
        p
    }
}

/// The highest [`allocated`] reached since [`reset_peak`], through [`PeakAlloc`].
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The highest heap use (usable bytes) since the last [`reset_peak`], when [`PeakAlloc`]
/// is the global allocator (tests that bound what a loader may allocate).
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Starts a new peak at the current heap use.
pub fn reset_peak() {
    PEAK.store(allocated(), Ordering::Relaxed);
}

/// [`CountingAlloc`] that also keeps the peak ([`peak`]); a separate type so that the
/// server's allocator does not pay for the second atomic update.
#[derive(Debug, Clone, Copy, Default)]
pub struct PeakAlloc;

impl PeakAlloc {
    fn note_peak() {
        PEAK.fetch_max(ALLOCATED.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `CountingAlloc` (hence `System`) with the arguments it
// was given; the peak is only bookkeeping.
unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on unchanged (see `CountingAlloc::alloc`).
        let p = unsafe { CountingAlloc.alloc(layout) };
        Self::note_peak();
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { CountingAlloc.alloc_zeroed(layout) };
        Self::note_peak();
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's pointer and layout, from this allocator, passed on.
        unsafe { CountingAlloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's arguments, valid for `realloc`, passed on unchanged.
        let p = unsafe { CountingAlloc.realloc(ptr, layout, new_size) };
        Self::note_peak();
        p
    }
}

/// Heap memory glibc keeps at the top of its heap before giving it back to the system
/// ([`tune_system_allocator`]).
const KEEP_FREE_TOP: i32 = 8 << 20;
/// Largest request glibc serves from its heap rather than from its own `mmap`
/// ([`tune_system_allocator`]).
const HEAP_UP_TO: i32 = 1 << 20;

/// Sets glibc's trim and mmap thresholds for a server (call once at start, before
/// threads): requests up to [`HEAP_UP_TO`] come from the heap and up to
/// [`KEEP_FREE_TOP`] of free heap is kept. With glibc's defaults a reply of a few hundred
/// KB (an `XRANGE COUNT 1000`) is a fresh `mmap` or trimmed heap each time, so every page
/// of it faults in and is zeroed again: page faults took a quarter of the server's time
/// in a scan of cold stream history, and the scan ran at 350 MB/s against 480 MB/s with
/// these thresholds (RSS a few MB higher; [`release_free_memory`] still returns memory
/// freed in bulk). Redis's jemalloc keeps freed pages for a while in the same way. A
/// no-op where glibc is not the C library.
pub fn tune_system_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const M_TRIM_THRESHOLD: i32 = -1;
        const M_MMAP_THRESHOLD: i32 = -3;
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: mallopt takes two plain integers and only changes the allocator's
        // thresholds; it is called before the server starts its threads.
        unsafe {
            mallopt(M_TRIM_THRESHOLD, KEEP_FREE_TOP);
            mallopt(M_MMAP_THRESHOLD, HEAP_UP_TO);
        }
    }
}

/// Gives the system allocator's free memory at the top of its heaps and in whole free
/// pages back to the operating system (glibc's `malloc_trim(0)`), so that memory freed
/// in bulk (stream nodes moved to segment files, a load's temporary buffers) leaves the
/// process's RSS instead of staying as free heap. A no-op where glibc is not the C
/// library. Walks the allocator's arenas: call it after bulk frees, not per operation.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim only inspects and returns free memory of the allocator
        // this process already uses; it takes a plain integer and has no preconditions.
        unsafe {
            malloc_trim(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::usable_size;

    #[test]
    fn sizes_round_up_to_jemalloc_classes() {
        let cases = [
            (1, 8),
            (8, 8),
            (9, 16),
            (17, 32),
            (33, 48),
            (100, 112),
            (128, 128),
            (129, 160),
            (200, 224),
            (257, 320),
            (500, 512),
            (513, 640),
            (1000, 1024),
            (1025, 1280),
            (4096, 4096),
            (4097, 5120),
        ];
        for (size, class) in cases {
            assert_eq!(usable_size(size), class, "size {size}");
        }
    }
}
