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
from typing import Any

from nicsim.config import PATH_KEYS, core_errors, get_key, to_json
from nicsim.errors import Interrupted
from nicsim.output import OutputDir

#: Called between slices with (simulated µs, summary so far).
Progress = Callable[[float, "dict[str, Any] | None"], None]

PER_FLOW_COLUMNS = ("flow", "size_bytes", "packets", "mean_us", "min_us", "p50_us", "p99_us", "max_us")


class Datapath:
    """One datapath simulation (FlexPipe, PANIC or StaticPipe, per `config["arch"]`).

    `egress_pcap`: write every delivered packet there (frames exist when `functional = true`).
    """

    def __init__(self, config: Mapping[str, Any], egress_pcap: str | os.PathLike[str] | None = None) -> None:
        from nicsim import _core

        self.config = config
        self._source = getattr(config, "source", None)
        self.egress_pcap = None if egress_pcap is None else Path(egress_pcap)
        payload = to_json(config)
        with core_errors(self._source):
            self._core = _core.Datapath(payload, None if egress_pcap is None else os.fspath(egress_pcap))

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
) -> dict[str, Any]:
    """Run `config` to the end and return its summary. With `progress`, run in slices of about
    `interval_s` of wall time and report between them. Ctrl-C ends the run early: the summary
    then covers what ran and has `"interrupted": true` (or, with `partial_on_interrupt=False`,
    KeyboardInterrupt propagates)."""
    dp = Datapath(config, egress_pcap)
    interrupted = False
    try:
        if progress is None:
            dp.run()
        else:
            slice_us = 20.0
            while True:
                t0 = time.perf_counter()
                if dp.run(until_us=dp.now_us + slice_us):
                    break
                elapsed = time.perf_counter() - t0
                slice_us *= min(4.0, max(0.25, interval_s / max(elapsed, 1e-6)))
                progress(dp.now_us, dp.summary())
    except KeyboardInterrupt:
        if not partial_on_interrupt:
            raise
        interrupted = True
    dp.finish()
    summary = dp.summary()
    summary["interrupted"] = interrupted
    return summary


def run(
    config: Mapping[str, Any],
    out: str | os.PathLike[str] | None = None,
    *,
    egress_pcap: bool | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Run one simulation; with `out`, write its output folder (atomically: all or nothing).

    `egress_pcap`: write `out/egress.pcap` (default: the config's `measure.egress_pcap`).
    `force`: replace an existing `out` that nicsim did not write (see [`OutputDir`]).
    On Ctrl-C the partial summary is still written and [`Interrupted`] (a KeyboardInterrupt
    carrying the summary) is raised.
    """
    if egress_pcap is None:
        egress_pcap = bool(get_key(config, "measure.egress_pcap"))
    if out is None:
        summary = simulate(config, progress=progress)
    else:
        with OutputDir(out, inputs=config_inputs(config), force=force) as o:
            summary = simulate(config, o.file("egress.pcap") if egress_pcap else None, progress)
            write_run(o, config, summary)
    if summary["interrupted"]:
        raise Interrupted(summary)
    return summary


def config_inputs(config: Mapping[str, Any]) -> list[str | None]:
    """The files a configuration reads: itself and its traffic files."""
    return [getattr(config, "source", None), *(get_key(config, k) for k in PATH_KEYS)]


def write_run(o: OutputDir, config: Mapping[str, Any], summary: Mapping[str, Any]) -> None:
    """summary.json, per_flow.csv and config.json (the configuration as run)."""
    o.json("summary.json", summary)
    o.csv("per_flow.csv", per_flow_rows(summary), columns=PER_FLOW_COLUMNS)
    o.json("config.json", config)


def per_flow_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per flow and packet size with latency statistics (µs) over the window."""
    rows = []
    for flow, fs in summary.get("per_flow", {}).items():
        for size, st in sorted(fs.get("per_size", {}).items(), key=lambda kv: int(kv[0])):
            rows.append({"flow": flow, "size_bytes": int(size), "packets": st.get("packets", 0),
                         **{f"{k}_us": st.get(k) for k in ("mean", "min", "p50", "p99", "max")}})
    return rows
