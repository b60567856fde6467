//! Checksums: `bpf_csum_diff`, as the kernel the program is analysed for computes it
//! ([`Program::kernel_version`](crate::load::Program)), in the interpreter and in the symbolic
//! executor alike, so that a path that needs a checksum's carry is feasible only when the
//! packet's bytes give one. Two meanings, by kernel:
//! - before Linux 6.12: the words of `~from` and `to` copied into a scratch buffer and summed by
//!   `csum_partial`, x86-64's 32-bit sum (sizes not multiples of 4, or above 512 bytes
//!   together, -EINVAL);
//! - since 6.12 (net/core/filter.c, "bpf: bpf_csum_diff: optimize and homogenize for all
//!   archs"): `csum_partial` of the buffers themselves (wherever they lie: x86-64 sums a
//!   buffer at an odd address as any other since Linux 6.8), `to` less `from`, folded to 16 bits
//!   (`csum_from32to16`), whatever the sizes.

use crate::helpers::Helper;
use crate::interp::HELPER_CSUM_DIFF;

/// The checksum helpers.
pub(crate) const HELPERS: &[Helper] = &[Helper::new(HELPER_CSUM_DIFF, "csum")
    .run(|m, pc, id| m.csum_diff(pc, id))
    .sym(|s, _, [from, from_size, to, to_size]| s.csum_diff(&from, &from_size, &to, &to_size))];

/// `KERNEL_VERSION(6, 12, 0)`: the first kernel whose `bpf_csum_diff` folds its result to 16
/// bits.
pub(crate) const FOLDED_SINCE: u32 = (6 << 16) + (12 << 8);

/// Whether `bpf_csum_diff` folds its result on the kernel of version `code` (`None`: unknown,
/// taken for a recent kernel).
pub(crate) fn folds(code: Option<u32>) -> bool {
    code.is_none_or(|v| v >= FOLDED_SINCE)
}

/// The interpreter's side.
mod run {

    use crate::interp::*;

    impl Machine<'_> {
        /// bpf_csum_diff(from, from_size, to, to_size, seed), as the module says.
        pub(crate) fn csum_diff(&mut self, pc: u32, _id: u32) -> Result<u64, Fault> {
            let err = |e: i64| (-e) as u64;

            let (from, from_size) = (self.regs[1], self.regs[2] as u32);
            let (to, to_size) = (self.regs[3], self.regs[4] as u32);
            let seed = self.regs[5] as u32;
            if super::folds(self.p.kernel_version) {
                // csum_partial of each buffer where it lies (x86-64's has summed a buffer at an
                // odd address as any other since "x86/csum: Remove unnecessary odd handling",
                // Linux 6.8, before 6.12's bpf_csum_diff passed it one).
                let partial = |m: &mut Self, at: u64, size: u32, seed: u32| {
                    Ok::<u32, Fault>(csum_partial(&m.read(pc, at, size as usize)?, seed))
                };
                let ret = match (from_size > 0, to_size > 0) {
                    (true, true) => {
                        let t = partial(self, to, to_size, seed)?;
                        csum_add(t, !partial(self, from, from_size, 0)?)
                    }
                    (false, true) => partial(self, to, to_size, seed)?,
                    (true, false) => !partial(self, from, from_size, !seed)?,
                    (false, false) => seed,
                };
                return Ok(u64::from(csum_from32to16(ret)));
            }
            let diff_size = from_size.wrapping_add(to_size);
            if (from_size | to_size) & 3 != 0 || diff_size > CSUM_DIFF_MAX_BYTES {
                return Ok(err(EINVAL));
            }
            let mut diff = Vec::with_capacity(diff_size as usize);
            if from_size > 0 {
                diff.extend(self.read(pc, from, from_size as usize)?.iter().map(|b| !b));
            }
            if to_size > 0 {
                diff.extend(self.read(pc, to, to_size as usize)?);
            }
            Ok(csum_partial(&diff, seed) as u64)
        }
    }
}

/// The symbolic executor's side.
mod sym {

    use crate::insn::Size;
    use crate::interp::{CSUM_DIFF_MAX_BYTES, EINVAL};

    use crate::symex::*;

    /// The low 32 bits of a 64-bit term, zero-extended.
    const LOW32: &str = "#x00000000ffffffff";

    /// The most bytes summed into a query (a packet's 64 KiB): larger sizes (which no buffer an
    /// XDP program has holds) give a fresh value rather than a query of that many words.
    const MAX_SUMMED_BYTES: u64 = 1 << 16;

    impl Sym<'_> {
        /// bpf_csum_diff(from, from_size, to, to_size, seed), as the module says, from the
        /// bytes the pointers reach; sizes that are not constants give a fresh value (16 bits
        /// since 6.12).
        ///
        /// x86-64's `csum_partial` of 32-bit words (a shorter tail zero-padded) and a seed is
        /// their sum folded twice, high half onto low: both give 0 for a sum of 0
        /// and otherwise the number in 1..=2^32-1 congruent to the sum modulo 2^32-1, as the
        /// adds with end-around carry keep it (`csum_diff_is_csum_partial` tests it).
        pub(crate) fn csum_diff(&mut self, from: &V, from_size: &V, to: &V, to_size: &V) -> V {
            let folds = super::folds(self.p.kernel_version);
            let sizes = [from_size, to_size].map(|v| match v {
                V::S(t) => konst(t).map(|c| c & 0xffff_ffff),
                _ => None,
            });
            let [Some(from_size), Some(to_size)] = sizes else {
                return self.fresh_csum(folds);
            };
            if from_size + to_size > MAX_SUMMED_BYTES {
                return self.fresh_csum(folds);
            }
            let seed = self.reg(5);
            let seed = self.scalar(&seed);
            let seed = self.def("(_ BitVec 64)", &format!("(bvand {seed} {LOW32})"));
            if !folds {
                if (from_size | to_size) & 3 != 0
                    || from_size + to_size > u64::from(CSUM_DIFF_MAX_BYTES)
                {
                    return V::S(bv64((-EINVAL) as u64));
                }
                // One csum_partial over the words of ~from, then to.
                let mut words = self.words(from, from_size, true);
                words.extend(self.words(to, to_size, false));
                return V::S(self.partial(&seed, &words));
            }
            let ret = match (from_size > 0, to_size > 0) {
                (true, true) => {
                    let w = self.words(to, to_size, false);
                    let t = self.partial(&seed, &w);
                    let w = self.words(from, from_size, false);
                    let f = self.partial(&bv64(0), &w);
                    let s = self.def("(_ BitVec 64)", &format!("(bvadd {t} (bvxor {f} {LOW32}))"));
                    self.fold(&s, 32)
                }
                (false, true) => {
                    let w = self.words(to, to_size, false);
                    self.partial(&seed, &w)
                }
                (true, false) => {
                    let w = self.words(from, from_size, false);
                    let not_seed = format!("(bvxor {seed} {LOW32})");
                    let f = self.partial(&not_seed, &w);
                    self.def("(_ BitVec 64)", &format!("(bvxor {f} {LOW32})"))
                }
                (false, false) => seed,
            };
            // csum_from32to16: the halves added with end-around carry.
            let once = self.fold(&ret, 16);
            V::S(self.fold(&once, 16))
        }

        /// A fresh result: any 64-bit value before 6.12, a 16-bit one since.
        fn fresh_csum(&mut self, folds: bool) -> V {
            let f = self.fresh("(_ BitVec 64)", "csum");
            if folds {
                V::S(self.def("(_ BitVec 64)", &format!("(bvand {f} {})", bv64(0xffff))))
            } else {
                V::S(f)
            }
        }

        /// The 32-bit words (zero-extended to 64 bits) of the `size` bytes at `buf`, read as
        /// little-endian, a shorter tail zero-padded; complemented when `invert`.
        fn words(&mut self, buf: &V, size: u64, invert: bool) -> Vec<String> {
            let mut words = Vec::new();
            for at in (0..size as i64).step_by(4) {
                let n = (size as i64 - at).min(4);
                let mut word = String::new();
                for i in 0..n {
                    let p = self.byte_at(buf, at + i);
                    let b = match self.load(&p, Size::B) {
                        V::S(t) => t,
                        other => self.scalar(&other),
                    };
                    let b = format!("(bvshl (bvand {b} {}) {})", bv64(0xff), bv64(8 * i as u64));
                    word = if i == 0 {
                        b
                    } else {
                        format!("(bvor {word} {b})")
                    };
                }
                let word = if invert {
                    format!("(bvxor {word} {LOW32})")
                } else {
                    word
                };
                words.push(self.def("(_ BitVec 64)", &word));
            }
            words
        }

        /// x86-64's `csum_partial` of `words` and `seed` (32-bit values in 64-bit terms): their
        /// sum (at most 2^14 numbers below 2^32: no 64-bit overflow) folded twice.
        fn partial(&mut self, seed: &str, words: &[String]) -> String {
            let mut sum = seed.to_string();
            for w in words {
                sum = self.def("(_ BitVec 64)", &format!("(bvadd {sum} {w})"));
            }
            let once = self.fold(&sum, 32);
            self.fold(&once, 32)
        }

        /// `x` with its bits from `bits` on added onto its low `bits` bits.
        fn fold(&mut self, x: &str, bits: u64) -> String {
            let low = bv64((1 << bits) - 1);
            self.def(
                "(_ BitVec 64)",
                &format!("(bvadd (bvand {x} {low}) (bvlshr {x} {}))", bv64(bits)),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::interp::{csum_add, csum_from32to16, csum_partial};

    /// Numbers drawn by xorshift from `seed`.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    fn fold(x: u64, bits: u32) -> u64 {
        (x & ((1 << bits) - 1)) + (x >> bits)
    }

    /// The symbolic executor's x86-64 `csum_partial`: the words and the seed summed, folded
    /// twice.
    fn partial(words: &[u32], seed: u32) -> u64 {
        let sum = u64::from(seed) + words.iter().map(|&w| u64::from(w)).sum::<u64>();
        fold(fold(sum, 32), 32)
    }

    #[test]
    fn csum_diff_is_csum_partial() {
        // Buffers of 0 to 128 words (bpf_csum_diff's 512 bytes), drawn by xorshift: random
        // words, and words of all zeros and all ones (a sum of 0, carries at every add).
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for case in 0..20_000 {
            let n = (next() % 129) as usize;
            let words: Vec<u32> = (0..n)
                .map(|_| match (case % 4, next() % 4) {
                    (0, _) => 0,
                    (1, 0) => 0,
                    (1, _) | (2, 0) => u32::MAX,
                    _ => next() as u32,
                })
                .collect();
            let seed = match next() % 4 {
                0 => 0,
                1 => u32::MAX,
                _ => next() as u32,
            };
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            assert_eq!(
                u64::from(csum_partial(&bytes, seed)),
                partial(&words, seed),
                "words {words:x?}, seed {seed:#x}"
            );
        }
    }

    #[test]
    fn the_symbolic_form_since_6_12_is_the_kernels() {
        // to less from, to alone, from alone, neither: the symbolic executor's arithmetic
        // against the interpreter's (csum_partial, csum_add, csum_from32to16 as the kernel's).
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for case in 0..20_000 {
            let (fl, tl) = ((next() % 41) as usize, (next() % 41) as usize);
            let mut draw = |n: usize| -> Vec<u8> {
                (0..n)
                    .map(|_| match case % 3 {
                        0 => 0xff,
                        1 if next().is_multiple_of(2) => 0,
                        _ => next() as u8,
                    })
                    .collect()
            };
            let (from, to) = (draw(fl), draw(tl));
            let seed = match next() % 3 {
                0 => 0,
                1 => u32::MAX,
                _ => next() as u32,
            };
            let words = |b: &[u8]| -> Vec<u32> {
                b.chunks(4)
                    .map(|c| {
                        let mut w = [0u8; 4];
                        w[..c.len()].copy_from_slice(c);
                        u32::from_le_bytes(w)
                    })
                    .collect()
            };
            let kernel = match (fl > 0, tl > 0) {
                (true, true) => csum_add(csum_partial(&to, seed), !csum_partial(&from, 0)),
                (false, true) => csum_partial(&to, seed),
                (true, false) => !csum_partial(&from, !seed),
                (false, false) => seed,
            };
            let model = match (fl > 0, tl > 0) {
                (true, true) => {
                    let t = partial(&words(&to), seed);
                    let f = partial(&words(&from), 0);
                    fold(t + (f ^ 0xffff_ffff), 32)
                }
                (false, true) => partial(&words(&to), seed),
                (true, false) => partial(&words(&from), !seed) ^ 0xffff_ffff,
                (false, false) => u64::from(seed),
            };
            assert_eq!(
                u64::from(csum_from32to16(kernel)),
                fold(fold(model, 16), 16),
                "from {from:x?}, to {to:x?}, seed {seed:#x}"
            );
        }
    }
}
