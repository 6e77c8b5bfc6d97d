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

/// The usable size of an allocation of `size` bytes: its jemalloc size class.
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
