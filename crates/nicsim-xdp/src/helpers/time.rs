//! Time, randomness and the CPU: `bpf_ktime_get_ns`, `_coarse_ns`, `_boot_ns`, `_tai_ns`,
//! `bpf_jiffies64`, `bpf_get_prandom_u32`, `bpf_get_smp_processor_id`, `bpf_get_numa_node_id`.
//! The interpreter gives a fixed time (`RunOptions::ktime_ns`, every clock the same; jiffies
//! at HZ = 250), the kernel's lfsr113 generator seeded by `RunOptions::prandom_seed`, CPU 0
//! and NUMA node 0; the symbolic executor fresh values (nothing the program does decides
//! them).

use crate::helpers::Helper;
use crate::interp::{
    prandom_u32_state, HELPER_GET_PRANDOM_U32, HELPER_GET_SMP_PROCESSOR_ID,
    HELPER_KTIME_GET_COARSE_NS, HELPER_KTIME_GET_NS,
};

/// The time, randomness and CPU helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_KTIME_GET_NS, "time").run(|m, _, _| Ok(m.opts.ktime_ns)),
    Helper::new(HELPER_GET_PRANDOM_U32, "time")
        .run(|m, _, _| Ok(prandom_u32_state(&mut m.rnd) as u64)),
    Helper::new(HELPER_GET_SMP_PROCESSOR_ID, "time").run(|_, _, _| Ok(0)),
    Helper::new(HELPER_KTIME_GET_COARSE_NS, "time").run(|m, _, _| Ok(m.opts.ktime_ns)),
    Helper::new(HELPER_GET_NUMA_NODE_ID, "time").run(|_, _, _| Ok(0)),
    Helper::new(HELPER_JIFFIES64, "time").run(|m, _, _| Ok(m.opts.ktime_ns / NS_PER_JIFFY)),
    Helper::new(HELPER_KTIME_GET_BOOT_NS, "time").run(|m, _, _| Ok(m.opts.ktime_ns)),
    Helper::new(HELPER_KTIME_GET_TAI_NS, "time").run(|m, _, _| Ok(m.opts.ktime_ns)),
];

/// `bpf_get_numa_node_id`, `bpf_jiffies64`, `bpf_ktime_get_boot_ns`, `bpf_ktime_get_tai_ns`.
pub(crate) const HELPER_GET_NUMA_NODE_ID: u32 = 42;
pub(crate) const HELPER_JIFFIES64: u32 = 118;
pub(crate) const HELPER_KTIME_GET_BOOT_NS: u32 = 125;
pub(crate) const HELPER_KTIME_GET_TAI_NS: u32 = 208;
/// The interpreter's jiffy: HZ = 250 (Debian's kernels' CONFIG_HZ).
const NS_PER_JIFFY: u64 = 4_000_000;
