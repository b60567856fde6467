"""Hostile inputs for every command: a catalogue of bad configurations, `--param`s, captures, ELF
objects, target files, analyses, option values and output paths.

The standard each case holds the command to: exit code 2; exactly one line on stderr,
`nicsim: error: ...`, naming the input (the file, `--param` or the option) and the key or offset
where that makes sense; no traceback, no Rust panic or abort, no huge memory (every command runs
under a 4 GiB address-space limit) or output; and nothing half-written (no `--out` folder, no
`.NAME.tmp-*` debris beside it). A few inputs are extreme rather than wrong: those may be
accepted, but never crash or hang. Every input is generated here (captures with `struct`, ELF
objects by mutating the suite's objects); the XDP cases skip without `make xdp-suite`.
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import PAPER, ROOT, assert_one_line_error, xdp_object
from forkserver import run_nicsim

ROUTER = ROOT / "configs" / "router"
TARGETS = ROOT / "crates" / "nicsim-xdp" / "targets"
MEMORY_LIMIT = 4 << 30
MAX_OUTPUT = 64 << 10
TINY = ["--param", "traffic.packets=300", "--param", "measure.window=[10,290]"]
SHORT = ["--param", "run.duration_us=1000", "--param", "run.warmup_us=200"]
HUGE_INT = "99999999999999999999999"


# --------------------------------------------------------------------------------------------
# Running the CLI and checking the standard.


def cli(*args: str | os.PathLike[str], cwd: Path | None = None, timeout: float = 60,
        stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m nicsim ARGS` as conftest.nicsim runs it, under the memory limit, with `stdin`
    (default: nothing)."""
    env = {**os.environ, "COLUMNS": "120", "RAY_USAGE_STATS_ENABLED": "0"}
    r = run_nicsim([str(a) for a in args], stdin=stdin, cwd=cwd, env=env, timeout=timeout, rlimit_as=MEMORY_LIMIT)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode("utf-8", "replace"),
                                       r.stderr.decode("utf-8", "replace"))


def debris(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


def refused(r: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The standard: exit 2, one `nicsim: error:` line naming each needle, small output."""
    lines = r.stderr.strip().splitlines()
    head = "\n".join(lines[:2] + (["..."] + lines[-2:] if len(lines) > 4 else lines[2:]))[:600]
    assert r.returncode == 2, f"exit {r.returncode} (expected 2); stderr: {head!r}"
    assert len(r.stdout) + len(r.stderr) < MAX_OUTPUT, f"{len(r.stdout) + len(r.stderr)} bytes of output"
    assert "panicked" not in r.stderr and "Traceback" not in r.stderr, head
    return assert_one_line_error(r, *needles)


def accepted_or_refused(r: subprocess.CompletedProcess[str]) -> None:
    """Extreme but not wrong: either runs (exit 0) or is refused by the standard."""
    if r.returncode != 0:
        refused(r)
    assert len(r.stdout) + len(r.stderr) < MAX_OUTPUT


def nothing_written(folder: Path, before: set[str], out: Path | None = None) -> None:
    if out is not None:
        assert not out.exists(), f"{out} was created"
    assert debris(folder) == [], debris(folder)
    assert {p.name for p in folder.iterdir()} == before, sorted({p.name for p in folder.iterdir()} - before)


def obj(name: str) -> Path:
    p = xdp_object(name)
    if not p.exists():
        pytest.skip(f"{p} is missing: run `make xdp-suite`")
    return p


class Fifo:
    """A named pipe in `folder` that a thread fills with `data` while a command reads it."""

    def __init__(self, folder: Path, data: bytes, name: str = "fifo") -> None:
        self.path = folder / name
        os.mkfifo(self.path)
        self.data = data
        self.thread = threading.Thread(target=self._write, daemon=True)

    def _write(self) -> None:
        try:
            with open(self.path, "wb") as f:
                f.write(self.data)
        except OSError:  # the reader closed early (BrokenPipe): that is its right
            pass

    def __enter__(self) -> Path:
        self.thread.start()
        return self.path

    def __exit__(self, *exc: object) -> None:
        if self.thread.is_alive():  # the command never opened it: let the writer's open return
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
                self.thread.join(5)
                os.close(fd)
            except OSError:
                pass
        self.thread.join(5)
        self.path.unlink()


# --------------------------------------------------------------------------------------------
# Datapath configurations: the paper's, cut to 300 packets, with one thing wrong.

BASE = PAPER.read_text().replace("packets = 11000", "packets = 300").replace("window = [500, 10500]",
                                                                             "window = [10, 290]")
assert "packets = 300" in BASE and "window = [10, 290]" in BASE

Edit = tuple[str, str] | Callable[[str], str]


def mutate(text: str, edits: list[Edit]) -> str:
    """Apply edits: (old, new) replaces the first `old` (`^` prepends top-level lines, `$`
    appends), or a function of the text."""
    for e in edits:
        if callable(e):
            text = e(text)
            continue
        old, new = e
        if old == "^":
            text = new + "\n" + text
        elif old == "$":
            text = text + "\n" + new + "\n"
        else:
            assert old in text, old
            text = text.replace(old, new, 1)
    return text


def after(anchor: str, line: str) -> tuple[str, str]:
    return anchor, f"{anchor}\n{line}"


def _drop_flows(text: str) -> str:
    start, end = text.index("[[flows]]"), text.index("[measure]")
    return "flows = []\n" + text[:start] + text[end:]


def _drop_table(header: str) -> Callable[[str], str]:
    def drop(text: str) -> str:
        start = text.index(header)
        end = text.index("\n[", start + 1)
        return text[:start] + text[end:]
    return drop


def _drop_all(header: str) -> Callable[[str], str]:
    def drop(text: str) -> str:
        while header in text:
            text = _drop_table(header)(text)
        return text
    return drop


def _offload(i: int) -> str:
    return f'[[offloads]]\nname = "extra{i}"\nwidth_bits = 64\nclock_mhz = 250'


CRC = 'name = "crc"'
FIREWALL = 'name = "firewall"'
FLOW1 = 'name = "flow1"'
PANIC = ('arch = "flexpipe"', 'arch = "panic"')
SIZE = 'size = { dist = "uniform_set", values = [64, 128, 256, 512, 1024, 1500] }'
FUNCTIONAL = ("^", "functional = true")

# (id, edits, needles besides the file's name)
DATAPATH_CONFIGS: list[tuple[str, list[Edit], list[str]]] = [
    # top level
    ("seed-negative", [("seed = 1", "seed = -1")], ["seed"]),
    ("seed-string", [("seed = 1", 'seed = "one"')], ["seed"]),
    ("seed-float", [("seed = 1", "seed = 1.5")], ["seed"]),
    ("seed-2^64", [("seed = 1", "seed = 18446744073709551616")], ["seed"]),
    ("arch-unknown", [('arch = "flexpipe"', 'arch = "smartpipe"')], ["arch"]),
    ("arch-int", [('arch = "flexpipe"', "arch = 3")], ["arch"]),
    ("arch-missing", [('arch = "flexpipe"', "")], ["arch"]),
    ("functional-string", [("^", 'functional = "yes"')], ["functional"]),
    ("mode-unknown", [("^", 'mode = "warp"')], ["mode"]),
    ("unknown-top-key", [("^", "colour = 1")], ["colour"]),
    ("duplicate-toml-key", [("^", "seed = 2")], ["line"]),
    ("offloads-missing", [_drop_all("[[offloads]]")], ["offloads"]),
    ("offloads-empty", [_drop_all("[[offloads]]"), ("^", "offloads = []")], ["offloads"]),
    ("offloads-16", [("$", "\n".join(_offload(i) for i in range(10)))], ["offloads"]),
    ("traffic-missing", [_drop_table("[traffic]")], ["traffic"]),
    ("traffic-not-table", [_drop_table("[traffic]"), ("^", "traffic = 5")], ["traffic"]),
    ("flows-empty", [_drop_flows], ["flows"]),
    # pipeline
    ("clock-u32-max", [("clock_mhz = 250", "clock_mhz = 4294967295")], ["pipeline.clock_mhz"]),
    ("clock-2^32", [("clock_mhz = 250", "clock_mhz = 4294967296")], ["pipeline.clock_mhz"]),
    ("clock-zero", [("clock_mhz = 250", "clock_mhz = 0")], ["pipeline.clock_mhz"]),
    ("clock-negative", [("clock_mhz = 250", "clock_mhz = -250")], ["pipeline.clock_mhz"]),
    ("clock-float", [("clock_mhz = 250", "clock_mhz = 250.5")], ["pipeline.clock_mhz"]),
    ("clock-nan", [("clock_mhz = 250", "clock_mhz = nan")], ["pipeline.clock_mhz"]),
    ("clock-inf", [("clock_mhz = 250", "clock_mhz = inf")], ["pipeline.clock_mhz"]),
    ("width-zero", [("width_bits = 512", "width_bits = 0")], ["pipeline.width_bits"]),
    ("width-string", [("width_bits = 512", 'width_bits = "wide"')], ["pipeline.width_bits"]),
    ("arbiter-fifo-zero", [after("clock_mhz = 250", "arbiter_fifo_bytes = 0")], ["pipeline.arbiter_fifo_bytes"]),
    ("recirc-fifo-2^63", [after("clock_mhz = 250", "recirc_fifo_bytes = 9223372036854775808")],
     ["pipeline.recirc_fifo_bytes"]),
    ("ingress-fifo-2^63-1", [after("clock_mhz = 250", "ingress_fifo_bytes = 9223372036854775807")],
     ["pipeline.ingress_fifo_bytes"]),
    ("unit-queue-too-small", [after("clock_mhz = 250", "unit_queue_bytes = 1499")], ["pipeline.unit_queue_bytes"]),
    ("stage-fifo-negative", [after("clock_mhz = 250", "stage_fifo_bytes = -1")], ["pipeline.stage_fifo_bytes"]),
    ("dma-clock-zero", [after("clock_mhz = 250", "dma_clock_mhz = 0")], ["pipeline.dma_clock_mhz"]),
    ("pipeline-unknown-key", [after("clock_mhz = 250", "colour = 1")], ["pipeline.colour"]),
    ("pipeline-not-table", [lambda t: t.replace("[pipeline]\nwidth_bits = 512\nclock_mhz = 250", "pipeline = 5")],
     ["pipeline"]),
    # offloads
    ("units-u32-max", [after(CRC, "units = 4294967295")], ["offloads[0].units"]),
    ("units-zero", [after(CRC, "units = 0")], ["offloads[0].units"]),
    ("units-negative", [after(CRC, "units = -1")], ["offloads[0].units"]),
    ("delay-u32-max", [after(CRC, "delay_cycles = 4294967295")], ["offloads[0].delay_cycles"]),
    ("offload-width-12", [("width_bits = 64", "width_bits = 12")], ["offloads[0].width_bits"]),
    ("offload-width-zero", [("width_bits = 64", "width_bits = 0")], ["offloads[0].width_bits"]),
    ("offload-clock-zero", [(f"{CRC}\nwidth_bits = 64\nclock_mhz = 250", f"{CRC}\nwidth_bits = 64\nclock_mhz = 0")],
     ["offloads[0].clock_mhz"]),
    ("offload-clock-missing", [(f"{CRC}\nwidth_bits = 64\nclock_mhz = 250", f"{CRC}\nwidth_bits = 64")],
     ["offloads[0]", "clock_mhz"]),
    ("offload-duplicate-name", [(FIREWALL, CRC)], ["offloads[1].name", "duplicate"]),
    ("offload-name-int", [(CRC, "name = 7")], ["offloads[0].name"]),
    ("offload-unknown-key", [after(CRC, "speed = 9")], ["offloads[0].speed"]),
    ("offload-kind-unknown", [FUNCTIONAL, after(CRC, 'kind = "teleport"')], ["offloads[0].kind"]),
    # A name longer than 200 characters (a 100,000-character one cost the simulation gigabytes).
    ("offload-name-100kb", [(FIREWALL, 'name = "' + "x" * 100_000 + '"'), (CRC, 'name = "' + "x" * 100_000 + '"')],
     ["offloads[", "].name", "at most 200"]),
    # panic
    ("panic-cell-zero", [PANIC, ("$", "[panic]\ncell_bytes = 0")], ["panic"]),
    ("panic-variant", [PANIC, ("$", '[panic]\nvariant = "half"')], ["panic.variant"]),
    ("panic-first-offload", [PANIC, ("$", '[panic]\nfirst_offload = "nope"')], ["panic.first_offload"]),
    ("panic-crossbar-small", [PANIC, ("$", "[panic]\ncrossbar_port_buffer_bytes = 100")],
     ["panic.crossbar_port_buffer_bytes"]),
    ("panic-pifo-clock-zero", [PANIC, ("$", "[panic]\npifo_clock_mhz = 0")], ["panic"]),
    ("panic-unknown-key", [PANIC, ("$", "[panic]\ncolour = 1")], ["panic.colour"]),
    # traffic
    ("rate-1e-30", [("rate_gbps = 90.0", "rate_gbps = 1e-30")], ["traffic.rate_gbps"]),
    ("rate-zero", [("rate_gbps = 90.0", "rate_gbps = 0.0")], ["traffic.rate_gbps"]),
    ("rate-negative", [("rate_gbps = 90.0", "rate_gbps = -90.0")], ["traffic.rate_gbps"]),
    ("rate-nan", [("rate_gbps = 90.0", "rate_gbps = nan")], ["traffic.rate_gbps"]),
    ("rate-inf", [("rate_gbps = 90.0", "rate_gbps = inf")], ["traffic.rate_gbps"]),
    ("rate-string", [("rate_gbps = 90.0", 'rate_gbps = "fast"')], ["traffic.rate_gbps"]),
    ("packets-zero", [("packets = 300", "packets = 0")], ["traffic.packets"]),
    ("packets-negative", [("packets = 300", "packets = -5")], ["traffic.packets"]),
    ("packets-u64-max", [("packets = 300", "packets = 18446744073709551615")], ["traffic.packets"]),
    ("packets-float", [("packets = 300", "packets = 1.5")], ["traffic.packets"]),
    ("arrivals-unknown", [('arrivals = "constant"', 'arrivals = "bursty"')], ["traffic.arrivals"]),
    ("size-fixed-63", [(SIZE, 'size = { dist = "fixed", bytes = 63 }')], ["traffic.size"]),
    ("size-fixed-9601", [(SIZE, 'size = { dist = "fixed", bytes = 9601 }')], ["traffic.size"]),
    ("size-values-empty", [("values = [64, 128, 256, 512, 1024, 1500]", "values = []")], ["traffic.size.values"]),
    ("size-weights-mismatch", [('dist = "uniform_set", values = [64, 128, 256, 512, 1024, 1500]',
                                'dist = "weighted", values = [64, 1500], weights = [1.0]')], ["traffic.size.weights"]),
    ("size-weights-negative", [('dist = "uniform_set", values = [64, 128, 256, 512, 1024, 1500]',
                                'dist = "weighted", values = [64, 1500], weights = [-1.0, 1.0]')],
     ["traffic.size.weights"]),
    ("size-weights-nan", [('dist = "uniform_set", values = [64, 128, 256, 512, 1024, 1500]',
                           'dist = "weighted", values = [64, 1500], weights = [nan, 1.0]')], ["traffic.size.weights"]),
    ("size-exponential-mean-zero", [('dist = "uniform_set", values = [64, 128, 256, 512, 1024, 1500]',
                                     'dist = "exponential", mean_bytes = 0.0, min_bytes = 64, max_bytes = 1500')],
     ["traffic.size.mean_bytes"]),
    ("size-exponential-min-above-max", [('dist = "uniform_set", values = [64, 128, 256, 512, 1024, 1500]',
                                         'dist = "exponential", mean_bytes = 500.0, min_bytes = 1500, '
                                         'max_bytes = 64')], ["traffic.size"]),
    ("size-lognormal-sigma-negative", [('dist = "uniform_set", values = [64, 128, 256, 512, 1024, 1500]',
                                        'dist = "lognormal", mu = 6.0, sigma = -1.0, min_bytes = 64, '
                                        'max_bytes = 1500')], ["traffic.size.sigma"]),
    ("size-dist-unknown", [('dist = "uniform_set"', 'dist = "zipf"')], ["traffic.size"]),
    ("size-not-table", [(SIZE, "size = 64")],
     ["traffic.size"]),
    ("size-capture-missing", [(SIZE,
                               'size = { dist = "capture", path = "nothere.pcap" }')], ["nothere.pcap"]),
    ("size-capture-garbage", [(SIZE,
                               'size = { dist = "capture", path = "garbage.bin" }')], ["garbage.bin"]),
    ("size-capture-folder", [(SIZE,
                              'size = { dist = "capture", path = "sub" }')], ["sub"]),
    ("replay-missing", [after('arrivals = "constant"', 'replay = { path = "missing.pcap" }')], ["missing.pcap"]),
    ("replay-dev-zero", [after('arrivals = "constant"', 'replay = { path = "/dev/zero" }')], ["/dev/zero"]),
    ("replay-garbage", [after('arrivals = "constant"', 'replay = { path = "garbage.bin" }')], ["garbage.bin"]),
    ("replay-timing-unknown", [after('arrivals = "constant"', 'replay = { path = "x.pcap", timing = "slow" }')],
     ["traffic.replay.timing"]),
    ("faults-bad-fcs-1.5", [after('arrivals = "constant"', "faults = { bad_fcs = 1.5 }")],
     ["traffic.faults.bad_fcs"]),
    ("faults-bad-tag-negative", [after('arrivals = "constant"', "faults = { bad_tag = -0.1 }")],
     ["traffic.faults.bad_tag"]),
    ("faults-nan", [after('arrivals = "constant"', "faults = { bad_fcs = nan }")], ["traffic.faults.bad_fcs"]),
    ("traffic-unknown-key", [after('arrivals = "constant"', "burst = 3")], ["traffic.burst"]),
    # flows
    ("flow-duplicate-name", [('name = "flow2"', FLOW1)], ["flows[1].name", "duplicate"]),
    ("flow-name-10k", [(FLOW1, 'name = "' + "f" * 10_000 + '"')], ["flows[0].name", "at most 200"]),
    ("flow-chain-unknown", [('chain = ["crc", "firewall", "sha3", "aes", "rss"]', 'chain = ["crc", "nope"]')],
     ["flows[0].chain[1]", "nope"]),
    ("flow-chain-string", [('chain = ["crc", "firewall", "sha3", "aes", "rss"]', 'chain = "crc"')],
     ["flows[0].chain"]),
    ("flow-chain-100-hops", [('chain = ["crc", "firewall", "sha3", "aes", "rss"]',
                              "chain = [" + ", ".join(['"crc"'] * 100) + "]")], ["flows[0].chain"]),
    ("flow-weight-negative", [after(FLOW1, "weight = -1.0")], ["flows[0].weight"]),
    ("flow-weight-nan", [after(FLOW1, "weight = nan")], ["flows[0].weight"]),
    ("flow-weights-all-zero", [lambda t: t.replace('dport = 500', 'weight = 0.0\ndport = 500')], ["flows"]),
    ("flow-src-not-ip", [after(FLOW1, 'src = "not-an-ip"')], ["flows[0].src"]),
    ("flow-dst-300", [after(FLOW1, 'dst = "300.1.1.1"')], ["flows[0].dst"]),
    ("flow-proto-unknown", [after(FLOW1, 'proto = "sctp2"')], ["flows[0].proto"]),
    ("flow-dport-70000", [("dport = 5001", "dport = 70000")], ["flows[0].dport"]),
    ("flow-sport-negative", [after(FLOW1, "sport = -1")], ["flows[0].sport"]),
    ("flow-priority-256", [after(FLOW1, "priority = 256")], ["flows[0].priority"]),
    ("flow-tos-256", [after(FLOW1, "tos = 256")], ["flows[0].tos"]),
    ("flow-match-src-bogus", [after(FLOW1, 'match = { src = "bogus" }')], ["flows[0].match.src"]),
    ("flow-match-dport-reversed", [after(FLOW1, 'match = { dport = "2000-1000" }')], ["flows[0].match.dport"]),
    ("flow-match-dport-text", [after(FLOW1, 'match = { dport = "abc" }')], ["flows[0].match.dport"]),
    ("flow-match-unknown-key", [after(FLOW1, "match = { colour = 1 }")], ["flows[0].match.colour"]),
    ("flow-name-missing", [(FLOW1, "")], ["flows[0]", "name"]),
    # measure
    ("window-reversed", [("window = [10, 290]", "window = [290, 10]")], ["measure.window"]),
    ("window-empty", [("window = [10, 290]", "window = [100, 100]")], ["measure.window"]),
    ("window-beyond-packets", [("window = [10, 290]", "window = [10, 100000]")], ["measure.window"]),
    ("window-three", [("window = [10, 290]", "window = [1, 2, 3]")], ["measure.window"]),
    ("window-negative", [("window = [10, 290]", "window = [-1, 100]")], ["measure.window"]),
    ("window-string", [("window = [10, 290]", 'window = "all"')], ["measure.window"]),
    ("egress-pcap-string", [after("window = [10, 290]", 'egress_pcap = "yes"')], ["measure.egress_pcap"]),
    # firewall and remap
    ("firewall-rule-garbage", [FUNCTIONAL, ("$", '[firewall]\nrules = ["allow everything please"]')],
     ["firewall.rules"]),
    ("firewall-rules-string", [("$", '[firewall]\nrules = "deny all"')], ["firewall.rules"]),
    ("remap-at-negative", [("$", '[[remap]]\nat_us = -1.0\nflow = "flow1"\nchain = ["crc"]')], ["remap[0].at_us"]),
    ("remap-at-nan", [("$", '[[remap]]\nat_us = nan\nflow = "flow1"\nchain = ["crc"]')], ["remap[0].at_us"]),
    ("remap-flow-unknown", [("$", '[[remap]]\nat_us = 1.0\nflow = "nope"\nchain = ["crc"]')], ["remap[0].flow"]),
    ("remap-chain-unknown", [("$", '[[remap]]\nat_us = 1.0\nflow = "flow1"\nchain = ["nope"]')],
     ["remap[0].chain[0]"]),
    # syntax and encoding
    ("toml-unclosed-table", [("[traffic]", "[traffic")], ["line"]),
    ("toml-unclosed-string", [('arch = "flexpipe"', 'arch = "flexpipe')], ["line"]),
    ("toml-bare-garbage", [("^", "}}}} not toml {{{{")], ["line"]),
    ("non-utf8", [("# The FlexPipe", "# The \udcff\udcfeFlexPipe")], ["UTF-8"]),
    ("nested-arrays-1000", [("^", "deep = " + "[" * 1000 + "]" * 1000)], ["nested"]),
    ("nested-arrays-50000", [("^", "deep = " + "[" * 50_000 + "]" * 50_000)], ["nested"]),
    ("nested-tables-1000", [("^", "deep = " + "{ a = " * 1000 + "1" + " }" * 1000)], ["nested"]),
    ("nested-header-1000", [("$", "[" + ".".join(["a"] * 1000) + "]\nx = 1")], ["nested"]),
    ("empty", [lambda t: ""], ["arch"]),
    ("comments-only", [lambda t: "# nothing here\n\n"], ["arch"]),
    ("json-instead", [lambda t: '{"seed": 1, "arch": "flexpipe"}'], ["is JSON, not TOML"]),
    ("router-config", [lambda t: (ROUTER / "setup_b.toml").read_text()], []),
]


@pytest.mark.parametrize("edits,needles", [c[1:] for c in DATAPATH_CONFIGS], ids=[c[0] for c in DATAPATH_CONFIGS])
def test_bad_datapath_config(tmp_path: Path, edits: list[Edit], needles: list[str]) -> None:
    cfg = tmp_path / "cfg.toml"
    text = mutate(BASE, edits)
    cfg.write_bytes(text.encode("utf-8", "surrogateescape"))
    (tmp_path / "garbage.bin").write_bytes(b"this is not a capture" * 10)
    (tmp_path / "sub").mkdir()
    before = {p.name for p in tmp_path.iterdir()}
    out = tmp_path / "o"
    refused(cli("run", cfg, "--out", out, timeout=60), "cfg.toml", *needles)
    nothing_written(tmp_path, before, out)


# Things that are not configuration files at all.
@pytest.mark.parametrize("cmd", ["run", "offloads", "router"])
@pytest.mark.parametrize("what", ["folder", "dev-null", "dev-zero", "missing", "binary", "fifo-garbage",
                                  "stdin-garbage", "stdin-empty"])
def test_not_a_config(tmp_path: Path, cmd: str, what: str) -> None:
    argv = {"run": ["run"], "offloads": ["offloads", "units"], "router": ["router", "run"]}[cmd]
    out = ["--out", str(tmp_path / "o")] if cmd != "offloads" else []
    stdin = None
    fifo = None
    if what == "folder":
        (tmp_path / "cfgdir").mkdir()
        path, needle = str(tmp_path / "cfgdir"), "cfgdir"
    elif what == "dev-null":
        path, needle = "/dev/null", "/dev/null"
    elif what == "dev-zero":
        path, needle = "/dev/zero", "/dev/zero"
    elif what == "missing":
        path, needle = str(tmp_path / "nothere.toml"), "nothere.toml"
    elif what == "binary":
        path, needle = sys.executable, sys.executable
    elif what == "fifo-garbage":
        fifo = Fifo(tmp_path, b"\x00\xff garbage [[[ \n" * 100)
        path, needle = str(fifo.path), "fifo"
    else:
        path, needle = "-", "<stdin>"
        stdin = b"\xff\xfe\x00garbage = [[[" if what == "stdin-garbage" else b""
    before = {p.name for p in tmp_path.iterdir()}
    if fifo is not None:
        with fifo:
            r = cli(*argv, path, *out, timeout=30)
        before.discard("fifo")
    else:
        r = cli(*argv, path, *out, timeout=30, stdin=stdin)
    refused(r, needle)
    nothing_written(tmp_path, before, tmp_path / "o")


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    cfg = tmp_path / "bom.toml"
    cfg.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    r = cli("run", cfg, "--out", tmp_path / "o", "-q")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o" / "summary.json").is_file()
    rt = tmp_path / "rt.toml"
    rt.write_bytes(b"\xef\xbb\xbf" + (ROUTER / "setup_b.toml").read_bytes())
    r = cli("router", "run", rt, "--out", tmp_path / "r", "-q", *SHORT)
    assert r.returncode == 0, r.stderr


# Extreme values that are not wrong: accepted, or refused by the standard; never a crash or hang.
EXTREME_CONFIGS: list[tuple[str, list[Edit]]] = [
    ("preprocessor-latency-u32-max", [after("clock_mhz = 250", "preprocessor_latency_cycles = 4294967295")]),
    ("dma-latency-u32-max", [after("clock_mhz = 250", "dma_latency_cycles = 4294967295")]),
    ("rate-1e308", [("rate_gbps = 90.0", "rate_gbps = 1e308")]),
    ("rate-5e-324", [("rate_gbps = 90.0", "rate_gbps = 5e-324")]),
    ("prime-clocks", [("clock_mhz = 250", "clock_mhz = 251"), ("clock_mhz = 150", "clock_mhz = 149"),
                      ("clock_mhz = 100", "clock_mhz = 101"), ("clock_mhz = 200", "clock_mhz = 199")]),
    ("crlf", [lambda t: t.replace("\n", "\r\n")]),
    ("flow-vlan-65535", [after(FLOW1, "vlan = 65535")]),
    ("seed-u64-max", [("seed = 1", "seed = 18446744073709551615")]),
]


@pytest.mark.parametrize("edits", [c[1] for c in EXTREME_CONFIGS], ids=[c[0] for c in EXTREME_CONFIGS])
def test_extreme_datapath_config(tmp_path: Path, edits: list[Edit]) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(mutate(BASE, edits))
    r = cli("run", cfg, "--out", tmp_path / "o", "-q", timeout=90)
    accepted_or_refused(r)
    if r.returncode:
        nothing_written(tmp_path, {"cfg.toml"}, tmp_path / "o")


# --------------------------------------------------------------------------------------------
# --param: the form, the key path, the value. The error names --param (and the key).

PARAMS: list[tuple[str, list[str], list[str]]] = [
    ("no-equals", ["rate"], ["--param", "KEY=VALUE"]),
    ("empty-key", ["=5"], ["--param"]),
    ("blank-key", ["   =5"], ["--param"]),
    ("double-dot", ["a..b=1"], ["--param", "a..b"]),
    ("index-not-number", ["flows[x].chain=[]"], ["--param", "flows[x]"]),
    ("index-negative", ["traffic[-1].x=1"], ["--param", "traffic[-1]"]),
    ("index-out-of-range", ["flows[99].weight=1"], ["--param", "flows[99]"]),
    ("index-huge", [f"flows[{HUGE_INT}].weight=1"], ["--param", "flows["]),
    ("index-into-table", ["traffic[0].rate_gbps=1"], ["--param", "traffic"]),
    # A key path deeper than a configuration file may nest (a RecursionError's traceback before).
    ("key-1000-deep", [".".join(["a"] * 1000) + "=1"], ["--param", "nested more than 32 deep"]),
    ("key-index-1000-deep", ["a" + "[0]" * 1000 + "=1"], ["--param", "nested more than 32 deep"]),
    ("index-into-scalar", ["seed[0]=1"], ["--param", "seed"]),
    ("chain-index-beyond", ["flows[0].chain[6]=crc"], ["--param", "flows[0].chain"]),  # [5] appends
    ("key-into-scalar", ["seed.x=1"], ["--param", "seed"]),
    ("unicode-key", ["tráfico.x=1"], ["--param", "tráfico"]),
    ("unknown-key", ["colour=1"], ["--param", "colour"]),
    ("unknown-nested-key", ["traffic.burst=3"], ["--param", "traffic.burst"]),
    ("rate-wrong-type", ["traffic.rate_gbps=fast"], ["--param", "traffic.rate_gbps"]),
    ("rate-nan", ["traffic.rate_gbps=nan"], ["--param", "traffic.rate_gbps"]),
    ("rate-inf", ["traffic.rate_gbps=inf"], ["--param", "traffic.rate_gbps"]),
    ("rate-1e-30", ["traffic.rate_gbps=1e-30"], ["--param", "traffic.rate_gbps"]),
    ("packets-zero", ["traffic.packets=0"], ["--param", "traffic.packets"]),
    ("packets-negative", ["traffic.packets=-1"], ["--param", "traffic.packets"]),
    ("packets-huge", [f"traffic.packets={HUGE_INT}"], ["--param", "traffic.packets"]),
    ("packets-u64-max", ["traffic.packets=18446744073709551615"], ["--param", "traffic.packets"]),
    ("clock-u32-max", ["pipeline.clock_mhz=4294967295"], ["--param", "pipeline.clock_mhz"]),
    ("units-u32-max", ["offloads[0].units=4294967295"], ["--param", "offloads[0].units"]),
    ("delay-u32-max", ["offloads[0].delay_cycles=4294967295"], ["--param", "offloads[0].delay_cycles"]),
    ("fifo-2^63", ["pipeline.arbiter_fifo_bytes=9223372036854775808"], ["--param", "pipeline.arbiter_fifo_bytes"]),
    ("fifo-zero", ["pipeline.recirc_fifo_bytes=0"], ["--param", "pipeline.recirc_fifo_bytes"]),
    ("window-beyond-packets", ["traffic.packets=300", "measure.window=[0,100000]"], ["--param", "measure.window"]),
    ("chain-unknown-offload", ['flows[0].chain=["crc","nope"]'], ["--param", "flows[0].chain[1]"]),
    ("arch-unknown", ["arch=bogus"], ["--param", "arch"]),
    ("flows-int", ["flows=7"], ["--param", "flows"]),
    ("flow-int", ["flows[0]=5"], ["--param", "flows[0]"]),
    ("size-dist-unknown", ["traffic.size.dist=zipf"], ["--param", "traffic.size"]),
    ("value-nested-1000", ["seed=" + "[" * 1000 + "]" * 1000], ["--param"]),
    ("value-nested-50000", ["seed=" + "[" * 50_000 + "]" * 50_000], ["--param"]),
    ("replay-dev-zero", ["traffic.replay.path=/dev/zero"], ["--param", "/dev/zero"]),
    ("weights-nan-inside", ['traffic.size={dist="weighted", values=[64, 1500], weights=[nan, 1.0]}'],
     ["--param", "traffic.size.weights"]),
]


@pytest.mark.parametrize("params,needles", [c[1:] for c in PARAMS], ids=[c[0] for c in PARAMS])
def test_bad_param_run(tmp_path: Path, params: list[str], needles: list[str]) -> None:
    args = [a for p in params for a in ("--param", p)]
    refused(cli("run", PAPER, "--out", tmp_path / "o", *TINY, *args, timeout=60), *needles)
    nothing_written(tmp_path, set(), tmp_path / "o")


@pytest.mark.parametrize("param,needles", [
    ("rate", ["--param", "KEY=VALUE"]),
    ("flows[x].chain=[]", ["--param", "flows[x]"]),
    ("offloads[0].units=0", ["--param", "offloads[0].units"]),
    ("offloads[6].units=1", ["--param", "offloads[6]"]),
], ids=["no-equals", "bad-index", "units-zero", "index-out-of-range"])
def test_bad_param_offloads_units(param: str, needles: list[str]) -> None:
    refused(cli("offloads", "units", PAPER, "--param", param), *needles)


SWEEP_PARAMS: list[tuple[str, list[str], list[str]]] = [
    ("no-equals", ["rate"], ["--param"]),
    ("no-values", ["traffic.rate_gbps="], ["--param", "traffic.rate_gbps"]),
    ("empty-value", ["traffic.rate_gbps=64,,128"], ["--param", "traffic.rate_gbps"]),
    ("given-twice", ["seed=1,2", "seed=3"], ["--param", "seed", "twice"]),
    ("bad-value", ["traffic.rate_gbps=64,fast"], ["--param", "traffic.rate_gbps"]),
    ("bad-key", ["a..b=1,2"], ["--param", "a..b"]),
    ("unknown-key", ["colour=1,2"], ["--param", "colour"]),
    ("index-out-of-range", ["flows[9].weight=1,2"], ["--param", "flows[9]"]),
    ("packets-zero", ["traffic.packets=0,300"], ["--param", "traffic.packets"]),
    ("router-bad-value", ["run.duration_us=1000,abc"], ["--param", "run.duration_us"]),
]


@pytest.mark.parametrize("params,needles", [c[1:] for c in SWEEP_PARAMS], ids=[c[0] for c in SWEEP_PARAMS])
def test_bad_param_sweep(tmp_path: Path, params: list[str], needles: list[str]) -> None:
    config = ROUTER / "setup_b.toml" if params[0].startswith("run.") else PAPER
    args = [a for p in params for a in ("--param", p)]
    refused(cli("sweep", config, "--out", tmp_path / "o", *args, "--workers", "1", "--fail-fast", timeout=60), *needles)
    nothing_written(tmp_path, set(), tmp_path / "o")


# --------------------------------------------------------------------------------------------
# Router configurations: set-up D (three NICs), cut to 1 ms.

RBASE = (ROUTER / "setup_d.toml").read_text().replace("duration_us = 10000.0", "duration_us = 1000.0").replace(
    "warmup_us = 2000.0", "warmup_us = 200.0")
assert "duration_us = 1000.0" in RBASE
BUS_CLOCK = "clock_mhz = 66    # the FPGA"
NIC0 = 'name = "nic0"'
T0_FLOW = 'dst = "10.0.2.1"'


def _nics(n: int) -> str:
    return "\n".join(f'[[nics]]\nname = "n{i}"\nsubnet = "10.{1 + i // 250}.{i % 250}.0/24"\nfast_path = false'
                     for i in range(n))


ROUTER_CONFIGS: list[tuple[str, list[Edit], list[str]]] = [
    ("nic-duplicate-name", [("$", '[[nics]]\nname = "nic2"\nsubnet = "10.0.9.0/24"')], ["nics[3].name", "duplicate"]),
    ("nic-name-10k", [("$", '[[nics]]\nname = "' + "n" * 10_000 + '"\nsubnet = "10.0.9.0/24"')],
     ["nics[3].name", "at most 200"]),
    ("nic-name-empty", [(NIC0, 'name = ""')], ["nics[0].name"]),
    ("nic-name-reserved", [(NIC0, 'name = "slow"')], ["nics[0].name"]),
    ("nic-name-space", [(NIC0, 'name = "nic 0"')], ["nics[0].name"]),
    ("nic-name-int", [(NIC0, "name = 0")], ["nics[0].name"]),
    ("route-unknown-nic", [('to = "nic1"', 'to = "nic9"')], ["nics[0].routes[0].to", "nic9"]),
    ("route-to-itself", [('to = "nic1"', 'to = "nic0"')], ["nics[0].routes[0].to"]),
    ("route-dst-bogus", [('dst = "10.0.1.0/24"', 'dst = "10.0.1.0/33"')], ["nics[0].routes[0].dst"]),
    ("subnet-bogus", [('subnet = "10.0.0.0/24"', 'subnet = "10.0.0.0/33"')], ["nics[0].subnet"]),
    ("subnet-overlap", [('subnet = "10.0.1.0/24"', 'subnet = "10.0.0.0/16"')], ["nics[1].subnet"]),
    ("subnet-not-prefix", [('subnet = "10.0.0.0/24"', 'subnet = "10.0.0.0/255.0.255.0"')], ["nics[0].subnet"]),
    ("subnet-slash-32", [('subnet = "10.0.0.0/24"', 'subnet = "10.0.0.0/32"')], ["subnet"]),
    ("one-nic", [lambda t: t[:t.index('[[nics]]\nname = "nic1"')] + t[t.index("[[traffic]]"):t.index(
        '[[traffic]]\nport = "nic1"')].replace('dst = "10.0.2.1"', 'dst = "10.0.0.9"')], ["nics"]),
    ("65-nics", [("$", _nics(62))], ["nics"]),
    ("fast-path-string", [("fast_path = true", 'fast_path = "yes"')], ["nics[0].fast_path"]),
    ("nic-unknown-key", [after(NIC0, "colour = 1")], ["nics[0].colour"]),
    ("class-unknown-nic", [("[[nics.routes]]", '[[nics.classes]]\nto = "nic9"\n[[nics.routes]]')],
     ["nics[0].classes[0].to"]),
    ("class-tos-wide", [("[[nics.routes]]", '[[nics.classes]]\ntos = "0x1ff"\n[[nics.routes]]')],
     ["nics[0].classes[0].tos"]),
    ("class-proto-unknown", [("[[nics.routes]]", '[[nics.classes]]\nproto = "sctp"\n[[nics.routes]]')],
     ["nics[0].classes[0].proto"]),
    ("class-src-bogus", [("[[nics.routes]]", '[[nics.classes]]\nsrc = "bogus"\n[[nics.routes]]')],
     ["nics[0].classes[0].src"]),
    ("traffic-port-unknown", [('port = "nic0"', 'port = "nic7"')], ["traffic[0].port"]),
    ("traffic-port-twice", [('port = "nic1"', 'port = "nic0"')], ["traffic[1].port"]),
    ("rate-zero", [("rate_mbps = 1000", "rate_mbps = 0")], ["traffic[0].rate_mbps"]),
    ("rate-negative", [("rate_mbps = 1000", "rate_mbps = -1")], ["traffic[0].rate_mbps"]),
    ("rate-nan", [("rate_mbps = 1000", "rate_mbps = nan")], ["traffic[0].rate_mbps"]),
    ("rate-inf", [("rate_mbps = 1000", "rate_mbps = inf")], ["traffic[0].rate_mbps"]),
    ("rate-above-line", [("rate_mbps = 1000", "rate_mbps = 1000.5")], ["traffic[0].rate_mbps"]),
    ("rate-string", [("rate_mbps = 1000", 'rate_mbps = "fast"')], ["traffic[0].rate_mbps"]),
    ("frame-63", [("frame_bytes = 64", "frame_bytes = 63")], ["traffic[0].frame_bytes"]),
    ("frame-9019", [("frame_bytes = 64", "frame_bytes = 9019")], ["traffic[0].frame_bytes"]),
    ("frame-2^32", [("frame_bytes = 64", "frame_bytes = 4294967296")], ["traffic[0].frame_bytes"]),
    ("flows-empty", [lambda t: t.replace('frame_bytes = 64\n[[traffic.flows]]\ndst = "10.0.2.1"\nweight = 1.0\n'
                                         'tos = 0', "frame_bytes = 64\nflows = []", 1)], ["traffic[0].flows"]),
    ("flow-dst-ipv6", [(T0_FLOW, 'dst = "::1"')], ["traffic[0].flows[0].dst"]),
    ("flow-weight-negative", [("weight = 1.0", "weight = -1.0")], ["traffic[0].flows[0].weight"]),
    ("flow-weight-nan", [("weight = 1.0", "weight = nan")], ["traffic[0].flows[0].weight"]),
    ("flow-weight-zero", [("weight = 1.0", "weight = 0.0")], ["traffic[0].flows"]),
    ("flow-ttl-256", [after(T0_FLOW, "ttl = 256")], ["traffic[0].flows[0].ttl"]),
    ("flow-proto-unknown", [after(T0_FLOW, 'proto = "bogus"')], ["traffic[0].flows[0].proto"]),
    ("flow-frame-10", [after(T0_FLOW, "frame_bytes = 10")], ["traffic[0].flows[0].frame_bytes"]),
    ("arrivals-unknown", [after('port = "nic0"', 'arrivals = "bursty"')], ["traffic[0].arrivals"]),
    ("mix-unknown", [after('port = "nic0"', 'mix = "shaken"')], ["traffic[0].mix"]),
    ("traffic-empty", [lambda t: "traffic = []\n" + t[:t.index("[[traffic]]")]], ["traffic"]),
    ("duration-zero", [("duration_us = 1000.0", "duration_us = 0.0")], ["run.duration_us"]),
    ("duration-negative", [("duration_us = 1000.0", "duration_us = -1.0")], ["run.duration_us"]),
    ("duration-nan", [("duration_us = 1000.0", "duration_us = nan")], ["run.duration_us"]),
    ("duration-1e9", [("duration_us = 1000.0", "duration_us = 1e9")], ["run.duration_us"]),
    ("warmup-equals-duration", [("warmup_us = 200.0", "warmup_us = 1000.0")], ["run.warmup_us"]),
    ("warmup-negative", [("warmup_us = 200.0", "warmup_us = -1.0")], ["run.warmup_us"]),
    ("bus-clock-zero", [(BUS_CLOCK, "clock_mhz = 0 #")], ["pc.bus.clock_mhz"]),
    ("bus-clock-u32-max", [(BUS_CLOCK, "clock_mhz = 4294967295 #")], ["pc.bus.clock_mhz"]),
    ("bus-clock-negative", [(BUS_CLOCK, "clock_mhz = -66 #")], ["pc.bus.clock_mhz"]),
    ("bus-width-12", [("width_bits = 64", "width_bits = 12")], ["pc.bus.width_bits"]),
    ("bus-burst-zero", [after("[pc.bus]", "max_burst_bytes = 0")], ["pc.bus.max_burst_bytes"]),
    ("bus-overhead-5000", [after("[pc.bus]", "overhead_cycles = 5000")], ["pc.bus.overhead_cycles"]),
    ("bus-unknown-key", [after("[pc.bus]", "colour = 1")], ["pc.bus.colour"]),
    ("cpu-clock-zero", [("[pc.bus]", "[pc.cpu]\nclock_mhz = 0\n[pc.bus]")], ["pc.cpu.clock_mhz"]),
    ("cpu-forward-zero", [("[pc.bus]", "[pc.cpu]\nforward_cycles = 0\n[pc.bus]")], ["pc.cpu.forward_cycles"]),
    ("memory-latency-2ms", [("[pc.bus]", "[pc.memory]\nread_latency_ns = 2000000\n[pc.bus]")],
     ["pc.memory.read_latency_ns"]),
    ("memory-transfers-9", [("[pc.bus]", "[pc.memory]\ntransfers_per_clock = 9\n[pc.bus]")],
     ["pc.memory.transfers_per_clock"]),
    ("driver-rx-zero", [("[pc.bus]", "[pc.driver]\nrx_ring_slots = 0\n[pc.bus]")], ["pc.driver.rx_ring_slots"]),
    ("driver-descriptor-5000", [("[pc.bus]", "[pc.driver]\ndescriptor_bytes = 5000\n[pc.bus]")],
     ["pc.driver.descriptor_bytes"]),
    ("nic-input-fifo-10", [("[pc.bus]", "[nic]\ninput_fifo_bytes = 10\n[pc.bus]")], ["nic.input_fifo_bytes"]),
    ("nic-output-fifo-2^32", [("[pc.bus]", "[nic]\noutput_fifo_bytes = 4294967296\n[pc.bus]")],
     ["nic.output_fifo_bytes"]),
    ("nic-clock-zero", [("[pc.bus]", "[nic]\nclock_mhz = 0\n[pc.bus]")], ["nic.clock_mhz"]),
    ("nic-datapath-12", [("[pc.bus]", "[nic]\ndatapath_bits = 12\n[pc.bus]")], ["nic.datapath_bits"]),
    ("seed-negative", [("seed = 1", "seed = -1")], ["seed"]),
    ("mode-unknown", [("seed = 1", 'seed = 1\nmode = "warp"')], ["mode"]),
    ("unknown-top-key", [("seed = 1", "seed = 1\ncolour = 1")], ["colour"]),
    ("syntax-error", [("[pc.bus]", "[pc.bus")], ["line"]),
    ("non-utf8", [("# Set-up D", "# Set-up \udcffD")], ["UTF-8"]),
    ("nested-1000", [("seed = 1", "deep = " + "[" * 1000 + "]" * 1000 + "\nseed = 1")], ["nested"]),
    ("empty", [lambda t: ""], ["nics"]),
    ("datapath-config", [lambda t: BASE], []),
]


@pytest.mark.parametrize("edits,needles", [c[1:] for c in ROUTER_CONFIGS], ids=[c[0] for c in ROUTER_CONFIGS])
def test_bad_router_config(tmp_path: Path, edits: list[Edit], needles: list[str]) -> None:
    cfg = tmp_path / "rt.toml"
    cfg.write_bytes(mutate(RBASE, edits).encode("utf-8", "surrogateescape"))
    out = tmp_path / "o"
    refused(cli("router", "run", cfg, "--out", out, timeout=60), "rt.toml", *needles)
    nothing_written(tmp_path, {"rt.toml"}, out)


@pytest.mark.parametrize("param,needles", [
    ("run.duration_us", ["--param", "KEY=VALUE"]),
    ("run.duration_us=abc", ["--param", "run.duration_us"]),
    ("traffic[5].rate_mbps=1", ["--param", "traffic[5]"]),
    ("nics[0].routes[0].to=nic9", ["--param", "nics[0].routes[0].to"]),
    ("pc.bus.clock_mhz=0", ["--param", "pc.bus.clock_mhz"]),
    ("pc.bus.clock_mhz=4294967295", ["--param", "pc.bus.clock_mhz"]),
    ("run.duration_us=inf", ["--param", "run.duration_us"]),
], ids=["no-equals", "duration-text", "index-out-of-range", "route-unknown", "bus-clock-zero", "bus-clock-huge",
        "duration-inf"])
def test_bad_param_router(tmp_path: Path, param: str, needles: list[str]) -> None:
    refused(cli("router", "run", ROUTER / "setup_d.toml", "--out", tmp_path / "o", *SHORT, "--param", param),
            *needles)
    nothing_written(tmp_path, set(), tmp_path / "o")


# --------------------------------------------------------------------------------------------
# Captures for `flowmem reassemble`, `flowmem bench` and `flowmem sizes`.


def tcp_frame(seq: int, flags: int, payload: bytes, reverse: bool = False, doff: int = 5, ihl: int = 5) -> bytes:
    a, b = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    src, dst, sport, dport = (b, a, 80, 40000) if reverse else (a, b, 40000, 80)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 0, doff << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(tcp), 0, 0, 64, 6, 0, src, dst) + tcp
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip


def udp_frame() -> bytes:
    udp = struct.pack("!HHHH", 5000, 53, 12, 0) + b"abcd"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, bytes([10, 0, 0, 1]),
                     bytes([10, 0, 0, 2])) + udp
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip


FRAMES = [tcp_frame(1000, 0x02, b""), tcp_frame(1001, 0x18, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
          tcp_frame(7000, 0x18, b"HTTP/1.1 200 OK\r\n\r\nhello", reverse=True)]
F = FRAMES[1]


def pcap_header(snaplen: int = 65535, linktype: int = 1, magic: int = 0xA1B2C3D4, version: tuple[int, int] = (2, 4),
                endian: str = "<") -> bytes:
    return struct.pack(endian + "IHHiIII", magic, *version, 0, 0, snaplen, linktype)


def pcap_record(data: bytes, caplen: int | None = None, origlen: int | None = None, endian: str = "<") -> bytes:
    return struct.pack(endian + "IIII", 1, 0, len(data) if caplen is None else caplen,
                       len(data) if origlen is None else origlen) + data


def pcap(frames: list[bytes] = FRAMES, **header: int) -> bytes:
    return pcap_header(**header) + b"".join(pcap_record(f) for f in frames)


def block(btype: int, body: bytes, length: int | None = None, trailer: int | None = None) -> bytes:
    body += bytes(-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", btype, n if length is None else length) + body + struct.pack(
        "<I", n if trailer is None else trailer)


SHB = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
IDB = block(1, struct.pack("<HHI", 1, 0, 65535))


def epb(data: bytes, iface: int = 0, caplen: int | None = None) -> bytes:
    return block(6, struct.pack("<IIIII", iface, 0, 1, len(data) if caplen is None else caplen, len(data)) + data)


# (id, capture bytes, needles besides the file's name)
CAPTURES: list[tuple[str, bytes, list[str]]] = [
    ("empty", b"", []),
    ("1-byte", pcap()[:1], []),
    ("4-bytes", pcap()[:4], []),
    ("12-bytes", pcap()[:12], []),
    ("23-bytes", pcap()[:23], []),
    ("wrong-magic", b"\x00" * 24 + pcap_record(F), []),
    ("text", b"not a capture at all, just text\n" * 4, []),
    ("header-only", pcap_header(), ["no TCP flow"]),
    ("snaplen-0-no-records", pcap_header(snaplen=0), []),
    ("snaplen-u32-max-no-records", pcap_header(snaplen=2**32 - 1), []),
    ("unknown-linktype", pcap(linktype=12345), []),
    ("caplen-2^31", pcap_header() + pcap_record(F, caplen=2**31), ["offset"]),
    ("caplen-u32-max", pcap_header() + pcap_record(F, caplen=2**32 - 1), ["offset"]),
    # Cut short inside the first record: read (as tshark reads it) but no flow in it.
    ("truncated-first-record-header", pcap_header() + pcap_record(F)[:10], ["no TCP flow", "cut short", "offset 24"]),
    ("big-endian-truncated", pcap_header(endian=">") + pcap_record(F, endian=">")[:40], ["no TCP flow", "cut short"]),
    ("nanosecond-caplen-huge", pcap_header(magic=0xA1B23C4D) + pcap_record(F, caplen=2**31), ["offset"]),
    ("no-tcp", pcap([udp_frame()] * 3), ["no TCP flow"]),
    ("tcp-doff-beyond", pcap([tcp_frame(1, 0x18, b"x", doff=15)] * 2), []),
    ("ip-ihl-3", pcap([tcp_frame(1, 0x18, b"x", ihl=3)] * 2), []),
    ("pcapng-shb-only", SHB, []),
    ("pcapng-shb-length-0", block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1), length=0), []),
    ("pcapng-shb-length-13", block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1), length=13), []),
    ("pcapng-shb-bad-byte-order", block(0x0A0D0D0A, struct.pack("<IHHq", 0x12345678, 1, 0, -1)), []),
    ("pcapng-block-length-huge", SHB + IDB + block(6, b"\0" * 20, length=2**32 - 4), ["offset"]),
    ("pcapng-block-length-0", SHB + IDB + struct.pack("<II", 6, 0) + epb(F), ["offset"]),
    ("pcapng-block-length-8", SHB + IDB + struct.pack("<II", 6, 8) + epb(F), ["offset"]),
    ("pcapng-trailer-mismatch", SHB + IDB + block(6, b"\0" * 20, trailer=99), ["offset"]),
    ("pcapng-unknown-blocks-only", SHB + IDB + block(0x12345678, b"junk") * 3, []),
    ("pcapng-epb-before-idb", SHB + epb(F), []),
    ("pcapng-epb-bad-interface", SHB + IDB + epb(F, iface=5), []),
    ("pcapng-truncated", (SHB + IDB + epb(F))[:-7], ["no TCP flow", "cut short"]),
]


SOME = {"empty", "12-bytes", "wrong-magic", "header-only", "unknown-linktype", "caplen-2^31",
        "truncated-first-record-header", "no-tcp", "pcapng-block-length-0", "pcapng-block-length-huge", "pcapng-epb-before-idb"}
CAPTURE_CASES = [pytest.param(cmd, data, needles, id=f"{name}-{cmd}") for name, data, needles in CAPTURES
                 for cmd in ("reassemble", "bench", "sizes") if cmd == "reassemble" or name in SOME]


def test_caplen_above_the_file_snaplen_is_read(tmp_path: Path) -> None:
    """A record longer than the file header's snaplen is read, as libpcap and tshark read it
    (writers get the header's snaplen wrong); longer than its own original length too (tshark
    reads its captured bytes, flagging "Frame length is less than captured length"): every
    record's payload is in the flow, pcap and pcapng alike."""
    cap = tmp_path / "cap.pcap"
    cap.write_bytes(pcap_header(snaplen=40) + pcap_record(F))
    r = cli("flowmem", "reassemble", cap, "--out", tmp_path / "o")
    assert r.returncode in (0, 2) and "Traceback" not in r.stderr
    if r.returncode == 2:
        assert_one_line_error(r, "no TCP flow")
    frames = [tcp_frame(1 + 5 * i, 0x18, b"abcde") for i in range(4)]
    for name, data in (
            ("short-orig.pcap", pcap_header() + b"".join(
                pcap_record(f, origlen=(0, 10, len(f) - 1, len(f))[i]) for i, f in enumerate(frames))),
            ("short-orig.pcapng", SHB + IDB + b"".join(
                block(6, struct.pack("<IIIII", 0, 0, 1, len(f), (0, 10, len(f) - 1, len(f))[i]) + f)
                for i, f in enumerate(frames)))):
        cap = tmp_path / name
        cap.write_bytes(data)
        out = tmp_path / f"o-{name}"
        r = cli("flowmem", "reassemble", cap, "--out", out)
        assert r.returncode == 0, r.stderr
        flows = json.loads((out / "flows.json").read_text())
        assert [(out / f["file"]).read_bytes() for f in flows if f["bytes"]] == [b"abcde" * 4], flows


@pytest.mark.parametrize("cmd,data,needles", CAPTURE_CASES)
def test_bad_capture(tmp_path: Path, cmd: str, data: bytes, needles: list[str]) -> None:
    cap = tmp_path / "cap.pcap"
    cap.write_bytes(data)
    extra = ["--repeat", "1"] if cmd == "bench" else []
    out = tmp_path / "o"
    refused(cli("flowmem", cmd, cap, "--out", out, *extra, timeout=30), "cap.pcap", *needles)
    nothing_written(tmp_path, {"cap.pcap"}, out)


def _pcap_be(frames: list[bytes]) -> bytes:
    return pcap_header(endian=">") + b"".join(pcap_record(f, endian=">") for f in frames)


# A file that ends inside its last record (copied while being written, `head -c`, a stray byte
# after the last record): (id, the whole records, what follows them).
CUT_SHORT: list[tuple[str, bytes, bytes]] = [
    ("record-header", pcap(), pcap_record(F)[:10]),
    ("record-data", pcap(), pcap_record(F)[:30]),
    ("stray-byte", pcap(), b"\0"),
    ("big-endian", _pcap_be(FRAMES), pcap_record(F, endian=">")[:40]),
    ("pcapng-block", SHB + IDB + b"".join(epb(f) for f in FRAMES), epb(F)[:-7]),
    ("pcapng-block-header", SHB + IDB + b"".join(epb(f) for f in FRAMES), epb(F)[:5]),
]


@pytest.mark.parametrize("whole,tail", [c[1:] for c in CUT_SHORT], ids=[c[0] for c in CUT_SHORT])
def test_capture_cut_short_is_read_up_to_the_cut(tmp_path: Path, whole: bytes, tail: bytes) -> None:
    """As tshark reads it ("appears to have been cut short in the middle of a packet"): the
    records before the cut are read, and a warning names the offset; summary.json says where."""
    ref, cap = tmp_path / "ref.pcap", tmp_path / "cap.pcap"
    ref.write_bytes(whole)
    cap.write_bytes(whole + tail)
    r = cli("flowmem", "reassemble", cap, "--out", tmp_path / "o", timeout=30)
    assert r.returncode == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if "cut short" in line]
    assert len(warning) == 1 and f"offset {len(whole)}:" in warning[0], r.stderr
    assert cli("flowmem", "reassemble", ref, "--out", tmp_path / "r", "-q", timeout=30).returncode == 0
    got, want = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("o", "r"))
    assert got["capture_cut_short_at"] == len(whole) and want["capture_cut_short_at"] is None
    assert got["capture_warnings"] == 1 and want["capture_warnings"] == 0
    assert got["packets"] == want["packets"] and got["packets"]["read"] == len(FRAMES)
    assert got["stream_bytes"] == want["stream_bytes"] > 0


EXTREME_CAPTURES: list[tuple[str, bytes]] = [
    ("snaplen-0-with-records", pcap(snaplen=0)),
    ("snaplen-u32-max-with-records", pcap(snaplen=2**32 - 1)),
    ("version-99", pcap(version=(99, 99))),
    ("20000-empty-records", pcap_header() + pcap_record(b"") * 20_000 + pcap_record(F)),
    ("pcapng-unknown-block-between", SHB + IDB + block(0x12345678, b"junk") + epb(F)),
    # A captured length beyond the block: cut to what the block holds and counted (issue 33).
    ("pcapng-epb-caplen-beyond-block", SHB + IDB + epb(F, caplen=5000)),
]


@pytest.mark.parametrize("data", [c[1] for c in EXTREME_CAPTURES], ids=[c[0] for c in EXTREME_CAPTURES])
def test_extreme_capture(tmp_path: Path, data: bytes) -> None:
    cap = tmp_path / "cap.pcap"
    cap.write_bytes(data)
    r = cli("flowmem", "reassemble", cap, "--out", tmp_path / "o", "-q", timeout=30)
    accepted_or_refused(r)


@pytest.mark.parametrize("cmd", ["reassemble", "bench", "sizes"])
@pytest.mark.parametrize("what", ["folder", "dev-zero", "dev-null", "missing", "fifo-garbage", "fifo-magic-garbage",
                                  "stdin-empty", "stdin-garbage"])
def test_not_a_capture(tmp_path: Path, cmd: str, what: str) -> None:
    extra = ["--repeat", "1"] if cmd == "bench" else []
    out = tmp_path / "o"
    fifo = None
    stdin = None
    if what == "folder":
        (tmp_path / "capdir").mkdir()
        path, needle = str(tmp_path / "capdir"), "capdir"
    elif what == "dev-zero":
        path, needle = "/dev/zero", "/dev/zero"
    elif what == "dev-null":
        path, needle = "/dev/null", "/dev/null"
    elif what == "missing":
        path, needle = str(tmp_path / "nothere.pcap"), "nothere.pcap"
    elif what.startswith("fifo"):
        head = pcap_header() if what == "fifo-magic-garbage" else b""
        fifo = Fifo(tmp_path, head + random.Random(1).randbytes(100_000))
        path, needle = str(fifo.path), "fifo"
    else:
        path, needle = "-", "<stdin>"
        stdin = b"" if what == "stdin-empty" else b"\x00garbage" * 100
    before = {p.name for p in tmp_path.iterdir()} - {"fifo"}
    if fifo is not None:
        with fifo:
            r = cli("flowmem", cmd, path, "--out", out, *extra, timeout=30)
    else:
        r = cli("flowmem", cmd, path, "--out", out, *extra, timeout=30, stdin=stdin)
    refused(r, needle)
    nothing_written(tmp_path, before, out)


# --------------------------------------------------------------------------------------------
# Options of the flow commands.


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    p = tmp_path / "good.pcap"
    p.write_bytes(pcap(FRAMES))
    return p


def _sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _target_files(folder: Path) -> dict[str, str]:
    """Bad target TOML files (for `flowmem bench --target` and `xdp analyze --target`)."""
    nfp = (TARGETS / "nfp.toml").read_text()
    files: dict[str, str | bytes] = {
        "syntax.toml": "name = \"x\"\n[cores\n",
        "unknown.toml": _sub(nfp, "[cores]", "[cores]\ncolour = 1"),
        "empty.toml": "",
        "nonutf8.toml": b"name = \"\xff\xfe\"\n",
        "deep.toml": "x = " + "[" * 1000 + "]" * 1000,
        "zero-cores.toml": _sub(nfp, "count = 50", "count = 0"),
        "negative-cores.toml": _sub(nfp, "count = 50", "count = -1"),
        "nan-clock.toml": _sub(nfp, "clock_mhz = 800.0         #", "clock_mhz = nan #"),
        "zero-clock.toml": _sub(nfp, "clock_mhz = 800.0         #", "clock_mhz = 0.0 #"),
        # Positive, but its nanoseconds overflow to infinity (a TypeError's traceback before).
        "subnormal-clock.toml": _sub(nfp, "clock_mhz = 800.0         #", "clock_mhz = 5e-324 #"),
        "subnormal-dram-rate.toml": _sub(nfp, "read_mops = 197.4", "read_mops = 5e-324"),
        "negative-cost.toml": _sub(nfp, "alu = 1.0 ", "alu = -1e300 "),
        "string-count.toml": _sub(nfp, "count = 50", 'count = "fifty"'),
    }
    for name, text in files.items():
        (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    (folder / "dir.toml").mkdir()
    (folder / "zero.toml").symlink_to("/dev/zero")
    return {n: str(folder / n) for n in [*files, "dir.toml", "zero.toml", "missing.toml"]}


def _flow_targets(folder: Path) -> dict[str, str]:
    from nicsim import _core

    u250 = _core.flow_model_target("u250-microblaze")
    files = {"fsyntax.toml": "[core\n", "funknown.toml": _sub(u250, "[core]", "[core]\ncolour = 1"),
             "fzero-clock.toml": _sub(u250, "clock_mhz = 250", "clock_mhz = 0"),
             "fnan.toml": _sub(u250, "clock_mhz = 300", "clock_mhz = nan"),
             "fline-3.toml": _sub(u250, "line_bytes = 64", "line_bytes = 3"),
             "fsize-huge.toml": _sub(u250, "size_bytes = 262144", "size_bytes = 18446744073709551615")}
    for name, text in files.items():
        (folder / name).write_text(text)
    return {n: str(folder / n) for n in files}


FLOW_OPTIONS: list[tuple[str, list[str], list[str]]] = [
    ("reassemble-overlap", ["reassemble", "{cap}", "--overlap", "middle"], ["--overlap"]),
    ("reassemble-max-flows-0", ["reassemble", "{cap}", "--max-flows", "0"], ["--max-flows"]),
    ("reassemble-max-flows-negative", ["reassemble", "{cap}", "--max-flows", "-1"], ["--max-flows"]),
    ("reassemble-max-flows-huge", ["reassemble", "{cap}", "--max-flows", HUGE_INT], ["--max-flows"]),
    ("reassemble-max-flows-2^32", ["reassemble", "{cap}", "--max-flows", "4294967296"], ["--max-flows"]),
    ("reassemble-max-flows-float", ["reassemble", "{cap}", "--max-flows", "1.5"], ["--max-flows"]),
    ("reassemble-arena-negative", ["reassemble", "{cap}", "--max-arena-bytes", "-1"], ["--max-arena-bytes"]),
    ("reassemble-arena-2^64", ["reassemble", "{cap}", "--max-arena-bytes", "18446744073709551616"],
     ["--max-arena-bytes"]),
    ("reassemble-arena-exponent", ["reassemble", "{cap}", "--max-arena-bytes", "1e9"], ["--max-arena-bytes"]),
    ("bench-workload", ["bench", "{cap}", "--workload", "grep"], ["--workload"]),
    ("bench-repeat-0", ["bench", "{cap}", "--repeat", "0"], ["--repeat"]),
    ("bench-repeat-negative", ["bench", "{cap}", "--repeat", "-1"], ["--repeat"]),
    ("bench-repeat-1001", ["bench", "{cap}", "--repeat", "1001"], ["--repeat"]),
    ("bench-repeat-float", ["bench", "{cap}", "--repeat", "1.5"], ["--repeat"]),
    ("bench-workers-0", ["bench", "{cap}", "--workers", "0"], ["--workers"]),
    ("bench-workers-huge", ["bench", "{cap}", "--workers", HUGE_INT], ["--workers"]),
    ("bench-retrieval", ["bench", "{cap}", "--retrieval", "some"], ["--retrieval"]),
    ("bench-executor", ["bench", "{cap}", "--executor", "nope"], ["--executor"]),
    ("bench-executor-two-captures", ["bench", "{cap}", "{cap2}", "--executor", "nope"], ["--executor"]),
    ("bench-pattern-unclosed", ["bench", "{cap}", "-w", "regex", "--pattern", "(unclosed"], ["(unclosed"]),
    ("bench-pattern-backslash", ["bench", "{cap}", "-w", "regex", "--pattern", "\\"], ["--pattern"]),
    ("bench-pattern-huge-dfa", ["bench", "{cap}", "-w", "regex", "--pattern", "(a{1000}){1000}"], ["--pattern"]),
    ("bench-pattern-deep", ["bench", "{cap}", "-w", "regex", "--pattern", "(" * 5000 + "a" + ")" * 5000],
     ["--pattern"]),
    ("bench-target-unknown", ["bench", "{cap}", "--target", "nosuch"], ["nosuch"]),
    ("bench-target-missing", ["bench", "{cap}", "--target", "{missing.toml}"], ["missing.toml"]),
    ("bench-target-folder", ["bench", "{cap}", "--target", "{dir.toml}"], ["dir.toml"]),
    ("bench-target-dev-zero", ["bench", "{cap}", "--target", "{zero.toml}"], ["zero.toml"]),
    ("bench-target-empty", ["bench", "{cap}", "--target", "{empty.toml}"], ["empty.toml"]),
    ("bench-target-nonutf8", ["bench", "{cap}", "--target", "{nonutf8.toml}"], ["nonutf8.toml"]),
    ("bench-target-deep", ["bench", "{cap}", "--target", "{deep.toml}"], ["deep.toml"]),
    ("bench-target-syntax", ["bench", "{cap}", "--target", "{fsyntax.toml}"], ["fsyntax.toml", "line"]),
    ("bench-target-unknown-key", ["bench", "{cap}", "--target", "{funknown.toml}"], ["funknown.toml", "colour"]),
    ("bench-target-zero-clock", ["bench", "{cap}", "--target", "{fzero-clock.toml}"], ["fzero-clock.toml", "clock"]),
    ("bench-target-nan", ["bench", "{cap}", "--target", "{fnan.toml}"], ["fnan.toml", "dram.clock_mhz"]),
    ("bench-target-line-3", ["bench", "{cap}", "--target", "{fline-3.toml}"], ["fline-3.toml", "line_bytes"]),
    ("bench-target-size-huge", ["bench", "{cap}", "--target", "{fsize-huge.toml}"], ["fsize-huge.toml", "size_bytes"]),
    ("bench-one-bad-of-two", ["bench", "{cap}", "{bad}"], ["bad.pcap"]),
    ("bench-missing-of-two", ["bench", "{cap}", "{missing.pcap}"], ["missing.pcap"]),
    ("sizes-extra-argument", ["sizes", "{cap}", "{cap2}"], ["unexpected extra argument"]),
    ("reassemble-no-out", ["reassemble", "{cap}", "NOOUT"], ["--out"]),
]


@pytest.mark.parametrize("argv,needles", [c[1:] for c in FLOW_OPTIONS], ids=[c[0] for c in FLOW_OPTIONS])
def test_bad_flow_option(tmp_path: Path, capture: Path, argv: list[str], needles: list[str]) -> None:
    (tmp_path / "cap2.pcap").write_bytes(capture.read_bytes())
    (tmp_path / "bad.pcap").write_bytes(b"\x00" * 40)
    names = {"cap": str(capture), "cap2": str(tmp_path / "cap2.pcap"), "bad": str(tmp_path / "bad.pcap"),
             "missing.pcap": str(tmp_path / "missing.pcap"), **_target_files(tmp_path), **_flow_targets(tmp_path)}
    before = {p.name for p in tmp_path.iterdir()}
    args = [names[a[1:-1]] if a.startswith("{") else a for a in argv]
    out = [] if "NOOUT" in args else ["--out", str(tmp_path / "o")]
    args = [a for a in args if a != "NOOUT"]
    refused(cli("flowmem", *args, *out, timeout=30), *needles)
    nothing_written(tmp_path, before, tmp_path / "o")


SYNTH_OPTIONS: list[tuple[str, list[str], list[str]]] = [
    ("flows-0", ["--flows", "0"], ["--flows"]),
    ("flows-negative", ["--flows", "-1"], ["--flows"]),
    ("flows-too-many", ["--flows", "10000001"], ["--flows"]),
    ("flows-huge", ["--flows", HUGE_INT], ["--flows"]),
    ("flows-float", ["--flows", "1.5"], ["--flows"]),
    ("flows-text", ["--flows", "many"], ["--flows"]),
    ("seed-negative", ["--seed", "-5"], ["--seed"]),
    ("seed-2^64", ["--seed", "18446744073709551616"], ["--seed"]),
    ("seed-text", ["--seed", "abc"], ["--seed"]),
    ("loss-1", ["--loss", "1"], ["--loss"]),
    ("loss-negative", ["--loss", "-0.1"], ["--loss"]),
    ("loss-nan", ["--loss", "nan"], ["--loss"]),
    ("loss-inf", ["--loss", "inf"], ["--loss"]),
    ("reorder-2", ["--reorder", "2"], ["--reorder"]),
    ("reorder-nan", ["--reorder", "nan"], ["--reorder"]),
    ("duplicate-negative", ["--duplicate", "-1"], ["--duplicate"]),
    ("duplicate-nan", ["--duplicate", "nan"], ["--duplicate"]),
]


@pytest.mark.parametrize("args,needles", [c[1:] for c in SYNTH_OPTIONS], ids=[c[0] for c in SYNTH_OPTIONS])
def test_bad_synth_option(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    refused(cli("flowmem", "synth", tmp_path / "s.pcap", *args, timeout=30), *needles)
    nothing_written(tmp_path, set())


@pytest.mark.parametrize("what", ["empty", "folder", "under-a-file", "proc", "long-name", "missing-folder-file"])
def test_bad_synth_file(tmp_path: Path, what: str) -> None:
    (tmp_path / "file.txt").write_text("the user's data")
    (tmp_path / "adir").mkdir()
    target, needle = {
        "empty": ("", "empty path"),
        "folder": (str(tmp_path / "adir"), "adir"),
        "under-a-file": (str(tmp_path / "file.txt" / "x.pcap"), "file.txt"),
        "proc": ("/proc/nicsim-hostile.pcap", "/proc/nicsim-hostile.pcap"),
        "long-name": (str(tmp_path / ("x" * 300 + ".pcap")), "xxxx"),
        "missing-folder-file": (str(tmp_path / "file.txt" / "sub" / "x.pcap"), "file.txt"),
    }[what]
    before = {p.name for p in tmp_path.iterdir()}
    refused(cli("flowmem", "synth", target, "--flows", "5", cwd=tmp_path, timeout=30), needle)
    nothing_written(tmp_path, before)
    assert (tmp_path / "file.txt").read_text() == "the user's data"
    assert list((tmp_path / "adir").iterdir()) == []


# --------------------------------------------------------------------------------------------
# ELF objects for `xdp analyze` and `xdp sweep`, made from the suite's by hand.


class Elf:
    """An ELF64 little-endian object's section headers, to corrupt."""

    def __init__(self, data: bytes) -> None:
        self.b = bytearray(data)
        self.shoff = struct.unpack_from("<Q", self.b, 0x28)[0]
        self.shnum = struct.unpack_from("<H", self.b, 0x3C)[0]
        shstrndx = struct.unpack_from("<H", self.b, 0x3E)[0]
        self.strtab_off = self.field(shstrndx, 24, "Q")

    def hdr(self, i: int) -> int:
        return self.shoff + 64 * i

    def field(self, i: int, off: int, fmt: str) -> int:
        return struct.unpack_from("<" + fmt, self.b, self.hdr(i) + off)[0]

    def set(self, i: int, off: int, fmt: str, value: int) -> Elf:
        struct.pack_into("<" + fmt, self.b, self.hdr(i) + off, value)
        return self

    def name_at(self, i: int) -> int:
        return self.strtab_off + self.field(i, 0, "I")

    def index(self, name: str) -> int:
        for i in range(self.shnum):
            at = self.name_at(i)
            if bytes(self.b[at:at + len(name) + 1]) == name.encode() + b"\0":
                return i
        raise KeyError(name)

    def section(self, name: str) -> tuple[int, int, int]:
        i = self.index(name)
        return i, self.field(i, 24, "Q"), self.field(i, 32, "Q")


def _hdr(offset: int, fmt: str, value: int) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        b = bytearray(data)
        struct.pack_into("<" + fmt, b, offset, value)
        return bytes(b)
    return f


def _sec(name: str, off: int, fmt: str, value: int | Callable[[int], int]) -> Callable[[bytes], bytes]:
    """Set a section header field (24 offset, 32 size, 40 link, 44 info, 56 entsize, 4 type)."""
    def f(data: bytes) -> bytes:
        e = Elf(data)
        i = e.index(name)
        v = value(e.field(i, off, fmt)) if callable(value) else value
        return bytes(e.set(i, off, fmt, v).b)
    return f


def _fill(name: str, make: Callable[[int], bytes]) -> Callable[[bytes], bytes]:
    """Overwrite a section's bytes."""
    def f(data: bytes) -> bytes:
        e = Elf(data)
        _, off, size = e.section(name)
        e.b[off:off + size] = make(size)[:size].ljust(size, b"\0")
        return bytes(e.b)
    return f


def _core_record(**fields: int) -> Callable[[bytes], bytes]:
    """Set fields (insn_off, type_id, access_str_off, kind) of `.BTF.ext`'s first CO-RE
    relocation record (the header's CO-RE region at 24/28, then the record size, a section's name
    and count, its records)."""
    def f(data: bytes) -> bytes:
        e = Elf(data)
        _, off, _ = e.section(".BTF.ext")
        hdr, core = struct.unpack_from("<I", e.b, off + 4)[0], struct.unpack_from("<I", e.b, off + 24)[0]
        rec = off + hdr + core + 12
        for k, name in enumerate(("insn_off", "type_id", "access_str_off", "kind")):
            if name in fields:
                struct.pack_into("<I", e.b, rec + 4 * k, fields[name])
        return bytes(e.b)
    return f


def _rename(old: str, new: str) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        assert len(new) <= len(old)
        e = Elf(data)
        at = e.name_at(e.index(old))
        e.b[at:at + len(old)] = new.encode().ljust(len(old), b"\0")
        return bytes(e.b)
    return f


def _to_bss(size: int) -> Callable[[bytes], bytes]:
    """.rodata renamed .bss, made NOBITS and `size` bytes long."""
    def f(data: bytes) -> bytes:
        data = _rename(".rodata", ".bss")(data)
        e = Elf(data)
        i = e.index(".bss")
        return bytes(e.set(i, 4, "I", 8).set(i, 32, "Q", size).b)
    return f


def _rel_entries(name: str, mutate_entry: Callable[[int, int], tuple[int, int]]) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        e = Elf(data)
        _, off, size = e.section(name)
        for at in range(off, off + size, 16):
            r_off, r_info = struct.unpack_from("<QQ", e.b, at)
            struct.pack_into("<QQ", e.b, at, *mutate_entry(r_off, r_info))
        return bytes(e.b)
    return f


def _symbols(mutate_sym: Callable[[bytearray, int], None]) -> Callable[[bytes], bytes]:
    def f(data: bytes) -> bytes:
        e = Elf(data)
        _, off, size = e.section(".symtab")
        for at in range(off + 24, off + size, 24):
            mutate_sym(e.b, at)
        return bytes(e.b)
    return f


def _truncate(n: int | Callable[[int], int]) -> Callable[[bytes], bytes]:
    return lambda data: data[:n(len(data)) if callable(n) else n]


def _shndx(b: bytearray, at: int) -> None:
    struct.pack_into("<H", b, at + 6, 0xFFF0)


def _st_name(b: bytearray, at: int) -> None:
    struct.pack_into("<I", b, at, 0xFFFFFFF0)


# (id, base object, mutation, needles besides the file's name)
OBJECTS: list[tuple[str, str, Callable[[bytes], bytes], list[str]]] = [
    ("empty", "calls", lambda d: b"", []),
    ("random-4k", "calls", lambda d: random.Random(7).randbytes(4096), []),
    ("elf-magic-only", "calls", lambda d: b"\x7fELF", []),
    ("truncated-16", "calls", _truncate(16), []),
    ("truncated-63", "calls", _truncate(63), []),
    ("truncated-64", "calls", _truncate(64), []),
    ("truncated-300", "calls", _truncate(300), []),
    ("truncated-half", "calls", _truncate(lambda n: n // 2), []),
    ("truncated-last-byte", "calls", _truncate(lambda n: n - 1), []),
    ("class-elf32", "calls", _hdr(4, "B", 1), []),
    ("class-invalid", "calls", _hdr(4, "B", 3), []),
    ("big-endian", "calls", _hdr(5, "B", 2), []),
    ("endianness-invalid", "calls", _hdr(5, "B", 0), []),
    ("machine-x86-64", "calls", _hdr(0x12, "H", 62), ["not a BPF object"]),
    # (e_machine 0, EM_NONE, is what old LLVM wrote for BPF: read as libbpf reads it; loader.rs.)
    ("machine-arm", "calls", _hdr(0x12, "H", 40), ["not a BPF object"]),
    ("shoff-beyond-file", "calls", _hdr(0x28, "Q", 1 << 20), []),
    ("shoff-2^63", "calls", _hdr(0x28, "Q", 1 << 63), []),
    ("shnum-65535", "calls", _hdr(0x3C, "H", 0xFFFF), []),
    ("shstrndx-beyond", "calls", _hdr(0x3E, "H", 200), []),
    ("shentsize-32", "calls", _hdr(0x3A, "H", 32), []),
    ("xdp-offset-beyond-file", "calls", _sec("xdp", 24, "Q", 1 << 20), ["section 'xdp'", "past the end"]),
    ("xdp-size-2^62", "calls", _sec("xdp", 32, "Q", 1 << 62), []),
    ("xdp-size-not-multiple-of-8", "calls", _sec("xdp", 32, "Q", lambda s: s - 3), []),
    ("xdp-code-0xff", "calls", _fill("xdp", lambda n: b"\xff" * n), []),
    ("xdp-code-zero", "calls", _fill("xdp", lambda n: b"\0" * n), []),
    ("xdp-nobits", "calls", _sec("xdp", 4, "I", 8), []),
    ("no-xdp-program", "calls", _rename("xdp", "lsm"), ["no XDP program"]),
    ("no-program-at-all", "calls", _sec("xdp", 8, "Q", 2), ["no XDP program"]),  # code, not executable
    ("maps-size-2^40", "calls", _sec(".maps", 32, "Q", 1 << 40), []),
    ("btf-random", "calls", _fill(".BTF", lambda n: b"\x9f\xeb\x01\x00" + random.Random(5).randbytes(n)), []),
    ("btf-str-len-huge", "calls", _fill(".BTF", lambda n: struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, 0, 0,
                                                                        0xFFFFFFF0)), ["section '.BTF'", "strings"]),
    ("btf-type-len-huge", "calls", _fill(".BTF", lambda n: struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0,
                                                                         0xFFFFFFF0, 0, 0)), ["section '.BTF'", "types"]),
    ("btf-hdr-len-huge", "calls", _fill(".BTF", lambda n: struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 0xFFFFFFF0, 0,
                                                                        0, 0, 0)), ["section '.BTF'", "header"]),
    # .BTF.ext: the section, its header's regions and its records past their ends (aya-obj said
    # "error parsing section with index 19", or a slice's range, naming neither).
    ("btf-ext-offset-beyond-file", "calls", _sec(".BTF.ext", 24, "Q", 1 << 20), ["section '.BTF.ext'", "past the end"]),
    ("btf-ext-line-info-len-huge", "calls", _fill(".BTF.ext", lambda n: struct.pack(
        "<HBBIIIIIII", 0xEB9F, 1, 0, 32, 0, 0, 0, 0xFFFFFFF0, 0, 0)), ["section '.BTF.ext'", "line info"]),
    ("btf-ext-records-past-region", "calls", _fill(".BTF.ext", lambda n: struct.pack(
        "<HBBIIIIIIIIII", 0xEB9F, 1, 0, 32, 0, 12, 12, 0, 12, 0, 8, 0, 1000)),
     ["section '.BTF.ext'", "1000 function info records"]),
    ("btf-ext-random", "calls", _fill(".BTF.ext", lambda n: b"\x9f\xeb\x01\x00" + random.Random(6).randbytes(n)),
     []),
    ("btf-size-2^62", "calls", _sec(".BTF", 32, "Q", 1 << 62), []),
    # CO-RE relocation records (tests/xdp/core_relo.c), resolved against the kernel's BTF.
    ("core-relo-kind-99", "core_relo", _core_record(kind=99), ["section '.BTF.ext'", "relocation kind"]),
    ("core-relo-insn-beyond", "core_relo", _core_record(insn_off=1 << 20), ["section '.BTF.ext'", "not one of its"]),
    ("core-relo-type-unknown", "core_relo", _core_record(type_id=99_999), ["CO-RE relocations"]),
    ("core-relo-access-beyond", "core_relo", _core_record(access_str_off=1 << 30), ["CO-RE relocations"]),
    ("rel-info-beyond", "calls", _sec(".relxdp", 44, "I", 99), []),
    ("rel-link-beyond", "calls", _sec(".relxdp", 40, "I", 99), []),
    ("rel-offset-huge", "calls", _rel_entries(".relxdp", lambda o, i: (1 << 40, i)), []),
    ("rel-symbol-beyond", "calls", _rel_entries(".relxdp", lambda o, i: (o, (0xFFFFFF << 32) | (i & 0xFFFFFFFF))),
     []),
    ("rel-offset-unaligned", "calls", _rel_entries(".relxdp", lambda o, i: (o + 3, i)), []),
    ("symtab-size-2^40", "calls", _sec(".symtab", 32, "Q", 1 << 40), []),
    ("symbols-bad-section", "calls", _symbols(_shndx), []),
    ("symbols-bad-name", "calls", _symbols(_st_name), ["'.symtab'", "string table"]),
    ("strtab-size-zero", "calls", _sec(".strtab", 32, "Q", 0), []),
    ("bss-size-2^44", "count_min_2", _to_bss(1 << 44), []),
    ("bss-size-2^63", "count_min_2", _to_bss(1 << 63), []),
    ("rodata-size-2^40", "count_min_2", _sec(".rodata", 32, "Q", 1 << 40), []),
]


def _bad_object(tmp_path: Path, base: str, make: Callable[[bytes], bytes]) -> Path:
    p = tmp_path / "bad.o"
    p.write_bytes(make(obj(base).read_bytes()))
    return p


@pytest.mark.parametrize("base,make,needles", [c[1:] for c in OBJECTS], ids=[c[0] for c in OBJECTS])
def test_bad_object_analyze(tmp_path: Path, base: str, make: Callable[[bytes], bytes], needles: list[str]) -> None:
    bad = _bad_object(tmp_path, base, make)
    out = tmp_path / "o"
    refused(cli("xdp", "analyze", bad, "--out", out, "--timeout", "5", timeout=60), "bad.o", *needles)
    nothing_written(tmp_path, {"bad.o"}, out)


@pytest.mark.parametrize("case", ["empty", "truncated-300", "machine-x86-64", "shoff-beyond-file", "no-xdp-program",
                                  "bss-size-2^44"])
def test_bad_object_sweep(tmp_path: Path, case: str) -> None:
    _, base, make, needles = next(c for c in OBJECTS if c[0] == case)
    bad = _bad_object(tmp_path, base, make)
    out = tmp_path / "o"
    r = cli("xdp", "sweep", obj("calls"), bad, "--out", out, "--timeout", "5", "--workers", "1", "--fail-fast",
            timeout=120)
    refused(r, "bad.o", *needles)
    nothing_written(tmp_path, {"bad.o"}, out)


# Metadata the analysis does not need (BTF-defined maps take their definitions from .BTF, not from
# the bytes of .maps): analysed or refused, never a crash.
EXTREME_OBJECTS: list[tuple[str, Callable[[bytes], bytes]]] = [
    ("maps-size-zero", _sec(".maps", 32, "Q", 0)),
    ("maps-random", _fill(".maps", lambda n: random.Random(3).randbytes(n))),
    ("symtab-entsize-zero", _sec(".symtab", 56, "Q", 0)),
]


@pytest.mark.parametrize("make", [c[1] for c in EXTREME_OBJECTS], ids=[c[0] for c in EXTREME_OBJECTS])
def test_extreme_object(tmp_path: Path, make: Callable[[bytes], bytes]) -> None:
    bad = _bad_object(tmp_path, "calls", make)
    r = cli("xdp", "analyze", bad, "--out", tmp_path / "o", "--timeout", "5", "-q", timeout=60)
    accepted_or_refused(r)


@pytest.mark.parametrize("seed", range(6))
def test_random_code_corruption(tmp_path: Path, seed: int) -> None:
    """A few bytes of the program changed at random: analysed or refused, never a crash or hang."""
    rng = random.Random(seed)

    def corrupt(data: bytes) -> bytes:
        e = Elf(data)
        _, off, size = e.section("xdp")
        for _ in range(8):
            e.b[off + rng.randrange(size)] = rng.randrange(256)
        return bytes(e.b)

    bad = _bad_object(tmp_path, "calls", corrupt)
    r = cli("xdp", "analyze", bad, "--out", tmp_path / "o", "--timeout", "5", "--memory-mb", "256", "-q",
            timeout=90)
    accepted_or_refused(r)
    if r.returncode:
        assert "bad.o" in r.stderr
        nothing_written(tmp_path, {"bad.o"}, tmp_path / "o")


@pytest.mark.parametrize("cmd", ["analyze", "sweep"])
@pytest.mark.parametrize("what", ["folder", "dev-null", "dev-zero", "missing", "fifo-garbage", "not-bpf"])
def test_not_an_object(tmp_path: Path, cmd: str, what: str) -> None:
    calls = obj("calls")
    fifo = None
    if what == "folder":
        (tmp_path / "objdir").mkdir()
        path, needle = str(tmp_path / "objdir"), "objdir"
    elif what == "dev-null":
        path, needle = "/dev/null", "/dev/null"
    elif what == "dev-zero":
        path, needle = "/dev/zero", "/dev/zero"
    elif what == "missing":
        path, needle = str(tmp_path / "nothere.o"), "nothere.o"
    elif what == "not-bpf":
        path, needle = sys.executable, sys.executable
    else:
        fifo = Fifo(tmp_path, b"\x7fELF" + random.Random(2).randbytes(5000))
        path, needle = str(fifo.path), "fifo"
    args = ["analyze", path] if cmd == "analyze" else ["sweep", str(calls), path, "--workers", "1", "--fail-fast"]
    before = {p.name for p in tmp_path.iterdir()} - {"fifo"}
    if fifo is not None:
        with fifo:
            r = cli("xdp", *args, "--out", tmp_path / "o", "--timeout", "5", timeout=60)
    else:
        r = cli("xdp", *args, "--out", tmp_path / "o", "--timeout", "5", timeout=60)
    refused(r, needle)
    nothing_written(tmp_path, before, tmp_path / "o")


XDP_OPTIONS: list[tuple[str, list[str], list[str]]] = [
    ("loop-bound-negative", ["analyze", "{calls}", "--loop-bound", "-1"], ["--loop-bound"]),
    ("loop-bound-2^32", ["analyze", "{calls}", "--loop-bound", "4294967296"], ["--loop-bound"]),
    ("loop-bound-text", ["analyze", "{calls}", "--loop-bound", "many"], ["--loop-bound"]),
    ("memory-1e23", ["analyze", "{calls}", "--memory-mb", "1e23"], ["--memory-mb"]),
    ("memory-huge-int", ["analyze", "{calls}", "--memory-mb", HUGE_INT], ["--memory-mb"]),
    ("memory-zero", ["analyze", "{calls}", "--memory-mb", "0"], ["--memory-mb"]),
    ("memory-negative", ["analyze", "{calls}", "--memory-mb", "-1"], ["--memory-mb"]),
    ("timeout-nan", ["analyze", "{calls}", "--timeout", "nan"], ["--timeout"]),
    ("timeout-negative", ["analyze", "{calls}", "--timeout", "-1"], ["--timeout"]),
    ("timeout-inf", ["analyze", "{calls}", "--timeout", "inf"], ["--timeout"]),
    ("timeout-1e400", ["analyze", "{calls}", "--timeout", "1e400"], ["--timeout"]),
    ("timeout-text", ["analyze", "{calls}", "--timeout", "soon"], ["--timeout"]),
    ("rate", ["analyze", "{calls}", "--rate", "byte"], ["--rate"]),
    ("solver", ["analyze", "{calls}", "--solver", "cvc5"], ["--solver"]),
    ("section-empty", ["analyze", "{calls}", "--section", ""], ["section"]),
    ("section-nope", ["analyze", "{calls}", "--section", "nope"], ["nope"]),
    ("target-nope", ["analyze", "{calls}", "--target", "nope"], ["nope"]),
    ("target-empty", ["analyze", "{calls}", "--target", ""], ["target"]),
    ("target-syntax", ["analyze", "{calls}", "--target", "{syntax.toml}"], ["syntax.toml", "line"]),
    ("target-unknown-key", ["analyze", "{calls}", "--target", "{unknown.toml}"], ["unknown.toml", "cores.colour"]),
    ("target-empty-file", ["analyze", "{calls}", "--target", "{empty.toml}"], ["empty.toml"]),
    ("target-nonutf8", ["analyze", "{calls}", "--target", "{nonutf8.toml}"], ["nonutf8.toml", "UTF-8"]),
    ("target-deep", ["analyze", "{calls}", "--target", "{deep.toml}"], ["deep.toml", "nested"]),
    ("target-zero-cores", ["analyze", "{calls}", "--target", "{zero-cores.toml}"], ["zero-cores.toml", "cores", "count"]),
    ("target-negative-cores", ["analyze", "{calls}", "--target", "{negative-cores.toml}"],
     ["negative-cores.toml", "cores.count"]),
    ("target-nan-clock", ["analyze", "{calls}", "--target", "{nan-clock.toml}"], ["nan-clock.toml", "cores.clock_mhz"]),
    ("target-zero-clock", ["analyze", "{calls}", "--target", "{zero-clock.toml}"],
     ["zero-clock.toml", "cores", "clock_mhz"]),
    ("target-subnormal-clock", ["analyze", "{calls}", "--target", "{subnormal-clock.toml}"],
     ["subnormal-clock.toml", "cores.clock_mhz", "must be from"]),
    ("target-subnormal-dram-rate", ["analyze", "{calls}", "--target", "{subnormal-dram-rate.toml}"],
     ["subnormal-dram-rate.toml", "dram.read_mops", "must be from"]),
    ("target-negative-cost", ["analyze", "{calls}", "--target", "{negative-cost.toml}"],
     ["negative-cost.toml", "insn.alu"]),
    ("target-string-count", ["analyze", "{calls}", "--target", "{string-count.toml}"],
     ["string-count.toml", "cores.count"]),
    ("target-folder", ["analyze", "{calls}", "--target", "{dir.toml}"], ["dir.toml"]),
    ("target-missing", ["analyze", "{calls}", "--target", "{missing.toml}"], ["missing.toml"]),
    ("target-dev-zero", ["analyze", "{calls}", "--target", "{zero.toml}"], ["zero.toml"]),
    ("sweep-target-empty", ["sweep", "{calls}", "--target", ""], ["--target"]),
    ("sweep-target-commas", ["sweep", "{calls}", "--target", ",,"], ["--target"]),
    ("sweep-target-nope", ["sweep", "{calls}", "--target", "nfp,nope"], ["nope"]),
    ("sweep-target-syntax", ["sweep", "{calls}", "--target", "{syntax.toml}"], ["syntax.toml"]),
    ("sweep-target-unknown-key", ["sweep", "{calls}", "--target", "{unknown.toml}"], ["unknown.toml", "cores.colour"]),
    ("sweep-target-dev-zero", ["sweep", "{calls}", "--target", "{zero.toml}"], ["zero.toml"]),
    ("sweep-workers-0", ["sweep", "{calls}", "--workers", "0"], ["--workers"]),
    ("sweep-executor", ["sweep", "{calls}", "--executor", "nope"], ["--executor"]),
    ("sweep-timeout-nan", ["sweep", "{calls}", "--timeout", "nan"], ["--timeout"]),
    ("sweep-memory-1e23", ["sweep", "{calls}", "--memory-mb", "1e23"], ["--memory-mb"]),
    ("sweep-rate", ["sweep", "{calls}", "--rate", "byte"], ["--rate"]),
    ("sweep-analysis-fails", ["sweep", "{calls}", "{loop_nobound}", "--workers", "1", "--fail-fast"],
     ["loop_nobound", "--loop-bound"]),
    ("sweep-no-objects", ["sweep"], ["OBJ"]),
    ("paths-0", ["analyze", "{calls}", "--rate", "packet", "--paths", "0"], ["--paths"]),
    ("paths-negative", ["analyze", "{calls}", "--rate", "packet", "--paths", "-3"], ["--paths"]),
    ("paths-huge", ["analyze", "{calls}", "--rate", "packet", "--paths", "18446744073709551617"], ["--paths"]),
    ("paths-float", ["analyze", "{calls}", "--rate", "packet", "--paths", "2.5"], ["--paths"]),
    ("paths-bit-rate", ["analyze", "{calls}", "--paths", "2"], ["--paths", "--rate packet"]),
]


@pytest.mark.parametrize("argv,needles", [c[1:] for c in XDP_OPTIONS], ids=[c[0] for c in XDP_OPTIONS])
def test_bad_xdp_option(tmp_path: Path, argv: list[str], needles: list[str]) -> None:
    names = {"calls": str(obj("calls")), **_target_files(tmp_path)}
    if "{loop_nobound}" in argv:
        names["loop_nobound"] = str(obj("loop_nobound"))
    before = {p.name for p in tmp_path.iterdir()}
    args = [names[a[1:-1]] if a.startswith("{") else a for a in argv]
    r = cli("xdp", *args, "--out", tmp_path / "o", *(["--timeout", "5"] if "--timeout" not in args else []),
            timeout=90)
    refused(r, *needles)
    nothing_written(tmp_path, before, tmp_path / "o")


# --------------------------------------------------------------------------------------------
# `xdp validate --analysis`: folders that are not an analysis of the object. Refused before the
# kernel is touched (each run is cut to one packet and one run in case it is not).


@pytest.fixture(scope="module")
def analysis_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    a = tmp_path_factory.mktemp("analysis") / "a"
    r = cli("xdp", "analyze", obj("calls"), "--out", a, "-q")
    assert r.returncode == 0, r.stderr
    return a


@pytest.fixture
def analysis(analysis_dir: Path) -> dict:
    import json

    return json.loads((analysis_dir / "summary.json").read_text())


#: A well-formed entry of `slowest_paths` (`xdp analyze --paths`), for the cases that break one field.
_SLOW = {"rank": 1, "retval": 2, "pps": 1e6, "ns": 1000.0, "bottleneck": "cores", "xdp_action": "XDP_PASS",
         "insns": [0], "example_packet_hex": "00" * 60, "maps": {}}


def _with(s: dict, path: str, value: object) -> dict:
    import copy

    s = copy.deepcopy(s)
    *keys, last = path.split(".")
    d = s
    for k in keys:
        d = d[k]
    if value is KeyError:
        del d[last]
    else:
        d[last] = value
    return s


NAN = float("nan")
# (id, summary.json contents: bytes, or a function of the real summary; needles)
#: Malformed `object.tail_calls` and `mac_limit` of an analysis (`validate` and `profile` read them:
#: a traceback each, before the check).
BAD_TAIL_CALLS: list[tuple[str, object, list[str]]] = [
    (f"tail-calls-{name}", (lambda v: lambda s: _with(s, "object.tail_calls", v))(value), ["object.tail_calls"])
    for name, value in [("int", 7), ("ints", [5]), ("strings", ["abc"]), ("negative", [["m", -1, "y"]]),
                        ("huge", [["m", 2**70, "y"]]), ("nulls", [[None, None, None]]), ("dict", [{"a": 1}]),
                        ("bool-index", [["m", True, "y"]]), ("index-string", [["m", "x", "y"]])]
] + [("mac-limit-string", lambda s: _with(s, "mac_limit", "no"), ["mac_limit"]),
     ("target-int", lambda s: _with(s, "target", 5), ["target"])]

ANALYSES: list[tuple[str, object, list[str]]] = [
    ("missing", None, ["summary.json"]),
    ("empty-object", b"{}", ["summary.json", "guarantee"]),
    ("list", b"[]", ["summary.json"]),
    ("null", b"null", ["summary.json"]),
    ("number", b"42", ["summary.json"]),
    ("not-json", b"this is not json", ["summary.json", "not JSON"]),
    ("empty-file", b"", ["summary.json", "not JSON"]),
    ("not-utf8", b'{"guarantee": "\xff\xfe"}', ["summary.json"]),
    ("deep-json", b"[" * 100_000 + b"]" * 100_000, ["summary.json"]),
    ("datapath-summary", b'{"model": "datapath", "throughput_gbps": 1.0, "packets": {"offered": 1}}',
     ["summary.json", "guarantee"]),
    ("flow-summary", b'{"flows": 3, "packets": {"read": 9}, "packets_conserved": true}', ["summary.json"]),
    ("guarantee-missing", lambda s: _with(s, "guarantee", KeyError), ["guarantee"]),
    ("guarantee-list", lambda s: _with(s, "guarantee", []), ["guarantee"]),
    ("pps-zero", lambda s: _with(s, "guarantee.pps", 0), ["guarantee.pps"]),
    ("pps-negative", lambda s: _with(s, "guarantee.pps", -1), ["guarantee.pps"]),
    ("pps-string", lambda s: _with(s, "guarantee.pps", "fast"), ["guarantee.pps"]),
    ("pps-nan", lambda s: _with(s, "guarantee.pps", NAN), ["guarantee.pps"]),
    ("pps-infinity", lambda s: _with(s, "guarantee.pps", float("inf")), ["guarantee.pps"]),
    ("pps-bool", lambda s: _with(s, "guarantee.pps", True), ["guarantee.pps"]),
    ("status-missing", lambda s: _with(s, "guarantee.status", KeyError), ["guarantee.status"]),
    # What `xdp profile --analysis` reads too (it multiplied a string, and called .get on null).
    ("bps-string", lambda s: _with(s, "guarantee.bps", "fast"), ["guarantee.bps"]),
    ("naive-null", lambda s: _with(s, "naive", None), ["naive"]),
    ("naive-pps-string", lambda s: _with(s, "naive.pps", "x"), ["naive.pps"]),
    ("rate-int", lambda s: _with(s, "rate", 3), ["rate"]),
    ("object-missing", lambda s: _with(s, "object", KeyError), ["object"]),
    ("object-other-sha", lambda s: _with(s, "object.sha256", "0" * 64), ["another object"]),
    ("object-section-int", lambda s: _with(s, "object.section", 5), ["object.section"]),
    ("object-section-nope", lambda s: _with(s, "object.section", "nope"), ["nope"]),
    ("maps-list", lambda s: _with(s, "maps", []), ["maps"]),
    ("maps-unknown", lambda s: _with(s, "maps", {"nosuch": {}}), ["nosuch"]),
    ("maps-bad-entries", lambda s: _with(s, "maps", {k: {**v, "entries": {"zz": "yy"}} for k, v in s["maps"].items()}),
     ["maps"]),
    ("maps-entries-list", lambda s: _with(s, "maps", {k: {**v, "entries": [1, 2]} for k, v in s["maps"].items()}),
     ["maps"]),
    ("example-not-hex", lambda s: _with(s, "example_packet_hex", "zz"), ["example_packet_hex"]),
    ("example-odd-length", lambda s: _with(s, "example_packet_hex", "abc"), ["example_packet_hex"]),
    ("example-int", lambda s: _with(s, "example_packet_hex", 123), ["example_packet_hex"]),
    ("example-list", lambda s: _with(s, "example_packet_hex", ["00"]), ["example_packet_hex"]),
    ("example-too-short", lambda s: _with(s, "example_packet_hex", "00"), ["example_packet_hex"]),
    ("example-100kb", lambda s: _with(s, "example_packet_hex", "00" * 100_000), ["example_packet_hex"]),
    ("path-missing", lambda s: _with(s, "path", KeyError), ["path"]),
    ("path-insns-strings", lambda s: _with(s, "path.insns", ["a"]), ["path.insns"]),
    ("path-retval-string", lambda s: _with(s, "path.retval", "XDP_PASS"), ["path.retval"]),
    ("slowest-paths-table", lambda s: _with(s, "slowest_paths", {}), ["slowest_paths"]),
    ("slowest-paths-entry-partial", lambda s: _with(s, "slowest_paths", [{"rank": 1}]), ["slowest_paths[0].retval"]),
    ("slowest-paths-packet-not-hex", lambda s: _with(s, "slowest_paths", [_SLOW | {"example_packet_hex": "zz"}]),
     ["slowest_paths[0].example_packet_hex"]),
    ("slowest-paths-pps-nan", lambda s: _with(s, "slowest_paths", [_SLOW | {"pps": float("nan")}]),
     ["slowest_paths[0].pps"]),
    ("slowest-paths-maps-list", lambda s: _with(s, "slowest_paths", [_SLOW | {"maps": []}]),
     ["slowest_paths[0].maps"]),
    *BAD_TAIL_CALLS,
]


@pytest.mark.parametrize("contents,needles", [c[1:] for c in ANALYSES], ids=[c[0] for c in ANALYSES])
def test_bad_analysis(tmp_path: Path, analysis_dir: Path, analysis: dict, contents: object,
                      needles: list[str]) -> None:
    """The analysis folder as `xdp analyze` wrote it (so that validate may write into it), with its
    summary.json replaced."""
    import json
    import shutil

    a = tmp_path / "a"
    shutil.copytree(analysis_dir, a)
    (a / "summary.json").unlink()
    if contents is not None:
        data = contents if isinstance(contents, bytes) else json.dumps(contents(analysis)).encode()
        (a / "summary.json").write_bytes(data)
    before = {p.name for p in a.iterdir()}
    r = cli("xdp", "validate", obj("calls"), "--analysis", a, "--packets", "1", "--runs", "1", "--timeout", "2",
            timeout=120)
    refused(r, *needles)
    nothing_written(a, before)
    nothing_written(tmp_path, {"a"})


@pytest.mark.parametrize("contents,needles", [c[1:] for c in BAD_TAIL_CALLS], ids=[c[0] for c in BAD_TAIL_CALLS])
def test_bad_analysis_for_a_profile(tmp_path: Path, analysis_dir: Path, analysis: dict, contents: object,
                                    needles: list[str]) -> None:
    """`xdp profile --analysis` reads the summary as validate does: one line, nothing written."""
    import json
    import shutil

    from nicsim import _core

    a = tmp_path / "a"
    shutil.copytree(analysis_dir, a)
    (a / "summary.json").write_text(json.dumps(contents(analysis)))
    cap = tmp_path / "c.pcap"
    _core.write_pcap(cap, [bytes(60)])
    r = cli("xdp", "profile", obj("calls"), "--traffic", cap, "--analysis", a, "--out", tmp_path / "p", timeout=120)
    refused(r, *needles)
    nothing_written(tmp_path, {"a", "c.pcap"})


@pytest.mark.parametrize("args,needles", [
    (["--packets", "-1"], ["--packets"]),
    (["--packets", HUGE_INT], ["--packets"]),
    (["--runs", "0"], ["--runs"]),
    (["--runs", "-1"], ["--runs"]),
    (["--seed", "-1"], ["--seed"]),
    (["--timeout", "nan"], ["--timeout"]),
    (["--timeout", "-1"], ["--timeout"]),
    (["--analysis", "{file}"], ["file.txt"]),
    (["--analysis", "/dev/null"], ["/dev/null"]),
    (["--out", ""], ["--out"]),
    (["--out", "{file}"], ["file.txt"]),
    (["--out", "{file}/sub"], ["file.txt"]),
    (["--out", "/proc/nicsim-hostile"], ["/proc/nicsim-hostile"]),
    (["--paths", "0"], ["--paths"]),
    (["--paths", "-1"], ["--paths"]),
    (["--paths", HUGE_INT], ["--paths"]),
    (["--paths", "1.5"], ["--paths"]),
    (["--paths", "2", "--path-runs", "0"], ["--path-runs"]),
    (["--paths", "2", "--path-runs", HUGE_INT], ["--path-runs"]),
], ids=["packets-negative", "packets-huge", "runs-0", "runs-negative", "seed-negative", "timeout-nan",
        "timeout-negative", "analysis-a-file", "analysis-dev-null", "out-empty", "out-a-file", "out-under-a-file",
        "out-proc", "paths-0", "paths-negative", "paths-huge", "paths-float", "path-runs-0", "path-runs-huge"])
def test_bad_validate_option(tmp_path: Path, analysis_dir: Path, args: list[str], needles: list[str]) -> None:
    import shutil

    a = tmp_path / "a"
    shutil.copytree(analysis_dir, a)
    before = sorted(p.name for p in a.iterdir())
    (tmp_path / "file.txt").write_text("the user's data")
    args = [x.replace("{file}", str(tmp_path / "file.txt")) for x in args]
    if "--analysis" not in args:
        args = ["--analysis", str(a), *args]
    r = cli("xdp", "validate", obj("calls"), *args, *(["--packets", "1"] if "--packets" not in args else []),
            *(["--runs", "1"] if "--runs" not in args else []), timeout=120)
    refused(r, *needles)
    assert sorted(p.name for p in a.iterdir()) == before
    assert (tmp_path / "file.txt").read_text() == "the user's data"
    nothing_written(tmp_path, {"a", "file.txt"})


# --------------------------------------------------------------------------------------------
# Option values of the other commands.

OTHER_OPTIONS: list[tuple[str, list[str], list[str]]] = [
    ("unknown-command", ["nosuch"], ["nosuch"]),
    ("unknown-root-option", ["--bogus", "run"], ["--bogus"]),
    ("run-no-config", ["run", "--out", "{out}"], ["CONFIG"]),
    ("run-no-out", ["run", "{paper}"], ["--out"]),
    ("run-unknown-option", ["run", "{paper}", "--out", "{out}", "--bogus"], ["--bogus"]),
    ("run-packets-format", ["run", "{paper}", "--out", "{out}", "--packets", "csv"], ["--packets"]),
    ("run-extra-argument", ["run", "{paper}", "{paper}", "--out", "{out}"], ["unexpected extra argument"]),
    ("sweep-no-param", ["sweep", "{paper}", "--out", "{out}"], ["--param"]),
    ("sweep-workers-0", ["sweep", "{paper}", "--out", "{out}", "-p", "seed=1,2", "--workers", "0"], ["--workers"]),
    ("sweep-workers-negative", ["sweep", "{paper}", "--out", "{out}", "-p", "seed=1,2", "--workers", "-1"],
     ["--workers"]),
    ("sweep-workers-4097", ["sweep", "{paper}", "--out", "{out}", "-p", "seed=1,2", "--workers", "4097"],
     ["--workers"]),
    ("sweep-workers-huge", ["sweep", "{paper}", "--out", "{out}", "-p", "seed=1,2", "--workers", HUGE_INT],
     ["--workers"]),
    ("sweep-workers-float", ["sweep", "{paper}", "--out", "{out}", "-p", "seed=1,2", "--workers", "1.5"],
     ["--workers"]),
    ("sweep-executor", ["sweep", "{paper}", "--out", "{out}", "-p", "seed=1,2", "--executor", "threads"],
     ["--executor"]),
    ("offloads-no-config", ["offloads", "units"], ["CONFIG"]),
    ("offloads-unknown-subcommand", ["offloads", "count", "{paper}"], ["count"]),
    ("router-no-out", ["router", "run", "{router}"], ["--out"]),
    ("flowmem-flows-0", ["reproduce", "flowmem", "--out", "{out}", "--flows", "0"], ["--flows"]),
    ("flowmem-flows-negative", ["reproduce", "flowmem", "--out", "{out}", "--flows", "-1"], ["--flows"]),
    ("flowmem-flows-huge", ["reproduce", "flowmem", "--out", "{out}", "--flows", HUGE_INT], ["--flows"]),
    ("flowmem-seed-negative", ["reproduce", "flowmem", "--out", "{out}", "--seed", "-5"], ["--seed"]),
    ("flowmem-seed-text", ["reproduce", "flowmem", "--out", "{out}", "--seed", "abc"], ["--seed"]),
    ("router-workers-0", ["reproduce", "router", "--out", "{out}", "--workers", "0"], ["--workers"]),
    ("router-executor", ["reproduce", "router", "--out", "{out}", "--executor", "nope"], ["--executor"]),
    ("flexpipe-executor", ["reproduce", "flexpipe", "--out", "{out}", "--executor", "nope"], ["--executor"]),
    ("xdp-timeout-nan", ["reproduce", "xdp", "--out", "{out}", "--timeout", "nan"], ["--timeout"]),
    ("xdp-timeout-negative", ["reproduce", "xdp", "--out", "{out}", "--timeout", "-1"], ["--timeout"]),
    ("reproduce-unknown", ["reproduce", "panic", "--out", "{out}"], ["panic"]),
    ("calibrate-out-under-a-file", ["xdp", "calibrate", "--out", "{file}/x86.toml"], ["file.txt"]),
    ("calibrate-out-proc", ["xdp", "calibrate", "--out", "/proc/nicsim-hostile/x86.toml"], ["/proc/nicsim-hostile"]),
]


@pytest.mark.parametrize("argv,needles", [c[1:] for c in OTHER_OPTIONS], ids=[c[0] for c in OTHER_OPTIONS])
def test_bad_option(tmp_path: Path, argv: list[str], needles: list[str]) -> None:
    (tmp_path / "file.txt").write_text("the user's data")
    names = {"{out}": str(tmp_path / "o"), "{paper}": str(PAPER), "{router}": str(ROUTER / "setup_b.toml"),
             "{file}": str(tmp_path / "file.txt"), "{tmp}": str(tmp_path)}
    args = []
    for a in argv:
        for k, v in names.items():
            a = a.replace(k, v)
        args.append(a)
    refused(cli(*args, cwd=tmp_path, timeout=10), *needles)  # refused at once, before any work
    nothing_written(tmp_path, {"file.txt"}, tmp_path / "o")
    assert (tmp_path / "file.txt").read_text() == "the user's data"


# --------------------------------------------------------------------------------------------
# Output paths, for every command that writes a folder: refused before any work, nothing left.

COMMANDS: dict[str, list[str]] = {
    "run": ["run", str(PAPER), *TINY],
    "sweep": ["sweep", str(PAPER), "-p", "seed=1,2", *TINY, "--workers", "1"],
    "router-run": ["router", "run", str(ROUTER / "setup_b.toml"), *SHORT],
    "flowmem-reassemble": ["flowmem", "reassemble", "{cap}"],
    "flowmem-bench": ["flowmem", "bench", "{cap}", "--repeat", "1"],
    "flowmem-sizes": ["flowmem", "sizes", "{cap}"],
    "xdp-analyze": ["xdp", "analyze", "{calls}"],
    "xdp-sweep": ["xdp", "sweep", "{calls}", "--workers", "1"],
    "reproduce-flowmem": ["reproduce", "flowmem", "--flows", "50"],
    "reproduce-router": ["reproduce", "router", "--quick"],
    "reproduce-flexpipe": ["reproduce", "flexpipe", "--quick"],
    "reproduce-xdp": ["reproduce", "xdp", "--quick", "--nfp-only"],
}
OUTS = {
    "empty": ("", "--out"),
    "a-file": ("{tmp}/file.txt", "file.txt"),
    "under-a-file": ("{tmp}/file.txt/sub", "file.txt"),
    "proc": ("/proc/nicsim-hostile", "/proc/nicsim-hostile"),
    "long-name": ("{tmp}/" + "x" * 300, "xxxx"),
}


@pytest.mark.parametrize("out", list(OUTS))
@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_bad_out(tmp_path: Path, cmd: str, out: str) -> None:
    (tmp_path / "file.txt").write_text("the user's data")
    cap = tmp_path / "good.pcap"
    cap.write_bytes(pcap(FRAMES))
    argv = COMMANDS[cmd]
    if "{calls}" in argv or cmd == "reproduce-xdp":
        obj("calls")
    names = {"{cap}": str(cap), "{calls}": str(xdp_object("calls"))}
    args = [names.get(a, a) for a in argv]
    path, needle = OUTS[out]
    path = path.replace("{tmp}", str(tmp_path))
    before = {p.name for p in tmp_path.iterdir()}
    refused(cli(*args, "--out", path, cwd=tmp_path, timeout=20), needle)  # refused before any work
    nothing_written(tmp_path, before)
    assert (tmp_path / "file.txt").read_text() == "the user's data"


# --------------------------------------------------------------------------------------------
# Found by a second, free-hand probe (2026-11-26).


@pytest.mark.parametrize("name", ["$\\foo$", "price_$5_to_$6", "[/]", "[bold]x[/bold]"])
def test_names_are_text_not_markup_or_math(tmp_path: Path, name: str) -> None:
    """Names go into tables and plots as they are: no rich markup, no matplotlib math."""
    r = cli("run", PAPER, *TINY, "--param", f"flows[0].name={json_str(name)}", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    cfg = (ROUTER / "setup_b.toml").read_text().replace('"nic1"', json_str(name))
    (tmp_path / "r.toml").write_text(cfg)
    r = cli("router", "run", tmp_path / "r.toml", *SHORT, "--out", tmp_path / "r")
    assert r.returncode == 0, r.stderr


def json_str(s: str) -> str:
    import json

    return json.dumps(s)


def test_stream_and_argument_edge_cases(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text("seed = " + "9" * 5000 + "\n")
    refused(cli("run", big, "--out", tmp_path / "o"), "big.toml", "4,300 digits")
    refused(cli("run", PAPER, *TINY, "--param", 'traffic.replay={path="a\\u0000b"}', "--out", tmp_path / "o"),
            "traffic.replay.path", "NUL")
    refused(cli("run", PAPER, *TINY, "--param", 'traffic.size={dist="capture",path=""}', "--out", tmp_path / "o"),
            "--param", "traffic.size.path", "empty path")
    refused(cli("run", "", "--out", tmp_path / "o"), "CONFIG", "empty path")
    r = subprocess.run([sys.executable, "-m", "nicsim", "run", PAPER.as_posix().encode() + b"\xff", "--out",
                        str(tmp_path / "o")], capture_output=True, timeout=60)
    assert r.returncode == 2 and b"not UTF-8" in r.stderr and r.stderr.count(b"\n") == 1, r.stderr
    r = subprocess.run([sys.executable, "-m", "nicsim", "run", "-", "--out", str(tmp_path / "o")], stdin=None,
                       capture_output=True, timeout=60, close_fds=True, preexec_fn=lambda: os.close(0))
    assert r.returncode == 2 and b"Traceback" not in r.stderr, r.stderr
    fifo = tmp_path / "nowriter.fifo"
    os.mkfifo(fifo)
    refused(cli("run", PAPER, *TINY, "--param", f"traffic.replay.path={fifo}", "--out", tmp_path / "o", timeout=30),
            "--param", "traffic.replay.path", "not a regular file")
    # A link to nothing is named so (it was "not a regular file (a pipe or a device)").
    (tmp_path / "dangling.pcap").symlink_to(tmp_path / "gone.pcap")
    refused(cli("run", PAPER, *TINY, "--param", f"traffic.replay.path={tmp_path / 'dangling.pcap'}", "--out",
                tmp_path / "o", timeout=30), "traffic.replay.path", "symbolic link", "does not exist")
    values = ",".join(str(v) for v in range(1, 101))
    packets = ",".join(str(v) for v in range(300, 311))
    refused(cli("sweep", PAPER, "-p", f"seed={values}", "-p", f"traffic.rate_gbps={values}", "-p",
                f"traffic.packets={packets}", "--out", tmp_path / "o", timeout=60), "--param", "110,000 points")
    env = {**os.environ, "COLUMNS": "99999999"}
    h = subprocess.run([sys.executable, "-m", "nicsim", "run", "--help"], capture_output=True, env=env, timeout=60)
    assert h.returncode == 0 and len(h.stdout) < 1 << 20
    assert not list(tmp_path.glob("o*"))


def test_a_stream_of_zeros_after_a_magic_is_refused_at_once(tmp_path: Path) -> None:
    """The stream's file header is checked before it is copied to disk."""
    p = subprocess.Popen([sys.executable, "-m", "nicsim", "flowmem", "reassemble", "-", "--out", str(tmp_path / "o")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _, err = p.communicate(input=bytes.fromhex("d4c3b2a1") + bytes(1 << 16), timeout=60)
    except BrokenPipeError:
        _, err = p.communicate(timeout=60)
    assert p.returncode == 2 and b"file header" in err, err


def test_ray_address_that_is_not_ray_is_refused_at_once(tmp_path: Path) -> None:
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]

    def serve() -> None:  # a server that is not Ray: answers with text
        try:
            c, _ = srv.accept()
            c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            c.close()
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    try:
        refused(cli("sweep", PAPER, *TINY, "-p", "seed=1,2", "--ray-address", f"127.0.0.1:{port}",
                    "--out", tmp_path / "o", timeout=60), "--ray-address", "not a Ray cluster")
    finally:
        srv.close()


def test_objects_and_summaries_that_are_not_files(tmp_path: Path) -> None:
    refused(cli("xdp", "sweep", "/dev/zero", "--out", tmp_path / "o"), "/dev/zero", "not a regular file")
    a = tmp_path / "a"
    a.mkdir()
    (a / "summary.json").symlink_to("/dev/zero")
    refused(cli("xdp", "validate", obj("calls"), "--analysis", a, "--out", tmp_path / "v", timeout=60),
            "summary.json", "not a regular file")


@pytest.mark.parametrize("frames", [[], [tcp_frame(0, 0x02, b""), tcp_frame(0, 0x12, b"", reverse=True),
                                          tcp_frame(1, 0x10, b"")]], ids=["no-flow", "no-payload"])
def test_reproduce_flowmem_capture_without_payload(tmp_path: Path, frames: list[bytes]) -> None:
    """`reproduce flowmem --capture`: its comparison is per byte of payload; a capture with no TCP
    flow, or flows without payload, is one line (it divided by zero)."""
    cap = tmp_path / "c.pcap"
    cap.write_bytes(pcap(frames))
    r = cli("reproduce", "flowmem", "--quick", "--capture", cap, "--out", tmp_path / "o", timeout=120)
    refused(r, "c.pcap", "no TCP flow" if not frames else "no payload")
    nothing_written(tmp_path, {"c.pcap"}, tmp_path / "o")


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"},
                                 {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}])
def test_a_terminal_that_cannot_show_the_tables_characters_gets_them_escaped(env: dict[str, str],
                                                                              tmp_path: Path) -> None:
    # The table's arrow ("1 insns → ...") on an ASCII stdout: escaped, not a UnicodeEncodeError
    # traceback after the results were written. A process of its own: the encoding is set at
    # start-up.
    r = subprocess.run([sys.executable, "-m", "nicsim", "xdp", "analyze", xdp_object("flags"), "--timeout", "10",
                        "--out", tmp_path / "o"], capture_output=True, env={**os.environ, **env}, timeout=300)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr.decode(errors="replace")
    assert b"\\u2192" in r.stdout or b"->" in r.stdout, r.stdout[:2000]


@pytest.mark.parametrize(("args", "reason"), [
    (["xdp", "analyze", "{obj}", "--map-size", "{long}"], "expected NAME=N"),
    (["run", "{long}.toml"], "too long"),
])
def test_a_long_value_is_cut_and_the_reason_kept(args: list[str], reason: str, tmp_path: Path) -> None:
    # A 5,000-character value quoted whole filled the error line (cut at 1,000 characters,
    # before it said what was wrong); the value is cut, the reason stays.
    long = "x" * 5000
    argv = [a.format(obj=xdp_object("count_min_5"), long=long) for a in args] + ["--out", str(tmp_path / "o")]
    r = cli(*argv)
    line = refused(r, reason)
    assert "more characters" in line and len(line) < 800, line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args", [
    ["flowmem", "reassemble", "{tmp}/bad\x1b[2J\x1b[31mname\u202e.pcap"],
    ["run", str(ROOT / "configs" / "flexpipe_paper.toml"), "-p", "bad\x1b[2Jkey=1"],
])
def test_control_characters_of_an_input_are_shown_escaped(args: list[str], tmp_path: Path) -> None:
    # A file name or key carrying escape sequences (clear the screen, recolour, reverse the text
    # after it) reached the error line as it was (a hostile probe): the terminal acted on it.
    r = cli(*[a.format(tmp=tmp_path) for a in args], "--out", str(tmp_path / "o"))
    line = refused(r, "\\x1b[2J")
    assert "\x1b" not in r.stderr and "\u202e" not in r.stderr, line
    assert not (tmp_path / "o").exists()


def test_standard_input_is_one_input_only(tmp_path: Path) -> None:
    # `offloads size - --traffic -` handed the configuration's text to the capture reader ("not a
    # pcap or pcapng capture"); standard input is one input, and the line says which two asked.
    r = cli("offloads", "size", "-", "--traffic", "-", "--p99-us", "20", "--out", str(tmp_path / "o"),
            stdin=PAPER.read_bytes())
    refused(r, "standard input", "not both")
    assert not (tmp_path / "o").exists()


def test_a_full_stderr_keeps_the_exit_code(tmp_path: Path) -> None:
    # With stderr on a full device the error line cannot be written; the exit code must still say
    # "bad input" (it was 1: the failed write's own exception).
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "nicsim", "run", str(tmp_path / "none.toml"), "--out",
                            str(tmp_path / "o")], stdout=subprocess.DEVNULL, stderr=full, timeout=120)
    assert r.returncode == 2
    assert not (tmp_path / "o").exists()


def test_a_reader_that_goes_away_ends_the_command_as_sigpipe_does() -> None:
    # `nicsim xdp helpers | head -1` exited 1 (rich's own way out); the convention of the tools
    # users know is 141, as a process SIGPIPE ended, quietly. The reader is gone before the
    # first write here, so the write fails whatever the pipe's buffer holds.
    r_fd, w_fd = os.pipe()
    os.close(r_fd)
    try:
        p = subprocess.run([sys.executable, "-m", "nicsim", "xdp", "helpers"], stdout=w_fd, stderr=subprocess.PIPE,
                           timeout=120)
    finally:
        os.close(w_fd)
    assert p.returncode == 141 and b"Traceback" not in p.stderr, p.stderr[-2000:]
