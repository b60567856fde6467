"""The router summary's types: `TypedDict`s matching the Rust structs that produce it
(`nicsim_router::summary::Summary`), so that code reading a summary type-checks. docs/router.md
("Summary schema") says what every field means."""

from typing import Literal, TypedDict

from nicsim.summary_types import FifoSummary, LatSummary

__all__ = ["FifoSummary", "LatSummary", "Summary"]


class Rates(TypedDict):
    mbps: float
    mbps_frame: float
    kpps: float
    packets: int


class PortSummary(TypedDict):
    offered: Rates
    offered_by_class: dict[str, Rates]
    forwarded: Rates
    forwarded_by_class: dict[str, Rates]
    forwarded_from: dict[str, Rates]
    latency_us: dict[str, LatSummary]


class Packets(TypedDict):
    offered: int
    delivered: int
    dropped: int
    in_flight: int
    conserved: bool


class Bytes(TypedDict):
    offered: int
    delivered: int
    dropped: int
    in_flight: int


class ClassSummary(TypedDict):
    offered: int
    delivered: int
    dropped: int
    loss: float


# "class" is a keyword: only the functional form can name it.
Drop = TypedDict("Drop", {"place": str, "class": Literal["high", "low"], "reason": str,  # noqa: UP013
                          "packets": int, "frame_bytes": int})


class Channels(TypedDict):
    slow_download: int
    slow_upload: int
    messages: int
    bursts: int


class BusSummary(TypedDict):
    width_bits: int
    clock_mhz: int
    peak_gbps: float
    utilisation: float
    transactions: int
    data_cycles: int
    overhead_cycles: int
    cycles_by_channel: Channels
    wasted_bytes: int


class Utilisation(TypedDict):
    utilisation: float


class CpuSummary(TypedDict):
    utilisation: float
    forwarded_kpps: float


class ProtoStats(TypedDict):
    reqs: int
    trailing_reqs: int
    null_reqs: int
    res: int
    bursts: int
    empty_bursts: int
    burst_packets: int
    grant_violations: int
    ungranted_delivered: int
    output_overflows: int
    duplicate_res: int
    max_req_waits: int
    max_res_waits: int
    max_burst_waits: int


class EngineSummary(TypedDict):
    instants: int
    steps: int
    ticks_per_us: int


class Summary(TypedDict):
    """A router run's summary, as `simulate` returns it and `summary.json` holds it."""

    seed: int
    finished: bool
    sim_time_us: float
    window_us: list[float]
    ports: dict[str, PortSummary]
    packets: Packets
    bytes: Bytes
    classes: dict[str, ClassSummary]
    drops: list[Drop]
    drops_by_place: dict[str, int]
    bus: BusSummary
    memory_bus: Utilisation
    cpu: CpuSummary
    protocol: ProtoStats
    fifos: dict[str, FifoSummary]
    engine: EngineSummary
    # Added by the Python side.
    interrupted: bool
    nicsim_version: str
    schema_version: int
