//! Ethernet II frames, optionally carrying one 802.1Q VLAN tag or an 802.1ad (QinQ) tag pair.
//!
//! [`Packet`] views the fixed 14-byte header; [`Repr`] also walks up to two VLAN tags and
//! reports the EtherType of the encapsulated protocol. Frames are handled without FCS (see
//! [`crate::fcs`]). Lengths are checked once on construction; no accessor can panic.

use crate::{be16, bytes, put, sub, sub_mut, BuildError, Layer, ParseError};

/// Length of the untagged Ethernet II header.
pub const HEADER_LEN: usize = 14;
/// Length of one VLAN tag (TPID + TCI).
pub const TAG_LEN: usize = 4;
/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// TPID of an 802.1Q customer VLAN tag.
pub const TPID_VLAN: u16 = 0x8100;
/// TPID of an 802.1ad service (QinQ outer) tag.
pub const TPID_QINQ: u16 = 0x88a8;
/// Legacy pre-standard QinQ TPID, also accepted when parsing.
pub const TPID_QINQ_LEGACY: u16 = 0x9100;

/// Preamble (7 bytes) and start-of-frame delimiter (1 byte) sent before every frame
/// (IEEE 802.3 clause 4.4.2).
pub const PREAMBLE_SFD_LEN: usize = 8;
/// Minimum inter-frame gap after every frame: 96 bit times (IEEE 802.3 clause 4.4.2).
pub const IFG_LEN: usize = 12;
/// Smallest frame on the wire, FCS included.
pub const MIN_FRAME_LEN: usize = 64;

/// Bytes a frame of `frame_len` (FCS included) occupies on the wire: preamble, SFD, the frame
/// and the inter-frame gap. A 64-byte frame takes 84, so a 1 Gbit/s port carries at most
/// 10^9 / (84 · 8) = 1,488,095 frames per second.
pub const fn wire_bytes(frame_len: usize) -> usize {
    PREAMBLE_SFD_LEN + frame_len + IFG_LEN
}

/// A view of an Ethernet II header and what follows it.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer`, checking it holds at least the 14-byte header.
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let len = buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(ParseError::truncated(Layer::Ethernet, 0, HEADER_LEN, len));
        }
        Ok(Packet { buffer })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination MAC address.
    pub fn dst_addr(&self) -> [u8; 6] {
        bytes(self.buffer.as_ref(), 0)
    }

    /// Source MAC address.
    pub fn src_addr(&self) -> [u8; 6] {
        bytes(self.buffer.as_ref(), 6)
    }

    /// The type field at offset 12: an EtherType, or a TPID when the frame is tagged.
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), 12)
    }

    /// Everything after the 14-byte header (VLAN tags included).
    pub fn payload(&self) -> &[u8] {
        let data = self.buffer.as_ref();
        sub(data, HEADER_LEN, data.len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the destination MAC address.
    pub fn set_dst_addr(&mut self, addr: [u8; 6]) {
        put(self.buffer.as_mut(), 0, &addr);
    }

    /// Sets the source MAC address.
    pub fn set_src_addr(&mut self, addr: [u8; 6]) {
        put(self.buffer.as_mut(), 6, &addr);
    }

    /// Sets the type field at offset 12.
    pub fn set_ethertype(&mut self, ethertype: u16) {
        put(self.buffer.as_mut(), 12, &ethertype.to_be_bytes());
    }

    /// Mutable access to everything after the 14-byte header.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let data = self.buffer.as_mut();
        let len = data.len();
        sub_mut(data, HEADER_LEN, len)
    }
}

/// One VLAN tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanTag {
    /// Tag protocol identifier (0x8100, 0x88a8 or 0x9100).
    pub tpid: u16,
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 0..=4095.
    pub vid: u16,
}

impl VlanTag {
    /// An 802.1Q tag with priority 0.
    pub fn new(vid: u16) -> Self {
        VlanTag {
            tpid: TPID_VLAN,
            pcp: 0,
            dei: false,
            vid,
        }
    }

    /// The 16-bit tag control information.
    pub fn tci(&self) -> u16 {
        u16::from(self.pcp & 7) << 13 | u16::from(self.dei) << 12 | (self.vid & 0x0fff)
    }

    fn from_tci(tpid: u16, tci: u16) -> Self {
        VlanTag {
            tpid,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        }
    }
}

/// Whether `ethertype` announces a VLAN tag.
pub fn is_tpid(ethertype: u16) -> bool {
    matches!(ethertype, TPID_VLAN | TPID_QINQ | TPID_QINQ_LEGACY)
}

/// A parsed Ethernet header with up to two VLAN tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Destination MAC address.
    pub dst: [u8; 6],
    /// Source MAC address.
    pub src: [u8; 6],
    /// Outer (service) tag of a double-tagged frame; emitted before `vlan`.
    pub outer_vlan: Option<VlanTag>,
    /// Innermost VLAN tag.
    pub vlan: Option<VlanTag>,
    /// EtherType of the encapsulated protocol.
    pub ethertype: u16,
}

impl Repr {
    /// Parses the header and its VLAN tags; more than two tags is an error.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, ParseError> {
        let data = packet.buffer.as_ref();
        let mut tags = [None; 2];
        let mut type_at = 12;
        let mut ethertype = packet.ethertype();
        for slot in tags.iter_mut() {
            if !is_tpid(ethertype) {
                break;
            }
            // The tag's TCI and the next type field follow the TPID.
            if data.len() < type_at + 6 {
                return Err(ParseError::truncated(
                    Layer::Vlan,
                    type_at,
                    6,
                    data.len() - type_at,
                ));
            }
            *slot = Some(VlanTag::from_tci(ethertype, be16(data, type_at + 2)));
            type_at += TAG_LEN;
            ethertype = be16(data, type_at);
        }
        if is_tpid(ethertype) {
            return Err(ParseError::malformed(
                Layer::Vlan,
                type_at,
                "more than two VLAN tags",
            ));
        }
        let (outer_vlan, vlan) = match tags {
            [Some(outer), inner @ Some(_)] => (Some(outer), inner),
            [single, _] => (None, single),
        };
        Ok(Repr {
            dst: packet.dst_addr(),
            src: packet.src_addr(),
            outer_vlan,
            vlan,
            ethertype,
        })
    }

    /// Header length including VLAN tags.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + TAG_LEN * self.tags().count()
    }

    /// Writes the header into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), BuildError> {
        BuildError::check_len(Layer::Ethernet, self.header_len(), buf)?;
        let mut packet = Packet { buffer: buf };
        packet.set_dst_addr(self.dst);
        packet.set_src_addr(self.src);
        let mut type_at = 12;
        for tag in self.tags() {
            if tag.vid > 0x0fff || tag.pcp > 7 {
                let (field, value) = if tag.pcp > 7 {
                    ("pcp", tag.pcp.into())
                } else {
                    ("vid", tag.vid.into())
                };
                return Err(BuildError::InvalidField {
                    layer: Layer::Vlan,
                    field,
                    value,
                });
            }
            put(packet.buffer, type_at, &tag.tpid.to_be_bytes());
            put(packet.buffer, type_at + 2, &tag.tci().to_be_bytes());
            type_at += TAG_LEN;
        }
        put(packet.buffer, type_at, &self.ethertype.to_be_bytes());
        Ok(())
    }

    fn tags(&self) -> impl Iterator<Item = &VlanTag> {
        self.outer_vlan.iter().chain(self.vlan.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qinq_round_trip() {
        let repr = Repr {
            dst: [1, 2, 3, 4, 5, 6],
            src: [7, 8, 9, 10, 11, 12],
            outer_vlan: Some(VlanTag {
                tpid: TPID_QINQ,
                pcp: 5,
                dei: true,
                vid: 100,
            }),
            vlan: Some(VlanTag::new(4095)),
            ethertype: ETHERTYPE_IPV6,
        };
        let mut buf = [0u8; 22];
        repr.emit(&mut buf).unwrap();
        assert_eq!(&buf[12..16], &[0x88, 0xa8, 0xb0, 100]);
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()),
            Ok(repr)
        );
        assert_eq!(repr.header_len(), 22);
    }

    #[test]
    fn rejects_three_tags_and_short_tags() {
        let mut buf = [0u8; 26];
        for at in [12, 16, 20] {
            buf[at..at + 2].copy_from_slice(&TPID_VLAN.to_be_bytes());
        }
        let err = Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap_err();
        assert_eq!(
            err,
            ParseError::malformed(Layer::Vlan, 20, "more than two VLAN tags")
        );
        let err = Repr::parse(&Packet::new_checked(&buf[..21]).unwrap()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "vlan header at offset 16 truncated: needs 6 bytes, 5 available"
        );
    }

    #[test]
    fn emit_rejects_bad_vid() {
        let repr = Repr {
            dst: [0; 6],
            src: [0; 6],
            outer_vlan: None,
            vlan: Some(VlanTag::new(4096)),
            ethertype: 0,
        };
        assert!(matches!(
            repr.emit(&mut [0; 18]),
            Err(BuildError::InvalidField { field: "vid", .. })
        ));
    }
}
