"""How many units each offload needs for a user's own traffic and targets (`nicsim offloads size`).

Eq. 1 sizes an offload for the worst case at line rate. An architect with a capture or a size
mix and a latency target asks for fewer: the fewest units per offload whose simulation meets a
p99 latency and a loss target. [`size_offloads`] finds them by simulation, on the sweep
machinery ([`nicsim.sweep.run_many`]: the local pool, or Ray when asked):

1. **Baseline.** Every offload at its generous count, max(Eq. 1, configured). If that misses the
   targets, units cannot meet them (the datapath, the offered load or the traffic's own burst is
   the limit) and the search says so.
2. **Alone.** Per offload, a search over its count with every other offload held generous. Each
   round simulates, for every offload still open, `k` counts spread over its open interval
   (k-ary bisection: `k` grows with the workers, so a Ray cluster finishes in fewer rounds). It
   assumes a count that meets the targets keeps meeting them with more units; the joint check
   catches a case where that is false.
3. **Joint.** Every offload at its alone count, simulated together: queueing in several offloads
   adds up, so this can miss where each alone met. Then one unit is added, per round, to the
   offload whose extra unit helps most (every candidate simulated in parallel), until the joint
   configuration meets the targets. At worst this ends at the baseline, which met them.

Every simulated point is kept (`points`), so the plot shows p99 latency against units per
offload, with the target and Eq. 1's count.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from nicsim.config import Config, get_key, offload_units, with_overrides
from nicsim.errors import InputError, WorkerKilled
from nicsim.output import stamp

#: How the capture of `--traffic` is used: its frame sizes under the configuration's flows,
#: rate and arrivals (`sizes`), or the capture itself replayed, rescaled to `traffic.rate_gbps`
#: (`rate`) or at its own timing (`original`).
TIMINGS = ("sizes", "rate", "original")


class Targets(TypedDict):
    """What a configuration must meet: the p99 of the packets' sojourn, arrival to sink (µs;
    required), and the share of offered packets dropped or stuck."""

    p99_us: float
    loss: float


class Point(TypedDict):
    """One simulated configuration of the search."""

    phase: Literal["baseline", "alone", "joint"]
    #: The offload whose count varies (alone), or None (baseline, joint).
    offload: str | None
    #: Every offload's count in this run.
    units: dict[str, int]
    p99_us: float | None
    loss: float
    #: Drops by reason (the run summary's `packets.dropped`), and packets stuck at the end.
    dropped: dict[str, int]
    throughput_gbps: float
    met: bool


class OffloadSizing(TypedDict):
    """One offload's result."""

    name: str
    #: Whether a flow's chain uses it (an unused offload keeps its configured count).
    used: bool
    eq1_units: int
    configured_units: int
    #: The fewest units that meet the targets with every other offload generous (None: unused).
    alone_units: int | None
    #: Its count in the configuration that meets the targets jointly (None: not met).
    units: int | None
    #: Eq. 1's count minus `units` (None: not met).
    saving_units: int | None


class Joint(TypedDict):
    """The configuration that meets the targets with every offload at its found count."""

    met: bool
    units: dict[str, int]
    p99_us: float | None
    loss: float
    throughput_gbps: float
    #: Units added to the alone counts to meet the targets together.
    added_units: int


class SizingSummary(TypedDict):
    """`nicsim offloads size`'s summary.json."""

    config: str | None
    arch: str
    traffic: str
    targets: Targets
    offloads: list[OffloadSizing]
    baseline: Point
    joint: Joint
    eq1_total_units: int
    total_units: int | None
    saving_units: int | None
    runs: int
    rounds: int
    executor: str
    elapsed_s: float
    points: list[Point]
    nicsim_version: str
    schema_version: int


def with_traffic(config: Config, capture: str | os.PathLike[str] | None, timing: str = "sizes") -> Config:
    """`config` with its traffic taken from `capture` ([`TIMINGS`]); unchanged without one."""
    if capture is None:
        return config
    if timing not in TIMINGS:
        raise InputError(f"--timing: unknown timing '{timing}' (expected {', '.join(TIMINGS)})")
    path = os.fspath(Path(capture))
    if timing == "sizes":
        return with_overrides(config, {"traffic.size": {"dist": "capture", "path": path}})
    return with_overrides(config, {"traffic.replay": {"path": path, "timing": timing}})


def _measure(summary: Mapping[str, Any], targets: Targets) -> tuple[float | None, float, float, bool]:
    """A run's p99 sojourn (µs), loss, throughput and whether it meets `targets`. The sojourn
    (arrival to sink, the summary's `sojourn_us`) and not `latency_us` (Pre-Processor to sink):
    a datapath that cannot keep up makes the traffic wait to enter, which only the sojourn
    shows. Packets stuck at the end (a deadlock) count as lost."""
    p = summary["packets"]
    offered = p["offered"]
    loss = (p["dropped_total"] + p["in_flight"]) / offered if offered else 0.0
    p99 = summary.get("sojourn_us", {}).get("p99")
    met = loss <= targets["loss"] and not summary.get("deadlocked")
    if targets["p99_us"] is not None:
        met = met and p99 is not None and p99 <= targets["p99_us"]
    return p99, loss, summary["throughput_gbps"], met


def _spread(lo: int, hi: int, k: int) -> list[int]:
    """Up to `k` counts strictly between `lo` (fails, or 0) and `hi` (meets), evenly spread: one
    is the midpoint's bisection."""
    inside = hi - lo - 1
    if inside <= 0:
        return []
    if inside <= k:
        return list(range(lo + 1, hi))
    return sorted({lo + round((hi - lo) * (i + 1) / (k + 1)) for i in range(k)} - {lo, hi})


def size_offloads(
    config: Config,
    targets: Targets,
    *,
    executor: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    traffic: str = "the configuration's",
) -> SizingSummary:
    """The fewest units per offload that meet `targets` on `config`'s traffic (see the module
    comment for the three phases). `config` must be a valid datapath configuration."""
    from nicsim.sweep import Pool, run_many, unfinished

    if targets["p99_us"] is None:
        # FlexPipe holds the traffic back rather than dropping it: without a latency bound, one
        # unit per offload "meets" any loss target at a fraction of the offered rate.
        raise InputError("--p99-us is required: without a latency target too few units meet any loss target")
    if not (targets["p99_us"] > 0 and math.isfinite(targets["p99_us"])):
        raise InputError(f"--p99-us must be a positive number of µs, got {targets['p99_us']}")
    if not (0.0 <= targets["loss"] <= 1.0):
        raise InputError(f"--loss must be a share of packets from 0 to 1, got {targets['loss']}")
    t0 = time.perf_counter()
    rows = offload_units(config)
    index = {r["name"]: i for i, r in enumerate(rows)}
    chains = [f.get("chain", []) for f in config.get("flows", [])]
    chains += [r.get("chain", []) for r in get_key(config, "remap") or [] if isinstance(r, Mapping)]
    used = {name for chain in chains for name in chain}
    generous = {r["name"]: max(r["eq1_units"], r["units"]) for r in rows}
    searched = [r["name"] for r in rows if r["name"] in used]
    points: list[Point] = []
    rounds = 0

    def run(batch: list[tuple[Literal["baseline", "alone", "joint"], str | None, dict[str, int]]]) -> list[Point]:
        nonlocal rounds
        rounds += 1
        configs = [with_overrides(config, {f"offloads[{index[n]}].units": c for n, c in units.items()})
                   for _, _, units in batch]
        killed: WorkerKilled | None = None
        try:
            summaries = run_many(configs, progress=progress, description=f"sizing, round {rounds}", pool=pool)
        except WorkerKilled as e:
            summaries = e.results
            killed = e
        out = []
        for (phase, offload, units), s in zip(batch, summaries, strict=True):
            if s is None:  # a worker died in this round: the points that finished are kept
                continue
            p99, loss, gbps, met = _measure(s, targets)
            dropped = {k: v for k, v in s["packets"]["dropped"].items() if v}
            if s["packets"]["in_flight"]:
                dropped["stuck"] = s["packets"]["in_flight"]
            out.append(Point(phase=phase, offload=offload, units=dict(units), p99_us=p99, loss=loss,
                             dropped=dropped, throughput_gbps=gbps, met=met))
        points.extend(out)
        if killed is not None:
            # What ran, for the command to write before it reports the dead worker.
            killed.partial = stamp({"config": getattr(config, "source", None), "arch": str(config.get("arch", "flexpipe")),
                                    "traffic": traffic, "targets": targets, "runs": len(points), "rounds": rounds,
                                    "points": points, "unfinished": unfinished(killed)})
            raise killed
        return out

    with Pool(executor, workers, ray_address) as pool:
        (baseline,) = run([("baseline", None, dict(generous))])
        alone: dict[str, int | None] = dict.fromkeys(generous)
        joint_units = dict(generous)
        added = 0
        joint_point = baseline
        if baseline["met"]:
            # Alone: per offload, lo fails (0: nothing below tried), hi meets.
            bounds = {n: (0, generous[n]) for n in searched}
            per_round = max(1, (workers or os.cpu_count() or 1) // max(1, len(searched)))
            while True:
                batch: list[tuple[Literal["baseline", "alone", "joint"], str | None, dict[str, int]]] = []
                for n in searched:
                    lo, hi = bounds[n]
                    for c in _spread(lo, hi, per_round):
                        batch.append(("alone", n, {**generous, n: c}))
                if not batch:
                    break
                for pt in run(batch):
                    n = pt["offload"]
                    assert n is not None
                    c = pt["units"][n]
                    lo, hi = bounds[n]
                    bounds[n] = (lo, min(hi, c)) if pt["met"] else (max(lo, c), hi)
                # A count that met above one that failed: keep the bracket consistent.
                bounds = {n: (min(lo, hi - 1), hi) for n, (lo, hi) in bounds.items()}
            for n in searched:
                alone[n] = bounds[n][1]
            # Joint: every offload at its alone count, then one unit at a time where it helps most.
            joint_units = {n: alone[n] or generous[n] for n in generous}
            for n in generous:
                if n not in used:
                    joint_units[n] = next(r["units"] for r in rows if r["name"] == n)
            (joint_point,) = run([("joint", None, dict(joint_units))])
            while not joint_point["met"]:
                candidates = [n for n in searched if joint_units[n] < generous[n]]
                if not candidates:
                    break
                tried = run([("joint", None, {**joint_units, n: joint_units[n] + 1}) for n in candidates])
                best = min(zip(candidates, tried, strict=True), key=lambda ct: (not ct[1]["met"], _badness(ct[1], targets)))
                joint_units = dict(best[1]["units"])
                joint_point = best[1]
                added += 1
    offloads: list[OffloadSizing] = []
    for r in rows:
        n = r["name"]
        met = joint_point["met"]
        units = joint_units[n] if met else None
        offloads.append(OffloadSizing(name=n, used=n in used, eq1_units=r["eq1_units"], configured_units=r["units"],
                                      alone_units=alone[n], units=units,
                                      saving_units=None if units is None else r["eq1_units"] - units))
    eq1_total = sum(r["eq1_units"] for r in rows)
    total = sum(joint_units.values()) if joint_point["met"] else None
    return cast("SizingSummary", stamp(dict(
        config=getattr(config, "source", None), arch=str(config.get("arch", "flexpipe")), traffic=traffic,
        targets=targets, offloads=offloads, baseline=baseline,
        joint=Joint(met=joint_point["met"], units=dict(joint_units), p99_us=joint_point["p99_us"],
                    loss=joint_point["loss"], throughput_gbps=joint_point["throughput_gbps"], added_units=added),
        eq1_total_units=eq1_total, total_units=total, saving_units=None if total is None else eq1_total - total,
        runs=len(points), rounds=rounds, executor="ray" if ray_address else executor,
        elapsed_s=round(time.perf_counter() - t0, 3), points=points)))


def _badness(pt: Point, targets: Targets) -> tuple[float, float]:
    """How far a point is from the targets: its loss above the target, then its p99 over the target."""
    over_loss = max(0.0, pt["loss"] - targets["loss"])
    if targets["p99_us"] is None:
        return over_loss, 0.0
    return over_loss, math.inf if pt["p99_us"] is None else pt["p99_us"] / targets["p99_us"]


SIZING_COLUMNS = ("offload", "used", "eq1_units", "configured_units", "alone_units", "units", "saving_units")
POINT_COLUMNS = ("phase", "offload", "varied_units", "p99_us", "loss", "throughput_gbps", "met", "units")


def sizing_rows(s: SizingSummary) -> list[dict[str, Any]]:
    """sizing.csv: a row per offload."""
    return [{"offload": o["name"], **{k: o[k] for k in SIZING_COLUMNS[1:]}} for o in s["offloads"]]  # type: ignore[literal-required]


def point_rows(s: SizingSummary) -> list[dict[str, Any]]:
    """points.csv: a row per simulated configuration (`units` as name=count pairs)."""
    return [{"phase": p["phase"], "offload": p["offload"] or "",
             "varied_units": p["units"][p["offload"]] if p["offload"] else "",
             "p99_us": p["p99_us"], "loss": p["loss"], "throughput_gbps": p["throughput_gbps"], "met": p["met"],
             "units": " ".join(f"{k}={v}" for k, v in p["units"].items())} for p in s["points"]]


def plot_sizing(o: Any, s: SizingSummary) -> None:
    """p99_vs_units.png: per searched offload, p99 latency against its units (others
    generous), with the target, Eq. 1's count and the count found."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    from nicsim.output import pyplot

    plt = pyplot()
    searched = [x for x in s["offloads"] if x["used"]]
    cols = min(3, max(1, len(searched)))
    nrows = max(1, math.ceil(len(searched) / cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
    target = s["targets"]["p99_us"]
    for ax, x in zip(axes.flat, searched, strict=False):
        n = x["name"]
        pts = sorted(([p["units"][n], p] for p in s["points"] if p["phase"] == "alone" and p["offload"] == n),
                     key=lambda up: up[0])
        pts.append([s["baseline"]["units"][n], s["baseline"]])
        pts.sort(key=lambda up: up[0])
        xs = [u for u, p in pts if p["p99_us"] is not None]
        ys = [p["p99_us"] for _, p in pts if p["p99_us"] is not None]
        ax.plot(xs, ys, marker="o", color="C0", label="p99 sojourn (others generous)")
        bad = [(u, p["p99_us"]) for u, p in pts if not p["met"] and p["p99_us"] is not None]
        if bad:
            ax.scatter(*zip(*bad, strict=True), marker="x", color="C3", zorder=3, label="misses a target")
        if target is not None:
            ax.axhline(target, color="0.4", ls="--", lw=1, label="p99 target")
        ax.axvline(x["eq1_units"], color="C2", ls=":", lw=1.2, label=f"Eq. 1: {x['eq1_units']}")
        if x["units"] is not None:
            ax.axvline(x["units"], color="C1", lw=1.2, label=f"found: {x['units']}")
        ax.set_yscale("log")
        # Plain numbers: the package's matplotlib settings do not parse mathtext.
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(n, fontsize=10)
        ax.set_xlabel("units")
        ax.set_ylabel("p99 latency (µs)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(searched):]:
        ax.set_visible(False)
    goal = f"p99 ≤ {target:g} µs, " if target is not None else ""
    fig.suptitle(f"{s['arch']}: units per offload for {goal}loss ≤ {s['targets']['loss']:g} ({s['traffic']} traffic)",
                 fontsize=10)
    fig.tight_layout()
    o.figure("p99_vs_units", fig)


__all__ = ["TIMINGS", "SizingSummary", "plot_sizing", "point_rows", "size_offloads", "sizing_rows", "with_traffic"]
