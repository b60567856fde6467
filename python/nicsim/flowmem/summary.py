"""The flow-memory summaries' types: `TypedDict`s for what `nicsim flowmem reassemble`, `bench`,
`sizes` and `synth` return (and write to summary.json, or print with --json), and for the Rust
core's reports they embed, so that code reading a summary type-checks and tests can check a
summary key by key (`conforms` in tests/conftest.py).

Where a Rust `Serialize` struct is the source, the class names it; the rest is built in
Python (`nicsim.flowmem.reassemble`, `nicsim.flowmem.memory`). Option values (`overlap`,
`unacked`, `workload`, `retrieval`) are `str`: their names are the core's
(`nicsim.flowmem.names`). docs/summary-schema.md and docs/flowmem.md say what the fields mean."""

from typing import NotRequired, TypedDict

__all__ = [
    "BenchCapture", "BenchSeveral", "BenchSide", "BenchSummary", "CacheStats", "ComparisonSummary", "DefragCounts",
    "DesignSummary", "HostBench", "HostSide", "PacketCounts", "ReassembleSummary", "SizesSummary",
    "SynthReport", "Traffic",
]


# The Rust core's reports (crates/nicsim-flowmem).


class PacketCounts(TypedDict):
    """`nicsim_flowmem::PacketCounts`: `read`, and every packet in exactly one bucket
    (`PacketCounts::buckets`, as the bindings' `FlowCapture.counts()` gives them)."""

    read: int
    data: int
    control: int
    retransmission: int
    overlap_discarded: int
    non_ip: int
    non_tcp: int
    ip_fragment: int
    unsupported_link: int
    snaplen_cut: int
    malformed: int
    over_flow_limit: int
    over_arena_limit: int
    over_segment_limit: int
    hole_too_large: int


class HostSide(TypedDict):
    """`nicsim_flowmem::bench::HostSide`: one design measured on this host."""

    bytes_copied: int
    bytes_read: int
    seconds: float
    gbps: float


class HostBench(TypedDict):
    """`nicsim_flowmem::bench::HostBench` (`_core.flow_host_bench`)."""

    payload_bytes: int
    streams: int
    copy: HostSide
    flow: HostSide
    result: int


class Traffic(TypedDict):
    """`nicsim_flowmem::model::Traffic`: DRAM traffic of one phase."""

    read_bytes: int
    write_bytes: int
    bus_bytes: int
    table_bytes: int


class CacheStats(TypedDict):
    """`nicsim_flowmem::model::CacheStats`."""

    hits: int
    misses: int
    writebacks: int


class DesignSummary(TypedDict):
    """`nicsim_flowmem::model::DesignSummary`: a `DesignReport`'s fields (flattened) and its
    totals."""

    # DesignReport
    payload_bytes: int
    receive: Traffic
    table_entries: int
    receive_seconds: float
    assemble: Traffic
    process: Traffic
    assemble_cycles: int
    process_cycles: int
    assemble_seconds: float
    process_seconds: float
    l1: CacheStats
    flow_cache: CacheStats
    bytes_copied: int
    # its totals
    dram_bytes: int
    dram_bytes_after_receive: int
    cycles: int
    model_seconds: float
    cache_hit_rate: float
    flow_cache_hit_rate: float


class ComparisonSummary(TypedDict):
    """`nicsim_flowmem::model::ComparisonSummary` (`_core.flow_model`, `flow_model_micro`):
    both designs on one target."""

    target: str
    retrieval: str
    copy: DesignSummary
    flow: DesignSummary


class SynthReport(TypedDict):
    """`nicsim_flowmem::synth::SynthReport`: what `nicsim flowmem synth` wrote (printed with
    --json; synth writes a capture, no summary.json)."""

    flows: int
    packets: int
    frame_bytes: int
    response_bytes: int
    request_bytes: int
    lost: int
    reordered: int
    duplicated: int
    flows_le_10kb: int


# The summaries built in Python.


class DefragCounts(TypedDict):
    """`nicsim_packet::defrag::DefragCounts` (`FlowCapture.defrag()`): IP defragmentation."""

    fragments: int
    datagrams: int
    fragments_reassembled: int
    overlap_bytes: int
    conflict_bytes: int
    cut: int
    evicted: int
    pending: int


class ReassembleSummary(TypedDict):
    """`nicsim flowmem reassemble`'s summary.json (`nicsim.flowmem.reassemble.reassemble`)."""

    capture: str
    overlap: str
    unacked: str
    hole_marker: str
    unacked_bytes: int
    packets: PacketCounts
    packets_conserved: bool
    flows: int
    directions: int
    direction_files: int
    stream_bytes: int
    hole_bytes: int
    arena_bytes: int
    max_hole_bytes: int
    cut_directions: int
    defrag: DefragCounts
    reused_tuples: int
    capture_warnings: int
    records_cut: int
    capture_cut_short_at: int | None
    tunnelled_flows: dict[str, int]
    # Added when written (`OutputDir.summary`).
    nicsim_version: str
    schema_version: int


class BenchSide(HostSide):
    """One design in `flowmem bench`: measured on this host (`HostSide`'s keys), the model's
    totals, and the model's whole report under `model`."""

    dram_bytes: int
    cycles: int
    cache_hit_rate: float
    model: DesignSummary


class Ratios(TypedDict):
    """Speed-ups (null when the flow-based side took no time) and DRAM bytes per payload byte."""

    host_speedup: float | None
    model_speedup: float | None
    copy_dram_per_payload_after_receive: float
    flow_dram_per_payload_after_receive: float
    copy_dram_per_payload: float
    flow_dram_per_payload: float


class StepShares(TypedDict):
    """DRAM bytes (read + written) per payload byte of each step (`memory.STEPS`)."""

    receive: float
    assemble: float
    process: float


class Steps(TypedDict):
    copy: StepShares
    flow: StepShares


class BenchCapture(TypedDict):
    """`flowmem bench` on one capture (`nicsim.flowmem.memory.bench_one`)."""

    capture: str
    workload: str
    pattern: str | None
    payload_bytes: int
    streams: int
    result: int
    target: str
    retrieval: str
    max_hole_bytes: int
    hole_too_large: int
    copy: BenchSide
    flow: BenchSide
    ratios: Ratios
    steps: Steps


class BenchSummary(BenchCapture):
    """`nicsim flowmem bench CAPTURE`'s summary.json: one capture's [`BenchCapture`]."""

    # Added when written (`OutputDir.summary`); `bench(..., out=None)` returns it without them.
    nicsim_version: NotRequired[str]
    schema_version: NotRequired[int]


class BenchSeveral(TypedDict):
    """`nicsim flowmem bench CAPTURE CAPTURE...`'s summary.json: one [`BenchCapture`] per
    capture, in the order given."""

    workload: str
    pattern: str | None
    target: str
    retrieval: str
    captures: list[BenchCapture]
    nicsim_version: NotRequired[str]
    schema_version: NotRequired[int]


class Cover(TypedDict):
    """The sizes that hold `share` of the flows whole."""

    share: float
    flow_bytes: int
    table_entries: int
    table_bytes: int


class ByteStats(TypedDict):
    total: int
    mean: float
    max: int


class SizesSummary(TypedDict):
    """`nicsim flowmem sizes`'s summary.json (`nicsim.flowmem.memory.sizes`)."""

    capture: str
    flows: int
    share_le_10kb: float
    table_entry_bytes: int
    cover: list[Cover]
    bytes: ByteStats
    max_hole_bytes: int
    cut_directions: int
    nicsim_version: str
    schema_version: int
