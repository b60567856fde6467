//! CO-RE relocations ("compile once, run everywhere"): the `.BTF.ext` records that tell a
//! loader which instructions name a field, a type or an enum value of a kernel type by its BTF
//! description rather than by a fixed offset. libbpf rewrites each such instruction against
//! the kernel's own BTF before the program reaches the verifier (`bpf_object__relocate_core`,
//! `tools/lib/bpf/relo_core.c`): a field's byte offset and the load's size, whether a field,
//! type or enum value exists, a type's size or id, an enum value. The kernel runs the rewritten
//! code, so the analysis must too: a program that declares `struct xdp_md` with 64-bit fields
//! under `preserve_access_index` loads the kernel's 32-bit fields at offsets 0 and 4.
//!
//! The rewriting is aya-obj's (`Object::relocate_btf`, a port of libbpf's), against the BTF of
//! the file `NICSIM_BTF` names (`--btf FILE`, as libbpf's `btf_custom_path`), else the running
//! kernel's (`/sys/kernel/btf/vmlinux`). A relocation the target cannot satisfy (a field it
//! lacks) poisons its instruction as libbpf does (a call of helper 0xbad2310, which the verifier
//! refuses if the code is reachable); the analysis names it where it is reached.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use aya_obj::btf::Btf;
use aya_obj::Object;

use crate::btf::{cstr, u32_le};
use crate::load::chain;

/// The environment variable naming the BTF file the CO-RE relocations are resolved against,
/// in place of the running kernel's.
pub const BTF_ENV: &str = "NICSIM_BTF";

/// The running kernel's BTF.
pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// The immediate of the call libbpf (and aya-obj) writes over an instruction whose relocation
/// the target cannot satisfy.
pub const POISON_IMM: i32 = 0xbad2310;

/// The largest BTF file read (a distribution kernel's vmlinux BTF is 5-10 MB).
const MAX_BTF_BYTES: u64 = 256 << 20;

/// The instruction offsets of the CO-RE records of each section, by section name, in `.BTF.ext`
/// (`ext`) whose names are `.BTF` strings `strings` (its region at header offset 24).
pub(crate) fn records(ext: &[u8], strings: &[u8]) -> Vec<(String, Vec<u32>)> {
    crate::btf::ext_records(ext, 24)
        .into_iter()
        .map(|(name, recs)| {
            let offs = recs.iter().filter_map(|r| u32_le(r, 0)).collect();
            (cstr(strings, name), offs)
        })
        .filter(|(_, offs): &(String, Vec<u32>)| !offs.is_empty())
        .collect()
}

/// A BTF file as the cache knows it: path, size and modification time.
type FileKey = (String, u64, Option<std::time::SystemTime>);

/// The BTF the relocations take: its path and its parsed types (cached per path, size and
/// modification time: a process analyses many objects against one kernel).
fn target() -> Result<(String, Arc<Btf>), String> {
    static CACHE: Mutex<BTreeMap<FileKey, Arc<Btf>>> = Mutex::new(BTreeMap::new());
    let (path, named) = match std::env::var(BTF_ENV) {
        Ok(p) if !p.is_empty() => (p, true),
        _ => (VMLINUX.to_string(), false),
    };
    let how = if named {
        format!("{path} ({BTF_ENV}, --btf)")
    } else {
        format!("the running kernel's BTF, {path}")
    };
    let meta = std::fs::metadata(&path).map_err(|e| format!("{how} cannot be read: {e}"))?;
    if !meta.is_file() {
        // (A pipe or a device would be read until it ends, if it ends.)
        return Err(format!("{how} is not a regular file"));
    }
    if meta.len() > MAX_BTF_BYTES {
        return Err(format!(
            "{how} is {} bytes, more than the {MAX_BTF_BYTES} a kernel's BTF takes",
            meta.len()
        ));
    }
    let key = (path.clone(), meta.len(), meta.modified().ok());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = cache.get(&key) {
        return Ok((path, Arc::clone(b)));
    }
    let data = std::fs::read(&path).map_err(|e| format!("{how} cannot be read: {e}"))?;
    if data.get(..2) != Some(&[0x9f, 0xeb][..]) {
        return Err(format!(
            "{how} is not BTF (its first bytes are not the magic number 0xeb9f)"
        ));
    }
    let btf = Btf::parse(&data, object::Endianness::Little)
        .map_err(|e| format!("{how} is not BTF this reader understands: {e}"))?;
    let btf = Arc::new(btf);
    cache.insert(key, Arc::clone(&btf));
    Ok((path, btf))
}

/// The relocated code of the sections `sections` (index, name, the instructions' bytes as in
/// the object) that have CO-RE records, as libbpf would hand it to the kernel, and the path of
/// the BTF the relocations took. `copy` is the object as aya-obj reads it: every code section
/// without CO-RE records hidden (`load::hidden_copy`), the ones with records in view. A
/// section whose code does not change is left out of the result.
pub(crate) fn relocate(
    copy: &[u8],
    sections: &[(usize, String, &[u8])],
) -> Result<(BTreeMap<usize, Vec<u8>>, String), String> {
    let (path, btf) = target().map_err(|e| format!(" need a BTF to be resolved against: {e}"))?;
    let mut obj = Object::parse(copy)
        .map_err(|e| format!(": aya-obj cannot read the code they rewrite: {e}"))?;
    // aya-obj slices some records' fields without checking them (an access string's index past
    // its type): a panic there is a malformed record (the loader's `guarded` keeps it quiet).
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| obj.relocate_btf(&btf)))
        .map_err(|p| {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            format!(" against {path}: a malformed record in section '.BTF.ext' ({what})")
        })?
        .map_err(|e| format!(" against {path}: {}", chain(&e)))?;
    let by_index: HashMap<usize, usize> =
        sections.iter().enumerate().map(|(k, s)| (s.0, k)).collect();
    let mut out: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    for f in obj.functions.values() {
        let Some(&k) = by_index.get(&f.section_index.0) else {
            continue;
        };
        let (sec, _, code) = &sections[k];
        for (j, ins) in f.instructions.iter().enumerate() {
            let at = f.section_offset + 8 * j;
            let Some(old) = code.get(at..at + 8) else {
                continue;
            };
            let mut new = [0u8; 8];
            new[0] = ins.code;
            new[1] = (ins.src_reg() << 4) | (ins.dst_reg() & 0x0f);
            new[2..4].copy_from_slice(&ins.off.to_le_bytes());
            new[4..8].copy_from_slice(&ins.imm.to_le_bytes());
            if old != new {
                out.entry(*sec).or_insert_with(|| code.to_vec())[at..at + 8].copy_from_slice(&new);
            }
        }
    }
    Ok((out, path))
}
