//! Frame builder for traffic generators: Ethernet (optional VLAN) + IPv4/IPv6 + TCP/UDP.
//!
//! [`FrameSpec::build`] produces complete frames of an exact length with correct lengths,
//! checksums and FCS, or a [`BuildError`]; it never panics.

use std::net::IpAddr;

use crate::ethernet::{self, VlanTag};
use crate::fcs::{append_fcs, FCS_LEN};
use crate::ip::protocol;
use crate::{ipv4, ipv6, tcp, udp, BuildError};

/// Transport protocol of a built frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum L4Proto {
    /// TCP, 20-byte header without options.
    Tcp,
    /// UDP.
    Udp,
}

impl L4Proto {
    /// The IP protocol number.
    pub fn number(self) -> u8 {
        match self {
            L4Proto::Tcp => protocol::TCP,
            L4Proto::Udp => protocol::UDP,
        }
    }

    fn header_len(self) -> usize {
        match self {
            L4Proto::Tcp => tcp::HEADER_LEN,
            L4Proto::Udp => udp::HEADER_LEN,
        }
    }
}

/// Header fields of frames to build. IPv4 frames get identification 0 and no flags; IPv6
/// frames get flow label 0; TCP segments get window 65535, no options and urgent pointer 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameSpec {
    /// Source MAC address.
    pub eth_src: [u8; 6],
    /// Destination MAC address.
    pub eth_dst: [u8; 6],
    /// 802.1Q VLAN id (priority 0), 0..=4095.
    pub vlan: Option<u16>,
    /// Source address; its version selects IPv4 or IPv6.
    pub src: IpAddr,
    /// Destination address, of the same version as `src`.
    pub dst: IpAddr,
    /// Transport protocol.
    pub proto: L4Proto,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// IPv4 TOS byte or IPv6 traffic class.
    pub tos: u8,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// TCP sequence number (ignored for UDP).
    pub tcp_seq: u32,
    /// TCP acknowledgment number (ignored for UDP).
    pub tcp_ack: u32,
    /// TCP flag bits (ignored for UDP).
    pub tcp_flags: u8,
}

impl FrameSpec {
    /// Bytes before the L4 payload.
    pub fn header_len(&self) -> usize {
        let vlan = if self.vlan.is_some() {
            ethernet::TAG_LEN
        } else {
            0
        };
        let ip = if self.src.is_ipv4() {
            ipv4::HEADER_LEN
        } else {
            ipv6::HEADER_LEN
        };
        ethernet::HEADER_LEN + vlan + ip + self.proto.header_len()
    }

    /// `header_len() + 4` (FCS), and at least 64.
    pub fn min_frame_len(&self) -> usize {
        (self.header_len() + FCS_LEN).max(64)
    }

    /// Builds a complete frame of exactly `frame_len` bytes INCLUDING the 4-byte FCS, whose L4
    /// payload is `payload` (padded with zeros or truncated to fit). Correct IP/UDP/TCP lengths
    /// and checksums, FCS appended. Errors if frame_len < header_len()+4.
    pub fn build(&self, frame_len: usize, payload: &[u8]) -> Result<Vec<u8>, BuildError> {
        let header_len = self.header_len();
        let body_len = frame_len
            .checked_sub(FCS_LEN)
            .filter(|&len| len >= header_len)
            .ok_or(BuildError::FrameTooShort {
                frame_len,
                min: header_len + FCS_LEN,
            })?;
        let mut frame = Vec::with_capacity(frame_len);
        frame.resize(body_len, 0);
        let copied = payload.len().min(body_len - header_len);
        frame[header_len..header_len + copied].copy_from_slice(&payload[..copied]);

        let mut eth = ethernet::Repr {
            dst: self.eth_dst,
            src: self.eth_src,
            outer_vlan: None,
            vlan: self.vlan.map(VlanTag::new),
            ethertype: 0,
        };
        let l3 = eth.header_len();
        let ip_payload_len = body_len - header_len + self.proto.header_len();
        let l4 = match (self.src, self.dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let repr = ipv4::Repr {
                    src,
                    dst,
                    protocol: self.proto.number(),
                    tos: self.tos,
                    ttl: self.ttl,
                    ident: 0,
                    dont_frag: false,
                    more_frags: false,
                    frag_offset: 0,
                    payload_len: ip_payload_len,
                };
                repr.emit(&mut frame[l3..])?;
                eth.ethertype = ethernet::ETHERTYPE_IPV4;
                l3 + repr.header_len()
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let repr = ipv6::Repr {
                    src,
                    dst,
                    next_header: self.proto.number(),
                    traffic_class: self.tos,
                    flow_label: 0,
                    hop_limit: self.ttl,
                    payload_len: ip_payload_len,
                };
                repr.emit(&mut frame[l3..])?;
                eth.ethertype = ethernet::ETHERTYPE_IPV6;
                l3 + repr.header_len()
            }
            (src, dst) => return Err(BuildError::MixedAddressFamilies { src, dst }),
        };
        eth.emit(&mut frame)?;
        match self.proto {
            L4Proto::Tcp => tcp::Repr {
                src_port: self.sport,
                dst_port: self.dport,
                seq: self.tcp_seq,
                ack: self.tcp_ack,
                flags: self.tcp_flags,
                window: 0xffff,
                urgent: 0,
            }
            .emit(&mut frame[l4..], self.src, self.dst)?,
            L4Proto::Udp => udp::Repr {
                src_port: self.sport,
                dst_port: self.dport,
            }
            .emit(&mut frame[l4..], self.src, self.dst)?,
        }
        append_fcs(&mut frame);
        Ok(frame)
    }
}
