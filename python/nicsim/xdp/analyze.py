"""`nicsim xdp analyze`: from a BPF object to `summary.json` and `example.pcap`.

The Rust core loads the object, inlines calls, unrolls loops, costs every edge on the target,
gives the naive bound, and then hands out paths slowest first, each as an SMT-LIB2 query; this
module runs the solver on them (`nicsim.xdp.solver`, in a process of its own) until one is
satisfiable — the slowest satisfiable path, whose rate is the guarantee — or the time or the
memory is up, feeds unsat cores back to prune infeasible prefixes, reads the example packet and
map contents from the model, and writes the output folder atomically.

`memory_mb` (`--memory-mb`) bounds the whole analysis: half goes to the core (the graph while
it is built and costed, then the graph and the search's state; an analysis whose graph does not
fit is an error, one that fits stops its search there with the bound so far), half to the solver
process (a limit of the operating system; a solver that reaches it stops the search the same
way). Each process has its interpreter besides (docs/xdp.md, "Memory").
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from nicsim.config import core_errors, read_input_file, read_toml_file
from nicsim.errors import InputError, NicsimError
from nicsim.output import OutputDir, figures, prefetch_pyplot
from nicsim.xdp.explain import SLOWEST_PATH_FILE, slowest_path_text
from nicsim.xdp.summary import Outcome, SlowPath, Summary, SweepSummary, replay

#: The share of `--memory-mb` that the core's analysis gets (the rest is the solver process's).
ANALYSIS_SHARE = 0.5
#: Targets shipped with nicsim, in the extension (`nicsim_xdp::target::BUILTIN`; `x86-jit` is
#: made on each machine by `nicsim xdp calibrate`).
BUILTIN_TARGETS = ("nfp",)


def target_file(target: str) -> Path | None:
    """The file a target is read from (None for a built-in one): an input of the command."""
    if target == "x86-jit":
        from nicsim.xdp.calibrate import default_path

        return default_path()
    return None if target in BUILTIN_TARGETS else Path(target)


def load_target(target: str | os.PathLike[str]) -> tuple[str, str]:
    """The TOML text of a target (a built-in name, `x86-jit`, or a file) and the name to use in
    errors, checked (the core's one check of a target: every command that takes one, `analyze`,
    `sweep`, `helpers`, refuses the same targets)."""
    from nicsim import _core

    text, where = _target_text(target)
    with core_errors(where):
        _core.xdp_check_target(text, where)
    return text, where


def _target_text(target: str | os.PathLike[str]) -> tuple[str, str]:
    name = str(target)
    if name == "x86-jit":
        from nicsim.xdp.calibrate import default_path

        path = default_path()
        if os.path.lexists(path) and not path.is_file():
            raise InputError(f"{path}: the x86-jit target's calibration is not a regular file"
                             + (" (NICSIM_X86_JIT)" if os.environ.get("NICSIM_X86_JIT") else ""))
        if not path.is_file():
            raise InputError(f"the x86-jit target is not calibrated on this machine ({path} is missing): "
                             "run `nicsim xdp calibrate` first")
        return read_toml_file(path, "target"), str(path)
    if name in BUILTIN_TARGETS:  # inside the extension (crates/nicsim-xdp/targets)
        from nicsim import _core

        return _core.xdp_builtin_target(name), f"{name}.toml"
    path = Path(name)
    if not path.suffix:
        raise InputError(f"unknown target '{name}' (built in: {', '.join(BUILTIN_TARGETS)}, x86-jit once "
                         "calibrated; or a .toml file)")
    return read_toml_file(path, "target"), str(path)


#: The largest object read. The kernel takes at most a million instructions (8 MB); with BTF
#: and debug information an object is rarely over a few MB.
MAX_OBJECT_BYTES = 256 << 20


def read_object(obj: Path) -> bytes:
    """The bytes of a BPF object file: a regular file of at most MAX_OBJECT_BYTES."""
    return read_input_file(obj, "object", MAX_OBJECT_BYTES)


def analyze(obj: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *, target: str = "nfp",
            section: str | None = None, loop_bound: int | None = None, rate: str = "bit", timeout_s: float = 60.0,
            solver: str = "bitwuzla", memory_mb: int = 2048, mac_limit: bool = True,
            progress: Callable[[dict[str, Any]], None] | None = None, force: bool = False,
            map_sizes: dict[str, int] | None = None, program: str | None = None,
            tail_calls: Sequence[tuple[str, int, str]] | None = None,
            paths: int | None = None) -> Summary:
    """Analyse the XDP program in `obj`; write `out/summary.json`, `out/example.pcap` and
    `out/slowest_path.txt` (the reported path by source line, `nicsim.xdp.explain`) when `out`
    is given. Returns the summary (`nicsim.xdp.summary.Summary`).

    `section` (an ELF section) and `program` (a function name) choose the program when the object
    holds several (docs/xdp.md, "Load": programs are found as libbpf and iproute2 find them).

    `rate`: `bit` guarantees bits/s (each path at its minimum packet size), `packet` packets/s.
    Paths are checked slowest first until one is satisfiable (the SSP), `timeout_s` passes, or
    the analysis would exceed `memory_mb` (half for the core's graph and search, half for the
    solver process); the bound in the summary is valid either way (`stopped` says which ended
    the search). A graph that does not fit in its half is an `InputError` naming
    `--memory-mb`. `progress` is called with every new bound: a trace entry (`seconds`, `pps`,
    `bps`) with what the search has done so far (`checked`: paths whose query went to the solver,
    `infeasible`: those it refuted, `pruned`: paths skipped without a query).
    `mac_limit=False` leaves out the target's MAC limit, as the paper's evaluation does (§6:
    core-bound programs measured on 5 cores and scaled to 50, past the MAC's packet rate).
    `force`: replace an existing `out` that nicsim did not write (see [`OutputDir`]).
    `map_sizes`: map name → entries, in place of the declared `max_entries` (`--map-size`); a
    map declared with 0 entries and not sized here is analysed for every size (a warning says
    so, and the example's maps give the model's size).
    `tail_calls`: (prog array, slot, program) entries (`--tail-call`), all that the arrays named
    hold, in place of what the object declares. A tail call through a prog array whose contents
    are neither declared nor given makes the answer `unbounded` (docs/xdp.md, "Tail calls"):
    `guarantee.status` is "unbounded" and its rates are null; no search runs.
    `paths` (`--paths K`, packet rate only): after the SSP, the search goes on until K satisfiable
    paths are found, slowest first (or the paths, the time — `timeout_s` again — or the memory
    run out); the summary lists them under `slowest_paths`, each with its example packet and map
    entries (`nicsim xdp validate --paths` measures them), and `paths.pcap` holds their packets.
    """
    from nicsim import _core
    from nicsim.xdp.solver import make_solver

    if rate not in ("bit", "packet"):
        raise InputError(f"--rate must be 'bit' or 'packet', not '{rate}'")
    if paths is not None:
        if isinstance(paths, bool) or not isinstance(paths, int) or not 1 <= paths <= MAX_PATHS:
            raise InputError(f"--paths must be an integer from 1 to {MAX_PATHS:,}, not {paths!r}")
        if rate != "packet":
            raise InputError("--paths needs --rate packet (the paths are ranked and measured by time per packet)")
    output = None
    if out is not None:
        output = OutputDir(out, inputs=[obj, target_file(target), *loader_inputs(tail_calls)], force=force)
        output.check()  # before the search, not after it
        prefetch_pyplot()  # the figure's import beside the search (this process forks no Python)
    obj = Path(obj)
    data = read_object(obj)
    text, tname = load_target(target)
    analysis_mb = int(memory_mb * ANALYSIS_SHARE)
    slv = make_solver(solver, (memory_mb - analysis_mb) << 20)
    t0 = time.perf_counter()
    try:
        with core_errors(tname):
            search = _core.XdpSearch(data, text, tname, section, loop_bound, rate == "bit", analysis_mb, mac_limit,
                                     program, sorted((map_sizes or {}).items()), list(tail_calls or []))
    except InputError as e:
        slv.close()
        raise InputError(f"{obj}: {e}") from None
    except BaseException:
        slv.close()
        raise
    summary = json.loads(search.naive())
    naive = summary["naive"]
    bit = rate == "bit"
    key_name = "bps" if bit else "pps"

    def elapsed() -> float:
        return round(time.perf_counter() - t0, 6)

    def entry(seconds: float, bound: float) -> dict[str, Any]:
        # The trace gives both rates: the bound searched, and the naive bound of the other.
        return {"seconds": round(seconds, 6), "pps": bound if not bit else naive["pps"],
                "bps": bound if bit else naive["bps"]}

    def tell(seconds: float, bound: float, checked: int, infeasible: int, pruned: int) -> None:
        if progress:
            progress({**entry(seconds, bound), "checked": checked, "infeasible": infeasible, "pruned": pruned})

    # The search runs in the core (`nicsim_xdp::ssp`, paper §5.4), with the solver process as
    # its solver.
    try:
        solver_name = f"{slv.name} {slv.version()}"  # (waits for the solver process to be ready)
        out: Outcome = json.loads(search.run(slv, timeout_s, time.perf_counter() - t0, naive[key_name] or 0.0, paths,
                                             tell))
    finally:
        slv.close()
    status, stopped, ssp = out["status"], out["stopped"], out["ssp"]
    polished = _well_formed(data, summary["object"], tail_calls, out, summary["maps"])
    g = summary["guarantee"]
    if ssp is not None:
        path, example = ssp["path"], ssp["example"]
        g.update(status="ssp", bottleneck=path["bottleneck"], min_packet_bytes=path["min_packet_bytes"],
                 pps=path["pps"], bps=path["pps"] * 8 * path["min_packet_bytes"])
        summary["path"] = {k: path[k] for k in ("insns", "source_lines", "cost", "cost_by_class", "lines",
                                                 "min_packet_bytes")}
        summary["path"].update(feasible=True, retval=example["retval"],
                               xdp_action=XDP_ACTIONS.get(example["retval"], "unknown"))
        summary["example_packet_hex"] = example["packet_hex"]
        summary["example_helper_results"] = example.get("helper_results", [])
        if example.get("context"):
            summary["example_context"] = example["context"]
        base_maps = copy.deepcopy(summary["maps"])
        summary["maps"] = _merge_maps(summary["maps"], example["entries"])
    else:
        base_maps = copy.deepcopy(summary["maps"])
        if status != "unbounded":
            # Every path slower than the bound was refuted (or, when one satisfiable path was
            # found but the search stopped before it was shown the slowest, is no slower than
            # it), so it is a valid guarantee (`exhausted`: every path was refuted — the query
            # model found no packet at all that the program accepts, and the naive bound stands).
            if out["bound"] is not None:
                g[key_name] = max(out["bound"], naive[key_name])
            g["status"] = status
    slowest = [_slow_path(k + 1, p["path"], p["example"], base_maps) for k, p in enumerate(out["slowest"])]
    summary.update(rate=rate, mac_limit=mac_limit, solver=solver_name, paths_enumerated=out["enumerated"],
                   paths_checked=out["checked"], paths_unsat=out["unsat"], paths_pruned=out["pruned"], prefixes_refused=out["refused"],
                   stopped=stopped, search_memory_mb=round(out["search_bytes"] / 2**20, 1))
    summary["memory"] = {
        "budget_mb": memory_mb, "analysis_budget_mb": analysis_mb,
        "analysis_mb": round(out["analysis_bytes"] / 2**20, 1),
        "search_mb": summary["search_memory_mb"],
        "solver_budget_mb": memory_mb - analysis_mb,
        "solver_peak_rss_mb": round(slv.peak_rss_bytes / 2**20, 1),
        "solver_ended": out["solver_ended"],
        "process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10, 1),
    }
    summary["object"].update(path=str(obj), sha256=hashlib.sha256(data).hexdigest(),
                             tail_calls=[list(t) for t in tail_calls or []], linked=linked_objects(tail_calls),
                             kconfig=os.environ.get("NICSIM_KCONFIG") or None)
    summary["verifier"] = verifier_check(data, section, program, summary["maps"], tail_calls)
    if summary["verifier"].get("loads") is False:
        v = summary["verifier"]
        where = f" at {v['line']} ({v['text']})" if v.get("line") else (
            f" at instruction {v['insn']}" if v.get("insn") is not None else "")
        summary.setdefault("warnings", []).append(
            f"the kernel would reject this program: its verifier refuses it{where}: {v['reason']}; "
            "the guarantee is for code the kernel will not run")
    elif not summary["verifier"]["checked"] and not any(
            w in summary["verifier"]["why"] for w in ("Operation not permitted", "Permission denied")):
        # Not for want of privileges (then no analysis could ask): something of the program's.
        summary.setdefault("warnings", []).append(
            f"the running kernel's verifier was not asked ({summary['verifier']['why']}): whether the kernel "
            "loads this program is not known")
    if polished is not None:
        summary.setdefault("warnings", []).append(polished)
    if g["status"] == "timeout":
        scale, unit = (1e9, "Gbit/s") if bit else (1e6, "Mpps")
        ended = {"timeout": f"its --timeout of {timeout_s:g} s", "memory": f"its --memory-mb of {memory_mb:,}"}.get(
            stopped, f"the solver ({stopped})")
        summary.setdefault("warnings", []).append(
            f"the search stopped at {ended} before it found the slowest satisfiable path: the guarantee, "
            f"{g[key_name] / scale:,.3f} {unit}, is the bound it proved (every slower path refuted), not the "
            "slowest path's rate; more time or memory may raise it")
    elif g["status"] == "exhausted":
        summary.setdefault("warnings", []).append(
            "the search refuted every path: no packet takes any path of the program, as its query model sees it; "
            "the guarantee is the naive bound")
    summary["seconds"] = elapsed()
    summary["trace"] = [entry(t, b) for t, b in out["trace"]]
    if paths is not None:
        summary["slowest_paths"] = slowest
        summary["slowest_paths_requested"] = paths
        summary["slowest_paths_stopped"] = out["slowest_stopped"]
    if output is not None:
        with output as o:
            o.summary(summary)
            if ssp is not None:
                _core.write_pcap(o.path / "example.pcap", [bytes.fromhex(ssp["example"]["packet_hex"])])
            key = "bps" if rate == "bit" else "pps"
            o.csv("trace.csv", summary["trace"], columns=["seconds", "bps", "pps"])
            o.csv("path_cost.csv", [{"class": c, **v} for c, v in summary["path"]["cost_by_class"].items()],
                  columns=["class", "insns", "cores", "dram"])
            if status != "unbounded":
                o.text(SLOWEST_PATH_FILE, slowest_path_text(summary))
            if paths is not None:
                if slowest:
                    _core.write_pcap(o.path / "paths.pcap", [bytes.fromhex(p["example_packet_hex"]) for p in slowest])
                o.csv("paths.csv", [{k: p[k] for k in PATH_COLUMNS} for p in slowest], columns=PATH_COLUMNS)
            with o.optional(*figures("analysis")):
                _plot(o, summary, key)
    if "error" in (stopped, out["slowest_stopped"]):
        # The solver failed on a query (its text refused, an error of its own): the summary keeps
        # the bound so far, and the user gets one line to report.
        scale, unit = (1e9, "Gbit/s") if bit else (1e6, "Mpps")
        bound = g[key_name]
        where = f" ({Path(output.given) / 'summary.json'})" if output is not None else ""
        raise SolverFailed(f"{obj}: program {summary['object']['program']}: the solver ({solver_name}) failed on "
                           f"{out['solver_ended']}; the search stopped there with the bound so far"
                           + (f", {bound / scale:,.3f} {unit}" if bound is not None else "") + where,
                           cast("Summary", summary))
    return cast("Summary", summary)


class SolverFailed(NicsimError):
    """The solver failed on a path's query (refused its text, or raised an error of its own):
    the message names the object, the program and the path (its rank in the search, slowest
    first); `summary` is the analysis's summary, with the bound the search had reached
    (`stopped` is `error`, `memory.solver_ended` what the solver said)."""

    def __init__(self, msg: str, summary: Summary) -> None:
        super().__init__(msg)
        self.summary = summary


def _linked_paths(tail_calls: Sequence[tuple[str, int, str]] | None) -> list[str]:
    """The other objects `--tail-call`/`--dispatch` entries name (`OBJ.o[:PROGRAM]`, the rule of
    crates/nicsim-xdp/src/link.rs `split_object`), each once."""
    out: list[str] = []
    for _, _, target in tail_calls or []:
        i = target.find(".o:")
        path = target[:i + 2] if i >= 0 else target if target.endswith(".o") else ""
        if path and path not in out:
            out.append(path)
    return out


def linked_objects(tail_calls: Sequence[tuple[str, int, str]] | None) -> dict[str, str]:
    """[`_linked_paths`] that are files: path → sha256 of the file, so that `validate` can tell
    when one has changed since the analysis."""
    return {p: hashlib.sha256(read_object(Path(p))).hexdigest() for p in _linked_paths(tail_calls)
            if Path(p).is_file()}


def loader_inputs(tail_calls: Sequence[tuple[str, int, str]] | None = None) -> list[str]:
    """The files the loader reads beside the object, which an output folder must not hold (`--force`
    never replaces a folder with an input): the objects `tail_calls` link in, the kernel
    configuration (`--kconfig`, NICSIM_KCONFIG) and the BTF of the CO-RE relocations (`--btf`,
    NICSIM_BTF)."""
    env = [os.environ.get(v) or "" for v in ("NICSIM_KCONFIG", "NICSIM_BTF")]
    return [*_linked_paths(tail_calls), *(e for e in env if e)]


def verifier_check(data: bytes, section: str | None, program: str | None, maps: dict[str, Any],
                   tail_calls: Sequence[tuple[str, int, str]] | None) -> dict[str, Any]:
    """What the running kernel's verifier says of the program (issue 29: a guarantee for a
    program the kernel refuses promises nothing): `{"checked": True, "loads": True}`, `{"checked":
    True, "loads": False, "reason", "insn", "line", "text"}` (the instruction the verifier stopped
    at and its source line), or `{"checked": False, "why"}` when the kernel cannot be asked (no
    privileges for bpf(2), a kfunc nicsim's loader does not load)."""
    from nicsim import _core

    try:
        r = _core.xdp_verify(data, section, json.dumps(maps or {}), program, list(tail_calls or []))
    except _core.InputError as e:
        return {"checked": False, "why": " ".join(str(e.args[0] if e.args else e).split())}
    if r is None:
        return {"checked": True, "loads": True}
    return {"checked": True, "loads": False, **json.loads(r)}


#: The largest `--paths`: each path found costs a solver call and a model, and validation
#: measures each in the kernel.
MAX_PATHS = 1000
PATH_COLUMNS = ["rank", "pps", "ns", "bottleneck", "xdp_action", "packet_bytes", "insns_count"]


def _well_formed(data: bytes, analysed: dict[str, Any], tail_calls: Sequence[tuple[str, int, str]] | None,
                 out: dict[str, Any], maps: dict[str, Any]) -> str | None:
    """The search's example packets (the SSP's, `--paths`'), made well-formed in place where their
    paths allow (issue 34): the header fields a path does not decide take a real packet's values
    (IPv4 version 4, lengths, TTL 64, checksums…), each kept only where the core's interpreter
    still takes the path's instructions and returns its action with the example's maps
    (`_core.xdp_well_formed`, `nicsim_xdp::wellformed`), so that validation stays as it was.
    Returns a warning when the interpreter could not run them (the examples stay the model's)."""
    from nicsim import _core

    found = ([out["ssp"]] if out["ssp"] is not None else []) + list(out["slowest"])
    if not found:
        return None
    section, program = analysed.get("section"), analysed.get("program")
    if section and program:
        program = f"{section}/{program}"  # unique even where a function name is not
    cases = [(bytes.fromhex(p["example"]["packet_hex"]),
              json.dumps(_merge_maps(copy.deepcopy(maps), p["example"]["entries"])),
              p["path"]["insns"], p["example"]["retval"], replay(p["example"].get("helper_results")))
             for p in found]
    try:
        packets = _core.xdp_well_formed(data, section, program, list(tail_calls or []), cases)
    except _core.InputError as e:
        return ("the example packets are the solver's, with the bytes their paths leave free at 0: the "
                f"interpreter could not run them ({' '.join(str(e).split())})")
    for p, pkt in zip(found, packets, strict=True):
        p["example"]["packet_hex"] = pkt.hex()
    return None


def _slow_path(rank: int, path: dict[str, Any], example: dict[str, Any], base_maps: dict[str, Any]) -> SlowPath:
    """One of the slowest satisfiable paths (`--paths`): its rate, cost, instructions, action,
    example packet and the maps that packet needs (the program's maps with the model's entries)."""
    pkt, ret = example["packet_hex"], example["retval"]
    return {"rank": rank, "pps": path["pps"], "ns": 1e9 / path["pps"], "bottleneck": path["bottleneck"],
            "cost": path["cost"], "min_packet_bytes": path["min_packet_bytes"], "insns_count": len(path["insns"]),
            "insns": path["insns"], "retval": ret, "xdp_action": XDP_ACTIONS.get(ret, "unknown"),
            "packet_bytes": len(pkt) // 2, "example_packet_hex": pkt,
            "helper_results": example.get("helper_results", []), "context": example.get("context", []),
            "maps": _merge_maps(copy.deepcopy(base_maps), example["entries"])}


def _plot(o: OutputDir, s: dict[str, Any], key: str) -> None:
    """analysis.png: the bound over time (naive, then each path refuted raises it) and the
    reported path's cycles by instruction class, on the cores and the DRAM engine."""
    from nicsim.output import pyplot

    plt = pyplot()

    scale, unit = (1e9, "Gbit/s") if key == "bps" else (1e6, "Mpps")
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
    tr = s["trace"]
    if tr:
        ax.step([t["seconds"] for t in tr] + [s["seconds"]], [t[key] / scale for t in tr] + [tr[-1][key] / scale],
                where="post", color="tab:blue")
    if s["naive"][key] is not None:
        ax.axhline(s["naive"][key] / scale, color="grey", ls=":", label="naive bound")
    if s["guarantee"][key] is not None:
        ax.axhline(s["guarantee"][key] / scale, color="tab:green", ls="--",
                   label=f"guarantee ({s['guarantee']['status']})")
    else:
        ax.set_title(f"guarantee: {s['guarantee']['status']}")
    ax.set(xlabel="search time (s)", ylabel=f"bound ({unit})",
           title=f"{s['object']['program']} on {s['target']}: {s['paths_enumerated']:,} paths")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    by = s["path"].get("cost_by_class") or {}
    names = sorted(by, key=lambda c: -(by[c]["cores"] + by[c]["dram"]))
    ys = range(len(names))
    ax2.barh([y - 0.2 for y in ys], [by[c]["cores"] for c in names], 0.4, label="core cycles", color="tab:blue")
    ax2.barh([y + 0.2 for y in ys], [by[c]["dram"] for c in names], 0.4, label="DRAM-engine cycles",
             color="tab:orange")
    ax2.set_yticks(list(ys), [f"{c} ({by[c]['insns']})" for c in names], fontsize=8)
    ax2.invert_yaxis()
    ax2.set(xlabel="cycles on the path", title="the path's cost by instruction class (count)")
    ax2.legend(fontsize=8)
    ax2.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    o.figure("analysis", fig)


XDP_ACTIONS = {0: "XDP_ABORTED", 1: "XDP_DROP", 2: "XDP_PASS", 3: "XDP_TX", 4: "XDP_REDIRECT"}


#: Map types indexed by a u32 below max_entries: a key at or past it is no entry (a lookup gives
#: NULL, an update -E2BIG), so an example never lists one (the kernel would refuse to write it).
INDEXED_MAP_TYPES = ("array", "percpu_array", "prog_array", "perf_event_array", "array_of_maps", "devmap",
                     "cpumap", "xskmap", "cgroup_array")


def _merge_maps(maps: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The model's looked-up entries merged into the summary's `maps`, within each map's bounds:
    a sized map of size 0 takes the model's size first, then an array index at or past
    `max_entries` is left out (the model's lookup of it found nothing) and a value is cut or
    zero-padded to `value_size` (issue 29: an example the kernel cannot hold measures nothing)."""
    for e in entries:
        m = maps.get(e["map"])
        if m is not None and "max_entries" in e:
            m["max_entries"] = e["max_entries"]  # the model's size of a map declared with 0
    for e in entries:
        m = maps.get(e["map"])
        if m is None or "max_entries" in e or not e["present"]:
            continue
        key = bytes.fromhex(e["key_hex"])
        if m.get("type") in INDEXED_MAP_TYPES and m.get("max_entries", 0) > 0 \
                and int.from_bytes(key[:4].ljust(4, b"\0"), "little") >= m["max_entries"]:
            continue
        size = m.get("value_size")
        value = e["value_hex"]
        if isinstance(size, int) and size >= 0:
            value = value[:2 * size].ljust(2 * size, "0")
        m["entries"].setdefault(e["key_hex"], value)
    return maps


def analyze_job(job: tuple[str, str, dict[str, Any]] | tuple[str, str, dict[str, Any], list[str]]) \
        -> Summary | NicsimError:
    """One analysis of a sweep, in a worker: (object, target, options[, captures]) → summary, or
    the bad input as a value (raised by the caller once every analysis ran). With captures, the
    program is then profiled on each against this analysis's guarantee (`nicsim.xdp.profile`):
    the summary gets `profiles`, one short profile summary per capture."""
    obj, target, opts = job[:3]
    traffic = job[3] if len(job) > 3 else []
    try:
        s = analyze(obj, target=target, **opts)
    except SolverFailed as e:
        s = e.summary  # its bound is valid; the sweep warns of it (`stopped` is `error`)
    except NicsimError as e:
        return e
    if traffic:
        from nicsim.xdp.profile import profile, short

        keep = {k: opts[k] for k in ("section", "program", "loop_bound", "map_sizes", "tail_calls") if k in opts}
        try:
            cast("dict[str, Any]", s)["profiles"] = [
                short(profile(obj, cap, None, target=target, analysis=cast("dict[str, Any]", s), **keep))
                for cap in traffic]
        except NicsimError as e:
            return e
    return s


#: profiles.csv of `nicsim xdp sweep --traffic`: a row per object, target and capture.
PROFILE_COLUMNS = ["object", "name", "target", "capture", "packets", "costed", "distinct_paths", "sustained_mpps",
                   "guarantee_mpps", "mean_ns", "p50_ns", "p99_ns", "max_ns", "guarantee_ns", "check_ok",
                   "costlier_than_guarantee", "no_path_in_graph"]
SWEEP_COLUMNS = ["object", "name", "program", "target", "naive_gbps", "guarantee_gbps", "naive_mpps", "guarantee_mpps",
                 "status", "bottleneck", "min_packet_bytes", "paths_enumerated", "seconds"]


def object_labels(objs: Sequence[str | os.PathLike[str]]) -> dict[str, str]:
    """How a sweep's table, CSV and plot name each object: its file name without `.o`, or the
    path as given where two objects share a file name (two folders' `lb.o`)."""
    stems = [Path(o).stem for o in objs]
    return {os.fspath(o): st if stems.count(st) == 1 else os.fspath(o) for o, st in zip(objs, stems, strict=True)}


def analyze_many(objs: Sequence[str | os.PathLike[str]], targets: Sequence[str], out: str | os.PathLike[str], *,
                 executor: str = "local", workers: int | None = None, ray_address: str | None = None,
                 force: bool = False, keep_going: bool = True, traffic: Sequence[str | os.PathLike[str]] = (),
                 **opts: Any) -> tuple[SweepSummary, list[dict[str, Any]]]:
    """Analyse every object on every target (`opts` as [`analyze`] takes them) on the sweep
    pool, and write OUT/summary.json (`points`: object, target and each analysis's summary),
    sweep.csv and sweep.parquet (a row per analysis) and sweep.png (the guarantees).

    `keep_going` (the default): an analysis that fails (an object the analyzer refuses) is
    listed in the summary's `failed` with its one-line error, the others are written; when all
    fail, the first one's error is raised and nothing is written. Without it, the first failure
    is raised at once and nothing is written."""
    from nicsim.errors import WorkerKilled
    from nicsim.sweep import failed_entry, run_tasks, unfinished

    for t in targets:  # a bad target or a missing object fails before anything runs
        load_target(t)
    for obj in objs:
        if not Path(obj).is_file():
            raise InputError(f"{obj}: " + ("no such object file" if not os.path.lexists(obj) else
                                           "not a regular file (the object must be a file, not a pipe, device or "
                                           "folder)"))
    for cap in traffic:  # standard input (-), a pipe or a compressed file is copied first (below)
        if os.fspath(cap) != "-" and not os.path.lexists(cap):
            raise InputError(f"{cap}: no such capture file")
        if os.path.isdir(cap):
            raise InputError(f"{cap}: is a folder, not a capture file")
    output = OutputDir(out, inputs=[*objs, *traffic, *(target_file(t) for t in targets),
                               *loader_inputs(opts.get("tail_calls"))],
                       force=force)
    output.check()
    from nicsim.flowmem.reassemble import capture_file, capture_name

    caps = [capture_name(c) for c in traffic]  # as given (the summary's `traffic`, profiles.csv)
    labels = object_labels(objs)
    killed = None
    with contextlib.ExitStack() as spool:
        # Every analysis profiles every capture: one that can be read once (standard input, a
        # pipe) or is compressed is copied to a temporary file first, which they all read.
        read = [os.fspath(spool.enter_context(capture_file(c))) for c in traffic]
        given = dict(zip(read, caps, strict=True))
        jobs = [(os.fspath(obj), t, opts, read) if read else (os.fspath(obj), t, opts) for obj in objs for t in targets]
        try:
            results = run_tasks(analyze_job, jobs, executor=executor, workers=workers, description="analysing",
                                ray_address=ray_address, keep_going=keep_going)
        except WorkerKilled as e:  # keep the analyses that finished
            killed, results = e, e.results
    for s in results:  # the profiles name each capture as given, not by its copy
        if isinstance(s, dict):
            for prof in s.get("profiles", []):
                prof["capture"] = given.get(prof["capture"], prof["capture"])
    failed = [failed_entry(i, {"object": j[0], "target": j[1]}, s) for i, (j, s) in enumerate(zip(jobs, results, strict=True))
              if isinstance(s, NicsimError)]
    points = [{"object": j[0], "target": j[1], "summary": s} for j, s in zip(jobs, results, strict=True)
              if s is not None and not isinstance(s, NicsimError)]
    for p in points:
        if "profiles" in p["summary"]:
            p["profiles"] = p["summary"].pop("profiles")
    if failed and not points and killed is None:  # nothing to keep: the first analysis's error is the answer
        raise InputError(failed[0]["error"] + (f" (and {len(failed) - 1:,} more analyses failed)" if len(failed) > 1 else ""))

    def per(x: float | None, scale: float) -> float | None:
        return None if x is None else x / scale  # null: an unbounded answer

    rows = [{"object": p["object"], "name": labels[p["object"]], "program": p["summary"]["object"]["program"],
             "target": p["target"],
             "naive_gbps": per(p["summary"]["naive"]["bps"], 1e9),
             "guarantee_gbps": per(p["summary"]["guarantee"]["bps"], 1e9),
             "naive_mpps": per(p["summary"]["naive"]["pps"], 1e6),
             "guarantee_mpps": per(p["summary"]["guarantee"]["pps"], 1e6), "status": p["summary"]["guarantee"]["status"],
             "bottleneck": p["summary"]["guarantee"]["bottleneck"],
             "min_packet_bytes": p["summary"]["guarantee"]["min_packet_bytes"],
             "paths_enumerated": p["summary"]["paths_enumerated"], "seconds": p["summary"]["seconds"]}
            for p in points]
    summary: SweepSummary = {"model": "xdp", "targets": list(targets), "objects": [os.fspath(o) for o in objs],
                             "rate": opts.get("rate", "bit"), "points": points}
    if failed:
        summary["failed"] = failed
    if killed is not None:
        summary["unfinished"] = unfinished(killed)
    if caps:
        summary["traffic"] = caps
    profile_rows = [{"object": p["object"], "name": labels[p["object"]], "target": p["target"], **r}
                    for p in points for r in p.get("profiles", [])]
    with output as o:
        if caps:
            o.csv("profiles.csv", profile_rows, columns=PROFILE_COLUMNS)
        o.csv("sweep.csv", rows, columns=SWEEP_COLUMNS)
        o.parquet("sweep.parquet", rows, columns=SWEEP_COLUMNS)
        o.summary(summary)
        with o.optional(*figures("sweep")):
            _plot_sweep(o, rows, summary["rate"])
    if killed is not None:
        raise killed.kept(out)
    return summary, rows


def _plot_sweep(o: OutputDir, rows: list[dict[str, Any]], rate: str) -> None:
    """sweep.png: each object's naive bound and guarantee, a bar per target."""
    from nicsim.output import pyplot

    plt = pyplot()

    key, unit = ("gbps", "Gbit/s") if rate == "bit" else ("mpps", "Mpps")
    objects = list(dict.fromkeys(r["object"] for r in rows))
    names = {r["object"]: r["name"] for r in rows}  # as the table and sweep.csv name them
    targets = list(dict.fromkeys(r["target"] for r in rows))
    w = 0.8 / max(len(targets), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(objects) * max(len(targets), 1)), 4.5))
    for i, t in enumerate(targets):
        by = {r["object"]: r for r in rows if r["target"] == t}
        xs = [j + (i - (len(targets) - 1) / 2) * w for j in range(len(objects))]
        ax.bar(xs, [(by[ob][f"guarantee_{key}"] or 0.0) if ob in by else 0.0 for ob in objects], w,
               label=f"{t}: guarantee")
        ax.scatter(xs, [(by[ob][f"naive_{key}"] or float("nan")) if ob in by else float("nan") for ob in objects],
                   marker="_", s=200, color="black", label="naive bound" if i == 0 else None, zorder=3)
    ax.set_xticks(range(len(objects)), [names[ob] for ob in objects], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"guarantee ({unit})")
    ax.set_xlabel("object")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    o.figure("sweep", fig)
