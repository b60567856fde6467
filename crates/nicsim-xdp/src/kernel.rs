//! The running kernel as the reference: load a [`Program`] with the `bpf(2)` system call (the
//! verifier checks it), create and fill its maps, and run packets through it with
//! `BPF_PROG_TEST_RUN`, which returns the XDP action, the packet afterwards and the time the
//! kernel measured. `nicsim xdp validate` and `nicsim xdp calibrate` build on this.
//!
//! The system call is made directly (`libc::syscall(SYS_bpf, ...)`), with the `union bpf_attr`
//! layouts of `include/uapi/linux/bpf.h` for the commands used: MAP_CREATE, MAP_LOOKUP_ELEM,
//! MAP_UPDATE_ELEM, PROG_LOAD, PROG_TEST_RUN and MAP_FREEZE.
//! Instructions come from the same loader as the analysis ([`crate::load()`]), whose `LD_IMM64`
//! map references hold the map's index: here they get the map's real file descriptor.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::insn::Raw;
use crate::interp::MapState;
use crate::load::{MapDef, Program, MAP_LRU_PERCPU_HASH, MAP_PERCPU_ARRAY, MAP_PERCPU_HASH};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_MAP_FREEZE: libc::c_long = 22;
const BPF_MAP_LOOKUP_AND_DELETE_ELEM: libc::c_long = 21;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_PSEUDO_MAP_FD: u8 = 1;
const BPF_PSEUDO_MAP_VALUE: u8 = 2;
const BPF_PSEUDO_CALL: u8 = 1;
const BPF_PSEUDO_FUNC: u8 = 4;
const BPF_BTF_LOAD: libc::c_long = 18;
/// `union bpf_attr` is at most this big in the kernels we meet; the kernel checks that bytes
/// past the fields it knows are zero, so the whole buffer starts zeroed.
const ATTR_BYTES: usize = 144;

/// Why the running kernel could not load or run a program.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("the kernel refused {what}: {err}")]
    /// A `bpf()` system call failed.
    Sys {
        /// What was asked of the kernel.
        what: String,
        /// The error it returned.
        err: std::io::Error,
    },
    /// `log` is the end of the verifier's log (its reason); `full_log` all of it.
    #[error("the kernel's verifier rejected the program: {err}: {log}")]
    Verifier {
        /// The error `BPF_PROG_LOAD` returned.
        err: std::io::Error,
        /// The end of the verifier's log.
        log: String,
        /// The whole verifier log.
        full_log: String,
    },
    /// A program, map or input this module cannot hand to the kernel.
    #[error("{0}")]
    Input(String),
}

/// A `union bpf_attr`, written field by field at the offsets of `include/uapi/linux/bpf.h`.
struct Attr([u64; ATTR_BYTES / 8]);

impl Attr {
    fn new() -> Attr {
        Attr([0; ATTR_BYTES / 8])
    }
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: a [u64] viewed as bytes, same length in bytes, alignment 1.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr() as *mut u8, ATTR_BYTES) }
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.bytes()[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.bytes()[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn get_u32(&mut self, off: usize) -> u32 {
        u32::from_ne_bytes(self.bytes()[off..off + 4].try_into().expect("4 bytes"))
    }
    fn call(&mut self, cmd: libc::c_long) -> std::io::Result<i64> {
        // SAFETY: the attribute buffer is ATTR_BYTES long and every pointer in it points to a
        // live buffer of the length given beside it (the callers keep them alive).
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd,
                self.0.as_mut_ptr() as *mut libc::c_void,
                ATTR_BYTES as libc::c_uint,
            )
        };
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }
}

fn ptr(b: &[u8]) -> u64 {
    b.as_ptr() as u64
}

/// The kernel's possible CPUs (per-CPU maps hold one value per possible CPU).
pub fn possible_cpus() -> usize {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap_or_default();
    let n: usize = text
        .trim()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap_or(0) + 1 - a.parse::<usize>().unwrap_or(0),
            None => 1,
        })
        .sum();
    n.max(1)
}

/// One map created in the kernel.
struct KMap {
    def: MapDef,
    fd: OwnedFd,
}

impl KMap {
    fn percpu(&self) -> bool {
        matches!(
            self.def.map_type,
            MAP_PERCPU_ARRAY | MAP_PERCPU_HASH | MAP_LRU_PERCPU_HASH
        )
    }
    /// Bytes of a value as user space reads and writes it (per-CPU: one 8-byte aligned slot per
    /// possible CPU).
    fn user_value_bytes(&self, cpus: usize) -> usize {
        if self.percpu() {
            (self.def.value_size as usize).div_ceil(8) * 8 * cpus
        } else {
            self.def.value_size as usize
        }
    }
}

/// What one `BPF_PROG_TEST_RUN` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// The XDP action.
    pub retval: u32,
    /// Mean nanoseconds per repetition, as the kernel measured it.
    pub duration_ns: u32,
    /// The packet afterwards.
    pub packet: Vec<u8>,
}

/// A program loaded into the running kernel, with its maps.
pub struct Kernel {
    prog: OwnedFd,
    maps: Vec<KMap>,
    /// The tail-call targets loaded into the prog arrays (kept open while the program is).
    _targets: Vec<OwnedFd>,
    cpus: usize,
    /// The verifier's log (statistics at level 0).
    pub verifier_log: String,
}

fn map_name(name: &str) -> [u8; 16] {
    // The kernel accepts [A-Za-z0-9_.] and at most 15 bytes.
    let mut out = [0u8; 16];
    for (o, c) in out
        .iter_mut()
        .zip(
            name.bytes()
                .filter(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.'),
        )
        .take(15)
    {
        *o = c;
    }
    out
}

/// The program's instructions for the kernel. A program with kfuncs is refused: an unmodelled
/// one by name, the XDP metadata kfuncs because the kernel's verifier loads them only into a
/// device-bound program ("metadata kfuncs require device-bound program", checked on 6.18 with
/// the kfunc's BTF id from /sys/kernel/btf/vmlinux), and binding needs a device with `ndo_bpf`
/// (the loopback device is refused with EOPNOTSUPP), which this loader does not set up; the
/// conntrack kfuncs because they are in nf_conntrack's module BTF, whose fd the call would need.
///
/// The kfuncs the interpreter runs as the kernel does ([`crate::helpers::kfuncs::runs_as_kernel`]:
/// the number iterator) are called by their vmlinux BTF id (`imm`, `off` 0), as libbpf
/// relocates them.
fn kernel_insns(program: &Program) -> Result<Vec<Raw>, KernelError> {
    let as_kernel = !program.kfuncs.is_empty()
        && program
            .kfuncs
            .iter()
            .all(|k| crate::helpers::kfuncs::runs_as_kernel(k));
    if as_kernel {
        let data = vmlinux_btf().ok_or_else(|| {
            KernelError::Input(
                "the running kernel's BTF (/sys/kernel/btf/vmlinux), which the program's kfunc \
                 calls need, cannot be read"
                    .into(),
            )
        })?;
        let types = crate::btf::Types::parse(data).ok_or_else(|| {
            KernelError::Input("/sys/kernel/btf/vmlinux is not BTF this reader understands".into())
        })?;
        let ids = program
            .kfuncs
            .iter()
            .map(|k| {
                types.func_id(k).ok_or_else(|| {
                    KernelError::Input(format!(
                        "kfunc {k}: the running kernel has no such function"
                    ))
                })
            })
            .collect::<Result<Vec<u32>, _>>()?;
        let mut raw = program.raw[..program.main_len.min(program.raw.len())].to_vec();
        for r in raw.iter_mut() {
            if r.code == 0x85 && r.src == crate::insn::PSEUDO_KFUNC_CALL {
                r.imm = ids[r.imm as usize] as i32;
                r.off = 0;
            }
        }
        return Ok(raw);
    }
    if let Some(k) = program.kfuncs.first() {
        return Err(KernelError::Input(
            program
                .kfuncs
                .iter()
                .find_map(|k| crate::interp::kfunc_refusal(k))
                .or_else(|| {
                    program
                        .kfuncs
                        .iter()
                        .find(|k| crate::interp::kfunc_outputs(k).is_none())
                        .map(|k| {
                            format!(
                                "kfunc {k}: the conntrack kfuncs are in nf_conntrack's module \
                                 BTF, which nicsim's kernel loader does not load"
                            )
                        })
                })
                .unwrap_or_else(|| {
                    format!(
                        "kfunc {k}: the kernel loads the XDP metadata kfuncs only into a \
                         device-bound program, which nicsim's kernel loader does not set up"
                    )
                }),
        ));
    }
    Ok(program.raw[..program.main_len.min(program.raw.len())].to_vec())
}

impl Kernel {
    /// Create the program's maps (global data initialised from its section, `.rodata` frozen),
    /// give the instructions their map file descriptors, and load the program as XDP.
    pub fn load(program: &Program) -> Result<Kernel, KernelError> {
        let raw = kernel_insns(program)?;
        Kernel::load_raw(&raw, &program.maps, &program.license, &program.name)
    }

    /// [`Kernel::load`], with the tail-call targets: `targets[i]` is `program.tail_targets[i]`
    /// loaded on its own (`load_full` with its section and name: the kernel loads each program
    /// separately). Each is loaded with the program's maps, and every known prog array gets
    /// its slots' programs, so that the kernel's tail calls go where the analysis's do.
    pub fn load_with_tails(program: &Program, targets: &[Program]) -> Result<Kernel, KernelError> {
        let mut k = Kernel::load(program)?;
        if targets.len() != program.tail_targets.len() {
            return Err(KernelError::Input(format!(
                "{} tail-call targets given for {}",
                targets.len(),
                program.tail_targets.len()
            )));
        }
        let mut fds = Vec::with_capacity(targets.len());
        for t in targets {
            if t.maps.len() != program.maps.len() {
                return Err(KernelError::Input(format!(
                    "tail-call target {} has other maps than the program",
                    t.name
                )));
            }
            fds.push(load_prog(&kernel_insns(t)?, &k.maps, &t.license, &t.name)?);
        }
        for (&m, a) in &program.prog_arrays {
            if let crate::load::ProgArray::Known(slots) = a {
                for (&slot, &t) in slots {
                    let fd = fds[t].as_raw_fd() as u32;
                    update(&k.maps[m as usize], &slot.to_ne_bytes(), &fd.to_ne_bytes())?;
                }
            }
        }
        k._targets = fds;
        Ok(k)
    }

    /// [`Kernel::load`] from instruction slots whose `LD_IMM64` map references hold indices
    /// into `maps`.
    pub fn load_raw(
        raw: &[Raw],
        map_defs: &[MapDef],
        license: &str,
        name: &str,
    ) -> Result<Kernel, KernelError> {
        let cpus = possible_cpus();
        let mut maps = Vec::with_capacity(map_defs.len());
        let create = |def: &MapDef, inner_fd: u32| {
            let mut a = Attr::new();
            a.u32(0, def.map_type)
                .u32(4, def.key_size)
                .u32(8, def.value_size)
                .u32(12, def.max_entries)
                .u32(16, def.flags)
                .u32(20, inner_fd);
            a.bytes()[28..44].copy_from_slice(&map_name(&def.name));
            let what = || format!("map '{}' ({})", def.name, def.type_name());
            // Local storage takes only a map with BTF for its key (an int) and value (of the
            // value's size): BTF of the shape the kernel checks, in place of the object's.
            // A value holding a lock, a timer or a work item takes BTF that places them.
            let _btf = if def.is_local_storage() {
                let fd = load_btf(&storage_btf(def.value_size), &what())?;
                a.u32(48, fd.as_raw_fd() as u32).u32(52, 1).u32(56, 3);
                Some(fd)
            } else if !def.special_fields.is_empty() {
                let (btf, key_id, value_id) = value_btf(def);
                let fd = load_btf(&btf, &what())?;
                a.u32(48, fd.as_raw_fd() as u32)
                    .u32(52, key_id)
                    .u32(56, value_id);
                Some(fd)
            } else {
                None
            };
            a.call(BPF_MAP_CREATE)
                .map_err(|err| KernelError::Sys { what: what(), err })
        };
        for def in map_defs {
            // A map of maps is created with a template of its inner maps.
            let inner = match &def.inner {
                // SAFETY: the kernel returned a new file descriptor that nothing else owns.
                Some(i) => Some(unsafe { OwnedFd::from_raw_fd(create(i, 0)? as i32) }),
                None => None,
            };
            let fd = create(def, inner.as_ref().map_or(0, |f| f.as_raw_fd() as u32))?;
            // SAFETY: the kernel returned a new file descriptor that nothing else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
            let m = KMap {
                def: def.clone(),
                fd,
            };
            if !def.data.is_empty() {
                let mut v = def.data.clone();
                v.resize(m.user_value_bytes(cpus), 0);
                update(&m, &0u32.to_ne_bytes(), &v)?;
                if def.frozen {
                    let mut a = Attr::new();
                    a.u32(0, m.fd.as_raw_fd() as u32);
                    a.call(BPF_MAP_FREEZE).map_err(|err| KernelError::Sys {
                        what: format!("freezing map '{}'", def.name),
                        err,
                    })?;
                }
            }
            maps.push(m);
        }
        let prog = load_prog(raw, &maps, license, name)?;
        Ok(Kernel {
            prog,
            maps,
            _targets: Vec::new(),
            cpus,
            verifier_log: String::new(),
        })
    }
}

/// The start of every function of `raw`: 0 and the target of each bpf-to-bpf call and each
/// function address (`LD_IMM64` of `BPF_PSEUDO_FUNC`), sorted: the kernel's subprograms.
fn subprogram_starts(raw: &[Raw]) -> Vec<u32> {
    let mut starts = vec![0u32];
    let mut pc = 0;
    while pc < raw.len() {
        let r = raw[pc];
        let pseudo_call = r.code == 0x85 && r.src == BPF_PSEUDO_CALL;
        let func = r.code == 0x18 && r.src == BPF_PSEUDO_FUNC;
        if pseudo_call || func {
            let t = pc as i64 + 1 + r.imm as i64;
            if (0..raw.len() as i64).contains(&t) {
                starts.push(t as u32);
            }
        }
        pc += if r.code == 0x18 { 2 } else { 1 };
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// A minimal BTF for a program with callbacks: the verifier takes a function's address
/// (`bpf_loop`'s callback) only with BTF function information (`missing btf func_info`), and a
/// callback's function must be static. The object's own BTF would need libbpf's fix-ups (its
/// data sections' sizes and offsets), so this one is made here: `int`, one prototype
/// `int (void)` and a static function `fN` per subprogram (the verifier does not read a static
/// function's prototype). Returns the BTF and its `bpf_func_info` records (insn_off, type_id).
fn func_btf(starts: &[u32]) -> (Vec<u8>, Vec<u8>) {
    const KIND_INT: u32 = 1;
    const KIND_FUNC: u32 = 12;
    const KIND_FUNC_PROTO: u32 = 13;
    let mut strings: Vec<u8> = vec![0];
    let mut name = |s: &str| {
        let off = strings.len() as u32;
        strings.extend_from_slice(s.as_bytes());
        strings.push(0);
        off
    };
    let mut types: Vec<u32> = Vec::new();
    // [1] int: 32 bits, signed.
    types.extend([name("int"), KIND_INT << 24, 4, (1 << 24) | 32]);
    // [2] int (void)
    types.extend([0, KIND_FUNC_PROTO << 24, 1]);
    let mut info: Vec<u8> = Vec::new();
    for (k, &at) in starts.iter().enumerate() {
        // [3 + k] static int fK(void)
        types.extend([name(&format!("f{k}")), KIND_FUNC << 24, 2]);
        info.extend_from_slice(&at.to_ne_bytes());
        info.extend_from_slice(&(3 + k as u32).to_ne_bytes());
    }
    (btf_blob(&types, &strings), info)
}

/// BTF for a local-storage map's key and value: [1] `int` (4 bytes, the key), [2] `char`,
/// [3] `char[value_size]` (the value).
fn storage_btf(value_size: u32) -> Vec<u8> {
    const KIND_INT: u32 = 1;
    const KIND_ARRAY: u32 = 3;
    let strings = b"\0int\0char\0";
    let types: [u32; 14] = [
        1,
        KIND_INT << 24,
        4,
        (1 << 24) | 32,
        5,
        KIND_INT << 24,
        1,
        8,
        0,
        KIND_ARRAY << 24,
        0,
        2,
        1,
        value_size,
    ];
    btf_blob(&types, strings)
}

/// BTF for a map whose values hold kernel-managed fields ([`MapDef::special_fields`]): [1]
/// `int` (a 4-byte key), [2] `char`, [3] `char[key_size]` (any other key), then each field's
/// struct by its name and size (what the kernel recognises it by: kernel/bpf/btf.c,
/// `btf_find_struct`), then the value, a struct of `value_size` bytes with one member per
/// field at its offset. Returns the blob and the key's and the value's type ids (a key of 0
/// bytes: 0).
fn value_btf(def: &MapDef) -> (Vec<u8>, u32, u32) {
    const KIND_INT: u32 = 1;
    const KIND_ARRAY: u32 = 3;
    const KIND_STRUCT: u32 = 4;
    let mut strings: Vec<u8> = b"\0int\0char\0nicsim_value\0".to_vec();
    let name_at = |strings: &mut Vec<u8>, name: &str| {
        let at = strings.len() as u32;
        strings.extend_from_slice(name.as_bytes());
        strings.push(0);
        at
    };
    let mut types: Vec<u32> = vec![
        1,
        KIND_INT << 24,
        4,
        (1 << 24) | 32,
        5,
        KIND_INT << 24,
        1,
        8,
        0,
        KIND_ARRAY << 24,
        0,
        2,
        1,
        def.key_size,
    ];
    let mut struct_ids: Vec<(&str, u32)> = Vec::new();
    for &(name, _) in &def.special_fields {
        if struct_ids.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let size = crate::btf::special_struct_size(name);
        let at = name_at(&mut strings, name);
        types.extend([at, KIND_STRUCT << 24, size]);
        struct_ids.push((name, 4 + struct_ids.len() as u32));
    }
    let value_id = 4 + struct_ids.len() as u32;
    let n = def.special_fields.len() as u32;
    types.extend([10, (KIND_STRUCT << 24) | n, def.value_size]);
    for (i, &(name, off)) in def.special_fields.iter().enumerate() {
        let at = name_at(&mut strings, &format!("f{i}"));
        let id = struct_ids
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |&(_, id)| id);
        types.extend([at, id, off.saturating_mul(8)]);
    }
    let key_id = match def.key_size {
        0 => 0,
        4 => 1,
        _ => 3,
    };
    (btf_blob(&types, &strings), key_id, value_id)
}

/// A BTF blob of `types` (each a 32-bit word) and `strings`.
fn btf_blob(types: &[u32], strings: &[u8]) -> Vec<u8> {
    let type_bytes: Vec<u8> = types.iter().flat_map(|x| x.to_ne_bytes()).collect();
    let mut btf: Vec<u8> = Vec::new();
    btf.extend_from_slice(&0xeb9fu16.to_ne_bytes()); // magic
    btf.push(1); // version
    btf.push(0); // flags
    btf.extend_from_slice(&24u32.to_ne_bytes()); // hdr_len
    btf.extend_from_slice(&0u32.to_ne_bytes()); // type_off
    btf.extend_from_slice(&(type_bytes.len() as u32).to_ne_bytes());
    btf.extend_from_slice(&(type_bytes.len() as u32).to_ne_bytes()); // str_off
    btf.extend_from_slice(&(strings.len() as u32).to_ne_bytes());
    btf.extend_from_slice(&type_bytes);
    btf.extend_from_slice(strings);
    btf
}

/// Load `btf` into the kernel (`BPF_BTF_LOAD`); `what` needs it (for the error).
fn load_btf(btf: &[u8], what: &str) -> Result<OwnedFd, KernelError> {
    let mut log = vec![0u8; 1 << 16];
    let mut a = Attr::new();
    a.u64(0, ptr(btf))
        .u64(8, log.as_mut_ptr() as u64)
        .u32(16, btf.len() as u32)
        .u32(20, log.len() as u32)
        .u32(24, 1);
    let fd = a.call(BPF_BTF_LOAD).map_err(|err| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let why = String::from_utf8_lossy(&log[..end]);
        let why = why
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        KernelError::Sys {
            what: format!(
                "the BTF that {what} needs{}",
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({why})")
                }
            ),
            err,
        }
    })?;
    // SAFETY: a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Load the probe `call` (a helper's id, or with `src` the kfunc call's pseudo source, a BTF
/// id); `r0 = 0`; `exit` as an XDP program, for the verifier to say whether it may call it.
fn load_call_probe(src: u8, imm: i32) -> Result<Kernel, KernelError> {
    let call = Raw {
        code: 0x85,
        dst: 0,
        src,
        off: 0,
        imm,
    };
    let zero = |code| Raw {
        code,
        dst: 0,
        src: 0,
        off: 0,
        imm: 0,
    };
    Kernel::load_raw(&[call, zero(0xb7), zero(0x95)], &[], "GPL", "nicsim_probe")
}

/// Whether the running kernel lets an XDP program call helper `id`: a program calling it is
/// handed to the verifier, whose log says whether the helper is one this program type may call
/// ("program of this type cannot use helper", older kernels "unknown func"; "invalid func" for
/// an id the kernel does not know). Any other refusal (the arguments: the probe passes none)
/// comes after that check, so the helper is allowed. An error when the kernel cannot be asked
/// (no privileges for `bpf(2)`).
pub fn xdp_helper_allowed(id: u32) -> Result<bool, KernelError> {
    match load_call_probe(0, id as i32) {
        Ok(_) => Ok(true),
        Err(e) => match e.refused_helper() {
            Some(_) => Ok(false),
            None if matches!(e, KernelError::Verifier { .. }) => Ok(true),
            None => Err(e),
        },
    }
}

impl KernelError {
    /// When the verifier refused the program because this kernel does not give XDP programs a
    /// helper it calls (`program of this type cannot use helper bpf_X#N`, or a helper id it does
    /// not know): the verifier's line saying so. Kernels differ: a helper the analyzer models
    /// may be missing from, or configured out of, the kernel a program is checked against.
    pub fn refused_helper(&self) -> Option<&str> {
        let KernelError::Verifier { full_log, .. } = self else {
            return None;
        };
        full_log.lines().find(|l| {
            ["cannot use helper", "unknown func", "invalid func"]
                .iter()
                .any(|m| l.contains(m))
        })
    }
}

/// The running kernel's BTF (`/sys/kernel/btf/vmlinux`), read once; `None` when it cannot be read.
pub fn vmlinux_btf() -> Option<&'static [u8]> {
    static BTF: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    BTF.get_or_init(|| std::fs::read("/sys/kernel/btf/vmlinux").ok())
        .as_deref()
}

/// The running kernel's kfuncs, `(name, BTF id in vmlinux)` sorted by name, and whether they
/// came from the kernel's own tags: every FUNC of `/sys/kernel/btf/vmlinux` that a `bpf_kfunc`
/// DECL_TAG marks (`__bpf_kfunc`, include/linux/btf.h; pahole 1.26+ emits the tag). A kernel
/// whose BTF has no such tag (an older pahole) falls back to the documented list
/// (`helpers::kfuncs::KFUNCS`, the analyzer's rows: Linux 6.18's kfuncs for XDP) as far as its
/// BTF has those functions. Kfuncs in module BTF (`/sys/kernel/btf/MODULE`, e.g. nf_conntrack
/// built as a module) are not read: such a call would need the module BTF's fd.
pub fn vmlinux_kfuncs() -> Result<(Vec<(String, u32)>, bool), KernelError> {
    let data = vmlinux_btf().ok_or_else(|| {
        KernelError::Input(
            "the running kernel's BTF (/sys/kernel/btf/vmlinux) cannot be read".into(),
        )
    })?;
    let types = crate::btf::Types::parse(data).ok_or_else(|| {
        KernelError::Input("/sys/kernel/btf/vmlinux is not BTF this reader understands".into())
    })?;
    let tagged = types.tagged_funcs("bpf_kfunc");
    if !tagged.is_empty() {
        return Ok((tagged, true));
    }
    let mut listed: Vec<(String, u32)> = crate::helpers::kfuncs::KFUNCS
        .iter()
        .filter_map(|k| types.func_id(k.name).map(|id| (k.name.to_string(), id)))
        .collect();
    listed.sort();
    Ok((listed, false))
}

/// Whether the running kernel lets an XDP program call the kfunc whose vmlinux BTF id is
/// `btf_id`: `call` with `BPF_PSEUDO_KFUNC_CALL` and that id, then `r0 = 0; exit`, handed to the
/// verifier. "calling kernel function X is not allowed" (not in any kfunc set registered for
/// XDP: `register_btf_kfunc_id_set(BPF_PROG_TYPE_XDP, ...)` or for every type), "program must be
/// sleepable to call sleepable kfunc" (an XDP program never is) and "cannot call kernel function"
/// / "kernel btf_id N is not a function" mean no; any other refusal (the arguments, which the
/// probe does not pass; "metadata kfuncs require device-bound program") comes after that
/// check, so the kfunc is allowed. An error when the kernel cannot be asked.
pub fn xdp_kfunc_allowed(btf_id: u32) -> Result<bool, KernelError> {
    match load_call_probe(crate::insn::PSEUDO_KFUNC_CALL, btf_id as i32) {
        Ok(_) => Ok(true),
        Err(KernelError::Verifier { full_log, .. }) => Ok(![
            "is not allowed",
            "must be sleepable",
            "cannot call kernel function",
            "is not a function",
        ]
        .iter()
        .any(|m| full_log.contains(m))),
        Err(e) => Err(e),
    }
}

/// The running kernel's kfuncs that an XDP program may call ([`vmlinux_kfuncs`] that
/// [`xdp_kfunc_allowed`] allows), by name; asked once per process.
pub fn xdp_kfuncs() -> Result<&'static [(String, u32)], String> {
    static LIST: std::sync::OnceLock<Result<Vec<(String, u32)>, String>> =
        std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        let (all, _) = vmlinux_kfuncs().map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for (name, id) in all {
            if xdp_kfunc_allowed(id).map_err(|e| e.to_string())? {
                out.push((name, id));
            }
        }
        Ok(out)
    })
    .as_ref()
    .map(|v| v.as_slice())
    .map_err(|e| e.clone())
}

/// Load `raw` (whose `LD_IMM64` map references hold indices into `maps`) as an XDP program.
fn load_prog(
    raw: &[Raw],
    maps: &[KMap],
    license: &str,
    name: &str,
) -> Result<OwnedFd, KernelError> {
    let mut raw: Vec<Raw> = raw.to_vec();
    let mut pc = 0;
    while pc < raw.len() {
        let r = &mut raw[pc];
        if r.code == 0x18 {
            if matches!(r.src, BPF_PSEUDO_MAP_FD | BPF_PSEUDO_MAP_VALUE) {
                let m = maps.get(r.imm as usize).ok_or_else(|| {
                    KernelError::Input(format!(
                        "instruction {pc} refers to map {} that the object does not define",
                        r.imm
                    ))
                })?;
                r.imm = m.fd.as_raw_fd();
            }
            pc += 2;
        } else {
            pc += 1;
        }
    }
    let mut code = Vec::with_capacity(raw.len() * 8);
    for r in &raw {
        code.push(r.code);
        code.push(r.dst | (r.src << 4));
        code.extend_from_slice(&r.off.to_le_bytes());
        code.extend_from_slice(&r.imm.to_le_bytes());
    }
    // A callback needs BTF function information for every subprogram.
    let has_callback = raw
        .iter()
        .any(|r| r.code == 0x18 && r.src == BPF_PSEUDO_FUNC);
    let (btf_fd, func_info, n_funcs) = if has_callback {
        let starts = subprogram_starts(&raw);
        let (btf, info) = func_btf(&starts);
        let what = "bpf_loop's callback (function information; the verifier takes a callback \
                    only with it)";
        (Some(load_btf(&btf, what)?), info, starts.len() as u32)
    } else {
        (None, Vec::new(), 0)
    };
    let license = std::ffi::CString::new(license)
        .unwrap_or_else(|_| std::ffi::CString::new("GPL").expect("no NUL"));
    let mut log = vec![0u8; 1 << 20];
    let load = |level: u32, log: &mut [u8]| {
        let mut a = Attr::new();
        a.u32(0, BPF_PROG_TYPE_XDP)
            .u32(4, raw.len() as u32)
            .u64(8, ptr(&code))
            .u64(16, license.as_ptr() as u64)
            .u32(24, level)
            .u32(28, if level > 0 { log.len() as u32 } else { 0 })
            .u64(
                32,
                if level > 0 {
                    log.as_mut_ptr() as u64
                } else {
                    0
                },
            );
        a.bytes()[48..64].copy_from_slice(&map_name(name));
        if let Some(fd) = &btf_fd {
            // prog_btf_fd, func_info_rec_size, func_info, func_info_cnt
            a.u32(72, fd.as_raw_fd() as u32)
                .u32(76, 8)
                .u64(80, ptr(&func_info))
                .u32(88, n_funcs);
        }
        a.call(BPF_PROG_LOAD)
    };
    let fd = match load(0, &mut log) {
        Ok(fd) => fd,
        Err(_) => {
            // Load again with the log on, for the verifier's reason.
            let err = load(1, &mut log)
                .err()
                .unwrap_or_else(std::io::Error::last_os_error);
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let full_log = String::from_utf8_lossy(&log[..end]).into_owned();
            let last: Vec<&str> = full_log
                .lines()
                .rev()
                .filter(|l| !l.trim().is_empty())
                .take(2)
                .collect();
            let log = last.into_iter().rev().collect::<Vec<_>>().join(" / ");
            return Err(KernelError::Verifier { err, log, full_log });
        }
    };
    // SAFETY: a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

impl Kernel {
    fn map(&self, name: &str) -> Result<&KMap, KernelError> {
        self.maps
            .iter()
            .find(|m| m.def.name == name)
            .ok_or_else(|| KernelError::Input(format!("the program has no map '{name}'")))
    }

    /// Write every entry of `state` into the kernel's maps (a per-CPU value is given to every
    /// CPU). Entries `state` does not list keep what they hold: on a freshly loaded program
    /// that is what the kernel creates (arrays zeroed, hash maps empty, global data from its
    /// section), so the kernel then holds exactly `state`.
    pub fn set_maps(&self, state: &MapState) -> Result<(), KernelError> {
        for m in &self.maps {
            if m.def.frozen {
                continue;
            }
            let entries = state
                .entries(&m.def.name)
                .map_err(|e| KernelError::Input(e.to_string()))?;
            for (k, v) in entries {
                self.write(m, &k, &v)?;
            }
        }
        Ok(())
    }

    /// Set entry `key` of the program's map number `map` to `value` (one CPU's value).
    pub fn set_raw(&self, map: usize, key: &[u8], value: &[u8]) -> Result<(), KernelError> {
        let m = self
            .maps
            .get(map)
            .ok_or_else(|| KernelError::Input(format!("no map number {map}")))?;
        self.write(m, key, value)
    }

    fn write(&self, m: &KMap, k: &[u8], v: &[u8]) -> Result<(), KernelError> {
        if m.def.is_map_of_maps() {
            // A filled slot holds the map of maps' one inner map, `<outer>.inner`, as in the
            // interpreter (whatever value the entry gives): its file descriptor is the value
            // the kernel takes.
            let want = crate::load::inner_map_name(&m.def.name);
            let inner = self.map(&want).map_err(|_| {
                KernelError::Input(format!(
                    "map '{}': its inner maps are not modelled",
                    m.def.name
                ))
            })?;
            return update(m, k, &(inner.fd.as_raw_fd() as u32).to_ne_bytes());
        }
        {
            {
                let stride = if m.percpu() {
                    v.len().div_ceil(8) * 8
                } else {
                    v.len()
                };
                let mut value = Vec::with_capacity(m.user_value_bytes(self.cpus));
                for _ in 0..if m.percpu() { self.cpus } else { 1 } {
                    let start = value.len();
                    value.extend_from_slice(v);
                    value.resize(start + stride, 0);
                }
                update(m, k, &value)
            }
        }
    }

    /// Set entry `key` of map `name` to `value` (per-CPU maps: every CPU's value).
    pub fn set(&self, name: &str, key: &[u8], value: &[u8]) -> Result<(), KernelError> {
        let m = self.map(name)?;
        self.write(m, key, value)
    }

    /// A queue's or stack's entries, oldest first, read by popping them all and pushing them
    /// back in their order (the kernel offers no other way to read past the first).
    fn queue_entries(&self, m: &KMap) -> Result<Vec<Vec<u8>>, KernelError> {
        let mut popped = Vec::new();
        while let Some(v) = pop(m)? {
            popped.push(v);
        }
        if m.def.map_type == crate::load::MAP_STACK {
            popped.reverse(); // a stack pops its newest first
        }
        for v in &popped {
            update(m, &[], v)?;
        }
        Ok(popped)
    }

    /// Delete entry `key` of map `name` (a hash map's; an absent key is no error). A queue or
    /// stack is emptied (`key` empty); a bloom filter cannot be.
    pub fn delete(&self, name: &str, key: &[u8]) -> Result<(), KernelError> {
        let m = self.map(name)?;
        if m.def.is_keyless() {
            if m.def.map_type == crate::load::MAP_BLOOM_FILTER {
                return Err(KernelError::Input(format!(
                    "map '{name}': a bloom filter's members cannot be removed"
                )));
            }
            while pop(m)?.is_some() {}
            return Ok(());
        }
        let mut a = Attr::new();
        a.u32(0, m.fd.as_raw_fd() as u32).u64(8, ptr(key));
        match a.call(BPF_MAP_DELETE_ELEM) {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            Err(err) => Err(KernelError::Sys {
                what: format!("a delete from map '{name}'"),
                err,
            }),
        }
    }

    /// `value`, a value of map `name`, as the kernel shows one to user space: its kernel-managed
    /// fields ([`MapDef::special_fields`]: a lock, a timer) zeroed (kernel/bpf/syscall.c: a
    /// lookup's copy skips them, `check_and_init_map_value` zeroes them).
    pub fn hide_special(&self, name: &str, value: &mut [u8]) -> Result<(), KernelError> {
        let m = self.map(name)?;
        for &(field, off) in &m.def.special_fields {
            let size = crate::btf::special_struct_size(field) as usize;
            let off = off as usize;
            if let Some(b) = value.get_mut(off..off.saturating_add(size)) {
                b.fill(0);
            }
        }
        Ok(())
    }

    /// The value of `key` in map `name` (per-CPU maps: CPU 0's; kernel-managed fields zeroed,
    /// as the kernel shows them), or None when absent. A queue's or stack's `key` is a position
    /// (4 bytes big-endian, 0 the oldest); a bloom filter's members cannot be listed.
    pub fn get(&self, name: &str, key: &[u8]) -> Result<Option<Vec<u8>>, KernelError> {
        let m = self.map(name)?;
        if m.def.is_keyless() {
            let (Ok(pos), false) = (
                <[u8; 4]>::try_from(key).map(u32::from_be_bytes),
                m.def.map_type == crate::load::MAP_BLOOM_FILTER,
            ) else {
                return Err(KernelError::Input(format!(
                    "map '{name}': entries of a {} are read by position (4 bytes), and a bloom \
                     filter's not at all",
                    m.def.type_name()
                )));
            };
            return Ok(self.queue_entries(m)?.into_iter().nth(pos as usize));
        }
        let mut value = vec![0u8; m.user_value_bytes(self.cpus)];
        let mut a = Attr::new();
        a.u32(0, m.fd.as_raw_fd() as u32)
            .u64(8, ptr(key))
            .u64(16, value.as_mut_ptr() as u64);
        match a.call(BPF_MAP_LOOKUP_ELEM) {
            Ok(_) => {
                value.truncate(m.def.value_size as usize);
                Ok(Some(value))
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(err) => Err(KernelError::Sys {
                what: format!("reading map '{name}'"),
                err,
            }),
        }
    }

    /// Run `packet` through the program `repeat` times (the kernel reruns it on the same
    /// buffer) and return the last run's action and packet with the mean time per run.
    pub fn run(&self, packet: &[u8], repeat: u32) -> Result<TestRun, KernelError> {
        if packet.len() < 14 {
            return Err(KernelError::Input(format!(
                "a packet of {} bytes is shorter than an Ethernet header",
                packet.len()
            )));
        }
        let mut out = vec![0u8; packet.len() + 4096];
        let mut a = Attr::new();
        a.u32(0, self.prog.as_raw_fd() as u32)
            .u32(8, packet.len() as u32)
            .u32(12, out.len() as u32)
            .u64(16, ptr(packet))
            .u64(24, out.as_mut_ptr() as u64)
            .u32(32, repeat.max(1));
        a.call(BPF_PROG_TEST_RUN).map_err(|err| KernelError::Sys {
            what: "BPF_PROG_TEST_RUN".into(),
            err,
        })?;
        let retval = a.get_u32(4);
        let size_out = a.get_u32(12) as usize;
        let duration_ns = a.get_u32(36);
        out.truncate(size_out.min(out.len()));
        Ok(TestRun {
            retval,
            duration_ns,
            packet: out,
        })
    }
}

/// A queue's oldest or a stack's newest value, removed (BPF_MAP_LOOKUP_AND_DELETE_ELEM), or None
/// when the map is empty.
fn pop(m: &KMap) -> Result<Option<Vec<u8>>, KernelError> {
    let mut value = vec![0u8; m.def.value_size as usize];
    let mut a = Attr::new();
    a.u32(0, m.fd.as_raw_fd() as u32)
        .u64(8, 0)
        .u64(16, value.as_mut_ptr() as u64);
    match a.call(BPF_MAP_LOOKUP_AND_DELETE_ELEM) {
        Ok(_) => Ok(Some(value)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(err) => Err(KernelError::Sys {
            what: format!("a pop from map '{}'", m.def.name),
            err,
        }),
    }
}

fn update(m: &KMap, key: &[u8], value: &[u8]) -> Result<(), KernelError> {
    // A map without keys (queue, stack, bloom filter) takes a push: no key pointer at all (the
    // kernel refuses one), whatever position the entry had in the maps' JSON.
    let key_ptr = if m.def.key_size == 0 { 0 } else { ptr(key) };
    let mut a = Attr::new();
    a.u32(0, m.fd.as_raw_fd() as u32)
        .u64(8, key_ptr)
        .u64(16, ptr(value))
        .u64(24, 0);
    a.call(BPF_MAP_UPDATE_ELEM)
        .map(|_| ())
        .map_err(|err| KernelError::Sys {
            what: format!("an update of map '{}'", m.def.name),
            err,
        })
}

/// Why the running kernel's verifier refused a program: its reason (the log's last lines), the
/// instruction it stopped at (the last `N: (..)` line of its log, as the program's instruction
/// slots number it) and that instruction's source line when the object has BTF lines.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rejection {
    /// The verifier's reason: the last lines of its log.
    pub reason: String,
    /// The instruction the verifier stopped at, if its log names one.
    pub insn: Option<usize>,
    /// Its source line (`file:line`), if known.
    pub line: Option<String>,
    /// The source line's text, if known.
    pub text: Option<String>,
}

/// The most entries [`verify`] gives a hash map.
const VERIFY_HASH_ENTRIES: u32 = 1024;
/// The most bytes of keys and values a map [`verify`] creates may hold.
const VERIFY_MAX_MAP_BYTES: u64 = 256 << 20;

/// The instruction the verifier's log stopped at: the last line of the form `N: (op) ...`.
pub fn rejected_insn(full_log: &str) -> Option<usize> {
    full_log.lines().rev().find_map(|l| {
        let (n, rest) = l.split_once(": (")?;
        n.trim().parse::<usize>().ok().filter(|_| !rest.is_empty())
    })
}

/// Whether the running kernel's verifier accepts `program` (with its tail-call targets, as
/// [`Kernel::load_with_tails`] loads them): `Ok(None)` when it loads, `Ok(Some(why))` when the
/// verifier refuses it, and `Err` when the kernel could not be asked (no privileges, a map it
/// cannot create, a kfunc this loader does not load): the program was not checked.
pub fn verify(program: &Program, targets: &[Program]) -> Result<Option<Rejection>, KernelError> {
    // Hash maps are created with at most VERIFY_HASH_ENTRIES entries: the verifier does not read
    // a hash map's size, and the kernel preallocates every entry (an LRU table of 2^20 flows is
    // tens of MB). Arrays keep theirs: the verifier checks constant indices against it.
    let small = |p: &Program| {
        let mut p = p.clone();
        for m in &mut p.maps {
            if !m.is_array()
                && !m.is_prog_array()
                && !m.is_map_of_maps()
                && m.max_entries > VERIFY_HASH_ENTRIES
                && matches!(
                    m.type_name(),
                    "hash" | "lru_hash" | "percpu_hash" | "lru_percpu_hash"
                )
            {
                m.max_entries = VERIFY_HASH_ENTRIES;
            }
        }
        p
    };
    let targets: Vec<Program> = targets.iter().map(small).collect();
    let program = small(program);
    // An array keeps its size, which the object declares: one that would take more kernel
    // memory than VERIFY_MAX_MAP_BYTES is not created for a check (the input's size does not
    // justify it), and the program is then not checked.
    for m in program
        .maps
        .iter()
        .chain(targets.iter().flat_map(|t| t.maps.iter()))
    {
        let bytes = u64::from(m.max_entries) * (u64::from(m.key_size) + u64::from(m.value_size));
        if bytes > VERIFY_MAX_MAP_BYTES {
            return Err(KernelError::Input(format!(
                "map '{}' would take {} MB of kernel memory to create; the verifier was not asked",
                m.name,
                bytes >> 20
            )));
        }
    }
    match Kernel::load_with_tails(&program, &targets) {
        Ok(_) => Ok(None),
        // A timer or a spin lock in a map value needs the map's BTF, which this loader gives
        // only where the object's BTF places the field (a BTF-defined map's value type): the
        // kernel was not asked about the program itself.
        Err(KernelError::Verifier { full_log, .. })
            if full_log.contains("has to have BTF in order to use bpf_") =>
        {
            Err(KernelError::Input(
                "a map holds a bpf_timer or bpf_spin_lock that the object's BTF does not place \
                 (a map defined without BTF types), so it cannot be created as the verifier \
                 needs; the verifier was not asked"
                    .into(),
            ))
        }
        Err(KernelError::Verifier { log, full_log, .. }) => {
            let insn = rejected_insn(&full_log);
            let line = insn.and_then(|pc| program.line(pc));
            Ok(Some(Rejection {
                reason: log,
                insn,
                line: line.map(|l| l.short()),
                text: line.map(|l| l.text.clone()),
            }))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::rejected_insn;

    #[test]
    fn the_rejected_instruction_is_the_logs_last_numbered_line() {
        let log = "0: R1=ctx() R10=fp0\n0: (61) r2 = *(u32 *)(r1 +0)\n\
                   12: (69) r1 = *(u16 *)(r2 +36)\ninvalid access to packet, off=36 size=2\n\
                   processed 14 insns\n";
        assert_eq!(rejected_insn(log), Some(12));
        assert_eq!(rejected_insn("no numbers here\n"), None);
    }
}
