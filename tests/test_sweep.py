"""Sweeps that keep their work (issue 34): a point that fails is listed with its one-line error
and the others are written (exit 1; 2 when every point failed, nothing written), `--fail-fast`
stops at the first; zipped parameters (`--zip`) are one axis of the grid."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from nicsim.errors import ConfigError
from nicsim.sweep import SOME_FAILED, grid

from conftest import PAPER, ROOT, assert_one_line_error, nicsim, xdp_object

TINY = ["-p", "traffic.packets=300", "-p", "measure.window=[10,290]"]
ROUTER_D = ROOT / "configs" / "router" / "setup_d.toml"  # two ports send
SHORT = ["-p", "run.duration_us=400", "-p", "run.warmup_us=100"]


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "sweep.csv").open() as f:
        return list(csv.DictReader(f))


def test_grid_zips_keys_as_one_axis() -> None:
    assert grid({"a": [1, 2]}, {"b": [3, 4], "c": [5, 6]}) == [
        {"a": 1, "b": 3, "c": 5}, {"a": 1, "b": 4, "c": 6}, {"a": 2, "b": 3, "c": 5}, {"a": 2, "b": 4, "c": 6}]
    assert grid({"a": [1, 2], "b": [3]}) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]
    with pytest.raises(ConfigError, match="as many values"):
        grid({}, {"b": [1, 2], "c": [1]})


def test_a_failing_point_is_listed_and_the_rest_written(tmp_path: Path) -> None:
    out = tmp_path / "o"
    r = nicsim("sweep", PAPER, *TINY, "-p", "arch=flexpipe,bogus,panic", "--workers", "2", "--out", out)
    assert r.returncode == SOME_FAILED == 1, r.stderr
    assert "Traceback" not in r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert [p["params"]["arch"] for p in s["points"]] == ["flexpipe", "panic"]
    [f] = s["failed"]
    assert f["point"] == 2 and f["params"]["arch"] == "bogus" and "arch" in f["error"] and "\n" not in f["error"]
    assert [row["arch"] for row in rows(out)] == ["flexpipe", "panic"]
    assert "FAILED (point 2)" in r.stdout  # the table lists it
    failed_lines = [ln for ln in r.stderr.splitlines() if ln.startswith("failed: point 2 (arch=bogus)")]
    assert len(failed_lines) == 1 and "arch" in failed_lines[0], r.stderr
    assert "1 of 3 points failed" in r.stderr and "that finished are written" in r.stderr


def test_fail_fast_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "o"
    r = nicsim("sweep", PAPER, *TINY, "-p", "arch=flexpipe,bogus", "--fail-fast", "--out", out)
    assert_one_line_error(r, "--param", "arch")
    assert not out.exists()


def test_every_point_failing_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "o"
    r = nicsim("sweep", PAPER, *TINY, "-p", "arch=bogus,fpga", "--workers", "1", "--out", out)
    line = assert_one_line_error(r, "--param", "arch", "1 more points failed")
    assert "bogus" in line
    assert not out.exists()


def test_zipped_parameters_are_one_axis(tmp_path: Path) -> None:
    """Two ports' rates set together (2 points per --param value, not 4)."""
    out = tmp_path / "o"
    r = nicsim("sweep", ROUTER_D, *SHORT, "-p", "seed=1,2", "--zip", "traffic[0].rate_mbps=100,300",
               "--zip", "traffic[1].rate_mbps=150,350", "--workers", "2", "--out", out)
    assert r.returncode == 0, r.stderr
    got = [(int(row["seed"]), float(row["traffic[0].rate_mbps"]), float(row["traffic[1].rate_mbps"])) for row in rows(out)]
    assert got == [(1, 100, 150), (1, 300, 350), (2, 100, 150), (2, 300, 350)]
    s = json.loads((out / "summary.json").read_text())
    assert s["zipped"] == ["traffic[0].rate_mbps", "traffic[1].rate_mbps"]
    assert [p["summary"]["ports"]["nic0"]["offered"]["mbps"] > 0 for p in s["points"]] == [True] * 4


@pytest.mark.parametrize("args,needles", [
    (["--zip", "seed=1,2", "--zip", "traffic.rate_gbps=64"], ["--zip", "as many values", "seed has 2"]),
    (["-p", "seed=1,2", "--zip", "seed=3,4"], ["--zip", "seed", "twice"]),
    (["--zip", "seed"], ["--zip", "KEY=V1,V2"]),
    (["--zip", "seed=1,2", "--zip", "flows[9].weight=1,2"], ["--zip", "flows[9]"]),
], ids=["unequal", "both", "no-equals", "bad-key"])
def test_bad_zip_is_one_line(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    out = tmp_path / "o"
    assert_one_line_error(nicsim("sweep", PAPER, *TINY, *args, "--out", out), *needles)
    assert not out.exists()


def test_xdp_sweep_keeps_the_analyses_beside_a_refused_object(tmp_path: Path) -> None:
    """`bad_printk.o` (a helper the analyzer refuses) among good objects: the others are written."""
    calls, bad = xdp_object("calls"), xdp_object("bad_printk")
    if not (calls.exists() and bad.exists()):
        pytest.skip("run `make xdp-suite`")
    out = tmp_path / "o"
    r = nicsim("xdp", "sweep", calls, bad, "--timeout", "10", "--workers", "1", "--out", out, timeout=120)
    assert r.returncode == 1, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert [p["object"] for p in s["points"]] == [str(calls)]
    [f] = s["failed"]
    assert (f["point"], f["object"], f["target"]) == (2, str(bad), "nfp")
    assert "unsupported helper bpf_trace_printk" in f["error"]
    assert [row["name"] for row in rows(out)] == ["calls"]
    assert "bad_printk" in r.stdout and "FAILED (point 2)" in r.stdout
    assert any(ln.startswith("failed: point 2") and "bpf_trace_printk" in ln for ln in r.stderr.splitlines())
    ff = nicsim("xdp", "sweep", calls, bad, "--timeout", "10", "--workers", "1", "--fail-fast",
                "--out", tmp_path / "ff", timeout=120)
    assert_one_line_error(ff, "bad_printk.o", "bpf_trace_printk")
    assert not (tmp_path / "ff").exists()


def test_xdp_sweep_names_objects_alike_in_table_csv_and_plot(tmp_path: Path) -> None:
    """Two objects of one program (quic_lb) are told apart by their file names everywhere."""
    v4, v6 = xdp_object("quic_lb_v4"), xdp_object("quic_lb_v6")
    if not (v4.exists() and v6.exists()):
        pytest.skip("run `make xdp-suite`")
    out = tmp_path / "o"
    r = nicsim("xdp", "sweep", v4, v6, "--timeout", "10", "--workers", "1", "--out", out, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [row["name"] for row in rows(out)] == ["quic_lb_v4", "quic_lb_v6"]
    assert "quic_lb_v4" in r.stdout and "quic_lb_v6" in r.stdout
    svg = (out / "sweep.svg").read_text()
    assert "quic_lb_v4" in svg and "quic_lb_v6" in svg
