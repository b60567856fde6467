//! The loader on objects built the way real users' objects are (tests/xdp/ld_*.c, built into
//! $NICSIM_XDP_OBJS by `make xdp-suite`, some without BTF or through llc as the XDP paper's
//! were): programs found as libbpf, iproute2 and older loaders find them, legacy maps of every
//! size, BTF maps of maps, global data, kfuncs.

mod common;

use common::{nfp, obj};
use nicsim_xdp::insn::{Imm64, Insn};
use nicsim_xdp::interp::{run, Fault, MapState, RunOptions};
use nicsim_xdp::load::{candidates, MapDef, SectionType};
use nicsim_xdp::{load_with, Analysis, Options, Program};
use object::{Object, ObjectSection, ObjectSymbol};

fn load(name: &str, section: Option<&str>, program: Option<&str>) -> Program {
    load_with(&obj(name), section, program)
        .unwrap_or_else(|e| panic!("{name} ({section:?}, {program:?}): {e}"))
}

fn load_err(bytes: &[u8], section: Option<&str>, program: Option<&str>) -> String {
    load_with(bytes, section, program)
        .expect_err("must fail")
        .to_string()
}

fn analyse(bytes: &[u8], section: Option<&str>, program: Option<&str>) -> Result<Analysis, String> {
    Analysis::new(
        bytes,
        nfp(),
        &Options {
            section: section.map(str::to_string),
            program: program.map(str::to_string),
            ..Options::default()
        },
    )
    .map_err(|e| e.to_string())
}

/// (name, type, key size, value size, max entries) of every map.
fn maps(p: &Program) -> Vec<(&str, &str, u32, u32, u32)> {
    p.maps
        .iter()
        .map(|m| {
            (
                m.name.as_str(),
                m.type_name(),
                m.key_size,
                m.value_size,
                m.max_entries,
            )
        })
        .collect()
}

fn map<'p>(p: &'p Program, name: &str) -> &'p MapDef {
    p.maps.iter().find(|m| m.name == name).unwrap()
}

/// The object with the size of every symbol in section `sec` set to 0 (as objects whose map
/// definitions' size is the section's size over the number of maps have them).
fn unsized_symbols(bytes: &[u8], sec: &str) -> Vec<u8> {
    let f = object::File::parse(bytes).unwrap();
    let idx = f.section_by_name(sec).unwrap().index();
    let (off, size) = f.section_by_name(".symtab").unwrap().file_range().unwrap();
    let mut out = bytes.to_vec();
    let mut n = 0;
    for at in (off as usize..(off + size) as usize).step_by(24) {
        let shndx = u16::from_le_bytes([out[at + 6], out[at + 7]]);
        if shndx as usize == idx.0 && out[at + 4] & 0xf == 1 {
            out[at + 16..at + 24].fill(0); // st_size of an STT_OBJECT
            n += 1;
        }
    }
    assert!(n > 0, "no map symbols in {sec}");
    out
}

#[test]
fn an_object_of_machine_none_is_read_as_old_llvm_wrote_bpf() {
    // Old LLVM wrote e_machine 0 (EM_NONE) for BPF; libbpf reads such objects.
    let mut bytes = obj("ld_kv_pair");
    assert_eq!(bytes[18..20], [247, 0]);
    let p = load_with(&bytes, None, None).unwrap();
    bytes[18..20].copy_from_slice(&[0, 0]);
    assert_eq!(load_with(&bytes, None, None).unwrap().raw, p.raw);
    // Any other machine is not BPF.
    bytes[18..20].copy_from_slice(&[62, 0]);
    let e = load_err(&bytes, None, None);
    assert!(e.contains("not a BPF object"), "{e}");
}

#[test]
fn annotations_and_empty_data_sections_are_no_maps_as_libbpf_reads_them() {
    // `.maps.stats` (BPF_ANNOTATE_KV_PAIR) and empty `.data`/`.bss` (GCC) make no map.
    let p = load("ld_kv_pair", None, None);
    assert_eq!(maps(&p), [("stats", "hash", 4, 8, 16)]);
}

#[test]
fn a_global_function_in_text_is_the_program_as_in_the_papers_objects() {
    let bytes = obj("ld_text_legacy");
    let f = object::File::parse(&*bytes).unwrap();
    // Built as the paper's objects were: no BTF, no program section, a static subprogram.
    assert!(f.section_by_name(".BTF").is_none() && f.section_by_name("xdp").is_none());
    let sym = f.symbols().find(|s| s.name() == Ok("proto_of")).unwrap();
    assert!(
        sym.is_local()
            && f.section_by_index(sym.section_index().unwrap())
                .unwrap()
                .name()
                == Ok(".text")
    );
    // The global function is the one candidate: the static one is a subprogram.
    let c = candidates(&bytes).unwrap();
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(
        (c[0].section.as_str(), c[0].name.as_str()),
        (".text", "ld_text_legacy")
    );
    let p = load("ld_text_legacy", None, None);
    assert_eq!(
        (p.section.as_str(), p.name.as_str()),
        (".text", "ld_text_legacy")
    );
    // The subprogram is linked after the program and called.
    assert!(p
        .code
        .iter()
        .flatten()
        .any(|i| matches!(i, Insn::CallLocal { .. })));
    // Legacy 20-byte bpf_map_def, without BTF: no source lines, and no license (GPL assumed).
    assert_eq!(
        maps(&p),
        [("hits", "array", 4, 8, 4), ("seen", "hash", 4, 8, 16)]
    );
    assert!(p.lines.is_empty() && p.line_of.iter().all(Option::is_none));
    assert_eq!(p.license, "GPL");
    let a = analyse(&bytes, None, None).unwrap();
    assert!(a.naive_summary()["naive"]["pps"].as_f64().unwrap() > 0.0);
    // Map symbols without a size: each definition is the section's size over their number.
    let q = load_with(&unsized_symbols(&bytes, "maps"), None, None).unwrap();
    assert_eq!(maps(&q), maps(&p));
    assert_eq!(q.raw, p.raw);
}

#[test]
fn an_iproute2_prog_section_with_bpf_elf_maps() {
    let bytes = obj("ld_iproute2");
    // `prog` (untyped) is chosen over `classifier` (a tc program) without being asked for.
    let p = load("ld_iproute2", None, None);
    assert_eq!(
        (p.section.as_str(), p.name.as_str()),
        ("prog", "xdp_drop_vlan")
    );
    assert!(p.lines.is_empty(), "built without BTF");
    assert_eq!(
        maps(&p),
        [
            ("blocked", "hash", 4, 4, 64),
            ("per_vlan", "hash_of_maps", 4, 4, 16),
            ("tmpl", "array", 4, 8, 2),
            ("vlan_drops", "percpu_array", 4, 8, 1),
            ("per_vlan.inner", "array", 4, 8, 2),
        ]
    );
    // iproute2's map in map: the outer map's inner_id is the template's id.
    let inner = map(&p, "per_vlan").inner.as_deref().expect("inner map");
    assert_eq!(
        (inner.name.as_str(), inner.map_type, inner.value_size),
        ("tmpl", 2, 8)
    );
    assert!(map(&p, "tmpl").inner.is_none());
    analyse(&bytes, None, None).unwrap();
    // 36-byte definitions from the section's size when the symbols have none.
    let q = load_with(&unsized_symbols(&bytes, "maps"), None, None).unwrap();
    assert_eq!(maps(&q), maps(&p));
    // The tc program can still be chosen by name (iproute2 loads any section as told).
    let tc = load("ld_iproute2", Some("classifier"), None);
    assert_eq!(tc.name, "tc_pass");
    let c: Vec<_> = candidates(&bytes)
        .unwrap()
        .into_iter()
        .map(|c| (c.section, c.kind))
        .collect();
    assert_eq!(
        c,
        [
            ("prog".to_string(), SectionType::Untyped),
            ("classifier".to_string(), SectionType::Other)
        ]
    );
}

#[test]
fn several_programs_are_listed_and_every_listed_name_chooses_one() {
    let bytes = obj("ld_sections");
    let e = load_err(&bytes, None, None);
    assert_eq!(
        e,
        "the object has several XDP programs: fwd (section xdp_fwd), icmp (section xdp_icmp), \
         sock (section xdp_sock); programs of other types: tc_prog (section tc), sock_filter \
         (section socket); choose one with --program NAME (or --section NAME)"
    );
    // Every name the error lists (the XDP candidates, then the programs of other types),
    // function or section, is accepted by --section; function names by --program too.
    let rest = e.split_once(": ").unwrap().1;
    let list = rest
        .split("; choose")
        .next()
        .unwrap()
        .replace("; programs of other types: ", ", ");
    let mut n = 0;
    for item in list.split(", ") {
        let (func, sec) = item.split_once(" (section ").unwrap();
        let sec = sec.trim_end_matches(')');
        for p in [
            load("ld_sections", Some(func), None),
            load("ld_sections", None, Some(func)),
            load("ld_sections", Some(sec), None),
            load("ld_sections", Some(sec), Some(func)),
            load("ld_sections", None, Some(&format!("{sec}/{func}"))),
        ] {
            assert_eq!((p.section.as_str(), p.name.as_str()), (sec, func));
        }
        n += 1;
    }
    assert_eq!(n, 5);
    // A choice that matches nothing lists what there is.
    assert_eq!(
        load_err(&bytes, Some("xdp_icmp"), Some("fwd")),
        "no program named 'fwd' in section 'xdp_icmp' (programs: fwd (section xdp_fwd), icmp \
         (section xdp_icmp), sock (section xdp_sock), tc_prog (section tc), sock_filter \
         (section socket))"
    );
    // The kernel samples' 28-byte bpf_map_def: the map of maps names its inner map by index.
    let p = load("ld_sections", Some("xdp_icmp"), None);
    assert_eq!(
        maps(&p),
        [
            ("counts", "array", 4, 8, 2),
            ("per_port", "array_of_maps", 4, 4, 8),
            ("tx_port", "devmap", 4, 4, 8),
            ("per_port.inner", "array", 4, 8, 2)
        ]
    );
    assert_eq!(map(&p, "per_port").inner.as_ref().unwrap().name, "counts");
    // Built with -g: source lines.
    assert!(p.lines.iter().any(|l| l.file.ends_with("ld_sections.c")));
    analyse(&bytes, Some("xdp_icmp"), None).unwrap();
    analyse(&bytes, None, Some("sock")).unwrap();
}

#[test]
fn two_programs_in_one_section_are_chosen_by_function() {
    let bytes = obj("two_progs");
    assert_eq!(
        load_err(&bytes, Some("xdp"), None),
        "section 'xdp' holds several programs: first (section xdp), second (section xdp); \
         choose one with --program NAME (or --section NAME)"
    );
    for (s, p) in [
        (Some("xdp"), Some("second")),
        (None, Some("second")),
        (Some("second"), None),
        (Some("xdp/second"), None),
        (None, Some("xdp/second")),
    ] {
        assert_eq!(load("two_progs", s, p).name, "second", "{s:?} {p:?}");
    }
    let e = load_err(&bytes, None, Some("third"));
    assert!(
        e.starts_with("no program named 'third' (programs: first"),
        "{e}"
    );
}

#[test]
fn an_xdp_section_is_preferred_over_other_program_types() {
    // calls.o: one `xdp` program; renamed `socket`, it is a program of another type and not
    // taken on its own; renamed `prog`, it is taken.
    let bytes = obj("calls");
    let f = object::File::parse(&*bytes).unwrap();
    let xdp = f.section_by_name("xdp").unwrap().index().0;
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let shstrndx = u16::from_le_bytes(bytes[0x3e..0x40].try_into().unwrap()) as usize;
    drop(f);
    let field = |i: usize, off: usize| {
        u64::from_le_bytes(bytes[shoff + 64 * i + off..][..8].try_into().unwrap()) as usize
    };
    // The section's name, in place (3 bytes; the string table may share them).
    let name_at = field(shstrndx, 24) + (field(xdp, 0) & 0xffff_ffff);
    let rename = |to: &str| {
        let mut b = bytes.clone();
        b[name_at..name_at + 3].copy_from_slice(to.as_bytes());
        b
    };
    let e = load_err(&rename("tc\0"), None, None);
    assert!(
        e.starts_with(
            "the object has no XDP program (only programs of other types: calls (section tc)"
        ),
        "{e}"
    );
    assert_eq!(
        load_with(&rename("tc\0"), None, Some("calls"))
            .unwrap()
            .section,
        "tc"
    );
    assert_eq!(
        load_with(&rename("prg"), None, None).unwrap().section,
        "prg"
    );
    // Code in no executable section at all.
    let mut b = bytes.clone();
    b[shoff + 64 * xdp + 8] &= !4; // SHF_EXECINSTR
    let e = load_err(&b, None, None);
    assert!(
        e.starts_with("the object has no XDP program (no executable section"),
        "{e}"
    );
}

#[test]
fn a_kfunc_call_loads_and_the_metadata_kfuncs_are_modelled() {
    let bytes = obj("ld_kfunc");
    let p = load("ld_kfunc", None, None);
    assert_eq!(p.kfuncs, ["bpf_xdp_metadata_rx_timestamp"]);
    assert!(p
        .code
        .iter()
        .any(|i| matches!(i, Some(Insn::Kfunc { id: 0 }))));
    analyse(&bytes, None, None).expect("rx_timestamp is modelled");
    // Not bound to a device, the kernel's default returns -EOPNOTSUPP: XDP_PASS.
    let out = run(&p, &[0; 60], &mut MapState::new(&p), &RunOptions::default()).unwrap();
    assert_eq!(out.retval, 2);
    let p = load("kf_rx_meta", None, None);
    let mut k = p.kfuncs.clone();
    k.sort();
    assert_eq!(
        k,
        [
            "bpf_xdp_metadata_rx_hash",
            "bpf_xdp_metadata_rx_timestamp",
            "bpf_xdp_metadata_rx_vlan_tag"
        ]
    );
    analyse(&obj("kf_rx_meta"), None, None).expect("the metadata kfuncs are modelled");
}

#[test]
fn other_kfuncs_are_one_error_naming_them() {
    // (The conntrack kfuncs other than the lookup and release: interp.rs's unit test.)
    {
        let (name, kfunc, why) = (
            "ld_kfunc_unknown",
            "bpf_nicsim_no_such_kfunc",
            ": supported kfuncs: ",
        );
        let p = load(name, None, None);
        let at = p
            .code
            .iter()
            .position(|i| matches!(i, Some(Insn::Kfunc { id: 0 })))
            .expect("a kfunc call");
        let e = analyse(&obj(name), None, None).err().unwrap();
        let want = format!("instruction {at}: kfunc {kfunc} is not supported{why}");
        assert!(e.starts_with(&want), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = run(&p, &[0; 60], &mut MapState::new(&p), &RunOptions::default()).unwrap_err();
        assert!(
            matches!(&e, Fault::Invalid { what, .. } if what.starts_with(&format!("kfunc {kfunc} is not supported{why}"))),
            "{e}"
        );
    }
}

#[test]
fn the_conntrack_lookup_and_release_are_modelled() {
    let p = load("ld_kfunc_ct", None, None);
    assert_eq!(p.kfuncs, ["bpf_xdp_ct_lookup", "bpf_ct_release"]);
    analyse(&obj("ld_kfunc_ct"), None, None).expect("the conntrack lookup is modelled");
    // The interpreter finds a connection (a zeroed entry) or, told so, none.
    let found = RunOptions::default();
    let none = RunOptions {
        ct_found: false,
        ..RunOptions::default()
    };
    let out = run(&p, &[0; 60], &mut MapState::new(&p), &found).unwrap();
    assert_eq!(out.retval, 2);
    let out = run(&p, &[0; 60], &mut MapState::new(&p), &none).unwrap();
    assert_eq!(out.retval, 1);

    // The stateful firewall: a TCP SYN without a connection passes; with a connection whose
    // status is 0 (not assured) and mark 0 it passes too; a TCP ACK with that entry, or
    // without one, is dropped; non-IPv4 passes.
    let p = load("kf_ct_stateful", None, None);
    analyse(&obj("kf_ct_stateful"), None, None).expect("the conntrack lookup is modelled");
    let tcp = |flags: u8| {
        let mut b = vec![0u8; 60];
        b[12] = 0x08;
        b[14] = 0x45;
        b[23] = 6;
        b[47] = flags;
        b
    };
    let act = |pkt: &[u8], o: &RunOptions| run(&p, pkt, &mut MapState::new(&p), o).unwrap().retval;
    assert_eq!(act(&tcp(0x02), &none), 2);
    assert_eq!(act(&tcp(0x02), &found), 2);
    assert_eq!(act(&tcp(0x10), &found), 1);
    assert_eq!(act(&tcp(0x10), &none), 1);
    assert_eq!(act(&[0; 60], &none), 2);

    // Bad tuple_len and opts_len: NULL with -EAFNOSUPPORT, then -EINVAL: XDP_DROP.
    let p = load("kf_ct_badargs", None, None);
    analyse(&obj("kf_ct_badargs"), None, None).expect("the conntrack lookup is modelled");
    for o in [&found, &none] {
        assert_eq!(
            run(&p, &[0; 60], &mut MapState::new(&p), o).unwrap().retval,
            1
        );
    }

    // Releasing the packet (the verifier refuses it): the analysis changes no value, the
    // interpreter faults in one line (other packets pass).
    let p = load("kf_ct_badrelease", None, None);
    analyse(&obj("kf_ct_badrelease"), None, None).expect("a release changes no value");
    let mut pkt = [0u8; 60];
    assert_eq!(
        run(&p, &pkt, &mut MapState::new(&p), &found)
            .unwrap()
            .retval,
        2
    );
    pkt[0] = 0x42;
    let e = run(&p, &pkt, &mut MapState::new(&p), &found).unwrap_err();
    assert!(
        matches!(&e, Fault::Invalid { what, .. } if what == "kfunc bpf_ct_release: r1 is not a conntrack entry the program holds"),
        "{e}"
    );
}

#[test]
fn btf_maps_of_maps_load_with_their_inner_maps_and_are_analysed() {
    let bytes = obj("ld_map_in_map");
    let p = load("ld_map_in_map", None, None);
    // Each map of maps gets one synthetic inner map of its inner definition, at the end.
    assert_eq!(
        maps(&p),
        [
            ("inner_a", "array", 4, 8, 4),
            ("outer", "array_of_maps", 4, 4, 2),
            ("outer_h", "hash_of_maps", 4, 4, 8),
            ("outer.inner", "array", 4, 8, 4),
            ("outer_h.inner", "hash", 4, 4, 16)
        ]
    );
    let i = map(&p, "outer").inner.as_deref().unwrap();
    assert_eq!(
        (i.type_name(), i.key_size, i.value_size, i.max_entries),
        ("array", 4, 8, 4)
    );
    let i = map(&p, "outer_h").inner.as_deref().unwrap();
    assert_eq!(
        (i.type_name(), i.value_size, i.max_entries),
        ("hash", 4, 16)
    );
    assert_eq!(p.inner_map(1), Some(3));
    assert_eq!(p.inner_map(2), Some(4));
    assert_eq!(p.inner_map(0), None);
    analyse(&bytes, None, None).unwrap();
    // An empty slot, a slot past the array: NULL (XDP_PASS); a filled slot gives the inner
    // map, whose entry the program increments.
    let mut maps = MapState::new(&p);
    let out = run(&p, &[0; 60], &mut maps, &RunOptions::default()).unwrap();
    assert_eq!(out.retval, 2);
    maps.set("outer", &0u32.to_le_bytes(), &0u32.to_le_bytes())
        .unwrap();
    let out = run(&p, &[0; 60], &mut maps, &RunOptions::default()).unwrap();
    assert_eq!(out.retval, 1);
    assert_eq!(
        maps.get("outer.inner", &0u32.to_le_bytes()).unwrap(),
        Some(1u64.to_le_bytes().to_vec())
    );
    // Hostile: an outer array sized 0 in the object (its loader sizes it), and a hash of
    // maps, are analysed too.
    analyse(&obj("mim_zero"), None, None).unwrap();
    analyse(&obj("map_in_map_acl"), None, None).unwrap();
}

#[test]
fn global_data_are_array_maps_and_rodata_is_constant() {
    let bytes = obj("ld_globals");
    let p = load("ld_globals", None, None);
    let names: Vec<_> = p.maps.iter().map(|m| (m.name.as_str(), m.frozen)).collect();
    assert_eq!(
        names,
        [
            (".bss", false),
            (".data", false),
            (".rodata", true),
            (".rodata.str1.1", true)
        ]
    );
    assert_eq!(map(&p, ".bss").data, [0; 32]);
    assert_eq!(map(&p, ".data").data, 1u32.to_le_bytes());
    assert_eq!(map(&p, ".rodata").data, [53, 0, 80, 0, 187, 1, 144, 31]);
    assert!(map(&p, ".rodata.str1.1").data.starts_with(b"NICSIM\0"));
    let str_map = p
        .maps
        .iter()
        .position(|m| m.name == ".rodata.str1.1")
        .unwrap() as u32;
    assert!(p.code.iter().flatten().any(
        |i| matches!(i, Insn::LdImm64 { imm: Imm64::MapValue { map, .. }, .. } if *map == str_map)
    ));
    analyse(&bytes, None, None).unwrap();
}

/// `tests/xdp/tail_lb.c`: the prog array's declared `.values` give its slots; the targets are
/// linked after the program (which the kernel loads alone: `raw[..main_len]`).
#[test]
fn declared_prog_array_slots_are_its_targets() {
    use nicsim_xdp::load::{load_full, ProgArray, TailSpec};
    let p = load("tail_lb", None, Some("tail_lb"));
    let m = p.maps.iter().position(|m| m.name == "backends").unwrap() as u32;
    let def = &p.maps[m as usize];
    assert_eq!(
        (
            def.type_name(),
            def.key_size,
            def.value_size,
            def.max_entries
        ),
        ("prog_array", 4, 4, 4)
    );
    let ProgArray::Known(slots) = &p.prog_arrays[&m] else {
        panic!("{:?}", p.prog_arrays)
    };
    let names: Vec<(u32, &str)> = slots
        .iter()
        .map(|(&k, &t)| (k, p.tail_targets[t].name.as_str()))
        .collect();
    assert_eq!(names, [(0, "lb_fast"), (1, "lb_slow")]);
    assert!(p.main_len < p.raw.len());
    for t in &p.tail_targets {
        assert!(t.entry as usize >= p.main_len);
    }
    assert!(p.unbounded_prog_arrays().is_empty());
    // Without --program: the one XDP program that is no declared target.
    assert_eq!(load("tail_lb", None, None).name, "tail_lb");
    // tail_unknown.c declares nothing: unbounded, unless --tail-call says what the array holds.
    let u = load("tail_unknown", None, Some("tail_unknown"));
    assert_eq!(u.unbounded_prog_arrays(), ["jumps"]);
    let spec = |map: &str, index: u32, program: &str| TailSpec {
        map: map.into(),
        index,
        program: program.into(),
    };
    let bytes = obj("tail_unknown");
    assert!(load_err(&bytes, None, None).contains("several XDP programs"));
    let given = load_full(
        &bytes,
        None,
        Some("tail_unknown"),
        &[spec("jumps", 3, "tu_drop")],
    )
    .unwrap();
    assert!(given.unbounded_prog_arrays().is_empty());
    assert_eq!(given.tail_targets.len(), 1);
    // `--tail-call jumps=none` (an empty program): the array holds nothing, and is known.
    let empty = load_full(&bytes, None, Some("tail_unknown"), &[spec("jumps", 0, "")]).unwrap();
    assert!(empty.unbounded_prog_arrays().is_empty() && empty.tail_targets.is_empty());
    let jm = empty.maps.iter().position(|m| m.name == "jumps").unwrap() as u32;
    assert!(matches!(&empty.prog_arrays[&jm], ProgArray::Known(s) if s.is_empty()));
    for (bad, needle) in [
        (
            spec("nosuch", 0, "tu_drop"),
            "no map 'nosuch' (its prog arrays: jumps)",
        ),
        (
            spec("packets", 0, "tu_drop"),
            "map 'packets' is of type array, not prog_array",
        ),
        (
            spec("jumps", 8, "tu_drop"),
            "slot 8 is past the array's 8 entries",
        ),
        (
            spec("jumps", 0, "nope"),
            "no program in section or function 'nope'",
        ),
    ] {
        let e = load_full(&bytes, None, Some("tail_unknown"), &[bad])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--tail-call jumps=")
                || e.starts_with("--tail-call nosuch=")
                || e.starts_with("--tail-call packets="),
            "{e}"
        );
        assert!(e.contains(needle), "{e}");
    }
}

/// `bytes` with the size of the BTF struct named `name` set to `size` (what a BTF map whose key
/// or value is that struct then declares).
fn btf_struct_resized(bytes: &[u8], name: &str, size: u32) -> Vec<u8> {
    let file = object::File::parse(bytes).unwrap();
    let (at, _) = file.section_by_name(".BTF").unwrap().file_range().unwrap();
    let at = at as usize;
    let mut b = bytes.to_vec();
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let hdr_len = u32_at(&b, at + 4) as usize;
    let (type_off, type_len) = (u32_at(&b, at + 8) as usize, u32_at(&b, at + 12) as usize);
    let str_off = u32_at(&b, at + 16) as usize;
    let strings = at + hdr_len + str_off;
    let mut t = at + hdr_len + type_off;
    let end = t + type_len;
    while t < end {
        let (name_off, info) = (u32_at(&b, t) as usize, u32_at(&b, t + 4));
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        let s = &b[strings + name_off..];
        let type_name = std::str::from_utf8(&s[..s.iter().position(|&c| c == 0).unwrap()]).unwrap();
        if kind == 4 && type_name == name {
            b[t + 8..t + 12].copy_from_slice(&size.to_le_bytes());
            return b;
        }
        t += 12
            + match kind {
                1 | 14 | 17 => 4,
                3 => 12,
                4 | 5 | 15 | 19 => 12 * vlen,
                6 | 13 => 8 * vlen,
                _ => 0,
            };
    }
    panic!("no BTF struct {name}");
}

/// `bytes` (ld_text_legacy.o) with field `field` (0 type, 1 key size, 2 value size, 3 max
/// entries) of the first legacy map definition set to `value`.
fn legacy_map_field(bytes: &[u8], field: usize, value: u32) -> Vec<u8> {
    let file = object::File::parse(bytes).unwrap();
    let (at, _) = file.section_by_name("maps").unwrap().file_range().unwrap();
    let mut b = bytes.to_vec();
    let i = at as usize + 4 * field;
    b[i..i + 4].copy_from_slice(&value.to_le_bytes());
    b
}

/// Key and value sizes beyond what the kernel accepts for the map's type (KMALLOC_MAX_SIZE,
/// hashtab's key + value bound) are refused when the object is loaded, with the map and the
/// field, before anything is sized by them: a value_size of 2^31 used to abort in the
/// allocator (48 GiB of query terms) and a key_size of 16 MiB to grow to 3.3 GB.
#[test]
fn map_sizes_past_the_kernels_limits_are_refused_at_load() {
    let legacy = obj("ld_text_legacy");
    let cases = [
        (
            legacy_map_field(&legacy, 2, 1 << 31),
            "map 'hits' (array): value_size 2147483648 is more than the kernel accepts (at most 4194304",
        ),
        (
            legacy_map_field(&legacy, 1, 16 << 20),
            "map 'hits' (array): key_size 16777216 is more than the kernel accepts",
        ),
        (
            btf_struct_resized(&obj("ipip_encap"), "tunnel", 1 << 31),
            "value_size 2147483648 is more than the kernel accepts",
        ),
        (
            btf_struct_resized(&obj("ipip_encap"), "tunnel_key", 16 << 20),
            "key_size 16777216 is more than the kernel accepts",
        ),
        (
            // A hash map's key and value together (hashtab.c: below KMALLOC_MAX_SIZE less an
            // element's header).
            btf_struct_resized(&obj("ipip_encap"), "tunnel", (4 << 20) - 40),
            "key_size + value_size 4194272 is more than the kernel accepts (below 4194256 bytes",
        ),
    ];
    for (bytes, want) in cases {
        let e = load_err(&bytes, None, None);
        assert!(e.contains(want), "{e}");
        let e = analyse(&bytes, None, None).err().unwrap();
        assert!(e.contains(want), "{e}");
    }
}

/// A map the kernel accepts but whose key and value cannot be held as a model's terms within
/// --memory-mb's share is refused before the analysis takes that memory. A value larger than an
/// example gives whole (4 kB) counts the bytes a path may read of it, not its size.
#[test]
fn a_map_value_too_large_for_the_memory_budget_is_refused_before_the_search() {
    let bytes = legacy_map_field(&obj("ld_text_legacy"), 2, 4096);
    let small = Options {
        memory_budget_bytes: Some(256 << 10),
        ..Options::default()
    };
    let e = Analysis::new(&bytes, nfp(), &small)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("map 'hits': its key_size 4 and value_size 4096")
            && e.contains("that --memory-mb leaves"),
        "{e}"
    );
    // Within the budget the same object is analysed, and so is a 4 MB value within 32 MB.
    let large = Options {
        memory_budget_bytes: Some(1 << 30),
        ..Options::default()
    };
    Analysis::new(&bytes, nfp(), &large).unwrap();
    let huge = legacy_map_field(&obj("ld_text_legacy"), 2, 4 << 20);
    let within = Options {
        memory_budget_bytes: Some(32 << 20),
        ..Options::default()
    };
    Analysis::new(&huge, nfp(), &within).unwrap();
}

/// CO-RE relocations (tests/xdp/core_relo.c), resolved against the running kernel's BTF as
/// libbpf resolves them: the context's fields, declared 64-bit, are loaded as the kernel's 4-byte
/// fields at offsets 4 and 0; the missing field's existence check becomes 0 and its load is
/// poisoned (a call of helper 0xbad2310), which the graph drops as code no state reaches; the
/// enum value is the kernel's XDP_TX. The object analyses.
#[test]
fn core_relocations_rewrite_the_code_as_libbpf_does() {
    let p = load("core_relo", None, None);
    assert_eq!(p.core_btf.as_deref(), Some(nicsim_xdp::core_reloc::VMLINUX));
    let first: Vec<(u8, u8, i16)> = p.raw[..2].iter().map(|r| (r.code, r.src, r.off)).collect();
    assert_eq!(first, [(0x61, 1, 4), (0x61, 1, 0)], "{:?}", &p.raw[..2]);
    // `r4 = bpf_core_field_exists(...)`: 0 in the kernel's struct, 1 in the object.
    assert_eq!((p.raw[2].code, p.raw[2].imm), (0xb7, 0));
    assert!(p
        .raw
        .iter()
        .any(|r| r.code == 0x85 && r.imm == nicsim_xdp::core_reloc::POISON_IMM));
    let bytes = obj("core_relo");
    let unrelocated = object::File::parse(&*bytes).unwrap();
    let code = unrelocated
        .section_by_name("xdp")
        .unwrap()
        .data()
        .unwrap()
        .to_vec();
    assert_eq!(
        (code[0], code[2]),
        (0x79, 8),
        "the object's own first load: 8 bytes at 8"
    );
    let a = analyse(&bytes, None, None).unwrap();
    let s = a.summary();
    assert_eq!(
        s.object.btf.as_deref(),
        Some(nicsim_xdp::core_reloc::VMLINUX)
    );
}

#[test]
fn a_broken_elf_header_table_is_named_by_its_offset() {
    // Cut before its section headers (which sit at the end of an object), or with the section
    // names' header made another type: the parser's message, and where in the file.
    let bytes = obj("count_min_5");
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let e = nicsim_xdp::load(&bytes[..shoff + 10], None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("section headers at byte {shoff}"))
            && e.contains(&format!("file of {} bytes", shoff + 10)),
        "{e}"
    );
    let mut names_not_strtab = bytes.clone();
    let names = usize::from(u16::from_le_bytes(bytes[0x3e..0x40].try_into().unwrap()));
    let at = shoff + 64 * names;
    names_not_strtab[at + 4..at + 8].copy_from_slice(&1u32.to_le_bytes());
    let e = nicsim_xdp::load(&names_not_strtab, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!(
            "section {names} (the section names; its header at byte {at}) has type 1"
        )),
        "{e}"
    );
}

#[test]
fn a_relocation_to_no_symbol_is_named_by_its_section_and_offset() {
    // A relocation of the debug information whose symbol index is 0 (no symbol): aya-obj's
    // "unsupported relocation target" named neither where nor what. (The program's own
    // relocations are checked before, naming theirs.)
    let bytes = obj("count_min_5");
    let file = object::File::parse(&*bytes).unwrap();
    let rel = file
        .sections()
        .find(|s| s.name().is_ok_and(|n| n.starts_with(".rel.debug")))
        .expect("a relocation section of the debug information");
    let (start, _) = rel.file_range().unwrap();
    let name = rel.name().unwrap().to_string();
    let mut broken = bytes.clone();
    // Elf64_Rel: r_offset, then r_info (symbol index in its upper 32 bits).
    let info = start as usize + 8;
    broken[info + 4..info + 8].copy_from_slice(&0u32.to_le_bytes());
    let e = nicsim_xdp::load(&broken, None).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "section '{}': the relocation at offset 0x",
            name.trim_start_matches(".rel")
        )) && e.contains("is not to a symbol"),
        "{e}"
    );
}
