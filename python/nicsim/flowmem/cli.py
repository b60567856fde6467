"""The `nicsim flowmem ...` commands (flow memory, seed 001)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from nicsim import ui
from nicsim.flowmem.names import choices
from nicsim.options import (
    MAX_SYNTH_FLOWS,
    U32_MAX,
    U64_MAX,
    ForceOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    VerboseOpt,
    deprecated_short,
    either,
    in_range,
    path_arg,
)

flowmem_app = typer.Typer(help="Flow memory: zero-copy TCP flow reassembly from captures, synthetic captures, and "
                       "the cost of copy-based against flow-based addressing (host and SmartNIC model).",
                       no_args_is_help=True, rich_markup_mode="markdown")

CaptureArg = Annotated[Path, typer.Argument(metavar="CAPTURE", parser=path_arg, help="Capture file (pcap or pcapng); `-` reads it "
                                            "from standard input.", show_default=False)]


# The choices of the options that take a name: the core's names (nicsim.flowmem.names), so that
# --help lists them and typer refuses any other with its one-line message.
Overlap = choices("overlap", "Overlap")
Unacked = choices("unacked", "Unacked")
HoleMarker = choices("hole_marker", "HoleMarker")
Workload = choices("workload", "Workload")
RetrievalOpt = choices("retrieval", "RetrievalOpt")


#: The largest `--max-hole-bytes`, 4 GiB (the core's `MAX_HOLE_BYTES`): a stream laid out contiguously
#: (a stream file, the copy baseline's buffer) is at most its payload plus this.
MAX_HOLE_BYTES = 4 << 30


def _hole_bytes(value: int | None) -> int | None:
    if value is not None and not 0 <= value <= MAX_HOLE_BYTES:
        raise typer.BadParameter(f"{value:,} is not in 0..{MAX_HOLE_BYTES:,} (4 GiB: what a stream laid out "
                                 "contiguously may add to its payload)")
    return value


#: `--max-hole-bytes`, shared by the commands that reassemble a capture.
MaxHoleOpt = Annotated[int | None, typer.Option(
    "--max-hole-bytes", metavar="BYTES", callback=_hole_bytes,
    help="Most bytes missing from the capture (holes) per flow direction, all its holes together; a segment "
    "that would leave more is dropped (counted hole_too_large) and cuts the direction there. Bounds what a "
    "stream laid out contiguously adds to its payload; at most 4 GiB. [default: 64 MiB]", show_default=False)]


@flowmem_app.command("reassemble")
def flow_reassemble(
    capture: CaptureArg,
    out: OutOpt,
    overlap: Annotated[Overlap, typer.Option("--overlap", help="Which bytes win where retransmissions "
                                             "disagree.")] = Overlap.first,
    unacked: Annotated[Unacked | None, typer.Option("--unacked", help="Data the peer never acknowledged: keep "
                                                    "every byte captured; drop it (each direction ends at its "
                                                    "peer's highest ACK, at the last byte captured before it); "
                                                    "or tshark: drop it only past the first hole, as tshark -z "
                                                    "follow,tcp shows a stream. [default: keep]",
                                                    show_default=False)] = None,
    hole_marker: Annotated[HoleMarker | None, typer.Option("--hole-marker", help="How a file shows a hole: zero "
                                                           "bytes, so file offsets are stream offsets; or tshark's "
                                                           "text \"[N bytes missing in capture file]\" and a NUL "
                                                           "between runs, none before the first or after the last. "
                                                           "[default: zero]", show_default=False)] = None,
    tshark_compatible: Annotated[bool, typer.Option("--tshark-compatible", help="Write the files tshark -z "
                                                    "follow,tcp,raw writes: --unacked tshark --hole-marker tshark "
                                                    "(an explicit --unacked or --hole-marker wins). Where they "
                                                    "still differ, and why: docs/flowmem.md.")] = False,
    max_flows: Annotated[int | None, typer.Option("--max-flows", metavar="N", callback=in_range(1, U32_MAX),
                                                  help="Flow-table size; packets of further flows are dropped "
                                                  "and counted.")] = None,
    max_arena_bytes: Annotated[int | None, typer.Option("--max-arena-bytes", metavar="BYTES",
                                                        callback=in_range(0, U64_MAX), help="Payload memory; "
                                                        "payloads beyond it are dropped and counted.")] = None,
    max_hole_bytes: MaxHoleOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Reassemble every TCP flow of CAPTURE.

    Writes OUT/flows.json and directions.csv (one entry per flow direction), one raw byte file
    per direction that has a stream byte (holes zero-filled, at most --max-hole-bytes of them per
    direction; a direction without one, as a SYN flood's, has file null and no file),
    OUT/summary.json (every packet accounted for) and
    stream_sizes.png (the distribution of the directions' stream sizes).
    """
    from nicsim.flowmem import reassemble

    with ui.Progress("reassembling", transient=True):
        preset = "tshark" if tshark_compatible else None
        s = reassemble(capture, out, overlap=overlap.value, max_flows=max_flows, max_arena_bytes=max_arena_bytes,
                       max_hole_bytes=max_hole_bytes, unacked=(unacked.value if unacked else preset or "keep"),
                       hole_marker=(hole_marker.value if hole_marker else preset or "zero"), force=force)

    def show(console: Console) -> None:
        dropped = {k: v for k, v in s["packets"].items()
                   if k not in ("read", "data", "control", "retransmission") and v}
        console.print(f"{s['packets']['read']:,} packets, {s['flows']:,} TCP flows, {s['stream_bytes']:,} stream "
                      f"bytes ({s['hole_bytes']:,} in holes); not used: "
                      + (", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in dropped.items()) or "none"), highlight=False)
        if s["cut_directions"]:
            console.print(f"{s['cut_directions']:,} directions cut: their holes would have exceeded "
                          f"--max-hole-bytes ({s['max_hole_bytes']:,}); see 'cut' in flows.json", highlight=False)

    ui.result(s, show)
    ui.wrote(out)


@flowmem_app.command("synth")
def flow_synth(
    out: Annotated[str, typer.Argument(metavar="FILE", help="Capture file to write (.pcap, or .pcapng with "
                                       "--pcapng).", show_default=False)],
    flows: Annotated[int, typer.Option("--flows", metavar="N", callback=in_range(1, MAX_SYNTH_FLOWS),
                                       help="TCP connections.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", metavar="N", callback=in_range(0, U64_MAX),
                                      help="Random seed: the same seed gives the same bytes.")] = 1,
    loss: Annotated[float, typer.Option("--loss", metavar="SHARE", callback=in_range(0, 0.99),
                                        help="Share of data segments lost before the tap (each retransmitted an "
                                        "RTT later).")] = 0.01,
    reorder: Annotated[float, typer.Option("--reorder", metavar="SHARE", callback=in_range(0, 0.99),
                                           help="Share of data segments delivered after later ones.")] = 0.01,
    duplicate: Annotated[float, typer.Option("--duplicate", metavar="SHARE", callback=in_range(0, 0.99),
                                             help="Share of data segments retransmitted although they "
                                             "arrived.")] = 0.005,
    pcapng: Annotated[bool, typer.Option("--pcapng", help="Write pcapng instead of pcap.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
    _json: JsonOpt = False, _quiet: QuietOpt = False,
) -> None:
    """Write a synthetic TCP capture.

    HTTP-like request/response connections whose response sizes are heavy-tailed (Pareto,
    93.16 % of flows at most 10 KB, as the talk measured), with loss, reordering and spurious
    retransmissions. Valid pcap that Wireshark opens.
    """
    from nicsim.flowmem.memory import synth

    with ui.Progress("writing", unit="packets", transient=True) as bar:
        rep = synth(out, flows=flows, seed=seed, loss=loss, reorder=reorder, duplicate=duplicate, pcapng=pcapng,
                    progress=lambda n: bar.update(n), force=force)

    def show(console: Console) -> None:
        console.print(f"{rep['flows']:,} flows, {rep['packets']:,} packets, {rep['frame_bytes']:,} frame bytes; "
                      f"{rep['flows_le_10kb'] / rep['flows']:.1%} of flows <= 10 KB; lost {rep['lost']:,}, "
                      f"reordered {rep['reordered']:,}, duplicated {rep['duplicated']:,}", highlight=False)

    ui.result(rep, show)
    ui.note(f"wrote {out}")


def dram_gbytes_per_s(dram_per_payload: float, payload_gbps: float) -> float:
    """The DRAM bandwidth (GB/s, 10^9 bytes) that `dram_per_payload` DRAM bytes per payload byte
    take at `payload_gbps` Gbit/s of payload."""
    return dram_per_payload * payload_gbps / 8


@flowmem_app.command("bench")
def flow_bench(
    captures: Annotated[list[Path], typer.Argument(metavar="CAPTURE...", parser=path_arg, help="Capture files (pcap or pcapng); "
                                                   "`-` reads one from standard input. Several are benchmarked one "
                                                   "after the other (see --workers).", show_default=False)],
    out: OutOpt,
    workload: Annotated[Workload, typer.Option("--workload", "-w", help="scan: read every byte once, counting "
                                               "newlines (memory-bound); regex: run a DFA (compute-bound).")
                        ] = Workload.scan,
    pattern_p: Annotated[str | None, deprecated_short("-p", "--pattern", "REGEX")] = None,
    pattern: Annotated[str | None, typer.Option("--pattern", metavar="REGEX", help="Regex of the regex "
                                                "workload (default: HTTP request lines).")] = None,
    target: Annotated[str, typer.Option("--target", "-t", metavar="TARGET", help="SmartNIC model: "
                                        "u250-microblaze (the talk's prototype), bluefield3, or a target TOML "
                                        "file.")] = "u250-microblaze",
    retrieval: Annotated[RetrievalOpt | None, typer.Option("--retrieval", help="Flow cache fill: the whole "
                                                           "bytestream first, or a line on each miss (default: "
                                                           "the target's).")] = None,
    repeat: Annotated[int, typer.Option("--repeat", metavar="N", callback=in_range(1, 1000),
                                        help="Host runs; the best is kept.")] = 3,
    traffic_gbps: Annotated[float, typer.Option("--traffic-gbps", metavar="GBIT/S", callback=in_range(1e-6, 1e6),
                                                help="The payload rate at which the table states the model's DRAM "
                                                "bandwidth (GB/s: DRAM bytes per payload byte × this rate).")] = 100.0,
    max_hole_bytes: MaxHoleOpt = None,
    workers: Annotated[int, typer.Option("--workers", "-j", metavar="N", callback=in_range(1, 4096),
                                         help="Captures benchmarked at once. The host measurement times this "
                                         "machine's cores, so more than one skews it; the model's numbers do "
                                         "not change.")] = 1,
    executor: Annotated[str, typer.Option("--executor", "-x", metavar="local|ray",
                                          help="Where several captures run (see `nicsim sweep`).")] = "local",
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Copy-based against flow-based addressing on every flow of each CAPTURE.

    Measured on this host (bytes copied and read, seconds, Gbit/s) and in the SmartNIC memory
    model (DRAM bytes, cycles, cache hit rates). Writes OUT/summary.json, designs.csv and
    bench.png (the two designs side by side); with several captures, one row per capture
    and design.
    """
    from nicsim.flowmem.memory import bench

    pattern = either(pattern, pattern_p, "--pattern", "-p")
    with ui.Progress("benchmarking", transient=True):
        s = bench(captures if len(captures) > 1 else captures[0], out, workload=workload.value, pattern=pattern,
                  target=target, retrieval=retrieval.value if retrieval else None, repeat=repeat, force=force,
                  workers=workers, executor=executor, max_hole_bytes=max_hole_bytes)

    def show(console: Console) -> None:
        for one in s.get("captures", [s]):
            t = Table(title=f"{one['capture']}: {s['workload']} over {one['streams']:,} streams, "
                      f"{one['payload_bytes']:,} payload bytes")
            for col in ("", "copy-based", "flow-based"):
                t.add_column(col, justify="right" if col else "left")
            c, f = one["copy"], one["flow"]
            t.add_row("host: bytes copied", f"{c['bytes_copied']:,}", f"{f['bytes_copied']:,}")
            t.add_row("host: bytes read", f"{c['bytes_read']:,}", f"{f['bytes_read']:,}")
            t.add_row("host: Gbit/s (one core)", f"{c['gbps']:.2f}", f"{f['gbps']:.2f}")
            t.add_row(f"model ({s['target']}): DRAM bytes", f"{c['dram_bytes']:,}", f"{f['dram_bytes']:,}")
            r = one["ratios"]
            t.add_row("model: DRAM / payload, beyond the NIC's write", f"{r['copy_dram_per_payload_after_receive']:.2f}×",
                      f"{r['flow_dram_per_payload_after_receive']:.2f}×")
            t.add_row("model: DRAM / payload, including it", f"{r['copy_dram_per_payload']:.2f}×",
                      f"{r['flow_dram_per_payload']:.2f}×")
            at = f"{traffic_gbps:g} Gbit/s of payload"
            t.add_row(f"model: DRAM GB/s at {at}, beyond the NIC's write",
                      f"{dram_gbytes_per_s(r['copy_dram_per_payload_after_receive'], traffic_gbps):.2f}",
                      f"{dram_gbytes_per_s(r['flow_dram_per_payload_after_receive'], traffic_gbps):.2f}")
            t.add_row(f"model: DRAM GB/s at {at}, including it",
                      f"{dram_gbytes_per_s(r['copy_dram_per_payload'], traffic_gbps):.2f}",
                      f"{dram_gbytes_per_s(r['flow_dram_per_payload'], traffic_gbps):.2f}")
            t.add_row("model: cycles", f"{c['cycles']:,}", f"{f['cycles']:,}")
            t.add_row("model: L1 hit rate", f"{c['cache_hit_rate']:.1%}", f"{f['cache_hit_rate']:.1%}")
            console.print(t)
            if one["hole_too_large"]:
                console.print(f"{one['hole_too_large']:,} packets left out: their holes would have exceeded "
                              f"--max-hole-bytes ({one['max_hole_bytes']:,})", highlight=False)

    ui.result(s, show)
    ui.wrote(out)


@flowmem_app.command("sizes")
def flow_sizes(
    capture: CaptureArg,
    out: OutOpt,
    max_hole_bytes: MaxHoleOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Flow-size CDF of CAPTURE, and the translation-table and flow-cache sizes that cover
    50/90/99 % of its flows. Writes OUT/summary.json, flows.csv and flow_size_cdf (PNG, SVG)."""
    from nicsim.flowmem.memory import sizes

    s = sizes(capture, out, force=force, max_hole_bytes=max_hole_bytes)

    def show(console: Console) -> None:
        console.print(f"{s['flows']:,} flows; {s['share_le_10kb']:.2%} at most 10 KB (the talk: 93.16 %)",
                      highlight=False)
        for c in s["cover"]:
            console.print(f"  {c['share']:.0%} of flows: flow cache {c['flow_bytes']:,} B per flow, "
                          f"translation table {c['table_entries']:,} entries ({c['table_bytes']:,} B)",
                          highlight=False)
        if s["cut_directions"]:
            console.print(f"{s['cut_directions']:,} directions cut: their holes would have exceeded "
                          f"--max-hole-bytes ({s['max_hole_bytes']:,})", highlight=False)

    ui.result(s, show)
    ui.wrote(out)
