"""The datapath summary's types: `TypedDict`s matching the Rust structs that produce it
(`nicsim_datapath::summary::Summary`, the kernel's `FifoSummary` and `LatSummary`), so that code
reading a summary type-checks. docs/summary-schema.md says what every field means."""

from typing import Literal, NotRequired, TypedDict

from nicsim.summary_types import FifoSummary, LatSummary

__all__ = ["FifoSummary", "LatSummary", "Summary"]


class Packets(TypedDict):
    offered: int
    delivered: int
    dropped: dict[str, int]
    dropped_total: int
    in_flight: int


class FlowSummary(TypedDict):
    delivered_in_window: int
    throughput_gbps: float
    latency_us: LatSummary
    per_size: dict[str, LatSummary]
    chains: dict[str, int]


class ClassSummary(TypedDict):
    """One priority class (the flows' `priority`): `nicsim_datapath::summary::ClassSummary`."""

    offered: int
    delivered: int
    delivered_in_window: int
    throughput_gbps: float
    latency_us: LatSummary
    sojourn_us: LatSummary
    dropped: dict[str, int]
    dropped_total: int


class Recirculation(TypedDict):
    packets_recirculated: int
    fraction: float


class Verify(TypedDict):
    checked: int
    chain_mismatches: int
    payload_mismatches: int


class UnitUse(TypedDict):
    units: int
    utilisation: float


class EngineSummary(TypedDict):
    instants: int
    steps: int
    wakes: int
    ticks_per_us: int


class PanicSummary(TypedDict):
    variant: Literal["eval", "full"]
    detours: int
    crossbar_ports: int


class Summary(TypedDict):
    """A datapath run's summary, as `simulate` returns it and `summary.json` holds it."""

    arch: Literal["flexpipe", "staticpipe", "panic"]
    seed: int
    functional: bool
    offered_gbps: float
    throughput_gbps: float
    sim_time_us: float
    finished: bool
    deadlocked: bool
    packets: Packets
    latency_us: LatSummary
    sojourn_us: LatSummary
    classes: dict[str, ClassSummary]
    per_flow: dict[str, FlowSummary]
    recirculation: Recirculation
    verify: Verify
    fifos: dict[str, FifoSummary]
    offloads: dict[str, UnitUse]
    engine: EngineSummary
    panic: NotRequired[PanicSummary]
    # Added by the Python side.
    interrupted: bool
    nicsim_version: str
    schema_version: int
