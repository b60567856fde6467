"""The `nicsim flow ...` commands (flow memory, seed 001)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

flow_app = typer.Typer(help="Flow memory: zero-copy TCP flow reassembly from captures.", no_args_is_help=True)


class Overlap(StrEnum):
    first = "first"
    last = "last"


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
) -> None:
    """Reassemble every TCP flow of CAPTURE: OUT/flows.json (one entry per flow direction),
    one raw byte file per direction (holes zero-filled), OUT/summary.json (every packet
    accounted for)."""
    from nicsim.flow import reassemble

    s = reassemble(capture, out, overlap=overlap.value, max_flows=max_flows, max_arena_bytes=max_arena_bytes)
    dropped = {k: v for k, v in s["packets"].items() if k not in ("read", "data", "control", "retransmission") and v}
    Console().print(f"{s['packets']['read']:,} packets, {s['flows']:,} TCP flows, {s['stream_bytes']:,} stream bytes "
                    f"({s['hole_bytes']:,} in holes); not used: {dropped or 'none'}")
    Console().print(f"wrote {out}/ (summary.json, flows.json, {s['directions']} stream files)")
