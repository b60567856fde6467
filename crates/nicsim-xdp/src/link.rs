//! Linking programs of other objects into the analysed program, so that a chain is analysed as
//! it is deployed (docs/xdp.md, "Tail calls" and "libxdp's dispatcher"):
//!
//! - `--tail-call MAP=INDEX:OBJ.o[:PROGRAM]`: a prog array's slot holds a program of another
//!   object. It is loaded on its own (its callees, relocations, BTF, global data) and appended
//!   to the program's code as a tail-call target, with **its own maps**: a map of another object
//!   is a map of its own (named `OBJ.o:MAP`), unless both objects pin it by name
//!   (`LIBBPF_PIN_BY_NAME`), which is the one way libbpf makes two objects share a map without
//!   the loader's code saying so (`bpf_map__reuse_fd`); then it is one map, and its definitions
//!   must agree as libbpf requires of a pinned map it reuses. Two programs of one object share
//!   that object's maps.
//! - `--dispatch OBJ.o[:PROGRAM],...`: libxdp's multi-program dispatcher (xdp-tools'
//!   `xdp-dispatcher.c`): each component program replaces one of the dispatcher's stub
//!   functions `prog0`, `prog1`, … as libxdp's `freplace` (`BPF_PROG_TYPE_EXT`) attachment does
//!   — it runs in place of the stub, with the stub's argument (the context), its return value
//!   going back to the dispatcher — and the dispatcher's `.rodata` configuration (`struct
//!   xdp_dispatcher_config conf`) is set as `xdp_multiprog__link_prog` sets it: the components
//!   in libxdp's order (run priority, then name), `num_progs_enabled`, and each component's
//!   `chain_call_actions` (from its `XDP_RUN_CONFIG`, by default `XDP_PASS` only) and
//!   `run_prios`. The component's code is spliced in where the stub's was, so the kernel can run
//!   the composition as one program (`nicsim xdp validate`).
//!
//! Entries travel as [`TailSpec`]s: a `--tail-call` target that names an object is
//! `OBJ.o[:PROGRAM]` in [`TailSpec::program`]; a `--dispatch` component is a [`TailSpec`] whose
//! map is [`DISPATCH`] and whose index is its place in the option. A prog array of a linked
//! object is named as its maps are, `OBJ.o:MAP` (OBJ.o the file's name), in further
//! `--tail-call` entries. Objects are linked with a work list, never recursively.

use std::collections::{BTreeMap, HashMap};

use crate::insn::PSEUDO_MAP_VALUE;
use crate::insn::{decode, Raw, PSEUDO_CALL, PSEUDO_FUNC, PSEUDO_KFUNC_CALL, PSEUDO_MAP_FD};
use crate::load::{self, LoadError, MapDef, ProgArray, Program, TailSpec, TailTarget};

/// The map name that marks a `--dispatch` component among the [`TailSpec`]s.
pub const DISPATCH: &str = ":dispatch";
/// `--dispatch-prio N` (xdp-loader's `--prio`): every component's run priority; the entry's
/// index is N.
pub const DISPATCH_PRIO: &str = ":dispatch-prio";
/// `--dispatch-actions A,B` (xdp-loader's `--actions`): every component's chain-call actions;
/// the entry's index is their bit mask (`1 << XDP_PASS`, …).
pub const DISPATCH_ACTIONS: &str = ":dispatch-actions";

/// An entry of a prog array (not a `--dispatch` one, whose names start with ':', which no C
/// identifier does).
fn is_slot(t: &TailSpec) -> bool {
    !t.map.starts_with(':')
}

/// libxdp's defaults for a component without `XDP_RUN_CONFIG` (xdp-tools
/// `headers/xdp/xdp_helpers.h`): run priority 50, chain on `XDP_PASS` only.
pub const XDP_DEFAULT_RUN_PRIO: u32 = 50;
/// `XDP_DEFAULT_CHAIN_CALL_ACTIONS`: `1 << XDP_PASS`.
pub const XDP_DEFAULT_CHAIN_CALL_ACTIONS: u32 = 1 << 2;
/// `XDP_DISPATCHER_RETVAL` (`headers/xdp/prog_dispatcher.h`): what an empty stub returns;
/// libxdp sets its bit in every component's `chain_call_actions`.
pub const XDP_DISPATCHER_RETVAL: u32 = 31;
/// `XDP_DISPATCHER_MAGIC`.
pub const XDP_DISPATCHER_MAGIC: u8 = 236;
/// `BPF_F_XDP_HAS_FRAGS`, as libxdp sets it in `program_flags`.
const BPF_F_XDP_HAS_FRAGS: u32 = 1 << 5;

/// `OBJ.o` or `OBJ.o:PROGRAM`: (the object's path, the program) when `target` names another
/// object (a path ending in `.o`), else `None` (a program of the same object).
pub fn split_object(target: &str) -> Option<(&str, Option<&str>)> {
    if let Some(i) = target.find(".o:") {
        let prog = &target[i + 3..];
        return Some((&target[..i + 2], (!prog.is_empty()).then_some(prog)));
    }
    target.ends_with(".o").then_some((target, None))
}

/// The name an object's maps and prog arrays are qualified with: its file's name.
fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn spec_text(t: &TailSpec) -> String {
    if t.map == DISPATCH {
        format!("--dispatch {}", t.program)
    } else if t.map == DISPATCH_PRIO {
        format!("--dispatch-prio {}", t.index)
    } else if t.map == DISPATCH_ACTIONS {
        format!("--dispatch-actions {:#x}", t.index)
    } else if t.program.is_empty() {
        format!("--tail-call {}=none", t.map)
    } else {
        format!("--tail-call {}={}:{}", t.map, t.index, t.program)
    }
}

/// One line about entry `t`, as the CLI shows it.
fn bad(t: &TailSpec, why: impl std::fmt::Display) -> LoadError {
    let spec = spec_text(t);
    LoadError::Link(format!("{spec}: {why}"))
}

/// The objects the entries name (path by file name); two paths with one file name are an error.
fn objects(tail: &[TailSpec]) -> Result<BTreeMap<String, String>, LoadError> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for t in tail {
        if let Some((path, _)) = split_object(&t.program) {
            let b = base_name(path).to_string();
            match out.get(&b) {
                Some(p) if p != path => {
                    return Err(bad(
                        t,
                        format!("another object named '{b}' is linked too ({p}): rename one"),
                    ))
                }
                _ => {
                    out.insert(b, path.to_string());
                }
            }
        }
    }
    Ok(out)
}

/// Which object's prog array entry `t` fills (`None`: the analysed program's object) and the
/// map's name there.
fn owner<'t>(t: &'t TailSpec, objs: &BTreeMap<String, String>) -> (Option<&'t str>, &'t str) {
    for b in objs.keys() {
        if let Some(local) = t
            .map
            .strip_prefix(b.as_str())
            .and_then(|r| r.strip_prefix(':'))
        {
            return (Some(&t.map[..b.len()]), local);
        }
    }
    (None, &t.map)
}

/// The entries for object `base`'s own prog arrays (`None`: the analysed program's object), as
/// [`load::load_object`] takes them: its own programs, and for an array with slots of other
/// objects an empty entry, so that the array is known (those slots are added once linked).
fn own_specs(
    tail: &[TailSpec],
    base: Option<&str>,
    objs: &BTreeMap<String, String>,
) -> Vec<TailSpec> {
    let mut out = Vec::new();
    for t in tail.iter().filter(|t| is_slot(t)) {
        let (o, local) = owner(t, objs);
        if o != base {
            continue;
        }
        let cross = split_object(&t.program).is_some();
        out.push(TailSpec {
            map: local.to_string(),
            index: if cross { 0 } else { t.index },
            program: if cross {
                String::new()
            } else {
                t.program.clone()
            },
        });
    }
    out
}

/// A linked object's load error, with the way to choose its program as these options take it.
fn object_error(path: &str, e: LoadError) -> String {
    match e {
        LoadError::Ambiguous { what, list } => {
            format!("{path}: {what}: {list}; choose one as {path}:PROGRAM")
        }
        e => format!("{path}: {e}"),
    }
}

/// The largest object file linked in: the analysed object's own limit
/// (`nicsim.xdp.analyze.MAX_OBJECT_BYTES`).
const MAX_OBJECT_BYTES: u64 = 256 << 20;

/// A linked object's bytes: a regular file of at most [`MAX_OBJECT_BYTES`], read no further (a
/// FIFO, a device or a huge file is one error, not a hang or an allocation).
fn read(t: &TailSpec, path: &str) -> Result<Vec<u8>, LoadError> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| bad(t, format!("cannot read {path}: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| bad(t, format!("cannot read {path}: {e}")))?;
    if !meta.is_file() {
        return Err(bad(t, format!("{path} is not a regular file")));
    }
    if meta.len() > MAX_OBJECT_BYTES {
        return Err(bad(
            t,
            format!(
                "{path} is {} bytes, more than an object may be ({MAX_OBJECT_BYTES})",
                meta.len()
            ),
        ));
    }
    let mut bytes = Vec::new();
    f.take(MAX_OBJECT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(t, format!("cannot read {path}: {e}")))?;
    if bytes.len() as u64 > MAX_OBJECT_BYTES {
        return Err(bad(
            t,
            format!("{path} grew past {MAX_OBJECT_BYTES} bytes while read"),
        ));
    }
    Ok(bytes)
}

/// Load the program chosen by `section`/`program` from `bytes` with everything `tail` links
/// into it: its own prog arrays' entries, programs of other objects in prog array slots, and
/// `--dispatch` components (see the module's comment).
pub fn load_chain(
    bytes: &[u8],
    section: Option<&str>,
    program: Option<&str>,
    tail: &[TailSpec],
) -> Result<Program, LoadError> {
    let objs = objects(tail)?;
    let dispatch: Vec<&TailSpec> = tail.iter().filter(|t| t.map == DISPATCH).collect();
    if let Some(t) = tail.iter().find(|t| !is_slot(t) && t.map != DISPATCH) {
        if dispatch.is_empty() {
            return Err(bad(
                t,
                "without --dispatch (it sets the components' run config)",
            ));
        }
    }
    let own = own_specs(tail, None, &objs);
    let mut p = match load::load_object(bytes, section, program, &own) {
        // libxdp's dispatcher object holds `xdp_pass` too; libxdp loads `xdp_dispatcher`.
        Err(LoadError::Ambiguous { .. })
            if !dispatch.is_empty() && section.is_none() && program.is_none() =>
        {
            load::load_object(bytes, None, Some("xdp_dispatcher"), &own)
        }
        r => r,
    }?;
    if !dispatch.is_empty() {
        dispatch_into(&mut p, bytes, &dispatch, tail, &objs)?;
    }
    // Programs of other objects in slots, in the order given; an object's arrays named in
    // later entries are filled once it is linked (a work list: an entry waits for its array).
    let mut linked: HashMap<(String, Option<String>), usize> = HashMap::new();
    let mut pending: Vec<&TailSpec> = tail
        .iter()
        .filter(|t| is_slot(t) && split_object(&t.program).is_some())
        .collect();
    loop {
        let before = pending.len();
        let mut rest = Vec::new();
        for t in pending {
            let Some(m) = p.maps.iter().position(|d| d.name == t.map) else {
                rest.push(t);
                continue;
            };
            let def = &p.maps[m];
            if !def.is_prog_array() {
                return Err(bad(
                    t,
                    format!(
                        "map '{}' is of type {}, not prog_array",
                        t.map,
                        def.type_name()
                    ),
                ));
            }
            if def.max_entries != 0 && t.index >= def.max_entries {
                return Err(bad(
                    t,
                    format!(
                        "slot {} is past the array's {} entries",
                        t.index, def.max_entries
                    ),
                ));
            }
            let (path, prog) = split_object(&t.program).expect("filtered");
            let key = (path.to_string(), prog.map(str::to_string));
            let target = match linked.get(&key) {
                Some(&k) => k,
                None => {
                    let base = base_name(path);
                    let o = load::load_object(
                        &read(t, path)?,
                        None,
                        prog,
                        &own_specs(tail, Some(base), &objs),
                    )
                    .map_err(|e| bad(t, object_error(path, e)))?;
                    let k = append(&mut p, o, path).map_err(|e| bad(t, e))?;
                    linked.insert(key, k);
                    k
                }
            };
            match p.prog_arrays.entry(m as u32).or_insert(ProgArray::Unknown) {
                a @ ProgArray::Unknown => {
                    *a = ProgArray::Known(BTreeMap::from([(t.index, target)]));
                }
                ProgArray::Known(slots) => {
                    slots.insert(t.index, target);
                }
            }
        }
        if rest.is_empty() {
            break;
        }
        if rest.len() == before {
            let t = rest[0];
            let (o, _) = owner(t, &objs);
            return Err(bad(
                t,
                match o {
                    Some(b) => format!(
                        "no prog array '{}': no other --tail-call puts a program of {b} in a slot, \
                         or {b} has no such prog array",
                        t.map
                    ),
                    None => format!("the object has no map '{}'", t.map),
                },
            ));
        }
        pending = rest;
    }
    redecode(&mut p)?;
    Ok(p)
}

fn redecode(p: &mut Program) -> Result<(), LoadError> {
    let n = p.maps.len() as i32;
    p.code = decode(&p.raw, &|fd| (0..n).contains(&fd).then_some(fd as u32)).map_err(|err| {
        LoadError::Decode {
            err,
            at: "linked code".into(),
        }
    })?;
    Ok(())
}

/// Give `p` the maps of `o` (an object at `path`): the index in `p.maps` of each of `o`'s maps,
/// and `o`'s code with its map and kfunc references renumbered for `p`.
fn merge_maps(p: &mut Program, o: &Program, path: &str) -> Result<(Vec<u32>, Vec<Raw>), String> {
    let base = base_name(path);
    let same = |a: &MapDef, b: &MapDef| {
        (a.map_type, a.key_size, a.value_size, a.max_entries, a.flags)
            == (b.map_type, b.key_size, b.value_size, b.max_entries, b.flags)
    };
    let mut map_of = Vec::with_capacity(o.maps.len());
    for (j, d) in o.maps.iter().enumerate() {
        let pin = o
            .pins
            .iter()
            .find(|(_, k)| *k as usize == j)
            .map(|(n, _)| n.clone());
        if let Some(pin) = &pin {
            if let Some(&(_, m)) = p.pins.iter().find(|(n, _)| n == pin) {
                let have = &p.maps[m as usize];
                if !same(have, d) {
                    return Err(format!(
                        "map '{pin}' is pinned by name in both objects with other definitions \
                         ({} {}/{}/{} against {} {}/{}/{}: type, key, value, entries), which \
                         libbpf refuses to reuse",
                        have.type_name(),
                        have.key_size,
                        have.value_size,
                        have.max_entries,
                        d.type_name(),
                        d.key_size,
                        d.value_size,
                        d.max_entries
                    ));
                }
                map_of.push(m);
                continue;
            }
        }
        let name = format!("{base}:{}", d.name);
        // The object linked before (another of its programs): the same maps.
        if let Some(m) = p.maps.iter().position(|x| x.name == name) {
            map_of.push(m as u32);
            continue;
        }
        let mut d = d.clone();
        d.name = name;
        if let Some(i) = d.inner.as_mut() {
            i.name = format!("{base}:{}", i.name);
        }
        p.maps.push(d);
        let m = p.maps.len() as u32 - 1;
        if let Some(pin) = pin {
            p.pins.push((pin, m));
        }
        map_of.push(m);
    }
    let mut kf_of = Vec::with_capacity(o.kfuncs.len());
    for k in &o.kfuncs {
        let at = match p.kfuncs.iter().position(|x| x == k) {
            Some(at) => at,
            None => {
                p.kfuncs.push(k.clone());
                p.kfuncs.len() - 1
            }
        };
        kf_of.push(at as i32);
    }
    let mut raw = o.raw.clone();
    let mut pc = 0;
    while pc < raw.len() {
        let r = &mut raw[pc];
        if r.code == 0x18 {
            if r.src == PSEUDO_MAP_FD || r.src == PSEUDO_MAP_VALUE {
                r.imm = *map_of
                    .get(r.imm as usize)
                    .ok_or_else(|| format!("instruction {pc} refers to map {}", r.imm))?
                    as i32;
            }
            pc += 2;
            continue;
        }
        if r.code == 0x85 && r.src == PSEUDO_KFUNC_CALL {
            r.imm = *kf_of
                .get(r.imm as usize)
                .ok_or_else(|| format!("instruction {pc} calls kfunc {}", r.imm))?;
        }
        pc += 1;
    }
    Ok((map_of, raw))
}

/// Append program `o` (of the object at `path`), with its own tail-call targets, to `p`'s code
/// as a tail-call target: its index in `p.tail_targets`.
fn append(p: &mut Program, o: Program, path: &str) -> Result<usize, String> {
    let (map_of, raw) = merge_maps(p, &o, path)?;
    // Every object's CO-RE relocations take the one BTF (`crate::core_reloc`).
    if p.core_btf.is_none() {
        p.core_btf.clone_from(&o.core_btf);
    }
    let at = p.raw.len() as u32;
    let lines_off = p.lines.len() as u32;
    p.raw.extend(raw);
    p.line_of
        .extend(o.line_of.iter().map(|l| l.map(|l| l + lines_off)));
    p.lines.extend(o.lines.iter().cloned());
    p.functions.extend(
        o.functions
            .iter()
            .map(|(n, s)| (format!("{}:{n}", base_name(path)), s + at)),
    );
    let t_off = p.tail_targets.len() + 1;
    p.tail_targets.push(TailTarget {
        section: o.section.clone(),
        name: o.name.clone(),
        entry: at,
        object: path.to_string(),
        maps: map_of.clone(),
    });
    for t in &o.tail_targets {
        p.tail_targets.push(TailTarget {
            entry: t.entry + at,
            object: path.to_string(),
            maps: map_of.clone(),
            ..t.clone()
        });
    }
    for (m, a) in &o.prog_arrays {
        let a = match a {
            ProgArray::Known(slots) => {
                ProgArray::Known(slots.iter().map(|(&k, &t)| (k, t + t_off)).collect())
            }
            ProgArray::Unknown => ProgArray::Unknown,
        };
        // A pinned array (or the object linked before) keeps what it was given first.
        p.prog_arrays.entry(map_of[*m as usize]).or_insert(a);
    }
    Ok(t_off - 1)
}

/// The slot a jump, call or function address at `pc` of `raw` points to, and a setter.
fn rel_target(raw: &[Raw], pc: usize) -> Option<i64> {
    let r = raw[pc];
    let class = r.code & 7;
    if r.code == 0x18 {
        return (r.src == PSEUDO_FUNC).then_some(pc as i64 + 1 + r.imm as i64);
    }
    if class != 5 && class != 6 {
        return None;
    }
    match r.code & 0xf0 {
        0x80 => (r.src == PSEUDO_CALL).then_some(pc as i64 + 1 + r.imm as i64),
        0x90 => None,
        _ if r.code == 0x06 => Some(pc as i64 + 1 + r.imm as i64),
        _ => Some(pc as i64 + 1 + r.off as i64),
    }
}

fn set_rel(r: &mut Raw, rel: i64) -> Option<()> {
    if r.code == 0x18 || (r.code & 0xf0 == 0x80) || r.code == 0x06 {
        r.imm = i32::try_from(rel).ok()?;
    } else {
        r.off = i16::try_from(rel).ok()?;
    }
    Some(())
}

/// Put program `o` (of the object at `path`) in place of the function at `stub` (up to `end`)
/// of `p`: the code after it moves, and every reference to the stub now reaches `o`.
fn splice(p: &mut Program, stub: u32, end: u32, o: Program, path: &str) -> Result<(), String> {
    let (_, code) = merge_maps(p, &o, path)?;
    // The attachment's jump: the kernel patches the stub's entry with a jump to the extension
    // program (`bpf_arch_text_poke`), so a call of the stub costs a jump more than a call of the
    // program itself; `ja +0` stands for it, then the program's code.
    let ja = Raw {
        code: 0x05,
        dst: 0,
        src: 0,
        off: 0,
        imm: 0,
    };
    let ins: Vec<Raw> = std::iter::once(ja).chain(code).collect();
    let (s, e, n) = (stub as usize, end as usize, ins.len());
    // The stub's first slot is where the program now starts.
    let new_pos = |old: usize| if old <= s { old } else { old - (e - s) + n };
    let mut raw = Vec::with_capacity(p.raw.len() - (e - s) + n);
    for pc in (0..s).chain(e..p.raw.len()) {
        let mut r = p.raw[pc];
        if let Some(t) = rel_target(&p.raw, pc) {
            let t = usize::try_from(t)
                .map_err(|_| format!("instruction {pc} points before the code"))?;
            if t > s && t < e {
                return Err(format!(
                    "instruction {pc} points inside the replaced function"
                ));
            }
            let rel = new_pos(t) as i64 - new_pos(pc) as i64 - 1;
            set_rel(&mut r, rel).ok_or_else(|| format!("instruction {pc}: offset out of range"))?;
        }
        raw.push(r);
        if pc + 1 == s {
            raw.extend(ins.iter().copied());
        }
    }
    if s == 0 {
        raw.splice(0..0, ins.iter().copied());
    }
    let lines_off = p.lines.len() as u32;
    let mut line_of: Vec<Option<u32>> = p.line_of[..s].to_vec();
    line_of.push(p.line_of.get(s).copied().flatten());
    line_of.extend(o.line_of.iter().map(|l| l.map(|l| l + lines_off)));
    line_of.extend_from_slice(&p.line_of[e..]);
    p.lines.extend(o.lines.iter().cloned());
    p.raw = raw;
    p.line_of = line_of;
    p.main_len = new_pos(p.main_len);
    for t in &mut p.tail_targets {
        t.entry = new_pos(t.entry as usize) as u32;
    }
    let base = base_name(path);
    p.functions.retain(|f| f.1 != stub);
    for f in &mut p.functions {
        f.1 = new_pos(f.1 as usize) as u32;
    }
    p.functions.extend(
        o.functions
            .iter()
            .map(|(nm, x)| (format!("{base}:{nm}"), x + stub + 1)),
    );
    p.functions.sort_by_key(|f| f.1);
    Ok(())
}

/// A component's run priority and chain-call actions: its `XDP_RUN_CONFIG(name)` (BTF variable
/// `_name` of section `.xdp_run_config`, members `priority` and `XDP_*` = 0 or 1) as libxdp reads
/// it, over libxdp's defaults.
fn run_config(bytes: &[u8], name: &str) -> (u32, u32) {
    let (mut prio, mut actions) = (XDP_DEFAULT_RUN_PRIO, XDP_DEFAULT_CHAIN_CALL_ACTIONS);
    let Some(btf) = load::btf_section(bytes) else {
        return (prio, actions);
    };
    let want = format!("_{name}");
    for v in load::btf_datasec_structs(&btf, ".xdp_run_config") {
        if v.name != want {
            continue;
        }
        for m in &v.members {
            let Some(val) = m.uint else { continue };
            let act = [
                "XDP_ABORTED",
                "XDP_DROP",
                "XDP_PASS",
                "XDP_TX",
                "XDP_REDIRECT",
            ]
            .iter()
            .position(|a| *a == m.name);
            match (m.name.as_str(), act) {
                ("priority", _) => prio = val,
                (_, Some(a)) if val != 0 => actions |= 1 << a,
                (_, Some(a)) => actions &= !(1 << a),
                _ => {}
            }
        }
    }
    (prio, actions)
}

/// `--dispatch`: replace the dispatcher `p`'s stubs with the components and set its config.
fn dispatch_into(
    p: &mut Program,
    bytes: &[u8],
    comps: &[&TailSpec],
    tail: &[TailSpec],
    objs: &BTreeMap<String, String>,
) -> Result<(), LoadError> {
    let first = comps[0];
    // The config: `.rodata` variable `conf` of type `struct xdp_dispatcher_config` (libxdp's),
    // or `struct xdp_dispatcher_conf` (bpfman's copy of it: the same members and layout).
    let btf = load::btf_section(bytes).unwrap_or_default();
    let conf = load::btf_datasec_structs(&btf, ".rodata")
        .into_iter()
        .find(|v| {
            matches!(
                v.type_name.as_str(),
                "xdp_dispatcher_config" | "xdp_dispatcher_conf"
            )
        })
        .ok_or_else(|| {
            bad(
                first,
                format!(
                    "program {} is not a libxdp dispatcher (its object has no `.rodata` \
                     variable of type struct xdp_dispatcher_config, nor bpfman's \
                     xdp_dispatcher_conf)",
                    p.name
                ),
            )
        })?;
    let version = load::btf_datasec_structs(&btf, "xdp_metadata")
        .iter()
        .find_map(|v| {
            v.members
                .iter()
                .find(|m| m.name == "dispatcher_version")
                .and_then(|m| m.uint)
        });
    let stubs = (0..)
        .take_while(|i| p.functions.iter().any(|f| f.0 == format!("prog{i}")))
        .count();
    let member = |name: &str| conf.members.iter().find(|m| m.name == name);
    let slots_of = |name: &str| member(name).and_then(|m| m.size).map_or(0, |s| s / 4) as usize;
    let max = stubs.min(slots_of("chain_call_actions"));
    if comps.len() > max {
        return Err(bad(
            comps[max],
            format!(
                "the dispatcher runs at most {max} programs (its stubs prog0..prog{})",
                max.saturating_sub(1)
            ),
        ));
    }
    // Load every component, then order them as libxdp does (run priority, then name).
    let mut loaded = Vec::new();
    for (k, t) in comps.iter().enumerate() {
        let Some((path, prog)) = split_object(&t.program) else {
            return Err(bad(
                t,
                "expected OBJ.o or OBJ.o:PROGRAM (an object file's path ending in .o)",
            ));
        };
        let data = read(t, path)?;
        let o = load::load_object(
            &data,
            None,
            prog,
            &own_specs(tail, Some(base_name(path)), objs),
        )
        .map_err(|e| bad(t, object_error(path, e)))?;
        if o.has_tail_call() {
            return Err(bad(
                t,
                format!(
                    "{path}: program {} makes tail calls, which a component of the dispatcher \
                     cannot be analysed with yet",
                    o.name
                ),
            ));
        }
        let (mut prio, mut actions) = run_config(&data, &o.name);
        // xdp-loader's --prio and --actions set every program it loads (when given).
        for x in tail {
            match x.map.as_str() {
                DISPATCH_PRIO => prio = x.index,
                DISPATCH_ACTIONS => actions = x.index,
                _ => {}
            }
        }
        let frags = o.section == "xdp.frags" || o.section.starts_with("xdp.frags/");
        loaded.push((prio, o.name.clone(), k, path.to_string(), o, actions, frags));
    }
    loaded.sort_by(|a, b| (a.0, &a.1, a.2).cmp(&(b.0, &b.1, b.2)));
    // The config, as xdp_multiprog__link_prog fills it.
    let ro = p
        .maps
        .iter()
        .position(|m| m.name == ".rodata")
        .ok_or_else(|| bad(first, "the dispatcher's object has no `.rodata` map"))?;
    let mut put = |name: &str, i: usize, width: usize, v: u32| {
        if let Some(m) = member(name) {
            let at = (conf.off + m.off) as usize + i * width;
            let data = &mut p.maps[ro].data;
            if data.len() >= at + width {
                data[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
            }
        }
    };
    let all_frags = loaded.iter().all(|l| l.6);
    put("magic", 0, 1, XDP_DISPATCHER_MAGIC as u32);
    if let Some(v) = version {
        put("dispatcher_version", 0, 1, v);
    }
    put("num_progs_enabled", 0, 1, loaded.len() as u32);
    put("is_xdp_frags", 0, 1, all_frags as u32);
    for (i, l) in loaded.iter().enumerate() {
        put("chain_call_actions", i, 4, l.5 | 1 << XDP_DISPATCHER_RETVAL);
        put("run_prios", i, 4, l.0);
        put(
            "program_flags",
            i,
            4,
            if l.6 { BPF_F_XDP_HAS_FRAGS } else { 0 },
        );
    }
    // Each component in place of its stub.
    for (i, l) in loaded.into_iter().enumerate() {
        let t = comps[l.2];
        let name = format!("prog{i}");
        let stub = p
            .functions
            .iter()
            .find(|f| f.0 == name)
            .map(|f| f.1)
            .expect("counted");
        let end = p
            .functions
            .iter()
            .map(|f| f.1)
            .filter(|&x| x > stub)
            .min()
            .unwrap_or(p.main_len as u32)
            .min(p.main_len as u32);
        splice(p, stub, end, l.4, &l.3).map_err(|e| bad(t, e))?;
    }
    Ok(())
}

/// The programs the kernel loads beside `program` for its tail calls (`program.tail_targets`,
/// in order), each loaded on its own from its object as the kernel loads each program, its map
/// references renumbered to `program.maps` (which it is given), so that
/// [`Kernel::load_with_tails`](crate::kernel::Kernel::load_with_tails) puts them in the slots.
/// `bytes` is the program's object and `tail` the entries it was loaded with.
pub fn kernel_targets(
    bytes: &[u8],
    program: &Program,
    tail: &[TailSpec],
) -> Result<Vec<Program>, LoadError> {
    load::guarded(|| kernel_targets_inner(bytes, program, tail))
}

fn kernel_targets_inner(
    bytes: &[u8],
    program: &Program,
    tail: &[TailSpec],
) -> Result<Vec<Program>, LoadError> {
    let objs = objects(tail)?;
    let mut out = Vec::with_capacity(program.tail_targets.len());
    for t in &program.tail_targets {
        let what = |e: LoadError| LoadError::Link(format!("tail-call target {}: {e}", t.name));
        let (data, base) = if t.object.is_empty() {
            (None, None)
        } else {
            let d = std::fs::read(&t.object)
                .map_err(|e| LoadError::Link(format!("cannot read {}: {e}", t.object)))?;
            (Some(d), Some(base_name(&t.object)))
        };
        let mut tp = load::load_object(
            data.as_deref().unwrap_or(bytes),
            Some(&t.section),
            Some(&t.name),
            &own_specs(tail, base, &objs),
        )
        .map_err(what)?;
        if !t.maps.is_empty() {
            let mut pc = 0;
            while pc < tp.raw.len() {
                let r = &mut tp.raw[pc];
                if r.code == 0x18 {
                    if r.src == PSEUDO_MAP_FD || r.src == PSEUDO_MAP_VALUE {
                        r.imm = t.maps.get(r.imm as usize).copied().unwrap_or(u32::MAX) as i32;
                    }
                    pc += 1;
                }
                pc += 1;
            }
        }
        tp.maps = program.maps.clone();
        out.push(tp);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_paths_ending_in_dot_o() {
        assert_eq!(split_object("a/b.o"), Some(("a/b.o", None)));
        assert_eq!(split_object("b.o:prog"), Some(("b.o", Some("prog"))));
        assert_eq!(
            split_object("/x/b.bpf.o:xdp/sec"),
            Some(("/x/b.bpf.o", Some("xdp/sec")))
        );
        assert_eq!(split_object("b.o:"), Some(("b.o", None)));
        for same in ["prog", "xdp.frags", "xdp/foo", "tu_drop"] {
            assert_eq!(split_object(same), None, "{same}");
        }
    }

    #[test]
    fn relative_targets_are_read_and_set_as_the_kernel_encodes_them() {
        let r = |code: u8, src: u8, off: i16, imm: i32| Raw {
            code,
            dst: 0,
            src,
            off,
            imm,
        };
        let raw = [
            r(0x85, PSEUDO_CALL, 0, 3), // call pc 4
            r(0x85, 0, 0, 1),           // helper call: none
            r(0x05, 0, -3, 0),          // ja pc 0
            r(0x06, 0, 0, -4),          // gotol pc 0
            r(0x18, PSEUDO_FUNC, 0, 1), // the address of pc 6
            r(0, 0, 0, 0),
            r(0x95, 0, 0, 0), // exit: none
            r(0x15, 1, 5, 0), // jeq: pc 13
        ];
        let got: Vec<Option<i64>> = (0..raw.len()).map(|pc| rel_target(&raw, pc)).collect();
        assert_eq!(
            got,
            [
                Some(4),
                None,
                Some(0),
                Some(0),
                Some(6),
                None,
                None,
                Some(13)
            ]
        );
        let mut j = raw[7];
        set_rel(&mut j, -3).unwrap();
        assert_eq!((j.off, j.imm), (-3, 0));
        let mut c = raw[0];
        set_rel(&mut c, 9).unwrap();
        assert_eq!((c.off, c.imm), (0, 9));
        assert!(set_rel(&mut j, 1 << 20).is_none());
    }
}
