//! RSS offload: the Toeplitz hash of Microsoft's "Receive Side Scaling" spec over
//! (src ip, dst ip, sport, dport) for TCP/UDP, or (src ip, dst ip) for other IP
//! traffic, and a 128-entry indirection table mapping the hash to a receive queue.
//! Non-IP frames get no hash and land on queue 0, as on real NICs.

use std::net::IpAddr;

use nicsim_packet::parse_five_tuple;

use crate::{DropReason, FuncMeta, FunctionalOffload, OffloadKind};

/// The default RSS key published by Microsoft (and used by most NIC drivers).
pub const MICROSOFT_RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

const TABLE_SIZE: usize = 128;

/// Toeplitz hash of `input` under `key`: for every set input bit (MSB first), XOR in
/// the 32 key bits starting at that bit's position. Key bits past the end count as 0.
pub fn toeplitz_hash(key: &[u8], input: &[u8]) -> u32 {
    let mut hash = 0u32;
    for (i, &byte) in input.iter().enumerate() {
        // The 40 key bits starting at input byte i cover all 8 windows for its bits.
        let window = (0..5).fold(0u64, |w, j| {
            w << 8 | u64::from(*key.get(i + j).unwrap_or(&0))
        });
        for bit in 0..8 {
            let set = u32::from(byte >> (7 - bit) & 1);
            hash ^= (window >> (8 - bit)) as u32 & set.wrapping_neg(); // branch-free
        }
    }
    hash
}

pub(crate) struct Rss {
    key: [u8; 40],
    table: [u16; TABLE_SIZE],
}

impl Rss {
    pub(crate) fn new(key: [u8; 40], queues: u16) -> Self {
        let queues = queues.max(1) as usize;
        Rss {
            key,
            table: std::array::from_fn(|i| (i % queues) as u16),
        }
    }

    fn hash(&self, body: &[u8]) -> Option<u32> {
        let mut input = [0u8; 36];
        let mut len = 0;
        let mut push = |bytes: &[u8]| {
            input[len..len + bytes.len()].copy_from_slice(bytes);
            len += bytes.len();
        };
        let (src, dst, ports) = match parse_five_tuple(body) {
            Some((t, _)) => (
                t.src,
                t.dst,
                matches!(t.proto, 6 | 17).then_some((t.sport, t.dport)),
            ),
            None => {
                let (src, dst) = ip_pair(body)?;
                (src, dst, None)
            }
        };
        for ip in [src, dst] {
            match ip {
                IpAddr::V4(a) => push(&a.octets()),
                IpAddr::V6(a) => push(&a.octets()),
            }
        }
        if let Some((sport, dport)) = ports {
            push(&sport.to_be_bytes());
            push(&dport.to_be_bytes());
        }
        Some(toeplitz_hash(&self.key, &input[..len]))
    }
}

/// Source and destination of an IPv4/IPv6 frame with at most one VLAN tag; used only
/// for IP traffic that `parse_five_tuple` rejects (not TCP/UDP).
fn ip_pair(body: &[u8]) -> Option<(IpAddr, IpAddr)> {
    let ethertype = |off: usize| Some(u16::from_be_bytes(body.get(off..off + 2)?.try_into().ok()?));
    let (kind, l3) = match ethertype(12)? {
        0x8100 | 0x88A8 => (ethertype(16)?, 18),
        kind => (kind, 14),
    };
    let ip = body.get(l3..)?;
    match kind {
        0x0800 if ip.len() >= 20 && ip[0] >> 4 == 4 => {
            let addr = |o: usize| IpAddr::from(<[u8; 4]>::try_from(&ip[o..o + 4]).unwrap());
            Some((addr(12), addr(16)))
        }
        0x86DD if ip.len() >= 40 && ip[0] >> 4 == 6 => {
            let addr = |o: usize| IpAddr::from(<[u8; 16]>::try_from(&ip[o..o + 16]).unwrap());
            Some((addr(8), addr(24)))
        }
        _ => None,
    }
}

impl FunctionalOffload for Rss {
    fn kind(&self) -> OffloadKind {
        OffloadKind::Rss
    }

    fn process(&self, frame: &mut Vec<u8>, meta: &mut FuncMeta) -> Result<(), DropReason> {
        let hash = self.hash(&frame[..frame.len().saturating_sub(4)]);
        meta.rss_hash = hash;
        meta.rss_queue = Some(hash.map_or(0, |h| self.table[h as usize % TABLE_SIZE]));
        Ok(())
    }

    fn prepare(&self, _frame: &mut Vec<u8>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn input(src: IpAddr, dst: IpAddr, ports: Option<(u16, u16)>) -> Vec<u8> {
        let mut v = Vec::new();
        for ip in [src, dst] {
            match ip {
                IpAddr::V4(a) => v.extend(a.octets()),
                IpAddr::V6(a) => v.extend(a.octets()),
            }
        }
        if let Some((s, d)) = ports {
            v.extend(s.to_be_bytes());
            v.extend(d.to_be_bytes());
        }
        v
    }

    /// Microsoft, "Verifying the RSS Hash Calculation": (src, sport, dst, dport, ip-only, with ports).
    #[test]
    fn microsoft_verification_vectors() {
        let v4: [(&str, u16, &str, u16, u32, u32); 5] = [
            (
                "66.9.149.187",
                2794,
                "161.142.100.80",
                1766,
                0x323e8fc2,
                0x51ccc178,
            ),
            (
                "199.92.111.2",
                14230,
                "65.69.140.83",
                4739,
                0xd718262a,
                0xc626b0ea,
            ),
            (
                "24.19.198.95",
                12898,
                "12.22.207.184",
                38024,
                0xd2d0a5de,
                0x5c2b394a,
            ),
            (
                "38.27.205.30",
                48228,
                "209.142.163.6",
                2217,
                0x82989176,
                0xafc7327f,
            ),
            (
                "153.39.163.191",
                44251,
                "202.188.127.2",
                1303,
                0x5d1809c5,
                0x10e828a2,
            ),
        ];
        let v6: [(&str, u16, &str, u16, u32, u32); 3] = [
            (
                "3ffe:2501:200:1fff::7",
                2794,
                "3ffe:2501:200:3::1",
                1766,
                0x2cc18cd5,
                0x40207d3d,
            ),
            (
                "3ffe:501:8::260:97ff:fe40:efab",
                14230,
                "ff02::1",
                4739,
                0x0f0c461c,
                0xdde51bbf,
            ),
            (
                "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
                44251,
                "fe80::200:f8ff:fe21:67cf",
                38024,
                0x4b61e985,
                0x02d1feef,
            ),
        ];
        let rows = v4
            .iter()
            .map(|r| {
                (
                    IpAddr::from(r.0.parse::<Ipv4Addr>().unwrap()),
                    IpAddr::from(r.2.parse::<Ipv4Addr>().unwrap()),
                    r,
                )
            })
            .chain(v6.iter().map(|r| {
                (
                    IpAddr::from(r.0.parse::<Ipv6Addr>().unwrap()),
                    IpAddr::from(r.2.parse::<Ipv6Addr>().unwrap()),
                    r,
                )
            }));
        for (src, dst, &(_, sport, _, dport, ip_only, with_ports)) in rows {
            assert_eq!(
                toeplitz_hash(&MICROSOFT_RSS_KEY, &input(src, dst, None)),
                ip_only,
                "{src} -> {dst}"
            );
            let full = input(src, dst, Some((sport, dport)));
            assert_eq!(
                toeplitz_hash(&MICROSOFT_RSS_KEY, &full),
                with_ports,
                "{src}:{sport} -> {dst}:{dport}"
            );
        }
    }

    #[test]
    fn indirection_table_is_round_robin() {
        let rss = Rss::new(MICROSOFT_RSS_KEY, 3);
        assert_eq!(&rss.table[..5], &[0, 1, 2, 0, 1]);
        assert!(Rss::new(MICROSOFT_RSS_KEY, 0).table.iter().all(|&q| q == 0));
    }
}
