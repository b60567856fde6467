"""The names of the flow-memory options that take one of a fixed set (`overlap`, `unacked`,
`hole_marker`, `retrieval`, `workload`), from the Rust core (`nicsim_flowmem::names`, through
`_core.flow_names`): one list for the core's parsers, the CLI's choices and the Python API's
checks, and one message for a name that is none of them (the core's)."""

from __future__ import annotations

from enum import StrEnum

from nicsim import _core

#: {option: its names}, the first the default where the option has one.
NAMES: dict[str, tuple[str, ...]] = {option: tuple(values) for option, values in _core.flow_names().items()}


def check(option: str, value: str) -> None:
    """`InputError` with the core's one-line message unless `value` is one of `option`'s names."""
    from nicsim.config import core_errors

    with core_errors(None):
        _core.flow_check_name(option, value)


def choices(option: str, name: str) -> type[StrEnum]:
    """A `StrEnum` class called `name` whose members are `option`'s names (each member's name
    is its value), for typer: it shows them in --help and refuses any other."""
    return StrEnum(name, [(n, n) for n in NAMES[option]])
