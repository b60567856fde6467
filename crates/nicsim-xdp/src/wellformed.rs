//! Example packets a user can read (issue 34): the solver leaves every byte the path's condition
//! does not decide at 0, so an example is often an "IPv4" header of version 0 that tshark and
//! `nicsim_packet::dissect` stop at. [`well_formed`] gives the undecided header fields the values
//! of a real packet — Ethernet addresses and type, IPv4 version 4, IHL 5, total length, TTL 64,
//! protocol, addresses, UDP length, TCP data offset 5, IPv6 version 6, payload length, next
//! header, hop limit, an MPLS label's TTL, and the checksums last — one field at a time, keeping each only where the
//! packet still takes the same path: [`polish`] asks the concrete interpreter ([`crate::interp`])
//! for the same instruction trace and return value, so an example stays one that
//! `nicsim xdp validate` checks against the kernel. A field the path decides keeps the model's
//! value.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use nicsim_packet::ip::checksum;

use crate::interp::{run, MapState, RunOptions};
use crate::load::Program;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_ARP: u16 = 0x0806;
/// MPLS unicast and multicast: a label stack, then IPv4 or IPv6.
const MPLS: [u16; 2] = [0x8847, 0x8848];
const MPLS_ENTRY_BYTES: usize = 4;
/// Label stack entries followed at most.
const MAX_MPLS_LABELS: usize = 16;
const TPIDS: [u16; 3] = [0x8100, 0x88a8, 0x9100];
const ETH_HLEN_BYTES: usize = 14;
const IPV4_HLEN_BYTES: usize = 20;
const IPV6_HLEN_BYTES: usize = 40;
const UDP_HLEN_BYTES: usize = 8;
const TCP_HLEN_BYTES: usize = 20;
const ICMP_HLEN_BYTES: usize = 8;
const PROTO_ICMP: u8 = 1;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const PROTO_ICMPV6: u8 = 58;
const EXT_HOP_BY_HOP: u8 = 0;
const EXT_ROUTING: u8 = 43;
const EXT_FRAGMENT: u8 = 44;
const EXT_DEST_OPTS: u8 = 60;
/// IPv6 extension headers followed at most.
const MAX_EXT_HEADERS: usize = 8;
/// Ports where the path leaves them 0: the dynamic range's first, which no dissector claims.
const PORT_SRC: u16 = 49152;
const PORT_DST: u16 = 49153;
/// IP protocols a packet of a real network carries after IPv4 (or IPv6: their next headers),
/// extension headers of IPv6 and tunnels included; any other is replaced by UDP (or TCP) where
/// the path allows.
const KNOWN_PROTOCOLS: [u8; 12] = [1, 2, 4, 6, 17, 41, 43, 44, 47, 50, 51, 58];
/// The TTL (and hop limit) of a real packet, where the path leaves it 0.
const TTL: u8 = 64;
/// Addresses where the path leaves them 0 (locally administered, documentation-safe).
const MAC_DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const MAC_SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const IPV4_SRC: [u8; 4] = [10, 0, 0, 1];
const IPV4_DST: [u8; 4] = [10, 0, 0, 2];
const IPV6_SRC: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const IPV6_DST: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

fn be16(p: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([p[at], p[at + 1]])
}

/// The packet being made well-formed, and the test each edit must pass.
struct Polish<'a> {
    pkt: Vec<u8>,
    keeps: &'a mut dyn FnMut(&[u8]) -> bool,
}

impl Polish<'_> {
    /// Write `bytes` at `at` if the packet then still passes the test; whether it holds them.
    fn set(&mut self, at: usize, bytes: &[u8]) -> bool {
        let Some(end) = at.checked_add(bytes.len()).filter(|&e| e <= self.pkt.len()) else {
            return false;
        };
        if self.pkt[at..end] == *bytes {
            return true;
        }
        let mut cand = self.pkt.clone();
        cand[at..end].copy_from_slice(bytes);
        if (self.keeps)(&cand) {
            self.pkt = cand;
            true
        } else {
            false
        }
    }

    fn set16(&mut self, at: usize, v: u16) -> bool {
        self.set(at, &v.to_be_bytes())
    }

    /// Set the bits `mask` of the byte at `at` to those of `v`.
    fn set_bits(&mut self, at: usize, mask: u8, v: u8) -> bool {
        let b = (self.pkt[at] & !mask) | (v & mask);
        self.set(at, &[b])
    }

    /// Where the path leaves a field all zeros, the real packet's value.
    fn fill_zero(&mut self, at: usize, bytes: &[u8]) {
        if at + bytes.len() <= self.pkt.len()
            && self.pkt[at..at + bytes.len()].iter().all(|&b| b == 0)
        {
            self.set(at, bytes);
        }
    }

    /// An upper-layer protocol field at `at` that holds none a real packet carries: UDP, else
    /// TCP, where the path allows.
    fn protocol(&mut self, at: usize, room: usize) {
        if KNOWN_PROTOCOLS.contains(&self.pkt[at]) {
            return;
        }
        if room >= UDP_HLEN_BYTES && self.set(at, &[PROTO_UDP]) {
            return;
        }
        if room >= TCP_HLEN_BYTES {
            self.set(at, &[PROTO_TCP]);
        }
    }

    /// The upper layer at `l4` (ending at `end`) of protocol `proto`: its length and header
    /// fields; its checksum (pseudo header of `src`, `dst`) follows with [`Polish::l4_checksum`].
    fn l4_fields(&mut self, proto: u8, l4: usize, end: usize) {
        match proto {
            PROTO_UDP if l4 + UDP_HLEN_BYTES <= end => {
                self.fill_zero(l4, &PORT_SRC.to_be_bytes());
                self.fill_zero(l4 + 2, &PORT_DST.to_be_bytes());
                if let Ok(len) = u16::try_from(end - l4) {
                    self.set16(l4 + 4, len);
                }
            }
            PROTO_TCP if l4 + TCP_HLEN_BYTES <= end => {
                self.fill_zero(l4, &PORT_SRC.to_be_bytes());
                self.fill_zero(l4 + 2, &PORT_DST.to_be_bytes());
                if self.pkt[l4 + 12] >> 4 < 5 {
                    self.set_bits(l4 + 12, 0xf0, 5 << 4);
                }
            }
            _ => {}
        }
    }

    /// The checksum of the upper layer at `l4..end`: UDP, TCP (pseudo header of `src`, `dst`),
    /// ICMP, ICMPv6.
    fn l4_checksum(&mut self, proto: u8, l4: usize, end: usize, src: IpAddr, dst: IpAddr) {
        let at = match proto {
            PROTO_UDP if l4 + UDP_HLEN_BYTES <= end => l4 + 6,
            PROTO_TCP if l4 + TCP_HLEN_BYTES <= end => l4 + 16,
            PROTO_ICMP | PROTO_ICMPV6 if l4 + ICMP_HLEN_BYTES <= end => l4 + 2,
            _ => return,
        };
        let mut seg = self.pkt[l4..end].to_vec();
        seg[at - l4] = 0;
        seg[at - l4 + 1] = 0;
        let sum = match proto {
            PROTO_ICMP => !checksum::data(&seg),
            _ => checksum::l4(src, dst, proto, &seg),
        };
        // A UDP checksum that computes to 0 is sent as 0xffff (0 means "none").
        let sum = if proto == PROTO_UDP && sum == 0 {
            0xffff
        } else {
            sum
        };
        self.set16(at, sum);
    }

    /// An MPLS label stack at `at` (each entry's TTL 64 where the path leaves it 0), then the
    /// IPv4 or IPv6 packet after its bottom (IPv4 where the path leaves the version free).
    fn mpls(&mut self, mut at: usize) {
        for _ in 0..MAX_MPLS_LABELS {
            if at + MPLS_ENTRY_BYTES > self.pkt.len() {
                return;
            }
            if self.pkt[at + 3] == 0 {
                self.set(at + 3, &[TTL]);
            }
            at += MPLS_ENTRY_BYTES;
            if self.pkt[at - 2] & 1 == 1 {
                break;
            }
        }
        if at >= self.pkt.len() || self.pkt[at - 2] & 1 == 0 {
            return;
        }
        if !matches!(self.pkt[at] >> 4, 4 | 6) {
            self.set_bits(at, 0xf0, 4 << 4);
        }
        match self.pkt[at] >> 4 {
            4 => self.ipv4(at),
            6 => self.ipv6(at),
            _ => {}
        }
    }

    fn ipv4(&mut self, l3: usize) {
        let n = self.pkt.len();
        if n < l3 + IPV4_HLEN_BYTES {
            return;
        }
        self.set_bits(l3, 0xf0, 4 << 4);
        let ihl = usize::from(self.pkt[l3] & 0x0f) * 4;
        if ihl < IPV4_HLEN_BYTES || l3 + ihl > n {
            self.set_bits(l3, 0x0f, 5);
        }
        if let Ok(total) = u16::try_from(n - l3) {
            self.set16(l3 + 2, total);
        }
        if self.pkt[l3 + 8] == 0 {
            self.set(l3 + 8, &[TTL]);
        }
        self.fill_zero(l3 + 12, &IPV4_SRC);
        self.fill_zero(l3 + 16, &IPV4_DST);
        let ihl = usize::from(self.pkt[l3] & 0x0f) * 4;
        let total = usize::from(be16(&self.pkt, l3 + 2));
        let ok_header = self.pkt[l3] >> 4 == 4 && ihl >= IPV4_HLEN_BYTES && ihl <= total;
        let end = l3 + total.min(n - l3);
        let l4 = l3 + ihl;
        // A later fragment holds no upper-layer header.
        let first = be16(&self.pkt, l3 + 6) & 0x1fff == 0;
        if ok_header && l4 <= end {
            self.protocol(l3 + 9, end - l4);
            let proto = self.pkt[l3 + 9];
            if first {
                self.l4_fields(proto, l4, end);
                // A whole datagram only: a first fragment's checksum covers bytes not here.
                if be16(&self.pkt, l3 + 6) & 0x2000 == 0 {
                    let src = Ipv4Addr::from(
                        <[u8; 4]>::try_from(&self.pkt[l3 + 12..l3 + 16]).expect("4 bytes"),
                    );
                    let dst = Ipv4Addr::from(
                        <[u8; 4]>::try_from(&self.pkt[l3 + 16..l3 + 20]).expect("4 bytes"),
                    );
                    self.l4_checksum(proto, l4, end, src.into(), dst.into());
                }
            }
        }
        if l3 + ihl <= n && ihl >= IPV4_HLEN_BYTES {
            let mut h = self.pkt[l3..l3 + ihl].to_vec();
            h[10] = 0;
            h[11] = 0;
            self.set16(l3 + 10, !checksum::data(&h));
        }
    }

    fn ipv6(&mut self, l3: usize) {
        let n = self.pkt.len();
        if n < l3 + IPV6_HLEN_BYTES {
            return;
        }
        self.set_bits(l3, 0xf0, 6 << 4);
        if let Ok(len) = u16::try_from(n - l3 - IPV6_HLEN_BYTES) {
            self.set16(l3 + 4, len);
        }
        let first = l3 + IPV6_HLEN_BYTES;
        let end = first + usize::from(be16(&self.pkt, l3 + 4)).min(n - first);
        if self.pkt[l3 + 7] == 0 {
            self.set(l3 + 7, &[TTL]);
        }
        self.fill_zero(l3 + 8, &IPV6_SRC);
        self.fill_zero(l3 + 24, &IPV6_DST);
        // The extension headers the path decides (each next header the path leaves free is
        // UDP, or TCP): each one's length within the packet where the path allows.
        let (mut nh_at, mut l4) = (l3 + 6, first);
        for _ in 0..MAX_EXT_HEADERS {
            self.protocol(nh_at, end - l4);
            match self.pkt[nh_at] {
                EXT_HOP_BY_HOP | EXT_ROUTING | EXT_DEST_OPTS => {
                    if l4 + 8 > end {
                        return;
                    }
                    if l4 + (usize::from(self.pkt[l4 + 1]) + 1) * 8 > end {
                        self.set(l4 + 1, &[0]);
                    }
                    let len = (usize::from(self.pkt[l4 + 1]) + 1) * 8;
                    if l4 + len > end {
                        return;
                    }
                    (nh_at, l4) = (l4, l4 + len);
                }
                EXT_FRAGMENT => {
                    // A later fragment holds no upper-layer header.
                    if l4 + 8 > end || be16(&self.pkt, l4 + 2) & 0xfff8 != 0 {
                        return;
                    }
                    (nh_at, l4) = (l4, l4 + 8);
                }
                _ => break,
            }
        }
        let proto = self.pkt[nh_at];
        self.l4_fields(proto, l4, end);
        let src =
            Ipv6Addr::from(<[u8; 16]>::try_from(&self.pkt[l3 + 8..l3 + 24]).expect("16 bytes"));
        let dst =
            Ipv6Addr::from(<[u8; 16]>::try_from(&self.pkt[l3 + 24..l3 + 40]).expect("16 bytes"));
        self.l4_checksum(proto, l4, end, src.into(), dst.into());
    }
}

/// `packet` with the header fields its path does not decide set as in a real packet (see the
/// module): each field is tried on its own, in header order, checksums last, and kept only when
/// `keeps` accepts the packet with it. The length never changes.
pub fn well_formed(packet: &[u8], keeps: &mut dyn FnMut(&[u8]) -> bool) -> Vec<u8> {
    let mut p = Polish {
        pkt: packet.to_vec(),
        keeps,
    };
    let n = p.pkt.len();
    if n < ETH_HLEN_BYTES {
        return p.pkt;
    }
    p.fill_zero(0, &MAC_DST);
    p.fill_zero(6, &MAC_SRC);
    // The EtherType after at most two VLAN tags.
    let mut at = 12;
    for _ in 0..2 {
        if at + 6 <= n && TPIDS.contains(&be16(&p.pkt, at)) {
            at += 4;
        }
    }
    let t = be16(&p.pkt, at);
    if MPLS.contains(&t) {
        p.mpls(at + 2);
        return p.pkt;
    }
    if t != ETHERTYPE_IPV4 && t != ETHERTYPE_IPV6 && t != ETHERTYPE_ARP && !TPIDS.contains(&t) {
        let _ = (n >= at + 2 + IPV4_HLEN_BYTES && p.set16(at, ETHERTYPE_IPV4))
            || (n >= at + 2 + IPV6_HLEN_BYTES && p.set16(at, ETHERTYPE_IPV6));
    }
    match be16(&p.pkt, at) {
        ETHERTYPE_IPV4 => p.ipv4(at + 2),
        ETHERTYPE_IPV6 => p.ipv6(at + 2),
        _ => {}
    }
    p.pkt
}

/// [`well_formed`] for an example of `program`: an edit is kept when the interpreter, from the
/// map contents `maps` and with `opts`, still executes `trace` and returns `retval`. An example
/// that does not take `trace` to begin with (or faults) is returned unchanged.
pub fn polish(
    program: &Program,
    maps: &MapState,
    packet: &[u8],
    trace: &[u32],
    retval: u64,
    opts: &RunOptions,
) -> Vec<u8> {
    let mut keeps = |p: &[u8]| {
        let mut m = maps.clone();
        run(program, p, &mut m, opts).is_ok_and(|o| o.retval == retval && o.trace == trace)
    };
    if !keeps(packet) {
        return packet.to_vec();
    }
    well_formed(packet, &mut keeps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nicsim_packet::{parse, ParseError};

    fn everything(_: &[u8]) -> bool {
        true
    }

    #[test]
    fn zeros_become_a_udp_datagram_with_correct_checksums() {
        let p = well_formed(&[0u8; 60], &mut everything);
        let got = parse(&p).unwrap();
        assert_eq!(got.ethertype, ETHERTYPE_IPV4);
        let ip = got.ip.unwrap();
        assert_eq!((ip.proto, ip.ttl, ip.total_len), (PROTO_UDP, TTL, 46));
        assert_eq!(got.l4_offset, Some(34));
        assert_eq!(be16(&p, 38), 26, "UDP length");
        assert_eq!(checksum::data(&p[14..34]), 0xffff, "IPv4 header checksum");
        assert!(checksum::l4_valid(ip.src, ip.dst, PROTO_UDP, &p[34..60]));
    }

    #[test]
    fn a_decided_field_keeps_its_value() {
        // The "path" reads the version byte as 0 and the protocol as 6: the rest is free.
        let mut pkt = vec![0u8; 80];
        pkt[12..14].copy_from_slice(&[0x08, 0x00]);
        pkt[23] = PROTO_TCP;
        let mut keeps = |p: &[u8]| p[14] == 0 && p[23] == PROTO_TCP;
        let p = well_formed(&pkt, &mut keeps);
        assert_eq!((p[14], p[23], p[22]), (0, PROTO_TCP, TTL));
        assert_eq!(be16(&p, 16), 66, "total length");
        assert!(matches!(parse(&p), Err(ParseError::Malformed { .. })));
        // Version free, IHL decided as 6 (options): the TCP header starts at 14 + 24.
        pkt[14] = 0x06;
        let mut keeps = |p: &[u8]| p[14] & 0x0f == 6 && p[23] == PROTO_TCP;
        let p = well_formed(&pkt, &mut keeps);
        let got = parse(&p).unwrap();
        assert_eq!(got.l4_offset, Some(38));
        assert_eq!(p[38 + 12] >> 4, 5, "TCP data offset");
        let ip = got.ip.unwrap();
        assert!(checksum::l4_valid(ip.src, ip.dst, PROTO_TCP, &p[38..80]));
    }

    #[test]
    fn an_ipv6_header_gets_its_version_length_and_checksum() {
        let mut pkt = vec![0u8; 90];
        pkt[12..14].copy_from_slice(&[0x86, 0xdd]);
        let p = well_formed(&pkt, &mut everything);
        let got = parse(&p).unwrap();
        let ip = got.ip.unwrap();
        assert!(ip.src.is_ipv6());
        assert_eq!((ip.proto, ip.ttl, ip.total_len), (PROTO_UDP, TTL, 76));
        assert!(checksum::l4_valid(ip.src, ip.dst, PROTO_UDP, &p[54..90]));
        // Too short for any header: unchanged but for the addresses.
        let short = well_formed(&[0u8; 20], &mut everything);
        assert_eq!(short[14..], [0u8; 6]);
    }

    #[test]
    fn a_decided_extension_header_is_walked_and_its_length_kept_within_the_packet() {
        // IPv6 whose next header the path decides as a routing header (43); the routing
        // header's length (255: 2,048 bytes) and next header are free.
        let mut pkt = vec![0u8; 90];
        pkt[12..14].copy_from_slice(&[0x86, 0xdd]);
        pkt[20] = EXT_ROUTING;
        pkt[55] = 255;
        let mut keeps = |p: &[u8]| p[20] == EXT_ROUTING;
        let p = well_formed(&pkt, &mut keeps);
        assert_eq!(
            (p[54], p[55]),
            (PROTO_UDP, 0),
            "next header UDP, 8 bytes long"
        );
        let got = parse(&p).unwrap();
        let ip = got.ip.unwrap();
        assert_eq!((ip.proto, got.l4_offset), (PROTO_UDP, Some(62)));
        assert_eq!(got.l4.unwrap().dport, PORT_DST);
        assert!(checksum::l4_valid(ip.src, ip.dst, PROTO_UDP, &p[62..90]));
    }

    #[test]
    fn nothing_changes_when_the_path_decides_every_byte() {
        let pkt: Vec<u8> = (0..64u8).collect();
        let mut keeps = |p: &[u8]| p == pkt.as_slice();
        assert_eq!(well_formed(&pkt, &mut keeps), pkt);
    }

    #[test]
    fn polish_keeps_the_interpreters_path() {
        use crate::testasm::{exit, i, jeq, jgt_r, ldx, mov, movr, prog};
        // Pass unless the IPv4 protocol byte (frame offset 23) is TCP; drop a short packet.
        let p = prog(
            &[
                ldx(0x00, 2, 1, 0), // r2 = ctx->data
                ldx(0x00, 3, 1, 4), // r3 = ctx->data_end
                movr(4, 2),
                i(0x07, 4, 0, 0, 34), // r4 += 34
                jgt_r(4, 3, 4),       // past the end: drop
                ldx(0x10, 5, 2, 23),  // r5 = protocol
                jeq(5, 6, 2),         // TCP: drop
                mov(0, 2),
                exit(),
                mov(0, 1),
                exit(),
            ],
            vec![],
        );
        let maps = MapState::new(&p);
        let opts = RunOptions::default();
        let trace = |pkt: &[u8]| run(&p, pkt, &mut maps.clone(), &opts).unwrap();
        // The model's zeros: the protocol may be anything but TCP, so UDP.
        let zeros = [0u8; 60];
        let t0 = trace(&zeros);
        let out = polish(&p, &maps, &zeros, &t0.trace, t0.retval, &opts);
        let got = parse(&out).unwrap();
        assert_eq!(got.ip.unwrap().proto, PROTO_UDP);
        assert_eq!(trace(&out).trace, t0.trace);
        // TCP is what the path decides: it stays, and its header is made well-formed.
        let mut tcp = [0u8; 60];
        tcp[23] = PROTO_TCP;
        let t1 = trace(&tcp);
        assert_ne!(t1.trace, t0.trace);
        let out = polish(&p, &maps, &tcp, &t1.trace, t1.retval, &opts);
        let got = parse(&out).unwrap();
        assert_eq!(
            (got.ip.unwrap().proto, got.l4.unwrap().sport),
            (PROTO_TCP, PORT_SRC)
        );
        assert_eq!(trace(&out).trace, t1.trace);
        // An example that does not take the trace it is given is left alone.
        assert_eq!(polish(&p, &maps, &tcp, &t0.trace, t0.retval, &opts), tcp);
    }

    #[test]
    fn no_packet_makes_it_panic_and_the_length_never_changes() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..5_000 {
            let n = (next() % 140) as usize;
            let mut pkt: Vec<u8> = (0..n).map(|_| (next() % 4) as u8 * 0x2b).collect();
            if n >= 14 {
                let t: [u8; 2] =
                    [[0x08, 0x00], [0x86, 0xdd], [0x81, 0x00], [0x88, 0x47]][(next() % 4) as usize];
                pkt[12..14].copy_from_slice(&t);
            }
            let seed = next();
            let mut k = 0u64;
            let mut keeps = |_: &[u8]| {
                k += 1;
                (seed >> (k % 64)) & 1 == 1
            };
            assert_eq!(well_formed(&pkt, &mut keeps).len(), n);
        }
    }

    #[test]
    fn an_mpls_stack_gets_ttls_and_the_packet_after_it_a_real_header() {
        // Two labels, the second the bottom (decided); TTLs and the IPv4 header free.
        let mut pkt = vec![0u8; 70];
        pkt[12..14].copy_from_slice(&[0x88, 0x47]);
        pkt[20] = 0x01;
        let mut keeps = |p: &[u8]| p[12..14] == [0x88, 0x47] && p[16] & 1 == 0 && p[20] & 1 == 1;
        let p = well_formed(&pkt, &mut keeps);
        assert_eq!((p[17], p[21]), (TTL, TTL));
        assert_eq!((p[22], p[31]), (0x45, PROTO_UDP));
        assert_eq!(be16(&p, 24), 48, "total length");
        assert_eq!(checksum::data(&p[22..42]), 0xffff, "IPv4 header checksum");
    }
}
