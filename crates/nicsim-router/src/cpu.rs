//! The PC's CPU running the Linux IP stack under NAPI: the slow path.
//!
//! The driver polls the NICs' reception rings in RAM (no interrupts while there is work):
//! devices take turns round robin, each handing over up to `napi_weight` packets per turn, and
//! within a device the FPGA NIC's driver serves its high-priority ring before its low one
//! (the paper's strict-priority software scheduler). Forwarding a packet costs
//! `forward_cycles` CPU cycles — the one calibrated constant that makes the slow path saturate
//! near 600 kpkt/s (docs/router.md). A forwarded packet is routed by the Linux routing table
//! (each NIC's subnet), its TTL decremented, and put in the output NIC's transmit ring; a full
//! ring drops it.

use nicsim_kernel::{Clock, Component, FifoId, Port, Server, Time};

use crate::world::{PktId, Place, World, HI, LO};

/// The CPU forwarding slow-path packets from the reception rings to the transmit rings.
pub struct Cpu {
    /// The CPU clock.
    pub clock: Clock,
    /// CPU cycles to forward one packet.
    pub forward_cycles: u64,
    /// Packets a device may hand over per NAPI poll.
    pub napi_weight: u32,
    /// Rings it reads (for the calendar).
    pub reads: Vec<FifoId>,
    /// Rings it writes (for the calendar).
    pub writes: Vec<FifoId>,
    /// The packet the IP stack is forwarding, and until when.
    server: Server<PktId>,
    /// NAPI: the device being polled and what is left of its quota.
    dev: usize,
    quota: u32,
}

impl Cpu {
    /// A CPU that starts idle, polling device 0.
    pub fn new(
        clock: Clock,
        forward_cycles: u64,
        napi_weight: u32,
        reads: Vec<FifoId>,
        writes: Vec<FifoId>,
    ) -> Cpu {
        Cpu {
            clock,
            forward_cycles,
            napi_weight,
            reads,
            writes,
            server: Server::default(),
            dev: 0,
            quota: napi_weight,
        }
    }

    fn has_work(w: &World, dev: usize, now: Time) -> bool {
        let r = w.nics[dev].rx_ring;
        w.q.ready_front(r[HI], now).is_some() || w.q.ready_front(r[LO], now).is_some()
    }

    /// The next packet by NAPI order, taken from its ring.
    fn next(&mut self, now: Time, w: &mut World) -> Option<PktId> {
        let n = w.nics.len();
        if self.quota == 0 || !Cpu::has_work(w, self.dev, now) {
            let d = (1..=n)
                .map(|k| (self.dev + k) % n)
                .find(|&d| Cpu::has_work(w, d, now))?;
            self.dev = d;
            self.quota = self.napi_weight;
        }
        self.quota -= 1;
        let r = w.nics[self.dev].rx_ring;
        let ring = if w.q.ready_front(r[HI], now).is_some() {
            r[HI]
        } else {
            r[LO]
        };
        w.pop(ring, now).map(|s| s.item)
    }

    /// The IP stack is done with packet `id`: route it and queue it for transmission.
    fn finish(&mut self, id: PktId, now: Time, w: &mut World) {
        let dst = w.pkts[id].dst;
        let Some(o) = w.subnets.iter().position(|s| s.matches(dst)) else {
            w.drop_pkt(id, Place::Cpu, "no_route");
            return;
        };
        let p = &mut w.pkts[id];
        if p.ttl <= 1 {
            w.drop_pkt(id, Place::Cpu, "ttl_expired");
            return;
        }
        p.ttl -= 1;
        p.out_nic = o as u8;
        let ring = w.nics[o].tx_ring;
        if w.q[ring].has_room(1) {
            w.push(ring, now, id, 1, now, now);
        } else {
            w.drop_pkt(id, Place::Cpu, "tx_ring_full");
        }
    }
}

impl Component<World> for Cpu {
    fn ports(&self) -> Vec<Port> {
        vec![Port::new(self.clock)
            .reads(&self.reads)
            .writes(&self.writes)]
    }

    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        if self.server.is_free(now) {
            if let Some(id) = self.server.finish() {
                self.finish(id, now, w);
            }
            if let Some(id) = self.next(now, w) {
                let t = self.clock.cycles(self.forward_cycles);
                self.server.start(id, now, t);
                w.cpu_busy_ticks += t;
            }
        }
        if let Some(t) = self.server.ends() {
            w.cal.wake_port(0, t);
            return;
        }
        // Idle: a ring whose front lands later (an empty ring wakes the CPU itself on a push).
        let next = w
            .nics
            .iter()
            .flat_map(|n| n.rx_ring)
            .filter_map(|r| w.q.front(r).map(|s| s.head))
            .filter(|&h| h > now)
            .min();
        if let Some(t) = next {
            w.cal.wake_port(0, t);
        }
    }
}
