use nicsim_datapath::{Config, Datapath};

fn paper(arch: &str, rate: f64) -> Config {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/flexpipe_paper.toml")).unwrap();
    let mut cfg = Config::from_toml(&text).unwrap();
    cfg.arch = match arch { "flexpipe" => nicsim_datapath::config::Arch::Flexpipe, "staticpipe" => nicsim_datapath::config::Arch::Staticpipe, _ => nicsim_datapath::config::Arch::Panic };
    cfg.traffic.rate_gbps = rate;
    cfg
}

#[test]
#[ignore]
fn explore() {
    for arch in ["flexpipe", "staticpipe", "panic"] {
        for rate in [64.0, 90.0, 96.0, 128.0] {
            let t = std::time::Instant::now();
            let mut d = Datapath::new(paper(arch, rate)).unwrap();
            d.run(None);
            let s = d.summary();
            let fl: Vec<String> = ["flow1","flow2","flow3","flow4"].iter().map(|f| format!("{:.3}", s["per_flow"][f]["latency_us"]["mean"].as_f64().unwrap_or(0.0))).collect();
            println!("{arch} {rate}: thr {:.2} lat {:.3} flows {:?} drops {} inflight {} instants {} {:?}", s["throughput_gbps"], s["latency_us"]["mean"], fl, s["packets"]["dropped"], s["packets"]["in_flight"], s["engine"]["instants"], t.elapsed());
        }
    }
}
