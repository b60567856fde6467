"""Every figure of every command is checked as written (issue 34 §6): each command that writes
figures runs once on a small input, and every PNG and SVG it wrote passes
`figcheck.figure_problems` (readable, not empty, tick and axis labels rendered rather than raw
math text, a unit or a count on every numeric axis). The commands' list is checked against the
code: a new `OutputDir.figure(...)` call whose figure no command here writes fails
`test_every_figure_in_the_code_is_checked`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from figcheck import figure_problems, figure_stems

from conftest import PAPER, ROOT, nicsim, xdp_object

TINY = ["-p", "traffic.packets=300", "-p", "measure.window=[10,290]"]
ROUTER_SHORT = ["-p", "run.duration_us=1000", "-p", "run.warmup_us=200"]

#: command → (arguments, with {cap} a small capture and {obj} an XDP object; the figures it writes).
COMMANDS: dict[str, tuple[list[str], set[str]]] = {
    "run": (["run", str(PAPER), *TINY], {"run"}),
    "sweep": (["sweep", str(PAPER), "-p", "traffic.rate_gbps=40,60", *TINY, "--workers", "1"], {"sweep"}),
    "router-run": (["router", "run", str(ROOT / "configs" / "router" / "setup_b.toml"), *ROUTER_SHORT],
                   {"router"}),
    "flowmem-reassemble": (["flowmem", "reassemble", "{cap}"], {"stream_sizes"}),
    "flowmem-bench": (["flowmem", "bench", "{cap}", "--repeat", "1"], {"bench"}),
    "flowmem-sizes": (["flowmem", "sizes", "{cap}"], {"flow_size_cdf"}),
    "xdp-analyze": (["xdp", "analyze", "{obj}"], {"analysis"}),
    "xdp-sweep": (["xdp", "sweep", "{obj}", "--workers", "1"], {"sweep"}),
    "xdp-profile": (["xdp", "profile", "{obj}", "--traffic", "{cap}"], {"profile"}),
}
#: Figures written by commands that need more than this test runs cheaply, and the test that
#: checks them instead (test_docs checks every figure the docs' console blocks write, with the
#: commands made cheaper as it makes them).
ELSEWHERE = {
    "p99_vs_units": "test_docs: README.md's and docs/sizing.md's `nicsim offloads size` blocks",
    **{f: "test_docs: README.md's and docs/flowmem.md's `nicsim reproduce flowmem` blocks"
       for f in ("micro_benchmark", "dram_and_throughput")},
    **{f: "test_docs: README.md's `nicsim reproduce router --out out/router`"
       for f in ("setups", "fig4_saturation", "fig5_qos", "fig6_qos", "beyond_nics")},
    **{f: "test_docs: README.md's and docs/reproduce-flexpipe.md's `nicsim reproduce flexpipe` blocks"
       for f in ("fig3_throughput", "fig4_latency", "fig5_recirculation", "overview", "qos_latency")},
    **{f: "test_docs: README.md's `nicsim reproduce xdp --out out/xdp`" for f in ("fig7_bound_vs_time", "fig8_count_min")},
    "validation": "test_validate_writes_checked_figures (needs the x86-jit calibration and bpf(2))",
    "accuracy": "test_validate_writes_checked_figures (`plot_paths`, also reproduce xdp's on x86-jit)",
    "paper_objects": "reproduce xdp --paper-objects needs the paper's objects (../shared); not run here",
}


def _args(argv: list[str], tmp_path: Path) -> list[str]:
    cap = tmp_path / "s.pcap"
    if "{cap}" in argv:
        assert nicsim("flowmem", "synth", cap, "--flows", "30", "-q").returncode == 0
    obj = xdp_object("count_min_2")
    if "{obj}" in argv and not obj.exists():
        pytest.skip(f"{obj} is missing: run `make xdp-suite`")
    return [{"{cap}": str(cap), "{obj}": str(obj)}.get(a, a) for a in argv]


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_every_figure_of_a_command_is_readable_labelled_and_rendered(cmd: str, tmp_path: Path) -> None:
    argv, stems = COMMANDS[cmd]
    out = tmp_path / "o"
    r = nicsim(*_args(argv, tmp_path), "--out", out, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "not written" not in r.stderr, r.stderr  # a figure that failed is a warning, not an exit code
    assert figure_stems(out) == stems
    problems = figure_problems(out)
    assert problems == [], "\n".join(problems)


def test_validate_writes_checked_figures(x86_jit: Path, tmp_path: Path) -> None:
    obj = xdp_object("count_min_2")
    if not obj.exists():
        pytest.skip(f"{obj} is missing: run `make xdp-suite`")
    a = tmp_path / "a"
    assert nicsim("xdp", "analyze", obj, "--out", a).returncode == 0
    r = nicsim("xdp", "validate", obj, "--analysis", a, "--packets", "200", "--paths", "3", "--path-runs", "11")
    if r.returncode == 2 and "bpf" in r.stderr.lower():
        pytest.skip(f"the kernel cannot be asked here: {r.stderr.strip()}")
    assert {"validation", "accuracy"} <= figure_stems(a), sorted(p.name for p in a.iterdir())
    problems = figure_problems(a)
    assert problems == [], "\n".join(problems)


def test_every_figure_in_the_code_is_checked() -> None:
    """Each figure the code writes (a literal `.figure("stem", ...)`) is one a command above
    writes, or is named in ELSEWHERE."""
    in_code = {"accuracy"}  # plot_paths(o, rows, title, "accuracy"): a name passed in
    for py in (ROOT / "python" / "nicsim").rglob("*.py"):
        in_code |= set(re.findall(r"""\.figure\(\s*["'](\w+)["']""", py.read_text()))
    covered = set().union(*(stems for _, stems in COMMANDS.values())) | set(ELSEWHERE)
    assert in_code - covered == set()
    assert len(in_code) > 20


def test_the_check_finds_raw_math_and_missing_units(tmp_path: Path) -> None:
    """The check can fail: a log axis drawn with math text, and an axis without a unit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"text.parse_math": False, "svg.fonttype": "path"}):
        fig, (ax, ax2) = plt.subplots(1, 2)
        ax.loglog([1, 10, 100], [1, 10, 100])  # the default log formatter: `$\mathdefault{10^{1}}$`
        ax.set(xlabel="packet size (B)", ylabel="latency (µs)")
        ax2.plot([0, 1, 2], [3, 4, 5])
        ax2.set(xlabel="time", ylabel="")
        fig.savefig(tmp_path / "bad.svg")
        fig.savefig(tmp_path / "bad.png")
        plt.close(fig)
    problems = "\n".join(figure_problems(tmp_path))
    assert "raw math text" in problems and "the label names no unit" in problems
    assert "without an axis label" in problems, problems
