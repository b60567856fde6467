"""`nicsim offloads size`: the fewest units per offload that meet a p99 sojourn and a loss target,
found by simulation. Each answer is checked against simulations run here, not against numbers
written down: the count found meets the targets and one unit fewer does not."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import PAPER, assert_one_line_error, conforms, nicsim

# pytest-xdist: one worker runs this module (the module's sizing search is shared by its tests).
pytestmark = pytest.mark.xdist_group("sizing")

#: The paper's configuration, shorter: 3,000 packets measured from the 200th to the 2,800th.
SHORT = ["-p", "traffic.packets=3000", "-p", "measure.window=[200,2800]"]


def _size(out: Path, *args: str, code: int = 0) -> dict[str, Any]:
    r = nicsim("offloads", "size", PAPER, "--out", out, *SHORT, "--workers", "2", "-q", *args, timeout=600)
    assert r.returncode == code, r.stderr
    return json.loads((out / "summary.json").read_text())


def _simulate(units: dict[str, int], *overrides: str) -> dict[str, Any]:
    from nicsim.config import load_config
    from nicsim.datapath import simulate

    cfg = load_config(PAPER, [*SHORT[1::2], *overrides])
    names = [o["name"] for o in cfg["offloads"]]
    for name, n in units.items():
        cfg["offloads"][names.index(name)]["units"] = n
    return dict(simulate(cfg, partial_on_interrupt=False))


def _meets(s: dict[str, Any], p99_us: float) -> bool:
    p = s["packets"]
    return p["dropped_total"] == 0 and p["in_flight"] == 0 and s["sojourn_us"]["p99"] <= p99_us


@pytest.fixture(scope="module")
def sized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("size") / "out"
    return out, _size(out, "--p99-us", "20")


def test_the_summary_is_typed_and_every_file_is_written(sized: tuple[Path, dict[str, Any]]) -> None:
    from nicsim.datapath.sizing import SizingSummary

    out, s = sized
    assert conforms(s, SizingSummary) == []
    for f in ("sizing.csv", "points.csv", "p99_vs_units.png", "p99_vs_units.svg"):
        assert (out / f).stat().st_size > 0, f
    rows = list(csv.DictReader((out / "sizing.csv").open()))
    assert [r["offload"] for r in rows] == [o["name"] for o in s["offloads"]]
    assert len(list(csv.DictReader((out / "points.csv").open()))) == s["runs"] == len(s["points"])


def test_each_offload_alone_gets_the_fewest_units_that_meet_the_target(sized: tuple[Path, dict[str, Any]]) -> None:
    """The search's answer per offload, checked by simulation: its count meets the targets with
    the others generous, and one unit fewer misses them."""
    _, s = sized
    generous = s["baseline"]["units"]
    for o in s["offloads"]:
        n = o["alone_units"]
        assert n is not None and 1 <= n <= max(o["eq1_units"], o["configured_units"])
        assert _meets(_simulate({**generous, o["name"]: n}), 20.0), o
        if n > 1:
            assert not _meets(_simulate({**generous, o["name"]: n - 1}), 20.0), o


def test_the_joint_counts_meet_the_targets_together(sized: tuple[Path, dict[str, Any]]) -> None:
    _, s = sized
    j = s["joint"]
    assert j["met"]
    units = {o["name"]: o["units"] for o in s["offloads"]}
    assert units == j["units"]
    run = _simulate(units)
    assert _meets(run, 20.0)
    assert run["sojourn_us"]["p99"] == j["p99_us"]
    # Every count at least what it needed alone, the additions counted, the saving Eq. 1's minus it.
    assert all(units[o["name"]] >= o["alone_units"] for o in s["offloads"])
    assert sum(units.values()) - sum(o["alone_units"] for o in s["offloads"]) == j["added_units"]
    assert s["saving_units"] == s["eq1_total_units"] - s["total_units"] > 0


def test_a_datapath_that_cannot_keep_up_misses_a_latency_target_by_its_sojourn() -> None:
    """With too few CRC units the generator waits to enter the datapath: the Pre-Processor to
    sink latency stays near the unloaded value, the sojourn does not."""
    slow = _simulate({"crc": 2})
    assert slow["throughput_gbps"] < 0.5 * slow["offered_gbps"]
    assert slow["latency_us"]["p99"] < 25
    assert slow["sojourn_us"]["p99"] > 10 * slow["latency_us"]["p99"]


def test_targets_that_units_cannot_meet_exit_1_with_the_reason(tmp_path: Path) -> None:
    r = nicsim("offloads", "size", PAPER, "--out", tmp_path / "o", *SHORT, "--p99-us", "1", timeout=600)
    assert r.returncode == 1, r.stderr
    said = " ".join(r.stderr.split())
    assert "misses the targets" in said and "units are not the limit" in said
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert not s["baseline"]["met"] and not s["joint"]["met"] and s["runs"] == 1
    assert all(o["units"] is None and o["saving_units"] is None for o in s["offloads"])


def test_a_capture_sizes_the_offloads_by_its_frame_sizes_or_as_a_replay(tmp_path: Path) -> None:
    """`--traffic`: a capture written by a run, used for its sizes (the configuration's flows and
    rate) and replayed at the configuration's rate (its packets match the paper's flows)."""
    r = nicsim("run", PAPER, "--out", tmp_path / "cap", "--egress-pcap", "-p", "functional=true", *SHORT, "-q")
    assert r.returncode == 0, r.stderr
    pcap = tmp_path / "cap" / "egress.pcap"
    sizes = _size(tmp_path / "sizes", "--p99-us", "30", "--traffic", str(pcap))
    replay = _size(tmp_path / "replay", "--p99-us", "30", "--traffic", str(pcap), "--timing", "rate")
    for s in (sizes, replay):
        assert s["joint"]["met"] and s["traffic"] == str(pcap)
        assert s["baseline"]["loss"] == 0.0
    assert sizes["points"] != replay["points"]


def test_a_capture_that_matches_no_flow_is_told_the_catch_all(tmp_path: Path) -> None:
    """A capture of one's own (UDP to port 53) matches none of the shipped flows (ports
    5001-5004): the search names the drops and the fix, and the fix works (issue 34)."""
    import struct

    from nicsim import _core

    frames = []
    for k in range(3000):
        size = (64, 128, 256, 512, 1024, 1500)[k % 6] - 4  # without the FCS
        udp = struct.pack("!HHHH", 40000 + k % 7, 53, size - 34, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, size - 14, k, 0, 64, 17, 0, bytes([192, 0, 2, 1]),
                         bytes([198, 51, 100, 1]))
        frames.append(bytes.fromhex("020000000002020000000001") + b"\x08\x00" + ip + udp + bytes(size - 42))
    pcap = tmp_path / "own.pcap"
    _core.write_pcap(pcap, frames)
    r = nicsim("offloads", "size", PAPER, "--out", tmp_path / "o", *SHORT, "--workers", "2", "--p99-us", "30",
               "--traffic", pcap, "--timing", "rate", timeout=600)
    assert r.returncode == 1, r.stderr
    said = " ".join(r.stderr.split())
    assert "3,000 of the capture's packets matched no flow's `match`" in said and "-p 'flows[0].match={}'" in said, said
    r = nicsim("offloads", "size", PAPER, "--out", tmp_path / "fixed", *SHORT, "--workers", "2", "--p99-us", "30",
               "--traffic", pcap, "--timing", "rate", "-p", "flows[0].match={}", "-q", timeout=600)
    s = json.loads((tmp_path / "fixed" / "summary.json").read_text())
    assert "no_flow" not in s["baseline"]["dropped"] and "matched no flow" not in r.stderr, r.stderr


@pytest.mark.parametrize(("args", "needles"), [
    (["--p99-us", "-1"], ["--p99-us"]),
    (["--p99-us", "nan"], ["--p99-us"]),
    (["--loss", "2"], ["--loss"]),
    (["--timing", "bogus"], ["--timing"]),
    (["--timing", "rate"], ["--timing", "--traffic"]),
    (["--traffic", "/nonexistent/x.pcap"], ["--traffic", "/nonexistent/x.pcap"]),
    (["--workers", "0"], ["--workers"]),
    (["-p", "offloads[0].units=0"], ["offloads[0].units"]),
])
def test_bad_options_are_one_line_errors_and_write_nothing(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    p99 = [] if "--p99-us" in args else ["--p99-us", "20"]
    r = nicsim("offloads", "size", PAPER, "--out", tmp_path / "o", *SHORT, *p99, *args)
    assert_one_line_error(r, *needles)
    assert not (tmp_path / "o").exists()


def test_a_latency_target_is_required(tmp_path: Path) -> None:
    """FlexPipe holds traffic back rather than dropping it: with a loss target alone, one unit
    per offload would "meet" it at a fraction of the offered rate."""
    r = nicsim("offloads", "size", PAPER, "--out", tmp_path / "o", *SHORT, "--loss", "0")
    assert_one_line_error(r, "--p99-us")
    assert not (tmp_path / "o").exists()

