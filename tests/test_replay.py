"""Capture replay: a pcap written by one run drives another, flows matched by the Pre-Processor."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from conftest import PAPER, assert_one_line_error, nicsim


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


def _udp_frame(dport: int, wire_len: int) -> bytes:
    """An Ethernet/IPv4/UDP frame of `wire_len` bytes (no FCS) to 10.0.1.1:`dport`."""
    ip_len = wire_len - 14
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 1, 1]))
    udp = struct.pack("!HHHH", 1024, dport, ip_len - 20, 0)
    frame = bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip + udp
    return frame + bytes(wire_len - len(frame))


def _pcap(path: Path, frames: list[bytes], snaplen: int = 65535) -> Path:
    """A pcap of `frames`, each cut to `snaplen` bytes (its original length kept), 1 µs apart."""
    recs = b"".join(struct.pack("<IIII", 0, i, min(len(f), snaplen), len(f)) + f[:snaplen] for i, f in enumerate(frames))
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, 1) + recs)
    return path


def test_a_snaplen_cut_capture_keeps_its_frames_sizes_and_flows(tmp_path: Path) -> None:
    """Frames of 1,500 bytes on the wire, 64 captured: sized and matched as the wire had them."""
    cap = _pcap(tmp_path / "cut.pcap", [_udp_frame(5001, 1500)] * 400, snaplen=64)
    win = ["-p", "measure.window=[10,390]", "-q"]
    r = nicsim("run", PAPER, "--out", tmp_path / "sizes", "-p", f'traffic.size={{dist="capture",path="{cap}"}}',
               "-p", "traffic.packets=400", *win)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "sizes" / "summary.json").read_text())
    assert {size for f in s["per_flow"].values() for size in f["per_size"]} == {"1504"}
    r = nicsim("run", PAPER, "--out", tmp_path / "replay", "-p", f'traffic.replay={{path="{cap}",timing="rate"}}', *win)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "replay" / "summary.json").read_text())
    assert s["packets"]["dropped_total"] == 0 and s["per_flow"]["flow1"]["delivered_in_window"] == 380
    assert set(s["per_flow"]["flow1"]["per_size"]) == {"1504"}


@pytest.mark.parametrize(("wire_len", "needle"), [(4200, "pipeline.stage_fifo_bytes (4096 bytes) cannot hold"),
                                                  (12000, "larger than the 9600 bytes")])
def test_a_captured_frame_the_datapath_cannot_hold_is_refused(tmp_path: Path, wire_len: int, needle: str) -> None:
    cap = _pcap(tmp_path / "big.pcap", [_udp_frame(5001, 1000), _udp_frame(5001, wire_len)], snaplen=256)
    for key, value in (("traffic.size", f'{{dist="capture",path="{cap}"}}'),
                       ("traffic.replay", f'{{path="{cap}",timing="rate"}}')):
        r = nicsim("run", PAPER, "--out", tmp_path / "o", "-p", f"{key}={value}", "-p", "measure.window=[0,2]",
                   "-p", "traffic.packets=2")
        line = assert_one_line_error(r, str(cap), needle, "packet 2")
        assert key in line
        assert not (tmp_path / "o").exists()


def test_a_window_past_a_replays_packets_is_refused(tmp_path: Path) -> None:
    cap = _pcap(tmp_path / "small.pcap", [_udp_frame(5001, 200)] * 50)
    r = nicsim("run", PAPER, "--out", tmp_path / "o", "-p", f'traffic.replay={{path="{cap}",timing="rate"}}')
    assert_one_line_error(r, "measure.window", "50 packets to replay", str(cap), "traffic.replay.path")
    assert not (tmp_path / "o").exists()
