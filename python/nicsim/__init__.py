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

from importlib.metadata import PackageNotFoundError, version

from nicsim.config import Config, load_config
from nicsim.datapath import Datapath, run
from nicsim.errors import ConfigError, InputError, Interrupted, NicsimError

try:
    __version__ = version("nicsim")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

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
