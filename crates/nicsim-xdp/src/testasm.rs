//! A small BPF assembler for the unit tests (hand-built programs for [`crate::interp`] and
//! [`crate::symex`]).

use crate::insn::{decode, Raw};
use crate::load::{MapDef, Program};

// A small assembler: one 8-byte slot per call (ld_imm64 gives two).
pub(crate) type Slot = [u8; 8];

pub(crate) fn i(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Slot {
    let o = off.to_le_bytes();
    let m = imm.to_le_bytes();
    [code, dst | (src << 4), o[0], o[1], m[0], m[1], m[2], m[3]]
}
pub(crate) fn mov(dst: u8, imm: i32) -> Slot {
    i(0xb7, dst, 0, 0, imm)
}
pub(crate) fn movr(dst: u8, src: u8) -> Slot {
    i(0xbf, dst, src, 0, 0)
}
pub(crate) fn mov32(dst: u8, imm: i32) -> Slot {
    i(0xb4, dst, 0, 0, imm)
}
pub(crate) fn add(dst: u8, imm: i32) -> Slot {
    i(0x07, dst, 0, 0, imm)
}
pub(crate) fn addr(dst: u8, src: u8) -> Slot {
    i(0x0f, dst, src, 0, 0)
}
pub(crate) fn ldx(size: u8, dst: u8, src: u8, off: i16) -> Slot {
    // size: 0x00 W, 0x08 H, 0x10 B, 0x18 DW
    i(0x61 | size, dst, src, off, 0)
}
pub(crate) fn stx(size: u8, dst: u8, src: u8, off: i16) -> Slot {
    i(0x63 | size, dst, src, off, 0)
}
pub(crate) fn st(size: u8, dst: u8, off: i16, imm: i32) -> Slot {
    i(0x62 | size, dst, 0, off, imm)
}
pub(crate) fn jeq(dst: u8, imm: i32, off: i16) -> Slot {
    i(0x15, dst, 0, off, imm)
}
pub(crate) fn jgt_r(dst: u8, src: u8, off: i16) -> Slot {
    i(0x2d, dst, src, off, 0)
}
pub(crate) fn ja(off: i16) -> Slot {
    i(0x05, 0, 0, off, 0)
}
pub(crate) fn call(helper: i32) -> Slot {
    i(0x85, 0, 0, 0, helper)
}
pub(crate) fn call_local(off: i32) -> Slot {
    i(0x85, 0, 1, 0, off)
}
pub(crate) fn exit() -> Slot {
    i(0x95, 0, 0, 0, 0)
}
pub(crate) fn ld64(dst: u8, v: u64) -> [Slot; 2] {
    [
        i(0x18, dst, 0, 0, v as u32 as i32),
        i(0, 0, 0, 0, (v >> 32) as u32 as i32),
    ]
}
pub(crate) fn ld_map(dst: u8, map: i32) -> [Slot; 2] {
    [i(0x18, dst, 1, 0, map), i(0, 0, 0, 0, 0)]
}
pub(crate) fn ld_map_value(dst: u8, map: i32, off: i32) -> [Slot; 2] {
    [i(0x18, dst, 2, 0, map), i(0, 0, 0, 0, off)]
}
pub(crate) const W: u8 = 0x00;
pub(crate) const H: u8 = 0x08;
pub(crate) const B: u8 = 0x10;
pub(crate) const DW: u8 = 0x18;

pub(crate) fn map(
    name: &str,
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
) -> MapDef {
    MapDef {
        name: name.into(),
        map_type,
        key_size,
        value_size,
        max_entries,
        flags: 0,
        data: Vec::new(),
        frozen: false,
        inner: None,
        special_fields: Vec::new(),
    }
}

pub(crate) fn prog(slots: &[Slot], maps: Vec<MapDef>) -> Program {
    let bytes: Vec<u8> = slots.concat();
    let raw = Raw::slots(&bytes).unwrap();
    let n = maps.len() as i32;
    let code = decode(&raw, &|fd| (0..n).contains(&fd).then_some(fd as u32)).unwrap();
    let raw_len = raw.len();
    // Prog arrays start unknown; a test sets their contents.
    let maps_prog_arrays = maps
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_prog_array())
        .map(|(k, _)| (k as u32, crate::load::ProgArray::Unknown))
        .collect();
    Program {
        section: "xdp".into(),
        name: "t".into(),
        line_of: vec![None; raw.len()],
        raw,
        code,
        maps,
        lines: Vec::new(),
        license: "GPL".into(),
        kfuncs: Vec::new(),
        main_len: raw_len,
        tail_targets: Vec::new(),
        prog_arrays: maps_prog_arrays,
        functions: Vec::new(),
        pins: Vec::new(),
        core_btf: None,
        kernel_version: None,
    }
}

/// Z3 for the tests: `z3` from the project's `.venv` (`make develop`), or $NICSIM_Z3, or `z3` on
/// the PATH.
fn z3_path() -> std::path::PathBuf {
    if let Ok(p) = std::env::var("NICSIM_Z3") {
        return p.into();
    }
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/z3");
    if venv.exists() {
        return venv;
    }
    "z3".into()
}

/// `sat` or `unsat` (Z3's answer) for `smt` (a query, perhaps with more assertions).
pub(crate) fn z3(smt: &str) -> String {
    use std::io::Write as _;
    let mut c = std::process::Command::new(z3_path())
        .arg("-in")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("z3: {e} (run `make develop`, or set NICSIM_Z3)"));
    let mut input = c.stdin.take().unwrap();
    input.write_all(smt.as_bytes()).unwrap();
    input.write_all(b"(check-sat)\n").unwrap();
    drop(input);
    let out = c.wait_with_output().unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(!out.contains("error"), "{out}\n{smt}");
    out.trim().to_string()
}

/// Point every conditional jump of `s` whose offset is `marker` at slot `to` (hand-built
/// programs write a marker where the target is not known yet).
pub(crate) fn patch_jumps(s: &mut [Slot], marker: i16, to: usize) {
    for (j, x) in s.iter_mut().enumerate() {
        let off = i16::from_le_bytes([x[2], x[3]]);
        if x[0] & 7 == 5 && x[0] != 0x85 && off == marker {
            [x[2], x[3]] = ((to as isize - j as isize - 1) as i16).to_le_bytes();
        }
    }
}

/// `LD_IMM64 dst, function` (`BPF_PSEUDO_FUNC`): the function at `pc + 1 + off` (pc: the
/// instruction's first slot).
pub(crate) fn ld_func(dst: u8, off: i32) -> [Slot; 2] {
    [i(0x18, dst, 4, 0, off), i(0, 0, 0, 0, 0)]
}

/// `r0 = bpf_loop(nr, cb, fp - 8, flags) << 16 | the sum the callback left at fp - 8`, where
/// `cb(i, ctx)` adds i to `*ctx` and returns 1 when i == `stop`, else 0.
pub(crate) fn loop_slots(nr: i32, flags: i32, stop: i32) -> Vec<Slot> {
    let [f0, f1] = ld_func(2, 9);
    vec![
        st(DW, 10, -8, 0),    // 0
        mov(1, nr),           // 1
        f0,                   // 2: r2 = cb (12)
        f1,                   // 3
        movr(3, 10),          // 4
        add(3, -8),           // 5
        mov(4, flags),        // 6
        call(181),            // 7
        ldx(DW, 1, 10, -8),   // 8
        i(0x67, 0, 0, 0, 16), // 9: r0 <<= 16
        addr(0, 1),           // 10
        exit(),               // 11
        ldx(DW, 3, 2, 0),     // 12: cb
        addr(3, 1),           // 13
        stx(DW, 2, 3, 0),     // 14
        mov(0, 0),            // 15
        jeq(1, stop, 1),      // 16
        exit(),               // 17
        mov(0, 1),            // 18
        exit(),               // 19
    ]
}

/// The path an interpreter trace takes, as (instruction, how it leaves) for
/// [`crate::symex::query`].
pub(crate) fn steps_of(p: &Program, trace: &[u32]) -> Vec<(u32, crate::cfg::EdgeKind)> {
    use crate::cfg::EdgeKind;
    use crate::insn::Insn;
    let mut out = Vec::new();
    for (k, &pc) in trace.iter().enumerate() {
        let next = trace.get(k + 1).copied();
        let kind = match p.code[pc as usize].expect("an instruction") {
            Insn::Jmp { off, .. } => {
                if next == Some((pc as i64 + 1 + off as i64) as u32) && off != 0 {
                    EdgeKind::Taken
                } else {
                    EdgeKind::NotTaken
                }
            }
            Insn::Call { helper: 181 } if next != Some(pc + 1) => EdgeKind::Call,
            Insn::CallLocal { .. } => EdgeKind::Call,
            Insn::Exit if next.is_some() => EdgeKind::Return,
            _ => EdgeKind::Next,
        };
        out.push((pc, kind));
    }
    out
}

/// A hand-built program analysed on the built-in `nfp` target with the default limits and no
/// memory budget (the unit tests' analysis).
pub(crate) fn nfp_analysis(p: Program) -> crate::analysis::Analysis {
    let target = crate::target::Target::builtin("nfp").unwrap().unwrap();
    let graph = crate::cfg::build(&p, crate::cfg::Limits::default()).unwrap();
    let dag = crate::cost::costed(&p, &graph, &target).unwrap();
    crate::analysis::Analysis {
        program: p,
        graph,
        search_dag: dag.clone(),
        dag,
        target,
        memory_budget_bytes: usize::MAX,
    }
}
