//! The two sorts a geo search's results go through in Redis, reproduced step for step
//! so that points at equal distances come out in Redis's order (and, for nearly
//! antipodal points whose distance is NaN, so that the comparator's inconsistency has
//! the same effect):
//!
//! - [`merge_sort`]: glibc's `qsort` (Debian's glibc sorts with a top-down merge sort,
//!   `msort_with_tmp`: halves of `n / 2` and `n - n / 2`, merged taking the left
//!   element while `cmp(left, right) <= 0`), used when every result is returned.
//!   With a consistent comparator it is a stable sort.
//! - [`pqsort`]: Redis's `pqsort.c` (Bentley & McIlroy's quicksort with three-way
//!   partitioning, median of three or the ninther for the pivot, insertion sort under
//!   seven elements) that only recurses into the parts overlapping the ranks
//!   `lrange..=rrange`, used when COUNT keeps fewer results than were found. It is not
//!   stable: ties among the kept results come out in its own order.
//!
//! Both take a C-style comparator (`< 0`, `0`, `> 0`).

/// Sorts `v` as glibc's `qsort` does (see the module doc).
pub fn merge_sort<T: Clone>(v: &mut [T], cmp: &impl Fn(&T, &T) -> i32) {
    if v.len() <= 1 {
        return;
    }
    let n1 = v.len() / 2;
    let (left, right) = v.split_at_mut(n1);
    merge_sort(left, cmp);
    merge_sort(right, cmp);
    let mut merged: Vec<T> = Vec::with_capacity(v.len());
    let (mut i, mut j) = (0, n1);
    while i < n1 && j < v.len() {
        if cmp(&v[i], &v[j]) <= 0 {
            merged.push(v[i].clone());
            i += 1;
        } else {
            merged.push(v[j].clone());
            j += 1;
        }
    }
    merged.extend_from_slice(&v[i..n1]);
    // What is left of the right half is already in place.
    let done = merged.len();
    v[..done].clone_from_slice(&merged);
}

/// Sorts `v` enough that ranks `lrange..=rrange` hold what a full sort would put
/// there, as Redis's `pqsort` does (see the module doc).
pub fn pqsort<T>(v: &mut [T], cmp: &impl Fn(&T, &T) -> i32, lrange: usize, rrange: usize) {
    let n = v.len();
    partial(v, 0, n, cmp, lrange, rrange);
}

/// `med3`: the index of the median of three.
fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> i32) -> usize {
    if cmp(&v[a], &v[b]) < 0 {
        if cmp(&v[b], &v[c]) < 0 {
            b
        } else if cmp(&v[a], &v[c]) < 0 {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) > 0 {
        b
    } else if cmp(&v[a], &v[c]) < 0 {
        a
    } else {
        c
    }
}

/// `vecswap`: swaps `n` elements at `a` with `n` elements at `b`.
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for k in 0..n {
        v.swap(a + k, b + k);
    }
}

/// Does the sub-array `s..e` hold any rank of `l..=r`? (`_pqsort`'s range test.)
fn overlaps(s: usize, e: usize, l: usize, r: usize) -> bool {
    !((l < s && r < s) || (l >= e && r >= e))
}

/// `_pqsort` over `v[a..a + n]`, positions absolute.
fn partial<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> i32,
    l: usize,
    r: usize,
) {
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) > 0 {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let c = cmp(&v[pb], &v[a]);
                if c > 0 {
                    break;
                }
                if c == 0 {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let c = cmp(&v[pc], &v[a]);
                if c < 0 {
                    break;
                }
                if c == 0 {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let k = (pa - a).min(pb - pa);
        vecswap(v, a, pb - k, k);
        let k = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - k, k);
        let k = pb - pa;
        if k > 1 && overlaps(a, a + k, l, r) {
            partial(v, a, k, cmp, l, r);
        }
        let k = pd - pc;
        if k > 1 {
            a = pn - k;
            n = k;
            if overlaps(a, a + n, l, r) {
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn by_key(a: &(u8, usize), b: &(u8, usize)) -> i32 {
        i32::from(a.0) - i32::from(b.0)
    }

    proptest! {
        #[test]
        fn merge_sort_is_a_stable_sort(keys in proptest::collection::vec(0u8..8, 0..200)) {
            let mut v: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let mut want = v.clone();
            want.sort_by_key(|p| p.0);
            merge_sort(&mut v, &by_key);
            prop_assert_eq!(v, want);
        }

        #[test]
        fn pqsort_orders_the_requested_ranks(keys in proptest::collection::vec(0u8..50, 1..300), upto in 0usize..300) {
            let mut v: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let upto = upto.min(v.len() - 1);
            let mut want: Vec<u8> = keys.clone();
            want.sort_unstable();
            pqsort(&mut v, &by_key, 0, upto);
            let got: Vec<u8> = v[..=upto].iter().map(|p| p.0).collect();
            prop_assert_eq!(&got[..], &want[..=upto]);
            let mut all: Vec<usize> = v.iter().map(|p| p.1).collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..keys.len()).collect::<Vec<_>>());
        }
    }
}
