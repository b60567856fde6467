"""The `nicsim flow ...` commands (flow memory, seed 001)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

flow_app = typer.Typer(help="Flow memory: zero-copy TCP flow reassembly from captures, synthetic captures, and "
                       "the cost of copy-based against flow-based addressing (host and SmartNIC model).",
                       no_args_is_help=True)


class Overlap(StrEnum):
    first = "first"
    last = "last"


#: `--max-hole-bytes`, shared by the commands that reassemble a capture.
MaxHoleOpt = Annotated[int | None, typer.Option(
    "--max-hole-bytes", min=0, help="Most bytes missing from the capture (holes) per flow direction, all its "
    "holes together; a segment that would leave more is dropped (counted hole_too_large) and cuts the "
    "direction there. Bounds what a stream laid out contiguously adds to its payload. [default: 64 MiB]",
    show_default=False)]


@flow_app.command("reassemble")
def flow_reassemble(
    capture: Annotated[Path, typer.Argument(help="Capture file (pcap or pcapng).", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder; written atomically, replaced if it "
                                      "exists.", show_default=False)],
    overlap: Annotated[Overlap, typer.Option("--overlap", help="Which bytes win where retransmissions "
                                             "disagree.")] = Overlap.first,
    max_flows: Annotated[int | None, typer.Option("--max-flows", min=1, help="Flow-table size; packets of "
                                                  "further flows are dropped and counted.")] = None,
    max_arena_bytes: Annotated[int | None, typer.Option("--max-arena-bytes", min=0, help="Payload memory; "
                                                        "payloads beyond it are dropped and counted.")] = None,
    max_hole_bytes: MaxHoleOpt = None,
) -> None:
    """Reassemble every TCP flow of CAPTURE: OUT/flows.json (one entry per flow direction),
    one raw byte file per direction (holes zero-filled, at most --max-hole-bytes of them per
    direction), OUT/summary.json (every packet accounted for)."""
    from nicsim.flow import reassemble

    s = reassemble(capture, out, overlap=overlap.value, max_flows=max_flows, max_arena_bytes=max_arena_bytes,
                   max_hole_bytes=max_hole_bytes)
    dropped = {k: v for k, v in s["packets"].items() if k not in ("read", "data", "control", "retransmission") and v}
    Console().print(f"{s['packets']['read']:,} packets, {s['flows']:,} TCP flows, {s['stream_bytes']:,} stream bytes "
                    f"({s['hole_bytes']:,} in holes); not used: {dropped or 'none'}")
    if s["cut_directions"]:
        Console().print(f"{s['cut_directions']:,} directions cut: their holes would have exceeded --max-hole-bytes "
                        f"({s['max_hole_bytes']:,}); see 'cut' in flows.json")
    Console().print(f"wrote {out}/ (summary.json, flows.json, {s['directions']} stream files)")


class Workload(StrEnum):
    scan = "scan"
    regex = "regex"


class RetrievalOpt(StrEnum):
    whole = "whole"
    selective = "selective"


@flow_app.command("synth")
def flow_synth(
    out: Annotated[Path, typer.Argument(help="Capture file to write (.pcap, or .pcapng with --pcapng).",
                                        show_default=False)],
    flows: Annotated[int, typer.Option("--flows", min=1, help="TCP connections.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed: the same seed gives the same bytes.")] = 1,
    loss: Annotated[float, typer.Option("--loss", min=0.0, max=0.99, help="Share of data segments lost before "
                                        "the tap (each retransmitted an RTT later).")] = 0.01,
    reorder: Annotated[float, typer.Option("--reorder", min=0.0, max=0.99, help="Share of data segments "
                                           "delivered after later ones.")] = 0.01,
    duplicate: Annotated[float, typer.Option("--duplicate", min=0.0, max=0.99, help="Share of data segments "
                                             "retransmitted although they arrived.")] = 0.005,
    pcapng: Annotated[bool, typer.Option("--pcapng", help="Write pcapng instead of pcap.")] = False,
) -> None:
    """Write a synthetic TCP capture: HTTP-like request/response connections whose response
    sizes are heavy-tailed (Pareto, 93.16 % of flows at most 10 KB, as the talk measured), with
    loss, reordering and spurious retransmissions. Valid pcap that Wireshark opens."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from nicsim.flow.memory import synth

    with Progress(SpinnerColumn(), TextColumn("writing {task.fields[n]:,} packets"), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task("synth", n=0)
        rep = synth(out, flows=flows, seed=seed, loss=loss, reorder=reorder, duplicate=duplicate, pcapng=pcapng,
                    progress=lambda n: bar.update(task, n=n))
    Console().print(f"{rep['flows']:,} flows, {rep['packets']:,} packets, {rep['frame_bytes']:,} frame bytes; "
                    f"{rep['flows_le_10kb'] / rep['flows']:.1%} of flows <= 10 KB; lost {rep['lost']:,}, "
                    f"reordered {rep['reordered']:,}, duplicated {rep['duplicated']:,}")
    Console().print(f"wrote {out}")


@flow_app.command("bench")
def flow_bench(
    capture: Annotated[Path, typer.Argument(help="Capture file (pcap or pcapng).", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.", show_default=False)],
    workload: Annotated[Workload, typer.Option("--workload", "-w", help="scan: read every byte once, counting newlines "
                                               "(memory-bound); regex: run a DFA (compute-bound).")] = Workload.scan,
    pattern: Annotated[str | None, typer.Option("--pattern", "-p", help="Regex of the regex workload "
                                                "(default: HTTP request lines).")] = None,
    target: Annotated[str, typer.Option("--target", "-t", help="SmartNIC model: u250-microblaze (the talk's "
                                        "prototype), bluefield3, or a target TOML file.")] = "u250-microblaze",
    retrieval: Annotated[RetrievalOpt | None, typer.Option("--retrieval", help="Flow cache fill: the whole "
                                                           "bytestream first, or a line on each miss (default: "
                                                           "the target's).")] = None,
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Host runs; the best is kept.")] = 3,
    max_hole_bytes: MaxHoleOpt = None,
) -> None:
    """Copy-based against flow-based on every flow of CAPTURE, measured on this host (bytes
    copied and read, seconds, Gbit/s) and in the SmartNIC memory model (DRAM bytes, cycles,
    cache hit rates). Writes OUT/summary.json and OUT/designs.csv."""
    from rich.table import Table

    from nicsim.flow.memory import bench

    s = bench(capture, out, workload=workload.value, pattern=pattern, target=target,
              retrieval=retrieval.value if retrieval else None, repeat=repeat, max_hole_bytes=max_hole_bytes)
    t = Table(title=f"{s['workload']} over {s['streams']:,} streams, {s['payload_bytes']:,} payload bytes")
    for col in ("", "copy-based", "flow-based"):
        t.add_column(col, justify="right" if col else "left")
    c, f = s["copy"], s["flow"]
    t.add_row("host: bytes copied", f"{c['bytes_copied']:,}", f"{f['bytes_copied']:,}")
    t.add_row("host: bytes read", f"{c['bytes_read']:,}", f"{f['bytes_read']:,}")
    t.add_row("host: Gbit/s (one core)", f"{c['gbps']:.2f}", f"{f['gbps']:.2f}")
    t.add_row(f"model ({s['target']}): DRAM bytes", f"{c['dram_bytes']:,}", f"{f['dram_bytes']:,}")
    t.add_row("model: cycles", f"{c['cycles']:,}", f"{f['cycles']:,}")
    t.add_row("model: L1 hit rate", f"{c['cache_hit_rate']:.1%}", f"{f['cache_hit_rate']:.1%}")
    Console().print(t)
    if s["hole_too_large"]:
        Console().print(f"{s['hole_too_large']:,} packets left out: their holes would have exceeded --max-hole-bytes "
                        f"({s['max_hole_bytes']:,})")
    Console().print(f"wrote {out}/ (summary.json, designs.csv)")


@flow_app.command("sizes")
def flow_sizes(
    capture: Annotated[Path, typer.Argument(help="Capture file (pcap or pcapng).", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.", show_default=False)],
    max_hole_bytes: MaxHoleOpt = None,
) -> None:
    """Flow-size CDF of CAPTURE, and the translation-table and flow-cache sizes that cover
    50/90/99 % of its flows. Writes OUT/summary.json, OUT/flows.csv and flow_size_cdf (PNG, SVG)."""
    from nicsim.flow.memory import sizes

    s = sizes(capture, out, max_hole_bytes=max_hole_bytes)
    Console().print(f"{s['flows']:,} flows; {s['share_le_10kb']:.2%} at most 10 KB (the talk: 93.16 %)")
    for c in s["cover"]:
        Console().print(f"  {c['share']:.0%} of flows: flow cache {c['flow_bytes']:,} B per flow, "
                        f"translation table {c['table_entries']:,} entries ({c['table_bytes']:,} B)")
    if s["cut_directions"]:
        Console().print(f"{s['cut_directions']:,} directions cut: their holes would have exceeded --max-hole-bytes "
                        f"({s['max_hole_bytes']:,})")
    Console().print(f"wrote {out}/ (summary.json, flows.csv, flow_size_cdf)")
