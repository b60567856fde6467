//! `nicsim flowmem synth`: the capture it writes reassembles into exactly the streams it meant,
//! impairments and all; the flow-size distribution is the one asked for; same seed, same bytes.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::assert_same_flows;
use nicsim_flowmem::synth::{synthesize, SynthConfig};
use nicsim_flowmem::{Config, OverlapPolicy, Reassembly};
use nicsim_packet::capture::CaptureFormat;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nicsim-synth-{}-{name}", std::process::id()))
}

#[test]
fn streams_reassemble_exactly_despite_loss_reordering_and_duplicates() {
    let c = SynthConfig {
        flows: 300,
        loss: 0.05,
        reorder: 0.05,
        duplicate: 0.05,
        ..SynthConfig::default()
    };
    let path = tmp("impaired.pcap");
    let rep = synthesize(&c, &path, CaptureFormat::Pcap, &mut |_| {}).unwrap();
    assert!(
        rep.lost > 10 && rep.reordered > 10 && rep.duplicated > 10,
        "{rep:?}"
    );
    let r = Reassembly::from_capture(&path, Config::default()).unwrap();
    // The zero-copy path over the capture in memory: the same flows, payloads in place.
    let capture = std::fs::read(&path).unwrap();
    for last in [false, true] {
        let config = Config {
            overlap: if last {
                OverlapPolicy::LastWins
            } else {
                OverlapPolicy::FirstWins
            },
            ..Config::default()
        };
        let in_place = Reassembly::from_capture_bytes(Arc::new(capture.clone()), config).unwrap();
        assert!(in_place.arena.is_capture_backed());
        assert_eq!(in_place.arena.memory_bytes(), capture.len() as u64);
        let streamed = Reassembly::from_capture(&path, config).unwrap();
        assert_same_flows(&streamed, &in_place);
    }
    std::fs::remove_file(&path).ok();
    assert_eq!(r.flows.len(), 300);
    assert_eq!(r.counts.read, rep.packets);
    let mut response = 0;
    for (i, f) in r.flows.iter().enumerate() {
        let (req, resp) = (&f.dirs[0], &f.dirs[1]);
        assert!(req.syn && resp.syn && req.fin && resp.fin, "flow {i}");
        assert!(
            req.holes.is_empty() && resp.holes.is_empty(),
            "flow {i}: {:?}",
            resp.holes
        );
        let v = r.view(i, 1).unwrap();
        let body = v.read(0, v.len() as usize).unwrap();
        let text = String::from_utf8(body).unwrap();
        let (head, rest) = text.split_once("\r\n\r\n").unwrap();
        let n: usize = head
            .rsplit_once("Content-Length: ")
            .unwrap()
            .1
            .parse()
            .unwrap();
        assert_eq!(rest.len(), n, "flow {i}");
        let q = r.view(i, 0).unwrap();
        let get = String::from_utf8(q.read(0, q.len() as usize).unwrap()).unwrap();
        assert!(
            get.starts_with(&format!("GET /object/{i} HTTP/1.1\r\n")) && get.ends_with("\r\n\r\n")
        );
        response += v.len();
    }
    assert_eq!(response, rep.response_bytes);
    // Retransmissions of lost segments fill what would be holes; duplicates are counted as such.
    assert!(r.counts.accounted() == r.counts.read);
}

#[test]
fn flow_sizes_follow_the_requested_share() {
    let c = SynthConfig {
        flows: 20_000,
        loss: 0.0,
        reorder: 0.0,
        duplicate: 0.0,
        ..SynthConfig::default()
    };
    let mut packets = 0u64;
    let rep = nicsim_flowmem::synth::generate(
        &c,
        &mut |_, _| {
            packets += 1;
            Ok(())
        },
        &mut |_| {},
    )
    .unwrap();
    let share = rep.flows_le_10kb as f64 / rep.flows as f64;
    // Binomial standard error at n = 20,000 is 0.0018; the header adds ~80 bytes to each flow.
    assert!((share - 0.9316).abs() < 0.01, "{share}");
    assert_eq!(packets, rep.packets);
    // Heavy-tailed: a few flows carry much of the bytes.
    assert!(
        rep.response_bytes as f64 / rep.flows as f64 > 4_000.0,
        "{rep:?}"
    );
}

#[test]
fn same_seed_same_capture_and_pcapng_too() {
    let c = SynthConfig {
        flows: 50,
        ..SynthConfig::default()
    };
    let (a, b, d) = (tmp("a.pcap"), tmp("b.pcap"), tmp("d.pcap"));
    synthesize(&c, &a, CaptureFormat::Pcap, &mut |_| {}).unwrap();
    synthesize(&c, &b, CaptureFormat::Pcap, &mut |_| {}).unwrap();
    synthesize(
        &SynthConfig {
            seed: 2,
            ..c.clone()
        },
        &d,
        CaptureFormat::Pcap,
        &mut |_| {},
    )
    .unwrap();
    let (ba, bb, bd) = (
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        std::fs::read(&d).unwrap(),
    );
    assert_eq!(ba, bb);
    assert_ne!(ba, bd);
    let ng = tmp("a.pcapng");
    synthesize(&c, &ng, CaptureFormat::PcapNg, &mut |_| {}).unwrap();
    let r1 = Reassembly::from_capture(&a, Config::default()).unwrap();
    let r2 = Reassembly::from_capture(&ng, Config::default()).unwrap();
    assert_eq!(r1.flows.len(), r2.flows.len());
    let r3 =
        Reassembly::from_capture_bytes(Arc::new(std::fs::read(&ng).unwrap()), Config::default())
            .unwrap();
    assert_same_flows(&r2, &r3);
    assert_eq!(r1.arena.used_bytes(), r2.arena.used_bytes());
    // Wireshark reads it (when tshark is installed): every packet, no malformed ones.
    if let Ok(out) = std::process::Command::new("tshark")
        .args(["-r"])
        .arg(&a)
        .args([
            "-Y",
            "_ws.malformed || _ws.expert.severity >= error",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
    {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "",
            "malformed packets"
        );
    }
    for p in [a, b, d, ng] {
        std::fs::remove_file(p).ok();
    }
}

#[test]
fn bad_settings_name_the_field() {
    let c = SynthConfig {
        loss: 1.5,
        ..SynthConfig::default()
    };
    assert!(c.check().unwrap_err().starts_with("loss:"));
    let c = SynthConfig {
        mss_bytes: 10,
        ..SynthConfig::default()
    };
    assert!(c.check().unwrap_err().starts_with("mss_bytes:"));
}
