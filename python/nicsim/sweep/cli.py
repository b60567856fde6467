"""`nicsim sweep`: a datapath or router configuration over a grid of parameter values, on the
local pool or a Ray cluster."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from nicsim import ui
from nicsim.config import parse_sweep_param
from nicsim.datapath.cli import ConfigArg
from nicsim.errors import ConfigError
from nicsim.options import (
    Executor,
    ExecutorOpt,
    ForceOpt,
    JsonOpt,
    KeepGoingOpt,
    OutOpt,
    QuietOpt,
    RayAddressOpt,
    VerboseOpt,
    WorkersOpt,
)
from nicsim.sweep import METRICS as METRICS_OF


def sweep_cmd(
    config: ConfigArg,
    out: OutOpt,
    param: Annotated[list[str], typer.Option("--param", "-p", metavar="KEY=V1,V2,...",
                                             help="A swept key and its values, comma-separated (repeatable; the "
                                                  "sweep is the cartesian product). Commas inside brackets do not "
                                                  "split: `flows[0].chain=[\"crc\",\"rss\"],[\"crc\"]`.",
                                             show_default=False)],
    zip_param: Annotated[list[str] | None, typer.Option(
        "--zip", metavar="KEY=V1,V2,...",
        help="A key whose values go together with the other --zip keys' values, index by index (repeatable; "
             "each --zip needs as many values): the zipped keys are one axis of the grid. Four ports' frame "
             "sizes in one set: `--zip 'traffic[0].frame_bytes=64,1500' --zip 'traffic[1].frame_bytes=64,1500'` "
             "is 2 points, not 4.", show_default=False)] = None,
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    ray_address: RayAddressOpt = None,
    keep_going: KeepGoingOpt = True,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> int:
    """Run a configuration over a grid of parameter values.

    CONFIG is a datapath configuration or a router one (`nicsim router run`'s). Writes
    OUT/sweep.csv and sweep.parquet (one row per point: the parameters and the headline
    metrics), OUT/summary.json (every point with its full summary) and a plot of the metrics
    against each varied parameter. A point that fails is listed with its error and the others
    are written (exit code 1; 2 when every point failed); `--fail-fast` stops at the first.
    """
    from nicsim.sweep import report_failed, sweep_to_folder

    params: dict[str, list[Any]] = {}
    zipped: dict[str, list[Any]] = {}
    for group, texts, where in ((params, param, "--param"), (zipped, zip_param or [], "--zip")):
        for text in texts:
            try:
                key, values = parse_sweep_param(text)
            except ConfigError as e:
                e.file = where
                raise
            if key in params or key in zipped:
                raise ConfigError("given twice", path=key, file=where)
            group[key] = values
    where = "ray" if ray_address else executor.value
    summary, rows, shown = sweep_to_folder(config, params, out, executor=where, workers=workers,
                                           ray_address=ray_address, force=force, zipped=zipped, keep_going=keep_going)
    failed = summary.get("failed", [])
    everything = {**params, **zipped}

    def show(console: Console) -> None:
        fixed = ", ".join(f"{k}={_fmt(v[0])}" for k, v in everything.items() if len(v) == 1)
        total = len(rows) + len(failed)
        t = Table(title=f"{total} {summary['model']} runs on {where}" + (f" with {fixed}" if fixed else "")
                  + (f", {len(failed)} failed" if failed else ""))
        for _key, header in shown:
            t.add_column(header, justify="right")
        if failed:
            t.add_column("status", justify="left")
        for r in rows:
            t.add_row(*(_fmt(r[c]) for c, _ in shown), *(["ok"] if failed else []))
        n_varied = len(shown) - len(METRICS_OF[summary["model"]])
        for f in failed:
            t.add_row(*(_fmt(f["params"][c]) for c, _ in shown[:n_varied]),
                      *("–" for _ in shown[n_varied:]), Text(f"FAILED (point {f['point']})", style="red"))
        console.print(t)  # each failure's error follows on standard error (report_failed)

    ui.result(summary, show)
    ui.wrote(out)
    return report_failed(failed, len(rows) + len(failed), out,
                         lambda f: ", ".join(f"{k}={_fmt(v)}" for k, v in f["params"].items() if len(everything[k]) > 1)
                         or "the only point")


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    return v if isinstance(v, str) else json.dumps(v)


