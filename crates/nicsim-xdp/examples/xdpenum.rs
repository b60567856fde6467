//! Times the ordered enumeration alone (no symbolic execution, no solver), as the benchmark
//! does: `cargo run --release --example xdpenum -p nicsim-xdp -- OBJ [LIMIT] [SECONDS] [packet]`.
//! Bit-rate mode and no MAC limit unless `packet` is given (then packet-rate mode); with `EDGES`
//! set in the environment every path's edge list is built too. Prints the search graph's shape
//! (in-degrees: the enumeration keeps lists at nodes with other than one), the rate in wall and
//! CPU time (the machine may be shared), prefixes built per path and the memory estimate.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bytes = std::fs::read(&args[1]).unwrap();
    let limit: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3_000_000);
    let secs: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(20.0);
    let bit_rate = args.get(4).map(|s| s != "packet").unwrap_or(true);
    let t = nicsim_xdp::Target::builtin("nfp")
        .unwrap()
        .unwrap()
        .without_mac_limit();
    let a = nicsim_xdp::Analysis::new(&bytes, t, &nicsim_xdp::Options::default()).unwrap();
    println!(
        "graph {} nodes {} edges, search graph {} nodes {} edges",
        a.dag.n,
        a.dag.n_edges(),
        a.search_dag.n,
        a.search_dag.n_edges()
    );
    {
        let d = &a.search_dag;
        let mut indeg = vec![0u32; d.n];
        for &v in &d.to {
            indeg[v as usize] += 1;
        }
        let joins = indeg.iter().filter(|&&k| k >= 2).count();
        let mut hist = std::collections::BTreeMap::new();
        for &k in &indeg {
            *hist.entry(k).or_insert(0) += 1;
        }
        println!("in-degrees (degree: nodes) {hist:?}");
        let outs = (0..d.n as u32).filter(|&u| d.edges(u).count() >= 2).count();
        let classes = nicsim_xdp::paths::mps_classes(d, &a.target);
        println!("joins {joins} branches {outs} classes {classes:?}");
    }
    let mut s = nicsim_xdp::analysis::Search::new(a, bit_rate);
    println!("kept nodes {}", s.merger.skel.kept());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    let c0 = cpu_seconds();
    let t0 = std::time::Instant::now();
    let n = s.enumerate(limit, Some(deadline), std::env::var("EDGES").is_ok());
    let dt = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c0;
    let (prefixes, candidates) = s.merger.streams.iter().fold((0, 0), |(a, b), x| {
        let (l, c) = x.size();
        (a + l, b + c)
    });
    println!(
        "{prefixes} prefixes ({:.1} per path), {candidates} candidates",
        prefixes as f64 / n.max(1) as f64
    );
    println!(
        "{n} paths in {dt:.3} s: {:.0} paths/s ({cpu:.2} s CPU: {:.0} paths/CPU-s); pulled {} dropped {}; memory {:.1} MB",
        n as f64 / dt,
        n as f64 / cpu,
        s.merger.pulled,
        s.merger.dropped,
        s.memory_bytes() as f64 / (1 << 20) as f64
    );
}

/// User and system CPU time of this process so far (from /proc, in clock ticks of 10 ms).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 (utime, stime), counted from the state field (3) after the name.
    (ticks(11) + ticks(12)) / 100.0
}
