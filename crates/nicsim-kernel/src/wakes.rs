//! Wake-up times of a fixed set of members (components, offload units), earliest first.
//!
//! A tournament tree: every member has one leaf holding its next wake-up (or none), every inner
//! node the earlier of its two children, so the earliest wake-up is the root. Setting a member's
//! wake-up replaces the old one (no stale entries to skip, unlike a binary heap with lazy
//! deletion) and costs one compare per level; reading the earliest costs nothing. Ties go to the
//! lower index, so the order of simultaneous wake-ups is deterministic.

use crate::time::Time;

const NONE: Time = Time::MAX;

/// A node: the wake-up time in the high 64 bits, the member in the low 32, so that one integer
/// comparison orders by time and then by member.
type Key = u128;

#[inline]
fn key(t: Time, i: usize) -> Key {
    (t as Key) << 64 | i as Key
}

#[inline]
fn time(k: Key) -> Time {
    (k >> 64) as Time
}

#[derive(Debug, Clone)]
pub struct Wakes {
    /// Number of leaves (a power of two ≥ the number of members).
    leaves: usize,
    /// Node `k` (1-based heap layout) holds the earliest key below it; leaves start at `leaves`.
    nodes: Vec<Key>,
}

impl Wakes {
    /// `n` members, none with a wake-up.
    pub fn new(n: usize) -> Wakes {
        let leaves = n.max(1).next_power_of_two();
        let mut nodes = vec![0; 2 * leaves];
        for i in 0..leaves {
            nodes[leaves + i] = key(NONE, i);
        }
        for k in (1..leaves).rev() {
            nodes[k] = nodes[2 * k].min(nodes[2 * k + 1]);
        }
        Wakes { leaves, nodes }
    }

    /// Member `i`'s wake-up.
    #[inline]
    pub fn get(&self, i: usize) -> Option<Time> {
        let t = time(self.nodes[self.leaves + i]);
        (t != NONE).then_some(t)
    }

    /// Set (or with `None` clear) member `i`'s wake-up.
    #[inline]
    pub fn set(&mut self, i: usize, t: Option<Time>) {
        let nodes = &mut self.nodes[..];
        let mut k = self.leaves + i;
        let mut cur = key(t.unwrap_or(NONE), i);
        if nodes[k] == cur {
            return;
        }
        nodes[k] = cur;
        while k > 1 {
            cur = cur.min(nodes[k ^ 1]);
            k /= 2;
            if nodes[k] == cur {
                break;
            }
            nodes[k] = cur;
        }
    }

    /// The earliest wake-up and its member.
    #[inline]
    pub fn earliest(&self) -> Option<(Time, usize)> {
        let k = self.nodes[1];
        (time(k) != NONE).then_some((time(k), k as u32 as usize))
    }

    /// Call `f` with every member whose wake-up is at or before `now`, in index order (the
    /// wake-ups stay).
    #[inline]
    pub fn for_each_due(&self, now: Time, mut f: impl FnMut(usize)) {
        // Depth-first over the subtrees whose earliest wake-up is due, without a stack: after
        // a subtree, climb while on a right child, then step to the right sibling.
        let mut k = 1;
        loop {
            if time(self.nodes[k]) <= now {
                if k < self.leaves {
                    k *= 2;
                    continue;
                }
                f(k - self.leaves);
            }
            while k & 1 == 1 {
                k >>= 1;
            }
            if k == 0 {
                return;
            }
            k += 1;
        }
    }

    /// Remove and return a member whose wake-up is at or before `now` (the earliest first).
    #[inline]
    pub fn pop_due(&mut self, now: Time) -> Option<(Time, usize)> {
        let (t, i) = self.earliest()?;
        if t > now {
            return None;
        }
        self.set(i, None);
        Some((t, i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_follows_updates() {
        let mut w = Wakes::new(5);
        assert_eq!(w.earliest(), None);
        w.set(3, Some(30));
        w.set(1, Some(10));
        w.set(4, Some(10));
        assert_eq!(w.earliest(), Some((10, 1)), "ties go to the lower index");
        w.set(1, Some(50));
        assert_eq!(w.earliest(), Some((10, 4)));
        w.set(4, None);
        assert_eq!(w.earliest(), Some((30, 3)));
        assert_eq!(w.pop_due(29), None);
        assert_eq!(w.pop_due(30), Some((30, 3)));
        assert_eq!(w.pop_due(100), Some((50, 1)));
        assert_eq!(w.pop_due(100), None);
        assert_eq!(w.get(3), None);
        w.set(0, Some(5));
        w.set(2, Some(7));
        w.set(3, Some(9));
        let mut due = vec![];
        w.for_each_due(7, |i| due.push(i));
        assert_eq!(due, vec![0, 2]);
    }

    #[test]
    fn matches_a_sorted_reference() {
        // Pseudo-random updates against a brute-force minimum.
        let n = 37;
        let mut w = Wakes::new(n);
        let mut r = vec![None; n];
        let mut x: u64 = 12345;
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (x >> 33) as usize % n;
            let t = if (x >> 20).is_multiple_of(5) {
                None
            } else {
                Some((x >> 40) % 1000)
            };
            w.set(i, t);
            r[i] = t;
            let want = (0..n).filter_map(|i| r[i].map(|t| (t, i))).min();
            assert_eq!(w.earliest(), want);
        }
    }
}
