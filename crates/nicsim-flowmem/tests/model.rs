//! The SmartNIC memory model: cache and DRAM mechanics, and the two designs' DRAM traffic and
//! cycles on flows whose answers can be worked out by hand.

mod common;

use common::*;
use nicsim_flowmem::model::{MemConfig, MemModel, Retrieval, Workload, TABLE_ENTRY_BYTES};
use nicsim_flowmem::{Config, Reassembly};

const ISN: u32 = 7;

/// One flow direction of `n` in-order packets of `len` bytes each (the talk's micro-benchmark
/// shape), every byte different from its neighbours.
fn flow(n: usize, len: usize) -> Reassembly {
    let c = Conn::v4();
    let mut frames = vec![c.frame(0, ISN, SYN, b"")];
    for i in 0..n {
        let payload: Vec<u8> = (0..len).map(|j| ((i * len + j) % 251) as u8).collect();
        frames.push(c.frame(0, ISN + 1 + (i * len) as u32, ACK, &payload));
    }
    reassemble(&frames, Config::default())
}

fn u250() -> MemConfig {
    MemConfig::builtin("u250-microblaze").unwrap()
}

#[test]
fn copy_based_moves_the_payload_three_times_after_reception_and_flow_based_once() {
    let r = flow(10, 1510);
    let v = r.view(0, 0).unwrap();
    let payload = 15_100u64;
    let m = MemModel::new(u250());
    let out = m.compare(std::slice::from_ref(&v), &Workload::Scan);
    let burst = |b: u64| b.div_ceil(64) * 64;
    // Both: the Packet Handler writes the payload once (whole bursts on the bus).
    assert_eq!(out.copy.receive.write_bytes, payload);
    assert_eq!(out.flow.receive.bus_bytes, burst(payload));
    // Copy-based: read the segments, write the buffer (no fill on a word store miss), then read
    // the buffer again: it is larger than the 8 KB L1, so processing misses on every line.
    let line = 16;
    let lines = payload.div_ceil(line) * line;
    assert_eq!(out.copy.assemble.read_bytes, lines);
    // The buffer's dirty lines reach DRAM as the copy and then processing evict them, and the
    // last ones at the end: each once, and each the copy's traffic whenever it happens.
    assert_eq!(out.copy.assemble.write_bytes, lines);
    assert_eq!(out.copy.process.write_bytes, 0);
    assert_eq!(out.copy.process.read_bytes, lines);
    // A 16-byte line costs a 64-byte burst on the bus.
    let p = out.copy.process;
    assert_eq!(p.bus_bytes, 4 * (p.read_bytes + p.write_bytes));
    assert_eq!(out.copy.bytes_copied, payload);
    // Flow-based: the controller reads the payload once; processing never leaves the chip.
    assert_eq!(out.flow.assemble.read_bytes, payload);
    assert_eq!(out.flow.assemble.bus_bytes, burst(payload));
    assert_eq!(
        out.flow.assemble.write_bytes + out.flow.process.total_bytes(),
        0
    );
    assert_eq!(out.flow.bytes_copied, 0);
    assert_eq!(out.flow.flow_cache.misses, 0);
    assert!(out.flow.flow_cache.hits > 0);
    // Every 16-byte line of the stream misses the L1 once in either design (two 8-byte loads).
    assert_eq!(out.flow.l1.misses, payload.div_ceil(line));
    assert!(out.copy.cycles() > out.flow.cycles());
    assert!(out.copy.process_cycles > out.flow.process_cycles);
}

#[test]
fn selective_retrieval_fetches_each_flow_cache_line_when_the_core_first_needs_it() {
    let r = flow(10, 1510);
    let v = r.view(0, 0).unwrap();
    let whole = MemModel::new(u250()).flow_based(std::slice::from_ref(&v), &Workload::Scan);
    let mut c = u250();
    c.retrieval = Retrieval::Selective;
    let sel = MemModel::new(c).flow_based(std::slice::from_ref(&v), &Workload::Scan);
    assert_eq!(sel.assemble_cycles, 0);
    assert_eq!(sel.flow_cache.misses, 15_100u64.div_ceil(64));
    // The same bytes come from DRAM, a line at a time (the stream starts burst-aligned here).
    assert_eq!(sel.process.read_bytes, whole.assemble.read_bytes);
    // Fetching on demand pays DRAM latency once per line instead of once per segment.
    assert!(sel.cycles() > whole.cycles());
}

#[test]
fn a_flow_larger_than_the_flow_cache_is_assembled_a_window_at_a_time_and_read_once() {
    let r = flow(10, 1510);
    let v = r.view(0, 0).unwrap();
    let mut c = u250();
    c.flow_cache.size_bytes = 4096; // 64 lines, 4 ways: the stream is 3.7 flow caches long
    let out = MemModel::new(c.clone()).flow_based(std::slice::from_ref(&v), &Workload::Scan);
    // Four windows of the flow cache's size, each assembled when processing reaches it:
    // every payload byte is read from DRAM once, and processing never misses the flow cache.
    assert_eq!(out.assemble.read_bytes, 15_100);
    assert_eq!(out.process.total_bytes(), 0);
    assert_eq!(out.flow_cache.misses, 0);
    // The appended arena holds the ten payloads back to back: one table entry, read in four
    // pieces (one per window), each looked up.
    assert_eq!(v.segments().len(), 1);
    assert_eq!(out.assemble.table_bytes, 4 * TABLE_ENTRY_BYTES);
    // Selective retrieval reads the same bytes, a flow-cache line at a time, while processing.
    c.retrieval = Retrieval::Selective;
    let sel = MemModel::new(c).flow_based(std::slice::from_ref(&v), &Workload::Scan);
    assert_eq!(sel.process.read_bytes, 15_100);
    assert_eq!(sel.assemble.total_bytes(), 0);
}

#[test]
fn regex_costs_more_cycles_than_a_scan_and_reads_its_table_through_the_l1() {
    let r = flow(10, 1510);
    let v = r.view(0, 0).unwrap();
    let m = MemModel::new(u250());
    let scan = m.flow_based(std::slice::from_ref(&v), &Workload::Scan);
    let re = m.flow_based(
        std::slice::from_ref(&v),
        &Workload::regex(r"ab+c|x[0-9]{3}y").unwrap(),
    );
    assert!(re.process_cycles > scan.process_cycles);
    // One table entry per byte, and one stream load per 8 bytes, through the L1.
    assert!(re.l1.hits + re.l1.misses >= 15_100 + 15_100 / 8);
    // The table is small: after its first touches it stays in the L1, so the regex adds little
    // DRAM traffic.
    assert!(re.process.read_bytes < 4096, "{}", re.process.read_bytes);
}

#[test]
fn the_same_flow_gives_the_same_report() {
    let r = flow(7, 999);
    let v = r.view(0, 0).unwrap();
    let m = MemModel::new(u250());
    let w = Workload::regex("needle").unwrap();
    let a = serde_json_like(&m.compare(std::slice::from_ref(&v), &w));
    let b = serde_json_like(&m.compare(std::slice::from_ref(&v), &w));
    assert_eq!(a, b);
}

fn serde_json_like(c: &nicsim_flowmem::model::Comparison) -> String {
    format!("{c:?}")
}

#[test]
fn a_bad_target_names_the_key() {
    let text = include_str!("../targets/u250-microblaze.toml");
    let e = MemConfig::from_toml(&text.replace("ways = 4", "ways = 0")).unwrap_err();
    assert!(e.contains("flow_cache"), "{e}");
    let e = MemConfig::from_toml(&text.replace("latency_cycles", "latency")).unwrap_err();
    assert!(e.contains("dram") && e.contains("latency"), "{e}");
    let e =
        MemConfig::from_toml(&text.replace("size_bytes = 8192", "size_bytes = 8200")).unwrap_err();
    assert!(e.contains("l1.size_bytes"), "{e}");
    // Clocks beyond the kernel's 100 GHz are refused at their key before any lcm is taken.
    let e = MemConfig::from_toml(
        &text
            .replacen("clock_mhz = 250 ", "clock_mhz = 4294967291 ", 1)
            .replacen("clock_mhz = 300 ", "clock_mhz = 4294967279 ", 1)
            .replacen("clock_mhz = 250 ", "clock_mhz = 4294967231 ", 1),
    )
    .unwrap_err();
    assert_eq!(
        e, "core.clock_mhz: 4294967291 MHz is outside 1..=100000 MHz",
        "{e}"
    );
    // lcm(99991, 99989, 99971) ≈ 10^15 ticks/µs: 64-bit time covers 18 ms, not even the
    // second of drain every run needs; the engine clock, whose lcm with the other two no
    // longer fits, is named.
    let e = MemConfig::from_toml(
        &text
            .replacen("clock_mhz = 250 ", "clock_mhz = 99991 ", 1)
            .replacen("clock_mhz = 300 ", "clock_mhz = 99989 ", 1)
            .replacen("clock_mhz = 250 ", "clock_mhz = 99971 ", 1),
    )
    .unwrap_err();
    assert!(
        e.starts_with(
            "engine.clock_mhz: the clocks (99991, 99989, 99971 MHz) make a tick 1/lcm µs"
        ),
        "{e}"
    );
    // lcm(9973, 9967, 9949) ≈ 10^12 ticks/µs: 64-bit time covers 18.6 s, the drain but not
    // the 100 s of memory time.
    let e = MemConfig::from_toml(
        &text
            .replacen("clock_mhz = 250 ", "clock_mhz = 9973 ", 1)
            .replacen("clock_mhz = 300 ", "clock_mhz = 9967 ", 1)
            .replacen("clock_mhz = 250 ", "clock_mhz = 9949 ", 1),
    )
    .unwrap_err();
    assert!(
        e.starts_with("engine.clock_mhz: a target must hold 100 s of memory time; the clocks"),
        "{e}"
    );
}

#[test]
fn whole_retrieval_assembles_each_flow_just_before_it_is_processed() {
    // Five flows of ~100 KB: together twice the 256 KB flow cache, each well inside it.
    let bufs: Vec<_> = (0..5)
        .map(|_| nicsim_flowmem::model::packet_buffers(67, 1510, 2048))
        .collect();
    let views: Vec<_> = bufs
        .iter()
        .map(|(a, d)| nicsim_flowmem::FlowView::new(a, d))
        .collect();
    let out = MemModel::new(u250()).flow_based(&views, &Workload::Scan);
    assert_eq!(out.assemble.read_bytes, 5 * 67 * 1510);
    assert_eq!(out.process.total_bytes(), 0);
    assert_eq!(out.flow_cache.misses, 0);
}

#[test]
fn every_built_in_target_parses_and_shows_the_same_direction() {
    let r = flow(10, 1510);
    let v = r.view(0, 0).unwrap();
    for (name, _) in nicsim_flowmem::model::TARGETS {
        let m = MemModel::new(MemConfig::builtin(name).unwrap());
        let out = m.compare(std::slice::from_ref(&v), &Workload::Scan);
        assert!(out.copy.cycles() > out.flow.cycles(), "{name}");
        assert!(out.copy.dram_bytes() > out.flow.dram_bytes(), "{name}");
    }
}

/// Values that size the model's memory or overflow its arithmetic are refused at their key:
/// a cache of 2^40 bytes (a record per line, allocated up front), lines and ways beyond any
/// cache (line × ways overflowed), cycle counts whose ticks overflow 64 bits.
#[test]
fn values_that_would_exhaust_memory_name_their_key() {
    let text = include_str!("../targets/u250-microblaze.toml");
    let cases = [
        (
            "size_bytes = 8192",
            "size_bytes = 1099511627776",
            "l1.size_bytes",
            "lines",
        ),
        (
            "line_bytes = 16",
            "line_bytes = 4611686018427387904",
            "l1.line_bytes",
            "outside",
        ),
        ("ways = 1", "ways = 4294967295", "l1.ways", "outside"),
        (
            "latency_cycles = 36",
            "latency_cycles = 9223372036854775807",
            "dram.latency_cycles",
            "outside",
        ),
        (
            "burst_bytes = 64",
            "burst_bytes = 9223372036854775807",
            "dram.burst_bytes",
            "outside",
        ),
        (
            "lookup_cycles = 2",
            "lookup_cycles = 9223372036854775807",
            "engine.lookup_cycles",
            "outside",
        ),
    ];
    for (from, to, key, what) in cases {
        assert!(text.contains(from), "{from}");
        let e = MemConfig::from_toml(&text.replacen(from, to, 1)).unwrap_err();
        assert!(e.starts_with(&format!("{key}: ")), "{key}: {e}");
        assert!(e.contains(what), "{key}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
