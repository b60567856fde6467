"""Property-based tests (Hypothesis; issue 30): generated datapath and router configurations,
XDP and flow-memory targets and small captures, each run small.

The properties: a valid input runs to the end without a crash or an abort, and accounts for
every packet (offered = delivered + dropped + in flight; with an egress capture, every
delivered frame is in it; a capture's packets all have an outcome); an invalid one is refused
with one line naming its key. The generators draw from the fields' whole ranges (VLAN ids to
4095, ports to 65535, every ToS and TTL), so that what the checks accept is what runs.

`make test` runs a few dozen examples of each (a few hundred in all, about a minute);
`NICSIM_PROPERTY_EXAMPLES=N` (as `make fuzz-props` sets it) runs N of each instead.
"""

from __future__ import annotations

import copy
import math
import os
import struct
import tomllib
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import PAPER, ROOT, xdp_object  # noqa: E402

ROUTERS = [ROOT / "configs" / "router" / f"setup_{x}.toml" for x in "abcdef"]
NFP = ROOT / "crates" / "nicsim-xdp" / "targets" / "nfp.toml"
U250 = ROOT / "crates" / "nicsim-flowmem" / "targets" / "u250-microblaze.toml"


def examples(default: int) -> int:
    try:
        return max(1, int(os.environ["NICSIM_PROPERTY_EXAMPLES"]))
    except (KeyError, ValueError):
        return default


def props(default: int) -> Any:
    """Hypothesis settings: `default` examples (or NICSIM_PROPERTY_EXAMPLES), no deadline (a
    run's time varies with the machine's load), no example database (tests may run in
    parallel, and a failure is printed with its example)."""
    return settings(max_examples=examples(default), deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


def one_line(e: BaseException, *needles: str) -> None:
    """What the CLI would print: one line naming each needle."""
    msg = str(e)
    assert msg and "\n" not in msg.strip(), msg
    for n in needles:
        assert n in msg, (n, msg)


# --------------------------------------------------------------------------------------------
# Datapath configurations.

PAPER_CFG = tomllib.loads(PAPER.read_text())
OFFLOADS = [o["name"] for o in PAPER_CFG["offloads"]]
SIZES = [64, 65, 128, 256, 511, 512, 1024, 1500]


@st.composite
def flows(draw: Any, i: int) -> dict[str, Any]:
    f: dict[str, Any] = {
        "name": f"f{i}",
        "chain": draw(st.lists(st.sampled_from(OFFLOADS), min_size=0, max_size=4, unique=True)),
        "weight": draw(st.floats(0.1, 10)),
        "sport": draw(st.integers(0, 65535)),
        "dport": draw(st.integers(0, 65535)),
        "tos": draw(st.integers(0, 255)),
        "proto": draw(st.sampled_from(["tcp", "udp", "icmp", "17", "6"])),
        "priority": draw(st.integers(0, 7)),
    }
    if draw(st.booleans()):
        f["vlan"] = draw(st.integers(0, 4095))
    if draw(st.booleans()):  # IPv6 (the default addresses are IPv4)
        f["src"], f["dst"] = draw(st.sampled_from([("2001:db8::1", "2001:db8::2"), ("fe80::1", "::1")]))
    return f


@st.composite
def datapath_configs(draw: Any) -> dict[str, Any]:
    cfg = copy.deepcopy(PAPER_CFG)
    cfg["arch"] = draw(st.sampled_from(["flexpipe", "staticpipe", "panic"]))
    cfg["seed"] = draw(st.integers(0, 2**32 - 1))
    packets = draw(st.integers(20, 300))
    start = draw(st.integers(0, packets - 1))
    cfg["traffic"] = {
        "packets": packets,
        "rate_gbps": draw(st.floats(0.01, 150)),
        "arrivals": draw(st.sampled_from(["constant", "poisson"])),
        "size": {"dist": "uniform_set", "values": draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=4,
                                                                unique=True))},
    }
    cfg["measure"] = {"window": [start, draw(st.integers(start + 1, packets))]}
    for o in cfg["offloads"]:
        o["units"] = draw(st.integers(1, 4))
    n = draw(st.integers(1, 4))
    cfg["flows"] = [draw(flows(i)) for i in range(n)]
    return cfg


def pcap_records(path: Path) -> int:
    data = path.read_bytes()
    n, off = 0, 24
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        off += 16 + incl
        n += 1
    assert off == len(data), "the capture ends inside a record"
    return n


@props(80)
@given(cfg=datapath_configs())
def test_valid_datapath_configs_run_and_conserve(cfg: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    from nicsim.config import Config, validate
    from nicsim.datapath import simulate
    from nicsim.errors import NicsimError

    config = Config(cfg, source="generated.toml")
    try:
        validate(config)
    except NicsimError as e:  # a combination the model refuses: refused as the CLI reports it
        one_line(e, "generated.toml")
        return
    pcap = tmp_path_factory.mktemp("dp") / "egress.pcap"
    s = simulate(config, pcap, partial_on_interrupt=False)
    p = s["packets"]
    assert p["offered"] == cfg["traffic"]["packets"]
    assert p["offered"] == p["delivered"] + p["dropped_total"] + p["in_flight"], p
    assert sum(p["dropped"].values()) == p["dropped_total"]
    # Every delivered frame is in the egress capture (a frame missing there was the VLAN bug).
    assert pcap_records(pcap) == p["delivered"]


@props(30)
@given(cfg=datapath_configs(), bad=st.sampled_from([
    ("flows[0].vlan", st.integers(4096, 65535)),
    ("flows[0].sport", st.integers(65536, 2**40)),
    ("flows[0].dport", st.integers(-(2**40), -1)),
    ("flows[0].tos", st.integers(256, 65535)),
    ("flows[0].weight", st.sampled_from([-1.0, math.inf, math.nan])),
    ("traffic.packets", st.just(0)),
    ("measure.window", st.just([5, 5])),
    ("flows[0].src", st.just("not-an-address")),
    ("flows[0].chain", st.just(["no_such_offload"])),
]), data=st.data())
def test_invalid_datapath_configs_are_one_line(cfg: dict[str, Any], bad: tuple[str, Any], data: Any) -> None:
    from nicsim.config import Config, validate
    from nicsim.errors import NicsimError

    try:
        validate(Config(copy.deepcopy(cfg), source="generated.toml"))
    except NicsimError:
        assume(False)  # only a valid configuration made invalid by one key
    key, values = bad
    value = data.draw(values)
    node: Any = cfg
    parts = key.replace("[0]", ".0").split(".")
    for p in parts[:-1]:
        node = node[int(p)] if p.isdigit() else node[p]
    node[parts[-1]] = value
    with pytest.raises(NicsimError) as e:
        validate(Config(cfg, source="generated.toml"))
    one_line(e.value, "generated.toml", key.split("[")[0])


# --------------------------------------------------------------------------------------------
# Router configurations.

ROUTER_CFGS = [tomllib.loads(p.read_text()) for p in ROUTERS]


@st.composite
def router_configs(draw: Any) -> dict[str, Any]:
    cfg = copy.deepcopy(draw(st.sampled_from(ROUTER_CFGS)))
    cfg["seed"] = draw(st.integers(0, 2**32 - 1))
    duration = draw(st.floats(200, 2000))
    cfg["run"] = {"duration_us": duration, "warmup_us": draw(st.floats(0, duration / 2))}
    for t in cfg["traffic"]:
        t["rate_mbps"] = draw(st.floats(1, 1000))
        t["frame_bytes"] = draw(st.integers(64, 1518))
        for f in t.get("flows", []):
            f["tos"] = draw(st.integers(0, 255))
            f["ttl"] = draw(st.integers(0, 255))
            f["weight"] = draw(st.floats(0.1, 5))
            f["proto"] = draw(st.sampled_from(["udp", "tcp", "17"]))
    for nic in cfg["nics"]:
        nic["classify"] = draw(st.booleans())
    return cfg


@props(50)
@given(cfg=router_configs())
def test_valid_router_configs_run_and_conserve(cfg: dict[str, Any]) -> None:
    from nicsim.config import Config
    from nicsim.errors import NicsimError
    from nicsim.router import check, simulate

    config = Config(cfg, source="router.toml")
    try:
        check(config)
    except NicsimError as e:
        one_line(e, "router.toml")
        return
    s = simulate(config)
    p = s["packets"]
    assert p["conserved"], p
    assert p["offered"] == p["delivered"] + p["dropped"] + p["in_flight"], p


@props(20)
@given(cfg=router_configs(), bad=st.sampled_from([
    ("ttl", 256), ("ttl", -1), ("tos", 256), ("weight", -1.0), ("frame_bytes", 10**12),
]))
def test_invalid_router_configs_are_one_line(cfg: dict[str, Any], bad: tuple[str, Any]) -> None:
    from nicsim.config import Config
    from nicsim.errors import NicsimError
    from nicsim.router import check

    try:
        check(Config(copy.deepcopy(cfg), source="router.toml"))
    except NicsimError:
        assume(False)  # only a valid configuration made invalid by one key
    key, value = bad
    cfg["traffic"][0]["flows"][0][key] = value
    with pytest.raises(NicsimError) as e:
        check(Config(cfg, source="router.toml"))
    one_line(e.value, "router.toml", key)


# --------------------------------------------------------------------------------------------
# XDP targets: what the target's check accepts, the analysis runs on.

NFP_CFG = tomllib.loads(NFP.read_text())


def to_toml(d: dict[str, Any], prefix: str = "") -> str:
    """A small TOML writer for the generated targets (tables of numbers, strings and booleans)."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, float):
            return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
        if isinstance(v, dict):
            return "{ " + ", ".join(f'"{k}" = {value(x)}' for k, x in v.items()) + " }"
        return str(v)

    lines = [f'"{k}" = {value(v)}' if prefix == "helpers" else f"{k} = {value(v)}"
             for k, v in d.items() if not isinstance(v, dict) or prefix == "helpers"]
    for k, v in d.items():
        if isinstance(v, dict) and prefix != "helpers":
            lines.append(f"\n[{k}]\n" + to_toml(v, k))
    return "\n".join(lines)


cost = st.floats(0, 1000, allow_nan=False)


@st.composite
def xdp_targets(draw: Any) -> dict[str, Any]:
    t = copy.deepcopy(NFP_CFG)
    t["limits"]["mtu_bytes"] = mtu = draw(st.integers(68, 65535))
    t["limits"]["min_packet_bytes"] = draw(st.integers(1, min(mtu + 14, 9000)))
    t["limits"]["mac_pps"] = draw(st.one_of(st.floats(1e3, 1e9), st.just(math.inf)))
    t["cores"]["count"] = draw(st.integers(1, 256))
    t["cores"]["clock_mhz"] = draw(st.floats(1, 5000))
    t["cores"]["overhead_cycles"] = draw(cost)
    for k in ("alu", "mul", "div", "endian", "jmp_taken", "jmp_not_taken", "exit", "stack"):
        t["insn"][k] = draw(cost)
    for h in list(t["helpers"])[:4]:
        t["helpers"][h]["cycles"] = draw(cost)
    return t


def _check_target(t: dict[str, Any]) -> None:
    from nicsim import _core
    from nicsim.config import core_errors

    with core_errors("gen.toml"):
        _core.xdp_check_target(to_toml(t), "gen.toml")


@props(40)
@given(t=xdp_targets())
def test_valid_xdp_targets_are_accepted(t: dict[str, Any]) -> None:
    _check_target(t)


@props(40)
@given(t=xdp_targets(), bad=st.sampled_from([
    ("limits", "mtu_bytes", st.one_of(st.integers(0, 67), st.integers(65536, 2**32 - 1))),
    ("cores", "overhead_cycles", st.floats(-1e9, -1e-9)),
    ("insn", "alu", st.just(math.nan)),
    ("cores", "count", st.just(0)),
    ("limits", "mac_pps", st.floats(-1e9, 0)),
]), data=st.data())
def test_invalid_xdp_targets_are_one_line(t: dict[str, Any], bad: tuple[str, str, Any], data: Any) -> None:
    from nicsim.errors import NicsimError

    table, key, values = bad
    t[table][key] = data.draw(values)
    with pytest.raises(NicsimError) as e:
        _check_target(t)
    one_line(e.value, "gen.toml", f"{table}.{key}")


@props(6)
@given(t=xdp_targets())
def test_xdp_analysis_on_generated_targets(t: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    obj = xdp_object("calls")
    if not obj.exists():
        pytest.skip(f"{obj} is missing: run `make xdp-suite`")
    from nicsim.xdp import analyze

    path = tmp_path_factory.mktemp("t") / "gen.toml"
    path.write_text(to_toml(t))
    s = analyze(obj, target=str(path), timeout_s=5)
    g = s["guarantee"]
    assert g["pps"] is None or g["pps"] > 0
    assert s["naive"]["pps"] is None or g["pps"] is None or g["pps"] >= s["naive"]["pps"] * (1 - 1e-9)


# --------------------------------------------------------------------------------------------
# Flow-memory targets and captures.

U250_CFG = tomllib.loads(U250.read_text())


@st.composite
def flowmem_targets(draw: Any) -> dict[str, Any]:
    t = copy.deepcopy(U250_CFG)
    t["core"]["clock_mhz"] = draw(st.integers(1, 5000))
    t["core"]["word_bytes"] = draw(st.sampled_from([1, 2, 4, 8, 16]))
    t["dram"]["latency_cycles"] = draw(st.integers(0, 1000))
    t["flow_cache"]["size_bytes"] = draw(st.sampled_from([0, 4096, 65536, 1 << 20]))
    return t


@props(30)
@given(t=flowmem_targets())
def test_flowmem_targets_are_accepted_or_one_line(t: dict[str, Any]) -> None:
    from nicsim import _core
    from nicsim.config import core_errors
    from nicsim.errors import NicsimError

    try:
        with core_errors("mem.toml", about="mem.toml"):  # as `flowmem bench --target mem.toml` checks it
            _core.flow_check_target(to_toml(t), None)
    except NicsimError as e:
        one_line(e, "mem.toml")


def tcp_frame(src: int, sport: int, seq: int, flags: int, payload: bytes) -> bytes:
    ip_len = 20 + 20 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0, 64, 6, 0, struct.pack("!I", src),
                     struct.pack("!I", 0x0A000002))
    tcp = struct.pack("!HHIIBBHHH", sport, 80, seq, 0, 5 << 4, flags, 65535, 0, 0)
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + ip + tcp + payload


@st.composite
def captures(draw: Any) -> bytes:
    """A small pcap of TCP segments from a few flows: handshakes or none, data at any sequence
    number (holes, overlaps, retransmissions, wrap-around), FINs and RSTs, truncated snaps."""
    frames = []
    for _ in range(draw(st.integers(0, 40))):
        flow = draw(st.integers(0, 3))
        seq = draw(st.one_of(st.integers(0, 5000), st.integers(2**32 - 3000, 2**32 - 1)))
        flags = draw(st.sampled_from([0x02, 0x10, 0x18, 0x11, 0x04, 0x12]))
        payload = draw(st.binary(max_size=300)) if flags in (0x10, 0x18, 0x11) else b""
        frame = tcp_frame(0x0A000001 + flow, 1000 + flow, seq, flags, payload)
        snap = draw(st.one_of(st.just(len(frame)), st.integers(14, len(frame))))
        frames.append((frame[:snap], len(frame)))
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, (data, orig) in enumerate(frames):
        out += struct.pack("<IIII", i, 0, len(data), orig) + data
    return out


@props(100)
@given(cap=captures())
def test_captures_reassemble_and_conserve(cap: bytes, tmp_path_factory: pytest.TempPathFactory) -> None:
    from nicsim.errors import NicsimError
    from nicsim.flowmem.reassemble import open_capture

    path = tmp_path_factory.mktemp("c") / "c.pcap"
    path.write_bytes(cap)
    try:
        fc = open_capture(path)
    except NicsimError as e:
        one_line(e, "c.pcap")
        return
    counts = fc.counts()
    assert sum(v for k, v in counts.items() if k != "read") == counts["read"], counts
    for d in fc.directions():
        assert d["bytes"] >= 0


@props(8)
@given(flows_n=st.integers(1, 30), seed=st.integers(0, 2**32 - 1), loss=st.floats(0, 0.3),
       reorder=st.floats(0, 0.3), duplicate=st.floats(0, 0.3), pcapng=st.booleans())
def test_synthetic_captures_reassemble_whole(flows_n: int, seed: int, loss: float, reorder: float, duplicate: float,
                                             pcapng: bool, tmp_path_factory: pytest.TempPathFactory) -> None:
    from nicsim.flowmem.memory import synth
    from nicsim.flowmem.reassemble import open_capture

    path = tmp_path_factory.mktemp("s") / ("s.pcapng" if pcapng else "s.pcap")
    rep = synth(path, flows=flows_n, seed=seed, loss=loss, reorder=reorder, duplicate=duplicate, pcapng=pcapng)
    counts = open_capture(path).counts()
    assert counts["read"] == rep["packets"]
    assert sum(v for k, v in counts.items() if k != "read") == counts["read"], counts
