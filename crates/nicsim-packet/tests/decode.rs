//! `decode` on frames built here for every link type, encapsulation, tunnel and length quirk
//! that real captures have (the corpus in ../shared/pcap-world has each of them): each must
//! reach the same TCP segment, with its payload bytes and what is missing of them.

use std::net::IpAddr;

use nicsim_packet::{decode, linktype, ParseError, Segment, TunnelKind};

const SRC: [u8; 4] = [10, 0, 0, 1];
const DST: [u8; 4] = [10, 0, 0, 2];
const SEQ: u32 = 0x0102_0304;

/// An IPv4 packet holding a TCP segment (ports 1234 → 80) with `payload`; `total` overrides the
/// total length field.
fn ip4(payload: &[u8], total: Option<u16>) -> Vec<u8> {
    ip4_proto(6, &tcp(payload), total, SRC, DST)
}

fn tcp(payload: &[u8]) -> Vec<u8> {
    let mut t = vec![0x04, 0xd2, 0x00, 0x50];
    t.extend_from_slice(&SEQ.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(payload);
    t
}

fn ip4_proto(proto: u8, body: &[u8], total: Option<u16>, src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let len = total.unwrap_or((20 + body.len()) as u16);
    let mut p = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, proto, 0, 0];
    p[2..4].copy_from_slice(&len.to_be_bytes());
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(body);
    p
}

/// An IPv6 packet (2001:db8::1 → ::2) with `ext` extension bytes (first next header `first`)
/// before a TCP segment; `payload_len` overrides the payload length.
fn ip6(payload: &[u8], first: u8, ext: &[u8], payload_len: Option<u16>) -> Vec<u8> {
    let body = [ext, &tcp(payload)].concat();
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&payload_len.unwrap_or(body.len() as u16).to_be_bytes());
    p.extend_from_slice(&[if ext.is_empty() { 6 } else { first }, 64]);
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    a[15] = 1;
    p.extend_from_slice(&a);
    a[15] = 2;
    p.extend_from_slice(&a);
    p.extend_from_slice(&body);
    p
}

fn eth(ethertype: u16, body: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(body);
    f
}

fn seg(lt: u32, frame: &[u8]) -> Segment {
    decode(lt, frame)
        .unwrap_or_else(|e| panic!("link type {lt}: {e}"))
        .unwrap_or_else(|| panic!("link type {lt}: no IP"))
}

/// The segment is the test's TCP segment with `payload` (and `missing` bytes not held).
fn check(lt: u32, frame: &[u8], payload: &[u8], missing: usize) -> Segment {
    let s = seg(lt, frame);
    let l4 = s.l4.expect("ports");
    assert_eq!((l4.sport, l4.dport), (1234, 80), "link type {lt}");
    assert_eq!(l4.tcp.unwrap().seq, SEQ, "link type {lt}");
    assert_eq!(&frame[s.payload.clone()], payload, "link type {lt}");
    assert_eq!(s.missing, missing, "link type {lt}");
    assert!(!s.fragment);
    s
}

#[test]
fn every_link_type_reaches_the_same_segment() {
    let data = b"GET / HTTP/1.0\r\n\r\n";
    let ip = ip4(data, None);
    let with = |head: &[u8]| [head, &ip[..]].concat();
    let mut sll = vec![0; 14];
    sll.extend_from_slice(&[0x08, 0x00]);
    let mut sll2 = vec![0x08, 0x00];
    sll2.extend_from_slice(&[0; 18]);
    let mut ipoib = vec![0; 40];
    ipoib.extend_from_slice(&[0x08, 0x00, 0, 0]);
    let pppoe_len = (ip.len() + 2) as u16;
    let mut pppoe = vec![0x11, 0x00, 0x12, 0x34];
    pppoe.extend_from_slice(&pppoe_len.to_be_bytes());
    pppoe.extend_from_slice(&[0x00, 0x21]);
    // pflog: a 61-byte header (padded to 64), address family 2.
    let mut pflog = vec![61, 2];
    pflog.resize(64, 0);
    let cases: Vec<(u32, Vec<u8>)> = vec![
        (linktype::ETHERNET, eth(0x0800, &ip)),
        (linktype::NULL, with(&[2, 0, 0, 0])),
        (linktype::NULL, with(&[0, 0, 0, 2])),
        (linktype::LOOP, with(&[0, 0, 0, 2])),
        (linktype::RAW, ip.clone()),
        (linktype::RAW_BSD, ip.clone()),
        (linktype::IPV4, ip.clone()),
        (linktype::LINUX_SLL, with(&sll)),
        (linktype::LINUX_SLL2, with(&sll2)),
        (linktype::IPOIB, with(&ipoib)),
        (linktype::C_HDLC, with(&[0x0f, 0x00, 0x08, 0x00])),
        (linktype::PPP, with(&[0xff, 0x03, 0x00, 0x21])),
        (linktype::PPP, with(&[0x00, 0x21])),
        (linktype::PPP, with(&[0x21])), // protocol-field compression
        (linktype::PPP_HDLC, with(&[0xff, 0x03, 0x00, 0x21])),
        (linktype::PPP_HDLC, with(&[0x8f, 0x00, 0x08, 0x00])), // Cisco HDLC framing
        (linktype::PPP_ETHER, with(&pppoe)),
        (
            linktype::ATM_RFC1483,
            with(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]),
        ),
        (linktype::PFLOG, with(&pflog)),
        (linktype::MPLS, with(&[0x00, 0x01, 0x01, 0x40])),
        (
            linktype::FDDI,
            with(&[
                0x50, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00,
            ]),
        ),
    ];
    for (lt, frame) in &cases {
        check(*lt, frame, data, 0);
    }
    let v6 = ip6(data, 6, &[], None);
    let s = check(linktype::IPV6, &v6, data, 0);
    assert!(matches!(s.ip.src, IpAddr::V6(_)));
    check(linktype::RAW, &v6, data, 0);
}

#[test]
fn nflog_finds_the_packet_among_its_tlvs_in_either_byte_order() {
    let data = b"hello";
    let ip = ip4(data, None);
    for le in [true, false] {
        let tlv = |kind: u16, value: &[u8]| {
            let len = (4 + value.len()) as u16;
            let mut t = Vec::new();
            if le {
                t.extend_from_slice(&len.to_le_bytes());
                t.extend_from_slice(&kind.to_le_bytes());
            } else {
                t.extend_from_slice(&len.to_be_bytes());
                t.extend_from_slice(&kind.to_be_bytes());
            }
            t.extend_from_slice(value);
            t.resize(t.len().next_multiple_of(4), 0);
            t
        };
        let mut f = vec![2, 0, 0, 0]; // AF_INET, version 0, resource id 0
        f.extend(tlv(1, &[0x08, 0x00, 3, 0])); // NFULA_PACKET_HDR
        f.extend(tlv(10, b"prefix\0")); // NFULA_PREFIX
        f.extend(tlv(9, &ip)); // NFULA_PAYLOAD
        f.extend(tlv(11, &[0; 4])); // after the payload: not part of it
        check(linktype::NFLOG, &f, data, 0);
    }
    // A TLV whose length runs past the frame is malformed; one without a payload is not IP.
    assert!(decode(linktype::NFLOG, &[2, 0, 0, 0, 0xff, 0x00, 9, 0]).is_err());
    assert_eq!(
        decode(linktype::NFLOG, &[2, 0, 0, 0, 8, 0, 10, 0, 0, 0, 0, 0]),
        Ok(None)
    );
}

/// An 802.11 data frame (frame control `fc`, flags) with `extra` header bytes, then LLC/SNAP.
fn wifi(fc: u8, flags: u8, extra: usize, ip: &[u8]) -> Vec<u8> {
    let mut f = vec![fc, flags];
    f.resize(24 + extra, 0);
    f.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
    f.extend_from_slice(ip);
    f
}

#[test]
fn wifi_frames_with_and_without_radiotap() {
    let data = b"x";
    let ip = ip4(data, None);
    check(linktype::IEEE802_11, &wifi(0x08, 0x01, 0, &ip), data, 0); // data, to DS
    check(linktype::IEEE802_11, &wifi(0x88, 0x02, 2, &ip), data, 0); // QoS data
    check(linktype::IEEE802_11, &wifi(0x88, 0x03, 8, &ip), data, 0); // QoS, 4 addresses
    check(linktype::IEEE802_11, &wifi(0x88, 0x82, 6, &ip), data, 0); // QoS + HT control
                                                                     // Encrypted, management and null-data frames hold no IP.
    assert_eq!(
        decode(linktype::IEEE802_11, &wifi(0x08, 0x41, 0, &ip)),
        Ok(None)
    );
    assert_eq!(
        decode(linktype::IEEE802_11, &wifi(0x80, 0x00, 0, &ip)),
        Ok(None)
    );
    assert_eq!(
        decode(linktype::IEEE802_11, &wifi(0x48, 0x01, 0, &ip)),
        Ok(None)
    );
    // Radiotap: version 0, length 12 (present: flags and rate), then the frame.
    let mut rt = vec![0, 0, 12, 0, 0x06, 0, 0, 0, 0x00, 0x02, 0, 0];
    rt.extend(wifi(0x08, 0x01, 0, &ip));
    check(linktype::IEEE802_11_RADIOTAP, &rt, data, 0);
    // With TSFT before the flags (aligned to 8), and DATAPAD: the QoS header (26 bytes) is
    // padded to 28.
    let mut rt = vec![0, 0, 24, 0, 0x03, 0, 0, 0];
    rt.extend_from_slice(&[0; 8]); // TSFT
    rt.extend_from_slice(&[0x20, 0, 0, 0, 0, 0, 0, 0]); // flags: DATAPAD
    let mut w = vec![0x88, 0x01];
    w.resize(26 + 2, 0);
    w.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
    w.extend_from_slice(&ip);
    rt.extend(w);
    check(linktype::IEEE802_11_RADIOTAP, &rt, data, 0);
}

#[test]
fn tags_labels_and_pppoe_at_any_depth() {
    let data = b"tagged";
    let ip = ip4(data, None);
    // Three and twenty stacked tags (802.1ad outer, 802.1Q inner); the innermost VLAN counts.
    for n in [1, 3, 20] {
        let mut body = Vec::new();
        for k in 0..n {
            let tpid: u16 = if k == n - 1 { 0x0800 } else { 0x8100 };
            body.extend_from_slice(&((k as u16 + 1) & 0xfff).to_be_bytes());
            body.extend_from_slice(&tpid.to_be_bytes());
        }
        body.extend_from_slice(&ip);
        let s = check(linktype::ETHERNET, &eth(0x88a8, &body), data, 0);
        assert_eq!(s.vlan, Some(n as u16));
    }
    // An MPLS stack of three labels (S bit on the last), then IPv4 by its version nibble.
    let mut m = vec![0, 0, 0x10, 0x40, 0, 0, 0x20, 0x40, 0, 0, 0x31, 0x40];
    m.extend_from_slice(&ip);
    check(linktype::ETHERNET, &eth(0x8847, &m), data, 0);
    // MPLS with a pseudowire control word and an Ethernet frame inside, behind a VLAN tag.
    let mut pw = vec![0, 0, 0x11, 0x40, 0, 0, 0, 0];
    pw.extend(eth(0x0800, &ip));
    let mut tagged = vec![0, 5, 0x88, 0x47];
    tagged.extend_from_slice(&pw);
    check(linktype::ETHERNET, &eth(0x8100, &tagged), data, 0);
    // PPPoE over QinQ, with a two-byte and with a compressed one-byte PPP protocol.
    for proto in [&[0x00u8, 0x21][..], &[0x21][..]] {
        let mut p = vec![0x11, 0x00, 0x00, 0x01];
        p.extend_from_slice(&((ip.len() + proto.len()) as u16).to_be_bytes());
        p.extend_from_slice(proto);
        p.extend_from_slice(&ip);
        let mut q = vec![0, 10, 0x81, 0x00, 0, 20, 0x88, 0x64];
        q.extend_from_slice(&p);
        check(linktype::ETHERNET, &eth(0x88a8, &q), data, 0);
    }
}

#[test]
fn padding_is_never_payload() {
    // A pure ACK padded to Ethernet's 60 bytes: the IP length ends it.
    let ip = ip4(b"", None);
    let mut f = eth(0x0800, &ip);
    f.resize(60, 0xee);
    check(linktype::ETHERNET, &f, b"", 0);
    // PPPoE whose payload length is shorter than the IP length says: the smaller wins (the
    // bytes past PPPoE's end are the Ethernet padding).
    let data = b"abcdef";
    let ip = ip4(data, Some(20 + 20 + 12));
    let mut p = vec![0x11, 0x00, 0x00, 0x01];
    p.extend_from_slice(&((ip.len() + 2) as u16).to_be_bytes());
    p.extend_from_slice(&[0x00, 0x21]);
    p.extend_from_slice(&ip);
    let mut f = eth(0x8864, &p);
    f.extend_from_slice(&[0xee; 6]);
    check(linktype::ETHERNET, &f, data, 0);
}

#[test]
fn lengths_as_captures_have_them() {
    let data: Vec<u8> = (0..200u8).collect();
    // TSO/GSO: IPv4 total length 0, the frame's length is the packet's.
    check(
        linktype::ETHERNET,
        &eth(0x0800, &ip4(&data, Some(0))),
        &data,
        0,
    );
    // A record holding fewer bytes than the IP length: what is there, and how much is not.
    let ip = ip4(&data, None);
    let cut = &eth(0x0800, &ip)[..14 + 40 + 50];
    check(linktype::ETHERNET, cut, &data[..50], 150);
    // Cut inside the TCP header: an error (the caller knows whether the record was cut).
    assert!(matches!(
        decode(linktype::ETHERNET, &eth(0x0800, &ip)[..14 + 30]),
        Err(ParseError::Truncated { .. })
    ));
    // IPv6 jumbogram (RFC 2675): payload length 0 and a Hop-by-Hop Jumbo option.
    let jumbo_len = (8 + 20 + data.len()) as u32;
    let mut hbh = vec![6, 0, 0xc2, 4];
    hbh.extend_from_slice(&jumbo_len.to_be_bytes());
    let v6 = ip6(&data, 0, &hbh, Some(0));
    check(linktype::ETHERNET, &eth(0x86dd, &v6), &data, 0);
    // A jumbogram cut short by the snaplen.
    let frame = eth(0x86dd, &v6);
    check(
        linktype::ETHERNET,
        &frame[..frame.len() - 80],
        &data[..120],
        80,
    );
    // IPv6 payload length 0 without a jumbo option (TSO): the frame's length.
    let v6 = ip6(&data, 6, &[], Some(0));
    check(linktype::ETHERNET, &eth(0x86dd, &v6), &data, 0);
}

#[test]
fn tunnels_give_the_inner_segment_and_the_outer_endpoints() {
    let data = b"inner";
    let inner = ip4(data, None);
    let outer_src = [192, 0, 2, 1];
    let outer_dst = [192, 0, 2, 2];
    let tunnelled = |proto: u8, body: Vec<u8>| {
        eth(0x0800, &ip4_proto(proto, &body, None, outer_src, outer_dst))
    };
    let cases: Vec<(Vec<u8>, TunnelKind)> = vec![
        // GRE with checksum, key and sequence number.
        (
            [&[0xb0u8, 0x00, 0x08, 0x00][..], &[0; 12], &inner].concat(),
            TunnelKind::Gre,
        ),
        // GRE carrying an Ethernet frame (transparent bridging).
        (
            [&[0x00u8, 0x00, 0x65, 0x58][..], &eth(0x0800, &inner)].concat(),
            TunnelKind::Gre,
        ),
        // PPTP's enhanced GRE (version 1) with sequence and acknowledgement, PPP inside.
        (
            [
                &[0x30u8, 0x81, 0x88, 0x0b, 0, 0, 0, 1][..],
                &[0; 8],
                &[0xff, 0x03, 0x00, 0x21],
                &inner,
            ]
            .concat(),
            TunnelKind::Gre,
        ),
    ];
    for (gre, kind) in cases {
        let s = check(linktype::ETHERNET, &tunnelled(47, gre), data, 0);
        let t = s.tunnel.expect("a tunnel");
        assert_eq!(t.kind, kind);
        assert_eq!(t.src, IpAddr::from(outer_src));
        assert_eq!(s.ip.src, IpAddr::from(SRC));
    }
    // VXLAN: UDP to 4789, the VXLAN header, an Ethernet frame.
    let mut udp = vec![
        0x30, 0x39, 0x12, 0xb5, 0, 0, 0, 0, 0x08, 0, 0, 0, 0, 0, 0x2a, 0,
    ];
    udp.extend(eth(0x0800, &inner));
    let udp_len = udp.len() as u16;
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    let s = check(linktype::ETHERNET, &tunnelled(17, udp), data, 0);
    assert_eq!(s.tunnel.unwrap().kind, TunnelKind::Vxlan);
    // IPv4 in IPv4, and IPv6 in IPv4 (6in4).
    let s = check(linktype::ETHERNET, &tunnelled(4, inner.clone()), data, 0);
    assert_eq!(s.tunnel.unwrap().kind, TunnelKind::IpInIp);
    let s = check(
        linktype::ETHERNET,
        &tunnelled(41, ip6(data, 6, &[], None)),
        data,
        0,
    );
    assert!(matches!(s.ip.src, IpAddr::V6(_)));
    // A tunnel in a tunnel: the outermost is recorded.
    let twice = ip4_proto(
        4,
        &ip4_proto(4, &inner, None, [10, 9, 9, 1], [10, 9, 9, 2]),
        None,
        outer_src,
        outer_dst,
    );
    let s = check(linktype::RAW, &twice, data, 0);
    assert_eq!(s.tunnel.unwrap().src, IpAddr::from(outer_src));
}

#[test]
fn non_ip_and_unsupported() {
    // ARP, an unknown PPP protocol, a SNAP header with another OUI.
    assert_eq!(decode(linktype::ETHERNET, &eth(0x0806, &[0; 28])), Ok(None));
    assert_eq!(decode(linktype::PPP, &[0xc0, 0x21, 1, 2]), Ok(None));
    assert_eq!(
        decode(
            linktype::ATM_RFC1483,
            &[0xaa, 0xaa, 0x03, 0, 0, 0x0c, 0x08, 0x00, 0x45]
        ),
        Ok(None)
    );
    assert!(!linktype::is_supported(147));
    assert!(matches!(
        decode(147, &ip4(b"", None)),
        Err(ParseError::Malformed { .. })
    ));
    assert_eq!(linktype::name(linktype::NFLOG), Some("NFLOG"));
    assert_eq!(linktype::name(220), Some("USB_LINUX_MMAPPED"));
}

#[test]
fn hostile_frames_end_in_an_error_not_a_panic() {
    // 10,000 VLAN tags: refused past 64 layers, without walking them all.
    let mut body = Vec::new();
    for _ in 0..10_000 {
        body.extend_from_slice(&[0, 1, 0x81, 0x00]);
    }
    let err = decode(linktype::ETHERNET, &eth(0x8100, &body)).unwrap_err();
    assert!(err.to_string().contains("more than 64"), "{err}");
    // An MPLS stack that never reaches its bottom; GRE in GRE without end.
    assert!(decode(linktype::MPLS, &[0, 0, 0, 0].repeat(10)).is_err());
    let mut nest = ip4(b"", None);
    for _ in 0..100 {
        nest = ip4_proto(
            47,
            &[&[0u8, 0, 0x08, 0x00][..], &nest].concat(),
            None,
            SRC,
            DST,
        );
    }
    assert!(decode(linktype::RAW, &nest).is_err());
    // An encapsulation whose length ends inside the IP header (PPPoE, NFLOG): an error.
    let v6 = ip6(b"x", 6, &[], None);
    for (proto, ip) in [(0x0057u16, &v6), (0x0021, &ip4(b"x", None))] {
        for len in [0u16, 4, 20] {
            let mut p = vec![0x11, 0, 0, 1];
            p.extend_from_slice(&len.to_be_bytes());
            p.extend_from_slice(&proto.to_be_bytes());
            p.extend_from_slice(ip);
            let r = decode(linktype::ETHERNET, &eth(0x8864, &p));
            assert!(
                r.is_err() || r.as_ref().unwrap().as_ref().is_some_and(|s| s.l4.is_none()),
                "{r:?}"
            );
        }
    }
    let mut nf = vec![10, 0, 0, 0, 8, 0, 9, 0];
    nf.extend_from_slice(&v6);
    assert!(decode(linktype::NFLOG, &nf).is_err());
    // Every prefix of every frame above decodes or fails cleanly.
    let data = b"0123456789";
    let ip = ip4(data, None);
    let mut frames = vec![
        eth(0x0800, &ip),
        eth(0x8847, &[&[0u8, 0, 0x11, 0x40][..], &ip].concat()),
        wifi(0x88, 0x83, 12, &ip),
        [
            &[0u8, 0, 12, 0, 0x06, 0, 0, 0, 0x00, 0x02, 0, 0][..],
            &wifi(0x08, 0x01, 0, &ip),
        ]
        .concat(),
        ip6(data, 0, &[6, 0, 0xc2, 4, 0, 0, 0, 38], Some(0)),
    ];
    frames.push(ip4_proto(
        47,
        &[&[0x30u8, 0x81, 0x88, 0x0b, 0, 0, 0, 1][..], &[0; 8], &ip].concat(),
        None,
        SRC,
        DST,
    ));
    for f in &frames {
        for lt in [
            linktype::ETHERNET,
            linktype::RAW,
            linktype::IEEE802_11,
            linktype::IEEE802_11_RADIOTAP,
            linktype::NFLOG,
            linktype::PPP,
            linktype::PFLOG,
            linktype::IPOIB,
            linktype::MPLS,
        ] {
            for n in 0..=f.len() {
                let _ = decode(lt, &f[..n]);
            }
        }
    }
}

#[test]
fn random_frames_of_every_link_type_never_panic() {
    // Random bytes behind each link type, with the fields that steer the walk (EtherTypes,
    // lengths, version nibbles, PPP protocols) drawn from the values the walk follows.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let steer: [u8; 24] = [
        0x08, 0x00, 0x86, 0xdd, 0x81, 0x88, 0xa8, 0x47, 0x64, 0x65, 0x58, 0x0b, 0x21, 0x57, 0x45,
        0x60, 0x2f, 0x11, 0x04, 0x29, 0x12, 0xb5, 0xaa, 0x03,
    ];
    let types = [
        linktype::ETHERNET,
        linktype::NULL,
        linktype::RAW,
        linktype::LINUX_SLL,
        linktype::LINUX_SLL2,
        linktype::IPOIB,
        linktype::C_HDLC,
        linktype::PPP,
        linktype::PPP_HDLC,
        linktype::PPP_ETHER,
        linktype::ATM_RFC1483,
        linktype::PFLOG,
        linktype::MPLS,
        linktype::NFLOG,
        linktype::IEEE802_11,
        linktype::IEEE802_11_RADIOTAP,
    ];
    for _ in 0..200_000 {
        let len = (next() % 160) as usize;
        let frame: Vec<u8> = (0..len)
            .map(|_| {
                let r = next();
                if r % 3 == 0 {
                    steer[(r >> 8) as usize % steer.len()]
                } else {
                    (r >> 16) as u8 % 64
                }
            })
            .collect();
        let lt = types[(next() % types.len() as u64) as usize];
        if let Ok(Some(s)) = decode(lt, &frame) {
            assert!(s.payload.start <= s.payload.end && s.payload.end <= frame.len());
        }
    }
}

#[test]
fn ieee_802_3_frames_with_llc_snap_carry_ip() {
    // An 802.3 frame (its type field a length, at most 1,500) whose LLC/SNAP header gives the
    // EtherType, as tshark's eth and llc dissectors decode it (zeek's snap-tcp.pcap); an LLC that
    // is not SNAP (spanning tree's 42 42 03), or too short for an LLC header, is not IP.
    let data = b"hello";
    let ip = ip4(data, None);
    let mut llc = vec![0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00];
    llc.extend_from_slice(&ip);
    let f = eth(llc.len() as u16, &llc);
    check(linktype::ETHERNET, &f, data, 0);
    // With its 802.3 length at the boundary (1,500) it is still a length.
    let f = eth(1500, &llc);
    check(linktype::ETHERNET, &f, data, 0);
    let mut stp = vec![0x42, 0x42, 0x03];
    stp.extend_from_slice(&[0; 35]);
    assert!(decode(linktype::ETHERNET, &eth(38, &stp))
        .unwrap()
        .is_none());
    assert!(decode(linktype::ETHERNET, &eth(3, &[0xaa, 0xaa, 0x03]))
        .unwrap()
        .is_none());
}

/// An IPv4 packet whose header carries `options` (a multiple of 4 bytes), holding the test's
/// TCP segment with `payload`.
fn ip4_with_options(options: &[u8], payload: &[u8]) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0);
    let body = tcp(payload);
    let hl = 20 + options.len();
    let mut p = ip4_proto(6, &[], Some((hl + body.len()) as u16), SRC, DST);
    p[0] = 0x40 | (hl / 4) as u8;
    p.extend_from_slice(options);
    p.extend_from_slice(&body);
    p
}

/// IPv4 options as tshark 4.0.17 dissects them (each case checked with it: `tcp.len` shown, or
/// the packet "Malformed" with no TCP): a known option shorter than the fields tshark reads of
/// it makes the packet malformed (suricata-verify's tcp-session-decode-malformed-ipv4: IHL 8,
/// a Security option of length 2); other bad lengths (below 2, past the header, longer than a
/// fixed length) only end tshark's option walk, and the segment is decoded.
#[test]
fn ipv4_options_tshark_calls_malformed_are_errors() {
    let pad = |o: &[u8]| {
        let mut o = o.to_vec();
        o.resize(o.len().div_ceil(4) * 4, 0);
        o
    };
    let malformed: &[&[u8]] = &[
        &[130, 2],                     // Security, length 2 (the suricata-verify case)
        &[148, 3, 0],                  // Router alert, 3 (4 fixed)
        &[68, 3, 5],                   // Timestamp, 3 (at least 4)
        &[82, 4, 0, 0],                // Traceroute, 4 (12 fixed)
        &[134, 5, 0, 0, 0],            // Commercial security, 5 (at least 6)
        &[25, 7, 0, 0, 0, 0, 0],       // Quick-start, 7 (8 fixed)
        &[7, 2],                       // Record route, 2 (at least 3)
        &[1, 1, 130, 2],               // after no-operations
        &[200, 6, 0, 0, 0, 0, 130, 2], // after an unknown option of a good length
    ];
    for options in malformed {
        let frame = eth(0x0800, &ip4_with_options(&pad(options), b"X"));
        match decode(linktype::ETHERNET, &frame) {
            Err(ParseError::Malformed { offset: 14, .. }) => {}
            other => panic!("{options:?}: {other:?}"),
        }
    }
    let decoded: &[&[u8]] = &[
        &[130, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0], // Security of its length
        &[130, 10, 0, 0, 0, 0, 0, 0, 0, 0],    // shorter, but tshark reads no field past it
        &[148, 5, 0, 0, 0],                    // longer than its fixed length
        &[200, 0],                             // a length below 2: the walk ends
        &[200, 1, 130, 2],                     // ... and what follows it is not read
        &[1, 0, 130, 2],                       // nor after the end of options
        &[200, 8, 0, 0],                       // runs past the header: the walk ends
        &[130, 11, 0, 0],                      // a known option too
        &[1, 1, 1, 200],                       // its length byte past the header
        &[1, 1, 1, 1],                         // no-operations
        &[200, 2],                             // an unknown option of length 2
    ];
    for options in decoded {
        let frame = eth(0x0800, &ip4_with_options(&pad(options), b"X"));
        check(linktype::ETHERNET, &frame, b"X", 0);
    }
}

/// UDP's length field as tshark reads it: below 8 ends the decoding at the UDP header (no
/// tunnel; tcpdump's bigtcp-ipv4-vxlan-ipv6.pcap: an IPv4 BIG TCP packet, total length 0, with
/// UDP length 0 to port 4789: "BAD UDP LENGTH 0 < 8"); 0 over IPv6 is a jumbogram's (the
/// packet's length); a length inside the packet ends the datagram there; one past it is the
/// packet's. Each case checked with tshark 4.0.17.
#[test]
fn udp_length_below_8_ends_the_decoding() {
    let data = b"inner";
    let inner = eth(0x0800, &ip4(data, None));
    let vxlan = |udp_len: Option<u16>| {
        let mut udp = vec![0x30, 0x39, 0x12, 0xb5, 0, 0, 0, 0];
        let len = udp_len.unwrap_or((16 + inner.len()) as u16);
        udp[4..6].copy_from_slice(&len.to_be_bytes());
        udp.extend_from_slice(&[0x08, 0, 0, 0, 0, 0, 0x2a, 0]);
        udp.extend_from_slice(&inner);
        udp
    };
    let outer = |udp: Vec<u8>, total: Option<u16>| {
        eth(
            0x0800,
            &ip4_proto(17, &udp, total, [192, 0, 2, 1], [192, 0, 2, 2]),
        )
    };
    // Its own length, a length past the packet, and an IPv4 total length of 0 (TSO, BIG TCP:
    // the frame's length): the tunnel.
    for (udp_len, total) in [(None, None), (Some(4000), None), (None, Some(0))] {
        let s = check(linktype::ETHERNET, &outer(vxlan(udp_len), total), data, 0);
        assert_eq!(
            s.tunnel.unwrap().kind,
            TunnelKind::Vxlan,
            "{udp_len:?} {total:?}"
        );
    }
    // Below 8 (with a total length of 0 too, as in bigtcp-ipv4-vxlan-ipv6.pcap), and 8 (no
    // payload): the outer UDP datagram, with nothing after its header.
    for (udp_len, total) in [(0, None), (7, None), (0, Some(0)), (8, None)] {
        let frame = outer(vxlan(Some(udp_len)), total);
        let s = seg(linktype::ETHERNET, &frame);
        assert!(s.tunnel.is_none(), "{udp_len} {total:?}");
        assert_eq!(s.ip.proto, 17);
        assert_eq!(s.l4.map(|l| l.dport), Some(4789));
        assert!(s.payload.is_empty(), "{udp_len}");
    }
    // A length inside the packet: the payload ends there (what follows is not the datagram's).
    let mut udp = vec![0x30, 0x39, 0x30, 0x3a, 0, 13, 0, 0];
    udp.extend_from_slice(b"hellotrailer");
    let frame = outer(udp, None);
    let s = seg(linktype::ETHERNET, &frame);
    assert_eq!(&frame[s.payload.clone()], b"hello");
    // IPv6: 0 is a jumbogram's length (the packet's); 7 ends the decoding.
    let ip6_udp = |udp: Vec<u8>| {
        let mut p = ip6(b"", 17, &udp, Some(udp.len() as u16));
        p.truncate(40 + udp.len()); // without the helper's TCP header
        eth(0x86dd, &p)
    };
    let s = check(linktype::ETHERNET, &ip6_udp(vxlan(Some(0))), data, 0);
    assert_eq!(s.tunnel.unwrap().kind, TunnelKind::Vxlan);
    let s = seg(linktype::ETHERNET, &ip6_udp(vxlan(Some(7))));
    assert!(s.tunnel.is_none());
}
