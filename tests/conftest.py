"""Shared fixtures: the paper's configuration, a small variant of it, and the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import calibration
import pytest

from forkserver import run_nicsim

ROOT = Path(__file__).resolve().parent.parent

#: Every figure is checked as drawn from its SVG (figcheck.py), so the tests ask for SVGs beside
#: the PNGs that are the default (`nicsim --figures`); test_output.py checks the default itself.
os.environ.setdefault("NICSIM_FIGURES", "png,svg")
PAPER = ROOT / "configs" / "flexpipe_paper.toml"
#: The XDP suite (`make xdp-suite` builds it into target/xdp) and the analyzer's test programs
#: (tests/xdp, built into a folder of their own, target/xdp-tests).
XDP_OBJS = Path(os.environ.get("NICSIM_XDP_OBJS", ROOT / "target" / "xdp"))
XDP_TEST_OBJS = Path(os.environ.get("NICSIM_XDP_TEST_OBJS", ROOT / "target" / "xdp-tests"))


def xdp_object(name: str) -> Path:
    """The built object `name.o`: the suite's, else the test programs' (the suite's path when
    neither is built, for the test's message)."""
    suite = XDP_OBJS / f"{name}.o"
    tests = XDP_TEST_OBJS / f"{name}.o"
    return tests if not suite.exists() and tests.exists() else suite


# The paper's configuration cut down to 2,000 packets.
SMALL = ["--param", "traffic.packets=2000", "--param", "measure.window=[100,1900]"]


def nicsim(*args: str | os.PathLike[str], cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `python -m nicsim ARGS` (the installed package) in a process of its own and capture its
    output (forked from the tests' fork server: tests/forkserver.py)."""
    env = {**os.environ, "COLUMNS": "120", "RAY_USAGE_STATS_ENABLED": "0"}
    r = run_nicsim([os.fspath(a) for a in args], env=env, cwd=cwd, timeout=timeout)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(), r.stderr.decode())


#: Keys whose values are wall-clock times (and rates measured with them: `flowmem bench` times the
#: host's own copy and flow-based reads, `gbps` and `host_speedup`), the version, or the solver's
#: own statistics.
VOLATILE = {"nicsim_version", "seconds", "time_s", "elapsed_s", "wall_s", "search_memory_mb", "solver", "gbps",
            "host_speedup"}


def volatile(key: str) -> bool:
    """Also the measured memory of a process (`*_rss_mb`)."""
    return key in VOLATILE or key.endswith("_rss_mb")


def scrub(text: str, tmp: Path) -> str:
    """Output text with the test's own folder written as <tmp> and the checkout as <root>."""
    return text.replace(str(tmp), "<tmp>").replace(str(ROOT), "<root>")


def stable(v: Any, tmp: Path) -> Any:
    """`v` without the keys that vary from run to run, and with paths scrubbed."""
    if isinstance(v, dict):
        return {k: stable(x, tmp) for k, x in v.items() if not volatile(k)}
    if isinstance(v, list):
        return [stable(x, tmp) for x in v]
    if isinstance(v, str):
        return scrub(v, tmp)
    return v


def assert_one_line_error(r: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit code 2, and stderr is exactly one line `nicsim: error: ...` containing each needle."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("nicsim: error: "), lines[0]
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.fixture
def paper() -> Path:
    return PAPER


# The x86-jit target, calibrated once per test run on this machine (`nicsim xdp calibrate --json`,
# tests/calibration.py) into a file of the run's own, named by $NICSIM_X86_JIT while the session
# runs. It runs in the background: `make test` starts it before the Rust tests run and names its
# folder in $NICSIM_TEST_CALIBRATION; otherwise the first process of the run to collect a test
# that needs it starts it in the run's shared temporary folder. The other tests run meanwhile
# instead of waiting (about 40 s, mostly the kernel's own time); a test that needs it waits for
# x86-jit.rc, which the calibration's wrapper writes last. The calibration runs beside the other
# tests, as the validations that use it do.
_CALIBRATION: list[tuple[subprocess.Popen[bytes], Path]] = []


def _calibration_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("NICSIM_TEST_CALIBRATION")
    return Path(given) if given else run_temp(tmp_path_factory)


def _start_calibration(shared: Path) -> None:
    """Start the run's calibration in the background, unless a process of the run already has."""
    p = calibration.start(shared)
    if p is not None:
        _CALIBRATION.append((p, shared))


def pytest_collection_finish(session: pytest.Session) -> None:
    if any("x86_jit" in getattr(i, "fixturenames", ()) for i in session.items):
        _start_calibration(_calibration_folder(session.config._tmp_path_factory))  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session) -> None:
    import signal

    for p, shared in _CALIBRATION:  # a run that ends first (a subset, a failure) does not leave it behind
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # the wrapper and its nicsim (a session of their own)
            p.wait()
            _, out, rc = calibration.files(shared)
            if not rc.exists():  # a process still waiting for it is told
                out.write_text("the calibration was stopped when the process that started it ended its session")
                rc.write_text("-9")
        p.wait()


@pytest.fixture(scope="session")
def x86_jit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import time

    shared = _calibration_folder(tmp_path_factory)
    _start_calibration(shared)
    path, out, rc = calibration.files(shared)
    deadline = time.monotonic() + 900
    while not rc.exists():
        assert time.monotonic() < deadline, "the x86-jit calibration did not end within 15 minutes"
        time.sleep(0.2)
    assert rc.read_text() == "0", out.read_text()[-2000:]
    old = os.environ.get("NICSIM_X86_JIT")
    os.environ["NICSIM_X86_JIT"] = str(path)
    yield path
    if old is None:
        del os.environ["NICSIM_X86_JIT"]
    else:
        os.environ["NICSIM_X86_JIT"] = old


def run_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder that every process of this test run shares: pytest's own without
    pytest-xdist, the parent of the workers' folders with it."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def conforms(value: object, tp: object, path: str = "summary") -> list[str]:
    """Where `value` departs from the type `tp` (a TypedDict, `dict[str, X]`, `list[X]`, a
    union such as `X | None`, a literal or a plain type); empty when it conforms."""
    import types
    import typing

    if typing.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        hints = typing.get_type_hints(tp)
        problems = [f"{path}.{k}: missing" for k in tp.__required_keys__ - value.keys()]
        problems += [f"{path}.{k}: not in the type" for k in value.keys() - hints.keys()]
        for k in value.keys() & hints.keys():
            problems += conforms(value[k], hints[k], f"{path}.{k}")
        return problems
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.NotRequired:
        return conforms(value, args[0], path)
    if origin is typing.Union or origin is types.UnionType:
        # The problems of the member it comes closest to (the fewest), or none.
        return min((conforms(value, a, path) for a in args), key=len)
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        return [p for k, v in value.items() for p in conforms(v, args[1], f"{path}.{k}")]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [p for i, v in enumerate(value) for p in conforms(v, args[0], f"{path}[{i}]")]
    if tp is type(None):
        return [] if value is None else [f"{path}: not null"]
    if origin is typing.Literal:
        return [] if value in args else [f"{path}: {value!r} not one of {args}"]
    if tp is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{path}: not a number"]
    if tp is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{path}: not an integer"]
    return [] if isinstance(value, tp) else [f"{path}: not {tp}"]  # type: ignore[arg-type]



_GROUP_LOST = ("--dist loadgroup: pytest-xdist did not put this test in its xdist_group (pytest and pytest-xdist do not "
               "work together here: see pyproject.toml), so the group's shared Ray head, venv or fixture would be split "
               "between workers")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--dist loadgroup`, a test marked `xdist_group` must carry its group in its node id
    (pytest-xdist's way of keeping the group on one worker). If a pytest or pytest-xdist version
    stops doing so, such tests fail at set-up, saying why, instead of running split between workers
    (one worker's `ray stop` ending the other's Ray head)."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
            item.stash[_LOST] = True
    # The longest units first (pytest-xdist hands them out in this order): the Ray group, the
    # wheel's, then the longest test of its own (after them, so that the run's x86-jit
    # calibration has ended when it starts). Started last, a unit of a minute or two kept one
    # worker busy while the other had nothing left (the last 4 % of run AI took 41 s).
    items.sort(key=lambda item: next((k for k, key in enumerate(_FIRST) if key in item.nodeid), len(_FIRST)))


#: What runs first under `--dist loadgroup`, in this order (parts of node ids).
_FIRST = ("@ray", "@wheel", "test_xdp.py::test_reproduce_xdp", "test_xdp.py::test_memory_mb_bounds_the_whole_analysis")


_LOST = pytest.StashKey[bool]()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.stash.get(_LOST, False):
        pytest.fail(_GROUP_LOST, pytrace=False)
