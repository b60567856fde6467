//! The flow-memory speed benchmark from the command line (what `make bench` runs through
//! Python): zero-copy reassembly of a capture held in memory plus a linear scan, beside the
//! copy-based baseline; prints the figures as JSON. With `--synth FLOWS`, first writes a
//! synthetic capture (default settings, seed 1) to CAPTURE.
//!   cargo run --release -p nicsim-flowmem --example flowmem_speed -- CAPTURE [REPEAT] [--synth FLOWS]

use std::path::PathBuf;
use std::sync::Arc;

use nicsim_flowmem::bench::speed_bench;
use nicsim_flowmem::synth::{synthesize, SynthConfig};
use nicsim_flowmem::Config;
use nicsim_packet::capture::CaptureFormat;

fn fail(message: String) -> ! {
    eprintln!("flowmem_speed: {message}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first().map(PathBuf::from) else {
        fail("usage: flowmem_speed CAPTURE [REPEAT] [--synth FLOWS]".into());
    };
    let repeat: u32 = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(3);
    if let Some(i) = args.iter().position(|a| a == "--synth") {
        let flows: u64 = args
            .get(i + 1)
            .and_then(|f| f.parse().ok())
            .unwrap_or_else(|| fail("--synth needs a flow count".into()));
        let config = SynthConfig {
            flows,
            ..SynthConfig::default()
        };
        let report = synthesize(&config, &path, CaptureFormat::Pcap, &mut |_| {})
            .unwrap_or_else(|e| fail(e.to_string()));
        eprintln!("wrote {}: {report:?}", path.display());
    }
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| fail(format!("cannot read {}: {e}", path.display())));
    let out = speed_bench(Arc::new(bytes), Config::default(), repeat)
        .unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
    println!("{out:#?}");
}
