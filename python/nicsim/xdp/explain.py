"""What `nicsim xdp analyze` says about where its answer comes from (issue 34): the reported path
annotated by source line as `perf annotate` annotates a function (each line's cycles on the
path, the bottleneck resource first, its helper calls), in full in `slowest_path.txt` and the
costliest lines in the terminal; and the example packet decoded layer by layer, as `tshark -V`
shows it, on one screen.

The per-line costs are the core's (`path.lines`, `nicsim_xdp::analysis::Analysis::cost_by_line`:
each instruction at its own edge's cost, so the lines add up to the path's cost); the packet's
layers are the packet library's (`nicsim_packet::dissect`). This module only lays them out.
"""

from __future__ import annotations

import textwrap
from typing import Any

#: How many of the costliest lines the terminal shows (slowest_path.txt has them all).
SHOWN_LINES = 10
#: The file the annotated path is written to, in the output folder.
SLOWEST_PATH_FILE = "slowest_path.txt"

#: How many bytes an undecoded rest of a frame shows (as the library's `Data` layer).
DATA_SHOWN_BYTES = 32

_LABEL = {"cores": "core cycles", "dram": "DRAM cycles"}
#: The same in nanoseconds (`path.lines[].cores_ns`, `dram_ns`: cycles at the target's clocks).
_NS_LABEL = {"cores": "core ns", "dram": "DRAM ns"}


def _ns(row: dict[str, Any], resource: str) -> str:
    """A line's nanoseconds on `resource`, or `-` in a summary written before they were."""
    v = row.get(f"{resource}_ns")
    return "-" if v is None else f"{v:,.1f}"


def resources(s: dict[str, Any]) -> tuple[str, str]:
    """The resource the listing ranks by (the bottleneck's: `dram` when the DRAM engine limits
    the rate, the cores otherwise, the MAC included) and the other one."""
    return ("dram", "cores") if s["guarantee"].get("bottleneck") == "dram" else ("cores", "dram")


def helper_calls(s: dict[str, Any]) -> list[str]:
    """The path's helper (and kfunc) calls with their cost: `bpf_map_lookup_elem (hash) ×5:
    250.0 core cycles, 500.0 DRAM cycles`, costliest on the bottleneck resource first."""
    first, second = resources(s)
    by = s["path"]["cost_by_class"]
    calls = sorted((c for c in by if c.startswith("call ") and c != "call"), key=lambda c: -by[c][first])
    return [f"{c.removeprefix('call ')} ×{by[c]['insns']}: {by[c][first]:,.1f} {_LABEL[first]}, "
            f"{by[c][second]:,.1f} {_LABEL[second]}" for c in calls]


def slowest_path_text(s: dict[str, Any], limit: int | None = None) -> str:
    """The reported path annotated by source line: a header (the path, its bottleneck and
    cost), then per line its cycles on the bottleneck resource and their share of the path's,
    the other resource's cycles, its instructions, the line and its source, and its helper
    calls; then the helper calls with their cost. In path order, or with `limit`, the `limit`
    costliest lines on the bottleneck resource (the terminal's view)."""
    p, g = s["path"], s["guarantee"]
    first, second = resources(s)
    total = p["cost"][first]
    lines = p["lines"]
    what = "slowest satisfiable path" if p.get("feasible") else "naive bound's slowest path (not shown satisfiable)"
    out = [f"{s['object']['program']} on {s['target']}: the {what}, {len(p['insns']):,} instructions"
           + (f" → {p['xdp_action']}" if p.get("xdp_action") else ""),
           f"bottleneck: {g.get('bottleneck') or '-'}; the path costs {p['cost']['cores']:,.1f} core cycles"
           f"{_total_ns(lines, 'cores')} and {p['cost']['dram']:,.1f} DRAM-engine cycles{_total_ns(lines, 'dram')} "
           "per packet"]
    ranges = [r for r in lines if not r["source"]]
    if ranges:
        n = sum(r["insns"] for r in ranges)
        out.append(f"{n:,} of the path's instructions have no source line (an object built without -g, or code "
                   "the compiler gives line 0): they are listed as instruction ranges, `insns A-B`")
    shown = lines
    if limit is not None:
        shown = sorted(lines, key=lambda r: (-r[first], -r[second]))[:limit]
        out.append(f"the {len(shown)} costliest of {len(lines)} lines by {_LABEL[first]}"
                   + (f" (all of them, in path order: {SLOWEST_PATH_FILE})" if len(shown) < len(lines) else ""))
    width = max((len(r["line"]) for r in shown), default=4)
    out.append(f"{_LABEL[first]:>12} {_NS_LABEL[first]:>10} {'%':>6} {_LABEL[second]:>12} {_NS_LABEL[second]:>10} "
               f"{'insns':>6}  {'line':<{width}}  source")
    for r in shown:
        share = 100 * r[first] / total if total else 0.0
        calls = ("  [" + ", ".join(h.removeprefix("call ") + (f" ×{k}" if k > 1 else "")
                                   for h, k in r["helpers"].items()) + "]") if r["helpers"] else ""
        out.append(f"{r[first]:>12,.1f} {_ns(r, first):>10} {share:>5.1f}% {r[second]:>12,.1f} {_ns(r, second):>10} "
                   f"{r['insns']:>6}  {r['line']:<{width}}  {r['text']}{calls}")
    calls = helper_calls(s)
    out.append("helper calls: " + ("; ".join(calls) if calls else "none"))
    return "\n".join(out) + "\n"


def _total_ns(lines: list[dict[str, Any]], resource: str) -> str:
    """` (N ns)`: the path's nanoseconds on `resource`, the sum of its lines' (empty in a
    summary written before lines had them)."""
    if not lines or any(f"{resource}_ns" not in r for r in lines):
        return ""
    return f" ({sum(r[f'{resource}_ns'] for r in lines):,.1f} ns)"


def _fields_lines(fields: list[str], width: int) -> list[str]:
    """Fields `name: value` on indented lines of at most `width` characters, never split (a
    field longer than that has a line of its own)."""
    lines: list[str] = []
    for f in fields:
        if lines and len(lines[-1]) + 2 + len(f) <= width:
            lines[-1] += ", " + f
        else:
            if lines:
                lines[-1] += ","
            lines.append("    " + f)
    return lines


def decode_packet(frame: bytes, width: int = 100) -> list[str]:
    """A frame decoded layer by layer (`_core.packet_dissect`, the packet library's tree with
    tshark's names): a line per layer, its fields on indented lines after it, wrapped at
    `width` between fields; a frame the library stops on ends with the reason and its
    undecoded bytes."""
    from nicsim import _core

    layers, error = _core.packet_dissect(frame)
    out = [f"Frame: {len(frame)} bytes"]
    for name, offset, length, fields in layers:
        out.append(f"{name} (bytes {offset}-{offset + length - 1})" if length else f"{name} (byte {offset})")
        out.extend(_fields_lines([f"{k}: {v}" for k, v in fields], width))
    if error is not None:
        out.append(f"(not decoded further: {' '.join(error.split())})")
        start = layers[-1][1] + layers[-1][2] if layers else 0
        rest = frame[start:]
        if rest:
            shown = rest[:DATA_SHOWN_BYTES].hex(" ") + (f" … ({len(rest) - DATA_SHOWN_BYTES} more)"
                                                         if len(rest) > DATA_SHOWN_BYTES else "")
            out.extend(textwrap.wrap(f"bytes {start}-{len(frame) - 1}: {shown}", width, initial_indent="    ",
                                     subsequent_indent="    "))
    return out
