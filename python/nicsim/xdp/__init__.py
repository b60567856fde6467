"""The XDP throughput analyzer (seed 004, Krude et al., CoNEXT 2021).

Given a BPF object built by clang, [`analyze`] computes the packet and bit rate the XDP program
sustains on a target model whatever packets arrive: first the naive bound (the slowest path,
feasible or not), written to `summary.json` (schema in docs/xdp.md).
"""

from nicsim.xdp.analyze import BUILTIN_TARGETS, analyze, load_target

__all__ = ["BUILTIN_TARGETS", "analyze", "load_target"]
