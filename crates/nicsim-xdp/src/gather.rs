//! The NFP JIT's copy gathering, as the `nfp` cost model sees it.
//!
//! The kernel's NFP JIT (`drivers/net/ethernet/netronome/nfp/bpf/jit.c`,
//! `nfp_bpf_opt_ldst_gather`) turns a run of load/store pairs that copy consecutive words —
//! `ld R, [A + o]; st [B + p], R; ld R, [A + o + k]; st [B + p + k], R; …`, what clang makes of
//! a `memcpy` — into one bulk read into the transfer registers and one bulk write
//! (`nfp_cpp_memcpy`): one memory command each way instead of one per pair. The DNS cache of
//! the XDP paper copies its 16-byte answer from a map value into the packet that way: one DRAM
//! read where costing every load would count four.
//!
//! [`chains`] finds the runs in the program's instruction order exactly as the JIT's pass
//! walks it (same size, same base and value registers, offsets ascending or descending by the
//! size, no jump into a pair, at most 128 bytes); which pointer each base holds is the abstract
//! state's to say when the head is costed (the JIT asks the verifier): a run is gathered only
//! when `A` points into a map value and `B` into the packet (a packet-to-packet copy is gathered
//! by the JIT only when the two pointers provably do not overlap, which the verifier's pointer
//! ids tell and the abstract values do not: those are costed pair by pair, never cheaper than
//! the JIT makes them).

use std::collections::HashMap;

use crate::insn::{Insn, Size, Src};
use crate::load::Program;

/// The most bytes one gathered copy moves (`nfp_bpf_opt_ldst_gather`: a CPP command's limit).
pub const MAX_BYTES: u32 = 128;

/// An instruction's part in a gathered copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The first load: it issues the whole copy.
    Head(Copy),
    /// Another load or store of the run: the JIT emits nothing for it.
    Member {
        /// The run's load base register (a map value's pointer).
        a: u8,
        /// The run's store base register (the packet's pointer).
        b: u8,
    },
}

/// One gathered copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copy {
    /// Bytes copied.
    pub bytes: u32,
    /// The loads' width.
    pub size: Size,
    /// The load base register and its lowest offset.
    pub a: u8,
    /// The lowest load offset of the run.
    pub ld_off: i16,
    /// The store base register.
    pub b: u8,
    /// The lowest store offset of the run.
    pub st_off: i16,
    /// The run's offsets descend (then the value register ends with the first word).
    pub descending: bool,
}

/// `(size, value register, base register, offset)` of a load or a register store.
type Access = (Size, u8, u8, i16);

/// The load's [`Access`] (its value register is the one loaded).
fn load(i: &Option<Insn>) -> Option<Access> {
    match *i {
        Some(Insn::Ldx {
            size,
            dst,
            src,
            off,
            signed: false,
        }) => Some((size, dst, src, off)),
        _ => None,
    }
}

/// The register store's [`Access`] (its value register is the one stored).
fn store(i: &Option<Insn>) -> Option<Access> {
    match *i {
        Some(Insn::St {
            size,
            dst,
            src: Src::Reg(r),
            off,
        }) => Some((size, r, dst, off)),
        _ => None,
    }
}

/// Instructions some jump lands on (`FLAG_INSN_IS_JUMP_DST`).
fn jump_targets(p: &Program) -> Vec<bool> {
    let n = p.code.len();
    let mut t = vec![false; n];
    for (pc, i) in p.code.iter().enumerate() {
        let off = match i {
            Some(Insn::Jmp { off, .. }) => i64::from(*off),
            Some(Insn::Ja { off }) => i64::from(*off),
            _ => continue,
        };
        let to = pc as i64 + 1 + off;
        if (0..n as i64).contains(&to) {
            t[to as usize] = true;
        }
    }
    t
}

/// The runs of copying pairs in `p`, by instruction: each run's first load is its
/// [`Role::Head`], its other instructions are [`Role::Member`]s. A run of one pair is no run.
pub fn chains(p: &Program) -> HashMap<u32, Role> {
    let code = &p.code;
    let dst = jump_targets(p);
    // A load/store pair that copies (`curr_pair_is_memcpy`, less the pointer types): the
    // store writes what the load read, at the same width, and no jump lands on the store; the
    // value register is neither base (else the next pair's base would be a number).
    let pair = |pc: usize| -> Option<(Access, Access)> {
        let ld = load(code.get(pc)?)?;
        let st = store(code.get(pc + 1)?)?;
        (ld.0 == st.0 && ld.1 == st.1 && !dst[pc + 1] && ld.1 != ld.2 && ld.1 != st.2)
            .then_some((ld, st))
    };
    let mut out = HashMap::new();
    // The run so far: its first pair's index, its pairs, the last pair.
    let mut run: Vec<usize> = Vec::new();
    let finish = |run: &mut Vec<usize>, out: &mut HashMap<u32, Role>| {
        if run.len() > 1 {
            let (ld0, st0) = pair(run[0]).expect("a run's pairs copy");
            let (ldn, stn) = pair(run[run.len() - 1]).expect("a run's pairs copy");
            let descending = ldn.3 < ld0.3;
            let bytes = run.len() as u32 * ld0.0.bytes();
            out.insert(
                run[0] as u32,
                Role::Head(Copy {
                    bytes,
                    size: ld0.0,
                    a: ld0.2,
                    ld_off: if descending { ldn.3 } else { ld0.3 },
                    b: st0.2,
                    st_off: if descending { stn.3 } else { st0.3 },
                    descending,
                }),
            );
            let m = Role::Member { a: ld0.2, b: st0.2 };
            out.insert(run[0] as u32 + 1, m);
            for &pc in &run[1..] {
                out.insert(pc as u32, m);
                out.insert(pc as u32 + 1, m);
            }
        }
        run.clear();
    };
    let mut pc = 0;
    while pc + 1 < code.len() {
        let this = pair(pc);
        // Whether it continues the run (`curr_pair_chain_with_previous`): same value register,
        // same bases, same width, no jump onto its load, offsets next to the last pair's in
        // the same direction; and the run stays within one command.
        let chains = match (this, run.last().and_then(|&l| pair(l))) {
            (Some((ld, st)), Some((pl, ps))) => {
                let sz = ld.0.bytes() as i32;
                let (lo, so, plo, pso) = (
                    i32::from(ld.3),
                    i32::from(st.3),
                    i32::from(pl.3),
                    i32::from(ps.3),
                );
                ld.1 == pl.1
                    && ld.2 == pl.2
                    && st.2 == ps.2
                    && ld.0 == pl.0
                    && !dst[pc]
                    && ((plo + sz == lo && pso + sz == so) || (lo + sz == plo && so + sz == pso))
                    && (run.len() as u32 * ld.0.bytes()) < MAX_BYTES
            }
            (Some(_), None) => true,
            _ => false,
        };
        if chains {
            run.push(pc);
            pc += 2;
            continue;
        }
        finish(&mut run, &mut out);
        if this.is_some() {
            run.push(pc); // a pair that ends a run may start the next
            pc += 2;
        } else {
            pc += 1;
        }
    }
    finish(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testasm::*;

    #[test]
    fn consecutive_copies_are_one_run_and_others_are_not() {
        let p = prog(
            &[
                ldx(W, 3, 6, 0), // a 16-byte copy from r6 to r7, ascending
                stx(W, 7, 3, 10),
                ldx(W, 3, 6, 4),
                stx(W, 7, 3, 14),
                ldx(W, 3, 6, 8),
                stx(W, 7, 3, 18),
                ldx(W, 3, 6, 12),
                stx(W, 7, 3, 22),
                add(0, 1),       // breaks the run
                ldx(W, 3, 6, 0), // one pair: no run
                stx(W, 7, 3, 10),
                ldx(H, 3, 6, 20), // descending halves
                stx(H, 7, 3, 40),
                ldx(H, 3, 6, 18),
                stx(H, 7, 3, 38),
                mov(0, 2),
                exit(),
            ],
            Vec::new(),
        );
        let c = chains(&p);
        assert_eq!(
            c.get(&0),
            Some(&Role::Head(Copy {
                bytes: 16,
                size: Size::W,
                a: 6,
                ld_off: 0,
                b: 7,
                st_off: 10,
                descending: false,
            }))
        );
        for pc in 1..8 {
            assert_eq!(c.get(&pc), Some(&Role::Member { a: 6, b: 7 }), "{pc}");
        }
        assert!(!c.contains_key(&8) && !c.contains_key(&9) && !c.contains_key(&10));
        assert_eq!(
            c.get(&11),
            Some(&Role::Head(Copy {
                bytes: 4,
                size: Size::H,
                a: 6,
                ld_off: 18,
                b: 7,
                st_off: 38,
                descending: true,
            }))
        );
        assert_eq!(c.len(), 8 + 4);
    }

    #[test]
    fn a_jump_into_a_run_ends_it_there() {
        let p = prog(
            &[
                jeq(1, 0, 2), // lands on the second pair's load
                ldx(W, 3, 6, 0),
                stx(W, 7, 3, 10),
                ldx(W, 3, 6, 4),
                stx(W, 7, 3, 14),
                ldx(W, 3, 6, 8),
                stx(W, 7, 3, 18),
                mov(0, 2),
                exit(),
            ],
            Vec::new(),
        );
        let c = chains(&p);
        // The first pair alone is no run; the second starts one with the third.
        assert!(!c.contains_key(&1) && !c.contains_key(&2));
        assert!(matches!(c.get(&3), Some(Role::Head(Copy { bytes: 8, .. }))));
    }
}
