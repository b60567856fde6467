//! Zero-copy views against the copy-based baseline on a capture: for each workload (byte
//! histogram, memchr literal count, DFA regex search) over every flow direction, the bytes
//! copied, the bytes read, the time and the throughput per core, and a check that both designs
//! give the same results.
//!   cargo run --release -p nicsim-flowmem --example flowmem_measure -- CAPTURE [REPEATS]

use std::path::PathBuf;
use std::time::Instant;

use nicsim_flowmem::baseline::Contiguous;
use nicsim_flowmem::{Config, Reassembly, StreamRegex};

const LITERAL: &[u8] = b"HTTP/1.1";
const PATTERN: &str = r"GET /[a-z]+/[0-9]{4,}[0-9] HTTP/1\.[01]\r\nHost: [a-z.]+";

struct Tally {
    copied_bytes: u64,
    read_bytes: u64,
    seconds: f64,
    result: u64,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next().map(PathBuf::from) else {
        eprintln!("usage: flowmem_measure CAPTURE [REPEATS]");
        std::process::exit(2);
    };
    let repeats: u32 = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let t0 = Instant::now();
    let out = match Reassembly::from_capture(&path, Config::default()) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("flowmem_measure: {}: {e}", path.display());
            std::process::exit(2);
        }
    };
    let reassembly_s = t0.elapsed().as_secs_f64();
    let stream_bytes: u64 = out
        .flows
        .iter()
        .flat_map(|f| f.dirs.iter())
        .map(|d| d.len_bytes)
        .sum();
    println!(
        "{}: {} packets, {} flows, {} stream bytes, arena {} bytes, reassembly {:.3} s",
        path.display(),
        out.counts.read,
        out.flows.len(),
        stream_bytes,
        out.arena.used_bytes(),
        reassembly_s
    );
    let regex = StreamRegex::new(PATTERN).unwrap();
    println!(
        "{:<10} {:<9} {:>14} {:>14} {:>10} {:>10} {:>10}",
        "workload", "design", "copied_bytes", "read_bytes", "ms", "Gbit/s", "result"
    );
    for workload in ["histogram", "literal", "regex"] {
        let mut results = Vec::new();
        for design in ["flow", "copy"] {
            let mut best: Option<Tally> = None;
            for _ in 0..repeats {
                let tally = run(&out, workload, design, &regex);
                if best.as_ref().is_none_or(|b| tally.seconds < b.seconds) {
                    best = Some(tally);
                }
            }
            let t = best.unwrap();
            println!(
                "{:<10} {:<9} {:>14} {:>14} {:>10.3} {:>10.2} {:>10}",
                workload,
                design,
                t.copied_bytes,
                t.read_bytes,
                t.seconds * 1e3,
                stream_bytes as f64 * 8.0 / t.seconds / 1e9,
                t.result
            );
            results.push(t.result);
        }
        assert_eq!(results[0], results[1], "{workload}: designs disagree");
    }
}

fn run(out: &Reassembly, workload: &str, design: &str, regex: &StreamRegex) -> Tally {
    let mut tally = Tally {
        copied_bytes: 0,
        read_bytes: 0,
        seconds: 0.0,
        result: 0,
    };
    let start = Instant::now();
    for f in 0..out.flows.len() {
        for d in 0..2 {
            let view = out.view(f, d).unwrap();
            if design == "flow" {
                tally.result += match workload {
                    "histogram" => {
                        view.byte_histogram().iter().map(|&n| n * n).sum::<u64>() % 1_000_003
                    }
                    "literal" => view.count_literal(LITERAL),
                    _ => view.regex_matches(regex).unwrap().len() as u64,
                };
                tally.read_bytes += view.read_bytes();
            } else {
                let mut c = Contiguous::assemble(&view);
                tally.result += match workload {
                    "histogram" => {
                        c.byte_histogram().iter().map(|&n| n * n).sum::<u64>() % 1_000_003
                    }
                    "literal" => c.count_literal(LITERAL),
                    _ => c.regex_matches(regex).len() as u64,
                };
                tally.copied_bytes += c.copied_bytes;
                tally.read_bytes += c.read_bytes;
            }
        }
    }
    tally.seconds = start.elapsed().as_secs_f64();
    tally
}
