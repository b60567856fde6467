"""Reproduce the FlexPipe paper's evaluation (Zyla et al., 2023, section IV).

Reads like the paper's evaluation section: Table II from Eq. 1, Fig. 3 (throughput of FlexPipe,
PANIC and StaticPipe at 64-128 Gbit/s offered), Fig. 4 (mean latency per flow and size at
90 Gbit/s) and Fig. 5 (latency against the share of recirculated packets at several loads).
Writes DIR/summary.json with exactly the keys table2, throughput, latency and recirculation,
DIR/comparison.csv (paper vs nicsim), and the three figures as PNG (SVG and PDF with `--figures`).
"""

from __future__ import annotations

import copy
from pathlib import Path

from rich.console import Console
from rich.table import Table

from nicsim import ui
from nicsim.config import load_config, offload_units
from nicsim.output import OutputDir, figures
from nicsim.reproduce import report_console
from nicsim.sweep import run_many

PAPER_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "flexpipe_paper.toml"

ARCHS = ("flexpipe", "panic", "staticpipe")
OFFERED_GBPS = (64, 80, 96, 112, 128)
LATENCY_GBPS = 90
LOAD_FRACTIONS = (0.5, 0.7, 0.9)
RECIRC_SHARES = tuple(i / 10 for i in range(11))
# A finer grid around the paper's knee at 70 % load.
KNEE_SHARES = tuple(round(0.325 + i * 0.025, 3) for i in range(7))
LINE_RATE_GBPS = 128.0

# The paper's numbers (section IV and Table II).
PAPER_TABLE2 = {"crc": 8, "firewall": 128, "sha3": 39, "aes": 4, "jpeg": 40, "rss": 3}
PAPER_SPEEDUP_VS_STATIC = {"flow1": 1.6, "flow2": 1.4, "flow3": 1.7, "flow4": 2.9}
PAPER_SPEEDUP_VS_PANIC = {"flow1": 1.6, "flow2": 2.5, "flow3": 1.9, "flow4": 1.3}
PAPER_SPREAD_US = {"panic": 6.605, "staticpipe": 1.422, "flexpipe": 1.404}
PAPER_PANIC_PEAK_GBPS = 94.0
PAPER_KNEE_AT_70 = 0.43

# Fig. 5: each flow's chain reordered so that it needs exactly one extra pass through the
# physical order crc → firewall → sha3 → aes → jpeg → rss (see docs/model-assumptions.md).
RECIRC_CHAINS = {
    "flow1": ["sha3", "aes", "rss", "crc", "firewall"],
    "flow2": ["jpeg", "rss", "crc", "sha3"],
    "flow3": ["jpeg", "crc", "aes"],
    "flow4": ["firewall", "crc"],
}


def _with(cfg: dict, **changes) -> dict:
    c = copy.deepcopy(cfg)
    for key, value in changes.items():
        node = c
        *path, last = key.split(".")
        for p in path:
            node = node.setdefault(p, {})
        node[last] = value
    return c


def _recirc_mix(cfg: dict, share: float) -> dict:
    """The paper's four flows, plus their recirculating variants carrying `share` of the packets."""
    c = copy.deepcopy(cfg)
    flows = []
    for f in cfg["flows"]:
        flows.append({**f, "weight": (1.0 - share) / len(cfg["flows"])})
        flows.append({**f, "name": f["name"] + "r", "chain": RECIRC_CHAINS[f["name"]],
                      "dport": f["dport"] + 100, "weight": share / len(cfg["flows"])})
    c["flows"] = [f for f in flows if f["weight"] > 0]
    return c


def experiments(quick: bool = False) -> tuple[dict, list[tuple[str, dict]]]:
    """The paper's configuration and every run of the reproduction, labelled."""
    cfg = load_config(PAPER_CONFIG)
    if quick:
        cfg = _with(cfg, **{"traffic.packets": 3000, "measure.window": [200, 2800]})
    runs: list[tuple[str, dict]] = []
    for arch in ARCHS:
        for rate in OFFERED_GBPS:
            runs.append((f"fig3/{arch}/{rate}", _with(cfg, arch=arch, **{"traffic.rate_gbps": float(rate)})))
        runs.append((f"fig4/{arch}", _with(cfg, arch=arch, **{"traffic.rate_gbps": float(LATENCY_GBPS)})))
    shares = RECIRC_SHARES[::2] if quick else RECIRC_SHARES
    for arch in ("flexpipe", "panic"):
        for load in LOAD_FRACTIONS:
            extra = KNEE_SHARES if load == 0.7 and not quick else ()
            for share in sorted(set(shares) | set(extra)):
                c = _with(_recirc_mix(cfg, share), arch=arch, **{"traffic.rate_gbps": load * LINE_RATE_GBPS})
                runs.append((f"fig5/{arch}/{load}/{share}", c))
    return cfg, runs


def _flow_means(summary: dict) -> dict[str, float]:
    return {f: v["latency_us"]["mean"] for f, v in summary["per_flow"].items() if v["latency_us"]["packets"]}


def analyse(cfg: dict, results: dict[str, dict]) -> dict:
    """Assemble summary.json (exactly table2, throughput, latency, recirculation)."""
    table2 = {row["name"]: {k: row[k] for k in ("width_bits", "clock_mhz", "delay_cycles")} | {"units": row["units"]}
              for row in offload_units(cfg)}
    throughput = [{"arch": a, "offered_gbps": r, "achieved_gbps": results[f"fig3/{a}/{r}"]["throughput_gbps"]}
                  for a in ARCHS for r in OFFERED_GBPS]
    latency = []
    for a in ARCHS:
        for flow, fs in results[f"fig4/{a}"]["per_flow"].items():
            for size, st in sorted(fs["per_size"].items(), key=lambda kv: int(kv[0])):
                latency.append({"arch": a, "offered_gbps": LATENCY_GBPS, "flow": flow, "size_bytes": int(size),
                                "mean_us": st["mean"], "min_us": st["min"], "max_us": st["max"]})
    recirculation = []
    for label, s in results.items():
        if not label.startswith("fig5/"):
            continue
        _, arch, load, share = label.split("/")
        measured = s["recirculation"]["fraction"]
        recirculation.append({"arch": arch, "load_fraction": float(load),
                              "recirc_fraction": measured if arch == "flexpipe" else float(share),
                              "mean_latency_us": s["latency_us"].get("mean", 0.0),
                              "achieved_gbps": s["throughput_gbps"]})
    return {"table2": table2, "throughput": throughput, "latency": latency, "recirculation": recirculation}


def knee(summary: dict, arch: str, load: float, tolerance: float = 0.98) -> float:
    """The largest recirculated share at which `arch` still delivers `tolerance` of the offered rate."""
    offered = load * LINE_RATE_GBPS
    ok = [r["recirc_fraction"] for r in summary["recirculation"]
          if r["arch"] == arch and r["load_fraction"] == load and r["achieved_gbps"] >= tolerance * offered]
    return max(ok, default=0.0)


def comparison(summary: dict, results: dict[str, dict]) -> list[dict]:
    """Rows of paper vs nicsim."""
    rows = []
    for name, paper_units in PAPER_TABLE2.items():
        rows.append({"figure": "Table II", "quantity": f"{name} units", "paper": paper_units,
                     "nicsim": summary["table2"].get(name, {}).get("units")})
    for t in summary["throughput"]:
        expected = t["offered_gbps"] if t["arch"] != "panic" else min(t["offered_gbps"], PAPER_PANIC_PEAK_GBPS)
        rows.append({"figure": "Fig. 3", "quantity": f"{t['arch']} @ {t['offered_gbps']} Gbit/s (Gbit/s)",
                     "paper": expected, "nicsim": round(t["achieved_gbps"], 2)})
    means = {a: _flow_means(results[f"fig4/{a}"]) for a in ARCHS}
    for other, paper in (("staticpipe", PAPER_SPEEDUP_VS_STATIC), ("panic", PAPER_SPEEDUP_VS_PANIC)):
        sims = {f: means[other][f] / means["flexpipe"][f] for f in paper}
        for f in paper:
            rows.append({"figure": "Fig. 4", "quantity": f"speed-up vs {other}, {f}", "paper": paper[f], "nicsim": round(sims[f], 2)})
        rows.append({"figure": "Fig. 4", "quantity": f"average speed-up vs {other}",
                     "paper": round(sum(paper.values()) / len(paper), 2), "nicsim": round(sum(sims.values()) / len(sims), 2)})
    for a in ARCHS:
        spreads = [e["max_us"] - e["min_us"] for e in summary["latency"] if e["arch"] == a]
        rows.append({"figure": "Fig. 4", "quantity": f"{a} mean max-min latency (µs)", "paper": PAPER_SPREAD_US[a],
                     "nicsim": round(sum(spreads) / len(spreads), 3)})
    for load in LOAD_FRACTIONS:
        rows.append({"figure": "Fig. 5", "quantity": f"flexpipe recirculation knee at {int(load * 100)} % load",
                     "paper": PAPER_KNEE_AT_70 if load == 0.7 else None, "nicsim": round(knee(summary, "flexpipe", load), 3)})
    return rows


def plot(summary: dict, out: OutputDir) -> None:
    import matplotlib.ticker

    from nicsim.output import pyplot

    plt = pyplot()

    colors = {"flexpipe": "tab:blue", "panic": "tab:red", "staticpipe": "tab:green"}
    fig, ax = plt.subplots(figsize=(6, 4))
    for a in ARCHS:
        pts = [(t["offered_gbps"], t["achieved_gbps"]) for t in summary["throughput"] if t["arch"] == a]
        ax.plot(*zip(*pts), marker="o", label=a, color=colors[a])
    ax.plot(OFFERED_GBPS, OFFERED_GBPS, ls=":", color="grey", label="offered")
    ax.set(xlabel="offered (Gbit/s)", ylabel="achieved (Gbit/s)", title="Fig. 3: throughput")
    ax.legend()
    ax.grid(alpha=0.3)
    out.figure("fig3_throughput", fig)

    flows = sorted({e["flow"] for e in summary["latency"]})
    sizes = sorted({e["size_bytes"] for e in summary["latency"]})
    fig, axes = plt.subplots(1, len(flows), figsize=(4 * len(flows), 3.6), sharey=True)
    width = 0.27
    for ax, flow in zip(axes, flows):
        for k, a in enumerate(ARCHS):
            vals = {e["size_bytes"]: e["mean_us"] for e in summary["latency"] if e["arch"] == a and e["flow"] == flow}
            ax.bar([i + (k - 1) * width for i in range(len(sizes))], [vals.get(s, 0) for s in sizes], width,
                   label=a, color=colors[a])
        ax.set_xticks(range(len(sizes)), [str(s) for s in sizes], rotation=45)
        ax.set(title=flow, xlabel="packet size (B)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel(f"mean latency (µs) at {LATENCY_GBPS} Gbit/s")
    axes[0].legend()
    fig.suptitle("Fig. 4: mean latency per flow and size")
    out.figure("fig4_latency", fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for a, style in (("flexpipe", "-"), ("panic", "--")):
        for load in LOAD_FRACTIONS:
            pts = sorted((r["recirc_fraction"], r["mean_latency_us"]) for r in summary["recirculation"]
                         if r["arch"] == a and r["load_fraction"] == load)
            ax.plot(*zip(*pts), ls=style, marker=".", label=f"{a} {int(load * 100)} %")
    ax.set(xlabel="share of recirculated packets", ylabel="mean latency (µs)", yscale="log",
           title="Fig. 5: recirculation")
    ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    out.figure("fig5_recirculation", fig)

    # One picture of the three figures, for the README.
    fig, (a3, a4, a5) = plt.subplots(1, 3, figsize=(15, 4))
    for a in ARCHS:
        pts = [(t["offered_gbps"], t["achieved_gbps"]) for t in summary["throughput"] if t["arch"] == a]
        a3.plot(*zip(*pts), marker="o", label=a, color=colors[a])
    a3.set(xlabel="offered (Gbit/s)", ylabel="achieved (Gbit/s)", title="Fig. 3: throughput")
    a3.legend()
    for k, a in enumerate(ARCHS):
        means = []
        for flow in flows:
            es = [e for e in summary["latency"] if e["arch"] == a and e["flow"] == flow]
            means.append(sum(e["mean_us"] for e in es) / len(es))
        a4.bar([i + (k - 1) * width for i in range(len(flows))], means, width, label=a, color=colors[a])
    a4.set_xticks(range(len(flows)), flows)
    a4.set(ylabel="mean latency over sizes (µs)", title=f"Fig. 4: latency at {LATENCY_GBPS} Gbit/s")
    for a, style in (("flexpipe", "-"), ("panic", "--")):
        pts = sorted((r["recirc_fraction"], r["mean_latency_us"]) for r in summary["recirculation"]
                     if r["arch"] == a and r["load_fraction"] == 0.7)
        a5.plot(*zip(*pts), ls=style, marker=".", label=a, color=colors[a])
    a5.axvline(PAPER_KNEE_AT_70, color="grey", ls=":", label="paper's knee (43 %)")
    a5.set(xlabel="share of recirculated packets", ylabel="mean latency (µs)",
           title="Fig. 5: recirculation at 70 % load")
    a5.legend()
    for ax in (a3, a4, a5):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out.figure("overview", fig)


def print_comparison(rows: list[dict], console: Console) -> None:
    table = Table(title="FlexPipe paper vs nicsim")
    for col in ("figure", "quantity", "paper", "nicsim"):
        table.add_column(col, justify="right" if col in ("paper", "nicsim") else "left")
    for r in rows:
        table.add_row(r["figure"], r["quantity"], "" if r["paper"] is None else str(r["paper"]), str(r["nicsim"]))
    console.print(table)


def main(out: Path, quick: bool = False, executor: str = "local", workers: int | None = None,
         force: bool = False) -> dict:
    console = report_console()
    output = OutputDir(out, force=force)
    output.check()  # before the experiments, not after them
    cfg, runs = experiments(quick)
    summaries = run_many([c for _, c in runs], executor=executor, workers=workers, description="FlexPipe experiments")
    results = {label: s for (label, _), s in zip(runs, summaries)}
    summary = analyse(cfg, results)
    rows = comparison(summary, results)
    with output as o:
        o.summary(summary)
        o.csv("comparison.csv", rows)
        with o.optional(*figures("fig3_throughput", "fig4_latency", "fig5_recirculation", "overview")):
            plot(summary, o)
    if ui.shows_tables():
        print_comparison(rows, console)
    return summary
