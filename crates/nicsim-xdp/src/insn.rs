//! eBPF instructions: a checked representation decoded once from the 8-byte encoding, and the
//! arithmetic every consumer shares (constant folding while unrolling, the interpreter).
//!
//! Encoding (Linux `Documentation/bpf/standardization/instruction-set.rst`): `code` holds the
//! class in its low 3 bits; ALU/JMP codes hold the operation in the high 4 bits and the source
//! (immediate or register) in bit 3; load/store codes hold the size in bits 3–4 and the mode in
//! bits 5–7. `LD_IMM64` takes two slots. Decoding rejects every encoding the analyzer does not
//! model, naming the instruction, so nothing unknown is silently treated as a no-op.

use std::fmt;

/// A register number, 0..=10 (r10 is the read-only frame pointer).
pub type Reg = u8;

/// An instruction's second operand: a register or the 32-bit immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Src {
    /// Register `src`.
    Reg(Reg),
    /// The immediate (sign-extended in 64-bit operations).
    Imm(i32),
}

/// ALU operations (`BPF_ALU` / `BPF_ALU64` op field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AluOp {
    /// `dst += src`.
    Add,
    /// `dst -= src`.
    Sub,
    /// `dst *= src`.
    Mul,
    /// Unsigned `dst /= src` (0 when `src` is 0).
    Div,
    /// `dst |= src`.
    Or,
    /// `dst &= src`.
    And,
    /// `dst <<= src`.
    Lsh,
    /// Logical `dst >>= src`.
    Rsh,
    /// `dst = -dst`.
    Neg,
    /// Unsigned `dst %= src` (`dst` unchanged when `src` is 0).
    Mod,
    /// `dst ^= src`.
    Xor,
    /// `dst = src`.
    Mov,
    /// Arithmetic (sign-extending) `dst >>= src`.
    Arsh,
}

/// Conditional jump comparisons (`BPF_JMP` / `BPF_JMP32` op field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JmpOp {
    /// `dst == src`.
    Eq,
    /// Unsigned `dst > src`.
    Gt,
    /// Unsigned `dst >= src`.
    Ge,
    /// `dst & src != 0`.
    Set,
    /// `dst != src`.
    Ne,
    /// Signed `dst > src`.
    Sgt,
    /// Signed `dst >= src`.
    Sge,
    /// Unsigned `dst < src`.
    Lt,
    /// Unsigned `dst <= src`.
    Le,
    /// Signed `dst < src`.
    Slt,
    /// Signed `dst <= src`.
    Sle,
}

/// Access size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// One byte.
    B = 1,
    /// Two bytes (half word).
    H = 2,
    /// Four bytes (word).
    W = 4,
    /// Eight bytes (double word).
    DW = 8,
}

impl Size {
    /// The access size in bytes.
    pub fn bytes(self) -> u32 {
        self as u32
    }
}

/// Atomic read-modify-write operations (`BPF_ATOMIC` imm field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    /// Add.
    Add,
    /// Bitwise or.
    Or,
    /// Bitwise and.
    And,
    /// Bitwise exclusive or.
    Xor,
    /// Exchange: store `src`, return the old value.
    Xchg,
    /// Compare with r0 and exchange: store `src` if the old value equals r0; r0 gets the old value.
    CmpXchg,
}

/// What an `LD_IMM64` loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imm64 {
    /// A 64-bit constant.
    Const(u64),
    /// The address of map `map` (`BPF_PSEUDO_MAP_FD`; the map index after relocation).
    Map(u32),
    /// The address of byte `off` of map `map`'s value (`BPF_PSEUDO_MAP_VALUE`, global data).
    MapValue {
        /// Map index.
        map: u32,
        /// Byte offset into the map's value.
        off: u32,
    },
    /// The address of the function at instruction `pc` (`BPF_PSEUDO_FUNC`: a callback of
    /// `bpf_loop`; the loader checks that a function starts there).
    Func(u32),
}

/// A decoded eBPF instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insn {
    /// `dst = dst op src`, on 64 bits or on the low 32 bits (upper half zeroed).
    Alu {
        /// The operation.
        op: AluOp,
        /// 64-bit operation (`BPF_ALU64`); else 32-bit.
        is64: bool,
        /// Destination register.
        dst: Reg,
        /// Second operand.
        src: Src,
    },
    /// Byte swap to `bits` (16/32/64): `to_be` converts host (little-endian) to big-endian.
    End {
        /// Register swapped in place.
        dst: Reg,
        /// Width of the swap (16, 32 or 64).
        bits: u32,
        /// Convert to big-endian (else to little-endian, which only truncates).
        to_be: bool,
    },
    /// `dst = *(size *)(src + off)`; `signed`: sign-extending load (`MEMSX`).
    Ldx {
        /// Access size.
        size: Size,
        /// Register loaded.
        dst: Reg,
        /// Register holding the base address.
        src: Reg,
        /// Byte offset from the base address.
        off: i16,
        /// Sign-extend the loaded value.
        signed: bool,
    },
    /// `*(size *)(dst + off) = src`.
    St {
        /// Access size.
        size: Size,
        /// Register holding the base address.
        dst: Reg,
        /// Value stored: a register (`STX`) or an immediate (`ST`).
        src: Src,
        /// Byte offset from the base address.
        off: i16,
    },
    /// Atomic read-modify-write of `*(size *)(dst + off)` with `src`; `fetch` returns the old
    /// value in `src` (in r0 for `CmpXchg`).
    Atomic {
        /// The operation.
        op: AtomicOp,
        /// Access size (word or double word).
        size: Size,
        /// Register holding the base address.
        dst: Reg,
        /// Register holding the operand.
        src: Reg,
        /// Byte offset from the base address.
        off: i16,
        /// Return the old value (`BPF_FETCH`).
        fetch: bool,
    },
    /// `dst` = a 64-bit immediate, a map or a function address (two slots).
    LdImm64 {
        /// Register loaded.
        dst: Reg,
        /// What is loaded.
        imm: Imm64,
    },
    /// Legacy packet access `r0 = ntoh(*(size *)(skb->data + [src] + imm))` (not valid in XDP).
    LdAbs,
    /// Unconditional jump to `pc + 1 + off`.
    Ja {
        /// Jump offset in slots, from the next instruction.
        off: i32,
    },
    /// Conditional jump to `pc + 1 + off` when `dst op src` holds.
    Jmp {
        /// The comparison.
        op: JmpOp,
        /// Compare 64 bits (`BPF_JMP`); else the low 32 bits (`BPF_JMP32`).
        is64: bool,
        /// Left operand.
        dst: Reg,
        /// Right operand.
        src: Src,
        /// Jump offset in slots, from the next instruction.
        off: i16,
    },
    /// Helper call by id.
    Call {
        /// Helper id (`BPF_FUNC_*`).
        helper: u32,
    },
    /// bpf-to-bpf call: the callee starts at `pc + 1 + off`.
    CallLocal {
        /// Offset in slots of the callee's first instruction, from the next instruction.
        off: i32,
    },
    /// Call of a kernel function (kfunc, `BPF_PSEUDO_KFUNC_CALL`): `id` indexes the
    /// program's `kfuncs`, which name them.
    Kfunc {
        /// Index into the program's `kfuncs`.
        id: u32,
    },
    /// Return r0 from the function.
    Exit,
}

/// One decoded instruction per slot; the second slot of an `LD_IMM64` holds `None`.
pub type Code = Vec<Option<Insn>>;

/// An instruction the decoder rejects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Slot of the instruction.
    pub pc: usize,
    /// Its opcode byte.
    pub code: u8,
    /// Why it was rejected.
    pub what: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "instruction {}: {} (opcode {:#04x})",
            self.pc, self.what, self.code
        )
    }
}

impl std::error::Error for DecodeError {}

/// A raw instruction slot (little-endian layout of `struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw {
    /// Opcode byte.
    pub code: u8,
    /// Destination register field (low nibble).
    pub dst: u8,
    /// Source register field (high nibble).
    pub src: u8,
    /// Signed offset field.
    pub off: i16,
    /// Signed immediate field.
    pub imm: i32,
}

impl Raw {
    /// Slots of `bytes` (its length must be a multiple of 8; a trailing partial slot is an error).
    pub fn slots(bytes: &[u8]) -> Result<Vec<Raw>, DecodeError> {
        if !bytes.len().is_multiple_of(8) {
            return Err(DecodeError {
                pc: bytes.len() / 8,
                code: 0,
                what: format!(
                    "code is {} bytes, not a whole number of 8-byte slots",
                    bytes.len()
                ),
            });
        }
        Ok(bytes
            .chunks_exact(8)
            .map(|c| Raw {
                code: c[0],
                dst: c[1] & 0x0f,
                src: c[1] >> 4,
                off: i16::from_le_bytes([c[2], c[3]]),
                imm: i32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            })
            .collect())
    }
}

const CLS_LD: u8 = 0;
const CLS_LDX: u8 = 1;
const CLS_ST: u8 = 2;
const CLS_STX: u8 = 3;
const CLS_ALU: u8 = 4;
const CLS_JMP: u8 = 5;
const CLS_JMP32: u8 = 6;
const CLS_ALU64: u8 = 7;

/// `BPF_PSEUDO_MAP_FD` / `BPF_PSEUDO_MAP_VALUE` / `BPF_PSEUDO_FUNC` (`LD_IMM64` kinds);
/// `BPF_PSEUDO_CALL` / `BPF_PSEUDO_KFUNC_CALL` (call kinds).
pub const PSEUDO_MAP_FD: u8 = 1;
/// `BPF_PSEUDO_MAP_VALUE`: `LD_IMM64` of an address inside a map's value.
pub const PSEUDO_MAP_VALUE: u8 = 2;
/// `BPF_PSEUDO_FUNC`: `LD_IMM64` of a function's address.
pub const PSEUDO_FUNC: u8 = 4;
/// `BPF_PSEUDO_CALL`: bpf-to-bpf call.
pub const PSEUDO_CALL: u8 = 1;
/// `BPF_PSEUDO_KFUNC_CALL`: call of a kernel function.
pub const PSEUDO_KFUNC_CALL: u8 = 2;

fn size_of(code: u8) -> Size {
    match code & 0x18 {
        0x00 => Size::W,
        0x08 => Size::H,
        0x10 => Size::B,
        _ => Size::DW,
    }
}

/// Decode every slot. `map_index` turns the `imm` of a map reference into the map's index.
pub fn decode(raw: &[Raw], map_index: &dyn Fn(i32) -> Option<u32>) -> Result<Code, DecodeError> {
    let mut out = Vec::with_capacity(raw.len());
    let mut pc = 0;
    while pc < raw.len() {
        let r = raw[pc];
        let err = |what: String| DecodeError {
            pc,
            code: r.code,
            what,
        };
        let reg = |x: u8, what: &str| -> Result<Reg, DecodeError> {
            if x <= 10 {
                Ok(x)
            } else {
                Err(err(format!("{what} register r{x} does not exist")))
            }
        };
        let cls = r.code & 7;
        let insn = match cls {
            CLS_ALU | CLS_ALU64 => {
                let is64 = cls == CLS_ALU64;
                let src = if r.code & 0x08 != 0 {
                    Src::Reg(reg(r.src, "source")?)
                } else {
                    Src::Imm(r.imm)
                };
                let dst = reg(r.dst, "destination")?;
                if dst == 10 {
                    return Err(err("writes the read-only frame pointer r10".into()));
                }
                let op = match r.code & 0xf0 {
                    0x00 => AluOp::Add,
                    0x10 => AluOp::Sub,
                    0x20 => AluOp::Mul,
                    0x30 => AluOp::Div,
                    0x40 => AluOp::Or,
                    0x50 => AluOp::And,
                    0x60 => AluOp::Lsh,
                    0x70 => AluOp::Rsh,
                    0x80 => AluOp::Neg,
                    0x90 => AluOp::Mod,
                    0xa0 => AluOp::Xor,
                    0xb0 => AluOp::Mov,
                    0xc0 => AluOp::Arsh,
                    0xd0 => {
                        let bits = r.imm as u32;
                        if !matches!(bits, 16 | 32 | 64) {
                            return Err(err(format!("byte swap to {bits} bits")));
                        }
                        // ALU class: BPF_TO_LE (0) / BPF_TO_BE (8); ALU64 (bswap) swaps always.
                        let to_be = is64 || r.code & 0x08 != 0;
                        out.push(Some(Insn::End { dst, bits, to_be }));
                        pc += 1;
                        continue;
                    }
                    _ => return Err(err("unknown ALU operation".into())),
                };
                if r.off != 0 && matches!(op, AluOp::Div | AluOp::Mod | AluOp::Mov) {
                    return Err(err(
                        "signed division or sign-extending move (not modelled)".into()
                    ));
                }
                Insn::Alu { op, is64, dst, src }
            }
            CLS_JMP | CLS_JMP32 => {
                let is64 = cls == CLS_JMP;
                let src = if r.code & 0x08 != 0 {
                    Src::Reg(reg(r.src, "source")?)
                } else {
                    Src::Imm(r.imm)
                };
                match r.code & 0xf0 {
                    0x00 if is64 => Insn::Ja { off: r.off as i32 },
                    0x00 => Insn::Ja { off: r.imm }, // gotol
                    0x80 if is64 && r.code & 0x08 == 0 => match r.src {
                        0 => Insn::Call {
                            helper: r.imm as u32,
                        },
                        PSEUDO_CALL => Insn::CallLocal { off: r.imm },
                        PSEUDO_KFUNC_CALL => Insn::Kfunc { id: r.imm as u32 },
                        s => return Err(err(format!("call of unknown kind {s}"))),
                    },
                    0x90 if is64 => Insn::Exit,
                    code => {
                        let op = match code {
                            0x10 => JmpOp::Eq,
                            0x20 => JmpOp::Gt,
                            0x30 => JmpOp::Ge,
                            0x40 => JmpOp::Set,
                            0x50 => JmpOp::Ne,
                            0x60 => JmpOp::Sgt,
                            0x70 => JmpOp::Sge,
                            0xa0 => JmpOp::Lt,
                            0xb0 => JmpOp::Le,
                            0xc0 => JmpOp::Slt,
                            0xd0 => JmpOp::Sle,
                            _ => return Err(err("unknown jump operation".into())),
                        };
                        Insn::Jmp {
                            op,
                            is64,
                            dst: reg(r.dst, "destination")?,
                            src,
                            off: r.off,
                        }
                    }
                }
            }
            CLS_LDX => {
                let signed = match r.code & 0xe0 {
                    0x60 => false,
                    0x80 => true,
                    _ => return Err(err("unknown load mode".into())),
                };
                let dst = reg(r.dst, "destination")?;
                if dst == 10 {
                    return Err(err("writes the read-only frame pointer r10".into()));
                }
                Insn::Ldx {
                    size: size_of(r.code),
                    dst,
                    src: reg(r.src, "source")?,
                    off: r.off,
                    signed,
                }
            }
            CLS_ST | CLS_STX => {
                let size = size_of(r.code);
                let dst = reg(r.dst, "destination")?;
                match (cls, r.code & 0xe0) {
                    (CLS_ST, 0x60) => Insn::St {
                        size,
                        dst,
                        src: Src::Imm(r.imm),
                        off: r.off,
                    },
                    (CLS_STX, 0x60) => Insn::St {
                        size,
                        dst,
                        src: Src::Reg(reg(r.src, "source")?),
                        off: r.off,
                    },
                    (CLS_STX, 0xc0) => {
                        if !matches!(size, Size::W | Size::DW) {
                            return Err(err("atomic operation on 1 or 2 bytes".into()));
                        }
                        let (op, fetch) = match r.imm {
                            0x00 => (AtomicOp::Add, false),
                            0x01 => (AtomicOp::Add, true),
                            0x40 => (AtomicOp::Or, false),
                            0x41 => (AtomicOp::Or, true),
                            0x50 => (AtomicOp::And, false),
                            0x51 => (AtomicOp::And, true),
                            0xa0 => (AtomicOp::Xor, false),
                            0xa1 => (AtomicOp::Xor, true),
                            0xe1 => (AtomicOp::Xchg, true),
                            0xf1 => (AtomicOp::CmpXchg, true),
                            x => return Err(err(format!("unknown atomic operation {x:#x}"))),
                        };
                        Insn::Atomic {
                            op,
                            size,
                            dst,
                            src: reg(r.src, "source")?,
                            off: r.off,
                            fetch,
                        }
                    }
                    _ => return Err(err("unknown store mode".into())),
                }
            }
            CLS_LD => match r.code {
                0x18 => {
                    let Some(hi) = raw.get(pc + 1) else {
                        return Err(err("LD_IMM64 without its second slot".into()));
                    };
                    if hi.code != 0 {
                        return Err(err("LD_IMM64 second slot is not empty".into()));
                    }
                    let dst = reg(r.dst, "destination")?;
                    let imm = match r.src {
                        0 => Imm64::Const((r.imm as u32 as u64) | ((hi.imm as u32 as u64) << 32)),
                        PSEUDO_MAP_FD => {
                            Imm64::Map(map_index(r.imm).ok_or_else(|| {
                                err(format!("reference to unknown map {}", r.imm))
                            })?)
                        }
                        PSEUDO_MAP_VALUE => Imm64::MapValue {
                            map: map_index(r.imm).ok_or_else(|| {
                                err(format!("reference to unknown map {}", r.imm))
                            })?,
                            off: hi.imm as u32,
                        },
                        PSEUDO_FUNC => {
                            let t = pc as i64 + 1 + r.imm as i64;
                            if t < 0 || t as usize >= raw.len() || t as usize == pc + 1 {
                                return Err(err(format!(
                                    "the address of instruction {t} (BPF_PSEUDO_FUNC), which \
                                     is not an instruction of the program"
                                )));
                            }
                            Imm64::Func(t as u32)
                        }
                        s => return Err(err(format!("LD_IMM64 of unsupported kind {s}"))),
                    };
                    out.push(Some(Insn::LdImm64 { dst, imm }));
                    out.push(None);
                    pc += 2;
                    continue;
                }
                0x20 | 0x28 | 0x30 | 0x40 | 0x48 | 0x50 => Insn::LdAbs,
                _ => return Err(err("unknown opcode".into())),
            },
            _ => unreachable!(),
        };
        if matches!(insn, Insn::LdAbs) {
            return Err(DecodeError {
                pc,
                code: r.code,
                what: "legacy packet access (LD_ABS/LD_IND) is not valid in XDP".into(),
            });
        }
        out.push(Some(insn));
        pc += 1;
    }
    Ok(out)
}

/// `dst op src` with eBPF semantics (32-bit operations zero-extend their result; division by
/// zero gives 0 and modulo by zero leaves `dst`, as the kernel defines).
pub fn alu(op: AluOp, is64: bool, dst: u64, src: u64) -> u64 {
    if is64 {
        let sh = (src & 63) as u32;
        match op {
            AluOp::Add => dst.wrapping_add(src),
            AluOp::Sub => dst.wrapping_sub(src),
            AluOp::Mul => dst.wrapping_mul(src),
            AluOp::Div => dst.checked_div(src).unwrap_or(0),
            AluOp::Mod => dst.checked_rem(src).unwrap_or(dst),
            AluOp::Or => dst | src,
            AluOp::And => dst & src,
            AluOp::Xor => dst ^ src,
            AluOp::Lsh => dst << sh,
            AluOp::Rsh => dst >> sh,
            AluOp::Arsh => ((dst as i64) >> sh) as u64,
            AluOp::Neg => (dst as i64).wrapping_neg() as u64,
            AluOp::Mov => src,
        }
    } else {
        let (d, s) = (dst as u32, src as u32);
        let sh = s & 31;
        (match op {
            AluOp::Add => d.wrapping_add(s),
            AluOp::Sub => d.wrapping_sub(s),
            AluOp::Mul => d.wrapping_mul(s),
            AluOp::Div => d.checked_div(s).unwrap_or(0),
            AluOp::Mod => d.checked_rem(s).unwrap_or(d),
            AluOp::Or => d | s,
            AluOp::And => d & s,
            AluOp::Xor => d ^ s,
            AluOp::Lsh => d << sh,
            AluOp::Rsh => d >> sh,
            AluOp::Arsh => ((d as i32) >> sh) as u32,
            AluOp::Neg => (d as i32).wrapping_neg() as u32,
            AluOp::Mov => s,
        }) as u64
    }
}

/// The value of an immediate operand as the instruction sees it (sign-extended to 64 bits).
pub fn imm_value(imm: i32) -> u64 {
    imm as i64 as u64
}

/// Byte swap as `End` performs it.
pub fn endian(v: u64, bits: u32, to_be: bool) -> u64 {
    // The host (and BPF's default) is little-endian: to-LE only truncates.
    match (bits, to_be) {
        (16, true) => (v as u16).swap_bytes() as u64,
        (32, true) => (v as u32).swap_bytes() as u64,
        (64, true) => v.swap_bytes(),
        (16, false) => v as u16 as u64,
        (32, false) => v as u32 as u64,
        _ => v,
    }
}

/// Whether a conditional jump is taken.
pub fn jmp_taken(op: JmpOp, is64: bool, a: u64, b: u64) -> bool {
    let (a, b, sa, sb) = if is64 {
        (a, b, a as i64, b as i64)
    } else {
        (
            a as u32 as u64,
            b as u32 as u64,
            a as u32 as i32 as i64,
            b as u32 as i32 as i64,
        )
    };
    match op {
        JmpOp::Eq => a == b,
        JmpOp::Ne => a != b,
        JmpOp::Gt => a > b,
        JmpOp::Ge => a >= b,
        JmpOp::Lt => a < b,
        JmpOp::Le => a <= b,
        JmpOp::Set => a & b != 0,
        JmpOp::Sgt => sa > sb,
        JmpOp::Sge => sa >= sb,
        JmpOp::Slt => sa < sb,
        JmpOp::Sle => sa <= sb,
    }
}

impl Insn {
    /// Jump target of a taken branch at `pc`, if the instruction branches.
    pub fn branch_target(&self, pc: usize) -> Option<usize> {
        match *self {
            Insn::Ja { off } => Some((pc as i64 + 1 + off as i64) as usize),
            Insn::Jmp { off, .. } => Some((pc as i64 + 1 + off as i64) as usize),
            _ => None,
        }
    }
    /// Slots the instruction occupies.
    pub fn width(&self) -> usize {
        if matches!(self, Insn::LdImm64 { .. }) {
            2
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(bytes: [u8; 8]) -> Result<Insn, DecodeError> {
        let raw = Raw::slots(&bytes)?;
        Ok(decode(&raw, &|_| None)?[0].unwrap())
    }

    #[test]
    fn decodes_common_instructions() {
        // r0 = 2 (mov64 imm)
        assert_eq!(
            one([0xb7, 0x00, 0, 0, 2, 0, 0, 0]).unwrap(),
            Insn::Alu {
                op: AluOp::Mov,
                is64: true,
                dst: 0,
                src: Src::Imm(2)
            }
        );
        // if r2 > r3 goto +5
        assert_eq!(
            one([0x2d, 0x32, 5, 0, 0, 0, 0, 0]).unwrap(),
            Insn::Jmp {
                op: JmpOp::Gt,
                is64: true,
                dst: 2,
                src: Src::Reg(3),
                off: 5
            }
        );
        assert_eq!(one([0x95, 0, 0, 0, 0, 0, 0, 0]).unwrap(), Insn::Exit);
        assert_eq!(
            one([0x85, 0, 0, 0, 1, 0, 0, 0]).unwrap(),
            Insn::Call { helper: 1 }
        );
    }

    #[test]
    fn rejects_unknown_and_bad_encodings() {
        let e = one([0xff, 0, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("unknown"), "{e}");
        let e = one([0xb7, 0x0b, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("r11"), "{e}");
        assert!(Raw::slots(&[0; 12]).is_err());
        // LD_IMM64 cut short.
        assert!(one([0x18, 0, 0, 0, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn alu_semantics() {
        assert_eq!(alu(AluOp::Add, false, u32::MAX as u64, 1), 0);
        assert_eq!(alu(AluOp::Div, true, 7, 0), 0);
        assert_eq!(alu(AluOp::Mod, true, 7, 0), 7);
        assert_eq!(alu(AluOp::Arsh, true, (-8i64) as u64, 1), (-4i64) as u64);
        assert!(jmp_taken(JmpOp::Slt, false, 0xffff_ffff, 0));
        assert!(!jmp_taken(JmpOp::Lt, false, 0xffff_ffff, 0));
        assert_eq!(endian(0x1234, 16, true), 0x3412);
    }
}
