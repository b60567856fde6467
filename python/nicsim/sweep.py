"""Parameter sweeps: many independent simulations on a local process pool or on Ray.

[`sweep`] runs the cartesian product of parameter values over a base configuration;
[`run_many`] runs a list of configurations. Results come back in input order and do not depend
on the executor or the number of workers: each run is seeded by its own configuration.

- `local` (default): a `ProcessPoolExecutor` with spawned workers (one per core by default).
- `ray`: Ray tasks (`pip install 'nicsim[ray]'`). Connects to a running Ray if `ray.init` was
  already called (e.g. a cluster via `RAY_ADDRESS`), otherwise starts a local one with
  `workers` CPUs and shuts it down afterwards.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from nicsim.config import validate, with_overrides
from nicsim.errors import InputError, NicsimError

EXECUTORS = ("local", "ray")


def sweep(
    config: Mapping[str, Any],
    params: Mapping[str, Sequence[Any]],
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run every combination of `params` (key path → values) over `config`.

    Returns one `{"params": {key: value}, "summary": {...}}` per point, in the order of
    `itertools.product` over the keys as given.
    """
    keys = list(params)
    points = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(params[k] for k in keys))]
    configs = [with_overrides(config, p) for p in points]
    summaries = run_many(configs, executor=executor, workers=workers, progress=progress, description="sweep")
    return [{"params": p, "summary": s} for p, s in zip(points, summaries, strict=True)]


def run_many(
    configs: Sequence[Mapping[str, Any]],
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
    description: str = "runs",
) -> list[dict[str, Any]]:
    """Simulate each configuration to the end; summaries in input order."""
    if executor not in EXECUTORS:
        raise InputError(f"unknown executor '{executor}' (expected {' or '.join(EXECUTORS)})")
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    for c in configs:  # fail before starting anything
        validate(c)
    if not configs:
        return []
    workers = min(workers or os.cpu_count() or 1, len(configs))
    with _progress(progress) as bar:
        task = bar.add_task(description, total=len(configs))
        advance = lambda: bar.advance(task)  # noqa: E731
        if executor == "ray":
            outcomes = _run_ray(configs, workers, advance)
        elif workers == 1:
            outcomes = [_advance_after(_point(c), advance) for c in configs]
        else:
            outcomes = _run_local(configs, workers, advance)
    for o in outcomes:
        if isinstance(o, BaseException):
            raise o
    return outcomes


def _point(config: Mapping[str, Any]) -> dict[str, Any] | NicsimError:
    """One run, in a worker. Bad input comes back as a value, to be raised by the caller."""
    from nicsim.datapath import simulate

    try:
        return simulate(config, partial_on_interrupt=False)
    except NicsimError as e:
        return e


def _advance_after(result: Any, advance: Callable[[], None]) -> Any:
    advance()
    return result


def _ignore_sigint() -> None:
    # Ctrl-C is handled by the parent, which stops the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_local(configs: Sequence[Mapping[str, Any]], workers: int, advance: Callable[[], None]) -> list[Any]:
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_ignore_sigint)
    try:
        futures = [pool.submit(_point, c) for c in configs]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for _ in done:
                advance()
        return [f.result() for f in futures]
    except BaseException:
        for p in list(getattr(pool, "_processes", {}).values()):  # stop running simulations now
            p.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)


def _run_ray(configs: Sequence[Mapping[str, Any]], workers: int, advance: Callable[[], None]) -> list[Any]:
    try:
        import ray
    except ImportError:
        raise InputError("the ray executor needs Ray: pip install 'nicsim[ray]'") from None
    started = not ray.is_initialized()
    if started:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    refs: list[Any] = []
    try:
        task = ray.remote(num_cpus=1)(_point)
        refs = [task.remote(c) for c in configs]
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for _ in done:
                advance()
        return ray.get(refs)
    except BaseException:
        for r in refs:
            ray.cancel(r, force=True)
        raise
    finally:
        if started:
            ray.shutdown()


class _NoProgress:
    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def add_task(self, *a: Any, **kw: Any) -> int:
        return 0

    def advance(self, *a: Any, **kw: Any) -> None:
        pass


def _progress(enabled: bool) -> Any:
    if not enabled:
        return _NoProgress()
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )
