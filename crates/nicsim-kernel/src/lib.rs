//! nicsim-kernel: the simulation kernel shared by every nicsim model.
//!
//! - [`time`]: integer time in ticks of one common base, so that cycle `n` of any clock
//!   lies exactly at `n / f` with no drift between clock domains.
//! - [`link`]: a stream of `width_bits` that moves one beat per cycle of its sender's clock,
//!   packets are never interleaved, and a transfer starts only when the receiver has room
//!   (valid/ready backpressure at packet granularity, cut-through at beat granularity).
//! - [`fifo`]: FIFOs with byte capacities that keep their own occupancy statistics.
//! - [`sim`]: the run loop. Components are cycle-step logic that also report when they next
//!   have something to do; the loop can step every clock edge (for tests) or skip idle time
//!   (for speed), and both must give identical results.
//! - [`wakes`]: the earliest of a fixed set of wake-up times, kept up to date per member.

pub mod fifo;
pub mod link;
pub mod sim;
pub mod time;
pub mod wakes;

pub use fifo::{Fifo, FifoStats, Slot};
pub use link::{Link, Transfer};
pub use sim::{Changes, Component, Engine, Mode, RunStats};
pub use time::{Clock, Time, Timebase};
pub use wakes::Wakes;
