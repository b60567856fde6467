"""Flow memory, measured and modelled: `nicsim flowmem synth`, `nicsim flowmem bench` and `nicsim flowmem
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
by default, as `nicsim flowmem reassemble`): the copy-based baseline and the model lay each stream
out contiguously, so a capture's sequence numbers cannot make them allocate or model more.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nicsim.config import core_errors, read_toml_file
from nicsim.errors import InputError, NicsimError
from nicsim.flowmem import names
from nicsim.flowmem.reassemble import FlowCapture, capture_name, open_capture, require_tcp
from nicsim.flowmem.summary import (
    BenchCapture,
    BenchSeveral,
    BenchSummary,
    ComparisonSummary,
    HostBench,
    SizesSummary,
    Steps,
    SynthReport,
)
from nicsim.output import OutputDir, check_output_file, figures, make_parents, missing_parents, remove_empty

#: The workloads' names: the core's (nicsim.flowmem.names).
WORKLOADS = names.NAMES["workload"]
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
    return read_toml_file(path, "target"), str(path)


def synth(out: str | os.PathLike[str], *, flows: int = 1000, seed: int = 1, loss: float = 0.01,
          reorder: float = 0.01, duplicate: float = 0.005, pcapng: bool = False,
          progress: Any = None, force: bool = False, **extra: Any) -> SynthReport:
    """Write a synthetic capture to `out` (atomically); returns what it holds. An existing
    file is replaced only with `force` (nicsim cannot tell a capture it wrote from a user's), and
    only a regular file (never a device, FIFO, socket or symbolic link)."""
    from nicsim import _core

    if os.fspath(out) == "":
        raise InputError("the capture file to write is an empty path; give a file name (e.g. out/s.pcap)")
    path = Path(os.path.normpath(out))  # `x/..` is the folder it names
    if path.is_dir():
        raise InputError(f"{path}: is a folder (give a capture file name)")
    check_output_file(path)
    if os.path.lexists(path) and not force:
        raise InputError(f"{path}: exists; give another file name, or --force to replace it")
    config = {"flows": flows, "seed": seed, "loss": loss, "reorder": reorder, "duplicate": duplicate, **extra}
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    made = missing_parents(path)
    done = False
    try:
        make_parents(path)
        with core_errors(None):
            report: SynthReport = json.loads(_core.flow_synth(os.fspath(tmp), json.dumps(config), pcapng, progress))
        check_output_file(path)  # again: it may have changed while the capture was made
        tmp.replace(path)
        done = True
    except OSError as e:
        raise InputError(f"{path}: cannot write the capture: {e.strerror}") from None
    except InputError as e:  # the core names the temporary file it was writing
        raise InputError(str(e).replace(str(tmp), str(path))) from None
    finally:
        tmp.unlink(missing_ok=True)
        if not done:
            remove_empty(made)
    return report


def _check_workload(workload: str, pattern: str | None) -> str | None:
    names.check("workload", workload)
    return (pattern or DEFAULT_PATTERN) if workload == "regex" else None


def bench(capture: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
          out: str | os.PathLike[str] | None = None, *, workload: str = "scan", pattern: str | None = None,
          target: str = "u250-microblaze", retrieval: str | None = None, repeat: int = 3, force: bool = False,
          workers: int = 1, executor: str = "local",
          max_hole_bytes: int | None = None) -> BenchSummary | BenchSeveral:
    """Both designs on every flow of `capture`: measured here and modelled on `target`. With a
    list of captures, each is benchmarked (on `executor`, `workers` at a time: more than one
    skews the host measurement) and the summary holds them under `captures`.
    `force`: replace an existing `out` that nicsim did not write (see [`OutputDir`])."""
    from nicsim import _core
    from nicsim.sweep import check_executor, run_tasks

    pattern = _check_workload(workload, pattern)
    text, tname = load_mem_target(target)
    check_executor(executor, workers)
    with core_errors(tname, about=tname):  # the target and the pattern, before any capture is read
        _core.flow_check_target(text, retrieval)
    with core_errors(None, about="--pattern"):
        _core.flow_check_workload(workload, pattern)
    several = not isinstance(capture, str | os.PathLike)
    captures = list(capture) if several else [capture]  # type: ignore[arg-type]
    if several and any(os.fspath(c) == "-" for c in captures):
        raise InputError("-: standard input can be the only capture of a benchmark")
    if several:  # each is read in a worker process, which cannot read the parent's pipes
        for c in captures:
            if os.path.lexists(c) and not os.path.isfile(c) and not os.path.isdir(c):
                raise InputError(f"{c}: a pipe or a device; with several captures each must be a file")
    output = None
    if out is not None:
        target_file = None if _core.flow_model_target(target) is not None else target
        output = OutputDir(out, inputs=[*captures, target_file], force=force)
        output.check()  # before the benchmark, not after it
    jobs = [(os.fspath(c), workload, pattern, text, tname, retrieval, repeat, max_hole_bytes) for c in captures]
    if several:
        results = run_tasks(bench_one, jobs, executor=executor, workers=workers, description="benchmarking")
        summary: BenchSummary | BenchSeveral = {
            "workload": workload, "pattern": pattern, "target": results[0]["target"],
            "retrieval": results[0]["retrieval"], "captures": results}
    else:
        one = bench_one(jobs[0])
        if isinstance(one, BaseException):
            raise one
        summary = one
    if output is not None:
        with output as o:
            o.summary(summary)
            o.csv("designs.csv", [{"capture": one["capture"], "design": side,
                                   **{k: v for k, v in one[side].items() if k != "model"}}
                                  for one in summary.get("captures", [summary]) for side in ("copy", "flow")])
            with o.optional(*figures("bench")):
                _plot_bench(o, summary)
    return summary


def model(cap: FlowCapture, workload: str, pattern: str | None, target_text: str,
          retrieval: str | None = None) -> ComparisonSummary:
    """The SmartNIC memory model (both designs) over every flow direction of `cap`, on the
    target whose TOML is `target_text`: `{target, retrieval, copy, flow}` (each design's
    report with its totals; nicsim_flowmem::model::ComparisonSummary)."""
    from nicsim import _core

    return json.loads(_core.flow_model(cap._core, workload, pattern, target_text, retrieval))


def model_micro(packets: int, payload_bytes: int, buffer_bytes: int, workload: str, pattern: str | None,
                target_text: str, retrieval: str | None = None) -> ComparisonSummary:
    """The model on the talk's micro-benchmark: `packets` payloads of `payload_bytes`, each in
    its own `buffer_bytes` packet buffer; as [`model`]."""
    from nicsim import _core

    return json.loads(_core.flow_model_micro(packets, payload_bytes, buffer_bytes, workload, pattern, target_text,
                                             retrieval))


def bench_one(job: tuple[str, str, str | None, str, str, str | None, int, int | None]) -> BenchCapture | NicsimError:
    """One capture's benchmark (in a worker, for several): the summary, or the bad input."""
    from nicsim import _core

    capture, workload, pattern, text, tname, retrieval, repeat, max_hole_bytes = job
    try:
        cap = open_capture(capture, max_hole_bytes=max_hole_bytes)
        require_tcp(cap, capture)
        with core_errors(tname, about=tname):
            host: HostBench = json.loads(_core.flow_host_bench(cap._core, workload, pattern, repeat))
            modelled = model(cap, workload, pattern, text, retrieval)
    except NicsimError as e:
        return e
    summary: dict[str, Any] = {
        "capture": capture_name(capture), "workload": workload, "pattern": pattern,
        "payload_bytes": host["payload_bytes"], "streams": host["streams"], "result": host["result"],
        "target": modelled["target"], "retrieval": modelled["retrieval"],
        "max_hole_bytes": cap.limits["max_hole_bytes"], "hole_too_large": cap.counts()["hole_too_large"],
    }
    for side in ("copy", "flow"):
        h, m = host[side], modelled[side]
        summary[side] = {**h, "dram_bytes": m["dram_bytes"], "cycles": m["cycles"],
                         "cache_hit_rate": m["cache_hit_rate"], "model": m}
    p = host["payload_bytes"] or 1
    summary["ratios"] = {
        "host_speedup": host["copy"]["seconds"] / host["flow"]["seconds"] if host["flow"]["seconds"] else None,
        "model_speedup": modelled["copy"]["cycles"] / modelled["flow"]["cycles"] if modelled["flow"]["cycles"] else None,
        # The talk's terms: DRAM traffic beyond the Packet Handler's write, and including it.
        "copy_dram_per_payload_after_receive": modelled["copy"]["dram_bytes_after_receive"] / p,
        "flow_dram_per_payload_after_receive": modelled["flow"]["dram_bytes_after_receive"] / p,
        "copy_dram_per_payload": modelled["copy"]["dram_bytes"] / p,
        "flow_dram_per_payload": modelled["flow"]["dram_bytes"] / p,
    }
    summary["steps"] = dram_steps(modelled, p)
    return summary  # a BenchCapture, built key by key


STEPS = ("receive", "assemble", "process")


def dram_steps(model: ComparisonSummary, payload: int) -> Steps:
    """DRAM bytes (read + written) per payload byte of each step, per design."""
    return {side: {step: (model[side][step]["read_bytes"] + model[side][step]["write_bytes"]) / (payload or 1)
                   for step in STEPS} for side in ("copy", "flow")}


def _plot_bench(o: OutputDir, summary: BenchSummary | BenchSeveral) -> None:
    """bench.png: copy-based against flow-based, per capture: bytes copied and read per payload
    byte and host Gbit/s (measured), DRAM bytes per payload byte and cycles (modelled)."""
    from nicsim.output import pyplot

    plt = pyplot()

    runs: list[Any] = summary.get("captures", [summary])
    panels = [("host: bytes copied", "bytes / payload byte", lambda d, p: d["bytes_copied"] / p),
              ("host: bytes read", "bytes / payload byte", lambda d, p: d["bytes_read"] / p),
              ("host: throughput (one core)", "Gbit/s", lambda d, p: d["gbps"]),
              ("model: DRAM traffic", "DRAM bytes / payload byte", lambda d, p: d["dram_bytes"] / p),
              ("model: cycles", "cycles / payload byte", lambda d, p: d["cycles"] / p)]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.6))
    names = [Path(r["capture"]).name for r in runs]
    xs = list(range(len(runs)))
    for ax, (title, unit, f) in zip(axes, panels):
        for i, (side, color) in enumerate((("copy", "tab:red"), ("flow", "tab:green"))):
            ax.bar([x + (i - 0.5) * 0.38 for x in xs], [f(r[side], r["payload_bytes"] or 1) for r in runs], 0.38,
                   color=color, label=f"{side}-based")
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(unit, fontsize=8)
        ax.set_xticks(xs, names, rotation=30, ha="right", fontsize=7)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{summary['workload']} on {summary['target']}", fontsize=10)
    fig.tight_layout()
    o.figure("bench", fig)


def _quantile(sorted_values: Sequence[int], q: float) -> int:
    if len(sorted_values) == 0:
        return 0
    i = min(len(sorted_values) - 1, max(0, int(-(-q * len(sorted_values) // 1)) - 1))
    return sorted_values[i]


def sizes(capture: str | os.PathLike[str], out: str | os.PathLike[str], *, force: bool = False,
          max_hole_bytes: int | None = None) -> SizesSummary:
    """The flow-size CDF and the table and cache sizes covering 50/90/99 % of flows.
    `force`: replace an existing `out` that nicsim did not write (see [`OutputDir`])."""
    output = OutputDir(out, inputs=[capture], force=force)
    output.check()
    cap = open_capture(capture, max_hole_bytes=max_hole_bytes)
    require_tcp(cap, capture)
    import numpy as np

    # Per flow, its bytes and segments (both directions): 16 bytes a flow from the core, not a
    # dict per direction (1.2 GB for a 200,000-flow SYN flood).
    packed, cut_directions = cap.flow_sizes()
    per_flow = np.frombuffer(packed, dtype="<u8").reshape(-1, 2)
    order = np.argsort(per_flow[:, 0], kind="stable")
    size = per_flow[order, 0]
    flow_segs = per_flow[order, 1]
    segs = np.sort(per_flow[:, 1])
    n = len(size)
    cover = []
    for q in COVER:
        cover.append({"share": q, "flow_bytes": int(_quantile(size, q)), "table_entries": int(_quantile(segs, q)),
                      "table_bytes": int(_quantile(segs, q)) * TABLE_ENTRY_BYTES})
    le_10kb = int(np.count_nonzero(size <= 10_240)) / n
    summary: SizesSummary = {  # nicsim_version, schema_version: added by o.summary
               "capture": capture_name(capture), "flows": n, "share_le_10kb": le_10kb,
               "table_entry_bytes": TABLE_ENTRY_BYTES, "cover": cover,
               "bytes": {"total": int(size.sum()), "mean": int(size.sum()) / n, "max": int(size[-1])},
               "max_hole_bytes": cap.limits["max_hole_bytes"],
               "cut_directions": int(cut_directions)}
    with output as o:
        o.summary(summary)
        o.csv("flows.csv", ({"rank": i, "bytes": int(b), "segments": int(g)} for i, (b, g) in enumerate(zip(size, flow_segs))),
              columns=["rank", "bytes", "segments"])
        with o.optional(*figures("flow_size_cdf")):
            _plot_cdf(size, le_10kb, o)
    return summary


#: The most points the flow-size CDF draws: beyond, evenly spaced ranks (the last always).
MAX_CDF_POINTS = 20_000


def _plot_cdf(size: Any, le_10kb: float, o: OutputDir) -> None:
    import numpy as np

    from nicsim.output import pyplot

    plt = pyplot()

    n = len(size)
    ranks = np.arange(n) if n <= MAX_CDF_POINTS else np.unique(np.linspace(0, n - 1, MAX_CDF_POINTS).astype(np.int64))
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.step([max(int(size[i]), 1) for i in ranks], [(int(i) + 1) / n for i in ranks], where="post",
            label=f"{n:,} flows")
    ax.axvline(10_240, color="grey", ls=":", label=f"10 KB: {le_10kb:.2%} of flows (talk: 93.16 %)")
    for q in COVER:
        ax.axhline(q, color="tab:red", lw=0.6, alpha=0.5)
    ax.set(xscale="log", xlabel="flow size (payload bytes, both directions)", ylabel="share of flows (CDF)",
           title="Flow sizes", ylim=(0, 1.01))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    o.figure("flow_size_cdf", fig)
