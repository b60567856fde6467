"""Parameter sweeps: many independent runs on a local process pool or on a Ray cluster.

[`run_tasks`] runs one module-level function over many inputs, on the executor asked for, and
returns the results in input order: they do not depend on the executor or the number of
workers (each run is seeded by its own input). Every model sweeps through it: datapath and
router configurations ([`run_many`], [`sweep`], `nicsim sweep`), XDP analyses over objects and
targets (`nicsim xdp analyze` with several), flow benchmarks over captures, and the
reproductions.

- `local` (default): a `ProcessPoolExecutor` with spawned workers (one per core by default).
- `ray`: Ray tasks (the `nicsim[ray]` extra). With an address (`--ray-address`, or
  `RAY_ADDRESS` in the environment) it connects to that running cluster, whose nodes need
  nicsim installed; otherwise it starts a local Ray with `workers` CPUs and shuts it down after.
  A Ray that the caller already started (`ray.init` before) is used as it is.

A sweep keeps its work ([`Failed`], `--keep-going`, the default of `nicsim sweep` and `nicsim xdp
sweep`): a point that fails (bad input for that point alone: a refused object, a parameter
combination the model refuses) is listed with its one-line error, the others are written, and
the command exits 1 ([`SOME_FAILED`]); when every point failed nothing is written and the first
point's error is the command's one line (exit 2). `--fail-fast` stops at the first failure and
writes nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from nicsim import signals, ui
from nicsim.config import Config, blame_overrides, key_under, override_keys, validate, with_overrides
from nicsim.errors import ConfigError, InputError, NicsimError, WorkerKilled

EXECUTORS = ("local", "ray")
#: The most points a sweep runs (each a simulation; 100,000 datapath runs take hours).
MAX_POINTS = 100_000
#: How long a wait on the pool's workers lasts before Ctrl-C or SIGTERM is looked at (signals.py).
WAIT_SLICE_S = 0.2
MODELS = ("datapath", "router")
#: The exit code of a sweep some of whose points failed (the others are written); 2 means bad
#: input, as everywhere: every point failed, or one did under `--fail-fast`.
SOME_FAILED = 1

T = TypeVar("T")


def grid(params: Mapping[str, Sequence[Any]], zipped: Mapping[str, Sequence[Any]] | None = None) -> list[dict[str, Any]]:
    """The points of a sweep, in order: the cartesian product of `params` (key → values, in the
    order given; the last key varies fastest), and, when `zipped` is given, its keys' values
    taken together, index by index, as one more (the last) axis: `--zip a=1,2 --zip b=3,4` gives
    the points {a: 1, b: 3} and {a: 2, b: 4}."""
    zipped = dict(zipped or {})
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        sizes = ", ".join(f"{k} has {len(v)}" for k, v in zipped.items())
        raise ConfigError(f"zipped keys need as many values each ({sizes})", file="--zip")
    together = [dict(zip(zipped, vs, strict=True)) for vs in zip(*zipped.values(), strict=True)] if zipped else [{}]
    keys = list(params)
    return [{**dict(zip(keys, combo, strict=True)), **z}
            for combo in itertools.product(*(params[k] for k in keys)) for z in together]


def _blame_zip(e: BaseException, zipped: Mapping[str, Any] | None) -> None:
    """An error blamed on `--param` at a key that `--zip` set is blamed on `--zip`."""
    if isinstance(e, ConfigError) and e.file == "--param" and any(key_under(e.path, k) for k in zipped or {}):
        e.file = "--zip"


def n_points(params: Mapping[str, Sequence[Any]], zipped: Mapping[str, Sequence[Any]] | None = None) -> int:
    """How many points [`grid`] gives, without making them."""
    n = math.prod(len(v) for v in params.values())
    return n * (len(next(iter(zipped.values()))) if zipped else 1)


def failed_entry(index: int, label: Mapping[str, Any], error: BaseException | str) -> dict[str, Any]:
    """A summary's `failed` entry: the point (1-based), what names it (its parameters, or its
    object and target) and its one-line error."""
    return {"point": index + 1, **label, "error": " ".join(str(error).split())}


def report_failed(failed: Sequence[Mapping[str, Any]], total: int, out: object, name: Callable[[Mapping[str, Any]], str]) -> int:
    """Warn of each failed point (`name` says which it is) and of how many finished; the
    command's exit code (0, or [`SOME_FAILED`])."""
    for f in failed:
        ui.warn(f"point {f['point']} ({name(f)}): {f['error']}", label="failed:")
    if failed:
        ui.warn(f"{len(failed):,} of {total:,} points failed (listed in {out}/summary.json `failed`); the points "
                "that finished are written (--fail-fast stops at the first failure)")
    return SOME_FAILED if failed else 0


def model_of(config: Mapping[str, Any]) -> str:
    """Which model a configuration is for: a router's has `nics` (or `pc`), a datapath's not."""
    return "router" if "nics" in config or "pc" in config else "datapath"


def check_config(config: Mapping[str, Any]) -> None:
    """Validate a datapath or router configuration (whichever it is)."""
    if model_of(config) == "router":
        from nicsim.router import check

        check(config)
    else:
        validate(config)


def load_any(path: str | os.PathLike[str], overrides: Sequence[str] = ()) -> Config:
    """A datapath or router configuration from a TOML file (or `-`, standard input)."""
    from nicsim.config import load_config

    return load_config(path, overrides, check=check_config)


def simulate_any(config: Mapping[str, Any]) -> dict[str, Any] | NicsimError:
    """One run of either model, in a worker. Bad input comes back as a value, raised by the caller."""
    try:
        if model_of(config) == "router":
            from nicsim.router import simulate

            return simulate(config)
        from nicsim.datapath import simulate as simulate_datapath

        return simulate_datapath(config, partial_on_interrupt=False)
    except NicsimError as e:
        return e


def sweep(
    config: Mapping[str, Any],
    params: Mapping[str, Sequence[Any]],
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
    ray_address: str | None = None,
    zipped: Mapping[str, Sequence[Any]] | None = None,
    keep_going: bool = False,
) -> list[dict[str, Any]]:
    """Run every point of the grid of `params` (key path → values; `zipped`'s keys vary together,
    see [`grid`]) over `config` (a datapath or a router configuration).

    Returns one `{"params": {key: value}, "summary": {...}}` per point, in [`grid`]'s order. A
    point that fails raises its error (before anything runs when its configuration is refused),
    unless `keep_going`: then it is `{"params": ..., "error": "one line"}` and the others run.
    """
    points = grid(params, zipped)
    configs = [with_overrides(config, p) for p in points]
    errors: dict[int, NicsimError] = {}
    for i, c in enumerate(configs):  # fail (or set the point aside) before starting anything
        try:
            with blame_overrides(getattr(config, "source", None), override_keys({**params, **(zipped or {})})):
                check_config(c)
        except NicsimError as e:
            _blame_zip(e, zipped)
            if not keep_going:
                raise
            errors[i] = e
    runnable = [i for i in range(len(configs)) if i not in errors]
    try:
        summaries = run_many([configs[i] for i in runnable], executor=executor, workers=workers, progress=progress,
                             description="sweep", ray_address=ray_address, keep_going=keep_going, checked=True)
    except WorkerKilled as e:  # the points that finished, as this function returns them (None: not run)
        ran = dict(zip(runnable, e.results, strict=True))
        e.results = [None if ran.get(i) is None else {"params": p, "summary": ran[i]} for i, p in enumerate(points)]
        e.point = runnable[e.point - 1] + 1
        raise
    for i, s in zip(runnable, summaries, strict=True):
        if isinstance(s, NicsimError):
            errors[i] = s
    ran = dict(zip(runnable, summaries, strict=True))
    return [{"params": p, "error": " ".join(str(errors[i]).split())} if i in errors else {"params": p, "summary": ran[i]}
            for i, p in enumerate(points)]


def run_many(
    configs: Sequence[Mapping[str, Any]],
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
    description: str = "runs",
    ray_address: str | None = None,
    pool: Pool | None = None,
    keep_going: bool = False,
    checked: bool = False,
) -> list[dict[str, Any]]:
    """Simulate each configuration (datapath or router) to the end; summaries in input order.
    With `pool`, on that open [`Pool`] (the executor arguments are then its own). With
    `keep_going`, a run's bad input is its result (a [`NicsimError`]) instead of being raised;
    `checked`: the configurations were validated already."""
    if not checked:
        for c in configs:  # fail before starting anything
            check_config(c)
    if pool is not None:
        return pool.run(simulate_any, configs, progress=progress, description=description, keep_going=keep_going)
    return run_tasks(simulate_any, configs, executor=executor, workers=workers, progress=progress,
                     description=description, ray_address=ray_address, keep_going=keep_going)


def run_tasks(
    fn: Callable[[T], Any],
    items: Sequence[T],
    executor: str = "local",
    workers: int | None = None,
    progress: bool = True,
    description: str = "runs",
    ray_address: str | None = None,
    keep_going: bool = False,
) -> list[Any]:
    """`[fn(x) for x in items]` on the executor; `fn` must be a module-level function (it is
    pickled to the workers). A result that is a [`NicsimError`] is raised at once, the rest
    stopped (with `keep_going`: returned as that item's result, the rest run on).
    One batch: a caller with several batches in a row keeps one [`Pool`] open instead."""
    with Pool(executor, workers, ray_address) as pool:
        return pool.run(fn, items, progress=progress, description=description, keep_going=keep_going)


def unfinished(killed: WorkerKilled) -> list[dict[str, Any]]:
    """A summary's `unfinished`: the points (1-based) that a dead worker left without a result."""
    return [{"point": i + 1, "why": str(killed) if i + 1 == killed.point else "not run: the pool stopped"}
            for i, r in enumerate(killed.results) if r is None]


def check_executor(executor: str, workers: int | None = None) -> None:
    """`--executor` and `--workers`, checked before any work starts."""
    if executor not in EXECUTORS:
        raise InputError(f"--executor: unknown executor '{executor}' (expected {' or '.join(EXECUTORS)})")
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored in this process for the block (where signals can be set: the main thread)."""
    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _quiet_resource_tracker() -> None:
    """multiprocessing's resource tracker (the process that frees the pool's semaphores if we
    die) started, and restarted if it was killed, with its standard error on /dev/null: a
    restarted tracker prints a KeyError traceback for every semaphore the dead one knew, and
    Python warns that it restarted it. Neither is the user's business."""
    import types
    import warnings
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker
    if getattr(tracker, "_nicsim_quiet", False):
        return
    start = type(tracker).ensure_running

    def ensure_running(self: Any) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="resource_tracker: process died")
            try:
                saved = os.dup(2)
            except OSError:
                start(self)
                return
            try:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 2)
                os.close(null)
                start(self)
            finally:
                os.dup2(saved, 2)
                os.close(saved)

    tracker.ensure_running = types.MethodType(ensure_running, tracker)
    tracker._nicsim_quiet = True


def _quiet_cancelled_futures() -> None:
    """Python 3.11's process pool, when its workers are stopped while futures were cancelled
    (Ctrl-C or SIGTERM during a sweep), sets an exception on those futures in its manager
    thread, which raises InvalidStateError and prints its traceback (Python 3.12 ignores it:
    CPython gh-94777). Ignored here the same way."""
    import threading
    from concurrent.futures import InvalidStateError

    if getattr(threading.excepthook, "_nicsim", False):
        return
    previous = threading.excepthook

    def hook(args: Any) -> None:
        if args.exc_type is InvalidStateError and type(args.thread).__name__ == "_ExecutorManagerThread":
            return
        previous(args)

    hook._nicsim = True  # type: ignore[attr-defined]
    threading.excepthook = hook


#: In a local pool's worker: where it says which point it starts (its pid and the point's
#: index), so that the parent can name the point of a worker that dies.
_started: Any = None


def _init_worker(started: Any) -> None:
    global _started
    # Ctrl-C is handled by the parent, which stops the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _started = started


def _run_point(fn: Callable[[Any], Any], index: int, item: Any) -> Any:
    """`fn(item)` in a worker, having said that this worker runs point `index`."""
    _started.put((os.getpid(), index))
    return fn(item)


class Pool:
    """Where runs execute, kept open across batches: the local process pool's workers start
    once, and Ray is started or connected to once (and shut down at the end only if this pool
    started it). [`run_tasks`] opens one for a single batch; a search that runs round after
    round (`nicsim offloads size`) keeps one open, so that no round pays for starting workers.
    A batch of one item, or `workers=1`, runs in this process, as before any pool."""

    def __init__(self, executor: str = "local", workers: int | None = None, ray_address: str | None = None) -> None:
        check_executor(executor, workers)
        if ray_address is not None and not ray_address.strip():
            raise InputError("--ray-address: an empty address (give HOST:PORT, ray://HOST:10001 or auto; leave it "
                             "out for a local run)")
        self.executor = executor
        self.requested = workers
        self.address = ray_address
        self._local: ProcessPoolExecutor | None = None
        self._started: Any = None
        self._ray_started = False

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._local is not None:
            if exc_type is not None:
                for p in list(getattr(self._local, "_processes", {}).values()):  # stop running simulations now
                    p.terminate()
            # One shutdown that waits, with signals held back: a first `shutdown(wait=False)`
            # dropped the pool's hold on its manager thread, so that thread, still closing its
            # wake-up pipe, raced Python's exit hook (an EBADF traceback after "nicsim: terminated").
            with signals.deferred():
                self._local.shutdown(wait=True, cancel_futures=exc_type is not None)
            self._local = None
        if self._ray_started:
            import ray

            ray.shutdown()
            self._ray_started = False

    def run(self, fn: Callable[[T], Any], items: Sequence[T], progress: bool = True,
            description: str = "runs", keep_going: bool = False) -> list[Any]:
        """`[fn(x) for x in items]` on this pool, results in input order. A result that is a
        [`NicsimError`] (`fn` returns bad input as a value) is raised as soon as it comes, and
        the items under way are stopped; with `keep_going` it is that item's result instead."""
        if not items:
            return []
        workers = min(self.requested or os.cpu_count() or 1, len(items))

        def check(result: Any) -> None:
            if not keep_going and isinstance(result, BaseException):
                raise result

        with ui.Progress(description, total=len(items), unit="runs") if progress else _NoProgress() as bar:
            bar.update(0)
            if self.executor == "ray":
                outcomes = self._run_ray(fn, items, bar.advance, check)
            elif workers == 1:
                outcomes = []
                for x in items:
                    outcomes.append(fn(x))
                    check(outcomes[-1])
                    bar.advance()
            else:
                outcomes = self._run_local(fn, items, bar.advance, check)
        for o in outcomes:
            check(o)
        return outcomes

    def _run_local(self, fn: Callable[[Any], Any], items: Sequence[Any], advance: Callable[[], None],
                   check: Callable[[Any], None]) -> list[Any]:
        if self._local is None:
            _quiet_resource_tracker()
            _quiet_cancelled_futures()
            ctx = multiprocessing.get_context("spawn")
            self._started = ctx.SimpleQueue()
            self._local = ProcessPoolExecutor(max_workers=self.requested or os.cpu_count() or 1, mp_context=ctx,
                                              initializer=_init_worker, initargs=(self._started,))
        # Submitting starts workers. A worker started while SIGINT is ignored keeps ignoring it
        # (Python leaves an inherited SIG_IGN alone), so a Ctrl-C that reaches the whole process
        # group while one is starting cannot print its traceback; the parent handles Ctrl-C.
        # Ctrl-C and SIGTERM are raised between waits, never inside the pool's locks (signals.py).
        with signals.deferred(), _sigint_ignored():
            futures = [self._local.submit(_run_point, fn, i, x) for i, x in enumerate(items)]
        try:
            pending = set(futures)
            with signals.deferred() as sig:
                while pending:
                    done, pending = wait(pending, timeout=WAIT_SLICE_S, return_when=FIRST_COMPLETED)
                    sig.raise_pending()
                    for f in done:
                        if f.exception() is None:
                            check(f.result())  # bad input, without --keep-going: stop the others
                        advance()
        except NicsimError:  # a point's bad input (not --keep-going): the runs under way end now
            for f in futures:
                f.cancel()
            if self._local is not None and any(f.running() for f in futures):
                for proc in list(getattr(self._local, "_processes", {}).values()):
                    proc.terminate()
                self._local.shutdown(wait=True, cancel_futures=True)
                self._local = None  # the next batch starts a new pool
            raise
        except BaseException:
            for f in futures:
                f.cancel()
            raise
        if any(isinstance(f.exception(), BrokenProcessPool) for f in futures):
            self._worker_died(futures)
        return [f.result() for f in futures]

    def _worker_died(self, futures: Sequence[Any]) -> None:
        """A worker died (`BrokenProcessPool`): raise [`WorkerKilled`] naming the point it ran
        (from what the workers said they started, and which of them died by a signal other
        than the pool's own SIGTERM to the others), with the results that finished."""
        assert self._local is not None
        procs = dict(getattr(self._local, "_processes", None) or {})
        self._local.shutdown(wait=True)  # the pool has ended its workers: their exit codes are known
        self._local = None  # broken: the next batch starts a new pool
        running: dict[int, int] = {}
        while not self._started.empty():
            pid, index = self._started.get()
            running[pid] = index
        dead = [(pid, p.exitcode) for pid, p in procs.items() if p.exitcode not in (None, 0, -signal.SIGTERM)]
        results = [None if f.exception() is not None else f.result() for f in futures]
        unfinished = [i for i, f in enumerate(futures) if isinstance(f.exception(), BrokenProcessPool)]
        point = next((running[pid] for pid, _ in dead if pid in running), unfinished[0])
        code = next((c for pid, c in dead if running.get(pid) == point), None)
        how = ("was killed (out of memory?)" if code in (None, -signal.SIGKILL)
               else f"died ({signal.Signals(-code).name})" if code < 0 else f"exited with code {code}")
        raise WorkerKilled(point + 1, results, how)

    def _run_ray(self, fn: Callable[[Any], Any], items: Sequence[Any], advance: Callable[[], None],
                 check: Callable[[Any], None]) -> list[Any]:
        ray_environment(self.address or os.environ.get("RAY_ADDRESS") or None)
        try:
            import ray
        except ImportError:
            raise InputError(f"the ray executor needs Ray, which is not installed: {ray_install_hint()}") from None
        if not ray.is_initialized():
            self._init_ray(ray)
        refs: list[Any] = []
        try:
            task = ray.remote(num_cpus=1)(fn)
            pending: list[Any] = []
            it = iter(items)
            limit = self.requested or len(items)  # on a cluster: at most -j in flight, when given
            while True:
                while len(pending) < limit:
                    nxt = next(it, _END)
                    if nxt is _END:
                        break
                    ref = task.remote(nxt)
                    refs.append(ref)
                    pending.append(ref)
                if not pending:
                    break
                with signals.deferred():  # Ctrl-C and SIGTERM raised after the wait (signals.py)
                    done, pending = ray.wait(pending, num_returns=1, timeout=WAIT_SLICE_S)
                for ref in done:
                    check(ray.get(ref))
                    advance()
            return ray.get(refs)
        except BaseException:
            for r in refs:
                ray.cancel(r, force=True)
            raise

    def _init_ray(self, ray: Any) -> None:
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        common = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
        token = ray_auth_token() if address else None
        if address:
            _probe(address)
        try:
            if address:
                # The tasks run nicsim as the cluster's nodes have it installed (the functions
                # are pickled by reference): every node needs nicsim, as the README says.
                with _stderr_silenced():
                    ray.init(address=address, **common)
            else:
                ray.init(num_cpus=self.requested or os.cpu_count() or 1, **common)
        except Exception as e:  # Ray raises plain Exception when a node does not start
            # Ray's ConnectionError ("Failed to connect to Ray cluster at ...") keeps the reason
            # (no raylet found, a GCS timeout) in its cause: both go in the one line.
            # (Only a one-line reason: a token refusal's cause is Ray's own traceback text.)
            first = str(e.__cause__).strip().splitlines()[0] if e.__cause__ is not None and str(e.__cause__).strip() else ""
            cause = f" ({first})" if first and "Traceback" not in first and "File \"" not in first else ""
            why = (" ".join(str(e).split()) + cause)[:400]
            if address:
                causes = " ".join(str(c) for c in (e.__cause__, e.__context__) if c is not None)
                refused = "InvalidAuthToken" in causes or "Unauthenticated" in causes
                hint = (f" (the head refused the token from {token}: give the head's)" if token is not None and refused
                        else " (the head asks for a token: give the head's as RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
                        "~/.ray/auth_token; README.md, \"Sweeps\")" if refused
                        else f" (if the cluster uses token authentication, check that the token from {token} is the "
                        "head's)" if token is not None
                        else " (if the cluster uses token authentication, as Ray's heads do once a token exists, give "
                        "its token: RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token; README.md, \"Sweeps\")")
                raise InputError(f"--ray-address: cannot connect to the Ray cluster at {address}: {why}{hint}") from None
            raise InputError(f"--executor ray: cannot start a local Ray: {why}") from None
        self._ray_started = True


def ray_environment(address: str | None) -> None:
    """What Ray reads from the environment when it is imported, set before: no usage
    statistics; the C++ core's log at errors only (it logs every refused attempt to reach a
    head, an InvalidAuthToken line a second for 20 s: the failure is this command's one error
    line instead); and, to reach a cluster at `address` with a token at hand, token mode (a head
    that finds a token, Ray >= 2.52: `ray get-auth-token --generate`, or RAY_AUTH_MODE=token when
    it started, refuses clients without it, and Ray's client sends it only in token mode)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address and "RAY_AUTH_MODE" not in os.environ and ray_auth_token() is not None:
        os.environ["RAY_AUTH_MODE"] = "token"


def ray_auth_token() -> str | None:
    """Where a Ray token for this client is, as Ray looks for one (docs.ray.io, "Token
    authentication"): `RAY_AUTH_TOKEN`, the file `RAY_AUTH_TOKEN_PATH` names, or
    `~/.ray/auth_token`; None when there is none (or RAY_AUTH_MODE says not to use one)."""
    if os.environ.get("RAY_AUTH_MODE", "token") != "token":
        return None
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or os.path.join(os.path.expanduser("~"), ".ray", "auth_token")
    try:
        return path if os.path.getsize(path) > 0 else None
    except OSError:
        return None


def ray_install_hint() -> str:
    """The command that installs Ray into the Python that runs nicsim (a checkout's .venv, or
    wherever nicsim was installed), with the version the `ray` extra asks for."""
    import shlex
    import sys
    from importlib.metadata import PackageNotFoundError, requires

    req = "ray>=2.9"
    try:
        for r in requires("nicsim") or []:
            if "extra == \"ray\"" in r.replace("'", "\""):
                req = r.split(";")[0].strip()
    except PackageNotFoundError:
        pass
    return f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(req)}"


_END = object()


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    """File descriptor 2 on /dev/null for the block: Ray's C++ core logs every refused attempt
    to reach a head (an InvalidAuthToken line a second for 20 s) while `ray.init` connects; a
    failure is this command's one error line instead."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _probe(address: str) -> None:
    """Fail at once when nothing listens at a `HOST:PORT` cluster address (Ray itself retries
    for minutes); `auto`, `local` and `ray://` addresses are left to Ray."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=10) as s:
            # Ray's head (its GCS) speaks gRPC: HTTP/2 answers the client preface with a
            # SETTINGS frame (type 4). Anything else listening there is not a Ray head.
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
            head = b""
            while len(head) < 9:
                chunk = s.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
    except OSError as e:
        raise InputError(f"--ray-address: cannot connect to the Ray cluster at {address}: "
                         f"{e.strerror or e}") from None
    if len(head) < 9 or head[3] != 4:
        raise InputError(f"--ray-address: {address} is not a Ray cluster's head (it does not speak gRPC)")


class _NoProgress:
    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def update(self, *a: Any, **kw: Any) -> None:
        pass

    def advance(self, *a: Any, **kw: Any) -> None:
        pass


# -- nicsim sweep: the output folder --------------------------------------------------------------

#: The headline metrics of a point, per model: (key, column header).
METRICS = {
    "datapath": [("throughput_gbps", "Gbit/s (frames)"), ("latency_mean_us", "mean µs"), ("latency_p99_us", "p99 µs"),
                 ("delivered", "delivered"), ("dropped", "dropped")],
    "router": [("forwarded_mbps", "fwd Mbit/s (wire)"), ("offered_mbps", "offered Mbit/s (wire)"), ("loss_high", "loss high"),
               ("loss_low", "loss low"), ("latency_high_mean_us", "high µs"), ("latency_low_mean_us", "low µs"),
               ("bus_utilisation", "bus"), ("cpu_utilisation", "CPU")],
}


#: The two metrics sweep.png plots, per model.
PLOTTED = {"datapath": ("throughput_gbps", "latency_mean_us"), "router": ("forwarded_mbps", "loss_low")}


def metrics(model: str, s: Mapping[str, Any]) -> dict[str, Any]:
    """A point's headline numbers (one row of sweep.csv)."""
    if model == "router":
        ports = s["ports"].values()
        cl = s["classes"]

        def mean_latency(c: str) -> float | None:
            xs = [p["latency_us"][c].get("mean") for p in ports if p["latency_us"][c].get("mean") is not None]
            return sum(xs) / len(xs) if xs else None

        return {"forwarded_mbps": sum(p["forwarded"]["mbps"] for p in ports),
                "offered_mbps": sum(p["offered"]["mbps"] for p in ports),
                "loss_high": cl["high"]["loss"], "loss_low": cl["low"]["loss"],
                "latency_high_mean_us": mean_latency("high"), "latency_low_mean_us": mean_latency("low"),
                "bus_utilisation": s["bus"]["utilisation"], "cpu_utilisation": s["cpu"]["utilisation"]}
    lat = s.get("latency_us", {})
    return {"throughput_gbps": s["throughput_gbps"], "latency_mean_us": lat.get("mean"),
            "latency_p99_us": lat.get("p99"), "delivered": s["packets"]["delivered"],
            "dropped": s["packets"]["dropped_total"]}


def sweep_to_folder(config: str | os.PathLike[str], params: Mapping[str, Sequence[Any]],
                    out: str | os.PathLike[str], *, executor: str = "local", workers: int | None = None,
                    ray_address: str | None = None, force: bool = False,
                    zipped: Mapping[str, Sequence[Any]] | None = None, keep_going: bool = True,
                    ) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[str, str]]]:
    """`nicsim sweep`: run the grid (see [`grid`]) and write OUT/summary.json (`model`, `params`,
    `zipped`, `points`, and `failed` when some points failed), sweep.csv and sweep.parquet (a row
    per point that ran) and sweep.png. Returns the summary, the rows and the columns to show
    (key, header): the varied parameters and the metrics.

    `keep_going` (the default): a point that fails is listed in `failed` with its one-line error
    and the others are written; when every point fails, the first point's error is raised and
    nothing is written. Without it, the first failure is raised before anything is written."""
    from nicsim.datapath import config_inputs
    from nicsim.output import OutputDir, figures

    zipped = dict(zipped or {})
    if overlap := sorted(set(params) & set(zipped)):
        raise ConfigError("given both as --param and as --zip", path=overlap[0], file="--zip")
    cfg = load_any(config)
    model = model_of(cfg)
    count = n_points(params, zipped)
    if count > MAX_POINTS:
        raise ConfigError(f"the grid has {count:,} points; at most {MAX_POINTS:,} (sweep fewer values)",
                          file="--param")
    try:
        configs = [with_overrides(cfg, p) for p in grid(params, zipped)]
    except ConfigError as e:
        _blame_zip(e, zipped)
        raise
    # Every point's files are inputs (a swept traffic.replay.path too).
    output = OutputDir(out, inputs=[f for c in [cfg, *configs] for f in config_inputs(c)], force=force, config=cfg)
    output.check()  # before the runs, not after them
    killed = None
    try:
        results = sweep(cfg, params, executor=executor, workers=workers, ray_address=ray_address, zipped=zipped,
                        keep_going=keep_going)
    except WorkerKilled as e:  # keep the points that finished
        killed, results = e, [p for p in e.results if p is not None]
    points = [r for r in results if "summary" in r]
    failed = [failed_entry(i, {"params": r["params"]}, r["error"]) for i, r in enumerate(results) if "error" in r]
    if failed and not points and killed is None:  # nothing to keep: the first point's error is the answer
        raise InputError(failed[0]["error"] + (f" (and {len(failed) - 1:,} more points failed)" if len(failed) > 1 else ""))
    rows = [{**pt["params"], **metrics(model, pt["summary"])} for pt in points]
    varied = [k for k, v in {**params, **zipped}.items() if len(v) > 1]
    summary = {"model": model, "config": str(config), "params": {k: list(v) for k, v in {**params, **zipped}.items()},
               "zipped": list(zipped), "points": points}
    if failed:
        summary["failed"] = failed
    if killed is not None:
        summary["unfinished"] = unfinished(killed)
    with output as o:
        o.csv("sweep.csv", rows)
        o.parquet("sweep.parquet", rows)
        o.summary(summary)
        with o.optional(*figures("sweep")):
            plot_sweep(o, model, varied, rows)
    if killed is not None:
        raise killed.kept(out)
    shown = [(k, k) for k in varied] + METRICS[model]
    return summary, rows, shown


def plot_sweep(o: Any, model: str, varied: list[str], rows: list[dict[str, Any]]) -> None:
    """The first two metrics against the first varied parameter, one line per combination of
    the other varied ones (at most 12); against the point number when nothing varies."""
    import json

    from nicsim.output import pyplot

    plt = pyplot()

    headers = dict(METRICS[model])
    m1, m2 = PLOTTED[model]
    h1, h2 = headers[m1], headers[m2]
    x_key = varied[0] if varied else None
    others = varied[1:]
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(", ".join(f"{k}={r[k]}" for k in others), []).append(r)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for label, rs in list(groups.items())[:12]:
        xs: list[Any] = [r[x_key] for r in rs] if x_key else list(range(len(rs)))
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in xs):
            xs = [x if isinstance(x, str) else json.dumps(x) for x in xs]
        ax.plot(xs, [r[m1] for r in rs], marker="o", label=label or None)
        ax2.plot(xs, [r[m2] for r in rs], marker="s", ls="--", label=label or None)
    for a, h in ((ax, h1), (ax2, h2)):
        a.set_xlabel(x_key or "point")
        a.set_ylabel(h)
        a.grid(alpha=0.3)
    if others:
        ax.legend(fontsize=7)
    fig.suptitle(f"{model} sweep ({len(rows)} points)")
    fig.tight_layout()
    o.figure("sweep", fig)


__all__ = ["EXECUTORS", "MODELS", "SOME_FAILED", "Pool", "grid", "load_any", "model_of", "run_many", "run_tasks", "sweep",
           "sweep_to_folder"]
