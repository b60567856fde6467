"""The differential soundness test of the XDP analyzer (issue 17, §0): the path the interpreter
takes must be one the analysis finds satisfiable.

For every program of the suite and of tests/xdp (the objects `make xdp-suite` builds), and for
random and mutated packets with random map contents, the core (`nicsim_xdp::differential`,
through `_core.XdpDifferential`) runs the packet through the interpreter, follows the
instructions it executed through the graph the search enumerates, and builds that path's query
as the search builds it, with the concrete case as its witness (the received length and bytes
asserted, every modelled map's initial values and presence bits defined as the case's). Here the
solver checks it:

- unsat: a real packet takes a path the analysis would refute, so the guarantee can be wrong (a
  soundness bug). The test fails with the path, the packet (hex), the maps and the unsat core's
  assertions (from Z3, its terms expanded), after shrinking the case (map entries removed, the
  packet shortened and its bytes zeroed while it still fails the same way);
- no path of the graph follows the trace: a bug of another kind (the graph left out a feasible
  edge), reported as such (`split`: the split by constants did; `graph`: the abstract
  interpretation's decided branches did);
- the path is satisfiable but its return value cannot be the interpreter's: the analysis would
  name a wrong XDP action for its example;
- the packet is shorter than the minimum the graph gives the path (the largest length its bounds
  checks guarantee, from the abstract interpretation): the bit-rate search takes that for a lower
  bound of the path's packets, so its guarantee could be too high.

Each case that follows a path with map lookups is followed by cases with the keys it looked up
present (as the model gives them), so that lookups hit too. Cases the interpreter cannot finish
(a fault) and traces past the --loop-bound the test gives a program are not checked; a check the
solver gives up on fails the test.

Short mode (`make test`): SHORT_CASES cases per program. Long mode (`make fuzz-xdp`):
NICSIM_DIFF_ITERS cases per program. NICSIM_DIFF_SEED (default 1) seeds the cases: the same seed
gives the same cases. NICSIM_DIFF_SOLVER: bitwuzla (default, as the analysis) or z3.
NICSIM_DIFF_PROGRAMS: a comma-separated subset of the programs.
"""

from __future__ import annotations

import json
import os
import random
import re
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, xdp_object

SHORT_CASES = 16
ITERS = int(os.environ.get("NICSIM_DIFF_ITERS", "0") or 0)
SEED = os.environ.get("NICSIM_DIFF_SEED", "1")
SOLVER = os.environ.get("NICSIM_DIFF_SOLVER", "bitwuzla")
ONLY = {p for p in os.environ.get("NICSIM_DIFF_PROGRAMS", "").split(",") if p}
#: Instructions a run may execute (the suite's longest paths are a few tens of thousands).
MAX_INSNS = 1_000_000
#: Paths matched per trace (more than one only where a branch's two edges reach the same
#: instruction).
MAX_PATHS = 8
#: Rounds of "the keys the last case looked up, now present" after each generated case.
HIT_ROUNDS = 2
#: Solver time per check (seconds); a check that runs out is reported as inconclusive.
CHECK_TIMEOUT_S = 60.0
#: Shrinking stops after this many checks, or this many seconds.
SHRINK_CHECKS, SHRINK_S = 3000, 300.0

#: Programs the analysis refuses by design, and what it says (checked, so the list stays true).
REFUSED = {
    "call_fanout": "would exceed",
    "ld_extern_other": "link the objects first",
    "no_exit": "no path from the entry reaches an exit",
    "ld_kfunc_unknown": "kfunc bpf_nicsim_no_such_kfunc is not supported: supported kfuncs: ",
    "mim_devmap": "bpf_redirect_map on an inner map of 'ports'",
    "ld_maps_unspec": "has type 0 (BPF_MAP_TYPE_UNSPEC)",
    "kf_dynptr_moved": "is not supported in a program that also calls bpf_xdp_adjust_head",
    "ld_ksym_typed": "extern variable 'runqueues' (__ksym) is a typed kernel symbol",
    "lpm_update": "models a program's lookups of an LPM trie only",
}
#: Per program: the sections to check (default: the only one), the --loop-bound, a byte that
#: packets carry early in half the cases (loops that walk to a 0xff byte, so that they stay
#: within the bound the analysis was given), and the cases of the short mode (default
#: SHORT_CASES).
OPTIONS: dict[str, dict[str, Any]] = {
    "two_progs": {"sections": ["first", "second"]},
    # Tail calls: the entry programs (their targets are analysed as part of them) and a target alone.
    "tail_lb": {"sections": ["tail_lb", "lb_slow"]},
    "tail_unknown": {"sections": ["tail_unknown"]},
    # A chain's second object (tests/test_xdp_chains.py links it into chain_root): both its programs.
    "chain_next": {"sections": ["chain_next", "chain_tx"]},
    "ld_sections": {"sections": ["xdp_fwd", "xdp_icmp", "xdp_sock"]},
    "loop_nobound": {"loop_bound": 200, "stop_byte": (0xFF, 150)},
    # Its root alone is unbounded (an undeclared prog array; crates/nicsim-xdp/tests/chains.rs links
    # the walker into a slot its index never names): the walker, loop_nobound's loop.
    "tail_dead_slot": {"sections": ["walker"], "loop_bound": 200, "stop_byte": (0xFF, 150)},
    # Each case runs a thousand inner iterations per byte: fewer cases in the short mode.
    "loop_nested": {"loop_bound": 2, "stop_byte": (0xFF, 3), "short_cases": 4},
    # bpf_loop with nr_loops from the packet (bytes 14-17): cases past 4 calls are not checked.
    "loop_cb_pktlen": {"loop_bound": 4},
    # bpf_iter_num with its count from the packet (bytes 14-17): cases past 4 iterations are not checked.
    "kf_iter_pktlen": {"loop_bound": 4},
    # __kconfig externs: a configuration of the test's own, not the machine's.
    "ld_kconfig": {"kconfig": "CONFIG_HZ=1000\nCONFIG_BPF_SYSCALL=y\n"},
}


def _objects() -> list[str]:
    from nicsim.xdp.build import objects

    names = sorted(objects(extra=[ROOT / "tests" / "xdp"]))
    return [n for n in names if not ONLY or n in ONLY]


def _programs() -> list[tuple[str, str | None]]:
    return [(n, s) for n in _objects() if n not in REFUSED for s in OPTIONS.get(n, {}).get("sections", [None])]


# ---------------------------------------------------------------------------------------------
# Packets
# ---------------------------------------------------------------------------------------------


def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _eth(rng: random.Random, ethertype: int, payload: bytes, vlan: bool = False) -> bytes:
    dst = rng.choice([b"\xff" * 6, bytes.fromhex("02000000000b"), rng.randbytes(6)])
    src = bytes.fromhex("02000000000a") if rng.random() < 0.5 else rng.randbytes(6)
    tags = b""
    if vlan:
        tags = struct.pack("!HH", rng.choice([0x8100, 0x88A8]), rng.randrange(4096))
        if rng.random() < 0.3:
            tags += struct.pack("!HH", 0x8100, rng.randrange(4096))
    return dst + src + tags + struct.pack("!H", ethertype) + payload


def _ipv4(rng: random.Random, proto: int, payload: bytes, daddr: bytes | None = None) -> bytes:
    saddr = rng.choice([bytes([10, 0, 0, 1]), rng.randbytes(4)])
    daddr = daddr or rng.choice([bytes([192, 0, 2, 10]), bytes([10, 0, 0, 2]), rng.randbytes(4)])
    ttl = rng.choice([64, 30, 29, 128, 255, 1])
    frag = rng.choice([0x4000, 0x4000, 0, 0x2000, 0x0010])
    head = struct.pack("!BBHHHBBH4s4s", 0x45, rng.choice([0, 0, 0x10, 0xB8]), 20 + len(payload),
                       rng.randrange(1 << 16), frag, ttl, proto, 0, saddr, daddr)
    return head[:10] + struct.pack("!H", _csum(head)) + head[12:] + payload


def _ipv6(rng: random.Random, nh: int, payload: bytes) -> bytes:
    ext = b""
    if rng.random() < 0.2:  # a hop-by-hop or destination options header first
        ext, nh = struct.pack("!BB6s", nh, 0, bytes(6)), rng.choice([0, 60])
    body = ext + payload
    return struct.pack("!IHBB16s16s", 0x60000000 | rng.randrange(1 << 20), len(body), nh, 64,
                       bytes.fromhex("20010db8") + rng.randbytes(12), bytes.fromhex("20010db8") + rng.randbytes(12)) + body


def _udp(rng: random.Random, dport: int, payload: bytes) -> bytes:
    return struct.pack("!HHHH", rng.randrange(1024, 65536), dport, 8 + len(payload), 0) + payload


def _tcp(rng: random.Random, dport: int, payload: bytes, syn_options: bool = False) -> bytes:
    opts = b""
    if syn_options:  # MSS, SACK permitted, timestamps, NOP, window scale: 20 bytes
        opts = bytes.fromhex("020405b40402080a") + rng.randbytes(8) + bytes.fromhex("01030307")
    flags = 0x02 if syn_options or rng.random() < 0.3 else rng.choice([0x10, 0x18, 0x12, 0x11])
    return struct.pack("!HHIIBBHHH", rng.randrange(1024, 65536), dport, rng.randrange(1 << 32), 0,
                       (5 + len(opts) // 4) << 4, flags, 65535, 0, 0) + opts + payload


def _dns_query(rng: random.Random) -> bytes:
    labels = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
                    for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(1, 3))]
    name = b"".join(bytes([len(x)]) + x for x in labels) + b"\0"
    return struct.pack("!HHHHHH", rng.randrange(1 << 16), 0x0100, 1, 0, 0, 0) + name + b"\0\x01\0\x01"


def _rtp(rng: random.Random) -> bytes:
    b0 = 0x80 | (rng.random() < 0.2) * 0x10
    ext = struct.pack("!HH", 0xBEDE, 1) + rng.randbytes(4) if b0 & 0x10 else b""
    return struct.pack("!BBHII", b0, 8, rng.randrange(1 << 16), rng.randrange(1 << 32), rng.randrange(1 << 32)) + ext + \
        rng.randbytes(rng.choice([20, 80, 160, 240]))


def _quic(rng: random.Random) -> bytes:
    if rng.random() < 0.5:  # long header: version, DCID length, DCID
        n = rng.choice([9, 8, 20, 21])
        return bytes([0xC0 | rng.randrange(64)]) + struct.pack("!I", 1) + bytes([n]) + rng.randbytes(n) + rng.randbytes(40)
    return bytes([0x40 | rng.randrange(64)]) + rng.randbytes(9) + rng.randbytes(40)


def _l4(rng: random.Random) -> tuple[int, bytes]:
    """(IP protocol, L4 header and payload)."""
    r = rng.random()
    if r < 0.15:
        return 6, _tcp(rng, rng.choice([80, 443, rng.randrange(65536)]), rng.randbytes(rng.choice([0, 0, 10, 100])))
    if r < 0.25:
        return 6, _tcp(rng, 80, b"", syn_options=True)
    if r < 0.35:
        return 1, struct.pack("!BBHHH", 8, 0, 0, rng.randrange(1 << 16), 1) + rng.randbytes(rng.choice([0, 8, 56]))
    payload, port = rng.choice([
        (_dns_query, 53), (_rtp, rng.randrange(16384, 32768)), (_quic, 443), (lambda g: g.randbytes(g.randrange(64)), 4789),
        (lambda g: g.randbytes(g.randrange(200)), rng.randrange(65536)),
    ])
    if port == 4789:  # VXLAN: flags, VNI, then an inner Ethernet frame
        inner = _eth(rng, 0x0800, _ipv4(rng, 17, _udp(rng, 53, _dns_query(rng))))
        return 17, _udp(rng, port, bytes.fromhex("0800000000000100") + inner)
    return 17, _udp(rng, port, payload(rng))


def well_formed(rng: random.Random) -> bytes:
    """An Ethernet frame of one of the kinds the suite parses: IPv4 or IPv6 (perhaps behind
    VLAN tags or MPLS labels) with TCP, UDP (DNS, RTP, QUIC, VXLAN, other) or ICMP; or ARP."""
    r = rng.random()
    proto, l4 = _l4(rng)
    if r < 0.55:
        pkt = _eth(rng, 0x0800, _ipv4(rng, proto, l4), vlan=rng.random() < 0.15)
    elif r < 0.85:
        pkt = _eth(rng, 0x86DD, _ipv6(rng, 58 if proto == 1 else proto, l4), vlan=rng.random() < 0.15)
    elif r < 0.95:
        labels = struct.pack("!I", (rng.randrange(1 << 20) << 12) | (1 << 8) | 64)
        if rng.random() < 0.5:
            labels = struct.pack("!I", (rng.randrange(1 << 20) << 12) | 64) + labels
        pkt = _eth(rng, 0x8847, labels + _ipv4(rng, proto, l4))
    else:
        pkt = _eth(rng, 0x0806, bytes.fromhex("0001080006040001") + rng.randbytes(20))
    return pkt.ljust(60, b"\0") if rng.random() < 0.8 else pkt


def mutate(rng: random.Random, pkt: bytes) -> bytes:
    """A few changes: bytes set (near the front more often; random, or 0x00, 0xff, 0x7f, 0x80),
    bits flipped, the packet cut short or extended."""
    p = bytearray(pkt)
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        i = min(int(rng.expovariate(1 / 40)), len(p) - 1)
        if r < 0.35:
            p[i] = rng.randrange(256)
        elif r < 0.6:
            p[i] = rng.choice([0, 0xFF, 0x7F, 0x80, 1])
        elif r < 0.8:
            p[i] ^= 1 << rng.randrange(8)
        elif r < 0.9 and len(p) > 14:
            del p[rng.randint(14, len(p) - 1):]
        else:
            p += rng.randbytes(rng.randint(1, 64))
    return bytes(p[:1514])


def packet(rng: random.Random, opts: dict[str, Any]) -> bytes:
    """Random bytes (14 to 1514 of them) a quarter of the time, else a well-formed packet,
    mostly mutated."""
    if rng.random() < 0.25:
        p = bytearray(rng.randbytes(rng.choice([rng.randint(14, 64), rng.randint(14, 1514)])))
    else:
        p = bytearray(well_formed(rng))
        if rng.random() < 0.75:
            p = bytearray(mutate(rng, bytes(p)))
    if rng.random() < 0.1:  # short packets: just an Ethernet header, or a little more
        del p[rng.randint(14, 34):]
    if "stop_byte" in opts and rng.random() < 0.5:
        b, within = opts["stop_byte"]
        p[rng.randrange(min(within, len(p)))] = b
    return bytes(p)


# ---------------------------------------------------------------------------------------------
# Map contents
# ---------------------------------------------------------------------------------------------

#: Map types whose keys are indices below max_entries (array, percpu array, devmap, cpumap,
#: xskmap).
INDEXED = {2, 6, 12, 14, 16, 17}  # array, percpu_array, array_of_maps, devmap, cpumap, xskmap


def writable_maps(maps: dict[str, Any]) -> dict[str, Any]:
    """The maps a case fills: modelled by the interpreter, not global data (their sections'
    contents stay), with room for entries."""
    return {n: m for n, m in maps.items() if m["modelled"] and not n.startswith(".") and not m["read_only"]
            and m["max_entries"] > 0 and m["key_size"] > 0}


def _value(rng: random.Random, size: int, pkt: bytes) -> bytes:
    if size > 4096:  # a large value (a sketch's array): zeros but for a few bytes anywhere
        v = bytearray(size)
        for _ in range(rng.randint(0, 64)):
            v[rng.randrange(size)] = rng.randrange(256)
        return bytes(v)
    r = rng.random()
    if r < 0.2:
        return bytes(size)
    if r < 0.4 and pkt:  # a window of the packet: values that match what the program parsed
        start = rng.randrange(len(pkt))
        return (pkt[start:] + pkt)[:size].ljust(size, b"\0")
    if r < 0.55:  # small numbers in the first words (lengths, counts, indices)
        v = bytearray(rng.randbytes(size))
        for i in range(0, min(size, 16), 4):
            v[i:i + 4] = rng.randrange(64).to_bytes(4, "little")[: len(v[i:i + 4])]
        return bytes(v)
    return rng.randbytes(size)


#: lpm_trie: keys `{u32 prefixlen; u8 data[]}`, the prefix at most the data's bits.
LPM_TRIE = 11


def _key(rng: random.Random, m: dict[str, Any]) -> bytes:
    if m["map_type"] == LPM_TRIE and m["key_size"] > 4:
        return rng.randrange(8 * (m["key_size"] - 4) + 1).to_bytes(4, "little") + rng.randbytes(m["key_size"] - 4)
    if m["map_type"] in INDEXED:
        return rng.randrange(m["max_entries"]).to_bytes(4, "little")[: m["key_size"]].ljust(m["key_size"], b"\0")
    return rng.randbytes(m["key_size"])


def random_maps(rng: random.Random, maps: dict[str, Any], pkt: bytes,
                hits: list[tuple[str, bytes]] | None = None) -> dict[str, dict[str, str]]:
    """Entries for each writable map: none half the time, else up to three random keys; and,
    each with probability 0.8, the keys of `hits` (a previous case's lookups)."""
    out: dict[str, dict[str, str]] = {}
    for name, m in writable_maps(maps).items():
        entries: dict[str, str] = {}
        room = m["max_entries"]
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, min(3, room))):
                entries[_key(rng, m).hex()] = _value(rng, m["value_size"], pkt).hex()
        for hname, key in hits or []:
            if hname == name and rng.random() < 0.8 and (len(entries) < room or key.hex() in entries):
                if m["map_type"] not in INDEXED or int.from_bytes(key[:4].ljust(4, b"\0"), "little") < room:
                    entries[key.hex()] = _value(rng, m["value_size"], pkt).hex()
        if entries:
            out[name] = {"entries": entries}
    return out


# ---------------------------------------------------------------------------------------------
# Checking a case
# ---------------------------------------------------------------------------------------------


@dataclass
class Verdict:
    """`ok`, a failure (`unsat`, `no_path`, `retval`, `min_len`) or a case not checked (`fault`,
    `loop_bound`, `unknown`)."""

    kind: str
    case: dict[str, Any] = field(default_factory=dict)
    #: The keys the path looked up (map, key bytes), from the model (`ok` only).
    lookups: list[tuple[str, bytes]] = field(default_factory=list)
    #: The path's query (`unsat`, `retval`).
    query: dict[str, Any] | None = None

    @property
    def failed(self) -> bool:
        return self.kind in ("unsat", "no_path", "retval", "min_len")


def _solver(name: str = SOLVER) -> Any:
    from nicsim.xdp.solver import SOLVERS

    return SOLVERS[name]()


def check(diff: Any, slv: Any, pkt: bytes, maps: dict[str, Any]) -> Verdict:
    """Run one case and check the path it takes (see the module's comment)."""
    c = json.loads(diff.case(pkt, json.dumps(maps), MAX_INSNS, MAX_PATHS))
    if c["kind"] == "fault":
        return Verdict("fault", c)
    if c["kind"] == "no_path":
        return Verdict("loop_bound" if c["beyond_loop_bound"] else "no_path", c)
    verdict = Verdict("unsat", c, query=c["paths"][0])
    for q in c["paths"]:
        res = slv.check(q["smt"], timeout_s=CHECK_TIMEOUT_S)
        if res == "unknown":
            slv.done()
            verdict = Verdict("unknown", c, query=q)
            continue
        if res == "unsat":
            slv.done()
            continue
        keys = slv.values([lk["key"] for lk in q["lookups"]])
        lookups = [(lk["map"], int(k).to_bytes(max(lk["key_size"], 1), "little"))
                   for lk, k in zip(q["lookups"], keys, strict=True)]
        ret = c["retval"] & 0xFFFFFFFF
        res = slv.check_also(f"(assert (= ((_ extract 31 0) {q['ret']}) #x{ret:08x}))\n", timeout_s=CHECK_TIMEOUT_S)
        slv.done()
        slv.done()
        if res == "unsat":
            return Verdict("retval", c, lookups, q)
        if len(pkt) < q["min_len"]:
            return Verdict("min_len", c, lookups, q)
        return Verdict("ok", c, lookups)
    return verdict


# ---------------------------------------------------------------------------------------------
# Reporting a failure
# ---------------------------------------------------------------------------------------------

_TERM = re.compile(r"\bt[0-9a-f]{16}\b")


def _sexp_end(text: str) -> int:
    """Where the parenthesised group that `text` starts with ends (the index after it)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return i + 1
    return len(text)


def _definitions(smt: str) -> dict[str, str]:
    """The query's named terms: `(define-fun NAME () SORT BODY)` → {NAME: BODY}."""
    defs = {}
    for line in smt.splitlines():
        if line.startswith("(define-fun "):
            name, rest = line[len("(define-fun "):].split(" () ", 1)
            # The sort is one token or one parenthesised group; the body is the rest.
            body = rest[_sexp_end(rest):] if rest.startswith("(") else rest.split(" ", 1)[1]
            defs[name] = body.strip()[:-1]
    return defs


def expand(text: str, defs: dict[str, str], limit: int = 600) -> str:
    """`text` with the query's named terms replaced by their definitions, one at a time, while it
    stays under `limit` characters."""
    grew = True
    while grew:
        grew = False
        for n in dict.fromkeys(_TERM.findall(text)):
            if n in defs:
                grown = re.sub(rf"\b{n}\b", lambda _m, n=n: defs[n], text)
                if len(grown) <= limit:
                    text, grew = grown, True
    return text


def unsat_core(q: dict[str, Any]) -> list[str]:
    """The unsat core of `q`'s query, from Z3 (which names every assertion, the witness's too),
    minimised, each assertion with its text: branch conditions with their instruction and source
    line, terms expanded; witness assertions grouped."""
    from nicsim.xdp.solver import Z3

    z = Z3()
    z._eval("(set-option :smt.core.minimize true)")
    res = z.check(q["smt"], timeout_s=120)
    if res != "unsat":
        return [f"(z3 says {res}: the solvers disagree)"]
    names = z.core()
    z.done()
    defs = _definitions(q["smt"])
    branches = {a[0]: a for a in q["asserts"]}
    witness = dict(q["witness"]["asserts"])
    out, pkt_bytes = [], []
    for n in names:
        if n in branches:
            _, cond, pc, line = branches[n]
            out.append(f"{n} (insn {pc}{', ' + line if line else ''}): {expand(cond, defs)}")
        elif n.startswith("w_pkt"):
            pkt_bytes.append(int(n[5:]))
        elif n in witness:
            out.append(f"{n}: {witness[n][:200]}")
        else:
            out.append(n)
    if pkt_bytes:
        out.append(f"w_pkt: the packet's bytes {', '.join(map(str, sorted(pkt_bytes)))}")
    if q["witness"]["defines"]:
        out.append(f"(and the maps' initial contents, defined as the case's: {', '.join(d[0] for d in q['witness']['defines'])})")
    return out


def describe(name: str, v: Verdict, pkt: bytes, maps: dict[str, Any], shrunk: str) -> str:
    c = v.case
    what = {
        "unsat": "SOUNDNESS BUG: the path the interpreter takes is refuted (its query is unsat with the concrete case)",
        "no_path": "SOUNDNESS BUG: no path of the analysis's graph follows the interpreter's trace",
        "retval": "the path is satisfiable but its return value cannot be the interpreter's",
        "min_len": "SOUNDNESS BUG (bit rate): the packet is shorter than the graph says the path's bounds checks need",
    }[v.kind]
    lines = [f"{name}: {what}", f"  packet ({len(pkt)} bytes): {pkt.hex()}", f"  maps: {json.dumps(maps)}",
             f"  interpreter: retval {c.get('retval')}, {c.get('trace_len')} instructions", f"  {shrunk}"]
    if v.kind == "no_path":
        lines.append(f"  the {c['graph']} graph follows {c['matched']} instructions, then has no way from "
                     f"insn {c['at_pc']} ({c.get('line') or 'no line'}) to {c['next_pc']}"
                     + (" (split by constants: consts.rs)" if c["graph"] == "split" else " (cfg/absint)"))
    else:
        q = v.query or {}
        lines.append(f"  path: {q.get('edges')} edges, {len(q.get('asserts', []))} branch assertions")
        if v.kind == "min_len":
            pc, line = q["min_len_at"]
            lines.append(f"  the graph's minimum packet for the path: {q['min_len']} bytes, from insn {pc} "
                         f"({line or 'no line'}); the packet has {len(pkt)}")
        if v.kind == "unsat":
            lines.append("  unsat core:")
            lines += [f"    {x}" for x in unsat_core(q)]
    return "\n".join(lines)


def shrink(diff: Any, slv: Any, kind: str, pkt: bytes, maps: dict[str, Any]) -> tuple[bytes, dict[str, Any], Verdict, str]:
    """The case made smaller while it fails the same way: map entries removed, the packet cut
    short, its bytes zeroed, map values zeroed."""
    t0, checks = time.monotonic(), 0
    best = check(diff, slv, pkt, maps)

    def fails(p: bytes, m: dict[str, Any]) -> bool:
        nonlocal best, checks
        if checks >= SHRINK_CHECKS or time.monotonic() - t0 > SHRINK_S:
            return False
        checks += 1
        v = check(diff, slv, p, m)
        if v.kind == kind:
            best = v
            return True
        return False

    n0 = len(pkt)
    for name in list(maps):
        for key in list(maps[name]["entries"]):
            m = json.loads(json.dumps(maps))
            del m[name]["entries"][key]
            if not m[name]["entries"]:
                del m[name]
            if fails(pkt, m):
                maps = m
    for n in sorted({14, 20, 34, 42, 54, 60, 64, 128, 256, 512, 1024, len(pkt) // 2}):
        if n < len(pkt) and fails(pkt[:n], maps):
            pkt = pkt[:n]
            break
    for step in (64, 16, 4, 1):
        while len(pkt) - step >= 14 and fails(pkt[:-step], maps):
            pkt = pkt[:-step]
    for step in (64, 16, 4, 1):
        for i in range(0, len(pkt), step):
            if any(pkt[i:i + step]):
                p = pkt[:i] + bytes(len(pkt[i:i + step])) + pkt[i + step:]
                if fails(p, maps):
                    pkt = p
    for name in list(maps):
        for key, val in list(maps[name]["entries"].items()):
            v = bytes.fromhex(val)
            for step in (16, 4, 1):
                for i in range(0, len(v), step):
                    if any(v[i:i + step]):
                        w = v[:i] + bytes(len(v[i:i + step])) + v[i + step:]
                        m = json.loads(json.dumps(maps))
                        m[name]["entries"][key] = w.hex()
                        if fails(pkt, m):
                            maps, v = m, w
    note = f"shrunk from {n0} bytes in {checks} checks ({time.monotonic() - t0:.0f} s)"
    return pkt, maps, best, note


# ---------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------


def _obj(name: str) -> Path:
    p = xdp_object(name)
    assert p.exists(), f"{p} is missing: run `make xdp-suite`"
    return p


#: Lookups in map types the nfp target has no cost for (the NFP offload has no such maps).
EXTRA_MAP_LOOKUPS = ("devmap", "devmap_hash", "cpumap", "xskmap")


def _extra_helpers(nfp: str) -> list[str]:
    """Every helper the interpreter implements that the nfp target has no cost for
    (crates/nicsim-xdp/src/helpers, `nicsim xdp helpers`): the test's target gives them one (costs
    do not change a path's query), so that programs using them are checked."""
    from nicsim import _core

    have = set(re.findall(r"^\"?([a-z_0-9.]+)\"? = ", nfp, flags=re.M))
    keys = [r["helper"].removeprefix("bpf_") for r in json.loads(_core.xdp_helper_rows())
            if r["interpreter"] and not r["refused"] and r["family"] != "control"]
    keys += [r["kfunc"].removeprefix("bpf_") for r in json.loads(_core.xdp_kfunc_rows()) if r["modelled"]]
    keys += [f"map_lookup_elem.{t}" for t in EXTRA_MAP_LOOKUPS]
    return [f'"{k}" = {{ cycles = 10.0, source = "the differential test" }}' for k in keys if k not in have]


def _target() -> tuple[str, str]:
    from nicsim.xdp.analyze import load_target

    text, name = load_target("nfp")
    tables = re.findall(r"^\[([^\]]+)\]", text, flags=re.M)
    assert tables[-1] == "helpers", tables  # the helpers' table is last: lines appended go into it
    extra = _extra_helpers(text)
    return text.rstrip() + "\n" + "\n".join(extra) + "\n", f"{name} (with {len(extra)} more helpers)"


def _differential(name: str, section: str | None) -> Any:
    from nicsim import _core

    text, tname = _target()
    return _core.XdpDifferential(_obj(name).read_bytes(), text, tname, section, OPTIONS.get(name, {}).get("loop_bound"))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_programs_left_out_are_refused_by_the_analysis(name: str) -> None:
    from nicsim import _core

    with pytest.raises(_core.InputError, match=re.escape(REFUSED[name])):
        _differential(name, None)


@pytest.mark.parametrize(("name", "section"), _programs(), ids=[n + (f":{s}" if s else "") for n, s in _programs()])
def test_every_path_the_interpreter_takes_is_satisfiable(name: str, section: str | None, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    opts = OPTIONS.get(name, {})
    if "kconfig" in opts:
        (tmp_path / "config").write_text(opts["kconfig"])
        monkeypatch.setenv("NICSIM_KCONFIG", str(tmp_path / "config"))
    diff = _differential(name, section)
    maps = json.loads(diff.maps())
    slv = _solver()
    rng = random.Random(f"{SEED}:{name}:{section}")
    n = ITERS or opts.get("short_cases", SHORT_CASES)
    counts: dict[str, int] = {}
    failures: dict[str, str] = {}
    paths: set[tuple[int, int]] = set()  # (retval, instructions) of the cases checked: paths, roughly
    for _ in range(n):
        pkt = packet(rng, opts)
        m = random_maps(rng, maps, pkt)
        for _round in range(1 + HIT_ROUNDS):
            v = check(diff, slv, pkt, m)
            counts[v.kind] = counts.get(v.kind, 0) + 1
            if v.kind == "ok":
                paths.add((v.case["retval"], v.case["trace_len"]))
            if v.failed and v.kind not in failures:
                p, mm, vv, note = shrink(diff, slv, v.kind, pkt, m)
                failures[v.kind] = describe(f"{name}{':' + section if section else ''}", vv, p, mm, note)
            # The keys this path looked up, now present (with new values), when any is not yet.
            todo = [(mname, k) for mname, k in v.lookups
                    if mname in writable_maps(maps) and k.hex() not in m.get(mname, {}).get("entries", {})]
            if v.kind != "ok" or not todo:
                break
            m = random_maps(rng, maps, pkt, hits=v.lookups)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f"; about {len(paths)} distinct paths"
    print(f"{name}: {summary}")
    assert not failures, "\n\n".join(failures.values()) + f"\n\n(cases: {summary}; seed {SEED})"
    assert counts.get("ok", 0) > 0, f"no case was checked ({summary})"
    assert not counts.get("unknown"), f"the solver gave up on some cases ({summary})"


class _Planted:
    """A differential check with a soundness bug planted: every path's query also asserts that
    the packet's byte 12 is not 0x08 (as a branch condition would)."""

    PLANTED = "(not (= (select pkt0 #x000000000000000c) #x08))"

    def __init__(self, diff: Any) -> None:
        self.diff = diff

    def case(self, packet: bytes, maps_json: str, max_insns: int, max_paths: int) -> str:
        c = json.loads(self.diff.case(packet, maps_json, max_insns, max_paths))
        for q in c.get("paths", []):
            q["smt"] += f"(assert (! {self.PLANTED} :named a999999))\n"
            q["asserts"].append(["a999999", self.PLANTED, 0, "planted.c:1: the planted bug"])
        return json.dumps(c)


def test_a_refuted_path_is_shrunk_and_reported() -> None:
    # The reporting of a failure, on a bug planted in the queries of the parser: a packet with
    # 0x08 at byte 12 takes a path the planted condition refutes.
    diff = _Planted(_differential("parser", None))
    slv = _solver()
    rng = random.Random(3)
    pkt = _eth(rng, 0x0800, _ipv4(rng, 17, _udp(rng, 53, _dns_query(rng))))
    assert check(diff, slv, pkt, {}).kind == "unsat"
    assert check(diff, slv, b"\0" * 60, {}).kind == "ok"
    small, m, v, note = shrink(diff, slv, "unsat", pkt, {})
    # The least the planted bug needs: byte 12, in the shortest packet the shrinking tries.
    assert small == bytes(12) + b"\x08\x00" and m == {} and v.kind == "unsat", small.hex()
    text = describe("parser", v, small, m, note)
    assert "SOUNDNESS BUG" in text and small.hex() in text and f"shrunk from {len(pkt)} bytes" in text
    # The core: the planted condition, and what makes byte 12 0x08 (a branch on the EtherType
    # here, or the witness's byte).
    assert f"a999999 (insn 0, planted.c:1: the planted bug): {_Planted.PLANTED}" in text, text
