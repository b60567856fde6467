//! Priority classes in FlexPipe (`[qos]`; the paper leaves QoS to future work): the class
//! scheduler that the Ingress Traffic Controller and every Traffic Arbiter use to choose among
//! packets of different classes. A packet's class is its flow's `priority`, written into the
//! metadata by the Pre-Processor and kept through recirculation; a higher value is a more
//! important class, as in PANIC's PIFO.
//!
//! - **Strict**: the highest class with a packet ready goes first, always.
//! - **Weighted**: self-clocked fair queueing over bytes (Golestani, 1994), the byte-exact
//!   relative of deficit round robin: each class has a virtual finish tag, advanced by
//!   `bytes / weight` when one of its packets is sent, and the ready class with the smallest
//!   tag goes first (the higher class on a tie). A class that was idle starts again from the
//!   virtual time of the packet last sent, so it cannot save up service while idle. With every
//!   class backlogged, the bytes each class sends converge to its share of the weights.

/// Most classes: priorities 0 to 7 (the eight of IEEE 802.1p).
pub const MAX_CLASSES: usize = 8;

/// Fixed-point scale of the weighted tags: a tag advances by `bytes × SCALE / weight`.
const SCALE: u64 = 1 << 24;

/// How a block chooses among classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The highest class first.
    Strict,
    /// Byte shares in proportion to the weights.
    Weighted,
}

/// One block's class scheduler (its own tags: each block shares its own output).
#[derive(Debug, Clone)]
pub struct ClassSched {
    policy: Policy,
    /// Per class, its weight (Weighted).
    weights: [u32; MAX_CLASSES],
    /// Per class, the finish tag of its last packet sent (Weighted).
    tags: [u64; MAX_CLASSES],
    /// The start tag of the packet last sent: the virtual time (Weighted).
    vtime: u64,
}

impl ClassSched {
    /// A scheduler with `policy`; `weights[c]` is class c's weight (each at least 1; only
    /// Weighted reads them).
    pub fn new(policy: Policy, weights: [u32; MAX_CLASSES]) -> ClassSched {
        ClassSched {
            policy,
            weights: weights.map(|w| w.max(1)),
            tags: [0; MAX_CLASSES],
            vtime: 0,
        }
    }

    /// Its policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The tag class `c` would start its next packet from.
    fn start(&self, c: u8) -> u64 {
        self.tags[c as usize].max(self.vtime)
    }

    /// Whether a packet of class `a` goes before one of class `b` (both ready).
    #[inline]
    pub fn before(&self, a: u8, b: u8) -> bool {
        match self.policy {
            Policy::Strict => a > b,
            Policy::Weighted => {
                let (sa, sb) = (self.start(a), self.start(b));
                sa < sb || (sa == sb && a > b)
            }
        }
    }

    /// The class of `classes` (those with a packet ready) that goes first.
    pub fn best(&self, classes: impl Iterator<Item = u8>) -> Option<u8> {
        classes.reduce(|best, c| if self.before(c, best) { c } else { best })
    }

    /// A packet of class `c` and `bytes` was sent.
    #[inline]
    pub fn sent(&mut self, c: u8, bytes: u32) {
        if self.policy == Policy::Weighted {
            let start = self.start(c);
            self.vtime = start;
            self.tags[c as usize] = start + bytes as u64 * SCALE / self.weights[c as usize] as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_serves_the_higher_class_first_whatever_was_sent() {
        let mut s = ClassSched::new(Policy::Strict, [1; MAX_CLASSES]);
        for _ in 0..100 {
            assert_eq!(s.best([0, 3, 1].into_iter()), Some(3));
            assert!(s.before(1, 0) && !s.before(0, 1));
            s.sent(3, 1500);
        }
        assert_eq!(s.best(std::iter::empty()), None);
    }

    /// Every class backlogged with packets of mixed sizes: the bytes each sends converge to
    /// its share of the weights.
    #[test]
    fn weighted_shares_converge_to_the_weights() {
        let mut w = [1; MAX_CLASSES];
        w[0] = 1;
        w[1] = 3;
        w[2] = 6;
        let mut s = ClassSched::new(Policy::Weighted, w);
        let sizes = [64u32, 1500, 512, 128, 1024, 256];
        let mut next = [0usize; 3];
        let mut bytes = [0u64; 3];
        for _ in 0..30_000 {
            let c = s.best(0..3).unwrap();
            let b = sizes[(next[c as usize] + c as usize) % sizes.len()];
            next[c as usize] += 1;
            bytes[c as usize] += b as u64;
            s.sent(c, b);
        }
        let total: u64 = bytes.iter().sum();
        for (c, want) in [(0, 0.1), (1, 0.3), (2, 0.6)] {
            let got = bytes[c] as f64 / total as f64;
            assert!(
                (got - want).abs() < 0.005,
                "class {c}: {got} of the bytes, want {want}"
            );
        }
    }

    /// A class that was idle does not get the service it missed: once back, it shares by its
    /// weight from then on.
    #[test]
    fn weighted_an_idle_class_saves_up_nothing() {
        let mut w = [1; MAX_CLASSES];
        w[1] = 1;
        let mut s = ClassSched::new(Policy::Weighted, w);
        for _ in 0..1000 {
            assert_eq!(s.best([0].into_iter()), Some(0));
            s.sent(0, 1000);
        }
        // Class 1 comes back: the two alternate, class 1 not sending a thousand in a row.
        let mut run = 0;
        for _ in 0..100 {
            let c = s.best(0..2).unwrap();
            run = if c == 1 { run + 1 } else { 0 };
            assert!(run <= 2, "class 1 sends {run} in a row");
            s.sent(c, 1000);
        }
    }
}
