"""Benchmarks (`make bench`): how fast the datapath simulator runs, measured in-process.

Prints a table and writes out/bench/bench.json. Figures are recorded in BENCHMARKS.md with the
machine and this command. Each case is timed `--repeat` times and the best run is kept (the
machine's other load only ever slows a run down).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import nicsim
from nicsim.config import load_config

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "python" / "nicsim" / "configs" / "flexpipe_paper.toml"


def timed(overrides: dict, repeat: int) -> dict:
    cfg = load_config(PAPER, overrides)
    best = None
    for _ in range(repeat):
        dp = nicsim.Datapath(cfg)
        t0 = time.perf_counter()
        dp.run()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    s = dp.summary()
    return {"seconds": best, "packets": s["packets"]["offered"], "packets_per_second": s["packets"]["offered"] / best,
            "instants": s["engine"]["instants"], "throughput_gbps": s["throughput_gbps"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--long-packets", type=int, default=1_000_000)
    args = ap.parse_args()
    long = {"traffic.packets": args.long_packets, "measure.window": [500, args.long_packets - 500]}
    cases = {
        "paper experiment, flexpipe (11,000 packets, timing only)": {},
        "paper experiment, staticpipe": {"arch": "staticpipe"},
        "paper experiment, panic (eval)": {"arch": "panic"},
        "paper experiment, panic (full)": {"arch": "panic", "panic.variant": "full"},
        f"long flexpipe run ({args.long_packets:,} packets, timing only)": long,
        f"long flexpipe run ({args.long_packets // 10:,} packets, functional offloads)": {
            "functional": True, "traffic.packets": args.long_packets // 10, "measure.window": [500, args.long_packets // 10 - 500]},
    }
    results = {}
    for name, overrides in cases.items():
        repeat = args.repeat if "paper" in name else 1
        results[name] = r = timed(overrides, repeat)
        print(f"{name:<62} {r['seconds'] * 1e3:10.1f} ms {r['packets_per_second']:12,.0f} packets/s")
    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "python": platform.python_version()}
    out = ROOT / "out" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps({"machine": machine, "results": results}, indent=2, sort_keys=True))
    print(f"wrote {out / 'bench.json'}")


if __name__ == "__main__":
    main()
