//! Events for user space: `bpf_perf_event_output` (`bpf_xdp_event_output`) and the ring
//! buffer's `output`, `reserve`, `submit` and `discard`, and the locks of a map value
//! (`bpf_spin_lock`/`_unlock`), for the interpreter (as under `BPF_PROG_TEST_RUN`: no perf event
//! open, the buffer with room) and for the symbolic executor (whether a reader is there or the
//! buffer is full is not the program's: fresh results).

use crate::helpers::Helper;
use crate::interp::{
    HELPER_PERF_EVENT_OUTPUT, HELPER_RINGBUF_DISCARD, HELPER_RINGBUF_OUTPUT,
    HELPER_RINGBUF_RESERVE, HELPER_RINGBUF_SUBMIT, HELPER_SPIN_LOCK, HELPER_SPIN_UNLOCK,
};
use crate::symex::{bv64, V};

/// The event and lock helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_PERF_EVENT_OUTPUT, "events").run(|m, pc, id| m.perf_event_output(pc, id)),
    Helper::new(HELPER_RINGBUF_OUTPUT, "events").run(|m, pc, id| m.ringbuf_output(pc, id)),
    Helper::new(HELPER_RINGBUF_RESERVE, "events")
        .run(|m, pc, id| m.ringbuf_reserve(pc, id))
        .sym(|s, _, _| s.ringbuf_reserve()),
    Helper::new(HELPER_RINGBUF_SUBMIT, "events")
        .run(|m, pc, id| m.ringbuf_release(pc, id))
        .sym(|_, _, _| V::S(bv64(0))),
    Helper::new(HELPER_RINGBUF_DISCARD, "events")
        .run(|m, pc, id| m.ringbuf_release(pc, id))
        .sym(|_, _, _| V::S(bv64(0))),
    // Locks only order CPUs: one run alone sees no effect on values; both return 0.
    Helper::new(HELPER_SPIN_LOCK, "events")
        .run(|m, pc, id| m.spin_lock(pc, id))
        .sym(|_, _, _| V::S(bv64(0))),
    Helper::new(HELPER_SPIN_UNLOCK, "events")
        .run(|m, pc, id| m.spin_lock(pc, id))
        .sym(|_, _, _| V::S(bv64(0))),
    // bpf_ringbuf_query(map, flags): the buffer's state, the kernel's.
    Helper::new(134, "events"),
    Helper::new(209, "events").writes().refuse(
        "bpf_user_ringbuf_drain calls its callback once per sample user space queued, which \
         the graph does not unroll (its cost grows with what user space sends)",
    ),
];

/// The interpreter's side.
mod run {

    use crate::interp::*;

    impl Machine<'_> {
        pub(crate) fn perf_event_output(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let err = |e: i64| (-e) as u64;

            // bpf_xdp_event_output(ctx, map, flags, data, size): unknown flags give
            // -EINVAL; otherwise -ENOENT: the array's entries are perf events user space
            // opens, and none is open here (as under BPF_PROG_TEST_RUN without a reader).
            self.ctx_arg(pc, id)?;
            let m = self.map_arg(pc, id, 2)?;
            if self.maps.maps[m].def.map_type != MAP_PERF_EVENT_ARRAY {
                return Err(self.unmodelled_map(pc, id, m));
            }
            let size = self.regs[5] as usize;
            if size > 0 {
                self.read(pc, self.regs[4], size)?;
            }
            let flags = self.regs[3];
            Ok(if flags & !(BPF_F_INDEX_MASK | BPF_F_CTXLEN_MASK) != 0 {
                err(EINVAL)
            } else {
                err(ENOENT)
            })
        }

        pub(crate) fn ringbuf_output(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let err = |e: i64| (-e) as u64;

            // bpf_ringbuf_output(map, data, size, flags): unknown flags -EINVAL, a record
            // larger than the buffer -EAGAIN; else sent (this run's buffer has room).
            let m = self.map_arg(pc, id, 1)?;
            let cap = self.ringbuf_capacity(pc, id, m)?;
            let size = self.regs[3];
            if size > 0 {
                self.read(pc, self.regs[2], size as usize)?;
            }
            Ok(if self.regs[4] & !BPF_RB_WAKEUP_FLAGS != 0 {
                err(EINVAL)
            } else if size.saturating_add(BPF_RINGBUF_HDR_SZ) > cap {
                err(EAGAIN)
            } else {
                0
            })
        }

        pub(crate) fn ringbuf_reserve(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let _err = |e: i64| (-e) as u64;

            // bpf_ringbuf_reserve(map, size, flags): NULL for flags or a record that cannot
            // fit; else a record (zeroed here; the kernel leaves whatever the buffer held).
            let m = self.map_arg(pc, id, 1)?;
            let cap = self.ringbuf_capacity(pc, id, m)?;
            let size = self.regs[2];
            if self.regs[3] != 0 || size.saturating_add(BPF_RINGBUF_HDR_SZ) > cap {
                return Ok(0);
            }
            let n = self.records.len() as u32;
            self.records.push(Some(vec![0; size as usize]));
            Ok(self.ptr(Region::Record { n }, 0))
        }
        /// bpf_ringbuf_submit / _discard: the record the program holds is gone.
        pub(crate) fn ringbuf_release(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let _err = |e: i64| (-e) as u64;
            match self.region_of(self.regs[1]) {
                (Region::Record { n }, 0) if self.records[n as usize].is_some() => {
                    self.records[n as usize] = None;
                    Ok(0)
                }
                _ => Err(self.helper_fault(
                    pc,
                    id,
                    "r1 is not a ring buffer record the program holds",
                )),
            }
        }

        /// Locks only order CPUs: one program run alone sees no effect on values.
        pub(crate) fn spin_lock(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let _err = |e: i64| (-e) as u64;
            match self.region_of(self.regs[1]) {
                (Region::Value { .. }, _) => Ok(0),
                _ => Err(self.helper_fault(pc, id, "r1 is not in a map value")),
            }
        }

        /// A ring buffer's data size (its max_entries), for map `m` that must be one.
        pub(crate) fn ringbuf_capacity(&self, pc: u32, id: u32, m: usize) -> Result<u64, Fault> {
            let d = &self.maps.maps[m].def;
            if d.map_type != MAP_RINGBUF {
                return Err(self.unmodelled_map(pc, id, m));
            }
            Ok(d.max_entries as u64)
        }
    }
}

/// The symbolic executor's side.
mod sym {

    use crate::symex::*;

    impl Sym<'_> {
        /// bpf_ringbuf_reserve: a record, or NULL (the buffer may be full: unknown).
        pub(crate) fn ringbuf_reserve(&mut self) -> V {
            let null = self.fresh("Bool", "rbnull");
            V::P(Region::Record { null }, bv64(0), Some(0))
        }
    }
}
