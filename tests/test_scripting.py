"""nicsim in scripts and pipelines, as bpftool and tshark are used: --json, -q/-v, standard
input, progress in a log, provenance, a table and a plot from every command, Parquet, --help."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import PAPER, ROOT, SMALL, assert_one_line_error, nicsim, xdp_object
from forkserver import run_nicsim

ROUTER = ROOT / "configs" / "router"
ROUTER_SHORT = ["--param", "run.duration_us=800", "--param", "run.warmup_us=200"]
CAPTURE = ROOT / "crates" / "nicsim-packet" / "fuzz" / "seeds" / "synth_3flows.pcap"


def _obj(name: str) -> Path:
    p = xdp_object(name)
    if not p.exists():
        pytest.skip(f"{p} is missing: run `make xdp-suite`")
    return p


def _run(*args: object, stdin: bytes | None = None, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_nicsim([str(a) for a in args], stdin=stdin, cwd=cwd, env={**os.environ, "COLUMNS": "120", **(env or {})},
                      timeout=600)


# Every command that produces results, with what it writes besides summary.json.
COMMANDS = {
    "run": (lambda out: ["run", PAPER, "--out", out, *SMALL], ["per_flow.csv", "fifos.csv", "run.png", "run.svg"]),
    "sweep": (lambda out: ["sweep", PAPER, "--out", out, "-p", "traffic.rate_gbps=64,96", "-p", "traffic.packets=800",
                           "-p", "measure.window=[10,790]", "-j", "1"], ["sweep.csv", "sweep.parquet", "sweep.png"]),
    "router run": (lambda out: ["router", "run", ROUTER / "setup_d.toml", "--out", out, *ROUTER_SHORT],
                   ["ports.csv", "drops.csv", "router.png"]),
    "flowmem reassemble": (lambda out: ["flowmem", "reassemble", CAPTURE, "--out", out],
                           ["flows.json", "directions.csv", "stream_sizes.png"]),
    "flowmem bench": (lambda out: ["flowmem", "bench", CAPTURE, "--out", out, "--repeat", "1"],
                      ["designs.csv", "bench.png"]),
    "flowmem sizes": (lambda out: ["flowmem", "sizes", CAPTURE, "--out", out], ["flows.csv", "flow_size_cdf.png"]),
    "xdp analyze": (lambda out: ["xdp", "analyze", _obj("quic_lb_v6"), "--out", out, "--timeout", "20"],
                    ["trace.csv", "path_cost.csv", "analysis.png", "example.pcap"]),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_json_is_the_summary_and_files_are_written(tmp_path: Path, name: str) -> None:
    """--json prints exactly what summary.json holds on stdout; the table is not printed; the
    `wrote` note goes to stderr; every command leaves a table and a plot, provenance and marker."""
    args, files = COMMANDS[name]
    out = tmp_path / "o"
    r = _run(*args(out), "--json")
    assert r.returncode == 0, r.stderr.decode()
    printed = json.loads(r.stdout)
    written = json.loads((out / "summary.json").read_text())
    assert printed == written
    assert written["schema_version"] == 3 and written["nicsim_version"]
    assert b"wrote" in r.stderr
    for f in files + ["provenance.json", ".nicsim-output"]:
        assert (out / f).is_file() and (out / f).stat().st_size > 0, f
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["command"][0] == "nicsim" and "--json" in prov["command"]
    assert prov["nicsim_version"] == written["nicsim_version"] and prov["host"] and prov["started"]


@pytest.mark.parametrize("name", ["run", "router run", "flowmem reassemble"])
def test_quiet_prints_nothing(tmp_path: Path, name: str) -> None:
    args, _ = COMMANDS[name]
    r = _run(*args(tmp_path / "o"), "-q")
    assert r.returncode == 0 and r.stdout == b"" and r.stderr == b"", r.stderr.decode()


def test_verbose_lists_the_files(tmp_path: Path) -> None:
    r = _run(*COMMANDS["run"][0](tmp_path / "o"), "-v")
    assert r.returncode == 0
    assert "summary.json" in r.stdout.decode() and "bytes" in r.stdout.decode()


def test_summary_bytes_do_not_depend_on_provenance(tmp_path: Path) -> None:
    """Equal results are equal bytes in summary.json; the run's circumstances are elsewhere."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run(*COMMANDS["run"][0](a)).returncode == 0
    assert _run(*COMMANDS["run"][0](b), "-q").returncode == 0
    assert (a / "summary.json").read_bytes() == (b / "summary.json").read_bytes()
    assert (a / "provenance.json").read_bytes() != (b / "provenance.json").read_bytes()


def test_config_from_standard_input(tmp_path: Path) -> None:
    r = _run("run", "-", "--out", tmp_path / "stdin", *SMALL, stdin=PAPER.read_bytes())
    assert r.returncode == 0, r.stderr.decode()
    assert _run(*COMMANDS["run"][0](tmp_path / "file")).returncode == 0
    assert (tmp_path / "stdin" / "summary.json").read_bytes() == (tmp_path / "file" / "summary.json").read_bytes()
    r = _run("router", "run", "-", "--out", tmp_path / "r", *ROUTER_SHORT, stdin=(ROUTER / "setup_b.toml").read_bytes())
    assert r.returncode == 0, r.stderr.decode()
    # A bad config on standard input is named as such.
    r = _run("run", "-", "--out", tmp_path / "bad", stdin=b"arch = 3\n")
    assert r.returncode == 2 and r.stderr.decode().startswith("nicsim: error: <stdin>: arch"), r.stderr
    assert not (tmp_path / "bad").exists()


def test_capture_from_standard_input_and_a_pipe(tmp_path: Path) -> None:
    """`-` reads the capture as `tshark -r -` does; a FIFO (a process substitution) is read as a
    stream; both give what the file gives."""
    assert _run("flowmem", "reassemble", CAPTURE, "--out", tmp_path / "file", "-q").returncode == 0
    r = _run("flowmem", "reassemble", "-", "--out", tmp_path / "stdin", "-q", stdin=CAPTURE.read_bytes())
    assert r.returncode == 0, r.stderr.decode()
    fifo = tmp_path / "cap.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(CAPTURE.read_bytes()))
    writer.start()
    r = _run("flowmem", "reassemble", fifo, "--out", tmp_path / "fifo", "-q")
    writer.join()
    assert r.returncode == 0, r.stderr.decode()
    files = json.loads((tmp_path / "file" / "flows.json").read_text())
    for other in ("stdin", "fifo"):
        assert json.loads((tmp_path / other / "flows.json").read_text()) == files
        assert sorted(p.name for p in (tmp_path / other).glob("*.bin")) == \
            sorted(p.name for p in (tmp_path / "file").glob("*.bin"))
    assert json.loads((tmp_path / "stdin" / "summary.json").read_text())["capture"] == "<stdin>"


def test_endless_and_empty_streams_are_refused_at_once(tmp_path: Path) -> None:
    r = _run("flowmem", "reassemble", "/dev/zero", "--out", tmp_path / "z")
    line = assert_one_line_error(subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(), r.stderr.decode()),
                                 "/dev/zero", "not a pcap or pcapng")
    assert "00000000" in line
    r = _run("flowmem", "reassemble", "-", "--out", tmp_path / "e", stdin=b"")
    assert r.returncode == 2 and b"<stdin>: not a pcap or pcapng capture (empty)" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_progress_lines_without_a_terminal(tmp_path: Path) -> None:
    """In a CI log (no terminal) long work prints a plain progress line every few seconds."""
    r = _run("run", PAPER, "--out", tmp_path / "o", "--param", "traffic.packets=600000",
             "--param", "measure.window=[100,599000]", env={"NICSIM_PROGRESS_SECONDS": "0.1"})
    assert r.returncode == 0, r.stderr.decode()
    lines = [x for x in r.stderr.decode().splitlines() if x.startswith("nicsim: simulating")]
    assert len(lines) >= 2, r.stderr.decode()
    assert "/600,000 packets" in lines[0] and "µs simulated" in lines[0]
    assert lines[-1].endswith(", done)") and "600,000/600,000" in lines[-1]
    assert "\x1b[" not in r.stderr.decode()  # no terminal escapes in a log


def test_packet_records_in_parquet(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "o"
    assert _run(*COMMANDS["run"][0](out), "--packets", "parquet", "-q").returncode == 0
    s = json.loads((out / "summary.json").read_text())
    t = pq.read_table(out / "packets.parquet").to_pydict()
    assert len(t["id"]) == s["packets"]["delivered"]
    assert set(t["flow"]) == set(s["per_flow"])
    inside = [lat for lat, w in zip(t["latency_ns"], t["in_window"]) if w]
    assert len(inside) == s["latency_us"]["packets"]
    assert sum(inside) / len(inside) / 1e3 == pytest.approx(s["latency_us"]["mean"], rel=2e-3)
    assert max(inside) / 1e3 == pytest.approx(s["latency_us"]["max"], abs=1e-3)
    assert all(a <= p <= x for a, p, x in zip(t["t_arrival_ns"], t["t_parse_ns"], t["t_rx_ns"]))


def test_router_configs_sweep(tmp_path: Path) -> None:
    out = tmp_path / "s"
    r = _run("sweep", ROUTER / "setup_b.toml", "--out", out, "-p", "traffic[0].rate_mbps=200,400",
             *ROUTER_SHORT, "-j", "2", "--json")
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    assert s["model"] == "router" and len(s["points"]) == 2
    rates = [p["summary"]["ports"]["nic1"]["forwarded"]["mbps"] for p in s["points"]]
    assert rates[0] == pytest.approx(200, rel=0.05) and rates[1] == pytest.approx(400, rel=0.05)


def test_xdp_sweep_and_cost_by_class(tmp_path: Path) -> None:
    out = tmp_path / "x"
    objs = [_obj("calls"), _obj("quic_lb_v4")]
    r = _run("xdp", "sweep", *objs, "--out", out, "--target", "nfp", "--timeout", "20", "-j", "2", "--json")
    assert r.returncode == 0, r.stderr.decode()
    s = json.loads(r.stdout)
    assert [p["object"] for p in s["points"]] == [str(o) for o in objs]
    for p in s["points"]:
        path = p["summary"]["path"]
        by = path["cost_by_class"]
        assert sum(c["insns"] for c in by.values()) == len(path["insns"])
        for comp in ("cores", "dram"):
            assert sum(c[comp] for c in by.values()) == pytest.approx(path["cost"][comp], rel=1e-9, abs=1e-6)
    assert (out / "sweep.parquet").is_file()


def test_help_reads_well() -> None:
    r = nicsim("run", "--help")
    assert r.returncode == 0
    assert "{config}" not in r.stdout and "<bool>" not in r.stdout and "CONFIG" in r.stdout
    # A paragraph is re-flowed, not broken where the source broke it.
    assert "a short table of throughput, latency and drops" in " ".join(r.stdout.split())
    r = nicsim("--help")
    assert "--install-completion" in r.stdout


def test_usage_errors_are_one_line() -> None:
    assert_one_line_error(nicsim("run", "--bogus"), "--bogus", "nicsim run --help")
    assert_one_line_error(nicsim("sweep", PAPER, "--out", "x", "-p", "a=1", "--workers", "0"), "--workers")
