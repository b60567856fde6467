"""`nicsim flow reassemble`: a capture's TCP flow directions written out as raw byte files.

OUT/flows.json has one entry per flow direction (src, dst, sport, dport, proto, bytes, holes,
file, ...); OUT/<file> holds that direction's stream, with holes zero-filled so that file offsets
are stream offsets (`holes` lists them as [offset, length]). The zero fill is bounded: a
direction's holes add up to at most `max_hole_bytes` (64 MiB by default), so a file is at most
its payload plus that; packets past the bound are dropped, counted as `hole_too_large`, and the
direction is marked `cut`. OUT/summary.json accounts for every packet of the capture. The folder
is written atomically: on an error nothing is left half-written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nicsim.config import core_errors
from nicsim.errors import InputError
from nicsim.output import OutputDir

OVERLAP_POLICIES = ("first", "last")


class _Core:
    """A core object whose methods raise `nicsim.InputError` instead of the core's exception."""

    def __init__(self, core: Any) -> None:
        self._core = core

    def __len__(self) -> int:
        return len(self._core)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._core, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with core_errors(None):
                return attr(*args, **kwargs)

        return call


class FlowView(_Core):
    """One flow direction, read in place: `len`, `read(offset, n)`, `chunks()` ((offset,
    memoryview) pairs over the capture's bytes: no copy), `holes`,
    `segments`, `byte_histogram()`, `count_literal(needle)`, `regex_matches(pattern)` (stream
    offsets), `to_bytes()` (the copy-based assembly, holes zero-filled)."""


class FlowCapture(_Core):
    """A reassembled capture: `counts()`, `directions()`, `arena_bytes`, `limits`,
    `view(flow, direction)`."""

    def view(self, flow: int, direction: int) -> FlowView:
        with core_errors(None):
            return FlowView(self._core.view(flow, direction))


def open_capture(
    capture: str | os.PathLike[str],
    overlap: str = "first",
    max_flows: int | None = None,
    max_arena_bytes: int | None = None,
    max_segments_per_direction: int | None = None,
    max_hole_bytes: int | None = None,
) -> FlowCapture:
    """Reassemble `capture` (pcap or pcapng) into a [`FlowCapture`].

    `overlap`: which bytes win where retransmitted segments disagree, "first" (default) or
    "last". The limits bound memory; packets beyond them are dropped and counted by reason.
    `max_hole_bytes` bounds the holes of each flow direction together (what a stream laid out
    contiguously adds to its payload; default 64 MiB): a segment past it is `hole_too_large`.
    """
    from nicsim import _core

    if overlap not in OVERLAP_POLICIES:
        raise InputError(f"overlap policy {overlap!r}: expected one of {', '.join(OVERLAP_POLICIES)}")
    path = Path(capture)
    if not path.is_file():
        raise InputError(f"{path}: no such capture file")
    try:
        with core_errors(None):
            core = _core.FlowCapture(os.fspath(path), overlap, max_flows, max_arena_bytes, max_segments_per_direction,
                                     max_hole_bytes)
            return FlowCapture(core)
    except InputError as e:
        msg = str(e)
        raise InputError(msg if str(path) in msg else f"{path}: {msg}") from None


def require_tcp(cap: FlowCapture, capture: str | os.PathLike[str]) -> None:
    """A capture without a single TCP flow is bad input for the flow commands: say what it held."""
    if len(cap) == 0:
        counts = {k: v for k, v in cap.counts().items() if k != "read" and v}
        held = ", ".join(f"{v:,} {k.replace('_', '-')}" for k, v in counts.items()) or "nothing"
        raise InputError(f"{capture}: no TCP flow in the capture ({cap.counts()['read']:,} packets: {held})")


def reassemble(
    capture: str | os.PathLike[str],
    out: str | os.PathLike[str],
    overlap: str = "first",
    max_flows: int | None = None,
    max_arena_bytes: int | None = None,
    max_segments_per_direction: int | None = None,
    max_hole_bytes: int | None = None,
) -> dict[str, Any]:
    """Reassemble `capture` and write OUT/flows.json, OUT/summary.json and one file per flow
    direction; returns the summary."""
    cap = open_capture(capture, overlap, max_flows, max_arena_bytes, max_segments_per_direction, max_hole_bytes)
    require_tcp(cap, capture)
    directions = cap.directions()
    counts = cap.counts()
    entries = []
    with OutputDir(out) as o:
        for d in directions:
            name = f"flow{d['flow']:05d}.{d['direction']}.bin"
            view = cap.view(d["flow"], d["direction"])
            o.file(name).write_bytes(view.to_bytes())
            entries.append({**d, "holes": [list(h) for h in d["holes"]], "file": name})
        summary = {
            "capture": str(capture),
            "overlap": overlap,
            "packets": counts,
            "packets_conserved": sum(v for k, v in counts.items() if k != "read") == counts["read"],
            "flows": len(cap),
            "directions": len(entries),
            "stream_bytes": sum(e["bytes"] for e in entries),
            "hole_bytes": sum(h[1] for e in entries for h in e["holes"]),
            "arena_bytes": cap.arena_bytes,
            "max_hole_bytes": cap.limits["max_hole_bytes"],
            "cut_directions": sum(1 for e in entries if e["cut"]),
        }
        o.json("flows.json", entries)
        o.json("summary.json", summary)
    return summary
