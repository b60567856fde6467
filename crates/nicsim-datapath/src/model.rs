//! Builds a datapath (FlexPipe, StaticPipe or PANIC) from a [`Config`], runs it, and reports.
//!
//! `Datapath` is also the run-time handle behind the Python API: run to a time, rewrite a
//! flow's chain as an SDN controller would, run on.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use nicsim_kernel::config::Validate;
use nicsim_kernel::{Component, Engine, FifoSummary, Time, Timebase};
use serde_json::Value;

use crate::config::{Arch, Checked, Config};
use crate::measure::Sink;
use crate::packet::Chain;
use crate::preproc::MatchTable;
use crate::summary::{EngineSummary, Packets, PanicSummary, Recirculation, Summary, UnitUse};
use crate::traffic::{Funcs, Source};
use crate::world::World;

/// Per-offload facts the summary needs after the run.
pub struct OffloadInfo {
    /// The offload's name.
    pub name: String,
    /// Its number of units.
    pub units: u32,
}

/// A datapath built from a [`Config`], ready to run.
pub struct Datapath {
    /// The configuration it was built from.
    pub cfg: Config,
    /// The run's timebase (ticks per µs of all its clocks).
    pub tb: Timebase,
    /// The simulation engine, its components and the state they share.
    pub engine: Engine<World>,
    offloads: Vec<OffloadInfo>,
    /// Whether the last `run` left nothing more to simulate.
    pub finished: bool,
    /// The time the last `run` that stopped early was asked to reach (everything up to it has
    /// been simulated, whether or not anything happened at that instant).
    reached: Time,
}

/// Error building a run (bad capture, ...), already phrased for the user.
pub type BuildError = String;

impl Datapath {
    /// Validate `cfg` and build its datapath.
    pub fn new(cfg: Config) -> Result<Datapath, BuildError> {
        let tb = Timebase::for_clocks_mhz(&cfg.clocks_mhz());
        let Checked {
            headers,
            rules,
            chains,
            remaps,
            kinds,
            firewall,
            first_offload,
            qos,
        } = cfg.check().map_err(|e| e.to_string())?;
        let funcs: Option<Funcs> = cfg.functional.then(|| {
            let params = nicsim_offloads::OffloadParams {
                firewall,
                ..Default::default()
            };
            Arc::new(
                kinds
                    .iter()
                    .map(|&k| nicsim_offloads::build(k, &params))
                    .collect(),
            )
        });
        let source = Source::new(
            &cfg,
            &headers,
            tb,
            cfg.functional || cfg.measure.egress_pcap,
        )?;
        // The Pre-Processor's table: each flow's explicit match, else an exact match on its headers.
        let table = MatchTable {
            rules: rules.into_iter().zip(0..).collect(),
        };
        let mut remaps: Vec<(Time, u16, Chain)> = remaps
            .iter()
            .map(|&(at_us, flow, chain)| (tb.from_us(at_us), flow, chain))
            .collect();
        remaps.sort_by_key(|r| r.0);
        // Priority classes 0 to the largest flow priority (every run has class 0).
        let n_classes = cfg
            .flows
            .iter()
            .map(|f| f.priority as usize)
            .max()
            .unwrap_or(0)
            + 1;
        let mut world = World {
            pkts: Default::default(),
            q: Default::default(),
            table,
            chains,
            remaps: VecDeque::from(remaps),
            drops: BTreeMap::new(),
            classes: vec![Default::default(); n_classes],
            sink: Sink::new(
                cfg.measure.window,
                cfg.flows.iter().map(|f| f.priority).collect(),
                &tb,
            ),
            funcs,
            offered: 0,
            unit_busy_ticks: vec![0; cfg.offloads.len()],
            panic: Default::default(),
            cal: Default::default(),
            last_out: Time::ZERO,
        };
        let mut comps: Vec<Box<dyn Component<World>>> = Vec::new();
        let mut offloads = Vec::new();
        let priorities: Vec<u8> = cfg.flows.iter().map(|f| f.priority).collect();
        match cfg.arch {
            Arch::Flexpipe | Arch::Staticpipe => {
                crate::flexpipe::build(
                    &cfg,
                    &tb,
                    &mut world,
                    &mut comps,
                    &mut offloads,
                    source,
                    priorities,
                    qos.as_ref(),
                );
            }
            Arch::Panic => {
                crate::panic::build(
                    &cfg,
                    first_offload,
                    &tb,
                    &mut world,
                    &mut comps,
                    &mut offloads,
                    source,
                    priorities,
                );
            }
        }
        Ok(Datapath {
            engine: Engine::new(comps, world, cfg.mode),
            cfg,
            tb,
            offloads,
            finished: false,
            reached: Time::ZERO,
        })
    }

    /// Run until simulated time `until_us` (or to the end with `None`). Returns true when done.
    pub fn run(&mut self, until_us: Option<f64>) -> bool {
        let until = until_us.map_or(Time::MAX, |u| self.tb.from_us(u));
        self.finished = self.engine.run_until(until);
        if !self.finished {
            self.reached = self.reached.max(until);
        }
        self.finished
    }

    /// The SDN controller's update: packets parsed from now on get `chain`; packets in flight
    /// keep the metadata they have.
    pub fn remap(&mut self, flow: &str, chain: &[String]) -> Result<(), String> {
        let f = self
            .cfg
            .flows
            .iter()
            .position(|x| x.name == flow)
            .ok_or_else(|| format!("unknown flow '{flow}'"))?;
        let mut hops = Chain::default();
        for name in chain {
            let o = self.cfg.offload_index(name);
            hops.push(o.ok_or_else(|| format!("unknown offload '{name}'"))? as u8);
        }
        self.engine.world.chains[f] = hops;
        Ok(())
    }

    /// Simulated time so far: the last instant visited, or the time a run that stopped early
    /// was asked to reach, whichever is later.
    pub fn now_us(&self) -> f64 {
        self.tb.to_us(self.engine.now().max(self.reached))
    }
}

impl nicsim_kernel::RunTo for Datapath {
    fn now_us(&self) -> f64 {
        Datapath::now_us(self)
    }
    fn run_to(&mut self, until_us: Option<f64>) -> bool {
        self.run(until_us)
    }
    fn next_event_us(&self) -> Option<f64> {
        self.engine.next_wake().map(|t| self.tb.to_us(t))
    }
}

impl Datapath {
    /// Install a callback that sees every delivered packet.
    pub fn on_egress(&mut self, cb: crate::measure::EgressHook) {
        self.engine.world.sink.egress = Some(cb);
    }

    /// Write every packet delivered from now on to `path` (pcap), until
    /// [`Datapath::finish_egress_capture`].
    pub fn capture_egress(&mut self, path: &std::path::Path) -> Result<(), String> {
        let c = crate::egress_capture::EgressCapture::create(path, self.tb.ticks_per_us())?;
        self.engine.world.sink.capture = Some(Box::new(c));
        Ok(())
    }

    /// Close the egress capture (later packets are not written): its first error, if any.
    pub fn finish_egress_capture(&mut self) -> Result<(), String> {
        match self.engine.world.sink.capture.take() {
            Some(c) => c.finish(),
            None => Ok(()),
        }
    }

    /// Keep a record of every packet delivered from now on ([`Datapath::take_packet_log`]).
    pub fn log_packets(&mut self) {
        let sink = &mut self.engine.world.sink;
        sink.log.get_or_insert_with(Default::default);
    }

    /// The records kept since the last call (empty when logging is off).
    pub fn take_packet_log(&mut self) -> crate::measure::PacketLog {
        self.engine
            .world
            .sink
            .log
            .as_mut()
            .map(|l| l.take())
            .unwrap_or_default()
    }

    /// Ticks per µs of this run's time (to convert a [`crate::measure::PacketLog`]'s times).
    pub fn ticks_per_us(&self) -> u64 {
        self.tb.ticks_per_us()
    }

    /// The run's summary as JSON (see docs/summary-schema.md), keys sorted.
    pub fn summary(&mut self) -> Value {
        serde_json::to_value(self.report()).expect("a summary is plain data")
    }

    /// The run's summary.
    pub fn report(&mut self) -> Summary {
        let tb = self.tb;
        let now = self.engine.now();
        let stats = self.engine.stats();
        let w = &mut self.engine.world;
        let dropped: u64 = w.drops.values().sum();
        let delivered = w.sink.received;
        let offered = w.offered;
        let names: Vec<String> = self.cfg.flows.iter().map(|f| f.name.clone()).collect();
        let offload_names: Vec<String> = self.cfg.offloads.iter().map(|o| o.name.clone()).collect();
        // A finished run ends when its last packet left (not at whatever idle step came
        // last); a run still going, or one that ended with packets stuck, at the time reached.
        let in_flight = offered - delivered - dropped;
        let end = if self.finished && in_flight == 0 {
            w.last_out
        } else {
            now
        };
        let horizon = end.max(Time::from_ticks(1));
        let fifos =
            w.q.fifos
                .iter()
                .zip(&w.q.names)
                .map(|(f, name)| (name.clone(), FifoSummary::of(f, horizon, &tb)))
                .collect();
        let offloads = self
            .offloads
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let util = w.unit_busy_ticks[i] as f64 / (o.units as f64 * horizon.ticks() as f64);
                let units = UnitUse {
                    units: o.units,
                    utilisation: util,
                };
                (o.name.clone(), units)
            })
            .collect();
        let sink = &w.sink;
        Summary {
            arch: self.cfg.arch.as_str(),
            seed: self.cfg.seed,
            functional: self.cfg.functional,
            offered_gbps: self.cfg.traffic.rate_gbps,
            throughput_gbps: sink.throughput_gbps(&tb),
            sim_time_us: tb.to_us(end),
            finished: self.finished,
            deadlocked: self.finished && in_flight > 0,
            packets: Packets {
                offered,
                delivered,
                dropped: w.drops.clone(),
                dropped_total: dropped,
                in_flight,
            },
            latency_us: sink.latency(&tb),
            sojourn_us: sink.sojourn(&tb),
            classes: {
                let offered: Vec<u64> = w.classes.iter().map(|c| c.0).collect();
                let dropped: Vec<_> = w.classes.iter().map(|c| c.1.clone()).collect();
                sink.per_class(&tb, &offered, &dropped)
            },
            per_flow: sink.per_flow(&tb, &names, &offload_names),
            recirculation: Recirculation {
                packets_recirculated: sink.recirculated,
                fraction: if delivered > 0 {
                    sink.recirculated as f64 / delivered as f64
                } else {
                    0.0
                },
            },
            verify: sink.verify.clone(),
            fifos,
            offloads,
            engine: EngineSummary {
                instants: stats.instants,
                steps: stats.steps,
                wakes: stats.wakes,
                ticks_per_us: tb.ticks_per_us(),
            },
            panic: (self.cfg.arch == Arch::Panic).then(|| PanicSummary {
                variant: self.cfg.panic.variant.as_str(),
                detours: w.panic.detours,
                crossbar_ports: w.panic.crossbar_ports,
            }),
        }
    }
}
