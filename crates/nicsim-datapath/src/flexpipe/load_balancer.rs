//! FlexPipe's Load Balancer (Fig. 2): one byte counter per Offload Unit, +size when a packet
//! starts being stored for the unit, −fragment as the unit reads it; a packet goes to the
//! least-loaded unit (the lowest index on a tie), while that unit's input queue has room for
//! it. The counters are not kept as numbers: they follow from the units' queues and progress
//! ([`Units::queued`], [`Units::unread`]), and each unit's time from which its counter is 0
//! is kept so that the least-loaded unit is mostly found without computing any. With priority
//! classes (`[qos]`), a packet below the highest class in use goes to its unit only if the
//! unit's queue keeps `qos.unit_reserve_bytes` free for the highest class.

use nicsim_kernel::Time;

use super::offload::{Choice, Steer};
use super::units::Units;
use crate::packet::PktId;
use crate::world::World;

/// The Load Balancer of one Offload.
pub struct LoadBalancer {
    /// Per unit: from when its counter is 0 if nothing else is queued.
    zero_from: Vec<Time>,
    /// Each unit's input queue.
    queue_bytes: u32,
    /// With priority classes: the room kept free for the highest class in use, and that class.
    reserve: Option<(u32, u8)>,
}

impl LoadBalancer {
    /// A Load Balancer over `n_units` units whose input queues hold `queue_bytes` each.
    pub fn new(n_units: u32, queue_bytes: u32) -> LoadBalancer {
        LoadBalancer {
            zero_from: vec![Time::ZERO; n_units as usize],
            queue_bytes,
            reserve: None,
        }
    }

    /// With priority classes: keep `bytes` of every unit's queue for class `top` (and above).
    pub fn with_reserve(mut self, bytes: u32, top: u8) -> LoadBalancer {
        self.reserve = (bytes > 0).then_some((bytes, top));
        self
    }

    /// Unit `u`'s counter at `now`: bytes stored for it that it has not yet read.
    fn load(units: &Units, u: usize, now: Time) -> u64 {
        units.queued(u, now) + units.unread(u, now)
    }
}

impl Steer for LoadBalancer {
    /// The first unit whose counter is 0, else the first with the smallest, if its queue has
    /// room for the packet.
    fn choose(&self, now: Time, units: &Units, w: &World, item: PktId, bytes: u32) -> Choice {
        let u = match self.zero_from.iter().position(|&t| t <= now) {
            Some(u) => u,
            None => {
                let mut best = (u64::MAX, 0);
                for u in 0..units.len() {
                    let l = LoadBalancer::load(units, u, now);
                    if l < best.0 {
                        best = (l, u);
                    }
                }
                best.1
            }
        };
        debug_assert_eq!(
            Some(u),
            (0..units.len()).min_by_key(|&u| (LoadBalancer::load(units, u, now), u)),
            "zero_from {:?} at {now:?}",
            self.zero_from
        );
        let limit = match self.reserve {
            Some((keep, top)) if w.pkts[item].priority < top => self.queue_bytes - keep,
            _ => self.queue_bytes,
        };
        if units.queued(u, now) + bytes as u64 <= limit as u64 {
            Choice::Unit(u)
        } else {
            Choice::Wait
        }
    }

    /// Some unit's counter is falling at `now`: its packet in service, its start seen, is still
    /// being read.
    fn falling(&self, now: Time, units: &Units) -> bool {
        (0..units.len()).any(|u| units.reading(u, now))
    }

    #[inline]
    fn unit_changed(&mut self, units: &Units, u: usize) {
        self.zero_from[u] = units.empty_from(u);
    }
}
