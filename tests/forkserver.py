"""Run `python -m nicsim ARGS` for the tests without paying for Python's start-up each time.

Most tests run the command line in a process of its own, as users do: a Rust panic or abort, a
memory limit, an exit code, the standard streams are all the process's. Starting Python and
importing typer, rich, numpy and matplotlib took most of the suite's time (about a second per
command, hundreds of commands), so a *fork server* does that once per pytest worker: a process
that has imported those libraries, and pydantic's, tomllib and the rest every command imports
(and nothing of nicsim but its Rust extension), forks a child
per command. The child is set up as `python -m nicsim ARGS` would be (arguments, environment,
working directory, standard streams from files, a memory limit, default signal handlers, a
process group of its own), runs `nicsim`'s `__main__` as `-m` does, runs the exit handlers a
normal interpreter exit runs, and exits with the code Python would. nicsim's own modules are
imported in the child, after its environment is set, so nothing they read at import comes from
the server.

What a fork cannot show is Python's own start-up: tests of that (closed standard streams,
arguments that are not UTF-8, `python -m nicsim.cli`, the installed wheel) start a real process,
and `NICSIM_TEST_EXEC=1` makes every test do so (`make test-exec`), to check that the two agree.

The protocol is one JSON line each way over the server's standard input and output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: When set (to anything but "0" or ""), commands start a real process instead (`make test-exec`).
EXEC = os.environ.get("NICSIM_TEST_EXEC", "") not in ("", "0")


def _serve() -> None:
    """The server's loop: import the heavy libraries, then fork a child per request."""
    import io
    import resource
    import select
    import signal

    import matplotlib

    matplotlib.use("Agg")
    # The libraries every command imports (its options, configuration, output and metadata):
    # third-party and standard ones, which read nothing of a command's environment at import.
    import csv  # noqa: F401
    import importlib.metadata  # noqa: F401
    import secrets  # noqa: F401
    import tomllib  # noqa: F401
    import zipfile  # noqa: F401

    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import pydantic  # noqa: F401
    import pydantic.fields  # noqa: F401
    import pydantic.functional_validators  # noqa: F401
    import pydantic.json_schema  # noqa: F401
    import pydantic.main  # noqa: F401
    import pydantic.plugin._loader  # noqa: F401
    import pydantic.type_adapter  # noqa: F401
    import pydantic.types  # noqa: F401
    import pydantic_core  # noqa: F401
    import rich.console  # noqa: F401
    import rich.progress  # noqa: F401
    import rich.table  # noqa: F401
    import typer  # noqa: F401
    import typer._adapters  # noqa: F401
    import typer._click.decorators  # noqa: F401

    import nicsim._core  # noqa: F401

    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    for line in requests:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: becomes `python -m nicsim ARGS`
            code = 1
            try:
                os.setpgid(0, 0)
                # The handlers a fresh CPython has: its own for SIGINT, SIGPIPE ignored, the rest default.
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGPIPE, signal.SIG_IGN)
                for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
                    signal.signal(sig, signal.SIG_DFL)
                for fd, path, flags in ((0, req["stdin"], os.O_RDONLY), (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                        (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
                    f = os.open(path, flags, 0o600)
                    os.dup2(f, fd)
                    os.close(f)
                os.environ.clear()
                os.environ.update(req["env"])
                if req["cwd"] is not None:
                    os.chdir(req["cwd"])
                if req["rlimit_as"] is not None:
                    resource.setrlimit(resource.RLIMIT_AS, (req["rlimit_as"], req["rlimit_as"]))
                enc = os.environ.get("PYTHONIOENCODING", "utf-8").split(":")[0] or "utf-8"
                sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=enc)
                sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding=enc)
                sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding=enc,
                                              errors="backslashreplace", line_buffering=True)
                sys.path[0] = os.getcwd()  # as `-m` has it
                code = _run_main(req["args"])
            finally:
                for s in (sys.stdout, sys.stderr):
                    try:
                        s.flush()
                    except Exception:
                        pass
                os._exit(code)
        pidfd = os.pidfd_open(pid)
        ready, _, _ = select.select([pidfd], [], [], req["timeout"])
        timed_out = not ready
        if timed_out:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        if not timed_out:  # what the command left running in its group (as a terminal's hang-up would)
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status), "timeout": timed_out}).encode()
                      + b"\n")
        replies.flush()


def _run_main(args: list[str]) -> int:
    """`python -m nicsim ARGS` in this process; the exit code Python would give."""
    import atexit
    import runpy
    import threading as th
    import traceback

    import nicsim

    sys.argv = [str(Path(nicsim.__file__).with_name("__main__.py")), *args]
    try:
        runpy.run_module("nicsim", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 130
    except BaseException:
        traceback.print_exc()
        code = 1
    th._shutdown()  # type: ignore[attr-defined]  # what interpreter exit does: join the threads
    atexit._run_exitfuncs()
    return code


class ForkServer:
    """The client: one server per pytest process, started when first used."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _server(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r}); "
                                           "import forkserver; forkserver._serve()"],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=HERE.parent)
        return self._proc

    def run(self, args: list[str], *, env: dict[str, str], cwd: Path | str | None, timeout: float,
            stdin: bytes | None = None, rlimit_as: int | None = None) -> subprocess.CompletedProcess[bytes]:
        """`python -m nicsim ARGS`, as subprocess.run(..., capture_output=True) returns it (bytes)."""
        argv = [sys.executable, "-m", "nicsim", *args]
        with self._lock, tempfile.TemporaryDirectory(prefix="nicsim-fork-") as tmp:
            t = Path(tmp)
            (t / "in").write_bytes(stdin or b"")
            req = {"args": args, "env": env, "cwd": None if cwd is None else str(cwd), "timeout": timeout,
                   "stdin": str(t / "in"), "stdout": str(t / "out"), "stderr": str(t / "err"), "rlimit_as": rlimit_as}
            server = self._server()
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write(json.dumps(req).encode() + b"\n")
            server.stdin.flush()
            line = server.stdout.readline()
            if not line:
                raise RuntimeError(f"the tests' fork server ended (exit {server.wait()})")
            rep: dict[str, Any] = json.loads(line)
            out, err = (t / "out").read_bytes(), (t / "err").read_bytes()
        if rep["timeout"]:
            raise subprocess.TimeoutExpired(argv, timeout, out, err)
        return subprocess.CompletedProcess(argv, rep["returncode"], out, err)


_SERVER = ForkServer()


def run_nicsim(args: list[str], *, env: dict[str, str], cwd: Path | str | None = None, timeout: float = 300,
               stdin: bytes | None = None, rlimit_as: int | None = None) -> subprocess.CompletedProcess[bytes]:
    """`python -m nicsim ARGS` with captured output (bytes): forked from the server, or a real
    process with NICSIM_TEST_EXEC=1."""
    if EXEC:
        import resource

        def limit() -> None:
            if rlimit_as is not None:
                resource.setrlimit(resource.RLIMIT_AS, (rlimit_as, rlimit_as))

        return subprocess.run([sys.executable, "-m", "nicsim", *args], input=stdin or b"", capture_output=True,
                              cwd=cwd, env=env, timeout=timeout, preexec_fn=limit)
    return _SERVER.run(args, env=env, cwd=cwd, timeout=timeout, stdin=stdin, rlimit_as=rlimit_as)
