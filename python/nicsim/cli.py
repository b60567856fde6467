"""The `nicsim` command line: it only assembles each subsystem's commands (`nicsim/<subsystem>/cli.py`,
`nicsim/sweep/cli.py`, `nicsim/reproduce/cli.py`) and turns errors into exit codes.

One command with a subcommand per job. Every command that produces results writes one output
folder, atomically. Bad input of any kind (a configuration, a `--param`, a missing file) is
reported by the single handler in [`main`] as one line, `nicsim: error: <message>`, with exit
code 2 and no traceback; Ctrl-C exits with 130 after writing what can be written.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from nicsim import ui
from nicsim.errors import NicsimError
from nicsim.options import QuietOpt, VerboseOpt
from nicsim.signals import Terminated, on_sigterm

try:  # typer >= 0.22 carries its own copy of click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException

def _conventional_help() -> None:
    """--help as the tools users know print it: `nicsim run [OPTIONS] CONFIG`, not typer's
    `{CONFIG}`, and flags without a `<bool>` type beside them. Typer keeps both in its
    parameter classes; each is changed only where that typer has it."""
    from typer import core

    if hasattr(core.TyperArgument, "_usage_display_name"):
        def usage_name(self: Any) -> str:
            name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
            return name + ("..." if self.nargs != 1 else "")

        core.TyperArgument._usage_display_name = usage_name
    if hasattr(core.TyperOption, "display_type_rich"):
        typed = core.TyperOption.display_type_rich

        def display_type(self: Any, ctx: Any) -> str | None:
            return None if self.is_flag or self.count else typed(self, ctx)

        core.TyperOption.display_type_rich = display_type


_conventional_help()

#: How help texts are formatted.
MARKUP = "markdown"

#: The subcommands, in the order `--help` lists them: name -> (module, attribute, hidden). A
#: subcommand's module (and what it imports: the models, numpy, the solver) is imported only when
#: that subcommand runs or `--help` lists them all, so that `nicsim run` does not pay for `nicsim
#: xdp`'s imports (docs/architecture.md "Start-up").
SUBCOMMANDS: dict[str, tuple[str, str, bool]] = {
    "run": ("nicsim.datapath.cli", "run_cmd", False),
    "sweep": ("nicsim.sweep.cli", "sweep_cmd", False),
    "offloads": ("nicsim.datapath.cli", "offloads_app", False),
    "reproduce": ("nicsim.reproduce.cli", "reproduce_app", False),
    "xdp": ("nicsim.xdp.cli", "xdp_app", False),
    "flowmem": ("nicsim.flowmem.cli", "flowmem_app", False),
    # The group's former name: `nicsim flow ...` still runs the same commands, unlisted in --help.
    "flow": ("nicsim.flowmem.cli", "flowmem_app", True),
    "router": ("nicsim.router.cli", "router_app", False),
}


def _load(name: str) -> Any:
    """Subcommand `name` as a click command, from its module's typer app or command function."""
    module, attr, hidden = SUBCOMMANDS[name]
    obj = getattr(import_module(module), attr)
    # Converted as `app.add_typer`/`app.command` would, under a root with the same settings (the
    # subcommands inherit its markup mode).
    root = typer.Typer(rich_markup_mode=MARKUP)
    if isinstance(obj, typer.Typer):
        root.add_typer(obj, name=name, hidden=hidden)
    else:
        root.command(name, hidden=hidden)(obj)
    root.command("_")(lambda: None)  # a second command, so that typer builds a group of them
    return typer.main.get_group(root).commands[name]


class _Subcommands(MutableMapping[str, Any]):
    """The root group's commands, each built from its module when first looked up."""

    def __init__(self) -> None:
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in SUBCOMMANDS:
                raise KeyError(name)
            self._built[name] = _load(name)
        return self._built[name]

    def __setitem__(self, name: str, cmd: Any) -> None:
        self._built[name] = cmd

    def __delitem__(self, name: str) -> None:
        raise TypeError("nicsim's subcommands are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(SUBCOMMANDS)

    def __len__(self) -> int:
        return len(SUBCOMMANDS)


class _LazyGroup(TyperGroup):
    """typer's group, with its subcommands imported when they are needed (`_Subcommands`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Subcommands()


app = typer.Typer(
    name="nicsim",
    cls=_LazyGroup,
    help="SmartNIC design and analysis toolkit: simulate datapaths (FlexPipe, PANIC, StaticPipe) and "
    "size their offloads, guarantee the rate of XDP programs, measure and model what flow reassembly "
    "costs in memory, simulate a PC router with FPGA NICs, sweep parameters and reproduce the seed "
    "papers' results.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=MARKUP,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from nicsim import __version__

        ui.out_console.print(f"nicsim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
    figures: Annotated[str | None, typer.Option(
        "--figures", envvar="NICSIM_FIGURES", metavar="FORMATS", show_envvar=True,
        help="The formats of every figure a command writes, comma-separated: png (always), svg, pdf. "
        "The default is png alone.")] = None,
) -> None:
    """SmartNIC design and analysis toolkit."""
    if figures:
        from nicsim.output import FIGURES_ENV, parse_figure_formats

        # In the environment, so that the command's worker processes draw the same.
        os.environ[FIGURES_ENV] = ",".join(parse_figure_formats(figures, f"--figures (${FIGURES_ENV})"))


#: The longest error line: a message that quotes a huge input (a 100 kB name) is cut.
MAX_ERROR_CHARS = 1000
#: The longest word of an error line: a long value it quotes is cut there, so that what the
#: message says after it (why the value is refused) stays on the line.
MAX_ERROR_WORD_CHARS = 160


def _short_word(w: str) -> str:
    if len(w) <= MAX_ERROR_WORD_CHARS:
        return w
    return w[:MAX_ERROR_WORD_CHARS] + f"…({len(w) - MAX_ERROR_WORD_CHARS:,} more characters)"


def _fail(msg: str, code: int = 2) -> NoReturn:
    msg = " ".join(_short_word(w) for w in msg.split())  # one line, whatever the message quoted
    msg = ui.printable(msg)  # an input's control characters shown, not acted on
    if len(msg) > MAX_ERROR_CHARS:
        msg = msg[:MAX_ERROR_CHARS] + f"… ({len(msg) - MAX_ERROR_CHARS:,} more characters)"
    try:
        print(f"nicsim: error: {msg}", file=sys.stderr, flush=True)
    except OSError:  # stderr is full or closed: the exit code still says what happened
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stderr.fileno())
    sys.exit(code)


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point of the `nicsim` command; the one place where errors become exit codes."""
    signal.signal(signal.SIGTERM, on_sigterm)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:  # not under nohup, which ignores it
        signal.signal(signal.SIGHUP, on_sigterm)
    # A terminal or pipe whose encoding cannot show a character of a table (LC_ALL=C, ASCII):
    # the character is escaped, as `ls` and tshark do, rather than the command failing.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        rv = app(args=argv, prog_name="nicsim", standalone_mode=False)
    except typer.Abort:
        print("nicsim: interrupted", file=sys.stderr)
        sys.exit(130)
    except Terminated as e:
        print("nicsim: terminated", file=sys.stderr)
        sys.exit(e.code)
    except ClickException as e:  # usage errors: click's message on one line, exit 2
        ctx = getattr(e, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        _fail(" ".join(e.format_message().split()) + hint, e.exit_code)
    except NicsimError as e:
        _fail(str(e))
    except BrokenPipeError:
        # Whoever read our output stopped (`nicsim ... | head`): end quietly, as other tools do.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        sys.exit(141)
    except OSError as e:
        _fail(f"{e.filename}: {e.strerror}" if e.filename else str(e))
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
