//! Prints what the analyzer sees of an object: `cargo run --example xdpdump -p nicsim-xdp -- OBJ [SECTION] [LOOP_BOUND]`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bytes = std::fs::read(&args[1]).unwrap();
    let p = match nicsim_xdp::load(
        &bytes,
        args.get(2).map(|s| s.as_str()).filter(|s| !s.is_empty()),
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2)
        }
    };
    println!(
        "{} / {}: {} slots, maps {:?}",
        p.section,
        p.name,
        p.code.len(),
        p.maps
            .iter()
            .map(|m| (
                &m.name,
                m.type_name(),
                m.key_size,
                m.value_size,
                m.max_entries
            ))
            .collect::<Vec<_>>()
    );
    for (pc, i) in p.code.iter().enumerate() {
        if let Some(i) = i {
            println!(
                "{pc:4} {:?}   {}",
                i,
                p.line(pc).map(|l| l.short()).unwrap_or_default()
            );
        }
    }
    let limits = nicsim_xdp::cfg::Limits {
        loop_bound: args.get(3).and_then(|s| s.parse().ok()),
        ..Default::default()
    };
    match nicsim_xdp::cfg::build(&p, limits) {
        Ok(g) => {
            if std::env::var("DUMP").is_ok() {
                for (i, n) in g.nodes.iter().enumerate() {
                    println!(
                        "n{i} pc{} -> {:?}",
                        n.pc,
                        n.succ.iter().map(|e| (e.to, e.kind)).collect::<Vec<_>>()
                    );
                }
            }
            println!(
                "graph: {} nodes, {} paths, loops {:?}",
                g.nodes.len(),
                g.path_count(),
                g.loops
            );
            let t = nicsim_xdp::Target::builtin("nfp").unwrap().unwrap();
            let a = nicsim_xdp::Analysis::new(
                &bytes,
                t,
                &nicsim_xdp::Options {
                    section: args.get(2).cloned().filter(|s| !s.is_empty()),
                    loop_bound: limits.loop_bound,
                    memory_budget_bytes: None,
                    ..Default::default()
                },
            );
            match a {
                Ok(a) => {
                    let s = a.naive_summary();
                    println!("naive {} path cost {}", s["naive"], s["path"]["cost"]);
                    // Instructions whose edges cost DRAM-engine cycles.
                    let mut pcs: Vec<u32> = (0..a.dag.n_edges())
                        .filter(|&e| a.dag.cost[e][1] > 0)
                        .map(|e| a.dag.pc[e])
                        .collect();
                    pcs.sort_unstable();
                    pcs.dedup();
                    println!("dram instructions: {pcs:?}");
                }
                Err(e) => println!("error: {e}"),
            }
        }
        Err(e) => println!("cfg error: {e}"),
    }
}
