//! Sockets and SYN cookies (net/core/filter.c): the socket lookups (`bpf_sk_lookup_tcp`,
//! `_udp`, `bpf_skc_lookup_tcp`) and `bpf_sk_release`, the casts `bpf_skc_to_*`, and the SYN
//! cookie helpers, with a socket (`bpf_tcp_check_syncookie`, `bpf_tcp_gen_syncookie`) or on raw
//! headers (`bpf_tcp_raw_gen_syncookie_ipv4`/`_ipv6`, `bpf_tcp_raw_check_syncookie_ipv4`/
//! `_ipv6`). The sockets and the cookie secret are the kernel's, not the program's: the symbolic
//! executor takes a lookup's and a cast's result as a socket or NULL (a fresh condition, the
//! socket's fields fresh when read, as a ring buffer record's) and the cookie helpers' results
//! as fresh values. The interpreter has no socket table (a lookup gives NULL, so the helpers
//! that need a socket are not reached) and no cookie secret: `gen` checks the header length
//! as the kernel does (-EINVAL unless `th_len` is the TCP header's `doff * 4`, at least 20)
//! and gives a cookie of its own with the MSS the kernel would encode (the largest of 536,
//! 1300, 1440, 1460 not above the SYN's MSS option, 536 without one), which is not the
//! kernel's; `check` finds no cookie valid (-EACCES).

use crate::helpers::Helper;
use crate::symex::{bv64, Region, V};

/// `bpf_sk_lookup_tcp`, `_udp`, `bpf_sk_release`, `bpf_skc_lookup_tcp`,
/// `bpf_tcp_check_syncookie`, `bpf_tcp_gen_syncookie`.
pub(crate) const HELPER_SK_LOOKUP_TCP: u32 = 84;
pub(crate) const HELPER_SK_LOOKUP_UDP: u32 = 85;
pub(crate) const HELPER_SK_RELEASE: u32 = 86;
pub(crate) const HELPER_SKC_LOOKUP_TCP: u32 = 99;
pub(crate) const HELPER_TCP_CHECK_SYNCOOKIE: u32 = 100;
pub(crate) const HELPER_TCP_GEN_SYNCOOKIE: u32 = 110;
/// `bpf_skc_to_tcp6_sock` … `_udp6_sock` (136–140), `_unix_sock` (178), `_mptcp_sock` (196).
const SKC_TO: [u32; 7] = [136, 137, 138, 139, 140, 178, 196];
/// `bpf_tcp_raw_gen_syncookie_ipv4`, `_ipv6`, `bpf_tcp_raw_check_syncookie_ipv4`, `_ipv6`.
pub(crate) const HELPER_TCP_RAW_GEN_SYNCOOKIE_IPV4: u32 = 204;
pub(crate) const HELPER_TCP_RAW_GEN_SYNCOOKIE_IPV6: u32 = 205;
pub(crate) const HELPER_TCP_RAW_CHECK_SYNCOOKIE_IPV4: u32 = 206;
pub(crate) const HELPER_TCP_RAW_CHECK_SYNCOOKIE_IPV6: u32 = 207;
/// The MSS values a SYN cookie encodes (`msstab` of net/ipv4/syncookies.c; IPv6's is the
/// same but for 1220 in place of 1300, which `gen` here does not distinguish).
const MSS_TABLE: [u64; 4] = [536, 1300, 1440, 1460];
/// TCP_MSS_DEFAULT.
const MSS_DEFAULT: u64 = 536;
/// EACCES: the cookie is not valid.
use crate::interp::EACCES;

/// A socket (or NULL: a fresh condition) whose fields read as fresh values.
fn socket_or_null(s: &mut crate::symex::Sym<'_>) -> V {
    let null = s.fresh("Bool", "sknull");
    V::P(Region::Record { null }, bv64(0), Some(0))
}

/// `bpf_tcp_raw_gen_syncookie_ipv4(iph, th, th_len)` / `_ipv6` as the kernel gives it:
/// -EINVAL unless `th_len` (32 bits) is at least 20 and the header's `doff * 4`, else a cookie
/// (32 bits, the kernel's secret) with the MSS in bits 32-47: a fresh value below 2^48, never
/// negative. (A fresh 64-bit value let a path take `cookie < 0` on a header the kernel
/// accepts, whose example the interpreter and the kernel could then not follow.)
fn raw_gen_syncookie(s: &mut crate::symex::Sym<'_>) -> V {
    use crate::insn::Size;
    let th = s.reg(2);
    let d = s.byte_at(&th, 12);
    let V::S(doff) = s.load(&d, Size::B) else {
        unreachable!("loads give scalars")
    };
    let len = s.reg(3);
    let len = s.scalar(&len);
    let cookie = s.fresh("(_ BitVec 48)", "cookie");
    let l32 = format!("((_ zero_extend 32) ((_ extract 31 0) {len}))");
    let ok = format!(
        "(and (bvuge {l32} {twenty}) (= {l32} (bvmul (bvlshr {doff} {four}) {four})))",
        twenty = bv64(20),
        four = bv64(4),
    );
    let einval = bv64((-crate::interp::EINVAL) as u64);
    V::S(s.def(
        "(_ BitVec 64)",
        &format!("(ite {ok} ((_ zero_extend 16) {cookie}) {einval})"),
    ))
}

/// The socket and SYN cookie helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_SK_LOOKUP_TCP, "socket")
        .run(|m, pc, id| m.sk_lookup(pc, id))
        .sym(|s, _, _| socket_or_null(s)),
    Helper::new(HELPER_SK_LOOKUP_UDP, "socket")
        .run(|m, pc, id| m.sk_lookup(pc, id))
        .sym(|s, _, _| socket_or_null(s)),
    Helper::new(HELPER_SKC_LOOKUP_TCP, "socket")
        .run(|m, pc, id| m.sk_lookup(pc, id))
        .sym(|s, _, _| socket_or_null(s)),
    Helper::new(HELPER_SK_RELEASE, "socket")
        .run(|m, pc, id| Err(m.helper_fault(pc, id, "r1 is not a socket the program holds")))
        .sym(|_, _, _| V::S(bv64(0))),
    Helper::new(HELPER_TCP_CHECK_SYNCOOKIE, "socket")
        .run(|m, pc, id| Err(m.helper_fault(pc, id, "r1 is not a socket the program holds"))),
    Helper::new(HELPER_TCP_GEN_SYNCOOKIE, "socket")
        .run(|m, pc, id| Err(m.helper_fault(pc, id, "r1 is not a socket the program holds"))),
    Helper::new(SKC_TO[0], "socket").sym(|s, _, _| socket_or_null(s)),
    Helper::new(SKC_TO[1], "socket").sym(|s, _, _| socket_or_null(s)),
    Helper::new(SKC_TO[2], "socket").sym(|s, _, _| socket_or_null(s)),
    Helper::new(SKC_TO[3], "socket").sym(|s, _, _| socket_or_null(s)),
    Helper::new(SKC_TO[4], "socket").sym(|s, _, _| socket_or_null(s)),
    Helper::new(SKC_TO[5], "socket").sym(|s, _, _| socket_or_null(s)),
    Helper::new(SKC_TO[6], "socket").sym(|s, _, _| socket_or_null(s)),
    Helper::new(HELPER_TCP_RAW_GEN_SYNCOOKIE_IPV4, "socket")
        .run(|m, pc, id| m.raw_gen_syncookie(pc, id))
        .sym(|s, _, _| raw_gen_syncookie(s)),
    Helper::new(HELPER_TCP_RAW_GEN_SYNCOOKIE_IPV6, "socket")
        .run(|m, pc, id| m.raw_gen_syncookie(pc, id))
        .sym(|s, _, _| raw_gen_syncookie(s)),
    Helper::new(HELPER_TCP_RAW_CHECK_SYNCOOKIE_IPV4, "socket")
        .run(|m, pc, _| m.raw_check_syncookie(pc)),
    Helper::new(HELPER_TCP_RAW_CHECK_SYNCOOKIE_IPV6, "socket")
        .run(|m, pc, _| m.raw_check_syncookie(pc)),
];

/// The interpreter's side.
mod run {
    use super::*;
    use crate::interp::{Fault, Machine, EINVAL};

    /// Bytes of an IPv4 and an IPv6 header the raw cookie helpers read (the verifier checks
    /// them), and of the TCP header.
    const IPV4_BYTES: usize = 20;
    const IPV6_BYTES: usize = 40;
    const TCP_BYTES: usize = 20;

    impl Machine<'_> {
        /// A socket lookup: the interpreter has no sockets (NULL); the tuple is read as the
        /// verifier requires it readable.
        pub(crate) fn sk_lookup(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let size = self.regs[3] as u32 as usize;
            if size > 0 {
                self.read(pc, self.regs[2], size.min(36))?;
            }
            let _ = id;
            Ok(0)
        }

        /// `bpf_tcp_raw_gen_syncookie_ipv4(iph, th, th_len)` / `_ipv6`: -EINVAL unless th_len
        /// is the header's `doff * 4` (at least 20); else the cookie (here not the kernel's)
        /// with the MSS it encodes in bits 32–47.
        pub(crate) fn raw_gen_syncookie(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let ip = if id == HELPER_TCP_RAW_GEN_SYNCOOKIE_IPV4 {
                IPV4_BYTES
            } else {
                IPV6_BYTES
            };
            let iph = self.read(pc, self.regs[1], ip)?;
            let th_len = self.regs[3] as u32 as usize;
            let th = self.read(pc, self.regs[2], TCP_BYTES)?;
            let doff = (th[12] >> 4) as usize * 4;
            if th_len < TCP_BYTES || th_len != doff {
                return Ok((-EINVAL) as u64);
            }
            let opts = self.read(pc, self.regs[2] + TCP_BYTES as u64, th_len - TCP_BYTES)?;
            let mss = mss_option(&opts).unwrap_or(MSS_DEFAULT);
            let encoded = MSS_TABLE
                .iter()
                .rev()
                .find(|&&m| m <= mss)
                .copied()
                .unwrap_or(MSS_TABLE[0]);
            // A cookie of the interpreter's own: a checksum of the addresses and ports.
            let cookie = crate::interp::csum_partial(&[&iph[..], &th[..4]].concat(), 0);
            Ok(cookie as u64 | (encoded << 32))
        }

        /// `bpf_tcp_raw_check_syncookie_ipv4(iph, th)` / `_ipv6`: no cookie is valid here.
        pub(crate) fn raw_check_syncookie(&mut self, pc: u32) -> Result<u64, Fault> {
            self.read(pc, self.regs[1], IPV4_BYTES)?;
            self.read(pc, self.regs[2], TCP_BYTES)?;
            Ok((-EACCES) as u64)
        }
    }

    /// The MSS option's value in TCP options `opts` (`tcp_parse_mss_option`), if any.
    fn mss_option(opts: &[u8]) -> Option<u64> {
        let mut i = 0;
        while i < opts.len() {
            match opts[i] {
                0 => return None,
                1 => i += 1,
                k => {
                    let len = *opts.get(i + 1)? as usize;
                    if len < 2 || i + len > opts.len() {
                        return None;
                    }
                    if k == 2 && len == 4 {
                        return Some(u16::from_be_bytes([opts[i + 2], opts[i + 3]]) as u64);
                    }
                    i += len;
                }
            }
        }
        None
    }
}
