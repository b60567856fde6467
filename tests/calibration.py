"""The test run's x86-jit calibration (`nicsim xdp calibrate --json`), started in the background.

tests/conftest.py starts it when a test that needs it is collected; `make test` starts it earlier,
as soon as `cargo test`'s binaries are built (`python tests/calibration.py DIR`), so that it runs
beside the Rust tests and no pytest worker waits for it: pytest then finds it in
$NICSIM_TEST_CALIBRATION. The files live in one folder: x86-jit.started (made first, by whoever
starts it: one calibration per folder), x86-jit.toml (the target file), x86-jit.json (its
`--json` output, or its error) and x86-jit.rc (its exit code, written last).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# The wrapper the calibration runs in: it writes the output, then the exit code, atomically.
_WRAPPER = """
import json, os, subprocess, sys
toml, out, rc = sys.argv[1:4]
r = subprocess.run([sys.executable, "-m", "nicsim", "xdp", "calibrate", "--json"], capture_output=True, text=True,
                   env={**os.environ, "NICSIM_X86_JIT": toml})
open(out, "w").write(r.stdout if r.returncode == 0 else r.stderr)
open(rc + ".tmp", "w").write(str(r.returncode))
os.replace(rc + ".tmp", rc)
"""


def files(folder: Path) -> tuple[Path, Path, Path]:
    """The target file, the `--json` output and the exit code of the calibration in `folder`."""
    return folder / "x86-jit.toml", folder / "x86-jit.json", folder / "x86-jit.rc"


def start(folder: Path, python: str = sys.executable, detach: bool = False) -> subprocess.Popen[bytes] | None:
    """Start the calibration in `folder` in a session of its own, unless one was started there
    already (then None). `detach`: without the caller's stdout and stderr, so that a log pipe
    (make's, CI's) is not held open by it once the caller has ended."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(folder / "x86-jit.started", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return None
    os.close(fd)
    toml, out, rc = files(folder)
    quiet = subprocess.DEVNULL if detach else None
    return subprocess.Popen([python, "-c", _WRAPPER, str(toml), str(out), str(rc)], stdin=subprocess.DEVNULL,
                            stdout=quiet, stderr=quiet, start_new_session=True)


if __name__ == "__main__":
    # `python tests/calibration.py DIR`: start it in DIR (a folder of the caller's own, emptied
    # by the caller) and return at once; the calibration goes on in the background.
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/calibration.py DIR")
    start(Path(sys.argv[1]), detach=True)
