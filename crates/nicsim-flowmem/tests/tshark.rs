//! Reassembled bytes against Wireshark: for every TCP stream of real captures (those Debian
//! ships with gopacket and dpkt, plus any listed in NICSIM_FLOW_CAPTURES) and of adversarial
//! captures written here, each direction must equal `tshark -q -z follow,tcp,raw,N`.
//!
//! Where tshark's follow legitimately differs, the difference is modelled exactly, not
//! tolerated: tshark never shows bytes after a hole until the other side ACKs beyond it, and
//! then writes the text "[N bytes missing in capture file]" plus a NUL in the hole's place
//! (epan/dissectors/packet-tcp.c, check_follow_fragments). So tshark's output must equal our
//! runs joined by that marker, cut after some run k (k < holes: the rest was never ACKed in
//! the capture). On conflicting overlaps tshark keeps whichever bytes reach the in-order point
//! first: the same as first-wins when the conflicting copy arrives after the original was in
//! order (`conflict_in_order`); for two conflicting out-of-order copies the two can differ, and
//! such a stream would fail here rather than be excused. Streams in tunnels are compared
//! (nicsim-packet's `decode` reaches the inner segment of every tunnel tshark decodes by default);
//! one nicsim does not find but tshark does inside a tunnel is listed as not compared.
//! Skips with a message when tshark or the captures are absent (`make test-tools` installs them).

mod common;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use nicsim_flowmem::{Config, Direction, Reassembly};
use nicsim_packet::capture::{CaptureFormat, CaptureWriter};

const CAPTURE_ROOTS: &[&str] = &[
    "/usr/share/gocode/src/github.com/google/gopacket",
    "/usr/share/doc/python3-dpkt",
];

fn have_tshark() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn find_captures(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        if root.is_file() {
            out.push(root.to_path_buf());
        }
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            find_captures(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "pcap" || e == "pcapng")
        {
            out.push(path);
        }
    }
}

/// One `follow,tcp,raw` result: node 0's endpoint and the bytes of each direction.
struct Follow {
    node0: (IpAddr, u16),
    node1: (IpAddr, u16),
    bytes: [Vec<u8>; 2],
}

fn endpoint(s: &str) -> (IpAddr, u16) {
    let (addr, port) = s.trim().rsplit_once(':').unwrap();
    let addr = addr.trim_start_matches('[').trim_end_matches(']');
    (addr.parse().unwrap(), port.parse().unwrap())
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn tshark_streams(capture: &Path) -> Vec<u32> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(capture)
        .args(["-Y", "tcp", "-T", "fields", "-e", "tcp.stream"])
        .output()
        .unwrap();
    let mut streams: Vec<u32> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    streams.sort_unstable();
    streams.dedup();
    streams
}

fn tshark_follow(capture: &Path, stream: u32) -> Follow {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(capture)
        .args(["-q", "-z", &format!("follow,tcp,raw,{stream}")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut node0 = None;
    let mut node1 = None;
    let mut bytes = [Vec::new(), Vec::new()];
    let mut in_body = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Node 0:") {
            node0 = Some(endpoint(rest));
            continue;
        }
        if let Some(rest) = line.strip_prefix("Node 1:") {
            node1 = Some(endpoint(rest));
            in_body = true;
            continue;
        }
        if !in_body || line.starts_with("====") || line.is_empty() {
            continue;
        }
        match line.strip_prefix('\t') {
            Some(hex) => bytes[1].extend(unhex(hex.trim())),
            None => bytes[0].extend(unhex(line.trim())),
        }
    }
    Follow {
        node0: node0.expect("tshark follow output names node 0"),
        node1: node1.expect("tshark follow output names node 1"),
        bytes,
    }
}

/// The tunnel protocol carrying a stream, as tshark dissects it (L2TP, GRE, VXLAN, IP in IP).
fn tunnel(capture: &Path, stream: u32) -> Option<String> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(capture)
        .args([
            "-Y",
            &format!("tcp.stream == {stream}"),
            "-T",
            "fields",
            "-e",
            "frame.protocols",
        ])
        .output()
        .ok()?;
    let protocols = String::from_utf8_lossy(&out.stdout);
    let first = protocols.lines().next()?;
    ["l2tp", "gre", "vxlan", "gtp", "teredo"]
        .into_iter()
        .find(|t| first.split(':').any(|p| p == *t))
        .map(str::to_string)
        .or_else(|| (first.matches(":ip").count() > 1).then(|| "IP in IP".to_string()))
}

/// Our stream as tshark's follow would show it if it gave up after run `k` (0-based):
/// runs joined by tshark's missing-bytes marker.
fn render(out: &Reassembly, direction: &Direction, runs_shown: usize) -> Vec<u8> {
    let view = nicsim_flowmem::FlowView::new(&out.arena, direction);
    let mut bytes = Vec::new();
    let mut at = 0;
    for (i, (start, end)) in view.runs().into_iter().enumerate().take(runs_shown) {
        if i > 0 {
            bytes.extend(format!("[{} bytes missing in capture file]\0", start - at).bytes());
        }
        bytes.extend(view.read(start, (end - start) as usize).unwrap());
        at = end;
    }
    bytes
}

/// Compares one direction; `Ok(note)` when equal (possibly cut after an unacknowledged hole).
fn compare(out: &Reassembly, direction: &Direction, tshark: &[u8]) -> Result<String, String> {
    let runs = nicsim_flowmem::FlowView::new(&out.arena, direction).runs();
    // tshark starts a stream at the first data it can place; a leading hole (after a SYN) is
    // not shown as a marker.
    for shown in (0..=runs.len()).rev() {
        if render(out, direction, shown) == tshark {
            return Ok(match shown == runs.len() {
                true if runs.len() > 1 => format!("{} holes marked", runs.len() - 1),
                true => String::new(),
                false => format!(
                    "tshark withholds {} runs after an unacked hole",
                    runs.len() - shown
                ),
            });
        }
    }
    let ours = render(out, direction, runs.len());
    let first_diff = ours.iter().zip(tshark).position(|(a, b)| a != b);
    Err(format!(
        "ours {} bytes ({} holes, {} conflicting), tshark {} bytes, first difference at {:?}",
        ours.len(),
        direction.holes.len(),
        direction.bytes.conflict_bytes,
        tshark.len(),
        first_diff
    ))
}

/// Checks every tshark stream of `capture`; returns (directions equal, report lines, failures).
fn check_capture(capture: &Path) -> (usize, Vec<String>, Vec<String>) {
    let mut report = Vec::new();
    let mut failures = Vec::new();
    let out = match Reassembly::from_capture(capture, Config::default()) {
        Ok(out) => out,
        Err(e) => {
            report.push(format!("{}: not read by nicsim ({e})", capture.display()));
            if !tshark_streams(capture).is_empty() {
                failures.push(format!(
                    "{}: tshark reads TCP streams nicsim cannot: {e}",
                    capture.display()
                ));
            }
            return (0, report, failures);
        }
    };
    assert_eq!(out.counts.accounted(), out.counts.read);
    // The zero-copy path (the capture in memory is the arena) gives the same streams.
    let bytes = std::fs::read(capture).unwrap();
    let in_place = Reassembly::from_capture_bytes(std::sync::Arc::new(bytes), Config::default())
        .expect("the in-memory reader accepts what the streaming one does");
    assert_same_flows(&out, &in_place);
    let mut by_tuple: BTreeMap<(IpAddr, u16, IpAddr, u16), (usize, usize)> = BTreeMap::new();
    for (i, flow) in out.flows.iter().enumerate() {
        for (d, dir) in flow.dirs.iter().enumerate() {
            by_tuple.insert((dir.src, dir.sport, dir.dst, dir.dport), (i, d));
        }
    }
    let mut equal = 0;
    for stream in tshark_streams(capture) {
        let follow = tshark_follow(capture, stream);
        for (node, tshark_bytes) in follow.bytes.iter().enumerate() {
            let (src, dst) = match node {
                0 => (follow.node0, follow.node1),
                _ => (follow.node1, follow.node0),
            };
            let name = format!(
                "{} stream {stream} {}:{} -> {}:{}",
                capture.display(),
                src.0,
                src.1,
                dst.0,
                dst.1
            );
            let Some(&(f, d)) = by_tuple.get(&(src.0, src.1, dst.0, dst.1)) else {
                match tunnel(capture, stream) {
                    Some(how) => report.push(format!(
                        "{name}: not compared, tunneled in {how} (docs/flowmem.md, Tunnels)"
                    )),
                    None => failures.push(format!("{name}: no such flow in nicsim")),
                }
                continue;
            };
            match compare(&out, &out.flows[f].dirs[d], tshark_bytes) {
                Ok(note) => {
                    equal += 1;
                    report.push(format!("{name}: {} bytes equal {note}", tshark_bytes.len()));
                }
                Err(why) => failures.push(format!("{name}: {why}")),
            }
        }
    }
    (equal, report, failures)
}

/// Adversarial captures: written with the packet library, read back by nicsim and tshark.
fn write_adversarial(dir: &Path) -> Vec<PathBuf> {
    let c = Conn::v4();
    let v6 = Conn::v6();
    let isn = u32::MAX - 20;
    let payload: Vec<u8> = (0..200).map(|i| b'a' + (i % 26) as u8).collect();
    let seg = |conn: &Conn, at: usize, len: usize| {
        conn.frame(
            0,
            isn.wrapping_add(1 + at as u32),
            ACK,
            &payload[at..at + len],
        )
    };
    let cases: Vec<(&str, Vec<Vec<u8>>)> = vec![
        (
            "ooo_retrans_wrap",
            vec![
                c.frame(0, isn, SYN, b""),
                c.frame(1, 7, SYN | ACK, b""),
                seg(&c, 0, 30),
                seg(&c, 60, 40),
                seg(&c, 30, 30),
                seg(&c, 30, 30),
                seg(&c, 20, 50), // overlapping identical retransmission
                seg(&c, 100, 100),
                c.frame(0, isn.wrapping_add(201), FIN | ACK, b""),
            ],
        ),
        (
            "no_syn_v6",
            vec![
                seg(&v6, 10, 20),
                seg(&v6, 30, 20),
                v6.frame(1, 99, ACK, b"pong"),
                seg(&v6, 50, 5),
            ],
        ),
        (
            // The receiver ACKs past a hole: tshark marks it and goes on.
            "acked_hole",
            vec![
                c.frame(0, isn, SYN, b""),
                c.frame(1, 7, SYN | ACK, b""),
                seg(&c, 0, 10),
                seg(&c, 20, 10),
                seg(&c, 40, 10),
                c.frame_ack(1, 8, isn.wrapping_add(51), ACK, b""),
            ],
        ),
        (
            // A conflicting retransmission of bytes already in order: both keep the first.
            "conflict_in_order",
            vec![
                c.frame(0, isn, SYN, b""),
                seg(&c, 0, 30),
                c.frame(0, isn.wrapping_add(11), ACK, b"XXXXXXXXXX"),
                seg(&c, 30, 10),
            ],
        ),
        (
            // A hole that is never acknowledged: tshark withholds what follows it.
            "unacked_hole",
            vec![
                c.frame(0, isn, SYN, b""),
                seg(&c, 0, 10),
                seg(&c, 20, 10),
                seg(&c, 30, 10),
            ],
        ),
    ];
    cases
        .into_iter()
        .map(|(name, frames)| {
            let path = dir.join(format!("{name}.pcapng"));
            let mut w = CaptureWriter::create(&path, CaptureFormat::PcapNg, 65535).unwrap();
            for (i, f) in frames.iter().enumerate() {
                w.write(1_000_000_000 + i as u64 * 1000, f).unwrap();
            }
            w.finish().unwrap();
            path
        })
        .collect()
}

#[test]
fn reassembled_bytes_equal_tshark_follow() {
    if !have_tshark() {
        eprintln!("SKIP reassembled_bytes_equal_tshark_follow: tshark is not installed (make test-tools installs it)");
        return;
    }
    let mut captures = Vec::new();
    for root in CAPTURE_ROOTS {
        find_captures(Path::new(root), &mut captures);
    }
    let real = captures.len();
    if let Ok(extra) = std::env::var("NICSIM_FLOW_CAPTURES") {
        for root in extra.split(':').filter(|s| !s.is_empty()) {
            find_captures(Path::new(root), &mut captures);
        }
    }
    let tmp = std::env::temp_dir().join(format!("nicsim-flowmem-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    captures.extend(write_adversarial(&tmp));
    if real == 0 {
        eprintln!(
            "SKIP (real captures): none under {CAPTURE_ROOTS:?}; install golang-github-google-gopacket-dev \
             and python3-dpkt (make test-tools). Checking the adversarial captures only."
        );
    }
    // The captures are checked on every core (most of the time is tshark's own start-up), and
    // reported in their order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(capture) = captures.get(i) else {
                    break;
                };
                let r = check_capture(capture);
                results.lock().unwrap().push((i, r));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let mut equal = 0;
    let mut failures = Vec::new();
    for (_, (n, report, fail)) in results {
        equal += n;
        for line in report {
            eprintln!("{line}");
        }
        failures.extend(fail);
    }
    std::fs::remove_dir_all(&tmp).ok();
    eprintln!(
        "{equal} directions equal to tshark across {} captures",
        captures.len()
    );
    assert!(
        failures.is_empty(),
        "differences from tshark:\n{}",
        failures.join("\n")
    );
    assert!(equal > 0, "no TCP stream was compared");
}
