//! The kfuncs the analysis models: the XDP metadata kfuncs (`bpf_xdp_metadata_rx_timestamp`,
//! `_rx_hash`, `_rx_vlan_tag`) and the conntrack lookup and release (`bpf_xdp_ct_lookup`,
//! `bpf_ct_release`), for the interpreter and for the symbolic executor (docs/xdp.md, "kfuncs").
//! Which kfuncs are modelled, and the refusal of the others, are `crate::interp::kfunc_refusal`;
//! an extern the running kernel does not have ([`kernel_knows`]) is refused as one that lives in
//! another object, to be linked first (`bpftool gen object`).

/// Whether the running kernel's BTF (`/sys/kernel/btf/vmlinux`) names `name` (a function or a
/// variable: its string table holds every name its types and functions have), `None` when it
/// cannot be read. Read once.
pub fn kernel_knows(name: &str) -> Option<bool> {
    static BTF: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    let btf = BTF
        .get_or_init(|| std::fs::read("/sys/kernel/btf/vmlinux").ok())
        .as_ref()?;
    let needle = [&[0u8][..], name.as_bytes(), &[0u8][..]].concat();
    Some(btf.windows(needle.len()).any(|w| w == needle.as_slice()))
}

/// The interpreter's side.
mod run {
    use crate::insn::Size;
    use crate::interp::*;

    impl Machine<'_> {
        /// `bpf_xdp_ct_lookup(ctx, tuple, tuple_len, opts, opts_len)` as nf_conntrack_bpf.c
        /// (Linux 6.10+) checks its arguments: opts NULL gives NULL; else a failed check sets
        /// `opts->error` and gives NULL; a tuple that passes finds a zeroed entry
        /// (`RunOptions::ct_found`, `opts->dir` set to 0, the original direction) or sets -ENOENT.
        /// A netns_id of 0 or more names no namespace here (-ENONET). `bpf_ct_release(ct)` releases
        /// an entry the program holds.
        pub(crate) fn conntrack(&mut self, pc: u32, name: &str) -> Result<u64, Fault> {
            if name == KFUNC_CT_RELEASE {
                return match self.region_of(self.regs[1]) {
                    (Region::Conn { n }, 0) if self.conns[n as usize] => {
                        self.conns[n as usize] = false;
                        Ok(0)
                    }
                    _ => Err(invalid(
                        pc,
                        format!("kfunc {name}: r1 is not a conntrack entry the program holds"),
                    )),
                };
            }
            if !matches!(self.region_of(self.regs[1]), (Region::Ctx, 0)) {
                return Err(invalid(pc, format!("kfunc {name}: r1 is not the context")));
            }
            let (tuple, tlen, opts, olen) =
                (self.regs[2], self.regs[3], self.regs[4], self.regs[5]);
            if opts == 0 {
                return Ok(0);
            }
            // The verifier checks each pointer is memory of its size (the sizes are the limits).
            if tlen > 0 && tuple != 0 {
                self.place(pc, tuple, tlen.min(64) as usize, Access::HelperRead)?;
            }
            self.place(pc, opts, olen.clamp(1, 64) as usize, Access::Store)?;
            let byte =
                |m: &Self, o: u64| m.load(pc, opts.wrapping_add(o), Size::B, Access::HelperRead);
            let err: i64 = if tuple == 0 || (olen != CT_OPTS_SZ && olen != CT_OPTS_OLD_SZ) {
                -EINVAL
            } else {
                let reserved = if olen == CT_OPTS_SZ {
                    byte(self, 13)? | byte(self, 14)? | byte(self, 15)?
                } else {
                    byte(self, 10)? | byte(self, 11)?
                };
                let l4 = byte(self, 8)?;
                let netns = self.load(pc, opts, Size::W, Access::HelperRead)? as u32 as i32;
                if reserved != 0 {
                    -EINVAL
                } else if l4 != 6 && l4 != 17 {
                    -EPROTO
                } else if netns < -1 {
                    -EINVAL
                } else if tlen != CT_TUPLE_V4 && tlen != CT_TUPLE_V6 {
                    -EAFNOSUPPORT
                } else if netns >= 0 {
                    -ENONET
                } else {
                    if olen == CT_OPTS_SZ && byte(self, 12)? == 0 {
                        self.store(
                            pc,
                            opts + 12,
                            Size::B,
                            NF_CT_DEFAULT_ZONE_DIR as u64,
                            Access::Store,
                        )?;
                    }
                    if self.opts.ct_found {
                        0
                    } else {
                        -ENOENT
                    }
                }
            };
            if err != 0 {
                self.store(pc, opts + 4, Size::W, err as u32 as u64, Access::Store)?;
                return Ok(0);
            }
            self.store(pc, opts + 9, Size::B, 0, Access::Store)?;
            let n = self.conns.len() as u32;
            self.conns.push(true);
            Ok(self.ptr(Region::Conn { n }, 0))
        }
    }
}

/// The symbolic executor's side.
mod sym {

    use crate::insn::Size;
    use crate::interp::{EAFNOSUPPORT, EINVAL, ENODATA, ENOENT, EOPNOTSUPP};

    use crate::symex::*;

    impl Sym<'_> {
        /// A kfunc call. The XDP metadata kfuncs (interp.rs `KFUNC_XDP_METADATA`) return 0, having
        /// written fresh outputs through r2 (and r3), or -ENODATA / -EOPNOTSUPP, writing nothing
        /// (a device's implementation or the kernel's default). Any other kfunc is refused by the
        /// costing before symbolic execution: as a helper nothing is known of.
        pub(crate) fn kfunc(&mut self, id: u32) {
            let name = self.p.kfunc_name(id);
            if name == crate::interp::KFUNC_CT_LOOKUP || name == crate::interp::KFUNC_CT_RELEASE {
                let r0 = if name == crate::interp::KFUNC_CT_LOOKUP {
                    self.ct_lookup()
                } else {
                    // bpf_ct_release: void, no value changes (a pointer that is not an entry the
                    // program holds is the verifier's refusal; here it changes nothing either).
                    V::S(bv64(0))
                };
                for r in 1..=5 {
                    let v = self.fresh64("clob");
                    self.set(r, v);
                }
                return self.set(0, r0);
            }
            let Some(outs) = crate::interp::kfunc_outputs(&name) else {
                return self.call(u32::MAX);
            };
            let x = self.fresh("(_ BitVec 64)", "kf");
            let ret = self.def(
                "(_ BitVec 64)",
                &format!(
                    "(ite (= {x} {z}) {z} (ite (= {x} {one}) {} {}))",
                    bv64((-ENODATA) as u64),
                    bv64((-EOPNOTSUPP) as u64),
                    z = bv64(0),
                    one = bv64(1),
                ),
            );
            let ok = self.def("Bool", &format!("(= {ret} {})", bv64(0)));
            for (a, n) in outs.iter().enumerate() {
                let ptr = self.reg(2 + a as u8);
                for i in 0..*n as i64 {
                    let d = self.byte_at(&ptr, i);
                    let V::S(old) = self.load(&d, Size::B) else {
                        unreachable!("loads give scalars")
                    };
                    let new = self.fresh("(_ BitVec 8)", "kfo");
                    let b = self.def(
                        "(_ BitVec 64)",
                        &format!("(ite {ok} ((_ zero_extend 56) {new}) {old})"),
                    );
                    self.store(&d, Size::B, &V::S(b));
                }
            }
            for r in 1..=5 {
                let v = self.fresh64("clob");
                self.set(r, v);
            }
            self.set(0, V::S(ret));
        }

        /// `bpf_xdp_ct_lookup(ctx, tuple, tuple_len, opts, opts_len)` (nf_conntrack_bpf.c, Linux
        /// 6.10+): opts NULL gives NULL, nothing written. Else the error is the first failed check
        /// (tuple NULL or opts_len neither 12 nor 16: -EINVAL; reserved bytes not 0: -EINVAL;
        /// l4proto neither TCP nor UDP: -EPROTO; netns_id below -1: -EINVAL; tuple_len neither
        /// the IPv4 nor the IPv6 tuple's: -EAFNOSUPPORT), then for a netns_id of 0 or more a fresh
        /// -ENONET, then found (0) or -ENOENT, a fresh condition (the conntrack table is not the
        /// program's). A non-zero error is written to `opts->error` and the result is NULL; else
        /// the result is an entry whose bytes read fresh (`Region::Record`: its null condition is
        /// the error's) and `opts->dir` is fresh. A 16-byte opts' ct_zone_dir of 0 becomes 3
        /// once the checks pass; an opts_len that is not a constant makes the opts' frame fresh.
        pub(crate) fn ct_lookup(&mut self) -> V {
            use crate::interp::{
                CT_OPTS_OLD_SZ, CT_OPTS_SZ, CT_TUPLE_V4, CT_TUPLE_V6, ENONET, EPROTO,
                NF_CT_DEFAULT_ZONE_DIR,
            };
            let (tuple, tlen, opts, olen) = (self.reg(2), self.reg(3), self.reg(4), self.reg(5));
            if !matches!(opts, V::P(..)) {
                return V::S(bv64(0));
            }
            let c = |e: i64| bv64(e as u64);
            let tuple_null = match &tuple {
                V::P(..) => "false".to_string(),
                V::S(t) => format!("(= {t} {})", bv64(0)),
                _ => "false".to_string(),
            };
            let ol = self.scalar(&olen);
            let tl = self.scalar(&tlen);
            let olen_k = match &olen {
                V::S(t) if *t == bv64(CT_OPTS_SZ) => Some(CT_OPTS_SZ),
                V::S(t) if *t == bv64(CT_OPTS_OLD_SZ) => Some(CT_OPTS_OLD_SZ),
                _ => None,
            };
            let byte = |s: &mut Self, i: i64| -> String {
                if i >= CT_OPTS_OLD_SZ as i64 && olen_k != Some(CT_OPTS_SZ) {
                    let f = s.fresh("(_ BitVec 8)", "cto");
                    return s.def("(_ BitVec 64)", &format!("((_ zero_extend 56) {f})"));
                }
                let d = s.byte_at(&opts, i);
                let V::S(b) = s.load(&d, Size::B) else {
                    unreachable!("loads give scalars")
                };
                b
            };
            let b: Vec<String> = (0..16).map(|i| byte(self, i)).collect();
            let V::S(ns) = self.load(&opts, Size::W) else {
                unreachable!("loads give scalars")
            };
            let ns = format!("((_ extract 31 0) {ns})");
            let z = bv64(0);
            let resv = format!(
                "(ite (= {ol} {}) (not (= (bvor {} {} {}) {z})) (not (= (bvor {} {}) {z})))",
                bv64(CT_OPTS_SZ),
                b[13],
                b[14],
                b[15],
                b[10],
                b[11]
            );
            let found = self.fresh("Bool", "ctfound");
            let enonet = self.fresh("Bool", "ctnonet");
            let err = format!(
                "(ite (or {tuple_null} (not (or (= {ol} {o12}) (= {ol} {o16})))) {einval} \
             (ite {resv} {einval} \
             (ite (and (not (= {l4} {tcp})) (not (= {l4} {udp}))) {eproto} \
             (ite (bvslt {ns} #xffffffff) {einval} \
             (ite (and (not (= {tl} {t4})) (not (= {tl} {t6}))) {eafno} \
             (ite (and (bvsge {ns} #x00000000) {enonet}) {enonet_v} \
             (ite {found} {z} {enoent})))))))",
                o12 = bv64(CT_OPTS_OLD_SZ),
                o16 = bv64(CT_OPTS_SZ),
                einval = c(-EINVAL),
                l4 = b[8],
                tcp = bv64(6),
                udp = bv64(17),
                eproto = c(-EPROTO),
                t4 = bv64(CT_TUPLE_V4),
                t6 = bv64(CT_TUPLE_V6),
                eafno = c(-EAFNOSUPPORT),
                enonet_v = c(-ENONET),
                enoent = c(-ENOENT),
            );
            let err = self.def("(_ BitVec 64)", &err);
            let null = self.def("Bool", &format!("(not (= {err} {z}))"));
            // opts->error (bytes 4..8) on failure; opts->dir (byte 9) on success.
            for i in 0..4 {
                let d = self.byte_at(&opts, 4 + i);
                let v = self.def(
                    "(_ BitVec 64)",
                    &format!(
                        "(ite {null} ((_ zero_extend 56) ((_ extract {} {}) {err})) {})",
                        8 * i + 7,
                        8 * i,
                        b[4 + i as usize]
                    ),
                );
                self.store(&d, Size::B, &V::S(v));
            }
            let dir = self.fresh("(_ BitVec 8)", "ctdir");
            let d = self.byte_at(&opts, 9);
            let v = self.def(
                "(_ BitVec 64)",
                &format!("(ite {null} {} ((_ zero_extend 56) {dir}))", b[9]),
            );
            self.store(&d, Size::B, &V::S(v));
            match olen_k {
                Some(CT_OPTS_SZ) => {
                    let d = self.byte_at(&opts, 12);
                    let v = self.def(
                    "(_ BitVec 64)",
                    &format!(
                        "(ite (and (or (= {err} {z}) (= {err} {enoent})) (= {old} {z})) {dflt} {old})",
                        enoent = c(-ENOENT),
                        old = b[12],
                        dflt = bv64(NF_CT_DEFAULT_ZONE_DIR as u64),
                    ),
                );
                    self.store(&d, Size::B, &V::S(v));
                }
                Some(_) => {}
                None => self.havoc(&opts),
            }
            V::P(Region::Record { null }, bv64(0), Some(0))
        }
    }
}
