//! The interpreter on the clang-built suite in $NICSIM_XDP_OBJS (`make xdp-suite` builds it):
//! hand-built packets, the return codes and packet changes the C sources in examples/xdp/
//! imply, and every trace checked to be a path of the analyzer's graphs. A test whose object is
//! not built says so and passes without checking anything.

mod common;

use common::nfp;
use nicsim_xdp::cost::Dag;
use nicsim_xdp::interp::{run, MapState, Outcome, RunOptions, XDP_DROP, XDP_PASS, XDP_TX};
use nicsim_xdp::{load, Analysis, Options, Program};

fn obj(name: &str) -> Option<Vec<u8>> {
    let p = common::obj_path(name);
    match std::fs::read(&p) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!(
                "skipped: {}: {e} (run `make xdp-suite` to build the XDP suite)",
                p.display()
            );
            None
        }
    }
}

/// A loaded suite program and its analysis.
struct Suite {
    p: Program,
    a: Analysis,
}

fn suite(name: &str) -> Option<Suite> {
    let bytes = obj(name)?;
    let p = load(&bytes, None).unwrap();
    let a = Analysis::new(&bytes, nfp(), &Options::default()).unwrap();
    Some(Suite { p, a })
}

/// Whether `trace` is an entry→sink path of `dag` (an edge executes its source node's
/// instruction, so the trace must be the node sequence's instructions).
fn check_path(dag: &Dag, trace: &[u32]) -> Result<(), String> {
    let mut cur: Vec<u32> = vec![0];
    for (k, &pc) in trace.iter().enumerate() {
        let mut next: Vec<u32> = cur
            .iter()
            .flat_map(|&u| dag.edges(u))
            .filter(|&e| dag.pc[e] == pc)
            .map(|e| dag.to[e])
            .collect();
        next.sort_unstable();
        next.dedup();
        if next.is_empty() {
            return Err(format!(
                "step {k}: no edge executes instruction {pc} from nodes {cur:?} (trace so far {:?})",
                &trace[..k]
            ));
        }
        cur = next;
    }
    if cur.contains(&dag.sink()) {
        Ok(())
    } else {
        Err(format!("the trace ends at nodes {cur:?}, not at the sink"))
    }
}

impl Suite {
    fn maps(&self) -> MapState {
        MapState::new(&self.p)
    }
    /// Run, and check the trace against both of the analyzer's graphs.
    fn run(&self, pkt: &[u8], maps: &mut MapState) -> Outcome {
        let o = run(&self.p, pkt, maps, &RunOptions::default()).unwrap();
        assert_eq!(o.trace.len() as u64, o.insns);
        check_path(&self.a.dag, &o.trace).unwrap_or_else(|e| panic!("dag: {e}"));
        check_path(&self.a.search_dag, &o.trace).unwrap_or_else(|e| panic!("split dag: {e}"));
        o
    }
}

// ---------------------------------------------------------------------------------------------
// Packets
// ---------------------------------------------------------------------------------------------

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const IP_A: [u8; 4] = [10, 0, 0, 1];
const IP_B: [u8; 4] = [10, 0, 0, 2];

fn eth(proto: u16) -> Vec<u8> {
    let mut v = MAC_B.to_vec(); // destination
    v.extend(MAC_A); // source
    v.extend(proto.to_be_bytes());
    v
}

/// The IPv4 header checksum field value that makes the header sum to 0xffff.
fn ip_checksum(h: &[u8]) -> u16 {
    let mut s: u32 = h
        .chunks(2)
        .map(|w| u16::from_be_bytes([w[0], w[1]]) as u32)
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

fn ipv4(proto: u8, payload_len: usize) -> Vec<u8> {
    let tot = (20 + payload_len) as u16;
    let mut h = vec![0x45, 0];
    h.extend(tot.to_be_bytes());
    h.extend([0x12, 0x34, 0x40, 0, 64, proto, 0, 0]);
    h.extend(IP_A);
    h.extend(IP_B);
    let c = ip_checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = sport.to_be_bytes().to_vec();
    v.extend(dport.to_be_bytes());
    v.extend(((8 + payload.len()) as u16).to_be_bytes());
    v.extend([0xab, 0xcd]); // a checksum the programs clear
    v.extend(payload);
    v
}

fn eth_ipv4_udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = eth(0x0800);
    v.extend(ipv4(17, 8 + payload.len()));
    v.extend(udp(sport, dport, payload));
    v
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le16(b: &[u8]) -> u32 {
    u16::from_le_bytes([b[0], b[1]]) as u32
}

// ---------------------------------------------------------------------------------------------
// Programs
// ---------------------------------------------------------------------------------------------

/// quic_lb.c's routing bits: CID octets 1..8 under its mask, most significant first.
fn quic_routing_bits(cid: &[u8]) -> u32 {
    const MASK: u64 = 0xd3a14c5e96b8207f;
    let mut r = 0u32;
    for i in 0..64 {
        if (MASK >> (63 - i)) & 1 == 1 {
            r = (r << 1) | ((cid[1 + i / 8] >> (7 - i % 8)) & 1) as u32;
        }
    }
    r
}

/// quic_lb.c's fallback: the modulus from a hash of the addresses and ports (as the program
/// loads them, little-endian words).
fn quic_fallback(flow: u32) -> u32 {
    let mut f = flow ^ (flow >> 16);
    f = f.wrapping_mul(0x7feb352d);
    f ^= f >> 15;
    f % 1021
}

/// The `active` map with the servers of these moduli.
fn quic_active(s: &Suite, moduli: &[u32]) -> MapState {
    let mut maps = s.maps();
    let mut words = std::collections::BTreeMap::<u32, u64>::new();
    for &m in moduli {
        *words.entry(m / 64).or_default() |= 1 << (m % 64);
    }
    for (w, bits) in words {
        maps.set("active", &w.to_le_bytes(), &bits.to_le_bytes())
            .unwrap();
    }
    maps
}

#[test]
fn quic_lb_routes_by_the_obfuscated_cid() {
    let Some(s) = suite("quic_lb_v4") else { return };
    // Short header (0x40), a 9-octet CID: config rotation 0, then the routing octets.
    let cid = [0x17, 0x9a, 0x3c, 0x55, 0xe1, 0x02, 0x7f, 0xc4, 0x18];
    let mut quic = vec![0x40];
    quic.extend(cid);
    quic.extend([0xaa; 20]);
    let modulus = quic_routing_bits(&cid) % 1021;
    let pkt = eth_ipv4_udp(5000, 443, &quic);
    let mut maps = quic_active(&s, &[modulus]);
    let o = s.run(&pkt, &mut maps);
    assert_eq!(o.retval, XDP_TX);
    let out = &o.packet;
    assert_eq!(out.len(), pkt.len());
    assert_eq!(
        (&out[0..6], &out[6..12]),
        (&MAC_A[..], &MAC_B[..]),
        "MACs swapped"
    );
    assert_eq!(
        &out[30..34],
        &[10, 1, (modulus >> 8) as u8, modulus as u8],
        "the server's address: 10.1.<modulus>"
    );
    assert_eq!(
        ip_checksum(&out[14..34]),
        0,
        "the incremental checksum update is right"
    );
    assert_eq!(&out[40..42], &[0, 0], "UDP checksum cleared");
    assert_eq!(&out[42..], &pkt[42..]);

    // The same CID's modulus without an active server: a short header is dropped; a long
    // header (version 1, DCID length 9) falls back to the 5-tuple hash.
    assert_eq!(s.run(&pkt, &mut s.maps()).retval, XDP_DROP);
    let mut long = vec![0xc0, 0, 0, 0, 1, 9];
    long.extend(cid);
    long.extend([0xaa; 20]);
    let pkt = eth_ipv4_udp(5000, 443, &long);
    let flow = le32(&IP_A)
        ^ le32(&IP_B)
        ^ ((le16(&5000u16.to_be_bytes()) << 16) | le16(&443u16.to_be_bytes()));
    let fb = quic_fallback(flow);
    assert_ne!(fb, modulus);
    let o = s.run(&pkt, &mut quic_active(&s, &[fb]));
    assert_eq!(o.retval, XDP_TX);
    assert_eq!(&o.packet[30..34], &[10, 1, (fb >> 8) as u8, fb as u8]);
    // No server for the fallback either: to the host.
    assert_eq!(s.run(&pkt, &mut s.maps()).retval, XDP_PASS);

    // Config rotation 0b11 (failover): the 5-tuple hash, whatever the CID says.
    let mut failover = quic.clone();
    failover[1] |= 0xc0;
    let pkt = eth_ipv4_udp(5000, 443, &failover);
    let o = s.run(&pkt, &mut quic_active(&s, &[fb]));
    assert_eq!(o.retval, XDP_TX);
    assert_eq!(&o.packet[30..34], &[10, 1, (fb >> 8) as u8, fb as u8]);

    // Not for port 443, not UDP: to the host, untouched. Cut short: dropped.
    let pkt = eth_ipv4_udp(5000, 444, &quic);
    let o = s.run(&pkt, &mut s.maps());
    assert_eq!((o.retval, &o.packet), (XDP_PASS, &pkt));
    let mut tcp = eth(0x0800);
    tcp.extend(ipv4(6, 20));
    tcp.extend([0; 20]);
    assert_eq!(s.run(&tcp, &mut s.maps()).retval, XDP_PASS);
    let pkt = eth_ipv4_udp(5000, 443, &quic);
    assert_eq!(
        s.run(&pkt[..45], &mut s.maps()).retval,
        XDP_DROP,
        "CID cut short"
    );
    assert_eq!(s.run(&pkt[..20], &mut s.maps()).retval, XDP_DROP);
    assert_eq!(s.run(&pkt[..10], &mut s.maps()).retval, XDP_DROP);
}

#[test]
fn quic_lb_v6_walks_extension_headers() {
    let Some(s) = suite("quic_lb_v6") else { return };
    let cid = [0x17, 0x9a, 0x3c, 0x55, 0xe1, 0x02, 0x7f, 0xc4, 0x18];
    let mut quic = vec![0x40];
    quic.extend(cid);
    quic.extend([0xaa; 8]);
    let modulus = quic_routing_bits(&cid) % 1021;
    let l4 = udp(5000, 443, &quic);
    // Hop-by-hop (8 bytes) then destination options (16 bytes), then UDP.
    let mut ext = vec![60, 0, 1, 4, 0, 0, 0, 0];
    ext.extend([17, 1, 1, 12]);
    ext.extend([0; 12]);
    let mut pkt = eth(0x86dd);
    pkt.extend([0x60, 0, 0, 0]);
    pkt.extend(((ext.len() + l4.len()) as u16).to_be_bytes());
    pkt.extend([0, 64]); // next header: hop-by-hop
    pkt.extend([0x20; 16]);
    pkt.extend([0x21; 16]);
    pkt.extend(&ext);
    pkt.extend(&l4);
    let mut maps = quic_active(&s, &[modulus]);
    let o = s.run(&pkt, &mut maps);
    assert_eq!(o.retval, XDP_TX);
    let out = &o.packet;
    assert_eq!((&out[0..6], &out[6..12]), (&MAC_A[..], &MAC_B[..]));
    let mut want = vec![0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0];
    want.extend(modulus.to_be_bytes());
    assert_eq!(
        &out[38..54],
        &want[..],
        "the server's address: 2001:db8:1::<modulus>"
    );
    let udp_at = 54 + ext.len();
    assert_eq!(
        &out[udp_at + 6..udp_at + 8],
        &[0, 0],
        "UDP checksum cleared"
    );
    assert_eq!(&out[udp_at + 8..], &quic);
    // A fragment header (44) is not walked: to the host.
    let mut frag = pkt.clone();
    frag[20] = 44;
    assert_eq!(s.run(&frag, &mut maps).retval, XDP_PASS);
    // Five extension headers: more than the program walks, to the host.
    let mut five = eth(0x86dd);
    five.extend([0x60, 0, 0, 0]);
    five.extend(((40 + l4.len()) as u16).to_be_bytes());
    five.extend([0, 64]);
    five.extend([0x20; 16]);
    five.extend([0x21; 16]);
    for k in 0..5 {
        five.extend([if k < 4 { 60 } else { 17 }, 0, 1, 4, 0, 0, 0, 0]);
    }
    five.extend(&l4);
    assert_eq!(s.run(&five, &mut maps).retval, XDP_PASS);
}

#[test]
fn parser_passes_what_it_parses_unchanged() {
    let Some(s) = suite("parser") else { return };
    // VXLAN: outer Ethernet/IPv4/UDP 4789, inner Ethernet/IPv6/TCP.
    let mut inner = eth(0x86dd);
    let mut ip6 = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
    ip6.extend([0x20; 16]);
    ip6.extend([0x21; 16]);
    inner.extend(ip6);
    inner.extend((0..20).map(|i| i as u8 + 1));
    let mut vx = vec![0x08, 0, 0, 0, 0, 0, 0x2a, 0];
    vx.extend(inner);
    let pkt = eth_ipv4_udp(1234, 4789, &vx);
    let o = s.run(&pkt, &mut s.maps());
    assert_eq!((o.retval, &o.packet), (XDP_PASS, &pkt));

    // Two VLAN tags, two MPLS labels (bottom of stack on the second), IPv4, UDP.
    let mut pkt = eth(0x88a8);
    pkt.extend([0x00, 0x64, 0x81, 0x00]);
    pkt.extend([0x00, 0x65, 0x88, 0x47]);
    pkt.extend([0x00, 0x01, 0x00, 0x40, 0x00, 0x02, 0x01, 0x40]);
    pkt.extend(ipv4(17, 12));
    pkt.extend(udp(1, 2, &[9; 4]));
    let o = s.run(&pkt, &mut s.maps());
    assert_eq!((o.retval, &o.packet), (XDP_PASS, &pkt));

    // ARP goes to the host; a truncated IPv4 header is dropped, as is a bad IHL.
    let mut arp = eth(0x0806);
    arp.extend([0; 28]);
    assert_eq!(s.run(&arp, &mut s.maps()).retval, XDP_PASS);
    let mut short = eth(0x0800);
    short.extend(&ipv4(17, 0)[..10]);
    assert_eq!(s.run(&short, &mut s.maps()).retval, XDP_DROP);
    let mut bad = eth(0x0800);
    let mut h = ipv4(17, 8);
    h[0] = 0x44;
    bad.extend(h);
    bad.extend(udp(1, 2, &[]));
    assert_eq!(s.run(&bad, &mut s.maps()).retval, XDP_DROP);
}

/// The DNS cache's name hash: rotate left by 7 and xor each lower-cased wire byte, the
/// terminating 0 included.
fn dns_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0x9e37_79b9;
    for &b in name {
        h = h.rotate_left(7) ^ b as u32;
        if b == 0 {
            break;
        }
    }
    h
}

#[test]
fn dns_cache_answers_a_cached_name_in_place() {
    let Some(s) = suite("dns_cache") else { return };
    let qname = b"\x07Example\x03COM\x00";
    let lower: Vec<u8> = qname.iter().map(|b| b.to_ascii_lowercase()).collect();
    let mut dns = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    dns.extend(qname);
    dns.extend([0, 1, 0, 1]);
    let pkt = eth_ipv4_udp(33333, 53, &dns);

    // struct answer { u8 name[48]; u32 name_len; u32 answer_len; u8 rr[32]; }
    let rr = [0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 93, 184, 216, 34];
    let mut answer = lower.clone();
    answer.resize(48, 0);
    answer.extend((lower.len() as u32).to_le_bytes());
    answer.extend((rr.len() as u32).to_le_bytes());
    answer.extend(rr);
    answer.resize(88, 0);
    let key = dns_hash(&lower) % 4096;
    let mut maps = s.maps();
    maps.set("cache", &key.to_le_bytes(), &answer).unwrap();
    let o = s.run(&pkt, &mut maps);
    assert_eq!(o.retval, XDP_TX);
    let out = &o.packet;
    assert_eq!(out.len(), pkt.len() + rr.len(), "grown by the answer");
    assert_eq!(&out[pkt.len()..], &rr, "the answer follows the question");
    assert_eq!(&out[0..6], &MAC_A);
    assert_eq!(&out[6..12], &MAC_B);
    assert_eq!(&out[26..30], &IP_B);
    assert_eq!(&out[30..34], &IP_A);
    assert_eq!(&out[34..38], &[0, 53, 0x82, 0x35], "ports swapped");
    assert_eq!(
        u16::from_be_bytes([out[16], out[17]]) as usize,
        out.len() - 14
    );
    assert_eq!(out[22], 64, "TTL");
    assert_eq!(ip_checksum(&out[14..34]), 0);
    assert_eq!(
        u16::from_be_bytes([out[38], out[39]]) as usize,
        out.len() - 34
    );
    assert_eq!(&out[40..42], &[0, 0]);
    assert_eq!(&out[44..46], &[0x85, 0x80], "QR, AA, RD and RA");
    assert_eq!(&out[48..50], &[0, 1], "one answer");
    assert_eq!(&out[54..pkt.len()], &pkt[54..], "the question stays");

    // Another name (or none cached) goes to the host unchanged.
    let o = s.run(&pkt, &mut s.maps());
    assert_eq!((o.retval, &o.packet), (XDP_PASS, &pkt));
    // A query with trailing bytes after QTYPE/QCLASS is not answered.
    let mut dns2 = dns.clone();
    dns2.push(0);
    let pkt2 = eth_ipv4_udp(33333, 53, &dns2);
    assert_eq!(s.run(&pkt2, &mut maps).retval, XDP_PASS);
    // A response (QR set) is not answered either.
    let mut dns3 = dns.clone();
    dns3[2] |= 0x80;
    assert_eq!(
        s.run(&eth_ipv4_udp(33333, 53, &dns3), &mut maps).retval,
        XDP_PASS
    );
}

/// calls.c's `fold`: 16-bit words (host order) summed while they fit, folded once.
fn fold(bytes: &[u8], words: usize) -> u32 {
    let s: u32 = bytes
        .chunks_exact(2)
        .take(words)
        .map(|w| u16::from_le_bytes([w[0], w[1]]) as u32)
        .sum();
    (s & 0xffff) + (s >> 16)
}

#[test]
fn calls_counts_in_three_maps() {
    let Some(s) = suite("calls") else { return };
    let pkt: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
    let a = fold(&pkt, 7);
    let b = fold(&pkt[14..], 10);
    let k = (a ^ b) & 3;
    let mut maps = s.maps();
    for _ in 0..2 {
        let o = s.run(&pkt, &mut maps);
        assert_eq!((o.retval, &o.packet), (XDP_PASS, &pkt));
    }
    assert_eq!(
        maps.entries("counters").unwrap(),
        [(k.to_le_bytes().to_vec(), 2u64.to_le_bytes().to_vec())]
    );
    assert_eq!(
        maps.entries("seen").unwrap(),
        [((a ^ b).to_le_bytes().to_vec(), 1u32.to_le_bytes().to_vec())]
    );
    assert_eq!(
        maps.get("bytes", &0u32.to_le_bytes()).unwrap(),
        Some((2 * pkt.len() as u64).to_le_bytes().to_vec())
    );
    // A packet that ends inside the second fold's words: it stops at the end.
    let short = &pkt[..20];
    let mut maps = s.maps();
    s.run(short, &mut maps);
    let key = fold(short, 7) ^ fold(&short[14..], 10);
    assert_eq!(maps.entries("seen").unwrap()[0].0, key.to_le_bytes());
    assert_eq!(s.run(&pkt[..13], &mut maps).retval, XDP_DROP);
}

fn lowbias32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846ca68b);
    x ^ (x >> 16)
}

#[test]
fn count_min_adds_one_per_stage() {
    const SEEDS: [u32; 5] = [0x262fcdb8, 0xddf99a28, 0xbc0489ca, 0x0c7d44dc, 0x7db13ff5];
    let Some(s) = suite("count_min_5") else {
        return;
    };
    let pkt = eth_ipv4_udp(4000, 53, &[0; 18]);
    let mut key = lowbias32(le32(&IP_A));
    key = lowbias32(key ^ le32(&IP_B));
    key = lowbias32(key ^ ((le16(&4000u16.to_be_bytes()) << 16) | le16(&53u16.to_be_bytes())));
    key ^= 17;
    let mut want: Vec<(Vec<u8>, Vec<u8>)> = SEEDS
        .iter()
        .enumerate()
        .map(|(st, &seed)| {
            let idx = st as u32 * 4096 + (lowbias32(key ^ seed) & 4095);
            (idx.to_le_bytes().to_vec(), 1u32.to_le_bytes().to_vec())
        })
        .collect();
    want.sort();
    let mut maps = s.maps();
    let o = s.run(&pkt, &mut maps);
    assert_eq!((o.retval, &o.packet), (XDP_PASS, &pkt));
    assert_eq!(maps.entries("sketch").unwrap(), want);
    // Not IPv4, or ICMP: passed, nothing counted; too short: passed too.
    let mut v6 = eth(0x86dd);
    v6.extend([0; 60]);
    let mut maps = s.maps();
    assert_eq!(s.run(&v6, &mut maps).retval, XDP_PASS);
    let mut icmp = eth(0x0800);
    icmp.extend(ipv4(1, 26));
    icmp.extend([0; 26]);
    assert_eq!(s.run(&icmp, &mut maps).retval, XDP_PASS);
    assert_eq!(maps.entries("sketch").unwrap(), []);
    assert_eq!(s.run(&pkt[..41], &mut maps).retval, XDP_PASS);
}

/// The a2u table of rtp_alaw.c, read from the source.
fn a2u() -> Vec<u8> {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/xdp/rtp_alaw.c"
    ))
    .unwrap();
    let start = src.find("a2u[256] = {").unwrap();
    let end = start + src[start..].find("};").unwrap();
    let t: Vec<u8> = src[start + 12..end]
        .split(',')
        .filter_map(|x| x.trim().strip_prefix("0x"))
        .map(|x| u8::from_str_radix(x, 16).unwrap())
        .collect();
    assert_eq!(t.len(), 256);
    t
}

#[test]
fn rtp_alaw_transcodes_the_payload_through_its_rodata_table() {
    let table = a2u();
    for name in ["rtp_alaw", "rtp_alaw_opt"] {
        let Some(s) = suite(name) else { return };
        for samples in [160usize, 200, 37, 38, 1] {
            let mut rtp = vec![0x80, 0x88, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3];
            rtp.extend((0..samples).map(|i| (i * 7 + 3) as u8));
            let pkt = eth_ipv4_udp(20000, 20002, &rtp);
            let o = s.run(&pkt, &mut s.maps());
            assert_eq!(o.retval, XDP_PASS, "{name}");
            let out = &o.packet;
            assert_eq!(out.len(), pkt.len());
            assert_eq!(out[43], 0x80, "{name}: marker kept, payload type 0");
            assert_eq!(&out[40..42], &[0, 0]);
            let payload = &pkt[54..];
            let want: Vec<u8> = payload
                .iter()
                .enumerate()
                .map(|(i, &b)| if i < 160 { table[b as usize] } else { b })
                .collect();
            assert_eq!(&out[54..], &want[..], "{name}, {samples} samples");
        }
        // Payload type 0 (already µ-law): untouched.
        let mut rtp = vec![0x80, 0x00, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3];
        rtp.extend([5; 20]);
        let pkt = eth_ipv4_udp(20000, 20002, &rtp);
        let o = s.run(&pkt, &mut s.maps());
        assert_eq!((o.retval, &o.packet), (XDP_PASS, &pkt));
    }
}

#[test]
fn flags_follows_the_split_graph() {
    let Some(s) = suite("flags") else { return };
    for (p0, p1, p2, want) in [
        (1u8, 1u8, 9u8, XDP_PASS), // a: n = 9 + 3
        (1, 0, 0, XDP_DROP),       // a: n = 3
        (2, 1, 2, XDP_PASS),       // b: n = 2 * 5
        (2, 1, 1, XDP_DROP),       // b: n = 5
        (3, 1, 8, XDP_PASS),       // neither: n = 8
    ] {
        let mut pkt = vec![p0, p1, p2, 0];
        pkt.resize(60, 0);
        assert_eq!(s.run(&pkt, &mut s.maps()).retval, want, "{p0} {p1} {p2}");
    }
}

#[test]
fn legacy_maps_counts_by_length() {
    let Some(s) = suite("legacy_maps") else {
        return;
    };
    let mut maps = s.maps();
    s.run(&[0; 60], &mut maps);
    s.run(&[0; 59], &mut maps);
    s.run(&[0; 100], &mut maps);
    assert_eq!(
        maps.entries("packets").unwrap(),
        [
            (0u32.to_le_bytes().to_vec(), 1u64.to_le_bytes().to_vec()),
            (1u32.to_le_bytes().to_vec(), 2u64.to_le_bytes().to_vec()),
        ]
    );
}

/// The interpreter against the running kernel (`BPF_PROG_TEST_RUN`): every suite program on
/// the same packets — well-formed ones, random bytes, and well-formed ones with a few bytes
/// changed — in the same order, so map state carries over alike; the action and the packet
/// afterwards must agree. Skipped (with a note) where the kernel refuses BPF to this process.
#[test]
fn interpreter_agrees_with_the_kernel() {
    use nicsim_xdp::kernel::{Kernel, KernelError};
    let names = [
        "calls",
        "flags",
        "loop_masked",
        "loop_callback",
        "loop_cb_nested",
        "parser",
        "dos_filter",
        "quic_lb_v4",
        "quic_lb_v6",
        "rtp_alaw",
        "rtp_alaw_opt",
        "dns_cache",
        "count_min_1",
        "count_min_5",
        "count_min_20",
        "path_explosion",
    ];
    let mut dns = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    dns.extend(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
    let bases = [
        eth_ipv4_udp(40000, 53, &dns),
        eth_ipv4_udp(5004, 5004, &[0x80; 172]),
        eth_ipv4_udp(1111, 443, &[0xc3; 60]),
        {
            let mut v = eth(0x0800);
            v.extend(ipv4(6, 20));
            v.extend([
                0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0,
            ]);
            v
        },
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut packets: Vec<Vec<u8>> = Vec::new();
    for k in 0..300 {
        let mut p = bases[k % bases.len()].clone();
        match k % 3 {
            0 => {}
            1 => {
                let len = 14 + (rnd() % 200) as usize;
                p = (0..len).map(|_| rnd() as u8).collect();
            }
            _ => {
                for _ in 0..1 + rnd() % 4 {
                    let i = (rnd() as usize) % p.len();
                    p[i] = rnd() as u8;
                }
            }
        }
        if p.len() < 60 {
            p.resize(60, 0);
        }
        packets.push(p);
    }
    for name in names {
        let Some(bytes) = obj(name) else { continue };
        let p = load(&bytes, None).unwrap();
        let k = match Kernel::load(&p) {
            Ok(k) => k,
            Err(KernelError::Sys { err, .. } | KernelError::Verifier { err, .. })
                if err.raw_os_error() == Some(libc_eperm()) =>
            {
                eprintln!("skipped: the kernel refuses BPF to this process ({err})");
                return;
            }
            Err(KernelError::Verifier { full_log, .. }) => panic!("{name}: verifier:\n{full_log}"),
            Err(e) => panic!("{name}: {e}"),
        };
        let mut maps = MapState::new(&p);
        for (i, pkt) in packets.iter().enumerate() {
            let want = run(&p, pkt, &mut maps, &RunOptions::default());
            let got = k.run(pkt, 1).unwrap();
            let want = want.unwrap_or_else(|f| panic!("{name}: packet {i}: interpreter fault {f}"));
            assert_eq!(
                (got.retval as u64, &got.packet),
                (want.retval, &want.packet),
                "{name}: packet {i} ({} bytes)",
                pkt.len()
            );
        }
    }
}

fn libc_eperm() -> i32 {
    1
}

/// `Kernel::set`, `get` and `delete` (the accuracy study writes back the entries a path changed
/// before each run): a hash map's entry is set, read back, deleted (twice: an absent key is no
/// error), and a per-CPU array's value is set on every CPU.
#[test]
fn kernel_map_entries_are_set_read_and_deleted() {
    use nicsim_xdp::kernel::{Kernel, KernelError};
    let Some(bytes) = obj("kernel_maps") else {
        return;
    };
    let p = load(&bytes, None).unwrap();
    let k = match Kernel::load(&p) {
        Ok(k) => k,
        Err(KernelError::Sys { err, .. } | KernelError::Verifier { err, .. })
            if err.raw_os_error() == Some(libc_eperm()) =>
        {
            eprintln!("skipped: the kernel refuses BPF to this process ({err})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let key = 7u32.to_ne_bytes();
    assert_eq!(k.get("flows", &key).unwrap(), None);
    k.set("flows", &key, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    assert_eq!(
        k.get("flows", &key).unwrap(),
        Some(vec![1, 2, 3, 4, 5, 6, 7, 8])
    );
    k.delete("flows", &key).unwrap();
    assert_eq!(k.get("flows", &key).unwrap(), None);
    k.delete("flows", &key).unwrap();
    k.set("counters", &0u32.to_ne_bytes(), &[9; 8]).unwrap();
    assert_eq!(
        k.get("counters", &0u32.to_ne_bytes()).unwrap(),
        Some(vec![9; 8])
    );
    assert!(k.delete("nosuch", &key).is_err());
}
