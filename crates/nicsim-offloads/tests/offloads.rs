//! Functional tests of every offload on hand-built frames, chains, fuzzing, and an
//! ignored micro-benchmark (`cargo test --release -p nicsim-offloads -- --ignored --nocapture bench`).

mod common;

use std::time::Instant;

use common::*;
use nicsim_offloads::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn offload(kind: OffloadKind) -> Box<dyn FunctionalOffload> {
    let rules =
        RuleSet::parse("deny tcp any 2001:db8::2 dport 22\ndeny udp 10.66.0.0/16 any\n").unwrap();
    build(
        kind,
        &OffloadParams {
            firewall: Some(rules),
            ..OffloadParams::default()
        },
    )
}

fn process(kind: OffloadKind, frame: &mut Vec<u8>) -> Result<FuncMeta, DropReason> {
    let mut meta = FuncMeta::default();
    offload(kind).process(frame, &mut meta).map(|()| meta)
}

/// Prepare with `chain` reversed, then process in chain order.
fn run_chain(
    chain: &[OffloadKind],
    frame: &[u8],
    tamper: impl FnOnce(&mut Vec<u8>),
) -> Result<Vec<u8>, DropReason> {
    let offloads: Vec<_> = chain.iter().map(|&k| offload(k)).collect();
    let mut wire = frame.to_vec();
    offloads.iter().rev().for_each(|o| o.prepare(&mut wire));
    assert_eq!(
        wire.len(),
        frame.len(),
        "prepare must not change the length"
    );
    tamper(&mut wire);
    let mut meta = FuncMeta::default();
    offloads
        .iter()
        .try_for_each(|o| o.process(&mut wire, &mut meta))?;
    Ok(wire)
}

#[test]
fn kinds_and_reasons_have_stable_names() {
    for kind in OffloadKind::ALL {
        assert_eq!(kind.to_string().parse::<OffloadKind>(), Ok(kind));
        assert_eq!(build(kind, &OffloadParams::default()).kind(), kind);
    }
    assert!("gzip"
        .parse::<OffloadKind>()
        .unwrap_err()
        .contains("'gzip'"));
    assert_eq!(DropReason::FirewallDeny.as_str(), "firewall_deny");
    assert_eq!(DropReason::BadFcs.to_string(), "bad_fcs");
}

#[test]
fn crc_verifies_and_prepare_repairs() {
    let mut frame = min_v4_frame();
    assert_eq!(frame.len(), 64);
    assert!(process(OffloadKind::Crc, &mut frame).is_ok());
    frame[20] ^= 0x10;
    assert_eq!(
        process(OffloadKind::Crc, &mut frame).unwrap_err(),
        DropReason::BadFcs
    );
    offload(OffloadKind::Crc).prepare(&mut frame);
    assert!(process(OffloadKind::Crc, &mut frame).is_ok());
    assert_eq!(
        process(OffloadKind::Crc, &mut vec![1, 2, 3]).unwrap_err(),
        DropReason::Malformed
    );
}

#[test]
fn sha3_tag_fits_the_minimum_frame_and_detects_tampering() {
    for original in [min_v4_frame(), v6_frame(200)] {
        let sha3 = offload(OffloadKind::Sha3);
        let mut frame = original.clone();
        sha3.prepare(&mut frame);
        assert_ne!(frame, original, "tag written");
        let mut tampered = frame.clone();
        assert!(process(OffloadKind::Sha3, &mut frame).is_ok());
        assert_eq!(frame, original, "tag stripped, rest untouched");
        let at = tampered.len() - 4 - 9; // last covered byte
        tampered[at] ^= 1;
        assert_eq!(
            process(OffloadKind::Sha3, &mut tampered).unwrap_err(),
            DropReason::BadTag
        );
    }
    let mut short = ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, &[0; 11]);
    assert_eq!(
        process(OffloadKind::Sha3, &mut short).unwrap_err(),
        DropReason::Malformed
    );
}

#[test]
fn aes_encrypts_only_the_covered_region_and_is_its_own_inverse() {
    let original = v6_frame(100);
    let mut frame = original.clone();
    offload(OffloadKind::Aes).prepare(&mut frame);
    let (p, q) = (V6_TCP_PAYLOAD_AT, original.len() - 4);
    assert_eq!(
        frame[..p + 4],
        original[..p + 4],
        "headers and sequence number in clear"
    );
    assert_eq!(
        frame[q - 8..],
        original[q - 8..],
        "tag bytes and FCS untouched"
    );
    assert_ne!(frame[p + 4..q - 8], original[p + 4..q - 8]);
    assert!(process(OffloadKind::Aes, &mut frame).is_ok());
    assert_eq!(frame, original);

    // Same payload, other flow or other sequence number: different keystream.
    let encrypt = |mut f: Vec<u8>| {
        offload(OffloadKind::Aes).prepare(&mut f);
        f[V4_UDP_PAYLOAD_AT + 4..f.len() - 12].to_vec()
    };
    let a = encrypt(ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, &payload(64, 1)));
    let b = encrypt(ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 3, &payload(64, 1)));
    let c = encrypt(ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, &payload(64, 2)));
    assert!(a != b && a != c);

    let mut short = ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, &[0; 11]);
    assert_eq!(
        process(OffloadKind::Aes, &mut short).unwrap_err(),
        DropReason::Malformed
    );
}

#[test]
fn firewall_denies_by_rule_and_rejects_non_ip() {
    assert!(process(OffloadKind::Firewall, &mut min_v4_frame()).is_ok());
    let mut ssh = ipv6_tcp(
        [0x20; 16],
        "2001:db8::2"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
        5555,
        22,
        &payload(20, 0),
    );
    assert_eq!(
        process(OffloadKind::Firewall, &mut ssh).unwrap_err(),
        DropReason::FirewallDeny
    );
    let mut udp = ipv4_udp([10, 66, 1, 2], [1, 1, 1, 1], 1, 2, &payload(18, 0));
    assert_eq!(
        process(OffloadKind::Firewall, &mut udp).unwrap_err(),
        DropReason::FirewallDeny
    );
    let mut icmp = ipv4(1, [1, 1, 1, 1], [2, 2, 2, 2], &[8, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        process(OffloadKind::Firewall, &mut icmp).unwrap_err(),
        DropReason::Malformed
    );
    // No rule set configured: permit all IP/TCP/UDP.
    let mut meta = FuncMeta::default();
    assert!(build(OffloadKind::Firewall, &OffloadParams::default())
        .process(&mut udp, &mut meta)
        .is_ok());
}

#[test]
fn jpeg_decodes_embedded_images() {
    let image = tiny_jpeg(16, 16, 42);
    assert_eq!(image, tiny_jpeg(16, 16, 42), "deterministic");
    assert_ne!(image, tiny_jpeg(16, 16, 43));
    let mut body = payload(4 + image.len() + 8, 1);
    body[4..4 + image.len()].copy_from_slice(&image);
    let mut frame = ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, &body);
    assert!(process(OffloadKind::Jpeg, &mut frame).is_ok());
    let mut plain = v6_frame(300);
    assert!(
        process(OffloadKind::Jpeg, &mut plain).is_ok(),
        "non-JPEG payloads pass"
    );

    body[4 + image.len() / 2..].fill(0); // cut the entropy-coded data short
    let mut broken = ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, &body);
    assert_eq!(
        process(OffloadKind::Jpeg, &mut broken).unwrap_err(),
        DropReason::BadJpeg
    );
    println!(
        "tiny_jpeg sizes: 8x8 = {} B, 16x16 = {} B",
        tiny_jpeg(8, 8, 0).len(),
        image.len()
    );
}

#[test]
fn rss_hashes_real_frames_like_the_microsoft_vectors() {
    let meta = process(
        OffloadKind::Rss,
        &mut ipv4_udp(
            [66, 9, 149, 187],
            [161, 142, 100, 80],
            2794,
            1766,
            &payload(18, 0),
        ),
    )
    .unwrap();
    assert_eq!(meta.rss_hash, Some(0x51ccc178));
    assert_eq!(meta.rss_queue, Some((0x51ccc178_u32 & 127) as u16 % 4));
    let icmp = ipv4(
        1,
        [66, 9, 149, 187],
        [161, 142, 100, 80],
        &[8, 0, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!(
        process(OffloadKind::Rss, &mut icmp.clone())
            .unwrap()
            .rss_hash,
        Some(0x323e8fc2)
    );
    let v6 = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap().octets();
    let mut tcp6 = ipv6_tcp(
        v6("3ffe:2501:200:1fff::7"),
        v6("3ffe:2501:200:3::1"),
        2794,
        1766,
        &payload(20, 0),
    );
    assert_eq!(
        process(OffloadKind::Rss, &mut tcp6).unwrap().rss_hash,
        Some(0x40207d3d)
    );
    let non_ip = process(OffloadKind::Rss, &mut with_fcs(vec![0; 60])).unwrap();
    assert_eq!((non_ip.rss_hash, non_ip.rss_queue), (None, Some(0)));
}

const CHAIN: [OffloadKind; 5] = [
    OffloadKind::Rss,
    OffloadKind::Aes,
    OffloadKind::Sha3,
    OffloadKind::Firewall,
    OffloadKind::Crc,
];

#[test]
fn chain_round_trip_restores_the_frame() {
    for frame in [min_v4_frame(), v6_frame(1500 - V6_TCP_PAYLOAD_AT - 4)] {
        assert_eq!(run_chain(&CHAIN, &frame, |_| {}), Ok(frame.clone()));
        let reordered = [
            OffloadKind::Crc,
            OffloadKind::Sha3,
            OffloadKind::Aes,
            OffloadKind::Firewall,
            OffloadKind::Rss,
        ];
        let out = run_chain(&reordered, &frame, |_| {}).unwrap();
        assert_eq!(
            out[..out.len() - 4],
            frame[..frame.len() - 4],
            "payload restored (FCS is stale after the tag is stripped)"
        );
    }
    // A JPEG carried encrypted and authenticated is decoded after decryption.
    let image = tiny_jpeg(8, 8, 5);
    let mut body = payload(4 + image.len() + 8, 9);
    body[4..4 + image.len()].copy_from_slice(&image);
    let frame = ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, &body);
    let jpeg_chain = [
        OffloadKind::Crc,
        OffloadKind::Sha3,
        OffloadKind::Aes,
        OffloadKind::Jpeg,
    ];
    assert!(run_chain(&jpeg_chain, &frame, |_| {}).is_ok());
}

#[test]
fn chain_drops_with_the_right_reason() {
    let frame = v6_frame(64);
    let crc = offload(OffloadKind::Crc);
    // A flipped MAC byte is caught only by the FCS.
    assert_eq!(
        run_chain(&CHAIN, &frame, |f| f[3] ^= 0xff),
        Err(DropReason::BadFcs)
    );
    // Tampered ciphertext with a recomputed, correct FCS: the tag catches it.
    let tamper = |f: &mut Vec<u8>| {
        f[V6_TCP_PAYLOAD_AT + 10] ^= 0x01;
        crc.prepare(f);
    };
    assert_eq!(run_chain(&CHAIN, &frame, tamper), Err(DropReason::BadTag));
    let denied = ipv6_tcp(
        [0x20; 16],
        "2001:db8::2"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
        1,
        22,
        &payload(64, 3),
    );
    assert_eq!(
        run_chain(&CHAIN, &denied, |_| {}),
        Err(DropReason::FirewallDeny)
    );
}

#[test]
fn process_never_panics_on_garbage() {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let offloads: Vec<_> = OffloadKind::ALL.into_iter().map(offload).collect();
    let image = tiny_jpeg(16, 16, 1);
    let mut jpeg_body = payload(4 + image.len() + 8, 0);
    jpeg_body[4..4 + image.len()].copy_from_slice(&image);
    let seeds = [
        min_v4_frame(),
        v6_frame(200),
        ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, &jpeg_body),
    ];
    let mut meta = FuncMeta::default();
    for i in 0..30_000 {
        let mut frame = if i % 3 == 0 {
            (0..rng.gen_range(0..128)).map(|_| rng.gen()).collect()
        } else {
            // Valid frames with a few random byte flips and a random truncation.
            let mut f = seeds[i % seeds.len()].clone();
            for _ in 0..rng.gen_range(1..6) {
                let at = rng.gen_range(0..f.len());
                f[at] = rng.gen();
            }
            f.truncate(rng.gen_range(0..=f.len()));
            f
        };
        for o in &offloads {
            let mut copy = frame.clone();
            let _ = o.process(&mut copy, &mut meta);
            o.prepare(&mut frame);
        }
    }
}

#[test]
#[ignore = "micro-benchmark; run in release with --ignored --nocapture"]
fn bench_ns_per_packet() {
    let rules = (0..16)
        .map(|i| format!("deny udp 172.{i}.0.0/16 any dport 1000-2000\n"))
        .collect::<String>();
    let params = OffloadParams {
        firewall: Some(RuleSet::parse(&rules).unwrap()),
        ..OffloadParams::default()
    };
    let image = tiny_jpeg(16, 16, 1);
    for size in [64usize, 1500] {
        let mut body = payload(size - V4_UDP_PAYLOAD_AT - 4, 1);
        if size == 1500 {
            body[4..4 + image.len()].copy_from_slice(&image);
        }
        let plain = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, &body);
        for kind in OffloadKind::ALL {
            let o = build(kind, &params);
            let mut template = plain.clone();
            o.prepare(&mut template);
            let (mut frame, mut meta) = (template.clone(), FuncMeta::default());
            let iters = if size == 64 { 200_000 } else { 20_000 };
            let start = Instant::now();
            for _ in 0..iters {
                frame.clone_from(&template);
                assert!(o.process(&mut frame, &mut meta).is_ok());
            }
            let ns = start.elapsed().as_nanos() as f64 / iters as f64;
            println!("{size:>5} B  {kind:<8} {ns:>9.1} ns/packet");
        }
    }
}
