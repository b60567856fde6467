"""The `nicsim` command line.

One command with a subcommand per job. Every command that produces results writes one output
folder, atomically. Bad input of any kind (a configuration, a `--param`, a missing file) is
reported by the single handler in [`main`] as one line, `nicsim: error: <message>`, with exit
code 2 and no traceback; Ctrl-C exits with 130 after writing what can be written.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from nicsim.config import get_key, load_config, parse_sweep_param
from nicsim.errors import ConfigError, Interrupted, NicsimError
from nicsim.flow.cli import flow_app
from nicsim.router.cli import router_app

try:  # typer >= 0.22 carries its own copy of click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException

out_console = Console()
err_console = Console(stderr=True)

app = typer.Typer(
    name="nicsim",
    help="SmartNIC design and analysis toolkit: simulate datapaths (FlexPipe, PANIC, StaticPipe) and "
    "size their offloads, guarantee the rate of XDP programs, measure and model what flow reassembly "
    "costs in memory, simulate a PC router with FPGA NICs, sweep parameters and reproduce the seed "
    "papers' results.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
offloads_app = typer.Typer(help="Offload catalog: how many units each offload needs (Eq. 1).", no_args_is_help=True)
reproduce_app = typer.Typer(help="Reproduce a seed paper's results with one command.", no_args_is_help=True)
app.add_typer(offloads_app, name="offloads")
app.add_typer(reproduce_app, name="reproduce")
xdp_app = typer.Typer(help="XDP throughput analyzer: the rate an XDP program always sustains on a target.",
                      no_args_is_help=True)
app.add_typer(xdp_app, name="xdp")
app.add_typer(flow_app, name="flow")
app.add_typer(router_app, name="router")


class Executor(StrEnum):
    local = "local"
    ray = "ray"


ConfigArg = Annotated[Path, typer.Argument(help="Datapath configuration (TOML), e.g. configs/flexpipe_paper.toml.",
                                           show_default=False)]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output folder; written atomically, replaced if it exists.",
                                      show_default=False)]
ParamOpt = Annotated[
    list[str] | None,
    typer.Option("--param", "-p", metavar="KEY=VALUE",
                 help="Override a configuration value (repeatable). KEY is a dotted path with list indices, "
                      "VALUE a TOML value or a bare string: [b]traffic.rate_gbps=96[/b], "
                      "[b]flows[0].chain=[\"crc\",\"rss\"][/b], [b]arch=panic[/b]."),
]
ExecutorOpt = Annotated[Executor, typer.Option("--executor", "-x",
                                               help="Where runs execute: a local process pool, or Ray "
                                                    "(needs the [b]nicsim\\[ray][/b] extra).")]
WorkersOpt = Annotated[int | None, typer.Option("--workers", "-j", min=1,
                                                help="Parallel runs (default: one per CPU).", show_default=False)]


def _version(value: bool) -> None:
    if value:
        from nicsim import __version__

        out_console.print(f"nicsim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """SmartNIC design and analysis toolkit."""


@app.command("run")
def run_cmd(config: ConfigArg, out: OutOpt, param: ParamOpt = None,
            egress_pcap: Annotated[bool, typer.Option("--egress-pcap",
                                                      help="Write delivered packets to OUT/egress.pcap "
                                                           "(as [b]measure.egress_pcap = true[/b]).")] = False,
            ) -> None:
    """Run one datapath simulation and write OUT/summary.json and OUT/per_flow.csv.

    Shows a progress bar over resolved (delivered or dropped) packets, then a short table of
    throughput, latency and drops. Ctrl-C stops the run and still writes the summary of what
    ran, marked [b]"interrupted": true[/b].
    """
    from nicsim.datapath import run

    # --egress-pcap is measure.egress_pcap: the generator then builds frames even for timing runs.
    cfg = load_config(config, [*(param or []), *(["measure.egress_pcap=true"] if egress_pcap else [])])
    want_pcap = bool(get_key(cfg, "measure.egress_pcap"))
    total = None if get_key(cfg, "traffic.replay") else get_key(cfg, "traffic.packets") or 11000
    bar = Progress(TextColumn("[bold]simulating"), BarColumn(), MofNCompleteColumn(), TextColumn("packets"),
                   TextColumn("{task.fields[sim]}"), TimeElapsedColumn(), console=err_console)
    task = bar.add_task("run", total=total, sim="")

    def progress(now_us: float, s: dict[str, Any] | None) -> None:
        if not bar.live.is_started:  # shown only once the run is under way and takes a while
            bar.start()
        done = None if s is None else s["packets"]["delivered"] + s["packets"]["dropped_total"]
        bar.update(task, completed=done, sim=f"{now_us:,.1f} µs simulated")

    try:
        summary = run(cfg, out, egress_pcap=want_pcap, progress=progress)
    except Interrupted as e:
        summary = e.summary
    finally:
        if bar.live.is_started:
            s = locals().get("summary")
            if s:
                p = s["packets"]
                bar.update(task, completed=p["delivered"] + p["dropped_total"], sim=f"{s['sim_time_us']:,.1f} µs simulated")
            bar.stop()
    print_run(summary)
    if summary.get("deadlocked"):
        hint = ("offloads that feed each other through full crossbar buffers; see panic.crossbar_port_buffer_bytes"
                if summary["arch"] == "panic" else
                "a recirculation loop whose FIFOs are full; see pipeline.recirc_fifo_bytes and "
                "pipeline.arbiter_fifo_bytes")
        err_console.print(f"[yellow]warning:[/] the run deadlocked: {summary['packets']['in_flight']:,} packets "
                          f"are stuck with nothing able to move (e.g. {hint})")
    files = ["summary.json", "per_flow.csv", "config.json"] + (["egress.pcap"] if want_pcap else [])
    if summary["interrupted"]:
        err_console.print(f"[yellow]interrupted:[/] wrote the partial summary to {out}/")
        raise typer.Exit(130)
    out_console.print(f"wrote {out}/ ({', '.join(files)})")


def print_run(s: dict[str, Any]) -> None:
    p, lat = s["packets"], s.get("latency_us", {})
    t = Table(title=f"{s['arch']} — {s['offered_gbps']:g} Gbit/s offered", show_header=False)
    t.add_column(style="bold")
    t.add_column(justify="right")
    t.add_row("throughput", f"{s['throughput_gbps']:.2f} Gbit/s")
    if lat.get("packets"):
        t.add_row("latency mean / p99", f"{lat['mean']:.3f} / {lat['p99']:.3f} µs")
        t.add_row("latency min / max", f"{lat['min']:.3f} / {lat['max']:.3f} µs")
    t.add_row("offered / delivered", f"{p['offered']:,} / {p['delivered']:,}")
    reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(p["dropped"].items()) if v)
    t.add_row("dropped", f"{p['dropped_total']:,}" + (f" ({reasons})" if reasons else ""))
    t.add_row("in flight at end", f"{p['in_flight']:,}")
    t.add_row("simulated time", f"{s['sim_time_us']:,.3f} µs")
    out_console.print(t)


@app.command("sweep")
def sweep_cmd(
    config: ConfigArg,
    out: OutOpt,
    param: Annotated[list[str], typer.Option("--param", "-p", metavar="KEY=V1,V2,...",
                                             help="A swept key and its values, comma-separated (repeatable; the "
                                                  "sweep is the cartesian product). Commas inside brackets do not "
                                                  "split: [b]flows[0].chain=[\"crc\",\"rss\"],[\"crc\"][/b].",
                                             show_default=False)],
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
) -> None:
    """Run a configuration over a grid of parameter values.

    Writes OUT/sweep.csv (one row per point: the parameters, throughput, mean and p99 latency,
    delivered, dropped), OUT/summary.json (every point with its full summary) and, when one
    parameter varies, OUT/sweep.png and .svg (throughput and mean latency against it).
    """
    from nicsim.output import OutputDir
    from nicsim.sweep import sweep

    params: dict[str, list[Any]] = {}
    for text in param:
        key, values = parse_sweep_param(text)
        if key in params:
            raise ConfigError("given twice", path=key, file="--param")
        params[key] = values
    cfg = load_config(config)
    points = sweep(cfg, params, executor=executor.value, workers=workers)
    rows = [{**pt["params"], **sweep_metrics(pt["summary"])} for pt in points]
    varied = [k for k, v in params.items() if len(v) > 1]
    with OutputDir(out) as o:
        o.csv("sweep.csv", rows)
        o.json("summary.json", points)
        if len(varied) == 1:
            plot_sweep(o, varied[0], rows)
    fixed = ", ".join(f"{k}={_fmt(v[0])}" for k, v in params.items() if len(v) == 1)
    t = Table(title=f"{len(points)} runs on {executor.value}" + (f" with {fixed}" if fixed else ""))
    headers = {"throughput_gbps": "Gbit/s", "latency_mean_us": "mean µs", "latency_p99_us": "p99 µs"}
    shown = [k for k in rows[0] if k not in params or k in varied] if rows else []
    for c in shown:
        t.add_column(headers.get(c, c), justify="right")
    for r in rows:
        t.add_row(*(_fmt(r[c]) for c in shown))
    out_console.print(t)
    out_console.print(f"wrote {out}/ (sweep.csv, summary.json{', sweep.png, sweep.svg' if len(varied) == 1 else ''})")


def sweep_metrics(s: dict[str, Any]) -> dict[str, Any]:
    lat = s.get("latency_us", {})
    return {"throughput_gbps": s["throughput_gbps"], "latency_mean_us": lat.get("mean"),
            "latency_p99_us": lat.get("p99"), "delivered": s["packets"]["delivered"],
            "dropped": s["packets"]["dropped_total"]}


def plot_sweep(o: Any, key: str, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r[key] for r in rows]
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in xs):
        xs = [x if isinstance(x, str) else json.dumps(x) for x in xs]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, [r["throughput_gbps"] for r in rows], marker="o", color="tab:blue")
    ax.set_xlabel(key)
    ax.set_ylabel("throughput (Gbit/s)", color="tab:blue")
    ax.grid(alpha=0.3)
    ax2 = ax.twinx()
    ax2.plot(xs, [r["latency_mean_us"] for r in rows], marker="s", ls="--", color="tab:red")
    ax2.set_ylabel("mean latency (µs)", color="tab:red")
    fig.tight_layout()
    o.figure("sweep", fig)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return v if isinstance(v, str) else json.dumps(v)


@offloads_app.command("units")
def offloads_units(config: ConfigArg, param: ParamOpt = None,
                   as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
                   ) -> None:
    """Eq. 1 for each offload: n = ceil(w_pipe/w_unit · f_pipe/f_unit + delay).

    Shows each offload's width, clock, non-pipelined delay, one unit's rate, the units Eq. 1
    asks for to keep up with the datapath, and the units configured (Eq. 1 unless overridden).
    """
    from nicsim.config import offload_units

    cfg = load_config(config, param or [])
    rows = offload_units(cfg)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    pw, pf = get_key(cfg, "pipeline.width_bits") or 512, get_key(cfg, "pipeline.clock_mhz") or 250
    t = Table(title=f"Offload units (Eq. 1) for a {pw}-bit, {pf} MHz datapath ({pw * pf / 1e3:g} Gbit/s)",
              box=box.SIMPLE_HEAD)
    for c in ("offload", "width\n(bit)", "clock\n(MHz)", "delay\n(cycles)", "unit\nGbit/s", "Eq. 1\nunits",
              "configured\nunits"):
        t.add_column(c, justify="left" if c == "offload" else "right")
    for r in rows:
        t.add_row(r["name"], str(r["width_bits"]), str(r["clock_mhz"]), str(r["delay_cycles"]),
                  f"{r['unit_gbps']:g}", str(r["eq1_units"]), str(r["units"]))
    out_console.print(t)


class Rate(StrEnum):
    bit = "bit"
    packet = "packet"


class Solver(StrEnum):
    bitwuzla = "bitwuzla"
    z3 = "z3"


@xdp_app.command("analyze")
def xdp_analyze(
    obj: Annotated[Path, typer.Argument(help="BPF object built by clang (-target bpf), e.g. target/xdp/calls.o.",
                                        show_default=False)],
    out: OutOpt,
    section: Annotated[str | None, typer.Option("--section", "-s", help="ELF section or function of the program "
                                                "(needed only if the object holds several XDP programs).")] = None,
    target: Annotated[str, typer.Option("--target", "-t", help="Target model: [b]nfp[/b] (the paper's Netronome "
                                        "constants), [b]x86-jit[/b] (this machine's kernel JIT, after `nicsim xdp "
                                        "calibrate`) or a target TOML file.")] = "nfp",
    rate: Annotated[Rate, typer.Option("--rate", help="Guarantee bits/s (each path at its minimum packet size) "
                                       "or packets/s.")] = Rate.bit,
    timeout: Annotated[float, typer.Option("--timeout", min=0.0, help="Seconds to search for the slowest "
                                           "satisfiable path; the bound so far is valid when it runs out.")] = 60.0,
    solver: Annotated[Solver, typer.Option("--solver", help="SMT solver. Bitwuzla is the default: it was the "
                                           "faster on the suite (BENCHMARKS.md).")] = Solver.bitwuzla,
    loop_bound: Annotated[int | None, typer.Option("--loop-bound", min=0, help="Iterations for loops whose bound "
                                                   "the code does not make evident (too small a bound is unsound).")] = None,
    memory_mb: Annotated[int, typer.Option("--memory-mb", min=16, help="Memory for the whole analysis, half for the "
                                           "graph and search, half for the solver; the search stops there with the "
                                           "bound so far (valid), a graph that does not fit is an error.")] = 2048,
    mac_limit: Annotated[bool, typer.Option("--mac-limit/--no-mac-limit", help="Include the target's MAC packet "
                                            "limit; --no-mac-limit gives the cores' and DRAM's rate alone, as the "
                                            "paper's evaluation reports it.")] = True,
) -> None:
    """Guarantee the packet or bit rate an XDP program sustains for every packet.

    Loads the object, inlines bpf-to-bpf calls, unrolls loops (finding their bounds where the
    code makes them evident), costs every edge on the target and reports the naive bound (the
    slowest path, feasible or not) at once. Then checks paths from the slowest on with an SMT
    solver until one is satisfiable: the slowest satisfiable path (SSP), whose rate is the
    guarantee, with a packet that takes it. Writes OUT/summary.json and OUT/example.pcap.
    """
    from nicsim.xdp import analyze

    unit = "Gbit/s" if rate == Rate.bit else "Mpps"
    scale = 1e9 if rate == Rate.bit else 1e6
    key = "bps" if rate == Rate.bit else "pps"
    bar = Progress(TextColumn("[bold]searching"), TextColumn("bound {task.fields[bound]}"), TimeElapsedColumn(),
                   console=err_console, transient=True)
    task = bar.add_task("xdp", total=None, bound="")

    def progress(entry: dict[str, Any]) -> None:
        if not bar.live.is_started:
            bar.start()
        bar.update(task, bound=f"{entry[key] / scale:,.3f} {unit}")

    try:
        s = analyze(obj, out, target=target, section=section, loop_bound=loop_bound, rate=rate.value,
                    timeout_s=timeout, solver=solver.value, memory_mb=memory_mb, mac_limit=mac_limit,
                    progress=progress)
    finally:
        if bar.live.is_started:
            bar.stop()
    g, n = s["guarantee"], s["naive"]
    t = Table(title=f"{s['object']['program']} on {s['target']} ({rate.value} rate)", show_header=False)
    t.add_column(style="bold")
    t.add_column(justify="right")
    t.add_row("naive bound", f"{n[key] / scale:,.3f} {unit}")
    why = "" if s["stopped"] in ("ssp", g["status"]) else f", {s['stopped']}"
    t.add_row("guarantee", f"{g[key] / scale:,.3f} {unit}  ({g['status']}{why})")
    if n[key] > 0:
        t.add_row("improvement", f"{(g[key] / n[key] - 1) * 100:+.1f} %")
    t.add_row("bottleneck", g["bottleneck"])
    t.add_row("min packet", f"{g['min_packet_bytes']} B")
    if s["path"].get("xdp_action"):
        t.add_row("path", f"{len(s['path']['insns'])} insns → {s['path']['xdp_action']}")
    in_graph = "at least 2^128" if int(s["graph"]["paths"]) == 2**128 - 1 else f"{int(s['graph']['paths']):,}"
    t.add_row("paths", f"{s['paths_enumerated']:,} checked, {s['paths_unsat']:,} infeasible "
              f"({in_graph} in the graph)")
    for lp in s["graph"]["loops"]:
        t.add_row("loop", f"insn {lp['insn']} {lp['line'] or ''}: bound {lp['bound']}"
                  + ("" if lp["evident"] else " (--loop-bound)"))
    t.add_row("time", f"{s['seconds']:.3f} s")
    out_console.print(t)
    if s["stopped"] == "memory":
        out_console.print(f"the search reached its memory budget (--memory-mb {memory_mb}) before the slowest "
                          "path, so the guarantee is the bound proven so far; a smaller --loop-bound or a "
                          "larger --memory-mb may let it finish")
    files = ["summary.json"] + (["example.pcap"] if s["example_packet_hex"] else [])
    out_console.print(f"wrote {out}/ ({', '.join(files)})")


@xdp_app.command("calibrate")
def xdp_calibrate(
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Target file to write (default: where "
                                             "--target x86-jit reads it, ~/.cache/nicsim/x86-jit.toml or "
                                             "$NICSIM_X86_JIT).", show_default=False)] = None,
) -> None:
    """Measure this machine's kernel JIT and write the [b]x86-jit[/b] target.

    Runs generated micro-benchmarks with BPF_PROG_TEST_RUN, one per BPF instruction class and
    helper (as the paper's section 4 measures the NFP), and writes their costs in nanoseconds
    as a target file for `nicsim xdp analyze --target x86-jit`. Needs the privileges to load
    BPF programs (root). Takes about 20 s.
    """
    from nicsim.xdp.calibrate import calibrate

    bar = Progress(TextColumn("[bold]calibrating"), TextColumn("{task.fields[what]}"), TimeElapsedColumn(),
                   console=err_console, transient=True)
    task = bar.add_task("cal", total=None, what="")
    with bar:
        path = calibrate(out, progress=lambda name: bar.update(task, what=name))
    out_console.print(f"wrote {path}")


@xdp_app.command("validate")
def xdp_validate(
    obj: Annotated[Path, typer.Argument(help="The BPF object that was analysed.", show_default=False)],
    analysis: Annotated[Path, typer.Option("--analysis", "-a", help="Folder of `nicsim xdp analyze` for OBJ.",
                                           show_default=False)],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for validation.json (default: the "
                                             "analysis folder).", show_default=False)] = None,
    packets: Annotated[int, typer.Option("--packets", min=0, help="Random packets, and as many mutated ones.")] = 1000,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Kernel runs per packet; its time is their median.")] = 15,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random and mutated packets.")] = 1,
    timeout: Annotated[float, typer.Option("--timeout", min=0.0, help="Seconds for the x86-jit analysis.")] = 60.0,
) -> int:
    """Check an analysis against the interpreter and the running kernel.

    Runs the example packet in nicsim's eBPF interpreter (it must take the reported path), loads
    OBJ into the kernel with the analysis's map entries and runs the packet with
    BPF_PROG_TEST_RUN (it must return the reported action), then times the example and
    --packets random and mutated packets in the kernel and compares them with the x86-jit
    guarantee (a packet-rate analysis on the calibrated target): none may be more than 5 %
    slower. Exit code 1 if a check fails. Needs root for the kernel.
    """
    from nicsim.xdp.validate import validate

    bar = Progress(TextColumn("[bold]validating"), TextColumn("{task.fields[what]}"), TimeElapsedColumn(),
                   console=err_console, transient=True)
    task = bar.add_task("val", total=None, what="")
    with bar:
        r = validate(obj, analysis, out, packets=packets, runs=runs, seed=seed, timeout_s=timeout,
                     progress=lambda what: bar.update(task, what=what))
    t = Table(title=f"validation of {obj.name}", show_header=False)
    t.add_column(style="bold")
    t.add_column()
    for name, ok in r["checks"].items():
        t.add_row("[green]pass[/green]" if ok else "[red]FAIL[/red]", name)
    tm = r["timing"]
    if "example_ns" in tm:
        t.add_row("example", f"{tm['example_ns']:.0f} ns/packet")
    t.add_row("slowest", f"{tm['slowest']['ns']:.0f} ns/packet ({tm['slowest']['kind']}, {tm['slowest']['bytes']} B)")
    if tm.get("guarantee_ns"):
        t.add_row("x86-jit guarantee", f"{tm['guarantee_ns']:.0f} ns/packet ({tm['guarantee_status']}); "
                  f"slowest is {tm['slowest_vs_guarantee']:.0%} of it")
    else:
        t.add_row("x86-jit guarantee", tm["note"])
    out_console.print(t)
    out_console.print(f"wrote {(out or analysis)}/validation.json")
    return 0 if r["ok"] else 1


@reproduce_app.command("flexpipe")
def reproduce_flexpipe(
    out: OutOpt,
    quick: Annotated[bool, typer.Option("--quick", help="Fewer packets and points: a fast smoke run.")] = False,
    executor: ExecutorOpt = Executor.local,
) -> None:
    """FlexPipe (Zyla et al., 2023): Table II, Fig. 3 (throughput), Fig. 4 (latency per flow and
    size) and Fig. 5 (recirculation), each next to the paper's numbers."""
    from nicsim.reproduce import flexpipe

    flexpipe.main(out, quick=quick, executor=executor.value)


@reproduce_app.command("xdp")
def reproduce_xdp(
    out: OutOpt,
    quick: Annotated[bool, typer.Option("--quick", help="Path explosion searched for 5 s instead of 60 s.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", min=0.0, help="Seconds each analysis may search for its "
                                           "SSP (path explosion: see --quick).")] = 60.0,
    nfp_only: Annotated[bool, typer.Option("--nfp-only", help="Leave out the x86-jit analyses (and the "
                                           "calibration they need on a new machine).")] = False,
) -> None:
    """Krude et al. (CoNEXT 2021): Tables 2 and 3 (naive bound, SSP, improvement, bottleneck,
    time) for the XDP suite on nfp beside the paper's figures, the same on x86-jit (calibrated
    first if needed), Fig. 7 (the guarantee against time) and Fig. 8 (Count-Min against its
    number of stages), and the paper's qualitative claims checked one by one. Needs the suite
    (`make xdp-suite`)."""
    from nicsim.reproduce import xdp

    xdp.main(out, quick=quick, timeout_s=timeout, targets=("nfp",) if nfp_only else xdp.TARGETS)


@reproduce_app.command("flowmem")
def reproduce_flowmem(
    out: OutOpt,
    flows: Annotated[int, typer.Option("--flows", min=1, help="Connections in the synthetic capture.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic capture.")] = 1,
) -> None:
    """Packets are Not Pages (Adams et al.): the 10 × 1,510-byte micro-benchmark, DRAM traffic
    per payload byte and per-core throughput (scan and regex) of copy-based and flow-based
    addressing in the SmartNIC memory model, beside the talk's figures."""
    from nicsim.reproduce import flowmem

    flowmem.main(out, flows=flows, seed=seed)


@reproduce_app.command("router")
def reproduce_router(
    out: OutOpt,
    quick: Annotated[bool, typer.Option("--quick", help="Shorter runs and fewer points: a fast smoke run.")] = False,
    beyond: Annotated[bool, typer.Option("--beyond/--no-beyond", help="Also sweep 2-8 NICs on PCI-X 66 and "
                                         "133 MHz (fast path, every NIC to every other at line rate).")] = True,
) -> None:
    """Seed 002 (a PC software router with FPGA NICs): set-up A's slow path, Fig. 4's saturation rate
    against frame size, set-ups B-F and the QoS runs of Figs. 5 and 6, each beside the paper
    with holds / does not hold, and beyond the paper 2-8 NICs on PCI-X."""
    from nicsim.reproduce import router

    router.main(out, quick=quick, beyond=beyond)


def _fail(msg: str, code: int = 2) -> NoReturn:
    print(f"nicsim: error: {msg}", file=sys.stderr)
    sys.exit(code)


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point of the `nicsim` command; the one place where errors become exit codes."""
    try:
        rv = app(args=argv, prog_name="nicsim", standalone_mode=False)
    except typer.Abort:
        print("nicsim: interrupted", file=sys.stderr)
        sys.exit(130)
    except ClickException as e:  # usage errors: click's message, exit 2
        e.show()
        sys.exit(e.exit_code)
    except NicsimError as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"{e.filename}: {e.strerror}" if e.filename else str(e))
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
