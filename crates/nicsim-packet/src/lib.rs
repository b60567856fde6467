//! nicsim-packet: the packet library shared by every nicsim subsystem.
//!
//! Header views that never panic on short or hostile input, validated representations
//! that parse from and emit into bytes, and pcap/pcapng capture reading and writing.

use std::net::IpAddr;

/// The classic flow key. `proto` is the IP protocol number (6 = TCP, 17 = UDP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiveTuple {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
}

/// Parse an Ethernet frame (optionally VLAN-tagged) and return its 5-tuple and the
/// byte offset of the L4 payload, or `None` when the frame is not IPv4/IPv6 + TCP/UDP.
pub fn parse_five_tuple(frame: &[u8]) -> Option<(FiveTuple, usize)> {
    let _ = frame;
    todo!("implemented by the packet library")
}
