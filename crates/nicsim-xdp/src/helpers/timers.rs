//! Timers: `bpf_timer_init`, `bpf_timer_set_callback`, `bpf_timer_start`, `bpf_timer_cancel`
//! (kernel/bpf/helpers.c). A `struct bpf_timer` lives in a map value, opaque to the program
//! (the verifier refuses loads and stores of it), and its callback runs later, in a softirq,
//! not on the packet's path: the guarantee covers the packet's program only (docs/xdp.md,
//! "Timers"). Results: `init` -EINVAL for a clock other than REALTIME, MONOTONIC and BOOTTIME,
//! -EBUSY when the timer was initialised already, else 0; `set_callback` -EINVAL before
//! `init`, else 0; `start` -EINVAL before `init` or `set_callback` or for flags beyond
//! `BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN` (Linux 6.1 refuses any flag), else 0; `cancel`
//! -EINVAL before `init`, else 1 when the timer was armed (it is disarmed) and 0 when not. The
//! interpreter keeps that state in the timer's bytes (the first byte set once initialised, the
//! second once a callback is set, the third while armed: the kernel keeps a pointer there, so
//! the state lives as long as the map's entry). The symbolic executor takes the results as
//! fresh values (the state is the kernel's, and may have been set by another packet) and lets
//! the calls change nothing the program can read.

use crate::helpers::Helper;

/// `bpf_timer_init`, `_set_callback`, `_start`, `_cancel`.
pub(crate) const HELPER_TIMER_INIT: u32 = 169;
pub(crate) const HELPER_TIMER_SET_CALLBACK: u32 = 170;
pub(crate) const HELPER_TIMER_START: u32 = 171;
pub(crate) const HELPER_TIMER_CANCEL: u32 = 172;
/// EBUSY: `bpf_timer_init` on a timer initialised already.
const EBUSY: i64 = 16;
/// CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME.
const CLOCKS: [u64; 3] = [0, 1, 7];
/// BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN.
const START_FLAGS: u64 = 3;

/// The timer helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_TIMER_INIT, "timers").run(|m, pc, id| m.timer(pc, id)),
    Helper::new(HELPER_TIMER_SET_CALLBACK, "timers").run(|m, pc, id| m.timer(pc, id)),
    Helper::new(HELPER_TIMER_START, "timers").run(|m, pc, id| m.timer(pc, id)),
    Helper::new(HELPER_TIMER_CANCEL, "timers").run(|m, pc, id| m.timer(pc, id)),
];

/// The interpreter's side.
mod run {
    use super::*;
    use crate::insn::Size;
    use crate::interp::{Access, Fault, Machine, Region, EINVAL};

    impl Machine<'_> {
        /// One timer helper on the timer r1 points to (in a map value).
        pub(crate) fn timer(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let t = self.regs[1];
            if !matches!(self.region_of(t), (Region::Value { .. }, _)) {
                return Err(self.helper_fault(pc, id, "r1 is not a timer in a map value"));
            }
            let byte = |m: &Self, i: u64| m.load(pc, t + i, Size::B, Access::HelperRead);
            let set = |m: &mut Self, i: u64, v: u64| m.store(pc, t + i, Size::B, v, Access::Store);
            let (init, cb, armed) = (byte(self, 0)?, byte(self, 1)?, byte(self, 2)?);
            let err = |e: i64| (-e) as u64;
            Ok(match id {
                HELPER_TIMER_INIT => {
                    if !CLOCKS.contains(&self.regs[3]) {
                        err(EINVAL)
                    } else if init != 0 {
                        err(EBUSY)
                    } else {
                        set(self, 0, 1)?;
                        0
                    }
                }
                HELPER_TIMER_SET_CALLBACK => {
                    if init == 0 {
                        err(EINVAL)
                    } else {
                        set(self, 1, 1)?;
                        0
                    }
                }
                HELPER_TIMER_START => {
                    if self.regs[3] & !START_FLAGS != 0 || init == 0 || cb == 0 {
                        err(EINVAL)
                    } else {
                        set(self, 2, 1)?;
                        0
                    }
                }
                _ => {
                    if init == 0 {
                        err(EINVAL)
                    } else {
                        set(self, 2, 0)?;
                        armed.min(1)
                    }
                }
            })
        }
    }
}
