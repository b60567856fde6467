//! The kfuncs modelled since issue 32 on the test programs that call them (tests/xdp/kf_*.c,
//! built by `make xdp-suite`): the open-coded number iterator's loops bounded by its count, the
//! interpreter's runs as the kernel's, and the refusal on `nfp` (the NFP offload runs no kfuncs).

mod common;

use common::{nfp, obj};
use nicsim_xdp::interp::{run, MapState, RunOptions};
use nicsim_xdp::{load_with, Analysis, Options, Target};

/// `nfp` with a cost for each kfunc in `names` (costs do not change what is feasible).
fn with_kfuncs(names: &[&str]) -> Target {
    let mut t = nfp();
    let c = t.helpers["get_prandom_u32"].clone();
    for n in names {
        t.helpers
            .insert(n.trim_start_matches("bpf_").to_string(), c.clone());
    }
    t
}

const ITER: [&str; 3] = [
    "bpf_iter_num_new",
    "bpf_iter_num_next",
    "bpf_iter_num_destroy",
];

#[test]
fn an_iter_num_loop_is_bounded_by_the_iterators_count() {
    let a = Analysis::new(&obj("kf_iter_num"), with_kfuncs(&ITER), &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut bounds: Vec<u32> = a.graph.loops.iter().map(|l| l.bound).collect();
    bounds.sort();
    // The constant loop: 8 pointers, the 9th call NULL; the map's: at most 3. clang rotates
    // each loop (the first `next` before it), so its back edge is taken 7 and 2 times.
    assert_eq!(bounds, [2, 7], "{:?}", a.graph.loops);
    assert!(a.graph.loops.iter().all(|l| l.evident && !l.summary));

    // On nfp: one line naming the NFP offload's rule.
    let e = Analysis::new(&obj("kf_iter_num"), nfp(), &Options::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(
            "kfunc bpf_iter_num_new has no cost on target nfp: the NFP offload runs no kfuncs"
        ),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");

    // The interpreter: the sum of the 8 bytes after the Ethernet header, then (with the map's
    // value 2) two more rounds of sum * 31 + i for i = 1, 2.
    let p = load_with(&obj("kf_iter_num"), None, None).unwrap();
    let mut pkt = vec![0u8; 60];
    for (i, b) in pkt[14..22].iter_mut().enumerate() {
        *b = i as u8 + 1;
    }
    let mut maps = MapState::new(&p);
    let out = run(&p, &pkt, &mut maps, &RunOptions::default()).unwrap();
    let sum: u32 = (1..=8).sum();
    assert_eq!(out.retval, if sum & 1 == 1 { 1 } else { 2 });
    let mut maps = MapState::new(&p);
    maps.set("iter_cfg", &0u32.to_ne_bytes(), &2u32.to_ne_bytes())
        .unwrap();
    let out = run(&p, &pkt, &mut maps, &RunOptions::default()).unwrap();
    let s2 = (sum * 31 + 1) * 31 + 2;
    assert_eq!(out.retval, if s2 & 1 == 1 { 1 } else { 2 });
    // A short packet: the loop stops at data_end.
    let out = run(
        &p,
        &pkt[..17],
        &mut MapState::new(&p),
        &RunOptions::default(),
    )
    .unwrap();
    assert_eq!(out.retval, if (1 + 2 + 3) & 1 == 1 { 1 } else { 2 });

    // The kernel (the kfuncs called by their vmlinux BTF ids) gives the interpreter's answers.
    let k = match nicsim_xdp::kernel::Kernel::load(&p) {
        Ok(k) => k,
        Err(nicsim_xdp::kernel::KernelError::Sys { err, .. })
            if err.raw_os_error() == Some(libc_eperm()) =>
        {
            eprintln!("no privileges for bpf(2): the kernel part is not checked");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    for (value, len) in [(0u32, 60), (2, 60), (3, 60), (1, 17), (3, 20)] {
        k.set("iter_cfg", &0u32.to_ne_bytes(), &value.to_ne_bytes())
            .unwrap();
        let mut maps = MapState::new(&p);
        maps.set("iter_cfg", &0u32.to_ne_bytes(), &value.to_ne_bytes())
            .unwrap();
        let want = run(&p, &pkt[..len], &mut maps, &RunOptions::default())
            .unwrap()
            .retval;
        assert_eq!(
            k.run(&pkt[..len], 1).unwrap().retval as u64,
            want,
            "value {value}, {len} bytes"
        );
    }
}

fn libc_eperm() -> i32 {
    1
}

const NO_VALUE: [&str; 4] = nicsim_xdp::helpers::kfuncs::NO_VALUE;

#[test]
fn the_kfuncs_without_a_value_change_nothing_and_run_in_the_kernel() {
    let a = Analysis::new(&obj("kf_rcu"), with_kfuncs(&NO_VALUE), &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(a.graph.loops.is_empty());
    let e = Analysis::new(&obj("kf_rcu"), nfp(), &Options::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("has no cost on target nfp: the NFP offload runs no kfuncs"),
        "{e}"
    );
    let p = load_with(&obj("kf_rcu"), None, None).unwrap();
    let mut pkt = vec![0u8; 60];
    pkt[12] = 0x08;
    let k = match nicsim_xdp::kernel::Kernel::load(&p) {
        Ok(k) => Some(k),
        Err(nicsim_xdp::kernel::KernelError::Sys { err, .. }) if err.raw_os_error() == Some(1) => {
            None
        }
        Err(e) => panic!("{e}"),
    };
    for allow in [0u32, 1] {
        let mut maps = MapState::new(&p);
        maps.set("rcu_allow", &0x0008u16.to_ne_bytes(), &allow.to_ne_bytes())
            .unwrap();
        let want = run(&p, &pkt, &mut maps, &RunOptions::default())
            .unwrap()
            .retval;
        assert_eq!(want, if allow == 1 { 2 } else { 1 });
        if let Some(k) = &k {
            k.set("rcu_allow", &0x0008u16.to_ne_bytes(), &allow.to_ne_bytes())
                .unwrap();
            assert_eq!(k.run(&pkt, 1).unwrap().retval as u64, want);
        }
    }
}

#[test]
fn an_iter_num_count_from_the_packet_needs_a_loop_bound() {
    let t = || with_kfuncs(&ITER);
    let e = Analysis::new(&obj("kf_iter_pktlen"), t(), &Options::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("its bpf_iter_num_next may give a number 8388607 more times")
            && e.ends_with("give a bound with --loop-bound N"),
        "{e}"
    );
    let a = Analysis::new(
        &obj("kf_iter_pktlen"),
        t(),
        &Options {
            loop_bound: Some(4),
            ..Options::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(a.graph.loops.iter().all(|l| l.bound == 4 && !l.evident));
    // The interpreter: n = 3 iterations (0^0x5a + 1^0x5a + 2^0x5a = 0x5a + 0x5b + 0x58, odd:
    // XDP_DROP); n = -1 (-EINVAL) and n = 2^23 + 1 (-E2BIG): no iteration, XDP_PASS; the kernel
    // gives the same.
    let p = load_with(&obj("kf_iter_pktlen"), None, None).unwrap();
    let pkt = |n: u32| {
        let mut b = vec![0u8; 60];
        b[14..18].copy_from_slice(&n.to_be_bytes());
        b
    };
    let act = |n: u32| {
        run(&p, &pkt(n), &mut MapState::new(&p), &RunOptions::default())
            .unwrap()
            .retval
    };
    assert_eq!(act(3), 1);
    assert_eq!(act(0), 3);
    assert_eq!(act(u32::MAX), 2);
    assert_eq!(act((1 << 23) + 1), 2);
    if let Ok(k) = nicsim_xdp::kernel::Kernel::load(&p) {
        for n in [3, 0, u32::MAX, (1 << 23) + 1, 1000, 77] {
            assert_eq!(k.run(&pkt(n), 1).unwrap().retval as u64, act(n), "n = {n}");
        }
    }
}

const DYNPTR: [&str; 8] = [
    "bpf_dynptr_from_xdp",
    "bpf_dynptr_slice",
    "bpf_dynptr_slice_rdwr",
    "bpf_dynptr_adjust",
    "bpf_dynptr_is_null",
    "bpf_dynptr_is_rdonly",
    "bpf_dynptr_size",
    "bpf_dynptr_clone",
];

#[test]
fn dynptr_slices_of_the_packet_are_modelled_and_run_as_the_kernel_runs_them() {
    let ipv4 = |ttl: u8, len: usize| {
        let mut b = vec![0u8; len];
        b[12] = 0x08;
        b[14] = 0x45;
        if len > 22 {
            b[22] = ttl;
        }
        b
    };
    for name in ["kf_dynptr", "kf_dynptr_rdwr"] {
        Analysis::new(&obj(name), with_kfuncs(&DYNPTR), &Options::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let e = Analysis::new(&obj(name), nfp(), &Options::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("the NFP offload runs no kfuncs"), "{e}");
        let p = load_with(&obj(name), None, None).unwrap();
        let rdwr = name == "kf_dynptr_rdwr";
        let cases = [
            (ipv4(64, 60), 3, Some(if rdwr { 63 } else { 64 })),
            (ipv4(1, 60), 1, None),
            (ipv4(64, 30), 1, None), // too short for the IPv4 header: NULL
            (vec![0u8; 60], 2, None),
        ];
        let k = nicsim_xdp::kernel::Kernel::load(&p);
        match &k {
            Ok(_) => assert!(!rdwr, "the kernel now loads {name}: check it as kf_dynptr"),
            Err(nicsim_xdp::kernel::KernelError::Verifier { log, .. }) if rdwr => {
                assert!(
                    log.contains("bpf_dynptr_slice_rdwr() is not allowed"),
                    "{log}"
                )
            }
            Err(nicsim_xdp::kernel::KernelError::Sys { err, .. })
                if err.raw_os_error() == Some(1) =>
            {
                eprintln!("no privileges for bpf(2): the kernel part is not checked")
            }
            Err(e) => panic!("{name}: {e}"),
        }
        for (pkt, want, ttl) in cases {
            let out = run(&p, &pkt, &mut MapState::new(&p), &RunOptions::default()).unwrap();
            assert_eq!(out.retval, want, "{name} {pkt:?}");
            if let Some(t) = ttl {
                assert_eq!(out.packet[22], t);
            }
            if let Ok(k) = &k {
                let r = k.run(&pkt, 1).unwrap();
                assert_eq!((r.retval as u64, &r.packet), (want, &out.packet), "{pkt:?}");
            }
        }
    }
    // A program that also moves the packet is refused, naming the helper.
    let e = Analysis::new(
        &obj("kf_dynptr_moved"),
        with_kfuncs(&DYNPTR),
        &Options::default(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains(
            "kfunc bpf_dynptr_from_xdp is not supported in a program that also calls \
                    bpf_xdp_adjust_head"
        ),
        "{e}"
    );
}

#[test]
fn ksym_externs_are_resolved_as_libbpf_resolves_them() {
    // Typeless: the address in /proc/kallsyms, a constant (as root; else one line).
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let want = text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&"xdp_do_redirect")).then(|| u64::from_str_radix(f[0], 16).unwrap())
    });
    match (load_with(&obj("ld_ksym"), None, None), want) {
        (Ok(p), Some(a)) if a != 0 => {
            assert!(p.code.iter().flatten().any(|i| matches!(
                i,
                nicsim_xdp::insn::Insn::LdImm64 { imm: nicsim_xdp::insn::Imm64::Const(c), .. } if *c == a
            )));
            Analysis::new(&obj("ld_ksym"), nfp(), &Options::default()).unwrap();
            let mut maps = MapState::new(&p);
            let out = run(&p, &[0u8; 60], &mut maps, &RunOptions::default()).unwrap();
            assert_eq!(out.retval, if a >> 63 == 1 { 2 } else { 1 });
            let k = nicsim_xdp::kernel::Kernel::load(&p).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(k.run(&[0u8; 60], 1).unwrap().retval as u64, out.retval);
            assert_eq!(
                k.get("ksym_addr", &0u32.to_ne_bytes()).unwrap(),
                Some(a.to_ne_bytes().to_vec())
            );
        }
        (Err(e), None | Some(0)) => {
            assert!(e.to_string().contains("'xdp_do_redirect' (__ksym)"), "{e}")
        }
        (Err(e), Some(_)) => panic!("{e}"),
        (Ok(_), _) => panic!("resolved without an address in /proc/kallsyms"),
    }
    // Typed: one line.
    let e = load_with(&obj("ld_ksym_typed"), None, None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("extern variable 'runqueues' (__ksym) is a typed kernel symbol"),
        "{e}"
    );
}
