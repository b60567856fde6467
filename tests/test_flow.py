"""Flow memory from Python: the bindings (FlowCapture, FlowView) and `nicsim flow reassemble`."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from nicsim import InputError
from nicsim.flow import open_capture

from conftest import assert_one_line_error, nicsim

SYN, ACK, FIN = 0x02, 0x10, 0x01


def _frame(seq: int, flags: int, payload: bytes, reverse: bool = False) -> bytes:
    """Ethernet + IPv4 + TCP (checksums left zero: the reassembler does not verify them)."""
    a, b = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    src, dst, sport, dport = (b, a, 80, 40000) if reverse else (a, b, 40000, 80)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 0, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, src, dst) + tcp
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip


ISN = 0xFFFFFFF0  # the stream crosses the 32-bit wrap
MESSAGE = b"GET /index.html HTTP/1.1\r\nHost: flowmem\r\n\r\n"


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    from nicsim import _core

    m = MESSAGE
    frames = [
        _frame(ISN, SYN, b""),
        _frame(ISN + 1 + 10, ACK, m[10:20]),
        _frame(ISN + 1, ACK, m[:10]),
        _frame(ISN + 1 + 20, ACK, m[20:30]),
        _frame(ISN + 1 + 20, ACK, m[20:30]),  # retransmission
        _frame(ISN + 1 + 30, ACK, m[30:]),
        _frame(ISN + 1 + len(m), FIN | ACK, b""),
        _frame(500, ACK, b"HTTP/1.1 200 OK\r\n", reverse=True),
        _frame(500 + 17 + 5, ACK, b"body!", reverse=True),  # 5 bytes lost before this
    ]
    path = tmp_path / "flows.pcap"
    _core.write_pcap(str(path), frames)
    return path


def test_views_read_scan_and_search_in_place(capture: Path) -> None:
    cap = open_capture(capture)
    assert len(cap) == 1
    counts = cap.counts()
    assert counts["read"] == 9 and sum(v for k, v in counts.items() if k != "read") == 9
    assert counts["retransmission"] == 1
    req, resp = cap.view(0, 0), cap.view(0, 1)
    assert len(req) == len(MESSAGE) and req.read(0, len(MESSAGE)) == MESSAGE
    assert len(req.segments) > 1  # out of order: not back to back in the arena
    # "HTTP/1.1\r\nHost" straddles segments 1, 2 and 3.
    start = MESSAGE.index(b"HTTP")
    assert req.regex_matches(r"HTTP/1\.1\r\nHo[a-z]+") == [(start, start + 14)]
    assert req.count_literal(b"\r\n") == 3
    assert sum(req.byte_histogram()) == len(MESSAGE)
    assert resp.holes == [(17, 5)]
    assert resp.to_bytes() == b"HTTP/1.1 200 OK\r\n" + bytes(5) + b"body!"
    with pytest.raises(InputError, match="hole"):
        resp.read(10, 10)
    with pytest.raises(InputError, match="invalid regex"):
        req.regex_matches("(")


def test_cli_reassemble_writes_one_file_per_direction(capture: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = nicsim("flow", "reassemble", capture, "--out", out)
    assert r.returncode == 0, r.stderr
    flows = json.loads((out / "flows.json").read_text())
    assert [(f["src"], f["sport"], f["bytes"], f["holes"]) for f in flows] == [
        ("10.0.0.1", 40000, len(MESSAGE), []),
        ("10.0.0.2", 80, 27, [[17, 5]]),
    ]
    assert (out / flows[0]["file"]).read_bytes() == MESSAGE
    summary = json.loads((out / "summary.json").read_text())
    assert summary["packets_conserved"] and summary["packets"]["read"] == 9
    again = tmp_path / "again"
    assert nicsim("flow", "reassemble", capture, "--out", again).returncode == 0
    for name in ["flows.json", flows[0]["file"], flows[1]["file"]]:
        assert (out / name).read_bytes() == (again / name).read_bytes()


def test_cli_bad_capture_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture at all")
    out = tmp_path / "out"
    assert_one_line_error(nicsim("flow", "reassemble", bad, "--out", out), "bad.pcap", "magic")
    assert not out.exists()
    assert_one_line_error(nicsim("flow", "reassemble", tmp_path / "missing.pcap", "--out", out), "missing.pcap")
    assert not out.exists()
