//! Checksums: `bpf_csum_diff`, computed in the interpreter as x86-64's `csum_partial` does;
//! a fresh value in the symbolic executor.

use crate::helpers::Helper;
use crate::interp::HELPER_CSUM_DIFF;

/// The checksum helpers.
pub(crate) const HELPERS: &[Helper] =
    &[Helper::new(HELPER_CSUM_DIFF, "csum").run(|m, pc, id| m.csum_diff(pc, id))];

/// The interpreter's side.
mod run {

    use crate::interp::*;

    impl Machine<'_> {
        /// bpf_csum_diff(from, from_size, to, to_size, seed): the sizes multiples of 4 and at most
        /// 512 bytes together (-EINVAL), else csum_partial of ~from and to, seeded.
        pub(crate) fn csum_diff(&mut self, pc: u32, _id: u32) -> Result<u64, Fault> {
            let err = |e: i64| (-e) as u64;

            let (from, from_size) = (self.regs[1], self.regs[2] as u32);
            let (to, to_size) = (self.regs[3], self.regs[4] as u32);
            let seed = self.regs[5] as u32;
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
