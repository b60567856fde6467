//! One-shot frame parser: Ethernet/VLAN → IPv4/IPv6 (extension headers walked) → TCP/UDP.
//! [`parse_link`] also starts from the other link layers captures use (BSD loopback, raw IP,
//! Linux cooked SLL/SLL2) and unwraps PPPoE sessions, so a capture's link type selects where the
//! IP header starts.
//!
//! [`parse`] never panics; it fails only when a header it must traverse is truncated or
//! malformed, naming the layer and the absolute byte offset. Non-IP frames parse with
//! `ip: None`; IPv4 and IPv6 fragments other than the first carry no L4 information.
//! Checksums are not verified (a NIC model decides what to do with bad ones).

use std::net::IpAddr;
use std::ops::Range;

use crate::ip::protocol;
use crate::{ethernet, ipv4, ipv6, sub, sub_mut, tcp, udp, Layer, ParseError};

/// What [`parse`] found in a frame. Offsets are from the start of the frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Parsed {
    /// Source MAC address.
    pub eth_src: [u8; 6],
    /// Destination MAC address.
    pub eth_dst: [u8; 6],
    /// VLAN id of the innermost tag.
    pub vlan: Option<u16>,
    /// EtherType after any VLAN tags.
    pub ethertype: u16,
    /// IP header summary, for IPv4 and IPv6 frames.
    pub ip: Option<IpInfo>,
    /// Ports (and TCP fields) for TCP and UDP.
    pub l4: Option<L4Info>,
    /// Offset of the network-layer header.
    pub l3_offset: usize,
    /// Offset of the upper-layer header (any protocol), when this frame holds it.
    pub l4_offset: Option<usize>,
    /// Offset of the first byte after the last header parsed: the TCP/UDP payload, the
    /// upper-layer header of other protocols, or the L3 header of non-IP frames.
    pub payload_offset: usize,
}

/// IP header summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpInfo {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Final upper-layer protocol, after IPv6 extension headers.
    pub proto: u8,
    /// IPv4 TOS byte or IPv6 traffic class.
    pub tos: u8,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// Length of the IP packet: IPv4 total length, or 40 + IPv6 payload length.
    pub total_len: usize,
}

/// Transport ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct L4Info {
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// TCP-specific fields, for TCP.
    pub tcp: Option<TcpInfo>,
}

/// TCP header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpInfo {
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Flag bits (see [`crate::tcp::flags`]).
    pub flags: u8,
    /// Receive window.
    pub window: u16,
}

/// Parses a frame without FCS.
pub fn parse(frame: &[u8]) -> Result<Parsed, ParseError> {
    parse_frame(frame).map(|(parsed, _)| parsed)
}

/// Link types (pcap `LINKTYPE_*` numbers) that [`parse_link`] understands.
pub mod linktype {
    /// BSD loopback: a 4-byte address family in host byte order.
    pub const NULL: u32 = 0;
    /// Ethernet II.
    pub const ETHERNET: u32 = 1;
    /// Raw IP on some BSDs (DLT_RAW = 12 or 14); the version nibble selects IPv4 or IPv6.
    pub const RAW_BSD: u32 = 12;
    /// Raw IP, OpenBSD numbering.
    pub const RAW_OPENBSD: u32 = 14;
    /// Raw IP; the version nibble selects IPv4 or IPv6.
    pub const RAW: u32 = 101;
    /// OpenBSD loopback: a 4-byte address family in network byte order.
    pub const LOOP: u32 = 108;
    /// Linux cooked capture v1 (16-byte header, protocol at offset 14).
    pub const LINUX_SLL: u32 = 113;
    /// Raw IPv4.
    pub const IPV4: u32 = 228;
    /// Raw IPv6.
    pub const IPV6: u32 = 229;
    /// Linux cooked capture v2 (20-byte header, protocol at offset 0).
    pub const LINUX_SLL2: u32 = 276;

    /// Whether [`super::parse_link`] parses frames of this link type.
    pub fn is_supported(linktype: u32) -> bool {
        matches!(
            linktype,
            NULL | ETHERNET
                | RAW_BSD
                | RAW_OPENBSD
                | RAW
                | LOOP
                | LINUX_SLL
                | IPV4
                | IPV6
                | LINUX_SLL2
        )
    }
}

/// EtherType of PPPoE session frames, whose IPv4/IPv6 packets [`parse_link`] unwraps.
pub const ETHERTYPE_PPPOE_SESSION: u16 = 0x8864;

/// Parses a captured frame of pcap link type `linktype` (see [`linktype`]): Ethernet frames as
/// [`parse`] does (and through a PPPoE session header), other link layers up to their network
/// header. Non-Ethernet frames report
/// zero MAC addresses and no VLAN; `ethertype` is the network protocol the link header names.
pub fn parse_link(linktype: u32, frame: &[u8]) -> Result<Parsed, ParseError> {
    let short = |needed| ParseError::truncated(Layer::Link, 0, needed, frame.len());
    let (l3_offset, ethertype) = match linktype {
        linktype::ETHERNET => {
            let parsed = parse(frame)?;
            if parsed.ethertype != ETHERTYPE_PPPOE_SESSION {
                return Ok(parsed);
            }
            // PPPoE session: 6-byte PPPoE header, then the 2-byte PPP protocol.
            let ppp = parsed.l3_offset + 6;
            if frame.len() < ppp + 2 {
                return Err(ParseError::truncated(
                    Layer::Link,
                    parsed.l3_offset,
                    8,
                    frame.len() - parsed.l3_offset,
                ));
            }
            let ethertype = match crate::be16(frame, ppp) {
                0x0021 => ethernet::ETHERTYPE_IPV4,
                0x0057 => ethernet::ETHERTYPE_IPV6,
                _ => return Ok(parsed),
            };
            let inner = Parsed {
                ethertype,
                l3_offset: ppp + 2,
                payload_offset: ppp + 2,
                ..parsed
            };
            return parse_network(frame, inner).map(|(parsed, _)| parsed);
        }
        linktype::NULL | linktype::LOOP => {
            let family: [u8; 4] = crate::bytes(frame, 0);
            if frame.len() < 4 {
                return Err(short(4));
            }
            // NULL is in the capturing host's byte order: accept either.
            let family = match linktype {
                linktype::LOOP => u32::from_be_bytes(family),
                _ if u32::from_le_bytes(family) < 0x1_0000 => u32::from_le_bytes(family),
                _ => u32::from_be_bytes(family),
            };
            let ethertype = match family {
                2 => ethernet::ETHERTYPE_IPV4,
                // AF_INET6 differs per OS: BSD 24, FreeBSD 28, macOS 30, Linux 10.
                10 | 24 | 28 | 30 => ethernet::ETHERTYPE_IPV6,
                _ => 0,
            };
            (4, ethertype)
        }
        linktype::RAW | linktype::RAW_BSD | linktype::RAW_OPENBSD => {
            let ethertype = match crate::byte(frame, 0) >> 4 {
                4 => ethernet::ETHERTYPE_IPV4,
                6 => ethernet::ETHERTYPE_IPV6,
                _ => 0,
            };
            (0, ethertype)
        }
        linktype::IPV4 => (0, ethernet::ETHERTYPE_IPV4),
        linktype::IPV6 => (0, ethernet::ETHERTYPE_IPV6),
        linktype::LINUX_SLL => {
            if frame.len() < 16 {
                return Err(short(16));
            }
            (16, crate::be16(frame, 14))
        }
        linktype::LINUX_SLL2 => {
            if frame.len() < 20 {
                return Err(short(20));
            }
            (20, crate::be16(frame, 0))
        }
        _ => {
            return Err(ParseError::malformed(
                Layer::Link,
                0,
                "unsupported link type",
            ))
        }
    };
    let parsed = Parsed {
        eth_src: [0; 6],
        eth_dst: [0; 6],
        vlan: None,
        ethertype,
        ip: None,
        l4: None,
        l3_offset,
        l4_offset: None,
        payload_offset: l3_offset,
    };
    parse_network(frame, parsed).map(|(parsed, _)| parsed)
}

/// Recomputes the IPv4 header checksum and the TCP/UDP checksum of a frame without FCS, e.g.
/// after editing its payload in place. L4 checksums of fragments are left alone, as they
/// cover bytes not in this frame. IPv6 uses the header's destination even with a routing header.
pub fn fix_checksums(frame_without_fcs: &mut [u8]) -> Result<(), ParseError> {
    let (parsed, segment) = parse_frame(frame_without_fcs)?;
    let Some(ip) = parsed.ip else { return Ok(()) };
    if ip.src.is_ipv4() {
        let end = frame_without_fcs.len();
        ipv4::Packet::new_checked(sub_mut(frame_without_fcs, parsed.l3_offset, end))?
            .fill_checksum();
    }
    if let Some(range) = segment {
        let segment = sub_mut(frame_without_fcs, range.start, range.end);
        match ip.proto {
            protocol::TCP => tcp::Packet::new_checked(segment)?.fill_checksum(ip.src, ip.dst),
            _ => udp::Packet::new_checked(segment)?.fill_checksum(ip.src, ip.dst),
        }
    }
    Ok(())
}

/// The network layer as the transport parser needs it.
struct Network {
    info: IpInfo,
    /// Offset of the end of the IP headers, relative to the L3 header.
    upper_offset: usize,
    /// Whether the upper-layer header is in this packet (not a later fragment).
    upper_present: bool,
    /// Whether this is the first fragment of a fragmented datagram.
    first_fragment: bool,
    /// IP payload end, relative to the L3 header.
    end: usize,
}

/// Parses `frame`; also returns the range of a complete (unfragmented) TCP/UDP segment.
fn parse_frame(frame: &[u8]) -> Result<(Parsed, Option<Range<usize>>), ParseError> {
    let eth = ethernet::Repr::parse(&ethernet::Packet::new_checked(frame)?)?;
    let l3_offset = eth.header_len();
    let parsed = Parsed {
        eth_src: eth.src,
        eth_dst: eth.dst,
        vlan: eth.vlan.map(|tag| tag.vid),
        ethertype: eth.ethertype,
        ip: None,
        l4: None,
        l3_offset,
        l4_offset: None,
        payload_offset: l3_offset,
    };
    parse_network(frame, parsed)
}

/// Parses from the network header on, as `parsed.l3_offset` and `parsed.ethertype` say.
fn parse_network(
    frame: &[u8],
    mut parsed: Parsed,
) -> Result<(Parsed, Option<Range<usize>>), ParseError> {
    let l3_offset = parsed.l3_offset;
    let l3 = sub(frame, l3_offset, frame.len());
    let net = match parsed.ethertype {
        ethernet::ETHERTYPE_IPV4 => ipv4_network(l3),
        ethernet::ETHERTYPE_IPV6 => ipv6_network(l3),
        _ => return Ok((parsed, None)),
    }
    .map_err(|e| e.shifted(l3_offset))?;
    parsed.ip = Some(net.info);
    parsed.payload_offset = l3_offset + net.upper_offset;
    if !net.upper_present {
        return Ok((parsed, None));
    }
    let l4_offset = l3_offset + net.upper_offset;
    parsed.l4_offset = Some(l4_offset);
    let l4 = sub(l3, net.upper_offset, net.end);
    let (info, header_len, segment_len) = match net.info.proto {
        protocol::TCP => {
            let tcp = tcp::Packet::new_checked(l4).map_err(|e| e.shifted(l4_offset))?;
            let info = TcpInfo {
                seq: tcp.seq_number(),
                ack: tcp.ack_number(),
                flags: tcp.flags(),
                window: tcp.window_len(),
            };
            (
                L4Info {
                    sport: tcp.src_port(),
                    dport: tcp.dst_port(),
                    tcp: Some(info),
                },
                tcp.header_len(),
                l4.len(),
            )
        }
        protocol::UDP => {
            let udp = if net.first_fragment {
                udp::Packet::new_fragment(l4)
            } else {
                udp::Packet::new_checked(l4)
            }
            .map_err(|e| e.shifted(l4_offset))?;
            (
                L4Info {
                    sport: udp.src_port(),
                    dport: udp.dst_port(),
                    tcp: None,
                },
                udp::HEADER_LEN,
                usize::from(udp.len()),
            )
        }
        _ => return Ok((parsed, None)),
    };
    parsed.l4 = Some(info);
    parsed.payload_offset = l4_offset + header_len;
    let segment = (!net.first_fragment).then_some(l4_offset..l4_offset + segment_len);
    Ok((parsed, segment))
}

fn ipv4_network(l3: &[u8]) -> Result<Network, ParseError> {
    let ip = ipv4::Packet::new_checked(l3)?;
    Ok(Network {
        info: IpInfo {
            src: ip.src_addr().into(),
            dst: ip.dst_addr().into(),
            proto: ip.protocol(),
            tos: ip.tos(),
            ttl: ip.ttl(),
            total_len: usize::from(ip.total_len()),
        },
        upper_offset: ip.header_len(),
        upper_present: ip.frag_offset() == 0,
        first_fragment: ip.frag_offset() == 0 && ip.more_frags(),
        end: usize::from(ip.total_len()),
    })
}

fn ipv6_network(l3: &[u8]) -> Result<Network, ParseError> {
    let ip = ipv6::Packet::new_checked(l3)?;
    let upper = ip.upper_layer()?;
    let total_len = ipv6::HEADER_LEN + usize::from(ip.payload_len());
    Ok(Network {
        info: IpInfo {
            src: ip.src_addr().into(),
            dst: ip.dst_addr().into(),
            proto: upper.protocol,
            tos: ip.traffic_class(),
            ttl: ip.hop_limit(),
            total_len,
        },
        upper_offset: upper.offset,
        upper_present: upper.header_present(),
        first_fragment: upper.fragment.is_some_and(|f| f.offset == 0 && f.more),
        end: total_len,
    })
}
