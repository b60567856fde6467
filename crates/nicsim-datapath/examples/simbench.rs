//! Times the FlexPipe paper experiment and a long run:
//! `cargo run --release --example simbench -- [packets] [arch] [timing|functional] [rate_gbps] [eval|full]`.
use nicsim_datapath::{Config, Datapath, Validate};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let packets: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(11000);
    let arch = args.get(2).cloned().unwrap_or_else(|| "flexpipe".into());
    let functional = args.get(3).is_some_and(|s| s == "functional");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/flexpipe_paper.toml"
    ))
    .unwrap();
    let text = text.replace("arch = \"flexpipe\"", &format!("arch = \"{arch}\""));
    let mut cfg = Config::from_toml(&text).unwrap();
    cfg.traffic.packets = packets;
    // Measure every packet but the first and last 500, as `benches/run.py` does (for the
    // paper's 11,000 that is the paper's window).
    cfg.measure.window = [500, packets.saturating_sub(500)];
    cfg.functional = functional;
    if args.get(5).is_some_and(|s| s == "full") {
        cfg.panic.variant = nicsim_datapath::config::PanicVariant::Full;
    }
    if let Some(r) = args.get(4).and_then(|s| s.parse().ok()) {
        cfg.traffic.rate_gbps = r;
    }
    let t = std::time::Instant::now();
    let mut d = Datapath::new(cfg).unwrap();
    if std::env::var_os("NICSIM_PORT_STEPS").is_some() {
        d.engine.count_port_steps();
    }
    d.run(None);
    let dt = t.elapsed().as_secs_f64();
    let s = d.summary();
    if std::env::var_os("NICSIM_PORT_STEPS").is_some() {
        eprintln!("steps per port: {:?}", d.engine.port_steps);
    }
    println!(
        "{{\"arch\": \"{arch}\", \"packets\": {packets}, \"functional\": {functional}, \"seconds\": {dt:.4}, \"packets_per_second\": {:.0}, \"throughput_gbps\": {:.2}, \"instants\": {}, \"engine\": {}, \"latency_mean_us\": {:.3}, \"dropped\": {}}}",
        packets as f64 / dt, s["throughput_gbps"].as_f64().unwrap(), s["engine"]["instants"], s["engine"], s["latency_us"]["mean"].as_f64().unwrap_or(0.0), s["packets"]["dropped"]
    );
}
