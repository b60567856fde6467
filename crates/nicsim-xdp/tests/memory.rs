//! What the analysis allocates, counted by a global allocator (bytes requested, not RSS, so the
//! numbers do not depend on the machine): a large `--loop-bound` must not make memory grow
//! faster than the graph, nor take the machine's memory, and the whole analysis (graph, split,
//! search state, queries) stays within its budget (`Options::memory_budget_bytes`, the core's share
//! of `--memory-mb`). Allocations past `CAP` fail (the test binary aborts) rather than go on.

mod common;

use common::{analysis, nfp, obj};
use nicsim_xdp::{Analysis, Options, XdpError};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use nicsim_xdp::analysis::{Next, Search};

const CAP: usize = 3 << 30;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

impl Counting {
    fn take(size: usize) -> bool {
        let now = CURRENT.fetch_add(size, Relaxed) + size;
        if now > CAP {
            CURRENT.fetch_sub(size, Relaxed);
            return false;
        }
        PEAK.fetch_max(now, Relaxed);
        true
    }

    /// Counts `size` bytes, then allocates them with `alloc` (giving them back if it fails);
    /// a null pointer beyond the cap.
    fn counted(size: usize, alloc: impl FnOnce() -> *mut u8) -> *mut u8 {
        if !Counting::take(size) {
            return std::ptr::null_mut();
        }
        let p = alloc();
        if p.is_null() {
            CURRENT.fetch_sub(size, Relaxed);
        }
        p
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        Counting::counted(l.size(), || unsafe { System.alloc(l) })
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        Counting::counted(l.size(), || unsafe { System.alloc_zeroed(l) })
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        CURRENT.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() && !Counting::take(new - l.size()) {
            return std::ptr::null_mut();
        }
        let q = unsafe { System.realloc(p, l, new) };
        if q.is_null() {
            if new > l.size() {
                CURRENT.fetch_sub(new - l.size(), Relaxed);
            }
        } else if new < l.size() {
            CURRENT.fetch_sub(l.size() - new, Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The peak is process-wide: one measurement at a time.
static ONE: Mutex<()> = Mutex::new(());

/// `f()`, and the most bytes allocated beyond what was allocated before it, at any time in it.
fn peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Relaxed);
    PEAK.store(base, Relaxed);
    let x = f();
    (x, PEAK.load(Relaxed) - base)
}

const GIB: usize = 1 << 30;

#[test]
fn costing_keeps_abstract_states_only_while_they_are_needed() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // loop_nested's inner loop unrolled 1000 times, inside an outer one unrolled 10 times: 121k
    // nodes, whose split by constants has as many. An abstract state (3.3 kB: registers and
    // 128 stack cells) was kept for every node while the graph was costed, and again while it
    // was split: 4.2 kB a node at the peak. They are kept now only from the first edge that
    // reaches a node until it is visited (and at call nodes until their returns).
    let p = nicsim_xdp::load(&obj("loop_nested"), None).unwrap();
    let limits = nicsim_xdp::cfg::Limits {
        loop_bound: Some(10),
        ..Default::default()
    };
    let g = nicsim_xdp::cfg::build(&p, limits).unwrap();
    let (dag, bytes) = peak(|| nicsim_xdp::cost::costed(&p, &g, &nfp()).unwrap());
    let n = dag.n;
    assert!(n > 100_000, "{n}");
    assert!(bytes / n < 1_000, "costing: {} bytes a node", bytes / n);
    drop((dag, g, p));
    // The whole analysis: now mostly the split's constants (264 bytes, in a map and a list).
    let (a, bytes) = peak(|| analysis("loop_nested", Some(10)).unwrap());
    assert!(a.search_dag.n >= n / 2, "{}", a.search_dag.n);
    assert!(bytes / n < 2_500, "analysis: {} bytes a node", bytes / n);
}

#[test]
fn a_large_loop_bound_is_refused_by_the_budget_not_the_machine() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // The fuzzing case: loop_nobound with --loop-bound 30000 (270k nodes) took 172 s and 19.7
    // GB. Its path constants differ on every iteration, so the split would grow to 64 times
    // the graph before it gave up (17 M split nodes); and in bit-rate mode every iteration adds
    // an MPS class, each with a stream whose tables cover every kept node (~30,000 of each:
    // hundreds of GB).
    let (a, bytes) = peak(|| analysis("loop_nobound", Some(30_000)).unwrap());
    assert!(a.dag.n > 250_000, "{}", a.dag.n);
    assert!(bytes < GIB, "the analysis allocated {bytes} bytes");
    let budget = 2 * GIB; // `--memory-mb` by default
    let (mut s, bytes) = peak(|| Search::with_budget(a, true, budget));
    assert!(!s.merger.built && s.merger.streams.is_empty());
    assert!(bytes < GIB / 4, "the search allocated {bytes} bytes");
    assert!(s.memory_bytes() > 100 * budget, "{}", s.memory_bytes());
    // The search stops at once, as when its state reaches the budget later: the guarantee is
    // the naive bound (nothing is known beyond it).
    assert!(matches!(s.next_query(None), Next::OutOfMemory));
    assert_eq!(s.floor(), 0.0);
}

#[test]
fn the_search_tables_estimate_is_what_they_take() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // loop_nobound unrolled 1000 times, bit rate: 942 classes × 1006 kept nodes × 2 layers.
    let a = analysis("loop_nobound", Some(1000)).unwrap();
    let (s, bytes) = peak(|| Search::with_budget(a, true, usize::MAX));
    assert!(s.merger.built);
    let est = s.merger.tables;
    // The estimate leaves out the prefixes the streams build for their first paths, which
    // the search's running estimate counts.
    assert!(
        est as f64 > 0.7 * bytes as f64 && (est as f64) < 1.1 * bytes as f64,
        "estimated {est}, allocated {bytes}"
    );
    assert!(s.memory_bytes() as f64 > 0.8 * bytes as f64);
    // The suite's search tables are small next to the default budget.
    for name in [
        "parser",
        "dos_filter",
        "quic_lb_v4",
        "quic_lb_v6",
        "rtp_alaw",
        "rtp_alaw_opt",
        "dns_cache",
        "count_min_20",
        "path_explosion",
    ] {
        for bit in [true, false] {
            let s = Search::with_budget(analysis(name, None).unwrap(), bit, 2 * GIB);
            assert!(
                s.merger.built && s.merger.tables < 64 << 20,
                "{name}: {}",
                s.merger.tables
            );
        }
    }
}

const MB: usize = 1 << 20;

/// The analysis of `name` within `budget` bytes.
fn within(name: &str, loop_bound: Option<u32>, budget: usize) -> Result<Analysis, XdpError> {
    Analysis::new(
        &obj(name),
        nfp(),
        &Options {
            loop_bound,
            memory_budget_bytes: Some(budget),
            ..Options::default()
        },
    )
}

/// The analysis of `name` within `budget`, then its search (bit rate) for up to 50 queries:
/// the most allocated at any time, and how the search ended.
fn analysis_and_search(
    name: &str,
    loop_bound: Option<u32>,
    budget: usize,
) -> (Option<&'static str>, usize) {
    peak(|| {
        let a = match within(name, loop_bound, budget) {
            Ok(a) => a,
            Err(e) => {
                assert!(matches!(e, XdpError::Memory { .. }), "{e}");
                return None;
            }
        };
        let mut s = Search::with_total_budget(a, true);
        for _ in 0..50 {
            match s.next_query(None) {
                Next::Query(_, q) => {
                    // Held as the solver checks it (its text, JSON and Python's copies).
                    let held = std::hint::black_box(q.smt.repeat(3));
                    drop(held);
                    s.pass();
                }
                Next::OutOfMemory => return Some("memory"),
                Next::Exhausted => return Some("exhausted"),
                Next::Timeout => return Some("timeout"),
            }
        }
        Some("queries")
    })
}

#[test]
fn the_budget_bounds_the_whole_analysis() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // The suite's largest graphs and the fuzzing cases, each within a small budget: the graph,
    // the split by constants, the search's tables and state and each query stay within it.
    for (name, bound, budget) in [
        ("loop_nested", Some(2), 64 * MB),
        ("loop_nested", Some(10), 64 * MB),
        ("loop_nested", Some(10), 128 * MB),
        ("loop_nobound", Some(1000), 32 * MB),
        ("loop_nobound", Some(3000), 64 * MB),
        ("call_fanout", None, 64 * MB),
        ("dns_cache", None, 16 * MB),
        ("dns_cache", None, 64 * MB),
        ("path_explosion", None, 16 * MB),
        ("count_min_20", None, 16 * MB),
    ] {
        let (end, bytes) = analysis_and_search(name, bound, budget);
        eprintln!(
            "{name} {bound:?} budget {} MB: peak {:.1} MB, {end:?}",
            budget / MB,
            bytes as f64 / MB as f64
        );
        assert!(
            bytes <= budget,
            "{name} {bound:?}: {} MB allocated at the peak, budget {} MB (ended: {end:?})",
            bytes / MB,
            budget / MB
        );
    }
}

#[test]
fn a_graph_that_does_not_fit_is_a_one_line_error_naming_the_budget() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // loop_nested: the outer loop's bound search holds an abstract state (3.3 kB) for each of
    // the 11,000 instruction instances (the inner loop unrolled): 36 MB. Before the budget it
    // took 195 MB to find no bound, and the whole analysis 1.4 GB (`--memory-mb 256`).
    let (e, bytes) = peak(|| {
        within("loop_nested", Some(2), 32 * MB)
            .err()
            .expect("refused")
    });
    let msg = e.to_string();
    assert!(bytes <= 32 * MB, "{} MB", bytes / MB);
    assert!(
        msg.contains("--memory-mb") && msg.contains("loop_nested.c:12") && msg.contains("32 MB"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    // call_fanout: the inlined graph would have 8^7 instances of its innermost function; it
    // took 527 MB to reach the fixed limit of 4,000,000 nodes.
    let (e, bytes) = peak(|| within("call_fanout", None, 64 * MB).err().expect("refused"));
    let msg = e.to_string();
    assert!(bytes <= 64 * MB, "{} MB", bytes / MB);
    assert!(
        msg.contains("--memory-mb") && msg.contains("instruction instances"),
        "{msg}"
    );
    // Without a budget the fixed limit stays.
    let e = analysis("call_fanout", None)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("4000000 instruction instances"), "{e}");
}

#[test]
fn what_the_graph_leaves_the_search_and_its_queries_is_what_it_gets() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // The split by constants needs 1.2 kB a split node: within 64 MB, dns_cache (70,264 split
    // nodes, 83 MB) is searched without it, and still reaches its slowest paths.
    let a = within("dns_cache", None, 64 * MB).unwrap();
    assert_eq!(a.search_dag.n, a.dag.n, "no split");
    let a = within("dns_cache", None, 256 * MB).unwrap();
    assert!(a.search_dag.n > 10 * a.dag.n, "split");
    // A path whose query would not fit stops the search, and stays counted by the floor: a
    // valid bound.
    let a = within("loop_nested", Some(10), 64 * MB).unwrap();
    let mut s = Search::with_total_budget(a, true);
    s.memory_budget = s.memory_bytes() + MB; // the path's query is about 3.4 MB of text
    assert!(matches!(s.next_query(None), Next::OutOfMemory));
    assert!(s.floor() > 0.0 && s.current_path().is_some());
}
