"""Shared fixtures: the paper's configuration, a small variant of it, and the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "configs" / "flexpipe_paper.toml"
# The paper's configuration cut down to 2,000 packets.
SMALL = ["--param", "traffic.packets=2000", "--param", "measure.window=[100,1900]"]


def nicsim(*args: str | os.PathLike[str], cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `python -m nicsim ARGS` (the installed package) and capture its output."""
    env = {**os.environ, "COLUMNS": "120", "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.run([sys.executable, "-m", "nicsim", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


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


# The x86-jit target, calibrated once per session on this machine (`nicsim xdp calibrate`) into
# a file of the test's own, named by $NICSIM_X86_JIT while the session runs.
@pytest.fixture(scope="session")
def x86_jit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("x86") / "x86-jit.toml"
    old = os.environ.get("NICSIM_X86_JIT")
    os.environ["NICSIM_X86_JIT"] = str(path)
    r = nicsim("xdp", "calibrate")
    assert r.returncode == 0, r.stderr
    yield path
    if old is None:
        del os.environ["NICSIM_X86_JIT"]
    else:
        os.environ["NICSIM_X86_JIT"] = old
