"""SMT solvers behind one small interface: check a query, then read its unsat core or values.

The Rust core writes each path's query as SMT-LIB2 text (bit-vectors and arrays, every branch
condition a named assertion); a solver checks it, then gives the names in its unsat core, or
the values of terms in its model. `check_also` adds assertions to a query already checked (one
more level for `done`).

- `Z3`: one long-lived context, each query inside `(push 1)` … `(pop 1)`.
- `Bitwuzla`: a fresh instance per query (a fraction of a millisecond), so that its
  preprocessing sees the whole query; it bit-blasts multiplications far faster than Z3
  (BENCHMARKS.md times the two on the suite).

`make_solver` runs either in a process of its own (`SolverProcess`), whose memory the operating
system limits (`RLIMIT_DATA`) to the solver's share of `--memory-mb`: neither solver keeps
within a limit of its own (Bitwuzla's `MEMORY_LIMIT` is checked only between its phases: it
took 1.4 GB with a 200 MB limit on one query of `loop_nested.o`, whose preprocessing never
asked its terminator either; Z3 ends the whole process, exit code 101, at `memory_max_size`).
A solver process that ends while checking has run out of its share: the search stops there
with the bound so far (`SolverStopped`). Run as a script, this module is that process.
"""

from __future__ import annotations

import os
import pickle
import re
import resource
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any


def _sexp(text: str) -> Any:
    """Parse one s-expression (atoms stay strings)."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    stack: list[list[Any]] = [[]]
    for tok in tokens:
        if tok == "(":
            stack.append([])
        elif tok == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    return stack[0][0] if stack[0] else []


def _value(v: Any) -> int | bool:
    if v == "true":
        return True
    if v == "false":
        return False
    if isinstance(v, str) and v.startswith("#x"):
        return int(v[2:], 16)
    if isinstance(v, str) and v.startswith("#b"):
        return int(v[2:], 2)
    if isinstance(v, list) and len(v) == 3 and v[0] == "_" and v[1].startswith("bv"):
        return int(v[1][2:])
    raise ValueError(f"unexpected solver value {v!r}")


class Z3:
    """Z3 through its SMT-LIB2 front end (`Z3_eval_smtlib2_string`) on one context."""

    name = "z3"

    def __init__(self) -> None:
        import z3

        self._z3 = z3
        self._ctx = z3.Context()
        self._eval("(set-option :produce-unsat-cores true)\n(set-option :produce-models true)")

    def _eval(self, text: str) -> str:
        return self._z3.Z3_eval_smtlib2_string(self._ctx.ref(), text)

    def check(self, smt: str, timeout_s: float | None = None) -> str:
        """`sat`, `unsat` or `unknown` (also when `timeout_s` runs out); the query stays
        asserted until [`done`]."""
        limit = "" if timeout_s is None else f"(set-option :timeout {max(int(timeout_s * 1000), 1)})\n"
        out = self._eval(limit + "(push 1)\n" + smt + "(check-sat)\n").strip().splitlines()
        return out[-1] if out else "unknown"

    def check_also(self, smt: str, timeout_s: float | None = None) -> str:
        """Like [`check`] with `smt` added to what is asserted (one more level for [`done`])."""
        return self.check(smt, timeout_s)

    def core(self) -> list[str]:
        return [str(x) for x in _sexp(self._eval("(get-unsat-core)"))]

    def values(self, terms: list[str]) -> list[int | bool]:
        if not terms:
            return []
        out = _sexp(self._eval("(get-value (" + " ".join(terms) + "))"))
        return [_value(pair[1]) for pair in out]

    def done(self) -> None:
        self._eval("(pop 1)")

    @staticmethod
    def version() -> str:
        import z3

        return z3.get_version_string()


class Bitwuzla:
    """Bitwuzla through its SMT-LIB2 parser, one instance per query."""

    name = "bitwuzla"

    def __init__(self) -> None:
        import bitwuzla

        self._bw = bitwuzla
        self._parser: Any = None
        self._solver: Any = None
        self._names: list[str] = []
        self._deadline = float("inf")

    def _terminate(self) -> bool:
        """Bitwuzla asks this, now and then, whether to give up (the time limit of a check)."""
        return time.perf_counter() > self._deadline

    def _run(self, timeout_s: float | None) -> str:
        self._deadline = float("inf") if timeout_s is None else time.perf_counter() + timeout_s
        r = self._solver.check_sat()
        return {self._bw.Result.SAT: "sat", self._bw.Result.UNSAT: "unsat"}.get(r, "unknown")

    def check(self, smt: str, timeout_s: float | None = None) -> str:
        bw = self._bw
        opts = bw.Options()
        opts.set(bw.Option.PRODUCE_MODELS, True)
        opts.set(bw.Option.PRODUCE_UNSAT_CORES, True)
        self._parser = bw.Parser(bw.TermManager(), opts)
        self._parser.parse("(set-logic QF_ABV)\n" + smt, True, False)
        self._solver = self._parser.bitwuzla()
        self._solver.configure_terminator(self._terminate)
        self._names = _NAMED.findall(smt)
        self._levels = 0
        return self._run(timeout_s)

    def check_also(self, smt: str, timeout_s: float | None = None) -> str:
        self._solver.push(1)
        self._levels += 1
        if smt.strip():  # Bitwuzla's parser refuses an empty input: nothing to add, the same query
            self._parser.parse(smt, True, False)
        return self._run(timeout_s)

    def core(self) -> list[str]:
        ids = {t.id() for t in self._solver.get_unsat_core()}
        return [n for n in self._names if self._parser.parse_term(n).id() in ids]

    def values(self, terms: list[str]) -> list[int | bool]:
        out: list[int | bool] = []
        for t in terms:
            v = self._solver.get_value(self._parser.parse_term(t))
            out.append(v.value() if v.sort().is_bool() else int(v.value(10)))
        return out

    def done(self) -> None:
        if self._levels:
            self._solver.pop(1)
            self._levels -= 1

    @staticmethod
    def version() -> str:
        from importlib.metadata import version

        return version("bitwuzla")


_NAMED = re.compile(r":named (a\d+|len_bound)\)")

SOLVERS: dict[str, Any] = {"z3": Z3, "bitwuzla": Bitwuzla}

#: Data the solver process's interpreter takes before any query (Python, the solver's
#: library; 13 MB of `RLIMIT_DATA` measured with either), allowed on top of its share.
INTERPRETER_DATA_BYTES = 32 << 20
#: A check that runs this long past its time limit is stopped by ending the process (Bitwuzla
#: does not ask its terminator while it preprocesses: 11 s on one query of `loop_nested.o`).
OVERRUN_S = 5.0


class SolverStopped(Exception):
    """The solver process ended in a call: `reason` is `memory` (it ran out of its share of
    `--memory-mb`), `timeout` (it overran its time limit and was stopped) or `error` (it failed
    on the query, e.g. refused its text; the process is ended too)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def _send(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("!Q", len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _recv(fd: int, deadline: float | None = None) -> Any:
    """The next message, or `None` at the end of the pipe; `TimeoutError` past `deadline`."""

    def exactly(n: int) -> bytes | None:
        chunks, left = [], n
        while left:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                    raise TimeoutError
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    head = exactly(8)
    if head is None:
        return None
    body = exactly(struct.unpack("!Q", head)[0])
    return None if body is None else pickle.loads(body)


class SolverProcess:
    """A solver (`z3` or `bitwuzla`) in a process of its own, its data limited to
    `memory_bytes` (plus `INTERPRETER_DATA_BYTES`), with the interface of the solver classes.

    The process starts at once and is waited for at the first call (it loads its solver while
    the core builds the analysis). Each call is one message and its answer (`done` needs no
    answer); an unsat check's core comes with its answer. When the process ends in a call, or
    overruns a check's time limit by `OVERRUN_S` (then it is ended), or the solver fails on the
    query (then it is ended as well), the call raises `SolverStopped`, and so do later ones.
    `peak_rss_bytes` is the most the process has had resident, as it last reported it."""

    def __init__(self, name: str, memory_bytes: int | None = None) -> None:
        from nicsim.errors import InputError

        if name not in SOLVERS:
            raise InputError(f"unknown solver '{name}' (available: {', '.join(SOLVERS)})")
        self.name = name
        self.peak_rss_bytes = 0
        self._core: list[str] = []
        self._stopped: SolverStopped | None = None
        limit = 0 if memory_bytes is None else memory_bytes + INTERPRETER_DATA_BYTES
        to_child, self._out = os.pipe()
        self._in, from_child = os.pipe()
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(
                # -P: this module's folder is not put on the process's import path.
                [sys.executable, "-P", os.path.abspath(__file__), name, str(to_child), str(from_child), str(limit)],
                pass_fds=(to_child, from_child), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=self._stderr)
        finally:
            os.close(to_child)
            os.close(from_child)
        self._version: str | None = None

    def _ready(self) -> None:
        """Wait for the process to have loaded its solver."""
        from nicsim.errors import InputError

        if self._version is not None or self._stopped is not None:
            return
        ready = _recv(self._in)
        if ready is None or ready[0] != "ready":
            why = ready[1] if ready else self._last_words()
            self._stopped = SolverStopped("error", why)
            self.close()
            if "ModuleNotFoundError" in why or "ImportError" in why:
                raise InputError(f"solver '{self.name}' is not installed ({why})")
            raise InputError(f"the solver process for '{self.name}' did not start: {why}")
        self._version = ready[1]
        self.peak_rss_bytes = ready[2]

    def _last_words(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no message"

    def _call(self, op: str, *args: Any, timeout_s: float | None = None) -> Any:
        if self._stopped is not None:
            raise self._stopped
        self._ready()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s + OVERRUN_S
        try:
            _send(self._out, (op, *args))
            reply = _recv(self._in, deadline)
        except TimeoutError:
            self._stop("timeout", f"the solver overran its time limit by {OVERRUN_S:g} s and was stopped")
        except BrokenPipeError:
            reply = None
        if reply is None:
            rc = self._proc.wait()
            why = f"signal {-rc}" if rc < 0 else f"exit code {rc}"
            self._stop("memory", f"the solver process ended ({why}: {self._last_words()})")
        kind, value, core, rss = reply
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
        if kind == "memory":
            self._stop("memory", value)
        if kind == "error":
            # The solver refused the query or failed on it: a bug of ours or of the solver's, not
            # the user's; the search stops with the bound so far and says so.
            self._stop("error", " ".join(str(value).split()))
        self._core = core or []
        return value

    def _stop(self, reason: str, detail: str) -> None:
        self._stopped = SolverStopped(reason, detail)
        self.close()
        raise self._stopped

    def check(self, smt: str, timeout_s: float | None = None) -> str:
        return self._call("check", smt, timeout_s, timeout_s=timeout_s)

    def check_also(self, smt: str, timeout_s: float | None = None) -> str:
        return self._call("check_also", smt, timeout_s, timeout_s=timeout_s)

    def core(self) -> list[str]:
        return self._core

    def values(self, terms: list[str]) -> list[int | bool]:
        return self._call("values", terms)

    def done(self) -> None:
        if self._stopped is None and self._version is not None:
            try:
                _send(self._out, ("done",))
            except BrokenPipeError:
                pass  # the next call finds out why

    def version(self) -> str:
        self._ready()
        return self._version or SOLVERS[self.name].version()

    def close(self) -> None:
        """End the process (it ends by itself when its pipe closes)."""
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass
        self._out = self._in = -1
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._stderr.close()

    def __enter__(self) -> SolverProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._out != -1:
            self.close()

    def __del__(self) -> None:
        if getattr(self, "_out", -1) != -1 and hasattr(self, "_proc"):
            self.close()


def make_solver(name: str, memory_bytes: int | None = None) -> SolverProcess:
    """Solver `name` in its own process, its memory limited to `memory_bytes` (see
    `SolverProcess`)."""
    return SolverProcess(name, memory_bytes)


def _serve(name: str, rfd: int, wfd: int, data_limit: int) -> None:
    """The solver process: answer calls on `rfd` with `wfd` until the pipe closes. Ctrl-C is
    the parent's to handle: it ends this process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if data_limit:
        resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))

    def rss() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    try:
        slv = SOLVERS[name]()
    except BaseException as e:  # noqa: BLE001 (reported to the parent, which raises it)
        _send(wfd, ("error", f"{type(e).__name__}: {e}"))
        return
    # Bitwuzla's version is read by the parent (from the package's metadata, which this process
    # would take ~20 ms to import: most of an analysis of a small program).
    _send(wfd, ("ready", slv.version() if name != "bitwuzla" else "", rss()))
    while (msg := _recv(rfd)) is not None:
        op, args = msg[0], msg[1:]
        if op == "done":
            slv.done()
            continue
        try:
            value = getattr(slv, op)(*args)
            core = slv.core() if op in ("check", "check_also") and value == "unsat" else None
            _send(wfd, ("ok", value, core, rss()))
        except MemoryError:
            _send(wfd, ("memory", "the solver ran out of its share of --memory-mb", None, rss()))
            return
        except Exception as e:  # noqa: BLE001 (Z3 reports running out of memory as an exception)
            kind = "memory" if "memory" in str(e).lower() else "error"
            _send(wfd, (kind, f"{type(e).__name__}: {e}", None, rss()))
            if kind == "memory":
                return


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
