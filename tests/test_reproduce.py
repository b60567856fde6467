"""`nicsim reproduce flexpipe`: the summary's schema and the paper's results within the issue's bands.

These are the acceptance checks of the datapath model. They run the full experiment (11,000
packets per point), as `make demo` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nicsim.reproduce import flexpipe

from conftest import stable

# pytest-xdist: one worker runs this module (the module's reproduction is shared by its tests).
pytestmark = pytest.mark.xdist_group("reproduce")


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("repro") / "flexpipe"
    flexpipe.main(out)
    summary = json.loads((out / "summary.json").read_text())
    figures = ("fig3_throughput", "fig4_latency", "fig5_recirculation", "overview")
    expected = [".nicsim-output", "provenance.json", "summary.json", "comparison.csv"]
    expected += [f"{n}.{e}" for n in figures for e in ("png", "svg")]
    assert sorted(p.name for p in out.iterdir()) == sorted(expected)
    return summary


def test_summary_is_what_it_was(result: dict, snapshot) -> None:
    # Byte for byte (tests/__snapshots__/test_reproduce.ambr; pytest --snapshot-update).
    assert stable(result, Path("/nonexistent")) == snapshot


def test_schema(result: dict) -> None:
    assert sorted(result) == ["latency", "nicsim_version", "recirculation", "schema_version", "table2", "throughput"]
    assert {(t["arch"], t["offered_gbps"]) for t in result["throughput"]} == {
        (a, r) for a in ("flexpipe", "panic", "staticpipe") for r in (64, 80, 96, 112, 128)}
    assert all(set(e) == {"arch", "offered_gbps", "flow", "size_bytes", "mean_us", "min_us", "max_us"} for e in result["latency"])
    assert all(e["offered_gbps"] == 90 for e in result["latency"])
    assert all(set(r) == {"arch", "load_fraction", "recirc_fraction", "mean_latency_us", "achieved_gbps"} for r in result["recirculation"])


def test_table2_exactly(result: dict) -> None:
    assert [result["table2"][o]["units"] for o in ("crc", "firewall", "sha3", "aes", "jpeg", "rss")] == [8, 128, 39, 4, 40, 3]


def test_fig3_throughput(result: dict) -> None:
    got = {(t["arch"], t["offered_gbps"]): t["achieved_gbps"] for t in result["throughput"]}
    for arch in ("flexpipe", "staticpipe"):
        for rate in (64, 80, 96, 112, 128):
            assert got[arch, rate] >= 0.97 * rate, (arch, rate, got[arch, rate])
    # PANIC saturates between 85 and 100 Gbit/s.
    assert 85 <= got["panic", 128] <= 100
    assert got["panic", 128] < 0.9 * 128


def test_fig4_latency(result: dict) -> None:
    def flow_means(arch: str) -> dict[str, float]:
        es = [e for e in result["latency"] if e["arch"] == arch]
        flows = {e["flow"] for e in es}
        return {f: sum(e["mean_us"] for e in es if e["flow"] == f) / sum(e["flow"] == f for e in es) for f in flows}

    fp, sp, pa = flow_means("flexpipe"), flow_means("staticpipe"), flow_means("panic")
    assert all(fp[f] < sp[f] for f in fp), (fp, sp)
    vs_static = sum(sp[f] / fp[f] for f in fp) / len(fp)
    vs_panic = sum(pa[f] / fp[f] for f in fp) / len(fp)
    assert 0.75 * 1.9 <= vs_static <= 1.25 * 1.9, vs_static
    assert 0.75 * 1.8 <= vs_panic <= 1.25 * 1.8, vs_panic


def test_fig5_recirculation_knee(result: dict) -> None:
    assert 0.35 <= flexpipe.knee(result, "flexpipe", 0.7) <= 0.50
    # More load, earlier knee.
    assert flexpipe.knee(result, "flexpipe", 0.5) > flexpipe.knee(result, "flexpipe", 0.7) > flexpipe.knee(result, "flexpipe", 0.9)
