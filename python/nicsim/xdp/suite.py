"""The XDP program suite (examples/xdp, built by `make xdp-suite`) and the paper's figures for
its counterparts (Krude et al., CoNEXT 2021, Tables 2 and 3), shared by `nicsim reproduce xdp`
and the benchmarks.

The paper's rates are at the NFP's 50 cores, without the MAC limit (its §6: core-bound programs
are measured on 5 cores and scaled to 50), so the suite is analysed with `mac_limit=False` for
the comparison; Fig. 8's Count-Min sweep keeps the MAC limit, as the figure's "ideal" region
shows it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from nicsim.errors import InputError


@dataclass(frozen=True)
class Program:
    """One suite program and the paper's figures for its counterpart (None: not given)."""

    name: str  # object stem in the suite's build folder
    label: str  # the paper's name for its counterpart
    paper_naive_gbps: float | None
    paper_ssp_gbps: float | None
    paper_naive_s: float
    paper_ssp_s: float | None  # Table 3, time to the slowest satisfiable path
    paper_bottleneck: str | None = None  # stated in the paper's text (§6), where it is


#: Tables 2 and 3 of the paper, in its order.
SUITE: tuple[Program, ...] = (
    Program("parser", "switch.p4 (parser)", 17.1, 24.7, 1.6, 28.0, "cores"),
    Program("dos_filter", "Cloudflare DoS", 32.1, 35.2, 0.6, 0.9, "cores"),
    Program("quic_lb_v4", "QUIC LB (IPv4)", 22.8, 22.8, 0.3, 0.4, "cores"),
    Program("quic_lb_v6", "QUIC LB (IPv6)", 21.4, 27.6, 1.1, 33.0, "cores"),
    Program("rtp_alaw", "RTP a-law to u-law", 2.97, 2.97, 23.5, 102.0, "cores"),
    Program("rtp_alaw_opt", "RTP a-law to u-law (opt)", 4.70, 4.70, 23.5, 95.0, "cores"),
    Program("dns_cache", "DNS Cache", 6.4, 9.0, 2.5, 38.0, "dram"),
    Program("count_min_5", "Count-Min (5)", 21.5, 21.6, 0.2, 0.2, "cores"),
    Program("count_min_10", "Count-Min (10)", 11.9, 11.9, 0.3, 0.4, "dram"),
    Program("count_min_15", "Count-Min (15)", 8.0, 8.0, 0.5, 0.7, "dram"),
    Program("count_min_20", "Count-Min (20)", 6.0, 6.0, 0.8, 1.0, "dram"),
    Program("path_explosion", "Path Explosion", 1.2, None, 0.5, None),
)

#: Fig. 7 plots the bound against analysis time for these.
FIG7 = ("parser", "quic_lb_v6", "dns_cache", "path_explosion")
#: Fig. 8: Count-Min's guarantee against its number of stages.
FIG8_STAGES = tuple(range(1, 21))


def explosion_search_s(quick: bool, timeout_s: float) -> float:
    """How long `nicsim reproduce xdp` searches the path-explosion program: the paper's 60 s
    (Table 3: it times out), 5 s with --quick; never longer than --timeout gives the others."""
    return min(timeout_s, 5.0 if quick else 60.0)


def objects_dir() -> Path:
    """Where the suite's objects are: $NICSIM_XDP_OBJS; else, in a source checkout,
    <repo>/target/xdp (`make xdp-suite`); else, installed, nicsim's cache
    (~/.cache/nicsim/xdp-VERSION, or under $XDG_CACHE_HOME), built there when first needed."""
    env = os.environ.get("NICSIM_XDP_OBJS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3]
    if (repo / "Cargo.toml").is_file() and (repo / "crates").is_dir():
        return repo / "target" / "xdp"
    from nicsim import __version__

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "nicsim" / f"xdp-{__version__}"


def object_path(name: str) -> Path:
    """The suite object `name`, built with clang if it is missing (unless NICSIM_XDP_OBJS
    names the folder: then it is the user's), or a one-line error saying how to get it."""
    from nicsim.xdp.build import BuildError, build

    p = objects_dir() / f"{name}.o"
    if not p.is_file() and not os.environ.get("NICSIM_XDP_OBJS"):
        try:
            build(p.parent)
        except (BuildError, OSError) as e:
            raise InputError(f"{p}: the XDP suite object is missing and cannot be built: {e}") from None
    if not p.is_file():
        raise InputError(f"{p}: the XDP suite object is missing: build the suite with `make xdp-suite` "
                         "(or point NICSIM_XDP_OBJS at a folder holding it)")
    return p
