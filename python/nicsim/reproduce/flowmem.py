"""Reproduce "Packets are Not Pages" (seed 001): flow-based addressing against copy-based
reassembly, in the SmartNIC memory model of the talk's prototype (`u250-microblaze`).

- The micro-benchmark: 10 in-order 1,510-byte packets, each in its own packet buffer; the
  copy, the processing and the total, for each design (talk: copy 5.84 → 0.02 ms, processing
  4.36 → 3.86 ms, total −61.96 %).
- DRAM traffic per payload byte after reception, each design (talk: 5–6× copy-based, ~1×
  flow-based), and per-core throughput, flow-based over copy-based, for a linear scan and a
  regex search (talk: 2.62× and 1.33×), on the micro-benchmark, on a synthetic capture of
  many flows (`nicsim flowmem synth`) and on a real capture with loss (the veth recording `make
  veth-captures` makes, or `--capture`). DRAM traffic is given on the talk's terms: beyond the
  Packet Handler's write (the talk's "payload size transfers"), and including it as a second
  row; `steps` holds each step's (receive, assemble, process) DRAM bytes per payload byte.

Writes DIR/summary.json (micro, capture, real, comparison), DIR/comparison.csv (the talk beside
nicsim) and the figures micro_benchmark and dram_and_throughput (PNG; SVG and PDF with `--figures`). Nothing is
tuned to the talk's figures: the constants and their sources are in docs/flowmem.md.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from nicsim import ui
from nicsim.errors import InputError
from nicsim.flowmem.memory import DEFAULT_PATTERN, STEPS, dram_steps, load_mem_target, model, model_micro, synth
from nicsim.flowmem.reassemble import capture_name, open_capture, require_tcp
from nicsim.output import OutputDir, figures
from nicsim.reproduce import report_console

TARGET = "u250-microblaze"
MICRO = {"packets": 10, "payload_bytes": 1510, "buffer_bytes": 2048}
#: The talk's figures ("Evaluation" slides).
TALK = {
    "copy_ms": (5.84, 0.02), "processing_ms": (4.36, 3.86), "total_change_pct": -61.96,
    "copy_dram_per_payload": (5.0, 6.0), "flow_dram_per_payload": 1.0,
    "throughput_scan": 2.62, "throughput_regex": 1.33, "time_change_pct": (-25.33, -61.96),
}
WORKLOADS = {"scan": None, "regex": DEFAULT_PATTERN}
#: The real capture beside the micro-benchmark: the veth recording `make veth-captures` makes
#: (`examples/flowmem/veth_capture.sh OUT 30 1000000`, the receiver's side: XDP drops 30 ‰ of
#: TCP packets on both veth ends; 4 directions over IPv4 and IPv6). In a source tree where it
#: was made (as root) only; `--capture` names another.
REAL_CAPTURE = Path(__file__).resolve().parents[3] / "target" / "veth-captures" / "receiver_side.pcapng"
#: Where the comparison's rows come from.
WHERE = {"micro": "micro", "capture": "synthetic capture", "real": "real capture"}


def _derive(m: dict[str, Any], payload: int) -> dict[str, Any]:
    c, f = m["copy"], m["flow"]

    def after_receive(d: dict[str, Any]) -> float:
        return (d["assemble"]["read_bytes"] + d["assemble"]["write_bytes"] + d["process"]["read_bytes"]
                + d["process"]["write_bytes"]) / payload

    return {
        "copy_ms": c["assemble_seconds"] * 1e3, "flow_copy_ms": f["assemble_seconds"] * 1e3,
        "copy_processing_ms": c["process_seconds"] * 1e3, "flow_processing_ms": f["process_seconds"] * 1e3,
        "copy_total_ms": c["model_seconds"] * 1e3, "flow_total_ms": f["model_seconds"] * 1e3,
        "total_change_pct": (f["model_seconds"] / c["model_seconds"] - 1) * 100,
        "processing_change_pct": (f["process_seconds"] / c["process_seconds"] - 1) * 100,
        "throughput_ratio": c["cycles"] / f["cycles"],
        "copy_dram_per_payload": after_receive(c), "flow_dram_per_payload": after_receive(f),
        "steps": dram_steps(m, payload),
        # The Packet Handler's rate over the payloads (its datapath or its DRAM writes).
        "receive_gbps": payload * 8 / c["receive_seconds"] / 1e9 if c["receive_seconds"] else None,
        "copy_dram_per_payload_with_receive": c["dram_bytes"] / payload,
        "flow_dram_per_payload_with_receive": f["dram_bytes"] / payload,
        "copy_bus_per_payload": (c["assemble"]["bus_bytes"] + c["process"]["bus_bytes"]) / payload,
        "flow_bus_per_payload": (f["assemble"]["bus_bytes"] + f["process"]["bus_bytes"]) / payload,
        "l1_hit_rate": {"copy": c["cache_hit_rate"], "flow": f["cache_hit_rate"]},
        "flow_cache_hit_rate": f["flow_cache_hit_rate"],
        "model": m,
    }


def _model_capture(path: Path, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(setup, per-workload results) of the model on every flow direction of a capture."""
    cap = open_capture(path)
    require_tcp(cap, path)
    directions = cap.directions()
    payload = sum(d["bytes"] - sum(h[1] for h in d["holes"]) for d in directions)
    if payload == 0:  # every comparison is per byte of payload
        raise InputError(f"{capture_name(path)}: its {len(directions):,} TCP flow directions carry no payload "
                         "(the comparison is per byte reassembled)")
    out = {}
    for w, pattern in WORKLOADS.items():
        m = model(cap, w, pattern, text)
        out[w] = _derive(m, payload)
    setup = {"payload_bytes": payload, "directions": sum(1 for d in directions if d["segments"]),
             "packets": cap.counts()["read"]}
    return setup, out


def run(flows: int = 2000, seed: int = 1, real: Path | None = None) -> dict[str, Any]:
    text, _ = load_mem_target(TARGET)
    payload = MICRO["packets"] * MICRO["payload_bytes"]
    micro = {}
    for w, pattern in WORKLOADS.items():
        m = model_micro(MICRO["packets"], MICRO["payload_bytes"], MICRO["buffer_bytes"], w, pattern, text)
        micro[w] = _derive(m, payload)
    with tempfile.TemporaryDirectory(prefix="nicsim-flowmem-") as tmp:
        path = Path(tmp) / "synth.pcap"
        rep = synth(path, flows=flows, seed=seed)
        setup, capture = _model_capture(path, text)
    s = {"target": TARGET, "micro": {"setup": MICRO, **micro},
         "capture": {"setup": {"flows": flows, "seed": seed, **setup, "packets": rep["packets"]}, **capture}}
    real = real if real is not None else (REAL_CAPTURE if REAL_CAPTURE.is_file() else None)
    if real is not None:
        setup, results = _model_capture(real, text)
        s["real"] = {"setup": {"capture": real.name, **setup}, **results}
    return s


def comparison(s: dict[str, Any]) -> list[dict[str, Any]]:
    m = s["micro"]
    lo, hi = TALK["copy_dram_per_payload"]

    def row(what: str, talk: Any, nicsim: float, within: bool | None = None) -> dict[str, Any]:
        return {"quantity": what, "talk": talk, "nicsim": round(nicsim, 3),
                "within_25pct": within}

    def near(x: float, ref: float) -> bool:
        return abs(x / ref - 1) <= 0.25

    sc = m["scan"]
    rows = [
        row("micro: copy, copy-based (ms)", TALK["copy_ms"][0], sc["copy_ms"]),
        row("micro: copy, flow-based (ms)", TALK["copy_ms"][1], sc["flow_copy_ms"]),
        row("micro: processing, copy-based (ms), scan", TALK["processing_ms"][0], sc["copy_processing_ms"]),
        row("micro: processing, flow-based (ms), scan", TALK["processing_ms"][1], sc["flow_processing_ms"]),
        row("micro: processing change (%), scan", round((3.86 / 4.36 - 1) * 100, 2), sc["processing_change_pct"]),
        row("micro: processing change (%), regex", round((3.86 / 4.36 - 1) * 100, 2),
            m["regex"]["processing_change_pct"]),
        row("micro: total change (%), scan", TALK["total_change_pct"], sc["total_change_pct"],
            near(sc["total_change_pct"], TALK["total_change_pct"])),
        row("micro: total change (%), regex", TALK["total_change_pct"], m["regex"]["total_change_pct"],
            near(m["regex"]["total_change_pct"], TALK["total_change_pct"])),
    ]
    for where in [w for w in WHERE if w in s]:
        d, label = s[where], WHERE[where]
        for w, ref in (("scan", TALK["throughput_scan"]), ("regex", TALK["throughput_regex"])):
            rows.append(row(f"{label}: per-core throughput, flow/copy, {w}", ref, d[w]["throughput_ratio"],
                            near(d[w]["throughput_ratio"], ref)))
        # The talk's terms: beyond the Packet Handler's write, then including it (second row).
        for design in ("copy", "flow"):
            talk = f"{lo:g}-{hi:g}" if design == "copy" else TALK["flow_dram_per_payload"]
            for key, what in (("", "beyond the Packet Handler's write"), ("_with_receive", "including it")):
                x = d["scan"][f"{design}_dram_per_payload{key}"]
                ok = lo * 0.75 <= x <= hi * 1.25 if design == "copy" else near(x, TALK["flow_dram_per_payload"])
                rows.append(row(f"{label}: DRAM bytes per payload byte, {design}-based, {what}", talk, x, ok))
        for design in ("copy", "flow"):
            for step in STEPS:
                rows.append(row(f"{label}: DRAM bytes per payload byte, {design}-based, step {step}", None,
                                d["scan"]["steps"][design][step]))
    return rows


def plot(s: dict[str, Any], out: OutputDir) -> None:
    from nicsim.output import pyplot

    plt = pyplot()

    colors = {"copy": "tab:red", "flow": "tab:blue"}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, (who, copy, proc) in zip(axes, (
        ("talk (MicroBlaze prototype)", TALK["copy_ms"], TALK["processing_ms"]),
        (f"nicsim ({s['target']}, scan)", (s["micro"]["scan"]["copy_ms"], s["micro"]["scan"]["flow_copy_ms"]),
         (s["micro"]["scan"]["copy_processing_ms"], s["micro"]["scan"]["flow_processing_ms"])),
    )):
        for i, d in enumerate(("copy", "flow")):
            ax.bar(i, copy[i], color=colors[d], alpha=0.45, label="copy" if i == 0 else None)
            ax.bar(i, proc[i], bottom=copy[i], color=colors[d], label="processing" if i == 0 else None)
            ax.text(i, copy[i] + proc[i], f"{copy[i] + proc[i]:.3g} ms", ha="center", va="bottom", fontsize=8)
        ax.set_xticks([0, 1], ["copy-based", "flow-based"])
        ax.set(ylabel="time (ms)", title=who)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Micro-benchmark: 10 × 1,510-byte packets (light: copy, dark: processing)")
    fig.tight_layout()
    out.figure("micro_benchmark", fig)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    labels = [w for w in WHERE if w in s]
    for i, where in enumerate(labels):
        d = s[where]["scan"]
        a1.bar(i - 0.2, d["copy_dram_per_payload"], 0.4, color=colors["copy"], label="copy-based" if i == 0 else None)
        a1.bar(i + 0.2, d["flow_dram_per_payload"], 0.4, color=colors["flow"], label="flow-based" if i == 0 else None)
    a1.axhspan(*TALK["copy_dram_per_payload"], color=colors["copy"], alpha=0.1, label="talk: copy-based 5–6×")
    a1.axhline(TALK["flow_dram_per_payload"], color=colors["flow"], ls=":", label="talk: flow-based ~1×")
    a1.set_xticks(range(len(labels)), [WHERE[w] for w in labels])
    a1.set(ylabel="DRAM bytes per payload byte (after reception)", title="DRAM traffic")
    a1.legend(fontsize=8)
    for i, w in enumerate(("scan", "regex")):
        a2.bar(i - 0.27, TALK[f"throughput_{w}"], 0.27, color="grey", label="talk" if i == 0 else None)
        a2.bar(i, s["micro"][w]["throughput_ratio"], 0.27, color="tab:blue", label="nicsim: micro" if i == 0 else None)
        a2.bar(i + 0.27, s["capture"][w]["throughput_ratio"], 0.27, color="tab:cyan",
               label="nicsim: synthetic capture" if i == 0 else None)
        if "real" in s:
            a2.bar(i + 0.54, s["real"][w]["throughput_ratio"], 0.27, color="tab:purple",
                   label="nicsim: real capture" if i == 0 else None)
    a2.axhline(1, color="black", lw=0.6)
    a2.set_xticks([0, 1], ["linear scan", "regex"])
    a2.set(ylabel="per-core throughput, flow / copy (×)", title="Per-core throughput")
    a2.legend(fontsize=8)
    for ax in (a1, a2):
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out.figure("dram_and_throughput", fig)


def print_comparison(rows: list[dict[str, Any]], console: Console) -> None:
    t = Table(title="Packets are Not Pages: the talk beside nicsim (u250-microblaze model)")
    for col in ("quantity", "talk", "nicsim", "within ±25 %"):
        t.add_column(col, justify="left" if col == "quantity" else "right")
    for r in rows:
        w = r["within_25pct"]
        t.add_row(r["quantity"], "" if r["talk"] is None else str(r["talk"]), f"{r['nicsim']:,.3f}",
                  "" if w is None else ("[green]yes[/green]" if w else "[red]no[/red]"))
    console.print(t)


def main(out: Path, flows: int = 2000, seed: int = 1, force: bool = False,
         capture: Path | None = None) -> dict[str, Any]:
    console = report_console()
    # A file, `-` (standard input) or a pipe (read once, as a stream).
    if capture is not None and str(capture) != "-" and (Path(capture).is_dir() or not os.path.lexists(capture)):
        why = "is a folder (give a capture file)" if Path(capture).is_dir() else "no such capture file"
        raise InputError(f"{capture}: {why}")
    output = OutputDir(out, inputs=[capture], force=force)
    output.check()  # before the experiments, not after them
    s = run(flows=flows, seed=seed, real=Path(capture) if capture is not None else None)
    rows = comparison(s)
    s["comparison"] = rows
    with output as o:
        o.summary(s)
        o.csv("comparison.csv", rows)
        with o.optional(*figures("micro_benchmark", "dram_and_throughput")):
            plot(s, o)
    if ui.shows_tables():
        print_comparison(rows, console)
    return s
