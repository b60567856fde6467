//! What the configuration fuzz targets check, as plain functions so that `cargo test` runs
//! them on the shipped files without nightly. Each takes arbitrary bytes; text that is not
//! UTF-8 is not a configuration. A loader must never panic and never allocate without bound
//! (libFuzzer's `-malloc_limit_mb` and `-rss_limit_mb` catch that); its error is one line with
//! the key path. A configuration it accepts must validate again, and must build and run a few
//! nanoseconds of simulated time without panicking: validation is what stands between the
//! file and the model's allocations. Captures named by a configuration are files the model
//! reads, so configurations that name one are loaded but not built.

use nicsim_datapath::config::SizeDist;

/// Simulated time a built model runs (µs): enough to step every port at least once.
const RUN_US: f64 = 0.05;

fn one_line(e: &str) {
    assert!(!e.contains('\n'), "a config error is one line: {e:?}");
}

/// The datapath configuration as TOML (the CLI's file) and as JSON (what the Python front end
/// sends the core, `nicsim.config.to_json`).
pub fn datapath(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    use nicsim_datapath::{Config, Datapath, Validate};
    for parsed in [Config::from_toml(text), Config::from_json(text)] {
        let cfg = match parsed {
            Ok(cfg) => cfg,
            Err(e) => {
                one_line(&e.to_string());
                continue;
            }
        };
        cfg.validate()
            .expect("a loaded configuration validates again");
        if matches!(cfg.traffic.size, SizeDist::Capture { .. }) || cfg.traffic.replay.is_some() {
            continue;
        }
        // Building can still refuse (a firewall rule that does not parse): one line too.
        match Datapath::new(cfg) {
            Ok(mut d) => {
                d.run(Some(RUN_US));
                let _ = d.summary();
            }
            Err(e) => one_line(&e),
        }
    }
}

/// The router configuration, TOML and JSON (both reach the core: `nicsim router`).
pub fn router(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    use nicsim_router::{Config, Router, Validate};
    for parsed in [Config::from_toml(text), Config::from_json(text)] {
        let cfg = match parsed {
            Ok(cfg) => cfg,
            Err(e) => {
                one_line(&e.to_string());
                continue;
            }
        };
        let mut r = Router::new(cfg).expect("a loaded configuration builds");
        r.run(Some(RUN_US));
        let _ = r.summary();
    }
}

/// A flow-memory target (`nicsim flowmem model --target FILE`): loaded, then one small flow
/// through both designs with the scan workload.
pub fn flowmem_target(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    use nicsim_flowmem::model::{packet_buffers, MemConfig, MemModel, Workload};
    match MemConfig::from_toml(text) {
        Err(e) => one_line(&e),
        Ok(c) => {
            let (arena, dir) = packet_buffers(3, 100, 256);
            let view = nicsim_flowmem::FlowView::new(&arena, &dir);
            let out = MemModel::new(c).compare(std::slice::from_ref(&view), &Workload::Scan);
            let _ = format!("{out:?}");
        }
    }
}

/// An XDP target (`nicsim xdp analyze --target FILE`): loaded, then its rates, which must be
/// positive numbers for any program cost.
pub fn xdp_target(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match nicsim_xdp::Target::from_toml(text, "fuzz.toml") {
        Err(e) => one_line(&e.to_string()),
        Ok(t) => {
            for cycles in [0.0, 1.0, 1e6] {
                let pps = t.cores_pps(cycles);
                assert!(pps > 0.0, "cores_pps({cycles}) = {pps}");
                let pps = t.dram_pps(cycles);
                assert!(pps > 0.0, "dram_pps({cycles}) = {pps}");
            }
            let _ = t.helper("map_lookup_elem", Some("hash"));
        }
    }
}
