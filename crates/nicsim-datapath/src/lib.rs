//! nicsim-datapath: SmartNIC datapath models over the nicsim kernel.
//!
//! Traffic ([`traffic`]) → Pre-Processor and the architecture's components ([`stages`],
//! [`flexpipe`], [`mod@panic`]) → DMA engine → sink ([`measure`]) → summary ([`model`]). Data flows
//! one way; components share only the FIFOs and tables in [`world::World`].

#![warn(missing_docs)]

pub mod config;
pub mod egress_capture;
pub mod flexpipe;
pub mod measure;
pub mod model;
pub mod packet;
pub mod panic;
pub mod preproc;
pub mod stages;
pub mod summary;
pub mod traffic;
pub mod world;

pub use config::{Config, ConfigError};
pub use model::Datapath;
/// Brings `Config::from_toml`, `Config::from_json` and `Config::validate` into scope.
pub use nicsim_kernel::config::Validate;
pub use summary::Summary;
