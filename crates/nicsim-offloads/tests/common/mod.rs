//! Hand-built test frames (Ethernet II + IPv4/IPv6 + UDP/TCP + FCS), independent of
//! the packet library so the offload tests do not depend on its frame builder.

pub const V4_UDP_PAYLOAD_AT: usize = 14 + 20 + 8;
pub const V6_TCP_PAYLOAD_AT: usize = 14 + 40 + 20;

fn ethernet(ethertype: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02];
    f.extend(ethertype.to_be_bytes());
    f
}

pub fn with_fcs(mut frame: Vec<u8>) -> Vec<u8> {
    let fcs = crc32fast::hash(&frame);
    frame.extend(fcs.to_le_bytes());
    frame
}

/// IPv4 frame carrying `l4` (an L4 header plus payload) as protocol `proto`.
pub fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
    let mut f = ethernet(0x0800);
    let total = (20 + l4.len()) as u16;
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, proto, 0, 0];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip.extend(src);
    ip.extend(dst);
    let sum = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let folded = (sum & 0xffff) + (sum >> 16);
    ip[10..12].copy_from_slice(&(!((folded + (folded >> 16)) as u16)).to_be_bytes());
    f.extend(ip);
    f.extend(l4);
    with_fcs(f)
}

pub fn ipv4_udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut udp = Vec::new();
    udp.extend(sport.to_be_bytes());
    udp.extend(dport.to_be_bytes());
    udp.extend(((8 + payload.len()) as u16).to_be_bytes());
    udp.extend([0, 0]); // checksum unused (allowed for IPv4)
    udp.extend(payload);
    ipv4(17, src, dst, &udp)
}

pub fn ipv6_tcp(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = ethernet(0x86DD);
    f.extend([0x60, 0, 0, 0]);
    f.extend(((20 + payload.len()) as u16).to_be_bytes());
    f.extend([6, 64]);
    f.extend(src);
    f.extend(dst);
    f.extend(sport.to_be_bytes());
    f.extend(dport.to_be_bytes());
    f.extend([0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]); // seq, ack, doff 5, PSH|ACK
    f.extend(payload);
    with_fcs(f)
}

/// A generator-style payload of `len` bytes: sequence number, pattern, zeroed tag bytes.
pub fn payload(len: usize, seq: u32) -> Vec<u8> {
    let mut p: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
    p[..4].copy_from_slice(&seq.to_be_bytes());
    let tag = len - 8;
    p[tag..].fill(0);
    p
}

/// The minimal 64-byte IPv4/UDP frame (18 payload bytes).
pub fn min_v4_frame() -> Vec<u8> {
    ipv4_udp([10, 0, 0, 1], [192, 168, 1, 9], 4000, 53, &payload(18, 7))
}

pub fn v6_frame(payload_len: usize) -> Vec<u8> {
    let src = "2001:db8::1"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    let dst = "2001:db8::2"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    ipv6_tcp(src, dst, 40000, 443, &payload(payload_len, 0xdead_beef))
}
