"""The summary types every model shares (the kernel's `FifoSummary` and `LatSummary`, in
crates/nicsim-kernel/src/fifo.rs and stats.rs), as `TypedDict`s. Each subsystem's `summary`
module types the rest of its summary."""

from typing import NotRequired, TypedDict


class LittlesLaw(TypedDict):
    L_packets: float
    lambda_per_us: float
    W_us: float


class FifoSummary(TypedDict):
    """One FIFO (the kernel's `FifoSummary`): bytes for a FIFO, packets for a ring."""

    capacity_bytes: NotRequired[int]
    capacity_packets: NotRequired[int]
    mean_bytes: NotRequired[float]
    max_bytes: NotRequired[int]
    mean_packets: float
    max_packets: int
    arrivals: int
    departures: int
    littles_law: LittlesLaw


class LatSummary(TypedDict):
    """Latency in µs (the kernel's `LatSummary`); only `packets` when none was measured."""

    packets: int
    mean: NotRequired[float]
    min: NotRequired[float]
    p50: NotRequired[float]
    p99: NotRequired[float]
    max: NotRequired[float]
