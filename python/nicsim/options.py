"""The command-line options that every `nicsim` command shares, defined once.

`--out` names the output folder (see [`nicsim.output`] for what may be replaced) and `--force`
lets it replace a folder that nicsim did not write. The subcommand modules (cli.py, flowmem/cli.py,
router/cli.py) import these instead of spelling them again.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from nicsim import ui
from nicsim.output import check_out_arg

#: The largest values the core's integer types hold; larger option values are refused by the
#: option parser (naming the option) instead of overflowing in the bindings.
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
#: `--memory-mb` at most 1 TiB; `--timeout` at most a year (both far beyond a real run).
MAX_MEMORY_MB = 2**20
MAX_SECONDS = 365 * 24 * 3600.0
#: Synthetic captures of at most 10 million connections (about 100 GB of pcap at the talk's sizes).
MAX_SYNTH_FLOWS = 10_000_000

def in_range(lo: float, hi: float) -> Callable[[Any], Any]:
    """An option callback that refuses values outside [lo, hi] (as click's `min`/`max` do, but
    without printing the range, often the width of an integer type, in --help)."""

    def check(value: Any) -> Any:
        if value is not None and not (lo <= value <= hi):  # NaN fails too
            raise typer.BadParameter(f"{value} is not in {lo:g}..{hi:g}")
        return value

    return check


def path_arg(value: str) -> Path:
    """An input path argument; the empty string is refused (it would mean the working directory)."""
    if value == "":
        raise typer.BadParameter("an empty path")
    return Path(value)


OUT_HELP = ("Output folder, written atomically. An existing folder is replaced only if nicsim wrote it "
            "(it holds .nicsim-output) or it is empty; see --force.")

OutOpt = Annotated[Path, typer.Option("--out", "-o", help=OUT_HELP, parser=check_out_arg, show_default=False)]

ForceOpt = Annotated[bool, typer.Option(
    "--force", help="Replace an existing --out folder that nicsim did not write. Never the working directory or "
                    "a folder above it, / or $HOME, a folder holding a git repository or one of the command's "
                    "inputs.")]


def _set_json(value: bool) -> None:
    if value:
        ui.configure(json=True)


def _set_quiet(value: bool) -> None:
    if value:
        ui.configure(quiet=True)


def _set_verbose(value: int) -> None:
    if value:
        ui.configure(verbose=value)


# Each sets the process's output state (nicsim.ui) as it is parsed; commands read it from there.
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout (what summary.json "
                                       "holds) instead of tables.", callback=_set_json, expose_value=False,
                                       is_eager=True)]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No tables and no progress: only warnings and errors.",
                                        callback=_set_quiet, expose_value=False, is_eager=True)]
VerboseOpt = Annotated[int, typer.Option("--verbose", "-v", count=True, help="Also list every file written, with "
                                         "its size.", callback=_set_verbose, expose_value=False, is_eager=True)]


class Executor(StrEnum):
    local = "local"
    ray = "ray"


ExecutorOpt = Annotated[Executor, typer.Option("--executor", "-x",
                                               help="Where runs execute: a local process pool, or Ray "
                                                    "(needs the `nicsim[ray]` extra; see --ray-address).")]
WorkersOpt = Annotated[int | None, typer.Option("--workers", "-j", metavar="N", callback=in_range(1, 4096),
                                                help="Parallel runs (default: one per CPU).", show_default=False)]
def ray_address_arg(value: str) -> str:
    """`--ray-address`: an empty address is refused (it would silently mean a local run)."""
    if not value.strip():
        raise typer.BadParameter("an empty address (give HOST:PORT, ray://HOST:10001 or auto; leave the option out "
                                 "for a local run)")
    return value


RayAddressOpt = Annotated[str | None, typer.Option(
    "--ray-address", metavar="ADDR", parser=ray_address_arg,
    help="Connect to this Ray cluster (`HOST:PORT` of its head, `ray://HOST:10001`, or `auto`; default: $RAY_ADDRESS, "
         "else a local Ray). Implies `--executor ray`.")]


KeepGoingOpt = Annotated[bool, typer.Option(
    "--keep-going/--fail-fast",
    help="`--keep-going` (the default): a point that fails is listed with its error in the table and in "
         "summary.json `failed`, the others are written, and the exit code is 1 (2 when every point failed). "
         "`--fail-fast`: stop at the first point that fails, write nothing, exit 2.")]


#: What each short option means, in every command that has it (tests/test_cli.py checks the
#: table over the whole command tree). `-p` was also --program (xdp) and --pattern (flowmem
#: bench); those still take it, hidden, with a warning ([`deprecated_short`]).
SHORT_OPTIONS = {"-a": "--analysis", "-h": "--help", "-j": "--workers", "-o": "--out", "-p": "--param",
                 "-q": "--quiet", "-s": "--section", "-t": "--target", "-v": "--verbose", "-w": "--workload",
                 "-x": "--executor"}


def deprecated_short(short: str, long: str, metavar: str) -> Any:
    """A hidden option `short` that still means `long`, where it used to: [`either`] takes its
    value, with a warning that it will mean what [`SHORT_OPTIONS`] says."""
    return typer.Option(short, hidden=True, metavar=metavar, show_default=False,
                        help=f"Deprecated: {long} (it will be {SHORT_OPTIONS[short]}).")


def either(long_value: Any, short_value: Any, long: str, short: str) -> Any:
    """The value of an option given as `long` or as its deprecated `short` form (with a
    warning), not both."""
    if short_value is None:
        return long_value
    if long_value is not None:
        raise typer.BadParameter(f"given as {long} and as {short}: give it once", param_hint=long)
    ui.warn(f"{short} {short_value}: {short} for {long} is deprecated ({short} is {SHORT_OPTIONS[short]} in every "
            f"other nicsim command, and will be here): write {long} {short_value}")
    return short_value
