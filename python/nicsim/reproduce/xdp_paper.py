"""`nicsim reproduce xdp --paper-objects DIR`: the XDP paper's own objects (its artifacts'
data-paper/programs/*.bpf.o) analysed on the `nfp` target beside its Tables 2 and 3.

The paper's figures are data carried in the package (nicsim/xdp/paper_table2.csv, the published
Table 2 and Table 3, source cited in the file). Each object is analysed at bit rate without the
MAC limit (the paper's rates are at 50 cores without it, see nicsim.xdp.suite), on the sweep pool;
Count-Min 1-20 are also analysed at packet rate with the MAC limit for Fig. 8. An object with no
row in the table is analysed and listed without paper figures.

Bands, each checked per object (True: in, False: out, None: no paper figure):
- naive bound within +-25 % of the paper's naive bound;
- the guarantee between 90 % and 102 % of the slowest rate measured on the hardware;
- SSP improving on naive (by more than 1 %) exactly where the paper's does;
- time to the SSP at most a tenth of Table 3's.

With `nfp_pred` (the paper's own estimator, built by the user: nicsim.xdp.nfp_pred), each
object with a Table 2 row is also analysed by it, after nicsim's analyses and one at a time, and
its row gets `nfp_pred_wall_s` (the command's wall time), `nfp_pred_ssp_s` (the time it reports
for its first satisfiable path), `nfp_pred_status` and `speedup` (nfp-pred's wall over nicsim's
analysis time, `ssp_s`).

Writes DIR/summary.json (keys: table, count_min, bands, settings), DIR/paper_objects.csv,
DIR/count_min.csv, and the figures paper_objects and fig8_count_min (PNG; SVG and PDF with `--figures`).
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from nicsim.errors import InputError
from nicsim.output import OutputDir, figures
from nicsim.reproduce import report_console
from nicsim.xdp.suite import explosion_search_s

TABLE_CSV = Path(__file__).resolve().parents[1] / "xdp" / "paper_table2.csv"
EQUAL = 0.01  # within this share, a guarantee equals the naive bound (as in nicsim.reproduce.xdp)
NAIVE_BAND = 0.25
GUARANTEE_BAND = (0.90, 1.02)
TIME_SHARE = 0.1
QUICK_STAGES = (1, 2, 5, 10, 20)
_CM = re.compile(r"xdp-count-min\.(\d+)\.bpf\.o$")


def paper_table() -> dict[str, dict[str, Any]]:
    """The paper's Table 2 and 3 figures by object file name (None: not given)."""
    lines = [ln for ln in TABLE_CSV.read_text().splitlines() if ln and not ln.startswith("#")]
    out = {}
    for r in csv.DictReader(lines):
        out[r["object"]] = {k: (r[k] if k in ("program", "object") else (float(r[k]) if r[k] else None)) for k in r}
    return out


def objects(folder: Path) -> list[Path]:
    """The .bpf.o objects in `folder`: the table's in its order, then the others by name
    (Count-Min by its number of stages)."""
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder (--paper-objects takes the artifacts' data-paper/programs/)")
    objs = [p for p in folder.iterdir() if p.name.endswith(".bpf.o") and p.is_file()]
    for p in objs:  # a name that is not UTF-8 cannot go into the summary or the tables
        try:
            p.name.encode("utf-8")
        except UnicodeEncodeError:
            raw = os.fsencode(p.name)
            raise InputError(f"{folder}: the object name {raw[:80]!r} is not UTF-8; rename it (nicsim takes UTF-8 "
                             "file names)") from None
    if not objs:
        raise InputError(f"{folder}: no .bpf.o objects in the folder (--paper-objects takes the artifacts' "
                         "data-paper/programs/)")
    order = {name: i for i, name in enumerate(paper_table())}

    def key(p: Path) -> tuple[int, int, str]:
        m = _CM.search(p.name)
        return (order.get(p.name, len(order)), int(m.group(1)) if m else 0, p.name)

    return sorted(objs, key=key)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def row(obj: Path, s: dict[str, Any], paper: dict[str, Any] | None) -> dict[str, Any]:
    n, g = s["naive"]["bps"] / 1e9, s["guarantee"]["bps"] / 1e9
    p = paper or {}
    pn, ps, meas, pt = p.get("naive_gbps"), p.get("ssp_gbps"), p.get("measured_slowest_gbps"), p.get("paper_ssp_seconds")
    naive_r, g_meas = _ratio(n, pn), _ratio(g, meas)
    improves = g > n * (1 + EQUAL)
    paper_improves = None if pn is None or ps is None else ps > pn * (1 + EQUAL)
    seconds = s["seconds"]
    return {
        "object": obj.name, "program": p.get("program", ""),
        "naive_gbps": round(n, 3), "paper_naive_gbps": pn,
        "naive_pct_of_paper": None if naive_r is None else round(naive_r * 100, 1),
        "ssp_gbps": round(g, 3), "status": s["guarantee"]["status"], "bottleneck": s["guarantee"]["bottleneck"],
        "paper_ssp_gbps": ps, "measured_slowest_gbps": meas,
        "guarantee_pct_of_measured": None if g_meas is None else round(g_meas * 100, 1),
        "improves": improves, "paper_improves": paper_improves,
        "naive_s": round(s["trace"][0]["seconds"], 3), "ssp_s": round(seconds, 3),
        "paper_naive_s": p.get("paper_naive_seconds"), "paper_ssp_s": pt,
        "naive_in_band": None if naive_r is None else abs(naive_r - 1) <= NAIVE_BAND,
        "guarantee_in_band": None if g_meas is None else GUARANTEE_BAND[0] <= g_meas <= GUARANTEE_BAND[1],
        "improvement_in_band": None if paper_improves is None else (improves == paper_improves and s["guarantee"]["status"] == "ssp"),
        "time_in_band": None if pt is None else (s["guarantee"]["status"] == "ssp" and seconds <= pt * TIME_SHARE),
    }


BANDS = ("naive_in_band", "guarantee_in_band", "improvement_in_band", "time_in_band")


def bands(table: list[dict[str, Any]]) -> dict[str, Any]:
    """Per band: the objects in it, out of it, and those without a paper figure to check."""
    return {b: {"in": [r["object"] for r in table if r[b] is True], "out": [r["object"] for r in table if r[b] is False],
                "unchecked": [r["object"] for r in table if r[b] is None]} for b in BANDS}


def run(folder: Path, out: OutputDir | None = None, quick: bool = False, timeout_s: float = 60.0,
        explosion_timeout_s: float = 60.0, workers: int | None = None, executor: str = "local",
        nfp_pred: Path | None = None, nfp_pred_timeout_s: float = 600.0) -> dict[str, Any]:
    from nicsim.errors import WorkerKilled
    from nicsim.sweep import run_tasks, unfinished
    from nicsim.xdp.analyze import analyze_job

    objs = objects(folder)
    papers = paper_table()
    if quick:
        objs = [o for o in objs if o.name in papers]
        if not objs:  # the quick run is of the paper's objects only: say so, not an empty table
            raise InputError(f"{folder}: none of the paper's objects ({', '.join(sorted(papers)[:3])}, ...) is in "
                             "the folder, and --quick analyses only those; run without --quick to analyse the others")
    cm = {int(m.group(1)): o for o in objects(folder) if (m := _CM.search(o.name))}
    stages = [n for n in sorted(cm) if 1 <= n <= 20 and (not quick or n in QUICK_STAGES)]
    jobs = [(os.fspath(o), "nfp", {"rate": "bit", "mac_limit": False,
                                   "timeout_s": explosion_timeout_s if "path-explosion" in o.name else timeout_s})
            for o in objs]
    jobs += [(os.fspath(cm[n]), "nfp", {"rate": "packet", "mac_limit": True, "timeout_s": timeout_s}) for n in stages]
    killed = None
    try:
        results = run_tasks(analyze_job, jobs, executor=executor, workers=workers, description="analysing")
    except WorkerKilled as e:  # keep the analyses that finished (main raises it once they are written)
        killed, results = e, e.results
    done = [(o, row(o, s, papers.get(o.name))) for o, s in zip(objs, results[:len(objs)], strict=True) if s is not None]
    table = [r for _, r in done]
    if nfp_pred is not None:
        from nicsim.xdp import nfp_pred as pred

        for o, r in done:
            if o.name not in papers or "path-explosion" in o.name:
                continue  # (path explosion: the paper's estimator never ends there either)
            p = pred.run(nfp_pred, o, nfp_pred_timeout_s)
            r.update(nfp_pred_wall_s=p["wall_s"], nfp_pred_ssp_s=p["ssp_s"], nfp_pred_status=p["status"],
                     speedup=None if not p["wall_s"] or not r["ssp_s"] else round(p["wall_s"] / r["ssp_s"], 1))
    count_min = [{"stages": n, "object": cm[n].name, "mpps": round(s["guarantee"]["pps"] / 1e6, 3),
                  "naive_mpps": round(s["naive"]["pps"] / 1e6, 3), "bottleneck": s["guarantee"]["bottleneck"],
                  "status": s["guarantee"]["status"]} for n, s in zip(stages, results[len(objs):], strict=True)
                 if s is not None]
    return {**({"unfinished": unfinished(killed), "_killed": killed} if killed else {}),
            "table": table, "count_min": count_min, "bands": bands(table),
            "settings": {"folder": os.fspath(folder), "target": "nfp",
                         "rate": "bit (table), packet (Fig. 8)", "mac_limit": "off (table), on (Fig. 8)",
                         "timeout_s": timeout_s, "path_explosion_timeout_s": explosion_timeout_s, "quick": quick,
                         "nfp_pred": None if nfp_pred is None else os.fspath(nfp_pred),
                         "bands": {"naive": f"within +-{NAIVE_BAND:.0%} of the paper's",
                                   "guarantee": f"{GUARANTEE_BAND[0]:.0%} to {GUARANTEE_BAND[1]:.0%} of measured",
                                   "improvement": "SSP > naive by >1 % exactly where the paper's is",
                                   "time": f"time to SSP <= {TIME_SHARE:g} x Table 3's"}}}


def plot(summary: dict[str, Any], out: OutputDir) -> None:
    from nicsim.output import pyplot
    from nicsim.reproduce.xdp import plot_count_min

    plt = pyplot()
    rows = summary["table"]
    fig, ax = plt.subplots(figsize=(max(6.4, 0.45 * len(rows)), 4.2))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["naive_gbps"] for r in rows], 0.4, color="tab:grey", label="nicsim naive")
    ax.bar([x + 0.2 for x in xs], [r["ssp_gbps"] for r in rows], 0.4, color="tab:blue", label="nicsim SSP")
    for key, marker, color, label in (("paper_naive_gbps", "_", "black", "paper naive"),
                                      ("paper_ssp_gbps", "x", "black", "paper SSP"),
                                      ("measured_slowest_gbps", "o", "tab:red", "measured slowest (hardware)")):
        pts = [(x, r[key]) for x, r in zip(xs, rows) if r[key] is not None]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, color=color, s=60, zorder=3, label=label,
                       facecolors="none" if marker == "o" else None)
    ax.set_xticks(list(xs), [r["object"].removeprefix("xdp-").removesuffix(".bpf.o") for r in rows], rotation=60,
                  ha="right", fontsize=7)
    ax.set(ylabel="Gbit/s (nfp, no MAC limit)", title="The paper's objects on nfp beside Table 2")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    out.figure("paper_objects", fig)
    if summary["count_min"]:
        plot_count_min(summary["count_min"], out, title="Fig. 8: the paper's Count-Min objects on nfp (with the MAC limit)")


def print_summary(summary: dict[str, Any], console: Console) -> None:
    def f(v: Any, fmt: str = "{:,.2f}") -> str:
        return "" if v is None else fmt.format(v)

    def band(v: bool | None) -> str:
        return "" if v is None else ("in" if v else "[red]OUT[/red]")

    t = Table(title="The paper's objects on nfp (Gbit/s, no MAC limit) beside Tables 2 and 3",
              box=box.SIMPLE_HEAD, padding=(0, 1))
    pred = any("nfp_pred_wall_s" in r for r in summary["table"])
    for col in ("object", "naive", "paper", "band", "SSP", "paper", "band", "measured", "% meas", "band", "time",
                "paper", "band", *(("nfp-pred", "x") if pred else ())):
        # bands: naive +-25 %; SSP's gain where the paper's; 75-102 % of measured; time. With nfp-pred: its wall
        # time, and how many times nicsim's analysis time that is.
        t.add_column(col, justify="left" if col == "object" else "right", no_wrap=True)
    for r in summary["table"]:
        ssp = f(r["ssp_gbps"]) + ("" if r["status"] == "ssp" else f" ({r['status']})")
        name = r["object"].removeprefix("xdp-").removesuffix(".bpf.o")
        t.add_row(name, f(r["naive_gbps"]), f(r["paper_naive_gbps"]), band(r["naive_in_band"]), ssp,
                  f(r["paper_ssp_gbps"]), band(r["improvement_in_band"]), f(r["measured_slowest_gbps"]),
                  f(r["guarantee_pct_of_measured"], "{:.1f}%"), band(r["guarantee_in_band"]), f(r["ssp_s"], "{:.2f}s"),
                  f(r["paper_ssp_s"], "{:g}s"), band(r["time_in_band"]),
                  *((_pred_cell(r), f(r.get("speedup"), "{:,.1f}x")) if pred else ()))
    console.print(t)
    if summary["count_min"]:
        console.print("Fig. 8, the paper's Count-Min on nfp: " + "  ".join(
            f"{r['stages']}:{r['mpps']:.1f} Mpps ({r['bottleneck']})" for r in summary["count_min"]))
    for b, v in summary["bands"].items():
        console.print(f"{b}: {len(v['in'])} in, {len(v['out'])} out" + (f" ({', '.join(v['out'])})" if v["out"] else ""))


def _pred_cell(r: dict[str, Any]) -> str:
    if r.get("nfp_pred_wall_s") is None:
        return r.get("nfp_pred_status") or ""
    status = r["nfp_pred_status"]
    return f"{r['nfp_pred_wall_s']:.2f}s" + ("" if status == "done" else f" ({status.split(' (')[0]})")


def main(out: Path, folder: Path, quick: bool = False, timeout_s: float = 60.0, workers: int | None = None,
         executor: str = "local", force: bool = False, nfp_pred: Path | None = None) -> dict[str, Any]:
    from nicsim import ui
    from nicsim.xdp.analyze import target_file

    console = report_console()
    objs = objects(folder)  # a missing or empty folder fails first
    if nfp_pred is not None and not (nfp_pred.is_file() and os.access(nfp_pred, os.X_OK)):
        raise InputError(f"{nfp_pred}: not an executable file (--nfp-pred takes the artifacts' build/nfp-estimator)")
    output = OutputDir(out, inputs=[*objs, *filter(None, [target_file("nfp")]), TABLE_CSV], force=force)
    output.check()
    summary = run(folder, quick=quick, timeout_s=timeout_s, explosion_timeout_s=explosion_search_s(quick, timeout_s),
                  workers=workers, executor=executor, nfp_pred=nfp_pred)
    killed = summary.pop("_killed", None)
    with output as o:
        o.summary(summary)
        o.csv("paper_objects.csv", summary["table"])
        o.csv("count_min.csv", summary["count_min"])
        with o.optional(*figures("paper_objects")):
            plot(summary, o)
    if killed is not None:
        raise killed.kept(out)
    if ui.shows_tables():
        print_summary(summary, console)
    return summary
