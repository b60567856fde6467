//! Frame building, parsing and checksums, against frames verified by Wireshark.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use nicsim_packet::fcs::{check_fcs, fcs};
use nicsim_packet::ip::{checksum, protocol};
use nicsim_packet::{
    ethernet, fix_checksums, ipv4, ipv6, parse, parse_five_tuple, tcp, udp, BuildError, FiveTuple,
    FrameSpec, L4Proto, Layer, ParseError,
};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

// Hand-assembled frames whose checksums (and FCS, where present) Wireshark reports as good.
/// IPv4 TCP SYN with MSS, SACK-permitted, timestamp and window-scale options; no FCS.
const V4_TCP_SYN: &str =
    "001b213a4f503cfdfe12345608004500003c1c464000400626e9c0a8010a5db8d822c93a01bb1a2b3c4d\
                          00000000a002faf0fdbb0000020405b40402080a0a1b2c3d0000000001030307";
/// VLAN 100 (PCP 3), IPv6 UDP with traffic class 0x2e and flow label 0xbeef; no FCS.
const V6_UDP_VLAN: &str =
    "3333000000fb3cfdfe1234568100606486dd62e0beef001311fffe800000000000003efdfefffe123456\
                           20010db80000000000000000000000539c401e61001373016e696373696d2074657374";
/// What `FrameSpec::build(64, b"hello")` must produce for `spec_v4_udp()`, FCS included.
const BUILT_V4_UDP: &str =
    "02000000000202000000000181000007080045b8002a00000000401166090a0000010a00000204d2162e\
                            00168ced68656c6c6f0000000000000000004c459a89";
/// What `FrameSpec::build(100, b"abc")` must produce for `spec_v6_tcp()`, FCS included.
const BUILT_V6_TCP: &str = "02000000000202000000000186dd61000000002a062020010db8000000000000000000000001\
                            20010db800000000000000000000000201bbc350000003e8000007d05018ffffbf1b0000616263\
                            000000000000000000000000000000000000000fb9925a";

fn spec_v4_udp() -> FrameSpec {
    FrameSpec {
        eth_src: [2, 0, 0, 0, 0, 1],
        eth_dst: [2, 0, 0, 0, 0, 2],
        vlan: Some(7),
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 0, 2).into(),
        proto: L4Proto::Udp,
        sport: 1234,
        dport: 5678,
        tos: 0xb8,
        ttl: 64,
        tcp_seq: 0,
        tcp_ack: 0,
        tcp_flags: 0,
    }
}

fn spec_v6_tcp() -> FrameSpec {
    FrameSpec {
        vlan: None,
        src: "2001:db8::1".parse().unwrap(),
        dst: "2001:db8::2".parse().unwrap(),
        proto: L4Proto::Tcp,
        sport: 443,
        dport: 50000,
        tos: 0x10,
        ttl: 32,
        tcp_seq: 1000,
        tcp_ack: 2000,
        tcp_flags: tcp::flags::PSH | tcp::flags::ACK,
        ..spec_v4_udp()
    }
}

#[test]
fn rfc1071_checksum_example() {
    // RFC 1071 §3: these bytes sum to 0xddf2.
    assert_eq!(
        checksum::data(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
        0xddf2
    );
}

#[test]
fn known_good_v4_tcp_frame() {
    let frame = hex(V4_TCP_SYN);
    let parsed = parse(&frame).unwrap();
    assert_eq!(parsed.eth_dst, [0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x50]);
    assert_eq!(
        (
            parsed.vlan,
            parsed.ethertype,
            parsed.l3_offset,
            parsed.l4_offset
        ),
        (None, 0x0800, 14, Some(34))
    );
    let ip = parsed.ip.unwrap();
    assert_eq!(
        (ip.src, ip.dst),
        (
            IpAddr::from([192, 168, 1, 10]),
            IpAddr::from([93, 184, 216, 34])
        )
    );
    assert_eq!((ip.proto, ip.tos, ip.ttl, ip.total_len), (6, 0, 64, 60));
    let l4 = parsed.l4.unwrap();
    let tcp = l4.tcp.unwrap();
    assert_eq!(
        (l4.sport, l4.dport, tcp.seq, tcp.ack, tcp.flags, tcp.window),
        (51514, 443, 0x1a2b3c4d, 0, 0x02, 64240)
    );
    assert_eq!(parsed.payload_offset, frame.len()); // 20 bytes of options, no payload

    let ip4 = ipv4::Packet::new_checked(&frame[14..]).unwrap();
    assert!(ip4.verify_checksum());
    assert_eq!((ip4.ident(), ip4.dont_frag()), (0x1c46, true));
    let seg = tcp::Packet::new_checked(ip4.payload()).unwrap();
    assert!(seg.verify_checksum(ip.src, ip.dst));
    assert_eq!(seg.options().len(), 20);
    assert_eq!(fcs(&frame), 0x4710_213d); // computed independently (zlib)

    // Corrupt both checksums; fix_checksums restores the original bytes.
    let mut broken = frame.clone();
    broken[24] ^= 0xff;
    broken[50] ^= 0x55;
    fix_checksums(&mut broken).unwrap();
    assert_eq!(broken, frame);
}

#[test]
fn known_good_v6_udp_vlan_frame() {
    let frame = hex(V6_UDP_VLAN);
    let parsed = parse(&frame).unwrap();
    assert_eq!(
        (
            parsed.vlan,
            parsed.ethertype,
            parsed.l3_offset,
            parsed.l4_offset
        ),
        (Some(100), 0x86dd, 18, Some(58))
    );
    let ip = parsed.ip.unwrap();
    assert_eq!(ip.dst, "2001:db8::53".parse::<IpAddr>().unwrap());
    assert_eq!(
        (ip.proto, ip.tos, ip.ttl, ip.total_len),
        (17, 0x2e, 255, 59)
    );
    assert_eq!(&frame[parsed.payload_offset..], b"nicsim test");
    let repr = ethernet::Repr::parse(&ethernet::Packet::new_checked(&frame[..]).unwrap()).unwrap();
    assert_eq!(repr.vlan.map(|t| (t.pcp, t.vid)), Some((3, 100)));
    let ip6 = ipv6::Packet::new_checked(&frame[18..]).unwrap();
    assert_eq!(ip6.flow_label(), 0xbeef);
    let dgram = udp::Packet::new_checked(ip6.payload()).unwrap();
    assert!(dgram.verify_checksum(ip.src, ip.dst));
    let (tuple, offset) = parse_five_tuple(&frame).unwrap();
    assert_eq!(
        tuple,
        FiveTuple {
            src: ip.src,
            dst: ip.dst,
            sport: 40000,
            dport: 7777,
            proto: 17
        }
    );
    assert_eq!(offset, parsed.payload_offset);
}

#[test]
fn builder_reproduces_known_good_frames() {
    assert_eq!(
        spec_v4_udp().build(64, b"hello").unwrap(),
        hex(BUILT_V4_UDP)
    );
    assert_eq!(spec_v6_tcp().build(100, b"abc").unwrap(), hex(BUILT_V6_TCP));
}

#[test]
fn build_parse_round_trips() {
    let v4: [IpAddr; 2] = [
        Ipv4Addr::new(192, 0, 2, 1).into(),
        Ipv4Addr::new(198, 51, 100, 7).into(),
    ];
    let v6: [IpAddr; 2] = [
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 9).into(),
        "fe80::1".parse().unwrap(),
    ];
    let payload: Vec<u8> = (0..=255).collect();
    for [src, dst] in [v4, v6] {
        for proto in [L4Proto::Tcp, L4Proto::Udp] {
            for vlan in [None, Some(4094)] {
                let spec = FrameSpec {
                    eth_src: [0xa, 1, 2, 3, 4, 5],
                    eth_dst: [0xff; 6],
                    vlan,
                    src,
                    dst,
                    proto,
                    sport: 1,
                    dport: 65535,
                    tos: 0xfd,
                    ttl: 1,
                    tcp_seq: u32::MAX,
                    tcp_ack: 7,
                    tcp_flags: tcp::flags::SYN | tcp::flags::ECE,
                };
                for frame_len in [spec.header_len() + 4, spec.min_frame_len(), 100, 1518, 9018] {
                    let frame = spec.build(frame_len, &payload).unwrap();
                    let context = format!("{spec:?} len {frame_len}");
                    assert_eq!(frame.len(), frame_len, "{context}");
                    assert!(check_fcs(&frame), "{context}");
                    let body = &frame[..frame_len - 4];
                    let parsed = parse(body).unwrap();
                    assert_eq!(
                        (parsed.eth_src, parsed.eth_dst, parsed.vlan),
                        (spec.eth_src, spec.eth_dst, vlan)
                    );
                    let ip = parsed.ip.unwrap();
                    assert_eq!(
                        (ip.src, ip.dst, ip.proto, ip.tos, ip.ttl),
                        (src, dst, proto.number(), 0xfd, 1)
                    );
                    assert_eq!(ip.total_len, body.len() - parsed.l3_offset, "{context}");
                    let l4 = parsed.l4.unwrap();
                    assert_eq!((l4.sport, l4.dport), (1, 65535));
                    match l4.tcp {
                        Some(t) => assert_eq!(
                            (t.seq, t.ack, t.flags, t.window),
                            (u32::MAX, 7, 0x42, 0xffff)
                        ),
                        None => assert_eq!(proto, L4Proto::Udp),
                    }
                    assert_eq!(parsed.payload_offset, spec.header_len());
                    let room = frame_len - 4 - spec.header_len();
                    let n = room.min(payload.len());
                    assert_eq!(&body[spec.header_len()..][..n], &payload[..n]);
                    assert!(body[spec.header_len() + n..].iter().all(|&b| b == 0));
                    let l4_bytes = &body[parsed.l4_offset.unwrap()..];
                    assert!(match proto {
                        L4Proto::Tcp => tcp::Packet::new_checked(l4_bytes)
                            .unwrap()
                            .verify_checksum(src, dst),
                        L4Proto::Udp => udp::Packet::new_checked(l4_bytes)
                            .unwrap()
                            .verify_checksum(src, dst),
                    });
                    let mut fixed = body.to_vec();
                    fix_checksums(&mut fixed).unwrap();
                    assert_eq!(fixed, body, "{context}");
                }
            }
        }
    }
}

#[test]
fn build_errors() {
    let spec = spec_v4_udp();
    assert_eq!(spec.header_len(), 46);
    assert_eq!(spec.min_frame_len(), 64);
    assert_eq!(spec_v6_tcp().min_frame_len(), 78);
    assert_eq!(
        spec.build(49, b""),
        Err(BuildError::FrameTooShort {
            frame_len: 49,
            min: 50
        })
    );
    assert_eq!(
        spec.build(2, b""),
        Err(BuildError::FrameTooShort {
            frame_len: 2,
            min: 50
        })
    );
    assert_eq!(spec.build(50, b"x").unwrap().len(), 50);
    let mixed = FrameSpec {
        dst: Ipv6Addr::LOCALHOST.into(),
        ..spec
    };
    assert!(matches!(
        mixed.build(100, b""),
        Err(BuildError::MixedAddressFamilies { .. })
    ));
    let bad_vlan = FrameSpec {
        vlan: Some(5000),
        ..spec
    };
    assert!(matches!(
        bad_vlan.build(100, b""),
        Err(BuildError::InvalidField {
            layer: Layer::Vlan,
            ..
        })
    ));
    assert!(matches!(
        spec.build(70_000, b""),
        Err(BuildError::TooLong {
            layer: Layer::Ipv4,
            ..
        })
    ));
    assert!(matches!(
        spec_v6_tcp().build(70_000, b""),
        Err(BuildError::TooLong {
            layer: Layer::Ipv6,
            ..
        })
    ));
}

/// Rebuilds an IPv6 UDP frame with `ext` (extension headers, first next-header `first`)
/// between the fixed header and the UDP header. Checksums are left stale.
fn v6_with_extensions(first: u8, ext: &[u8]) -> Vec<u8> {
    let spec = FrameSpec {
        proto: L4Proto::Udp,
        vlan: Some(3),
        ..spec_v6_tcp()
    };
    let mut frame = spec.build(120, b"payload").unwrap();
    frame.truncate(frame.len() - 4);
    let l3 = 18;
    frame.splice(l3 + 40..l3 + 40, ext.iter().copied());
    frame[l3 + 6] = first;
    let payload_len = u16::try_from(frame.len() - l3 - 40).unwrap();
    frame[l3 + 4..l3 + 6].copy_from_slice(&payload_len.to_be_bytes());
    frame
}

#[test]
fn ipv6_extension_headers() {
    let mut ext = vec![protocol::ROUTING, 0, 0, 0, 0, 0, 0, 0]; // hop-by-hop
    ext.extend([protocol::FRAGMENT, 0, 0, 0, 0, 0, 0, 0]); // routing
    ext.extend([protocol::AH, 0, 0, 0, 0, 0, 0, 1]); // fragment: offset 0, no more (atomic)
    ext.extend([protocol::DEST_OPTS, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // AH, 12 bytes
    ext.extend([protocol::UDP, 0, 1, 4, 0, 0, 0, 0]); // destination options
    let mut frame = v6_with_extensions(protocol::HOP_BY_HOP, &ext);
    fix_checksums(&mut frame).unwrap();
    let parsed = parse(&frame).unwrap();
    let ip = parsed.ip.unwrap();
    assert_eq!((ip.proto, ip.total_len), (protocol::UDP, frame.len() - 18));
    assert_eq!(parsed.l4_offset, Some(18 + 40 + ext.len()));
    assert_eq!(
        (parsed.l4.unwrap().sport, parsed.l4.unwrap().dport),
        (443, 50000)
    );
    assert_eq!(&frame[parsed.payload_offset..][..7], b"payload");
    let dgram = udp::Packet::new_checked(&frame[parsed.l4_offset.unwrap()..]).unwrap();
    assert!(dgram.verify_checksum(ip.src, ip.dst));

    // First fragment of a fragmented datagram: ports known, checksum left alone.
    let frame = v6_with_extensions(protocol::FRAGMENT, &[protocol::UDP, 0, 0, 1, 0, 0, 0, 5]);
    assert!(parse(&frame).unwrap().l4.is_some());
    // A later fragment: protocol known, no L4.
    let frame = v6_with_extensions(protocol::FRAGMENT, &[protocol::UDP, 0, 0, 0x10, 0, 0, 0, 5]);
    let parsed = parse(&frame).unwrap();
    assert_eq!(
        (parsed.ip.unwrap().proto, parsed.l4, parsed.l4_offset),
        (protocol::UDP, None, None)
    );
    assert_eq!(parsed.payload_offset, 18 + 48);
    assert_eq!(parse_five_tuple(&frame), None);
    // ESP ends the walk; "no next header" has no upper layer.
    let frame = v6_with_extensions(protocol::ESP, &[]);
    let parsed = parse(&frame).unwrap();
    assert_eq!(
        (parsed.ip.unwrap().proto, parsed.l4, parsed.l4_offset),
        (protocol::ESP, None, Some(58))
    );
    let frame = v6_with_extensions(
        protocol::DEST_OPTS,
        &[protocol::NO_NEXT_HEADER, 0, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!(parse(&frame).unwrap().l4_offset, None);
    // An extension header running past the payload.
    let frame = v6_with_extensions(
        protocol::HOP_BY_HOP,
        &[protocol::UDP, 200, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!(
        parse(&frame).unwrap_err(),
        ParseError::Truncated {
            layer: Layer::Ipv6Ext,
            offset: 58,
            needed: 1608,
            available: 66
        }
    );
}

#[test]
fn ipv4_fragments() {
    let spec = spec_v4_udp();
    let mut frame = spec.build(200, b"x").unwrap();
    frame.truncate(196);
    let ip_at = 18;
    // First fragment whose UDP length covers more than this frame holds.
    frame[ip_at + 6] = 0x20; // MF
    frame[ip_at + 24..ip_at + 26].copy_from_slice(&1000u16.to_be_bytes());
    let parsed = parse(&frame).unwrap();
    assert_eq!(parsed.l4.map(|l4| l4.dport), Some(5678));
    assert_eq!(parsed.payload_offset, spec.header_len());
    fix_checksums(&mut frame).unwrap();
    assert!(ipv4::Packet::new_checked(&frame[ip_at..])
        .unwrap()
        .verify_checksum());
    // Without MF the same UDP length is an error at the UDP header.
    frame[ip_at + 6] = 0;
    assert_eq!(
        parse(&frame).unwrap_err().to_string(),
        "udp header at offset 38 truncated: needs 1000 bytes, 158 available"
    );
    // A later fragment: no L4.
    frame[ip_at + 7] = 1;
    let parsed = parse(&frame).unwrap();
    assert_eq!(
        (parsed.ip.unwrap().proto, parsed.l4, parsed.l4_offset),
        (17, None, None)
    );
    assert_eq!(parsed.payload_offset, 38);
}

#[test]
fn non_ip_and_ethernet_padding() {
    let mut arp = vec![0xff; 6];
    arp.extend([2, 0, 0, 0, 0, 1, 0x08, 0x06]);
    arp.resize(60, 0);
    let parsed = parse(&arp).unwrap();
    assert_eq!(
        (
            parsed.ethertype,
            parsed.ip,
            parsed.l4,
            parsed.payload_offset
        ),
        (0x0806, None, None, 14)
    );
    assert_eq!(parse_five_tuple(&arp), None);

    // A short IPv4 frame padded to the Ethernet minimum: padding is ignored.
    let mut frame = hex(V4_TCP_SYN)[..54].to_vec();
    frame[16..18].copy_from_slice(&40u16.to_be_bytes());
    frame[46] = 0x50; // no TCP options
    frame.resize(60, 0xee);
    fix_checksums(&mut frame).unwrap();
    let parsed = parse(&frame).unwrap();
    assert_eq!(parsed.payload_offset, 54);
    assert!(tcp::Packet::new_checked(&frame[34..54])
        .unwrap()
        .verify_checksum(parsed.ip.unwrap().src, parsed.ip.unwrap().dst));
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let frames = [
        hex(V4_TCP_SYN),
        hex(V6_UDP_VLAN),
        hex(BUILT_V4_UDP)[..60].to_vec(),
        hex(BUILT_V6_TCP)[..96].to_vec(),
        v6_with_extensions(protocol::HOP_BY_HOP, &[protocol::UDP, 0, 0, 0, 0, 0, 0, 0]),
    ];
    for frame in frames {
        let full = parse(&frame).unwrap();
        let ip_end = full.l3_offset + full.ip.unwrap().total_len;
        for len in 0..frame.len() {
            let mut cut = frame[..len].to_vec();
            let result = parse(&cut);
            assert_eq!(result.is_ok(), len >= ip_end, "length {len}: {result:?}");
            if let Err(e) = result {
                assert!(!e.to_string().contains('\n'));
            }
            assert_eq!(fix_checksums(&mut cut).is_ok(), len >= ip_end);
        }
    }
    assert_eq!(
        parse(&[0; 13]).unwrap_err().to_string(),
        "ethernet header at offset 0 truncated: needs 14 bytes, 13 available"
    );
    let v4 = hex(V4_TCP_SYN);
    let mut short_ip = v4[..44].to_vec();
    short_ip[16..18].copy_from_slice(&30u16.to_be_bytes());
    assert_eq!(
        parse(&short_ip).unwrap_err().to_string(),
        "tcp header at offset 34 truncated: needs 20 bytes, 10 available"
    );
}
