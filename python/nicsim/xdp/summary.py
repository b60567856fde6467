"""The XDP analyzer's summary types: `TypedDict`s matching the Rust structs that produce them
(`nicsim_xdp::summary`: `Summary`, `PathInfo`, `ExampleEntry`, `MapSummary`, `RunReport`,
`Calibration`; `nicsim_xdp::ssp::Outcome`), completed with what `nicsim.xdp.analyze` adds (the
search's result, memory, timing), so that code reading a summary type-checks. docs/xdp.md
("`summary.json`") and docs/summary-schema.md say what every field means."""

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict

__all__ = ["Calibration", "ExampleEntry", "FailedAnalysis", "LineCost", "MapSummary", "Outcome", "RunReport", "Summary", "SweepSummary"]

#: What limits a path's packet rate.
Bottleneck = Literal["mac", "cores", "dram"]


class ObjectInfo(TypedDict):
    """`object`: Rust's `ObjectInfo` (`section`, `program`, `insns`, `btf`), and the file analysed."""

    section: str
    program: str
    insns: int
    path: str
    sha256: str
    #: The `--tail-call` entries, [map, index, program], then the `--dispatch` ones.
    tail_calls: list[list[str | int]]
    #: The other objects those entries link in: absolute path → sha256 of the file analysed.
    linked: dict[str, str]
    #: The kernel configuration file the `__kconfig` externs took (`--kconfig`, NICSIM_KCONFIG);
    #: null: the running kernel's.
    kconfig: str | None
    #: The BTF file the object's CO-RE relocations were resolved against (`--btf`, NICSIM_BTF, else
    #: the running kernel's /sys/kernel/btf/vmlinux); null: the object has no CO-RE relocations.
    btf: str | None


class LoopSummary(TypedDict):
    insn: int
    line: str | None
    bound: int
    evident: bool
    #: A summarised bpf_loop call: its callback counted `bound` times (docs/xdp.md, "`bpf_loop`").
    summary: bool


class GraphSummary(TypedDict):
    nodes: int
    edges: int
    split_nodes: int
    #: A decimal string (it may exceed any JSON number).
    paths: str
    loops: list[LoopSummary]


class Naive(TypedDict):
    """The naive bound (rates null when the answer is unbounded)."""

    pps: float | None
    bps: float | None
    bottleneck: Bottleneck | None
    min_packet_bytes: int | None
    mps_classes: int
    mps_groups: int


class Guarantee(TypedDict):
    pps: float | None
    bps: float | None
    bottleneck: Bottleneck | None
    min_packet_bytes: int | None
    #: `naive-only` only before the search (the core's summary).
    status: Literal["naive-only", "ssp", "timeout", "exhausted", "unbounded"]


class Cost(TypedDict):
    """Cycles per component (`nicsim_xdp::cost::COMPONENTS`)."""

    cores: float
    dram: float


class ClassCost(TypedDict):
    insns: int
    cores: float
    dram: float


class LineCost(TypedDict):
    """`path.lines[]` (Rust's `LineCost`): the path's cost on one source line, in the order the
    path first reaches it; the lines add up to `path.cost` (each instruction at its own cost).
    Instructions without a source line (an object built without -g, or code the compiler
    gives line 0) come as runs of consecutive instructions, `line` `insns A-B` and `source`
    false. `nicsim xdp analyze` writes them as slowest_path.txt (`nicsim.xdp.explain`)."""

    #: `file:line`, or `insns A-B`.
    line: str
    source: bool
    #: The line's source, trimmed ("" for an instruction range).
    text: str
    #: The path's instructions on it.
    insns: int
    #: Cycles on the cores and the DRAM engine.
    cores: float
    dram: float
    #: The same in nanoseconds: cycles at the target's `cores.clock_mhz` and `dram.clock_mhz`
    #: (`dram_ns` 0 on a target without a DRAM engine).
    cores_ns: float
    dram_ns: float
    #: Helper calls on it: class (`call bpf_map_lookup_elem (hash)`) → calls.
    helpers: dict[str, int]


class PathSummary(TypedDict):
    """`path`: the SSP, or without one the naive bound's slowest path."""

    insns: list[int]
    #: Its distinct source lines (line 0, which is no line, left out).
    source_lines: list[str]
    cost: Cost
    cost_by_class: dict[str, ClassCost]
    lines: list[LineCost]
    min_packet_bytes: int
    feasible: bool | None
    xdp_action: str | None
    retval: int | None


class MapSummary(TypedDict):
    """A map as the summary lists it, the format `nicsim xdp validate` and `_core.xdp_run` read."""

    type: str
    key_size: int
    value_size: int
    max_entries: int
    #: key hex → value hex.
    entries: dict[str, str]


class Memory(TypedDict):
    budget_mb: int
    analysis_budget_mb: int
    analysis_mb: float
    search_mb: float
    solver_budget_mb: int
    solver_peak_rss_mb: float
    solver_ended: str | None
    process_peak_rss_mb: float


class TracePoint(TypedDict):
    seconds: float
    pps: float
    bps: float


class HelperResult(TypedDict):
    """A value the environment gave on an example's path (`nicsim_xdp::ssp::HelperResult`): the
    interpreter replays it; the kernel gives its own."""

    helper: str
    id: int
    value: int


class ContextField(TypedDict):
    """A field of `struct xdp_md` an example's path read (`ingress_ifindex`, `rx_queue_index`)
    and the model's value: a test run gives the loopback's (1, queue 0)."""

    field: str
    value: int


class SlowPath(TypedDict):
    """One of the `--paths K` slowest satisfiable paths."""

    rank: int
    pps: float
    ns: float
    bottleneck: Bottleneck
    cost: Cost
    min_packet_bytes: int
    insns_count: int
    insns: list[int]
    retval: int
    xdp_action: str
    packet_bytes: int
    example_packet_hex: str
    #: What the environment gave on the path (time, random numbers, CPU), in call order.
    helper_results: list[HelperResult]
    #: The context's fields the path read and the model's values (empty when none).
    context: NotRequired[list[ContextField]]
    maps: dict[str, MapSummary]


def replay(results: Sequence[Mapping[str, Any]] | None) -> list[tuple[int, int]]:
    """An example's `helper_results` as the interpreter replays them (`_core.xdp_run`'s
    `replay`): (helper id, value), in call order."""
    return [(int(h["id"]), int(h["value"])) for h in results or ()]


class Verifier(TypedDict):
    """What the running kernel's verifier says of the program (`nicsim.xdp.analyze.verifier_check`)."""

    checked: bool
    loads: NotRequired[bool]
    why: NotRequired[str]
    reason: NotRequired[str]
    insn: NotRequired[int | None]
    line: NotRequired[str | None]
    text: NotRequired[str | None]


class Offload(TypedDict):
    """What the kernel's offload for the target's hardware loads of the program (`nfp`: the NFP
    offload; Rust's `OffloadCheck`)."""

    loads: bool
    #: One line per rule: the rule and what it refuses.
    refused: list[str]


class Summary(TypedDict):
    """`nicsim xdp analyze`'s `summary.json`: Rust's `Summary` and what the search adds."""

    object: ObjectInfo
    target: str
    graph: GraphSummary
    naive: Naive
    guarantee: Guarantee
    path: PathSummary
    example_packet_hex: str | None
    #: The example's environment results (time, random numbers, CPU), in call order.
    example_helper_results: NotRequired[list[HelperResult]]
    #: The context's fields the example's path read and the model's values.
    example_context: NotRequired[list[ContextField]]
    maps: dict[str, MapSummary]
    unsized_maps: list[str]
    #: slot → "section/program", or "unknown".
    prog_arrays: dict[str, dict[str, str] | Literal["unknown"]]
    unbounded: list[str]
    #: On a target with an offload (`nfp`) only.
    offload: NotRequired[Offload]
    warnings: list[str]
    paths_enumerated: int
    #: Paths whose query went to the solver (of the enumerated; the others were pruned).
    paths_checked: int
    paths_unsat: int
    paths_pruned: int
    prefixes_refused: int
    rate: Literal["bit", "packet"]
    mac_limit: bool
    solver: str
    stopped: str
    search_memory_mb: float
    memory: Memory
    seconds: float
    trace: list[TracePoint]
    verifier: Verifier
    slowest_paths: NotRequired[list[SlowPath]]
    slowest_paths_requested: NotRequired[int]
    slowest_paths_stopped: NotRequired[str | None]
    #: Added when it is written (`nicsim.output.stamp`).
    nicsim_version: NotRequired[str]
    schema_version: NotRequired[int]


class SweepPoint(TypedDict):
    object: str
    target: str
    summary: Summary
    #: With `--traffic`: the profile of the program on each capture (`nicsim.xdp.profile`'s
    #: summary, without its lists of paths, packets and notes).
    profiles: NotRequired[list[dict[str, Any]]]


class Unfinished(TypedDict):
    """A point of a sweep that has no result: a worker died (`nicsim.sweep.unfinished`)."""

    point: int
    why: str


class FailedAnalysis(TypedDict):
    """An analysis of `nicsim xdp sweep` that failed (`--keep-going`): its point (1-based, in
    sweep order), object, target and one-line error."""

    point: int
    object: str
    target: str
    error: str


class SweepSummary(TypedDict):
    """`nicsim xdp sweep`'s `summary.json`."""

    model: Literal["xdp"]
    targets: list[str]
    objects: list[str]
    rate: Literal["bit", "packet"]
    points: list[SweepPoint]
    #: The captures profiled (`--traffic`), when any.
    traffic: NotRequired[list[str]]
    #: Only when some analyses failed (`--keep-going`): `point` (1-based), `object`, `target`, `error`.
    failed: NotRequired[list[FailedAnalysis]]
    #: Only when a worker died: the points it left without a result.
    unfinished: NotRequired[list[Unfinished]]
    nicsim_version: NotRequired[str]
    schema_version: NotRequired[int]


# What the core hands Python on the way (not written as such).


class PathInfo(TypedDict):
    """A path the search found satisfiable (Rust's `PathInfo`)."""

    pps: float
    bps: float
    bottleneck: Bottleneck
    min_packet_bytes: int
    insns: list[int]
    source_lines: list[str]
    cost: Cost
    cost_by_class: dict[str, ClassCost]
    lines: list[LineCost]
    mac_pps: float
    retval: NotRequired[int]
    key: NotRequired[float]


class SizeEntry(TypedDict):
    """The size the model gives a map declared with `max_entries 0`."""

    map: str
    max_entries: int


class LookupEntry(TypedDict):
    """A map entry looked up on the path."""

    map: str
    key_hex: str
    value_hex: str
    present: bool


#: Rust's `ExampleEntry` (untagged).
ExampleEntry = SizeEntry | LookupEntry


class Example(TypedDict):
    packet_hex: str
    retval: int
    entries: list[ExampleEntry]


class FoundPath(TypedDict):
    path: PathInfo
    example: Example


class Outcome(TypedDict):
    """`_core.XdpSearch.run`'s result (Rust's `nicsim_xdp::ssp::Outcome`)."""

    status: Literal["ssp", "timeout", "exhausted", "unbounded"]
    stopped: str
    solver_ended: str | None
    ssp: FoundPath | None
    bound: float | None
    trace: list[list[float]]
    slowest: list[FoundPath]
    slowest_stopped: str | None
    enumerated: int
    checked: int
    unsat: int
    pruned: int
    refused: int
    search_bytes: int
    analysis_bytes: int


class RunReport(TypedDict):
    """`_core.xdp_run`'s result (Rust's `RunReport`)."""

    retval: int
    trace: list[int]
    packet_hex: str
    insns: int
    maps: dict[str, MapSummary]
    maps_before: dict[str, MapSummary]


class Measured(TypedDict):
    name: str
    ns: float
    what: str


class Refused(TypedDict):
    """A helper micro-benchmark the running kernel's verifier refused (not timed)."""

    name: str
    why: str


class Calibration(TypedDict):
    """`_core.xdp_calibrate`'s result (Rust's `Calibration`)."""

    overhead_ns: float
    classes: list[Measured]
    refused: list[Refused]
