"""`nicsim xdp profile`: an XDP program on a real capture (issue 36).

The core (`nicsim_xdp::profile`, `_core.xdp_profile`) runs every packet of the capture through
the interpreter in order, with the map state carried from packet to packet, and costs each
packet's path on the analysis's own graph and cost function. This module adds what the guarantee
says (from an analysis folder, or an analysis run here) and checks every packet against it — a
packet costlier than the guarantee is a soundness bug of the analyzer — summarises the costs
(the sustained rate on this traffic, the distribution, the share per action and per path, the
costliest packets), optionally times the same packets in the kernel (`--kernel`, x86-jit), and
writes the output folder: results first, plots last (a plot that fails is a warning).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nicsim.config import core_errors, read_input_file
from nicsim.errors import InputError
from nicsim.output import OutputDir, figures

#: Relative slack of the guarantee check: costs are exact integers (millionths of a cycle), the
#: rates derived from them floating point.
CHECK_EPS = 1e-9
#: The largest --maps file read.
MAX_MAPS_BYTES = 256 << 20
#: Paths listed in summary.json (all of them are in paths.csv).
SUMMARY_PATHS = 50
#: Bars in the plot of paths.
PLOT_PATHS = 30
#: Kept action names (anything else is `retval N`).
ACTIONS = {0: "XDP_ABORTED", 1: "XDP_DROP", 2: "XDP_PASS", 3: "XDP_TX", 4: "XDP_REDIRECT"}
#: The core's markers for packets without a costed path (`nicsim_xdp::profile`).
ACTION_FAULT, ACTION_SKIPPED, ACTION_UNMATCHED, ACTION_NOT_ETHERNET = 2**32 - 1, 2**32 - 2, 2**32 - 3, 2**32 - 4
NO_PATH = 2**32 - 1
PATH_COLUMNS = ["path", "packets", "share", "xdp_action", "insns", "core_cycles", "dram_cycles", "ns", "pps",
                "bottleneck", "min_packet_bytes", "first_packet", "kernel_ns", "kernel_packets"]


def action_name(a: int) -> str:
    return {ACTION_FAULT: "fault", ACTION_SKIPPED: "skipped (too long)", ACTION_UNMATCHED: "no path of the graph",
            ACTION_NOT_ETHERNET: "skipped (no Ethernet frame)"}.get(a) or ACTIONS.get(a, f"retval {a}")


# -- --maps -------------------------------------------------------------------------------------

def _bpftool_bytes(v: Any, where: str) -> str:
    """A bpftool byte list (`["0x0a", "0x00", ...]`) as hex."""
    if not isinstance(v, list) or not all(isinstance(b, str) for b in v):
        raise InputError(f"{where}: not a list of bytes as bpftool writes them (\"0x0a\")")
    try:
        out = bytes(int(b, 16) for b in v)
    except ValueError:
        raise InputError(f"{where}: not a list of bytes as bpftool writes them (\"0x0a\")") from None
    return out.hex()


def _bpftool_dump(doc: Any, name: str, f: str) -> dict[str, Any]:
    """The entries of `bpftool map dump -j` output (a list of {key, value} or per-CPU {key,
    values: [{cpu, value}]}; CPU 0's value, the CPU the interpreter runs on)."""
    if not isinstance(doc, list):
        raise InputError(f"{f}: not the output of `bpftool map dump -j` (a JSON list of entries)")
    entries: dict[str, str] = {}
    for i, e in enumerate(doc):
        where = f"{f}: entry {i}"
        if not isinstance(e, dict) or "key" not in e:
            raise InputError(f"{where}: not an object with \"key\" and \"value\"")
        key = _bpftool_bytes(e["key"], f"{where}: key")
        if "value" in e:
            value = _bpftool_bytes(e["value"], f"{where}: value")
        elif isinstance(e.get("values"), list) and e["values"]:
            cpu0 = next((v for v in e["values"] if isinstance(v, dict) and v.get("cpu") == 0), e["values"][0])
            if not isinstance(cpu0, dict):
                raise InputError(f"{where}: values: not a list of {{cpu, value}}")
            value = _bpftool_bytes(cpu0.get("value"), f"{where}: values[cpu 0].value")
        else:
            raise InputError(f"{where}: no \"value\" (or per-CPU \"values\")")
        entries[key] = value
    return {name: {"entries": entries}}


def read_maps(specs: Sequence[str] | None) -> tuple[dict[str, Any], str]:
    """The initial map state from `--maps` values: `FILE` (nicsim's maps JSON, `{name: {"entries":
    {key_hex: value_hex}}}`, or an analysis's summary.json, whose "maps" are taken) or `NAME=FILE`
    (`bpftool map dump -j` output for map NAME). Returns the maps and a label of the files."""
    maps: dict[str, Any] = {}
    files: list[str] = []
    for spec in specs or []:
        if not spec:
            raise InputError("--maps: an empty path (give FILE or NAME=FILE)")
        name, eq, f = spec.partition("=")
        if eq and name and not f and not os.path.lexists(spec):
            raise InputError(f"--maps {spec}: no FILE after '=' (give NAME=FILE: a `bpftool map dump -j` of map {name})")
        if not (eq and name and f and not os.path.lexists(spec)):  # FILE, else NAME=FILE
            name, f = "", spec
        raw = read_input_file(Path(f), "maps file", MAX_MAPS_BYTES)
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as e:
            where = f"line {e.lineno}: {e.msg}" if isinstance(e, json.JSONDecodeError) else " ".join(str(e).split())[:120]
            raise InputError(f"{f}: not JSON: {where}") from None
        if name:
            got = _bpftool_dump(doc, name, f)
        elif isinstance(doc, list):
            raise InputError(f"{f}: a list (the output of `bpftool map dump -j`?): give the map's name, "
                             f"--maps NAME={f}")
        elif isinstance(doc, dict):
            got = doc["maps"] if isinstance(doc.get("maps"), dict) and "guarantee" in doc else doc
            for m, v in got.items():
                if not isinstance(v, dict):
                    raise InputError(f"{f}: map '{m}': not an object with \"entries\"")
                if not isinstance(v.get("entries", {}), dict):
                    raise InputError(f"{f}: map '{m}': entries: not an object of key_hex: value_hex")
        else:
            raise InputError(f"{f}: not a JSON object of maps")
        for m, v in got.items():
            if m in maps:
                raise InputError(f"{f}: map '{m}' is given twice by --maps")
            maps[m] = v
        files.append(f)
    return maps, ", ".join(files)


# -- the guarantee --------------------------------------------------------------------------------

def short(s: dict[str, Any]) -> dict[str, Any]:
    """A profile's figures in one flat row (`nicsim xdp sweep --traffic`'s profiles.csv)."""
    c, ck = s["cost_ns"], s["check"]
    return {"capture": s["capture"], "packets": s["packets"]["total"], "costed": s["packets"]["costed"],
            "distinct_paths": s["distinct_paths"],
            "sustained_mpps": s["sustained"]["pps"] / 1e6 if s["sustained"]["pps"] is not None else None,
            "guarantee_mpps": s["guarantee"]["pps"] / 1e6 if s["guarantee"]["pps"] else None,
            "mean_ns": c["mean"], "p50_ns": c["p50"], "p99_ns": c["p99"], "max_ns": c["max"],
            "guarantee_ns": s["guarantee"]["ns"], "check_ok": ck["ok"],
            "costlier_than_guarantee": ck["costlier_than_guarantee"], "no_path_in_graph": ck["no_path_in_graph"],
            "check_first": ck.get("first")}


def _guarantee_from(analysis: Path, data: bytes) -> dict[str, Any]:
    from nicsim.xdp.validate import _read_analysis

    s = _read_analysis(analysis)
    if "sustained" in s or not isinstance(s.get("path"), dict):  # a profile's own folder, say
        raise InputError(f"{analysis}/summary.json: not the summary of `nicsim xdp analyze` (no `path`"
                         + ("; it is a profile's" if "sustained" in s else "") + ")")
    if s.get("object", {}).get("sha256") not in (None, hashlib.sha256(data).hexdigest()):
        raise InputError(f"{analysis}/summary.json: the analysis is of another object (sha256 differs)")
    return s


def _target_name(text: str) -> str:
    import tomllib

    try:
        return str(tomllib.loads(text).get("name", ""))
    except tomllib.TOMLDecodeError:
        return ""


# -- the profile ------------------------------------------------------------------------------------

def profile(obj: str | os.PathLike[str], capture: str | os.PathLike[str], out: str | os.PathLike[str] | None = None,
            *, target: str = "nfp", maps: Sequence[str] | None = None,
            analysis: str | os.PathLike[str] | dict[str, Any] | None = None,
            kernel: bool = False, packets_table: str | None = None, section: str | None = None,
            program: str | None = None, loop_bound: int | None = None, map_sizes: dict[str, int] | None = None,
            tail_calls: Sequence[tuple[str, int, str]] | None = None, mac_limit: bool = True,
            timeout_s: float = 60.0, force: bool = False,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Profile the XDP program in `obj` on `capture`; write the folder `out` when given. Returns
    the summary; `summary["check"]["ok"]` is False when a packet is costlier than the guarantee
    (or takes no path of the analysis's graph). `analysis`: a folder of `nicsim xdp analyze`, or
    an analysis's summary itself (a sweep's), whose guarantee is checked; None: one runs here."""
    import numpy as np

    from nicsim import _core
    from nicsim.xdp.analyze import analyze, load_target, loader_inputs, read_object, target_file

    say = progress or (lambda _m: None)
    obj, capture = Path(obj), Path(capture)
    data = read_object(obj)
    if os.fspath(capture) != "-" and not os.path.lexists(capture):  # -: standard input
        raise InputError(f"{capture}: cannot read the capture: No such file or directory")
    if packets_table not in (None, "parquet"):
        raise InputError(f"--packets {packets_table}: the only per-packet table is parquet")
    text, where = load_target(target)
    tname = _target_name(text) or target
    if kernel and tname != "x86-jit":
        raise InputError(f"--kernel measures the x86-jit estimates: give --target x86-jit, not {target}")
    initial, maps_label = read_maps(maps)
    output = None
    if out is not None:
        output = OutputDir(out, inputs=[obj, capture, analysis if not isinstance(analysis, dict) else None,
                                        target_file(target), *loader_inputs(tail_calls), *(
            m.partition("=")[2] or m for m in maps or [])], force=force)
        output.check()

    # The guarantee: from the analysis given, else from an analysis run here (packet rate).
    if analysis is not None:
        say("reading the analysis")
        s = analysis if isinstance(analysis, dict) else _guarantee_from(Path(analysis), data)
        if s.get("target") != tname:
            raise InputError(f"{analysis}/summary.json: the analysis is for target {s.get('target')}, the profile "
                             f"for {tname}: give --target {s.get('target')} or another analysis")
        o = s.get("object", {})
        section = o.get("section") if section is None else section
        program = o.get("program") if program is None else program
        if program is not None and section is not None and "/" not in program:
            program = f"{section}/{program}"
        if not tail_calls and isinstance(o.get("tail_calls"), list):
            tail_calls = [tuple(t) for t in o["tail_calls"]]
        if not mac_limit and s.get("mac_limit", True):
            raise InputError(f"--no-mac-limit: {analysis}/summary.json is an analysis with the MAC limit, and the "
                             "profile takes the analysis's: analyse with --no-mac-limit, or leave it out here")
        mac_limit = bool(s.get("mac_limit", mac_limit))
        source = "the sweep's analysis" if isinstance(analysis, dict) else str(analysis)
    else:
        say("analysing")
        s = analyze(obj, None, target=target, section=section, program=program, loop_bound=loop_bound, rate="packet",
                    timeout_s=timeout_s, mac_limit=mac_limit, map_sizes=map_sizes, tail_calls=tail_calls)
        source = "analysed here (packet rate)"
    g = s["guarantee"]

    say("profiling")
    from nicsim.flowmem.reassemble import capture_file, capture_name

    # A compressed capture (gzip, zstd, LZ4, xz) is read as the flowmem commands read it.
    with capture_file(capture) as readable, core_errors(None, about=f"{obj} on {capture}"):
        raw, cols = _core.xdp_profile(data, text, where, str(readable), json.dumps(initial), section, program,
                                      loop_bound, mac_limit, sorted((map_sizes or {}).items()),
                                      list(tail_calls or []), maps_about=f"--maps {maps_label}", kernel=kernel)
    p = json.loads(raw)
    if p["packets"] == 0 and not p["skipped_long"] and not p["not_ethernet"]:
        raise InputError(f"{capture_name(capture)}: the capture holds no packets: there is nothing to profile")
    ts = np.frombuffer(cols["ts_ns"], dtype="<u8")
    nbytes = np.frombuffer(cols["bytes"], dtype="<u4")
    action = np.frombuffer(cols["action"], dtype="<u4")
    path = np.frombuffer(cols["path"], dtype="<u4")
    costed = path != NO_PATH
    path_ns = np.array([q["ns"] for q in p["paths"]] or [0.0])
    path_pps = np.array([q["pps"] for q in p["paths"]] or [0.0])
    ns = np.where(costed, path_ns[np.where(costed, path, 0)], np.nan)
    n = len(path)

    # The check: every packet against the guarantee.
    check: dict[str, Any] = {"guarantee_source": source, "status": g["status"]}
    bad = np.zeros(n, dtype=bool)
    if g["status"] != "unbounded" and g.get("pps"):
        if s.get("rate") == "bit" and g.get("bps"):
            pkt_bps = np.where(costed, path_pps[np.where(costed, path, 0)] * 8.0 * nbytes, np.inf)
            bad = pkt_bps < g["bps"] * (1 - CHECK_EPS)
            check.update(rate="bit", bps=g["bps"])
        else:
            bad = np.where(costed, path_pps[np.where(costed, path, 0)], np.inf) < g["pps"] * (1 - CHECK_EPS)
            check.update(rate="packet", pps=g["pps"])
        check["guarantee_ns"] = 1e9 / g["pps"]
        check["checked"] = True
    else:
        check["checked"] = False
    unmatched = action == ACTION_UNMATCHED
    violations = np.flatnonzero(bad | unmatched)
    check["costlier_than_guarantee"] = int(bad.sum())
    check["no_path_in_graph"] = int(unmatched.sum())
    check["ok"] = len(violations) == 0
    if len(violations):
        i = int(violations[0])
        check["first"] = {"index": i, "ts_ns": int(ts[i]), "bytes": int(nbytes[i]),
                          "ns": None if np.isnan(ns[i]) else float(ns[i]),
                          "path": None if path[i] == NO_PATH else int(path[i]),
                          "what": "no path of the analysis's graph" if unmatched[i] else "costlier than the guarantee"}

    # --kernel: the same packets in the kernel, one by one, the map state carried (the core ran
    # each packet the interpreter ran once more in the kernel, in order).
    kern: dict[str, Any] | None = None
    kernel_ns = None
    if kernel:
        kernel_ns = np.frombuffer(cols["kernel_ns"], dtype="<f8")
        kern = _kernel_summary(kernel_ns, np.frombuffer(cols["kernel_action"], dtype="<u4"), action, path, p["paths"])

    # The summary.
    def dist(v: Any) -> dict[str, float | None]:
        v = v[~np.isnan(v)] if len(v) else v
        if not len(v):
            return {"mean": None, "p50": None, "p99": None, "max": None}
        return {"mean": float(v.mean()), "p50": float(np.percentile(v, 50)), "p99": float(np.percentile(v, 99)),
                "max": float(v.max())}

    paths_rows = []
    for q in p["paths"]:
        row = {"path": q["id"], "packets": q["packets"], "share": q["packets"] / n if n else 0.0,
               "xdp_action": action_name(q["retval"]), "insns": q["insns"], "core_cycles": q["core_cycles"],
               "dram_cycles": q["dram_cycles"], "ns": q["ns"], "pps": q["pps"], "bottleneck": q["bottleneck"],
               "min_packet_bytes": q["min_packet_bytes"], "first_packet": q["first_packet"]}
        if kern is not None:
            row.update(kern["per_path"].get(q["id"], {"kernel_ns": None, "kernel_packets": 0}))
        paths_rows.append(row)
    paths_rows.sort(key=lambda r: (-r["packets"], r["path"]))
    acts, act_n = np.unique(action, return_counts=True)
    actions = [{"xdp_action": action_name(int(a)), "packets": int(c), "share": int(c) / n}
               for a, c in sorted(zip(acts, act_n, strict=True), key=lambda x: -x[1])]
    top = sorted(p["top"], key=lambda k: (-k["ns"], k["index"]))
    summary: dict[str, Any] = {
        "object": {"path": str(obj), "sha256": hashlib.sha256(data).hexdigest(), "program": p["program"],
                   "section": p["section"]},
        "capture": capture_name(capture), "target": tname, "mac_limit": mac_limit, "maps": maps_label or None,
        "packets": {"total": n, "costed": p["costed"], "faults": p["faults"], "no_path_in_graph": p["unmatched"],
                    "skipped_too_long": p["skipped_long"], "padded": p["padded"], "cut_by_snaplen": p["cut"],
                    "made_ethernet": p["relinked"], "skipped_no_ethernet": p["not_ethernet"]},
        "sustained": p["sustained"],
        "guarantee": {"pps": g.get("pps"), "bps": g.get("bps"), "status": g["status"],
                      "bottleneck": g.get("bottleneck"), "ns": 1e9 / g["pps"] if g.get("pps") else None,
                      "source": source},
        "naive": {"pps": s.get("naive", {}).get("pps"), "ns": p["naive"]["ns"]},
        "cost_ns": dist(ns),
        "actions": actions,
        "distinct_paths": len(p["paths"]),
        "paths": paths_rows[:SUMMARY_PATHS],
        "costliest_packets": [{k: t[k] for k in ("index", "ts_ns", "ns", "path")} for t in top],
        "check": check,
        "faults": p["fault_notes"], "no_path_notes": p["unmatched_notes"],
        "profile_seconds": p["seconds"],
    }
    if kern is not None:
        summary["kernel"] = {k: v for k, v in kern.items() if k != "per_path"}
        if kern["action_mismatches"]:
            check["ok"] = False
            check["kernel_action_mismatches"] = kern["action_mismatches"]
    warnings = []
    if not p["costed"]:
        # No packet took a costed path: a rate of no packets would be the MAC's, not this traffic's.
        summary["sustained"] = {k: None for k in summary["sustained"]}
        warnings.append("no packet took a costed path (each faulted, or took no path of the analysis's graph): "
                        "there is no sustained rate on this traffic")
    if p["faults"]:
        warnings.append(f"{p['faults']:,} packets faulted in the interpreter (first: packet "
                        f"{p['fault_notes'][0]['index']}: {p['fault_notes'][0]['what']}); they are not costed")
    if p["skipped_long"]:
        warnings.append(f"{p['skipped_long']:,} packets are longer than the target's MTU + 14 "
                        f"({p['max_packet_bytes']} B; a capture after GRO?) and were skipped")
    if p["not_ethernet"]:
        warnings.append(f"{p['not_ethernet']:,} packets of a link type without an EtherType (802.11, PPP, not IP) "
                        "were skipped")
    if p["cut"]:
        warnings.append(f"{p['cut']:,} packets were cut by the capture's snap length; they ran as captured")
    warnings.extend(f"capture: {w}" for w in p.get("capture_warnings", []))
    if warnings:
        summary["warnings"] = warnings

    if output is not None:
        with output as o:
            o.summary(summary)
            o.csv("paths.csv", paths_rows, columns=PATH_COLUMNS)
            o.csv("actions.csv", actions, columns=["xdp_action", "packets", "share"])
            o.csv("costliest_packets.csv", summary["costliest_packets"], columns=["index", "ts_ns", "ns", "path"])
            if top:
                _core.write_pcap(o.path / "costliest_packets.pcap", [bytes.fromhex(t["packet_hex"]) for t in top])
            o.json("maps_after.json", p["maps_after"])
            if packets_table == "parquet":
                _packets_parquet(o, ts, nbytes, action, path, cols, ns, kernel_ns)
            with o.optional(*figures("profile")):
                _plot(o, summary, ts, ns, paths_rows)
    return summary


def _packets_parquet(o: OutputDir, ts: Any, nbytes: Any, action: Any, path: Any, cols: dict[str, bytes], ns: Any,
                     kernel_ns: Any) -> None:
    """packets.parquet: one row per packet (index, capture time, bytes, action, path, cost)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(path)
    table = {"index": np.arange(n, dtype=np.uint64), "ts_ns": ts, "bytes": nbytes, "action": action,
             "xdp_action": pa.array([action_name(int(a)) for a in action]) if n < 1 else
             pa.DictionaryArray.from_arrays(pa.array(np.unique(action, return_inverse=True)[1].astype(np.int32)),
                                            pa.array([action_name(int(a)) for a in np.unique(action)])),
             "path": pa.array(path.astype(np.int64), mask=path == NO_PATH),
             "core_cycles": np.frombuffer(cols["core"], dtype="<u8") / 1e6,
             "dram_cycles": np.frombuffer(cols["dram"], dtype="<u8") / 1e6,
             "ns": pa.array(ns, mask=np.isnan(ns))}
    if kernel_ns is not None:
        table["kernel_ns"] = pa.array(kernel_ns, mask=np.isnan(kernel_ns))
    pq.write_table(pa.table(table), o.file("packets.parquet"))


def _kernel_summary(kns: Any, kact: Any, action: Any, path: Any, paths: list[dict[str, Any]]) -> dict[str, Any]:
    """The kernel's times beside the estimates: per path the median of its packets' single runs
    and its error (measured over estimate, as `validate --paths` gives it), their distribution,
    and the packets whose action in the kernel is not the interpreter's."""
    import numpy as np

    from nicsim.xdp.validate import error_distribution

    ran = ~np.isnan(kns)
    mism = ran & (kact != action)
    costed = ran & (path != NO_PATH)
    per_path: dict[int, dict[str, Any]] = {}
    rows = []
    if costed.any():
        order = np.argsort(path[costed], kind="stable")
        ids, starts = np.unique(path[costed][order], return_index=True)
        times = kns[costed][order]
        for k, pid in enumerate(ids):
            t = times[starts[k]:starts[k + 1] if k + 1 < len(starts) else len(times)]
            med = float(np.median(t))
            est = paths[int(pid)]["ns"]
            per_path[int(pid)] = {"kernel_ns": med, "kernel_packets": len(t)}
            rows.append({"status": "ok", "error_pct": (med / est - 1) * 100 if med > 0 else None})
    return {"packets": int(ran.sum()), "median_ns": float(np.median(kns[ran])) if ran.any() else None,
            "action_mismatches": int(mism.sum()),
            "first_mismatch": int(np.flatnonzero(mism)[0]) if mism.any() else None,
            "errors": error_distribution(rows), "per_path": per_path}


def _plot(o: OutputDir, s: dict[str, Any], ts: Any, ns: Any, paths_rows: list[dict[str, Any]]) -> None:
    """profile.png: the per-packet cost's CDF with the guarantee and the naive bound, the cost
    over the capture's time, and a bar per path (its packets, its cost)."""
    import numpy as np

    from nicsim.output import pyplot

    plt = pyplot()
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(16, 4.4))
    v = ns[~np.isnan(ns)]
    title = f"{s['object']['program']} on {s['target']}: {Path(s['capture']).name}"
    if len(v):
        x = np.sort(v)
        a1.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color="tab:blue", label="packets")
    for val, label, style in ((s["guarantee"]["ns"], f"guarantee ({s['guarantee']['status']})", "--"),
                              (s["naive"]["ns"], "naive bound", ":")):
        if val:
            a1.axvline(val, color="tab:red" if style == "--" else "grey", ls=style, label=label)
    a1.set(xlabel="target time per packet (ns)", ylabel="share of packets", title=title)
    a1.legend(fontsize=8)
    a1.grid(alpha=0.3)
    t = (ts.astype(np.float64) - float(ts.min())) / 1e9 if len(ts) else ts
    ok = ~np.isnan(ns)
    a2.plot(t[ok], ns[ok], ".", ms=2, color="tab:blue", rasterized=True)
    if s["guarantee"]["ns"]:
        a2.axhline(s["guarantee"]["ns"], color="tab:red", ls="--")
    a2.set(xlabel="capture time (s)", ylabel="target time per packet (ns)", title="cost over the capture")
    a2.grid(alpha=0.3)
    shown = paths_rows[:PLOT_PATHS]
    ys = range(len(shown))
    a3.barh(list(ys), [r["ns"] for r in shown], color="tab:blue")
    a3.set_yticks(list(ys), [f"path {r['path']} {r['xdp_action']} ({r['share']:.1%})" for r in shown], fontsize=7)
    a3.invert_yaxis()
    if s["guarantee"]["ns"]:
        a3.axvline(s["guarantee"]["ns"], color="tab:red", ls="--")
    a3.set(xlabel="target time per packet (ns)", title=f"paths by packets ({len(shown)} of {s['distinct_paths']})")
    a3.grid(alpha=0.3, axis="x")
    for ax, axis in ((a1, "x"), (a2, "both"), (a3, "x")):  # plain numbers: a factor (1e8) names no unit
        ax.ticklabel_format(axis=axis, style="plain", useOffset=False)
    fig.tight_layout()
    o.figure("profile", fig)
