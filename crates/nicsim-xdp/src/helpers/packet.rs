//! Packet helpers: `bpf_xdp_adjust_head`, `_tail` and `_meta` (the packet's bounds within the
//! frame, as Linux 6.1 checks them) and `bpf_xdp_load_bytes`/`_store_bytes` (copies between
//! the packet and a buffer, as `bpf_xdp_pointer` allows them for a linear packet) and
//! `bpf_xdp_get_buff_len` (the packet's length with its fragments: a linear packet has none,
//! so `data_end - data`), for the interpreter and for the symbolic executor.

use crate::absint::{HELPER_ADJUST_HEAD, HELPER_ADJUST_TAIL};
use crate::helpers::{Helper, WriteLen};
use crate::interp::{HELPER_ADJUST_META, HELPER_XDP_LOAD_BYTES, HELPER_XDP_STORE_BYTES};
use crate::symex::V;

/// The packet helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_ADJUST_HEAD, "packet")
        .moves()
        .run(|m, pc, id| m.adjust_head(pc, id))
        .sym(|s, _, [_, r2, _, _]| s.adjust_head(&r2)),
    Helper::new(HELPER_ADJUST_META, "packet")
        .writes()
        .moves()
        .run(|m, pc, id| m.adjust_meta(pc, id))
        .sym(|s, _, [_, r2, _, _]| s.adjust_meta(&r2)),
    Helper::new(HELPER_ADJUST_TAIL, "packet")
        .moves()
        .run(|m, pc, id| m.adjust_tail(pc, id))
        .sym(|s, _, [_, r2, _, _]| s.adjust_tail(&r2)),
    Helper::new(HELPER_XDP_LOAD_BYTES, "packet")
        .writes_only(&[(3, WriteLen::Arg(4))])
        .run(|m, pc, id| m.xdp_bytes(pc, id))
        .sym(|s, _, [_, r2, r3, r4]| s.xdp_bytes(false, &r2, &r3, &r4)),
    Helper::new(HELPER_XDP_STORE_BYTES, "packet")
        .run(|m, pc, id| m.xdp_bytes(pc, id))
        .sym(|s, _, [_, r2, r3, r4]| s.xdp_bytes(true, &r2, &r3, &r4)),
    Helper::new(HELPER_XDP_GET_BUFF_LEN, "packet")
        .run(|m, pc, id| {
            m.ctx_arg(pc, id)?;
            Ok((m.data_end - m.data) as u64)
        })
        .sym(|s, _, _| {
            let len = format!("(bvsub {} {})", s.end_off, s.data_off);
            V::S(s.def("(_ BitVec 64)", &len))
        }),
];

/// `bpf_xdp_get_buff_len(ctx)`.
pub(crate) const HELPER_XDP_GET_BUFF_LEN: u32 = 188;

/// The interpreter's side.
mod run {

    use crate::interp::*;

    impl Machine<'_> {
        /// The new data may not leave fewer than ETH_HLEN bytes nor reach into struct
        /// xdp_frame and the metadata at the headroom's start (symex.rs the same: 216 bytes
        /// of growth at most, less the metadata). The metadata moves along with data.
        pub(crate) fn adjust_head(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let err = |e: i64| (-e) as u64;

            self.ctx_arg(pc, id)?;
            let delta = self.regs[2] as u32 as i32 as i64;
            let metalen = (self.data - self.data_meta) as i64;
            let new = self.data as i64 + delta;
            let ok = new >= (XDP_FRAME_STRUCT_BYTES as i64 + metalen)
                && new <= self.data_end as i64 - ETH_HLEN_BYTES as i64;
            if ok {
                let new_meta = (self.data_meta as i64 + delta) as usize;
                self.frame.copy_within(self.data_meta..self.data, new_meta);
                self.data_meta = new_meta;
                self.data = new as usize;
            }
            self.packet_changed(pc, id);
            Ok(if ok { 0 } else { err(EINVAL) })
        }
        /// data_end may not pass the frame's end less the shared info, nor leave fewer than
        /// ETH_HLEN bytes (symex.rs the same). symex.rs reads the bytes a packet grows by
        /// from its unconstrained packet array where the kernel zeroes them.
        pub(crate) fn adjust_tail(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let err = |e: i64| (-e) as u64;

            self.ctx_arg(pc, id)?;
            let delta = self.regs[2] as u32 as i32 as i64;
            let new = self.data_end as i64 + delta;
            let hard_end = (FRAME_BYTES - SHARED_INFO_BYTES) as i64;
            let ok = new <= hard_end && new >= (self.data + ETH_HLEN_BYTES) as i64;
            if ok {
                if delta > 0 {
                    // The kernel clears the bytes the packet grows by.
                    self.frame[self.data_end..new as usize].fill(0);
                }
                self.data_end = new as usize;
            }
            self.packet_changed(pc, id);
            Ok(if ok { 0 } else { err(EINVAL) })
        }
        /// bpf_xdp_adjust_meta: data_meta stays between struct xdp_frame and data (-EINVAL), the
        /// metadata a multiple of 4 bytes, at most 32 (-EACCES).
        pub(crate) fn adjust_meta(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let err = |e: i64| (-e) as u64;

            self.ctx_arg(pc, id)?;
            let delta = self.regs[2] as u32 as i32 as i64;
            let meta = self.data_meta as i64 + delta;
            let r = if meta < XDP_FRAME_STRUCT_BYTES as i64 || meta > self.data as i64 {
                err(EINVAL)
            } else {
                let metalen = self.data as i64 - meta;
                if metalen % 4 != 0 || metalen > MAX_META_BYTES as i64 {
                    err(EACCES)
                } else {
                    self.data_meta = meta as usize;
                    0
                }
            };
            self.packet_changed(pc, id);
            Ok(r)
        }
        /// bpf_xdp_load_bytes(ctx, offset, buf, len) / _store_bytes: offset or len past
        /// 0xffff -EFAULT, past the packet's end -EINVAL (a linear packet: no fragments),
        /// else the bytes copied from the packet (at data + offset) to buf, or back.
        pub(crate) fn xdp_bytes(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let err = |e: i64| (-e) as u64;

            self.ctx_arg(pc, id)?;
            let (off, len) = (self.regs[2] as u32 as u64, self.regs[4] as u32 as u64);
            let access = if id == HELPER_XDP_LOAD_BYTES {
                Access::Store
            } else {
                Access::HelperRead
            };
            // The verifier checks the buffer for len bytes whatever the result.
            let buf = self.place(pc, self.regs[3], len as usize, access)?;
            if off > XDP_BYTES_MAX || len > XDP_BYTES_MAX {
                return Ok(err(EFAULT));
            }
            if off + len > (self.data_end - self.data) as u64 {
                return Ok(err(EINVAL));
            }
            let (at, n) = (self.data + off as usize, len as usize);
            if id == HELPER_XDP_LOAD_BYTES {
                let b = self.frame[at..at + n].to_vec();
                self.bytes_mut(buf, n).copy_from_slice(&b);
            } else {
                let b = self.bytes(buf, n).to_vec();
                self.frame[at..at + n].copy_from_slice(&b);
            }
            Ok(0)
        }
    }
}

/// The symbolic executor's side.
mod sym {

    use crate::insn::Size;
    use crate::interp::{EACCES, EFAULT, EINVAL, MAX_META_BYTES, XDP_BYTES_MAX};

    use crate::symex::*;

    impl Sym<'_> {
        pub(crate) fn adjust_head(&mut self, r2: &V) -> V {
            // bpf_xdp_adjust_head: data may move into the headroom but not into struct
            // xdp_frame and the metadata in front of it, and must leave ETH_HLEN bytes.
            let d = self.scalar(r2);
            let delta = self.def(
                "(_ BitVec 64)",
                &format!("((_ sign_extend 32) ((_ extract 31 0) {d}))"),
            );
            let new = self.def(
                "(_ BitVec 64)",
                &format!("(bvadd {} {delta})", self.data_off),
            );
            let no_meta = self.meta_off == self.data_off;
            let lo = if no_meta {
                bv64((-FRONT) as u64)
            } else {
                self.def(
                    "(_ BitVec 64)",
                    &format!(
                        "(bvadd {} (bvsub {} {}))",
                        bv64((-FRONT) as u64),
                        self.data_off,
                        self.meta_off
                    ),
                )
            };
            let ok = self.def(
                "Bool",
                &format!(
                    "(and (bvsge {new} {lo}) (bvsle (bvadd {new} {}) {}))",
                    bv64(ETH_HLEN),
                    self.end_off
                ),
            );
            let cur = self.data_off.clone();
            self.data_off = self.def("(_ BitVec 64)", &format!("(ite {ok} {new} {cur})"));
            // The metadata moves along.
            self.meta_off = if no_meta {
                self.data_off.clone()
            } else {
                let meta = self.meta_off.clone();
                self.def(
                    "(_ BitVec 64)",
                    &format!("(ite {ok} (bvadd {meta} {delta}) {meta})"),
                )
            };
            V::S(self.def(
                "(_ BitVec 64)",
                &format!("(ite {ok} {} {})", bv64(0), bv64((-EINVAL) as u64)),
            ))
        }

        pub(crate) fn adjust_tail(&mut self, r2: &V) -> V {
            // bpf_xdp_adjust_tail: data_end may not pass the frame's end (less the shared
            // info), fixed where the packet was received, and must leave ETH_HLEN bytes.
            // (The kernel zeroes the bytes a packet grows by; here they are the packet
            // array's, unconstrained.)
            let d = self.scalar(r2);
            let delta = self.def(
                "(_ BitVec 64)",
                &format!("((_ sign_extend 32) ((_ extract 31 0) {d}))"),
            );
            let new = self.def(
                "(_ BitVec 64)",
                &format!("(bvadd {} {delta})", self.end_off),
            );
            let ok = self.def(
                "Bool",
                &format!(
                    "(and (bvsge {new} (bvadd {} {})) (bvsle {new} {}))",
                    self.data_off,
                    bv64(ETH_HLEN),
                    bv64(HARD_END)
                ),
            );
            let cur = self.end_off.clone();
            self.end_off = self.def("(_ BitVec 64)", &format!("(ite {ok} {new} {cur})"));
            V::S(self.def(
                "(_ BitVec 64)",
                &format!("(ite {ok} {} {})", bv64(0), bv64((-EINVAL) as u64)),
            ))
        }

        pub(crate) fn adjust_meta(&mut self, r2: &V) -> V {
            // bpf_xdp_adjust_meta: data_meta stays between struct xdp_frame and data
            // (-EINVAL), the metadata a multiple of 4 bytes, at most 32 (-EACCES).
            let d = self.scalar(r2);
            let new = self.def(
                "(_ BitVec 64)",
                &format!(
                    "(bvadd {} ((_ sign_extend 32) ((_ extract 31 0) {d})))",
                    self.meta_off
                ),
            );
            let len = self.def("(_ BitVec 64)", &format!("(bvsub {} {new})", self.data_off));
            let r = format!(
                "(ite (or (bvslt {new} {}) (bvsgt {new} {})) {} \
                     (ite (or (not (= (bvand {len} {}) {})) (bvugt {len} {})) {} {}))",
                bv64((-FRONT) as u64),
                self.data_off,
                bv64((-EINVAL) as u64),
                bv64(3),
                bv64(0),
                bv64(MAX_META_BYTES as u64),
                bv64((-EACCES) as u64),
                bv64(0)
            );
            let r = self.def("(_ BitVec 64)", &r);
            let meta = self.meta_off.clone();
            self.meta_off = self.def(
                "(_ BitVec 64)",
                &format!("(ite (= {r} {}) {new} {meta})", bv64(0)),
            );
            V::S(r)
        }

        /// `bpf_xdp_load_bytes(ctx, off, buf, len)` (`store`: `bpf_xdp_store_bytes`) as the kernel
        /// gives it for a linear packet (`bpf_xdp_pointer`): offset or length above 0xffff
        /// -EFAULT, `off + len` past the packet's end -EINVAL, else 0 and the bytes at
        /// `data + off` copied to `buf` (or back), each copied byte `ite(ok, new, old)`. A length
        /// that is not a constant (or above 4096) leaves the destination unknown: fresh bytes.
        pub(crate) fn xdp_bytes(&mut self, store: bool, off: &V, buf: &V, len: &V) -> V {
            let o = self.scalar(off);
            let l = self.scalar(len);
            let n = l
                .strip_prefix("#x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .map(|v| v & 0xffff_ffff);
            let w = |t: &str| format!("((_ zero_extend 32) ((_ extract 31 0) {t}))");
            let o = self.def("(_ BitVec 64)", &w(&o));
            let l = self.def("(_ BitVec 64)", &w(&l));
            let ret = format!(
                "(ite (or (bvugt {o} {max}) (bvugt {l} {max})) {} \
             (ite (bvugt (bvadd {o} {l}) (bvsub {} {})) {} {}))",
                bv64((-EFAULT) as u64),
                self.end_off,
                self.data_off,
                bv64((-EINVAL) as u64),
                bv64(0),
                max = bv64(XDP_BYTES_MAX),
            );
            let ret = self.def("(_ BitVec 64)", &ret);
            let ok = self.def("Bool", &format!("(= {ret} {})", bv64(0)));
            let at = self.def("(_ BitVec 64)", &format!("(bvadd {} {o})", self.data_off));
            let pkt = V::P(Region::Pkt, at, None);
            let (src, dst) = if store { (buf, &pkt) } else { (&pkt, buf) };
            match n {
                Some(n) if n <= 4096 => {
                    let mut bytes = Vec::new();
                    for i in 0..n as i64 {
                        let s = self.byte_at(src, i);
                        let d = self.byte_at(dst, i);
                        let new = self.load(&s, Size::B);
                        let old = self.load(&d, Size::B);
                        let (V::S(new), V::S(old)) = (new, old) else {
                            unreachable!("loads give scalars")
                        };
                        bytes.push((d, format!("(ite {ok} {new} {old})")));
                    }
                    for (d, b) in bytes {
                        let b = V::S(self.def("(_ BitVec 64)", &b));
                        self.store(&d, Size::B, &b);
                    }
                }
                _ => {
                    let dst = dst.clone();
                    self.havoc(&dst);
                }
            }
            V::S(ret)
        }
    }
}
