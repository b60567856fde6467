//! Runs one router configuration and prints its summary as JSON:
//! `cargo run --release -p nicsim-router --example router_run -- CONFIG.toml [duration_us]`.
//! Prints the wall-clock speed (simulated packets per second) on stderr.
use nicsim_router::{Config, Router, Validate};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: router_run CONFIG.toml [duration_us]");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let mut cfg = match Config::from_toml(&text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    if let Some(d) = args.get(2).and_then(|s| s.parse().ok()) {
        cfg.run.duration_us = d;
    }
    let t = std::time::Instant::now();
    let mut r = Router::new(cfg).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2);
    });
    r.run(None);
    let dt = t.elapsed().as_secs_f64();
    let s = r.summary();
    let pk = s["packets"]["offered"].as_u64().unwrap_or(0);
    eprintln!(
        "{pk} packets in {dt:.3} s: {:.0} simulated packets/s",
        pk as f64 / dt
    );
    println!("{}", serde_json::to_string_pretty(&s).expect("json"));
}
