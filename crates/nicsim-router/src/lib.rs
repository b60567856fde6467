//! nicsim-router: a PC software router with FPGA NICs (seed 002, SPEC §5: Bianco et al.,
//! "Boosting the performance of PC-based software routers with FPGA-enhanced network interface
//! cards").
//!
//! Testers ([`traffic`]) send Gigabit Ethernet frames to FPGA NICs ([`nic`]) that route them
//! with ternary masks and classify them into two classes. A miss takes the *slow path*: over
//! the shared PCI/PCI-X bus ([`pci`]) into RAM, through the Linux IP stack under NAPI
//! ([`cpu`]), and back over the bus to the output NIC. A hit takes the *fast path*: straight
//! from the input NIC to the output NIC in one bus crossing, scheduled by the distributed
//! REQ/RES/burst protocol so that output FIFOs never overflow and drops happen only at the
//! input NICs. [`measure`] is the testers' view; [`model`] builds, runs and summarises.
//! Everything runs on `nicsim-kernel` (clocks, FIFOs, the event-skipping run loop).

#![warn(missing_docs)]

pub mod config;
pub mod cpu;
pub mod measure;
pub mod model;
pub mod nic;
pub mod pci;
pub mod summary;
pub mod ternary;
pub mod traffic;
pub mod world;

pub use config::{Config, ConfigError};
pub use model::Router;
/// Brings `Config::from_toml`, `Config::from_json` and `Config::validate` into scope.
pub use nicsim_kernel::config::Validate;
