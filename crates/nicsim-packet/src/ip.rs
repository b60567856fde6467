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
