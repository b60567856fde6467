//! Debug output: `bpf_trace_printk`, `bpf_trace_vprintk` and `bpf_snprintf` (kernel/bpf/
//! helpers.c `bpf_bprintf_prepare`, kernel/trace/bpf_trace.c). Debug prints ship in production
//! programs and cost time, so they are analysed, not refused. The interpreter formats as the
//! kernel does for the conversions a BPF format may hold (`%d %i %u %x %X %c %%` with `l`/`ll`,
//! `%s` from program memory, `%p` as `%px`; the flags `0 + - ` and a width): the result is the
//! formatted length (`bstr_printf`'s, of the whole text, though the kernel keeps 511 bytes;
//! `bpf_snprintf` writes the string and returns its length with the NUL), or -EINVAL for a format the kernel refuses (not NUL-terminated within its size, an
//! unknown conversion, more arguments than given, more than 3 for `trace_printk` or 12
//! otherwise). The symbolic executor takes the result as a fresh value (the trace pipe is not
//! the program's), and `bpf_snprintf`'s buffer as fresh bytes.

use crate::helpers::{Helper, WriteLen};

/// `bpf_trace_printk`, `bpf_snprintf`, `bpf_trace_vprintk`.
pub(crate) const HELPER_TRACE_PRINTK: u32 = 6;
pub(crate) const HELPER_SNPRINTF: u32 = 165;
pub(crate) const HELPER_TRACE_VPRINTK: u32 = 177;
/// `MAX_BPRINTF_VARARGS`: `bpf_trace_vprintk` and `bpf_snprintf` take at most 12 arguments;
/// `bpf_trace_printk` 3.
const MAX_VARARGS: usize = 12;
/// `MAX_BPRINTF_BUF`: the formatted text the kernel keeps.
const MAX_BUF_BYTES: usize = 512;

/// The debug-output helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_TRACE_PRINTK, "trace").run(|m, pc, id| m.trace_printk(pc, id)),
    Helper::new(HELPER_SNPRINTF, "trace")
        .writes_only(&[(1, WriteLen::Arg(2))])
        .run(|m, pc, id| m.snprintf(pc, id))
        .sym(|s, _, [r1, r2, _, _]| s.snprintf(&r1, &r2)),
    Helper::new(HELPER_TRACE_VPRINTK, "trace").run(|m, pc, id| m.trace_printk(pc, id)),
];

/// `fmt` formatted with `args` as `bpf_bprintf_prepare` and `bstr_printf` do, for the
/// conversions a BPF format may hold; `read_str(addr)` reads a `%s` argument (at most 511
/// bytes, up to its NUL). `None`: a format the kernel refuses (-EINVAL).
pub(crate) fn format(
    fmt: &[u8],
    args: &[u64],
    max_args: usize,
    mut read_str: impl FnMut(u64) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let end = fmt.iter().position(|&b| b == 0)?;
    let fmt = &fmt[..end];
    let mut out = Vec::new();
    let mut used = 0;
    let mut i = 0;
    while i < fmt.len() {
        let c = fmt[i];
        i += 1;
        if c != b'%' {
            // The kernel refuses non-printable characters other than whitespace.
            if !(c.is_ascii_graphic() || c.is_ascii_whitespace()) {
                return None;
            }
            out.push(c);
            continue;
        }
        if fmt.get(i) == Some(&b'%') {
            out.push(b'%');
            i += 1;
            continue;
        }
        if used >= max_args.min(args.len()) {
            return None;
        }
        let arg = args[used];
        used += 1;
        // Flags and a width, as bpf_bprintf_prepare allows them (no '#', no precision).
        let mut spec = String::from("%");
        while let Some(&f) = fmt.get(i) {
            if b"0-+ ".contains(&f) {
                spec.push(f as char);
                i += 1;
            } else {
                break;
            }
        }
        while let Some(&f) = fmt.get(i) {
            if f.is_ascii_digit() {
                spec.push(f as char);
                i += 1;
            } else {
                break;
            }
        }
        let mut longs = 0;
        while fmt.get(i) == Some(&b'l') {
            longs += 1;
            i += 1;
        }
        if longs > 2 {
            return None;
        }
        let conv = *fmt.get(i)?;
        i += 1;
        let (width, zero, left) = parse_spec(&spec);
        let text = match conv {
            b'd' | b'i' => {
                let v = if longs == 0 {
                    arg as u32 as i32 as i64
                } else {
                    arg as i64
                };
                v.to_string()
            }
            b'u' => (if longs == 0 { arg as u32 as u64 } else { arg }).to_string(),
            b'x' => format!("{:x}", if longs == 0 { arg as u32 as u64 } else { arg }),
            b'X' => format!("{:X}", if longs == 0 { arg as u32 as u64 } else { arg }),
            b'c' if longs == 0 => ((arg as u8) as char).to_string(),
            b's' if longs == 0 => {
                let s = read_str(arg)?;
                String::from_utf8_lossy(&s).into_owned()
            }
            b'p' if longs == 0 => {
                // %p hashes the address, %px prints it; a BPF format allows %pK, %px, %pB,
                // %pI4/%pi4/%pI6/%pi6 among others: only %p and %px are formatted here.
                match fmt.get(i) {
                    Some(b'x') => {
                        i += 1;
                        format!("{arg:016x}")
                    }
                    Some(c) if c.is_ascii_alphanumeric() => return None,
                    _ => format!("{arg:016x}"),
                }
            }
            _ => return None,
        };
        let pad = width.saturating_sub(text.len());
        if left {
            out.extend_from_slice(text.as_bytes());
            out.extend(std::iter::repeat_n(b' ', pad));
        } else {
            let fill = if zero && conv != b's' { b'0' } else { b' ' };
            out.extend(std::iter::repeat_n(fill, pad));
            out.extend_from_slice(text.as_bytes());
        }
    }
    Some(out)
}

/// The width and the `0` and `-` flags of a conversion's text (`%08`, `%-4`).
fn parse_spec(spec: &str) -> (usize, bool, bool) {
    let s = &spec[1..];
    let left = s.contains('-');
    let digits: String = s
        .trim_start_matches(['-', '+', ' '])
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let zero = digits.starts_with('0');
    (digits.parse().unwrap_or(0), zero, left)
}

/// The interpreter's side.
mod run {
    use super::{format, HELPER_SNPRINTF, HELPER_TRACE_PRINTK, MAX_BUF_BYTES, MAX_VARARGS};
    use crate::insn::Size;
    use crate::interp::*;

    impl Machine<'_> {
        /// A `%s` argument: the bytes up to its NUL, at most 511, from program memory.
        fn c_string(&self, pc: u32, addr: u64) -> Option<Vec<u8>> {
            let mut s = Vec::new();
            while s.len() < MAX_BUF_BYTES - 1 {
                let b = self.read(pc, addr.wrapping_add(s.len() as u64), 1).ok()?[0];
                if b == 0 {
                    break;
                }
                s.push(b);
            }
            Some(s)
        }

        /// The format at `fmt` (`size` bytes) with the arguments of `trace_printk` (r3–r5)
        /// or of an array (`data`, `len` bytes of u64s).
        fn bprintf(
            &self,
            pc: u32,
            fmt: u64,
            size: u64,
            args: Vec<u64>,
            max_args: usize,
        ) -> Result<Option<Vec<u8>>, Fault> {
            if size == 0 {
                return Ok(None);
            }
            let fmt = self.read(pc, fmt, size as usize)?;
            Ok(format(&fmt, &args, max_args, |a| self.c_string(pc, a)))
        }

        /// An array of `len` bytes of u64 arguments (`bpf_trace_vprintk`, `bpf_snprintf`):
        /// `None` when `len` is not a multiple of 8 or more than 12 arguments.
        fn varargs(&self, pc: u32, data: u64, len: u64) -> Result<Option<Vec<u64>>, Fault> {
            if !len.is_multiple_of(8) || len as usize > 8 * MAX_VARARGS || (data == 0 && len != 0) {
                return Ok(None);
            }
            let bytes = if len > 0 {
                self.read(pc, data, len as usize)?
            } else {
                Vec::new()
            };
            Ok(Some(
                bytes
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect(),
            ))
        }

        /// `bpf_trace_printk(fmt, size, a, b, c)` / `bpf_trace_vprintk(fmt, size, data, len)`:
        /// the formatted length, or -EINVAL.
        pub(crate) fn trace_printk(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let (fmt, size) = (self.regs[1], self.regs[2] as u32 as u64);
            let text = if id == HELPER_TRACE_PRINTK {
                let args = self.regs[3..=5].to_vec();
                self.bprintf(pc, fmt, size, args, 3)?
            } else {
                match self.varargs(pc, self.regs[3], self.regs[4] as u32 as u64)? {
                    Some(args) => self.bprintf(pc, fmt, size, args, MAX_VARARGS)?,
                    None => None,
                }
            };
            // bstr_printf's result: the length of the whole text, though 511 bytes are kept.
            Ok(match text {
                Some(t) => t.len() as u64,
                None => (-EINVAL) as u64,
            })
        }

        /// `bpf_snprintf(str, size, fmt, data, len)`: the text written into `str` (cut to
        /// `size - 1` bytes and a NUL) and its whole length with the NUL; -EINVAL writes
        /// nothing.
        pub(crate) fn snprintf(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            debug_assert_eq!(id, HELPER_SNPRINTF);
            let (out, size) = (self.regs[1], self.regs[2] as u32 as u64);
            // The verifier requires fmt to be a constant string in read-only data.
            let fmt = self.regs[3];
            let fmt_bytes = {
                let mut v = Vec::new();
                while v.len() < MAX_BUF_BYTES {
                    let b = self.read(pc, fmt.wrapping_add(v.len() as u64), 1)?[0];
                    v.push(b);
                    if b == 0 {
                        break;
                    }
                }
                v
            };
            let text = match self.varargs(pc, self.regs[4], self.regs[5] as u32 as u64)? {
                Some(args) => format(&fmt_bytes, &args, MAX_VARARGS, |a| self.c_string(pc, a)),
                None => None,
            };
            let Some(text) = text else {
                return Ok((-EINVAL) as u64);
            };
            if size > 0 {
                let n = text.len().min(size as usize - 1);
                for (i, &b) in text[..n].iter().enumerate() {
                    self.store(pc, out + i as u64, Size::B, b as u64, Access::Store)?;
                }
                self.store(pc, out + n as u64, Size::B, 0, Access::Store)?;
            }
            Ok(text.len() as u64 + 1)
        }
    }
}

/// The symbolic executor's side.
mod sym {
    use crate::symex::*;

    impl Sym<'_> {
        /// `bpf_snprintf`: the buffer's `size` bytes (all of its frame when `size` is not a
        /// constant) are fresh, and so is the result.
        pub(crate) fn snprintf(&mut self, out: &V, size: &V) -> V {
            let t = self.scalar(size);
            let n = t
                .strip_prefix("#x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .map(|v| v & 0xffff_ffff);
            match n {
                Some(n) if n <= 512 => {
                    for i in 0..n as i64 {
                        let d = self.byte_at(out, i);
                        let b = self.fresh("(_ BitVec 8)", "snp");
                        let b = self.def("(_ BitVec 64)", &format!("((_ zero_extend 56) {b})"));
                        self.store(&d, crate::insn::Size::B, &V::S(b));
                    }
                }
                _ => self.havoc(out),
            }
            self.fresh64("h")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::format;

    #[test]
    fn formats_as_the_kernel_does() {
        let f = |s: &str, a: &[u64]| format(format!("{s}\0").as_bytes(), a, 12, |_| None);
        assert_eq!(f("x=%d y=%u\n", &[u64::MAX, 7]).unwrap(), b"x=-1 y=7\n");
        assert_eq!(
            f("%lld %llx %x", &[u64::MAX, 255, 1 << 32]).unwrap(),
            b"-1 ff 0"
        );
        assert_eq!(f("%05d|%-3d|%%", &[42, 7]).unwrap(), b"00042|7  |%");
        assert_eq!(f("%c%c", &[b'o' as u64, b'k' as u64]).unwrap(), b"ok");
        assert!(
            f("%d %d", &[1]).is_none(),
            "more conversions than arguments"
        );
        assert!(f("%n", &[1]).is_none(), "a conversion the kernel refuses");
        assert!(
            f("%pI4", &[1]).is_none(),
            "a %p extension not formatted here"
        );
        assert!(format(b"no nul", &[], 3, |_| None).is_none());
        assert!(format(b"%d %d %d %d\0", &[1, 2, 3, 4], 3, |_| None).is_none());
        let s = format(b"%s!\0", &[0x1000], 3, |a| {
            (a == 0x1000).then(|| b"hi".to_vec())
        });
        assert_eq!(s.unwrap(), b"hi!");
    }
}
