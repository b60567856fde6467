"""Builds the XDP program suite with clang for the BPF target.

The suite is the XDP paper's programs as nicsim writes them (the C sources in
`nicsim/xdp/programs/`, which the checkout's `examples/xdp` links to): Count-Min built once per
stage count 1..20, QUIC-LB for IPv4 and IPv6, the RTP transcoder plain and optimised, and each
other program once. `make xdp-suite` runs this file twice: the suite into target/xdp, and
the analyzer's test programs (tests/xdp, some of them refused on purpose, such as
`bad_printk.c`) alone into target/xdp-tests, so that `nicsim xdp sweep target/xdp/*.o` analyses
the suite and nothing else. An installed nicsim runs it to build the suite into its cache the
first time `nicsim reproduce xdp` needs it. An object is rebuilt only when it is older than its
source or the shared header.

Standard library only, so that the Makefile can run it before anything is installed:

    python3 python/nicsim/xdp/build.py DEST [EXTRA_SOURCE_DIR ...]     # the suite (and the extra programs)
    python3 python/nicsim/xdp/build.py --only DEST SOURCE_DIR ...       # only these folders' programs
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

#: The suite's C sources (package data).
PROGRAMS = Path(__file__).resolve().parent / "programs"
HEADER = "xdp_common.h"

#: Programs built more than once: object name → (source, defines).
VARIANTS: dict[str, tuple[str, list[str]]] = {
    **{f"count_min_{n}": ("count_min.c", [f"-DSTAGES={n}"]) for n in range(1, 21)},
    "quic_lb_v4": ("quic_lb.c", []),
    "quic_lb_v6": ("quic_lb.c", ["-DQUIC_IPV6"]),
    "rtp_alaw": ("rtp_alaw.c", []),
    "rtp_alaw_opt": ("rtp_alaw.c", ["-DRTP_OPT"]),
}


#: A source may ask, in a line of its own, to be built the way older toolchains built BPF objects:
#: `/* nicsim-build: no-btf */` (clang without -g: no BTF, no line information) or
#: `/* nicsim-build: llc */` (clang -O2 -emit-llvm for the host, then llc -march=bpf, as the XDP
#: paper's objects were built: no BTF, no line information, programs in .text).
BUILD_MODES = ("btf", "no-btf", "llc")


def build_mode(src: Path) -> str:
    """How `src` asks to be built (`btf`, the default: clang -g -target bpf)."""
    for line in src.read_text(errors="replace").splitlines()[:5]:
        if line.strip().startswith("/* nicsim-build:"):
            mode = line.strip()[len("/* nicsim-build:"):].removesuffix("*/").strip()
            if mode not in BUILD_MODES:
                raise BuildError(f"{src}: unknown build mode '{mode}' (known: {', '.join(BUILD_MODES)})")
            return mode
    return "btf"


class BuildError(Exception):
    """clang is missing or a program does not compile."""


def objects(sources: Path = PROGRAMS, extra: list[Path] | None = None,
            suite: bool = True) -> dict[str, tuple[Path, list[str]]]:
    """Every object of the suite (unless `suite` is false) and of the extra source folders:
    name → (source, defines)."""
    varied = {src for src, _ in VARIANTS.values()}
    out = {name: (sources / src, defs) for name, (src, defs) in VARIANTS.items()} if suite else {}
    for d in [*([sources] if suite else []), *(extra or [])]:
        for c in sorted(d.glob("*.c")):
            if not (d == sources and c.name in varied):
                out[c.stem] = (c, [])
    return out


def _multiarch() -> str:
    """The Debian multiarch folder of the host's C headers (asm/types.h lives there)."""
    gcc = shutil.which("gcc")
    if gcc:
        r = subprocess.run([gcc, "-print-multiarch"], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    return f"{platform.machine()}-linux-gnu"


def build(dest: Path, sources: Path = PROGRAMS, extra: list[Path] | None = None, clang: str = "clang",
          log: Callable[[str], None] | None = None, suite: bool = True) -> list[Path]:
    """Compile what is missing or out of date into `dest` (telling `log` each command);
    returns every object's path. `suite=False`: only the extra folders' programs (they may
    include the suite's header)."""
    exe = shutil.which(clang)
    if exe is None:
        raise BuildError("clang is needed to build the XDP suite (apt-get install clang libbpf-dev)")
    dest.mkdir(parents=True, exist_ok=True)
    includes = [f"-I{sources}", f"-I/usr/include/{_multiarch()}"]
    header = sources / HEADER
    built = []
    for name, (src, defs) in objects(sources, extra, suite).items():
        obj = dest / f"{name}.o"
        newest = max(src.stat().st_mtime, header.stat().st_mtime if header.exists() else 0)
        if not obj.exists() or obj.stat().st_mtime < newest:
            tmp = obj.with_name(f".{obj.name}.tmp-{os.getpid()}")
            mode = build_mode(src)
            if mode == "llc":
                llc = shutil.which("llc")
                if llc is None:
                    raise BuildError(f"{src}: llc is needed to build it (apt-get install llvm)")
                ir = subprocess.run([exe, "-O2", "-Wall", "-emit-llvm", *includes, *defs, "-c", str(src), "-o", "-"],
                                    capture_output=True)
                r = ir if ir.returncode != 0 else subprocess.run(
                    [llc, "-march=bpf", "-filetype=obj", "-o", str(tmp)], input=ir.stdout, capture_output=True)
                cmd = [exe, "-O2", "-emit-llvm", *defs, "-c", str(src), "|", llc, "-march=bpf", "-o", str(obj)]
            else:
                debug = ["-g"] if mode == "btf" else []
                cmd = [exe, "-O2", *debug, "-target", "bpf", "-Wall", *includes, *defs, "-c", str(src), "-o", str(tmp)]
                r = subprocess.run(cmd, capture_output=True)
            if r.returncode != 0:
                tmp.unlink(missing_ok=True)
                first = (r.stderr.decode(errors="replace").strip().splitlines() or ["(no message)"])[0]
                raise BuildError(f"{src}: clang failed: {first}")
            os.replace(tmp, obj)
            if log is not None:
                log(" ".join(cmd[:1] + ["..."] + defs + ["-c", src.name, "-o", str(obj)]) if mode != "llc"
                    else " ".join(map(str, cmd)))
        built.append(obj)
    return built


if __name__ == "__main__":
    args = sys.argv[1:]
    only = bool(args) and args[0] == "--only"
    args = args[1:] if only else args
    if len(args) < (2 if only else 1):
        sys.exit("usage: build.py DEST [EXTRA_SOURCE_DIR ...] | build.py --only DEST SOURCE_DIR ...")
    try:
        build(Path(args[0]), extra=[Path(p) for p in args[1:]], log=lambda line: print(line, flush=True), suite=not only)
    except BuildError as e:
        sys.exit(f"nicsim: {e}")
