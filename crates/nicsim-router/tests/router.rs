//! Behavioural tests of the router: Ethernet wire timing, the slow path's CPU bottleneck, the
//! paper's fast-path set-ups B–F and QoS runs (each number measured by a simulation, never
//! written into the test), the REQ/RES/burst protocol's invariants under random traffic,
//! stepped and skipping runs agreeing, determinism, and configuration errors.

use nicsim_router::{Config, Router, Validate};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

fn config(name: &str) -> Config {
    let path = format!(
        "{}/../../configs/router/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    Config::from_toml(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn run(cfg: Config) -> Value {
    let mut r = Router::new(cfg).expect("valid config");
    assert!(r.run(None), "run did not finish");
    r.summary()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn fwd_mbps(s: &Value, port: &str) -> f64 {
    f(&s["ports"][port]["forwarded"]["mbps"])
}

fn total_fwd_mbps(s: &Value) -> f64 {
    s["ports"]
        .as_object()
        .unwrap()
        .values()
        .map(|p| f(&p["forwarded"]["mbps"]))
        .sum()
}

/// Every packet is accounted for, nothing is left in flight, and the protocol's counters that
/// must stay zero are zero.
fn check_invariants(s: &Value, what: &str) {
    let p = &s["packets"];
    assert_eq!(p["conserved"], true, "{what}: {p}");
    assert_eq!(p["in_flight"], 0, "{what}: stuck packets {p}");
    let b = &s["bytes"];
    assert_eq!(
        b["offered"].as_u64().unwrap(),
        b["delivered"].as_u64().unwrap() + b["dropped"].as_u64().unwrap(),
        "{what}: bytes {b}"
    );
    let pr = &s["protocol"];
    for k in [
        "grant_violations",
        "ungranted_delivered",
        "output_overflows",
        "duplicate_res",
    ] {
        assert_eq!(pr[k], 0, "{what}: {k} in {pr}");
    }
    for (name, fifo) in s["fifos"].as_object().unwrap() {
        assert!(
            fifo["max"].as_u64() <= fifo["capacity"].as_u64(),
            "{what}: {name} {fifo}"
        );
    }
}

#[test]
fn wire_timing_gives_1488_kpps_at_64_bytes() {
    // Set-up B carries one tester port at line rate: 10^9 / (84 · 8) = 1,488,095 frames/s.
    let s = run(config("setup_b"));
    let kpps = f(&s["ports"]["nic1"]["forwarded"]["kpps"]);
    assert!((kpps - 1488.095).abs() < 1.0, "{kpps}");
    let offered = f(&s["ports"]["nic0"]["offered"]["kpps"]);
    assert!((offered - 1488.095).abs() < 1.0, "{offered}");
    // Frame bits only: 64/84 of the wire bits.
    let frame = f(&s["ports"]["nic1"]["forwarded"]["mbps_frame"]);
    assert!((frame - 1000.0 * 64.0 / 84.0).abs() < 1.0, "{frame}");
    // Maximum-size frames: 10^9 / (1538 · 8) = 81,274 frames/s.
    let mut cfg = config("setup_b");
    cfg.traffic[0].frame_bytes = 1518;
    cfg.run.duration_us = 20_000.0;
    let s = run(cfg);
    let kpps = f(&s["ports"]["nic1"]["forwarded"]["kpps"]);
    assert!((kpps - 81.274).abs() < 0.1, "{kpps}");
}

#[test]
fn slow_path_saturates_at_the_cpu_near_600_kpps_400_mbps() {
    let s = run(config("setup_a"));
    check_invariants(&s, "A");
    let kpps = f(&s["ports"]["nic1"]["forwarded"]["kpps"]);
    let mbps = fwd_mbps(&s, "nic1");
    assert!((kpps - 600.0).abs() < 0.1 * 600.0, "{kpps} kpkt/s");
    assert!((mbps - 400.0).abs() < 0.1 * 400.0, "{mbps} Mbit/s");
    // The CPU is the bottleneck, not the bus, and the overflow is dropped at the input NIC.
    assert!(f(&s["cpu"]["utilisation"]) > 0.95, "{}", s["cpu"]);
    assert!(f(&s["bus"]["utilisation"]) < 0.9, "{}", s["bus"]);
    let places: Vec<&String> = s["drops_by_place"].as_object().unwrap().keys().collect();
    assert_eq!(places, vec!["nic0.input"]);
    // Below the bottleneck nothing is lost.
    let mut cfg = config("setup_a");
    cfg.traffic[0].rate_mbps = 300.0;
    let s = run(cfg);
    assert_eq!(s["packets"]["dropped"], 0, "{}", s["packets"]);
    // Each slow-path packet crosses the bus twice: upload and download cycles both there.
    let ch = &s["bus"]["cycles_by_channel"];
    assert!(ch["slow_upload"].as_u64() > Some(0) && ch["slow_download"].as_u64() > Some(0));
}

#[test]
fn fast_path_b_c_f_forward_1_2_3_gbps_without_loss() {
    for (name, gbps) in [("setup_b", 1.0), ("setup_c", 2.0), ("setup_f", 3.0)] {
        let s = run(config(name));
        check_invariants(&s, name);
        assert_eq!(s["packets"]["dropped"], 0, "{name}: {}", s["drops"]);
        let total = total_fwd_mbps(&s);
        assert!(
            (total - 1000.0 * gbps).abs() < 0.02 * 1000.0 * gbps,
            "{name}: {total} Mbit/s"
        );
        // The fast path never touches the CPU or RAM.
        assert_eq!(f(&s["cpu"]["utilisation"]), 0.0, "{name}");
    }
}

#[test]
fn setup_d_shares_the_output_half_and_half_and_drops_only_at_inputs() {
    let s = run(config("setup_d"));
    check_invariants(&s, "D");
    let from = &s["ports"]["nic2"]["forwarded_from"];
    let (a, b) = (f(&from["nic0"]["mbps"]), f(&from["nic1"]["mbps"]));
    let share = a / (a + b);
    assert!((share - 0.5).abs() < 0.02, "{a} {b}");
    assert!(
        (a + b - 1000.0).abs() < 20.0,
        "output at line rate: {}",
        a + b
    );
    assert!(s["packets"]["dropped"].as_u64() > Some(0));
    for place in s["drops_by_place"].as_object().unwrap().keys() {
        assert!(place.ends_with(".input"), "drop at {place}");
    }
    assert_eq!(
        s["bus"]["wasted_bytes"], 0,
        "bus bandwidth spent on dropped packets"
    );
}

#[test]
fn setup_e_splits_one_flow_1_to_1() {
    let s = run(config("setup_e"));
    check_invariants(&s, "E");
    assert_eq!(s["packets"]["dropped"], 0);
    let (a, b) = (fwd_mbps(&s, "nic1"), fwd_mbps(&s, "nic2"));
    assert!((a / (a + b) - 0.5).abs() < 0.02, "{a} {b}");
    assert!((a + b - 1000.0).abs() < 20.0, "{}", a + b);
}

#[test]
fn interleaved_streams_split_exactly_and_f_stays_lossless() {
    let s = run(config("setup_e"));
    let (a, b) = (fwd_mbps(&s, "nic1"), fwd_mbps(&s, "nic2"));
    assert!((a / (a + b) - 0.5).abs() < 0.001, "{a} {b}");
    // Each output of F at exactly line rate: with the flows interleaved, no queue walks off.
    let mut cfg = config("setup_f");
    cfg.run.duration_us = 100_000.0;
    let s = run(cfg);
    check_invariants(&s, "F, 100 ms");
    assert_eq!(s["packets"]["dropped"], 0, "{}", s["drops"]);
}

/// A REQ asks only for packets stored in the input FIFOs, and a RES waits for room for the
/// head-of-line frame: with 1518-byte (and 9018-byte) frames no burst goes out empty (before,
/// B sent 1148 empty bursts of 1230 and D spun the bus at 98 % on them).
#[test]
fn large_frames_send_no_empty_bursts() {
    for name in ["setup_b", "setup_d", "setup_f"] {
        let mut cfg = config(name);
        for t in &mut cfg.traffic {
            t.frame_bytes = 1518;
        }
        let s = run(cfg);
        check_invariants(&s, name);
        assert_eq!(
            s["protocol"]["empty_bursts"], 0,
            "{name}: {}",
            s["protocol"]
        );
        // One Gbit/s of 1518-byte frames needs a quarter of the 66-MHz bus.
        if name != "setup_f" {
            assert!(f(&s["bus"]["utilisation"]) < 0.35, "{name}: {}", s["bus"]);
        }
    }
    // Jumbo frames: the RES waits for room for the largest frame the traffic sends.
    let mut cfg = config("setup_d");
    cfg.nic.mac_rx_fifo_bytes = 16384;
    for t in &mut cfg.traffic {
        t.frame_bytes = 9018;
    }
    let s = run(cfg);
    check_invariants(&s, "D, 9018 B");
    assert_eq!(
        s["protocol"]["empty_bursts"], 0,
        "D, 9018 B: {}",
        s["protocol"]
    );
}

/// A slow-path frame crosses the bus in transactions of at most `max_burst_bytes`: at 1518
/// bytes and 512-byte transactions, 3 data pieces each way plus a descriptor read (download)
/// and write-back (upload) make 8 transactions per packet.
#[test]
fn slow_path_transfers_are_cut_at_the_transaction_limit() {
    let mut cfg = config("setup_a");
    cfg.pc.bus.max_burst_bytes = 512;
    cfg.traffic[0].rate_mbps = 100.0;
    cfg.traffic[0].frame_bytes = 1518;
    for fl in &mut cfg.traffic[0].flows {
        fl.frame_bytes = None;
    }
    let s = run(cfg);
    check_invariants(&s, "A, 1518 B");
    assert_eq!(s["packets"]["dropped"], 0);
    let delivered = s["packets"]["delivered"].as_u64().unwrap();
    assert!(delivered > 0);
    assert_eq!(s["bus"]["transactions"].as_u64().unwrap(), 8 * delivered);
}

#[test]
fn qos_fig5_slow_path_classification() {
    // Off: the classes lose alike. On: high priority (below the bottleneck) loses nothing.
    let off = run(config("qos_fig5_off"));
    check_invariants(&off, "fig5 off");
    let (h, l) = (
        f(&off["classes"]["high"]["loss"]),
        f(&off["classes"]["low"]["loss"]),
    );
    assert!(h > 0.3 && (h - l).abs() < 0.03, "{h} {l}");
    let on = run(config("qos_fig5_on"));
    check_invariants(&on, "fig5 on");
    assert_eq!(on["classes"]["high"]["dropped"], 0, "{}", on["classes"]);
    assert!(f(&on["classes"]["low"]["loss"]) > 0.5, "{}", on["classes"]);
    // The CPU still forwards ~600 kpkt/s.
    let kpps = f(&on["ports"]["nic1"]["forwarded"]["kpps"]);
    assert!((kpps - 600.0).abs() < 60.0, "{kpps}");
}

#[test]
fn qos_fig6_fast_path_protects_high_priority() {
    let s = run(config("qos_fig6"));
    check_invariants(&s, "fig6");
    assert_eq!(s["classes"]["high"]["dropped"], 0, "{}", s["classes"]);
    assert!(s["classes"]["low"]["dropped"].as_u64() > Some(0));
    for place in s["drops_by_place"].as_object().unwrap().keys() {
        assert!(place.ends_with(".input"), "drop at {place}");
    }
    // High-priority rate above the output link: then high priority loses too.
    let mut cfg = config("qos_fig6");
    for t in &mut cfg.traffic {
        t.flows[1].weight = 9.0; // 90 % high: 1.8 Gbit/s of high priority into 1 Gbit/s
    }
    let s = run(cfg);
    assert!(s["classes"]["high"]["dropped"].as_u64() > Some(0));
}

/// A random router: 2 to 5 NICs (some without a fast path), random routes and classes, random
/// traffic (rates, Poisson or constant, frame sizes, ToS, TTL), bus and FIFO sizes.
fn random_config(seed: u64) -> (String, usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = rng.gen_range(2..=5usize);
    let clock = [33, 66, 100, 133][rng.gen_range(0..4)];
    let max_burst = [64, 256, 512, 4096][rng.gen_range(0..4)];
    let out_fifo = rng.gen_range(1600..=16000);
    let in_fifo = rng.gen_range(1600..=16000);
    let fast: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.8)).collect();
    let mut t = format!(
        "seed = {seed}\nmode = \"skip\"\n[run]\nduration_us = {}\nwarmup_us = 50.0\n\
         [pc.bus]\nclock_mhz = {clock}\nmax_burst_bytes = {max_burst}\n\
         [pc.cpu]\nforward_cycles = {}\n[pc.driver]\nrx_ring_slots = {}\ntx_ring_slots = {}\n\
         [nic]\noutput_fifo_bytes = {out_fifo}\ninput_fifo_bytes = {in_fifo}\nres_min_free_bytes = {}\n",
        rng.gen_range(300..=3000),
        rng.gen_range(500..=6000),
        rng.gen_range(4..=64),
        rng.gen_range(4..=64),
        [0, 64, 1518][rng.gen_range(0..3)],
    );
    for i in 0..n {
        t += &format!(
            "[[nics]]\nname = \"n{i}\"\nsubnet = \"10.0.{i}.0/24\"\nfast_path = {}\nclassify = {}\n",
            fast[i],
            rng.gen_bool(0.7)
        );
        if fast[i] {
            for j in (0..n).filter(|&j| j != i && fast[j]) {
                if rng.gen_bool(0.85) {
                    t += &format!("[[nics.routes]]\ndst = \"10.0.{j}.0/24\"\nto = \"n{j}\"\n");
                }
            }
        }
        t += "[[nics.classes]]\nto = \"*\"\ntos = \"0xb8/0xfc\"\n";
    }
    for i in 0..n {
        if !rng.gen_bool(0.8) {
            continue;
        }
        let arrivals = if rng.gen_bool(0.5) {
            "poisson"
        } else {
            "constant"
        };
        t += &format!(
            "[[traffic]]\nport = \"n{i}\"\nrate_mbps = {}\narrivals = \"{arrivals}\"\nframe_bytes = {}\nmix = \"{}\"\n",
            rng.gen_range(50.0..=1000.0),
            rng.gen_range(64..=1518),
            ["interleaved", "random"][rng.gen_range(0..2)],
        );
        for _ in 0..rng.gen_range(1..=4) {
            let j = (i + rng.gen_range(1..n)) % n;
            t += &format!(
                "[[traffic.flows]]\ndst = \"10.0.{j}.{}\"\nweight = {}\ntos = {}\nttl = {}\nframe_bytes = {}\n",
                rng.gen_range(1..=254),
                rng.gen_range(0.1..=3.0),
                if rng.gen_bool(0.3) { 0xb8 } else { 0 },
                if rng.gen_bool(0.05) { 1 } else { 64 },
                [64, 128, 512, 1500, 1518][rng.gen_range(0..5)],
            );
        }
    }
    if !t.contains("[[traffic]]") {
        t += "[[traffic]]\nport = \"n0\"\nrate_mbps = 900\n[[traffic.flows]]\ndst = \"10.0.1.1\"\n";
    }
    (t, n)
}

#[test]
fn protocol_invariants_hold_under_random_traffic() {
    let mut fast_packets = 0;
    for seed in 0..200 {
        let (text, n) = random_config(seed);
        let cfg = Config::from_toml(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let s = run(cfg);
        check_invariants(&s, &format!("seed {seed}"));
        // Round robin: while a peer waits, each scheduler serves every other peer at most
        // once (n NICs: n − 2 others besides the waiting one and the scheduler's own NIC).
        let pr = &s["protocol"];
        let bound = (n as u64).saturating_sub(2);
        for k in ["max_req_waits", "max_res_waits", "max_burst_waits"] {
            assert!(
                pr[k].as_u64().unwrap() <= bound,
                "seed {seed}: {k} {pr} (n = {n})"
            );
        }
        fast_packets += pr["burst_packets"].as_u64().unwrap();
    }
    assert!(
        fast_packets > 2_000,
        "the random runs exercise the fast path: {fast_packets}"
    );
}

#[test]
fn stepped_and_skipping_runs_are_identical() {
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("engine");
        v
    };
    for seed in [1, 3, 5, 7, 11, 13, 17, 19] {
        let (text, _) = random_config(seed);
        let mut cfg = Config::from_toml(&text).unwrap();
        cfg.run.duration_us = 150.0;
        cfg.run.warmup_us = 10.0;
        let skip = run(cfg.clone());
        cfg.mode = nicsim_router::config::Mode::Stepped;
        let stepped = run(cfg);
        assert!(stepped["engine"]["steps"].as_u64() > skip["engine"]["steps"].as_u64());
        let (a, b) = (strip(skip).to_string(), strip(stepped).to_string());
        if a != b {
            let i = a
                .bytes()
                .zip(b.bytes())
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            let lo = i.saturating_sub(200);
            panic!(
                "seed {seed}: differ at\n{}\n{}",
                &a[lo..(i + 100).min(a.len())],
                &b[lo..(i + 100).min(b.len())]
            );
        }
    }
}

#[test]
fn same_seed_same_results() {
    let mut cfg = config("setup_f");
    cfg.run.duration_us = 500.0;
    cfg.run.warmup_us = 100.0;
    for t in &mut cfg.traffic {
        t.arrivals = nicsim_router::config::Arrivals::Poisson;
    }
    let a = run(cfg.clone()).to_string();
    assert_eq!(a, run(cfg.clone()).to_string());
    cfg.seed += 1;
    assert_ne!(a, run(cfg).to_string());
}

#[test]
fn bad_configs_name_the_key() {
    let good = std::fs::read_to_string(format!(
        "{}/../../configs/router/setup_d.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let cases: Vec<(String, &str)> = vec![
        (
            good.replace("clock_mhz = 66", "clock_mhz = 0"),
            "pc.bus.clock_mhz",
        ),
        (
            good.replace("to = \"nic2\"", "to = \"nic9\""),
            "nics[0].routes[1].to",
        ),
        (
            good.replace("dst = \"10.0.1.0/24\"", "dst = \"10.0.1.0/40\""),
            "nics[0].routes[0].dst",
        ),
        (
            good.replace("rate_mbps = 1000", "rate_mbps = 1200"),
            "traffic[0].rate_mbps",
        ),
        (
            good.replace("dst = \"10.0.2.2\"", "dst = \"ten\""),
            "traffic[1].flows[0].dst",
        ),
        (
            good.replace("subnet = \"10.0.1.0/24\"", "subnet = \"10.0.0.0/16\""),
            "nics[1].subnet",
        ),
        (
            good.replace("fast_path = true", "fast_path = \"yes\""),
            "nics[0].fast_path",
        ),
        (good.replace("[run]", "[run]\nspeed = 3"), "run"),
        (
            good.replace("frame_bytes = 64", "frame_bytes = 20"),
            "traffic[0].frame_bytes",
        ),
        (
            format!("{good}\n[nic]\noutput_fifo_bytes = 32\n"),
            "nic.output_fifo_bytes",
        ),
        (
            good.replace("port = \"nic1\"", "port = \"nic0\""),
            "traffic[1].port",
        ),
    ];
    for (text, key) in cases {
        let e = Config::from_toml(&text).expect_err(key);
        assert!(
            e.path.starts_with(key),
            "expected {key}, got '{}': {}",
            e.path,
            e.msg
        );
        assert!(!e.to_string().contains('\n'), "one line: {e}");
        assert!(!e.msg.contains("  "), "no runs of spaces: {e}");
    }
}

#[test]
fn every_shipped_config_validates_and_builds() {
    let dir = format!("{}/../../configs/router", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let r = Router::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Time has room for the run and far beyond it.
        let horizon = r.tb.ticks_per_us() as u128 * (4 * r.cfg.run.duration_us as u128 + 1_000_000);
        assert!(horizon <= u64::MAX as u128, "{}", path.display());
        n += 1;
    }
    assert!(n >= 9, "only {n} configs in {dir}");
}

/// Values that used to panic, deadlock, wrap or run short are refused at their key.
#[test]
fn bad_configs_name_the_key_ranges_names_time() {
    let good = std::fs::read_to_string(format!(
        "{}/../../configs/router/setup_d.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    Config::from_toml(&good).unwrap();
    let cases: Vec<(String, &str)> = vec![
        // Each weight finite, their sum infinite (rand's Uniform::new panicked).
        (
            format!(
                "{}[[traffic.flows]]\ndst = \"10.0.2.3\"\nweight = 1e308\n",
                good.replace("weight = 1.0", "weight = 1e308")
            ),
            "traffic[1].flows",
        ),
        // More than the fast-path output FIFO holds: no RES, ever.
        (
            format!("{good}\n[nic]\nres_min_free_bytes = 15361\n"),
            "nic.res_min_free_bytes",
        ),
        (
            format!("{good}\n[nic]\noutput_fifo_bytes = 4000\nres_min_free_bytes = 4001\n"),
            "nic.res_min_free_bytes",
        ),
        (
            format!("{good}\n[nic]\nlength_header_bytes = 4294967295\n"),
            "nic.length_header_bytes",
        ),
        (
            format!("{good}\n[nic]\nburst_header_bytes = 4097\n"),
            "nic.burst_header_bytes",
        ),
        (
            format!("{good}\n[pc.driver]\ndescriptor_bytes = 0\n"),
            "pc.driver.descriptor_bytes",
        ),
        (
            format!("{good}\n[pc.driver]\ndescriptor_bytes = 4294967295\n"),
            "pc.driver.descriptor_bytes",
        ),
        (
            format!("{good}\n[nic]\ndatapath_bits = 63\n"),
            "nic.datapath_bits",
        ),
        // lcm = 9973·997·991·983·977 ≈ 9.5e15 ticks/µs: u64 time ends at ~1949 µs, short of
        // the drain alone whatever the duration: the clock that tips the lcm over is named.
        (
            format!(
                "{}\n[pc.cpu]\nclock_mhz = 9973\n[pc.memory]\nclock_mhz = 991\n\
                 [nic]\nclock_mhz = 983\nmac_clock_mhz = 977\n",
                good.replace("clock_mhz = 66", "clock_mhz = 997")
                    .replace("duration_us = 10000.0", "duration_us = 2000.0")
                    .replace("warmup_us = 2000.0", "warmup_us = 200.0")
            ),
            "nic.mac_clock_mhz",
        ),
        // lcm = 9973·997·991·983 ≈ 9.7e12 ticks/µs: u64 time ends at ~1.9 s, room for the
        // drain but not for 100 s of traffic.
        (
            format!(
                "{}\n[pc.cpu]\nclock_mhz = 9973\n[pc.memory]\nclock_mhz = 991\n\
                 [nic]\nclock_mhz = 983\nmac_clock_mhz = 983\n",
                good.replace("clock_mhz = 66", "clock_mhz = 997")
                    .replace("duration_us = 10000.0", "duration_us = 1e8")
            ),
            "run.duration_us",
        ),
        (good.replace("\"nic0\"", "\"nic.0\""), "nics[0].name"),
        (good.replace("\"nic1\"", "\"nic 1\""), "nics[1].name"),
        (good.replace("\"nic2\"", "\"nic2\\t\""), "nics[2].name"),
        (good.replace("\"nic2\"", "\"cpu\""), "nics[2].name"),
        // traffic[0] on nic0 takes the default src: 255.255.255.255 + 1 overflowed.
        (
            good.replace("\"10.0.0.0/24\"", "\"255.255.255.255/32\""),
            "nics[0].subnet",
        ),
        (
            good.replace("subnet = \"10.0.1.0/24\"", "subnet = \"10.0.1.7\""),
            "nics[1].subnet",
        ),
    ];
    for (text, key) in cases {
        let e = Config::from_toml(&text).expect_err(key);
        assert_eq!(e.path, key, "{}", e.msg);
        assert!(!e.to_string().contains('\n'), "one line: {e}");
    }
    // The limits themselves are fine: RES only into an empty output FIFO, bare headers, a
    // /32 port whose flows name their src, a /31 at the top of the address space.
    let edge = format!(
        "{}\n[nic]\nres_min_free_bytes = 15360\nburst_header_bytes = 0\nlength_header_bytes = 4096\n\
         [pc.driver]\ndescriptor_bytes = 4096\n",
        good.replace("\"10.0.0.0/24\"", "\"255.255.255.254/31\"")
            .replace("subnet = \"10.0.1.0/24\"", "subnet = \"10.0.1.7\"")
            .replace("dst = \"10.0.2.2\"", "dst = \"10.0.2.2\"\nsrc = \"10.0.1.7\"")
            .replace("duration_us = 10000.0", "duration_us = 600.0")
            .replace("warmup_us = 2000.0", "warmup_us = 100.0")
    );
    let s = run(Config::from_toml(&edge).unwrap_or_else(|e| panic!("{e}")));
    check_invariants(&s, "edge values");
    assert!(
        s["finished"] == true && s["packets"]["delivered"].as_u64() > Some(100),
        "{s}"
    );
}

/// Values that would exhaust memory or time, and a duplicate NIC name, are refused at their
/// key: FIFOs beyond 16 MiB, queues that together hold millions of packets, cycle counts whose
/// time in ticks overflows, and a renamed NIC (reported as a duplicate, not as the routes to
/// its old name that no longer resolve).
#[test]
fn values_that_would_exhaust_memory_name_their_key() {
    let good = std::fs::read_to_string(format!(
        "{}/../../configs/router/setup_d.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let cases: Vec<(String, &str, &str)> = vec![
        (
            good.replace("name = \"nic2\"", "name = \"nic1\""),
            "nics[2].name",
            "duplicate NIC name 'nic1'",
        ),
        (
            format!("{good}\n[nic]\ninput_fifo_bytes = 4294967295\n"),
            "nic.input_fifo_bytes",
            "outside",
        ),
        (
            format!("{good}\n[nic]\nmac_rx_fifo_bytes = 16777217\n"),
            "nic.mac_rx_fifo_bytes",
            "outside",
        ),
        // Three NICs of 16 MiB FIFOs: 8 FIFOs each, 6.3 million 64-byte frames.
        (
            format!("{good}\n[nic]\ninput_fifo_bytes = 16777216\n"),
            "nics",
            "packets at once",
        ),
        (
            format!("{good}\n[pc.cpu]\nforward_cycles = 4294967295\n"),
            "pc.cpu.forward_cycles",
            "outside",
        ),
        (
            format!("{good}\n[nic]\nrx_latency_cycles = 4294967295\n"),
            "nic.rx_latency_cycles",
            "outside",
        ),
    ];
    for (text, key, what) in cases {
        let e = Config::from_toml(&text).expect_err(key);
        assert_eq!(e.path, key, "{e}");
        assert!(
            e.msg.contains(what),
            "{key}: expected '{what}' in '{}'",
            e.msg
        );
        assert!(!e.to_string().contains('\n'), "one line: {e}");
    }
    // At the limits: 16 MiB output FIFOs, a million CPU cycles per packet.
    let edge = format!(
        "{}\n[nic]\noutput_fifo_bytes = 16777216\n[pc.cpu]\nforward_cycles = 1000000\n",
        good.replace("duration_us = 10000.0", "duration_us = 600.0")
            .replace("warmup_us = 2000.0", "warmup_us = 100.0")
    );
    let s = run(Config::from_toml(&edge).unwrap_or_else(|e| panic!("{e}")));
    check_invariants(&s, "edge values");
}
