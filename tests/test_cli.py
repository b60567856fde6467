"""The `nicsim` command line, run in a subprocess as a user would run it."""

from __future__ import annotations

import csv
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PAPER, SMALL, assert_one_line_error, nicsim

LATENCY_KEYS = {"mean", "min", "p50", "p99", "max"}


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _conserved(s: dict) -> bool:
    p = s["packets"]
    return p["offered"] == p["delivered"] + p["dropped_total"] + p["in_flight"]


def test_help_and_python_m() -> None:
    r = nicsim("--help")
    assert r.returncode == 0, r.stderr
    for cmd in ("run", "sweep", "offloads", "reproduce"):
        assert cmd in r.stdout
    r = subprocess.run([sys.executable, "-m", "nicsim.cli", "run", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--param" in r.stdout



def test_flowmem_group_and_its_hidden_flow_alias(tmp_path: Path) -> None:
    """`nicsim flowmem ...` is the group; `nicsim flow ...`, its former name, runs the same
    commands but is not listed."""
    r = nicsim("--help")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^\W*flowmem\s+Flow memory", r.stdout, re.M)
    assert not re.search(r"^\W*flow\s", r.stdout, re.M)
    for group in ("flowmem", "flow"):
        r = nicsim(group, "--help")
        assert r.returncode == 0, r.stderr
        assert f"nicsim {group} [OPTIONS] COMMAND" in r.stdout
        assert all(cmd in r.stdout for cmd in ("reassemble", "synth", "bench", "sizes"))
        cap = tmp_path / f"{group}.pcap"
        r = nicsim(group, "synth", cap, "--flows", "5", "--seed", "2")
        assert r.returncode == 0, r.stderr
        assert nicsim(group, "reassemble", cap, "--out", tmp_path / group, "-q").returncode == 0
    assert (tmp_path / "flowmem.pcap").read_bytes() == (tmp_path / "flow.pcap").read_bytes()
    assert (tmp_path / "flowmem" / "flows.json").read_text() == (tmp_path / "flow" / "flows.json").read_text()
    # A usage error names the group the user typed.
    assert_one_line_error(nicsim("flowmem", "synth", tmp_path / "x.pcap", "--flows", "-3"), "'nicsim flowmem synth --help'")
    assert_one_line_error(nicsim("flow", "synth", tmp_path / "x.pcap", "--flows", "-3"), "'nicsim flow synth --help'")

def test_toml_syntax_error(tmp_path: Path) -> None:
    bad = tmp_path / "syntax.toml"
    bad.write_text('seed = 1\narch = "flexpipe"\n[traffic\n')
    assert_one_line_error(nicsim("run", bad, "--out", tmp_path / "o"), str(bad), "line 3, column 9")
    assert not (tmp_path / "o").exists()


def test_wrong_type(tmp_path: Path) -> None:
    bad = tmp_path / "type.toml"
    bad.write_text(PAPER.read_text().replace("rate_gbps = 90.0", 'rate_gbps = "fast"'))
    line = assert_one_line_error(nicsim("run", bad, "--out", tmp_path / "o"), str(bad), "traffic.rate_gbps")
    assert "f64" in line or "float" in line or "number" in line


def test_unknown_key(tmp_path: Path) -> None:
    bad = tmp_path / "unknown.toml"
    bad.write_text(PAPER.read_text().replace('arrivals = "constant"', 'arrivals = "constant"\nburst = 3'))
    assert_one_line_error(nicsim("offloads", "units", bad), str(bad), "traffic.burst", "unknown field")


def test_missing_file_and_bad_param(tmp_path: Path) -> None:
    assert_one_line_error(nicsim("run", tmp_path / "nothere.toml", "--out", tmp_path / "o"), "nothere.toml", "no such file")
    assert_one_line_error(nicsim("run", PAPER, "--out", tmp_path / "o", "--param", "rate"), "--param", "KEY=VALUE")
    assert_one_line_error(nicsim("run", PAPER, "--out", tmp_path / "o", "--param", "flows[7].weight=2"), "flows[7].weight")
    assert_one_line_error(nicsim("sweep", PAPER, "--out", tmp_path / "o", "--param", "arch=flexpipe,bogus",
                                 "--fail-fast"), "--param", "arch")
    assert not (tmp_path / "o").exists()


def test_run_writes_summary_and_tables(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = nicsim("run", PAPER, "--out", out, *SMALL)
    assert r.returncode == 0, r.stderr
    assert "throughput" in r.stdout and "Gbit/s" in r.stdout
    s = _summary(out)
    assert isinstance(s["throughput_gbps"], float) and s["throughput_gbps"] > 0
    assert {"offered", "delivered", "dropped", "in_flight"} <= set(s["packets"])
    assert s["packets"]["offered"] == 2000
    assert _conserved(s)
    assert LATENCY_KEYS <= set(s["latency_us"])
    lat = s["latency_us"]
    assert lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"] and lat["min"] <= lat["mean"] <= lat["max"], lat
    assert set(s["per_flow"]) == {"flow1", "flow2", "flow3", "flow4"}
    assert s["interrupted"] is False
    assert s["finished"] is True and s["deadlocked"] is False
    assert "deadlock" not in r.stderr
    with (out / "per_flow.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["flow", "size_bytes", "packets", "mean_us", "min_us", "p50_us", "p99_us", "max_us"]
    assert {r["flow"] for r in rows} == {"flow1", "flow2", "flow3", "flow4"}
    assert sum(int(r["packets"]) for r in rows) == s["latency_us"]["packets"]
    assert not list(tmp_path.glob(".run.*")), "temporary folders left behind"


DEADLOCK = """
seed = 1
arch = "flexpipe"
[pipeline]
width_bits = 512
clock_mhz = 150
arbiter_fifo_bytes = 1500
recirc_fifo_bytes = 1500
[[offloads]]
name = "o0"
width_bits = 64
clock_mhz = 100
units = 5
[[offloads]]
name = "o1"
width_bits = 512
clock_mhz = 300
delay_cycles = 100
units = 1
[[offloads]]
name = "o2"
width_bits = 8
clock_mhz = 150
delay_cycles = 3
units = 5
[traffic]
packets = 400
rate_gbps = 20.0
size = { dist = "uniform_set", values = [64, 1500] }
[[flows]]
name = "loop"
chain = ["o2", "o0", "o2"]
dport = 5001
[[flows]]
name = "other"
chain = ["o2", "o1"]
dport = 5002
[measure]
window = [10, 390]
"""


def test_a_deadlock_is_reported(tmp_path: Path) -> None:
    """1500 B FIFOs on a recirculating chain jam the loop, as they would in hardware: the run ends,
    the stuck packets are counted in flight, and the user is told why."""
    cfg = tmp_path / "jam.toml"
    cfg.write_text(DEADLOCK)
    r = nicsim("run", cfg, "--out", tmp_path / "jam")
    assert r.returncode == 0, r.stderr
    s = _summary(tmp_path / "jam")
    assert s["finished"] is True and s["deadlocked"] is True
    assert s["packets"]["in_flight"] > 0 and _conserved(s)
    assert "warning: the run deadlocked" in r.stderr and f"{s['packets']['in_flight']:,} packets" in r.stderr


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert nicsim("run", PAPER, "--out", tmp_path / name, *SMALL).returncode == 0
    assert (tmp_path / "a" / "summary.json").read_bytes() == (tmp_path / "b" / "summary.json").read_bytes()
    assert (tmp_path / "a" / "per_flow.csv").read_bytes() == (tmp_path / "b" / "per_flow.csv").read_bytes()
    assert nicsim("run", PAPER, "--out", tmp_path / "c", *SMALL, "--param", "seed=2").returncode == 0
    assert (tmp_path / "a" / "summary.json").read_bytes() != (tmp_path / "c" / "summary.json").read_bytes()


def test_offloads_units_eq1(paper: Path) -> None:
    r = nicsim("offloads", "units", paper, "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["name"] for x in rows] == ["crc", "firewall", "sha3", "aes", "jpeg", "rss"]
    assert [x["eq1_units"] for x in rows] == [8, 128, 39, 4, 40, 3]
    assert [x["units"] for x in rows] == [8, 128, 39, 4, 40, 3]
    r = nicsim("offloads", "units", paper)
    assert r.returncode == 0, r.stderr
    table = [line.split() for line in r.stdout.splitlines()]
    units = {cols[0]: int(cols[-2]) for cols in table if cols and cols[0] in {x["name"] for x in rows}}
    assert units == {"crc": 8, "firewall": 128, "sha3": 39, "aes": 4, "jpeg": 40, "rss": 3}


def _sweep(tmp_path: Path, name: str, executor: str) -> Path:
    out = tmp_path / name
    r = nicsim("sweep", PAPER, "--out", out, "--param", "traffic.rate_gbps=64,128", "--executor", executor,
               "--workers", "2", *SMALL)
    assert r.returncode == 0, r.stderr
    return out


def test_sweep_local(tmp_path: Path) -> None:
    out = _sweep(tmp_path, "local", "local")
    with (out / "sweep.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["traffic.rate_gbps"] for r in rows] == ["64", "128"]
    assert {"throughput_gbps", "latency_mean_us", "latency_p99_us", "delivered", "dropped"} <= set(rows[0])
    assert float(rows[0]["throughput_gbps"]) < float(rows[1]["throughput_gbps"])
    s = _summary(out)
    assert s["model"] == "datapath" and s["params"] == {"traffic.rate_gbps": [64, 128], "traffic.packets": [2000],
                                                        "measure.window": [[100, 1900]]}
    points = s["points"]
    assert [p["params"]["traffic.rate_gbps"] for p in points] == [64, 128]
    assert all(_conserved(p["summary"]) for p in points)
    assert (out / "sweep.png").stat().st_size > 0 and (out / "sweep.svg").stat().st_size > 0


@pytest.mark.xdist_group("ray")  # not beside tests/test_ray.py, whose `ray stop --force` ends every Ray process
def test_sweep_ray_matches_local(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    local = _sweep(tmp_path, "local", "local")
    ray = _sweep(tmp_path, "ray", "ray")
    assert (local / "summary.json").read_bytes() == (ray / "summary.json").read_bytes()
    assert (local / "sweep.csv").read_bytes() == (ray / "sweep.csv").read_bytes()


def test_failing_run_leaves_no_output(tmp_path: Path) -> None:
    out = tmp_path / "o"
    r = nicsim("run", PAPER, "--out", out, "--param", "traffic.replay.path=missing.pcap", cwd=tmp_path)
    assert_one_line_error(r, "missing.pcap")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
    # An existing folder is kept as it was when a run fails, and replaced when it succeeds
    # (a folder nicsim did not write only with --force: tests/test_output.py).
    out.mkdir()
    (out / "old.txt").write_text("old")
    r = nicsim("run", PAPER, "--out", out, "--param", "traffic.replay.path=missing.pcap", "--force", cwd=tmp_path)
    assert r.returncode == 2
    assert [p.name for p in out.iterdir()] == ["old.txt"]
    assert nicsim("run", PAPER, "--out", out, *SMALL, "--force").returncode == 0
    assert not (out / "old.txt").exists() and (out / "summary.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_egress_pcap(tmp_path: Path) -> None:
    out = tmp_path / "p"
    r = nicsim("run", PAPER, "--out", out, "--egress-pcap", "--param", "functional=true",
               "--param", "traffic.packets=300", "--param", "measure.window=[10,290]")
    assert r.returncode == 0, r.stderr
    pcap = out / "egress.pcap"
    delivered = _summary(out)["packets"]["delivered"]
    assert delivered > 0
    assert pcap.read_bytes()[:4] in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed")
    t = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "frame.number"], capture_output=True, text=True)
    assert t.returncode == 0, t.stderr
    assert len(t.stdout.split()) == delivered


def test_ctrl_c_leaves_a_valid_partial_summary(tmp_path: Path) -> None:
    out = tmp_path / "big"
    cmd = [sys.executable, "-m", "nicsim", "run", str(PAPER), "--out", str(out),
           "--param", "traffic.packets=50000000", "--param", "measure.window=[100,49999000]"]
    # As from a terminal: a test run started in the background (`make test &`, a CI runner)
    # hands its children SIGINT ignored, and Python then installs no Ctrl-C handler.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".big.tmp-*")):  # the run has started
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.05)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130, stderr
    assert "Traceback" not in stderr
    s = _summary(out)
    assert s["interrupted"] is True
    assert 0 < s["packets"]["offered"] < 50_000_000
    assert _conserved(s)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["big"]


def _short_options() -> dict[str, dict[str, list[str]]]:
    """Every visible short option of every command: short → {long option: [commands]}."""
    import typer.main

    from nicsim.cli import app

    table: dict[str, dict[str, list[str]]] = {}
    todo = [(typer.main.get_command(app), "nicsim")]
    while todo:  # the command tree, without recursion
        cmd, path = todo.pop()
        subs = getattr(cmd, "commands", None)
        if subs is not None:
            todo += [(subs[n], f"{path} {n}") for n in list(subs) if not subs[n].hidden]
            continue
        for p in cmd.params:
            if p.param_type_name != "option" or p.hidden:
                continue
            opts = [*p.opts, *p.secondary_opts]
            longs = [o for o in opts if o.startswith("--")]
            for short in (o for o in opts if not o.startswith("--")):
                table.setdefault(short, {}).setdefault(longs[0] if longs else "", []).append(path)
    return table


def test_a_short_option_means_the_same_in_every_command() -> None:
    """Issue 34: `-p` was --param, --program and --pattern. Each short option is one long option
    everywhere, the one SHORT_OPTIONS names."""
    from nicsim.options import SHORT_OPTIONS

    table = _short_options()
    assert "-p" in table and len(table) >= 8, table
    for short, longs in table.items():
        assert list(longs) == [SHORT_OPTIONS[short]], (short, longs)


def test_the_former_short_options_still_work_with_a_warning(tmp_path: Path) -> None:
    from conftest import xdp_object

    two = xdp_object("two_progs")
    if not two.exists():
        pytest.skip("run `make xdp-suite`")
    r = nicsim("xdp", "analyze", two, "-p", "second", "--out", tmp_path / "a", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == ("warning: -p second: -p for --program is deprecated (-p is --param in every other "
                                "nicsim command, and will be here): write --program second")
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["object"]["program"] == "second"
    assert_one_line_error(nicsim("xdp", "analyze", two, "-p", "second", "--program", "first", "--out", tmp_path / "b"),
                          "--program", "-p", "give it once")
