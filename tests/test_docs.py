"""Documentation that is tested (issue 34): every console example of README.md and docs/*.md
runs, as written, in a folder of the test's own (with `configs` and `target` linked from the
checkout), and what a block shows a command printing is checked against what it prints. A doc
that drifts fails here, and so does a figure a command writes that is not readable, labelled and
rendered (tests/figcheck.py).

Slow commands are made cheaper but stay real: [`CHEAPER`] adds fewer packets, `--quick` and the
like to the commands it matches (each rule says why). A command that cannot run here is named in
[`NOT_RUN`] with the test that runs it instead, or why; a command that neither list knows fails
the test, so that a new example is run or explained. A command another block runs as it is
here, and whose output this one does not show, runs once ([`runs_elsewhere`]). Commands that load BPF programs into the
kernel (`xdp calibrate`, `xdp validate`) run only as root."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from docblocks import Block, Command, blocks
from figcheck import figure_problems

from conftest import ROOT, XDP_OBJS, nicsim

SMALL = "-p traffic.packets=2000 -p measure.window=[100,1900]"
TINY = "-p traffic.packets=300 -p measure.window=[10,290]"
ROUTER_SHORT = "-p run.duration_us=1000 -p run.warmup_us=200"

#: (pattern a command matches, (what replaces the match, why)). Applied in order, each once.
CHEAPER: list[tuple[str, str, str]] = [
    (r"^(nicsim run configs/flexpipe_paper\.toml .*?)( --out| --json|$)", rf"\1 {SMALL}\2", "2,000 packets"),
    (r"^(nicsim sweep configs/flexpipe_paper\.toml .*)$", rf"\1 {TINY}", "300 packets a point"),
    (r"^(nicsim offloads size configs/flexpipe_paper\.toml .*)$", rf"\1 {SMALL}", "2,000 packets a run"),
    (r"^(nicsim reproduce (flexpipe|router) .*)$", r"\1 --quick", "--quick"),
    (r"^(nicsim reproduce flowmem .*)$", r"\1 --flows 50", "50 connections"),
    (r"^(nicsim reproduce xdp --out \S+)(.*)$", r"\1 --quick --nfp-only --timeout 3\2", "--quick, nfp only, 3 s"),
    (r"^(nicsim router run configs/router/\S+ .*)$", rf"\1 {ROUTER_SHORT}", "1 ms simulated"),
    (r"^(cat configs/router/\S+ \| nicsim router run - .*)$", rf"\1 {ROUTER_SHORT}", "1 ms simulated"),
    (r"^(nicsim flowmem synth \S+) --flows \d+(.*)$", r"\1 --flows 200\2", "200 connections"),
    (r"^(nicsim flowmem bench .*)$", r"\1 --repeat 1", "one repetition"),
    (r"^(nicsim xdp validate .*?) --paths \d+(.*)$", r"\1 --paths 2 --path-runs 5\2", "2 paths, 5 runs each"),
    (r"^(nicsim xdp validate (?!.*--paths).*)$", r"\1 --packets 20 --runs 3", "20 packets, 3 runs each"),
    (r"^(nicsim xdp analyze .*?) --paths \d+(.*)$", r"\1 --paths 2\2", "2 paths"),
    (r"^nicsim xdp sweep target/xdp/\*\.o(.*)$", r"nicsim xdp sweep target/xdp/count_min_[1-3].o\1",
     "three Count-Min objects, not the 32 of the suite"),
]

#: Commands not run here: (pattern, where they run instead or why not).
NOT_RUN: list[tuple[str, str]] = [
    (r"^make (demo|test)\b", "the build and this test suite: `make demo` is `make develop` and `nicsim reproduce "
                             "flexpipe`, run here as README.md's example shows it"),
    (r"^make xdp-suite$", "run by `make test` before pytest; the objects it builds are checked to exist"),
    (r"^make fuzz", "needs nightly Rust; not part of `make test`"),
    (r"^cd crates/nicsim-xdp/fuzz && cargo \+nightly fuzz run", "replays a fuzzing crash: needs nightly Rust"),
    (r"^NICSIM_DIFF_ITERS=\S+ .*pytest", "the long mode of tests/test_xdp_differential.py"),
    (r"^ray |--ray-address", "tests/test_ray.py::test_the_readmes_ray_procedure_works_as_written runs README.md's "
                             "Ray block as written"),
    (r"^nicsim xdp calibrate$", "tests/conftest.py's x86_jit fixture runs it, once per test run (here it would "
                                "replace that calibration, which the run's other tests read, under their load)"),
    (r"--paper-objects (DIR|~/)", "needs the XDP paper's own objects: tests/test_xdp_paper.py runs it on the "
                                  "suite's objects under the paper's names"),
]

#: Commands that need root: they load BPF programs into the running kernel.
ROOT_ONLY = re.compile(r"^nicsim xdp (calibrate|validate)\b|^nicsim xdp profile .*--kernel\b")
#: ../shared beside the checkout (the third-party captures of pcap-world), as examples name it.
SHARED = Path(os.environ["NICSIM_PCAP_WORLD"]).parent if os.environ.get("NICSIM_PCAP_WORLD") else ROOT.parent / "shared"
#: Commands that read the x86-jit target (the test run's calibrated one, `conftest.x86_jit`).
X86_JIT = re.compile(r"--target \S*x86-jit|^nicsim xdp validate\b")


def normalise(cmd: Command) -> str:
    """The command as this test runs it: `.venv/bin/nicsim` and `nicsim` alike, its comment off."""
    return re.sub(r"(^|\s|\|\s*)\.venv/bin/nicsim\b", r"\1nicsim", cmd.line_only)


def cheaper(text: str) -> str:
    for pattern, repl, _why in CHEAPER:
        text = re.sub(pattern, repl, text, count=1)
    return text


def not_run(text: str) -> str | None:
    return next((why for pattern, why in NOT_RUN if re.search(pattern, text)), None)


BOX = re.compile(r"[│┃┌┐└┘├┤┬┴┼─━┏┓┗┛┡┩╇┳┻╋]")


def collapse(line: str) -> str:
    """A line without table borders and with single spaces (what a doc shows of a table row)."""
    return " ".join(BOX.sub(" ", line).split())


ALL = blocks()


def _first_runs() -> dict[str, str]:
    """Each command line as this test runs it (`cheaper`), and the first block that runs it."""
    first: dict[str, str] = {}
    for b in ALL:
        for c in b.commands:
            line = cheaper(normalise(c))
            if not not_run(line):
                first.setdefault(line, b.id)
    return first


FIRST_RUN = _first_runs()


def runs_elsewhere(block: Block, k: int) -> str | None:
    """The block that runs command `k` of `block` already, when running it again here would check
    nothing more: the same line, no output shown, and no later command of this block naming its
    `--out` (it reads nothing this block wrote, and nothing reads what it writes)."""
    cmd = block.commands[k]
    line = cheaper(normalise(cmd))
    first = FIRST_RUN.get(line)
    if first is None or first == block.id or any(x.strip() for x in cmd.shown):
        return None
    out = re.search(r"--out (\S+)", line)
    later = [normalise(c) for c in block.commands[k + 1:]]
    if out and any(out.group(1) in t for t in later):
        return None
    return first


def test_every_console_command_is_run_or_explained() -> None:
    """A console example that neither runs here nor is explained fails (and the docs have some)."""
    assert len(ALL) >= 15, [b.id for b in ALL]
    for b in ALL:
        for c in b.commands:
            text = normalise(c)
            assert text.startswith(("nicsim ", "cat ")) or not_run(text), f"{b.id}: `{c.text}` is neither run nor explained"


def run(text: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A command line: in the tests' fork server when it is one `nicsim` command, else in bash
    with `nicsim` on PATH (a pipe, a glob)."""
    if text.startswith("nicsim ") and not re.search(r"[|*?[~<>$;&]", text):
        return nicsim(*shlex.split(text)[1:], cwd=cwd, timeout=300)
    return subprocess.run(["bash", "-o", "pipefail", "-c", text], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("block", ALL, ids=[b.id for b in ALL])
def test_console_block(block: Block, tmp_path: Path, request: pytest.FixtureRequest,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [normalise(c) for c in block.commands]
    runnable = [(c, t) for k, (c, t) in enumerate(zip(block.commands, texts, strict=True))
                if not not_run(t) and not runs_elsewhere(block, k)]
    if any(t == "make xdp-suite" for t in texts) and not (XDP_OBJS / "count_min_10.o").exists():
        pytest.fail(f"{XDP_OBJS} is not built: run `make xdp-suite`")
    if not runnable:
        pytest.skip("; ".join(sorted({not_run(t) or f"runs as {runs_elsewhere(block, k)} runs it"
                                      for k, t in enumerate(texts)})))
    if any(ROOT_ONLY.search(t) for _, t in runnable) and os.geteuid() != 0:
        pytest.skip("loads BPF programs into the kernel: needs root")
    work = tmp_path / "work"
    work.mkdir()
    for name in ("configs", "target"):
        (work / name).symlink_to(ROOT / name)
    if any("../shared/" in t for _, t in runnable):
        if not SHARED.is_dir():
            pytest.skip(f"{SHARED} is missing (the captures beside the checkout; or set NICSIM_PCAP_WORLD)")
        (tmp_path / "shared").symlink_to(SHARED)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    if any(X86_JIT.search(t) for _, t in runnable):
        request.getfixturevalue("x86_jit")  # $NICSIM_X86_JIT: the run's calibration
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "nicsim").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m nicsim \"$@\"\n")
    (shim / "nicsim").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "120",
           "RAY_USAGE_STATS_ENABLED": "0"}
    for cmd, text in runnable:
        line = cheaper(text)
        t0 = time.monotonic()
        r = run(line, work, env)
        print(f"{time.monotonic() - t0:6.1f} s  {line}")  # with -s: where the time goes
        # A block that shows an error (`nicsim: error: ...`) shows a bad input: the command must
        # exit 2 with that line on stderr (a shown line ending in "..." is a prefix).
        error = any(collapse(x).startswith("nicsim: error:") for x in cmd.shown)
        want_code = 2 if error else 0
        assert r.returncode == want_code, f"{block.id}: `{line}` exited {r.returncode}: {r.stderr[-2000:]}"
        printed = [collapse(x) for x in (r.stderr if error else r.stdout).splitlines()]
        # The tests ask for SVGs beside the PNGs (conftest: figcheck reads them); the docs show
        # what a user's command lists by default, the PNGs alone.
        printed = [re.sub(r", [^,()]+\.svg\b", "", p) for p in printed]
        for shown in cmd.shown:
            want = collapse(shown)
            if want in ("", "…", "..."):
                continue
            want = want.removesuffix(" ...").removesuffix(" …")
            assert any(want in p for p in printed), (f"{block.id}: `{cmd.text}` shows `{shown.strip()}`, which it "
                                                     f"does not print:\n{(r.stderr if error else r.stdout)[-3000:]}")
    # Every figure the block's commands wrote is checked as drawn (issue 34 §6: tests/figcheck.py;
    # test_figures.py runs the commands no doc shows).
    for d in work.iterdir():
        if d.is_dir() and not d.is_symlink():
            problems = figure_problems(d)
            assert problems == [], f"{block.id}: " + "\n".join(problems)
