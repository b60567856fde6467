//! FlexPipe's Offload Units (Fig. 2). A unit of w bits at f MHz with d non-pipelined cycles
//! reads a packet of s bytes from its input queue in ceil(8s/w) unit cycles (it cannot read
//! the last fragment before it has arrived), then works d cycles, and puts the finished packet
//! in its output buffer, where the nested round robin takes it. The units keep their own
//! clock; what they do is seen by the Offload's pipeline-clock logic from the next pipeline
//! edge on, as through a clock-domain crossing. Here too: which unit acts next (a tournament
//! tree over their events) and which have a finished packet (a bitmap for the round robin).

use std::collections::VecDeque;

use nicsim_kernel::{Clock, Slot, Time, Transfer, Width};

use crate::packet::PktId;
use crate::world::World;

/// Geometry and timing of one offload's units.
#[derive(Debug, Clone)]
pub struct UnitSpec {
    /// The units' data width.
    pub width_bits: u32,
    /// The units' clock.
    pub clock: Clock,
    /// Non-pipelined cycles per packet after reading it.
    pub delay_cycles: u32,
    /// Output buffer of every unit: finished packets wait there for the round robin.
    pub out_bytes: u32,
}

/// An Offload's ports, numbered within the component it belongs to (in the order they act):
/// the units' wake-ups name the ports that take their events up.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    /// The Traffic Arbiter.
    pub arb: usize,
    /// The units' events, then the nested round robin (then, without a `late` port, the units'
    /// events once more).
    pub units: usize,
    /// The port that feeds the Traffic Splitter: its own (PANIC) or the previous stage's
    /// sender (FlexPipe), woken when the Load Balancer may take a packet again.
    pub split: usize,
    /// On its own, the units' events once more come after the Splitter, in a port of their own.
    pub late: Option<usize>,
}

impl Ports {
    /// The port that takes up unit events due at the current edge once the units' port has
    /// acted (for a unit the round robin freed).
    pub fn late(&self) -> usize {
        self.late.unwrap_or(self.units)
    }
}

/// One Offload Unit.
struct Unit {
    queue: VecDeque<Slot<PktId>>,
    /// Bytes queued, including a packet started ahead (see `ahead`).
    queued_bytes: u64,
    /// Packet in service: (packet, bytes, start, end).
    cur: Option<(PktId, u32, Time, Time)>,
    /// A packet handed to the unit while it was idle with nothing queued starts at a time
    /// known then, and `cur` holds it from then on; but the rest of the Offload sees the start
    /// only from the pipeline edge at which the unit's event would have been taken up (as if
    /// it had waited in the queue until then): (that edge, its bytes, still in
    /// `queued_bytes`). Settled by the unit's next event.
    ahead: Option<(Time, u32)>,
    /// Finished packets waiting for the round robin.
    done: VecDeque<(PktId, u32)>,
    done_bytes: u64,
}

/// What a unit's event did with its packet in service.
pub enum Finished {
    /// It is still at work on it until then.
    Busy(Time),
    /// It had none.
    Idle,
    /// It finished the packet, which waits in its output buffer.
    Done,
    /// The offload's function dropped the packet, for this reason.
    Dropped(PktId, &'static str),
}

/// An Offload's units, their events and their output buffers.
pub struct Units {
    units: Vec<Unit>,
    spec: UnitSpec,
    /// The units' data width.
    width: Width,
    /// The pipeline clock (the Offload's).
    pclk: Clock,
    /// Units with a finished packet: one bit per unit.
    ready: Vec<u64>,
    /// Units with a finished packet (members of `ready`).
    n_ready: u32,
    /// Per unit: the unit edge at which it next looks at its packet in service or its queue.
    pub(super) wakes: UnitWakes,
    /// The earliest pipeline edge for which the units' first port has been woken (and not yet
    /// stepped), so that it is not woken again for a later one.
    pub(super) woken: Time,
}

impl Units {
    /// `n` idle units of `spec`, behind a pipeline at `pclk`.
    pub fn new(n: u32, spec: UnitSpec, pclk: Clock) -> Units {
        let units = (0..n)
            .map(|_| Unit {
                queue: VecDeque::new(),
                queued_bytes: 0,
                cur: None,
                done: VecDeque::new(),
                done_bytes: 0,
                ahead: None,
            })
            .collect();
        Units {
            units,
            width: Width::new(spec.width_bits),
            spec,
            pclk,
            ready: vec![0; (n as usize).div_ceil(64)],
            n_ready: 0,
            wakes: UnitWakes::new(n as usize),
            woken: Time::MAX,
        }
    }

    /// How many units there are.
    #[inline]
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Bytes waiting in unit `u`'s queue as seen at pipeline edge `now`.
    #[inline]
    pub fn queued(&self, u: usize, now: Time) -> u64 {
        let unit = &self.units[u];
        match unit.ahead {
            Some((seen, bytes)) if seen <= now => unit.queued_bytes - bytes as u64,
            _ => unit.queued_bytes,
        }
    }

    /// Bytes of unit `u`'s packet in service that it has not read by `now` (0 while its start
    /// is not yet seen: those bytes still count as queued).
    pub fn unread(&self, u: usize, now: Time) -> u64 {
        let unit = &self.units[u];
        match &unit.cur {
            Some((_, bytes, start, _)) if unit.ahead.is_none_or(|(seen, _)| seen <= now) => {
                let cycles = self.spec.clock.cycles_in(now.saturating_sub(*start));
                let read = (cycles * self.spec.width_bits as u64 / 8).min(*bytes as u64);
                *bytes as u64 - read
            }
            _ => 0,
        }
    }

    /// When a unit that started a packet of `bytes` at `start` has read it all (ceil(8 s / w)
    /// unit cycles).
    fn read_by(&self, start: Time, bytes: u32) -> Time {
        start + self.spec.clock.cycles(self.width.beats(bytes))
    }

    /// Whether unit `u` is reading its packet in service at `now`, its start seen.
    pub fn reading(&self, u: usize, now: Time) -> bool {
        let unit = &self.units[u];
        unit.cur.is_some_and(|(_, bytes, start, _)| {
            unit.ahead.is_none_or(|(seen, _)| seen <= now) && now < self.read_by(start, bytes)
        })
    }

    /// From when unit `u` has nothing queued and nothing unread (its start seen, its packet
    /// read), if nothing else comes; `Time::MAX` while its queue holds a packet.
    #[inline]
    pub fn empty_from(&self, u: usize) -> Time {
        let unit = &self.units[u];
        if unit.queue.is_empty() {
            let seen = unit.ahead.map_or(Time::ZERO, |a| a.0);
            let read_by = unit.cur.map_or(Time::ZERO, |(_, bytes, start, _)| {
                self.read_by(start, bytes)
            });
            seen.max(read_by)
        } else {
            Time::MAX
        }
    }

    /// The earliest pipeline edge at which a start ahead of time is seen, if any.
    pub fn first_ahead(&self) -> Option<Time> {
        self.units.iter().filter_map(|u| u.ahead).map(|a| a.0).min()
    }

    /// The unit's start ahead of time is now seen by everyone (`now` ≥ its edge).
    #[inline]
    pub fn settle(&mut self, u: usize, now: Time) {
        let unit = &mut self.units[u];
        if let Some((seen, bytes)) = unit.ahead {
            if seen <= now {
                unit.queued_bytes -= bytes as u64;
                unit.ahead = None;
            }
        }
    }

    /// Packet `item` of `bytes` arrives for unit `u` over transfer `tr`: the unit starts it
    /// ahead of time if it is idle, or queues it. `ports`: the Offload's, `split` the port
    /// stepping now.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn enter(
        &mut self,
        u: usize,
        now: Time,
        item: PktId,
        bytes: u32,
        tr: Transfer,
        ports: Ports,
        w: &mut World,
    ) {
        self.settle(u, now);
        let unit = &mut self.units[u];
        unit.queued_bytes += bytes as u64;
        let idle = unit.cur.is_none() && unit.queue.is_empty();
        // Nothing can change when an idle unit starts this packet (its first edge once the
        // first beat is there) if its output buffer has room.
        if idle && unit.done_bytes + bytes as u64 <= self.spec.out_bytes as u64 {
            let clk = self.spec.clock;
            let start = clk.edge_at_or_after(tr.head);
            let end = self.service_end(start, bytes, tr.tail);
            let unit = &mut self.units[u];
            unit.cur = Some((item, bytes, start, end));
            unit.ahead = Some((self.pclk.edge_at_or_after(start), bytes));
            self.wakes.arm(u, end);
            self.wake_ports(ports.split, ports, w);
        } else {
            unit.queue.push_back(Slot {
                item,
                bytes,
                head: tr.head,
                tail: tr.tail,
                enq: now,
            });
            if idle {
                self.wake_unit(u, tr.head);
                self.wake_ports(ports.split, ports, w);
            }
        }
    }

    /// Unit `u`'s event at unit edge `now`: finish its packet in service if it is done (an
    /// Offload of index `idx` runs its function on it, if functional offloads are on).
    #[inline(always)]
    pub fn finish(&mut self, u: usize, now: Time, idx: u8, w: &mut World) -> Finished {
        let unit = &mut self.units[u];
        let Some((_, _, _, end)) = unit.cur else {
            return Finished::Idle;
        };
        if end > now {
            return Finished::Busy(end);
        }
        let (id, bytes, start, end) = unit.cur.take().unwrap();
        w.unit_busy_ticks[idx as usize] += end - start;
        let pkt = &mut w.pkts[id];
        let verdict = match (&w.funcs, pkt.frame.as_mut()) {
            (Some(f), Some(fr)) => f[idx as usize].process(&mut fr.bytes, &mut fr.meta),
            _ => Ok(()),
        };
        match verdict {
            Ok(()) => {
                pkt.trace.push(idx);
                if pkt.next_is(idx) {
                    pkt.next += 1;
                }
                unit.done.push_back((id, bytes));
                unit.done_bytes += bytes as u64;
                self.set_ready(u, true);
                Finished::Done
            }
            Err(reason) => Finished::Dropped(id, reason.as_str()),
        }
    }

    /// After [`Units::finish`] at unit edge `now`: start the front packet of unit `u`'s queue
    /// if it can. Returns the unit edge of the unit's next event: the end of its packet in
    /// service, else the first edge at which the front packet may start (its first beat there,
    /// the unit's idle time over); `Time::MAX` when only a packet entering (see `enter`) or the
    /// round robin making room (see `hand_over`) can let it go on, and they wake it.
    #[inline(always)]
    pub fn start(&mut self, u: usize, now: Time) -> Time {
        let unit = &mut self.units[u];
        let Some(front) = unit.queue.front() else {
            return Time::MAX;
        };
        if unit.done_bytes + front.bytes as u64 > self.spec.out_bytes as u64 {
            return Time::MAX; // output buffer full: wait for the round robin
        }
        let start = self.spec.clock.edge_at_or_after(front.head);
        if start > now {
            return start;
        }
        let slot = unit.queue.pop_front().unwrap();
        unit.queued_bytes -= slot.bytes as u64;
        let end = self.service_end(now, slot.bytes, slot.tail);
        self.units[u].cur = Some((slot.item, slot.bytes, now, end));
        end
    }

    /// When a unit that starts a packet of `bytes` at unit edge `start`, whose last beat lands
    /// at `tail`, is done with it: ceil(8 s / w) cycles reading (it cannot read the last
    /// fragment before it has arrived), then the non-pipelined delay.
    fn service_end(&self, start: Time, bytes: u32, tail: Time) -> Time {
        let clk = self.spec.clock;
        let read_end = self
            .read_by(start, bytes)
            .max(clk.edge_at_or_after(tail) + clk.period);
        read_end + clk.cycles(self.spec.delay_cycles as u64)
    }

    #[inline]
    fn set_ready(&mut self, u: usize, on: bool) {
        let (w, b) = (u / 64, 1u64 << (u % 64));
        let was = self.ready[w] & b != 0;
        if on {
            self.ready[w] |= b;
        } else {
            self.ready[w] &= !b;
        }
        self.n_ready = self.n_ready + on as u32 - was as u32;
    }

    /// The first unit with a finished packet, in round-robin order from `from`.
    #[inline]
    pub fn next_ready(&self, from: usize) -> Option<usize> {
        if self.n_ready == 0 {
            return None;
        }
        let n = self.units.len();
        let scan = |from: usize, to: usize| -> Option<usize> {
            let mut u = from;
            while u < to {
                let word = self.ready[u / 64] >> (u % 64);
                if word != 0 {
                    let c = u + word.trailing_zeros() as usize;
                    return (c < to).then_some(c);
                }
                u = (u / 64 + 1) * 64;
            }
            None
        };
        scan(from, n).or_else(|| scan(0, from))
    }

    /// The first finished packet in unit `u`'s output buffer (which has one), and its bytes.
    #[inline]
    pub fn done_front(&self, u: usize) -> (PktId, u32) {
        *self.units[u].done.front().unwrap()
    }

    /// The bytes of the first finished packet in unit `u`'s output buffer (which has one).
    #[inline]
    pub fn done_front_bytes(&self, u: usize) -> u32 {
        self.units[u].done.front().unwrap().1
    }

    /// Take the first finished packet out of unit `u`'s output buffer: (packet, bytes).
    #[inline]
    pub fn pop_done(&mut self, u: usize) -> (PktId, u32) {
        let unit = &mut self.units[u];
        let (pkt, bytes) = unit.done.pop_front().unwrap();
        unit.done_bytes -= bytes as u64;
        if unit.done.is_empty() {
            self.set_ready(u, false);
        }
        (pkt, bytes)
    }

    /// Unit `u`'s finished packet has been handed over (at pipeline edge `now`): its output
    /// buffer has room again, and it may go on if a packet waits in its queue (one in service
    /// has its event at its end).
    #[inline]
    pub fn handed_over(&mut self, u: usize, now: Time) {
        let unit = &self.units[u];
        if unit.cur.is_none() && !unit.queue.is_empty() {
            self.wake_unit(u, now);
        }
    }

    /// Schedule unit `u` to look at its queue at the first unit edge at or after `t` (the
    /// caller then wakes whoever takes it up, see `wake_ports`).
    fn wake_unit(&mut self, u: usize, t: Time) {
        self.wakes.arm(u, self.spec.clock.edge_at_or_after(t));
    }

    /// Wake the port that takes up the units' earliest event: the late units' port of this
    /// very edge if the event is due by now and that port is still to come (`port` is the one
    /// stepping now), otherwise the units' port at the pipeline edge that follows the event.
    pub fn wake_ports(&mut self, port: usize, ports: Ports, w: &mut World) {
        let (t, _) = self.wakes.first();
        if t != Time::MAX {
            let now = w.cal.now();
            if t <= now && port < ports.late() {
                w.cal.wake_port(ports.late(), now);
            } else if (t < self.woken) | (self.woken <= now) {
                let e = self.pclk.edge_at_or_after(t.max(now + 1));
                self.woken = e;
                w.cal.wake_port(ports.units, e);
            }
        }
    }
}

/// The units' next events: one time per unit (`Time::MAX`: none), and a tournament tree over
/// them that holds the earliest, the lower unit first on a tie. A unit's event reschedules it
/// (see `finish_and_start`), so one pending time per unit is enough: a wake for later than the
/// pending one is the event's to set again.
pub(super) struct UnitWakes {
    /// Node `i` (from 1) holds the earliest (time, unit) below it; its children are `2i` and
    /// `2i + 1`, and unit `u`'s leaf is `leaves + u`.
    nodes: Vec<(Time, u32)>,
    /// Leaves: the number of units rounded up to a power of two.
    leaves: usize,
}

impl UnitWakes {
    /// No events for `n_units` units.
    pub(super) fn new(n_units: usize) -> UnitWakes {
        let leaves = n_units.next_power_of_two();
        let mut nodes = vec![(Time::MAX, 0); 2 * leaves];
        for (u, leaf) in nodes[leaves..].iter_mut().enumerate() {
            leaf.1 = u as u32;
        }
        for i in (1..leaves).rev() {
            nodes[i] = nodes[2 * i];
        }
        UnitWakes { nodes, leaves }
    }

    /// The earliest event: (unit edge, unit); `Time::MAX` when there is none.
    #[inline]
    pub(super) fn first(&self) -> (Time, u32) {
        self.nodes[1]
    }

    /// Unit `u`'s next event is at `t` (`Time::MAX`: none).
    #[inline]
    pub(super) fn set(&mut self, u: usize, t: Time) {
        let mut i = self.leaves + u;
        self.nodes[i] = (t, u as u32);
        while i > 1 {
            i /= 2;
            let [a, b] = self.nodes[2 * i..2 * i + 2] else {
                unreachable!("two children")
            };
            // The left child holds the lower units: it wins a tie.
            self.nodes[i] = if b.0 < a.0 { b } else { a };
        }
    }

    /// Unit `u` looks at its packet in service or its queue at `t` at the latest.
    pub(super) fn arm(&mut self, u: usize, t: Time) {
        let mut i = self.leaves + u;
        if t >= self.nodes[i].0 {
            return;
        }
        let new = (t, u as u32);
        self.nodes[i] = new;
        // An earlier time: it only wins where it beats the earliest so far (unless that was
        // this unit's own, later time).
        while i > 1 {
            i >>= 1;
            let old = self.nodes[i];
            // old <= new for another unit's event (one condition, without branches inside).
            if (old.0 < t) | ((old.0 == t) & (old.1 < new.1)) {
                break;
            }
            self.nodes[i] = new;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The tree against a plain minimum over per-unit times, through random `set`s and `arm`s
    /// (times repeat, so ties are frequent; the lower unit wins them).
    #[test]
    fn unit_wakes_hold_the_earliest_event() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut rand = |n: u64| rng.gen_range(0..n);
        for n in 1..=13 {
            let mut tree = UnitWakes::new(n);
            let mut plain = vec![Time::MAX; n];
            for _ in 0..2000 {
                let u = rand(n as u64) as usize;
                let t = if rand(8) == 0 {
                    Time::MAX
                } else {
                    Time::from_ticks(rand(20))
                };
                if rand(2) == 0 {
                    tree.set(u, t);
                    plain[u] = t;
                } else {
                    tree.arm(u, t);
                    plain[u] = plain[u].min(t);
                }
                let (t_min, u_min) = (0..n).map(|u| (plain[u], u)).min().unwrap();
                let (t_tree, u_tree) = tree.first();
                assert_eq!(t_tree, t_min, "{n} units: {plain:?}");
                if t_min != Time::MAX {
                    assert_eq!(u_tree as usize, u_min, "{n} units: {plain:?}");
                }
            }
        }
    }
}
