//! Strings: `bpf_strncmp` (interpreter: as lib/string.c's `strncmp` over at most `s1_sz` bytes,
//! -1, 0 or 1), `bpf_strtol`, `bpf_strtoul` (their result written through `res`: fresh bytes in
//! the symbolic executor; the interpreter refuses them in one line).

use crate::helpers::{Helper, WriteLen};

/// `bpf_strncmp(s1, s1_sz, s2)`.
pub(crate) const HELPER_STRNCMP: u32 = 182;

/// The string helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(105, "strings").writes_only(&[(4, WriteLen::Bytes(8))]), // strtol
    Helper::new(106, "strings").writes_only(&[(4, WriteLen::Bytes(8))]), // strtoul
    Helper::new(HELPER_STRNCMP, "strings").run(|m, pc, _| {
        let (s1, n, s2) = (m.regs[1], m.regs[2] as u32 as u64, m.regs[3]);
        for i in 0..n {
            let a = m.read(pc, s1 + i, 1)?[0];
            let b = m.read(pc, s2 + i, 1)?[0];
            if a != b {
                return Ok(if a < b { (-1i64) as u64 } else { 1 });
            }
            if a == 0 {
                break;
            }
        }
        Ok(0)
    }),
];
