"""Distributed sweeps on a real Ray cluster: a head started on 127.0.0.1 with `ray start`,
reached by address (`--ray-address` and `RAY_ADDRESS`); the results must be the bytes the
local pool gives. And the hint when Ray is missing."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PAPER, ROOT, assert_one_line_error, nicsim

# pytest-xdist: one worker runs this module (a Ray head of its own, and `ray stop --force` ends every Ray process of the machine).
pytestmark = pytest.mark.xdist_group("ray")

SWEEP = ["-p", "traffic.rate_gbps=64,96,128", "-p", "traffic.packets=1000", "-p", "measure.window=[10,990]"]
ROUTER_SWEEP = ["-p", "traffic[0].rate_mbps=200,400", "-p", "run.duration_us=800", "-p", "run.warmup_us=200"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head() -> Iterator[tuple[str, dict[str, str]]]:
    """A Ray head on 127.0.0.1 (2 CPUs, token authentication with a token of its own), stopped
    afterwards. Yields its address and the environment a client needs."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    ray_bin = Path(sys.executable).with_name("ray")
    if not ray_bin.exists():
        pytest.skip("no `ray` command beside this Python")
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env.pop("RAY_ADDRESS", None)
    # Ray's socket paths must be short (AF_UNIX: 107 bytes); a pytest-xdist temporary folder is long.
    temp = Path(tempfile.mkdtemp(prefix="nsray"))
    _HEADS[:] = [temp]
    start = subprocess.run([str(ray_bin), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                            "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
                            f"--temp-dir={temp}"], capture_output=True, text=True, env=env, timeout=300)
    assert start.returncode == 0, start.stderr[-2000:]
    try:
        yield f"127.0.0.1:{port}", env
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], capture_output=True, env=env, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


_HEADS: list[Path] = []  # the temporary folder of the test head


def _head_logs() -> str:
    """The tail of the test head's own logs (raylet, GCS): why a client could not reach it."""
    out = []
    for temp in _HEADS:
        for f in sorted((temp / "session_latest" / "logs").glob("*")):
            if f.name.startswith(("raylet", "gcs_server")) and f.suffix in (".out", ".err") and f.stat().st_size:
                out.append(f"--- {f}\n" + f.read_text(errors="replace")[-1500:])
    return "\n".join(out)


def _sweep(config: Path, out: Path, params: list[str], *extra: str, env: dict[str, str] | None = None) -> Path:
    r = subprocess.run([sys.executable, "-m", "nicsim", "sweep", str(config), "--out", str(out), *params, *extra, "-q"],
                       capture_output=True, text=True, env=env or {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
                       timeout=600)
    assert r.returncode == 0, r.stderr + ("" if env is None else _head_logs())
    return out


@pytest.mark.parametrize("config", ["datapath", "router"])
def test_sweep_on_a_ray_cluster_matches_the_local_pool(tmp_path: Path, ray_head: tuple[str, dict[str, str]],
                                                       config: str) -> None:
    address, env = ray_head
    cfg, params = (PAPER, SWEEP) if config == "datapath" else (ROOT / "configs" / "router" / "setup_b.toml",
                                                                 ROUTER_SWEEP)
    local = _sweep(cfg, tmp_path / "local", params, "--workers", "2")
    by_option = _sweep(cfg, tmp_path / "option", params, "--ray-address", address, env=env)
    by_env = _sweep(cfg, tmp_path / "env", params, "--executor", "ray", env={**env, "RAY_ADDRESS": address})
    for out in (by_option, by_env):
        for f in ("summary.json", "sweep.csv"):
            assert (out / f).read_bytes() == (local / f).read_bytes(), (out, f)


def test_an_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    port = _free_port()  # nothing listens there
    r = nicsim("sweep", PAPER, "--out", tmp_path / "o", *SWEEP, "--ray-address", f"127.0.0.1:{port}", timeout=600)
    assert_one_line_error(r, "--ray-address", f"127.0.0.1:{port}")
    assert not (tmp_path / "o").exists()


def test_missing_ray_says_how_to_install_it(tmp_path: Path) -> None:
    """Without Ray the hint is a command that works here: this Python's pip, the extra's version."""
    shim = tmp_path / "shim" / "ray"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('no ray here')\n")
    env = {**os.environ, "PYTHONPATH": f"{shim.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run([sys.executable, "-m", "nicsim", "sweep", str(PAPER), "--out", str(tmp_path / "o"), *SWEEP,
                        "--executor", "ray"], capture_output=True, text=True, env=env, timeout=300)
    line = assert_one_line_error(subprocess.CompletedProcess(r.args, r.returncode, r.stdout, r.stderr), "Ray")
    assert f"{sys.executable} -m pip install" in line and "ray>=" in line


def test_offload_sizing_on_a_ray_cluster_finds_what_the_local_pool_finds(
        tmp_path: Path, ray_head: tuple[str, dict[str, str]]) -> None:
    """`nicsim offloads size` runs its rounds on the sweep machinery: on Ray, the same points and
    answer as on the local pool (only the executor and the time taken differ)."""
    address, env = ray_head
    args = [sys.executable, "-m", "nicsim", "offloads", "size", str(PAPER), "-p", "traffic.packets=2000",
            "-p", "measure.window=[100,1900]", "--p99-us", "20", "-q"]
    results = []
    for out, extra, e in ((tmp_path / "local", ["--workers", "2"], None), (tmp_path / "ray", ["--ray-address", address], env)):
        r = subprocess.run([*args, "--out", str(out), *extra], capture_output=True, text=True,
                           env=e or {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}, timeout=600)
        assert r.returncode == 0, r.stderr + ("" if e is None else _head_logs())
        s = json.loads((out / "summary.json").read_text())
        assert s.pop("executor") == ("ray" if e else "local")
        s.pop("elapsed_s")
        results.append(s)
    assert results[0] == results[1]


def test_the_readmes_ray_procedure_works_as_written(tmp_path: Path) -> None:
    """README.md's Ray block, run as written (Ray's default port replaced by a free one, a cheaper
    sweep, and our own head stopped instead of `ray stop`, which would stop every Ray of the
    machine): a head that requires the token `ray get-auth-token --generate` made, and nicsim
    finding that token without RAY_AUTH_MODE. A client without the token gets one line saying so."""
    import shlex
    import signal
    import tempfile
    import time

    from docblocks import blocks

    pytest.importorskip("ray", reason="the ray extra is not installed")
    [block] = [b for b in blocks([ROOT / "README.md"]) if any("ray start" in c.text for c in b.commands)]
    venv_bin = Path(sys.executable).parent
    port = str(_free_port())
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(tmp_path), PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}", RAY_USAGE_STATS_ENABLED="0")
    head = None
    ran = []
    short = Path(tempfile.mkdtemp(prefix="nsray"))  # Ray's socket paths must be short (AF_UNIX: 107 bytes)
    try:
        for cmd in block.commands:
            argv = [a.replace("6379", port) for a in shlex.split(cmd.line_only)]
            ran.append(argv[:2])
            t0 = time.monotonic()
            if argv[:2] == ["ray", "get-auth-token"]:
                r = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
                assert r.returncode == 0, r.stderr
                assert (tmp_path / ".ray" / "auth_token").stat().st_size > 0
            elif argv[:2] == ["ray", "start"]:
                argv += ["--node-ip-address=127.0.0.1", "--include-dashboard=false", "--disable-usage-stats",
                         f"--temp-dir={short}", "--block"]
                with open(tmp_path / "head.log", "w") as log:
                    head = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
                deadline = time.monotonic() + 180
                while "Ray runtime started" not in (tmp_path / "head.log").read_text():
                    assert head.poll() is None and time.monotonic() < deadline, (tmp_path / "head.log").read_text()
                    time.sleep(0.5)
                assert "Token authentication is enabled" in (tmp_path / "head.log").read_text()
            elif argv[:2] == ["nicsim", "sweep"]:
                argv[:1] = [sys.executable, "-m", "nicsim"]
                cheap = ["-p", "run.duration_us=800", "-p", "run.warmup_us=200", "-q"]
                r = subprocess.run(argv + cheap, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
                assert r.returncode == 0, r.stderr
                s = json.loads((tmp_path / "out" / "rs" / "summary.json").read_text())
                assert len(s["points"]) == 4
                # The same sweep from a client without the token: refused, in one line that says so.
                (tmp_path / "nobody").mkdir()
                out = tmp_path / "refused"
                r = subprocess.run([*argv[:argv.index("--out")], "--out", str(out), *cheap], cwd=tmp_path,
                                   env={**env, "HOME": str(tmp_path / "nobody")}, capture_output=True, text=True,
                                   timeout=600)
                line = assert_one_line_error(subprocess.CompletedProcess(r.args, r.returncode, r.stdout, r.stderr),
                                             "--ray-address", "token")
                assert "InvalidAuthToken" not in r.stderr.replace(line, "")
                assert not out.exists()
            elif argv[:2] == ["ray", "stop"]:
                assert head is not None
                # Our head and what it started, not the machine's Ray; at once (on SIGTERM a head drains
                # its node for 30 s).
                os.killpg(head.pid, signal.SIGKILL)
                head.wait(timeout=120)
                head = None
            else:
                pytest.fail(f"README.md's Ray block has a command this test does not know: {cmd.text}")
            print(f"{cmd.line_only}: {time.monotonic() - t0:.1f} s")  # with -s: where the time goes
    finally:
        if head is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=120)
        shutil.rmtree(short, ignore_errors=True)
    assert ran == [["ray", "get-auth-token"], ["ray", "start"], ["nicsim", "sweep"], ["ray", "stop"]], ran
