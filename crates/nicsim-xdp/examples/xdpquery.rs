//! Times the search's query building alone (paths handed out slowest first, each one's SMT
//! query built by the symbolic executor; no solver): `cargo run --release --example xdpquery
//! -p nicsim-xdp -- OBJ PROGRAM TARGET.toml [SECONDS]`. Packet-rate mode. Prints the paths,
//! the queries built, the queries' total text and the time, for profiling (`perf record`).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bytes = std::fs::read(&args[1]).unwrap();
    let program = Some(args[2].clone()).filter(|p| !p.is_empty());
    let toml = std::fs::read_to_string(&args[3]).unwrap();
    let secs: f64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let t = nicsim_xdp::Target::from_toml(&toml, &args[3]).unwrap();
    let opts = nicsim_xdp::Options {
        program,
        ..Default::default()
    };
    let a = nicsim_xdp::Analysis::new(&bytes, t, &opts).unwrap();
    let mut s = nicsim_xdp::analysis::Search::with_total_budget(a, false);
    let start = std::time::Instant::now();
    let deadline = start + std::time::Duration::from_secs_f64(secs);
    let (mut n, mut text) = (0u64, 0usize);
    while let nicsim_xdp::analysis::Next::Query(_, q) = s.next_query(Some(deadline)) {
        if std::time::Instant::now() >= deadline {
            break;
        }
        n += 1;
        text += q.smt.len();
    }
    let (enumerated, _, skipped, _) = s.counts();
    println!(
        "{n} queries ({} MB of text), {enumerated} paths handed out, {skipped} skipped, {:.2} s",
        text >> 20,
        start.elapsed().as_secs_f64()
    );
}
