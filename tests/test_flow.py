"""Flow memory from Python: the bindings (FlowCapture, FlowView) and `nicsim flowmem reassemble`."""

from __future__ import annotations

import importlib
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nicsim import InputError
from nicsim.flowmem import open_capture
from nicsim.flowmem.summary import BenchSeveral, BenchSummary, ReassembleSummary, SizesSummary, SynthReport

from conftest import assert_one_line_error, conforms, nicsim

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
    # The chunks are read-only views of the capture's bytes, in stream order: nothing copied.
    chunks = req.chunks()
    assert all(isinstance(c, memoryview) and c.readonly for _, c in chunks)
    assert len({id(c.obj) for _, c in chunks}) == 1 and len(chunks[0][1].obj) == capture.stat().st_size
    assert b"".join(bytes(c) for _, c in chunks) == MESSAGE
    assert [o for o, _ in chunks] == [s[0] for s in req.segments]
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
    r = nicsim("flowmem", "reassemble", capture, "--out", out)
    assert r.returncode == 0, r.stderr
    flows = json.loads((out / "flows.json").read_text())
    assert [(f["src"], f["sport"], f["bytes"], f["holes"]) for f in flows] == [
        ("10.0.0.1", 40000, len(MESSAGE), []),
        ("10.0.0.2", 80, 27, [[17, 5]]),
    ]
    assert (out / flows[0]["file"]).read_bytes() == MESSAGE
    summary = json.loads((out / "summary.json").read_text())
    assert summary["packets_conserved"] and summary["packets"]["read"] == 9
    # The summary is the type, key by key: a key added, lost or renamed fails here.
    assert conforms(summary, ReassembleSummary) == []
    drifted = {**summary, "packets": {**summary["packets"], "dropped": 0}, "holes": 1}
    del drifted["cut_directions"]
    assert sorted(conforms(drifted, ReassembleSummary)) == [
        "summary.cut_directions: missing", "summary.holes: not in the type", "summary.packets.dropped: not in the type"]
    again = tmp_path / "again"
    assert nicsim("flowmem", "reassemble", capture, "--out", again).returncode == 0
    for name in ["flows.json", flows[0]["file"], flows[1]["file"]]:
        assert (out / name).read_bytes() == (again / name).read_bytes()


def test_a_sequence_jump_of_2_to_the_31_gives_bounded_files_and_counts_why(tmp_path: Path) -> None:
    """A 604-byte capture whose sequence numbers jump by about 2^31 wrote a 4.1 GB stream file.
    The holes of each direction are bounded now: the segments past the jump are dropped and
    counted as `hole_too_large`, the direction is marked `cut`, packets stay conserved."""
    from nicsim import _core

    jump = ISN + 1 + 2**31 - 100
    frames = [
        _frame(ISN, SYN, b""),
        _frame(ISN + 1, ACK, MESSAGE),
        _frame(jump, ACK, b"x" * 100),
        _frame(jump + 100, ACK, b"y" * 100),
        _frame(jump + 200, FIN | ACK, b""),
        _frame(500, ACK, b"HTTP/1.1 200 OK\r\n", reverse=True),
        _frame(500 + 17 + 1000, ACK, b"body!", reverse=True),  # a 1000-byte hole: within any bound here
    ]
    cap = tmp_path / "jump.pcap"
    _core.write_pcap(str(cap), frames)
    assert cap.stat().st_size < 1000
    out = tmp_path / "out"
    r = nicsim("flowmem", "reassemble", cap, "--out", out)
    assert r.returncode == 0, r.stderr
    assert "1 directions cut" in r.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["packets"]["hole_too_large"] == 3 and summary["packets_conserved"]
    assert summary["cut_directions"] == 1 and summary["max_hole_bytes"] == 64 << 20
    flows = json.loads((out / "flows.json").read_text())
    assert [(f["cut"], f["bytes"], f["holes"]) for f in flows] == [
        (True, len(MESSAGE), []), (False, 17 + 1000 + 5, [[17, 1000]])]
    assert (out / flows[0]["file"]).read_bytes() == MESSAGE
    # The stream files and their index stay small (the plot and tables beside them are fixed-size).
    assert sum(f.stat().st_size for f in out.iterdir() if f.suffix in (".bin", ".json")) < 10_000
    # A smaller bound cuts the other direction too, at its hole; the bytes before it stay.
    small = tmp_path / "small"
    r = nicsim("flowmem", "reassemble", cap, "--out", small, "--max-hole-bytes", "999")
    assert r.returncode == 0, r.stderr
    summary = json.loads((small / "summary.json").read_text())
    assert summary["packets"]["hole_too_large"] == 4 and summary["packets_conserved"]
    assert summary["cut_directions"] == 2 and summary["max_hole_bytes"] == 999
    flows = json.loads((small / "flows.json").read_text())
    assert (small / flows[1]["file"]).read_bytes() == b"HTTP/1.1 200 OK\r\n"
    # The commands that lay streams out contiguously take the bound too.
    r = nicsim("flowmem", "sizes", cap, "--out", tmp_path / "sizes", "--max-hole-bytes", "999")
    assert r.returncode == 0, r.stderr
    sizes = json.loads((tmp_path / "sizes" / "summary.json").read_text())
    assert sizes["bytes"]["total"] == len(MESSAGE) + 17 and sizes["cut_directions"] == 2
    assert conforms(sizes, SizesSummary) == []
    r = nicsim("flowmem", "bench", cap, "--out", tmp_path / "bench", "--repeat", "1")
    assert r.returncode == 0, r.stderr
    bench = json.loads((tmp_path / "bench" / "summary.json").read_text())
    assert bench["hole_too_large"] == 3 and bench["payload_bytes"] == len(MESSAGE) + 17 + 5
    assert conforms(bench, BenchSummary) == []
    r = nicsim("flowmem", "reassemble", cap, "--out", tmp_path / "neg", "--max-hole-bytes", "-1")
    assert r.returncode == 2 and "--max-hole-bytes" in r.stderr and not (tmp_path / "neg").exists()


def test_cli_bad_capture_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture at all")
    out = tmp_path / "out"
    assert_one_line_error(nicsim("flowmem", "reassemble", bad, "--out", out), "bad.pcap", "magic")
    assert not out.exists()
    assert_one_line_error(nicsim("flowmem", "reassemble", tmp_path / "missing.pcap", "--out", out), "missing.pcap")
    assert not out.exists()


# `nicsim flowmem synth`, `bench`, `sizes` and `reproduce flowmem` (the memory model, issue 4).
def test_synth_bench_and_sizes_from_the_command_line(tmp_path: Path) -> None:
    cap = tmp_path / "s.pcap"
    r = nicsim("flowmem", "synth", cap, "--flows", "400", "--loss", "0.03", "--seed", "5", "--json")
    assert r.returncode == 0, r.stderr
    assert conforms(json.loads(r.stdout), SynthReport) == []
    again = tmp_path / "again.pcap"
    assert nicsim("flowmem", "synth", again, "--flows", "400", "--loss", "0.03", "--seed", "5").returncode == 0
    assert cap.read_bytes() == again.read_bytes()  # same seed, same bytes
    for w in ("scan", "regex"):
        out = tmp_path / w
        r = nicsim("flowmem", "bench", cap, "--workload", w, "--repeat", "1", "--out", out)
        assert r.returncode == 0, r.stderr
        s = json.loads((out / "summary.json").read_text())
        assert conforms(s, BenchSummary) == []
        assert s["payload_bytes"] > 0 and s["streams"] == 800
        c, f = s["copy"], s["flow"]
        for side in (c, f):
            assert {"bytes_copied", "bytes_read", "seconds", "gbps", "dram_bytes", "cycles", "cache_hit_rate"} <= set(side)
        assert c["bytes_copied"] == s["payload_bytes"] and f["bytes_copied"] == 0
        # The model: the copy reads and writes every byte and the processing reads them again;
        # the flow cache controller reads them once.
        assert c["dram_bytes"] > f["dram_bytes"] >= 2 * s["payload_bytes"]
        assert c["cycles"] > f["cycles"]
        # Per step, on the talk's terms: the Packet Handler writes each byte once; the
        # controller reads it once; the scan reads only the flow cache.
        assert s["steps"]["flow"]["receive"] == s["steps"]["copy"]["receive"] == 1.0
        assert s["steps"]["flow"]["assemble"] == 1.0
        if w == "scan":
            assert s["steps"]["flow"]["process"] == 0.0
            assert s["ratios"]["flow_dram_per_payload_after_receive"] == 1.0
        assert abs(s["ratios"]["copy_dram_per_payload"] - s["ratios"]["copy_dram_per_payload_after_receive"] - 1) < 1e-9
    out = tmp_path / "sizes"
    r = nicsim("flowmem", "sizes", cap, "--out", out)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert conforms(s, SizesSummary) == []
    assert s["flows"] == 400 and 0.85 < s["share_le_10kb"] < 0.98
    assert [c["share"] for c in s["cover"]] == [0.5, 0.9, 0.99]
    sizes = [c["flow_bytes"] for c in s["cover"]]
    assert sizes == sorted(sizes) and sizes[0] > 0
    assert (out / "flow_size_cdf.png").stat().st_size > 0 and (out / "flows.csv").exists()


def test_bench_of_several_captures_is_typed(tmp_path: Path) -> None:
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    for cap, seed in ((a, "1"), (b, "2")):
        assert nicsim("flowmem", "synth", cap, "--flows", "20", "--seed", seed).returncode == 0
    out = tmp_path / "o"
    r = nicsim("flowmem", "bench", a, b, "--out", out, "--repeat", "1", "-w", "regex", "--retrieval", "selective")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert conforms(s, BenchSeveral) == []
    assert [c["capture"] for c in s["captures"]] == [str(a), str(b)]
    assert s["retrieval"] == "selective" and s["pattern"]
    # The model's report inside a design is typed too: a key the core adds must be added here.
    s["captures"][1]["flow"]["model"]["l1"]["evictions"] = 0
    assert conforms(s, BenchSeveral) == ["summary.captures[1].flow.model.l1.evictions: not in the type"]


def test_the_cli_choices_are_the_cores_names() -> None:
    """One list of names per option: the core's (`nicsim_flowmem::names`). The CLI's choices,
    the Python API's checks and the core's parsers all come from it."""
    import typer.main

    from nicsim import _core
    from nicsim.flowmem import names
    from nicsim.flowmem.cli import flowmem_app

    core = _core.flow_names()
    assert set(core) == {"overlap", "unacked", "hole_marker", "retrieval", "workload"}
    assert names.NAMES == {k: tuple(v) for k, v in core.items()}
    group = typer.main.get_command(flowmem_app)
    seen = {}
    for command in group.commands.values():
        for param in command.params:
            if param.name in core:
                seen.setdefault(param.name, []).append([str(c) for c in param.type_descriptor.choices])
    assert set(seen) == set(core)
    for option, lists in seen.items():
        assert all(choices == core[option] for choices in lists), (option, lists, core[option])
    for option, values in core.items():
        for v in values:
            _core.flow_check_name(option, v)
        with pytest.raises(_core.InputError, match=f"{option.replace('_', ' ')}"):
            _core.flow_check_name(option, "nosuch")


def test_a_bad_name_is_refused_with_the_choices(tmp_path: Path, capture: Path) -> None:
    r = nicsim("flowmem", "bench", "--help")
    assert r.returncode == 0 and "<scan|regex>" in r.stdout and "<whole|selective>" in r.stdout, r.stdout
    r = nicsim("flowmem", "reassemble", "--help")
    assert "<first|last>" in r.stdout and "<keep|drop|tshark>" in r.stdout and "<zero|tshark>" in r.stdout
    for argv, option in ((["bench", capture, "-w", "grep"], "--workload"),
                         (["bench", capture, "--retrieval", "some"], "--retrieval"),
                         (["reassemble", capture, "--overlap", "middle"], "--overlap"),
                         (["reassemble", capture, "--unacked", "x"], "--unacked"),
                         (["reassemble", capture, "--hole-marker", "x"], "--hole-marker")):
        assert_one_line_error(nicsim("flowmem", *argv, "--out", tmp_path / "o"), option)
    assert not (tmp_path / "o").exists()
    # The Python API says what the core says, one message for every option.
    with pytest.raises(InputError, match=r'^overlap policy "middle": expected "first" or "last"$'):
        open_capture(capture, overlap="middle")
    with pytest.raises(InputError, match=r'^unacked policy "x": expected "keep", "drop" or "tshark"$'):
        open_capture(capture, unacked="x")
    from nicsim.flowmem import reassemble
    from nicsim.flowmem.memory import bench

    with pytest.raises(InputError, match=r'^hole marker "x": expected "zero" or "tshark"$'):
        reassemble(capture, tmp_path / "o", hole_marker="x")
    with pytest.raises(InputError, match=r'^workload "grep": expected "scan" or "regex"$'):
        bench(capture, workload="grep")
    with pytest.raises(InputError, match=r'retrieval "some": expected "whole" or "selective"$'):
        bench(capture, retrieval="some")
    assert not (tmp_path / "o").exists()


def test_flow_bench_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\x00" * 40)
    r = nicsim("flowmem", "bench", bad, "--out", tmp_path / "o")
    assert_one_line_error(r, str(bad))
    assert not (tmp_path / "o").exists()
    cap = tmp_path / "s.pcap"
    assert nicsim("flowmem", "synth", cap, "--flows", "5").returncode == 0
    r = nicsim("flowmem", "bench", cap, "--workload", "regex", "--pattern", "(unclosed", "--out", tmp_path / "o")
    assert_one_line_error(r, "(unclosed")
    # A pattern whose automaton would grow without bound is refused quickly, naming the limit.
    t0 = time.perf_counter()
    r = nicsim("flowmem", "bench", cap, "--workload", "regex", "--pattern", "(a{1000}){1000}", "--out", tmp_path / "o")
    assert_one_line_error(r, "(a{1000}){1000}", "too large", "10 MiB")
    assert time.perf_counter() - t0 < 30
    r = nicsim("flowmem", "bench", cap, "--target", "nosuch", "--out", tmp_path / "o")
    assert_one_line_error(r, "unknown target")
    t = tmp_path / "t.toml"
    from nicsim import _core

    t.write_text(_core.flow_model_target("u250-microblaze").replace("ways = 4", "ways = 0"))
    r = nicsim("flowmem", "bench", cap, "--target", t, "--out", tmp_path / "o")
    assert_one_line_error(r, "flow_cache")
    assert not (tmp_path / "o").exists()


def test_reproduce_flowmem(tmp_path: Path) -> None:
    out = tmp_path / "r"
    r = nicsim("reproduce", "flowmem", "--flows", "300", "--out", out)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    m = s["micro"]
    assert m["setup"] == {"packets": 10, "payload_bytes": 1510, "buffer_bytes": 2048}
    for w in ("scan", "regex"):
        # Flow-based removes the copy and reads from the flow cache: faster, less DRAM.
        assert m[w]["flow_copy_ms"] < m[w]["copy_ms"] / 10
        assert m[w]["throughput_ratio"] > 1 and m[w]["flow_processing_ms"] < m[w]["copy_processing_ms"]
        assert m[w]["flow_dram_per_payload"] < m[w]["copy_dram_per_payload"]
    # The scan gains more than the regex (the regex is compute-bound), as in the talk.
    assert m["scan"]["throughput_ratio"] > m["regex"]["throughput_ratio"]
    assert {r["quantity"] for r in s["comparison"]} >= {"micro: total change (%), scan"}
    for f in ("comparison.csv", "micro_benchmark.png", "dram_and_throughput.svg"):
        assert (out / f).stat().st_size > 0
    # The real capture (the veth recording `make veth-captures` makes, as make test does as root)
    # beside the micro-benchmark: the same per-step DRAM traffic per payload byte (issue 18 §3),
    # and the talk's two rows.
    from nicsim.reproduce.flowmem import REAL_CAPTURE

    if not REAL_CAPTURE.is_file():
        assert "real" not in s
        return
    real = s["real"]
    assert real["setup"]["capture"] == "receiver_side.pcapng" and real["setup"]["directions"] == 4
    for where in ("micro", "real"):
        steps = s[where]["scan"]["steps"]
        assert steps["flow"] == {"receive": 1.0, "assemble": 1.0, "process": 0.0}
        assert abs(steps["copy"]["assemble"] - 2.0) < 0.03 and abs(steps["copy"]["process"] - 1.0) < 0.01
        assert abs(s[where]["scan"]["copy_dram_per_payload"] - 3.0) < 0.03
        assert s[where]["scan"]["flow_dram_per_payload_with_receive"] == 2.0
        assert s[where]["scan"]["receive_gbps"] > 0
    quantities = {r["quantity"] for r in s["comparison"]}
    assert {"real capture: DRAM bytes per payload byte, flow-based, beyond the Packet Handler's write",
            "real capture: DRAM bytes per payload byte, flow-based, including it"} <= quantities


def test_reproduce_flowmem_takes_another_real_capture(tmp_path: Path) -> None:
    cap = tmp_path / "s.pcap"
    assert nicsim("flowmem", "synth", cap, "--flows", "20", "--seed", "3").returncode == 0
    out = tmp_path / "r"
    r = nicsim("reproduce", "flowmem", "--flows", "20", "--capture", cap, "--out", out)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["real"]["setup"]["capture"] == "s.pcap" and s["real"]["setup"]["directions"] == 40
    r = nicsim("reproduce", "flowmem", "--flows", "20", "--capture", tmp_path / "missing.pcap", "--out", tmp_path / "o")
    assert_one_line_error(r, "missing.pcap")
    assert not (tmp_path / "o").exists()


def test_a_capture_without_tcp_is_bad_input_for_every_flow_command(tmp_path: Path) -> None:
    from nicsim import _core

    a, b = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    udp = struct.pack("!HHHH", 5000, 53, 12, 0) + b"abcd"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, a, b) + udp
    cap = tmp_path / "udp.pcap"
    _core.write_pcap(str(cap), [bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip] * 3)
    for cmd in ("reassemble", "bench", "sizes"):
        r = nicsim("flowmem", cmd, cap, "--out", tmp_path / cmd)
        assert_one_line_error(r, "no TCP flow", "3 non-tcp")
        assert not (tmp_path / cmd).exists()


def test_a_link_type_nicsim_does_not_decode_is_named(tmp_path: Path) -> None:
    # A pcap of link type 220 (USB, as usbmon captures): one line naming it, as libpcap does.
    frames = [_frame(1, SYN, b""), _frame(2, ACK, b"data")]
    data = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 220)
    for k, f in enumerate(frames):
        data += struct.pack("<IIII", k, 0, len(f), len(f)) + f
    cap = tmp_path / "usb.pcap"
    cap.write_bytes(data)
    r = nicsim("flowmem", "reassemble", cap, "--out", tmp_path / "out")
    assert_one_line_error(r, "no TCP flow", "2 unsupported-link", "link type 220 (USB_LINUX_MMAPPED) not supported")
    assert not (tmp_path / "out").exists()


def test_tunnelled_flows_are_the_inner_5_tuple_with_the_outer_one_recorded(tmp_path: Path) -> None:
    from nicsim import _core

    def gre(frame: bytes) -> bytes:
        inner = frame[14:]
        body = b"\x00\x00\x08\x00" + inner
        outer = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0, 0, 64, 47, 0, bytes([192, 0, 2, 1]),
                            bytes([192, 0, 2, 2])) + body
        return frame[:12] + b"\x08\x00" + outer

    cap = tmp_path / "gre.pcap"
    _core.write_pcap(str(cap), [gre(_frame(1, SYN, b"")), gre(_frame(2, ACK, b"inside"))])
    out = tmp_path / "out"
    assert nicsim("flowmem", "reassemble", cap, "--out", out).returncode == 0
    flows = json.loads((out / "flows.json").read_text())
    d = flows[0]
    assert (d["src"], d["dport"], d["tunnel"], d["tunnel_src"], d["tunnel_dst"]) == ("10.0.0.1", 80, "gre",
                                                                                      "192.0.2.1", "192.0.2.2")
    assert (out / d["file"]).read_bytes() == b"inside"


def test_unacknowledged_data_policies_from_the_command_line(tmp_path: Path) -> None:
    from nicsim import _core

    # "abc", a hole of 3 bytes, "ghi"; the peer acknowledges "a" only.
    def frame(seq: int, flags: int, payload: bytes, ack: int = 0, reverse: bool = False) -> bytes:
        f = _frame(seq, flags, payload, reverse)
        return f[:14 + 28] + struct.pack("!I", ack) + f[14 + 32:]

    frames = [_frame(100, SYN, b""), frame(101, ACK, b"abc"), frame(107, ACK, b"ghi"),
              frame(1, ACK, b"", ack=102, reverse=True)]
    cap = tmp_path / "c.pcap"
    _core.write_pcap(str(cap), frames)
    sizes = {}
    for policy in ("keep", "drop", "tshark"):
        out = tmp_path / policy
        assert nicsim("flowmem", "reassemble", cap, "--unacked", policy, "--out", out).returncode == 0
        d = json.loads((out / "flows.json").read_text())[0]
        sizes[policy] = (d["bytes"], d["unacked_bytes"], json.loads((out / "summary.json").read_text())["unacked"])
    # drop: up to the ACK; tshark: all before the first hole, nothing after it unacknowledged.
    assert sizes == {"keep": (9, 0, "keep"), "drop": (1, 5, "drop"), "tshark": (3, 3, "tshark")}
    r = nicsim("flowmem", "reassemble", cap, "--unacked", "sometimes", "--out", tmp_path / "x")
    assert r.returncode == 2 and "--unacked" in r.stderr


def test_tshark_compatible_files(tmp_path: Path) -> None:
    from nicsim import _core

    def frame(seq: int, flags: int, payload: bytes, ack: int = 0, reverse: bool = False) -> bytes:
        f = _frame(seq, flags, payload, reverse)
        return f[:14 + 28] + struct.pack("!I", ack) + f[14 + 32:]

    # "abc", a hole of 3 bytes, "ghi", all acknowledged; then "xyz" after a hole of 5, never.
    frames = [_frame(100, SYN, b""), frame(101, ACK, b"abc"), frame(107, ACK, b"ghi"), frame(115, ACK, b"xyz"),
              frame(1, ACK, b"", ack=110, reverse=True)]
    cap = tmp_path / "c.pcap"
    _core.write_pcap(str(cap), frames)
    runs = {"default": (), "markers": ("--hole-marker", "tshark"), "tshark": ("--tshark-compatible",),
            "override": ("--tshark-compatible", "--hole-marker", "zero")}
    files = {}
    for name, args in runs.items():
        out = tmp_path / name
        assert nicsim("flowmem", "reassemble", cap, *args, "--out", out).returncode == 0
        d = json.loads((out / "flows.json").read_text())[0]
        files[name] = (out / d["file"]).read_bytes()
    assert files["default"] == b"abc\0\0\0ghi\0\0\0\0\0xyz"
    assert files["markers"] == b"abc[3 bytes missing in capture file]\0ghi[5 bytes missing in capture file]\0xyz"
    assert files["tshark"] == b"abc[3 bytes missing in capture file]\0ghi"
    assert files["override"] == b"abc\0\0\0ghi"


def test_tshark_compatible_runs_and_anchor(tmp_path: Path) -> None:
    # As tshark's follow (issue 33): a run after a hole is written whole once the peer
    # acknowledged up to its start; without a SYN a direction starts at its first packet, a
    # keep-alive one below the data included (a leading hole); one direction alone shows no
    # data past its first hole.
    from nicsim import _core

    def frame(seq: int, flags: int, payload: bytes, ack: int = 0, reverse: bool = False) -> bytes:
        f = _frame(seq, flags, payload, reverse)
        return f[:14 + 28] + struct.pack("!I", ack) + f[14 + 32:]

    cases = {
        # ACK 108 lies inside "ghi": the run is shown whole.
        "run": ([_frame(100, SYN, b""), frame(101, ACK, b"abc"), frame(107, ACK, b"ghi"),
                 frame(1, ACK, b"", ack=108, reverse=True)], b"abc[3 bytes missing in capture file]\0ghi"),
        # A keep-alive (seq 100, no data) before the data at 101, no SYN.
        "keepalive": ([frame(100, ACK, b""), frame(101, ACK, b"abc"), frame(1, ACK, b"", ack=104, reverse=True)],
                      b"[1 bytes missing in capture file]\0abc"),
        # No packet of the peer: nothing past the first hole.
        "one_way": ([_frame(100, SYN, b""), frame(101, ACK, b"abc"), frame(107, ACK, b"ghi")], b"abc"),
    }
    for name, (frames, want) in cases.items():
        cap = tmp_path / f"{name}.pcap"
        _core.write_pcap(str(cap), frames)
        out = tmp_path / name
        assert nicsim("flowmem", "reassemble", cap, "--tshark-compatible", "--out", out).returncode == 0
        d = json.loads((out / "flows.json").read_text())[0]
        assert (out / d["file"]).read_bytes() == want, name


def test_compressed_captures_are_read_as_tshark_reads_them(tmp_path: Path) -> None:
    # gzip, zstd and LZ4 frames (wiretap reads all three; zstd and LZ4 since Wireshark 4.2) and
    # xz: decompressed to a temporary file, the same flows; a corrupt stream is one line and
    # exit 2.
    import gzip
    import lzma

    import lz4.frame
    import zstandard

    from nicsim import _core

    frames = [_frame(100, SYN, b""), _frame(101, ACK, b"hello"), _frame(106, ACK, b" world")]
    cap = tmp_path / "c.pcap"
    _core.write_pcap(str(cap), frames)
    (tmp_path / "c.pcap.gz").write_bytes(gzip.compress(cap.read_bytes()))
    (tmp_path / "c.pcap.xz").write_bytes(lzma.compress(cap.read_bytes()))
    (tmp_path / "c.pcap.zst").write_bytes(zstandard.ZstdCompressor().compress(cap.read_bytes()))
    (tmp_path / "c.pcap.lz4").write_bytes(lz4.frame.compress(cap.read_bytes()))
    flows = {}
    for name in ("c.pcap", "c.pcap.gz", "c.pcap.xz", "c.pcap.zst", "c.pcap.lz4"):
        out = tmp_path / f"out-{name}"
        assert nicsim("flowmem", "reassemble", tmp_path / name, "--out", out).returncode == 0
        d = json.loads((out / "flows.json").read_text())[0]
        flows[name] = (out / d["file"]).read_bytes()
    assert set(flows.values()) == {b"hello world"}
    for suffix in ("gz", "zst", "lz4"):
        bad = tmp_path / f"bad.pcap.{suffix}"
        bad.write_bytes((tmp_path / f"c.pcap.{suffix}").read_bytes()[:12] + b"\xff" * 40)
        r = nicsim("flowmem", "reassemble", bad, "--out", tmp_path / f"bad-{suffix}")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and str(bad) in r.stderr, r.stderr
        assert not (tmp_path / f"bad-{suffix}").exists()


def test_a_cut_compressed_capture_keeps_all_it_holds(tmp_path: Path) -> None:
    # A gzip or xz capture cut short (copied while written, a broken download) decompresses to
    # everything its bytes hold, as zlib/lzma give it streaming, and the capture then ends inside
    # a record as a cut plain capture does. Python's GzipFile/LZMAFile raise EOFError instead and
    # lost that read's output: a small cut capture read as empty ("no TCP flow"). The same for
    # LZ4 frames, and zstd (whose library gives every whole block before the cut). Also: several
    # gzip members, xz streams, LZ4 or zstd frames one after the other are one capture.
    import gzip
    import lzma
    import zlib

    from nicsim import _core
    from nicsim.flowmem.reassemble import capture_file

    frames = [_frame(100 + 1000 * i, ACK, bytes([65 + i % 26]) * 1000) for i in range(40)]
    cap = tmp_path / "c.pcap"
    _core.write_pcap(str(cap), frames)
    plain = cap.read_bytes()
    import lz4.frame
    import zstandard

    def zstd_held(packed: bytes) -> bytes:  # every whole block before the cut, one after another
        out = []
        with zstandard.ZstdDecompressor().stream_reader(packed) as r:
            while b := r.read(1 << 16):
                out.append(b)
        return b"".join(out)

    frames += [_frame(100_000 + 1000 * i, ACK, bytes(range(256)) * 4) for i in range(200)]  # > 128 KiB
    _core.write_pcap(str(cap), frames)
    plain = cap.read_bytes()
    for suffix, compress, held in (
            (".gz", gzip.compress, lambda b: zlib.decompressobj(wbits=31).decompress(b)),
            (".xz", lzma.compress, lambda b: lzma.LZMADecompressor().decompress(b)),
            (".lz4", lz4.frame.compress, lambda b: lz4.frame.LZ4FrameDecompressor().decompress(b)),
            (".zst", lambda b: zstandard.ZstdCompressor(level=1).compress(b), zstd_held)):
        packed = compress(plain)
        for cut in (len(packed) * 2 // 3, len(packed) - 9):
            (tmp_path / f"cut{suffix}").write_bytes(packed[:cut])
            want = held(packed[:cut])
            assert len(want) > 24 and plain.startswith(want), (suffix, cut)
            with capture_file(tmp_path / f"cut{suffix}") as p:
                assert p.read_bytes() == want, (suffix, cut)
        half = len(plain) // 2
        (tmp_path / f"two{suffix}").write_bytes(compress(plain[:half]) + compress(plain[half:]))
        with capture_file(tmp_path / f"two{suffix}") as p:
            assert p.read_bytes() == plain, suffix


def test_a_stream_spool_left_by_a_killed_run_is_removed(tmp_path: Path) -> None:
    # A capture read from standard input is copied to the temporary folder first; a run killed
    # with SIGKILL (or by the OOM killer) cannot remove its copy, so the next run that spools
    # removes the copies of processes that are gone, and only those.
    import tempfile

    from nicsim import _core

    cap = tmp_path / "c.pcap"
    _core.write_pcap(str(cap), [_frame(100, SYN, b""), _frame(101, ACK, b"hi")])
    dead = subprocess.Popen(["true"])  # its pid names no process once waited for
    dead.wait()
    stale = Path(tempfile.gettempdir()) / f"nicsim-capture-{dead.pid}-test.pcap"
    alive = Path(tempfile.gettempdir()) / f"nicsim-capture-{os.getpid()}-test.pcap"
    stale.write_bytes(b"x" * 100)
    alive.write_bytes(b"y")
    try:
        r = subprocess.run([sys.executable, "-m", "nicsim", "flowmem", "reassemble", "-", "--out",
                            str(tmp_path / "o"), "-q"], input=cap.read_bytes(), capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert not stale.exists() and alive.exists()
    finally:
        stale.unlink(missing_ok=True)
        alive.unlink(missing_ok=True)


# The package's former name, `nicsim.flow`: a shim over `nicsim.flowmem` that warns.


def test_the_old_package_name_still_imports_and_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    import nicsim.flowmem
    import nicsim.flowmem.memory
    import nicsim.flowmem.reassemble

    for name in ("nicsim.flow", "nicsim.flow.memory", "nicsim.flow.reassemble"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning, match=r"nicsim\.flow is deprecated.*nicsim\.flowmem"):
        old = importlib.import_module("nicsim.flow")
    # The same objects and modules, not copies; the submodules under their old names too.
    assert old.open_capture is nicsim.flowmem.open_capture and old.FlowCapture is nicsim.flowmem.FlowCapture
    assert old.reassemble is nicsim.flowmem.reassemble and old.__all__ == nicsim.flowmem.__all__
    assert old.memory is nicsim.flowmem.memory
    assert importlib.import_module("nicsim.flow.memory") is nicsim.flowmem.memory
    assert importlib.import_module("nicsim.flow.reassemble") is sys.modules["nicsim.flowmem.reassemble"]


def test_a_script_using_the_old_package_name_runs_and_is_told(capture: Path) -> None:
    """A user's script (`__main__`, where Python shows a DeprecationWarning by default) that
    imports `nicsim.flow` as before: it runs, and the warning names its own line."""
    script = ("from nicsim.flow import open_capture\n"
              "from nicsim.flow.memory import DEFAULT_PATTERN\n"
              "from nicsim.flow.reassemble import open_capture as oc\n"
              f"print(len(open_capture({str(capture)!r})), oc is open_capture, bool(DEFAULT_PATTERN))\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "1 True True\n"
    assert "<string>:1: DeprecationWarning: nicsim.flow is deprecated" in r.stderr
    assert r.stderr.count("DeprecationWarning") == 1
