"""nicsim as users install it: the wheel (`make wheel`) in a scratch venv outside the checkout,
from a folder that is not the checkout. Every `reproduce` runs with --quick, so configs, target
files and the XDP programs' sources must travel inside the package (no path into the checkout).

`make test` builds the wheel from the release extension it already built and passes its folder
as NICSIM_WHEEL_DIR; without it the test is skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

# pytest-xdist: one worker runs this module (the module's scratch venv is shared by its tests).
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    wheels = sorted(Path(os.environ.get("NICSIM_WHEEL_DIR", "/nonexistent")).glob("nicsim-*.whl"))
    if not wheels:
        pytest.skip("no wheel: run `make wheel` (make test does) and set NICSIM_WHEEL_DIR")
    venv = tmp_path_factory.mktemp("venv")
    # The wheel and the dependencies it declares, installed by the test run's own pip into a venv
    # without one (`pip --python`), and not byte-compiled: the venv's pip and the .pyc files are
    # no part of what is tested, and took 22 of its 41 s of set-up (BENCHMARKS.md "make test").
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                          "--no-compile", "--disable-pip-version-check", str(wheels[-1])],
                         capture_output=True, text=True, timeout=1800)
    assert pip.returncode == 0, pip.stderr[-3000:]
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NICSIM_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update({"PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "XDG_CACHE_HOME": str(home / "cache"),
                "NICSIM_X86_JIT": str(home / "x86-jit.toml"), "RAY_USAGE_STATS_ENABLED": "0"})
    return venv, env


def _nicsim(installed: tuple[Path, dict[str, str]], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    venv, env = installed
    return subprocess.run([str(venv / "bin" / "nicsim"), *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=1800)


def test_the_installed_package_is_not_the_checkout(installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    r = subprocess.run([str(venv / "bin" / "python"), "-c", "import nicsim, nicsim._core; print(nicsim.__file__)"],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert ROOT not in Path(r.stdout.strip()).resolve().parents
    assert _nicsim(installed, tmp_path, "--version").stdout.startswith("nicsim ")


@pytest.mark.parametrize("args", [
    ["flexpipe", "--quick", "-j", "2"],
    ["router", "--quick", "--no-beyond", "-j", "2"],
    ["flowmem", "--quick"],
    ["xdp", "--quick", "--nfp-only", "--timeout", "3"],
])
def test_every_reproduce_runs_from_the_wheel(installed: tuple[Path, dict[str, str]], tmp_path: Path,
                                             args: list[str]) -> None:
    if args[0] == "xdp" and shutil.which("clang") is None:
        pytest.skip("reproduce xdp builds the suite with clang, which is not installed")
    out = tmp_path / "out"
    r = _nicsim(installed, tmp_path, "reproduce", *args, "--out", str(out), "-q")
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    s = json.loads((out / "summary.json").read_text())
    assert s["schema_version"] == 3
    assert (out / "comparison.csv").is_file() or (out / "table.csv").is_file()
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["git"] is None  # installed: not run from a checkout
