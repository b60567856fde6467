"""`nicsim flowmem reassemble`: a capture's TCP flow directions written out as raw byte files.

OUT/flows.json has one entry per flow direction (src, dst, sport, dport, proto, bytes, holes,
file, ...), and directions.csv the same without the holes; OUT/<file> holds that direction's
stream (only a direction with at least one stream byte has a file: `file` is null for the others,
so that a SYN flood writes no file per flow), with holes zero-filled so that file offsets are stream offsets (`holes` lists them as
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
import io
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
from nicsim.output import OutputDir, figures, pid_alive

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


#: The first four bytes of a capture: pcap (micro- and nanosecond, both byte orders; and the
#: "modified" pcap of Kuznetzov's libpcap patch) and pcapng.
CAPTURE_MAGICS = {bytes.fromhex(m) for m in ("a1b2c3d4", "d4c3b2a1", "a1b23c4d", "4d3cb2a1", "a1b2cd34", "34cdb2a1",
                                             "0a0d0d0a")}


PCAPNG_MAGIC = bytes.fromhex("0a0d0d0a")


def _plausible_header(head: bytes) -> bool:
    """A stream's first bytes are a capture's file header: pcap's 24 bytes with version 2.x, or
    a pcapng section header's type, length and byte-order magic. Checked before spooling the
    stream to disk, so that a stream of zeros or text is refused at once."""
    if head[:4] == PCAPNG_MAGIC:
        return len(head) == 12 and head[8:12] in (bytes.fromhex("1a2b3c4d"), bytes.fromhex("4d3c2b1a"))
    if len(head) < 24:
        return False
    big = head[:4] in (bytes.fromhex("a1b2c3d4"), bytes.fromhex("a1b23c4d"), bytes.fromhex("a1b2cd34"))
    major = int.from_bytes(head[4:6], "big" if big else "little")
    return major == 2


def capture_name(capture: str | os.PathLike[str]) -> str:
    """How a capture is named in summaries and errors (`<stdin>` for `-`)."""
    return "<stdin>" if os.fspath(capture) == "-" else str(capture)


#: Compressed captures, read through as tshark reads them: gzip, zstd and LZ4 frames (wiretap's
#: file_wrappers.c reads all three, zstd and LZ4 since Wireshark 4.2), and xz.
GZIP_MAGIC = bytes.fromhex("1f8b")
XZ_MAGIC = bytes.fromhex("fd377a585a00")
ZSTD_MAGIC = bytes.fromhex("28b52ffd")
LZ4_MAGIC = bytes.fromhex("04224d18")


def _compression(head: bytes) -> str | None:
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    if head[:6] == XZ_MAGIC:
        return "xz"
    if head[:4] == ZSTD_MAGIC:
        return "zstd"
    if head[:4] == LZ4_MAGIC:
        return "lz4"
    return None


@contextlib.contextmanager
def capture_file(capture: str | os.PathLike[str]) -> Iterator[Path]:
    """A path to the capture's bytes: the file itself, or (standard input, a pipe, a gzip-, zstd-,
    LZ4- or xz-compressed file) a temporary copy, decompressed, that is removed afterwards. The copy
    is on disk, never in memory, so a small compressed file that expands a thousandfold costs
    disk, as tshark's reading it costs time."""
    name = capture_name(capture)
    if name == "<stdin>":
        stream: BinaryIO = sys.stdin.buffer
        close = False
    else:
        path = Path(capture)
        if path.is_file():
            try:
                with path.open("rb") as f:
                    compressed = _compression(f.read(6))
            except OSError as e:
                raise InputError(f"{path}: cannot read the capture: {e.strerror}") from None
            if compressed is None:
                yield path
                return
        elif not os.path.lexists(path):
            raise InputError(f"{path}: no such capture file")
        elif path.is_dir():
            raise InputError(f"{path}: is a folder, not a capture file")
        try:
            stream = path.open("rb")  # a pipe, a device or a compressed file: read it as a stream
        except OSError as e:
            raise InputError(f"{path}: cannot read the capture: {e.strerror}") from None
        close = True
    try:
        plain, kind = _decompressed(stream)
        head = _read_head(plain, name, 4)
        if head not in CAPTURE_MAGICS:
            what = f"starts with {head.hex()}" if head else f"{kind} data that decompresses to nothing" if kind else "empty"
            raise InputError(f"{name}: not a pcap or pcapng capture ({what})")
        head += _read_head(plain, name, (24 if head != PCAPNG_MAGIC else 12) - 4)
        if not _plausible_header(head):
            raise InputError(f"{name}: not a pcap or pcapng capture (its file header is not one: {head.hex()})")
        _remove_stale_spools()
        with tempfile.NamedTemporaryFile(prefix=f"{SPOOL_PREFIX}{os.getpid()}-", suffix=".pcap") as tmp:
            tmp.write(head)
            _copy(plain, tmp, name)
            tmp.flush()
            yield Path(tmp.name)
    finally:
        if close:
            stream.close()


#: The temporary copies of captures read as streams: `nicsim-capture-PID-XXXX.pcap` in the
#: temporary folder.
SPOOL_PREFIX = "nicsim-capture-"


def _remove_stale_spools() -> None:
    """Remove the temporary copies that processes which are gone left behind (a run killed with
    SIGKILL or by the OOM killer cannot remove its own), as output folders' debris is removed."""
    import glob

    for f in glob.glob(os.path.join(tempfile.gettempdir(), f"{SPOOL_PREFIX}*-*.pcap")):
        pid = os.path.basename(f)[len(SPOOL_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(f)


def _decompressed(stream: BinaryIO) -> tuple[BinaryIO, str | None]:
    """`stream`, decompressed when it starts with a compressed format's magic number
    ([`_Inflated`]; zstd by the `zstandard` library's reader, which gives at most what is asked
    of it and, on a stream cut short, every block before the cut), and the format (None: not
    compressed)."""
    import io

    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[arg-type]
    kind = _compression(buffered.peek(6)[:6])
    if kind is None:
        return buffered, None
    if kind == "zstd":
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True, closefd=False)
        return io.BufferedReader(reader, 1 << 20), kind  # type: ignore[arg-type]
    return io.BufferedReader(_Inflated(buffered, kind), 1 << 20), kind  # type: ignore[arg-type]


class _Inflated(io.RawIOBase):
    """A gzip (every member), xz (every stream) or LZ4 (every frame) stream, decompressed as it
    is read, at most a read's worth of output at a time. A stream cut short ends where its compressed bytes end,
    with all they held: the capture then ends inside a record, as a cut plain capture does.
    (Python's `GzipFile` and `LZMAFile` raise `EOFError` there instead, and the output of that
    read — up to a MiB, all of a small capture — was lost.) A corrupt stream raises
    [`_corrupt`]'s errors."""

    def __init__(self, raw: BinaryIO, kind: str) -> None:
        self._raw, self._kind, self._gzip = raw, kind, kind == "gzip"
        self._d: Any = self._decompressor()
        self._input = b""  # compressed bytes read and not yet given to the decompressor
        self._ended = False

    def _decompressor(self) -> Any:
        import zlib

        if self._gzip:
            return zlib.decompressobj(wbits=31)
        if self._kind == "lz4":
            import lz4.frame

            return lz4.frame.LZ4FrameDecompressor()
        import lzma

        return lzma.LZMADecompressor()

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        while not self._ended:
            d = self._d
            if d.eof:  # a member or stream ended: another may follow it
                self._input = (d.unused_data or b"") + self._input  # (LZ4's: None when there is none)
                if not self._input:
                    self._input = self._raw.read(1 << 16)
                if not self._input:
                    self._ended = True
                    break
                self._d = d = self._decompressor()
            if self._gzip:
                data = d.unconsumed_tail or self._input or self._raw.read(1 << 16)
                if data is self._input:
                    self._input = b""
            elif d.needs_input:
                data, self._input = self._input or self._raw.read(1 << 16), b""
            else:
                data = b""
            if not data and (self._gzip or d.needs_input):
                self._ended = True  # cut short: everything decompressed so far was given
                break
            out = d.decompress(data, len(view))
            if out:
                view[:len(out)] = out
                return len(out)
        return 0


def _corrupt() -> tuple[type[BaseException], ...]:
    """What a corrupt compressed stream raises (LZ4's decompressor: a RuntimeError)."""
    import gzip
    import lzma
    import zlib

    import zstandard

    return (gzip.BadGzipFile, lzma.LZMAError, zlib.error, zstandard.ZstdError, RuntimeError)


def _read_head(stream: BinaryIO, name: str, n: int) -> bytes:
    try:
        return stream.read(n)
    except _corrupt() as e:
        raise InputError(f"{name}: cannot decompress the capture: {e}") from None


def _copy(src: BinaryIO, dst: Any, name: str) -> None:
    # A compressed stream cut short ends where its bytes end ([`_Inflated`]): what it held
    # stays, as tshark reads a cut capture up to the cut.
    try:
        shutil.copyfileobj(src, dst, 1 << 20)
    except _corrupt() as e:
        raise InputError(f"{name}: cannot decompress the capture: {e}") from None


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
        cut_at = cap.leniency[3]
        if cut_at is not None:
            held += f"; the file was cut short inside the record at offset {cut_at:,}"
        read = cap.counts()["read"]
        raise InputError(f"{capture_name(capture)}: no TCP flow in the capture ({read:,} packet{'s' * (read != 1)}: {held})")


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
    warnings, count, _, _ = cap.leniency
    for w in warnings:
        ui.warn(f"{capture_name(capture)}: {w}")
    if count > len(warnings):
        ui.warn(f"{capture_name(capture)}: {count - len(warnings):,} more warnings like these")
    counts = cap.counts()
    with output as o:
        # flows.json, directions.csv and the stream files, one direction at a time, by the core
        # (nicsim_flowmem::write): memory does not grow with the flows beyond the core's tables.
        assert o.path is not None
        with core_errors(None):
            w = cap.write_directions(os.fspath(o.path), hole_marker)
        summary: ReassembleSummary = {  # nicsim_version, schema_version: added by o.summary
            "capture": capture_name(capture),
            "overlap": overlap,
            "unacked": unacked,
            "hole_marker": hole_marker,
            "unacked_bytes": w["unacked_bytes"],
            "packets": counts,
            "packets_conserved": sum(v for k, v in counts.items() if k != "read") == counts["read"],
            "flows": len(cap),
            "directions": w["directions"],
            "direction_files": w["files"],
            "stream_bytes": w["stream_bytes"],
            "hole_bytes": w["hole_bytes"],
            "arena_bytes": cap.arena_bytes,
            "max_hole_bytes": cap.limits["max_hole_bytes"],
            "cut_directions": w["cut_directions"],
            "defrag": cap.defrag(),
            "reused_tuples": cap.reused_tuples,
            "capture_warnings": cap.leniency[1],
            "records_cut": cap.leniency[2],
            "capture_cut_short_at": cap.leniency[3],
            "tunnelled_flows": w["tunnelled_flows"],
        }
        o.summary(summary)
        with o.optional(*figures("stream_sizes")):
            _plot_sizes(o, w["sizes"], capture_name(capture))
    return summary


#: Most points of stream_sizes' CDF.
CDF_POINTS = 2000


def _plot_sizes(o: OutputDir, sizes: bytes, capture: str) -> None:
    """stream_sizes.png: the directions' stream sizes (`sizes`: little-endian u64s), as a
    histogram (log bins) and a CDF."""
    from nicsim.output import pyplot

    plt = pyplot()
    import numpy as np

    xs = np.sort(np.maximum(np.frombuffer(sizes, dtype="<u8").astype(float), 1.0))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    if len(xs):
        bins = np.logspace(0, np.log10(xs[-1]) + 0.01, 30)
        counts, _ = np.histogram(xs, bins=bins)
        ax.stairs(counts, bins, fill=True, color="tab:blue")
        # The CDF at most CDF_POINTS steps (each direction's own would make the picture, and the
        # memory it takes to draw, grow with the flows: a million directions took 400 MB).
        at = np.unique(np.linspace(0, len(xs) - 1, min(len(xs), CDF_POINTS)).astype(np.int64))
        ax2.step(xs[at], (at + 1) / len(xs), where="post")
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
