"""`nicsim run` and `nicsim offloads`: the datapath's commands (one simulation; Eq. 1's table; units
sized by simulation for a traffic and targets)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from nicsim import ui
from nicsim.config import get_key, load_config, validate
from nicsim.errors import ConfigError, InputError, Interrupted, WorkerKilled
from nicsim.options import (
    Executor,
    ExecutorOpt,
    ForceOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    RayAddressOpt,
    VerboseOpt,
    WorkersOpt,
    in_range,
    path_arg,
)

offloads_app = typer.Typer(help="Offload catalog: how many units each offload needs (Eq. 1, or by simulation for "
                                "your traffic and targets).", no_args_is_help=True,
                           rich_markup_mode="markdown")


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
    FIFO's occupancy) and run.png (both plotted). Shows a progress bar over resolved
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
    t = Table(title=f"{s['arch']} — {s['offered_gbps']:g} Gbit/s of frames offered", show_header=False)
    t.add_column(style="bold")
    t.add_column(justify="right")
    t.add_row("throughput", f"{s['throughput_gbps']:.2f} Gbit/s of frames")
    if lat.get("packets"):
        t.add_row("latency mean / p99", f"{lat['mean']:.3f} / {lat['p99']:.3f} µs")
        t.add_row("latency min / max", f"{lat['min']:.3f} / {lat['max']:.3f} µs")
    t.add_row("offered / delivered", f"{p['offered']:,} / {p['delivered']:,}")
    reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(p["dropped"].items()) if v)
    t.add_row("dropped", f"{p['dropped_total']:,}" + (f" ({reasons})" if reasons else ""))
    t.add_row("in flight at end", f"{p['in_flight']:,}")
    t.add_row("simulated time", f"{s['sim_time_us']:,.3f} µs")
    console.print(t)


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




class Timing(StrEnum):
    sizes = "sizes"
    rate = "rate"
    original = "original"


@contextlib.contextmanager
def _traffic_capture(traffic: Path | None) -> Iterator[Path | None]:
    """--traffic's capture as a file (`capture_file`: standard input, a pipe or a compressed
    capture is copied to a temporary file), its errors naming --traffic."""
    from nicsim.flowmem.reassemble import capture_file

    with contextlib.ExitStack() as stack:
        if traffic is None:
            yield None
            return
        try:
            path = stack.enter_context(capture_file(traffic))
        except InputError as e:
            raise InputError(f"--traffic: {e}") from None
        yield path


@offloads_app.command("size")
def offloads_size(
    config: ConfigArg,
    out: OutOpt,
    p99_us: Annotated[float, typer.Option("--p99-us", metavar="US", callback=in_range(1e-9, 1e9),
                                                 help="Latency target in µs: the p99 of the measured packets' "
                                                      "sojourn, from arrival to the sink (the summary's `sojourn_us`; "
                                                      "it includes any wait to enter the datapath). Required: "
                                                      "FlexPipe holds traffic back rather than dropping it, so "
                                                      "a loss target alone is met by too few units.",
                                                 show_default=False)],
    loss: Annotated[float, typer.Option("--loss", metavar="SHARE", callback=in_range(0.0, 1.0),
                                        help="Loss target: the share of offered packets dropped (or stuck) "
                                             "at most, 0 to 1.")] = 0.0,
    traffic: Annotated[Path | None, typer.Option("--traffic", metavar="CAPTURE", parser=path_arg,
                                                 help="A capture (pcap or pcapng) whose traffic to size for, "
                                                      "instead of the configuration's; see --timing.")] = None,
    timing: Annotated[Timing | None, typer.Option("--timing", help="How --traffic is used: `sizes` (default), its "
                                                  "frame sizes under the configuration's flows, rate and arrivals; "
                                                  "`rate`, the capture replayed at traffic.rate_gbps; `original`, "
                                                  "replayed at its own timing.", show_default=False)] = None,
    param: ParamOpt = None,
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    ray_address: RayAddressOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """The fewest units per offload that meet a p99 latency and a loss target on your traffic.

    Simulates the datapath with every offload generous (max of Eq. 1 and the configured
    count), then searches each offload's count with the others generous, then checks the
    counts together and adds units where they help most until the targets are met. Writes
    OUT/summary.json (every simulated point), sizing.csv (per offload: Eq. 1, alone, joint,
    saving), points.csv and p99_vs_units.png. Runs on the local pool, or on Ray with
    `--executor ray`. Exits 1 when even the generous configuration misses the targets.
    """
    from nicsim.datapath import config_inputs
    from nicsim.datapath.sizing import plot_sizing, point_rows, size_offloads, sizing_rows, with_traffic
    from nicsim.output import OutputDir, figures
    from nicsim.sweep import check_executor

    where = "ray" if ray_address else executor.value
    check_executor(where, workers)
    if timing is not None and traffic is None:
        raise InputError("--timing says how --traffic's capture is used; give --traffic CAPTURE too")
    if str(config) == "-" and traffic is not None and str(traffic) == "-":
        raise InputError("-: standard input can be the configuration or --traffic's capture, not both")
    # `-` or a pipe: every run reads the capture, so it is read once into a temporary file.
    with _traffic_capture(traffic) as capture:
        cfg = with_traffic(load_config(config, param or []), capture, (timing or Timing.sizes).value)
        output = OutputDir(out, inputs=[*config_inputs(cfg), traffic], force=force, config=cfg)
        try:
            validate(cfg)
            output.check()  # before the runs, not after them
            s = size_offloads(cfg, {"p99_us": p99_us, "loss": loss}, executor=where, workers=workers,
                              ray_address=ray_address, progress=not ui.state.quiet and not ui.state.json,
                              traffic=str(traffic) if traffic is not None else "the configuration's")
        except ConfigError as e:
            # The capture is --traffic's, not the configuration's (or --param's).
            if traffic is not None and e.path.startswith(("traffic.size", "traffic.replay")):
                raise ConfigError(e.msg.replace(str(capture), str(traffic)), path="",
                                  file=f"--traffic {traffic}") from None
            raise
        except InputError as e:
            if capture is None or capture == traffic:
                raise
            raise InputError(str(e).replace(str(capture), str(traffic))) from None
        except WorkerKilled as e:  # the search cannot go on: keep the points that ran
            if e.partial is None:
                raise
            with output as o:
                o.summary(e.partial)
                o.csv("points.csv", point_rows(e.partial))  # type: ignore[arg-type]
            raise InputError(f"{e}; the search stopped, and the points that ran ({len(e.partial['points']):,}) "
                             f"are kept in {out}/summary.json") from None
    with output as o:
        o.summary(dict(s))
        o.csv("sizing.csv", sizing_rows(s))
        o.csv("points.csv", point_rows(s))
        with o.optional(*figures("p99_vs_units")):
            plot_sizing(o, s)

    def show(console: Console) -> None:
        goal = (f"p99 ≤ {p99_us:g} µs, " if p99_us is not None else "") + f"loss ≤ {loss:g}"
        t = Table(title=f"Units per offload for {goal} ({s['arch']}, {s['traffic']} traffic)", box=box.SIMPLE_HEAD)
        for c in ("offload", "Eq. 1\nunits", "alone\nunits", "joint\nunits", "saving\nunits"):
            t.add_column(c, justify="left" if c == "offload" else "right")
        for x in s["offloads"]:
            if not x["used"]:
                t.add_row(x["name"], str(x["eq1_units"]), "unused", str(x["units"] or "–"), "–")
                continue
            t.add_row(x["name"], str(x["eq1_units"]),
                      "–" if x["alone_units"] is None else str(x["alone_units"]),
                      "–" if x["units"] is None else str(x["units"]),
                      "–" if x["saving_units"] is None else str(x["saving_units"]))
        console.print(t)
        j = s["joint"]
        p99 = "–" if j["p99_us"] is None else f"{j['p99_us']:.3f} µs"
        console.print(f"{'met' if j['met'] else 'NOT met'}: p99 {p99}, loss {j['loss']:.2%}, "
                      f"{j['throughput_gbps']:.2f} Gbit/s; {s['total_units'] if s['total_units'] is not None else '–'}"
                      f" units against Eq. 1's {s['eq1_total_units']}; {s['runs']} runs in {s['rounds']} rounds, "
                      f"{s['elapsed_s']:.1f} s on {s['executor']}")

    ui.result(s, show)
    if not s["baseline"]["met"]:
        b = s["baseline"]
        p99 = "–" if b["p99_us"] is None else f"{b['p99_us']:.3f} µs"
        why = ", ".join(f"{k} {v:,}" for k, v in sorted(b["dropped"].items()))
        ui.warn(f"even every offload at max(Eq. 1, configured) units misses the targets (p99 {p99}, loss "
                f"{b['loss']:.2%}{f': {why}' if why else ''}): units are not the limit; lower the offered rate, "
                f"relax the targets or, for drops such as no_flow, fix the configuration")
        if b["dropped"].get("no_flow"):
            # The packets no flow's `match` takes (issue 34: a replayed capture's, all of them).
            whose = "of the capture's packets" if traffic is not None and timing in (Timing.rate, Timing.original) \
                else "packets"
            ui.warn(f"{b['dropped']['no_flow']:,} {whose} matched no flow's `match` (dropped as no_flow): give "
                    "flows whose matches cover them, or send every packet to the first flow with a catch-all, "
                    "`-p 'flows[0].match={}'` (docs/sizing.md)")
        ui.wrote(out)
        raise typer.Exit(1)
    ui.wrote(out)
