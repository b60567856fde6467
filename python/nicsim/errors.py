"""The errors nicsim reports to users.

Bad input (a configuration, a capture, a rule set, a `--param`) raises a subclass of
[`NicsimError`]; the CLI prints its message as one line, `nicsim: error: <message>`, and exits
with code 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from typing import Any


class NicsimError(Exception):
    """Bad input a user can fix."""


class ConfigError(NicsimError, ValueError):
    """A configuration value is missing, unknown or wrong.

    `file` is where the configuration came from (a TOML file, or `--param`), `path` the key path
    inside it (`flows[2].chain[1]`) or a position (`line 3, column 7`), `msg` what was expected.
    The message reads `FILE: PATH: MSG`, leaving out the parts that are unknown.
    """

    def __init__(self, msg: str, path: str = "", file: str | None = None) -> None:
        super().__init__(msg, path, file)
        self.msg = msg
        self.path = path
        self.file = file

    def __str__(self) -> str:
        return ": ".join(p for p in (self.file, self.path, self.msg) if p)


class InputError(NicsimError, ValueError):
    """An input file (capture, rule set, object file, ...) or argument is unusable."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a run; `summary` is the valid partial summary of what ran so far."""

    def __init__(self, summary: dict[str, Any]) -> None:
        super().__init__()
        self.summary = summary


class WorkerKilled(NicsimError):
    """A pool worker died while it ran a point (the kernel's out-of-memory killer, `kill -9`).
    `point` is the point's number (1-based, in input order); `results` holds every point's
    result in input order, None for those that did not finish, so that a command can keep the
    points that finished."""

    def __init__(self, point: int, results: list[Any], how: str = "was killed (out of memory?)") -> None:
        super().__init__(point, how)
        self.point = point
        self.how = how
        self.results = results
        #: What the command had done when the worker died, as its summary (set by the command).
        self.partial: dict[str, Any] | None = None

    def __str__(self) -> str:
        return f"worker for point {self.point} {self.how}"

    def finished(self) -> int:
        """How many points finished."""
        return sum(r is not None for r in self.results)

    def kept(self, out: object) -> InputError:
        """The one-line error once the finished points are written to `out`."""
        return InputError(f"{self}; the {self.finished():,} of {len(self.results):,} points that finished are kept "
                          f"in {out}/summary.json")
