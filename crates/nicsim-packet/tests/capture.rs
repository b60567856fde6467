//! pcap / pcapng writing and reading, corrupt files, and interoperability with tshark.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nicsim_packet::capture::{
    CaptureError, CaptureFormat, CaptureReader, CaptureSlice, CaptureWriter, Leniency, Record,
};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, Endianness, TsResolution};

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nicsim-packet-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Test packets: (timestamp ns, bytes).
fn packets() -> Vec<(u64, Vec<u8>)> {
    (0..20u64)
        .map(|i| {
            let len = 60 + (i as usize * 37) % 1400;
            (
                1_700_000_000_123_456_789 + i * 1_000_000_007,
                (0..len).map(|b| (b as u8) ^ (i as u8)).collect(),
            )
        })
        .collect()
}

fn write_file(name: &str, format: CaptureFormat, snaplen: u32) -> PathBuf {
    let path = temp_path(name);
    let mut writer = CaptureWriter::create(&path, format, snaplen).unwrap();
    for (ts, data) in packets() {
        writer.write(ts, &data).unwrap();
    }
    writer.finish().unwrap();
    path
}

/// Every record of `path`, read by the streaming reader; checks that the in-memory reader
/// gives the same records, with data offsets that point at the data in the buffer.
fn read_all(path: &Path) -> Vec<Record> {
    let records: Vec<Record> = CaptureReader::open(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let bytes = std::fs::read(path).unwrap();
    let refs: Vec<_> = CaptureSlice::new(&bytes)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(refs.len(), records.len());
    for (r, record) in refs.iter().zip(&records) {
        assert_eq!(&r.to_record(), record);
        assert_eq!(
            &bytes[r.data_offset..r.data_offset + r.data.len()],
            &record.data[..]
        );
    }
    records
}

/// The first error reading `bytes`, from both readers (which must agree).
fn first_error(bytes: &[u8]) -> String {
    let streaming = match CaptureReader::from_bytes(bytes.to_vec()) {
        Err(e) => e.to_string(),
        Ok(reader) => reader
            .filter_map(Result::err)
            .map(|e| e.to_string())
            .next()
            .expect("an error"),
    };
    let in_place = match CaptureSlice::new(bytes) {
        Err(e) => e.to_string(),
        Ok(reader) => reader
            .filter_map(Result::err)
            .map(|e| e.to_string())
            .next()
            .expect("an error"),
    };
    assert_eq!(streaming, in_place);
    assert!(!streaming.contains('\n'), "{streaming}");
    streaming
}

#[test]
fn round_trip_preserves_timestamps_and_bytes() {
    for (format, name) in [
        (CaptureFormat::Pcap, "rt.pcap"),
        (CaptureFormat::PcapNg, "rt.pcapng"),
    ] {
        let path = write_file(name, format, 65535);
        assert_eq!(CaptureReader::open(&path).unwrap().format(), format);
        let records = read_all(&path);
        let expected: Vec<Record> = packets()
            .into_iter()
            .map(|(ts_ns, data)| Record {
                ts_ns,
                orig_len: data.len() as u32,
                data,
                linktype: 1,
            })
            .collect();
        assert_eq!(records, expected, "{format:?}");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            CaptureReader::from_bytes(bytes).unwrap().count(),
            expected.len()
        );
    }
}

#[test]
fn snaplen_cut_packets_are_records_not_errors() {
    for (format, name) in [
        (CaptureFormat::Pcap, "snap.pcap"),
        (CaptureFormat::PcapNg, "snap.pcapng"),
    ] {
        let path = write_file(name, format, 100);
        for (record, (ts, data)) in read_all(&path).into_iter().zip(packets()) {
            assert_eq!(record.ts_ns, ts);
            assert_eq!(record.orig_len as usize, data.len());
            assert_eq!(record.data, data[..data.len().min(100)]);
        }
    }
}

/// Both readers' records of `bytes` and their leniency (which must agree).
fn read_leniently(bytes: &[u8]) -> (Vec<Record>, Leniency) {
    let mut streaming = CaptureReader::from_bytes(bytes.to_vec()).unwrap();
    let records: Vec<Record> = streaming.by_ref().collect::<Result<_, _>>().unwrap();
    assert!(streaming.next().is_none());
    let mut in_place = CaptureSlice::new(bytes).unwrap();
    let refs: Vec<Record> = in_place.by_ref().map(|r| r.unwrap().to_record()).collect();
    assert!(in_place.next().is_none());
    assert_eq!(records, refs);
    assert_eq!(streaming.leniency(), in_place.leniency());
    (records, streaming.leniency())
}

#[test]
fn truncated_file_headers_and_impossible_lengths_give_one_line_errors() {
    let bytes = std::fs::read(write_file("trunc.pcap", CaptureFormat::Pcap, 65535)).unwrap();
    let error = first_error;
    assert_eq!(
        error(&bytes[..20]),
        "truncated pcap file header at offset 0: needs 24 bytes, 20 present"
    );
    assert_eq!(
        error(&bytes[..0]),
        "truncated file header at offset 0: needs 4 bytes, 0 present"
    );
    assert_eq!(
        error(&[0xde, 0xad, 0xbe, 0xef, 0, 0]),
        "bad magic number 0xdeadbeef at offset 0 (not a pcap or pcapng file)"
    );
    // A captured length no record may have, in the middle of the file: corruption, not a cut
    // (even when what follows is shorter than the length it claims).
    let mut huge = bytes.clone();
    huge[24 + 8..24 + 12].copy_from_slice(&(64u32 << 20).to_le_bytes());
    assert!(error(&huge).starts_with(
        "invalid record at offset 24: captured length 67108864 exceeds the 16777216-byte limit"
    ));

    let ng = std::fs::read(write_file("trunc.pcapng", CaptureFormat::PcapNg, 65535)).unwrap();
    // SHB is 28 bytes, IDB with if_tsresol 32; the first EPB (60 bytes of data) is 92 bytes.
    // The section header is the file header: cut short, it is an error.
    assert_eq!(
        error(&ng[..20]),
        "truncated pcapng block at offset 0: header says 28 bytes, 20 present"
    );
    let mut bad_len = ng.clone();
    bad_len[64..68].copy_from_slice(&13u32.to_le_bytes());
    assert!(error(&bad_len)
        .starts_with("invalid pcapng block at offset 60: block length 13 is not a multiple of 4"));
    let mut short_len = ng.clone();
    short_len[64..68].copy_from_slice(&8u32.to_le_bytes());
    assert!(error(&short_len)
        .starts_with("invalid pcapng block at offset 60: block length 8 is not a multiple of 4"));
}

/// A file that ends inside its last record (copied while being written, `head -c`, a stray
/// byte after the last record) is read up to the cut, as tshark reads it ("appears to have
/// been cut short in the middle of a packet"), with a warning naming the offset.
#[test]
fn a_file_cut_short_ends_the_capture_with_a_warning() {
    let bytes = std::fs::read(write_file("cut.pcap", CaptureFormat::Pcap, 65535)).unwrap();
    let n = packets().len();
    let last = bytes.len() - (16 + packets()[n - 1].1.len());
    // The last record's data cut by one byte.
    let (records, l) = read_leniently(&bytes[..bytes.len() - 1]);
    assert_eq!(records.len(), n - 1);
    assert_eq!(l.cut_short_at, Some(last as u64));
    assert_eq!(l.warning_count, 1);
    let len = packets()[n - 1].1.len();
    assert_eq!(
        l.warnings,
        [format!(
            "offset {last}: the file ends inside a record (its record header says {len} bytes, {} \
             present): the capture was cut short there; the records before it were read",
            len - 1
        )]
    );
    // The first record cut: no records, still no error.
    let (records, l) = read_leniently(&bytes[..24 + 16 + 40]);
    assert!(records.is_empty());
    assert_eq!(l.cut_short_at, Some(24));
    // A record header cut short.
    let (records, l) = read_leniently(&bytes[..24 + 10]);
    assert!(records.is_empty());
    assert!(l.warnings[0].contains("its pcap record header needs 16 bytes, 10 present"));
    // A stray byte after the last record.
    let mut stray = bytes.clone();
    stray.push(0);
    let (records, l) = read_leniently(&stray);
    assert_eq!(records.len(), n);
    assert_eq!(l.cut_short_at, Some(bytes.len() as u64));
    // A complete file: nothing to say.
    let (records, l) = read_leniently(&bytes);
    assert_eq!((records.len(), l), (n, Leniency::default()));

    let ng = std::fs::read(write_file("cut.pcapng", CaptureFormat::PcapNg, 65535)).unwrap();
    let (records, l) = read_leniently(&ng[..60 + 50]);
    assert!(records.is_empty());
    assert_eq!(l.cut_short_at, Some(60));
    assert!(l.warnings[0].contains("its pcapng block header says 92 bytes, 50 present"));
    let (records, l) = read_leniently(&ng[..ng.len() - 3]);
    assert_eq!(records.len(), n - 1);
    assert_eq!(l.warning_count, 1);
    let mut stray = ng.clone();
    stray.extend_from_slice(&[6, 0, 0, 0, 32]);
    let (records, l) = read_leniently(&stray);
    assert_eq!(records.len(), n);
    assert_eq!(l.cut_short_at, Some(ng.len() as u64));
    assert!(l.warnings[0].contains("its pcapng block header needs 12 bytes, 5 present"));
}

#[test]
fn reads_microsecond_and_big_endian_pcap() {
    for (endianness, ts_resolution) in [
        (Endianness::Big, TsResolution::MicroSecond),
        (Endianness::Little, TsResolution::MicroSecond),
        (Endianness::Big, TsResolution::NanoSecond),
    ] {
        let header = PcapHeader {
            endianness,
            ts_resolution,
            snaplen: 200,
            ..PcapHeader::default()
        };
        let mut writer = PcapWriter::with_header(Vec::new(), header).unwrap();
        writer
            .write_packet(&PcapPacket::new(
                Duration::new(1_600_000_000, 123_456_000),
                300,
                &[7; 200],
            ))
            .unwrap();
        let records: Vec<Record> = CaptureReader::from_bytes(writer.into_writer())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let expected = Record {
            ts_ns: 1_600_000_000_123_456_000,
            data: vec![7; 200],
            orig_len: 300,
            linktype: 1,
        };
        assert_eq!(records, [expected], "{endianness:?} {ts_resolution:?}");
    }
}

#[test]
fn reads_modified_pcap_of_either_byte_order() {
    // Kuznetzov's "modified" pcap (magic 0xa1b2cd34; Red Hat's tcpdump wrote it): each record
    // header has 8 more bytes (interface index, protocol, packet type, pad), which wiretap skips.
    let standard = std::fs::read(write_file("modified.pcap", CaptureFormat::Pcap, 65535)).unwrap();
    let want = read_all(&temp_path("modified.pcap"));
    let mut modified = standard[..24].to_vec();
    modified[..4].copy_from_slice(&[0x34, 0xcd, 0xb2, 0xa1]); // little-endian, as written
                                                              // The writer writes nanosecond pcap; the modified format has microseconds.
    let mut at = 24;
    let mut micro = Vec::new();
    while at < standard.len() {
        let incl = u32::from_le_bytes(standard[at + 8..at + 12].try_into().unwrap()) as usize;
        let mut head = standard[at..at + 16].to_vec();
        let frac = u32::from_le_bytes(head[4..8].try_into().unwrap()) / 1000;
        head[4..8].copy_from_slice(&frac.to_le_bytes());
        modified.extend(&head);
        modified.extend([2, 0, 0, 0, 0x08, 0x00, 0, 0]);
        modified.extend(&standard[at + 16..at + 16 + incl]);
        micro.push(frac);
        at += 16 + incl;
    }
    let path = temp_path("modified-a1b2cd34.pcap");
    std::fs::write(&path, &modified).unwrap();
    let got = read_all(&path);
    assert_eq!(got.len(), want.len());
    for ((g, w), frac) in got.iter().zip(&want).zip(micro) {
        assert_eq!(
            (&g.data, g.orig_len, g.linktype),
            (&w.data, w.orig_len, w.linktype)
        );
        assert_eq!(
            g.ts_ns,
            w.ts_ns / 1_000_000_000 * 1_000_000_000 + u64::from(frac) * 1000
        );
    }
    // Cut inside a record's extra bytes: the capture ends there, as any cut record does.
    let cut = &modified[..24 + 16 + 4];
    assert_eq!(CaptureReader::from_bytes(cut.to_vec()).unwrap().count(), 0);
}

#[test]
fn reads_pcapng_with_default_resolution_and_either_byte_order() {
    for endianness in [Endianness::Big, Endianness::Little] {
        let mut writer = PcapNgWriter::with_endianness(Vec::new(), endianness).unwrap();
        writer
            .write_pcapng_block(InterfaceDescriptionBlock::new(DataLink::RAW, 0))
            .unwrap();
        // Without if_tsresol, timestamps count microseconds; pcap-file stores the raw count.
        let epb = EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_nanos(1_600_000_000_000_001),
            original_len: 3,
            data: Cow::Borrowed(&[0x45, 0, 0]),
            options: vec![],
        };
        writer.write_pcapng_block(epb.clone()).unwrap();
        let records: Vec<Record> = CaptureReader::from_bytes(writer.into_inner())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let expected = Record {
            ts_ns: 1_600_000_000_000_001_000,
            data: vec![0x45, 0, 0],
            orig_len: 3,
            linktype: 101,
        };
        assert_eq!(records, [expected], "{endianness:?}");
    }
}

#[test]
fn skips_unparsed_pcapng_blocks_and_rejects_unknown_interfaces() {
    let mut file = std::fs::read(write_file("nrb.pcapng", CaptureFormat::PcapNg, 65535)).unwrap();
    // A name resolution block whose record lacks its padding (pcap-file would panic on it),
    // inserted after the IDB; it is skipped unparsed.
    let mut nrb = 4u32.to_le_bytes().to_vec();
    nrb.extend(24u32.to_le_bytes());
    nrb.extend([1, 0, 5, 0, 10, 0, 0, 1, b'a', 0, 0, 0]);
    nrb.extend(24u32.to_le_bytes());
    file.splice(60..60, nrb);
    assert_eq!(
        CaptureReader::from_bytes(file.clone())
            .unwrap()
            .map(Result::unwrap)
            .count(),
        packets().len()
    );

    // The first EPB (now at 84) names interface 3.
    file[92..96].copy_from_slice(&3u32.to_le_bytes());
    let mut reader = CaptureReader::from_bytes(file).unwrap();
    let error = reader.next().unwrap().unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid pcapng packet block at offset 84: undeclared interface 3"
    );
    assert!(matches!(error, CaptureError::Invalid { offset: 84, .. }));
}

#[test]
fn missing_file_error_names_the_path() {
    let error = CaptureReader::open(Path::new("/nonexistent/x.pcap"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.starts_with("cannot open /nonexistent/x.pcap: "),
        "{error}"
    );
}

/// tshark, when installed, must read both formats and agree on times and lengths.
#[test]
fn tshark_reads_written_files() {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("tshark not installed; skipping");
        return;
    }
    for (format, name) in [
        (CaptureFormat::Pcap, "ts.pcap"),
        (CaptureFormat::PcapNg, "ts.pcapng"),
    ] {
        let path = write_file(name, format, 1000);
        let output = Command::new("tshark")
            .args(["-n", "-r"])
            .arg(&path)
            .args([
                "-T",
                "fields",
                "-e",
                "frame.time_epoch",
                "-e",
                "frame.len",
                "-e",
                "frame.cap_len",
            ])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let lines: Vec<String> = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        let expected: Vec<String> = packets()
            .iter()
            .map(|(ts, data)| {
                format!(
                    "{}.{:09}\t{}\t{}",
                    ts / 1_000_000_000,
                    ts % 1_000_000_000,
                    data.len(),
                    data.len().min(1000)
                )
            })
            .collect();
        assert_eq!(lines, expected, "{format:?}");
    }
}

#[test]
fn a_timestamp_fraction_past_one_second_is_added_as_wiretap_adds_it() {
    // A writer that did not carry the fraction into the seconds (suricata-verify's
    // transform-base64-7296: 1,011,041 µs): tshark reads the capture, so nicsim does, with the
    // fraction added as it is; both readers agree.
    for (ts_resolution, frac, ns) in [
        (TsResolution::MicroSecond, 1_011_041u32, 1_011_041_000u64),
        (TsResolution::NanoSecond, u32::MAX, u32::MAX as u64),
    ] {
        let header = PcapHeader {
            ts_resolution,
            endianness: Endianness::Little,
            ..PcapHeader::default()
        };
        let mut file = PcapWriter::with_header(Vec::new(), header)
            .unwrap()
            .into_writer();
        file.extend_from_slice(&7u32.to_le_bytes());
        file.extend_from_slice(&frac.to_le_bytes());
        file.extend_from_slice(&60u32.to_le_bytes());
        file.extend_from_slice(&60u32.to_le_bytes());
        file.extend_from_slice(&[1; 60]);
        let streamed: Vec<Record> = CaptureReader::from_bytes(file.clone())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(streamed.len(), 1, "{ts_resolution:?}");
        assert_eq!(streamed[0].ts_ns, 7_000_000_000 + ns, "{ts_resolution:?}");
        let sliced: Vec<Record> = CaptureSlice::new(&file)
            .unwrap()
            .map(|r| r.unwrap().to_record())
            .collect();
        assert_eq!(sliced, streamed);
    }
}

/// A little-endian microsecond pcap whose header's link-type field is `field`, with `frames`.
fn pcap_with_linktype_field(field: u32, frames: &[(&[u8], u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4_u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&field.to_le_bytes());
    for (i, (data, orig_len)) in frames.iter().enumerate() {
        for word in [i as u32, 0, data.len() as u32, *orig_len] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(data);
    }
    out
}

/// Both readers' records of `bytes` (which must agree).
fn records_of(bytes: &[u8]) -> Vec<Record> {
    let streaming: Vec<Record> = CaptureReader::from_bytes(bytes.to_vec())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let in_place: Vec<Record> = CaptureSlice::new(bytes)
        .unwrap()
        .map(|r| r.unwrap().to_record())
        .collect();
    assert_eq!(streaming, in_place);
    streaming
}

/// The pcap header's link-type field as libpcap reads it (LT_LINKTYPE, LT_FCS_LENGTH_PRESENT,
/// LT_FCS_LENGTH): the low 26 bits are the link type; with bit 26 set, the top 4 bits are the
/// FCS length in 16-bit words, and tshark leaves that many bytes out of the end of each frame.
#[test]
fn pcap_linktype_field_upper_bits_and_fcs_length() {
    let frame: Vec<u8> = (0..64u8).collect();
    let cut = &frame[..40];
    let frames: [(&[u8], u32); 2] = [(&frame, 64), (cut, 64)];
    // Upper bits without F (tcpdump's tcp-auth-heapoverflow.pcap: 0x30000001): Ethernet, as is.
    let recs = records_of(&pcap_with_linktype_field(0x3000_0001, &frames));
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].linktype, 1);
    assert_eq!(
        (recs[0].data.as_slice(), recs[0].orig_len),
        (&frame[..], 64)
    );
    // Raw IPv6 (229) with the same bits (beep-oobr.pcap: 0x300000E5).
    let recs = records_of(&pcap_with_linktype_field(0x3000_00E5, &frames));
    assert_eq!(recs[0].linktype, 229);
    // F set, 2 words: a 4-byte FCS ends each frame and is left out.
    let recs = records_of(&pcap_with_linktype_field(0x2400_0001, &frames));
    assert_eq!(recs[0].linktype, 1);
    assert_eq!(
        (recs[0].data.as_slice(), recs[0].orig_len),
        (&frame[..60], 60)
    );
    // A record cut by the snap length keeps what it has (the FCS was not captured).
    assert_eq!((recs[1].data.as_slice(), recs[1].orig_len), (cut, 60));
    // 1 word: 2 bytes.
    let recs = records_of(&pcap_with_linktype_field(0x1400_0001, &frames));
    assert_eq!((recs[0].data.len(), recs[0].orig_len), (62, 62));
    assert_eq!(
        nicsim_packet::capture::pcap_linktype(0x0400_0065),
        (101, 0),
        "F with a length of 0: no FCS"
    );
}

/// pcapng's `if_fcslen` (13): the FCS of that many bytes is left out of the interface's packets.
#[test]
fn pcapng_if_fcslen_strips_the_fcs() {
    let le = |v: u32| v.to_le_bytes();
    let mut ng = Vec::new();
    // SHB: 28 bytes.
    for w in [0x0A0D_0D0A_u32, 28, 0x1A2B_3C4D] {
        ng.extend_from_slice(&le(w));
    }
    ng.extend_from_slice(&1u16.to_le_bytes());
    ng.extend_from_slice(&0u16.to_le_bytes());
    ng.extend_from_slice(&u64::MAX.to_le_bytes());
    ng.extend_from_slice(&le(28));
    // IDB: Ethernet, if_fcslen 4, end of options: 8 + 8 + 8 + 4 + 4 = 32 bytes.
    for w in [1u32, 32, 1, 0] {
        ng.extend_from_slice(&le(w));
    }
    ng.extend_from_slice(&[13, 0, 1, 0, 4, 0, 0, 0]);
    ng.extend_from_slice(&[0; 4]);
    ng.extend_from_slice(&le(32));
    // EPB with 64 bytes of data: 32 + 64 = 96 bytes.
    for w in [6u32, 96, 0, 0, 0, 64, 64] {
        ng.extend_from_slice(&le(w));
    }
    let frame: Vec<u8> = (0..64u8).collect();
    ng.extend_from_slice(&frame);
    ng.extend_from_slice(&le(96));
    let recs = records_of(&ng);
    assert_eq!(recs.len(), 1);
    assert_eq!(
        (recs[0].data.as_slice(), recs[0].orig_len),
        (&frame[..60], 60)
    );
}

/// `if_tsresol` finer than 64 bits of units a second (10^-20 s, 2^-127 s, 10^-127 s): the
/// capture is read as tshark reads it, each time the whole nanoseconds its units make (a
/// hostile probe: the whole capture was refused).
#[test]
fn pcapng_resolutions_past_64_bits_are_read() {
    let ng = std::fs::read(write_file("tsresol.pcapng", CaptureFormat::PcapNg, 65535)).unwrap();
    // The writer's interface block follows the 28-byte section header; its if_tsresol option
    // (code 9, length 1) is the first, its value at byte 16 of the block.
    assert_eq!(&ng[28 + 16..28 + 20], &[9, 0, 1, 0]);
    let units = read_all(&write_file("tsresol9.pcapng", CaptureFormat::PcapNg, 65535));
    for (r, divide_by) in [(20u8, 10u128.pow(11)), (0x80 | 127, 0), (127, 0)] {
        let mut b = ng.clone();
        b[28 + 20] = r;
        let records: Vec<Record> = CaptureReader::from_bytes(b)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(records.len(), units.len(), "if_tsresol {r:#x}");
        for (got, was) in records.iter().zip(&units) {
            assert_eq!(got.data, was.data);
            // The writer's nanoseconds as units of the finer resolution: 10^-20 s is 10^11 of
            // them a nanosecond; 2^-127 and 10^-127 s make less than one nanosecond in all.
            let want = u128::from(was.ts_ns)
                .checked_div(divide_by)
                .map_or(0, |n| n as u64);
            assert_eq!(got.ts_ns, want, "if_tsresol {r:#x}");
        }
    }
}
