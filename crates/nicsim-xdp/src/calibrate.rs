//! Micro-benchmarks of the running kernel's JIT for the `x86-jit` target (as the paper's §4
//! measures the NFP): each is a generated XDP program whose body repeats one instruction class
//! `n` times, run with `BPF_PROG_TEST_RUN`; the class's cost is the time the body adds over the
//! same program without it, divided by `n`. Bodies are dependency chains where the class allows
//! one (each instruction waits for the previous), so the costs are latencies: code with
//! independent instructions runs faster than the model says, never slower.

use std::borrow::Cow;
use std::time::Duration;

use crate::insn::Raw;
use crate::kernel::{Kernel, KernelError};
use crate::load::{
    MapDef, MAP_ARRAY, MAP_BLOOM_FILTER, MAP_DEVMAP, MAP_HASH, MAP_LRU_HASH, MAP_PERCPU_ARRAY,
    MAP_PERCPU_HASH, MAP_QUEUE,
};

/// A measured class: nanoseconds per instruction (or helper call) and what was run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measured {
    /// The instruction class (the target's cost-table key, e.g. `div`).
    pub name: String,
    /// Nanoseconds per instruction or helper call.
    pub ns: f64,
    /// What the benchmark's body runs.
    pub what: String,
}

/// A helper micro-benchmark the running kernel's verifier refused: this kernel does not give
/// XDP programs the helper (kernels differ by version and configuration), so it is not timed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Refused {
    /// The benchmark's name (the target's helper key, e.g. `xdp_adjust_meta`).
    pub name: String,
    /// The verifier's line saying why.
    pub why: String,
}

fn r(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Raw {
    Raw {
        code,
        dst,
        src,
        off,
        imm,
    }
}
fn mov64_imm(dst: u8, imm: i32) -> Raw {
    r(0xb7, dst, 0, 0, imm)
}
fn mov64_reg(dst: u8, src: u8) -> Raw {
    r(0xbf, dst, src, 0, 0)
}
fn add64_imm(dst: u8, imm: i32) -> Raw {
    r(0x07, dst, 0, 0, imm)
}
fn ld_map(dst: u8, map: i32) -> [Raw; 2] {
    [r(0x18, dst, 1, 0, map), r(0, 0, 0, 0, 0)]
}
fn exit() -> Raw {
    r(0x95, 0, 0, 0, 0)
}
fn call(helper: i32) -> Raw {
    r(0x85, 0, 0, 0, helper)
}

/// One micro-benchmark: a prologue, a body repeated, and the XDP_PASS epilogue (plus code
/// after it, such as a subprogram the body calls).
struct Bench {
    name: Cow<'static, str>,
    what: Cow<'static, str>,
    prologue: Vec<Raw>,
    body: Vec<Raw>,
    /// Instructions of the body that are set-up (their own cost is subtracted, in classes
    /// measured before this one): (class, count).
    setup: Vec<(&'static str, f64)>,
    /// Extra instructions after the exit (a subprogram), given the body count.
    tail: Vec<Raw>,
    maps: Vec<MapDef>,
    /// Map entries to write before the run: (map index, key, value).
    entries: Vec<(usize, Vec<u8>, Vec<u8>)>,
    /// The body reads r8 = the value of map 0 at key 0 (looked up in the prologue).
    value: bool,
    /// Map 0 holds keys 0..fill (a u32 in the first 4 bytes of the key, zero values) when the
    /// program with the body is run.
    fill: u32,
    /// The helper's cost depends on the packet's data (which buckets of a kernel table its
    /// fields hash to, and whether they are cached): its one call is taken at the 90th
    /// percentile of 64-run windows, not the runs' mean (`one_call_ns`).
    spread: bool,
}

fn map(name: &str, map_type: u32, key_size: u32, value_size: u32) -> MapDef {
    MapDef {
        name: name.into(),
        map_type,
        key_size,
        value_size,
        max_entries: 1,
        flags: 0,
        data: Vec::new(),
        frozen: false,
        inner: None,
        special_fields: Vec::new(),
    }
}

/// The common prologue: r6 = ctx, r0 = r1 = 1, a zeroed 72-byte key area at fp-72, r7 =
/// data with its first 64 bytes checked (so loads from r7 are allowed), and with `value`, r8 =
/// the value of map 0 at key 0. Returns it and the indices of its early exits (jumps to the
/// epilogue, offsets to be patched).
fn prologue(value: bool) -> (Vec<Raw>, Vec<usize>) {
    let mut p = vec![mov64_reg(6, 1), mov64_imm(0, 1), mov64_imm(1, 1)];
    for k in 1..=9 {
        p.push(r(0x7a, 10, 0, -8 * k, 0)); // *(u64 *)(fp - 8k) = 0
    }
    p.push(r(0x61, 7, 6, 0, 0)); // r7 = ctx->data
    p.push(r(0x61, 2, 6, 4, 0)); // r2 = ctx->data_end
    p.push(mov64_reg(3, 7));
    p.push(add64_imm(3, 64));
    let mut exits = vec![p.len()];
    p.push(r(0x2d, 3, 2, 0, 0)); // if r3 > r2 goto epilogue
    if value {
        p.extend(ld_map(1, 0));
        p.push(mov64_reg(2, 10));
        p.push(add64_imm(2, -8));
        p.push(call(1));
        exits.push(p.len());
        p.push(r(0x15, 0, 0, 0, 0)); // if r0 == 0 goto epilogue
        p.push(mov64_reg(8, 0));
        p.push(mov64_imm(0, 1));
        p.push(mov64_imm(1, 1));
    }
    (p, exits)
}

/// Maps of at most this many entries are costed by the micro-benchmarks on tables of this size
/// (their entries stay in the level-2 cache); larger ones by those on tables of 2^20 entries
/// (the target's `.large` helper entries: every access a cache and TLB miss).
pub const SMALL_MAP_ENTRIES: u32 = 1 << 12;

fn benches() -> Vec<Bench> {
    let mut v = Vec::new();
    let plain = |name: &'static str, what: &'static str, body: Vec<Raw>| Bench {
        name: name.into(),
        what: what.into(),
        prologue: Vec::new(),
        body,
        setup: Vec::new(),
        tail: Vec::new(),
        maps: Vec::new(),
        entries: Vec::new(),
        value: false,
        fill: 0,
        spread: false,
    };
    v.push(plain(
        "alu",
        "w0 += w1 (32-bit, dependent)",
        vec![r(0x0c, 0, 1, 0, 0)],
    ));
    v.push(plain(
        "alu64",
        "r0 += r1 (dependent)",
        vec![r(0x0f, 0, 1, 0, 0)],
    ));
    v.push(plain(
        "mul",
        "r0 *= r1 (dependent)",
        vec![r(0x2f, 0, 1, 0, 0)],
    ));
    v.push(Bench {
        prologue: vec![mov64_imm(0, -1)],
        ..plain(
            "div",
            "r0 /= r1, r0 = 2^64-1, r1 = 1 (dependent)",
            vec![r(0x3f, 0, 1, 0, 0)],
        )
    });
    v.push(plain(
        "endian",
        "r0 = be64 r0 (dependent)",
        vec![r(0xdc, 0, 0, 0, 64)],
    ));
    v.push(plain(
        "ld_imm64",
        "r0 = 64-bit immediate",
        vec![r(0x18, 0, 0, 0, 7), r(0, 0, 0, 0, 1)],
    ));
    v.push(Bench {
        prologue: vec![mov64_imm(0, 0)],
        ..plain(
            "jmp_taken",
            "if r0 != r1 goto +0 (r0 = 0, r1 = 1: taken; 64-bit compare)",
            vec![r(0x5d, 0, 1, 0, 0)],
        )
    });
    v.push(plain(
        "jmp_not_taken",
        "if r0 == r1 goto +0 (r0 = r1 = 1: not taken)",
        vec![r(0x1d, 0, 1, 0, 0)],
    ));
    v.push(plain("ja", "goto +0", vec![r(0x05, 0, 0, 0, 0)]));
    v.push(plain(
        "stack",
        "*(u64 *)(fp-8) = r0; r0 = *(u64 *)(fp-8) (store-to-load, per instruction)",
        vec![r(0x7b, 10, 0, -8, 0), r(0x79, 0, 10, -8, 0)],
    ));
    v.push(plain(
        "packet_load",
        "r0 = *(u8 *)(data + 5) (independent loads)",
        vec![r(0x71, 0, 7, 5, 0)],
    ));
    v.push(plain(
        "packet_store",
        "*(u8 *)(data + 5) = r0",
        vec![r(0x73, 7, 0, 5, 0)],
    ));
    let arr8 = || map("a", MAP_ARRAY, 4, 64);
    v.push(Bench {
        maps: vec![arr8()],
        value: true,
        ..plain(
            "map_load",
            "r0 = *(u64 *)(array value + 8)",
            vec![r(0x79, 0, 8, 8, 0)],
        )
    });
    v.push(Bench {
        maps: vec![arr8()],
        value: true,
        ..plain(
            "atomic",
            "lock *(u64 *)(array value + 8) += r1",
            vec![r(0xdb, 8, 1, 8, 0)],
        )
    });
    // An uncontended lock and unlock of a bpf_spin_lock at the start of an array value (the map
    // created with BTF that places the lock: kernel.rs `value_btf`). The verifier pairs them on
    // every path, so the pair is timed and each costs half (python/nicsim/xdp/calibrate.py).
    v.push(Bench {
        maps: vec![MapDef {
            special_fields: vec![("bpf_spin_lock", 0)],
            ..map("l", MAP_ARRAY, 4, 16)
        }],
        value: true,
        setup: vec![("alu64", 2.0)],
        ..plain(
            "spin_lock.pair",
            "bpf_spin_lock(&value->lock); bpf_spin_unlock(&value->lock) (an array value, uncontended)",
            vec![mov64_reg(1, 8), call(93), mov64_reg(1, 8), call(94)],
        )
    });
    // Helpers. Keys and values at fp-72..fp-8 (zeroed by the prologue).
    let helper = |name: &'static str,
                  what: &'static str,
                  maps: Vec<MapDef>,
                  body: Vec<Raw>,
                  setup: Vec<(&'static str, f64)>| Bench {
        name: name.into(),
        what: what.into(),
        prologue: Vec::new(),
        body,
        setup,
        tail: Vec::new(),
        maps,
        entries: Vec::new(),
        value: false,
        fill: 0,
        spread: false,
    };
    let lookup = |m: i32| {
        let mut b = ld_map(1, m).to_vec();
        b.extend([mov64_reg(2, 10), add64_imm(2, -64), call(1)]);
        b
    };
    let setup_lookup = vec![("ld_imm64", 1.0), ("alu64", 2.0)];
    for (name, what, t) in [
        (
            "map_lookup_elem.array",
            "bpf_map_lookup_elem(array, &0)",
            MAP_ARRAY,
        ),
        (
            "map_lookup_elem.percpu_array",
            "bpf_map_lookup_elem(percpu array, &0)",
            MAP_PERCPU_ARRAY,
        ),
    ] {
        v.push(helper(
            name,
            what,
            vec![map("m", t, 4, 8)],
            lookup(0),
            setup_lookup.clone(),
        ));
    }
    // A device map's lookup is no array's: the verifier inlines only arrays' and hashes'
    // lookups, so a program's call reaches dev_map_lookup_elem. Its slot 0 holds the loopback
    // device (ifindex 1), so the lookup returns its value.
    let mut d = helper(
        "map_lookup_elem.devmap",
        "bpf_map_lookup_elem(devmap, &0), the slot holding a device",
        vec![map("d", MAP_DEVMAP, 4, 4)],
        lookup(0),
        setup_lookup.clone(),
    );
    d.entries = vec![(0, vec![0; 4], 1u32.to_le_bytes().to_vec())];
    v.push(d);
    let mut h = helper(
        "map_lookup_elem.hash",
        "bpf_map_lookup_elem(hash, 64-byte key present)",
        vec![map("h", MAP_HASH, 64, 8)],
        lookup(0),
        setup_lookup.clone(),
    );
    h.entries = vec![(0, vec![0; 64], vec![0; 8])];
    v.push(h);
    // bpf_map_update_elem(map 0, key at fp-key_off, value at fp-72, BPF_ANY).
    let update = |key_off: i32| {
        let mut b = ld_map(1, 0).to_vec();
        b.extend([
            mov64_reg(2, 10),
            add64_imm(2, -key_off),
            mov64_reg(3, 10),
            add64_imm(3, -72),
            mov64_imm(4, 0),
            call(2),
        ]);
        b
    };
    let setup_update = vec![("ld_imm64", 1.0), ("alu64", 5.0)];
    let mut h = helper(
        "map_update_elem",
        "bpf_map_update_elem(hash, 64-byte key present, BPF_ANY)",
        vec![map("h", MAP_HASH, 64, 8)],
        update(64),
        setup_update.clone(),
    );
    h.entries = vec![(0, vec![0; 64], vec![0; 8])];
    v.push(h);
    v.push(helper(
        "map_update_elem.array",
        "bpf_map_update_elem(array, &0, BPF_ANY)",
        vec![map("a", MAP_ARRAY, 4, 8)],
        update(8),
        setup_update,
    ));
    // Queue and bloom filter maps (kernel/bpf/queue_stack_maps.c, bloom_filter.c): helper
    // `id` on map 0 with the 8-byte value at fp-64 and flags r3 = `flags`.
    let qcall = |id: i32, flags: i32| {
        let mut b = ld_map(1, 0).to_vec();
        b.extend([
            mov64_reg(2, 10),
            add64_imm(2, -64),
            mov64_imm(3, flags),
            call(id),
        ]);
        b
    };
    let setup_q = vec![("ld_imm64", 1.0), ("alu64", 3.0)];
    // A push into a full queue of one entry with BPF_EXIST: the oldest dropped, the value copied.
    let mut h = helper(
        "map_push_elem.queue",
        "bpf_map_push_elem(queue of 1 entry, full, BPF_EXIST: the oldest dropped)",
        vec![map("q", MAP_QUEUE, 0, 8)],
        qcall(87, 2),
        setup_q.clone(),
    );
    h.entries = vec![(0, Vec::new(), vec![0; 8])];
    v.push(h);
    // A pop of the entry just pushed (the push's cost, measured above, subtracted).
    let mut body = qcall(87, 2);
    body.extend(qcall(88, 0));
    let mut setup = setup_q.clone();
    setup.extend([
        ("map_push_elem.queue", 1.0),
        ("ld_imm64", 1.0),
        ("alu64", 3.0),
    ]);
    v.push(helper(
        "map_pop_elem.queue",
        "bpf_map_pop_elem(queue of one entry) after a push",
        vec![map("q", MAP_QUEUE, 0, 8)],
        body,
        setup,
    ));
    let mut h = helper(
        "map_peek_elem.queue",
        "bpf_map_peek_elem(queue of 1 entry)",
        vec![map("q", MAP_QUEUE, 0, 8)],
        qcall(89, 0),
        setup_q.clone(),
    );
    h.entries = vec![(0, Vec::new(), vec![0; 8])];
    v.push(h);
    // A bloom filter of the kernel's default 5 hash functions: a push sets 5 bits, a peek of a
    // member tests all 5 (a value not pushed stops at its first clear bit).
    v.push(helper(
        "map_push_elem.bloom_filter",
        "bpf_map_push_elem(bloom filter, 8-byte value, 5 hash functions)",
        vec![map("b", MAP_BLOOM_FILTER, 0, 8)],
        qcall(87, 0),
        setup_q.clone(),
    ));
    let mut h = helper(
        "map_peek_elem.bloom_filter",
        "bpf_map_peek_elem(bloom filter, a member: 5 bits tested)",
        vec![map("b", MAP_BLOOM_FILTER, 0, 8)],
        qcall(89, 0),
        setup_q,
    );
    h.entries = vec![(0, Vec::new(), vec![0; 8])];
    v.push(h);
    // Timers (helpers/timers.rs) on a bpf_timer at the start of an array value (the map created
    // with BTF that places it), r8 the value; the callback is `r0 = 0; exit`. `timer_start.now`
    // arms it to expire at once (delay 0: it fires on this CPU within the run, its interrupt
    // and callback counted), `.later` one second ahead (it never fires during the runs; each
    // start re-arms it). A cancel is timed after a start 1 s ahead (it disarms: 1), an init
    // after an update that replaces the value (which frees the timer the init before made),
    // each with those calls' cost subtracted as measured.
    let timer_map = || MapDef {
        special_fields: vec![("bpf_timer", 0)],
        ..map("t", MAP_ARRAY, 4, 16)
    };
    let callback = [r(0x18, 2, 4, 0, 0), r(0, 0, 0, 0, 0)];
    let mut armed = vec![mov64_reg(1, 8)];
    armed.extend(ld_map(2, 0));
    armed.extend([mov64_imm(3, 1), call(169), mov64_reg(1, 8)]); // bpf_timer_init(.., CLOCK_MONOTONIC)
    armed.extend(callback);
    armed.push(call(170)); // bpf_timer_set_callback
    let start = |delay_ns: i32| {
        vec![
            mov64_reg(1, 8),
            mov64_imm(2, delay_ns),
            mov64_imm(3, 0),
            call(171),
        ]
    };
    for (name, what, delay_ns) in [
        (
            "timer_start.now",
            "bpf_timer_start(timer, 0, 0): it expires at once and its callback runs",
            0,
        ),
        (
            "timer_start.later",
            "bpf_timer_start(timer, 1 s, 0): re-armed, it does not fire",
            1_000_000_000,
        ),
    ] {
        v.push(Bench {
            prologue: armed.clone(),
            tail: vec![mov64_imm(0, 0), exit()],
            value: true,
            ..helper(
                name,
                what,
                vec![timer_map()],
                start(delay_ns),
                vec![("alu64", 3.0)],
            )
        });
    }
    let mut body = start(1_000_000_000);
    body.extend([mov64_reg(1, 8), call(172)]);
    v.push(Bench {
        prologue: armed.clone(),
        tail: vec![mov64_imm(0, 0), exit()],
        value: true,
        ..helper(
            "timer_cancel",
            "bpf_timer_cancel(timer armed 1 s ahead): it disarms it (after a start, subtracted)",
            vec![timer_map()],
            body,
            vec![("alu64", 4.0), ("timer_start.later", 1.0)],
        )
    });
    let mut body = vec![mov64_reg(1, 8)];
    body.extend(callback);
    body.push(call(170));
    v.push(Bench {
        prologue: armed.clone(),
        tail: vec![mov64_imm(0, 0), exit()],
        value: true,
        ..helper(
            "timer_set_callback",
            "bpf_timer_set_callback(timer, callback) on an initialised timer",
            vec![timer_map()],
            body,
            vec![("alu64", 1.0), ("ld_imm64", 1.0)],
        )
    });
    // bpf_map_update_elem(timers, &0 at fp-8, zeros at fp-72, BPF_ANY), then an init of the
    // fresh timer.
    let mut body = update(8);
    body.push(mov64_reg(1, 8));
    body.extend(ld_map(2, 0));
    body.extend([mov64_imm(3, 1), call(169)]);
    v.push(Bench {
        value: true,
        ..helper(
            "timer_init",
            "bpf_timer_init(timer, map, CLOCK_MONOTONIC) of a fresh timer, after an update that \
             replaces the value and frees the timer before (the update's own cost subtracted)",
            vec![timer_map()],
            body,
            vec![
                ("ld_imm64", 2.0),
                ("alu64", 7.0),
                ("map_update_elem.array", 1.0),
            ],
        )
    });
    for (name, id) in [
        ("ktime_get_ns", 5),
        ("ktime_get_coarse_ns", 160),
        ("get_prandom_u32", 7),
        ("get_smp_processor_id", 8),
        ("get_numa_node_id", 42),
        ("jiffies64", 118),
        ("ktime_get_boot_ns", 125),
        ("ktime_get_tai_ns", 208),
    ] {
        v.push(helper(
            name,
            "call, no arguments",
            vec![],
            vec![call(id)],
            vec![],
        ));
    }
    v.push(helper(
        "redirect",
        "bpf_redirect(1, 0)",
        vec![],
        vec![mov64_imm(1, 1), mov64_imm(2, 0), call(23)],
        vec![("alu64", 2.0)],
    ));
    let mut rm = ld_map(1, 0).to_vec();
    rm.extend([mov64_imm(2, 0), mov64_imm(3, 0), call(51)]);
    v.push(helper(
        "redirect_map",
        "bpf_redirect_map(devmap, 0, 0), empty slot",
        vec![map("d", MAP_DEVMAP, 4, 4)],
        rm,
        vec![("ld_imm64", 1.0), ("alu64", 2.0)],
    ));
    for (name, id) in [
        ("xdp_adjust_head", 44),
        ("xdp_adjust_tail", 65),
        ("xdp_adjust_meta", 54),
    ] {
        v.push(helper(
            name,
            "delta 0",
            vec![],
            vec![mov64_reg(1, 6), mov64_imm(2, 0), call(id)],
            vec![("alu64", 2.0)],
        ));
    }
    v.push(helper(
        "csum_diff",
        "bpf_csum_diff(64 bytes from the stack, 0 bytes, 0)",
        vec![],
        vec![
            mov64_reg(1, 10),
            add64_imm(1, -64),
            mov64_imm(2, 64),
            mov64_imm(3, 0),
            mov64_imm(4, 0),
            mov64_imm(5, 0),
            call(28),
        ],
        vec![("alu64", 6.0)],
    ));
    // The same over 512 bytes (a map value's): what each byte beyond 64 costs (the target's
    // `cycles_per_byte` of csum_diff; bpf_csum_diff sums up to 512 bytes before Linux 6.12, any
    // size since).
    v.push(Bench {
        value: true,
        ..helper(
            "csum_diff.512",
            "bpf_csum_diff(512 bytes of an array value, 0 bytes, 0)",
            vec![map("a", MAP_ARRAY, 4, 512)],
            vec![
                mov64_reg(1, 8),
                mov64_imm(2, 512),
                mov64_imm(3, 0),
                mov64_imm(4, 0),
                mov64_imm(5, 0),
                call(28),
            ],
            vec![("alu64", 5.0)],
        )
    });
    v.push(helper(
        "xdp_get_buff_len",
        "bpf_xdp_get_buff_len(ctx)",
        vec![],
        vec![mov64_reg(1, 6), call(188)],
        vec![("alu64", 1.0)],
    ));
    // bpf_check_mtu(ctx, 0, fp - 8 (0: the packet's own length), 0, 0).
    v.push(helper(
        "check_mtu",
        "bpf_check_mtu(ctx, 0, &mtu, 0, 0) on the device the run is on",
        vec![],
        vec![
            mov64_reg(1, 6),
            mov64_imm(2, 0),
            mov64_reg(3, 10),
            add64_imm(3, -8),
            mov64_imm(4, 0),
            mov64_imm(5, 0),
            call(163),
        ],
        vec![("alu64", 5.0)],
    ));
    // bpf_trace_printk("%u %u %u\n", 10, 1, 2, 3): the format at fp - 88 (written once).
    let fmt = u64::from_le_bytes(*b"%u %u %u");
    v.push(Bench {
        prologue: vec![
            r(0x18, 1, 0, 0, fmt as u32 as i32),
            r(0, 0, 0, 0, (fmt >> 32) as u32 as i32),
            r(0x7b, 10, 1, -88, 0),
            r(0x7a, 10, 0, -80, 0x0a),
        ],
        ..helper(
            "trace_printk",
            "bpf_trace_printk('%u %u %u', 10, 1, 2, 3) and a newline (into the trace buffer, no reader)",
            vec![],
            vec![
                mov64_reg(1, 10),
                add64_imm(1, -88),
                mov64_imm(2, 10),
                mov64_imm(3, 1),
                mov64_imm(4, 2),
                mov64_imm(5, 3),
                call(6),
            ],
            vec![("alu64", 6.0)],
        )
    });
    // bpf_tcp_raw_gen_syncookie_ipv4(data + 14, data + 34, 20) and _check_: a TCP header of 20
    // bytes (doff 5, written once into the packet) after an IPv4 header of zeros.
    for (name, what, id, args) in [
        (
            "tcp_raw_gen_syncookie_ipv4",
            "bpf_tcp_raw_gen_syncookie_ipv4(iph, th, 20), no MSS option",
            204,
            3,
        ),
        (
            "tcp_raw_check_syncookie_ipv4",
            "bpf_tcp_raw_check_syncookie_ipv4(iph, th), an invalid cookie",
            206,
            2,
        ),
    ] {
        let mut body = vec![
            mov64_reg(1, 7),
            add64_imm(1, 14),
            mov64_reg(2, 7),
            add64_imm(2, 34),
        ];
        if args == 3 {
            body.push(mov64_imm(3, 20));
        }
        body.push(call(id));
        v.push(Bench {
            prologue: vec![r(0x72, 7, 0, 46, 0x50)],
            ..helper(name, what, vec![], body, vec![("alu64", args as f64 + 2.0)])
        });
    }
    // bpf_sk_lookup_tcp, _udp and bpf_skc_lookup_tcp(ctx, &tuple, 12, BPF_F_CURRENT_NETNS, 0)
    // of an IPv4 tuple no socket has, its addresses and ports random each time (as a flood's
    // are: each lookup hashes to other buckets of the kernel's established and listening
    // tables, cached or not). What a lookup costs depends on those buckets: floods of ACKs
    // from random sources made `helpers_syncookie` cost up to 30 % more than a calibration at
    // the runs' mean promised, so these are timed as 64-run windows (`spread`, `one_call_ns`;
    // docs/xdp.md, "Lookups whose cost depends on the packet"). The verifier asks for the
    // release of what a lookup may return, so each is followed by `if r0 == 0 goto +2;
    // r1 = r0; sk_release`, which a miss skips.
    for (name, what, id) in [
        (
            "sk_lookup_tcp",
            "bpf_sk_lookup_tcp(ctx, IPv4 tuple, 12, current netns, 0), no such socket, random \
             addresses and ports",
            84,
        ),
        (
            "sk_lookup_udp",
            "bpf_sk_lookup_udp(ctx, IPv4 tuple, 12, current netns, 0), no such socket, random \
             addresses and ports",
            85,
        ),
        (
            "skc_lookup_tcp",
            "bpf_skc_lookup_tcp(ctx, IPv4 tuple, 12, current netns, 0), no such socket, random \
             addresses and ports",
            99,
        ),
    ] {
        v.push(Bench {
            spread: true,
            ..helper(
                name,
                what,
                vec![],
                vec![
                    call(7),                       // r0 = bpf_get_prandom_u32()
                    r(0x63, 10, 0, -72, 0),        // tuple.saddr = w0
                    r(0x27, 0, 0, 0, -1640531535), // r0 *= 0x9e3779b1: another 32 bits
                    r(0x63, 10, 0, -68, 0),        // tuple.daddr = w0
                    r(0x27, 0, 0, 0, -1640531535), // r0 *= 0x9e3779b1
                    r(0x63, 10, 0, -64, 0),        // tuple.sport, .dport = w0
                    mov64_reg(1, 6),
                    mov64_reg(2, 10),
                    add64_imm(2, -72),
                    mov64_imm(3, 12),
                    mov64_imm(4, -1),
                    mov64_imm(5, 0),
                    call(id),
                    r(0x15, 0, 0, 2, 0), // if r0 == 0 goto +2
                    mov64_reg(1, 0),
                    call(86), // bpf_sk_release
                ],
                vec![
                    ("get_prandom_u32", 1.0),
                    ("mul", 2.0),
                    ("stack", 3.0),
                    ("alu64", 6.0),
                    ("jmp_taken", 1.0),
                ],
            )
        });
    }
    for (name, id) in [("xdp_load_bytes", 189), ("xdp_store_bytes", 190)] {
        v.push(helper(
            name,
            "64 bytes between the 64-byte packet's start and the stack",
            vec![],
            vec![
                mov64_reg(1, 6),
                mov64_imm(2, 0),
                mov64_reg(3, 10),
                add64_imm(3, -64),
                mov64_imm(4, 64),
                call(id),
            ],
            vec![("alu64", 5.0)],
        ));
    }
    // bpf_tail_call(ctx, prog array, index) on an empty slot: the call returns. The index is
    // read from the packet (0): with a constant index the JIT patches a direct jump (a no-op
    // for an empty slot), which programs that choose a slot at run time do not get. A tail
    // call that jumps does the same checks, then increments the count and jumps into the
    // target, whose run cannot be repeated n times in one program (calibrate.py adds a
    // bpf-to-bpf call's cost for the jump).
    let mut tc = ld_map(2, 0).to_vec();
    tc.extend([mov64_reg(1, 6), r(0x71, 3, 7, 0, 0), call(12)]);
    v.push(helper(
        "tail_call",
        "bpf_tail_call(ctx, prog array, index from the packet), an empty slot (the call returns)",
        vec![map("p", crate::load::MAP_PROG_ARRAY, 4, 4)],
        tc,
        vec![("ld_imm64", 1.0), ("alu64", 1.0), ("packet_load", 1.0)],
    ));
    // bpf_loop(nr, callback `r0 = 0; exit`, fp - 8, 0): with nr = 0 the call alone (its
    // checks and set-up: the verifier inlines it, as it does every call with flags 0 and one
    // callback), with nr = 16 the call and 16 calls of the callback (calibrate.py takes the
    // difference over 16 as the per-iteration cost). The callback's address is patched as a
    // subprogram call is.
    for (name, what, nr) in [
        (
            "loop",
            "bpf_loop(0, callback, fp - 8, 0) (inlined by the verifier)",
            0,
        ),
        (
            "loop_16",
            "bpf_loop(16, callback `r0 = 0; exit`, fp - 8, 0) less bpf_loop(0, ...)",
            16,
        ),
    ] {
        let mut setup = vec![("alu64", 4.0), ("ld_imm64", 1.0)];
        if nr > 0 {
            setup.push(("loop", 1.0));
        }
        v.push(Bench {
            tail: vec![mov64_imm(0, 0), exit()],
            ..helper(
                name,
                what,
                vec![],
                vec![
                    mov64_imm(1, nr),
                    r(0x18, 2, 4, 0, 0),
                    r(0, 0, 0, 0, 0),
                    mov64_reg(3, 10),
                    add64_imm(3, -8),
                    mov64_imm(4, 0),
                    call(181),
                ],
                setup,
            )
        });
    }
    // Map operations in the states a stream of packets meets (issue 29: docs/xdp.md, "What a
    // program sustains"), each on a key from bpf_get_prandom_u32 written into the 64-byte key
    // at fp-64 (the call and the store subtracted), in tables of 2^20 entries: a stream of
    // distinct flows touches a bucket and an entry that are not in any cache (2^20 entries of
    // 64-byte keys are 100 MB), which the same key repeated never shows; and in tables of 2^12
    // (half a MB: the level-2 cache holds them), the cost of maps of at most
    // SMALL_MAP_ENTRIES entries (`.large` in the target is for larger ones). Measured: a hash
    // lookup that hits (the key masked to the half of the entries written before) and one that misses
    // (the bucket walked); an LRU lookup that hits (it also marks the entry referenced); an LRU
    // insert into a full table (every insert evicts: the steady state of a flow table under new
    // flows); a hash insert of a new key followed by its delete (an insert cannot be repeated
    // without filling the table; the pair is charged to each of the two, loose but never
    // beaten). A per-CPU hash lookup that hits is measured in a table of one entry.
    let random_key = |m: i32, mask: Option<i32>, tail: Vec<Raw>| {
        let mut b = vec![call(7)]; // r0 = bpf_get_prandom_u32()
        if let Some(mask) = mask {
            b.push(r(0x54, 0, 0, 0, mask)); // w0 &= mask
        }
        b.push(r(0x63, 10, 0, -64, 0)); // *(u32 *)(fp-64) = w0
        b.extend(ld_map(1, m));
        b.extend(tail);
        b
    };
    let key_args = vec![mov64_reg(2, 10), add64_imm(2, -64), call(1)];
    let update_args = vec![
        mov64_reg(2, 10),
        add64_imm(2, -64),
        mov64_reg(3, 10),
        add64_imm(3, -72),
        mov64_imm(4, 0),
        call(2),
    ];
    let sized = |name: &str, t: u32, n: u32| MapDef {
        max_entries: n,
        ..map(name, t, 64, 8)
    };
    let random_setup = |masked: bool| {
        let mut v = vec![
            ("get_prandom_u32", 1.0),
            ("stack", 1.0),
            ("ld_imm64", 1.0),
            ("alu64", 2.0),
        ];
        if masked {
            v.push(("alu", 1.0));
        }
        v
    };
    for (suffix, size, size_name) in [("", SMALL_MAP_ENTRIES, "2^12"), (".large", 1 << 20, "2^20")]
    {
        let half = size / 2;
        let sized_text =
            |what: &str| -> Cow<'static, str> { what.replace("SIZE", size_name).into() };
        for (name, what, mask) in [
            (
                "map_lookup_elem.hash.hit",
                "bpf_map_lookup_elem(hash of SIZE entries holding half, a random 64-byte key present)",
                Some(half as i32 - 1),
            ),
            (
                "map_lookup_elem.hash.miss",
                "bpf_map_lookup_elem(hash of SIZE entries holding half, a random 64-byte key absent)",
                None,
            ),
        ] {
            v.push(Bench {
                fill: half,
                name: format!("{name}{suffix}").into(),
                what: sized_text(what),
                ..helper(
                    "",
                    "",
                    vec![sized("h", MAP_HASH, size)],
                    random_key(0, mask, key_args.clone()),
                    random_setup(mask.is_some()),
                )
            });
        }
        v.push(Bench {
            fill: size,
            name: format!("map_lookup_elem.lru_hash.hit{suffix}").into(),
            what: sized_text(
                "bpf_map_lookup_elem(LRU hash of SIZE entries, full, a random 64-byte key present)",
            ),
            ..helper(
                "",
                "",
                vec![sized("l", MAP_LRU_HASH, size)],
                random_key(0, Some(size as i32 - 1), key_args.clone()),
                random_setup(true),
            )
        });
        v.push(Bench {
            fill: size,
            name: format!("map_update_elem.lru_hash.new{suffix}").into(),
            what: sized_text(
                "bpf_map_update_elem(LRU hash of SIZE entries, full, a random 64-byte key, \
                     BPF_ANY): an insert that evicts",
            ),
            ..helper(
                "",
                "",
                vec![sized("l", MAP_LRU_HASH, size)],
                random_key(0, None, update_args.clone()),
                [random_setup(false), vec![("alu64", 3.0)]].concat(),
            )
        });
        let mut delete = ld_map(1, 0).to_vec();
        delete.extend([mov64_reg(2, 10), add64_imm(2, -64), call(3)]);
        v.push(Bench {
            fill: half,
            name: format!("map_update_elem.hash.new{suffix}").into(),
            what: sized_text("bpf_map_update_elem(hash of SIZE entries holding half, a random 64-byte key, \
                     BPF_ANY), then bpf_map_delete_elem of it: an insert of a new key and its delete"),
            ..helper(
                "",
                "",
                vec![sized("h", MAP_HASH, size)],
                random_key(0, None, [update_args.clone(), delete].concat()),
                [
                    random_setup(false),
                    vec![("alu64", 3.0), ("ld_imm64", 1.0), ("alu64", 2.0)],
                ]
                .concat(),
            )
        });
    }
    // Loads and atomic adds on the value of a random entry of an array of 64-byte values (one
    // cache line each), of 2^14 entries (1 MB: the level-2 cache holds it) and of 2^20 (64 MB:
    // past the level-3 cache): a stream of distinct flows indexes counters and tables so
    // (Count-Min's sketch). Each index depends on the previous value read (r9, a fetching add
    // for the atomic), so the costs are latencies. The index (prandom, xor, mask, the key's
    // store), the inlined array lookup and its NULL check are subtracted.
    for (suffix, entries) in [("", 1u32 << 14), (".large", 1 << 20)] {
        for (name, what, access) in [
            (
                "map_load.random",
                "r9 = *(u64 *)(value of a random entry of an array of SIZE 64-byte values)",
                r(0x79, 9, 0, 0, 0),
            ),
            (
                "atomic.random",
                "r9 = atomic fetch-add on the value of a random entry of an array of SIZE 64-byte values",
                r(0xdb, 0, 9, 0, 0x01),
            ),
        ] {
            let mut body = vec![call(7), r(0xac, 0, 9, 0, 0)]; // w0 ^= w9
            body.push(r(0x54, 0, 0, 0, entries as i32 - 1)); // w0 &= entries - 1
            body.push(r(0x63, 10, 0, -4, 0)); // *(u32 *)(fp-4) = w0
            body.extend(ld_map(1, 0));
            body.extend([mov64_reg(2, 10), add64_imm(2, -4), call(1)]);
            body.push(r(0x15, 0, 0, 1, 0)); // if r0 == 0 goto +1
            body.push(access);
            v.push(Bench {
                name: format!("{name}{suffix}").into(),
                what: what
                    .replace("SIZE", if suffix.is_empty() { "2^14" } else { "2^20" })
                    .into(),
                prologue: vec![mov64_imm(9, 0)],
                ..helper(
                    "",
                    "",
                    vec![MapDef {
                        max_entries: entries,
                        ..map("a", MAP_ARRAY, 4, 64)
                    }],
                    body,
                    vec![
                        ("get_prandom_u32", 1.0),
                        ("alu", 2.0),
                        ("stack", 1.0),
                        ("ld_imm64", 1.0),
                        ("alu64", 2.0),
                        ("map_lookup_elem.array", 1.0),
                        ("jmp_not_taken", 1.0),
                    ],
                )
            });
        }
    }
    let mut h = helper(
        "map_lookup_elem.percpu_hash.hit",
        "bpf_map_lookup_elem(per-CPU hash, 64-byte key present)",
        vec![map("h", MAP_PERCPU_HASH, 64, 8)],
        lookup(0),
        setup_lookup.clone(),
    );
    h.entries = vec![(0, vec![0; 64], vec![0; 8])];
    v.push(h);
    // bpf-to-bpf call of `r0 = 0; exit` (the call and the callee's exit; its mov subtracted).
    v.push(Bench {
        setup: vec![("alu64", 1.0)],
        tail: vec![mov64_imm(0, 0), exit()],
        ..plain(
            "call_local",
            "call of a subprogram `r0 = 0; exit`",
            vec![r(0x85, 0, 1, 0, 0)],
        )
    });
    v
}

impl Bench {
    /// The program with the body `n` times: the common prologue, the bench's own, the body,
    /// `r0 = XDP_PASS; exit`, then the tail (a subprogram the body calls).
    fn program(&self, n: usize) -> Vec<Raw> {
        let (mut out, exits) = prologue(self.value);
        let epilogue = out.len() + self.prologue.len() + self.body.len() * n;
        for i in exits {
            out[i].off = (epilogue - i - 1) as i16;
        }
        let body = std::iter::repeat_n(&self.body, n).flatten();
        for b in self.prologue.iter().chain(body) {
            let mut b = *b;
            if refers_to_tail(&b) {
                // A bpf-to-bpf call, or the address (a bpf_loop or timer callback), of the
                // subprogram right after the epilogue.
                b.imm = (epilogue + 2) as i32 - out.len() as i32 - 1;
            }
            out.push(b);
        }
        out.push(mov64_imm(0, 2)); // XDP_PASS
        out.push(exit());
        let prologue_calls = self.prologue.iter().any(refers_to_tail);
        if n > 0 || prologue_calls {
            out.extend(self.tail.iter().copied()); // unreachable code is refused
        }
        out
    }
}

/// Whether instruction `b` is a bpf-to-bpf call or a callback's address (a `bpf_loop` or timer
/// callback): in a benchmark, of the subprogram after the epilogue (`Bench::tail`).
fn refers_to_tail(b: &Raw) -> bool {
    (b.code == 0x85 && b.src == 1) || (b.code == 0x18 && b.src == 4)
}

/// Whether a micro-benchmark's body calls a helper (a `call` of a helper id, not of a
/// subprogram or a kfunc).
fn calls_helper(body: &[Raw]) -> bool {
    body.iter().any(|i| i.code == 0x85 && i.src == 0)
}

/// Single runs (one `BPF_PROG_TEST_RUN` each, as validation times a packet) of the program
/// without the body and with it once, interleaved so that both see the machine alike: the
/// difference of their times as validation takes a path's (`validate.run_time`: the mean of
/// the runs no slower than the 90th percentile; the percentiles' own difference doubled on a
/// loaded machine, where another process's work between two runs empties the caches).
///
/// With `spread` (a cost that depends on the packet's data, which the benchmark draws anew
/// each run), as validation's stream takes it: windows of 64 runs back to back of each
/// program in turn, each window's figure as `run_time` takes it, and the one call's cost the
/// 90th percentile over the windows of (with) - (without), the windows 20 ms apart. A flood's
/// 64-packet windows cost no more nine times in ten, whichever buckets its packets hash to; a
/// burst of the machine's other load (milliseconds) lifts two neighbouring windows alike. The
/// runs' mean was beaten by such windows by up to 30 %, and their single runs' 90th
/// percentile too.
fn one_call_ns(
    base: &Kernel,
    one: &Kernel,
    packet: &[u8],
    spread: bool,
) -> Result<f64, KernelError> {
    const RUNS: usize = 1001;
    const WINDOW: usize = 64;
    const WINDOWS: usize = 31;
    let times = |k: &Kernel, n: usize| -> Result<Vec<f64>, KernelError> {
        (0..n)
            .map(|_| k.run(packet, 1).map(|r| r.duration_ns as f64))
            .collect()
    };
    if spread {
        let mut d = Vec::with_capacity(WINDOWS);
        for _ in 0..WINDOWS {
            // Spread over some 0.6 s: the host's memory latency drifts over seconds.
            std::thread::sleep(std::time::Duration::from_millis(20));
            let (mut t0, mut t1) = (times(base, WINDOW)?, times(one, WINDOW)?);
            d.push(run_time(&mut t1) - run_time(&mut t0));
        }
        return Ok(percentile_90(&mut d).max(0.0));
    }
    let (mut t0, mut t1) = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
    for _ in 0..RUNS {
        t0.push(base.run(packet, 1)?.duration_ns as f64);
        t1.push(one.run(packet, 1)?.duration_ns as f64);
    }
    Ok((run_time(&mut t1) - run_time(&mut t0)).max(0.0))
}

/// The 90th percentile of single runs' times (sorted in place).
fn percentile_90(t: &mut [f64]) -> f64 {
    t.sort_by(|a, b| a.total_cmp(b));
    t[(t.len() * 9 / 10).min(t.len() - 1)]
}

/// The mean of the runs no slower than their 90th percentile (those at it kept: the clock
/// steps by whole nanoseconds or more), as `nicsim.xdp.validate.run_time` takes a path's time.
fn run_time(t: &mut [f64]) -> f64 {
    let cut = percentile_90(t);
    let kept: Vec<f64> = t.iter().copied().filter(|&x| x <= cut).collect();
    kept.iter().sum::<f64>() / kept.len() as f64
}

/// The program whose single runs give the per-packet overhead: it does nothing but use the
/// callee-saved registers r6–r9 and the whole stack, so that the JIT's prologue and epilogue are
/// the largest a program can have (they are not instructions of the program).
pub fn empty_program() -> Result<Kernel, KernelError> {
    Kernel::load_raw(
        &[
            mov64_imm(6, 0),
            mov64_imm(7, 0),
            mov64_imm(8, 0),
            mov64_imm(9, 0),
            r(0x7a, 10, 0, -512, 0),
            mov64_imm(0, 2),
            exit(),
        ],
        &[],
        "GPL",
        "empty",
    )
}

/// Run the micro-benchmarks on the running kernel. `budget` bounds each measurement; returns
/// the measured classes, the per-packet overhead (the empty program, one run per
/// `BPF_PROG_TEST_RUN`, as `nicsim xdp validate` measures packets) and the helpers whose
/// benchmarks the kernel refused (not timed; the target file costs them by analogy where it
/// can, and says so).
pub fn calibrate(
    mut progress: impl FnMut(&str),
    budget: Duration,
) -> Result<(Vec<Measured>, f64, Vec<Refused>), KernelError> {
    let packet = vec![0u8; 64];
    let mut out: Vec<Measured> = Vec::new();
    let mut refused: Vec<Refused> = Vec::new();
    // Several runs of `repeat` repetitions each, sorted: the program without the body is taken
    // at their median, the program with it at their 90th percentile (issue 29: where the cost
    // varies with the machine's other load, the slow side, so that the guarantee holds under
    // the load users have).
    let runs_ns = |k: &Kernel, repeat: u32| -> Result<Vec<f64>, KernelError> {
        let start = std::time::Instant::now();
        let mut t = Vec::new();
        while t.len() < 5 || (t.len() < 15 && start.elapsed() < budget) {
            t.push(k.run(&packet, repeat)?.duration_ns as f64);
        }
        t.sort_by(|a, b| a.total_cmp(b));
        Ok(t)
    };
    // The per-packet overhead: an empty program, timed as validation times packets.
    let empty = empty_program()?;
    let mut singles: Vec<f64> = (0..2001)
        .map(|_| empty.run(&packet, 1).map(|r| r.duration_ns as f64))
        .collect::<Result<_, _>>()?;
    singles.sort_by(|a, b| a.total_cmp(b));
    // The 90th percentile, not the median: single runs vary by tens of ns with the machine's
    // other load, and a guarantee must hold under it (issue 29: the upper quartile was beaten
    // by a stream of packets on a loaded machine).
    let overhead = singles[singles.len() * 9 / 10];
    for b in benches() {
        progress(&b.name);
        let n = if b.setup.is_empty() && b.maps.is_empty() {
            2000
        } else {
            200
        };
        let load_raw = |n: usize| Kernel::load_raw(&b.program(n), &b.maps, "GPL", "calib");
        let load_with = |n: usize, k: Result<Kernel, KernelError>| -> Result<Kernel, KernelError> {
            let k = k.map_err(|e| {
                KernelError::Input(format!("micro-benchmark '{}' ({n} times): {e}", b.name))
            })?;
            for (m, key, value) in &b.entries {
                k.set_raw(*m, key, value)?;
            }
            if n > 0 && b.fill > 0 {
                let (mut key, value) = (vec![0u8; b.maps[0].key_size as usize], vec![0u8; 8]);
                for i in 0..b.fill {
                    key[..4].copy_from_slice(&i.to_le_bytes());
                    k.set_raw(0, &key, &value)?;
                }
            }
            Ok(k)
        };
        let load = |n: usize| load_with(n, load_raw(n));
        let base = load(0)?;
        let full = match load_raw(n) {
            Err(e) if calls_helper(&b.body) && e.refused_helper().is_some() => {
                refused.push(Refused {
                    name: b.name.to_string(),
                    why: e.refused_helper().unwrap_or_default().trim().to_string(),
                });
                continue;
            }
            k => load_with(n, k)?,
        };
        // A table of 2^20 entries takes 100 ns and more per access: fewer repetitions suffice.
        let repeat = if b.fill > SMALL_MAP_ENTRIES {
            200
        } else {
            2000
        };
        let t0 = runs_ns(&base, repeat)?;
        let t0 = t0[t0.len() / 2];
        let t1 = runs_ns(&full, repeat)?;
        let t1 = t1[(t1.len() * 9 / 10).min(t1.len() - 1)];
        let setup_ns: f64 = b
            .setup
            .iter()
            .map(|(class, count)| {
                out.iter().find(|m| m.name == *class).map_or(0.0, |m| m.ns) * count
            })
            .sum();
        let warm = (((t1 - t0) / n as f64).max(0.0) - setup_ns).max(0.0);
        // A helper's first call in a packet's run finds its code (and the kernel data it reads
        // first) cold, which the loop above, calling it thousands of times in a row, never
        // sees: `bpf_skc_lookup_tcp` measured 62 ns in the loop and 110 ns as the one call of a
        // run (issue 29: `helpers_syncookie` beat its guarantee by 37-66 %). Validation times
        // each packet as one run, as the overhead above is timed, so a helper costs the worse
        // of the loop's figure and its one call's (docs/xdp.md, "Helpers from cold").
        let (ns, what) = if calls_helper(&b.body) && b.fill <= SMALL_MAP_ENTRIES {
            let one = load(1)?;
            let cold = (one_call_ns(&base, &one, &packet, b.spread)? - setup_ns).max(0.0);
            let one_call = if b.spread {
                "as a run's one call (90th percentile of 64-run windows)"
            } else {
                "as a run's one call"
            };
            let what = format!(
                "{}; the worse of {warm:.1} ns a call in a loop and {cold:.1} ns {one_call}",
                b.what
            );
            (warm.max(cold), Cow::Owned(what))
        } else {
            (warm, b.what)
        };
        out.push(Measured {
            name: b.name.into(),
            ns,
            what: what.into(),
        });
    }
    Ok((out, overhead, refused))
}
