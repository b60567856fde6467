"""Capture replay: a pcap written by one run drives another, flows matched by the Pre-Processor."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from conftest import PAPER, nicsim


def test_replay_a_capture(tmp_path: Path) -> None:
    first = tmp_path / "first"
    r = nicsim("run", PAPER, "--out", first, "--egress-pcap", "--param", "functional=true",
               "--param", "traffic.packets=400", "--param", "measure.window=[10,390]")
    assert r.returncode == 0, r.stderr
    delivered = json.loads((first / "summary.json").read_text())["packets"]["delivered"]
    second = tmp_path / "second"
    r = nicsim("run", PAPER, "--out", second, "--param", f"traffic.replay={{path = \"{first / 'egress.pcap'}\", timing = \"rate\"}}",
               "--param", "traffic.packets=100000", "--param", "measure.window=[10,390]")
    assert r.returncode == 0, r.stderr
    s = json.loads((second / "summary.json").read_text())
    # Every captured frame is offered once and matched to its flow by the header fields.
    assert s["packets"]["offered"] == delivered
    assert s["packets"]["delivered"] == delivered and s["packets"]["dropped_total"] == 0
    assert sum(f["delivered_in_window"] for f in s["per_flow"].values()) == 380
    assert all(sum(f["chains"].values()) > 50 for f in s["per_flow"].values())


def test_replay_of_a_broken_capture_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\xde\xad\xbe\xef" + bytes(40))
    r = nicsim("run", PAPER, "--out", tmp_path / "o", "--param", f"traffic.replay.path=\"{bad}\"")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "bad magic" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_a_replay_longer_than_64_bit_time_holds_is_a_one_line_error(tmp_path: Path) -> None:
    # Two frames 100 s apart, replayed at the capture's own timing, with clocks whose lcm
    # (1000 * 997 * 991 * 983 ticks per µs) lets 64-bit time cover only ~19 s.
    frame = bytes(12) + b"\x08\x00" + bytes(46)
    records = b"".join(struct.pack("<IIII", ts, 0, len(frame), len(frame)) + frame for ts in (0, 100))
    cap = tmp_path / "slow.pcap"
    cap.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + records)
    text = Path(PAPER).read_text()
    for old, new in [("clock_mhz = 150", "clock_mhz = 997"), ("clock_mhz = 150", "clock_mhz = 991"),
                     ("clock_mhz = 100", "clock_mhz = 983")]:
        assert old in text
        text = text.replace(old, new, 1)
    cfg = tmp_path / "odd.toml"
    cfg.write_text(text)
    r = nicsim("run", cfg, "--out", tmp_path / "ok", "--param", "traffic.packets=200", "--param", "measure.window=[10,190]")
    assert r.returncode == 0, r.stderr
    r = nicsim("run", cfg, "--out", tmp_path / "o", "--param", f"traffic.replay.path=\"{cap}\"")
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert "traffic.replay.path" in r.stderr and "64-bit time covers only" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
