//! nicsim-kernel: the simulation kernel shared by every nicsim model.
//!
//! - [`time`]: integer time in ticks of one common base, so that cycle `n` of any clock
//!   lies exactly at `n / f` with no drift between clock domains. A point in time is a
//!   [`Time`]; a duration is a plain count of ticks.
//! - [`link`]: a stream of `width_bits` that moves one beat per cycle of its sender's clock,
//!   packets are never interleaved, and a transfer starts only when the receiver has room
//!   (valid/ready backpressure at packet granularity, cut-through at beat granularity).
//! - [`fifo`]: FIFOs with byte capacities that keep their own occupancy statistics.
//! - [`sim`]: the run loop. Components are ports of cycle-step logic, woken by themselves, by
//!   FIFOs and by each other; the loop can step every clock edge (for tests) or jump from one
//!   wake-up to the next (for speed), and both must give identical results.
//! - [`wakes`]: the calendar of wake-ups: per instant of the clocks' common grid, a bitset of the
//!   ports due then.
//! - [`fifoset`]: a model's FIFOs wired to the calendar (pushes and pops wake the right ports).
//! - [`slab`]: items in flight, addressed by 4-byte ids.
//! - [`slices`]: a run in slices of simulated time, with a check (Ctrl-C) between them.
//! - [`stats`]: streaming latency statistics for a model's sink.
//! - [`config`]: the error a bad configuration produces, with its key path; the limits every
//!   model applies to clocks, latencies and buffers; the timebase check every model calls.

#![warn(missing_docs)]

pub mod config;
pub mod fifo;
pub mod fifoset;
pub mod link;
pub mod server;
pub mod sim;
pub mod slab;
pub mod slices;
pub mod stats;
pub mod time;
pub mod wakes;

pub use config::{check_timebase, ConfigError, Span};
pub use fifo::{Fifo, FifoStats, FifoSummary, LittlesLaw, Slot};
pub use fifoset::{FifoId, FifoSet};
pub use link::{Link, Transfer, Width};
pub use server::Server;
pub use sim::{Calendar, Component, Engine, HasCalendar, Mode, Port, RunStats};
pub use slab::{Slab, SlabId};
pub use slices::{run_in_slices, RunTo};
pub use stats::{LatStats, LatSummary, LatUs};
pub use time::{Clock, Time, TimeRangeError, Timebase, DRAIN_US, SPAN_FACTOR};
pub use wakes::Wakes;
