//! IPv6 fixed headers (RFC 8200) and the extension-header chain.
//!
//! [`Packet::new_checked`] validates the version and that the payload length fits the buffer
//! (bytes past it, e.g. Ethernet padding, are ignored). [`Packet::upper_layer`] walks the
//! hop-by-hop, routing, fragment, destination-options and AH headers, bounds-checking each
//! one, and reports the upper-layer protocol and where it starts. Nothing here panics.

use std::net::Ipv6Addr;

use crate::ip::protocol;
use crate::{be16, be32, byte, bytes, put, sub, BuildError, Layer, ParseError};

/// Length of the fixed header.
pub const HEADER_LEN: usize = 40;

/// A view of an IPv6 header and its payload.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

/// Fragment header contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fragment {
    /// Fragment offset in bytes.
    pub offset: u16,
    /// More-fragments flag.
    pub more: bool,
    /// Identification.
    pub ident: u32,
    /// The fragment header's next header: the protocol of the fragmentable part.
    pub next_header: u8,
    /// Offset from the IPv6 header's start of the fragmentable part (right after the fragment
    /// header): the bytes this fragment carries start there.
    pub data_offset: usize,
}

/// Where the extension-header chain ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UpperLayer {
    /// Upper-layer protocol (the last next-header value).
    pub protocol: u8,
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub offset: usize,
    /// The fragment header, if one was present.
    pub fragment: Option<Fragment>,
}

impl UpperLayer {
    /// Whether the upper-layer header is in this packet: false for non-first fragments and
    /// for "no next header".
    pub fn header_present(&self) -> bool {
        self.protocol != protocol::NO_NEXT_HEADER && self.fragment.is_none_or(|f| f.offset == 0)
    }
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer`, checking version 6 and that the payload length fits.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(ParseError::truncated(Layer::Ipv6, 0, HEADER_LEN, len));
        }
        let packet = Packet { buffer };
        if packet.version() != 6 {
            return Err(ParseError::malformed(Layer::Ipv6, 0, "version is not 6"));
        }
        let total = HEADER_LEN + usize::from(packet.payload_len());
        if len < total {
            return Err(ParseError::truncated(Layer::Ipv6, 0, total, len));
        }
        Ok(packet)
    }

    /// Wraps `buffer` checking only that the fixed header is present: a view of a header
    /// whose fields are bogus, for [`crate::dissect`] to show them as tshark does.
    pub(crate) fn new_header_only(buffer: T) -> Option<Self> {
        (buffer.as_ref().len() >= HEADER_LEN).then_some(Packet { buffer })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn data(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// IP version (6 for any checked packet).
    pub fn version(&self) -> u8 {
        byte(self.data(), 0) >> 4
    }

    /// Traffic class (DSCP and ECN).
    pub fn traffic_class(&self) -> u8 {
        (be16(self.data(), 0) >> 4) as u8
    }

    /// 20-bit flow label.
    pub fn flow_label(&self) -> u32 {
        be32(self.data(), 0) & 0x000f_ffff
    }

    /// Payload length (extension headers included).
    pub fn payload_len(&self) -> u16 {
        be16(self.data(), 4)
    }

    /// The first next-header value.
    pub fn next_header(&self) -> u8 {
        byte(self.data(), 6)
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        byte(self.data(), 7)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(bytes::<16>(self.data(), 8))
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(bytes::<16>(self.data(), 24))
    }

    /// Payload (extension headers included) up to the payload length.
    pub fn payload(&self) -> &[u8] {
        sub(
            self.data(),
            HEADER_LEN,
            HEADER_LEN + usize::from(self.payload_len()),
        )
    }

    /// Walks the extension headers. Stops at the first non-extension protocol, at ESP, at
    /// "no next header", or after a fragment header whose offset is non-zero.
    pub fn upper_layer(&self) -> Result<UpperLayer, ParseError> {
        upper_layer_in(self.next_header(), self.payload())
    }
}

/// [`Packet::upper_layer`] over `payload`, the bytes after the fixed header (as many as the
/// caller has: a captured packet may hold fewer than its payload length says, or more, for a
/// jumbogram), the first next-header value being `next_header`.
pub fn upper_layer_in(next_header: u8, payload: &[u8]) -> Result<UpperLayer, ParseError> {
    let mut upper = UpperLayer {
        protocol: next_header,
        offset: HEADER_LEN,
        fragment: None,
    };
    let mut at = 0; // offset within the payload
    loop {
        let len = match upper.protocol {
            protocol::HOP_BY_HOP | protocol::ROUTING | protocol::DEST_OPTS => {
                (usize::from(byte(payload, at + 1)) + 1) * 8
            }
            protocol::AH => (usize::from(byte(payload, at + 1)) + 2) * 4,
            protocol::FRAGMENT => 8,
            _ => return Ok(upper),
        };
        let available = payload.len() - at;
        // `available >= 2` guarantees the length byte read above was real.
        if available < 2 || available < len {
            let needed = if available < 2 { 2 } else { len };
            return Err(ParseError::truncated(
                Layer::Ipv6Ext,
                HEADER_LEN + at,
                needed,
                available,
            ));
        }
        if upper.protocol == protocol::FRAGMENT {
            let field = be16(payload, at + 2);
            upper.fragment = Some(Fragment {
                offset: field & 0xfff8,
                more: field & 1 != 0,
                ident: be32(payload, at + 4),
                next_header: byte(payload, at),
                data_offset: HEADER_LEN + at + 8,
            });
        }
        upper.protocol = byte(payload, at);
        at += len;
        upper.offset = HEADER_LEN + at;
        if !upper.header_present() {
            return Ok(upper);
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the traffic class.
    pub fn set_traffic_class(&mut self, class: u8) {
        let word = be32(self.data(), 0) & 0xf00f_ffff | u32::from(class) << 20;
        put(self.buffer.as_mut(), 0, &word.to_be_bytes());
    }

    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, hop_limit: u8) {
        put(self.buffer.as_mut(), 7, &[hop_limit]);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv6Addr) {
        put(self.buffer.as_mut(), 8, &addr.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv6Addr) {
        put(self.buffer.as_mut(), 24, &addr.octets());
    }
}

/// A parsed IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// First next-header value.
    pub next_header: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label, 0..=0xfffff.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Payload length (extension headers included).
    pub payload_len: usize,
}

impl Repr {
    /// Reads the fixed header fields.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, ParseError> {
        Ok(Repr {
            src: packet.src_addr(),
            dst: packet.dst_addr(),
            next_header: packet.next_header(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
            hop_limit: packet.hop_limit(),
            payload_len: usize::from(packet.payload_len()),
        })
    }

    /// Length of the emitted header.
    pub fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), BuildError> {
        BuildError::check_len(Layer::Ipv6, HEADER_LEN, buf)?;
        let payload_len = u16::try_from(self.payload_len).map_err(|_| BuildError::TooLong {
            layer: Layer::Ipv6,
            len: self.payload_len,
        })?;
        if self.flow_label > 0x000f_ffff {
            return Err(BuildError::InvalidField {
                layer: Layer::Ipv6,
                field: "flow label",
                value: self.flow_label.into(),
            });
        }
        put(buf, 0, &(6 << 28 | self.flow_label).to_be_bytes());
        put(buf, 4, &payload_len.to_be_bytes());
        put(buf, 6, &[self.next_header]);
        let mut packet = Packet { buffer: buf };
        packet.set_traffic_class(self.traffic_class);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src);
        packet.set_dst_addr(self.dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet_with(next_header: u8, ext: &[u8]) -> Vec<u8> {
        let repr = Repr {
            src: Ipv6Addr::LOCALHOST,
            dst: Ipv6Addr::LOCALHOST,
            next_header,
            traffic_class: 0xb8,
            flow_label: 0x12345,
            hop_limit: 7,
            payload_len: ext.len(),
        };
        let mut buf = vec![0; HEADER_LEN];
        repr.emit(&mut buf).unwrap();
        buf.extend_from_slice(ext);
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()),
            Ok(repr)
        );
        buf
    }

    #[test]
    fn walks_every_extension_kind() {
        let mut ext = vec![protocol::ROUTING, 0, 1, 4, 0, 0, 0, 0]; // hop-by-hop, 8 bytes
        ext.extend([protocol::AH, 0, 0, 0, 0, 0, 0, 0]); // routing, 8 bytes
        ext.extend([protocol::DEST_OPTS, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // AH, 12 bytes
        ext.extend([protocol::FRAGMENT, 1].iter().chain(&[0; 14])); // dest opts, 16 bytes
        ext.extend([protocol::UDP, 0, 0, 1, 0, 0, 0, 9]); // fragment: offset 0, more
        ext.extend([0; 8]); // UDP header
        let buf = packet_with(protocol::HOP_BY_HOP, &ext);
        let upper = Packet::new_checked(&buf[..])
            .unwrap()
            .upper_layer()
            .unwrap();
        let fragment = Some(Fragment {
            offset: 0,
            more: true,
            ident: 9,
            next_header: protocol::UDP,
            data_offset: HEADER_LEN + 52,
        });
        assert_eq!(
            upper,
            UpperLayer {
                protocol: protocol::UDP,
                offset: HEADER_LEN + 52,
                fragment
            }
        );
        assert!(upper.header_present());
    }

    #[test]
    fn later_fragment_and_truncation() {
        let buf = packet_with(
            protocol::FRAGMENT,
            &[protocol::TCP, 0, 0x05, 0x01, 0, 0, 0, 1, 0xaa],
        );
        let upper = Packet::new_checked(&buf[..])
            .unwrap()
            .upper_layer()
            .unwrap();
        assert_eq!(upper.fragment.map(|f| f.offset), Some(0x500));
        assert!(!upper.header_present());

        let buf = packet_with(
            protocol::DEST_OPTS,
            &[protocol::TCP, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        let err = Packet::new_checked(&buf[..])
            .unwrap()
            .upper_layer()
            .unwrap_err();
        assert_eq!(err, ParseError::truncated(Layer::Ipv6Ext, 40, 16, 10));
        let buf = packet_with(protocol::AH, &[protocol::TCP]);
        let err = Packet::new_checked(&buf[..])
            .unwrap()
            .upper_layer()
            .unwrap_err();
        assert_eq!(err, ParseError::truncated(Layer::Ipv6Ext, 40, 2, 1));
    }
}
