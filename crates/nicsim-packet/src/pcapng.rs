//! Reading pcapng blocks leniently, as tshark (wiretap) reads them: the framing is checked
//! (block lengths, the section's byte order, declared interfaces), but what is only
//! description never stops a capture. A comment, a name or any option that is malformed (not
//! UTF-8, a length past its block) is skipped with a warning; a packet block whose captured
//! length exceeds what its block holds is cut to what it holds (and counted); interfaces of
//! different link types in one file, and new sections with new interfaces, are followed.
//!
//! Used by [`crate::capture`]'s readers in place of `pcap-file`'s pcapng parser, which refuses
//! a whole capture at the first option string that is not UTF-8 (pcap-file still writes
//! pcapng). Blocks read: section header (0x0A0D0D0A), interface description (1), enhanced
//! packet (6), simple packet (3) and the obsolete packet block (2); the rest are skipped. Of
//! options only `if_tsresol` (9), `if_fcslen` (13: the FCS ending every frame is left out of
//! its packets, as tshark leaves it out of the frame it decodes) and `if_tsoffset` (14) of an
//! interface, and an enhanced packet's `epb_flags` (2: its own FCS length, bits 5-8), mean
//! anything here.

use crate::capture::CaptureError;

/// Section header block type.
pub const SECTION_HEADER: u32 = 0x0A0D_0D0A;
const INTERFACE_DESCRIPTION: u32 = 1;
const OBSOLETE_PACKET: u32 = 2;
const SIMPLE_PACKET: u32 = 3;
const ENHANCED_PACKET: u32 = 6;

/// Warnings a reader keeps the text of (the rest are only counted).
pub const MAX_WARNINGS_KEPT: usize = 16;

/// One interface of a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interface {
    /// Link type.
    pub linktype: u32,
    /// Snap length (0: none).
    pub snaplen: u32,
    /// Timestamp units per second (`if_tsresol`; microseconds by default). A decimal resolution
    /// past 128 bits (finer than 10^-38 s) is held as `u128::MAX`: any 64-bit timestamp of it is
    /// below a nanosecond, as it is of 10^-38 s.
    pub units_per_second: u128,
    /// Seconds added to every timestamp (`if_tsoffset`).
    pub offset_s: i64,
    /// Bytes of FCS that end every frame (`if_fcslen`; 0 by default): left out of its packets.
    pub fcs_len: u8,
}

/// A packet of a pcapng block, its bytes borrowed from the block.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// Link type of its interface.
    pub linktype: u32,
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Captured bytes.
    pub data: &'a [u8],
    /// Length on the wire.
    pub orig_len: u32,
}

/// The state of a pcapng file being read: its section's byte order and interfaces, and what
/// was skipped.
#[derive(Debug, Clone, Default)]
pub struct Reader {
    big_endian: bool,
    interfaces: Vec<Interface>,
    /// Warnings (at most [`MAX_WARNINGS_KEPT`] kept), one line each.
    pub warnings: Vec<String>,
    /// Warnings in all.
    pub warning_count: u64,
    /// Packet blocks whose captured length exceeded what the block holds (cut to it).
    pub records_cut: u64,
}

fn invalid(what: &'static str, offset: u64, reason: impl ToString) -> CaptureError {
    CaptureError::Invalid {
        what,
        offset,
        reason: reason.to_string(),
    }
}

impl Reader {
    /// Reads a section header block (`block`, whole, found at file offset `at`), checking its
    /// byte-order magic and major version.
    pub fn new(block: &[u8], at: u64) -> Result<Self, CaptureError> {
        let mut reader = Reader::default();
        reader.block(block, at)?;
        Ok(reader)
    }

    /// Whether the current section is big-endian.
    pub fn big_endian(&self) -> bool {
        self.big_endian
    }

    fn u16(&self, b: &[u8], at: usize) -> u16 {
        let v = crate::bytes::<2>(b, at);
        if self.big_endian {
            u16::from_be_bytes(v)
        } else {
            u16::from_le_bytes(v)
        }
    }

    fn u32(&self, b: &[u8], at: usize) -> u32 {
        let v = crate::bytes::<4>(b, at);
        if self.big_endian {
            u32::from_be_bytes(v)
        } else {
            u32::from_le_bytes(v)
        }
    }

    fn warn(&mut self, at: u64, what: String) {
        self.warning_count += 1;
        if self.warnings.len() < MAX_WARNINGS_KEPT {
            self.warnings.push(format!("offset {at}: {what}"));
        }
    }

    /// Decodes one whole block found at file offset `at` (framing already checked: a length
    /// that is a multiple of 4, at least 12, the block holding it): a packet, or `None` for
    /// blocks that hold none.
    pub fn block<'a>(
        &mut self,
        block: &'a [u8],
        at: u64,
    ) -> Result<Option<Packet<'a>>, CaptureError> {
        let kind = u32::from_be_bytes(crate::bytes(block, 0));
        if kind == SECTION_HEADER {
            self.big_endian = match u32::from_be_bytes(crate::bytes(block, 8)) {
                0x1a2b_3c4d => true,
                0x4d3c_2b1a => false,
                magic => {
                    return Err(invalid(
                        "pcapng section header",
                        at,
                        format!("bad byte-order magic {magic:#010x}"),
                    ))
                }
            };
            if block.len() < 28 {
                return Err(invalid(
                    "pcapng section header",
                    at,
                    format!("block length {} is below 28", block.len()),
                ));
            }
            let major = self.u16(block, 12);
            if major != 1 {
                return Err(invalid(
                    "pcapng section header",
                    at,
                    format!("major version {major} is not 1"),
                ));
            }
            self.check_trailer(block, at)?;
            self.interfaces.clear();
            self.options(block, 24, at, &[1, 2, 3, 4], |_, _, _| {});
            return Ok(None);
        }
        let kind = self.u32(block, 0);
        self.check_trailer(block, at)?;
        let body = &block[8..block.len() - 4];
        match kind {
            INTERFACE_DESCRIPTION => {
                if body.len() < 8 {
                    return Err(invalid(
                        "pcapng interface description",
                        at,
                        "block too short for its fields",
                    ));
                }
                let mut iface = Interface {
                    linktype: u32::from(self.u16(body, 0)),
                    snaplen: self.u32(body, 4),
                    units_per_second: 1_000_000,
                    offset_s: 0,
                    fcs_len: 0,
                };
                let big = self.big_endian;
                self.options(
                    block,
                    16,
                    at,
                    &[1, 2, 3, 12, 15],
                    |code, value, warn| match code {
                        9 if value.len() == 1 => {
                            let r = value[0];
                            // Up to 10^-127 s and 2^-127 s, as the option allows (tshark
                            // reads them all: times below a nanosecond are 0 ns here).
                            iface.units_per_second = if r & 0x80 == 0 {
                                10_u128.checked_pow(r.into()).unwrap_or(u128::MAX)
                            } else {
                                1_u128 << (r & 0x7f)
                            };
                        }
                        14 if value.len() == 8 => {
                            let v = crate::bytes::<8>(value, 0);
                            iface.offset_s = if big {
                                i64::from_be_bytes(v)
                            } else {
                                i64::from_le_bytes(v)
                            };
                        }
                        13 if value.len() == 1 => iface.fcs_len = value[0],
                        9 | 13 | 14 => warn.push(format!(
                            "interface option {code} of length {} ignored",
                            value.len()
                        )),
                        _ => {}
                    },
                );
                self.interfaces.push(iface);
                Ok(None)
            }
            ENHANCED_PACKET | OBSOLETE_PACKET => {
                let what = "pcapng packet block";
                if body.len() < 20 {
                    return Err(invalid(what, at, "block too short for its fields"));
                }
                let (iface_id, ts_hi, ts_lo, caplen, orig_len) = if kind == ENHANCED_PACKET {
                    let id = self.u32(body, 0);
                    (
                        id,
                        self.u32(body, 4),
                        self.u32(body, 8),
                        self.u32(body, 12),
                        self.u32(body, 16),
                    )
                } else {
                    let id = u32::from(self.u16(body, 0));
                    (
                        id,
                        self.u32(body, 4),
                        self.u32(body, 8),
                        self.u32(body, 12),
                        self.u32(body, 16),
                    )
                };
                let room = body.len() - 20;
                let data_len = if u64::from(caplen) > room as u64 {
                    self.records_cut += 1;
                    self.warn(
                        at,
                        format!("captured length {caplen} exceeds the {room} bytes its block holds: cut"),
                    );
                    room
                } else {
                    caplen as usize
                };
                let data = &body[20..20 + data_len];
                let iface = self.interface(iface_id, at)?;
                let units = u64::from(ts_hi) << 32 | u64::from(ts_lo);
                // A time that 64 bits of nanoseconds since 1970 cannot hold is taken as the
                // nearest one that fits: tshark shows such a packet anyway.
                let ts_ns = ts_ns(units, &iface).unwrap_or_else(|nearest| {
                    self.warn(
                        at,
                        "timestamp out of range: taken as the nearest one".to_string(),
                    );
                    nearest
                });
                // The FCS ending the frame: the interface's (`if_fcslen`), or the packet's own
                // (`epb_flags`, bits 5-8), as wiretap takes it.
                let mut fcs_len = iface.fcs_len;
                if kind == ENHANCED_PACKET {
                    let opts = 28 + data_len.div_ceil(4) * 4;
                    if opts < block.len() - 4 {
                        let big = self.big_endian;
                        self.options(block, opts, at, &[1], |code, value, _| {
                            if let (2, Ok(b)) = (code, <[u8; 4]>::try_from(value)) {
                                let flags = if big {
                                    u32::from_be_bytes(b)
                                } else {
                                    u32::from_le_bytes(b)
                                };
                                if (flags >> 5) & 0xf != 0 {
                                    fcs_len = ((flags >> 5) & 0xf) as u8;
                                }
                            }
                        });
                    }
                }
                let orig_len = orig_len.max(u32::try_from(data.len()).unwrap_or(u32::MAX));
                let (data, orig_len) = crate::capture::strip_fcs(data, orig_len, fcs_len.into());
                Ok(Some(Packet {
                    linktype: iface.linktype,
                    ts_ns,
                    data,
                    orig_len,
                }))
            }
            SIMPLE_PACKET => {
                if body.len() < 4 {
                    return Err(invalid(
                        "pcapng packet block",
                        at,
                        "block too short for its fields",
                    ));
                }
                let iface = self.interface(0, at)?;
                let orig_len = self.u32(body, 0);
                // The block holds min(original length, snap length) bytes and padding.
                let snaplen = if iface.snaplen == 0 {
                    u32::MAX
                } else {
                    iface.snaplen
                };
                let n = (body.len() - 4).min(orig_len.min(snaplen) as usize);
                let (data, orig_len) =
                    crate::capture::strip_fcs(&body[4..4 + n], orig_len, iface.fcs_len.into());
                Ok(Some(Packet {
                    linktype: iface.linktype,
                    ts_ns: 0,
                    data,
                    orig_len,
                }))
            }
            _ => Ok(None),
        }
    }

    /// A block ends with its length again (tshark refuses a file where it does not).
    fn check_trailer(&self, block: &[u8], at: u64) -> Result<(), CaptureError> {
        let trailer = self.u32(block, block.len() - 4);
        if trailer as usize != block.len() {
            return Err(invalid(
                "pcapng block",
                at,
                format!(
                    "its trailing length {trailer} differs from its length {}",
                    block.len()
                ),
            ));
        }
        Ok(())
    }

    fn interface(&self, id: u32, at: u64) -> Result<Interface, CaptureError> {
        let iface = self.interfaces.get(id as usize).copied().ok_or_else(|| {
            invalid(
                "pcapng packet block",
                at,
                format!("undeclared interface {id}"),
            )
        })?;
        Ok(iface)
    }

    /// Walks the options of `block` from byte `from` (code, length, value padded to 4 bytes,
    /// until `opt_endofopt` or the block's end), calling `each` with the code and value. One
    /// whose length runs past the block ends the walk with a warning; so does a comment or
    /// name that is not UTF-8 (it is skipped, the walk goes on). `each` may add warnings.
    fn options(
        &mut self,
        block: &[u8],
        from: usize,
        at: u64,
        strings: &[u16],
        mut each: impl FnMut(u16, &[u8], &mut Vec<String>),
    ) {
        let end = block.len() - 4;
        let mut k = from;
        let mut warnings = Vec::new();
        while k + 4 <= end {
            let code = self.u16(block, k);
            let len = usize::from(self.u16(block, k + 2));
            if code == 0 {
                break;
            }
            let Some(value) = block.get(k + 4..k + 4 + len).filter(|_| k + 4 + len <= end) else {
                warnings.push(format!(
                    "option {code} of length {len} runs past its block: the block's other options were skipped"
                ));
                break;
            };
            // Comments (1) and the block's string options (`strings`: SHB 2-4, IDB 2, 3, 12,
            // 15) are UTF-8 by the format; tshark shows them either way, and nothing here needs
            // them. The others (an EPB's flags, hash, drop count; an IDB's addresses) are not
            // text.
            let string = strings.contains(&code);
            if string && std::str::from_utf8(value).is_err() {
                warnings.push(format!("option {code} is not UTF-8: skipped"));
            } else {
                each(code, value, &mut warnings);
            }
            k += 4 + len.div_ceil(4) * 4;
        }
        for w in warnings {
            self.warn(at, w);
        }
    }
}

/// Nanoseconds since the epoch of a timestamp of `units` in the interface's resolution; `Err`
/// with the nearest value when 64 bits cannot hold it.
fn ts_ns(units: u64, iface: &Interface) -> Result<u64, u64> {
    // At most 2^64 * 10^9 / 1 (below 2^94) and 2^63 * 10^9: both fit i128.
    let whole = u128::from(units) * 1_000_000_000 / iface.units_per_second.max(1);
    let ns = whole as i128 + i128::from(iface.offset_s) * 1_000_000_000;
    u64::try_from(ns).map_err(|_| if ns < 0 { 0 } else { u64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(units_per_second: u128, offset_s: i64) -> Interface {
        Interface {
            linktype: 1,
            snaplen: 0,
            units_per_second,
            offset_s,
            fcs_len: 0,
        }
    }

    #[test]
    fn timestamp_resolutions() {
        assert_eq!(ts_ns(7, &iface(1_000_000, 0)), Ok(7_000));
        assert_eq!(ts_ns(7, &iface(1_000_000_000, 0)), Ok(7));
        assert_eq!(ts_ns(2048, &iface(1024, 0)), Ok(2_000_000_000));
        assert_eq!(ts_ns(3_000_000, &iface(1_000_000, -2)), Ok(1_000_000_000));
        assert_eq!(ts_ns(1, &iface(1_000_000, -2)), Err(0));
        assert_eq!(ts_ns(u64::MAX, &iface(1_000_000, 0)), Err(u64::MAX));
        // Resolutions finer than 64 bits hold (10^-20 s, 2^-100 s, 10^-127 s: u128::MAX).
        assert_eq!(ts_ns(u64::MAX, &iface(10_u128.pow(20), 0)), Ok(184_467_440));
        assert_eq!(ts_ns(u64::MAX, &iface(1 << 100, 5)), Ok(5_000_000_000));
        assert_eq!(ts_ns(u64::MAX, &iface(u128::MAX, 0)), Ok(0));
    }
}
