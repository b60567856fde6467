"""Every query the XDP analyzer builds is one the solver can read (issue 37), and a solver that
fails anyway is one line, not a traceback.

The queries of every program of the suite and of tests/xdp (the objects `make xdp-suite` builds)
are built on both targets, `nfp` and `x86-jit` (whose costs order the paths differently, so that
other paths come first), by the search itself (`_core.XdpSearch.run`) with a solver that only
parses: Bitwuzla's SMT-LIB2 parser reads each query (an undefined symbol or a sort error is an
exception) and the path is then refuted whole (its unsat core is every branch it asserts), so
that the next path in order comes out, up to PATHS per program and target.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_xdp_differential import OPTIONS, REFUSED, _objects, _target

from conftest import ROOT, assert_one_line_error, conforms, xdp_object

#: Paths whose queries are read per program and target (the slowest first).
PATHS = 40
#: The analysis's memory (MB): enough for every program the suite analyses, and little enough
#: that those too large for it (`call_fanout`) are refused soon.
MEMORY_MB = 256
#: Programs without a query: those the analysis refuses, and `tail_unknown` and `chain_root` (unbounded: a tail
#: call into programs nobody declared, so no search runs).
NO_QUERY = {*REFUSED, "tail_unknown", "chain_root"}
_NAMED = re.compile(r":named (a\d+)\)")


class ParseOnly:
    """A solver that reads each query with Bitwuzla's parser and refutes the path whole."""

    def __init__(self, limit: int) -> None:
        import bitwuzla

        self._bw = bitwuzla
        self.limit = limit
        self.read = 0
        self._core: list[str] = []

    def check(self, smt: str, timeout_s: float | None = None) -> str:
        bw = self._bw
        if self.read >= self.limit:
            return "unknown"  # ends the search
        parser = bw.Parser(bw.TermManager(), bw.Options())
        parser.parse("(set-logic QF_ABV)\n" + smt, True, False)  # raises on an undefined symbol
        self.read += 1
        self._core = _NAMED.findall(smt)
        return "unsat"

    def check_also(self, smt: str, timeout_s: float | None = None) -> str:
        raise AssertionError("only unsat paths: no check is extended")

    def core(self) -> list[str]:
        return self._core

    def values(self, terms: list[str]) -> list[int | bool]:
        raise AssertionError("no path is satisfiable here")

    def done(self) -> None:
        pass


def _sections(name: str) -> list[str | None]:
    return OPTIONS.get(name, {}).get("sections", [None])


def _read_queries(name: str, section: str | None, text: str, tname: str) -> int | None:
    """Queries read for one program on one target (None: the analysis refuses the program, or its
    answer is unbounded)."""
    from nicsim import _core

    data = (xdp_object(name)).read_bytes()
    loop_bound = OPTIONS.get(name, {}).get("loop_bound")
    try:
        search = _core.XdpSearch(data, text, tname, section, loop_bound, False, MEMORY_MB, True, None, [], [])
    except _core.InputError:
        return None
    naive = json.loads(search.naive())["naive"]["pps"] or 0.0
    slv = ParseOnly(PATHS)
    out = json.loads(search.run(slv, 60.0, 0.0, naive))
    if out["status"] == "unbounded":
        return None  # a tail call into programs nobody declared: no search, no query
    assert out["stopped"] in ("timeout", "exhausted"), out["stopped"]
    return slv.read


@pytest.mark.parametrize("name", _objects())
def test_every_query_declares_what_it_uses_on_both_targets(name: str, x86_jit: Path) -> None:
    from nicsim.xdp.analyze import load_target

    targets = [_target(), load_target("x86-jit")]
    read = {}
    for section in _sections(name):
        for text, tname in targets:
            read[(section, tname)] = _read_queries(name, section, text, tname)
    # A program the analysis refuses has no query (on x86-jit, a helper the calibration has no
    # cost for is refused too); every other gives some.
    assert all(v is None or v > 0 for v in read.values()), read
    assert name in NO_QUERY or any(v for v in read.values()), read


def test_a_program_with_unsized_maps_on_some_paths_analyses_on_both_targets(x86_jit: Path) -> None:
    # tests/xdp/unsized_cpumap.c: xdp-bench's cpumap pattern, an unsized array and an unsized CPU
    # map used only by IPv4 packets. Its redirecting path's query used the CPU map's size without
    # declaring it: every target's analysis ended in a traceback (issue 37).
    from nicsim import _core
    from nicsim.xdp import analyze
    from nicsim.xdp.summary import Summary

    o = xdp_object("unsized_cpumap")
    for target in ("nfp", "x86-jit"):
        for rate in ("packet", "bit"):
            s = analyze(o, target=target, rate=rate, timeout_s=60)
            assert conforms(s, Summary) == []
            assert s["guarantee"]["status"] == "ssp", (target, rate, s["stopped"], s["memory"]["solver_ended"])
            assert s["unsized_maps"] == ["cpu_map", "cpus_available"]
            assert 1 <= s["maps"]["cpu_map"]["max_entries"] <= 1024  # the model's size
            r = json.loads(_core.xdp_run(o.read_bytes(), None, bytes.fromhex(s["example_packet_hex"]),
                                         json.dumps(s["maps"]), 1_000_000))
            assert r["trace"] == s["path"]["insns"], (target, rate)
            assert r["retval"] == s["path"]["retval"]
            assert r["maps"]["cpu_map"]["max_entries"] == s["maps"]["cpu_map"]["max_entries"]


#: Runs the CLI with a solver process whose queries, from the Nth check on, name a symbol they
#: never declare (as issue 37's did): the solver refuses them.
BREAK_SOLVER = """
import sys
from nicsim.xdp import solver
n, orig = int(sys.argv[1]), solver.SolverProcess.check
def check(self, smt, timeout_s=None):
    self.checks = getattr(self, "checks", 0) + 1
    if self.checks >= n:
        smt += "(assert (= nosuch (_ bv0 8)))\\n"
    return orig(self, smt, timeout_s)
solver.SolverProcess.check = check
from nicsim.cli import main
sys.argv = ["nicsim", *sys.argv[2:]]
main()
"""


def test_a_solver_error_is_one_line_and_keeps_the_bound_so_far(tmp_path: Path) -> None:
    # parser's first path is infeasible: the solver fails on the next query, after the bound has
    # risen above the naive one, and the summary keeps that bound.
    o = xdp_object("parser")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", BREAK_SOLVER, "2", "xdp", "analyze", str(o), "--rate", "packet",
                        "--out", str(out), "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    line = assert_one_line_error(r, str(o), "program parser", "undefined symbol 'nosuch'", "bound so far",
                                 str(out / "summary.json"))
    s = json.loads((out / "summary.json").read_text())
    assert s["stopped"] == "error" and s["guarantee"]["status"] == "timeout", s["stopped"]
    rank = f"path {s['paths_enumerated']}: "
    assert s["memory"]["solver_ended"].startswith(rank) and f"failed on {rank}" in line, (rank, line)
    assert s["paths_unsat"] == 1
    assert s["guarantee"]["pps"] > s["naive"]["pps"], "the bound the refuted path gave is kept"
    assert f"{s['guarantee']['pps'] / 1e6:,.3f} Mpps" in line


def test_a_sweep_keeps_an_analysis_whose_solver_failed_and_warns(tmp_path: Path) -> None:
    # The sweep's other analyses are not lost to one solver error: each keeps its bound so far,
    # and a warning line names the object, the program and the path.
    objs = [xdp_object("parser"), xdp_object("calls")]
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", BREAK_SOLVER, "2", "xdp", "sweep", *map(str, objs), "--rate", "packet",
                        "-j", "1", "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    warnings = " ".join(r.stderr.split()).split("warning: ")[1:]  # (the console wraps long lines)
    s = json.loads((out / "summary.json").read_text())
    assert len(warnings) == len(s["points"]) == 2, r.stderr
    for p in s["points"]:
        assert p["summary"]["stopped"] == "error" and p["summary"]["guarantee"]["status"] == "timeout"
        assert any(w.startswith(p["object"]) and "the solver failed on path" in w for w in warnings), r.stderr


@pytest.mark.parametrize("solver", ["bitwuzla", "z3"])
def test_a_check_that_adds_nothing_checks_the_same_query(solver: str) -> None:
    # The example's model is sought with preferences first and, when they cannot hold, again
    # with nothing added (ssp.rs `model`): Bitwuzla's parser refused the empty text, and the
    # analysis of two test programs stopped there ("argument 'input' must not be an empty string").
    from nicsim.xdp.solver import Z3, Bitwuzla

    slv = Bitwuzla() if solver == "bitwuzla" else Z3()
    assert slv.check("(declare-const x (_ BitVec 8))\n(assert (= x #x07))\n") == "sat"
    assert slv.check_also("(assert (= x #x08))\n") == "unsat"
    slv.done()
    assert slv.check_also("") == "sat"
    assert slv.values(["x"]) == [7]
    slv.done()
