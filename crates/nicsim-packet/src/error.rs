//! Error types shared by every protocol module.
//!
//! [`ParseError`] names the layer and the byte offset of the offending header; offsets are
//! relative to the buffer handed to the view, and absolute within the frame when produced by
//! [`crate::parse`]. [`BuildError`] reports why a header could not be emitted.

use std::fmt;
use std::net::IpAddr;

/// The protocol layer an error refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    /// A capture's link-layer header other than Ethernet (loopback, Linux cooked, ...).
    Link,
    /// Ethernet II header.
    Ethernet,
    /// 802.1Q / 802.1ad VLAN tag.
    Vlan,
    /// IPv4 header.
    Ipv4,
    /// IPv6 fixed header.
    Ipv6,
    /// IPv6 extension header.
    Ipv6Ext,
    /// TCP header.
    Tcp,
    /// UDP header.
    Udp,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Link => "link-layer",
            Layer::Ethernet => "ethernet",
            Layer::Vlan => "vlan",
            Layer::Ipv4 => "ipv4",
            Layer::Ipv6 => "ipv6",
            Layer::Ipv6Ext => "ipv6 extension",
            Layer::Tcp => "tcp",
            Layer::Udp => "udp",
        })
    }
}

/// Why bytes could not be parsed as a header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The buffer ends before the header (or the length its fields announce) does.
    #[error(
        "{layer} header at offset {offset} truncated: needs {needed} bytes, {available} available"
    )]
    Truncated {
        /// Layer being parsed.
        layer: Layer,
        /// Byte offset where the header starts.
        offset: usize,
        /// Bytes the header needs from `offset`.
        needed: usize,
        /// Bytes present from `offset`.
        available: usize,
    },
    /// A header field holds an impossible or unsupported value.
    #[error("malformed {layer} header at offset {offset}: {reason}")]
    Malformed {
        /// Layer being parsed.
        layer: Layer,
        /// Byte offset where the header starts.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
}

impl ParseError {
    pub(crate) fn truncated(layer: Layer, offset: usize, needed: usize, available: usize) -> Self {
        ParseError::Truncated {
            layer,
            offset,
            needed,
            available,
        }
    }

    pub(crate) fn malformed(layer: Layer, offset: usize, reason: &'static str) -> Self {
        ParseError::Malformed {
            layer,
            offset,
            reason,
        }
    }

    /// The same error with its offset moved by `base` bytes (for a header found at `base`).
    pub(crate) fn shifted(self, base: usize) -> Self {
        match self {
            ParseError::Truncated {
                layer,
                offset,
                needed,
                available,
            } => ParseError::Truncated {
                layer,
                offset: offset + base,
                needed,
                available,
            },
            ParseError::Malformed {
                layer,
                offset,
                reason,
            } => ParseError::Malformed {
                layer,
                offset: offset + base,
                reason,
            },
        }
    }
}

/// Why a header or frame could not be emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The requested frame cannot hold the headers and the FCS.
    #[error("frame length {frame_len} is below the {min} bytes needed for headers and FCS")]
    FrameTooShort {
        /// Requested frame length, FCS included.
        frame_len: usize,
        /// Smallest acceptable frame length.
        min: usize,
    },
    /// The output buffer is smaller than the header to emit.
    #[error("{layer} header needs {needed} bytes, buffer has {available}")]
    BufferTooShort {
        /// Layer being emitted.
        layer: Layer,
        /// Bytes the header needs.
        needed: usize,
        /// Bytes in the buffer.
        available: usize,
    },
    /// A length does not fit the protocol's 16-bit length field.
    #[error("{layer} length {len} exceeds 65535")]
    TooLong {
        /// Layer whose length field overflows.
        layer: Layer,
        /// The length that does not fit.
        len: usize,
    },
    /// A field value is out of its range.
    #[error("invalid {layer} {field} {value}")]
    InvalidField {
        /// Layer being emitted.
        layer: Layer,
        /// Field name.
        field: &'static str,
        /// Offending value.
        value: u64,
    },
    /// Source and destination addresses are of different IP versions.
    #[error("source {src} and destination {dst} are different IP versions")]
    MixedAddressFamilies {
        /// Source address.
        src: IpAddr,
        /// Destination address.
        dst: IpAddr,
    },
}

impl BuildError {
    /// Fails unless `buf` holds at least `needed` bytes.
    pub(crate) fn check_len(layer: Layer, needed: usize, buf: &[u8]) -> Result<(), BuildError> {
        if buf.len() < needed {
            return Err(BuildError::BufferTooShort {
                layer,
                needed,
                available: buf.len(),
            });
        }
        Ok(())
    }
}
