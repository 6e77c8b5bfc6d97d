//! Hash slots: which of the 16,384 slots a key belongs to, and sets of slots as the bitmap
//! Redis Cluster nodes exchange.
//!
//! A key's slot is `CRC16(key) mod 16384` (the cluster specification, "Keys distribution
//! model"; cluster.c `keyHashSlot`), where CRC16 is the XMODEM variant of crc16.c:
//! polynomial `0x1021`, initial value 0, no reflection, no final xor (check value for
//! `"123456789"` is `0x31C3`). Because 16384 is a power of two, the modulo is `& 0x3FFF`.
//!
//! Hash tags: if the key holds a `{`, and after that first `{` there is a `}`, and at least
//! one byte lies between them, only the bytes between the first `{` and the first `}` after
//! it are hashed. Otherwise the whole key is hashed. So `foo{}{bar}` hashes the whole key
//! (the first tag is empty) and `foo{{bar}}zap` hashes `{bar`.
//!
//! # The slot bitmap
//!
//! ```text
//!  byte:    0                   1                        2047
//!        +-----------------+-----------------+-- ... --+-----------------------+
//!  bit:  |7 6 5 4 3 2 1 0  |7 6 5 4 3 2 1 0  |         |7     6     ...     0  |
//!  slot: |7 6 5 4 3 2 1 0  |15 ...         8 |         |16383 16382 ... 16376  |
//!        +-----------------+-----------------+-- ... --+-----------------------+
//! ```
//!
//! 2048 bytes, slot `s` is bit `s & 7` (counting from the least significant bit) of byte
//! `s >> 3`: the layout of `clusterNode.slots`, copied verbatim into the bus header's
//! `myslots` and the UPDATE message (cluster.c `bitmapTestBit`/`bitmapSetBit`).

/// Number of hash slots in a Redis Cluster (cluster.h `CLUSTER_SLOTS`).
pub const CLUSTER_SLOTS: usize = 16384;

/// Size in bytes of a slot bitmap (`CLUSTER_SLOTS / 8`).
pub const SLOT_BITMAP_BYTES: usize = CLUSTER_SLOTS / 8;

/// CRC16/XMODEM lookup table, built at compile time from the polynomial `0x1021`.
const CRC16_TABLE: [u16; 256] = build_crc16_table();

const fn build_crc16_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = (byte as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[byte] = crc;
        byte += 1;
    }
    table
}

/// CRC16 as Redis's crc16.c computes it (XMODEM: poly `0x1021`, init 0, not reflected).
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[usize::from(((crc >> 8) as u8) ^ b)]
    })
}

/// The part of `key` that decides its slot: the hash tag if the key has a non-empty one,
/// else the whole key (cluster.c `keyHashSlot`).
pub fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    let after_open = &key[open + 1..];
    match after_open.iter().position(|&b| b == b'}') {
        Some(close) if close > 0 => &after_open[..close],
        _ => key,
    }
}

/// The hash slot (0..16384) of `key`, as `CLUSTER KEYSLOT` reports it.
pub fn key_hash_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & 0x3FFF
}

/// A set of hash slots, stored as Redis stores and sends it: 2048 bytes, slot `s` in bit
/// `s & 7` of byte `s >> 3` (see the module doc for the picture).
#[derive(Clone, PartialEq, Eq)]
pub struct SlotBitmap {
    bytes: [u8; SLOT_BITMAP_BYTES],
}

impl Default for SlotBitmap {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for SlotBitmap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.ranges()).finish()
    }
}

impl SlotBitmap {
    /// The empty set.
    pub const fn new() -> Self {
        Self {
            bytes: [0; SLOT_BITMAP_BYTES],
        }
    }

    /// The set whose wire bytes are `bytes` (any 2048 bytes are a valid set).
    pub const fn from_bytes(bytes: [u8; SLOT_BITMAP_BYTES]) -> Self {
        Self { bytes }
    }

    /// The wire bytes of the set.
    pub fn as_bytes(&self) -> &[u8; SLOT_BITMAP_BYTES] {
        &self.bytes
    }

    /// Byte index and bit mask of `slot`; `None` when `slot >= 16384`.
    fn position(slot: u16) -> Option<(usize, u8)> {
        let slot = usize::from(slot);
        (slot < CLUSTER_SLOTS).then(|| (slot >> 3, 1u8 << (slot & 7)))
    }

    /// Adds `slot`; returns whether it was absent. Slots `>= 16384` are ignored (false).
    pub fn set(&mut self, slot: u16) -> bool {
        match Self::position(slot) {
            Some((byte, mask)) => {
                let was_absent = self.bytes[byte] & mask == 0;
                self.bytes[byte] |= mask;
                was_absent
            }
            None => false,
        }
    }

    /// Removes `slot`; returns whether it was present.
    pub fn clear(&mut self, slot: u16) -> bool {
        match Self::position(slot) {
            Some((byte, mask)) => {
                let was_present = self.bytes[byte] & mask != 0;
                self.bytes[byte] &= !mask;
                was_present
            }
            None => false,
        }
    }

    /// Whether `slot` is in the set (never for slots `>= 16384`).
    pub fn test(&self, slot: u16) -> bool {
        Self::position(slot).is_some_and(|(byte, mask)| self.bytes[byte] & mask != 0)
    }

    /// Adds every slot of `start..=end` (clamped to the slot range).
    pub fn set_range(&mut self, start: u16, end: u16) {
        for slot in start..=end.min((CLUSTER_SLOTS - 1) as u16) {
            self.set(slot);
        }
    }

    /// Number of slots in the set.
    pub fn count(&self) -> usize {
        self.bytes.iter().map(|b| b.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.iter().all(|&b| b == 0)
    }

    /// The slots in the set, ascending (bytes without a slot skipped whole).
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.bytes
            .iter()
            .enumerate()
            .filter(|(_, bits)| **bits != 0)
            .flat_map(|(byte, &bits)| {
                (0..8u16)
                    .filter(move |bit| bits & (1 << bit) != 0)
                    .map(move |bit| byte as u16 * 8 + bit)
            })
    }

    /// The slots of this set that are not in `other`.
    pub fn without(&self, other: &SlotBitmap) -> SlotBitmap {
        let mut bytes = self.bytes;
        for (b, o) in bytes.iter_mut().zip(other.bytes.iter()) {
            *b &= !o;
        }
        SlotBitmap::from_bytes(bytes)
    }

    /// The set as maximal runs `(start, end)` (both inclusive), ascending: the form in
    /// which `CLUSTER NODES` and nodes.conf print slots.
    pub fn ranges(&self) -> SlotRanges<'_> {
        SlotRanges {
            bitmap: self,
            next: 0,
        }
    }
}

/// Iterator over the maximal runs of a [`SlotBitmap`], from [`SlotBitmap::ranges`].
pub struct SlotRanges<'a> {
    bitmap: &'a SlotBitmap,
    /// First slot not yet looked at (may be 16384: done).
    next: usize,
}

impl Iterator for SlotRanges<'_> {
    type Item = (u16, u16);

    fn next(&mut self) -> Option<(u16, u16)> {
        let slot_set = |s: usize| self.bitmap.bytes[s >> 3] & (1 << (s & 7)) != 0;
        while self.next < CLUSTER_SLOTS && !slot_set(self.next) {
            // Whole zero bytes are skipped eight slots at a time.
            if self.next & 7 == 0 && self.bitmap.bytes[self.next >> 3] == 0 {
                self.next += 8;
            } else {
                self.next += 1;
            }
        }
        if self.next >= CLUSTER_SLOTS {
            return None;
        }
        let start = self.next;
        while self.next < CLUSTER_SLOTS && slot_set(self.next) {
            self.next += 1;
        }
        Some((start as u16, (self.next - 1) as u16))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_check_value_is_xmodem() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
    }

    /// Ground truth from `redis-cli cluster keyslot` on a cluster-enabled redis-server 7.0.15.
    #[test]
    fn key_hash_slot_matches_redis_cluster_keyslot() {
        let cases: &[(&[u8], u16)] = &[
            (b"foo", 12182),
            (b"bar", 5061),
            (b"{user1000}.following", 3443),
            (b"{user1000}.followers", 3443),
            (b"foo{}{bar}", 8363),
            (b"foo{{bar}}zap", 4015),
            (b"{bar", 4015),
            (b"", 0),
            (b"123456789", 12739),
            (b"a{b}c", 3300),
            (b"}{", 12793),
            (b"{}", 15257),
            (b"{a}", 15495),
            (b"x{y", 2740),
            (b"hello world", 15332),
            (b"stream:42", 3992),
            (b"{{}}", 4092),
        ];
        for &(key, slot) in cases {
            assert_eq!(key_hash_slot(key), slot, "{}", String::from_utf8_lossy(key));
        }
    }

    #[test]
    fn hash_tag_uses_first_open_and_first_close_after_it() {
        assert_eq!(hash_tag(b"{user1000}.following"), b"user1000");
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"foo{bar"), b"foo{bar");
        assert_eq!(hash_tag(b"foo}bar{x}"), b"x");
    }

    #[test]
    fn bitmap_bit_order_is_lsb_first_within_each_byte() {
        let mut map = SlotBitmap::new();
        assert!(map.set(0));
        assert!(map.set(9));
        assert!(map.set(16383));
        assert!(!map.set(9));
        assert_eq!(map.as_bytes()[0], 0x01);
        assert_eq!(map.as_bytes()[1], 0x02);
        assert_eq!(map.as_bytes()[2047], 0x80);
        assert_eq!(map.count(), 3);
        assert!(map.test(9) && !map.test(8) && !map.test(16384));
        assert!(map.clear(9));
        assert!(!map.clear(9));
        assert_eq!(map.count(), 2);
        assert!(!map.set(16384));
    }

    #[test]
    fn ranges_are_maximal_runs_in_order() {
        let mut map = SlotBitmap::new();
        assert_eq!(map.ranges().count(), 0);
        assert!(map.is_empty());
        map.set_range(0, 100);
        map.set(200);
        map.set_range(5000, 5460);
        map.set_range(16380, 20000);
        let ranges: Vec<_> = map.ranges().collect();
        assert_eq!(ranges, [(0, 100), (200, 200), (5000, 5460), (16380, 16383)]);
        assert_eq!(map.count(), 101 + 1 + 461 + 4);
        assert_eq!(map.iter().take(3).collect::<Vec<_>>(), [0, 1, 2]);
        let mut full = SlotBitmap::from_bytes([0xFF; SLOT_BITMAP_BYTES]);
        assert_eq!(full.ranges().collect::<Vec<_>>(), [(0, 16383)]);
        full.clear(8);
        assert_eq!(full.ranges().collect::<Vec<_>>(), [(0, 7), (9, 16383)]);
    }

    proptest::proptest! {
        /// `iter` yields exactly the slots `test` finds, ascending; `without` keeps the
        /// slots of one set that the other lacks.
        #[test]
        fn iter_and_without_agree_with_test(
            a in proptest::collection::vec(0u16..16384, 0..300),
            b in proptest::collection::vec(0u16..16384, 0..300),
        ) {
            let (mut x, mut y) = (SlotBitmap::new(), SlotBitmap::new());
            a.iter().for_each(|&s| { x.set(s); });
            b.iter().for_each(|&s| { y.set(s); });
            let expected: Vec<u16> = (0..16384).filter(|&s| x.test(s)).collect();
            proptest::prop_assert_eq!(x.iter().collect::<Vec<_>>(), expected);
            let d = x.without(&y);
            for s in 0..16384u16 {
                proptest::prop_assert_eq!(d.test(s), x.test(s) && !y.test(s));
            }
        }
    }
}
