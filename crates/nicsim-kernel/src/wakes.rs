//! The calendar of wake-ups: which ports to step at which instants.
//!
//! A calendar queue over a grid. Wake-ups fall on clock edges, so time is cut into buckets of
//! `g` ticks (the greatest common divisor of the ports' clock periods): a ring of `B` buckets
//! covers `[base·g, (base + B)·g)`, where `base` is the current instant's bucket, and each
//! bucket is a bitset of the ports due then, with a summary word per 64 ports. Adding a
//! wake-up sets one bit (a port woken twice for one instant is stepped once, and a port woken
//! for several instants is stepped at each: a step with nothing to do does nothing); taking
//! the next one finds the first non-empty bucket from the current one (a bitmap of non-empty
//! buckets makes that a few word scans) and its lowest port, which is the order the run loop
//! needs within an instant. Wake-ups beyond the ring wait in a binary heap and move into the
//! ring as time advances.
//!
//! Invariants: no wake-up lies before `base`; one before `base + B` is a bit in its bucket,
//! a later one an entry in `far`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::time::Time;

/// Buckets in the ring (a power of two).
const B: usize = 1024;

/// Division by `g` of multiples of `g` only: a shift and a multiplication by the inverse of
/// g's odd part modulo 2^64 (exact division, no divide instruction).
#[derive(Debug, Clone, Copy)]
struct ExactDiv {
    shift: u32,
    inverse: u64,
}

impl ExactDiv {
    fn new(g: u64) -> ExactDiv {
        let shift = g.trailing_zeros();
        let odd = g >> shift;
        // Newton's iteration doubles the correct low bits: 3 → 6 → 12 → 24 → 48 → 96.
        let mut inv = odd;
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inv)));
        }
        debug_assert_eq!(odd.wrapping_mul(inv), 1);
        ExactDiv {
            shift,
            inverse: inv,
        }
    }
    #[inline]
    fn div(self, t: u64) -> u64 {
        (t >> self.shift).wrapping_mul(self.inverse)
    }
}

/// The calendar of pending wake-ups: per instant on the grid of `g` ticks, the ports due then (see
/// the module docs).
#[derive(Debug, Clone)]
pub struct Wakes {
    /// Bucket width in ticks.
    g: u64,
    g_div: ExactDiv,
    /// The current bucket: its number (time / g).
    base: u64,
    /// Words per bucket's bitset, and summary words per bucket (bit w: word w is non-zero).
    words: usize,
    sums: usize,
    /// `B · words` bitset words: bucket `i` is `bits[i · words ..][..words]`.
    bits: Vec<u64>,
    /// `B · sums` summary words.
    sum: Vec<u64>,
    /// Bit `i`: bucket `i` has a port.
    nonempty: [u64; B / 64],
    /// Wake-ups at or after the end of the ring.
    far: BinaryHeap<Reverse<(Time, u32)>>,
}

impl Wakes {
    /// A calendar for `n` ports whose wake-ups are all multiples of `g` ticks.
    pub fn new(n: usize, g: u64) -> Wakes {
        let words = n.max(1).div_ceil(64);
        let sums = words.div_ceil(64);
        Wakes {
            g: g.max(1),
            g_div: ExactDiv::new(g.max(1)),
            base: 0,
            words,
            sums,
            bits: vec![0; B * words],
            sum: vec![0; B * sums],
            nonempty: [0; B / 64],
            far: BinaryHeap::new(),
        }
    }

    /// Wake port `p` at `t`, a multiple of `g` not before the current bucket.
    #[inline(always)]
    pub fn add(&mut self, p: usize, t: Time) {
        let q = self.g_div.div(t.ticks());
        debug_assert!(
            q >= self.base && q * self.g == t.ticks(),
            "wake-up {t:?} before the current bucket or off the grid"
        );
        if q < self.base + B as u64 {
            self.set_bit(q as usize & (B - 1), p);
        } else {
            self.add_far(p, t);
        }
    }

    #[inline(never)]
    fn add_far(&mut self, p: usize, t: Time) {
        self.far.push(Reverse((t, p as u32)));
    }

    #[inline(always)]
    fn set_bit(&mut self, b: usize, p: usize) {
        let w = p / 64;
        self.bits[b * self.words + w] |= 1 << (p % 64);
        if self.words > 1 {
            // One word of ports needs no summary (see `take_lowest`).
            self.sum[b * self.sums + w / 64] |= 1 << (w % 64);
        }
        self.nonempty[b / 64] |= 1 << (b % 64);
    }

    /// Whether no wake-up is pending.
    pub fn is_empty(&self) -> bool {
        self.far.is_empty() && self.nonempty.iter().all(|&w| w == 0)
    }

    /// The earliest pending wake-up's instant, left in place (`None` when nothing is pending).
    pub fn peek(&self) -> Option<Time> {
        let cur = self.base as usize & (B - 1);
        if let Some(b) = self.first_nonempty(cur) {
            let q = self.base + ((b + B - cur) & (B - 1)) as u64;
            return Some(Time::from_ticks(q * self.g));
        }
        self.far.peek().map(|&Reverse((t, _))| t)
    }

    /// The earliest wake-up and its port (the lowest among simultaneous ones), removed, unless
    /// it lies after `until`. Time moves to it.
    #[inline]
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, usize)> {
        loop {
            let cur = self.base as usize & (B - 1);
            if let Some(b) = self.first_nonempty(cur) {
                let q = self.base + ((b + B - cur) & (B - 1)) as u64;
                let t = Time::from_ticks(q * self.g);
                if t > until {
                    return None;
                }
                // Unconditionally, so that no branch depends on whether time moved to another
                // bucket (data-dependent, often mispredicted).
                self.advance(q);
                return Some((t, self.take_lowest(b)));
            }
            // The ring is empty: move it to the earliest far wake-up.
            let &Reverse((t, _)) = self.far.peek()?;
            if t > until {
                return None;
            }
            self.move_to(t);
        }
    }

    /// Remove and return the lowest port of (non-empty) bucket `b`.
    #[inline]
    fn take_lowest(&mut self, b: usize) -> usize {
        if self.words == 1 {
            // One word of ports: no summary to consult.
            let word = &mut self.bits[b];
            let p = word.trailing_zeros() as usize;
            *word &= *word - 1;
            // The bucket's bit goes when its last port does (without a branch).
            self.nonempty[b / 64] &= !(((*word == 0) as u64) << (b % 64));
            return p;
        }
        let sums = &mut self.sum[b * self.sums..][..self.sums];
        let (s, sw) = sums
            .iter()
            .enumerate()
            .find(|(_, &x)| x != 0)
            .map(|(s, &x)| (s, x))
            .expect("a non-empty bucket has a summary bit");
        let w = s * 64 + sw.trailing_zeros() as usize;
        let word = &mut self.bits[b * self.words + w];
        let p = w * 64 + word.trailing_zeros() as usize;
        *word &= *word - 1;
        if *word == 0 {
            sums[s] &= sums[s] - 1;
            if sums[s] == 0 && sums.iter().all(|&x| x == 0) {
                self.nonempty[b / 64] &= !(1 << (b % 64));
            }
        }
        p
    }

    /// Empty the bucket of instant `t` (the current one; the stepped loop has stepped every
    /// port there).
    pub fn clear_at(&mut self, t: Time) {
        let q = self.g_div.div(t.ticks());
        if q >= self.base && q < self.base + B as u64 {
            let b = q as usize & (B - 1);
            self.bits[b * self.words..][..self.words].fill(0);
            self.sum[b * self.sums..][..self.sums].fill(0);
            self.nonempty[b / 64] &= !(1 << (b % 64));
        }
    }

    /// Time has reached `t` (a multiple of g): move the ring and take in the far wake-ups it
    /// now covers.
    #[inline]
    pub fn move_to(&mut self, t: Time) {
        let base = self.g_div.div(t.ticks());
        if base != self.base {
            self.advance(base);
        }
    }

    /// Time has reached bucket `base` (the current one or a later one).
    #[inline(always)]
    fn advance(&mut self, base: u64) {
        debug_assert!(base >= self.base);
        self.base = base;
        if !self.far.is_empty() {
            self.take_in_far();
        }
    }

    /// Move the far wake-ups the ring now covers into it.
    #[inline(never)]
    fn take_in_far(&mut self) {
        while let Some(&Reverse((t, p))) = self.far.peek() {
            let q = self.g_div.div(t.ticks());
            if q >= self.base + B as u64 {
                break;
            }
            self.far.pop();
            self.set_bit(q as usize & (B - 1), p as usize);
        }
    }

    /// The first non-empty bucket at or after `cur`, going round the ring.
    #[inline]
    fn first_nonempty(&self, cur: usize) -> Option<usize> {
        let (w0, s) = (cur / 64, cur % 64);
        let first = self.nonempty[w0] & (!0u64 << s);
        if first != 0 {
            return Some(w0 * 64 + first.trailing_zeros() as usize);
        }
        for k in 1..=B / 64 {
            let w = (w0 + k) % (B / 64);
            let word = if w == w0 {
                self.nonempty[w] & !(!0u64 << s)
            } else {
                self.nonempty[w]
            };
            if word != 0 {
                return Some(w * 64 + word.trailing_zeros() as usize);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_lowest_port() {
        let at = Time::from_ticks;
        let mut w = Wakes::new(5, 10);
        assert!(w.is_empty());
        w.add(3, at(30));
        w.add(1, at(10));
        w.add(4, at(10));
        w.add(4, at(10));
        assert_eq!(w.pop_until(at(5)), None, "nothing due by 5");
        assert_eq!(w.pop_until(at(100)), Some((at(10), 1)));
        assert_eq!(
            w.pop_until(at(100)),
            Some((at(10), 4)),
            "a port woken twice is stepped once"
        );
        assert_eq!(w.pop_until(at(100)), Some((at(30), 3)));
        assert_eq!(w.pop_until(at(100)), None);
        assert!(w.is_empty());
    }

    #[test]
    fn matches_a_sorted_reference() {
        // Random wake-ups, well beyond the ring too, for 130 ports (three words, two summary
        // words' worth of ports would need 4097), taken in order as time advances.
        let (n, g) = (130, 3);
        let mut w = Wakes::new(n, g);
        let mut r = std::collections::BTreeSet::new();
        let mut now = Time::ZERO;
        let mut x: u64 = 12345;
        for _ in 0..50_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let p = (x >> 33) as usize % n;
            let t = now + (x >> 40) % (3 * B as u64) * g;
            w.add(p, t);
            r.insert((t, p));
            if (x >> 12).is_multiple_of(2) {
                let want = r.pop_first();
                assert_eq!(w.pop_until(Time::MAX), want);
                now = want.unwrap().0;
            }
        }
        while let Some(want) = r.pop_first() {
            assert_eq!(w.pop_until(Time::MAX), Some(want));
        }
        assert!(w.is_empty());
    }
}
