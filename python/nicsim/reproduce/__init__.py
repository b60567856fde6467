"""Experiments that reproduce the seed papers' results, one module per paper."""

from rich.console import Console


def report_console(width: int = 120) -> Console:
    """The console a reproduction prints its tables to: stdout as the terminal has it, or, for a
    log or a pipe (where rich assumes 80 columns), `width` columns so that the tables are not
    crushed. With --json, stdout carries the summary: the tables go to stderr."""
    from nicsim import ui

    console = ui.PipeConsole(stderr=ui.state.json)
    return console if console.is_terminal else ui.PipeConsole(width=width, stderr=ui.state.json)
