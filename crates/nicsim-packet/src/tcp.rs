//! TCP headers (RFC 9293) and their checksum over the IPv4 or IPv6 pseudo-header.
//!
//! [`Packet::new_checked`] validates the data offset against the buffer once, so every
//! accessor is infallible. The view's buffer is the whole segment (header and payload), as
//! the checksum covers both. [`Repr`] covers the fixed header: options are dropped when
//! parsing and none are emitted.

use std::net::IpAddr;

use crate::ip::{checksum, protocol};
use crate::{be16, be32, byte, put, sub, sub_mut, BuildError, Layer, ParseError};

/// Length of the header without options.
pub const HEADER_LEN: usize = 20;

/// TCP flag bits as found in byte 13 of the header.
pub mod flags {
    /// No more data from sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push function.
    pub const PSH: u8 = 0x08;
    /// Acknowledgment field is significant.
    pub const ACK: u8 = 0x10;
    /// Urgent pointer field is significant.
    pub const URG: u8 = 0x20;
    /// ECN echo.
    pub const ECE: u8 = 0x40;
    /// Congestion window reduced.
    pub const CWR: u8 = 0x80;
}

/// A view of a TCP segment.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer`, checking the data offset is at least 5 words and fits the buffer.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(ParseError::truncated(Layer::Tcp, 0, HEADER_LEN, len));
        }
        let packet = Packet { buffer };
        let header_len = packet.header_len();
        if header_len < HEADER_LEN {
            return Err(ParseError::malformed(Layer::Tcp, 0, "data offset below 5"));
        }
        if len < header_len {
            return Err(ParseError::truncated(Layer::Tcp, 0, header_len, len));
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

    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.data(), 0)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.data(), 2)
    }

    /// Sequence number.
    pub fn seq_number(&self) -> u32 {
        be32(self.data(), 4)
    }

    /// Acknowledgment number.
    pub fn ack_number(&self) -> u32 {
        be32(self.data(), 8)
    }

    /// Header length in bytes (data offset × 4).
    pub fn header_len(&self) -> usize {
        usize::from(byte(self.data(), 12) >> 4) * 4
    }

    /// The eight flag bits (see [`flags`]).
    pub fn flags(&self) -> u8 {
        byte(self.data(), 13)
    }

    /// Receive window.
    pub fn window_len(&self) -> u16 {
        be16(self.data(), 14)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(self.data(), 16)
    }

    /// Urgent pointer.
    pub fn urgent_at(&self) -> u16 {
        be16(self.data(), 18)
    }

    /// Raw option bytes.
    pub fn options(&self) -> &[u8] {
        sub(self.data(), HEADER_LEN, self.header_len())
    }

    /// Segment payload.
    pub fn payload(&self) -> &[u8] {
        sub(self.data(), self.header_len(), self.data().len())
    }

    /// Whether the checksum over pseudo-header, header and payload is correct.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        checksum::l4_valid(src, dst, protocol::TCP, self.data())
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

    /// Sets the sequence number.
    pub fn set_seq_number(&mut self, seq: u32) {
        put(self.buffer.as_mut(), 4, &seq.to_be_bytes());
    }

    /// Sets the acknowledgment number.
    pub fn set_ack_number(&mut self, ack: u32) {
        put(self.buffer.as_mut(), 8, &ack.to_be_bytes());
    }

    /// Sets the flag bits.
    pub fn set_flags(&mut self, flags: u8) {
        put(self.buffer.as_mut(), 13, &[flags]);
    }

    /// Sets the receive window.
    pub fn set_window_len(&mut self, window: u16) {
        put(self.buffer.as_mut(), 14, &window.to_be_bytes());
    }

    /// Sets the urgent pointer.
    pub fn set_urgent_at(&mut self, urgent: u16) {
        put(self.buffer.as_mut(), 18, &urgent.to_be_bytes());
    }

    /// Recomputes the checksum over pseudo-header, header and payload.
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        put(self.buffer.as_mut(), 16, &[0, 0]);
        let sum = checksum::l4(src, dst, protocol::TCP, self.data());
        put(self.buffer.as_mut(), 16, &sum.to_be_bytes());
    }

    /// Mutable segment payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        let data = self.buffer.as_mut();
        let end = data.len();
        sub_mut(data, start, end)
    }
}

/// A parsed TCP header (without options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Flag bits (see [`flags`]).
    pub flags: u8,
    /// Receive window.
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
}

impl Repr {
    /// Reads the fixed header fields. The checksum is not verified here (see
    /// [`Packet::verify_checksum`]) so that corrupted segments can still be inspected.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, ParseError> {
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq: packet.seq_number(),
            ack: packet.ack_number(),
            flags: packet.flags(),
            window: packet.window_len(),
            urgent: packet.urgent_at(),
        })
    }

    /// Length of the emitted header (no options).
    pub fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the start of `segment`, whose remainder is the payload, and
    /// fills the checksum for the given IP addresses.
    pub fn emit(&self, segment: &mut [u8], src: IpAddr, dst: IpAddr) -> Result<(), BuildError> {
        BuildError::check_len(Layer::Tcp, HEADER_LEN, segment)?;
        put(segment, 12, &[(HEADER_LEN as u8 / 4) << 4]);
        let mut packet = Packet { buffer: segment };
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq);
        packet.set_ack_number(self.ack);
        packet.set_flags(self.flags);
        packet.set_window_len(self.window);
        packet.set_urgent_at(self.urgent);
        packet.fill_checksum(src, dst);
        Ok(())
    }
}
