"""The `nicsim` command's entry point: what must hold before the command line is imported.

Importing the command line (typer, rich) takes a moment; Ctrl-C then ends the command quietly
(exit 130), as it does later. The standard streams may be closed (`nicsim ... <&-`): they become
/dev/null, so that `-` reads nothing and output goes nowhere, instead of a crash. `COLUMNS` is
kept to what a terminal can be (a huge value made `--help` write gigabytes). Arguments must be
UTF-8: a file name that is not cannot be handed to the core or written into JSON.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

#: The widest output nicsim formats for (a wider COLUMNS is taken as this).
MAX_COLUMNS = 1000


def _prepare() -> None:
    if sys.stdin is None:
        sys.stdin = open(os.devnull)  # noqa: SIM115 (for the life of the process)
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    cols = os.environ.get("COLUMNS")
    if cols is not None:
        try:
            n = int(cols)
        except ValueError:
            n = 0
        if n <= 0:
            del os.environ["COLUMNS"]
        elif n > MAX_COLUMNS:
            os.environ["COLUMNS"] = str(MAX_COLUMNS)
    for i, arg in enumerate(sys.argv[1:], 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raw = arg.encode("utf-8", "surrogateescape")
            print(f"nicsim: error: argument {i} ({raw[:80]!r}) is not UTF-8: nicsim takes UTF-8 file names "
                  "and values", file=sys.stderr)
            sys.exit(2)


def main() -> NoReturn:
    try:
        _prepare()
        from nicsim.cli import main as run
    except KeyboardInterrupt:
        print("nicsim: interrupted", file=sys.stderr)
        sys.exit(130)
    run()
