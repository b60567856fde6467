"""The XDP paper's own estimator (nfp-pred's `nfp-estimator`), timed beside nicsim.

nfp-pred is not part of nicsim: a user builds it from the paper's artifacts
(github.com/johannes-krude/nfp-pred-artifacts, `make build/nfp-estimator`) and names the binary
(`nicsim reproduce xdp --paper-objects DIR --nfp-pred PATH`, or `NFP_PRED=PATH make bench`). It
analyses the NFP assembly the artifacts publish beside each object (`xdp-NAME.asm` next to
`xdp-NAME.bpf.o`), with the arguments the artifacts' `scripts/estimate-asm.sh` gives each
program (`-w 5`: the paper's 5 measured cores; `-U`: the loop bounds it needs), in bit-rate mode
(`-k`), with the statistics it prints (`-S`). It runs `z3` from the PATH (the artifacts used Z3
4.8.7, whose model format its parser reads).

`run` times one analysis, the wall time of the whole command, as a user waits for it, and reads
from its report the time it printed for its first satisfiable path (its SSP in bit-rate order).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

#: Per program (object file name), the arguments `scripts/estimate-asm.sh` of the artifacts
#: passes besides the mode; the Count-Min objects and DNS cache get none.
ARGS: dict[str, list[str]] = {
    "xdp-quic-lb.bpf.o": ["-w", "5"],
    "xdp-cloudflare.bpf.o": ["-w", "5"],
    "xdp-switch.bpf.o": ["-w", "5"],
    "xdp-quic-lb-ipv6-options.bpf.o": ["-U", "10", "-w", "5"],
    "xdp-alaw2ulaw.bpf.o": ["-U", "160", "-w", "5"],
    "xdp-alaw2ulaw-opt.bpf.o": ["-U", "160", "-w", "5"],
}

# A satisfiable path's header (`#### ->0--13->15000`: branches taken and not), then its time.
_SAT = re.compile(r"^#### [-0-9>]+.*\n(\d+): ([0-9.]+) s", re.MULTILINE)


def asm_of(obj: Path) -> Path:
    """The NFP assembly the artifacts publish beside `obj` (`xdp-NAME.asm`)."""
    return obj.with_name(obj.name.removesuffix(".bpf.o") + ".asm")


def run(estimator: str | os.PathLike[str], obj: Path, timeout_s: float) -> dict[str, Any]:
    """Run nfp-pred on `obj`'s assembly for at most `timeout_s` seconds (its own `-T`, and the
    process is ended 10 s past it). Returns `wall_s` (the command's wall time), `ssp_s` (the time
    it reports for its first satisfiable path; None if it reported none) and `status`: `done`,
    `timeout`, `no-asm` (no assembly beside the object) or `failed: ...` (its exit code and the
    last line it wrote to stderr; the report it wrote before is still read)."""
    asm = asm_of(obj)
    if not asm.is_file():
        return {"wall_s": None, "ssp_s": None, "status": "no-asm"}
    cmd = [os.fspath(estimator), "-S", "-k", "-T", str(max(1, int(timeout_s))), *ARGS.get(obj.name, []),
           "-f", os.fspath(asm)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                           timeout=timeout_s + 10)
        out, rc, err = p.stdout, p.returncode, p.stderr
        status = "done" if rc == 0 else f"failed: exit code {rc}"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err, status = "", "timeout"
    except OSError as e:
        return {"wall_s": None, "ssp_s": None, "status": f"failed: {e}"}
    wall = time.perf_counter() - t0
    if status.startswith("failed") and err.strip():
        status += f" ({err.strip().splitlines()[-1][:200]})"
    m = _SAT.search(out)
    return {"wall_s": round(wall, 3), "ssp_s": float(m.group(2)) if m else None, "status": status}
