//! Behavioural tests of the datapath models: cycle-stepped and event-skipping runs agree,
//! queueing theory (M/D/1, Little's law), conservation, determinism, run-time remapping,
//! functional checks and configuration errors.

use std::cell::RefCell;
use std::rc::Rc;

use nicsim_datapath::config::{Arch, Arrivals, Mode, PanicVariant, SizeDist};
use nicsim_datapath::{Config, Datapath, Validate};
use serde_json::Value;

fn paper() -> Config {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/flexpipe_paper.toml"
    ))
    .unwrap();
    Config::from_toml(&text).unwrap()
}

/// Every architecture and variant: FlexPipe, StaticPipe, PANIC (eval), PANIC (full).
fn archs() -> Vec<(Arch, PanicVariant)> {
    vec![
        (Arch::Flexpipe, PanicVariant::Eval),
        (Arch::Staticpipe, PanicVariant::Eval),
        (Arch::Panic, PanicVariant::Eval),
        (Arch::Panic, PanicVariant::Full),
    ]
}

fn paper_as(arch: Arch, variant: PanicVariant) -> Config {
    let mut cfg = paper();
    cfg.arch = arch;
    cfg.panic.variant = variant;
    cfg
}

fn run(cfg: Config) -> Value {
    let mut d = Datapath::new(cfg).unwrap();
    assert!(d.run(None), "run did not finish");
    d.summary()
}

fn without_engine(mut v: Value) -> Value {
    v.as_object_mut().unwrap().remove("engine");
    v
}

/// Runs `cfg` skipping and stepped, checks that the summaries agree (but for the engine's
/// counts), and returns both.
fn skip_and_stepped(mut cfg: Config, what: &str) -> (Value, Value) {
    cfg.mode = Mode::Skip;
    let skip = run(cfg.clone());
    cfg.mode = Mode::Stepped;
    let stepped = run(cfg);
    assert_eq!(
        without_engine(skip.clone()),
        without_engine(stepped.clone()),
        "{what}"
    );
    (skip, stepped)
}

#[test]
fn stepped_and_skipping_runs_are_identical() {
    let mut cases: Vec<(Arch, PanicVariant, u32)> =
        archs().into_iter().map(|(a, v)| (a, v, 2)).collect();
    // PANIC full with one credit per unit: detours all the time.
    cases.push((Arch::Panic, PanicVariant::Full, 1));
    for (arch, variant, credits) in cases {
        let mut cfg = paper_as(arch, variant);
        cfg.panic.credits = credits;
        cfg.traffic.packets = 300;
        cfg.traffic.rate_gbps = 110.0;
        cfg.measure.window = [20, 280];
        let (skip, stepped) =
            skip_and_stepped(cfg, &format!("{arch:?} {variant:?} credits {credits}"));
        assert!(stepped["engine"]["instants"].as_u64() > skip["engine"]["instants"].as_u64());
        if variant == PanicVariant::Full {
            // The credit/detour paths must actually be exercised.
            assert!(
                skip["panic"]["detours"].as_u64().unwrap() > 0,
                "credits {credits}: {}",
                skip["panic"]
            );
        }
    }
    // FlexPipe with every chain reversed, so that packets recirculate, beyond saturation.
    let mut cfg = paper();
    for f in &mut cfg.flows {
        f.chain.reverse();
    }
    cfg.traffic.packets = 600;
    cfg.traffic.rate_gbps = 120.0;
    cfg.measure.window = [20, 580];
    let (skip, _) = skip_and_stepped(cfg, "recirculating");
    assert!(
        skip["recirculation"]["fraction"].as_f64().unwrap() > 0.5,
        "{}",
        skip["recirculation"]
    );
}

/// Cases a random search over small configurations found where skipping and stepping
/// disagreed: a Traffic Arbiter whose two inputs both hold packets for the next Offload's Load
/// Balancer, one of which it refused (the other must still be tried when the arbiter picks
/// it); and two units whose Load Balancer counters cross while both are reading, so that the
/// least-loaded unit changes with no unit event.
#[test]
fn skipping_matches_stepping_when_the_load_balancer_refuses() {
    let mut cases = Vec::new();
    for (q, rate) in [(1500, 20.0), (2000, 60.0), (3000, 100.0), (4096, 60.0)] {
        let mut cfg = paper();
        cfg.offloads.truncate(2);
        for (o, (name, width)) in cfg.offloads.iter_mut().zip([("a", 512), ("b", 8)]) {
            o.name = name.into();
            o.width_bits = width;
            o.clock_mhz = 250;
            o.delay_cycles = 0;
            o.units = Some(1);
        }
        cfg.flows.truncate(2);
        // Reaches b through a's bypass FIFO, and through a's units' FIFO.
        cfg.flows[0].chain = vec!["b".into()];
        cfg.flows[1].chain = vec!["a".into(), "b".into()];
        cfg.traffic.size = SizeDist::UniformSet {
            values: vec![64, 1500],
        };
        cfg.pipeline.unit_queue_bytes = q;
        cfg.traffic.rate_gbps = rate;
        cases.push(cfg);
    }
    for q in [3000, 4096] {
        let mut cfg = paper();
        cfg.offloads.truncate(1);
        cfg.offloads[0].width_bits = 8;
        cfg.offloads[0].delay_cycles = 100;
        cfg.offloads[0].units = Some(2);
        for f in &mut cfg.flows {
            f.chain = vec!["crc".into()];
        }
        cfg.pipeline.unit_queue_bytes = q;
        cfg.traffic.rate_gbps = 60.0;
        cases.push(cfg);
    }
    for (i, mut cfg) in cases.into_iter().enumerate() {
        cfg.traffic.packets = 400;
        cfg.measure.window = [10, 390];
        skip_and_stepped(cfg, &format!("case {i}"));
    }
}

/// Random small configurations of every architecture (one to four offloads, odd clocks and
/// widths, small FIFOs and buffers, few credits, random chains, constant or Poisson arrivals)
/// give the same summary stepped and skipping: the check that every port is woken whenever
/// its step could do something, where the paper's configurations leave most paths idle.
#[test]
fn random_small_configurations_agree_stepped_and_skipping() {
    use nicsim_datapath::config::OffloadCfg;
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let mut rand = |n: usize| rng.gen_range(0..n);
    let mut ran = 0;
    for it in 0..48 {
        let (arch, variant) = archs()[it % 4];
        let mut cfg = paper_as(arch, variant);
        let n = 1 + rand(4);
        let names = ["a", "b", "c", "d"];
        cfg.offloads = (0..n)
            .map(|i| OffloadCfg {
                name: names[i].into(),
                kind: None,
                width_bits: [8, 32, 64, 128, 512][rand(5)],
                clock_mhz: [100, 133, 150, 200, 250, 317][rand(6)],
                delay_cycles: [0, 0, 1, 7, 25, 100][rand(6)],
                units: [None, Some(1), Some(2), Some(3), Some(5)][rand(5)],
            })
            .collect();
        cfg.pipeline.clock_mhz = [150, 211, 250][rand(3)];
        cfg.pipeline.unit_queue_bytes = [1500, 2000, 4096, 16384][rand(4)];
        cfg.pipeline.arbiter_fifo_bytes = [1500, 2000, 4096, 16384][rand(4)];
        cfg.pipeline.stage_fifo_bytes = [1500, 4096][rand(2)];
        cfg.pipeline.recirc_fifo_bytes = [1500, 4096, 16384][rand(3)];
        cfg.pipeline.ingress_fifo_bytes = [1500, 4096, 16384][rand(3)];
        cfg.panic.credits = [1, 2, 4][rand(3)];
        cfg.panic.crossbar_port_buffer_bytes = [1500, 3000, 16384][rand(3)];
        for f in &mut cfg.flows {
            let len = rand(n + 1);
            f.chain = (0..len).map(|_| names[rand(n)].to_string()).collect();
            f.chain.dedup();
        }
        cfg.traffic.size = SizeDist::UniformSet {
            values: vec![64, 1500],
        };
        cfg.traffic.packets = 400;
        cfg.traffic.rate_gbps = [20.0, 60.0, 100.0, 250.0][rand(4)];
        if rand(2) == 0 {
            cfg.traffic.arrivals = Arrivals::Poisson;
        }
        cfg.measure.window = [10, 390];
        cfg.seed = it as u64;
        if cfg.validate().is_err() {
            continue;
        }
        skip_and_stepped(cfg, &format!("random configuration {it}"));
        ran += 1;
    }
    assert!(
        ran >= 40,
        "only {ran} of the random configurations were valid"
    );
}

/// PANIC's crossbar must be woken when a full output port (here the DMA engine's, behind a
/// slow single-unit engine) frees room: skipping runs used to miss that wake-up and end with
/// the scheduler's buffer stuck full, while stepped runs drained.
#[test]
fn skipping_matches_stepping_when_a_crossbar_port_is_full() {
    use nicsim_datapath::config::OffloadCfg;
    let mut cfg = paper_as(Arch::Panic, PanicVariant::Full);
    cfg.seed = 41;
    cfg.pipeline.clock_mhz = 150;
    cfg.pipeline.stage_fifo_bytes = 4096;
    cfg.pipeline.unit_queue_bytes = 2000;
    cfg.pipeline.recirc_fifo_bytes = 1500;
    cfg.pipeline.ingress_fifo_bytes = 1500;
    cfg.panic.credits = 1;
    cfg.panic.crossbar_port_buffer_bytes = 3000;
    cfg.offloads = vec![OffloadCfg {
        name: "a".into(),
        kind: None,
        width_bits: 64,
        clock_mhz: 250,
        delay_cycles: 100,
        units: None,
    }];
    let chains: [&[&str]; 4] = [&["a"], &[], &[], &["a"]];
    for (f, c) in cfg.flows.iter_mut().zip(chains) {
        f.chain = c.iter().map(|s| s.to_string()).collect();
    }
    cfg.traffic.packets = 1200;
    cfg.traffic.rate_gbps = 60.0;
    cfg.traffic.arrivals = Arrivals::Poisson;
    cfg.traffic.size = SizeDist::UniformSet {
        values: vec![64, 1500],
    };
    cfg.measure.window = [10, 290];
    let (skip, _) = skip_and_stepped(cfg, "panic, full DMA port");
    assert_eq!(skip["packets"]["in_flight"], 0);
    assert_eq!(skip["deadlocked"], false);
}

/// FIFOs too small for recirculating chains deadlock the loop, as they would in hardware: the
/// run must still end (no port polling forever for a packet it will never pick), with the
/// stuck packets counted in flight, and the same in both modes.
#[test]
fn a_deadlocked_recirculation_loop_ends_the_run_with_packets_in_flight() {
    use nicsim_datapath::config::OffloadCfg;
    let mut cfg = paper();
    let unit = |name: &str, width_bits, clock_mhz, delay_cycles, units| OffloadCfg {
        name: name.into(),
        kind: None,
        width_bits,
        clock_mhz,
        delay_cycles,
        units: Some(units),
    };
    cfg.offloads = vec![
        unit("o0", 64, 100, 0, 5),
        unit("o1", 512, 300, 100, 1),
        unit("o2", 8, 150, 3, 5),
    ];
    let chains: [&[&str]; 4] = [&["o2", "o0", "o2"], &["o2", "o1"], &["o1"], &["o2", "o1"]];
    for (f, c) in cfg.flows.iter_mut().zip(chains) {
        f.chain = c.iter().map(|s| s.to_string()).collect();
    }
    cfg.pipeline.clock_mhz = 150;
    cfg.pipeline.arbiter_fifo_bytes = 1500;
    cfg.pipeline.recirc_fifo_bytes = 1500;
    cfg.traffic.size = SizeDist::UniformSet {
        values: vec![64, 1500],
    };
    cfg.traffic.rate_gbps = 20.0;
    cfg.traffic.packets = 400;
    cfg.measure.window = [10, 390];
    let (skip, _) = skip_and_stepped(cfg.clone(), "deadlocked");
    assert!(
        skip["packets"]["in_flight"].as_u64().unwrap() > 0,
        "{}",
        skip["packets"]
    );
    assert_eq!(skip["finished"], true);
    assert_eq!(
        skip["deadlocked"], true,
        "the summary says why packets are left"
    );
    // Stopped early with packets inside, a run is not deadlocked: it is not finished.
    let mut d = Datapath::new(cfg.clone()).unwrap();
    assert!(!d.run(Some(5.0)));
    let early = d.summary();
    assert!(early["packets"]["in_flight"].as_u64().unwrap() > 0);
    assert_eq!(early["finished"], false);
    assert_eq!(early["deadlocked"], false);
    // With room enough for the loop, the same traffic drains.
    cfg.pipeline.arbiter_fifo_bytes = 16384;
    cfg.pipeline.recirc_fifo_bytes = 16384;
    let (roomy, _) = skip_and_stepped(cfg, "roomy");
    assert_eq!(roomy["packets"]["in_flight"], 0);
    assert_eq!(roomy["deadlocked"], false);
}

/// One offload with one unit, Poisson arrivals of fixed-size packets: the mean wait in the
/// unit's queue is M/D/1's Pollaczek–Khinchine W_q = ρ D / (2 (1 − ρ)).
#[test]
fn single_unit_matches_md1() {
    for rho in [0.5, 0.8] {
        let mut cfg = paper();
        cfg.offloads.truncate(1);
        cfg.offloads[0].units = Some(1);
        cfg.offloads[0].width_bits = 8; // 64 B → 64 cycles at 250 MHz
        cfg.pipeline.unit_queue_bytes = 1 << 24;
        cfg.flows.truncate(1);
        cfg.flows[0].chain = vec!["crc".into()];
        cfg.traffic.size = SizeDist::Fixed { bytes: 64 };
        cfg.traffic.arrivals = Arrivals::Poisson;
        cfg.traffic.packets = 300_000;
        cfg.measure.window = [1000, 299_000];
        let d_us = 64.0 / 250.0;
        // ρ = λ D with λ = rate / (8 · 64 bits).
        cfg.traffic.rate_gbps = rho / d_us * 8.0 * 64.0 / 1e3;
        let s = run(cfg);
        let lat = &s["latency_us"];
        let [min, p50, p99, max] = ["min", "p50", "p99", "max"].map(|k| lat[k].as_f64().unwrap());
        assert!(
            min <= p50 && p50 <= p99 && p99 <= max,
            "percentiles out of order: {lat}"
        );
        let wait = lat["mean"].as_f64().unwrap() - min;
        let pk = rho * d_us / (2.0 * (1.0 - rho));
        let err = (wait - pk).abs() / pk;
        eprintln!("M/D/1 rho {rho}: simulated {wait:.4} µs, theory {pk:.4} µs");
        assert!(
            err < 0.03,
            "rho {rho}: simulated wait {wait:.4} µs vs M/D/1 {pk:.4} µs ({:.1} %)",
            err * 100.0
        );
    }
}

#[test]
fn littles_law_holds_for_every_fifo() {
    for (arch, variant) in [
        (Arch::Flexpipe, PanicVariant::Eval),
        (Arch::Panic, PanicVariant::Eval),
        (Arch::Panic, PanicVariant::Full),
    ] {
        let mut cfg = paper_as(arch, variant);
        cfg.traffic.packets = 3000;
        cfg.traffic.rate_gbps = 120.0;
        cfg.measure.window = [100, 2900];
        let s = run(cfg);
        let fifos = s["fifos"].as_object().unwrap();
        assert!(fifos.len() > 10);
        for (name, f) in fifos {
            let ll = &f["littles_law"];
            let (l, lambda, w) = (
                ll["L_packets"].as_f64().unwrap(),
                ll["lambda_per_us"].as_f64().unwrap(),
                ll["W_us"].as_f64().unwrap(),
            );
            assert!(
                (l - lambda * w).abs() <= 1e-9 * l.max(1.0),
                "{name}: L {l} vs λW {}",
                lambda * w
            );
            assert_eq!(f["arrivals"], f["departures"], "{name} not drained");
        }
    }
}

#[test]
fn packets_are_conserved_and_runs_are_deterministic() {
    for (arch, variant) in archs() {
        let mut cfg = paper_as(arch, variant);
        cfg.traffic.packets = 2000;
        cfg.traffic.rate_gbps = 128.0; // PANIC drops here
        cfg.measure.window = [100, 1900];
        let a = run(cfg.clone());
        let p = &a["packets"];
        let dropped: u64 = p["dropped"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(
            p["offered"].as_u64().unwrap(),
            p["delivered"].as_u64().unwrap() + dropped + p["in_flight"].as_u64().unwrap()
        );
        assert_eq!(p["in_flight"], 0);
        assert_eq!(
            a.to_string(),
            run(cfg.clone()).to_string(),
            "{arch:?} {variant:?}: same seed, different result"
        );
        cfg.seed = 2;
        assert_ne!(a["latency_us"], run(cfg)["latency_us"]);
    }
}

#[test]
fn remap_takes_effect_for_new_packets_only() {
    let mut cfg = paper();
    cfg.traffic.packets = 3000;
    cfg.measure.window = [100, 2900];
    let at_us = 60.0;
    cfg.remap.push(nicsim_datapath::config::RemapCfg {
        at_us,
        flow: "flow4".into(),
        chain: vec!["crc".into(), "rss".into()],
    });
    let mut d = Datapath::new(cfg).unwrap();
    let seen = Rc::new(RefCell::new((0u32, 0u32)));
    let s2 = seen.clone();
    let at = d.tb.from_us(at_us);
    d.on_egress(Box::new(move |_, p| {
        if p.flow == 3 {
            let mut s = s2.borrow_mut();
            if p.t_parse < at {
                assert_eq!(p.chain.hops(), &[0, 1], "parsed before the remap");
                s.0 += 1;
            } else {
                assert_eq!(p.chain.hops(), &[0, 5], "parsed after the remap");
                s.1 += 1;
            }
            assert_eq!(p.trace, p.chain);
        }
    }));
    d.run(None);
    let (before, after) = *seen.borrow();
    assert!(before > 50 && after > 50, "{before} / {after}");
    // And through the API, between two slices of a run.
    let mut cfg = paper();
    cfg.traffic.packets = 3000;
    cfg.measure.window = [100, 2900];
    let mut d = Datapath::new(cfg).unwrap();
    assert!(!d.run(Some(30.0)));
    d.remap("flow4", &["crc".into(), "rss".into()]).unwrap();
    assert!(d.remap("flow9", &[]).is_err());
    d.run(None);
    let chains = &d.summary()["per_flow"]["flow4"]["chains"];
    assert!(
        chains["crc>firewall"].as_u64().unwrap() > 0 && chains["crc>rss"].as_u64().unwrap() > 0,
        "{chains}"
    );
}

#[test]
fn functional_offloads_check_every_packet_and_drop_with_reasons() {
    for arch in [Arch::Flexpipe, Arch::Staticpipe, Arch::Panic] {
        let mut cfg = paper();
        cfg.arch = arch;
        cfg.functional = true;
        cfg.traffic.packets = 1500;
        cfg.measure.window = [100, 1400];
        cfg.traffic.faults.bad_fcs = 0.02;
        cfg.traffic.faults.bad_tag = 0.02;
        cfg.firewall.rules = vec!["deny udp any any dport 5004".into()];
        let s = run(cfg);
        let drops = &s["packets"]["dropped"];
        assert!(drops["bad_fcs"].as_u64().unwrap() > 10, "{arch:?} {drops}");
        assert!(drops["firewall_deny"].as_u64().unwrap() > 200, "{drops}");
        // Only flows whose chain (or StaticPipe's every-offload chain) holds SHA-3 see bad tags.
        assert!(drops["bad_tag"].as_u64().unwrap() > 5, "{drops}");
        let v = &s["verify"];
        assert_eq!(v["chain_mismatches"], 0);
        assert_eq!(v["payload_mismatches"], 0);
        assert_eq!(v["checked"], s["packets"]["delivered"]);
        assert_eq!(s["packets"]["in_flight"], 0);
    }
}

#[test]
fn config_errors_name_the_key() {
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/flexpipe_paper.toml"
    ))
    .unwrap();
    let cases = [
        (
            "rate_gbps = 90.0",
            "rate_gbps = \"fast\"",
            "traffic.rate_gbps",
        ),
        ("rate_gbps = 90.0", "rate_gbps = -1.0", "traffic.rate_gbps"),
        (
            "chain = [\"crc\", \"firewall\"]",
            "chain = [\"crc\", \"nat\"]",
            "flows[3].chain[1]",
        ),
        (
            "width_bits = 512",
            "width_bits = 512\nwidht = 3",
            "pipeline",
        ),
        (
            "clock_mhz = 150\ndelay_cycles = 21",
            "clock_mhz = 0\ndelay_cycles = 21",
            "offloads[1].clock_mhz",
        ),
        (
            "window = [500, 10500]",
            "window = [500, 100]",
            "measure.window",
        ),
        (
            "[measure]",
            "[panic]\nvariant = \"ful\"\n\n[measure]",
            "panic.variant",
        ),
        // Offload clocks whose lcm is ~9.7e11 ticks/µs: 64-bit time ends after ~19 s, and a
        // billion packets at 90 Gbit/s take ~130 s.
        ("packets = 11000", "packets = 1000000000", "traffic.packets"),
    ];
    // The clocks of the last case (only its traffic is too long for them).
    let odd_clocks = base
        .replacen("clock_mhz = 150", "clock_mhz = 997", 1)
        .replacen("clock_mhz = 150", "clock_mhz = 991", 1)
        .replacen("clock_mhz = 100", "clock_mhz = 983", 1);
    assert!(Config::from_toml(&odd_clocks).is_ok(), "11,000 packets fit");
    for (i, (from, to, key)) in cases.into_iter().enumerate() {
        let base = if i + 1 == cases.len() {
            &odd_clocks
        } else {
            &base
        };
        assert!(base.contains(from), "{from}");
        let e = Config::from_toml(&base.replacen(from, to, 1)).unwrap_err();
        assert!(e.path.starts_with(key), "expected key {key}, got '{e}'");
    }
}

/// PANIC as published: under overload with 2 credits per unit, pushed packets find their unit
/// full and are detoured back to the scheduler, and still pass exactly their chain (functional
/// offloads on: payloads restored too); with credits to spare nothing is detoured.
#[test]
fn panic_full_detours_under_overload_and_keeps_chains() {
    let mut cfg = paper_as(Arch::Panic, PanicVariant::Full);
    cfg.functional = true;
    cfg.traffic.packets = 2000;
    cfg.traffic.rate_gbps = 128.0;
    cfg.measure.window = [100, 1900];
    cfg.panic.credits = 2;
    let s = run(cfg.clone());
    let detours = s["panic"]["detours"].as_u64().unwrap();
    assert!(detours > 0, "{}", s["panic"]);
    assert_eq!(s["panic"]["crossbar_ports"], 8 + 128 + 39 + 4 + 40 + 3 + 2);
    let v = &s["verify"];
    assert_eq!(v["chain_mismatches"], 0, "{v}");
    assert_eq!(v["payload_mismatches"], 0, "{v}");
    assert!(v["checked"].as_u64().unwrap() > 1000);
    assert_eq!(v["checked"], s["packets"]["delivered"]);
    assert_eq!(s["packets"]["in_flight"], 0);
    // Every detour came back through the scheduler's crossbar port.
    assert_eq!(
        s["fifos"]["scheduler.detour_in"]["arrivals"]
            .as_u64()
            .unwrap(),
        detours
    );

    cfg.panic.credits = 1_000_000;
    let s = run(cfg);
    assert_eq!(s["panic"]["detours"], 0, "{}", s["panic"]);
    assert_eq!(s["verify"]["chain_mismatches"], 0);
    // The eval variant never detours.
    let s = run(paper_as(Arch::Panic, PanicVariant::Eval));
    assert_eq!(s["panic"]["detours"], 0);
}

/// Values a hostile-input probe found to exhaust memory or to be blamed on the wrong key are
/// refused at validation, each with one line naming the key at fault: clocks and unit counts
/// that Eq. 1 or the units' vectors turn into gigabytes, rates and clocks that 64-bit time
/// cannot hold, buffers whose sum is unbounded, a window past the traffic.
#[test]
fn values_that_would_exhaust_memory_name_their_key() {
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/flexpipe_paper.toml"
    ))
    .unwrap();
    Config::from_toml(&base).unwrap();
    let firewall = "clock_mhz = 150\ndelay_cycles = 21";
    let cases: Vec<(String, &str, &str)> = vec![
        // Grew to 24 GB through Eq. 1's units (OOM-killed).
        (
            base.replacen("clock_mhz = 250", "clock_mhz = 4294967295", 1),
            "pipeline.clock_mhz",
            "outside 1..=100000 MHz",
        ),
        // Aborted in the allocator.
        (
            base.replacen("clock_mhz = 250", "clock_mhz = 1000000000", 1),
            "pipeline.clock_mhz",
            "outside",
        ),
        (
            base.replace("name = \"crc\"", "name = \"crc\"\nunits = 4294967295"),
            "offloads[0].units",
            "outside 1..=4096 units",
        ),
        // A clock in range whose Eq. 1 units are not: 512 b × 100 GHz over the Firewall's
        // 8 b × 150 MHz is 42,688 units.
        (
            base.replacen("clock_mhz = 250", "clock_mhz = 100000", 1),
            "offloads[1].units",
            "Eq. 1 gives 42688 units",
        ),
        (
            base.replacen(firewall, "clock_mhz = 150\ndelay_cycles = 4294967295", 1),
            "offloads[1].delay_cycles",
            "outside",
        ),
        // 4 × 4096 units plus the other two offloads' Eq. 1 units: more than 16384 in all.
        (
            with_units(&base, [4096, 4096, 4096, 4096, 1, 1]),
            "offloads",
            "units in all",
        ),
        // Was blamed on traffic.packets: one packet alone does not fit.
        (
            base.replace("rate_gbps = 90.0", "rate_gbps = 1e-30"),
            "traffic.rate_gbps",
            "one 1500-byte packet",
        ),
        // Large prime clocks: lcm(99991, 99989, 99971) leaves 64-bit time 18 ms, not even
        // the drain; the Jpeg offload's clock tips it over. Was blamed on traffic.packets.
        (
            base.replacen(firewall, "clock_mhz = 99991\ndelay_cycles = 21", 1)
                .replacen("clock_mhz = 150", "clock_mhz = 99989", 1)
                .replacen("clock_mhz = 100", "clock_mhz = 99971", 1),
            "offloads[4].clock_mhz",
            "drain every run needs",
        ),
        (
            base.replace("window = [500, 10500]", "window = [500, 20000]"),
            "measure.window",
            "past the 11000 packets",
        ),
        (
            base.replace("packets = 11000", "packets = 100000000000"),
            "traffic.packets",
            "outside",
        ),
        (
            base.replace(
                "[pipeline]",
                "[pipeline]\narbiter_fifo_bytes = 4294967295",
            ),
            "pipeline.arbiter_fifo_bytes",
            "outside",
        ),
        // Each unit queue within the limit, but 222 units × 2 × 16 MiB is 7 GB of buffers.
        (
            base.replace("[pipeline]", "[pipeline]\nunit_queue_bytes = 16777216"),
            "pipeline",
            "bytes in all",
        ),
        // 40,000 packets over four flows of 9,537 sizes each: 38,148 latency histograms.
        (
            base.replace("packets = 11000", "packets = 50000")
                .replace("window = [500, 10500]", "window = [0, 40000]")
                .replace(
                    "[pipeline]",
                    "[pipeline]\narbiter_fifo_bytes = 9600\nstage_fifo_bytes = 9600\n\
                     unit_queue_bytes = 9600\nrecirc_fifo_bytes = 9600\ningress_fifo_bytes = 9600",
                )
                .replace(
                    "size = { dist = \"uniform_set\", values = [64, 128, 256, 512, 1024, 1500] }",
                    "size = { dist = \"exponential\", mean_bytes = 2000.0, min_bytes = 64, max_bytes = 9600 }",
                ),
            "measure.window",
            "latency histograms",
        ),
        (
            base.replace("arch = \"flexpipe\"", "arch = \"panic\"")
                .replace("[measure]", "[panic]\ncredits = 4294967295\n\n[measure]"),
            "panic.credits",
            "outside",
        ),
        (
            base.replace("arch = \"flexpipe\"", "arch = \"panic\"").replace(
                "[measure]",
                "[panic]\ncrossbar_latency_cycles = 4294967295\n\n[measure]",
            ),
            "panic.crossbar_latency_cycles",
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
        // The JSON the Python front end sends is checked the same way.
        let json = serde_json::to_string(&toml::from_str::<Value>(&text).unwrap()).unwrap();
        assert_eq!(Config::from_json(&json).unwrap_err().path, key);
    }
}

/// The limits themselves are fine: an offload of 4096 units, 16,384 units in all, the fastest
/// clock with explicit units, a window that ends at the last packet.
#[test]
fn values_at_the_limits_run() {
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/flexpipe_paper.toml"
    ))
    .unwrap();
    let text = with_units(&base, [4096, 4096, 4096, 4094, 1, 1])
        .replace("packets = 11000", "packets = 300")
        .replace("window = [500, 10500]", "window = [0, 300]");
    let mut cfg = Config::from_toml(&text).unwrap_or_else(|e| panic!("{e}"));
    let units: u32 = cfg.offloads.iter().map(|o| o.units(&cfg.pipeline)).sum();
    assert_eq!(units, 16384);
    let s = run(cfg.clone());
    assert_eq!(s["packets"]["offered"], 300);
    cfg.pipeline.clock_mhz = 100_000;
    cfg.pipeline.dma_clock_mhz = 100_000;
    for o in &mut cfg.offloads {
        o.units = Some(8);
    }
    cfg.validate().unwrap();
}

/// The paper's config with explicit unit counts for its six offloads.
fn with_units(base: &str, units: [u32; 6]) -> String {
    let mut text = base.to_string();
    for (name, n) in ["crc", "firewall", "sha3", "aes", "jpeg", "rss"]
        .iter()
        .zip(units)
    {
        let at = format!("name = \"{name}\"");
        assert!(text.contains(&at), "{at}");
        text = text.replace(&at, &format!("{at}\nunits = {n}"));
    }
    text
}

/// Firewall rules are checked at validation whether or not the run is functional, and a bad one
/// is named by its entry (timing runs used to accept any text there).
#[test]
fn firewall_rules_are_checked_in_every_run() {
    for functional in [false, true] {
        let mut cfg = paper();
        cfg.functional = functional;
        cfg.firewall.rules = vec![
            "deny udp any any dport 5004".into(),
            "frobnicate tcp any any".into(),
        ];
        let e = cfg.validate().unwrap_err();
        assert_eq!(e.path, "firewall.rules[1]", "{e:?}");
        assert!(e.msg.contains("frobnicate"), "{e:?}");
        cfg.firewall.rules.pop();
        cfg.validate().unwrap();
    }
    let mut cfg = paper();
    cfg.firewall.rules = vec!["allow tcp any any".into(); 70_000];
    assert_eq!(cfg.validate().unwrap_err().path, "firewall.rules");
}

/// The egress capture writes one record per delivered packet, in delivery order, each frame
/// without its 4-byte FCS and stamped with its delivery time in simulated nanoseconds; a file
/// that cannot be created is one error naming it.
#[test]
fn the_egress_capture_writes_every_delivered_frame_without_its_fcs() {
    let mut cfg = paper();
    cfg.functional = true;
    cfg.traffic.packets = 600;
    cfg.measure.window = [50, 550];
    let dir = std::env::temp_dir().join(format!("nicsim-egress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("egress.pcap");
    let mut d = Datapath::new(cfg).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s2 = seen.clone();
    let ticks_per_us = d.tb.ticks_per_us();
    d.on_egress(Box::new(move |t, p| {
        let f = p.frame.as_ref().expect("functional runs carry frames");
        s2.borrow_mut()
            .push((t.ticks() * 1000 / ticks_per_us, f.bytes.clone()));
    }));
    d.capture_egress(&path).unwrap();
    assert!(d.run(None));
    d.finish_egress_capture().unwrap();
    let mut r = nicsim_packet::capture::CaptureReader::open(&path).unwrap();
    let mut got = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        got.push((rec.ts_ns, rec.data.to_vec()));
    }
    let want = seen.borrow();
    assert_eq!(got.len(), 600);
    assert_eq!(got.len(), want.len());
    for ((ts, data), (t, frame)) in got.iter().zip(want.iter()) {
        assert_eq!(data[..], frame[..frame.len() - 4]);
        assert!(ts.abs_diff(*t) <= 1, "{ts} vs {t}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let e = Datapath::new(paper())
        .unwrap()
        .capture_egress(std::path::Path::new("/nonexistent-nicsim/e.pcap"))
        .unwrap_err();
    assert!(e.starts_with("/nonexistent-nicsim/e.pcap: "), "{e}");
}

/// A model is built only from a valid configuration: `Datapath::new` checks it (and builds
/// from what the check parsed), so a configuration made in code gets the same one-line error
/// as a file would.
#[test]
fn new_refuses_an_invalid_configuration() {
    let mut cfg = paper();
    cfg.flows[0].src = "10.0.0.300".into();
    let e = Datapath::new(cfg).err().expect("refused");
    assert_eq!(e, "flows[0].src: '10.0.0.300' is not an IP address");
}

/// The paper's configuration with two classes (`[qos]`, `policy`): flow2 (crc, sha3, jpeg,
/// rss) is class 1, the others class 0; at `rate_gbps`.
fn qos_paper(policy: &str, weights: &str, rate_gbps: f64) -> Config {
    let mut text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/flexpipe_paper.toml"
    ))
    .unwrap();
    text = text.replace(
        "chain = [\"crc\", \"sha3\", \"jpeg\", \"rss\"]",
        "chain = [\"crc\", \"sha3\", \"jpeg\", \"rss\"]\npriority = 1",
    );
    text.push_str(&format!("\n[qos]\npolicy = \"{policy}\"\n{weights}\n"));
    let mut cfg = Config::from_toml(&text).unwrap();
    cfg.traffic.rate_gbps = rate_gbps;
    cfg.traffic.packets = 6000;
    cfg.measure.window = [200, 5800];
    cfg
}

/// Every flow through one slow offload (two CRC units of 64 bits at 250 MHz: 32 Gbit/s) at
/// 100 Gbit/s, flows equally weighted (class 1 offers a quarter, 25 Gbit/s): both classes
/// stay backlogged at the Ingress Traffic Controller, which decides who enters.
fn qos_overloaded(policy: &str, weights: &str) -> Config {
    let mut cfg = qos_paper(policy, weights, 100.0);
    cfg.offloads[0].units = Some(2);
    for f in &mut cfg.flows {
        f.chain = vec!["crc".into()];
    }
    cfg
}

fn class(s: &Value, c: &str) -> Value {
    s["classes"][c].clone()
}

#[test]
fn strict_priority_serves_the_high_class_first_and_drops_only_the_low() {
    // The debug assertions in the Ingress Traffic Controller and the Traffic Arbiters check
    // every decision: no class is served while a higher one has a packet waiting there.
    let s = run(qos_overloaded("strict", ""));
    let (lo, hi) = (class(&s, "0"), class(&s, "1"));
    assert_eq!(hi["dropped_total"], 0, "{hi}");
    assert!(
        lo["dropped"]["ingress_full"].as_u64().unwrap() > 1000,
        "{lo}"
    );
    // The high class gets what it offers (25 Gbit/s of the offload's 32), the low the rest.
    let (t_lo, t_hi) = (
        lo["throughput_gbps"].as_f64().unwrap(),
        hi["throughput_gbps"].as_f64().unwrap(),
    );
    assert!(t_hi > 23.0 && t_lo < 9.0, "high {t_hi}, low {t_lo}");
    // Conservation, class by class and in all.
    let p = &s["packets"];
    assert_eq!(p["in_flight"], 0);
    let offered: u64 = ["0", "1"]
        .iter()
        .map(|c| class(&s, c)["offered"].as_u64().unwrap())
        .sum();
    assert_eq!(offered, p["offered"].as_u64().unwrap());
    // At the paper's load, every decision point checked as well, with recirculation.
    let mut cfg = qos_paper("strict", "", 128.0);
    cfg.flows[1].chain = vec!["rss".into(), "crc".into()];
    let s = run(cfg);
    assert!(s["recirculation"]["packets_recirculated"].as_u64().unwrap() > 0);
}

#[test]
fn weighted_shares_of_a_backlogged_ingress_follow_the_weights() {
    for (w, want) in [([1, 1], 0.5), ([1, 3], 0.75), ([3, 1], 0.25)] {
        let weights = format!("weights = [{}, {}]", w[0], w[1]);
        let s = run(qos_overloaded("weighted", &weights));
        let (lo, hi) = (class(&s, "0"), class(&s, "1"));
        let (t_lo, t_hi) = (
            lo["throughput_gbps"].as_f64().unwrap(),
            hi["throughput_gbps"].as_f64().unwrap(),
        );
        let share = t_hi / (t_lo + t_hi);
        assert!(
            (share - want).abs() < 0.03,
            "weights {w:?}: class 1 has {share:.3} of the bytes, want {want}"
        );
    }
}

#[test]
fn runs_with_classes_agree_stepped_and_skipping() {
    skip_and_stepped(qos_paper("strict", "", 110.0), "strict");
    skip_and_stepped(qos_paper("weighted", "weights = [1, 4]", 128.0), "weighted");
    let mut cfg = qos_paper("strict", "unit_reserve_bytes = 1024", 128.0);
    cfg.pipeline.unit_queue_bytes = 4096;
    skip_and_stepped(cfg, "strict with a unit reserve");
}

#[test]
fn qos_configuration_errors_name_their_key() {
    let cases: [(&str, &str, &str); 5] = [
        ("weighted", "", "qos.weights"),
        ("weighted", "weights = [1, 0]", "qos.weights[1]"),
        ("strict", "weights = [1, 2]", "qos.weights"),
        (
            "strict",
            "unit_reserve_bytes = 4000",
            "qos.unit_reserve_bytes",
        ),
        ("none", "unit_reserve_bytes = 100", "qos.policy"),
    ];
    for (policy, extra, key) in cases {
        let mut text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../configs/flexpipe_paper.toml"
        ))
        .unwrap();
        text = text.replace("dport = 5002", "dport = 5002\npriority = 1");
        text.push_str(&format!("\n[qos]\npolicy = \"{policy}\"\n{extra}\n"));
        let e = Config::from_toml(&text).unwrap_err();
        assert_eq!(e.path, key, "{policy} {extra}: {e}");
    }
    let mut cfg = qos_paper("strict", "", 90.0);
    cfg.arch = Arch::Panic;
    assert_eq!(cfg.validate().unwrap_err().path, "qos.policy");
    let mut cfg = qos_paper("strict", "", 90.0);
    cfg.flows[0].priority = 8;
    assert_eq!(cfg.validate().unwrap_err().path, "flows[0].priority");
}

/// PANIC's full variant with engines that leave no gap between packets still hits the caps
/// that do not come from the engines: two first-hop PIFOs, each popping one packet every two
/// 125 MHz cycles (2 × 62.5 M packets/s × 64 B = 64 Gbit/s), and the descriptor beat ahead of
/// two data beats on every link (128 B: 128 × 2/3 = 85.3 Gbit/s).
#[test]
fn panic_full_with_gapless_engines_hits_the_pifo_and_descriptor_caps() {
    for (bytes, cap) in [(64, 64.0), (128, 128.0 * 2.0 / 3.0)] {
        let mut cfg = paper_as(Arch::Panic, PanicVariant::Full);
        cfg.panic.engine_rx_gap_cycles = 0;
        cfg.panic.engine_tx_gap_cycles = 0;
        cfg.traffic.size = SizeDist::Fixed { bytes };
        cfg.traffic.rate_gbps = 128.0;
        cfg.traffic.packets = 6000;
        cfg.measure.window = [500, 5500];
        cfg.flows.truncate(2);
        cfg.flows[0].chain = vec!["crc".into()];
        cfg.flows[1].chain = vec!["rss".into()];
        let got = run(cfg)["throughput_gbps"].as_f64().unwrap();
        eprintln!("PANIC full, gapless engines, {bytes} B: {got:.2} Gbit/s (cap {cap:.2})");
        assert!(
            (got - cap).abs() / cap < 0.02,
            "{bytes} B: {got} Gbit/s, cap {cap}"
        );
    }
}

/// The engines' port gaps (the RTL's idle cycles after each packet) cost throughput: more gap,
/// less peak, in both variants.
#[test]
fn panic_engine_port_gaps_lower_the_peak() {
    for variant in [PanicVariant::Eval, PanicVariant::Full] {
        let peak = |gap: u32| {
            let mut cfg = paper_as(Arch::Panic, variant);
            cfg.panic.engine_rx_gap_cycles = gap;
            cfg.panic.engine_tx_gap_cycles = gap;
            cfg.traffic.rate_gbps = 120.0;
            cfg.traffic.packets = 6000;
            cfg.measure.window = [500, 5500];
            run(cfg)["throughput_gbps"].as_f64().unwrap()
        };
        let (none, rtl, wide) = (peak(0), peak(1), peak(3));
        eprintln!("PANIC {variant:?} at 120 Gbit/s: gaps 0: {none:.2}, 1: {rtl:.2}, 3: {wide:.2}");
        assert!(
            none >= rtl && rtl > wide,
            "{variant:?}: {none} {rtl} {wide}"
        );
    }
}

/// The summary has one entry per priority a flow has, in every architecture, and the classes'
/// packets add up to the run's.
#[test]
fn classes_are_the_flows_priorities_and_conserve_packets() {
    for (arch, variant) in archs() {
        let mut cfg = paper_as(arch, variant);
        cfg.traffic.packets = 3000;
        cfg.measure.window = [200, 2800];
        cfg.flows[1].priority = 5;
        let s = run(cfg);
        let classes = s["classes"].as_object().unwrap();
        assert_eq!(classes.keys().collect::<Vec<_>>(), ["0", "5"], "{arch:?}");
        let sum = |k: &str| -> u64 { classes.values().map(|c| c[k].as_u64().unwrap()).sum() };
        let p = &s["packets"];
        assert_eq!(sum("offered"), p["offered"].as_u64().unwrap(), "{arch:?}");
        assert_eq!(
            sum("dropped_total"),
            p["dropped_total"].as_u64().unwrap(),
            "{arch:?}"
        );
        assert_eq!(
            sum("delivered"),
            p["delivered"].as_u64().unwrap(),
            "{arch:?}"
        );
        assert_eq!(
            sum("delivered_in_window"),
            s["latency_us"]["packets"].as_u64().unwrap(),
            "{arch:?}"
        );
    }
}
