//! Randomized robustness: hostile bytes must never panic the parsers or the capture reader.

use std::net::Ipv4Addr;

use nicsim_packet::capture::{CaptureFormat, CaptureReader, CaptureSlice, CaptureWriter, Record};
use nicsim_packet::{fix_checksums, parse, parse_five_tuple, FrameSpec, L4Proto};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Valid frames (without FCS) to mutate, covering every layer the parser walks.
fn seeds() -> Vec<Vec<u8>> {
    let v4 = FrameSpec {
        eth_src: [2, 0, 0, 0, 0, 1],
        eth_dst: [2, 0, 0, 0, 0, 2],
        vlan: Some(10),
        src: Ipv4Addr::new(10, 0, 0, 1).into(),
        dst: Ipv4Addr::new(10, 0, 0, 2).into(),
        proto: L4Proto::Tcp,
        sport: 1,
        dport: 2,
        tos: 0,
        ttl: 64,
        tcp_seq: 1,
        tcp_ack: 2,
        tcp_flags: 0x10,
    };
    let v6 = FrameSpec {
        src: "2001:db8::1".parse().unwrap(),
        dst: "2001:db8::2".parse().unwrap(),
        vlan: None,
        ..v4
    };
    let mut frames = Vec::new();
    for spec in [v4, v6] {
        for proto in [L4Proto::Tcp, L4Proto::Udp] {
            let mut frame = FrameSpec { proto, ..spec }.build(128, b"fuzz").unwrap();
            frame.truncate(124);
            frames.push(frame);
        }
    }
    // IPv6 with a hop-by-hop header, so mutations reach the extension walker.
    let mut frame = frames[3].clone();
    frame.splice(54..54, [17, 0, 0, 0, 0, 0, 0, 0]);
    frame[20] = 0;
    frames.push(frame);
    frames
}

fn exercise(frame: &[u8]) {
    let parsed = parse(frame);
    assert_eq!(
        parse_five_tuple(frame).is_some(),
        parsed.as_ref().is_ok_and(|p| p.l4.is_some())
    );
    let mut copy = frame.to_vec();
    assert_eq!(fix_checksums(&mut copy).is_ok(), parsed.is_ok());
    if let Ok(p) = parsed {
        assert!(p.l3_offset <= frame.len() && p.payload_offset <= frame.len());
        assert!(p.l4_offset.is_none_or(|o| o <= p.payload_offset));
    }
}

#[test]
fn random_bytes_never_panic_parse() {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut buf = vec![0u8; 256];
    for _ in 0..100_000 {
        let len = rng.gen_range(0..buf.len());
        rng.fill(&mut buf[..len]);
        // Steer a good share of inputs past the Ethernet layer.
        if len >= 18 && rng.gen_bool(0.7) {
            let types: [u16; 5] = [0x0800, 0x86dd, 0x8100, 0x88a8, 0x0806];
            buf[12..14].copy_from_slice(&types[rng.gen_range(0..types.len())].to_be_bytes());
            buf[14] = if rng.gen() { 0x45 } else { 0x60 };
        }
        exercise(&buf[..len]);
    }
}

#[test]
fn mutated_frames_never_panic_parse() {
    let mut rng = StdRng::seed_from_u64(7);
    let seeds = seeds();
    for _ in 0..100_000 {
        let mut frame = seeds[rng.gen_range(0..seeds.len())].clone();
        for _ in 0..rng.gen_range(1..4) {
            let at = rng.gen_range(0..frame.len());
            frame[at] = rng.gen();
        }
        frame.truncate(rng.gen_range(0..=frame.len()));
        exercise(&frame);
    }
}

/// Reads `bytes` with both readers: no panic, and the same records and errors from each.
fn drain(bytes: Vec<u8>) {
    let in_place: Vec<Result<Record, String>> = match CaptureSlice::new(&bytes) {
        Ok(reader) => reader
            .map(|r| r.map(|r| r.to_record()).map_err(|e| e.to_string()))
            .collect(),
        Err(e) => vec![Err(e.to_string())],
    };
    let streaming: Vec<Result<Record, String>> = match CaptureReader::from_bytes(bytes) {
        Ok(reader) => reader.map(|r| r.map_err(|e| e.to_string())).collect(),
        Err(e) => vec![Err(e.to_string())],
    };
    for record in streaming.iter().flatten() {
        assert!(record.data.len() <= record.orig_len as usize);
    }
    assert_eq!(streaming, in_place);
}

#[test]
fn random_and_mutated_captures_never_panic_reader() {
    let mut rng = StdRng::seed_from_u64(42);
    let mut files = Vec::new();
    for (format, name) in [
        (CaptureFormat::Pcap, "fuzz.pcap"),
        (CaptureFormat::PcapNg, "fuzz.pcapng"),
    ] {
        let path =
            std::env::temp_dir().join(format!("nicsim-packet-fuzz-{}-{name}", std::process::id()));
        let mut writer = CaptureWriter::create(&path, format, 200).unwrap();
        for (i, frame) in seeds().iter().enumerate() {
            writer.write(i as u64 * 1_000_000_000 + 5, frame).unwrap();
        }
        writer.finish().unwrap();
        files.push(std::fs::read(&path).unwrap());
        std::fs::remove_file(path).unwrap();
    }
    let magics: [u32; 5] = [0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1, 0x0a0d0d0a];
    for i in 0..20_000 {
        let bytes = if i % 2 == 0 {
            let mut bytes = files[rng.gen_range(0..files.len())].clone();
            for _ in 0..rng.gen_range(1..6) {
                let at = rng.gen_range(0..bytes.len());
                bytes[at] = rng.gen();
            }
            bytes.truncate(rng.gen_range(0..=bytes.len()));
            bytes
        } else {
            let mut bytes: Vec<u8> = (0..rng.gen_range(0..300)).map(|_| rng.gen()).collect();
            if bytes.len() >= 12 {
                bytes[..4].copy_from_slice(&magics[rng.gen_range(0..magics.len())].to_be_bytes());
                if rng.gen() {
                    bytes[8..12].copy_from_slice(&0x1a2b3c4du32.to_le_bytes());
                }
            }
            bytes
        };
        drain(bytes);
    }
}
