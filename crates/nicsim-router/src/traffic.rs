//! A router tester's port: it sends frames to one NIC over Gigabit Ethernet at an offered
//! rate (Mbit/s of wire bits), with constant or Poisson spacing, and flows (each with its
//! destination, ToS, TTL, protocol and frame size) that share the port by weight: interleaved
//! as a tester's streams (smooth weighted round robin: the frames of a flow with weight share
//! `s` are spread evenly, one every `1/s` frames) or drawn at random. The wire carries one byte per
//! cycle of the 125 MHz MAC clock and every frame occupies preamble + SFD + frame + gap
//! (`nicsim_packet::ethernet::wire_bytes`), so 64-byte frames leave at most every 672 ns:
//! 1.488 Mpkt/s. A frame reaches the NIC's MAC buffer when its last byte has arrived.

use nicsim_kernel::{Component, Port, Time, Timebase};
use nicsim_packet::ethernet::{wire_bytes, PREAMBLE_SFD_LEN};
use rand::distributions::{Distribution, WeightedIndex};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::Exp;

use crate::config::{Arrivals, Config};
use crate::ternary::class_key;
use crate::world::{Pkt, Place, World, NO_NIC, SLOW};

/// How a port's flows share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mix {
    /// Smooth weighted round robin (deterministic; the default).
    #[default]
    Interleaved,
    /// Each frame's flow drawn by weight.
    Random,
}

struct Flow {
    src: u32,
    dst: u32,
    tos: u8,
    ttl: u8,
    proto: u8,
    frame_bytes: u32,
}

/// A tester port: sends one `traffic` entry's frames to its NIC.
pub struct Generator {
    nic: u8,
    clock: nicsim_kernel::Clock,
    flows: Vec<Flow>,
    pick: Option<WeightedIndex<f64>>,
    mix: Mix,
    weights: Vec<f64>,
    weight_sum: f64,
    /// Smooth weighted round robin: each flow's credit.
    credit: Vec<f64>,
    rng: ChaCha8Rng,
    arrivals: Arrivals,
    /// µs per wire bit at the offered rate.
    us_per_bit: f64,
    /// The next frame's arrival (µs, unrounded) and its flow.
    next_us: f64,
    next_flow: usize,
    end_us: f64,
    tb: Timebase,
    wire_free: Time,
    seq: u64,
}

impl Generator {
    /// The tester for `cfg.traffic[idx]`, on NIC `nic`, whose flows have `addrs` (both from
    /// [`Config::check`](crate::Validate::check)).
    pub fn new(
        cfg: &Config,
        idx: usize,
        nic: u8,
        addrs: &[crate::config::FlowAddrs],
        tb: Timebase,
    ) -> Generator {
        let t = &cfg.traffic[idx];
        let flows: Vec<Flow> = t
            .flows
            .iter()
            .zip(addrs)
            .map(|(f, a)| Flow {
                src: a.src,
                dst: a.dst,
                tos: f.tos,
                ttl: f.ttl,
                proto: a.proto,
                frame_bytes: f.frame_bytes.unwrap_or(t.frame_bytes),
            })
            .collect();
        let pick = (flows.len() > 1).then(|| {
            WeightedIndex::new(t.flows.iter().map(|f| f.weight)).expect("validated weights")
        });
        let mut g = Generator {
            nic,
            clock: tb.clock(cfg.nic.mac_clock_mhz),
            flows,
            pick,
            mix: t.mix,
            weights: t.flows.iter().map(|f| f.weight).collect(),
            weight_sum: t.flows.iter().map(|f| f.weight).sum(),
            credit: vec![0.0; t.flows.len()],
            rng: ChaCha8Rng::seed_from_u64(
                cfg.seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(idx as u64 + 1)),
            ),
            arrivals: t.arrivals,
            us_per_bit: 1.0 / t.rate_mbps,
            next_us: 0.0,
            next_flow: 0,
            end_us: cfg.run.duration_us,
            tb,
            wire_free: Time::ZERO,
            seq: (idx as u64) << 48,
        };
        g.next_flow = g.choose();
        g
    }

    fn choose(&mut self) -> usize {
        match (&self.pick, self.mix) {
            (None, _) => 0,
            (Some(w), Mix::Random) => w.sample(&mut self.rng),
            (Some(_), Mix::Interleaved) => {
                // Every flow earns its weight; the richest (the first on a tie) sends and
                // pays the total.
                for (c, w) in self.credit.iter_mut().zip(&self.weights) {
                    *c += w;
                }
                let best = (0..self.credit.len()).fold(0, |b, i| {
                    if self.credit[i] > self.credit[b] {
                        i
                    } else {
                        b
                    }
                });
                self.credit[best] -= self.weight_sum;
                best
            }
        }
    }

    /// Advance to the next frame: its spacing is its wire bits at the offered rate (constant),
    /// or exponential with that mean (Poisson).
    fn advance(&mut self) {
        let bits = wire_bytes(self.flows[self.next_flow].frame_bytes as usize) as f64 * 8.0;
        let gap = bits * self.us_per_bit;
        self.next_us += match self.arrivals {
            Arrivals::Constant => gap,
            Arrivals::Poisson => Exp::new(1.0 / gap)
                .expect("positive rate")
                .sample(&mut self.rng),
        };
        self.next_flow = self.choose();
    }

    fn done(&self) -> bool {
        self.next_us >= self.end_us
    }
}

impl Component<World> for Generator {
    fn ports(&self) -> Vec<Port> {
        // Writes the NIC's MAC buffer; the resource id is fixed when the world is built.
        vec![Port::new(self.clock)]
    }

    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        if self.done() {
            return;
        }
        let arrival = self.tb.from_us(self.next_us);
        if arrival <= now && now >= self.wire_free {
            let f = &self.flows[self.next_flow];
            let nic = &w.nics[self.nic as usize];
            // The tester's class: what the input NIC's masks make of these headers.
            let dest = nic.route(f.dst).unwrap_or(SLOW);
            let marked = nic.marked_class(dest, class_key(f.tos, f.src, f.dst, f.proto)) as u8;
            let p = Pkt {
                seq: self.seq,
                frame_bytes: f.frame_bytes,
                src: f.src,
                dst: f.dst,
                tos: f.tos,
                ttl: f.ttl,
                proto: f.proto,
                in_nic: self.nic,
                out_nic: NO_NIC,
                class: marked,
                marked,
                fast: false,
                granted: false,
                bus_bytes: 0,
                t_sent: now,
            };
            self.seq += 1;
            let bytes = p.frame_bytes;
            let last_byte = now + self.clock.cycles((PREAMBLE_SFD_LEN as u32 + bytes) as u64);
            self.wire_free = now + self.clock.cycles(wire_bytes(bytes as usize) as u64);
            w.sink.offer(self.nic, &p);
            let id = w.pkts.alloc(p);
            let mac = w.nics[self.nic as usize].mac_rx;
            // The MAC cannot hold the wire back: no room is a drop.
            if w.q[mac].has_room(bytes) {
                w.push(mac, now, id, bytes, last_byte, last_byte);
            } else {
                w.drop_pkt(id, Place::MacRx(self.nic), "mac_rx_overflow");
            }
            self.advance();
        }
        if !self.done() {
            let t = self.tb.from_us(self.next_us).max(self.wire_free).max(now);
            w.cal.wake_port(0, t);
        }
    }
}
