"""Snapshots of what users read: golden runs' summaries and tables, and each class of error message.

A change to any of them is a reviewed diff of `tests/__snapshots__/test_snapshots.ambr` (syrupy):
run `pytest tests/test_snapshots.py --snapshot-update` and read the diff. The redesign (issue 19)
must leave them byte-identical. What varies from run to run (wall-clock times, the version, the
machine's paths) is taken out before the comparison; every simulated figure stays in, to the last
digit of its float.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import PAPER, ROOT, SMALL, XDP_OBJS, nicsim, scrub, stable, xdp_object

ROUTER = ROOT / "python" / "nicsim" / "configs" / "router"

def outputs(out: Path, tmp: Path, *tables: str) -> dict[str, Any]:
    """The summary (stable part) and the named CSV tables of output folder `out`."""
    got: dict[str, Any] = {"summary": stable(json.loads((out / "summary.json").read_text()), tmp)}
    for t in tables:
        got[t] = scrub((out / t).read_text(), tmp)
    return got


@pytest.mark.parametrize("arch", ["flexpipe", "staticpipe", "panic"])
def test_datapath_golden_run(arch: str, tmp_path: Path, snapshot) -> None:
    out = tmp_path / "o"
    r = nicsim("run", PAPER, *SMALL, "--param", f"arch={arch}", "--out", out)
    assert r.returncode == 0, r.stderr
    got = outputs(out, tmp_path, "per_flow.csv", "fifos.csv")
    got["table"] = scrub(r.stdout, tmp_path)
    assert got == snapshot


def test_offload_units_table(snapshot) -> None:
    r = nicsim("offloads", "units", PAPER)
    assert r.returncode == 0, r.stderr
    rj = nicsim("offloads", "units", PAPER, "--json")
    assert rj.returncode == 0, rj.stderr
    assert {"table": r.stdout, "json": stable(json.loads(rj.stdout), ROOT)} == snapshot


@pytest.mark.parametrize("setup", ["setup_a", "setup_d"])
def test_router_golden_run(setup: str, tmp_path: Path, snapshot) -> None:
    out = tmp_path / "o"
    r = nicsim("router", "run", ROUTER / f"{setup}.toml", "--out", out)
    assert r.returncode == 0, r.stderr
    got = outputs(out, tmp_path, "drops.csv", "ports.csv")
    got["table"] = scrub(r.stdout, tmp_path)
    assert got == snapshot


def test_flow_golden_runs(tmp_path: Path, snapshot) -> None:
    cap = tmp_path / "synth.pcap"
    r = nicsim("flowmem", "synth", cap, "--flows", "40", "--seed", "3")
    assert r.returncode == 0, r.stderr
    got: dict[str, Any] = {"capture_sha256": hashlib.sha256(cap.read_bytes()).hexdigest()}
    out = tmp_path / "r"
    r = nicsim("flowmem", "reassemble", cap, "--out", out)
    assert r.returncode == 0, r.stderr
    got["reassemble"] = outputs(out, tmp_path)
    got["reassemble"]["flows_json"] = stable(json.loads((out / "flows.json").read_text()), tmp_path)
    out = tmp_path / "b"
    r = nicsim("flowmem", "bench", cap, "--out", out)
    assert r.returncode == 0, r.stderr
    got["bench"] = outputs(out, tmp_path)
    out = tmp_path / "s"
    r = nicsim("flowmem", "sizes", cap, "--out", out)
    assert r.returncode == 0, r.stderr
    got["sizes"] = outputs(out, tmp_path, "flows.csv")
    assert got == snapshot


@pytest.mark.parametrize("name", ["parser", "count_min_5", "quic_lb_v4"])
def test_xdp_golden_analysis(name: str, tmp_path: Path, snapshot) -> None:
    out = tmp_path / "o"
    r = nicsim("xdp", "analyze", xdp_object(name), "--out", out)
    assert r.returncode == 0, r.stderr
    got = outputs(out, tmp_path)
    got["summary"]["object"]["path"] = scrub(got["summary"]["object"]["path"], XDP_OBJS)
    # The object's bytes hold the folder it was compiled in (DWARF's comp_dir): its hash
    # differs between checkouts, the analysis does not.
    del got["summary"]["object"]["sha256"]
    assert got == snapshot


#: One case per class of error message: (name, arguments). `{tmp}` is the test's folder.
ERRORS = [
    ("config-unknown-key", ["run", PAPER, "--param", "pipeline.widht_bits=512", "--out", "{tmp}/o"]),
    ("config-bad-value", ["run", PAPER, "--param", "pipeline.clock_mhz=-1", "--out", "{tmp}/o"]),
    ("config-unknown-offload", ["run", PAPER, "--param", 'flows[0].chain=["nope"]', "--out", "{tmp}/o"]),
    ("config-missing-file", ["run", "{tmp}/missing.toml", "--out", "{tmp}/o"]),
    ("option-value", ["flowmem", "synth", "{tmp}/x.pcap", "--flows", "-3"]),
    ("capture-not-a-capture", ["flowmem", "reassemble", "{tmp}/junk.pcap", "--out", "{tmp}/o"]),
    ("elf-not-an-object", ["xdp", "analyze", "{tmp}/junk.pcap", "--out", "{tmp}/o"]),
    ("out-is-a-file", ["run", PAPER, *SMALL, "--out", "{tmp}/junk.pcap"]),
    ("router-unknown-key", ["router", "run", ROUTER / "setup_a.toml", "--param", "run.durration_us=5", "--out",
                            "{tmp}/o"]),
]


@pytest.mark.parametrize(("case", "args"), ERRORS, ids=[c for c, _ in ERRORS])
def test_error_messages(case: str, args: list[Any], tmp_path: Path, snapshot) -> None:
    (tmp_path / "junk.pcap").write_bytes(b"this is not a capture\n" * 4)
    r = nicsim(*(str(a).replace("{tmp}", str(tmp_path)) for a in args))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert not (tmp_path / "o").exists()
    line = re.sub(r"\s+", " ", scrub(r.stderr, tmp_path).strip())
    assert line == snapshot
