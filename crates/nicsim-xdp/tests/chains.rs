//! Chains whose programs live in other objects (crate `nicsim_xdp::link`): `--tail-call
//! MAP=INDEX:OBJ.o[:PROGRAM]` (the other object's program with its own maps, maps pinned by name
//! shared) and `--dispatch` (libxdp's dispatcher convention: components in place of its `progN`
//! stubs, its `.rodata` config set as libxdp sets it), on tests/xdp/chain_*.c and disp_*.c.

mod common;

use common::obj_path;
use nicsim_xdp::interp::{run, MapState, RunOptions};
use nicsim_xdp::link::{kernel_targets, DISPATCH, DISPATCH_ACTIONS, DISPATCH_PRIO};
use nicsim_xdp::load::{load_full, ProgArray, TailSpec};
use nicsim_xdp::Program;

fn path(name: &str) -> Option<String> {
    let p = obj_path(name);
    if p.exists() {
        Some(p.to_string_lossy().into_owned())
    } else {
        eprintln!("skipped: {} (run `make xdp-suite`)", p.display());
        None
    }
}

fn spec(map: &str, index: u32, program: &str) -> TailSpec {
    TailSpec {
        map: map.into(),
        index,
        program: program.into(),
    }
}

/// Ethernet/IPv4/UDP to `dport`, with `payload` bytes of payload.
fn udp(dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + 8 + payload.len()) as u16;
    p.extend([
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    p.extend([10, 0, 0, 1, 10, 0, 0, 2]);
    p.extend([0xc0, 0, (dport >> 8) as u8, dport as u8]);
    let ulen = (8 + payload.len()) as u16;
    p.extend([(ulen >> 8) as u8, ulen as u8, 0, 0]);
    p.extend_from_slice(payload);
    p
}

fn action(p: &Program, maps: &mut MapState, packet: &[u8]) -> u64 {
    run(p, packet, maps, &RunOptions::default()).unwrap().retval
}

#[test]
fn a_slot_holds_another_objects_program_with_its_own_maps() {
    let (Some(root), Some(next)) = (path("chain_root"), path("chain_next")) else {
        return;
    };
    let bytes = std::fs::read(&root).unwrap();
    let tail = [
        spec("root_progs", 0, &format!("{next}:chain_next")),
        spec("chain_next.o:next_progs", 0, "chain_tx"),
    ];
    let p = load_full(&bytes, None, None, &tail).unwrap();
    assert_eq!(p.name, "chain_root");
    assert!(p.unbounded_prog_arrays().is_empty());
    let names: Vec<&str> = p.maps.iter().map(|m| m.name.as_str()).collect();
    // Its own maps, qualified by its file's name; the map both pin by name is one map.
    for want in [
        "stats",
        "chain_next.o:stats",
        "chain_next.o:.rodata",
        "chain_next.o:next_progs",
        "chain_seen",
    ] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    assert!(!names.contains(&"chain_next.o:chain_seen"), "{names:?}");
    let own = p.maps.iter().position(|m| m.name == "stats").unwrap();
    let theirs = p
        .maps
        .iter()
        .position(|m| m.name == "chain_next.o:stats")
        .unwrap();
    assert_eq!(
        (p.maps[own].type_name(), p.maps[theirs].type_name()),
        ("array", "hash")
    );
    // Two targets: chain_next (from the other object) and chain_tx (of that object's array).
    let targets: Vec<(&str, bool)> = p
        .tail_targets
        .iter()
        .map(|t| (t.name.as_str(), t.object.ends_with("chain_next.o")))
        .collect();
    assert_eq!(targets, [("chain_next", true), ("chain_tx", true)]);
    let nm = p
        .maps
        .iter()
        .position(|m| m.name == "chain_next.o:next_progs")
        .unwrap() as u32;
    assert!(matches!(&p.prog_arrays[&nm], ProgArray::Known(s) if s.len() == 1));

    // The interpreter follows the chain: port 53 is chain_next.o's `.rodata` blocked port.
    let mut maps = MapState::new(&p);
    assert_eq!(action(&p, &mut maps, &udp(53, &[0; 8])), 1, "XDP_DROP");
    assert_eq!(
        action(&p, &mut maps, &udp(80, &[0; 8])),
        3,
        "XDP_TX via chain_tx"
    );
    // The pinned map was counted by both programs, twice per packet; each `stats` its own.
    let seen = maps.get("chain_seen", &[0; 4]).unwrap().unwrap();
    assert_eq!(u64::from_le_bytes(seen[..8].try_into().unwrap()), 4);
    assert!(maps
        .get("chain_next.o:stats", &53u16.to_le_bytes())
        .unwrap()
        .is_some());
    let own_stats = maps.get("stats", &[0; 4]).unwrap().unwrap();
    assert_eq!(u64::from_le_bytes(own_stats[..8].try_into().unwrap()), 2);

    // The kernel's programs: each target alone, its maps renumbered to the chain's.
    let ks = kernel_targets(&bytes, &p, &tail).unwrap();
    assert_eq!(ks.len(), 2);
    for k in &ks {
        assert_eq!(k.maps.len(), p.maps.len());
    }
    let refs: Vec<&str> = ks[0]
        .raw
        .iter()
        .enumerate()
        .filter(|(i, r)| r.code == 0x18 && r.src == 1 && (*i == 0 || ks[0].raw[i - 1].code != 0x18))
        .map(|(_, r)| p.maps[r.imm as usize].name.as_str())
        .collect();
    assert!(
        refs.contains(&"chain_seen") && refs.contains(&"chain_next.o:stats"),
        "{refs:?}"
    );
    assert!(!refs.contains(&"stats"), "{refs:?}");

    // `chain_next.o:next_progs=none`: chain_next is the last program; its tail call returns.
    let last = load_full(
        &bytes,
        None,
        None,
        &[
            spec("root_progs", 0, &format!("{next}:chain_next")),
            spec("chain_next.o:next_progs", 0, ""),
        ],
    )
    .unwrap();
    assert!(last.unbounded_prog_arrays().is_empty());
    let mut maps = MapState::new(&last);
    assert_eq!(action(&last, &mut maps, &udp(80, &[0; 8])), 2, "XDP_PASS");
    // Without it, the other object's array is unknown: unbounded, named as given.
    let open = load_full(
        &bytes,
        None,
        None,
        &[spec("root_progs", 0, &format!("{next}:chain_next"))],
    )
    .unwrap();
    assert_eq!(open.unbounded_prog_arrays(), ["chain_next.o:next_progs"]);
}

#[test]
fn bad_links_are_one_line_errors() {
    let (Some(root), Some(next), Some(disp), Some(clash)) = (
        path("chain_root"),
        path("chain_next"),
        path("disp_mini"),
        path("chain_pin_clash"),
    ) else {
        return;
    };
    let bytes = std::fs::read(&root).unwrap();
    let this = std::fs::read(&disp).unwrap();
    for (obj, specs, needle) in [
        (
            &bytes,
            vec![spec("root_progs", 0, "/nonexistent/x.o:p")],
            "cannot read /nonexistent/x.o",
        ),
        (
            &bytes,
            vec![spec("root_progs", 0, &next)],
            "several XDP programs",
        ),
        (
            &bytes,
            vec![spec("root_progs", 0, &format!("{next}:nope"))],
            "no program",
        ),
        (
            &bytes,
            vec![spec("root_progs", 4, &format!("{next}:chain_next"))],
            "slot 4 is past the array's 4 entries",
        ),
        (
            &bytes,
            vec![spec("stats", 0, &format!("{next}:chain_next"))],
            "not prog_array",
        ),
        (
            &bytes,
            vec![
                spec("root_progs", 0, &format!("{next}:chain_next")),
                spec("chain_next.o:nosuch", 0, "chain_tx"),
            ],
            "no map 'nosuch'",
        ),
        (
            &bytes,
            vec![spec(DISPATCH, 0, &format!("{next}:chain_next"))],
            "not a libxdp dispatcher",
        ),
        (&this, vec![spec(DISPATCH, 0, &root)], "makes tail calls"),
        (
            &bytes,
            vec![spec("root_progs", 0, &clash)],
            "map 'chain_seen' is pinned by name in both objects with other definitions",
        ),
        (
            &this,
            (0..5)
                .map(|i| spec(DISPATCH, i, &format!("{next}:chain_tx")))
                .collect(),
            "at most 4 programs",
        ),
    ] {
        let e = load_full(obj, None, None, &specs).unwrap_err().to_string();
        assert!(e.contains(needle), "{needle}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

/// The dispatcher's `.rodata` config `conf` (struct xdp_dispatcher_config of disp_mini.c).
fn conf(p: &Program) -> (u8, u8, u8, Vec<u32>, Vec<u32>) {
    let d = &p.maps.iter().find(|m| m.name == ".rodata").unwrap().data;
    let words = |at: usize| {
        (0..4)
            .map(|i| u32::from_le_bytes(d[at + 4 * i..at + 4 * i + 4].try_into().unwrap()))
            .collect()
    };
    (d[0], d[2], d[3], words(4), words(20))
}

#[test]
fn dispatcher_components_replace_its_stubs_in_libxdps_order() {
    let (Some(disp), Some(a), Some(b)) =
        (path("disp_mini"), path("disp_comp_a"), path("disp_comp_b"))
    else {
        return;
    };
    let bytes = std::fs::read(&disp).unwrap();
    // Given a then b; b's XDP_RUN_CONFIG priority 10 runs it first, as libxdp sorts them.
    let p = load_full(
        &bytes,
        None,
        None,
        &[spec(DISPATCH, 0, &a), spec(DISPATCH, 1, &b)],
    )
    .unwrap();
    let (magic, num, frags, actions, prios) = conf(&p);
    assert_eq!((magic, num, frags), (236, 2, 0));
    // b: XDP_PASS and XDP_DROP; a: libxdp's default XDP_PASS; each with XDP_DISPATCHER_RETVAL.
    assert_eq!(actions, [1 << 31 | 1 << 2 | 1 << 1, 1 << 31 | 1 << 2, 0, 0]);
    assert_eq!(prios, [10, 50, 0, 0]);
    // The stubs prog0 and prog1 are gone; the components sit there, in the program the kernel
    // loads; prog2 and prog3 stay.
    let f: Vec<&str> = p.functions.iter().map(|f| f.0.as_str()).collect();
    assert!(
        !f.contains(&"prog0") && !f.contains(&"prog1") && f.contains(&"prog2"),
        "{f:?}"
    );
    let at = |c: &str| p.functions.iter().find(|x| x.0 == c).unwrap().1;
    let (b_at, a_at) = (at("disp_comp_b.o:comp_b"), at("disp_comp_a.o:comp_a"));
    assert!(
        b_at < a_at && (a_at as usize) < p.main_len,
        "prog0 is b, prog1 a"
    );
    assert!(p.maps.iter().any(|m| m.name == "disp_comp_b.o:sums"));
    assert!(p.maps.iter().any(|m| m.name == "disp_comp_a.o:stats"));

    let mut maps = MapState::new(&p);
    // comp_b sums bytes 14..46; byte 45 (payload) sets the sum's parity.
    let with_parity = |dport: u16, odd: bool| {
        let mut q = udp(dport, &[0; 32]);
        let sum: u32 = q[14..46].iter().map(|&b| u32::from(b)).sum();
        if (sum % 2 == 1) != odd {
            q[45] = 1;
        }
        q
    };
    // An even sum (b passes), UDP port 9: a drops it.
    assert_eq!(
        action(&p, &mut maps, &with_parity(9, false)),
        1,
        "XDP_DROP by comp_a"
    );
    // b ran first (a's drop ends the run): b's map counted the packet.
    assert_eq!(maps.entries("disp_comp_b.o:sums").unwrap().len(), 1);
    // An odd sum: b drops, the chain goes on after XDP_DROP (b's config): a sees it too.
    assert_eq!(
        action(&p, &mut maps, &with_parity(80, true)),
        2,
        "XDP_PASS by comp_a"
    );
    assert_eq!(
        action(&p, &mut maps, &with_parity(9, true)),
        1,
        "XDP_DROP by comp_a"
    );

    // xdp-loader's --prio 60 --actions XDP_PASS for both: a (by name) first, then b, which
    // no longer chains after its drop.
    let over = load_full(
        &bytes,
        None,
        None,
        &[
            spec(DISPATCH, 0, &b),
            spec(DISPATCH, 1, &a),
            spec(DISPATCH_PRIO, 60, ""),
            spec(DISPATCH_ACTIONS, 1 << 2, ""),
        ],
    )
    .unwrap();
    let (_, num, _, actions, prios) = conf(&over);
    assert_eq!(
        (num, &actions[..2], &prios[..2]),
        (2, &[1 << 31 | 1 << 2; 2][..], &[60, 60][..])
    );
    let at = |c: &str| over.functions.iter().find(|x| x.0 == c).unwrap().1;
    assert!(at("disp_comp_a.o:comp_a") < at("disp_comp_b.o:comp_b"));
    let e = load_full(&bytes, None, None, &[spec(DISPATCH_PRIO, 1, "")]).unwrap_err();
    assert!(e.to_string().contains("without --dispatch"), "{e}");

    // a alone: the default chain actions; port 9 dropped; the dispatcher's other slots unused.
    let one = load_full(&bytes, None, None, &[spec(DISPATCH, 0, &a)]).unwrap();
    let (_, num, _, actions, _) = conf(&one);
    assert_eq!((num, actions[0], actions[1]), (1, 1 << 31 | 1 << 2, 0));
    let mut maps = MapState::new(&one);
    assert_eq!(action(&one, &mut maps, &udp(9, &[0; 32])), 1);
    assert_eq!(action(&one, &mut maps, &udp(80, &[0; 32])), 2);
}

#[test]
fn a_target_the_index_never_names_is_dead_code_not_an_unbounded_loop() {
    // tail_dead_slot jumps to slot 0 or 1; slot 2 holds `walker`, whose loop has no evident
    // bound. Spliced at a call that never names slot 2, the walker is code no state reaches:
    // dropped, so the analysis neither asks for --loop-bound nor counts the walker's paths.
    // Slot 1 holding it, the loop is live again and needs its bound, as it does alone.
    let Some(root) = path("tail_dead_slot") else {
        return;
    };
    let bytes = std::fs::read(root).unwrap();
    let with = |slot: u32, loop_bound: Option<u32>| {
        let o = nicsim_xdp::Options {
            tail_calls: vec![spec("jumps", slot, "walker")],
            loop_bound,
            ..nicsim_xdp::Options::default()
        };
        nicsim_xdp::Analysis::new(&bytes, common::nfp(), &o)
    };
    let dead = with(2, None).expect("the dead walker is dropped");
    assert!(dead.graph.loops.is_empty(), "{:?}", dead.graph.loops);
    let err = with(1, None)
        .err()
        .expect("a live walker needs its bound")
        .to_string();
    assert!(err.contains("no evident bound"), "{err}");
    let live = with(1, Some(8)).unwrap();
    assert_eq!(live.graph.loops.len(), 1);
    assert!(live.graph.nodes.len() > dead.graph.nodes.len());
}
