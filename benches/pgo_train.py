"""The workload that trains the build's profile-guided optimisation (`make develop`, see the
Makefile and BENCHMARKS.md): an instrumented build of the extension runs this once, and the
counts it writes tell the compiler which branches and calls are hot.

It runs the datapath as users do: the FlexPipe paper's configuration with each architecture,
timing-only and functional, plus a short router run (the two share the simulation kernel). It
is kept small (a few seconds) and broad, so that the profile reflects the models, not one
benchmark: runs of other configurations gain as much (BENCHMARKS.md).
"""

from __future__ import annotations

from pathlib import Path

import nicsim
from nicsim import router
from nicsim.config import load_config

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "python" / "nicsim" / "configs" / "flexpipe_paper.toml"


def run(overrides: dict) -> None:
    dp = nicsim.Datapath(load_config(PAPER, overrides))
    dp.run()
    dp.summary()


def main() -> None:
    window = lambda n: {"traffic.packets": n, "measure.window": [500, n - 500]}  # noqa: E731
    run(window(200_000))
    run({**window(50_000), "traffic.rate_gbps": 128.0, "traffic.arrivals": "poisson"})
    run({**window(50_000), "arch": "staticpipe"})
    run({**window(30_000), "arch": "panic"})
    run({**window(11_000), "arch": "panic", "panic.variant": "full"})
    run({**window(5_000), "functional": True})
    router.simulate(router.load(ROOT / "configs" / "router" / "setup_f.toml", {"run.duration_us": 5_000.0}))


if __name__ == "__main__":
    main()
