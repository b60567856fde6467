//! Fuzz target `decode`: arbitrary bytes as eBPF instruction slots, without the ELF layer:
//! `insn::Raw::slots`, `insn::decode` (with eight maps of the kinds the analyzer models, so
//! map references resolve), then, for code that decodes, the rest of what `Analysis::new`
//! does on a program: the inlined, unrolled CFG (`cfg::build`), the costed graph on the nfp
//! target, the constant split and the naive bound. Errors are fine; a panic or a hang is a
//! bug. A trailing partial slot, which `Raw::slots` rejects, gives a `--loop-bound` (its first
//! byte, mod 32) for loops without an evident bound. Besides not panicking, two documented
//! invariants are checked: one decoded entry per slot, and an acyclic CFG. The graph may
//! have 20,000 nodes (the default is 4,000,000; the suite's largest has 2,500): the work of
//! an input grows faster than linearly with that budget (the bit-rate bound's passes, one per
//! packet-size class, and the constant split), and a small one keeps an input well under a
//! second, so the fuzzer explores logic rather than size (elf_load runs the defaults).
//! Seeds: the linked code of the XDP suite's programs (`cargo run --example fuzz_seeds -p
//! nicsim-xdp`, which `make fuzz` runs).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nicsim_xdp::cfg::{self, Limits};
use nicsim_xdp::insn::{decode, Raw};
use nicsim_xdp::load::{MapDef, MAP_ARRAY, MAP_DEVMAP, MAP_HASH, MAP_LRU_HASH, MAP_PERCPU_ARRAY};
use nicsim_xdp::{consts, cost, paths, Program, Target};

fn nfp() -> &'static Target {
    static T: OnceLock<Target> = OnceLock::new();
    T.get_or_init(|| {
        Target::builtin("nfp")
            .expect("nfp is built in")
            .expect("the nfp target parses")
    })
}

fn map(name: &str, map_type: u32, key_size: u32, value_size: u32, data: Vec<u8>) -> MapDef {
    MapDef {
        name: name.to_string(),
        map_type,
        key_size,
        value_size,
        max_entries: 16,
        flags: 0,
        frozen: name.starts_with(".rodata"),
        data,
        inner: None,
        special_fields: Vec::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    // The bytes as given: a trailing partial slot is an error.
    let _ = Raw::slots(data);
    let (code_bytes, tail) = data.split_at(data.len() / 8 * 8);
    let raw = Raw::slots(code_bytes).expect("whole slots always split");
    // Map indices are the maps' places in name order, as the loader gives them.
    let maps = vec![
        map(".bss", MAP_ARRAY, 4, 8, vec![0; 8]),
        map(".data", MAP_ARRAY, 4, 8, vec![1; 8]),
        map(".rodata", MAP_ARRAY, 4, 16, (0..16).collect()),
        map("bytes", MAP_PERCPU_ARRAY, 4, 8, Vec::new()),
        map("counters", MAP_ARRAY, 4, 8, Vec::new()),
        map("flows", MAP_LRU_HASH, 16, 8, Vec::new()),
        map("ports", MAP_DEVMAP, 4, 4, Vec::new()),
        map("seen", MAP_HASH, 8, 8, Vec::new()),
    ];
    let n_maps = maps.len() as i32;
    let Ok(code) = decode(&raw, &|fd| (0..n_maps).contains(&fd).then_some(fd as u32)) else {
        return;
    };
    assert_eq!(code.len(), raw.len(), "one decoded entry per slot");
    let main_len = raw.len();
    let program = Program {
        section: "xdp".into(),
        name: "fuzz".into(),
        main_len,
        tail_targets: Vec::new(),
        prog_arrays: Default::default(),
        functions: Vec::new(),
        pins: Vec::new(),
        line_of: vec![None; raw.len()],
        raw,
        code,
        maps,
        lines: Vec::new(),
        license: "GPL".into(),
        kfuncs: Vec::new(),
    };
    let limits = Limits {
        loop_bound: tail.first().map(|&b| u32::from(b % 32)),
        max_nodes: 20_000,
        ..Limits::default()
    };
    let Ok(graph) = cfg::build(&program, limits) else {
        return;
    };
    let topo = graph.topo_order();
    assert_eq!(
        topo.len(),
        graph.nodes.len(),
        "the unrolled graph is acyclic"
    );
    let Ok(dag) = cost::costed(&program, &graph, nfp()) else {
        return;
    };
    let at = cost::states(&program, &graph, &topo);
    let model = consts::ConstModel::new(&program, &dag, &at);
    let _ = consts::split(&dag, &model, dag.n * 64 + 1024);
    let _ = paths::naive(&dag, nfp());
});
