//! IPv4 headers (RFC 791), options included.
//!
//! [`Packet::new_checked`] validates version, IHL and total length against the buffer once, so
//! every accessor is infallible; bytes past the total length (Ethernet padding) are ignored.
//! [`Repr`] covers the fixed header: it drops options when parsing and emits none.

use std::net::Ipv4Addr;

use crate::ip::checksum;
use crate::{be16, byte, bytes, put, sub, sub_mut, BuildError, Layer, ParseError};

/// Length of the header without options.
pub const HEADER_LEN: usize = 20;

/// A view of an IPv4 header and its payload.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer`, checking version 4, IHL >= 5 and that header and total length fit.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let data = buffer.as_ref();
        let len = data.len();
        if len < HEADER_LEN {
            return Err(ParseError::truncated(Layer::Ipv4, 0, HEADER_LEN, len));
        }
        let packet = Packet { buffer };
        if packet.version() != 4 {
            return Err(ParseError::malformed(Layer::Ipv4, 0, "version is not 4"));
        }
        let header_len = packet.header_len();
        if header_len < HEADER_LEN {
            return Err(ParseError::malformed(Layer::Ipv4, 0, "IHL below 5"));
        }
        if len < header_len {
            return Err(ParseError::truncated(Layer::Ipv4, 0, header_len, len));
        }
        let total_len = usize::from(packet.total_len());
        if total_len < header_len {
            return Err(ParseError::malformed(
                Layer::Ipv4,
                0,
                "total length shorter than header",
            ));
        }
        if len < total_len {
            return Err(ParseError::truncated(Layer::Ipv4, 0, total_len, len));
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

    /// IP version (4 for any checked packet).
    pub fn version(&self) -> u8 {
        byte(self.data(), 0) >> 4
    }

    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(byte(self.data(), 0) & 0x0f) * 4
    }

    /// Type-of-service byte (DSCP and ECN).
    pub fn tos(&self) -> u8 {
        byte(self.data(), 1)
    }

    /// Differentiated services code point.
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    /// Explicit congestion notification bits.
    pub fn ecn(&self) -> u8 {
        self.tos() & 3
    }

    /// Total length of header and payload.
    pub fn total_len(&self) -> u16 {
        be16(self.data(), 2)
    }

    /// Identification field.
    pub fn ident(&self) -> u16 {
        be16(self.data(), 4)
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        be16(self.data(), 6) & 0x4000 != 0
    }

    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        be16(self.data(), 6) & 0x2000 != 0
    }

    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (be16(self.data(), 6) & 0x1fff) << 3
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        byte(self.data(), 8)
    }

    /// Protocol of the payload.
    pub fn protocol(&self) -> u8 {
        byte(self.data(), 9)
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        be16(self.data(), 10)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(bytes::<4>(self.data(), 12))
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(bytes::<4>(self.data(), 16))
    }

    /// Raw option bytes between the fixed header and the payload.
    pub fn options(&self) -> &[u8] {
        sub(self.data(), HEADER_LEN, self.header_len())
    }

    /// Payload up to the total length (trailing padding excluded).
    pub fn payload(&self) -> &[u8] {
        sub(
            self.data(),
            self.header_len(),
            usize::from(self.total_len()),
        )
    }

    /// Whether the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::data(sub(self.data(), 0, self.header_len())) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the type-of-service byte.
    pub fn set_tos(&mut self, tos: u8) {
        put(self.buffer.as_mut(), 1, &[tos]);
    }

    /// Sets the time to live.
    pub fn set_ttl(&mut self, ttl: u8) {
        put(self.buffer.as_mut(), 8, &[ttl]);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        put(self.buffer.as_mut(), 12, &addr.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        put(self.buffer.as_mut(), 16, &addr.octets());
    }

    /// Recomputes the header checksum.
    pub fn fill_checksum(&mut self) {
        put(self.buffer.as_mut(), 10, &[0, 0]);
        let sum = !checksum::data(sub(self.data(), 0, self.header_len()));
        put(self.buffer.as_mut(), 10, &sum.to_be_bytes());
    }

    /// Mutable payload up to the total length.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (start, end) = (self.header_len(), usize::from(self.total_len()));
        sub_mut(self.buffer.as_mut(), start, end)
    }
}

/// A parsed IPv4 header (without options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Protocol of the payload.
    pub protocol: u8,
    /// Type-of-service byte (DSCP << 2 | ECN).
    pub tos: u8,
    /// Time to live.
    pub ttl: u8,
    /// Identification field.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
    /// More-fragments flag.
    pub more_frags: bool,
    /// Fragment offset in bytes; a multiple of 8.
    pub frag_offset: u16,
    /// Payload length in bytes.
    pub payload_len: usize,
}

impl Repr {
    /// Reads the fixed header fields; options are skipped. The checksum is not verified here
    /// (see [`Packet::verify_checksum`]) so that corrupted packets can still be inspected.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, ParseError> {
        Ok(Repr {
            src: packet.src_addr(),
            dst: packet.dst_addr(),
            protocol: packet.protocol(),
            tos: packet.tos(),
            ttl: packet.ttl(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
            payload_len: packet.payload().len(),
        })
    }

    /// Length of the emitted header (no options).
    pub fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header, checksum included, into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), BuildError> {
        BuildError::check_len(Layer::Ipv4, HEADER_LEN, buf)?;
        let total_len =
            u16::try_from(HEADER_LEN + self.payload_len).map_err(|_| BuildError::TooLong {
                layer: Layer::Ipv4,
                len: HEADER_LEN + self.payload_len,
            })?;
        if !self.frag_offset.is_multiple_of(8) {
            return Err(BuildError::InvalidField {
                layer: Layer::Ipv4,
                field: "fragment offset",
                value: self.frag_offset.into(),
            });
        }
        let flags = u16::from(self.dont_frag) << 14
            | u16::from(self.more_frags) << 13
            | self.frag_offset >> 3;
        put(buf, 0, &[0x45]);
        put(buf, 2, &total_len.to_be_bytes());
        put(buf, 4, &self.ident.to_be_bytes());
        put(buf, 6, &flags.to_be_bytes());
        put(buf, 9, &[self.protocol]);
        let mut packet = Packet { buffer: buf };
        packet.set_tos(self.tos);
        packet.set_ttl(self.ttl);
        packet.set_src_addr(self.src);
        packet.set_dst_addr(self.dst);
        packet.fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example header from Wikipedia's "IPv4 header checksum" article.
    const HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    fn with_payload() -> Vec<u8> {
        let mut buf = HEADER.to_vec();
        buf.resize(0x73, 0);
        buf
    }

    #[test]
    fn known_header_checksum() {
        let buf = with_payload();
        let packet = Packet::new_checked(&buf[..]).unwrap();
        assert!(packet.verify_checksum());
        assert_eq!(packet.checksum(), 0xb861);
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(
            (repr.protocol, repr.ttl, repr.dont_frag, repr.payload_len),
            (17, 64, true, 0x73 - 20)
        );
        let mut out = [0u8; 20];
        repr.emit(&mut out).unwrap();
        assert_eq!(out, HEADER);
    }

    #[test]
    fn options_and_bad_lengths() {
        let mut buf = with_payload();
        buf[0] = 0x46; // IHL 6: 4 option bytes
        let packet = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(
            (packet.options().len(), packet.payload().len()),
            (4, 0x73 - 24)
        );
        buf[0] = 0x44;
        assert!(matches!(
            Packet::new_checked(&buf[..]),
            Err(ParseError::Malformed { .. })
        ));
        buf[0] = 0x45;
        assert_eq!(
            Packet::new_checked(&buf[..100]).unwrap_err().to_string(),
            "ipv4 header at offset 0 truncated: needs 115 bytes, 100 available"
        );
    }
}
