//! UDP headers (RFC 768) and their checksum over the IPv4 or IPv6 pseudo-header.
//!
//! [`Packet::new_checked`] validates the length field against the buffer once (bytes past it
//! are ignored); [`Packet::new_fragment`] accepts the first fragment of a fragmented datagram,
//! whose length field covers bytes not present. Either way no accessor can panic.

use std::net::IpAddr;

use crate::ip::{checksum, protocol};
use crate::{be16, put, sub, sub_mut, BuildError, Layer, ParseError};

/// Length of the header.
pub const HEADER_LEN: usize = 8;

/// A view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer`, checking the length field is at least 8 and fits the buffer.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let packet = Self::new_fragment(buffer)?;
        let len = packet.data().len();
        match usize::from(packet.len()) {
            field if field < HEADER_LEN => {
                Err(ParseError::malformed(Layer::Udp, 0, "length field below 8"))
            }
            field if field > len => Err(ParseError::truncated(Layer::Udp, 0, field, len)),
            _ => Ok(packet),
        }
    }

    /// Wraps `buffer` checking only that the 8-byte header is present, for the first fragment
    /// of a fragmented datagram. [`Packet::payload`] then returns the bytes that are present.
    pub fn new_fragment(buffer: T) -> Result<Self, ParseError> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(ParseError::truncated(Layer::Udp, 0, HEADER_LEN, len));
        }
        Ok(Packet { buffer })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn data(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.data(), 0)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.data(), 2)
    }

    /// Length field (header and payload).
    pub fn len(&self) -> u16 {
        be16(self.data(), 4)
    }

    /// Whether the length field announces no payload.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// Checksum field (0: not computed, allowed over IPv4 only).
    pub fn checksum(&self) -> u16 {
        be16(self.data(), 6)
    }

    /// The datagram as covered by the length field and present in the buffer.
    fn datagram(&self) -> &[u8] {
        let data = self.data();
        sub(
            data,
            0,
            usize::from(self.len()).clamp(HEADER_LEN, data.len()),
        )
    }

    /// Payload up to the length field.
    pub fn payload(&self) -> &[u8] {
        let datagram = self.datagram();
        sub(datagram, HEADER_LEN, datagram.len())
    }

    /// Whether the checksum is correct; a zero checksum is accepted over IPv4.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        (self.checksum() == 0 && src.is_ipv4())
            || checksum::l4_valid(src, dst, protocol::UDP, self.datagram())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, port: u16) {
        put(self.buffer.as_mut(), 0, &port.to_be_bytes());
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, port: u16) {
        put(self.buffer.as_mut(), 2, &port.to_be_bytes());
    }

    /// Sets the length field.
    pub fn set_len(&mut self, len: u16) {
        put(self.buffer.as_mut(), 4, &len.to_be_bytes());
    }

    /// Recomputes the checksum (a computed zero is sent as 0xffff).
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        put(self.buffer.as_mut(), 6, &[0, 0]);
        let sum = match checksum::l4(src, dst, protocol::UDP, self.datagram()) {
            0 => 0xffff,
            sum => sum,
        };
        put(self.buffer.as_mut(), 6, &sum.to_be_bytes());
    }

    /// Mutable payload up to the length field.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.datagram().len();
        sub_mut(self.buffer.as_mut(), HEADER_LEN, end)
    }
}

/// A parsed UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl Repr {
    /// Reads the ports. The checksum is not verified here (see [`Packet::verify_checksum`]).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, ParseError> {
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
        })
    }

    /// Length of the header.
    pub fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the start of `datagram`, whose remainder is the payload; sets the
    /// length field to `datagram.len()` and fills the checksum for the given IP addresses.
    pub fn emit(&self, datagram: &mut [u8], src: IpAddr, dst: IpAddr) -> Result<(), BuildError> {
        BuildError::check_len(Layer::Udp, HEADER_LEN, datagram)?;
        let len = u16::try_from(datagram.len()).map_err(|_| BuildError::TooLong {
            layer: Layer::Udp,
            len: datagram.len(),
        })?;
        let mut packet = Packet { buffer: datagram };
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(len);
        packet.fill_checksum(src, dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn zero_checksum_only_valid_over_ipv4() {
        let datagram = [0, 1, 0, 2, 0, 10, 0, 0, 0xab, 0xcd];
        let packet = Packet::new_checked(&datagram[..]).unwrap();
        assert!(packet.verify_checksum(Ipv4Addr::LOCALHOST.into(), Ipv4Addr::LOCALHOST.into()));
        assert!(!packet.verify_checksum(Ipv6Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()));
        assert_eq!(packet.payload(), [0xab, 0xcd]);
    }

    #[test]
    fn length_field_checks() {
        let mut datagram = [0u8; 12];
        datagram[5] = 7;
        assert!(matches!(
            Packet::new_checked(&datagram[..]),
            Err(ParseError::Malformed { .. })
        ));
        datagram[5] = 20;
        assert_eq!(
            Packet::new_checked(&datagram[..]).unwrap_err(),
            ParseError::truncated(Layer::Udp, 0, 20, 12)
        );
        let fragment = Packet::new_fragment(&datagram[..]).unwrap();
        assert_eq!(fragment.payload().len(), 4);
    }
}
