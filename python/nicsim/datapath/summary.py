"""The datapath summary's types: `TypedDict`s matching the Rust structs that produce it
(`nicsim_datapath::summary::Summary`, the kernel's `FifoSummary` and `LatSummary`), so that code
reading a summary type-checks. docs/summary-schema.md says what every field means."""

from typing import Literal, NotRequired, TypedDict


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
