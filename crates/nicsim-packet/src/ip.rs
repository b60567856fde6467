//! IP-version-independent helpers: protocol numbers and the Internet checksum (RFC 1071),
//! including the TCP/UDP pseudo-header for IPv4 (RFC 793) and IPv6 (RFC 8200 §8.1).
//!
//! All functions are total: they accept any byte slice and never panic.

use std::net::IpAddr;

/// IP protocol / IPv6 next-header numbers used by this crate.
pub mod protocol {
    /// IPv6 hop-by-hop options extension header.
    pub const HOP_BY_HOP: u8 = 0;
    /// ICMP for IPv4.
    pub const ICMP: u8 = 1;
    /// IPv4 in IP (RFC 2003).
    pub const IPV4_IN_IP: u8 = 4;
    /// Transmission Control Protocol.
    pub const TCP: u8 = 6;
    /// User Datagram Protocol.
    pub const UDP: u8 = 17;
    /// IPv6 in IP (RFC 2473, 4213).
    pub const IPV6_IN_IP: u8 = 41;
    /// IPv6 routing extension header.
    pub const ROUTING: u8 = 43;
    /// IPv6 fragment extension header.
    pub const FRAGMENT: u8 = 44;
    /// Generic Routing Encapsulation (RFC 2784).
    pub const GRE: u8 = 47;
    /// Encapsulating Security Payload (opaque: ends header walking).
    pub const ESP: u8 = 50;
    /// Authentication Header.
    pub const AH: u8 = 51;
    /// ICMP for IPv6.
    pub const ICMPV6: u8 = 58;
    /// IPv6 "no next header".
    pub const NO_NEXT_HEADER: u8 = 59;
    /// IPv6 destination options extension header.
    pub const DEST_OPTS: u8 = 60;

    /// A protocol as configs and rule sets name it: `tcp`, `udp` or `icmp` (any case), or its
    /// number (0..=255). `None` for anything else: each caller says what it expected.
    pub fn from_name(s: &str) -> Option<u8> {
        match s.to_ascii_lowercase().as_str() {
            "tcp" => Some(TCP),
            "udp" => Some(UDP),
            "icmp" => Some(ICMP),
            other => other.parse().ok(),
        }
    }

    /// [`from_name`], or the one message configs give for anything else.
    pub fn parse(s: &str) -> Result<u8, String> {
        from_name(s).ok_or_else(|| format!("'{s}' is not tcp, udp, icmp or a protocol number"))
    }
}

/// An IPv4 or IPv6 prefix (`ADDR/LEN`, or a bare address for the host), host bits masked off;
/// an IPv4 address lives in the low 32 bits. The one prefix type of the datapath's match table,
/// the firewall's rules and the router's routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix {
    v6: bool,
    value: u128,
    mask: u128,
}

/// (is IPv6, the address's bits): an address as [`Prefix::contains_bits`] takes it, computed
/// once for many prefixes.
#[inline]
pub fn addr_bits(a: IpAddr) -> (bool, u128) {
    match a {
        IpAddr::V4(v) => (false, u128::from(u32::from(v))),
        IpAddr::V6(v) => (true, u128::from(v)),
    }
}

impl Prefix {
    /// The prefix of `len` bits of `addr`; `None` when `len` exceeds the address's width.
    pub fn new(addr: IpAddr, len: u8) -> Option<Prefix> {
        let (v6, value) = addr_bits(addr);
        let width: u32 = if v6 { 128 } else { 32 };
        if u32::from(len) > width {
            return None;
        }
        let full = if v6 { u128::MAX } else { u128::from(u32::MAX) };
        let mask = full & !full.checked_shr(len.into()).unwrap_or(0);
        Some(Prefix {
            v6,
            value: value & mask,
            mask,
        })
    }

    /// The host prefix of `addr` (all its bits).
    pub fn exact(addr: IpAddr) -> Prefix {
        let len = if addr.is_ipv4() { 32 } else { 128 };
        Prefix::new(addr, len).expect("the full length fits")
    }

    /// Whether `ip` is in the prefix (an IPv4 address is never in an IPv6 prefix).
    #[inline]
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.contains_bits(addr_bits(ip))
    }

    /// [`Prefix::contains`] on an address already in its [`addr_bits`] form.
    #[inline]
    pub fn contains_bits(&self, (v6, bits): (bool, u128)) -> bool {
        v6 == self.v6 && bits & self.mask == self.value
    }

    /// The network's bits and the mask, IPv4 in the low 32 bits.
    pub fn bits(&self) -> (u128, u128) {
        (self.value, self.mask)
    }

    /// Whether it is an IPv6 prefix.
    pub fn is_v6(&self) -> bool {
        self.v6
    }
}

impl std::str::FromStr for Prefix {
    type Err = String;

    /// `ADDR/LEN` or a bare `ADDR` (a host prefix); the error is the reason only.
    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, len) = s.split_once('/').map_or((s, None), |(a, l)| (a, Some(l)));
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| "not an IPv4 or IPv6 address".to_string())?;
        let width = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => Some(width),
            Some(l) => l.parse().ok().filter(|&l| l <= width),
        };
        len.and_then(|l| Prefix::new(addr, l))
            .ok_or_else(|| format!("prefix length must be 0..={width}"))
    }
}

/// One's-complement arithmetic for the Internet checksum.
pub mod checksum {
    use super::IpAddr;

    /// Folded one's-complement sum of `data` as big-endian 16-bit words (odd tail zero-padded).
    pub fn data(data: &[u8]) -> u16 {
        let mut chunks = data.chunks_exact(2);
        let mut sum: u64 = chunks
            .by_ref()
            .map(|w| u64::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        if let [last] = chunks.remainder() {
            sum += u64::from(*last) << 8;
        }
        fold(sum)
    }

    /// One's-complement sum of partial sums.
    pub fn combine(sums: &[u16]) -> u16 {
        fold(sums.iter().map(|&s| u64::from(s)).sum())
    }

    /// Sum of the TCP/UDP pseudo-header. The IPv4 and IPv6 layouts have the same sum:
    /// both addresses, the protocol and the upper-layer length.
    pub fn pseudo_header(src: IpAddr, dst: IpAddr, protocol: u8, length: u32) -> u16 {
        let addr = |a: IpAddr| match a {
            IpAddr::V4(a) => data(&a.octets()),
            IpAddr::V6(a) => data(&a.octets()),
        };
        combine(&[
            addr(src),
            addr(dst),
            u16::from(protocol),
            (length >> 16) as u16,
            length as u16,
        ])
    }

    /// The checksum field value for a TCP/UDP `segment` whose checksum field holds zero.
    pub fn l4(src: IpAddr, dst: IpAddr, protocol: u8, segment: &[u8]) -> u16 {
        !combine(&[
            pseudo_header(src, dst, protocol, segment_len(segment)),
            data(segment),
        ])
    }

    /// Whether a TCP/UDP `segment` (checksum field included) carries a correct checksum.
    pub fn l4_valid(src: IpAddr, dst: IpAddr, protocol: u8, segment: &[u8]) -> bool {
        combine(&[
            pseudo_header(src, dst, protocol, segment_len(segment)),
            data(segment),
        ]) == 0xffff
    }

    fn segment_len(segment: &[u8]) -> u32 {
        u32::try_from(segment.len()).unwrap_or(u32::MAX)
    }

    fn fold(mut sum: u64) -> u16 {
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }
}

#[cfg(test)]
mod prefix_tests {
    use super::*;

    #[test]
    fn prefixes_and_protocols_parse_as_configs_and_rule_sets_write_them() {
        let p: Prefix = "10.1.2.3/16".parse().unwrap();
        assert_eq!(p.bits(), (0x0a01_0000, 0xffff_0000));
        assert!(p.contains("10.1.255.7".parse().unwrap()));
        assert!(!p.contains("10.2.0.1".parse().unwrap()));
        assert!(
            !p.contains("::a01:203".parse().unwrap()),
            "a v4 prefix holds no v6 address"
        );
        let h: Prefix = "2001:db8::1".parse().unwrap();
        assert!(h.is_v6() && h == Prefix::exact("2001:db8::1".parse().unwrap()));
        let all: Prefix = "::/0".parse().unwrap();
        assert!(
            all.contains("fe80::1".parse().unwrap()) && !all.contains("1.2.3.4".parse().unwrap())
        );
        assert_eq!(
            "10.0.0.0/33".parse::<Prefix>().unwrap_err(),
            "prefix length must be 0..=32"
        );
        assert_eq!(
            "x/8".parse::<Prefix>().unwrap_err(),
            "not an IPv4 or IPv6 address"
        );
        assert_eq!(protocol::parse("TCP"), Ok(6));
        assert_eq!(protocol::parse("icmp"), Ok(1));
        assert_eq!(protocol::parse("132"), Ok(132));
        assert_eq!(
            protocol::parse("256"),
            Err("'256' is not tcp, udp, icmp or a protocol number".into())
        );
    }
}
