"""Reproduce the XDP throughput analyzer's evaluation (Krude et al., CoNEXT 2021, section 6).

Reads like the paper's evaluation: Tables 2 and 3 (naive bound, SSP, improvement, bottleneck,
time to each) for the program suite on the `nfp` target, beside the paper's figures for the
same program types (python/nicsim/xdp/suite.py); the same analyses on `x86-jit` (this host's
kernel JIT, measured by `nicsim xdp calibrate`, which runs first if the target is missing);
Fig. 7 (the guarantee against analysis time) and Fig. 8 (Count-Min's packet rate against its
number of stages, with the MAC limit). The paper's qualitative claims are checked one by one.
With x86-jit, the accuracy study of the paper's §6.1: the example packets of each program's K
slowest satisfiable paths measured in the kernel against their x86-jit estimates
(`nicsim xdp validate --paths K`; K = 10, or 3 with --quick).

Writes DIR/summary.json (keys: table, count_min, fig7, checks, settings, and accuracy with
x86-jit), DIR/table.csv (one row per program and target, the paper's figures beside nicsim's),
DIR/count_min.csv, DIR/accuracy.csv (one row per measured path), and the figures
fig7_bound_vs_time, fig8_count_min and accuracy (PNG; SVG and PDF with `--figures`). The analyses run one at a time: their
times are part of the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from nicsim import ui
from nicsim.errors import InputError
from nicsim.output import OutputDir, figures
from nicsim.reproduce import report_console
from nicsim.xdp.suite import FIG7, FIG8_STAGES, SUITE, explosion_search_s, object_path

TARGETS = ("nfp", "x86-jit")
#: Within this share, a guarantee "equals" the naive bound (Table 2's equal rows differ by < 0.5 %).
EQUAL = 0.01


def _row(p: Any, target: str, s: dict[str, Any]) -> dict[str, Any]:
    n, g = s["naive"], s["guarantee"]
    gain = (g["bps"] / n["bps"] - 1) * 100 if n["bps"] > 0 else None
    row = {
        "program": p.name, "label": p.label, "target": target,
        "naive_gbps": round(n["bps"] / 1e9, 3), "ssp_gbps": round(g["bps"] / 1e9, 3),
        "improvement_pct": None if gain is None else round(gain, 1),
        "naive_bottleneck": n["bottleneck"], "bottleneck": g["bottleneck"], "status": g["status"],
        "min_packet_bytes": g["min_packet_bytes"],
        "naive_s": round(s["trace"][0]["seconds"], 3), "ssp_s": round(s["seconds"], 3),
        "paths_enumerated": s["paths_enumerated"], "paths_unsat": s["paths_unsat"],
    }
    if target == "nfp":
        paper_gain = (p.paper_ssp_gbps / p.paper_naive_gbps - 1) * 100 if p.paper_ssp_gbps else None
        row.update(paper_naive_gbps=p.paper_naive_gbps, paper_ssp_gbps=p.paper_ssp_gbps,
                   paper_improvement_pct=None if paper_gain is None else round(paper_gain, 1),
                   paper_bottleneck=p.paper_bottleneck, paper_naive_s=p.paper_naive_s, paper_ssp_s=p.paper_ssp_s,
                   # Issue 3's speed target: a tenth of the paper's time to the SSP.
                   ssp_s_target=None if p.paper_ssp_s is None else round(p.paper_ssp_s / 10, 3))
    return row


def checks(table: list[dict[str, Any]], count_min: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paper's qualitative results (§6.1, §6.4), each checked on the `nfp` rows."""
    nfp = {r["program"]: r for r in table if r["target"] == "nfp"}
    out = []

    def check(claim: str, ok: bool, detail: str) -> None:
        out.append({"claim": claim, "holds": bool(ok), "verdict": "as the paper" if ok else "not as the paper",
                    "detail": detail})

    def gain(name: str) -> float:
        return nfp[name]["ssp_gbps"] / nfp[name]["naive_gbps"] - 1

    improves = ("parser", "quic_lb_v6", "dns_cache")
    check("SSP improves on naive where infeasible slow paths exist (parser, QUIC v6, DNS cache)",
          all(nfp[n]["status"] == "ssp" and gain(n) > EQUAL for n in improves),
          ", ".join(f"{n} {gain(n) * 100:+.1f} %" for n in improves))
    equal = ("quic_lb_v4", "count_min_5", "count_min_10", "count_min_15", "count_min_20")
    check("SSP equals naive where none exist (QUIC v4, Count-Min)",
          all(nfp[n]["status"] == "ssp" and abs(gain(n)) <= EQUAL for n in equal),
          ", ".join(f"{n} {gain(n) * 100:+.1f} %" for n in equal))
    dram = ("dns_cache", "count_min_10", "count_min_15", "count_min_20")
    check("DNS cache and Count-Min with >= 10 stages are DRAM-bound",
          all(nfp[n]["bottleneck"] == "dram" for n in dram),
          ", ".join(f"{n} {nfp[n]['bottleneck']}" for n in dram))
    seq = [r["bottleneck"] for r in count_min]
    order = {"mac": 0, "cores": 1, "dram": 2}
    monotone = all(order[a] <= order[b] for a, b in zip(seq, seq[1:]))
    check("Count-Min goes from ideal (MAC) to core-bound to DRAM-bound as N grows",
          monotone and {"mac", "cores", "dram"} <= set(seq),
          " ".join(f"{r['stages']}:{r['bottleneck']}" for r in count_min))
    check("every suite program but path explosion ends with an SSP",
          all(r["status"] == "ssp" for r in table if r["program"] != "path_explosion"),
          "; ".join(f"{r['program']} on {r['target']}: {r['status']}" for r in table if r["status"] != "ssp"))
    return out


#: The accuracy study: paths per program and fresh kernel runs per path (--quick, full).
ACCURACY_PATHS = (3, 10)
ACCURACY_RUNS = (51, 201)


def accuracy(timeout_s: float, explosion_timeout_s: float, quick: bool) -> dict[str, Any]:
    """The accuracy study (§6.1) on x86-jit: each suite program's K slowest satisfiable paths
    (a packet-rate analysis), their example packets measured in the kernel from a fresh state."""
    import os

    from nicsim.xdp.analyze import analyze, read_object
    from nicsim.xdp.validate import PATHS_METHOD, error_distribution, machine_load, measure_overhead, measure_paths

    k, runs = ACCURACY_PATHS[not quick], ACCURACY_RUNS[not quick]
    load_before = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    per_program = []
    with ui.Progress("accuracy study", total=len(SUITE), unit="programs", transient=True) as bar:
        for p in SUITE:
            bar.update(detail=f"{p.name}: {k} slowest paths on x86-jit")
            t = explosion_timeout_s if p.name == "path_explosion" else timeout_s
            obj = object_path(p.name)
            s = analyze(obj, target="x86-jit", rate="packet", timeout_s=t, paths=k)
            found = s.get("slowest_paths") or []
            o = s["object"]
            bar.update(detail=f"{p.name}: measuring {len(found)} paths")
            prog = measure_paths(read_object(obj), o.get("section"), o.get("program"), found, runs)
            rows += [{"program": p.name, **r} for r in prog]
            per_program.append({"program": p.name, "found": len(found), "stopped": s.get("slowest_paths_stopped"),
                                "errors": error_distribution(prog)})
            bar.advance()
    return {"paths_per_program": k, "runs_per_path": runs, "method": PATHS_METHOD, "rows": rows,
            "programs": per_program, "errors": error_distribution(rows), "overhead": measure_overhead(runs),
            "load": machine_load(load_before, os.getloadavg()[0])}


def run(timeout_s: float = 60.0, explosion_timeout_s: float = 60.0, targets: tuple[str, ...] = TARGETS,
        console: Console | None = None, quick: bool = False) -> dict[str, Any]:
    """Every analysis of the reproduction, one at a time; the summary (not written)."""
    from nicsim.xdp.analyze import analyze, load_target

    console = console or ui.PipeConsole(stderr=True)
    for p in SUITE:  # fail before starting anything
        object_path(p.name)
    for n in FIG8_STAGES:
        object_path(f"count_min_{n}")
    if "x86-jit" in targets:
        try:
            load_target("x86-jit")
        except InputError:
            from nicsim.xdp.calibrate import calibrate

            console.print("x86-jit is not calibrated on this machine: running `nicsim xdp calibrate` first (~40 s)")
            calibrate()
    jobs: list[tuple[str, Any, str]] = [(t, p, "table") for t in targets for p in SUITE]
    jobs += [("nfp", n, "fig8") for n in FIG8_STAGES]
    table: list[dict[str, Any]] = []
    count_min: list[dict[str, Any]] = []
    traces: dict[str, list[dict[str, Any]]] = {}
    with ui.Progress("analysing", total=len(jobs), unit="analyses", transient=True) as bar:
        for target, p, what in jobs:
            if what == "table":
                bar.update(detail=f"{p.name} on {target}")
                t = explosion_timeout_s if p.name == "path_explosion" else timeout_s
                s = analyze(object_path(p.name), target=target, rate="bit", timeout_s=t, mac_limit=False)
                table.append(_row(p, target, s))
                if target == "nfp" and p.name in FIG7:
                    traces[p.name] = s["trace"]
            else:
                bar.update(detail=f"count_min_{p} on nfp (Fig. 8)")
                s = analyze(object_path(f"count_min_{p}"), target="nfp", rate="packet", timeout_s=timeout_s,
                            mac_limit=True)
                g = s["guarantee"]
                count_min.append({"stages": p, "mpps": round(g["pps"] / 1e6, 3), "naive_mpps": round(s["naive"]["pps"] / 1e6, 3),
                                  "bottleneck": g["bottleneck"], "status": g["status"]})
            bar.advance()
    out = {"table": table, "count_min": count_min, "fig7": traces, "checks": checks(table, count_min),
           "settings": {"rate": "bit (tables, Fig. 7), packet (Fig. 8, accuracy)",
                        "mac_limit": "off (tables), on (Fig. 8)", "timeout_s": timeout_s,
                        "path_explosion_timeout_s": explosion_timeout_s, "targets": list(targets)}}
    if "x86-jit" in targets:
        out["accuracy"] = accuracy(timeout_s, explosion_timeout_s, quick)
    return out


def plot(summary: dict[str, Any], out: OutputDir) -> None:
    from nicsim.output import pyplot

    plt = pyplot()
    import matplotlib.ticker

    by_name = {p.name: p for p in SUITE}
    fig, axes = plt.subplots(1, len(FIG7), figsize=(4 * len(FIG7), 3.4))
    for ax, (tag, name) in zip(axes, zip("abcd", FIG7)):
        tr = summary["fig7"].get(name)
        if not tr:
            continue
        end = next(r["ssp_s"] for r in summary["table"] if r["program"] == name and r["target"] == "nfp")
        xs = [max(e["seconds"], 1e-3) for e in tr] + [max(end, tr[-1]["seconds"], 1e-3)]
        ys = [e["bps"] / 1e9 for e in tr] + [tr[-1]["bps"] / 1e9]
        ax.step(xs, ys, where="post", color="tab:blue", label="nicsim")
        p = by_name[name]
        if p.paper_naive_gbps:
            ax.axhline(p.paper_naive_gbps, color="grey", ls=":", label="paper naive")
        if p.paper_ssp_gbps:
            ax.axhline(p.paper_ssp_gbps, color="grey", ls="--", label="paper SSP")
        ax.set(xscale="log", xlabel="analysis time (s)", ylabel="throughput guarantee (Gbit/s)",
               title=f"({tag}) {p.label}")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Fig. 7: the guarantee improves until the SSP is found (or the analysis stops)")
    fig.tight_layout()
    out.figure("fig7_bound_vs_time", fig)
    plot_count_min(summary["count_min"], out)
    if "accuracy" in summary:
        from nicsim.xdp.validate import plot_paths

        a = summary["accuracy"]
        plot_paths(out, a["rows"], f"accuracy on x86-jit: {a['paths_per_program']} slowest paths per program",
                   "accuracy")


def plot_count_min(cm: list[dict[str, Any]], out: OutputDir,
                   title: str = "Fig. 8: Count-Min on nfp (with the MAC limit)") -> None:
    """Fig. 8 (fig8_count_min): the guaranteed packet rate against Count-Min's stages."""
    from nicsim.output import pyplot

    plt = pyplot()
    import matplotlib.ticker

    colors = {"mac": "tab:green", "cores": "tab:blue", "dram": "tab:red"}
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.plot([r["stages"] for r in cm], [r["mpps"] for r in cm], color="black", lw=1, zorder=1)
    for b, c in colors.items():
        pts = [(r["stages"], r["mpps"]) for r in cm if r["bottleneck"] == b]
        if pts:
            ax.scatter(*zip(*pts), color=c, zorder=2, label=f"nicsim: {'MAC (ideal)' if b == 'mac' else b}-bound")
    paper = [(int(p.name.rsplit("_", 1)[1]), p.paper_ssp_gbps) for p in SUITE if p.name.startswith("count_min_")]
    # The paper's Table 2 gives bit rates at 60 B packets: as packet rates, for comparison.
    ax.scatter([n for n, _ in paper], [g * 1e9 / (8 * 60) / 1e6 for _, g in paper], marker="x", color="grey",
               zorder=3, label="paper (Table 2, at 60 B)")
    # The paper's §6.4 regions: ideal up to 2 hash functions, core-bound up to 5, DRAM beyond.
    for lo, hi, c, text in ((0.5, 2.5, "tab:green", "paper:\nideal"), (2.5, 5.5, "tab:blue", "paper:\ncores"),
                            (5.5, 20.5, "tab:red", "paper:\nDRAM")):
        ax.axvspan(lo, hi, color=c, alpha=0.07, lw=0)
        ax.text((lo + hi) / 2, 2, text, ha="center", fontsize=8, color=c)
    ax.xaxis.set_major_locator(matplotlib.ticker.MultipleLocator(2))
    ax.set(xlim=(0.5, 20.5))
    ax.set(xlabel="Count-Min stages (hash functions)", ylabel="guaranteed packet rate (Mpps)", ylim=(0, None),
           title=title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    out.figure("fig8_count_min", fig)


def print_summary(summary: dict[str, Any], console: Console) -> None:
    def f(v: Any, fmt: str = "{:,.2f}") -> str:
        return "" if v is None else fmt.format(v)

    t = Table(title="Tables 2 and 3 on nfp (bit rate in Gbit/s, no MAC limit): nicsim beside the paper",
              box=box.SIMPLE_HEAD, padding=(0, 1))
    for col in ("program", "naive", "paper", "SSP", "paper", "gain", "paper", "bound", "paper", "time", "paper"):
        t.add_column(col, justify="left" if col == "program" else "right", no_wrap=True)
    for r in summary["table"]:
        if r["target"] != "nfp":
            continue
        ssp = f(r["ssp_gbps"]) + ("" if r["status"] == "ssp" else f" ({r['status']})")
        t.add_row(r["program"], f(r["naive_gbps"]), f(r["paper_naive_gbps"]), ssp, f(r["paper_ssp_gbps"]),
                  f(r["improvement_pct"], "{:+.0f}%"), f(r["paper_improvement_pct"], "{:+.0f}%"),
                  r["bottleneck"], r["paper_bottleneck"] or "", f(r["ssp_s"], "{:.2f}s"), f(r["paper_ssp_s"], "{:g}s"))
    console.print(t)
    x86 = [r for r in summary["table"] if r["target"] == "x86-jit"]
    if x86:
        t = Table(title="The same on x86-jit (this host's kernel JIT, one core)", box=box.SIMPLE_HEAD, padding=(0, 1))
        for col in ("program", "naive Gbit/s", "SSP Gbit/s", "gain", "bound", "time to SSP"):
            t.add_column(col, justify="left" if col == "program" else "right", no_wrap=True)
        for r in x86:
            t.add_row(r["program"], f(r["naive_gbps"], "{:,.3f}"), f(r["ssp_gbps"], "{:,.3f}") +
                      ("" if r["status"] == "ssp" else f" ({r['status']})"),
                      f(r["improvement_pct"], "{:+.0f} %"), r["bottleneck"], f(r["ssp_s"], "{:.2f} s"))
        console.print(t)
    console.print("Fig. 8, Count-Min on nfp: " + "  ".join(f"{r['stages']}:{r['mpps']:.1f} Mpps ({r['bottleneck']})"
                                                          for r in summary["count_min"]))
    if "accuracy" in summary:
        from nicsim.xdp.cli import show_paths

        a = summary["accuracy"]
        show_paths(console, a, f"Accuracy (§6.1) on x86-jit: the {a['paths_per_program']} slowest satisfiable paths "
                   f"of each program, {a['runs_per_path']} fresh kernel runs each")
        e = a["errors"]
        if e.get("max_pct") is not None:
            from nicsim.xdp.validate import TOLERANCE

            over = e["max_over_pct"]
            console.print(f"accuracy (estimated rate / measured rate - 1): median {e['median_pct']:+.1f} %, at most "
                          f"{over:.1f} % over (the estimate promising more than the kernel did): "
                          f"{'within' if over <= TOLERANCE * 100 else 'OUTSIDE'} the +{TOLERANCE:.0%} a guarantee "
                          f"allows (`nicsim xdp validate`); {e['within_10_pct']:.0%} of {e['paths']} paths within ±10 %")
        from nicsim.xdp.validate import load_warning

        if warning := load_warning(a["load"], "measuring the paths"):
            console.print(f"[yellow]warning:[/yellow] {warning}")
    for c in summary["checks"]:
        mark = f"[green]{c['verdict']}[/green]" if c["holds"] else f"[red]{c['verdict']}[/red]"
        console.print(f"{mark}  {c['claim']}: {c['detail']}")


def main(out: Path, quick: bool = False, timeout_s: float = 60.0, targets: tuple[str, ...] = TARGETS,
         force: bool = False) -> dict[str, Any]:
    console = report_console()
    from nicsim.xdp.calibrate import default_path
    from nicsim.xdp.suite import objects_dir

    output = OutputDir(out, inputs=[objects_dir(), default_path()], force=force)
    output.check()  # before the analyses, not after them
    summary = run(timeout_s=timeout_s, explosion_timeout_s=explosion_search_s(quick, timeout_s), targets=targets,
                  quick=quick)
    with output as o:
        o.summary(summary)
        o.csv("table.csv", summary["table"])
        o.csv("count_min.csv", summary["count_min"])
        if "accuracy" in summary:
            from nicsim.xdp.validate import PATHS_COLUMNS

            o.csv("accuracy.csv", summary["accuracy"]["rows"], columns=["program", *PATHS_COLUMNS])
        with o.optional(*figures("fig7_bound_vs_time", "fig8_count_min")):
            plot(summary, o)
    if ui.shows_tables():
        print_summary(summary, console)
    return summary
