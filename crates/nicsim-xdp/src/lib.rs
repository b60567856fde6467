//! nicsim-xdp: the XDP throughput analyzer (seed 004: Krude et al., "Determination of Throughput
//! Guarantees for Processor-based SmartNICs", CoNEXT 2021).
//!
//! Data flows one way: [`mod@load`] (ELF object → instructions, maps, source lines) → [`mod@cfg`]
//! (inlined, loop-free control-flow graph) → [`cost`] (per-edge cost vectors on a [`target`]
//! model, minimum packet size per edge) → [`paths`] (naive bound, then paths from slowest to
//! fastest, prefixes that their own constants refute left out: [`consts`]) → [`symex`] (each
//! path as an SMT query) → the guarantee. Beside that flow, [`interp`] runs a packet through
//! the same decoded instructions concretely (the kernel's instruction and helper semantics),
//! recording the instructions it executes as `path.insns` numbers them, so that an example
//! packet can be checked against the path reported for it, and [`kernel`] loads the program
//! into the running kernel and runs packets through it with `BPF_PROG_TEST_RUN`.

#![warn(missing_docs)]

pub mod absint;
pub mod analysis;
pub mod btf;
pub mod calibrate;
pub mod cfg;
pub mod consts;
pub mod core_reloc;
pub mod cost;
pub mod differential;
pub mod gather;
pub mod helpers;
pub mod insn;
pub mod interp;
pub mod kconfig;
pub mod kernel;
pub mod link;
pub mod load;
pub mod paths;
pub mod profile;
pub mod ssp;
pub mod summary;
pub mod symex;
pub mod target;
#[cfg(test)]
mod testasm;
pub mod wellformed;

pub use analysis::{Analysis, Options, XdpError};
pub use load::{load, load_full, load_with, LoadError, MapDef, Program, TailSpec};
pub use target::Target;
