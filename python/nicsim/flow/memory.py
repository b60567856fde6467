"""Flow memory, measured and modelled: `nicsim flow synth`, `nicsim flow bench` and `nicsim flow
sizes` (seed 001, "Packets are Not Pages").

- `synth` writes a synthetic TCP capture (Pareto flow sizes, 93.16 % of flows at most 10 KB as
  the talk measured; loss with retransmission, reordering, spurious retransmissions).
- `bench` runs one workload (a linear scan or a regex search) over every flow of a capture in
  both designs: measured on this host (bytes copied and read, seconds, Gbit/s) and in the
  SmartNIC memory model (DRAM bytes, cycles, cache hit rates) of a target
  (`u250-microblaze`, the talk's prototype, or a target TOML file).
- `sizes` gives the flow-size CDF and the translation-table and flow-cache sizes that cover
  50/90/99 % of flows.

Both reassemble the capture with its holes bounded (`max_hole_bytes` per flow direction, 64 MiB
by default, as `nicsim flow reassemble`): the copy-based baseline and the model lay each stream
out contiguously, so a capture's sequence numbers cannot make them allocate or model more.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nicsim.config import core_errors
from nicsim.errors import InputError
from nicsim.flow.reassemble import open_capture, require_tcp
from nicsim.output import OutputDir

WORKLOADS = ("scan", "regex")
#: The regex workload's default pattern: an HTTP request line's method and path.
DEFAULT_PATTERN = r"(GET|POST|PUT|DELETE) /[a-z0-9/._-]* HTTP/1\.[01]"
#: Bytes of one translation-table entry: stream offset, physical address, length (8 + 8 + 4,
#: padded to 24); the talk's table "stores physical address, length and offset". Entries are
#: those of nicsim's table, where payloads adjacent in memory share one entry.
TABLE_ENTRY_BYTES = 24
COVER = (0.5, 0.9, 0.99)


def load_mem_target(target: str) -> tuple[str, str]:
    """(TOML text, name) of a built-in memory-model target or a target file."""
    from nicsim import _core

    text = _core.flow_model_target(target)
    if text is not None:
        return text, target
    path = Path(target)
    if path.suffix != ".toml":
        raise InputError(f"unknown target '{target}' (built in: u250-microblaze, bluefield3; or a .toml file)")
    try:
        return path.read_text(), str(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read the target: {e.strerror}") from None


def synth(out: str | os.PathLike[str], *, flows: int = 1000, seed: int = 1, loss: float = 0.01,
          reorder: float = 0.01, duplicate: float = 0.005, pcapng: bool = False,
          progress: Any = None, **extra: Any) -> dict[str, Any]:
    """Write a synthetic capture to `out` (atomically); returns what it holds."""
    from nicsim import _core

    path = Path(out)
    if path.exists() and path.is_dir():
        raise InputError(f"{path}: is a folder (give a capture file name)")
    config = {"flows": flows, "seed": seed, "loss": loss, "reorder": reorder, "duplicate": duplicate, **extra}
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with core_errors(None):
            report = json.loads(_core.flow_synth(os.fspath(tmp), json.dumps(config), pcapng, progress))
        tmp.replace(path)
    except OSError as e:
        raise InputError(f"{path}: cannot write the capture: {e.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return report


def _check_workload(workload: str, pattern: str | None) -> str | None:
    if workload not in WORKLOADS:
        raise InputError(f"--workload must be one of {', '.join(WORKLOADS)}, not '{workload}'")
    return (pattern or DEFAULT_PATTERN) if workload == "regex" else None


def bench(capture: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *, workload: str = "scan",
          pattern: str | None = None, target: str = "u250-microblaze", retrieval: str | None = None,
          repeat: int = 3, max_hole_bytes: int | None = None) -> dict[str, Any]:
    """Both designs on every flow of `capture`: measured here and modelled on `target`."""
    from nicsim import _core

    pattern = _check_workload(workload, pattern)
    text, tname = load_mem_target(target)
    cap = open_capture(capture, max_hole_bytes=max_hole_bytes)
    require_tcp(cap, capture)
    with core_errors(tname):
        host = json.loads(_core.flow_host_bench(cap._core, workload, pattern, repeat))
        model = json.loads(_core.flow_model(cap._core, workload, pattern, text, retrieval))
    summary = {
        "capture": str(capture), "workload": workload, "pattern": pattern,
        "payload_bytes": host["payload_bytes"], "streams": host["streams"], "result": host["result"],
        "target": model["target"], "retrieval": model["retrieval"],
        "max_hole_bytes": cap.limits["max_hole_bytes"], "hole_too_large": cap.counts()["hole_too_large"],
    }
    for side in ("copy", "flow"):
        h, m = host[side], model[side]
        summary[side] = {**h, "dram_bytes": m["dram_bytes"], "cycles": m["cycles"],
                         "cache_hit_rate": m["cache_hit_rate"], "model": m}
    p = host["payload_bytes"] or 1
    summary["ratios"] = {
        "host_speedup": host["copy"]["seconds"] / host["flow"]["seconds"] if host["flow"]["seconds"] else None,
        "model_speedup": model["copy"]["cycles"] / model["flow"]["cycles"] if model["flow"]["cycles"] else None,
        "copy_dram_per_payload": model["copy"]["dram_bytes"] / p,
        "flow_dram_per_payload": model["flow"]["dram_bytes"] / p,
    }
    if out is not None:
        with OutputDir(out) as o:
            o.json("summary.json", summary)
            o.csv("designs.csv", [{"design": s, **{k: v for k, v in summary[s].items() if k != "model"}}
                                  for s in ("copy", "flow")])
    return summary


def _quantile(sorted_values: list[int], q: float) -> int:
    if not sorted_values:
        return 0
    i = min(len(sorted_values) - 1, max(0, int(-(-q * len(sorted_values) // 1)) - 1))
    return sorted_values[i]


def sizes(capture: str | os.PathLike[str], out: str | os.PathLike[str], *,
          max_hole_bytes: int | None = None) -> dict[str, Any]:
    """The flow-size CDF and the table and cache sizes covering 50/90/99 % of flows."""
    cap = open_capture(capture, max_hole_bytes=max_hole_bytes)
    require_tcp(cap, capture)
    per_flow: dict[int, dict[str, int]] = {}
    directions = cap.directions()
    for d in directions:
        f = per_flow.setdefault(d["flow"], {"bytes": 0, "segments": 0})
        f["bytes"] += d["bytes"]
        f["segments"] += d["segments"]
    flows = sorted(per_flow.values(), key=lambda f: f["bytes"])
    size = [f["bytes"] for f in flows]
    segs = sorted(f["segments"] for f in flows)
    cover = []
    for q in COVER:
        cover.append({"share": q, "flow_bytes": _quantile(size, q), "table_entries": _quantile(segs, q),
                      "table_bytes": _quantile(segs, q) * TABLE_ENTRY_BYTES})
    le_10kb = sum(1 for s in size if s <= 10_240) / len(size)
    summary = {"capture": str(capture), "flows": len(flows), "share_le_10kb": le_10kb,
               "table_entry_bytes": TABLE_ENTRY_BYTES, "cover": cover,
               "bytes": {"total": sum(size), "mean": sum(size) / len(size), "max": size[-1]},
               "max_hole_bytes": cap.limits["max_hole_bytes"],
               "cut_directions": sum(1 for d in directions if d["cut"])}
    with OutputDir(out) as o:
        o.json("summary.json", summary)
        o.csv("flows.csv", [{"rank": i, **f} for i, f in enumerate(flows)])
        _plot_cdf(size, le_10kb, o)
    return summary


def _plot_cdf(size: list[int], le_10kb: float, o: OutputDir) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(size)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.step([max(s, 1) for s in size], [(i + 1) / n for i in range(n)], where="post", label=f"{n:,} flows")
    ax.axvline(10_240, color="grey", ls=":", label=f"10 KB: {le_10kb:.2%} of flows (talk: 93.16 %)")
    for q in COVER:
        ax.axhline(q, color="tab:red", lw=0.6, alpha=0.5)
    ax.set(xscale="log", xlabel="flow size (payload bytes, both directions)", ylabel="share of flows (CDF)",
           title="Flow sizes", ylim=(0, 1.01))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    o.figure("flow_size_cdf", fig)
