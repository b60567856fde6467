"""Running one datapath simulation: a typed wrapper over the core, and the run's output folder.

[`Datapath`] takes a configuration dict, runs in slices of simulated time (so a caller can show
progress, remap flows between slices, or stop), and returns the summary as a dict (schema in
docs/summary-schema.md). [`simulate`] runs one configuration to the end; Ctrl-C stops it with a
valid partial summary marked `"interrupted": true`. [`run`] does the same and writes the output
folder atomically: `summary.json`, `per_flow.csv`, `config.json` and, when asked, `egress.pcap`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from nicsim.config import PATH_KEYS, Config, core_errors, get_key, to_json
from nicsim.datapath.summary import Summary
from nicsim.errors import ConfigError, InputError, Interrupted
from nicsim.output import OutputDir, figures, stamp

#: Called between slices with (simulated µs, summary so far).
Progress = Callable[[float, "dict[str, Any] | None"], None]

PER_FLOW_COLUMNS = ("flow", "size_bytes", "packets", "mean_us", "min_us", "p50_us", "p99_us", "max_us")


class Datapath:
    """One datapath simulation (FlexPipe, PANIC or StaticPipe, per `config["arch"]`).

    `egress_pcap`: write every delivered packet there (as `measure.egress_pcap = true`: the
    generator then builds frames even for a timing run).
    """

    def __init__(self, config: Mapping[str, Any], egress_pcap: str | os.PathLike[str] | None = None,
                 log_packets: bool = False) -> None:
        from nicsim import _core

        self.config = config
        self._source = getattr(config, "source", None)
        self.egress_pcap = None if egress_pcap is None else Path(egress_pcap)
        payload = to_json(config)
        try:
            with core_errors(self._source):
                self._core = _core.Datapath(payload, None if egress_pcap is None else os.fspath(egress_pcap),
                                            log_packets)
        except InputError as e:
            # A traffic file that cannot be used is the fault of the key that names it.
            for key in PATH_KEYS:
                value = get_key(config, key)
                if isinstance(value, str) and value and value in str(e):
                    origin = config.origin(key) if isinstance(config, Config) else self._source
                    raise ConfigError(str(e).removeprefix(f"{key}: "), path=key, file=origin) from None
            raise

    def run(self, until_us: float | None = None) -> bool:
        """Run to simulated time `until_us` (µs; to the end when None). True when the run is over."""
        with core_errors(self._source):
            return self._core.run(until_us)

    def remap(self, flow: str, chain: Sequence[str]) -> None:
        """Give `flow` a new offload chain from now on; packets already parsed keep theirs."""
        with core_errors(self._source):
            self._core.remap(flow, list(chain))

    @property
    def now_us(self) -> float:
        """Current simulated time in µs."""
        return self._core.now_us

    def summary(self) -> dict[str, Any]:
        """The summary so far."""
        return json.loads(self._core.summary())

    def take_packets(self) -> dict[str, Any]:
        """The records of the packets delivered since the last call (with `log_packets`), as
        numpy columns: `id`, `flow` (its name), `size_bytes`, `t_arrival_ns`, `t_parse_ns`,
        `t_rx_ns`, `latency_ns` (parse to sink, as the summary's), `recircs`, `in_window`."""
        import numpy as np

        raw = self._core.take_packets()
        ns_per_tick = 1e3 / raw["ticks_per_us"]
        names = [f.get("name", f"flow{i}") for i, f in enumerate(self.config.get("flows", []))]
        flow = np.frombuffer(raw["flow"], "<u2")
        t = {k: np.frombuffer(raw[k], "<u8") for k in ("t_arrival", "t_parse", "t_rx")}
        return {
            "id": np.frombuffer(raw["id"], "<u8"),
            "flow": np.array([names[i] if i < len(names) else "" for i in flow], dtype=object),
            "size_bytes": np.frombuffer(raw["size_bytes"], "<u4"),
            **{f"{k}_ns": v * ns_per_tick for k, v in t.items()},
            "latency_ns": (t["t_rx"] - t["t_parse"]) * ns_per_tick,
            "recircs": np.frombuffer(raw["recircs"], "u1"),
            "in_window": np.frombuffer(raw["in_window"], "u1").astype(bool),
        }

    def finish(self) -> None:
        """Flush and close the egress capture, if any."""
        with core_errors(self._source):
            self._core.finish()


def simulate(
    config: Mapping[str, Any],
    egress_pcap: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    interval_s: float = 0.1,
    partial_on_interrupt: bool = True,
    packets: Callable[[dict[str, Any]], None] | None = None,
) -> Summary:
    """Run `config` to the end and return its summary. With `progress`, run in slices of about
    `interval_s` of wall time and report between them. With `packets`, hand it the records of
    the packets delivered in each slice (see [`Datapath.take_packets`]), so that memory stays
    bounded. Ctrl-C ends the run early: the summary then covers what ran and has
    `"interrupted": true` (or, with `partial_on_interrupt=False`, KeyboardInterrupt propagates)."""
    dp = Datapath(config, egress_pcap, log_packets=packets is not None)
    interrupted = False
    try:
        if progress is None and packets is None:
            dp.run()
        else:
            slice_us = 20.0
            while True:
                t0 = time.perf_counter()
                done = dp.run(until_us=dp.now_us + slice_us)
                if packets is not None:
                    packets(dp.take_packets())
                if done:
                    break
                elapsed = time.perf_counter() - t0
                slice_us *= min(4.0, max(0.25, interval_s / max(elapsed, 1e-6)))
                if progress is not None:
                    progress(dp.now_us, dp.summary())
    except KeyboardInterrupt:
        if not partial_on_interrupt:
            raise
        interrupted = True
    dp.finish()
    if packets is not None:
        packets(dp.take_packets())
    summary = dp.summary()
    summary["interrupted"] = interrupted
    return cast("Summary", stamp(summary))


class _PacketParquet:
    """packets.parquet, written in row groups of `ROWS_PER_GROUP` rows: the same bytes for the
    same run, however the run was cut into slices of wall-clock time."""

    #: Rows of one row group (a bounded buffer: about 5 MB of columns).
    ROWS_PER_GROUP = 1 << 16

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writer: Any = None
        self.pending: list[Any] = []
        self.rows = 0

    def __call__(self, cols: dict[str, Any]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table(cols)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, table.schema)
        if table.num_rows:
            self.pending.append(table)
            self.rows += table.num_rows
        while self.rows >= self.ROWS_PER_GROUP:
            self._write(self.ROWS_PER_GROUP)

    def _write(self, n: int) -> None:
        """Write the first `n` pending rows as one row group."""
        import pyarrow as pa

        table = pa.concat_tables(self.pending)
        self.writer.write_table(table.slice(0, n).combine_chunks(), row_group_size=n)
        rest = table.slice(n)
        self.pending = [rest] if rest.num_rows else []
        self.rows -= n

    def close(self) -> None:
        if self.writer is not None:
            if self.rows:
                self._write(self.rows)
            self.writer.close()


def run(
    config: Mapping[str, Any],
    out: str | os.PathLike[str] | None = None,
    *,
    egress_pcap: bool | None = None,
    progress: Progress | None = None,
    force: bool = False,
    packet_records: bool = False,
) -> Summary:
    """Run one simulation; with `out`, write its output folder (atomically: all or nothing).

    `egress_pcap`: write `out/egress.pcap` (default: the config's `measure.egress_pcap`).
    `packet_records`: write `out/packets.parquet`, a row per delivered packet.
    `force`: replace an existing `out` that nicsim did not write (see [`OutputDir`]).
    On Ctrl-C the partial summary is still written and [`Interrupted`] (a KeyboardInterrupt
    carrying the summary) is raised.
    """
    if egress_pcap is None:
        egress_pcap = bool(get_key(config, "measure.egress_pcap"))
    if out is None:
        summary = simulate(config, progress=progress)
    else:
        with OutputDir(out, inputs=config_inputs(config), force=force, config=config) as o:
            records = _PacketParquet(o.file("packets.parquet")) if packet_records else None
            try:
                summary = simulate(config, o.file("egress.pcap") if egress_pcap else None, progress, packets=records)
            finally:
                if records is not None:
                    records.close()
            write_run(o, config, summary)
    if summary["interrupted"]:
        raise Interrupted(summary)
    return summary


def config_inputs(config: Mapping[str, Any]) -> list[str | None]:
    """The files a configuration reads: itself and its traffic files."""
    source = getattr(config, "source", None)
    return [None if source == "<stdin>" else source, *(get_key(config, k) for k in PATH_KEYS)]


def write_run(o: OutputDir, config: Mapping[str, Any], summary: dict[str, Any]) -> None:
    """summary.json, per_flow.csv, fifos.csv, run.png (both plotted) and config.json (the
    configuration as run)."""
    o.summary(summary)
    o.csv("per_flow.csv", per_flow_rows(summary), columns=PER_FLOW_COLUMNS)
    o.csv("fifos.csv", fifo_rows(summary), columns=FIFO_COLUMNS)
    o.json("config.json", config)
    with o.optional(*figures("run")):
        plot_run(o, summary)


FIFO_COLUMNS = ("fifo", "capacity_bytes", "mean_bytes", "max_bytes", "mean_packets", "max_packets", "arrivals",
                "departures")


def fifo_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per FIFO: its capacity and its occupancy over the run."""
    return [{"fifo": name, **{c: f.get(c) for c in FIFO_COLUMNS[1:]}}
            for name, f in sorted(summary.get("fifos", {}).items())]


#: Most FIFOs and flows `plot_run` draws (the fullest FIFOs, the flows with the most packets), so
#: that the picture's size and the time to draw it do not grow with a configuration's (PANIC's full
#: variant has four FIFOs per unit, 16,384 units at most; a configuration up to 65,535 flows); the
#: tables hold them all.
MAX_PLOTTED_FIFOS = 48
MAX_PLOTTED_FLOWS = 12


def plot_run(o: OutputDir, summary: Mapping[str, Any]) -> None:
    """run.png: latency per flow against packet size (mean, with min to p99), and each FIFO's
    mean and peak occupancy as a share of its capacity (at most MAX_PLOTTED_FLOWS flows, those
    with the most packets, and MAX_PLOTTED_FIFOS FIFOs, the fullest at their peak)."""
    from nicsim.output import pyplot

    plt = pyplot()

    rows = per_flow_rows(summary)
    all_fifos = [f for f in fifo_rows(summary) if f["capacity_bytes"]]
    fuller = sorted(range(len(all_fifos)), key=lambda i: -all_fifos[i]["max_bytes"] / all_fifos[i]["capacity_bytes"])
    fifos = [all_fifos[i] for i in sorted(fuller[:MAX_PLOTTED_FIFOS])]
    packets: dict[str, int] = {}
    for r in rows:
        packets[r["flow"]] = packets.get(r["flow"], 0) + (r["packets"] or 0)
    flows = sorted(packets, key=lambda f: -packets[f])[:MAX_PLOTTED_FLOWS]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, max(4.0, 0.22 * len(fifos) + 1.5)))
    for flow in [f for f in packets if f in set(flows)]:
        rs = [r for r in rows if r["flow"] == flow and r["packets"]]
        if not rs:
            continue
        xs = [r["size_bytes"] for r in rs]
        # The range min..p99 as a line of its own: p99 may lie below the mean (a few slow
        # packets among many fast ones), which an error bar around the mean cannot show.
        (line,) = ax.plot(xs, [r["mean_us"] for r in rs], marker="o", label=flow)
        ax.vlines(xs, [r["min_us"] for r in rs], [r["p99_us"] for r in rs], color=line.get_color(), alpha=0.6)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("packet size (bytes)")
    ax.set_ylabel("latency (µs): mean, min to p99")
    ax.set_title(f"{summary.get('arch')}, {summary.get('offered_gbps', 0):g} Gbit/s offered: "
                 f"{summary.get('throughput_gbps', 0):.1f} Gbit/s")
    ax.grid(alpha=0.3)
    if rows:
        ax.legend(fontsize=8)
    names = [f["fifo"] for f in fifos]
    ys = range(len(fifos))
    ax2.barh(ys, [f["max_bytes"] / f["capacity_bytes"] for f in fifos], color="tab:orange", alpha=0.5, label="peak")
    ax2.barh(ys, [f["mean_bytes"] / f["capacity_bytes"] for f in fifos], color="tab:blue", label="mean")
    ax2.set_yticks(list(ys), names, fontsize=7)
    ax2.invert_yaxis()
    ax2.set_xlim(0, 1)
    ax2.set_xlabel("occupancy (share of the FIFO's capacity)")
    ax2.legend(fontsize=8)
    ax2.grid(alpha=0.3, axis="x")
    if len(fifos) < len(all_fifos):
        ax2.set_title(f"the {len(fifos)} fullest of {len(all_fifos):,} FIFOs (all in fifos.csv)", fontsize=9)
    if len(flows) < len(packets):
        ax.text(0.01, 0.01, f"the {len(flows)} flows with the most packets of {len(packets):,} (all in per_flow.csv)",
                transform=ax.transAxes, fontsize=8)
    fig.tight_layout()
    o.figure("run", fig)


def per_flow_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per flow and packet size with latency statistics (µs) over the window."""
    rows = []
    for flow, fs in summary.get("per_flow", {}).items():
        for size, st in sorted(fs.get("per_size", {}).items(), key=lambda kv: int(kv[0])):
            rows.append({"flow": flow, "size_bytes": int(size), "packets": st.get("packets", 0),
                         **{f"{k}_us": st.get(k) for k in ("mean", "min", "p50", "p99", "max")}})
    return rows
