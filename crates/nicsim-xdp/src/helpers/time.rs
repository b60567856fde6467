//! Time, randomness and the CPU: `bpf_ktime_get_ns`, `_coarse_ns`, `bpf_get_prandom_u32`,
//! `bpf_get_smp_processor_id`. The interpreter gives a fixed time (`RunOptions::ktime_ns`),
//! the kernel's lfsr113 generator seeded by `RunOptions::prandom_seed`, and CPU 0; the
//! symbolic executor fresh values.

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
];
