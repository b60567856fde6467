"""`nicsim xdp profile` (issue 36): an XDP program on a capture, every packet checked against the
guarantee.

- The suite's programs on captures of ../shared/pcap-world and on a capture generated from each
  analysis's example packet (the example, random and mutated packets): no packet may be costlier
  than the guarantee, on nfp and on x86-jit; the example packet, run from the analysis's maps,
  costs exactly the guarantee (one cost function for the analysis and the profile).
  `NICSIM_PROFILE_ALL=1` (`make profile-soundness`) runs every program on every capture, and
  `$NICSIM_PAPER_OBJECTS` adds the XDP paper's own objects on both targets.
- The map state is carried from packet to packet, from empty maps, a JSON file or bpftool's
  dump; the summary, the tables and the plots; a hostile input is one line, exit code 2.
"""

from __future__ import annotations

import json
import os
import random
import struct
from pathlib import Path

import pytest

from nicsim.xdp.suite import SUITE

from conftest import ROOT, assert_one_line_error, nicsim, xdp_object

WORLD = Path(os.environ.get("NICSIM_PCAP_WORLD", ROOT.parent / "shared" / "pcap-world"))
ALL = os.environ.get("NICSIM_PROFILE_ALL") == "1"
#: The captures profiled by default: VLAN stacks and MPLS, IPv6, PPPoE, a Linux cooked capture
#: (made Ethernet frames), jumbograms (skipped), loopback — small, and different in what they
#: make parsers walk.
CHOSEN = ("zeek__mixed-vlan-mpls.pcap", "suricata__firewall__ruletype-firewall-117-ftp-all-data-ipv6__input.pcap",
          "suricata__bug-4810__pppoe-session-http.pcap", "suricata__decode-sll2-02__input.pcap",
          "gopacket__pcap__test_loopback.pcap")
#: Seconds each analysis searches (a bound reached within it is still a guarantee).
TIMEOUT_S = 20.0 if ALL else 3.0
#: The programs also profiled on x86-jit by default (the analyses are most of the test's time):
#: a parser and a sketch that writes maps (`make profile-soundness` runs them all).
X86_CHOSEN = ("parser", "count_min_5")
CASES = [(p.name, "nfp") for p in SUITE] + [(p.name, "x86-jit") for p in SUITE if ALL or p.name in X86_CHOSEN]
#: The XDP paper's own objects (published with the artifact, not in this repository), where
#: $NICSIM_PAPER_OBJECTS names their folder (as tests/test_xdp_paper.py): each on both targets.
PAPER = Path(os.environ.get("NICSIM_PAPER_OBJECTS", "/nonexistent"))
PAPER_OBJECTS = sorted(PAPER.glob("xdp-*.bpf.o")) if PAPER.is_dir() else []
CASES += [(f"paper:{p.name}", t) for p in PAPER_OBJECTS for t in ("nfp", "x86-jit")]


def program_object(name: str) -> Path:
    """A suite program's object, or with the prefix `paper:` one of the paper's objects."""
    return PAPER / name.removeprefix("paper:") if name.startswith("paper:") else xdp_object(name)


def world() -> list[Path]:
    if not WORLD.is_dir():
        pytest.skip(f"{WORLD} is missing (../shared/pcap-world; or set NICSIM_PCAP_WORLD)")
    caps = sorted((WORLD / "captures").iterdir())
    return caps if ALL else [c for c in caps if c.name in CHOSEN]


def write_pcap(path: Path, frames: list[bytes], linktype: int = 1, t0_ns: int = 0) -> Path:
    """A pcap (microsecond timestamps, 1 ms apart) of `frames` with link type `linktype`."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype)]
    for i, f in enumerate(frames):
        us = t0_ns // 1000 + i * 1000
        out.append(struct.pack("<IIII", us // 1_000_000, us % 1_000_000, len(f), len(f)) + f)
    path.write_bytes(b"".join(out))
    return path


def udp_frame(payload: bytes = b"x" * 18, dport: int = 53) -> bytes:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + len(payload), 0, 0, 64, 17, 0, bytes([10, 0, 0, 1]),
                     bytes([10, 0, 0, 2]))
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + struct.pack("!HHHH", 1234, dport, 8 + len(payload), 0) + payload


def analysis_dir(tmp: Path, name: str, target: str) -> Path:
    from nicsim.xdp import analyze

    out = tmp / f"a-{name.replace(':', '-')}-{target}"
    if not (out / "summary.json").exists():
        analyze(program_object(name), out, target=target, rate="packet", timeout_s=TIMEOUT_S, mac_limit=False)
    return out


@pytest.mark.parametrize(("name", "target"), CASES)
def test_no_packet_is_costlier_than_the_guarantee(name: str, target: str, tmp_path: Path,
                                                  request: pytest.FixtureRequest) -> None:
    from nicsim.xdp.profile import profile
    from nicsim.xdp.validate import packets_to_time

    if target == "x86-jit":
        request.getfixturevalue("x86_jit")
    obj = program_object(name)
    if not obj.exists():
        pytest.skip(f"{obj} is not built (make xdp-suite)")
    a = analysis_dir(tmp_path, name, target)
    s = json.loads((a / "summary.json").read_text())
    example = bytes.fromhex(s["example_packet_hex"]) if s.get("example_packet_hex") else None
    generated = write_pcap(tmp_path / "generated.pcap",
                           [p for _, p in packets_to_time(example, 30 if not ALL else 500, seed=7)])
    caps = [generated, *world()]
    for cap in caps:
        r = profile(obj, cap, None, target=target, analysis=a)
        ck = r["check"]
        assert ck["checked"], (cap.name, ck)
        assert ck["ok"], (name, target, cap.name, ck)
        assert r["packets"]["no_path_in_graph"] == 0
        if r["cost_ns"]["max"] is not None:
            assert r["cost_ns"]["max"] <= r["guarantee"]["ns"] * (1 + 1e-9)
    # The example packet from the analysis's maps: the slowest satisfiable path itself.
    if example is not None and s["guarantee"]["status"] == "ssp":
        one = write_pcap(tmp_path / "example.pcap", [example])
        r = profile(obj, one, None, target=target, analysis=a, maps=[str(a / "summary.json")])
        assert r["paths"][0]["insns"] == len(s["path"]["insns"])
        assert r["cost_ns"]["max"] == pytest.approx(r["guarantee"]["ns"], rel=1e-9)


def test_a_packet_costlier_than_the_guarantee_fails_loudly(tmp_path: Path) -> None:
    """A guarantee made too fast by hand (the analysis's pps doubled): the profile names the
    first packet over it and exits 1."""
    a = analysis_dir(tmp_path, "count_min_5", "nfp")
    s = json.loads((a / "summary.json").read_text())
    s["guarantee"]["pps"] *= 1e3
    (a / "summary.json").write_text(json.dumps(s))
    cap = write_pcap(tmp_path / "c.pcap", [udp_frame(), udp_frame(b"y" * 40)])
    r = nicsim("xdp", "profile", xdp_object("count_min_5"), "--traffic", cap, "--analysis", a, "--out",
               tmp_path / "o")
    assert r.returncode == 1, r.stderr
    assert "SOUNDNESS BUG: packet 0 of" in r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["check"]["ok"] is False and s["check"]["costlier_than_guarantee"] == 2


def test_the_map_state_is_carried_and_the_outputs_are_written(tmp_path: Path) -> None:
    """Count-Min's counters grow packet by packet; the summary, tables, pcap, parquet and plot."""
    import pyarrow.parquet as pq

    a = analysis_dir(tmp_path, "count_min_5", "nfp")
    frames = [udp_frame(bytes([i % 4]) * 20) for i in range(40)] + [b"\x00" * 20]  # a runt, padded
    cap = write_pcap(tmp_path / "c.pcap", frames, t0_ns=10**18)
    out = tmp_path / "o"
    r = nicsim("xdp", "profile", xdp_object("count_min_5"), "--traffic", cap, "--analysis", a, "--out", out,
               "--packets", "parquet", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s == json.loads((out / "summary.json").read_text())
    assert s["packets"]["total"] == 41 and s["packets"]["padded"] == 1
    assert sum(x["packets"] for x in s["actions"]) == 41
    assert abs(sum(p["share"] for p in s["paths"]) - 1) < 1e-9
    su = s["sustained"]
    assert su["pps"] >= s["guarantee"]["pps"] * (1 - 1e-9)
    assert su["mean_packet_bytes"] == pytest.approx((40 * 62 + 60) / 41)
    for f in ("paths.csv", "actions.csv", "costliest_packets.csv", "costliest_packets.pcap", "maps_after.json",
              "packets.parquet", "profile.png", "profile.svg"):
        assert (out / f).is_file(), f
    rows = pq.read_table(out / "packets.parquet").to_pylist()
    assert len(rows) == 41 and rows[0]["index"] == 0 and rows[0]["ts_ns"] == 10**18
    # Every counter touched was incremented once per packet that hashed to it: the total over
    # one row of the sketch is the packet count.
    maps = json.loads((out / "maps_after.json").read_text())
    assert any(m["entries"] for m in maps.values())


def test_maps_from_json_and_from_bpftool(tmp_path: Path) -> None:
    """--maps FILE (nicsim's JSON) and NAME=FILE (`bpftool map dump -j`): the same state, the same
    profile; a key of the wrong size, bad JSON, a bad capture are one line, exit code 2."""
    from nicsim.xdp.profile import read_maps

    a = analysis_dir(tmp_path, "count_min_5", "nfp")
    obj = xdp_object("count_min_5")
    s = json.loads((a / "summary.json").read_text())
    name, m = next((n, m) for n, m in s["maps"].items() if m["type"] in ("array", "percpu_array"))
    key, value = (0).to_bytes(m["key_size"], "little"), (7).to_bytes(m["value_size"], "little")
    nic = tmp_path / "maps.json"
    nic.write_text(json.dumps({name: {"entries": {key.hex(): value.hex()}}}))
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps([{"key": [f"0x{b:02x}" for b in key], "value": [f"0x{b:02x}" for b in value],
                                 "formatted": {"key": 0, "value": 7}}]))
    assert read_maps([str(nic)])[0] == read_maps([f"{name}={dump}"])[0]
    cap = write_pcap(tmp_path / "c.pcap", [udp_frame()] * 3)
    outs = []
    for spec in (str(nic), f"{name}={dump}"):
        r = nicsim("xdp", "profile", obj, "--traffic", cap, "--analysis", a, "--maps", spec, "--json", "--out",
                   tmp_path / f"o{len(outs)}")
        assert r.returncode == 0, r.stderr
        outs.append(json.loads((tmp_path / f"o{len(outs)}" / "maps_after.json").read_text()))
    assert outs[0] == outs[1]

    def bad(*args: object) -> str:
        return assert_one_line_error(nicsim("xdp", "profile", obj, "--traffic", cap, "--analysis", a, "--out",
                                            tmp_path / "bad", *map(str, args)))

    short = tmp_path / "short.json"
    short.write_text(json.dumps({name: {"entries": {"00": value.hex()}}}))
    assert "key is 1 bytes" in bad("--maps", short)
    dump.write_text(json.dumps([{"key": ["0x00", "0xzz"], "value": []}]))
    assert "entry 0: key" in bad("--maps", f"{name}={dump}")
    nic.write_text("{not json")
    assert "not JSON" in bad("--maps", nic)
    nic.write_text(json.dumps([]))
    assert "--maps NAME=" in bad("--maps", nic)
    nic.write_text(json.dumps({"no_such_map": {"entries": {}}}))
    assert "no_such_map" in bad("--maps", nic)
    # An empty spec, a NAME= without its file, a file that is not there: named as such.
    assert "--maps: an empty path" in bad("--maps", "")
    assert f"--maps {name}=: no FILE after '='" in bad("--maps", f"{name}=")
    assert bad("--maps", tmp_path / "none.json").endswith("none.json: no such maps file")
    garbage = tmp_path / "garbage.pcap"
    garbage.write_bytes(b"\x01\x02\x03\x04" * 10)
    line = assert_one_line_error(nicsim("xdp", "profile", obj, "--traffic", garbage, "--analysis", a, "--out",
                                        tmp_path / "bad"))
    assert "garbage.pcap" in line
    assert not (tmp_path / "bad").exists()
    # A capture whose file ends inside its last record runs the records before it, as tshark
    # reads it, and says so: a warning on standard error and in the summary.
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(write_pcap(tmp_path / "whole.pcap", [udp_frame()] * 2).read_bytes()[:-10])
    r = nicsim("xdp", "profile", obj, "--traffic", cut, "--analysis", a, "--out", tmp_path / "cut")
    assert r.returncode == 0, r.stderr
    assert "cut short" in r.stderr, r.stderr
    s = json.loads((tmp_path / "cut" / "summary.json").read_text())
    assert s["packets"]["total"] == 1
    assert any("the file ends inside a record" in w for w in s["warnings"]), s.get("warnings")


def test_other_link_types_and_long_packets(tmp_path: Path) -> None:
    """Raw IP packets run as Ethernet frames; a packet over the MTU is skipped and counted."""
    from nicsim.xdp.profile import profile

    a = analysis_dir(tmp_path, "count_min_5", "nfp")
    obj = xdp_object("count_min_5")
    raw = write_pcap(tmp_path / "raw.pcap", [udp_frame()[14:]] * 3, linktype=101)
    r = profile(obj, raw, None, analysis=a)
    assert r["packets"]["made_ethernet"] == 3 and r["packets"]["costed"] == 3
    eth = write_pcap(tmp_path / "eth.pcap", [udp_frame()] * 3)
    assert profile(obj, eth, None, analysis=a)["cost_ns"] == r["cost_ns"]
    long = write_pcap(tmp_path / "long.pcap", [udp_frame(b"z" * 2000), udp_frame()])
    r = profile(obj, long, None, analysis=a)
    assert r["packets"]["skipped_too_long"] == 1 and r["packets"]["costed"] == 1
    assert any("longer than the target's MTU" in w for w in r["warnings"])


def test_an_empty_capture_and_a_random_one(tmp_path: Path) -> None:
    from nicsim.errors import InputError
    from nicsim.xdp.profile import profile

    a = analysis_dir(tmp_path, "parser", "nfp")
    # An empty capture has nothing to profile (a rate of no packets was the MAC's, its check ok).
    with pytest.raises(InputError, match="e.pcap: the capture holds no packets"):
        profile(xdp_object("parser"), write_pcap(tmp_path / "e.pcap", []), tmp_path / "o", analysis=a)
    assert not (tmp_path / "o").exists()
    rng = random.Random(3)
    frames = [rng.randbytes(rng.randint(1, 1600)) for _ in range(200)]
    r = profile(xdp_object("parser"), write_pcap(tmp_path / "r.pcap", frames), None, analysis=a)
    assert r["check"]["ok"] and r["packets"]["total"] == 200


def test_without_an_analysis_it_runs_one(tmp_path: Path) -> None:
    cap = write_pcap(tmp_path / "c.pcap", [udp_frame()] * 5)
    r = nicsim("xdp", "profile", xdp_object("count_min_5"), "--traffic", cap, "--out", tmp_path / "o", "--json",
               "--timeout", "5")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["guarantee"]["source"].startswith("analysed here") and s["check"]["ok"]


def test_kernel_times_the_same_packets(tmp_path: Path, x86_jit: Path) -> None:
    """--kernel (x86-jit): every costed packet runs once more in the kernel, in order, on one
    loaded program; the kernel's actions are the interpreter's and each path has its median ns."""
    import pyarrow.parquet as pq

    a = analysis_dir(tmp_path, "count_min_5", "x86-jit")
    frames = [udp_frame(bytes([i % 7]) * 20) for i in range(30)]
    cap = write_pcap(tmp_path / "c.pcap", frames)
    out = tmp_path / "o"
    r = nicsim("xdp", "profile", xdp_object("count_min_5"), "--traffic", cap, "--target", "x86-jit", "--analysis", a,
               "--kernel", "--packets", "parquet", "--out", out, "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    k = s["kernel"]
    assert k["packets"] == 30 and k["action_mismatches"] == 0
    assert k["errors"]["paths"] == s["distinct_paths"]
    assert all(p["kernel_packets"] > 0 and p["kernel_ns"] > 0 for p in s["paths"])
    rows = pq.read_table(out / "packets.parquet").to_pylist()
    assert all(row["kernel_ns"] is not None and row["kernel_ns"] > 0 for row in rows)
    # nfp has no kernel to measure on.
    assert_one_line_error(nicsim("xdp", "profile", xdp_object("count_min_5"), "--traffic", cap, "--kernel", "--out",
                                 tmp_path / "bad"), "--kernel", "x86-jit")


def test_sweep_profiles_programs_on_captures(tmp_path: Path) -> None:
    """`nicsim xdp sweep --traffic`: each analysis, then its program on each capture (profiles.csv)."""
    import csv

    caps = [write_pcap(tmp_path / "a.pcap", [udp_frame()] * 4), write_pcap(tmp_path / "b.pcap", [udp_frame(b"q" * 90)])]
    out = tmp_path / "s"
    r = nicsim("xdp", "sweep", xdp_object("count_min_5"), xdp_object("dos_filter"), "--rate", "packet", "--timeout",
               "5", "--traffic", caps[0], "--traffic", caps[1], "-j", "1", "--out", out, "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["traffic"] == [str(c) for c in caps]
    rows = list(csv.DictReader((out / "profiles.csv").open()))
    assert [(row["name"], Path(row["capture"]).name, row["packets"]) for row in rows] == [
        ("count_min_5", "a.pcap", "4"), ("count_min_5", "b.pcap", "1"), ("dos_filter", "a.pcap", "4"),
        ("dos_filter", "b.pcap", "1")]
    assert all(row["check_ok"] == "True" for row in rows)
    assert all(len(p["profiles"]) == 2 for p in s["points"])


def test_a_capture_on_standard_input_or_a_pipe_is_profiled_and_swept(tmp_path: Path) -> None:
    # `--traffic -` (standard input) and a pipe, as the README says captures are read: `xdp
    # profile` refused `-` (no such file), `xdp sweep` refused both (not a regular file); a sweep's
    # analyses all read a copy, and the capture is named as given.
    import subprocess
    import sys

    from nicsim import _core

    cap = tmp_path / "s.pcap"
    _core.write_pcap(cap, [bytes(60), bytes(range(64))])
    env = {**os.environ, "COLUMNS": "120"}
    for cmd, out in ((["xdp", "profile", xdp_object("calls"), "--traffic", "-"], tmp_path / "p"),
                     (["xdp", "sweep", xdp_object("calls"), "--rate", "packet", "--traffic", "-"], tmp_path / "s")):
        with cap.open("rb") as stdin:
            r = subprocess.run([sys.executable, "-m", "nicsim", *map(str, cmd), "--out", str(out), "-q"],
                               stdin=stdin, capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        s = json.loads((out / "summary.json").read_text())
        got = s["capture"] if "capture" in s else s["points"][0]["profiles"][0]["capture"]
        assert got == "<stdin>" and (s.get("traffic") in (None, ["<stdin>"])), s.get("traffic")
        packets = s["packets"]["total"] if "packets" in s else s["points"][0]["profiles"][0]["packets"]
        assert packets == 2
    r = subprocess.run(["bash", "-c", f'"{sys.executable}" -m nicsim xdp sweep "{xdp_object("calls")}" --rate packet '
                        f'--traffic <(cat "{cap}") --out "{tmp_path / "pipe"}" -q'], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "pipe" / "summary.json").read_text())["points"][0]["profiles"][0]["packets"] == 2


def test_an_empty_capture_is_refused_not_given_the_macs_rate(tmp_path: Path) -> None:
    # A capture of no packets was "sustained" at the MAC's 54.4 Mpps with its check ok.
    from nicsim import _core

    cap = tmp_path / "empty.pcap"
    _core.write_pcap(cap, [])
    r = nicsim("xdp", "profile", xdp_object("calls"), "--traffic", cap, "--out", tmp_path / "p")
    assert_one_line_error(r, "empty.pcap: the capture holds no packets")
    assert not (tmp_path / "p").exists()


def test_an_analysis_folder_is_checked_for_what_profile_takes_of_it(tmp_path: Path) -> None:
    # A profile's own folder is no analysis (it was taken as one), and an explicit --no-mac-limit
    # against an analysis with the MAC limit is refused (it was dropped silently).
    cap = write_pcap(tmp_path / "c.pcap", [udp_frame()] * 3)
    a = analysis_dir(tmp_path, "count_min_5", "nfp")
    r = nicsim("xdp", "profile", xdp_object("count_min_5"), "--traffic", cap, "--analysis", a, "--out", tmp_path / "p")
    assert r.returncode == 0, r.stderr
    r = nicsim("xdp", "profile", xdp_object("count_min_5"), "--traffic", cap, "--analysis", tmp_path / "p",
               "--out", tmp_path / "q")
    assert_one_line_error(r, "not the summary of `nicsim xdp analyze`", "a profile's")
    with_mac = tmp_path / "b"  # (analysis_dir's analyses are without the MAC limit)
    assert nicsim("xdp", "analyze", xdp_object("count_min_5"), "--rate", "packet", "--timeout", "5",
                  "--out", with_mac).returncode == 0
    r = nicsim("xdp", "profile", xdp_object("count_min_5"), "--traffic", cap, "--analysis", with_mac,
               "--no-mac-limit", "--out", tmp_path / "r")
    assert_one_line_error(r, "--no-mac-limit", "an analysis with the MAC limit")
    assert not (tmp_path / "q").exists() and not (tmp_path / "r").exists()
