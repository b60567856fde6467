"""`nicsim xdp analyze` explains its answer (issue 34 §4): the slowest path by source line with
each line's cycles, the bottleneck and the helper calls with their cost (the terminal shows
the costliest lines, slowest_path.txt and summary.json all of them), instruction ranges for an
object without line information, and the example packet decoded layer by layer (checked
against tshark -V)."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from nicsim.xdp.explain import decode_packet

from conftest import ROOT, nicsim, xdp_object


def obj(name: str) -> Path:
    p = xdp_object(name)
    if not p.exists():
        pytest.skip(f"{p} is missing: run `make xdp-suite`")
    return p


def test_analyze_annotates_the_slowest_path_by_source_line(tmp_path: Path) -> None:
    out = tmp_path / "cm"
    r = nicsim("xdp", "analyze", obj("count_min_5"), "--out", out)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    p, lines = s["path"], s["path"]["lines"]
    # Every instruction of the path on one line, each at its own cost: the lines add up.
    assert sum(x["insns"] for x in lines) == len(p["insns"])
    for k in ("cores", "dram"):
        assert sum(x[k] for x in lines) == pytest.approx(p["cost"][k], rel=1e-9, abs=1e-6)
    src = (ROOT / "python" / "nicsim" / "xdp" / "programs" / "count_min.c").read_text().splitlines()
    named = [x for x in lines if x["source"]]
    assert named and all(re.fullmatch(r"count_min\.c:[1-9]\d*", x["line"]) for x in named)
    for x in named:  # the text is the source's line
        assert x["text"] == src[int(x["line"].split(":")[1]) - 1].strip(), x
    assert not any(x.endswith(":0") for x in p["source_lines"])  # line 0 is no line
    # The helper calls, per line, are the path's helper classes.
    calls: dict[str, int] = {}
    for x in lines:
        for h, n in x["helpers"].items():
            calls[h] = calls.get(h, 0) + n
    assert calls == {c: v["insns"] for c, v in p["cost_by_class"].items() if c.startswith("call bpf_")}
    assert calls
    # The file: a header, a line per source line in path order, the helper calls.
    text = (out / "slowest_path.txt").read_text()
    assert f"bottleneck: {s['guarantee']['bottleneck']}" in text
    row = re.compile(r"\s*([\d,]+\.\d)\s+([\d.]+)%\s+([\d,]+\.\d)\s+(\d+)\s+(insns \d+-\d+|\S+)")
    body = [m for m in map(row.match, text.splitlines()) if m]
    assert [m[5] for m in body] == [x["line"] for x in lines]
    assert [int(m[4]) for m in body] == [x["insns"] for x in lines]
    helpers = next(ln for ln in text.splitlines() if ln.startswith("helper calls: "))
    for c, v in p["cost_by_class"].items():
        if c.startswith("call bpf_"):
            assert f"{c.removeprefix('call ')} ×{v['insns']}: " in helpers
    # The terminal: the costliest lines on the bottleneck resource, and where the rest are.
    first = "dram" if s["guarantee"]["bottleneck"] == "dram" else "cores"
    assert f"by {'DRAM' if first == 'dram' else 'core'} cycles" in r.stdout
    assert "costliest of" in r.stdout and "slowest_path.txt" in r.stdout and "helper calls: bpf_" in r.stdout
    ranked = sorted(lines, key=lambda x: -x[first])
    shown = [ln for ln in r.stdout.splitlines() if row.match(ln)]
    assert len(shown) == 10 < len(lines)
    assert [float(ln.split()[0].replace(",", "")) for ln in shown] == [round(x[first], 1) for x in ranked[:10]]
    assert ranked[0]["line"] in shown[0]
    assert "the example packet (example.pcap), decoded:" in r.stdout and "Ethernet II" in r.stdout


def test_an_object_without_line_information_gets_instruction_ranges(tmp_path: Path) -> None:
    out = tmp_path / "o"
    r = nicsim("xdp", "analyze", obj("ld_iproute2"), "--out", out)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    lines = s["path"]["lines"]
    assert lines and not any(x["source"] for x in lines) and s["path"]["source_lines"] == []
    assert all(re.fullmatch(r"insns \d+-\d+", x["line"]) for x in lines)
    assert sum(x["insns"] for x in lines) == len(s["path"]["insns"])
    # A run is consecutive instructions of the path.
    pcs = s["path"]["insns"]
    k = 0
    for x in lines:
        a, b = map(int, x["line"].removeprefix("insns ").split("-"))
        assert pcs[k] == a and pcs[k + x["insns"] - 1] == b
        k += x["insns"]
    assert "have no source line (an object built without -g" in r.stdout


def _frame() -> bytes:
    """Ethernet / IPv4 / TCP (SYN+ACK) with 5 payload bytes, written out by hand."""
    payload = b"hello"
    tcp = struct.pack("!HHIIBBHHH", 40000, 443, 7, 9, 5 << 4, 0x12, 1024, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0x10, 20 + len(tcp) + len(payload), 1, 0x4000, 63, 6, 0,
                     bytes([10, 0, 0, 1]), bytes([192, 168, 1, 2]))
    eth = bytes.fromhex("020000000002" "020000000001") + struct.pack("!H", 0x0800)
    return eth + ip + tcp + payload


def test_the_decoded_packet_names_what_tshark_names(tmp_path: Path) -> None:
    text = "\n".join(decode_packet(_frame()))
    assert text.splitlines()[0] == "Frame: 59 bytes"
    for want in ("Ethernet II (bytes 0-13)", "Destination: 02:00:00:00:00:02", "Source: 02:00:00:00:00:01",
                 "Type: IPv4 (0x0800)", "Internet Protocol Version 4 (bytes 14-33)", "Source Address: 10.0.0.1",
                 "Destination Address: 192.168.1.2", "Time to Live: 63", "Total Length: 45",
                 "Protocol: TCP (6)", "Flags: 0x2, Don't fragment", "Identification: 0x0001 (1)",
                 "Transmission Control Protocol (bytes 34-53)",
                 "Source Port: 40000", "Destination Port: 443", "Sequence Number (raw): 7",
                 "Acknowledgment number (raw): 9", "Flags: 0x012 (SYN, ACK)", "Window: 1024",
                 "Data (bytes 54-58)", "Data: 68 65 6c 6c 6f"):
        assert want in text, (want, text)
    if shutil.which("tshark") is None:
        pytest.skip("no tshark (make test-tools installs it)")
    from nicsim import _core

    cap = tmp_path / "p.pcap"
    _core.write_pcap(cap, [_frame()])
    v = subprocess.run(["tshark", "-r", str(cap), "-V"], capture_output=True, text=True, timeout=60).stdout
    # The same fields, as tshark names them.
    for want in ("Destination: 02:00:00:00:00:02", "Source: 02:00:00:00:00:01", "Type: IPv4 (0x0800)",
                 "Source Address: 10.0.0.1", "Destination Address: 192.168.1.2", "Time to Live: 63",
                 "Total Length: 45", "Protocol: TCP (6)", "Source Port: 40000", "Destination Port: 443",
                 "Sequence Number (raw): 7", "Acknowledgment number (raw): 9", "Window: 1024",
                 "Flags: 0x012 (SYN, ACK)", "Flags: 0x2, Don't fragment", "Identification: 0x0001 (1)"):
        assert want in v, (want, v[:3000])


def test_a_frame_the_library_cannot_parse_shows_what_it_could() -> None:
    lines = decode_packet(bytes.fromhex("0200000000020200000000010800") + b"\x45")
    assert lines[0] == "Frame: 15 bytes" and lines[1].startswith("Ethernet II")
    assert lines[-2].startswith("(not decoded further: ") and "ipv4" in lines[-2].lower()
    assert lines[-1] == "    bytes 14-14: 45"
