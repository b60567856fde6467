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
    row = re.compile(r"\s*([\d,]+\.\d)\s+([\d,]+\.\d)\s+([\d.]+)%\s+([\d,]+\.\d)\s+([\d,]+\.\d)\s+(\d+)\s+"
                     r"(insns \d+-\d+|\S+)")
    body = [m for m in map(row.match, text.splitlines()) if m]
    assert [m[7] for m in body] == [x["line"] for x in lines]
    assert [int(m[6]) for m in body] == [x["insns"] for x in lines]
    # Nanoseconds beside the cycles, their unit said: the NFP's cores and DRAM engine run at
    # 800 MHz, 1.25 ns a cycle.
    assert "core cycles    core ns" in text and "DRAM cycles    DRAM ns" in text
    for x, m in zip(lines, body, strict=True):
        assert x["cores_ns"] == pytest.approx(1.25 * x["cores"]) and x["dram_ns"] == pytest.approx(1.25 * x["dram"])
        assert float(m[2].replace(",", "")) == round(x["cores_ns"], 1)
    assert f"core cycles ({sum(x['cores_ns'] for x in lines):,.1f} ns)" in text
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


def _tshark_v(tmp_path: Path, frame: bytes) -> str:
    from nicsim import _core

    cap = tmp_path / f"f{len(list(tmp_path.iterdir()))}.pcap"
    _core.write_pcap(cap, [frame])
    return subprocess.run(["tshark", "-r", str(cap), "-V"], capture_output=True, text=True, timeout=60).stdout


def _udp_frame(total_len: int | None = None, udp_len: int | None = None, byte0: int = 0x45) -> bytes:
    """Ethernet / IPv4 / UDP with 18 payload bytes (60 bytes), lengths as given."""
    udp = struct.pack("!HHHH", 1000, 53, 26 if udp_len is None else udp_len, 0) + bytes(18)
    ip = struct.pack("!BBHHHBBH4s4s", byte0, 0, 46 if total_len is None else total_len, 0, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return bytes.fromhex("020000000002" "020000000001") + struct.pack("!H", 0x0800) + ip + udp


@pytest.mark.parametrize(("frame", "warning", "goes_on", "udp_shown"), [
    (_udp_frame(byte0=0x05), "Bogus IPv4 version (0, must be 4)", False, False),
    (_udp_frame(byte0=0x40), "Bogus IP header length (0, must be at least 20)", False, False),
    (_udp_frame(total_len=10), "Bogus IP length (10, less than header length 20)", False, False),
    (_udp_frame(total_len=0), "Total Length 0: 46 bytes, presumed to be because of \"TCP segmentation offload\" (TSO)",
     True, True),
    (_udp_frame(total_len=200), "IPv4 total length exceeds packet length (46 bytes)", True, True),
    (_udp_frame(udp_len=200), "Length 200 (bogus, payload length 26)", True, True),
    (_udp_frame(udp_len=3), "Length 3 (bogus, must be >= 8)", False, True),
])
def test_a_bogus_header_is_shown_with_a_warning_and_decoding_goes_on_where_tsharks_does(
        tmp_path: Path, frame: bytes, warning: str, goes_on: bool, udp_shown: bool) -> None:
    text = "\n".join(decode_packet(frame))
    assert "Internet Protocol Version 4 (bytes 14-33)" in text and "Source Address: 10.0.0.1" in text
    assert f"Expert Info: {warning}" in text, text
    assert ("User Datagram Protocol (bytes 34-41)" in text) == udp_shown, text
    assert ("not decoded further" in text) != goes_on, text
    if shutil.which("tshark") is None:
        pytest.skip("no tshark (make test-tools installs it)")
    v = _tshark_v(tmp_path, frame)
    # tshark warns too (an expert info of severity Error; TSO: it says what it presumed), and shows
    # the UDP header where nicsim does.
    assert "Severity level: Error" in v or "presumed to be because of \"TCP segmentation offload\"" in v, v
    assert ("Destination Port: 53" in v) == udp_shown, v


@pytest.mark.parametrize(("name", "layers"), [
    ("parser", ["Internet Protocol Version 4", "User Datagram Protocol"]),
    ("tcp_options", ["Internet Protocol Version 4", "Transmission Control Protocol"]),
    ("quic_lb_v6", ["Internet Protocol Version 6", "User Datagram Protocol"]),
    ("ipip_encap", ["Internet Protocol Version 4", "User Datagram Protocol"]),
])
def test_example_packets_are_well_formed_where_their_paths_allow(tmp_path: Path, name: str,
                                                                 layers: list[str]) -> None:
    """The solver leaves the bytes a path does not decide at 0 (an IPv4 header of version 0):
    the example gets a real packet's values there, still takes the reported path in the
    interpreter, and decodes — in nicsim and in tshark — without a warning (issue 34)."""
    from nicsim import _core

    o, out = obj(name), tmp_path / "o"
    r = nicsim("xdp", "analyze", o, "--out", out)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    pkt = bytes.fromhex(s["example_packet_hex"])
    run = json.loads(_core.xdp_run(o.read_bytes(), None, pkt, json.dumps(s["maps"]), 10_000_000))
    assert run["trace"] == s["path"]["insns"] and run["retval"] == s["path"]["retval"]
    text = "\n".join(decode_packet(pkt))
    assert all(f"{layer} (bytes" in text for layer in layers), text
    assert "Expert Info" not in text and "not decoded further" not in text, text
    assert "Time to Live: 64" in text or "Hop Limit: 64" in text, text
    if shutil.which("tshark") is None:
        pytest.skip("no tshark (make test-tools installs it)")
    v = subprocess.run(["tshark", "-r", str(out / "example.pcap"), "-V"], capture_output=True, text=True,
                       timeout=60).stdout
    assert "Malformed" not in v and "Severity level: Error" not in v, v


def test_per_line_nanoseconds_follow_the_targets_clock(tmp_path: Path) -> None:
    """`path.lines[].cores_ns`: cycles at the target's core clock (1 GHz here: a cycle is a
    nanosecond, as on x86-jit), `dram_ns` at the DRAM engine's (800 MHz)."""
    from nicsim import _core

    target = tmp_path / "ghz.toml"
    target.write_text(_core.xdp_builtin_target("nfp").replace('name = "nfp"', 'name = "nfp-1ghz"')
                      .replace("clock_mhz = 800.0", "clock_mhz = 1000.0", 1))
    r = nicsim("xdp", "analyze", obj("count_min_5"), "--target", target, "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    lines = json.loads((tmp_path / "o" / "summary.json").read_text())["path"]["lines"]
    assert lines and any(x["dram"] for x in lines)
    for x in lines:
        assert x["cores_ns"] == pytest.approx(x["cores"]) and x["dram_ns"] == pytest.approx(1.25 * x["dram"])


def test_every_listed_paths_example_still_takes_its_path(tmp_path: Path) -> None:
    """`--paths K`: each path's example is made well-formed on its own path (and maps), and the
    interpreter still runs it along that path to its action."""
    from nicsim import _core

    o, out = obj("parser"), tmp_path / "o"
    r = nicsim("xdp", "analyze", o, "--paths", "4", "--rate", "packet", "--out", out)
    assert r.returncode == 0, r.stderr
    paths = json.loads((out / "summary.json").read_text())["slowest_paths"]
    assert len(paths) >= 2
    for p in paths:
        pkt = bytes.fromhex(p["example_packet_hex"])
        run = json.loads(_core.xdp_run(o.read_bytes(), None, pkt, json.dumps(p["maps"]), 10_000_000))
        assert run["trace"] == p["insns"] and run["retval"] == p["retval"], p["rank"]
    # Each was polished: the Ethernet addresses, which parser never reads, are a real packet's.
    assert all(bytes.fromhex(p["example_packet_hex"])[:12] == bytes.fromhex("020000000002020000000001")
               for p in paths)
