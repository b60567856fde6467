//! Time, randomness and the CPU: `bpf_ktime_get_ns`, `_coarse_ns`, `_boot_ns`, `_tai_ns`,
//! `bpf_jiffies64`, `bpf_get_prandom_u32`, `bpf_get_smp_processor_id`, `bpf_get_numa_node_id`.
//! The interpreter gives a fixed time (`RunOptions::ktime_ns`, every clock the same; jiffies
//! at HZ = 250), the kernel's lfsr113 generator seeded by `RunOptions::prandom_seed`, CPU 0
//! and NUMA node 0; the symbolic executor fresh values (nothing the program does decides
//! them), 32 bits wide where the kernel's helper returns a `u32` (`bpf_get_prandom_u32`, the
//! CPU and the NUMA node). Each such value is an environment result of the path
//! (`symex::EnvResult`): the model gives it with the example, and the interpreter replays it
//! (`RunOptions::replay`), so that an example whose path depends on the time (an entry's age
//! against a timeout) or on a random number (sampling) takes its path in the interpreter too.

use crate::helpers::Helper;
use crate::interp::{
    prandom_u32_state, Fault, Machine, HELPER_GET_PRANDOM_U32, HELPER_GET_SMP_PROCESSOR_ID,
    HELPER_KTIME_GET_COARSE_NS, HELPER_KTIME_GET_NS,
};
use crate::symex::{EnvResult, Sym, V};
use std::fmt::Write as _;

/// The time, randomness and CPU helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_KTIME_GET_NS, "time")
        .run(clock)
        .sym(env64),
    Helper::new(HELPER_GET_PRANDOM_U32, "time")
        .run(|m, _, id| match m.replayed(id) {
            Some(v) => Ok(v),
            None => Ok(prandom_u32_state(&mut m.rnd) as u64),
        })
        .sym(|s, id, _| env32(s, id, None)),
    Helper::new(HELPER_GET_SMP_PROCESSOR_ID, "time")
        .run(|m, _, id| Ok(m.replayed(id).unwrap_or(0)))
        .sym(|s, id, _| env32(s, id, Some(MAX_CPUS))),
    Helper::new(HELPER_KTIME_GET_COARSE_NS, "time")
        .run(clock)
        .sym(env64),
    Helper::new(HELPER_GET_NUMA_NODE_ID, "time")
        .run(|m, _, id| Ok(m.replayed(id).unwrap_or(0)))
        .sym(|s, id, _| env32(s, id, Some(MAX_NUMA_NODES))),
    Helper::new(HELPER_JIFFIES64, "time")
        .run(|m, _, id| Ok(m.replayed(id).unwrap_or(m.opts.ktime_ns / NS_PER_JIFFY)))
        .sym(env64),
    Helper::new(HELPER_KTIME_GET_BOOT_NS, "time")
        .run(clock)
        .sym(env64),
    Helper::new(HELPER_KTIME_GET_TAI_NS, "time")
        .run(clock)
        .sym(env64),
];

/// A clock's reading in the interpreter: the example's time when it is replayed, else the
/// run's fixed one.
fn clock(m: &mut Machine<'_>, _: u32, id: u32) -> Result<u64, Fault> {
    Ok(m.replayed(id).unwrap_or(m.opts.ktime_ns))
}

/// A 64-bit value the environment gives (a clock): fresh, and an environment result.
fn env64(s: &mut Sym<'_>, helper: u32, _: [V; 4]) -> V {
    let term = s.fresh("(_ BitVec 64)", "env");
    s.env.push(EnvResult {
        helper,
        term: term.clone(),
    });
    V::S(term)
}

/// The most CPUs a Linux kernel has: `CONFIG_NR_CPUS` is at most 8,192 (x86's `MAXSMP`; arm64
/// 4,096), and `smp_processor_id()` is below it.
const MAX_CPUS: u32 = 8192;
/// The most NUMA nodes: `MAX_NUMNODES` is `1 << CONFIG_NODES_SHIFT`, at most 2^10 (x86).
const MAX_NUMA_NODES: u32 = 1024;

/// A `u32` the environment gives (a random number, the CPU, the NUMA node), zero-extended as
/// the helper's return value is, and below `below` when given: fresh, and an environment result.
fn env32(s: &mut Sym<'_>, helper: u32, below: Option<u32>) -> V {
    let low = s.fresh("(_ BitVec 32)", "env");
    if let Some(n) = below {
        let _ = writeln!(s.out, "(assert (bvult {low} (_ bv{n} 32)))");
    }
    let term = s.def("(_ BitVec 64)", &format!("((_ zero_extend 32) {low})"));
    s.env.push(EnvResult {
        helper,
        term: term.clone(),
    });
    V::S(term)
}

/// `bpf_get_numa_node_id`, `bpf_jiffies64`, `bpf_ktime_get_boot_ns`, `bpf_ktime_get_tai_ns`.
pub(crate) const HELPER_GET_NUMA_NODE_ID: u32 = 42;
pub(crate) const HELPER_JIFFIES64: u32 = 118;
pub(crate) const HELPER_KTIME_GET_BOOT_NS: u32 = 125;
pub(crate) const HELPER_KTIME_GET_TAI_NS: u32 = 208;
/// The interpreter's jiffy: HZ = 250 (Debian's kernels' CONFIG_HZ).
const NS_PER_JIFFY: u64 = 4_000_000;
