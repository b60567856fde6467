//! nicsim-packet: the packet library shared by every nicsim subsystem.
//!
//! Header views that never panic on short or hostile input, validated representations
//! that parse from and emit into bytes, and pcap/pcapng capture reading and writing.
//!
//! Each protocol module (in the style of smoltcp's `wire`) offers a `Packet<T>` view whose
//! length is checked once by `new_checked`, after which every accessor is infallible, and a
//! `Repr` that is parsed from a view and emitted into a byte buffer. On top of these sit the
//! one-shot [`parse`] used by datapaths and the [`FrameSpec`] builder used by traffic generators,
//! [`mod@dissect`], a frame's headers field by field as tshark -V shows them,
//! and [`mod@decode`], which takes a captured frame of any common link type through its
//! encapsulations and tunnels to its TCP/UDP segment, as tshark does.

#![warn(missing_docs)]

use std::net::IpAddr;

mod builder;
pub mod capture;
pub mod decode;
pub mod defrag;
pub mod dissect;
mod error;
pub mod ethernet;
pub mod fcs;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
mod parse;
pub mod pcapng;
pub mod tcp;
pub mod udp;

pub use builder::{FrameSpec, L4Proto};
pub use decode::{
    decode, decode_datagram, decode_ipcomp, ipcomp_inflate, linktype, Fragment, Segment, Tunnel,
    TunnelKind, TunnelStack,
};
pub use error::{BuildError, Layer, ParseError};
pub use parse::{fix_checksums, parse, IpInfo, L4Info, Parsed, TcpInfo};

/// The classic flow key. `proto` is the IP protocol number (6 = TCP, 17 = UDP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiveTuple {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// IP protocol number.
    pub proto: u8,
}

/// Parse an Ethernet frame (optionally VLAN-tagged) and return its 5-tuple and the
/// byte offset of the L4 payload, or `None` when the frame is not IPv4/IPv6 + TCP/UDP.
pub fn parse_five_tuple(frame: &[u8]) -> Option<(FiveTuple, usize)> {
    let parsed = parse(frame).ok()?;
    let (ip, l4) = (parsed.ip?, parsed.l4?);
    let tuple = FiveTuple {
        src: ip.src,
        dst: ip.dst,
        sport: l4.sport,
        dport: l4.dport,
        proto: ip.proto,
    };
    Some((tuple, parsed.payload_offset))
}

// Byte helpers. Views check their lengths once on construction; these helpers are a backstop
// that turns any out-of-range access into zeros (reads) or a no-op (writes) instead of a panic.

/// `N` bytes at `at`, or zeros when out of range.
pub(crate) fn bytes<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    buf.get(at..at.saturating_add(N))
        .and_then(|s| s.try_into().ok())
        .unwrap_or([0; N])
}

/// The byte at `at`, or zero when out of range.
pub(crate) fn byte(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

/// Big-endian `u16` at `at`.
pub(crate) fn be16(buf: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(bytes(buf, at))
}

/// Big-endian `u32` at `at`.
pub(crate) fn be32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes(buf, at))
}

/// `buf[start..end]`, or an empty slice when out of range.
pub(crate) fn sub(buf: &[u8], start: usize, end: usize) -> &[u8] {
    buf.get(start..end).unwrap_or_default()
}

/// Mutable `buf[start..end]`, or an empty slice when out of range.
pub(crate) fn sub_mut(buf: &mut [u8], start: usize, end: usize) -> &mut [u8] {
    buf.get_mut(start..end).unwrap_or_default()
}

/// Copies `value` into `buf` at `at` (no-op when out of range).
pub(crate) fn put(buf: &mut [u8], at: usize, value: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at.saturating_add(value.len())) {
        dst.copy_from_slice(value);
    }
}
