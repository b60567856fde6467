//! Builds the router (testers, NICs, bus, CPU) from a [`Config`], runs it, and reports.
//!
//! Components act in this order at an instant, consumers before producers, so that room
//! freed in a cycle is seen by its producer in the same cycle: the NICs' output schedulers
//! (MAC transmit), the bus, the CPU, the NICs' input processing, the testers.

use std::collections::BTreeMap;

use nicsim_kernel::{Component, Engine, FifoId, FifoSet, FifoSummary, Link, Slab, Time, Timebase};
use serde_json::Value;

use crate::config::{Checked, Config};
use crate::cpu::Cpu;
use crate::measure::Sink;
use crate::nic::{NicRx, NicTx};
use crate::pci::PciBus;
use crate::summary::{
    BusSummary, Bytes, Channels, ClassSummary, CpuSummary, Drop, EngineSummary, Packets, Summary,
    Utilisation,
};
use crate::traffic::Generator;
use crate::world::{Nic, PktId, Place, World, CLASS_NAMES, HI, LO};
use nicsim_kernel::config::Validate;

/// A built router, ready to run.
pub struct Router {
    /// The validated configuration it was built from.
    pub cfg: Config,
    /// The timebase of all its clocks.
    pub tb: Timebase,
    /// The run loop, with the components and their shared world.
    pub engine: Engine<World>,
    /// The run has ended (every packet delivered or dropped).
    pub finished: bool,
}

impl Router {
    /// Build a router; the configuration is validated first (it may have been changed since
    /// it was loaded), so a bad one is an error naming its key, never a panic.
    pub fn new(cfg: Config) -> Result<Router, crate::ConfigError> {
        let Checked {
            subnets,
            routes,
            classes,
            ports,
        } = cfg.check()?;
        let tb = Timebase::for_clocks_mhz(&cfg.clocks_mhz());
        let n = cfg.nics.len();
        let np = &cfg.nic;
        let mut q: FifoSet<PktId> = FifoSet::default();
        let mut nics = Vec::with_capacity(n);
        let per_nic = cfg.nics.iter().zip(routes).zip(classes);
        for (i, ((c, routes), classes)) in per_nic.enumerate() {
            let name = &c.name;
            let mac_rx = q.add(format!("{name}.mac_rx"), np.mac_rx_fifo_bytes as u64);
            let inq: Vec<Option<[FifoId; 2]>> = (0..n)
                .map(|j| {
                    (j != i && c.fast_path).then(|| {
                        let to = &cfg.nics[j].name;
                        [HI, LO].map(|k| {
                            q.add(
                                format!("{name}.in.{to}.{}", CLASS_NAMES[k]),
                                np.input_fifo_bytes as u64,
                            )
                        })
                    })
                })
                .collect();
            let slow_in = [HI, LO].map(|k| {
                q.add(
                    format!("{name}.in.slow.{}", CLASS_NAMES[k]),
                    np.input_fifo_bytes as u64,
                )
            });
            let out_fast = q.add(format!("{name}.out.fast"), np.output_fifo_bytes as u64);
            let out_slow = q.add(format!("{name}.out.slow"), np.output_fifo_bytes as u64);
            let d = &cfg.pc.driver;
            let rx_ring = [HI, LO].map(|k| {
                q.add(
                    format!("ram.{name}.rx_ring.{}", CLASS_NAMES[k]),
                    d.rx_ring_slots as u64,
                )
            });
            let tx_ring = q.add(format!("ram.{name}.tx_ring"), d.tx_ring_slots as u64);
            nics.push(Nic {
                name: name.clone(),
                fast_path: c.fast_path,
                classify: c.classify,
                routes,
                classes,
                mac_rx,
                inq,
                slow_in,
                out_fast,
                out_slow,
                rx_ring,
                tx_ring,
                active: vec![false; n],
                req_ptr: 0,
                awaiting_res: None,
                res_in: vec![None; n],
                burst_ptr: 0,
                burst: None,
                req_in: vec![None; n],
                res_ptr: 0,
                serving: None,
                chan_ptr: 0,
                last_msg_was_res: false,
                req_waits: vec![0; n],
                res_waits: vec![0; n],
                burst_waits: vec![0; n],
            });
        }
        let window = (
            tb.from_us(cfg.run.warmup_us),
            tb.from_us(cfg.run.duration_us),
        );
        let world = World {
            cal: Default::default(),
            pkts: Slab::default(),
            q,
            subnets,
            nics,
            drops: BTreeMap::new(),
            sink: Sink::new(n, window, &tb),
            proto: Default::default(),
            bus: Default::default(),
            cpu_busy_ticks: 0,
            last_out: Time::ZERO,
        };
        let mac_clock = tb.clock(np.mac_clock_mhz);
        let nic_clock = tb.clock(np.clock_mhz);
        let mut comps: Vec<Box<dyn Component<World>>> = Vec::new();
        for (i, nic) in world.nics.iter().enumerate() {
            comps.push(Box::new(NicTx {
                nic: i as u8,
                outs: [nic.out_slow, nic.out_fast],
                clock: mac_clock,
                wire_free: Time::ZERO,
            }));
        }
        let (mut bus_reads, mut bus_writes) = (Vec::new(), Vec::new());
        let (mut cpu_reads, mut cpu_writes) = (Vec::new(), Vec::new());
        for nic in &world.nics {
            bus_reads.extend(nic.inq.iter().flatten().flatten());
            bus_reads.extend(nic.slow_in);
            bus_reads.push(nic.tx_ring);
            bus_writes.extend([nic.out_fast, nic.out_slow]);
            bus_writes.extend(nic.rx_ring);
            cpu_reads.extend(nic.rx_ring);
            cpu_writes.push(nic.tx_ring);
        }
        let mem_clock = tb.clock(cfg.pc.memory.clock_mhz);
        let latency = tb.ticks_from_us(cfg.pc.memory.read_latency_ns as f64 / 1000.0);
        comps.push(Box::new(PciBus::new(
            &cfg,
            tb.clock(cfg.pc.bus.clock_mhz),
            mem_clock,
            latency,
            bus_reads,
            bus_writes,
        )));
        let c = &cfg.pc.cpu;
        comps.push(Box::new(Cpu::new(
            tb.clock(c.clock_mhz),
            c.forward_cycles as u64,
            c.napi_weight,
            cpu_reads,
            cpu_writes,
        )));
        for (i, nic) in world.nics.iter().enumerate() {
            comps.push(Box::new(NicRx {
                nic: i as u8,
                mac_rx: nic.mac_rx,
                link: Link::new(np.datapath_bits, nic_clock),
                latency: nic_clock.cycles(np.rx_latency_cycles as u64),
            }));
        }
        for (i, (nic, flows)) in ports.iter().enumerate() {
            comps.push(Box::new(Generator::new(&cfg, i, *nic, flows, tb)));
        }
        Ok(Router {
            engine: Engine::new(comps, world, cfg.mode),
            cfg,
            tb,
            finished: false,
        })
    }

    /// Parse, validate and build from TOML text.
    pub fn from_toml(text: &str) -> Result<Router, crate::ConfigError> {
        Router::new(Config::from_toml(text)?)
    }

    /// Run until simulated time `until_us` (or to the end with `None`). Returns true when done.
    pub fn run(&mut self, until_us: Option<f64>) -> bool {
        let until = until_us.map_or(Time::MAX, |u| self.tb.from_us(u));
        self.finished = self.engine.run_until(until);
        self.finished
    }

    /// Simulated time reached so far (µs).
    pub fn now_us(&self) -> f64 {
        self.tb.to_us(self.engine.now())
    }
}

impl nicsim_kernel::RunTo for Router {
    fn now_us(&self) -> f64 {
        Router::now_us(self)
    }
    fn run_to(&mut self, until_us: Option<f64>) -> bool {
        self.run(until_us)
    }
    fn next_event_us(&self) -> Option<f64> {
        self.engine.next_wake().map(|t| self.tb.to_us(t))
    }
}

impl Router {
    /// Packets offered, delivered, dropped and in flight (the conservation check).
    pub fn conservation(&self) -> (u64, u64, u64, u64) {
        let w = &self.engine.world;
        let offered: u64 = w.sink.offered_all.iter().map(|c| c.total_packets()).sum();
        let delivered: u64 = w.sink.forwarded_all.iter().map(|c| c.total_packets()).sum();
        let dropped: u64 = w.drops.values().map(|v| v.0).sum();
        (offered, delivered, dropped, w.pkts.live())
    }

    /// Bytes offered, delivered, dropped and in flight.
    pub fn byte_conservation(&self) -> (u64, u64, u64) {
        let w = &self.engine.world;
        let sum = |v: &[crate::measure::Count]| -> u64 {
            v.iter().map(|c| c.frame_bytes[0] + c.frame_bytes[1]).sum()
        };
        let dropped: u64 = w.drops.values().map(|v| v.1).sum();
        (
            sum(&w.sink.offered_all),
            sum(&w.sink.forwarded_all),
            dropped,
        )
    }

    /// The run's summary (docs/router.md describes every field).
    pub fn summary(&self) -> Value {
        serde_json::to_value(self.report()).expect("a summary is plain data")
    }

    /// The run's summary.
    pub fn report(&self) -> Summary {
        let tb = self.tb;
        let w = &self.engine.world;
        let names: Vec<String> = self.cfg.nics.iter().map(|n| n.name.clone()).collect();
        let (offered, delivered, dropped, in_flight) = self.conservation();
        let (ob, db, xb) = self.byte_conservation();
        let end = if self.finished && in_flight == 0 {
            w.last_out
        } else {
            self.engine.now()
        }
        .max(Time::from_ticks(1));
        let mut drops = Vec::new();
        let mut by_place: BTreeMap<String, u64> = BTreeMap::new();
        for (&(place, class, reason), &(p, b)) in &w.drops {
            let place = match place {
                Place::MacRx(i) => format!("{}.mac_rx", names[i as usize]),
                Place::Input(i) => format!("{}.input", names[i as usize]),
                Place::Cpu => "cpu".into(),
                Place::Output(i) => format!("{}.output", names[i as usize]),
            };
            *by_place.entry(place.clone()).or_default() += p;
            drops.push(Drop {
                place,
                class: CLASS_NAMES[class as usize & 1],
                reason,
                packets: p,
                frame_bytes: b,
            });
        }
        // Every FIFO in bytes; the rings in RAM count descriptors (packets).
        let fifos =
            w.q.fifos
                .iter()
                .zip(&w.q.names)
                .map(|(f, name)| {
                    let s = if name.starts_with("ram.") {
                        FifoSummary::of_ring(f, end, &tb)
                    } else {
                        FifoSummary::of(f, end, &tb)
                    };
                    (name.clone(), s)
                })
                .collect();
        // Whole run, per class (the traffic's marking): offered, delivered, dropped, loss.
        let classes = CLASS_NAMES
            .iter()
            .enumerate()
            .map(|(k, cn)| {
                let o: u64 = w.sink.offered_all.iter().map(|c| c.packets[k]).sum();
                let d: u64 = w.sink.forwarded_all.iter().map(|c| c.packets[k]).sum();
                let x: u64 = w
                    .drops
                    .iter()
                    .filter(|(key, _)| key.1 as usize == k)
                    .map(|(_, v)| v.0)
                    .sum();
                let loss = if o > 0 { x as f64 / o as f64 } else { 0.0 };
                let class = ClassSummary {
                    offered: o,
                    delivered: d,
                    dropped: x,
                    loss,
                };
                (cn.to_string(), class)
            })
            .collect();
        let b = &w.bus;
        let bus_clock = &self.cfg.pc.bus;
        let cpu = &self.cfg.pc.cpu;
        let secs = tb.to_us(end) / 1e6;
        let forwarded_kpps = if secs > 0.0 {
            let per_packet = tb.clock(cpu.clock_mhz).cycles(cpu.forward_cycles as u64);
            w.cpu_busy_ticks as f64 / per_packet as f64 / secs / 1e3
        } else {
            0.0
        };
        let stats = self.engine.stats();
        Summary {
            seed: self.cfg.seed,
            finished: self.finished,
            sim_time_us: tb.to_us(end),
            window_us: [self.cfg.run.warmup_us, self.cfg.run.duration_us],
            ports: w.sink.ports(&tb, &names, self.engine.now()),
            packets: Packets {
                offered,
                delivered,
                dropped,
                in_flight,
                conserved: offered == delivered + dropped + in_flight,
            },
            bytes: Bytes {
                offered: ob,
                delivered: db,
                dropped: xb,
                in_flight: ob - db - xb,
            },
            classes,
            drops,
            drops_by_place: by_place,
            bus: BusSummary {
                width_bits: bus_clock.width_bits,
                clock_mhz: bus_clock.clock_mhz,
                peak_gbps: bus_clock.width_bits as f64 * bus_clock.clock_mhz as f64 / 1000.0,
                utilisation: b.busy_ticks as f64 / end.ticks() as f64,
                transactions: b.transactions,
                data_cycles: b.data_cycles,
                overhead_cycles: b.overhead_cycles,
                cycles_by_channel: Channels {
                    slow_download: b.cycles_by_channel[0],
                    slow_upload: b.cycles_by_channel[1],
                    messages: b.cycles_by_channel[2],
                    bursts: b.cycles_by_channel[3],
                },
                wasted_bytes: b.wasted_bytes,
            },
            memory_bus: Utilisation {
                utilisation: b.memory_busy_ticks as f64 / end.ticks() as f64,
            },
            cpu: CpuSummary {
                utilisation: w.cpu_busy_ticks as f64 / end.ticks() as f64,
                forwarded_kpps,
            },
            protocol: w.proto.clone(),
            fifos,
            engine: EngineSummary {
                instants: stats.instants,
                steps: stats.steps,
                ticks_per_us: tb.ticks_per_us(),
            },
        }
    }
}
