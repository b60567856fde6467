"""SMT solvers behind one small interface: check a query, then read its unsat core or values.

The Rust core writes each path's query as SMT-LIB2 text (bit-vectors and arrays, every branch
condition a named assertion); a solver here checks it in this process, then gives the names in
its unsat core, or the values of terms in its model. `check_also` adds assertions to a query
already checked (one more level for `done`).

- `Z3`: one long-lived context, each query inside `(push 1)` … `(pop 1)`.
- `Bitwuzla`: a fresh instance per query (a fraction of a millisecond), so that its
  preprocessing sees the whole query; it bit-blasts multiplications far faster than Z3
  (BENCHMARKS.md times the two on the suite).
"""

from __future__ import annotations

import re
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


_NAMED = re.compile(r":named (a\d+)\)")

SOLVERS: dict[str, Any] = {"z3": Z3, "bitwuzla": Bitwuzla}


def make_solver(name: str) -> Any:
    from nicsim.errors import InputError

    try:
        return SOLVERS[name]()
    except KeyError:
        raise InputError(f"unknown solver '{name}' (available: {', '.join(SOLVERS)})") from None
    except ImportError as e:
        raise InputError(f"solver '{name}' is not installed ({e})") from None
