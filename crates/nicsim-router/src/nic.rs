//! The FPGA NIC's own datapath, on either side of the bus.
//!
//! [`NicRx`] (input processing, on the NIC's 66 MHz, 64-bit IP-handling clock): takes each
//! whole frame from the MAC buffer, routes it with the ternary routing masks (first match in
//! priority order; a miss takes the slow path), rewrites it for the fast path (TTL − 1, a
//! packet whose TTL reaches zero is dropped), classifies it with the per-destination 80-bit
//! masks into two classes, and stores it in its per-(output NIC, class) input FIFO or in the
//! slow-path pair; no room is a drop at the input FIFO. A packet that arrives in an empty
//! pair makes that output NIC *active* for the request scheduler (section III-B 1).
//!
//! [`NicTx`] (output processing, on the 125 MHz MAC clock): the output scheduler takes whole
//! packets from the slow-path output FIFO with strict priority, else from the fast-path one,
//! and the MAC sends them with preamble and inter-frame gap.

use nicsim_kernel::{Clock, Component, Link, Port, Time};
use nicsim_packet::ethernet::{wire_bytes, PREAMBLE_SFD_LEN};

use crate::ternary::class_key;
use crate::world::{Place, World, HI, LO, SLOW};

/// Input processing of one NIC: routing, classification and storing into the input FIFOs.
pub struct NicRx {
    /// Index of its NIC.
    pub nic: u8,
    /// The MAC buffer it reads.
    pub mac_rx: nicsim_kernel::FifoId,
    /// The IP-handling block's internal datapath.
    pub link: Link,
    /// From a frame's last byte read to its routing decision, in ticks.
    pub latency: u64,
}

impl Component<World> for NicRx {
    fn ports(&self) -> Vec<Port> {
        vec![Port::new(self.link.clock).reads(&[self.mac_rx])]
    }

    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        let n = self.nic as usize;
        let mac = w.nics[n].mac_rx;
        if self.link.is_free(now) {
            if let Some(s) = w.q.front(mac) {
                if s.tail <= now {
                    let slot = w.pop(mac, now).expect("front exists");
                    self.process(now, slot.item, w);
                }
            }
        }
        w.cal.busy_until(0, self.link.busy_until());
        if let Some(s) = w.q.front(mac) {
            let t = self.link.free_from(s.tail);
            w.cal.wake_port(0, t);
        }
    }
}

impl NicRx {
    fn process(&mut self, now: Time, id: crate::world::PktId, w: &mut World) {
        let n = self.nic as usize;
        let nic = &w.nics[n];
        let p = &w.pkts[id];
        let route = if nic.fast_path {
            nic.route(p.dst)
        } else {
            None
        };
        let dest = route.unwrap_or(SLOW);
        let marked = nic.marked_class(dest, class_key(p.tos, p.src, p.dst, p.proto));
        let class = if nic.classify { marked } else { LO };
        let fifo = match route {
            Some(j) => nic.inq_pair(j as usize)[class],
            None => nic.slow_in[class],
        };
        let pair_empty = route.is_some_and(|j| {
            let [h, l] = nic.inq_pair(j as usize);
            w.q.is_fifo_empty(h) && w.q.is_fifo_empty(l)
        });
        let bytes = p.frame_bytes;
        let tr = self.link.send(now, bytes, now);
        let p = &mut w.pkts[id];
        p.class = class as u8;
        p.marked = marked as u8;
        if let Some(j) = route {
            p.fast = true;
            p.out_nic = j;
            // Header rewrite of the fast path: TTL − 1 (and checksum, MAC destination).
            if p.ttl <= 1 {
                w.drop_pkt(id, Place::Input(self.nic), "ttl_expired");
                return;
            }
            p.ttl -= 1;
        }
        if !w.q[fifo].has_room(bytes) {
            w.drop_pkt(id, Place::Input(self.nic), "input_fifo_full");
            return;
        }
        let t = tr.tail + self.latency;
        w.push(fifo, now, id, bytes, t, t);
        if let (Some(j), true) = (route, pair_empty) {
            // The request scheduler sees the new active output at once (not only when the
            // packet's last byte is in).
            w.nics[n].active[j as usize] = true;
            w.cal.touched(fifo);
        }
    }
}

/// Output processing of one NIC: the output scheduler and the MAC transmitter.
pub struct NicTx {
    /// Index of its NIC.
    pub nic: u8,
    /// Its output FIFOs: [slow path, fast path].
    pub outs: [nicsim_kernel::FifoId; 2],
    /// The MAC clock.
    pub clock: Clock,
    /// The MAC is sending until then (the gap after the last frame included).
    pub wire_free: Time,
}

impl Component<World> for NicTx {
    fn ports(&self) -> Vec<Port> {
        vec![Port::new(self.clock).reads(&self.outs)]
    }

    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        let (slow, fast) = (
            w.nics[self.nic as usize].out_slow,
            w.nics[self.nic as usize].out_fast,
        );
        if now >= self.wire_free {
            // Strict priority to the slow path, among whole packets.
            let ready = |f| w.q.front(f).is_some_and(|s| s.tail <= now);
            let pick = if ready(slow) {
                Some(slow)
            } else if ready(fast) {
                Some(fast)
            } else {
                None
            };
            if let Some(f) = pick {
                let slot = w.pop(f, now).expect("ready front");
                let bytes = slot.bytes as u64;
                self.wire_free = now + self.clock.cycles(wire_bytes(bytes as usize) as u64);
                let last_bit = now + self.clock.cycles(PREAMBLE_SFD_LEN as u64 + bytes);
                w.deliver(slot.item, self.nic, last_bit);
            }
        }
        w.cal.busy_until(0, self.wire_free);
        let next = [slow, fast]
            .iter()
            .filter_map(|&f| w.q.front(f).map(|s| s.tail))
            .min();
        if let Some(t) = next {
            w.cal.wake_port(0, t.max(self.wire_free));
        }
    }
}

/// Both classes, for iteration.
pub const CLASSES: [usize; 2] = [HI, LO];
