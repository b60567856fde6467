//! Streams between modules.
//!
//! A [`Link`] is an AXI4-Stream-like connection `width_bits` wide that moves one beat per cycle
//! of its sender's clock. A packet of `s` bytes takes `ceil(8 s / width_bits)` beats, packets are
//! never interleaved, and the receiver sees the first beat one cycle after the transfer starts
//! (cut-through). The sender cannot forward a beat before it has arrived, so a transfer fed by a
//! slower upstream ends one cycle after that upstream's last beat at the earliest.
//! Backpressure (ready) is the caller's check that the receiving FIFO has room before `send`.

use crate::time::{Clock, Time};

/// When a transfer started, and when its first and last beats are available at the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// When the transfer started (an edge of the link's clock), in ticks.
    pub start: Time,
    /// When the first beat is available at the receiver (one cycle after `start`), in ticks.
    pub head: Time,
    /// When the last beat is available at the receiver, in ticks; the link is busy until then.
    pub tail: Time,
}

/// A data width: how many beats (cycles of `width_bits` each) a packet of `bytes` takes,
/// without a divide instruction per packet (a shift for the usual power-of-two widths).
#[derive(Debug, Clone, Copy)]
pub struct Width {
    /// Bits per beat.
    pub bits: u32,
    shift: Option<u32>,
    div: strength_reduce::StrengthReducedU64,
}

impl Width {
    /// A width of `bits` (> 0).
    pub fn new(bits: u32) -> Width {
        Width {
            bits,
            shift: bits.is_power_of_two().then(|| bits.trailing_zeros()),
            div: strength_reduce::StrengthReducedU64::new(bits as u64),
        }
    }
    /// `ceil(8 · bytes / bits)`.
    #[inline]
    pub fn beats(&self, bytes: u32) -> u64 {
        let n = 8 * bytes as u64 + self.bits as u64 - 1;
        match self.shift {
            Some(s) => n >> s,
            None => n / self.div,
        }
    }
}

/// A stream that moves one beat per cycle of its sender's clock, one packet at a time (see the
/// module docs).
#[derive(Debug, Clone)]
pub struct Link {
    /// The data width: bits moved per beat.
    pub width: Width,
    /// The sender's clock: one beat moves per cycle of it, and transfers start at its edges.
    pub clock: Clock,
    busy_until: Time,
}

impl Link {
    /// An idle link `width_bits` wide on `clock`.
    pub fn new(width_bits: u32, clock: Clock) -> Link {
        Link {
            width: Width::new(width_bits),
            clock,
            busy_until: Time::ZERO,
        }
    }
    /// Beats needed for `bytes`.
    #[inline]
    pub fn beats_for(&self, bytes: u32) -> u64 {
        self.width.beats(bytes)
    }
    /// Until when the link is busy with its last transfer.
    #[inline]
    pub fn busy_until(&self) -> Time {
        self.busy_until
    }
    /// The link can start a transfer at `now` (an edge of its clock).
    #[inline]
    pub fn is_free(&self, now: Time) -> bool {
        now >= self.busy_until
    }
    /// The earliest time at or after `t` at which the link is free, for a wake-up (the
    /// calendar rounds it to the port's clock, which is the link's).
    #[inline]
    pub fn free_from(&self, t: Time) -> Time {
        t.max(self.busy_until)
    }
    /// Start moving `bytes` at `now`; `src_tail` is when the last byte reaches the sender.
    #[inline]
    pub fn send(&mut self, now: Time, bytes: u32, src_tail: Time) -> Transfer {
        let beats = self.beats_for(bytes);
        self.send_beats(now, beats, src_tail)
    }
    /// Keep the link busy `cycles` more after its last transfer: a gap the sender leaves
    /// between two packets.
    #[inline]
    pub fn hold(&mut self, cycles: u64) {
        self.busy_until += cycles * self.clock.period;
    }
    /// Like [`Link::send`] for a transfer of a given number of beats (e.g. a descriptor beat
    /// ahead of the packet's data beats).
    pub fn send_beats(&mut self, now: Time, beats: u64, src_tail: Time) -> Transfer {
        debug_assert!(self.is_free(now) && self.clock.is_edge(now));
        let p = self.clock.period;
        // A source whose last byte is already here (the usual case) holds nothing up.
        let tail = if src_tail <= now {
            now + beats * p
        } else {
            (now + beats * p).max(self.clock.edge_at_or_after(src_tail) + p)
        };
        self.busy_until = tail;
        Transfer {
            start: now,
            head: now + p,
            tail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_beat_per_cycle_and_no_overtaking() {
        let c = Clock::new(250, 12);
        let mut l = Link::new(512, c);
        assert_eq!(l.beats_for(64), 1);
        assert_eq!(l.beats_for(65), 2);
        assert_eq!(l.beats_for(1500), 24);
        let at = Time::from_ticks;
        let t = l.send(at(0), 1500, at(0));
        assert_eq!((t.head, t.tail), (at(12), at(24 * 12)));
        assert!(!l.is_free(at(24 * 12 - 12)) && l.is_free(at(24 * 12)));
        // Fed by a slow source whose last byte arrives at 1000: cannot finish before it.
        let t2 = l.send(l.free_from(at(0)), 64, at(1000));
        assert_eq!(t2.tail, c.edge_at_or_after(at(1000)) + 12);
    }
}
