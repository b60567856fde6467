//! Loading a BPF ELF object: the one XDP program to analyse, its maps, and its source lines.
//!
//! Parsing, map definitions (legacy `maps` and BTF `.maps`, plus global data sections), map
//! relocations of `LD_IMM64` and the linking of bpf-to-bpf calls into one instruction array are
//! done by `aya-obj`, the loader library of the Aya project. Here we check that the file is a
//! BPF object at all, pick the program, give every map a stable index (maps sorted by name; the
//! index stands where the kernel would put a map fd), decode the instructions, and attach the
//! BTF line information (`.BTF.ext`) to each instruction.

use std::collections::{BTreeMap, HashSet};

use aya_obj::{Object, ProgramSection};
use object::{Object as _, ObjectSection as _};

use crate::insn::{decode, Code, Raw};

/// Kernel map types the analyzer models (`enum bpf_map_type`).
pub const MAP_HASH: u32 = 1;
pub const MAP_ARRAY: u32 = 2;
pub const MAP_PERCPU_HASH: u32 = 5;
pub const MAP_PERCPU_ARRAY: u32 = 6;
pub const MAP_LRU_HASH: u32 = 9;
pub const MAP_DEVMAP: u32 = 14;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapDef {
    pub name: String,
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
    /// Initial contents of a global-data map (`.data`, `.rodata`, `.bss`).
    pub data: Vec<u8>,
    /// A read-only global-data map (`.rodata`): its bytes are constants.
    pub frozen: bool,
}

impl MapDef {
    pub fn type_name(&self) -> &'static str {
        match self.map_type {
            MAP_HASH => "hash",
            MAP_ARRAY => "array",
            MAP_PERCPU_HASH => "percpu_hash",
            MAP_PERCPU_ARRAY => "percpu_array",
            MAP_LRU_HASH => "lru_hash",
            MAP_DEVMAP => "devmap",
            _ => "other",
        }
    }
    pub fn is_array(&self) -> bool {
        matches!(self.map_type, MAP_ARRAY | MAP_PERCPU_ARRAY)
    }
}

/// A source line from BTF line information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrcLine {
    pub file: String,
    pub line: u32,
    pub text: String,
}

impl SrcLine {
    /// `file:line` with the file's base name.
    pub fn short(&self) -> String {
        let base = self.file.rsplit('/').next().unwrap_or(&self.file);
        format!("{base}:{}", self.line)
    }
}

#[derive(Debug, Clone)]
pub struct Program {
    /// ELF section of the program (e.g. `xdp`).
    pub section: String,
    /// Function name of the program.
    pub name: String,
    pub raw: Vec<Raw>,
    pub code: Code,
    pub maps: Vec<MapDef>,
    /// For every instruction slot, the index in `lines` of the source line it comes from.
    pub line_of: Vec<Option<u32>>,
    pub lines: Vec<SrcLine>,
    /// The object's `license` section (the kernel allows GPL-only helpers to GPL programs).
    pub license: String,
}

impl Program {
    /// Maps declared with `max_entries 0`: their loader sets the size before loading, so the
    /// object does not say it (the analysis takes every size from 1 on).
    pub fn unsized_maps(&self) -> Vec<String> {
        self.maps
            .iter()
            .filter(|m| m.max_entries == 0)
            .map(|m| m.name.clone())
            .collect()
    }

    /// Give maps the sizes a loader gives them (`name`, entries), in place of the declared
    /// ones. A name that is no map of the program, or a size of 0, is an error naming it.
    pub fn resize(&mut self, sizes: &[(String, u32)]) -> Result<(), String> {
        for (name, n) in sizes {
            if *n == 0 {
                return Err(format!("map '{name}': a size must be at least 1"));
            }
            let Some(m) = self.maps.iter_mut().find(|m| &m.name == name) else {
                let names: Vec<&str> = self.maps.iter().map(|m| m.name.as_str()).collect();
                return Err(format!(
                    "the program has no map '{name}' (its maps: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            };
            m.max_entries = *n;
        }
        Ok(())
    }

    /// The source line of instruction `pc`, if known.
    pub fn line(&self, pc: usize) -> Option<&SrcLine> {
        self.line_of
            .get(pc)
            .copied()
            .flatten()
            .map(|i| &self.lines[i as usize])
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("not an ELF file: {0}")]
    NotElf(String),
    #[error("not a BPF object (ELF machine is {0}, expected BPF)")]
    NotBpf(String),
    #[error("bad BPF object: {0}")]
    Parse(String),
    #[error("no program in section or function '{want}' (programs: {available})")]
    NoSection { want: String, available: String },
    #[error("the object has no XDP program")]
    NoXdp,
    #[error("the object has several XDP programs ({0}); choose one with --section")]
    Ambiguous(String),
    #[error("{0}")]
    Decode(#[from] crate::insn::DecodeError),
}

/// The error and its causes, joined by ": ".
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// The string table of the `.BTF` section (header: magic, version, flags, hdr_len, type_off,
/// type_len, str_off, str_len).
fn btf_strings(data: &[u8]) -> Option<&[u8]> {
    let u32_at = |o: usize| Some(u32::from_le_bytes(data.get(o..o + 4)?.try_into().ok()?));
    if data.get(0..2)? != [0x9f, 0xeb] {
        return None;
    }
    let hdr = u32_at(4)? as usize;
    let (off, len) = (u32_at(16)? as usize, u32_at(20)? as usize);
    data.get(hdr + off..hdr + off + len)
}

fn cstr(tab: &[u8], off: u32) -> String {
    let tail = tab.get(off as usize..).unwrap_or_default();
    let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
    String::from_utf8_lossy(&tail[..end]).into_owned()
}

/// The largest section without file bytes (`.bss`) loaded. The kernel refuses a map value
/// larger than KMALLOC_MAX_SIZE (4 MiB with 4 kB pages on x86-64; 32 MiB at most on other
/// configurations), and a `.bss` is one map value.
pub const MAX_NOBITS_BYTES: u64 = 64 << 20;

/// Load program `section` (an ELF section name or a function name; optional if the object
/// holds exactly one XDP program) from the object `bytes`.
///
/// A malformed object is an error, never a panic: the parsing library's own panics on
/// hostile input are caught (and kept off stderr) and reported as a bad object.
pub fn load(bytes: &[u8], section: Option<&str>) -> Result<Program, LoadError> {
    static HOOK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(|| load_inner(bytes, section));
    std::panic::set_hook(prev);
    r.unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(LoadError::Parse(format!("malformed object ({what})")))
    })
}

fn load_inner(bytes: &[u8], section: Option<&str>) -> Result<Program, LoadError> {
    let elf = object::File::parse(bytes).map_err(|e| LoadError::NotElf(e.to_string()))?;
    if elf.architecture() != object::Architecture::Bpf {
        return Err(LoadError::NotBpf(format!("{:?}", elf.architecture())));
    }
    // A section without bytes in the file (`.bss`) declares its size: the parser allocates it
    // (a global-data map's value), so a size the kernel could never load is refused first.
    for s in elf.sections() {
        let nobits = matches!(
            s.kind(),
            object::SectionKind::UninitializedData | object::SectionKind::UninitializedTls
        );
        if nobits && s.size() > MAX_NOBITS_BYTES {
            return Err(LoadError::Parse(format!(
                "section '{}' declares {} bytes, more than the {} MiB a global-data map can hold",
                s.name().unwrap_or("?"),
                s.size(),
                MAX_NOBITS_BYTES >> 20
            )));
        }
    }
    let section_names: BTreeMap<usize, String> = elf
        .sections()
        .map(|s| (s.index().0, s.name().unwrap_or("").to_string()))
        .collect();
    let strings = elf
        .section_by_name(".BTF")
        .and_then(|s| s.data().ok())
        .and_then(btf_strings)
        .map(|s| s.to_vec());

    let mut obj = Object::parse(bytes).map_err(|e| LoadError::Parse(chain(&e)))?;

    // Choose the program.
    let mut progs: Vec<(String, String)> = obj
        .programs
        .iter()
        .map(|(name, p)| {
            let sec = section_names
                .get(&p.section_index)
                .cloned()
                .unwrap_or_default();
            (name.clone(), sec)
        })
        .collect();
    progs.sort();
    let is_xdp = |name: &str| matches!(obj.programs[name].section, ProgramSection::Xdp { .. });
    let chosen = match section {
        Some(want) => progs
            .iter()
            .find(|(n, s)| s == want || n == want)
            .cloned()
            .ok_or_else(|| LoadError::NoSection {
                want: want.to_string(),
                available: progs
                    .iter()
                    .map(|(n, s)| format!("{s}/{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })?,
        None => {
            let xdp: Vec<_> = progs.iter().filter(|(n, _)| is_xdp(n)).collect();
            match xdp.as_slice() {
                [] => return Err(LoadError::NoXdp),
                [one] => (*one).clone(),
                many => {
                    return Err(LoadError::Ambiguous(
                        many.iter()
                            .map(|(n, s)| format!("{s}/{n}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ))
                }
            }
        }
    };

    // Maps, indexed in name order; the index stands in for the fd in relocated LD_IMM64s.
    let mut names: Vec<String> = obj.maps.keys().cloned().collect();
    names.sort();
    let maps: Vec<MapDef> = names
        .iter()
        .map(|n| {
            let m = &obj.maps[n];
            MapDef {
                name: n.clone(),
                map_type: m.map_type(),
                key_size: m.key_size(),
                value_size: m.value_size(),
                max_entries: m.max_entries(),
                flags: m.map_flags(),
                data: m.data().to_vec(),
                frozen: n.starts_with(".rodata"),
            }
        })
        .collect();
    let text_sections: HashSet<usize> = obj
        .functions
        .keys()
        .map(|(s, _)| *s)
        .filter(|s| section_names.get(s).is_some_and(|n| n == ".text"))
        .collect();
    {
        let fds = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as std::os::fd::RawFd, &obj.maps[n]))
            .collect::<Vec<_>>();
        // `relocate_maps` borrows `obj` mutably; give it owned map copies.
        let owned: Vec<(String, i32, aya_obj::Map)> = fds
            .into_iter()
            .map(|(n, i, m)| (n.to_string(), i, m.clone()))
            .collect();
        obj.relocate_maps(
            owned.iter().map(|(n, i, m)| (n.as_str(), *i, m)),
            &text_sections,
        )
        .map_err(|e| LoadError::Parse(chain(&e)))?;
    }
    obj.relocate_calls(&text_sections)
        .map_err(|e| LoadError::Parse(chain(&e)))?;

    let prog = &obj.programs[&chosen.0];
    let func = obj
        .functions
        .get(&prog.function_key())
        .ok_or_else(|| LoadError::Parse(format!("program {} has no code", chosen.0)))?;
    let mut bytes_code = Vec::with_capacity(func.instructions.len() * 8);
    for i in &func.instructions {
        bytes_code.push(i.code);
        bytes_code.push(i.dst_reg() | (i.src_reg() << 4));
        bytes_code.extend_from_slice(&i.off.to_le_bytes());
        bytes_code.extend_from_slice(&i.imm.to_le_bytes());
    }
    let raw = Raw::slots(&bytes_code)?;
    let n_maps = maps.len() as i32;
    let code = decode(&raw, &|fd| (0..n_maps).contains(&fd).then_some(fd as u32))?;

    // Line information: records sorted by instruction; each covers up to the next record.
    let mut lines: Vec<SrcLine> = Vec::new();
    let mut line_of = vec![None; raw.len()];
    if let Some(tab) = &strings {
        let mut index: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        let mut recs: Vec<(usize, u32)> = Vec::new();
        for r in &func.line_info.line_info {
            let key = (r.file_name_off, r.line_col >> 10);
            let id = *index.entry(key).or_insert_with(|| {
                lines.push(SrcLine {
                    file: cstr(tab, r.file_name_off),
                    line: r.line_col >> 10,
                    text: cstr(tab, r.line_off).trim().to_string(),
                });
                lines.len() as u32 - 1
            });
            recs.push((r.insn_off as usize, id));
        }
        recs.sort();
        for (k, &(start, id)) in recs.iter().enumerate() {
            let end = recs.get(k + 1).map_or(raw.len(), |r| r.0).min(raw.len());
            for slot in line_of.iter_mut().take(end).skip(start) {
                *slot = Some(id);
            }
        }
    }

    Ok(Program {
        section: chosen.1,
        name: chosen.0,
        raw,
        code,
        maps,
        line_of,
        lines,
        license: obj.license.to_string_lossy().into_owned(),
    })
}
