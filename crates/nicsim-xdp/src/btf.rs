//! A BTF blob's type table, read as the kernel lays it out (include/uapi/linux/btf.h: a header,
//! then `struct btf_type` records each followed by its kind's trailing data, then the string
//! table). The loader reads an object's `.BTF` section with it (the `.maps` and `.kconfig`
//! DATASECs, `load.rs`), and the kernel module reads the running kernel's
//! `/sys/kernel/btf/vmlinux` with it (its kfuncs: FUNCs tagged `bpf_kfunc`, `kernel.rs`).
//! aya-obj parses BTF too, but keeps its type table and string lookups private (`Btf::types`,
//! `string_at` are `pub(crate)` in aya-obj 0.3), so the table is walked here, without
//! recursion, a malformed blob giving what could be read.

/// `BTF_KIND_*` numbers used here.
pub const KIND_PTR: u32 = 2;
/// `BTF_KIND_ARRAY`.
pub const KIND_ARRAY: u32 = 3;
/// `BTF_KIND_STRUCT`.
pub const KIND_STRUCT: u32 = 4;
/// `BTF_KIND_FUNC`.
pub const KIND_FUNC: u32 = 12;
/// `BTF_KIND_FUNC_PROTO`.
pub const KIND_FUNC_PROTO: u32 = 13;
/// `BTF_KIND_VAR`.
pub const KIND_VAR: u32 = 14;
/// `BTF_KIND_DATASEC`.
pub const KIND_DATASEC: u32 = 15;
/// `BTF_KIND_DECL_TAG`.
pub const KIND_DECL_TAG: u32 = 17;

/// The structs the kernel manages inside a map value, by name and size (kernel/bpf/btf.c,
/// `btf_get_field_type`): a value holding one needs map BTF ([`Types::special_fields`]).
pub const SPECIAL_STRUCTS: &[(&str, u32)] = &[
    ("bpf_spin_lock", 4),
    ("bpf_res_spin_lock", 4),
    ("bpf_timer", 16),
    ("bpf_wq", 16),
    ("bpf_task_work", 8),
];

/// The size of the kernel-managed struct `name` ([`SPECIAL_STRUCTS`]; 0 for another name).
pub fn special_struct_size(name: &str) -> u32 {
    SPECIAL_STRUCTS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |&(_, size)| size)
}

/// One `struct btf_type`.
#[derive(Debug, Clone, Copy)]
pub struct Type<'d> {
    /// `BTF_KIND_*`.
    pub kind: u32,
    /// The `kind_flag` bit.
    pub kflag: bool,
    /// Offset of its name in the string table.
    pub name: u32,
    /// `size` or `type` (the union).
    pub size_or_type: u32,
    /// The kind's trailing data (members, parameters, variables, …).
    pub body: &'d [u8],
    /// Where `body` starts in the whole blob.
    pub at: usize,
}

/// A BTF blob's types, by id (id 0 is `void`), and its string table.
pub struct Types<'d> {
    /// The string table.
    pub strs: &'d [u8],
    /// The types; `types[0]` stands for `void`.
    pub types: Vec<Type<'d>>,
}

/// The little-endian u32 at `at` of `b`.
pub fn u32_le(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The NUL-terminated string at `off` of the string table `tab`.
pub fn cstr(tab: &[u8], off: u32) -> String {
    let tail = tab.get(off as usize..).unwrap_or_default();
    let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
    String::from_utf8_lossy(&tail[..end]).into_owned()
}

/// The string table of a BTF blob (header: magic, version, flags, hdr_len, type_off, type_len,
/// str_off, str_len).
pub fn strings(data: &[u8]) -> Option<&[u8]> {
    if data.get(0..2)? != [0x9f, 0xeb] {
        return None;
    }
    let hdr = u32_le(data, 4)? as usize;
    let (off, len) = (u32_le(data, 16)? as usize, u32_le(data, 20)? as usize);
    data.get(hdr.checked_add(off)?..hdr.checked_add(off)?.checked_add(len)?)
}

impl<'d> Types<'d> {
    /// Read the type table of `data` (a little-endian BTF blob). A kind this reader does not
    /// know ends the table there (what came before is kept); `None` when `data` is no BTF.
    pub fn parse(data: &'d [u8]) -> Option<Types<'d>> {
        if data.get(0..2)? != [0x9f, 0xeb] {
            return None;
        }
        let hdr = u32_le(data, 4)? as usize;
        let (toff, tlen) = (u32_le(data, 8)? as usize, u32_le(data, 12)? as usize);
        let strs = strings(data)?;
        let start = hdr.checked_add(toff)?;
        let types = data.get(start..start.checked_add(tlen)?)?;
        let mut ts = vec![Type {
            kind: 0,
            kflag: false,
            name: 0,
            size_or_type: 0,
            body: &[],
            at: 0,
        }];
        let mut at = 0usize;
        while at + 12 <= types.len() {
            let (Some(name), Some(info), Some(st)) = (
                u32_le(types, at),
                u32_le(types, at + 4),
                u32_le(types, at + 8),
            ) else {
                break;
            };
            let (kind, vlen, kflag) = (
                (info >> 24) & 0x1f,
                (info & 0xffff) as usize,
                info >> 31 == 1,
            );
            let extra = match kind {
                1 | 14 | 17 => 4,
                3 => 12,
                4 | 5 | 15 | 19 => 12 * vlen,
                6 | 13 => 8 * vlen,
                2 | 7..=12 | 16 | 18 => 0,
                _ => break,
            };
            let Some(body) = types.get(at + 12..at + 12 + extra) else {
                break;
            };
            ts.push(Type {
                kind,
                kflag,
                name,
                size_or_type: st,
                body,
                at: start + at + 12,
            });
            at += 12 + extra;
        }
        Some(Types { strs, types: ts })
    }

    /// The name of type `t`.
    pub fn name(&self, t: &Type) -> String {
        cstr(self.strs, t.name)
    }

    /// Type `id` past typedefs, qualifiers and type tags (at most 32 of them).
    pub fn resolve(&self, mut id: u32) -> Option<u32> {
        for _ in 0..32 {
            match self.types.get(id as usize)?.kind {
                8..=11 | 18 => id = self.types[id as usize].size_or_type,
                _ => return Some(id),
            }
        }
        None
    }

    /// The size of type `id` in bytes (ints, structs, unions, enums, pointers, arrays of those).
    pub fn size(&self, id: u32) -> Option<u64> {
        let mut id = self.resolve(id)?;
        let mut n: u64 = 1;
        for _ in 0..32 {
            let t = self.types.get(id as usize)?;
            match t.kind {
                1 | 4 | 5 | 6 | 19 => return Some(n * t.size_or_type as u64),
                2 => return Some(n * 8),
                3 => {
                    n = n.checked_mul(u32_le(t.body, 8)? as u64)?;
                    id = self.resolve(u32_le(t.body, 0)?)?;
                }
                _ => return None,
            }
        }
        None
    }

    /// The kernel-managed fields in a value of type `id` whose type the kernel recognises by
    /// its struct's name and size (`SPECIAL_STRUCTS`: a lock, a timer, a work item), in
    /// members of structs, unions and arrays at any depth: (name, byte offset), in order of
    /// offset. The kernel creates a map whose values hold one only with BTF that says where it
    /// is (kernel/bpf/btf.c, `btf_parse_fields`). Walked with a work list of at most
    /// `MAX_FIELD_WALK` members, so a malformed or huge type ends the walk, not the process.
    pub fn special_fields(&self, id: u32) -> Vec<(&'static str, u32)> {
        const MAX_FIELD_WALK: usize = 65_536;
        let mut out = Vec::new();
        let mut work: Vec<(u32, u64)> = vec![(id, 0)];
        let mut walked = 0usize;
        while let Some((id, base)) = work.pop() {
            walked += 1;
            if walked > MAX_FIELD_WALK || base > u32::MAX as u64 {
                break;
            }
            let Some(t) = self.kind_of(id) else { continue };
            match t.kind {
                KIND_STRUCT | 5 => {
                    let name = self.name(t);
                    if let Some(&(n, size)) = SPECIAL_STRUCTS.iter().find(|(n, _)| *n == name) {
                        if t.size_or_type == size {
                            out.push((n, base as u32));
                        }
                        continue;
                    }
                    for m in t.body.chunks_exact(12) {
                        let (Some(mty), Some(bits)) = (u32_le(m, 4), u32_le(m, 8)) else {
                            continue;
                        };
                        let bits = if t.kflag { bits & 0xff_ffff } else { bits };
                        work.push((mty, base + bits as u64 / 8));
                    }
                }
                KIND_ARRAY => {
                    let (Some(elem), Some(n)) = (u32_le(t.body, 0), u32_le(t.body, 8)) else {
                        continue;
                    };
                    // Only arrays of structs, unions or arrays can hold one (a byte array of a
                    // megabyte would spend the walk's budget before a lock after it).
                    if !self
                        .kind_of(elem)
                        .is_some_and(|e| matches!(e.kind, KIND_STRUCT | 5 | KIND_ARRAY))
                    {
                        continue;
                    }
                    let Some(size) = self.size(elem).filter(|&s| s > 0) else {
                        continue;
                    };
                    for i in 0..(n as u64).min(MAX_FIELD_WALK as u64) {
                        work.push((elem, base + i * size));
                    }
                }
                _ => {}
            }
        }
        out.sort_by_key(|&(_, off)| off);
        out
    }

    /// The type `id` resolves to ([`Types::resolve`]).
    pub fn kind_of(&self, id: u32) -> Option<&Type<'d>> {
        self.resolve(id).and_then(|t| self.types.get(t as usize))
    }

    /// The FUNCs a `DECL_TAG` named `tag` tags as a whole (component_idx -1): `(name, id)`,
    /// sorted by name, each once. The kernel's kfuncs carry `bpf_kfunc` (`__bpf_kfunc`,
    /// include/linux/btf.h, emitted by pahole 1.26+).
    pub fn tagged_funcs(&self, tag: &str) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = self
            .types
            .iter()
            .filter(|t| {
                t.kind == KIND_DECL_TAG
                    && u32_le(t.body, 0) == Some(u32::MAX)
                    && cstr(self.strs, t.name) == tag
            })
            .filter_map(|t| {
                let f = self.types.get(t.size_or_type as usize)?;
                (f.kind == KIND_FUNC).then(|| (self.name(f), t.size_or_type))
            })
            .collect();
        out.sort();
        out.dedup_by(|a, b| a.0 == b.0);
        out
    }

    /// The id of the FUNC named `name`, if there is one.
    pub fn func_id(&self, name: &str) -> Option<u32> {
        self.types
            .iter()
            .position(|t| t.kind == KIND_FUNC && cstr(self.strs, t.name) == name)
            .map(|i| i as u32)
    }

    /// The `__ksym` externs of an object's BTF: the VARs of its `.ksyms` DATASEC, each with
    /// whether it is typeless (`extern const void sym __ksym;`: its type `void`), by name.
    pub fn ksym_vars(&self) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for ds in &self.types {
            if ds.kind != KIND_DATASEC || cstr(self.strs, ds.name) != ".ksyms" {
                continue;
            }
            for v in ds.body.chunks_exact(12) {
                let Some(var) = u32_le(v, 0).and_then(|t| self.types.get(t as usize)) else {
                    continue;
                };
                if var.kind == KIND_VAR {
                    let typeless = self.resolve(var.size_or_type) == Some(0);
                    out.push((self.name(var), typeless));
                }
            }
        }
        out
    }

    /// The id of the VAR named `name`, if there is one.
    pub fn var_id(&self, name: &str) -> Option<u32> {
        self.types
            .iter()
            .position(|t| t.kind == KIND_VAR && cstr(self.strs, t.name) == name)
            .map(|i| i as u32)
    }
}

/// The records of one region of a `.BTF.ext` section (`struct btf_ext_header`, then at header
/// offset `at` the region's offset and length after the header: 8 function, 16 line, 24 CO-RE
/// information; the region a record size, then per section its name, a `.BTF` string offset, its
/// record count and the records): for each section, its name offset and its records, each its
/// record size long. A malformed region gives what could be read (`load::check_btf_ext` names
/// what is wrong before anything reads it).
pub(crate) fn ext_records(ext: &[u8], at: usize) -> Vec<(u32, Vec<&[u8]>)> {
    let mut out: Vec<(u32, Vec<&[u8]>)> = Vec::new();
    let mut walk = || -> Option<()> {
        if ext.get(0..2)? != [0x9f, 0xeb] {
            return None;
        }
        let hdr = u32_le(ext, 4)? as usize;
        if hdr < at + 8 {
            return None;
        }
        let (off, len) = (u32_le(ext, at)? as usize, u32_le(ext, at + 4)? as usize);
        let start = hdr.checked_add(off)?;
        let region = ext.get(start..start.checked_add(len)?)?;
        let rec = u32_le(region, 0)? as usize;
        if rec == 0 {
            return None;
        }
        let mut k = 4usize;
        while k + 8 <= region.len() {
            let name = u32_le(region, k)?;
            let n = u32_le(region, k + 4)? as usize;
            k += 8;
            out.push((name, Vec::new()));
            let recs = &mut out.last_mut()?.1;
            for _ in 0..n {
                recs.push(region.get(k..k.checked_add(rec)?)?);
                k += rec;
            }
        }
        Some(())
    };
    let _ = walk();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob of `types` (32-bit words) and `strings`, little-endian.
    fn blob(types: &[u32], strings: &[u8]) -> Vec<u8> {
        let tb: Vec<u8> = types.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut b = vec![0x9f, 0xeb, 1, 0];
        for w in [
            24u32,
            0,
            tb.len() as u32,
            tb.len() as u32,
            strings.len() as u32,
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(&tb);
        b.extend_from_slice(strings);
        b
    }

    #[test]
    fn special_fields_are_found_past_large_arrays_and_in_nested_structs() {
        // [1] int; [2] struct bpf_spin_lock { int val; } (4); [3] unsigned char; [4] u8[100000];
        // [5] struct bpf_timer (16, no members); [6] struct inner { struct bpf_timer t; } (16);
        // [7] struct inner[2]; [8] struct value { u8 data[100000]; struct bpf_spin_lock lock;
        // struct inner in[2] at 100008 } (100040).
        let strings =
            b"\0int\0bpf_spin_lock\0val\0uchar\0bpf_timer\0inner\0t\0value\0data\0lock\0in\0";
        let at = |name: &str| {
            let s = std::str::from_utf8(strings).unwrap();
            s.find(&format!("\0{name}\0")).unwrap() as u32 + 1
        };
        let types = [
            at("int"),
            1 << 24,
            4,
            (1 << 24) | 32,
            at("bpf_spin_lock"),
            (4 << 24) | 1,
            4,
            at("val"),
            1,
            0,
            at("uchar"),
            1 << 24,
            1,
            8,
            0,
            3 << 24,
            0,
            3,
            1,
            100_000,
            at("bpf_timer"),
            4 << 24,
            16,
            at("inner"),
            (4 << 24) | 1,
            16,
            at("t"),
            5,
            0,
            0,
            3 << 24,
            0,
            6,
            1,
            2,
            at("value"),
            (4 << 24) | 3,
            100_040,
            at("data"),
            4,
            0,
            at("lock"),
            2,
            100_000 * 8,
            at("in"),
            7,
            100_008 * 8,
        ];
        let b = blob(&types, strings);
        let t = Types::parse(&b).unwrap();
        assert_eq!(
            t.special_fields(8),
            [
                ("bpf_spin_lock", 100_000),
                ("bpf_timer", 100_008),
                ("bpf_timer", 100_024)
            ]
        );
        // A struct named as a kernel one but of another size is not it.
        assert!(t.special_fields(4).is_empty());
    }
}
