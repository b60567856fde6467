"""Priority classes in FlexPipe (`[qos]`, beyond the paper) as a user runs them: `nicsim reproduce
flexpipe --qos` and `nicsim run` with a `[qos]` table. The claims of docs/reproduce-flexpipe.md
are checked on the runs made here."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import PAPER, assert_one_line_error, nicsim

# pytest-xdist: one worker runs this module (the module's reproduction is shared by its tests).
pytestmark = pytest.mark.xdist_group("qos")


@pytest.fixture(scope="module")
def qos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("qos") / "out"
    r = nicsim("reproduce", "flexpipe", "--qos", "--out", out, "--workers", "2", timeout=900)
    assert r.returncode == 0, r.stderr
    assert "p99 sojourn" in r.stdout
    rows = json.loads((out / "summary.json").read_text())["qos"]
    return out, rows


def _p99(rows: list[dict[str, Any]], variant: str, cls: str, rate: int, key: str = "p99_us") -> float:
    (r,) = [r for r in rows if r["variant"] == variant and r["class"] == cls and r["offered_gbps"] == rate]
    return r[key]


def test_the_experiment_writes_its_table_and_plot(qos: tuple[Path, list[dict[str, Any]]]) -> None:
    out, rows = qos
    assert len(rows) == 4 * 6 * 2
    assert list(csv.DictReader((out / "qos.csv").open()))[0].keys() >= {"variant", "class", "p99_sojourn_us"}
    assert (out / "qos_latency.png").stat().st_size > 0 and (out / "qos_latency.svg").stat().st_size > 0


def test_strict_keeps_the_high_class_near_its_unloaded_latency_and_the_low_class_absorbs(
        qos: tuple[Path, list[dict[str, Any]]]) -> None:
    _, rows = qos
    unloaded = _p99(rows, "flexpipe strict", "high", 40)
    assert _p99(rows, "flexpipe strict", "high", 128) < 1.2 * unloaded
    # Without classes the same traffic's high class queues: the classes are what keeps it down.
    assert _p99(rows, "flexpipe", "high", 128) > 1.4 * _p99(rows, "flexpipe", "high", 40)
    for rate in (110, 120, 128):
        assert _p99(rows, "flexpipe strict", "high", rate) < _p99(rows, "flexpipe", "high", rate)
        assert _p99(rows, "flexpipe strict", "low", rate) >= _p99(rows, "flexpipe", "low", rate)
    # PANIC's PIFO runs beside it, with its own drops beyond its peak.
    assert sum(r["dropped"] for r in rows if r["variant"] == "panic" and r["offered_gbps"] == 128) > 0


def test_a_run_with_classes_reports_each_class(tmp_path: Path) -> None:
    r = nicsim("run", PAPER, "--out", tmp_path / "o", "-q", "-p", "flows[2].priority=1", "-p", "qos.policy=strict",
               "-p", "traffic.rate_gbps=128", "-p", "traffic.packets=3000", "-p", "measure.window=[200,2800]")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert set(s["classes"]) == {"0", "1"}
    assert sum(c["offered"] for c in s["classes"].values()) == s["packets"]["offered"]
    assert "ingress.new.1" in s["fifos"] and "crc.units_out.1" in s["fifos"]


@pytest.mark.parametrize(("params", "key"), [
    (["-p", "qos.policy=weighted", "-p", "flows[2].priority=1"], "qos.weights"),
    (["-p", "qos.policy=fifo"], "qos.policy"),
    (["-p", "qos.policy=strict", "-p", "arch=panic"], "qos.policy"),
    (["-p", "qos.policy=strict", "-p", "flows[0].priority=9"], "flows[0].priority"),
])
def test_bad_qos_settings_are_one_line_errors(tmp_path: Path, params: list[str], key: str) -> None:
    r = nicsim("run", PAPER, "--out", tmp_path / "o", *params)
    assert_one_line_error(r, key)
    assert not (tmp_path / "o").exists()
