"""Priority classes in FlexPipe, beyond the paper (`nicsim reproduce flexpipe --qos`).

The FlexPipe paper leaves QoS to future work. This experiment asks what priority classes buy:
the paper's four flows, one of them (flow3: crc → aes → jpeg) made the high class and 20 % of
the packets, Poisson arrivals from 40 Gbit/s (the unloaded reference) to 128 Gbit/s, on

- FlexPipe without classes (the paper's),
- FlexPipe with `[qos] policy = "strict"`,
- FlexPipe with `[qos] policy = "weighted"`, weights 1 (low) : 4 (high),
- PANIC, whose PIFO orders by the same priority.

Writes DIR/summary.json (`qos`: one row per variant, rate and class), DIR/qos.csv (the same
rows) and DIR/qos_latency.png (p99 latency and p99 sojourn of each class against the
offered rate).
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from nicsim import ui
from nicsim.config import load_config, with_overrides
from nicsim.output import OutputDir, figures
from nicsim.reproduce import report_console

#: The offered rates, Gbit/s: 40 is the unloaded reference.
RATES_GBPS = (40, 90, 100, 110, 120, 128)
#: The high class's share of the packets, and its flow.
HIGH_SHARE = 0.2
HIGH_FLOW = "flow3"
#: The variants: (name, overrides).
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("flexpipe", {}),
    ("flexpipe strict", {"qos": {"policy": "strict"}}),
    ("flexpipe weighted 1:4", {"qos": {"policy": "weighted", "weights": [1, 4]}}),
    ("panic", {"arch": "panic"}),
)
COLUMNS = ("variant", "offered_gbps", "class", "share", "throughput_gbps", "p99_us", "mean_us", "p99_sojourn_us",
           "dropped")


def experiments(paper_config: Any, quick: bool = False) -> list[tuple[tuple[str, int], dict[str, Any]]]:
    """Every run: ((variant, rate), configuration)."""
    cfg = load_config(paper_config)
    flows = []
    others = [f for f in cfg["flows"] if f["name"] != HIGH_FLOW]
    for f in cfg["flows"]:
        if f["name"] == HIGH_FLOW:
            flows.append({**f, "priority": 1, "weight": HIGH_SHARE})
        else:
            flows.append({**f, "priority": 0, "weight": (1 - HIGH_SHARE) / len(others)})
    base = with_overrides(cfg, {"flows": flows, "traffic.arrivals": "poisson"})
    if quick:
        base = with_overrides(base, {"traffic.packets": 3000, "measure.window": [200, 2800]})
    rates = RATES_GBPS[::2] + (RATES_GBPS[-1],) if quick else RATES_GBPS
    return [((name, rate), with_overrides(base, {**changes, "traffic.rate_gbps": float(rate)}))
            for name, changes in VARIANTS for rate in rates]


def rows(results: dict[tuple[str, int], dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per variant, rate and class."""
    out = []
    for (variant, rate), s in results.items():
        for c, v in sorted(s["classes"].items()):
            lat, soj = v["latency_us"], v["sojourn_us"]
            out.append({"variant": variant, "offered_gbps": rate, "class": "high" if c == "1" else "low",
                        "share": HIGH_SHARE if c == "1" else 1 - HIGH_SHARE,
                        "throughput_gbps": round(v["throughput_gbps"], 3), "p99_us": lat.get("p99"),
                        "mean_us": lat.get("mean"), "p99_sojourn_us": soj.get("p99"), "dropped": v["dropped_total"]})
    return out


def plot(table: list[dict[str, Any]], out: OutputDir) -> None:
    from nicsim.output import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    styles = {"flexpipe": ("tab:blue", "-"), "flexpipe strict": ("tab:orange", "-"),
              "flexpipe weighted 1:4": ("tab:green", "-"), "panic": ("tab:red", "--")}
    for ax, cls in zip(axes, ("high", "low"), strict=True):
        for variant, (color, ls) in styles.items():
            pts = sorted((r["offered_gbps"], r["p99_sojourn_us"]) for r in table
                         if r["variant"] == variant and r["class"] == cls and r["p99_sojourn_us"] is not None)
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", color=color, ls=ls, label=variant)
        ax.set(xlabel="offered (Gbit/s, Poisson arrivals)", title=f"{cls} class ({'20' if cls == 'high' else '80'} %"
               " of packets)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("p99 sojourn, arrival to sink (µs)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Priority classes in FlexPipe (beyond the paper) and PANIC's PIFO")
    fig.tight_layout()
    out.figure("qos_latency", fig)


def main(out: Any, paper_config: Any, quick: bool = False, executor: str = "local", workers: int | None = None,
         force: bool = False) -> dict[str, Any]:
    from nicsim.sweep import run_many

    console = report_console()
    output = OutputDir(out, force=force)
    output.check()
    runs = experiments(paper_config, quick)
    summaries = run_many([c for _, c in runs], executor=executor, workers=workers, description="QoS experiments")
    table = rows({key: s for (key, _), s in zip(runs, summaries, strict=True)})
    summary = {"qos": table}
    with output as o:
        o.summary(summary)
        o.csv("qos.csv", table, columns=COLUMNS)
        with o.optional(*figures("qos_latency")):
            plot(table, o)
    if ui.shows_tables():
        t = Table(title="Priority classes: p99 sojourn (µs) per class, against the unloaded value")
        for c in ("variant", "class", *(f"{r} Gbit/s" for r in sorted({r['offered_gbps'] for r in table}))):
            t.add_column(c, justify="left" if c in ("variant", "class") else "right")
        for variant, _ in VARIANTS:
            for cls in ("high", "low"):
                vals = {r["offered_gbps"]: r["p99_sojourn_us"] for r in table
                        if r["variant"] == variant and r["class"] == cls}
                t.add_row(variant, cls, *("–" if v is None else f"{v:.2f}" for _, v in sorted(vals.items())))
        console.print(t)
    return summary
