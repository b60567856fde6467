"""How a command talks to its user: results on stdout, progress and notes on stderr.

- **Results**: a table on stdout, or with `--json` the summary itself (what summary.json holds),
  so that `nicsim ... --json | jq` works as `bpftool -j` does. `-q/--quiet` prints no table and
  no progress, only warnings and errors; `-v/--verbose` also lists the files written.
- **Progress** ([`Progress`]): a live bar on a terminal; without one (a CI log, a pipe) a plain
  line every `NICSIM_PROGRESS_SECONDS` seconds (default 5), so that long work is never silent.
- **Notes** (`wrote out/ ...`) go to stdout, or to stderr when stdout carries JSON.

The state is the process's: the command line sets it once ([`configure`]) before a command runs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.text import Text


class PipeConsole(Console):
    """rich's console, except when its reader goes away (`nicsim ... | head`): rich ends the
    process with exit code 1; this one raises `BrokenPipeError`, which `nicsim.cli.main` ends
    quietly with 141, as a process killed by SIGPIPE does (bpftool's, tshark's)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def _console(stderr: bool = False) -> Console:
    """A console; for a log or a pipe (where rich assumes 80 columns) 140 columns, unless
    COLUMNS says otherwise, so that tables are not crushed. Without markup: what it prints holds
    the user's names (flows, NICs, files), and `[/]` in a name is a name, not a style; styles are
    given as `Text` styles."""
    c = PipeConsole(stderr=stderr, markup=False)
    return c if c.is_terminal or os.environ.get("COLUMNS") else PipeConsole(stderr=stderr, width=140, markup=False)


out_console = _console()
err_console = _console(stderr=True)


@dataclass
class State:
    json: bool = False
    quiet: bool = False
    verbose: int = 0


state = State()


def configure(*, json: bool | None = None, quiet: bool | None = None, verbose: int | None = None) -> None:
    """Set what the command prints (from `--json`, `-q` and `-v`)."""
    if json is not None:
        state.json = json
    if quiet is not None:
        state.quiet = quiet
    if verbose is not None:
        state.verbose = verbose


def shows_tables() -> bool:
    """Whether human-readable results go to stdout (neither --json nor --quiet)."""
    return not state.json and not state.quiet


def result(summary: Any, show: Callable[[Console], None] | None = None) -> None:
    """The command's result: `summary` as JSON with --json, else `show(console)` unless quiet."""
    try:
        if state.json:
            sys.stdout.write(json.dumps(summary, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False,
                                        default=str) + "\n")
            sys.stdout.flush()
        elif show is not None and not state.quiet:
            show(out_console)
    except BrokenPipeError:
        raise
    except OSError as e:  # a full disk or a device that refuses: it is stdout that failed
        from nicsim.errors import InputError

        raise InputError(f"standard output: {e.strerror}") from None


def note(text: str) -> None:
    """A line for the user that is not the result (`wrote out/ ...`)."""
    if state.quiet:
        return
    (err_console if state.json else out_console).print(text, highlight=False, soft_wrap=True)


def printable(text: str) -> str:
    """`text` with what a terminal would act on instead of showing written as escapes (`\\x1b`):
    ESC and the other control codes, bidirectional overrides, unassigned code points. File names,
    keys and values of an input reach warnings and error lines, and must not clear or recolour the
    terminal or reorder what follows them."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def warn(text: str, label: str = "warning:") -> None:
    """A warning (or another `label`): printed even with --quiet."""
    err_console.print(Text.assemble((label, "yellow"), " ", printable(text)), highlight=False,
                      soft_wrap=True)  # one line


def wrote(out: str | os.PathLike[str], files: Iterable[str] | None = None) -> None:
    """`wrote OUT/ (a, b, c)`: the files given, or those the folder's marker lists (at most
    eight named); with -v, each file with its size."""
    from nicsim.output import written_files

    files = list(files) if files is not None else written_files(out)
    shown = ", ".join(files[:8]) + (f" and {len(files) - 8:,} more" if len(files) > 8 else "")
    note(f"wrote {out}/ ({shown})")
    if state.verbose and not state.quiet:
        for f in sorted(Path(out).rglob("*")):
            if f.is_file():
                (err_console if state.json else out_console).print(
                    f"  {f.relative_to(out)}  {f.stat().st_size:,} bytes", highlight=False)


#: The bounds of `NICSIM_PROGRESS_SECONDS`: a line at most ten times a second (a smaller value
#: would flood a CI log), at least once a day (a thread cannot wait much longer: `inf` raised).
PROGRESS_SECONDS_RANGE = (0.1, 86_400.0)


def _interval_s() -> float:
    """`NICSIM_PROGRESS_SECONDS`, within `PROGRESS_SECONDS_RANGE` (5 when not a number)."""
    try:
        v = float(os.environ.get("NICSIM_PROGRESS_SECONDS", "5"))
    except ValueError:
        return 5.0
    if v != v:  # NaN
        return 5.0
    lo, hi = PROGRESS_SECONDS_RANGE
    return min(max(v, lo), hi)


class Progress:
    """Progress of one piece of work: `what` (a verb phrase), `total` items of `unit` if known,
    and a `detail` text that changes. A live bar on a terminal (it appears at the first
    update); otherwise a plain line every few seconds from a background thread, also while one
    long call runs; nothing with --quiet. Use as a context manager."""

    def __init__(self, what: str, total: float | None = None, unit: str = "", transient: bool = False) -> None:
        self.what, self.total, self.unit, self.transient = what, total, unit, transient
        self.completed: float = 0
        self.detail = ""
        self._t0 = time.monotonic()
        self._lines = 0
        self._bar: RichProgress | None = None
        self._task: Any = None
        self._live = err_console.is_terminal and not state.quiet
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if not self._live and not state.quiet and _interval_s() > 0:
            self._ticker = threading.Thread(target=self._tick, name="nicsim-progress", daemon=True)
            self._ticker.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(_interval_s()):
            self._line(time.monotonic())

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.stop(failed=exc_type is not None)

    def update(self, completed: float | None = None, *, total: float | None = None, detail: str | None = None,
               advance: float = 0) -> None:
        if completed is not None:
            self.completed = completed
        self.completed += advance
        if total is not None:
            self.total = total
        if detail is not None:
            self.detail = detail
        if state.quiet:
            return
        if self._live:
            if self._bar is None:
                self._start_bar()
            assert self._bar is not None
            self._bar.update(self._task, completed=self.completed, total=self.total, detail=self.detail)

    def advance(self, n: float = 1) -> None:
        self.update(advance=n)

    def stop(self, failed: bool = False) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
            if self._lines:
                self._line(time.monotonic(), done=not failed)  # where it ended, as the log showed it under way

    def _start_bar(self) -> None:
        cols: list[Any] = [TextColumn(self.what.replace("{", "{{").replace("}", "}}"), style="bold", markup=False)]
        if self.total is not None:
            cols += [BarColumn(), MofNCompleteColumn()]
            if self.unit:
                cols.append(TextColumn(self.unit, markup=False))
        cols += [TextColumn("{task.fields[detail]}", markup=False), TimeElapsedColumn()]
        self._bar = RichProgress(*cols, console=err_console, transient=self.transient)
        self._task = self._bar.add_task(self.what, total=self.total, detail=self.detail)
        self._bar.start()

    def _line(self, now: float, done: bool = False) -> None:
        elapsed = int(now - self._t0)
        parts = [f"nicsim: {self.what}"]
        if self.total is not None:
            parts.append(f"{self.completed:,.0f}/{self.total:,.0f}" + (f" {self.unit}" if self.unit else ""))
        elif self.completed:
            parts.append(f"{self.completed:,.0f}" + (f" {self.unit}" if self.unit else ""))
        if self.detail:
            parts.append(self.detail)
        print(", ".join([" ".join(parts[:2]), *parts[2:]]) + f" ({elapsed // 60}:{elapsed % 60:02d}"
              + (", done)" if done else ")"), file=sys.stderr, flush=True)
        self._lines += 1
