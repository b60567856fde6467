"""The `nicsim router ...` commands (router fabric, seed 002)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from nicsim import ui
from nicsim.options import ForceOpt, JsonOpt, OutOpt, QuietOpt, VerboseOpt, path_arg

router_app = typer.Typer(help="Router fabric: a PC software router with FPGA NICs (slow path through the CPU, "
                              "fast path over the shared PCI-X bus).", no_args_is_help=True,
                         rich_markup_mode="markdown")


@router_app.command("run")
def router_run(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", parser=path_arg, help="Router configuration (TOML), e.g. "
                                           "configs/router/setup_d.toml; `-` reads it from standard input.",
                                           show_default=False)],
    out: OutOpt,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", metavar="KEY=VALUE",
        help="Override a configuration value (repeatable): `run.duration_us=2000`, "
             "`traffic[0].rate_mbps=500`, `pc.bus.clock_mhz=133`.")] = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Run one router simulation to the end.

    Writes OUT/summary.json (docs/router.md, "Summary schema"), ports.csv (per port: offered
    and forwarded Mbit/s and kpkt/s, per class, latency, drops), drops.csv (drops by place),
    router.png (both plotted) and config.json. Prints a table per port and where packets
    were dropped. Ctrl-C stops the run and still writes the summary of what ran, marked
    `"interrupted": true`.
    """
    from nicsim.router import load, run

    cfg = load(config, param or [])
    with ui.Progress("simulating", transient=True) as bar:
        bar.update(detail=config.name)
        s = run(cfg, out, force=force)
    ui.result(s, lambda console: print_summary(s, console, title=f"{config.name}: {s['sim_time_us']:,.0f} µs "
                                                               "simulated"))
    if s["interrupted"]:
        ui.warn(f"wrote the partial summary to {out}/", label="interrupted:")
        raise typer.Exit(130)
    ui.wrote(out)


def print_summary(s: dict[str, Any], console: Console, title: str = "") -> None:
    """Per port offered and forwarded rates and drops, then losses, drop places and the bus."""
    from nicsim.router import port_rows

    t = Table(title=title or None, box=box.SIMPLE_HEAD)
    for c in ("port", "offered\nMbit/s (wire)", "offered\nkpkt/s", "forwarded\nMbit/s (wire)", "forwarded\nkpkt/s",
              "latency\nhigh / low µs", "dropped\npackets"):
        t.add_column(c, justify="left" if c == "port" else "right")

    def lat(x: float | None) -> str:
        return "–" if x is None else f"{x:.2f}"

    for r in port_rows(s):
        t.add_row(r["port"], f"{r['offered_mbps']:.1f}", f"{r['offered_kpps']:.1f}", f"{r['forwarded_mbps']:.1f}",
                  f"{r['forwarded_kpps']:.1f}", f"{lat(r['latency_high_mean_us'])} / {lat(r['latency_low_mean_us'])}",
                  f"{r['dropped_packets']:,}")
    console.print(t)
    cl = s["classes"]
    console.print("loss: " + ", ".join(f"{c} {cl[c]['loss']:.2%} of {cl[c]['offered']:,}" for c in ("high", "low"))
                  + "; dropped at: " + (", ".join(f"{k} {v:,}" for k, v in s["drops_by_place"].items()) or "nowhere"))
    b = s["bus"]
    console.print(f"bus {b['width_bits']} bit × {b['clock_mhz']} MHz: {b['utilisation']:.1%} busy ({message_share(b):.1%} "
                  f"of the time REQ/RES messages), {b['wasted_bytes']:,} bytes wasted on dropped packets; CPU "
                  f"{s['cpu']['utilisation']:.1%} busy; packets conserved: {'yes' if s['packets']['conserved'] else 'NO'}")
    console.print("Mbit/s count wire bits (preamble, SFD and gap included, as a tester counts line rate); the bus's "
                  "busy share includes the REQ/RES messages, which the NICs send whenever the bus is otherwise idle: "
                  "a bus near 100 % busy is not a bus without room for packets.")


def message_share(bus: dict[str, Any]) -> float:
    """The share of the run's bus time spent on REQ/RES messages (part of `utilisation`)."""
    busy = sum(bus["cycles_by_channel"].values())
    return bus["utilisation"] * bus["cycles_by_channel"].get("messages", 0) / busy if busy else 0.0
