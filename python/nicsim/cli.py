"""The `nicsim` command line.

One command with a subcommand per job. Every command that produces results writes one output
folder, atomically. Bad input of any kind (a configuration, a `--param`, a missing file) is
reported by the single handler in [`main`] as one line, `nicsim: error: <message>`, with exit
code 2 and no traceback; Ctrl-C exits with 130 after writing what can be written.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from nicsim import ui
from nicsim.config import get_key, load_config, parse_sweep_param
from nicsim.errors import ConfigError, Interrupted, NicsimError
from nicsim.flow.cli import flow_app
from nicsim.options import (
    MAX_SECONDS,
    MAX_SYNTH_FLOWS,
    U64_MAX,
    ForceOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    VerboseOpt,
    in_range,
    path_arg,
)
from nicsim.router.cli import router_app
from nicsim.xdp.cli import xdp_app

try:  # typer >= 0.22 carries its own copy of click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException

def _conventional_help() -> None:
    """--help as the tools users know print it: `nicsim run [OPTIONS] CONFIG`, not typer's
    `{CONFIG}`, and flags without a `<bool>` type beside them. Typer keeps both in its
    parameter classes; each is changed only where that typer has it."""
    from typer import core

    if hasattr(core.TyperArgument, "_usage_display_name"):
        def usage_name(self: Any) -> str:
            name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
            return name + ("..." if self.nargs != 1 else "")

        core.TyperArgument._usage_display_name = usage_name
    if hasattr(core.TyperOption, "display_type_rich"):
        typed = core.TyperOption.display_type_rich

        def display_type(self: Any, ctx: Any) -> str | None:
            return None if self.is_flag or self.count else typed(self, ctx)

        core.TyperOption.display_type_rich = display_type


_conventional_help()

app = typer.Typer(
    name="nicsim",
    help="SmartNIC design and analysis toolkit: simulate datapaths (FlexPipe, PANIC, StaticPipe) and "
    "size their offloads, guarantee the rate of XDP programs, measure and model what flow reassembly "
    "costs in memory, simulate a PC router with FPGA NICs, sweep parameters and reproduce the seed "
    "papers' results.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)
offloads_app = typer.Typer(help="Offload catalog: how many units each offload needs (Eq. 1).", no_args_is_help=True,
                           rich_markup_mode="markdown")
reproduce_app = typer.Typer(help="Reproduce a seed paper's results with one command.", no_args_is_help=True,
                            rich_markup_mode="markdown")
app.add_typer(offloads_app, name="offloads")
app.add_typer(reproduce_app, name="reproduce")
app.add_typer(xdp_app, name="xdp")
app.add_typer(flow_app, name="flow")
app.add_typer(router_app, name="router")


class Executor(StrEnum):
    local = "local"
    ray = "ray"


class PacketsFormat(StrEnum):
    parquet = "parquet"


ConfigArg = Annotated[Path, typer.Argument(metavar="CONFIG", parser=path_arg, help="Datapath configuration (TOML), e.g. "
                                           "configs/flexpipe_paper.toml; `-` reads it from standard input.",
                                           show_default=False)]
ParamOpt = Annotated[
    list[str] | None,
    typer.Option("--param", "-p", metavar="KEY=VALUE",
                 help="Override a configuration value (repeatable). KEY is a dotted path with list indices, "
                      "VALUE a TOML value or a bare string: `traffic.rate_gbps=96`, "
                      "`flows[0].chain=[\"crc\",\"rss\"]`, `arch=panic`."),
]
ExecutorOpt = Annotated[Executor, typer.Option("--executor", "-x",
                                               help="Where runs execute: a local process pool, or Ray "
                                                    "(needs the `nicsim[ray]` extra; see --ray-address).")]
WorkersOpt = Annotated[int | None, typer.Option("--workers", "-j", metavar="N", callback=in_range(1, 4096),
                                                help="Parallel runs (default: one per CPU).", show_default=False)]


def _version(value: bool) -> None:
    if value:
        from nicsim import __version__

        ui.out_console.print(f"nicsim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """SmartNIC design and analysis toolkit."""


@app.command("run")
def run_cmd(config: ConfigArg, out: OutOpt, param: ParamOpt = None,
            egress_pcap: Annotated[bool, typer.Option("--egress-pcap",
                                                      help="Write delivered packets to OUT/egress.pcap "
                                                           "(as `measure.egress_pcap = true`).")] = False,
            packets: Annotated[PacketsFormat | None, typer.Option(
                "--packets", help="Also write every delivered packet's record (flow, size, times, latency) to "
                "OUT/packets.parquet.")] = None,
            force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
            ) -> None:
    """Run one datapath simulation.

    Writes OUT/summary.json, per_flow.csv (latency per flow and packet size), fifos.csv (each
    FIFO's occupancy) and run.png/.svg (both plotted). Shows a progress bar over resolved
    (delivered or dropped) packets, then a short table of throughput, latency and drops. Ctrl-C
    stops the run and still writes the summary of what ran, marked `"interrupted": true`.
    """
    from nicsim.datapath import run

    # --egress-pcap is measure.egress_pcap: the generator then builds frames even for timing runs.
    cfg = load_config(config, [*(param or []), *(["measure.egress_pcap=true"] if egress_pcap else [])])
    want_pcap = bool(get_key(cfg, "measure.egress_pcap"))
    total = None if get_key(cfg, "traffic.replay") else get_key(cfg, "traffic.packets") or 11000
    with ui.Progress("simulating", total=total, unit="packets") as bar:

        def progress(now_us: float, s: dict[str, Any] | None) -> None:
            done = None if s is None else s["packets"]["delivered"] + s["packets"]["dropped_total"]
            bar.update(done, detail=f"{now_us:,.1f} µs simulated")

        try:
            summary = run(cfg, out, egress_pcap=want_pcap, progress=progress, force=force,
                          packet_records=packets is not None)
        except Interrupted as e:
            summary = e.summary
        p = summary["packets"]
        if bar.completed:
            bar.update(p["delivered"] + p["dropped_total"], detail=f"{summary['sim_time_us']:,.1f} µs simulated")
    ui.result(summary, lambda console: print_run(summary, console))
    if summary.get("deadlocked"):
        hint = ("offloads that feed each other through full crossbar buffers; see panic.crossbar_port_buffer_bytes"
                if summary["arch"] == "panic" else
                "a recirculation loop whose FIFOs are full; see pipeline.recirc_fifo_bytes and "
                "pipeline.arbiter_fifo_bytes")
        ui.warn(f"the run deadlocked: {summary['packets']['in_flight']:,} packets are stuck with nothing able to "
                f"move (e.g. {hint})")
    if summary["interrupted"]:
        ui.warn(f"wrote the partial summary to {out}/", label="interrupted:")
        raise typer.Exit(130)
    ui.wrote(out)


def print_run(s: dict[str, Any], console: Console) -> None:
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
    console.print(t)


@app.command("sweep")
def sweep_cmd(
    config: ConfigArg,
    out: OutOpt,
    param: Annotated[list[str], typer.Option("--param", "-p", metavar="KEY=V1,V2,...",
                                             help="A swept key and its values, comma-separated (repeatable; the "
                                                  "sweep is the cartesian product). Commas inside brackets do not "
                                                  "split: `flows[0].chain=[\"crc\",\"rss\"],[\"crc\"]`.",
                                             show_default=False)],
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    ray_address: Annotated[str | None, typer.Option("--ray-address", metavar="ADDR", help="Connect to this Ray "
                                                    "cluster (`HOST:PORT` of its head, `ray://HOST:10001`, or "
                                                    "`auto`; default: $RAY_ADDRESS, else a local Ray). Implies "
                                                    "`--executor ray`.")] = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Run a configuration over a grid of parameter values.

    CONFIG is a datapath configuration or a router one (`nicsim router run`'s). Writes
    OUT/sweep.csv and sweep.parquet (one row per point: the parameters and the headline
    metrics), OUT/summary.json (every point with its full summary) and a plot of the metrics
    against each varied parameter.
    """
    from nicsim.sweep import sweep_to_folder

    params: dict[str, list[Any]] = {}
    for text in param:
        key, values = parse_sweep_param(text)
        if key in params:
            raise ConfigError("given twice", path=key, file="--param")
        params[key] = values
    where = "ray" if ray_address else executor.value
    summary, rows, shown = sweep_to_folder(config, params, out, executor=where, workers=workers,
                                           ray_address=ray_address, force=force)

    def show(console: Console) -> None:
        fixed = ", ".join(f"{k}={_fmt(v[0])}" for k, v in params.items() if len(v) == 1)
        t = Table(title=f"{len(rows)} {summary['model']} runs on {where}" + (f" with {fixed}" if fixed else ""))
        for _key, header in shown:
            t.add_column(header, justify="right")
        for r in rows:
            t.add_row(*(_fmt(r[c]) for c, _ in shown))
        console.print(t)

    ui.result(summary, show)
    ui.wrote(out)


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    return v if isinstance(v, str) else json.dumps(v)


@offloads_app.command("units")
def offloads_units(config: ConfigArg, param: ParamOpt = None, _json: JsonOpt = False, _quiet: QuietOpt = False) -> None:
    """Eq. 1 for each offload: n = ceil(w_pipe/w_unit · f_pipe/f_unit + delay).

    Shows each offload's width, clock, non-pipelined delay, one unit's rate, the units Eq. 1
    asks for to keep up with the datapath, and the units configured (Eq. 1 unless overridden).
    """
    from nicsim.config import offload_units

    cfg = load_config(config, param or [])
    rows = offload_units(cfg)

    def show(console: Console) -> None:
        pw, pf = get_key(cfg, "pipeline.width_bits") or 512, get_key(cfg, "pipeline.clock_mhz") or 250
        t = Table(title=f"Offload units (Eq. 1) for a {pw}-bit, {pf} MHz datapath ({pw * pf / 1e3:g} Gbit/s)",
                  box=box.SIMPLE_HEAD)
        for c in ("offload", "width\n(bit)", "clock\n(MHz)", "delay\n(cycles)", "unit\nGbit/s", "Eq. 1\nunits",
                  "configured\nunits"):
            t.add_column(c, justify="left" if c == "offload" else "right")
        for r in rows:
            t.add_row(r["name"], str(r["width_bits"]), str(r["clock_mhz"]), str(r["delay_cycles"]),
                      f"{r['unit_gbps']:g}", str(r["eq1_units"]), str(r["units"]))
        console.print(t)

    ui.result(rows, show)


def _reproduced(out: Path, summary: dict[str, Any]) -> None:
    ui.result(summary)  # the comparison tables were printed as the experiments ran
    ui.wrote(out)


@reproduce_app.command("flexpipe")
def reproduce_flexpipe(
    out: OutOpt,
    quick: Annotated[bool, typer.Option("--quick", help="Fewer packets and points: a fast smoke run.")] = False,
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """FlexPipe (Zyla et al., 2023): Table II, Fig. 3 (throughput), Fig. 4 (latency per flow and
    size) and Fig. 5 (recirculation), each next to the paper's numbers."""
    from nicsim.reproduce import flexpipe

    _reproduced(out, flexpipe.main(out, quick=quick, executor=executor.value, workers=workers, force=force))


@reproduce_app.command("xdp")
def reproduce_xdp(
    out: OutOpt,
    quick: Annotated[bool, typer.Option("--quick", help="Path explosion searched for 5 s instead of 60 s, the "
                                        "accuracy study on 3 paths per program and 51 runs each instead of 10 and "
                                        "201 (with --paper-objects: only Table 2's objects, Fig. 8 at 1, 2, 5, 10 "
                                        "and 20 stages).")] = False,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", callback=in_range(0, MAX_SECONDS),
                                           help="Seconds each analysis may search for its SSP (path explosion: "
                                           "see --quick).")] = 60.0,
    nfp_only: Annotated[bool, typer.Option("--nfp-only", help="Leave out the x86-jit analyses (and the "
                                           "calibration they need on a new machine).")] = False,
    paper_objects: Annotated[Path | None, typer.Option(
        "--paper-objects", metavar="DIR", help="Analyse the paper's own objects (its artifacts' "
        "data-paper/programs/*.bpf.o) on nfp beside Tables 2 and 3, with bands checked, and Fig. 8 from its "
        "Count-Min objects, instead of the suite.")] = None,
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Krude et al. (CoNEXT 2021): Tables 2 and 3 (naive bound, SSP, improvement, bottleneck,
    time) for the XDP suite on nfp beside the paper's figures, the same on x86-jit (calibrated
    first if needed), Fig. 7 (the guarantee against time) and Fig. 8 (Count-Min against its
    number of stages), the accuracy study of section 6.1 on x86-jit (the slowest paths' estimates
    against their times in the kernel), and the paper's qualitative claims checked one by one. Needs the suite
    (`make xdp-suite`)."""
    if paper_objects is not None:
        from nicsim.reproduce import xdp_paper

        _reproduced(out, xdp_paper.main(out, paper_objects, quick=quick, timeout_s=timeout, workers=workers,
                                        executor=executor.value, force=force))
        return
    from nicsim.reproduce import xdp

    _reproduced(out, xdp.main(out, quick=quick, timeout_s=timeout, targets=("nfp",) if nfp_only else xdp.TARGETS,
                              force=force))


@reproduce_app.command("flowmem")
def reproduce_flowmem(
    out: OutOpt,
    flows: Annotated[int | None, typer.Option("--flows", metavar="N", callback=in_range(1, MAX_SYNTH_FLOWS),
                                              help="Connections in the synthetic capture [default: 2,000; 200 with "
                                              "--quick].", show_default=False)] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A fast smoke run: 200 connections.")] = False,
    seed: Annotated[int, typer.Option("--seed", metavar="N", callback=in_range(0, U64_MAX),
                                      help="Seed of the synthetic capture.")] = 1,
    capture: Annotated[Path | None, typer.Option("--capture", metavar="CAPTURE",
                                                 help="The real capture beside the micro-benchmark [default: the "
                                                 "veth recording `make veth-captures` makes, in a source tree].",
                                                 show_default=False)] = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Packets are Not Pages (Adams et al.): the 10 × 1,510-byte micro-benchmark, DRAM traffic
    per payload byte and per-core throughput (scan and regex) of copy-based and flow-based
    addressing in the SmartNIC memory model, on the micro-benchmark, a synthetic capture and a
    real one, beside the talk's figures."""
    from nicsim.reproduce import flowmem

    _reproduced(out, flowmem.main(out, flows=flows or (200 if quick else 2000), seed=seed, force=force,
                                  capture=capture))


@reproduce_app.command("router")
def reproduce_router(
    out: OutOpt,
    quick: Annotated[bool, typer.Option("--quick", help="Shorter runs and fewer points: a fast smoke run.")] = False,
    beyond: Annotated[bool, typer.Option("--beyond/--no-beyond", help="Also sweep 2-8 NICs on PCI-X 66 and "
                                         "133 MHz (fast path, every NIC to every other at line rate).")] = True,
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Seed 002 (a PC software router with FPGA NICs): set-up A's slow path, Fig. 4's saturation rate
    against frame size, set-ups B-F and the QoS runs of Figs. 5 and 6, each beside the paper
    with holds / does not hold, and beyond the paper 2-8 NICs on PCI-X."""
    from nicsim.reproduce import router

    _reproduced(out, router.main(out, quick=quick, beyond=beyond, executor=executor.value, workers=workers,
                                 force=force))


#: The longest error line: a message that quotes a huge input (a 100 kB name) is cut.
MAX_ERROR_CHARS = 1000


def _fail(msg: str, code: int = 2) -> NoReturn:
    msg = " ".join(msg.split())  # one line, whatever the message quoted
    if len(msg) > MAX_ERROR_CHARS:
        msg = msg[:MAX_ERROR_CHARS] + f"… ({len(msg) - MAX_ERROR_CHARS:,} more characters)"
    print(f"nicsim: error: {msg}", file=sys.stderr)
    sys.exit(code)


class Terminated(SystemExit):
    """SIGTERM: unwinds like an exception, so that output folders under way are removed."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated(128 + signum)


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point of the `nicsim` command; the one place where errors become exit codes."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        rv = app(args=argv, prog_name="nicsim", standalone_mode=False)
    except typer.Abort:
        print("nicsim: interrupted", file=sys.stderr)
        sys.exit(130)
    except Terminated as e:
        print("nicsim: terminated", file=sys.stderr)
        sys.exit(e.code)
    except ClickException as e:  # usage errors: click's message on one line, exit 2
        ctx = getattr(e, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        _fail(" ".join(e.format_message().split()) + hint, e.exit_code)
    except NicsimError as e:
        _fail(str(e))
    except BrokenPipeError:
        # Whoever read our output stopped (`nicsim ... | head`): end quietly, as other tools do.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        sys.exit(141)
    except OSError as e:
        _fail(f"{e.filename}: {e.strerror}" if e.filename else str(e))
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
