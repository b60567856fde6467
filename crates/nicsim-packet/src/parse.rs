//! One-shot frame parser: Ethernet/VLAN → IPv4/IPv6 (extension headers walked) → TCP/UDP, as
//! a NIC sees a frame (lengths checked). Captured frames of any link type, with encapsulations,
//! tunnels and lengths as captures have them, are [`crate::decode`]'s.
//!
//! [`parse`] never panics; it fails only when a header it must traverse is truncated or
//! malformed, naming the layer and the absolute byte offset. Non-IP frames parse with
//! `ip: None`; IPv4 and IPv6 fragments other than the first carry no L4 information.
//! Checksums are not verified (a NIC model decides what to do with bad ones).

use std::net::IpAddr;
use std::ops::Range;

use crate::ip::protocol;
use crate::{ethernet, ipv4, ipv6, sub, sub_mut, tcp, udp, ParseError};

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
    parse_frame_to(frame, true)
}

/// [`parse`] up to the network layer: the transport header is not looked at (`l4` is `None`,
/// `l4_offset` and `payload_offset` are where it starts), for [`crate::dissect`] to show the
/// IP header before a transport header it refuses.
pub(crate) fn parse_network_only(frame: &[u8]) -> Result<Parsed, ParseError> {
    parse_frame_to(frame, false).map(|(parsed, _)| parsed)
}

fn parse_frame_to(
    frame: &[u8],
    transport: bool,
) -> Result<(Parsed, Option<Range<usize>>), ParseError> {
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
    parse_network(frame, parsed, transport)
}

/// Parses from the network header on, as `parsed.l3_offset` and `parsed.ethertype` say.
fn parse_network(
    frame: &[u8],
    mut parsed: Parsed,
    transport: bool,
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
    if !transport {
        return Ok((parsed, None));
    }
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
