"""`nicsim xdp analyze`: from a BPF object to `summary.json`.

The Rust core loads the object, inlines calls, unrolls loops, costs every edge on the target
and bounds the rate; this module resolves the target, reads the object, times the analysis and
writes the output folder atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from nicsim.config import core_errors
from nicsim.errors import InputError
from nicsim.output import OutputDir

TARGETS_DIR = Path(__file__).parent / "targets"
#: Targets shipped with nicsim (`x86-jit` is made on each machine by `nicsim xdp calibrate`).
BUILTIN_TARGETS = ("nfp",)


def load_target(target: str | os.PathLike[str]) -> tuple[str, str]:
    """The TOML text of a target (a built-in name or a file) and the name to use in errors."""
    name = str(target)
    path = TARGETS_DIR / f"{name}.toml" if name in BUILTIN_TARGETS else Path(name)
    if name not in BUILTIN_TARGETS and not path.suffix:
        raise InputError(f"unknown target '{name}' (built in: {', '.join(BUILTIN_TARGETS)}; or a .toml file)")
    try:
        return path.read_text(), str(path.name if name in BUILTIN_TARGETS else path)
    except OSError as e:
        raise InputError(f"{path}: cannot read the target: {e.strerror}") from None


def analyze(obj: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *, target: str = "nfp",
            section: str | None = None, loop_bound: int | None = None) -> dict[str, Any]:
    """Analyse the XDP program in `obj`; write `out/summary.json` when `out` is given."""
    from nicsim import _core

    obj = Path(obj)
    try:
        data = obj.read_bytes()
    except OSError as e:
        raise InputError(f"{obj}: cannot read the object: {e.strerror}") from None
    text, tname = load_target(target)
    t0 = time.perf_counter()
    try:
        with core_errors(tname):
            summary = json.loads(_core.xdp_naive(data, text, tname, section, loop_bound))
    except InputError as e:
        raise InputError(f"{obj}: {e}") from None
    seconds = time.perf_counter() - t0
    g = summary["guarantee"]
    summary["object"].update(path=str(obj), sha256=hashlib.sha256(data).hexdigest())
    summary["seconds"] = round(seconds, 6)
    summary["trace"] = [{"seconds": round(seconds, 6), "pps": g["pps"], "bps": g["bps"]}]
    if out is not None:
        with OutputDir(out) as o:
            o.json("summary.json", summary)
    return summary
