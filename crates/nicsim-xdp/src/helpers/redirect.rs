//! Redirects: `bpf_redirect` and `bpf_redirect_map` on device, CPU and AF_XDP socket maps
//! (`bpf_xdp_redirect`, `__bpf_xdp_redirect_map` of Linux 6.1: XDP_REDIRECT with an entry or a
//! broadcast, else the action in the flags' low two bits, XDP_ABORTED for unknown flags), for
//! the interpreter and for the symbolic executor.

use crate::helpers::Helper;
use crate::interp::{HELPER_REDIRECT, HELPER_REDIRECT_MAP};

/// The redirect helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_REDIRECT, "redirect")
        .run(|m, pc, id| m.redirect(pc, id))
        .sym(|s, _, [_, r2, _, _]| s.redirect(&r2)),
    Helper::new(HELPER_REDIRECT_MAP, "redirect")
        .run(|m, pc, id| m.redirect_map(pc, id))
        .sym(|s, _, [r1, r2, r3, _]| s.redirect_map_call(&r1, &r2, &r3)),
];

/// The interpreter's side.
mod run {

    use crate::interp::*;

    use crate::load::*;

    impl Machine<'_> {
        pub(crate) fn redirect(&mut self, _pc: u32, _id: u32) -> Result<u64, Fault> {
            let _err = |e: i64| (-e) as u64;

            // bpf_xdp_redirect(ifindex, flags): any flag aborts.
            Ok(if self.regs[2] != 0 {
                XDP_ABORTED
            } else {
                XDP_REDIRECT
            })
        }

        /// `bpf_redirect_map(map, key, flags)` (`__bpf_xdp_redirect_map`): flags beyond the action
        /// bits (and, for device maps, BPF_F_BROADCAST / BPF_F_EXCLUDE_INGRESS) abort; a key
        /// without an entry returns the action in the flags' low two bits, unless broadcasting.
        pub(crate) fn redirect_map(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let m = self.map_arg(pc, id, 1)?;
            let s = &self.maps.maps[m];
            let mask = match s.def.map_type {
                MAP_DEVMAP | MAP_DEVMAP_HASH => BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS,
                MAP_CPUMAP | MAP_XSKMAP => 0,
                _ => {
                    return Err(self.helper_fault(
                        pc,
                        id,
                        format!(
                            "map '{}' is not a devmap, devmap_hash, cpumap or xskmap",
                            s.def.name
                        ),
                    ))
                }
            };
            let flags = self.regs[3];
            let actions = XDP_ABORTED | XDP_DROP | XDP_PASS | XDP_TX;
            if flags & !(actions | mask) != 0 {
                return Ok(XDP_ABORTED);
            }
            let key = (self.regs[2] as u32).to_le_bytes();
            let key = &key[..(s.def.key_size as usize).min(4)];
            let found = s.index.contains_key(key);
            if !found && flags & BPF_F_BROADCAST == 0 {
                return Ok(flags & actions);
            }
            Ok(XDP_REDIRECT)
        }
    }
}

/// The symbolic executor's side.
mod sym {

    use crate::load::*;
    use crate::symex::*;

    impl Sym<'_> {
        pub(crate) fn redirect(&mut self, r2: &V) -> V {
            // bpf_redirect: XDP_REDIRECT unless flags are set (then XDP_ABORTED).
            let f = self.scalar(r2);
            V::S(self.def(
                "(_ BitVec 64)",
                &format!("(ite (= {f} {}) {} {})", bv64(0), bv64(4), bv64(0)),
            ))
        }

        /// `bpf_redirect_map` on the map r1 points to, if it is a device, CPU or AF_XDP socket
        /// map; else a fresh value.
        pub(crate) fn redirect_map_call(&mut self, r1: &V, r2: &V, r3: &V) -> V {
            match r1 {
                V::MapPtr(m)
                    if matches!(
                        self.p.maps[*m as usize].map_type,
                        MAP_DEVMAP | MAP_DEVMAP_HASH | MAP_CPUMAP | MAP_XSKMAP
                    ) =>
                {
                    let m = *m;
                    self.redirect_map(m, r2, r3)
                }
                _ => self.fresh64("h"),
            }
        }

        /// `bpf_redirect_map(map, key, flags)` on a device, CPU or AF_XDP socket map m
        /// (`__bpf_xdp_redirect_map`): flags beyond the action bits (and, for device maps,
        /// BPF_F_BROADCAST and BPF_F_EXCLUDE_INGRESS) give XDP_ABORTED; a key with an entry, or a
        /// broadcast, XDP_REDIRECT; any other key the action in the flags' low two bits. The
        /// entry is the map's presence bit for the key (and, for maps indexed by position, the key
        /// below the size); the model's entry is reported as a lookup, so an example packet finds it.
        pub(crate) fn redirect_map(&mut self, m: u32, key: &V, flags: &V) -> V {
            let def = self.p.maps[m as usize].clone();
            let c = |v: u64| bv64(v);
            let hashed = def.map_type == MAP_DEVMAP_HASH;
            let mask = if matches!(def.map_type, MAP_DEVMAP | MAP_DEVMAP_HASH) {
                BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS
            } else {
                0
            };
            let f = self.scalar(flags);
            let k64 = self.scalar(key);
            if def.key_size != 4 {
                // The verifier allows these maps 4-byte keys only.
                return self.fresh64("h");
            }
            let k = self.def("(_ BitVec 32)", &format!("((_ extract 31 0) {k64})"));
            let pres = self.present[m as usize].clone();
            let mut found = format!("(select {pres} {k})");
            if !hashed {
                found = format!("(and (bvult {k} {}) {found})", self.array_size(m));
            }
            let found = self.def("Bool", &found);
            self.record_lookup(m, &k, Some(found.clone()));
            let actions = 3u64;
            let broadcast = if mask != 0 {
                format!("(not (= (bvand {f} {}) {}))", c(BPF_F_BROADCAST), c(0))
            } else {
                "false".into()
            };
            V::S(self.def(
            "(_ BitVec 64)",
            &format!(
                "(ite (not (= (bvand {f} {}) {})) {} (ite (or {found} {broadcast}) {} (bvand {f} {})))",
                c(!(actions | mask)),
                c(0),
                c(0),
                c(4),
                c(actions)
            ),
        ))
        }
    }
}
