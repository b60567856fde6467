"""Router fabric (seed 002: Bianco et al., "Boosting the performance of PC-based software routers
with FPGA-enhanced network interface cards"): a PC software router with FPGA NICs, simulated by
the Rust core.

[`load`] reads a router configuration (TOML, `configs/router/`), applies `--param` overrides and
has the core validate it (a problem names the file and the key path). [`simulate`] runs it to
the end (without the GIL; Ctrl-C stops it, leaving a valid partial summary) and returns the core's summary (docs/router.md,
"Summary schema"); [`run`] also writes an output folder: summary.json, ports.csv (one row per
port: offered and forwarded Mbit/s and kpkt/s, per class, latency, drops) and config.json.

    from nicsim import router
    cfg = router.load("configs/router/setup_b.toml", ["run.duration_us=2000"])
    s = router.simulate(cfg)
    print(s["ports"]["nic1"]["forwarded"]["mbps"])
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, cast

from nicsim.config import Config, Override, core_errors, load_config, to_json, with_overrides
from nicsim.output import OutputDir, figures, stamp
from nicsim.router.summary import Summary

CLASSES = ("high", "low")

#: ports.csv's columns, in order (rates over the measurement window; latency in µs).
PORT_COLUMNS = [
    "port", "offered_mbps", "offered_kpps", "forwarded_mbps", "forwarded_mbps_frame", "forwarded_kpps",
    "offered_high_mbps", "offered_low_mbps", "forwarded_high_mbps", "forwarded_low_mbps",
    "latency_high_mean_us", "latency_high_p99_us", "latency_low_mean_us", "latency_low_p99_us",
    "dropped_packets",
]


def check(config: Mapping[str, Any]) -> None:
    """Validate a router configuration with the core; raises `ConfigError` with the key path."""
    from nicsim import _core

    payload = to_json(config)
    with core_errors(getattr(config, "source", None)):
        _core.router_check(payload)


def load(path: str | os.PathLike[str], overrides: Iterable[str | Override] | Mapping[str, Any] = ()) -> Config:
    """Read a router configuration, apply overrides (`"key=value"`) and validate it."""
    return load_config(path, overrides, check=check)


def derive(config: Mapping[str, Any], overrides: Mapping[str, Any]) -> Config:
    """A validated copy of `config` with `overrides` (key path → value) applied."""
    cfg = with_overrides(config, overrides)
    check(cfg)
    return cfg


def simulate(config: Mapping[str, Any], partial_on_interrupt: bool = False) -> Summary:
    """Run a router configuration to the end and return its summary, with `"interrupted"`.

    Ctrl-C stops the run: with `partial_on_interrupt` the summary of what ran comes back marked
    `"interrupted": true`, otherwise `KeyboardInterrupt` is raised."""
    from nicsim import _core

    payload = to_json(config)
    with core_errors(getattr(config, "source", None)):
        text, interrupted = _core.router_run(payload)
    if interrupted and not partial_on_interrupt:
        raise KeyboardInterrupt
    summary = json.loads(text)
    summary["interrupted"] = interrupted
    return cast("Summary", stamp(summary))


def port_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per port (ports.csv): rates over the window, latency per class, drops at the
    port's NIC (MAC buffer, input FIFOs, output)."""
    rows = []
    for name, p in summary["ports"].items():
        row: dict[str, Any] = {
            "port": name,
            "offered_mbps": p["offered"]["mbps"], "offered_kpps": p["offered"]["kpps"],
            "forwarded_mbps": p["forwarded"]["mbps"], "forwarded_mbps_frame": p["forwarded"]["mbps_frame"],
            "forwarded_kpps": p["forwarded"]["kpps"],
        }
        for c in CLASSES:
            row[f"offered_{c}_mbps"] = p["offered_by_class"][c]["mbps"]
            row[f"forwarded_{c}_mbps"] = p["forwarded_by_class"][c]["mbps"]
            lat = p["latency_us"][c]
            row[f"latency_{c}_mean_us"] = lat.get("mean")
            row[f"latency_{c}_p99_us"] = lat.get("p99")
        row["dropped_packets"] = sum(n for place, n in summary["drops_by_place"].items()
                                     if place.split(".")[0] == name)
        rows.append(row)
    return rows


def run(config: Mapping[str, Any], out: str | os.PathLike[str], *, force: bool = False) -> dict[str, Any]:
    """Simulate and write OUT/summary.json, OUT/ports.csv and OUT/config.json (all or nothing).
    Ctrl-C still writes them, for what ran, with `"interrupted": true` in the summary.
    `force`: replace an existing `out` that nicsim did not write (see [`OutputDir`])."""
    source = getattr(config, "source", None)
    output = OutputDir(out, inputs=[None if source == "<stdin>" else source], force=force, config=config)
    output.check()  # before the run, not after it
    summary = simulate(config, partial_on_interrupt=True)
    with output as o:
        o.summary(summary)
        o.csv("ports.csv", port_rows(summary), columns=PORT_COLUMNS)
        o.csv("drops.csv", [{"place": k, "packets": v} for k, v in summary["drops_by_place"].items()],
              columns=["place", "packets"])
        o.json("config.json", dict(config))
        with o.optional(*figures("router")):
            plot_run(o, summary)
    return summary


def plot_run(o: OutputDir, summary: Mapping[str, Any]) -> None:
    """router.png: offered and forwarded Mbit/s per port and class, and where packets were dropped."""
    from nicsim.output import pyplot

    plt = pyplot()

    rows = port_rows(summary)
    drops = [(k, v) for k, v in summary["drops_by_place"].items() if v]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    xs = list(range(len(rows)))
    w = 0.2
    for i, (key, label, color) in enumerate([("offered_high_mbps", "offered, high", "tab:blue"),
                                             ("forwarded_high_mbps", "forwarded, high", "tab:cyan"),
                                             ("offered_low_mbps", "offered, low", "tab:red"),
                                             ("forwarded_low_mbps", "forwarded, low", "tab:orange")]):
        ax.bar([x + (i - 1.5) * w for x in xs], [r[key] for r in rows], w, label=label, color=color)
    ax.set_xticks(xs, [r["port"] for r in rows])
    ax.set_ylabel("Mbit/s (over the window)")
    ax.set_title(f"per port, {summary.get('sim_time_us', 0):,.0f} µs simulated")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    if drops:
        ax2.barh(range(len(drops)), [v for _, v in drops], color="tab:red")
        ax2.set_yticks(range(len(drops)), [k for k, _ in drops], fontsize=8)
        ax2.invert_yaxis()
    else:
        ax2.text(0.5, 0.5, "no packet dropped", ha="center", va="center", transform=ax2.transAxes)
        ax2.set_yticks([])
    ax2.set_xlabel("packets dropped")
    ax2.set_title("drops by place")
    ax2.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    o.figure("router", fig)


__all__ = ["CLASSES", "PORT_COLUMNS", "check", "derive", "load", "port_rows", "run", "simulate"]
