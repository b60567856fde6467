//! The analyzer on the clang-built programs in $NICSIM_XDP_OBJS (`make xdp-suite` builds them;
//! `make test` does so before running these tests).

mod common;

use common::{analysis, nfp, obj};
use nicsim_xdp::{cfg, Analysis, Options};

/// Paths from the entry to the sink of a costed graph.
fn dag_paths(d: &nicsim_xdp::cost::Dag) -> u128 {
    let mut n = vec![0u128; d.n];
    n[d.sink() as usize] = 1;
    for &u in d.topo.iter().rev() {
        for e in d.edges(u) {
            n[u as usize] += n[d.to[e] as usize];
        }
    }
    n[0]
}

fn bounds(a: &Analysis) -> Vec<(u32, bool)> {
    a.graph.loops.iter().map(|l| (l.bound, l.evident)).collect()
}

#[test]
fn loop_bounds_are_found_where_the_code_makes_them_evident() {
    // for (i = 0; i < 16; i++), rotated by clang: the back edge is taken 15 times.
    assert_eq!(bounds(&analysis("loop_const", None).unwrap()), [(15, true)]);
    // i < (pkt[0] & 31): at most 31 iterations.
    assert_eq!(
        bounds(&analysis("loop_masked", None).unwrap()),
        [(30, true)]
    );
    // One non-inlined callee called with 7 and with 10 words: one unrolling per call site.
    let mut b = bounds(&analysis("calls", None).unwrap());
    b.sort();
    assert_eq!(b, [(6, true), (9, true)]);
    for n in [2u32, 5, 13, 20] {
        let a = analysis(&format!("count_min_{n}"), None).unwrap();
        assert_eq!(bounds(&a), [(n - 1, true)], "count_min_{n}");
    }
}

#[test]
fn a_loop_without_evident_bound_needs_one() {
    let e = analysis("loop_nobound", None).err().expect("must fail");
    let msg = e.to_string();
    assert!(
        msg.contains("no evident bound") && msg.contains("--loop-bound"),
        "{msg}"
    );
    assert!(
        msg.contains("loop_nobound.c:"),
        "names the source line: {msg}"
    );
    let a = analysis("loop_nobound", Some(40)).unwrap();
    assert_eq!(bounds(&a), [(40, false)]);
    // The walk reads one byte per iteration: more iterations, slower bound.
    let b = analysis("loop_nobound", Some(80)).unwrap();
    assert!(
        b.naive_summary()["naive"]["pps"].as_f64() < a.naive_summary()["naive"]["pps"].as_f64()
    );
}

#[test]
fn unrolled_graphs_are_acyclic_and_count_paths() {
    let a = analysis("loop_const", None).unwrap();
    // Bounds check fails; or 16 iterations then sum odd / even.
    assert_eq!(a.graph.path_count(), 3);
    let order = a.graph.topo_order();
    assert_eq!(order.len(), a.graph.nodes.len(), "acyclic");
    // Count-Min: four early exits; UDP or TCP, then one lookup per stage, whose null check
    // the costed graph drops (the key is in the array's range: the lookup always finds).
    for n in [1u32, 4, 10] {
        let a = analysis(&format!("count_min_{n}"), None).unwrap();
        assert_eq!(dag_paths(&a.dag), 4 + 2, "count_min_{n}");
        assert!(a.graph.path_count() >= 4 + 2, "count_min_{n}");
    }
}

#[test]
fn count_min_is_dram_bound_at_the_atomic_add_rate() {
    // Paper §4.2: the DRAM engine does 248.5 M atomic adds/s; N stages are N adds per packet.
    for n in [10u32, 15, 20] {
        let a = analysis(&format!("count_min_{n}"), None).unwrap();
        let s = a.naive_summary();
        assert_eq!(s["naive"]["bottleneck"], "dram", "count_min_{n}");
        let pps = s["naive"]["pps"].as_f64().unwrap();
        let want = 248.5e6 / n as f64;
        assert!(
            (pps / want - 1.0).abs() < 1e-5,
            "count_min_{n}: {pps} vs {want}"
        );
        // 60-byte packets: 119.28/N Gbit/s.
        let bps = s["naive"]["bps"].as_f64().unwrap();
        assert!((bps / (want * 480.0) - 1.0).abs() < 1e-5);
    }
    // Few stages: the MAC limits.
    let s = analysis("count_min_1", None).unwrap().naive_summary();
    assert_eq!(s["naive"]["bottleneck"], "mac");
}

#[test]
fn minimum_packet_size_comes_from_the_bounds_checks() {
    // loop_nobound reads one byte per iteration after checking p + 1 <= end: the slowest
    // path in the 40-iteration unrolling needs 40 bytes, floored at 60.
    let a = analysis("loop_nobound", Some(100)).unwrap();
    let needs: Vec<u32> = a.dag.need.iter().copied().filter(|&n| n > 0).collect();
    assert!(needs.contains(&1) && needs.contains(&100), "{needs:?}");
    assert_eq!(nicsim_xdp::paths::mps_classes(&a.dag, &a.target)[0], 60);
}

#[test]
fn bad_objects_are_one_line_errors() {
    let err = |bytes: &[u8], section: Option<&str>| {
        Analysis::new(
            bytes,
            nfp(),
            &Options {
                section: section.map(str::to_string),
                ..Options::default()
            },
        )
        .err()
        .expect("must fail")
        .to_string()
    };
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    assert!(err(&exe, None).contains("not a BPF object"));
    let calls = obj("calls");
    for cut in [0, 16, 100, calls.len() / 2, calls.len() - 1] {
        let m = err(&calls[..cut], None);
        assert!(!m.contains('\n'), "{m}");
    }
    assert!(err(&calls, Some("nope")).contains("no program in section or function 'nope'"));
    assert!(err(&obj("two_progs"), None).contains("several XDP programs"));
    let m = err(&obj("bad_printk"), None);
    assert!(
        m.contains("unsupported helper bpf_trace_printk (id 6)"),
        "{m}"
    );
    // An unknown opcode: overwrite the program's first instruction.
    let mut bytes = obj("loop_const");
    let f = object::File::parse(&*bytes).unwrap();
    use object::{Object, ObjectSection};
    let off = f.section_by_name("xdp").unwrap().file_range().unwrap().0 as usize;
    drop(f);
    bytes[off] = 0xff;
    let m = err(&bytes, None);
    assert!(
        m.contains("instruction 0") && m.contains("opcode 0xff"),
        "{m}"
    );
}

#[test]
fn mutated_objects_never_panic() {
    // A deterministic smoke version of the fuzz target (crates/nicsim-xdp/fuzz).
    let base = obj("calls");
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..3000 {
        let mut b = base.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x as usize) % b.len();
            b[i] = (x >> 32) as u8;
        }
        let _ = Analysis::new(&b, nfp(), &Options::default());
    }
}

/// `f()` on another thread, or a failure if it takes longer than `secs` seconds.
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("{what}: not done within {secs} s"))
}

#[test]
fn bound_search_stops_at_what_could_be_unrolled() {
    // The outer loop has no evident bound, and once the inner one is unrolled its body is
    // ~1000 copies of the inner body: the search for a bound made 2^16 passes over it (about
    // half an hour) before giving up. Past max_nodes / body there is nothing to find: the
    // search now stops there, in seconds.
    let e = within(120, "loop_nested", || {
        analysis("loop_nested", None).err().map(|e| e.to_string())
    })
    .expect("must fail");
    assert!(
        e.contains("no evident bound") && e.contains("loop_nested.c:"),
        "{e}"
    );
    let a = within(120, "loop_nested --loop-bound 3", || {
        analysis("loop_nested", Some(3)).map_err(|e| e.to_string())
    })
    .unwrap();
    let mut b = bounds(&a);
    b.sort();
    assert_eq!(b, [(3, false), (999, true)]);
}

#[test]
fn fanned_out_calls_are_refused_before_they_are_inlined() {
    // Eight levels of functions, each calling the next at eight sites: 8^7 instances of the
    // innermost. Inlining had no limit: the graph (~10^7 nodes) was built, then costed with
    // an abstract state per node (gigabytes).
    let p = nicsim_xdp::load(&obj("call_fanout"), None).unwrap();
    let Err(e) = cfg::build(&p, cfg::Limits::default()) else {
        panic!("must fail");
    };
    assert_eq!(e, cfg::CfgError::TooLarge(cfg::Limits::default().max_nodes));
    let e = analysis("call_fanout", None).err().expect("must fail");
    assert!(e.to_string().contains("would exceed"), "{e}");
}

#[test]
fn a_program_that_never_exits_is_an_error() {
    // Found by the decode fuzz target: once the inner loop is unrolled, nothing from the
    // entry reaches an exit, pruning left an empty graph, and the search for the next loop
    // indexed its node 0 (a panic).
    let e = analysis("no_exit", None).err().expect("must fail");
    assert!(
        e.to_string()
            .contains("no path from the entry reaches an exit"),
        "{e}"
    );
}

#[test]
fn legacy_and_btf_maps_load() {
    let a = analysis("legacy_maps", None).unwrap();
    let m: Vec<_> = a
        .program
        .maps
        .iter()
        .map(|m| (m.name.as_str(), m.type_name(), m.value_size))
        .collect();
    assert_eq!(m, [("packets", "array", 8)]);
    let a = analysis("calls", None).unwrap();
    let m: Vec<_> = a
        .program
        .maps
        .iter()
        .map(|m| (m.name.as_str(), m.type_name()))
        .collect();
    assert_eq!(
        m,
        [
            ("bytes", "percpu_array"),
            ("counters", "array"),
            ("seen", "hash")
        ]
    );
    // Source lines come from BTF.
    assert!(a.program.lines.iter().any(|l| l.file.ends_with("calls.c")));
    let _ = cfg::Limits::default();
}

/// Every entry→sink path by brute force: (cost vector, max need).
fn all_paths(dag: &nicsim_xdp::cost::Dag) -> Vec<([u64; 2], u32)> {
    let mut out = Vec::new();
    let mut stack = vec![(0u32, [0u64; 2], 0u32)];
    while let Some((u, c, need)) = stack.pop() {
        if u == dag.sink() {
            out.push((c, need));
            continue;
        }
        for e in dag.edges(u) {
            let mut c2 = c;
            c2[0] += dag.cost[e][0];
            c2[1] += dag.cost[e][1];
            stack.push((dag.to[e], c2, need.max(dag.need[e])));
        }
    }
    out
}

#[test]
fn kundu_streams_enumerate_every_path_in_order() {
    use nicsim_xdp::paths::{Refuted, Skeleton, Stream};
    for name in ["loop_masked", "calls", "count_min_6"] {
        let a = analysis(name, None).unwrap();
        let brute = all_paths(&a.dag);
        assert!(
            !brute.is_empty() && brute.len() as u128 <= a.graph.path_count(),
            "{name}"
        );
        let sk = Skeleton::new(&a.dag);
        let r = Refuted::default();
        for c in 0..2 {
            let mut s = Stream::new(&sk, c, u32::MAX);
            let mut got = Vec::new();
            while let Some((_, e)) = s.next(&sk, &r) {
                got.push(e.cost[c]);
            }
            let mut want: Vec<u64> = brute.iter().map(|p| p.0[c]).collect();
            want.sort_unstable_by(|a, b| b.cmp(a));
            assert_eq!(got, want, "{name} component {c}");
        }
    }
}

#[test]
fn merger_hands_out_each_path_once_in_rate_order() {
    use nicsim_xdp::paths::{rate_of, Merger};
    for (name, bit) in [
        ("calls", false),
        ("calls", true),
        ("loop_masked", true),
        ("count_min_8", false),
    ] {
        let a = analysis(name, None).unwrap();
        let t = &a.target;
        let brute = all_paths(&a.dag);
        let mut m = Merger::new(&a.dag, t, bit);
        let mut keys = Vec::new();
        while let Some(f) = m.next(t) {
            keys.push(f.key);
        }
        assert_eq!(keys.len(), brute.len(), "{name} bit={bit}: each path once");
        assert!(
            keys.windows(2).all(|w| w[0] <= w[1]),
            "{name} bit={bit}: in order"
        );
        let mut want: Vec<f64> = brute
            .iter()
            .map(|(c, need)| {
                let pps = rate_of(t, c).pps;
                if bit {
                    pps * 8.0 * (*need).max(t.limits.min_packet_bytes) as f64
                } else {
                    pps
                }
            })
            .collect();
        want.sort_by(f64::total_cmp);
        for (g, w) in keys.iter().zip(&want) {
            assert!((g / w - 1.0).abs() < 1e-12, "{name} bit={bit}: {g} vs {w}");
        }
        // The naive bound is the first key.
        let naive = nicsim_xdp::paths::naive(&a.dag, t);
        let first = if bit { naive.bps } else { naive.pps };
        assert!(
            (keys[0] / first - 1.0).abs() < 1e-12,
            "{name}: {} vs {first}",
            keys[0]
        );
    }
}

/// Every entry→sink path of `dag` as its steps (instruction, edge kind), optionally only those
/// whose own constants never contradict a branch.
fn step_paths(
    dag: &nicsim_xdp::cost::Dag,
    model: Option<&nicsim_xdp::consts::ConstModel>,
) -> Vec<Vec<(u32, cfg::EdgeKind)>> {
    use nicsim_xdp::consts::Consts;
    let mut out = Vec::new();
    let mut stack = vec![(0u32, Consts::default(), Vec::new())];
    while let Some((u, c, steps)) = stack.pop() {
        if u == dag.sink() {
            out.push(steps);
            continue;
        }
        for e in dag.edges(u) {
            let c2 = match model {
                Some(m) => match m.apply(e, &c) {
                    Some(c2) => c2,
                    None => continue,
                },
                None => c,
            };
            let mut s2 = steps.clone();
            s2.push((dag.pc[e], dag.kind[e]));
            stack.push((dag.to[e], c2, s2));
        }
    }
    out.sort_by_key(|p| format!("{p:?}"));
    out
}

#[test]
fn split_graph_keeps_exactly_the_paths_that_agree_with_their_constants() {
    use nicsim_xdp::consts::ConstModel;
    for name in ["flags", "loop_masked", "calls"] {
        let a = analysis(name, None).unwrap();
        let at = nicsim_xdp::cost::states(&a.program, &a.graph, &a.graph.topo_order());
        let model = ConstModel::new(&a.program, &a.dag, &at);
        let all = step_paths(&a.dag, None);
        let agreeing = step_paths(&a.dag, Some(&model));
        let split = step_paths(&a.search_dag, None);
        assert_eq!(split, agreeing, "{name}");
        if name == "flags" {
            // a = 1 and b = 1 never hold together, nor does a branch on a flag that was never
            // set go the way that needs it.
            assert!(
                agreeing.len() < all.len(),
                "{name}: {} of {}",
                agreeing.len(),
                all.len()
            );
        }
    }
}

/// Every entry→sink path of `dag` as its edges, unless there are more than `max`.
fn edge_paths(dag: &nicsim_xdp::cost::Dag, max: usize) -> Option<Vec<Vec<u32>>> {
    let mut out = Vec::new();
    let mut stack = vec![(0u32, Vec::new())];
    while let Some((u, p)) = stack.pop() {
        if u == dag.sink() {
            out.push(p);
            if out.len() > max {
                return None;
            }
            continue;
        }
        for e in dag.edges(u) {
            let mut q = p.clone();
            q.push(e as u32);
            stack.push((dag.to[e], q));
        }
    }
    Some(out)
}

#[test]
fn merger_never_hands_out_a_refuted_path_and_hands_out_every_other() {
    // The search graphs of real programs, prefixes refuted as the search does (a prefix of the
    // path just handed out) and elsewhere; checked against every path by brute force.
    use nicsim_xdp::paths::{path_cost, rate_of, Merger};
    let mut checked = 0;
    for name in [
        "calls",
        "loop_masked",
        "flags",
        "dos_filter",
        "rtp_alaw",
        "quic_lb_v4",
        "quic_lb_v6",
    ] {
        let a = analysis(name, None).unwrap();
        let d = &a.search_dag;
        let Some(all) = edge_paths(d, 50_000) else {
            continue;
        };
        let t = &a.target;
        for bit in [false, true] {
            let mut m = Merger::new(d, t, bit);
            let mut seen = std::collections::HashSet::new();
            let mut last = 0.0;
            let mut i = 0u64;
            while let Some(f) = m.next(t) {
                let p = m.edges(&f);
                assert!(!m.refuted.covers(&p), "{name}: a refuted path");
                assert!(seen.insert(p.clone()), "{name}: a path twice");
                assert_eq!(f.cost, path_cost(d, &p), "{name}");
                let need = p.iter().map(|&e| d.need[e as usize]).max().unwrap_or(0);
                assert_eq!(f.mps, need.max(t.limits.min_packet_bytes), "{name}");
                let pps = rate_of(t, &f.cost).pps;
                let key = if bit { pps * 8.0 * f.mps as f64 } else { pps };
                assert!((f.key / key - 1.0).abs() < 1e-12 && f.key >= last, "{name}");
                last = f.key;
                i += 1;
                // Mostly long prefixes, as unsat cores give: short ones leave little to check.
                if i.is_multiple_of(3) {
                    let n = p.len().saturating_sub((i as usize * 7919) % 9).max(1);
                    m.refute(t, &p[..n]);
                }
                if i.is_multiple_of(5) {
                    let q = &all[(i as usize * 104_729) % all.len()];
                    m.refute(t, &q[..q.len() - q.len() / 8]);
                }
            }
            for p in &all {
                assert!(
                    seen.contains(p) || m.refuted.covers(p),
                    "{name}: a path lost"
                );
            }
            checked += all.len();
        }
    }
    assert!(checked > 1_000, "{checked}");
}

#[test]
fn length_lemmas_apply_to_the_paths_that_assert_all_their_conditions() {
    use nicsim_xdp::analysis::{Next, Search};
    let a = analysis("quic_lb_v6", None).unwrap();
    let mut s = Search::new(a, true);
    let Next::Query(_, q) = s.next_query(None) else {
        panic!("a query")
    };
    assert_eq!(s.current_min_len(), 0, "no lemma yet");
    // Two conditions of the first path (a core of a length bound) need 100 bytes.
    let core: Vec<(usize, String)> = q.asserts.iter().step_by(3).take(2).cloned().collect();
    assert_eq!(core.len(), 2);
    let names: Vec<String> = core.iter().map(|(k, _)| format!("a{k}")).collect();
    s.longer(
        &[names[0].clone(), "len_range".into(), names[1].clone()],
        100,
    );
    assert_eq!(s.current_min_len(), 100);
    s.pass();
    let (mut with, mut without, mut anyway) = (0, 0, 0);
    for _ in 0..300 {
        let Next::Query(_, q) = s.next_query(None) else {
            break;
        };
        let all = core
            .iter()
            .all(|(_, t)| q.asserts.iter().any(|(_, u)| u == t));
        assert_eq!(s.current_min_len(), if all { 100 } else { anyway });
        if all {
            with += 1;
        } else {
            without += 1;
        }
        if with + without == 150 {
            // A second lemma, on every path (an empty core): the larger bound wins.
            s.longer(&["len_range".into()], 80);
            anyway = 80;
            assert_eq!(s.current_min_len(), if all { 100 } else { 80 });
        }
        s.pass_longer();
    }
    assert!(with > 10 && without > 10, "{with} {without}");
    assert_eq!(s.length_skipped, (with + without) as u64);
}

/// A target's MAC rate may be `inf` (no MAC: what `nicsim xdp calibrate` writes for the x86
/// JIT), but not NaN, zero or negative; every other number must be finite.
#[test]
fn target_mac_rate_may_be_infinite_but_not_nan() {
    let text = nicsim_xdp::target::builtin("nfp").unwrap();
    let with = |from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        nicsim_xdp::target::Target::from_toml(&text.replacen(from, to, 1), "t.toml")
    };
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("mac_pps"))
        .unwrap();
    assert!(with(line, "mac_pps = inf").is_ok());
    for bad in ["mac_pps = nan", "mac_pps = 0.0", "mac_pps = -1.0"] {
        let e = with(line, bad).unwrap_err().to_string();
        assert!(e.contains("mac_pps"), "{bad}: {e}");
    }
}

/// The naive bit-rate bound, one graph pass per MPS class, as `paths::naive` had it before it
/// grouped the classes.
fn naive_bps_per_class(a: &Analysis) -> f64 {
    use nicsim_xdp::paths::{longest_to_sink, mps_classes, rate_of};
    let (dag, t) = (&a.dag, &a.target);
    let mut bps = f64::INFINITY;
    for s in mps_classes(dag, t) {
        let mut pps = t.limits.mac_pps;
        for c in 0..nicsim_xdp::cost::NC {
            if let Some(len) = longest_to_sink(dag, c, s).0[0] {
                let mut cost = [0u64; nicsim_xdp::cost::NC];
                cost[c] = len;
                pps = pps.min(rate_of(t, &cost).pps);
            }
        }
        bps = bps.min(pps * 8.0 * s as f64);
    }
    bps
}

/// With many MPS classes (a loop unrolled N times checks N packet offsets) and a large graph,
/// the naive bound groups classes (its work bounded): still a bound below every class's. With
/// classes and graph within the work bound, it is each class's, as before.
#[test]
fn naive_bound_groups_many_classes_soundly() {
    use nicsim_xdp::paths::{mps_classes, naive, naive_groups, MIN_NAIVE_GROUPS};
    for (name, bound) in [("count_min_5", None), ("loop_nobound", Some(400))] {
        let a = analysis(name, bound).unwrap();
        let k = mps_classes(&a.dag, &a.target).len();
        assert_eq!(
            naive_groups(&a.dag, k),
            k,
            "{name}: small enough to be exact"
        );
        assert_eq!(
            naive(&a.dag, &a.target).bps,
            naive_bps_per_class(&a),
            "{name}"
        );
    }
    // Grouped: the same graph with fewer groups than classes (as a large graph would get).
    let a = analysis("loop_nobound", Some(400)).unwrap();
    let k = mps_classes(&a.dag, &a.target).len();
    assert!(k > 4 * MIN_NAIVE_GROUPS, "{k} classes");
    let exact = naive_bps_per_class(&a);
    let grouped = nicsim_xdp::paths::naive_grouped(&a.dag, &a.target, MIN_NAIVE_GROUPS).bps;
    assert!(grouped <= exact && grouped > 0.0, "{grouped} vs {exact}");
}

#[test]
fn bpf_loop_calls_are_loops_bounded_by_nr_loops() {
    // bpf_loop(8, walk_option, &w, 0): at most 8 calls of the callback.
    let a = analysis("loop_callback", None).unwrap();
    assert_eq!(bounds(&a), [(8, true)]);
    assert_eq!(a.graph.loops[0].header_pc as usize, {
        let p = &a.program;
        (0..p.code.len())
            .find(|&pc| cfg::is_loop_call(p, pc))
            .unwrap()
    });
    // A bpf_loop in the callback of another: the inner one unrolled first.
    let a = analysis("loop_cb_nested", None).unwrap();
    assert_eq!(bounds(&a), [(4, true), (4, true)]);
    // nr_loops from the packet (a u32): up to BPF_MAX_LOOPS, more than can be unrolled: the
    // call is summarised with the kernel's cap, and its naive bound is far below --loop-bound's.
    let s = analysis("loop_cb_pktlen", None).unwrap();
    assert_eq!(bounds(&s), [(1 << 23, true)]);
    assert!(s.graph.loops[0].summary);
    let unrolled = analysis("loop_cb_pktlen", Some(4)).unwrap();
    assert!(
        s.naive_summary()["naive"]["pps"].as_f64().unwrap() * 1e5
            < unrolled.naive_summary()["naive"]["pps"].as_f64().unwrap()
    );
    assert_eq!(
        bounds(&analysis("loop_cb_pktlen", Some(4)).unwrap()),
        [(4, false)]
    );
    // More calls cost more: the bound falls with --loop-bound.
    let b = analysis("loop_cb_pktlen", Some(12)).unwrap();
    let a = analysis("loop_cb_pktlen", Some(4)).unwrap();
    assert!(
        b.naive_summary()["naive"]["pps"].as_f64() < a.naive_summary()["naive"]["pps"].as_f64()
    );
}

#[test]
fn a_callback_address_inside_a_function_is_refused() {
    // loop_callback.o with the callback's relocation pointing 8 bytes into walk_option.
    use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};
    let mut bytes = obj("loop_callback");
    let f = object::File::parse(&*bytes).unwrap();
    let text = f.section_by_name(".text").unwrap().index();
    let xdp = f.section_by_name("xdp").unwrap();
    let base = xdp.file_range().unwrap().0 as usize;
    let at = xdp
        .relocations()
        .find_map(|(off, r)| match r.target() {
            RelocationTarget::Symbol(s) => {
                let s = f.symbol_by_index(s).unwrap();
                (s.section_index() == Some(text)).then_some(off as usize)
            }
            _ => None,
        })
        .expect("the callback's relocation");
    drop(f);
    let imm = base + at + 4;
    let v = i32::from_le_bytes(bytes[imm..imm + 4].try_into().unwrap()) + 8;
    bytes[imm..imm + 4].copy_from_slice(&v.to_le_bytes());
    let e = Analysis::new(&bytes, nfp(), &Options::default())
        .err()
        .expect("must fail")
        .to_string();
    assert!(
        e.contains("inside function 'walk_option'") && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn stack_pointers_passed_to_calls_and_callbacks_keep_their_frame() {
    // call_stack_args: pointers to the caller's stack in r1, r3 and r5, three levels down, spilled
    // in the callee, and a pointer to a struct of pointers; loop_cb_stack: a bpf_loop callback's
    // context on the caller's stack, unrolled and summarised. Every load and store goes through
    // a pointer the abstract values place (before, the callee's were unknown: costed as a random
    // entry of a large map), and neither program costs DRAM on nfp (they use no map).
    use nicsim_xdp::absint::Val;
    use nicsim_xdp::insn::Insn;
    for name in ["call_stack_args", "loop_cb_stack"] {
        let a = analysis(name, None).unwrap();
        let topo = a.graph.topo_order();
        let at = nicsim_xdp::cost::states(&a.program, &a.graph, &topo);
        let mut through_caller = 0;
        for (u, s) in at.iter().enumerate() {
            let Some(s) = s else { continue };
            let pc = a.graph.nodes[u].pc as usize;
            let base = match a.program.code[pc] {
                Some(Insn::Ldx { src, .. }) => src,
                Some(Insn::St { dst, .. }) => dst,
                _ => continue,
            };
            let v = s.regs[base as usize];
            assert!(
                matches!(v, Val::Fp(..) | Val::Ctx | Val::Pkt(_)),
                "{name}: instruction {pc} (node {u}) goes through {v:?}"
            );
            through_caller += matches!(v, Val::Fp(1.., _)) as u32;
        }
        assert!(through_caller >= 4, "{name}: {through_caller}");
        for e in 0..a.dag.n_edges() {
            assert_eq!(a.dag.cost[e][1], 0, "{name}: edge of pc {}", a.dag.pc[e]);
        }
    }
}

#[test]
fn a_callee_that_writes_the_callers_stack_leaves_no_stale_value() {
    // call_stack_args's caller sets flag = 0 and passes &flag to a callee that may set it to 1:
    // the caller's test of flag goes both ways (XDP_TX only when it is 1).
    let a = analysis("call_stack_args", None).unwrap();
    let topo = a.graph.topo_order();
    let at = nicsim_xdp::cost::states(&a.program, &a.graph, &topo);
    let tx = a.graph.nodes.iter().enumerate().any(|(u, n)| {
        at[u].is_some()
            && matches!(
                a.program.code[n.pc as usize],
                Some(nicsim_xdp::insn::Insn::Alu {
                    op: nicsim_xdp::insn::AluOp::Mov,
                    dst: 0,
                    src: nicsim_xdp::insn::Src::Imm(3),
                    ..
                })
            )
    });
    assert!(tx, "the XDP_TX branch must stay reachable");
}
