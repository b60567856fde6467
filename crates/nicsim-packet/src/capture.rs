//! Reading and writing packet captures in pcap and pcapng format, on top of `pcap-file`.
//!
//! [`CaptureReader`] detects the format from the magic number (pcap in either byte order with
//! micro- or nanosecond timestamps, or pcapng), streams one record at a time, and never panics:
//! it frames every record itself (so corrupt lengths are caught before `pcap-file` sees them
//! and errors can name the offset) and hands complete records to `pcap-file`'s parsers.
//! Every [`CaptureError`] is one line saying what went wrong and at which file offset.
//! [`CaptureSlice`] reads a capture already held in memory without copying: its
//! [`RecordRef`]s borrow the packet bytes and give their offset in the buffer. Both readers
//! share the framing and decoding code, so they accept and reject the same inputs with the same
//! messages.
//! pcapng blocks are decoded by [`crate::pcapng`], leniently as tshark reads them: a malformed
//! option, comment or name is skipped with a warning ([`CaptureSlice::leniency`]), a packet
//! block whose captured length exceeds its block is cut to it and counted.
//! [`CaptureWriter`] writes pcap (nanosecond magic) or pcapng (SHB, IDB with `if_tsresol` 9,
//! EPBs), always with the Ethernet link type.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Cursor, Read, Write};
use std::path::Path;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapParser, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::SECTION_HEADER_BLOCK;
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};

/// Largest record or block accepted when reading (a bound on memory use for corrupt files).
pub const MAX_RECORD_LEN: u32 = 16 << 20;

const PCAP_HEADER_LEN: usize = 24;
const PCAP_RECORD_HEADER_LEN: usize = 16;
/// The bytes a "modified" pcap record header (Alexey Kuznetzov's libpcap patch, magic
/// 0xa1b2cd34, which Red Hat's tcpdump wrote) adds after the standard 16: the interface index,
/// the protocol, the packet type and a pad byte. wiretap reads them (`PCAP_SS990417`).
const PCAP_MODIFIED_EXTRA: usize = 8;

/// The file header of a pcap file whose magic is `magic` (as read big-endian), as `pcap-file`
/// parses it: a modified pcap's with the standard magic of the same byte order; and the bytes
/// each record header adds to the standard 16.
fn pcap_header_as_standard(header: &[u8], magic: u32) -> (Vec<u8>, usize) {
    let mut h = header.to_vec();
    match magic {
        0xa1b2_cd34 => h[..4].copy_from_slice(&0xa1b2_c3d4_u32.to_be_bytes()),
        0x34cd_b2a1 => h[..4].copy_from_slice(&0xd4c3_b2a1_u32.to_be_bytes()),
        _ => return (h, 0),
    }
    (h, PCAP_MODIFIED_EXTRA)
}
const PCAPNG_BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

/// One captured packet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Captured bytes (possibly cut to the snap length).
    pub data: Vec<u8>,
    /// Length of the packet on the wire; larger than `data.len()` when cut.
    pub orig_len: u32,
    /// Link type (1 = Ethernet).
    pub linktype: u32,
}

impl Record {
    /// Bytes of the packet the capture left out (cut by the snap length); 0 when complete.
    pub fn cut_len(&self) -> u32 {
        let captured = u32::try_from(self.data.len()).unwrap_or(u32::MAX);
        self.orig_len.saturating_sub(captured)
    }
}

/// Hints the CPU to start loading the cache line holding `bytes[0]` (nothing when empty, or on
/// other architectures). Readers of a capture in memory call it for the record after next, so
/// that walking a capture larger than the caches does not wait on memory at every record.
#[inline]
pub fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = bytes.first() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it reads nothing architecturally and cannot fault, and
        // SSE (its target feature) is part of the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(byte).cast::<i8>()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// One captured packet, borrowed from a capture held in memory ([`CaptureSlice`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordRef<'a> {
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Captured bytes, in place in the capture buffer (possibly cut to the snap length).
    pub data: &'a [u8],
    /// Byte offset of `data[0]` in the capture buffer (0 when read by [`CaptureReader`]).
    pub data_offset: usize,
    /// Length of the packet on the wire; larger than `data.len()` when cut.
    pub orig_len: u32,
    /// Link type (1 = Ethernet).
    pub linktype: u32,
}

impl RecordRef<'_> {
    /// Bytes of the packet the capture left out (cut by the snap length); 0 when complete.
    pub fn cut_len(&self) -> u32 {
        let captured = u32::try_from(self.data.len()).unwrap_or(u32::MAX);
        self.orig_len.saturating_sub(captured)
    }

    /// An owned copy.
    pub fn to_record(&self) -> Record {
        Record {
            ts_ns: self.ts_ns,
            data: self.data.to_vec(),
            orig_len: self.orig_len,
            linktype: self.linktype,
        }
    }
}

/// What a file that is no capture starts with: a compressed file's format (the commands that
/// take a capture path as an argument decompress it; a configuration's capture paths, read
/// again by every run, must be decompressed first), else nothing known.
fn what_magic(magic: u32) -> &'static str {
    match magic {
        m if m >> 16 == 0x1f8b => "a gzip-compressed file: decompress it first",
        0xfd37_7a58 => "an xz-compressed file: decompress it first",
        0x28b5_2ffd => "a zstd-compressed file: decompress it first",
        0x0422_4d18 => "an LZ4-compressed file: decompress it first",
        _ => "not a pcap or pcapng file",
    }
}

/// Capture file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaptureFormat {
    /// Classic libpcap format.
    Pcap,
    /// pcapng.
    PcapNg,
}

/// A capture read or write failure; the message is one line naming what and where.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The operating system reported an error.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, on which file.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The file starts with neither a pcap nor a pcapng magic number.
    #[error("bad magic number {magic:#010x} at offset 0 ({})", what_magic(*magic))]
    BadMagic {
        /// The first four bytes, big-endian.
        magic: u32,
    },
    /// The file ends inside a fixed-size header.
    #[error("truncated {what} at offset {offset}: needs {needed} bytes, {present} present")]
    TruncatedHeader {
        /// Which header.
        what: &'static str,
        /// File offset of the header.
        offset: u64,
        /// Header size.
        needed: u64,
        /// Bytes present.
        present: u64,
    },
    /// The file ends before the length a record header announces.
    #[error(
        "truncated {what} at offset {offset}: header says {expected} bytes, {present} present"
    )]
    Truncated {
        /// Which record.
        what: &'static str,
        /// File offset of the record.
        offset: u64,
        /// Length announced by the record header.
        expected: u64,
        /// Bytes present.
        present: u64,
    },
    /// A header or record holds an impossible value.
    #[error("invalid {what} at offset {offset}: {reason}")]
    Invalid {
        /// Which header or record.
        what: &'static str,
        /// File offset of the header or record.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A packet could not be written.
    #[error("cannot write packet to {path}: {reason}")]
    Write {
        /// Output file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

fn invalid(what: &'static str, offset: u64, reason: impl ToString) -> CaptureError {
    CaptureError::Invalid {
        what,
        offset,
        reason: reason.to_string(),
    }
}

/// The byte source with the framing state shared by both formats.
struct Source {
    inner: BufReader<Box<dyn Read + Send>>,
    name: String,
    /// File offset of the record in `buf`, or of the next one once it is consumed.
    offset: u64,
    /// The current record or block, header included.
    buf: Vec<u8>,
}

impl Source {
    /// Appends up to `n` bytes to `buf`; fewer only at end of file. Returns how many.
    fn read_more(&mut self, n: usize) -> Result<usize, CaptureError> {
        let start = self.buf.len();
        (&mut self.inner)
            .take(n as u64)
            .read_to_end(&mut self.buf)
            .map_err(|source| CaptureError::Io {
                context: format!(
                    "cannot read {} at offset {}",
                    self.name,
                    self.offset + start as u64
                ),
                source,
            })?;
        Ok(self.buf.len() - start)
    }

    /// Completes the `len`-byte fixed header at the start of `buf`. `Ok(false)` at a clean end of
    /// file (nothing read at all).
    fn header(&mut self, len: usize, what: &'static str) -> Result<bool, CaptureError> {
        let have = self.buf.len();
        let present = have + self.read_more(len.saturating_sub(have))?;
        match present {
            0 => Ok(false),
            _ if present < len => Err(CaptureError::TruncatedHeader {
                what,
                offset: self.offset,
                needed: len as u64,
                present: present as u64,
            }),
            _ => Ok(true),
        }
    }

    /// Completes a record of `total` bytes, header included, and moves past it. Returns the
    /// record's offset. `skip` header bytes are left out of the lengths reported on truncation.
    fn record(&mut self, total: u64, what: &'static str, skip: u64) -> Result<u64, CaptureError> {
        let have = self.buf.len() as u64;
        let present = have + self.read_more(total.saturating_sub(have) as usize)? as u64;
        if present < total {
            return Err(CaptureError::Truncated {
                what,
                offset: self.offset,
                expected: total - skip,
                present: present - skip,
            });
        }
        let at = self.offset;
        self.offset += total;
        Ok(at)
    }

    /// Reads the next pcapng block into `buf` (which may hold its first bytes already).
    /// `Ok(None)` at a clean end of file; otherwise the block's offset.
    fn pcapng_block(&mut self, endianness: Endianness) -> Result<Option<u64>, CaptureError> {
        // Type, length, and the byte-order magic of a section header (or 4 more bytes).
        if !self.header(12, "pcapng block header")? {
            return Ok(None);
        }
        let len = pcapng_block_len(&self.buf, endianness, self.offset)?;
        self.record(len.into(), "pcapng block", 0).map(Some)
    }
}

/// Length of the pcap record (header included) whose 16-byte header is `header`.
fn pcap_record_len(header: &[u8], endianness: Endianness, at: u64) -> Result<u64, CaptureError> {
    let incl_len = read_u32(header, 8, endianness);
    if incl_len > MAX_RECORD_LEN {
        let reason = format!("captured length {incl_len} exceeds the {MAX_RECORD_LEN}-byte limit");
        return Err(invalid("record", at, reason));
    }
    Ok(PCAP_RECORD_HEADER_LEN as u64 + u64::from(incl_len))
}

/// Length of the pcapng block whose first 12 bytes are `head`, read in the section's byte
/// order (or, for a section header, in the byte order its magic announces).
fn pcapng_block_len(head: &[u8], endianness: Endianness, at: u64) -> Result<u32, CaptureError> {
    let endianness = if read_u32(head, 0, Endianness::Big) == SECTION_HEADER_BLOCK {
        match read_u32(head, 8, Endianness::Big) {
            PCAPNG_BYTE_ORDER_MAGIC => Endianness::Big,
            magic if magic == PCAPNG_BYTE_ORDER_MAGIC.swap_bytes() => Endianness::Little,
            magic => {
                return Err(invalid(
                    "pcapng section header",
                    at,
                    format!("bad byte-order magic {magic:#010x}"),
                ))
            }
        }
    } else {
        endianness
    };
    let len = read_u32(head, 4, endianness);
    if !len.is_multiple_of(4) || !(12..=MAX_RECORD_LEN).contains(&len) {
        let reason =
            format!("block length {len} is not a multiple of 4 between 12 and {MAX_RECORD_LEN}");
        return Err(invalid("pcapng block", at, reason));
    }
    Ok(len)
}

fn read_u32(buf: &[u8], at: usize, endianness: Endianness) -> u32 {
    let bytes = crate::bytes(buf, at);
    match endianness {
        Endianness::Big => u32::from_be_bytes(bytes),
        Endianness::Little => u32::from_le_bytes(bytes),
    }
}

enum Decoder {
    /// A pcap parser, and the bytes each record header has beyond the standard 16.
    Pcap(PcapParser, usize),
    PcapNg(crate::pcapng::Reader),
}

/// What a reader skipped or cut without refusing the capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leniency {
    /// The first warnings ([`crate::pcapng::MAX_WARNINGS_KEPT`]), one line each, naming the
    /// file offset.
    pub warnings: Vec<String>,
    /// Warnings in all.
    pub warning_count: u64,
    /// Packet records whose captured length exceeded what their block holds, cut to it.
    pub records_cut: u64,
    /// The file ends inside the record or block at this offset (a capture copied while it
    /// was being written, or cut with `head -c`): the capture ended before it, as tshark ends
    /// it ("appears to have been cut short in the middle of a packet"), with a warning.
    pub cut_short_at: Option<u64>,
}

impl Decoder {
    /// What was skipped so far; `cut_short`: the warning of a file that ended inside a record.
    fn leniency(&self, cut_short: Option<&(u64, String)>) -> Leniency {
        let mut l = match self {
            Decoder::Pcap(..) => Leniency::default(),
            Decoder::PcapNg(r) => Leniency {
                warnings: r.warnings.clone(),
                warning_count: r.warning_count,
                records_cut: r.records_cut,
                cut_short_at: None,
            },
        };
        if let Some((at, warning)) = cut_short {
            // Always kept, past the limit on kept warnings: it says the capture is incomplete.
            l.warnings.push(warning.clone());
            l.warning_count += 1;
            l.cut_short_at = Some(*at);
        }
        l
    }
}

/// A read error that is the end of file inside a record or block, as the warning that ends
/// the capture there (with the record's offset); any other error as it is. A file header cut
/// short stays an error (it is read before any record), and so does a record whose header is
/// impossible (checked before its length is looked for).
fn cut_short(error: CaptureError) -> Result<(u64, String), CaptureError> {
    let (offset, what) = match &error {
        CaptureError::TruncatedHeader {
            what,
            offset,
            needed,
            present,
        } => (
            *offset,
            format!("its {what} needs {needed} bytes, {present} present"),
        ),
        CaptureError::Truncated {
            what,
            offset,
            expected,
            present,
        } => (
            *offset,
            format!("its {what} header says {expected} bytes, {present} present"),
        ),
        _ => return Err(error),
    };
    Ok((
        offset,
        format!(
            "offset {offset}: the file ends inside a record ({what}): \
             the capture was cut short there; the records before it were read"
        ),
    ))
}

/// Streams records from a pcap or pcapng file, holding one record in memory at a time.
/// pcapng blocks other than enhanced and simple packet blocks are skipped. After the first
/// error the reader is exhausted. A file that ends inside a record or block ends the capture
/// there, as tshark's does: the records before it are read, and [`CaptureReader::leniency`]
/// says where and what was cut.
pub struct CaptureReader {
    source: Source,
    decoder: Decoder,
    failed: bool,
    cut_short: Option<(u64, String)>,
}

impl CaptureReader {
    /// Opens a capture file.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|source| CaptureError::Io {
            context: format!("cannot open {name}"),
            source,
        })?;
        Self::new(Box::new(file), name)
    }

    /// Reads a capture held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, CaptureError> {
        Self::new(
            Box::new(Cursor::new(bytes)),
            "capture in memory".to_string(),
        )
    }

    fn new(inner: Box<dyn Read + Send>, name: String) -> Result<Self, CaptureError> {
        let mut source = Source {
            inner: BufReader::with_capacity(1 << 16, inner),
            name,
            offset: 0,
            buf: Vec::new(),
        };
        if !source.header(4, "file header")? {
            return Err(CaptureError::TruncatedHeader {
                what: "file header",
                offset: 0,
                needed: 4,
                present: 0,
            });
        }
        let decoder = match read_u32(&source.buf, 0, Endianness::Big) {
            magic @ (0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 | 0xa1b2_cd34
            | 0x34cd_b2a1) => {
                source.header(PCAP_HEADER_LEN, "pcap file header")?;
                source.offset = PCAP_HEADER_LEN as u64;
                let (header, extra) = pcap_header_as_standard(&source.buf, magic);
                let (_, parser) =
                    PcapParser::new(&header).map_err(|e| invalid("pcap file header", 0, e))?;
                Decoder::Pcap(parser, extra)
            }
            SECTION_HEADER_BLOCK => {
                source.pcapng_block(Endianness::Big)?;
                Decoder::PcapNg(crate::pcapng::Reader::new(&source.buf, 0)?)
            }
            magic => return Err(CaptureError::BadMagic { magic }),
        };
        Ok(CaptureReader {
            source,
            decoder,
            failed: false,
            cut_short: None,
        })
    }

    /// The detected file format.
    pub fn format(&self) -> CaptureFormat {
        match self.decoder {
            Decoder::Pcap(..) => CaptureFormat::Pcap,
            Decoder::PcapNg(_) => CaptureFormat::PcapNg,
        }
    }

    /// What was skipped or cut so far without refusing the capture (malformed pcapng options,
    /// records longer than their block, a file that ends inside a record).
    pub fn leniency(&self) -> Leniency {
        self.decoder.leniency(self.cut_short.as_ref())
    }

    /// The next record, `None` at end of file (or where the file ends inside a record: see
    /// [`Leniency::cut_short_at`]) or after an error.
    pub fn next_record(&mut self) -> Option<Result<Record, CaptureError>> {
        if self.failed || self.cut_short.is_some() {
            return None;
        }
        let result = match &mut self.decoder {
            Decoder::Pcap(parser, extra) => next_pcap(&mut self.source, parser, *extra),
            Decoder::PcapNg(parser) => next_pcapng(&mut self.source, parser),
        };
        let result = result.or_else(|e| {
            cut_short(e)
                .map(|cut| self.cut_short = Some(cut))
                .map(|()| None)
        });
        self.failed = result.is_err();
        result.transpose()
    }
}

impl Iterator for CaptureReader {
    type Item = Result<Record, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record()
    }
}

/// Reads the records of a capture held in memory without copying them: each [`RecordRef`]
/// borrows its packet bytes from the buffer and gives their offset in it. Same formats, checks
/// and one-line errors (with the same offsets) as [`CaptureReader`]; after the first error the
/// reader is exhausted.
pub struct CaptureSlice<'a> {
    bytes: &'a [u8],
    /// Offset of the next record or block.
    offset: usize,
    decoder: Decoder,
    failed: bool,
    cut_short: Option<(u64, String)>,
}

impl<'a> CaptureSlice<'a> {
    /// Reads the file header of the capture in `bytes`.
    pub fn new(bytes: &'a [u8]) -> Result<Self, CaptureError> {
        let Some(magic) = slice_header(bytes, 0, 4, "file header")? else {
            return Err(CaptureError::TruncatedHeader {
                what: "file header",
                offset: 0,
                needed: 4,
                present: 0,
            });
        };
        let (decoder, offset) = match read_u32(magic, 0, Endianness::Big) {
            magic @ (0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 | 0xa1b2_cd34
            | 0x34cd_b2a1) => {
                let header = slice_header(bytes, 0, PCAP_HEADER_LEN, "pcap file header")?
                    .unwrap_or_default();
                let (header, extra) = pcap_header_as_standard(header, magic);
                let (_, parser) =
                    PcapParser::new(&header).map_err(|e| invalid("pcap file header", 0, e))?;
                (Decoder::Pcap(parser, extra), PCAP_HEADER_LEN)
            }
            SECTION_HEADER_BLOCK => {
                let head = slice_header(bytes, 0, 12, "pcapng block header")?.unwrap_or_default();
                let len = pcapng_block_len(head, Endianness::Big, 0)?;
                let block = slice_record(bytes, 0, len.into(), "pcapng block", 0)?;
                let reader = crate::pcapng::Reader::new(block, 0)?;
                (Decoder::PcapNg(reader), block.len())
            }
            magic => return Err(CaptureError::BadMagic { magic }),
        };
        Ok(CaptureSlice {
            bytes,
            offset,
            decoder,
            failed: false,
            cut_short: None,
        })
    }

    /// The detected file format.
    pub fn format(&self) -> CaptureFormat {
        match self.decoder {
            Decoder::Pcap(..) => CaptureFormat::Pcap,
            Decoder::PcapNg(_) => CaptureFormat::PcapNg,
        }
    }

    /// What was skipped or cut so far without refusing the capture (malformed pcapng options,
    /// records longer than their block, a buffer that ends inside a record).
    pub fn leniency(&self) -> Leniency {
        self.decoder.leniency(self.cut_short.as_ref())
    }

    /// The next record, `None` at the end of the buffer (or where it ends inside a record:
    /// see [`Leniency::cut_short_at`]) or after an error.
    pub fn next_record(&mut self) -> Option<Result<RecordRef<'a>, CaptureError>> {
        if self.failed || self.cut_short.is_some() {
            return None;
        }
        let result = self.next_inner();
        let result = result.or_else(|e| {
            cut_short(e)
                .map(|cut| self.cut_short = Some(cut))
                .map(|()| None)
        });
        self.failed = result.is_err();
        result.transpose()
    }

    fn next_inner(&mut self) -> Result<Option<RecordRef<'a>>, CaptureError> {
        let bytes = self.bytes;
        loop {
            let at = self.offset;
            let found = match &mut self.decoder {
                Decoder::Pcap(parser, extra) => {
                    let header_len = PCAP_RECORD_HEADER_LEN + *extra;
                    let Some(head) = slice_header(bytes, at, header_len, "pcap record header")?
                    else {
                        return Ok(None);
                    };
                    let total = pcap_record_len(head, parser.header().endianness, at as u64)?
                        + *extra as u64;
                    let rec = slice_record(bytes, at, total, "record", header_len as u64)?;
                    self.offset += rec.len();
                    // The next record's header and frame headers are one or two lines away.
                    prefetch(bytes.get(self.offset..).unwrap_or_default());
                    prefetch(bytes.get(self.offset + 64..).unwrap_or_default());
                    Some(decode_pcap(parser, rec, at as u64, *extra)?)
                }
                Decoder::PcapNg(parser) => {
                    let Some(head) = slice_header(bytes, at, 12, "pcapng block header")? else {
                        return Ok(None);
                    };
                    let len = pcapng_block_len(head, section_endianness(parser), at as u64)?;
                    let block = slice_record(bytes, at, len.into(), "pcapng block", 0)?;
                    self.offset += block.len();
                    prefetch(bytes.get(self.offset..).unwrap_or_default());
                    prefetch(bytes.get(self.offset + 64..).unwrap_or_default());
                    decode_pcapng(parser, block, at as u64)?
                }
            };
            if let Some(mut record) = found {
                // `data` is a sub-slice of `bytes`: its offset is the pointers' distance.
                record.data_offset = record.data.as_ptr() as usize - bytes.as_ptr() as usize;
                return Ok(Some(record));
            }
        }
    }
}

impl<'a> Iterator for CaptureSlice<'a> {
    type Item = Result<RecordRef<'a>, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record()
    }
}

/// The `len`-byte fixed header at offset `at` of `bytes`; `Ok(None)` when nothing is left, an
/// error when fewer than `len` bytes are.
fn slice_header<'a>(
    bytes: &'a [u8],
    at: usize,
    len: usize,
    what: &'static str,
) -> Result<Option<&'a [u8]>, CaptureError> {
    let rest = bytes.get(at..).unwrap_or_default();
    match rest.len() {
        0 => Ok(None),
        present if present < len => Err(CaptureError::TruncatedHeader {
            what,
            offset: at as u64,
            needed: len as u64,
            present: present as u64,
        }),
        _ => Ok(Some(&rest[..len])),
    }
}

/// The `total`-byte record at offset `at` of `bytes`, or a truncation error (`skip` header
/// bytes are left out of the lengths it reports).
fn slice_record<'a>(
    bytes: &'a [u8],
    at: usize,
    total: u64,
    what: &'static str,
    skip: u64,
) -> Result<&'a [u8], CaptureError> {
    let rest = bytes.get(at..).unwrap_or_default();
    let present = rest.len() as u64;
    if present < total {
        return Err(CaptureError::Truncated {
            what,
            offset: at as u64,
            expected: total - skip,
            present: present.saturating_sub(skip),
        });
    }
    Ok(&rest[..total as usize])
}

fn next_pcap(
    source: &mut Source,
    parser: &PcapParser,
    extra: usize,
) -> Result<Option<Record>, CaptureError> {
    source.buf.clear();
    let header_len = PCAP_RECORD_HEADER_LEN + extra;
    if !source.header(header_len, "pcap record header")? {
        return Ok(None);
    }
    let total = pcap_record_len(&source.buf, parser.header().endianness, source.offset)?;
    let at = source.record(total + extra as u64, "record", header_len as u64)?;
    decode_pcap(parser, &source.buf, at, extra).map(|r| Some(r.to_record()))
}

/// Decodes one complete pcap record (`rec`: header and data) found at file offset `at`; its
/// header has `extra` bytes beyond the standard 16 (a modified pcap's), which are skipped.
fn decode_pcap<'a>(
    parser: &PcapParser,
    rec: &'a [u8],
    at: u64,
    extra: usize,
) -> Result<RecordRef<'a>, CaptureError> {
    let header = parser.header();
    let raw = if extra == 0 {
        parser
            .next_raw_packet(rec)
            .map_err(|e| invalid("record", at, e))?
            .1
    } else {
        // The standard fields, then the extra bytes, then the data (`rec` holds it whole).
        let e = header.endianness;
        let incl_len = read_u32(rec, 8, e);
        let start = PCAP_RECORD_HEADER_LEN + extra;
        pcap_file::pcap::RawPcapPacket {
            ts_sec: read_u32(rec, 0, e),
            ts_frac: read_u32(rec, 4, e),
            incl_len,
            orig_len: read_u32(rec, 12, e),
            data: std::borrow::Cow::Borrowed(&rec[start..start + incl_len as usize]),
        }
    };
    // A fraction of a second at or past one second (a writer that did not carry it into the
    // seconds) is added as it is, as wiretap reads it: the record is not refused for it.
    let frac_ns = match header.ts_resolution {
        TsResolution::MicroSecond => u64::from(raw.ts_frac) * 1_000,
        TsResolution::NanoSecond => u64::from(raw.ts_frac),
    };
    let (linktype, fcs_len) = pcap_linktype(header.datalink.into());
    let orig_len = frame_len(raw.incl_len, raw.orig_len);
    let (data, orig_len) = strip_fcs(borrowed(raw.data, "record", at)?, orig_len, fcs_len);
    Ok(RecordRef {
        ts_ns: u64::from(raw.ts_sec) * 1_000_000_000 + frac_ns,
        data,
        data_offset: 0,
        orig_len,
        linktype,
    })
}

/// The link type and the FCS length in bytes that a pcap file header's link-type field
/// announces. As libpcap reads it (`LT_LINKTYPE`, `LT_FCS_LENGTH_PRESENT`, `LT_FCS_LENGTH`;
/// draft-ietf-opsawg-pcap): the link type is the low 26 bits; when bit 26 (F) is set, the top
/// four bits give the length of the FCS that ends every frame, in 16-bit words. Bits 26-31
/// without F mean nothing (tshark reads `0x30000001` as Ethernet).
pub fn pcap_linktype(field: u32) -> (u32, usize) {
    let linktype = field & 0x03FF_FFFF;
    let fcs_len = if field & 0x0400_0000 != 0 {
        (field >> 28) as usize * 2
    } else {
        0
    };
    (linktype, fcs_len)
}

/// A frame without the `fcs_len`-byte FCS that ends it on the wire (`orig_len` bytes long
/// with it): the bytes before the FCS and the length without it. A record cut by the snap
/// length keeps the bytes it has up to where the FCS starts.
pub fn strip_fcs(data: &[u8], orig_len: u32, fcs_len: usize) -> (&[u8], u32) {
    if fcs_len == 0 {
        return (data, orig_len);
    }
    let fcs = u32::try_from(fcs_len).unwrap_or(u32::MAX);
    let wire = orig_len.saturating_sub(fcs);
    (&data[..data.len().min(wire as usize)], wire)
}

/// The bytes of a `Cow` that `pcap-file` borrowed from the input (it always does).
fn borrowed<'a>(
    data: Cow<'a, [u8]>,
    what: &'static str,
    at: u64,
) -> Result<&'a [u8], CaptureError> {
    match data {
        Cow::Borrowed(data) => Ok(data),
        Cow::Owned(_) => Err(invalid(what, at, "the parser copied the packet data")),
    }
}

fn section_endianness(reader: &crate::pcapng::Reader) -> Endianness {
    if reader.big_endian() {
        Endianness::Big
    } else {
        Endianness::Little
    }
}

fn next_pcapng(
    source: &mut Source,
    parser: &mut crate::pcapng::Reader,
) -> Result<Option<Record>, CaptureError> {
    loop {
        // The first block was read (and parsed) when the reader was created.
        source.buf.clear();
        let Some(at) = source.pcapng_block(section_endianness(parser))? else {
            return Ok(None);
        };
        if let Some(r) = decode_pcapng(parser, &source.buf, at)? {
            return Ok(Some(r.to_record()));
        }
    }
}

/// Decodes one complete pcapng block found at file offset `at`: section headers and interface
/// descriptions update `parser`; packet blocks give a record, other blocks `None`.
fn decode_pcapng<'a>(
    parser: &mut crate::pcapng::Reader,
    block: &'a [u8],
    at: u64,
) -> Result<Option<RecordRef<'a>>, CaptureError> {
    let Some(packet) = parser.block(block, at)? else {
        return Ok(None);
    };
    let incl_len = u32::try_from(packet.data.len()).unwrap_or(u32::MAX);
    Ok(Some(RecordRef {
        ts_ns: packet.ts_ns,
        data: packet.data,
        data_offset: 0,
        orig_len: frame_len(incl_len, packet.orig_len),
        linktype: packet.linktype,
    }))
}

/// A record's frame length: its original length, or its captured length where that is more (a
/// writer's error: tshark reads the captured bytes all the same, flagging "Frame length is less
/// than captured length", so the record is read, and the frame was at least what was captured).
fn frame_len(incl_len: u32, orig_len: u32) -> u32 {
    orig_len.max(incl_len)
}

enum Sink {
    Pcap(PcapWriter<BufWriter<File>>),
    PcapNg(PcapNgWriter<BufWriter<File>>),
}

/// Writes Ethernet packets to a pcap or pcapng file. Call [`CaptureWriter::finish`] to flush
/// and see any final write error.
pub struct CaptureWriter {
    sink: Sink,
    path: String,
    snaplen: u32,
}

impl CaptureWriter {
    /// Creates (or truncates) `path` and writes the file header. Packets longer than `snaplen`
    /// are stored cut to `snaplen` bytes, with their full length as original length.
    pub fn create(path: &Path, format: CaptureFormat, snaplen: u32) -> Result<Self, CaptureError> {
        let path = path.display().to_string();
        let file = File::create(&path).map_err(|source| CaptureError::Io {
            context: format!("cannot create {path}"),
            source,
        })?;
        let out = BufWriter::new(file);
        let sink = match format {
            CaptureFormat::Pcap => {
                let header = PcapHeader {
                    snaplen,
                    datalink: DataLink::ETHERNET,
                    ts_resolution: TsResolution::NanoSecond,
                    endianness: Endianness::native(),
                    ..PcapHeader::default()
                };
                PcapWriter::with_header(out, header).map(Sink::Pcap)
            }
            CaptureFormat::PcapNg => PcapNgWriter::new(out).and_then(|mut writer| {
                let options = vec![InterfaceDescriptionOption::IfTsResol(9)];
                writer.write_pcapng_block(InterfaceDescriptionBlock {
                    linktype: DataLink::ETHERNET,
                    snaplen,
                    options,
                })?;
                Ok(Sink::PcapNg(writer))
            }),
        }
        .map_err(|e| write_error(&path, e))?;
        Ok(CaptureWriter {
            sink,
            path,
            snaplen,
        })
    }

    /// Appends a packet captured at `ts_ns` nanoseconds since the Unix epoch.
    pub fn write(&mut self, ts_ns: u64, data: &[u8]) -> Result<(), CaptureError> {
        let orig_len = u32::try_from(data.len()).map_err(|_| CaptureError::Write {
            path: self.path.clone(),
            reason: format!("packet of {} bytes is too long", data.len()),
        })?;
        let data = data.get(..self.snaplen as usize).unwrap_or(data);
        let timestamp = Duration::from_nanos(ts_ns);
        match &mut self.sink {
            Sink::Pcap(writer) => writer.write_packet(&PcapPacket::new(timestamp, orig_len, data)),
            Sink::PcapNg(writer) => writer.write_pcapng_block(EnhancedPacketBlock {
                interface_id: 0,
                timestamp,
                original_len: orig_len,
                data: Cow::Borrowed(data),
                options: vec![],
            }),
        }
        .map(drop)
        .map_err(|e| write_error(&self.path, e))
    }

    /// Flushes buffered packets to the file.
    pub fn finish(self) -> Result<(), CaptureError> {
        let mut out = match self.sink {
            Sink::Pcap(writer) => writer.into_writer(),
            Sink::PcapNg(writer) => writer.into_inner(),
        };
        out.flush().map_err(|source| CaptureError::Io {
            context: format!("cannot write {}", self.path),
            source,
        })
    }
}

/// Write `frames` to a new pcap file at `path`, one microsecond apart from time 0 (the
/// example packets `nicsim xdp analyze` writes).
pub fn write_pcap_file(path: &Path, frames: &[Vec<u8>]) -> Result<(), CaptureError> {
    const SNAPLEN_BYTES: u32 = 65535;
    let mut w = CaptureWriter::create(path, CaptureFormat::Pcap, SNAPLEN_BYTES)?;
    for (i, f) in frames.iter().enumerate() {
        w.write(i as u64 * 1000, f)?;
    }
    w.finish()
}

fn write_error(path: &str, error: PcapError) -> CaptureError {
    match error {
        PcapError::IoError(source) => CaptureError::Io {
            context: format!("cannot write {path}"),
            source,
        },
        other => CaptureError::Write {
            path: path.to_string(),
            reason: other.to_string(),
        },
    }
}
