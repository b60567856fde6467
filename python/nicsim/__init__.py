"""nicsim: a SmartNIC design and analysis toolkit.

The simulation core is Rust (`nicsim._core`); this package is the user-facing side: the
`nicsim` command line, configuration files, experiments, sweeps and plots.

    import nicsim
    cfg = nicsim.load_config("configs/flexpipe_paper.toml", ["traffic.rate_gbps=96"])
    summary = nicsim.run(cfg, out="out/run")      # or step by step:
    dp = nicsim.Datapath(cfg)
    dp.run(until_us=100.0)
    dp.remap("flow4", ["crc"])
    dp.run()
    print(dp.summary()["throughput_gbps"])
"""

from __future__ import annotations

from importlib import import_module
from typing import Any


def _version() -> str:
    """The installed package's version (importlib.metadata, which takes a tenth of a second to
    import: read when first asked for, not at start-up)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nicsim")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0+unknown"

#: The public names, imported from their modules when first used (so that `nicsim` on the
#: command line starts without loading what its command does not need).
_PUBLIC = {
    "Config": "nicsim.config", "load_config": "nicsim.config",
    "Datapath": "nicsim.datapath", "run": "nicsim.datapath",
    "ConfigError": "nicsim.errors", "InputError": "nicsim.errors", "Interrupted": "nicsim.errors",
    "NicsimError": "nicsim.errors",
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    if name == "__version__":
        globals()["__version__"] = v = _version()
        return v
    raise AttributeError(f"module 'nicsim' has no attribute {name!r}")


__all__ = [
    "Config",
    "ConfigError",
    "Datapath",
    "InputError",
    "Interrupted",
    "NicsimError",
    "__version__",
    "load_config",
    "run",
]
