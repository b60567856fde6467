"""The router fabric from Python and the CLI: `nicsim router run` on set-up B (summary.json,
ports.csv, the table), a bad configuration (one line naming the key, exit 2, nothing written),
the Python API, and `nicsim reproduce router --quick` end to end with every check holding."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import ROOT, assert_one_line_error, conforms, nicsim, stable

CONFIGS = ROOT / "configs" / "router"
SHORT = ["--param", "run.duration_us=1000", "--param", "run.warmup_us=200"]


def test_router_run_setup_b(tmp_path: Path) -> None:
    out = tmp_path / "b"
    r = nicsim("router", "run", CONFIGS / "setup_b.toml", "--out", out, *SHORT)
    assert r.returncode == 0, r.stderr
    assert "nic1" in r.stdout and "wrote" in r.stdout
    s = json.loads((out / "summary.json").read_text())
    assert s["finished"] and not s["interrupted"]
    assert s["packets"]["conserved"] and s["packets"]["dropped"] == 0
    assert s["ports"]["nic1"]["forwarded"]["mbps"] == pytest.approx(1000, rel=0.02)
    assert s["ports"]["nic0"]["offered"]["kpps"] == pytest.approx(1488.1, rel=0.01)
    rows = {row["port"]: row for row in csv.DictReader((out / "ports.csv").open())}
    assert set(rows) == {"nic0", "nic1"}
    assert float(rows["nic1"]["forwarded_mbps"]) == pytest.approx(1000, rel=0.02)
    assert float(rows["nic1"]["forwarded_kpps"]) == pytest.approx(1488.1, rel=0.02)
    assert int(rows["nic0"]["dropped_packets"]) == 0
    assert json.loads((out / "config.json").read_text())["run"]["duration_us"] == 1000


@pytest.mark.parametrize(("param", "key"), [
    ("traffic[0].rate_mbps=2000", "traffic[0].rate_mbps"),
    ("nics[1].routes=[{dst=\"10.0.0.0/24\", to=\"nic9\"}]", "nics[1].routes[0].to"),
    ("pc.bus.colour=1", "pc.bus.colour"),
    # More room than the output FIFO has: no RES would ever be sent.
    ("nic.res_min_free_bytes=1000000", "nic.res_min_free_bytes"),
    # Place names are split on '.'.
    ("nics[0].name=\"nic.0\"", "nics[0].name"),
    # Each weight finite, their sum not.
    ("traffic[0].flows=[{dst=\"10.0.1.1\", weight=1e308}, {dst=\"10.0.1.2\", weight=1e308}]",
     "traffic[0].flows"),
])
def test_router_bad_config_is_one_line(tmp_path: Path, param: str, key: str) -> None:
    out = tmp_path / "bad"
    r = nicsim("router", "run", CONFIGS / "setup_b.toml", "--out", out, "--param", param)
    assert_one_line_error(r, "--param", key)  # the value came from --param, not the file
    assert not out.exists()
    assert not list(tmp_path.iterdir())  # no temporary folder left either


def test_frames_further_apart_than_a_slice_run_to_the_end(tmp_path: Path) -> None:
    # 128-byte frames at 1 Mbit/s arrive 1,184 µs apart, more than the 1,000 µs slices the core
    # runs in between looks for Ctrl-C: the run never ended (found by tests/test_properties.py).
    r = nicsim("router", "run", ROOT / "configs" / "router" / "setup_a.toml", "-p", "traffic[0].rate_mbps=1",
               "-p", "traffic[0].frame_bytes=128", "-p", "run.duration_us=5000", "-p", "run.warmup_us=0",
               "--out", tmp_path / "o", "-q", timeout=60)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["packets"]["offered"] == 5 and s["packets"]["conserved"], s["packets"]


def test_router_api_same_seed_same_summary() -> None:
    from nicsim import router

    cfg = router.load(CONFIGS / "setup_d.toml", ["run.duration_us=1500", "run.warmup_us=500"])
    a, b = router.simulate(cfg), router.simulate(cfg)
    assert a == b
    assert all(p.endswith(".input") for p in a["drops_by_place"])
    # The same run from TOML text in the core: the same summary.
    from nicsim import _core

    text = (CONFIGS / "setup_d.toml").read_text().replace("duration_us = 10000.0", "duration_us = 1500.0")
    text = text.replace("warmup_us = 2000.0", "warmup_us = 500.0")
    summary, interrupted = _core.router_run(text, "toml")
    stamped = ("interrupted", "nicsim_version", "schema_version")  # added by the Python side
    assert not interrupted and json.loads(summary) == {k: v for k, v in a.items() if k not in stamped}


def test_router_summary_matches_its_typed_dicts() -> None:
    """The TypedDicts in nicsim.router.summary describe what a real run returns, key by key
    (drops, rings and rates included); a stray key is found."""
    from nicsim import router
    from nicsim.router.summary import Summary

    cfg = router.load(CONFIGS / "setup_d.toml", ["run.duration_us=1500", "run.warmup_us=500"])
    s = router.simulate(cfg)
    assert s["drops"] and any("capacity_packets" in f for f in s["fifos"].values())
    assert conforms(s, Summary) == []
    s["drops"][0]["why"] = "?"
    assert conforms(s, Summary) == ["summary.drops[0].why: not in the type"]


def test_reproduce_router_quick(tmp_path: Path, snapshot) -> None:
    out = tmp_path / "repro"
    r = nicsim("reproduce", "router", "--quick", "--out", out)
    assert r.returncode == 0, r.stderr
    # Byte for byte what it was (tests/__snapshots__/test_router.ambr; --snapshot-update).
    assert {"summary": stable(json.loads((out / "summary.json").read_text()), tmp_path),
            "comparison.csv": (out / "comparison.csv").read_text()} == snapshot
    assert "every check within its band" in r.stdout, r.stdout
    s = json.loads((out / "summary.json").read_text())
    # Verdicts say how far from the paper, against the band (issue 34: "holds" for 4.0 against 3.4).
    verdicts = {c["quantity"]: c["verdict"] for c in s["comparison"]}
    assert verdicts["1518 B: forwarded Gbit/s (frame bits, bus bound)"].startswith(
        "-14.4% of the paper's bus limit: at most +2% above"), verdicts
    assert verdicts["forwarded Mbit/s"] == "+0.8%: within ±10%", verdicts
    assert s["all_hold"]
    failing = [c for c in s["comparison"] if c["holds"] is False]
    assert not failing, failing
    assert 360 <= s["setups"]["A"]["forwarded_mbps"] <= 440
    assert s["beyond"], "the NIC sweep is part of the default run"
    for stem in ("setups", "fig4_saturation", "fig5_qos", "fig6_qos", "beyond_nics"):
        assert (out / f"{stem}.png").stat().st_size > 0 and (out / f"{stem}.svg").stat().st_size > 0
    rows = list(csv.DictReader((out / "comparison.csv").open()))
    assert {"experiment", "quantity", "paper", "nicsim", "holds", "verdict"} <= set(rows[0])
