"""`nicsim flowmem reassemble`: a capture's TCP flow directions written out as raw byte files.

OUT/flows.json has one entry per flow direction (src, dst, sport, dport, proto, bytes, holes,
file, ...), and directions.csv the same without the holes; OUT/<file> holds that direction's
stream, with holes zero-filled so that file offsets are stream offsets (`holes` lists them as
[offset, length]). The zero fill is bounded: a direction's holes add up to at most
`max_hole_bytes` (64 MiB by default), so a file is at most its payload plus that; packets past
the bound are dropped, counted as `hole_too_large`, and the direction is marked `cut`.
OUT/summary.json accounts for every packet of the capture, and stream_sizes.png plots the
directions' sizes. The folder is written atomically: on an error nothing is left half-written.

A capture is a file, or a stream: standard input (`-`, as `tshark -r -` reads it), a pipe or
a process substitution (`<(zcat x.pcap.gz)`). A stream is checked for a pcap or pcapng magic
number first (so that `/dev/zero` is refused at once) and then spooled to a temporary file,
which the reassembler reads as it reads any capture.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from nicsim import ui
from nicsim.config import core_errors
from nicsim.errors import InputError
from nicsim.flowmem import names
from nicsim.flowmem.summary import ReassembleSummary
from nicsim.output import OutputDir, figures

# The names each option takes: the core's (nicsim.flowmem.names).
OVERLAP_POLICIES = names.NAMES["overlap"]
UNACKED_POLICIES = names.NAMES["unacked"]
HOLE_MARKERS = names.NAMES["hole_marker"]


def tshark_bytes(view: FlowView) -> bytes:
    """A direction's stream as `tshark -z follow,tcp,raw` writes it: the runs of bytes the
    capture holds, each hole between two runs written as the text "[N bytes missing in capture
    file]" and a NUL (epan/dissectors/packet-tcp.c), a hole at the start too, one after the
    last run not shown."""
    out = bytearray()
    at = 0
    for offset, chunk in view.chunks():
        if offset > at:
            out += f"[{offset - at} bytes missing in capture file]".encode() + b"\0"
        out += chunk
        at = offset + len(chunk)
    return bytes(out)


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


#: The first four bytes of a capture: pcap (micro- and nanosecond, both byte orders) and pcapng.
CAPTURE_MAGICS = {bytes.fromhex(m) for m in ("a1b2c3d4", "d4c3b2a1", "a1b23c4d", "4d3cb2a1", "0a0d0d0a")}


PCAPNG_MAGIC = bytes.fromhex("0a0d0d0a")


def _plausible_header(head: bytes) -> bool:
    """A stream's first bytes are a capture's file header: pcap's 24 bytes with version 2.x, or
    a pcapng section header's type, length and byte-order magic. Checked before spooling the
    stream to disk, so that a stream of zeros or text is refused at once."""
    if head[:4] == PCAPNG_MAGIC:
        return len(head) == 12 and head[8:12] in (bytes.fromhex("1a2b3c4d"), bytes.fromhex("4d3c2b1a"))
    if len(head) < 24:
        return False
    big = head[:4] in (bytes.fromhex("a1b2c3d4"), bytes.fromhex("a1b23c4d"))
    major = int.from_bytes(head[4:6], "big" if big else "little")
    return major == 2


def capture_name(capture: str | os.PathLike[str]) -> str:
    """How a capture is named in summaries and errors (`<stdin>` for `-`)."""
    return "<stdin>" if os.fspath(capture) == "-" else str(capture)


@contextlib.contextmanager
def capture_file(capture: str | os.PathLike[str]) -> Iterator[Path]:
    """A path to the capture's bytes: the file itself, or (standard input, a pipe) a temporary
    copy that is removed afterwards."""
    name = capture_name(capture)
    if name == "<stdin>":
        stream: BinaryIO = sys.stdin.buffer
        close = False
    else:
        path = Path(capture)
        if path.is_file():
            yield path
            return
        if not os.path.lexists(path):
            raise InputError(f"{path}: no such capture file")
        if path.is_dir():
            raise InputError(f"{path}: is a folder, not a capture file")
        try:
            stream = path.open("rb")  # a pipe or a device: read it as a stream
        except OSError as e:
            raise InputError(f"{path}: cannot read the capture: {e.strerror}") from None
        close = True
    try:
        head = stream.read(4)
        if head not in CAPTURE_MAGICS:
            what = "empty" if not head else f"starts with {head.hex()}"
            raise InputError(f"{name}: not a pcap or pcapng capture ({what})")
        head += stream.read((24 if head != PCAPNG_MAGIC else 12) - 4)
        if not _plausible_header(head):
            raise InputError(f"{name}: not a pcap or pcapng capture (its file header is not one: {head.hex()})")
        with tempfile.NamedTemporaryFile(prefix="nicsim-capture-", suffix=".pcap") as tmp:
            tmp.write(head)
            shutil.copyfileobj(stream, tmp, 1 << 20)
            tmp.flush()
            yield Path(tmp.name)
    finally:
        if close:
            stream.close()


def open_capture(
    capture: str | os.PathLike[str],
    overlap: str = "first",
    max_flows: int | None = None,
    max_arena_bytes: int | None = None,
    max_segments_per_direction: int | None = None,
    max_hole_bytes: int | None = None,
    unacked: str = "keep",
) -> FlowCapture:
    """Reassemble `capture` (pcap or pcapng) into a [`FlowCapture`].

    `overlap`: which bytes win where retransmitted segments disagree, "first" (default) or
    "last". `unacked`: "keep" (default) every byte captured; "drop" what the peer never
    acknowledged (each direction ends at its peer's highest ACK, at the last byte captured
    before it); "tshark": that only past the direction's first hole, as tshark's follow shows
    a stream. The limits bound memory; packets beyond them are dropped and counted by reason.
    `max_hole_bytes` bounds the holes of each flow direction together (what a stream laid out
    contiguously adds to its payload; default 64 MiB): a segment past it is `hole_too_large`.
    """
    from nicsim import _core

    names.check("overlap", overlap)  # before a stream is spooled
    names.check("unacked", unacked)
    name = capture_name(capture)
    with capture_file(capture) as path:
        try:
            with core_errors(None):
                core = _core.FlowCapture(os.fspath(path), overlap, max_flows, max_arena_bytes,
                                         max_segments_per_direction, max_hole_bytes, unacked)
                return FlowCapture(core)
        except InputError as e:
            msg = str(e).replace(str(path), name)
            raise InputError(msg if name in msg else f"{name}: {msg}") from None


def require_tcp(cap: FlowCapture, capture: str | os.PathLike[str]) -> None:
    """A capture without a single TCP flow is bad input for the flow commands: say what it held."""
    if len(cap) == 0:
        counts = {k: v for k, v in cap.counts().items() if k != "read" and v}
        held = ", ".join(f"{v:,} {k.replace('_', '-')}" for k, v in counts.items()) or "nothing"
        links = cap.unsupported_links
        if links:
            # Name the link types nicsim does not decode, as tshark and libpcap name them.
            names = ", ".join(f"{n} ({name})" if name else str(n) for n, name in links)
            held += f"; link type{'s' if len(links) > 1 else ''} {names} not supported"
        raise InputError(f"{capture_name(capture)}: no TCP flow in the capture ({cap.counts()['read']:,} packets: {held})")


def reassemble(
    capture: str | os.PathLike[str],
    out: str | os.PathLike[str],
    overlap: str = "first",
    max_flows: int | None = None,
    max_arena_bytes: int | None = None,
    max_segments_per_direction: int | None = None,
    max_hole_bytes: int | None = None,
    *,
    unacked: str = "keep",
    hole_marker: str = "zero",
    force: bool = False,
) -> ReassembleSummary:
    """Reassemble `capture` and write OUT/flows.json, OUT/summary.json and one file per flow
    direction; returns the summary. `unacked`: see [`open_capture`]. `hole_marker`: "zero"
    (default) writes each hole as that many zero bytes, so file offsets are stream offsets;
    "tshark" writes the files as `tshark -z follow,tcp,raw` does ([`tshark_bytes`]). `force`:
    replace an existing `out` that nicsim did not write (see [`OutputDir`])."""
    names.check("hole_marker", hole_marker)
    output = OutputDir(out, inputs=[capture], force=force)
    output.check()
    with ui.Progress("reading", transient=True):
        cap = open_capture(capture, overlap, max_flows, max_arena_bytes, max_segments_per_direction, max_hole_bytes,
                           unacked)
    require_tcp(cap, capture)
    directions = cap.directions()
    counts = cap.counts()
    entries = []
    with output as o:
        for d in directions:
            name = f"flow{d['flow']:05d}.{d['direction']}.bin"
            view = cap.view(d["flow"], d["direction"])
            o.file(name).write_bytes(view.to_bytes() if hole_marker == "zero" else tshark_bytes(view))
            entries.append({**d, "holes": [list(h) for h in d["holes"]], "file": name})
        summary: ReassembleSummary = {  # nicsim_version, schema_version: added by o.summary
            "capture": capture_name(capture),
            "overlap": overlap,
            "unacked": unacked,
            "hole_marker": hole_marker,
            "unacked_bytes": sum(e["unacked_bytes"] for e in entries),
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
        o.csv("directions.csv", [{k: v for k, v in e.items() if k != "holes"} | {"holes": len(e["holes"])}
                                 for e in entries])
        o.summary(summary)
        with o.optional(*figures("stream_sizes")):
            _plot_sizes(o, [e["bytes"] for e in entries], capture_name(capture))
    return summary


def _plot_sizes(o: OutputDir, sizes: list[int], capture: str) -> None:
    """stream_sizes.png: the directions' stream sizes, as a histogram (log bins) and a CDF."""
    from nicsim.output import pyplot

    plt = pyplot()
    import numpy as np

    xs = np.sort(np.maximum(np.array(sizes, dtype=float), 1.0))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    if len(xs):
        bins = np.logspace(0, np.log10(xs[-1]) + 0.01, 30)
        ax.hist(xs, bins=bins, color="tab:blue")
        ax2.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post")
    for a in (ax, ax2):
        a.set_xscale("log")
        a.set_xlabel("stream size (bytes, holes included)")
        a.grid(alpha=0.3)
    ax.set_ylabel("flow directions")
    ax2.set_ylabel("share of directions (CDF)")
    ax2.set_ylim(0, 1.01)
    fig.suptitle(f"{capture}: {len(xs):,} flow directions")
    fig.tight_layout()
    o.figure("stream_sizes", fig)
