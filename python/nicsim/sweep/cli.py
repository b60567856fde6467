"""`nicsim sweep`: a datapath or router configuration over a grid of parameter values, on the
local pool or a Ray cluster."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from nicsim import ui
from nicsim.config import parse_sweep_param
from nicsim.datapath.cli import ConfigArg
from nicsim.errors import ConfigError
from nicsim.options import (
    Executor,
    ExecutorOpt,
    ForceOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    RayAddressOpt,
    VerboseOpt,
    WorkersOpt,
)


def sweep_cmd(
    config: ConfigArg,
    out: OutOpt,
    param: Annotated[list[str], typer.Option("--param", "-p", metavar="KEY=V1,V2,...",
                                             help="A swept key and its values, comma-separated (repeatable; the "
                                                  "sweep is the cartesian product). Commas inside brackets do not "
                                                  "split: `flows[0].chain=[\"crc\",\"rss\"],[\"crc\"]`.",
                                             show_default=False)],
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    ray_address: RayAddressOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Run a configuration over a grid of parameter values.

    CONFIG is a datapath configuration or a router one (`nicsim router run`'s). Writes
    OUT/sweep.csv and sweep.parquet (one row per point: the parameters and the headline
    metrics), OUT/summary.json (every point with its full summary) and a plot of the metrics
    against each varied parameter.
    """
    from nicsim.sweep import sweep_to_folder

    params: dict[str, list[Any]] = {}
    for text in param:
        key, values = parse_sweep_param(text)
        if key in params:
            raise ConfigError("given twice", path=key, file="--param")
        params[key] = values
    where = "ray" if ray_address else executor.value
    summary, rows, shown = sweep_to_folder(config, params, out, executor=where, workers=workers,
                                           ray_address=ray_address, force=force)

    def show(console: Console) -> None:
        fixed = ", ".join(f"{k}={_fmt(v[0])}" for k, v in params.items() if len(v) == 1)
        t = Table(title=f"{len(rows)} {summary['model']} runs on {where}" + (f" with {fixed}" if fixed else ""))
        for _key, header in shown:
            t.add_column(header, justify="right")
        for r in rows:
            t.add_row(*(_fmt(r[c]) for c, _ in shown))
        console.print(t)

    ui.result(summary, show)
    ui.wrote(out)


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}"
    return v if isinstance(v, str) else json.dumps(v)


