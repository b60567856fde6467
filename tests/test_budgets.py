"""Budgets checked before allocating (issue 30, item 3): small inputs that used to abort nicsim or take
memory their size does not justify, each run end to end under an address-space limit
(`RLIMIT_AS`), with the peak resident memory of the command measured and bounded.

Each case names what it took before the fix (measured with `/usr/bin/time -v`, docs/flowmem.md
and BENCHMARKS.md have the flow-memory figures).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PAPER, assert_one_line_error

#: The address space every command here runs in (Python, the core and their threads reserve
#: about 1 GiB of it without touching it).
MEMORY_LIMIT = 4 << 30

#: Runs argv (a child of its own, under MEMORY_LIMIT) and prints its peak resident memory in kB:
#: `ru_maxrss` of the children of a process whose only child is the command.
_PEAK = """
import resource, subprocess, sys
lim = int(sys.argv[1])
r = subprocess.run(sys.argv[2:], capture_output=True,
                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (lim, lim)))
sys.stdout.buffer.write(r.stdout)
sys.stderr.buffer.write(r.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(r.returncode)
"""


def measured(*args: str | os.PathLike[str], timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], float]:
    """`nicsim ARGS` under MEMORY_LIMIT: the completed process (stderr without the measurement)
    and its peak resident memory in MB."""
    env = {**os.environ, "COLUMNS": "120", "RAY_USAGE_STATS_ENABLED": "0"}
    r = subprocess.run([sys.executable, "-c", _PEAK, str(MEMORY_LIMIT), sys.executable, "-m", "nicsim",
                        *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)
    *err, peak = r.stderr.rstrip("\n").split("\n")
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout, "\n".join(err) + "\n" if err else ""), \
        int(peak) / 1024


def _frame(src: int, sport: int, seq: int, flags: int, payload: bytes = b"") -> bytes:
    """Ethernet, IPv4 10.x.y.z:sport → 10.255.0.1:80, TCP."""
    tcp = struct.pack("!HHIIBBHHH", sport, 80, seq, 0, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0,
                     bytes([10, (src >> 16) & 255, (src >> 8) & 255, src & 255]), bytes([10, 255, 0, 1]))
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip + tcp


def _pcap(path: Path, records: list[tuple[bytes, int]]) -> Path:
    """A pcap of (frame, original length) records, 1 µs apart."""
    with path.open("wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, (frame, orig) in enumerate(records):
            f.write(struct.pack("<IIII", i // 1_000_000, i % 1_000_000, len(frame), orig) + frame)
    return path


# --------------------------------------------------------------------------------------------
# Captures: an original length of up to 2^32 − 1 in 64-bit arithmetic.


@pytest.mark.parametrize("orig_len", [0xFFFFFFFF, 0xFFFFFFFC, 0xFFFFFFF0])
def test_an_original_length_near_2_to_the_32_is_refused_not_wrapped(tmp_path: Path, orig_len: int) -> None:
    """It used to wrap a u32 past the 9,600-byte check: a replay resized the frame to 4 GiB and
    aborted, a size capture took it as a 64-byte frame and exited 0."""
    frame = _frame(1, 1024, 1, 0x18, b"x" * 20)
    cap = _pcap(tmp_path / "huge.pcap", [(frame, len(frame)), (frame, orig_len)])
    for key, value in (("traffic.size", f'{{dist="capture",path="{cap}"}}'),
                       ("traffic.replay", f'{{path="{cap}",timing="rate"}}')):
        r, peak_mb = measured("run", PAPER, "--out", tmp_path / "o", "-p", f"{key}={value}",
                              "-p", "measure.window=[0,2]", "-p", "traffic.packets=2")
        line = assert_one_line_error(r, str(cap), "packet 2", f"original length {orig_len}", "larger than the 9600")
        assert key in line and peak_mb < 400, (line, peak_mb)
    r, peak_mb = measured("offloads", "size", PAPER, "--p99-us", "20", "--traffic", cap, "--out", tmp_path / "s")
    assert_one_line_error(r, str(cap), "packet 2", f"original length {orig_len}")
    assert peak_mb < 400
    assert not (tmp_path / "o").exists() and not (tmp_path / "s").exists()


# --------------------------------------------------------------------------------------------
# Options and files whose size is checked before anything is read or allocated.


def test_a_hole_bound_past_4_gib_is_one_line_with_its_range(tmp_path: Path) -> None:
    """`--max-hole-bytes 1TiB` let the copy baseline allocate 84 GB for a 40-packet capture and
    panic in pyo3 (224 lines of stderr)."""
    cap = _pcap(tmp_path / "c.pcap", [(_frame(1, 1024, 1, 0x18, b"y" * 10), 64)])
    for cmd in ("reassemble", "bench", "sizes"):
        r, _ = measured("flowmem", cmd, cap, "--out", tmp_path / cmd, "--max-hole-bytes", str(1 << 40))
        assert_one_line_error(r, "--max-hole-bytes", "1,099,511,627,776 is not in 0..4,294,967,296")
    from nicsim import InputError
    from nicsim.flowmem.reassemble import open_capture
    with pytest.raises(InputError, match="max_hole_bytes 1099511627776: expected 0..=4294967296"):
        open_capture(cap, max_hole_bytes=1 << 40)


def test_an_object_over_256_mib_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """It used to be read to ~295 MB first."""
    big = tmp_path / "big.o"
    with big.open("wb") as f:
        f.write(b"\x7fELF")
        f.truncate(300 << 20)  # sparse: takes no disk
    r, peak_mb = measured("xdp", "analyze", big, "--out", tmp_path / "o")
    assert_one_line_error(r, str(big), "larger than 256 MiB")
    assert peak_mb < 200, peak_mb


# --------------------------------------------------------------------------------------------
# Flow memory: per-flow memory in the core's tables, a file only per direction with data.


def _syn_flood(path: Path, n: int) -> Path:
    """A capture of `n` SYNs, each of its own flow."""
    return _pcap(path, [(f, len(f)) for f in (_frame(i, 1024 + i % 60000, i * 7919, 0x02) for i in range(n))])


def test_a_syn_flood_takes_bounded_memory_and_writes_no_file_per_flow(tmp_path: Path) -> None:
    """50,000 SYNs of 50,000 flows took 984 MB, 35 s and wrote 100,000 empty files."""
    n = 50_000
    cap = _syn_flood(tmp_path / "syn.pcap", n)
    out = tmp_path / "o"
    r, peak_mb = measured("flowmem", "reassemble", cap, "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert (s["flows"], s["directions"], s["direction_files"], s["stream_bytes"]) == (n, 2 * n, 0, 0)
    assert not list(out.glob("*.bin"))
    flows = json.loads((out / "flows.json").read_text())
    assert len(flows) == 2 * n and all(d["file"] is None for d in flows)
    assert peak_mb < 250, peak_mb


def test_flow_sizes_of_a_syn_flood_take_bounded_memory(tmp_path: Path) -> None:
    """`flowmem sizes` built a dict of 26 keys per flow direction: 200,000 SYNs took 1.4 GB
    (so ~7 GB at the default --max-flows), and its CDF plot drew a step per flow."""
    n = 50_000
    cap = _syn_flood(tmp_path / "syn.pcap", n)
    out = tmp_path / "o"
    r, peak_mb = measured("flowmem", "sizes", cap, "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert (s["flows"], s["bytes"]["total"], s["cut_directions"]) == (n, 0, 0)
    rows = (out / "flows.csv").read_text().splitlines()
    assert rows[0] == "rank,bytes,segments" and len(rows) == n + 1
    assert peak_mb < 250, peak_mb


def test_one_segment_flows_get_a_file_each_and_the_empty_side_none(tmp_path: Path) -> None:
    """20,000 flows of one 100-byte segment each (100,000 took 1.9 GB, ~19 KB per flow)."""
    n = 20_000
    cap = _pcap(tmp_path / "seg.pcap", [(f, len(f)) for f in (_frame(i, 1024 + i % 60000, i * 7919, 0x18, b"x" * 100)
                                                              for i in range(n))])
    out = tmp_path / "o"
    r, peak_mb = measured("flowmem", "reassemble", cap, "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert (s["flows"], s["direction_files"], s["stream_bytes"]) == (n, n, 100 * n)
    flows = json.loads((out / "flows.json").read_text())
    assert [d["file"] is None for d in flows[:4]] == [False, True, False, True]
    assert (out / flows[0]["file"]).read_bytes() == b"x" * 100
    assert peak_mb < 250, peak_mb


# --------------------------------------------------------------------------------------------
# The datapath: what grows with the units and flows of a configuration.


def test_panics_full_variant_with_many_units_stays_small(tmp_path: Path) -> None:
    """50 units per offload (300 in all, 1,204 FIFOs) took 711 MB and 36 s for 300 packets: the
    FIFO panel of run.png grew a bar per FIFO, 0.22 inch each."""
    units = [a for i in range(6) for a in ("--param", f"offloads[{i}].units=50")]
    r, peak_mb = measured("run", PAPER, "--param", "arch=panic", "--param", "panic.variant=full", *units,
                          "--param", "traffic.packets=300", "--param", "measure.window=[10,290]",
                          "--out", tmp_path / "o", "-q")
    assert r.returncode == 0, r.stderr
    assert len(json.loads((tmp_path / "o" / "summary.json").read_text())["fifos"]) > 1200
    assert peak_mb < 300, peak_mb
