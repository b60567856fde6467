"""The `nicsim xdp ...` commands (the XDP throughput analyzer, seed 004)."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from nicsim import ui
from nicsim.options import (
    MAX_MEMORY_MB,
    MAX_SECONDS,
    U32_MAX,
    U64_MAX,
    ForceOpt,
    JsonOpt,
    KeepGoingOpt,
    OutOpt,
    QuietOpt,
    VerboseOpt,
    _set_json,
    deprecated_short,
    either,
    in_range,
    path_arg,
    ray_address_arg,
)
from nicsim.output import check_out_arg
from nicsim.xdp.analyze import MAX_PATHS
from nicsim.xdp.explain import SHOWN_LINES, decode_packet, slowest_path_text

xdp_app = typer.Typer(help="XDP throughput analyzer: the rate an XDP program always sustains on a target.",
                      no_args_is_help=True, rich_markup_mode="markdown")


class Rate(StrEnum):
    bit = "bit"
    packet = "packet"


class Solver(StrEnum):
    bitwuzla = "bitwuzla"
    z3 = "z3"


ObjArg = Annotated[Path, typer.Argument(metavar="OBJ", parser=path_arg, help="BPF object built by clang (`-target bpf`), e.g. "
                                        "target/xdp/calls.o.", show_default=False)]
SectionOpt = Annotated[str | None, typer.Option("--section", "-s", metavar="NAME", help="ELF section of the program "
                                                "(or a function name); needed only if the object holds several "
                                                "programs and no single one in an `xdp` section.")]
ProgramOpt = Annotated[str | None, typer.Option("--program", metavar="NAME", help="Function name of the program "
                                                "(`SECTION/NAME` if the name is not unique); with --section, the "
                                                "function in that section.")]
#: `-p` was --program's short form; it is --param in the other commands.
ProgramShortOpt = Annotated[str | None, deprecated_short("-p", "--program", "NAME")]


MapSizeOpt = Annotated[list[str] | None, typer.Option(
    "--map-size", metavar="NAME=N", help="Entries of map NAME, in place of its declared max_entries (repeat for "
    "several maps). Loaders that set a size before loading declare 0; such a map without --map-size is analysed "
    "for every size.", show_default=False)]


def _paths_opt(help_text: str) -> object:
    return typer.Option("--paths", metavar="K", callback=in_range(1, MAX_PATHS), help=help_text, show_default=False)


PathsAnalyzeOpt = Annotated[int | None, _paths_opt(
    "After the SSP, go on until the K slowest satisfiable paths are found (each with its example packet and "
    "map entries: summary.json `slowest_paths`, paths.pcap, paths.csv), for at most --timeout more. Needs "
    "--rate packet.")]
PathsValidateOpt = Annotated[int | None, _paths_opt(
    "The accuracy study: measure the example packets of the K slowest satisfiable paths on x86-jit (each "
    "from a fresh packet and map state, --path-runs runs) against their estimates; writes "
    "accuracy.csv and accuracy.png.")]


def parse_map_sizes(values: list[str] | None) -> dict[str, int]:
    """`--map-size NAME=N` values → {NAME: N}; a malformed one is a one-line error."""
    from nicsim.errors import InputError

    out: dict[str, int] = {}
    for v in values or []:
        name, eq, n = v.rpartition("=")
        if not eq or not name or not n.strip().isdigit() or not 1 <= int(n) <= U32_MAX:
            raise InputError(f"--map-size '{v}': expected NAME=N with N from 1 to {U32_MAX}")
        out[name] = int(n)
    return out


TailCallOpt = Annotated[list[str] | None, typer.Option(
    "--tail-call", metavar="MAP=INDEX:PROGRAM[,INDEX:PROGRAM...] | MAP=none", help="What prog array MAP holds "
    "when the program runs: slot INDEX holds PROGRAM (a function or section of the same object) or OBJ.o[:PROGRAM] "
    "(a program of another object, a path ending in .o, linked with its own maps; maps both objects pin by name "
    "are shared); the slots given are all it holds, in place of the object's declared `.values` (repeat for "
    "several maps). A prog array of a linked object is named OBJ.o:MAP (OBJ.o its file's name). `MAP=none`: it "
    "holds nothing (the program is the last of its chain). A tail call through a prog array whose contents are "
    "neither declared nor given makes the answer 'unbounded'.",
    show_default=False)]

DispatchOpt = Annotated[list[str] | None, typer.Option(
    "--dispatch", metavar="OBJ.o[:PROGRAM][,OBJ.o[:PROGRAM]...]", help="The program is libxdp's multi-program "
    "dispatcher (xdp-dispatcher.o): analyse it with these component programs attached, as libxdp attaches them "
    "(freplace of its stubs prog0, prog1, ...; run in libxdp's order: run priority, then name; each component's "
    "chain-call actions from its XDP_RUN_CONFIG, by default XDP_PASS only; the dispatcher's .rodata config set "
    "as libxdp sets it). Each component is linked with its own maps.",
    show_default=False)]

DispatchPrioOpt = Annotated[int | None, typer.Option(
    "--dispatch-prio", metavar="N", help="With --dispatch: every component's run priority, in place of its "
    "XDP_RUN_CONFIG's (xdp-loader's --prio).", show_default=False)]

DispatchActionsOpt = Annotated[str | None, typer.Option(
    "--dispatch-actions", metavar="ACTION[,ACTION...]", help="With --dispatch: after which actions the chain goes "
    "on past every component (XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT), in place of its "
    "XDP_RUN_CONFIG's (xdp-loader's --actions).", show_default=False)]


KconfigOpt = Annotated[Path | None, typer.Option(
    "--kconfig", metavar="FILE", parser=path_arg, help="A kernel configuration (`.config` text) for the object's "
    "`__kconfig` externs, in place of the running kernel's (`/boot/config-$(uname -r)`, `/proc/config.gz`); "
    "the same as NICSIM_KCONFIG=FILE.", show_default=False)]


BtfOpt = Annotated[Path | None, typer.Option(
    "--btf", metavar="FILE", parser=path_arg, help="The BTF the object's CO-RE relocations (field offsets, type "
    "and enum checks) are resolved against, as libbpf resolves them before loading, in place of the running "
    "kernel's (/sys/kernel/btf/vmlinux); the same as NICSIM_BTF=FILE.", show_default=False)]


def _use_loader_file(option: str, path: Path | None, env: str, what: str) -> None:
    """`option FILE`: the loader reads the file the environment variable `env` names (one command
    per process, so the CLI sets it for the rest of the process); `what` says what it is."""
    from nicsim.errors import InputError

    if path is not None:
        if not Path(path).is_file():
            raise InputError(f"{option} {path}: " + ("no such file" if not os.path.lexists(path) else
                                                    "not a regular file") + f" ({what})")
        os.environ[env] = str(Path(path).absolute())


def use_btf(btf: Path | None) -> None:
    """`--btf FILE`: NICSIM_BTF (crates/nicsim-xdp/src/core_reloc.rs)."""
    _use_loader_file("--btf", btf, "NICSIM_BTF", "a BTF file, e.g. a kernel's vmlinux BTF")


def use_kconfig(kconfig: Path | None) -> None:
    """`--kconfig FILE`: NICSIM_KCONFIG (crates/nicsim-xdp/src/kconfig.rs)."""
    _use_loader_file("--kconfig", kconfig, "NICSIM_KCONFIG", "a kernel .config")


def _object_target(opt: str, target: str) -> str:
    """A `--tail-call`/`--dispatch` target that names another object (`OBJ.o[:PROGRAM]`, the rule
    of crates/nicsim-xdp/src/link.rs `split_object`) with the object's path made absolute (the
    analysis records it; `validate` reads it from there), after checking that it is an ELF
    file; a program of the same object unchanged."""
    from nicsim.errors import InputError

    i = target.find(".o:")
    path, prog = (target[:i + 2], target[i + 2:]) if i >= 0 else (target, "")
    if i < 0 and not target.endswith(".o"):
        return target
    p = Path(path)
    if not p.exists():
        raise InputError(f"{opt}: {path}: no such file (an object, OBJ.o[:PROGRAM])")
    if not p.is_file():
        raise InputError(f"{opt}: {path}: not a regular file (an object, OBJ.o[:PROGRAM])")
    with open(p, "rb") as f:
        if f.read(4) != b"\x7fELF":
            raise InputError(f"{opt}: {path}: not an ELF object")
    if prog == ":":
        raise InputError(f"{opt}: '{target}': no program after the object's ':'")
    return str(p.absolute()) + prog


XDP_ACTIONS = ["XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT"]


def parse_dispatch(values: list[str] | None, prio: int | None = None,
                   actions: str | None = None) -> list[tuple[str, int, str]]:
    """`--dispatch OBJ.o[:PROGRAM][,...]` values → the components as entries of the tail-call list
    (map ":dispatch", their place in the option, the object), which the loader links
    (crates/nicsim-xdp/src/link.rs); `--dispatch-prio N` → (":dispatch-prio", N, ""),
    `--dispatch-actions A,B` → (":dispatch-actions", their bit mask, "")."""
    from nicsim.errors import InputError

    out: list[tuple[str, int, str]] = []
    if (prio is not None or actions is not None) and not values:
        raise InputError(f"{'--dispatch-prio' if prio is not None else '--dispatch-actions'}: "
                         "only with --dispatch (it sets the components' run config)")
    if prio is not None:
        if not 0 <= prio < U32_MAX:
            raise InputError(f"--dispatch-prio {prio}: expected a priority from 0 to {U32_MAX - 1}")
        out.append((":dispatch-prio", prio, ""))
    if actions is not None:
        mask = 0
        for a in actions.split(","):
            a = a.strip().upper()
            if a not in XDP_ACTIONS:
                raise InputError(f"--dispatch-actions '{actions}': '{a}' is none of {', '.join(XDP_ACTIONS)}")
            mask |= 1 << XDP_ACTIONS.index(a)
        out.append((":dispatch-actions", mask, ""))
    for v in values or []:
        for item in v.split(","):
            item = item.strip()
            if not item:
                raise InputError(f"--dispatch '{v}': expected OBJ.o[:PROGRAM][,OBJ.o[:PROGRAM]...]")
            if ".o:" not in item and not item.endswith(".o"):
                raise InputError(f"--dispatch '{item}': expected OBJ.o or OBJ.o:PROGRAM (an object's path ending "
                                 "in .o)")
            n = sum(1 for m, _, _ in out if m == ":dispatch")
            out.append((":dispatch", n, _object_target(f"--dispatch '{item}'", item)))
    return out


def parse_tail_calls(values: list[str] | None, dispatch: list[str] | None = None, prio: int | None = None,
                     actions: str | None = None) -> list[tuple[str, int, str]]:
    """`--tail-call MAP=INDEX:PROGRAM[,...]` values → [(MAP, INDEX, PROGRAM)], and `MAP=none` (the
    array holds nothing) → (MAP, 0, ""); PROGRAM may be OBJ.o[:PROGRAM] (another object's, its path
    made absolute); `--dispatch` components follow (`parse_dispatch`). A malformed one is a
    one-line error naming it."""
    from nicsim.errors import InputError

    out: list[tuple[str, int, str]] = []
    seen: set[tuple[str, int]] = set()
    empty: set[str] = set()
    for v in values or []:
        name, eq, rest = v.partition("=")
        bad = (f"--tail-call '{v}': expected MAP=INDEX:PROGRAM[,INDEX:PROGRAM...] with INDEX from 0 to {U32_MAX - 1} "
               "(PROGRAM: a program of the object, or OBJ.o[:PROGRAM] of another), or MAP=none")
        if not eq or not name.strip() or not rest:
            raise InputError(bad)
        if rest.strip() == "none":  # the array holds nothing (the last program of a chain)
            if name in empty or any(m == name for m, _, _ in out):
                raise InputError(f"--tail-call '{v}': '{name}' is given more than once")
            empty.add(name)
            out.append((name, 0, ""))
            continue
        if name in empty:
            raise InputError(f"--tail-call '{v}': '{name}' is given as none too")
        for item in rest.split(","):
            idx, colon, prog = item.partition(":")
            idx = idx.strip()
            if not colon or not prog.strip() or not (idx.isascii() and idx.isdigit()) or int(idx) >= U32_MAX:
                raise InputError(bad)
            if (name, int(idx)) in seen:
                raise InputError(f"--tail-call '{v}': slot {int(idx)} of '{name}' is given twice")
            seen.add((name, int(idx)))
            out.append((name, int(idx), _object_target(f"--tail-call '{v}'", prog.strip())))
    return out + parse_dispatch(dispatch, prio, actions)


@xdp_app.command("analyze")
def xdp_analyze(
    obj: ObjArg,
    out: OutOpt,
    section: SectionOpt = None,
    program: ProgramOpt = None,
    program_p: ProgramShortOpt = None,
    target: Annotated[str, typer.Option("--target", "-t", metavar="TARGET", help="Target model: `nfp` (the "
                                        "paper's Netronome constants), `x86-jit` (this machine's kernel JIT, after "
                                        "`nicsim xdp calibrate`) or a target TOML file.")] = "nfp",
    rate: Annotated[Rate, typer.Option("--rate", help="Guarantee bits/s (each path at its minimum packet size) "
                                       "or packets/s.")] = Rate.bit,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", callback=in_range(0, MAX_SECONDS),
                                           help="Seconds to search for the slowest satisfiable path; the bound so "
                                           "far is valid when it runs out.")] = 60.0,
    solver: Annotated[Solver, typer.Option("--solver", help="SMT solver. Bitwuzla is the default: it was the "
                                           "faster on the suite (BENCHMARKS.md).")] = Solver.bitwuzla,
    loop_bound: Annotated[int | None, typer.Option("--loop-bound", metavar="N", callback=in_range(0, U32_MAX),
                                                   help="Iterations for loops whose bound the code does not make "
                                                   "evident, and callback calls for bpf_loop calls whose nr_loops "
                                                   "is not (too small a bound is unsound).")] = None,
    memory_mb: Annotated[int, typer.Option("--memory-mb", metavar="MB", callback=in_range(16, MAX_MEMORY_MB),
                                           help="Memory for the whole analysis, half for the graph and search, "
                                           "half for the solver; the search stops there with the bound so far "
                                           "(valid), a graph that does not fit is an error.")] = 2048,
    mac_limit: Annotated[bool, typer.Option("--mac-limit/--no-mac-limit", help="Include the target's MAC packet "
                                            "limit; `--no-mac-limit` gives the cores' and DRAM's rate alone, as the "
                                            "paper's evaluation reports it.")] = True,
    map_size: MapSizeOpt = None,
    tail_call: TailCallOpt = None,
    dispatch: DispatchOpt = None,
    dispatch_prio: DispatchPrioOpt = None,
    dispatch_actions: DispatchActionsOpt = None,
    paths: PathsAnalyzeOpt = None,
    kconfig: KconfigOpt = None,
    btf: BtfOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Guarantee the packet or bit rate an XDP program sustains for every packet.

    Loads the object (its program is found as libbpf and iproute2 find them: any executable
    section, or a global function in .text; --section or --program chooses one), inlines bpf-to-bpf
    calls, unrolls loops (finding their bounds where the
    code makes them evident), costs every edge on the target and reports the naive bound (the
    slowest path, feasible or not) at once. Then checks paths from the slowest on with an SMT
    solver until one is satisfiable: the slowest satisfiable path (SSP), whose rate is the
    guarantee, with a packet that takes it. Prints the path's costliest source lines (with
    their cycles, the bottleneck and the helper calls) and the packet decoded layer by layer.
    Writes OUT/summary.json, OUT/example.pcap, OUT/slowest_path.txt (every line of the path
    with its cost), the bound over time and the path's cost (CSV tables and plots).
    """
    from nicsim.xdp import analyze

    program = either(program, program_p, "--program", "-p")
    unit = "Gbit/s" if rate == Rate.bit else "Mpps"
    scale = 1e9 if rate == Rate.bit else 1e6
    key = "bps" if rate == Rate.bit else "pps"
    tail_calls = parse_tail_calls(tail_call, dispatch, dispatch_prio, dispatch_actions)
    use_kconfig(kconfig)
    use_btf(btf)
    with ui.Progress("searching", transient=True) as bar:
        s = analyze(obj, out, target=target, section=section, program=program, loop_bound=loop_bound, rate=rate.value,
                    timeout_s=timeout, solver=solver.value, memory_mb=memory_mb, mac_limit=mac_limit,
                    progress=lambda e: bar.update(detail=f"bound {e[key] / scale:,.3f} {unit}; paths: "
                                                  f"{e['checked']:,} checked, {e['infeasible']:,} infeasible, "
                                                  f"{e['pruned']:,} pruned"), force=force,
                    map_sizes=parse_map_sizes(map_size), tail_calls=tail_calls, paths=paths)
    for w in s.get("warnings", []):
        ui.warn(w)

    def show(console: Console) -> None:
        g, n = s["guarantee"], s["naive"]
        if g["status"] == "unbounded":
            console.print(f"{s['object']['program']} on {s['target']}: unbounded (tail calls through "
                          f"{', '.join(s['unbounded'])}, whose programs are not known): no rate is guaranteed; "
                          f"give what {'they hold' if len(s['unbounded']) > 1 else 'it holds'} with --tail-call "
                          "MAP=INDEX:PROGRAM or --tail-call MAP=none (PROGRAM: of this object, or OBJ.o[:PROGRAM] of another)")
            return
        t = Table(title=f"{s['object']['program']} on {s['target']} ({rate.value} rate)", show_header=False)
        t.add_column(style="bold")
        t.add_column(justify="right")
        t.add_row("naive bound", f"{n[key] / scale:,.3f} {unit}")
        why = "" if s["stopped"] in ("ssp", g["status"]) else f", {s['stopped']}"
        t.add_row("guarantee", f"{g[key] / scale:,.3f} {unit}  ({g['status']}{why})")
        v = s.get("verifier") or {}
        if v.get("loads") is False:
            t.add_row(Text("REJECTED", style="red"), Text("the kernel would reject this program"
                                                          + (f" ({v['line']})" if v.get("line") else ""), style="red"))
        if n[key] > 0:
            t.add_row("improvement", f"{(g[key] / n[key] - 1) * 100:+.1f} %")
        t.add_row("bottleneck", g["bottleneck"])
        t.add_row("min packet", f"{g['min_packet_bytes']} B")
        if s["path"].get("xdp_action"):
            t.add_row("path", f"{len(s['path']['insns'])} insns → {s['path']['xdp_action']}")
        in_graph = "at least 2^128" if int(s["graph"]["paths"]) == 2**128 - 1 else f"{int(s['graph']['paths']):,}"
        t.add_row("paths", f"{s['paths_checked']:,} checked, {s['paths_unsat']:,} infeasible, "
                  f"{s['paths_pruned']:,} pruned ({in_graph} in the graph)")
        for lp in s["graph"]["loops"]:
            t.add_row("loop", f"insn {lp['insn']} {lp['line'] or ''}: bound {lp['bound']}"
                      + ("" if lp["evident"] else " (--loop-bound)")
                      + (" (bpf_loop summarised: its callback's slowest path counted that many times"
                         + (", the kernel's cap BPF_MAX_LOOPS)" if lp["bound"] == 1 << 23 else ")")
                         if lp.get("summary") else ""))
        if "slowest_paths" in s:
            t.add_row("slowest paths", f"{len(s['slowest_paths'])} of {s['slowest_paths_requested']} found "
                      f"({s['slowest_paths_stopped']}): " + ", ".join(f"{p['pps'] / 1e6:,.3f}"
                                                                       for p in s["slowest_paths"][:8])
                      + (" …" if len(s["slowest_paths"]) > 8 else "") + " Mpps")
        t.add_row("time", f"{s['seconds']:.3f} s")
        console.print(t)
        console.print(slowest_path_text(s, SHOWN_LINES), highlight=False, soft_wrap=True, markup=False, end="")
        if s.get("example_packet_hex"):
            console.print("the example packet" + (" (example.pcap)" if out is not None else "") + ", decoded:",
                          highlight=False)
            for line in decode_packet(bytes.fromhex(s["example_packet_hex"])):
                console.print(f"  {line}", highlight=False, soft_wrap=True, markup=False)

    ui.result(s, show)
    if s["stopped"] == "memory":
        ui.note(f"the search reached its memory budget (--memory-mb {memory_mb}) before the slowest path, so the "
                "guarantee is the bound proven so far; a smaller --loop-bound or a larger --memory-mb may let it "
                "finish")
    ui.wrote(out)


@xdp_app.command("sweep")
def xdp_sweep(
    objs: Annotated[list[Path], typer.Argument(metavar="OBJ...", parser=path_arg, help="BPF objects built by clang.",
                                               show_default=False)],
    out: OutOpt,
    target: Annotated[str, typer.Option("--target", "-t", metavar="T1,T2,...", help="Targets, comma-separated "
                                        "(`nfp`, `x86-jit`, target TOML files).")] = "nfp",
    section: SectionOpt = None,
    program: ProgramOpt = None,
    program_p: ProgramShortOpt = None,
    rate: Annotated[Rate, typer.Option("--rate", help="Guarantee bits/s or packets/s.")] = Rate.bit,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", callback=in_range(0, MAX_SECONDS),
                                           help="Seconds each analysis may search.")] = 60.0,
    solver: Annotated[Solver, typer.Option("--solver", help="SMT solver.")] = Solver.bitwuzla,
    memory_mb: Annotated[int, typer.Option("--memory-mb", metavar="MB", callback=in_range(16, MAX_MEMORY_MB),
                                           help="Memory for each analysis (see `nicsim xdp analyze`).")] = 2048,
    mac_limit: Annotated[bool, typer.Option("--mac-limit/--no-mac-limit", help="Include the targets' MAC "
                                            "packet limit.")] = True,
    executor: Annotated[str, typer.Option("--executor", "-x", metavar="local|ray", help="Where the analyses "
                                          "run (see `nicsim sweep`).")] = "local",
    workers: Annotated[int | None, typer.Option("--workers", "-j", metavar="N", callback=in_range(1, 4096),
                                                help="Analyses at once (default: one per CPU).",
                                                show_default=False)] = None,
    ray_address: Annotated[str | None, typer.Option("--ray-address", metavar="ADDR", parser=ray_address_arg,
                                                    help="Run on this Ray "
                                                    "cluster (implies `--executor ray`).")] = None,
    tail_call: TailCallOpt = None,
    dispatch: DispatchOpt = None,
    dispatch_prio: DispatchPrioOpt = None,
    dispatch_actions: DispatchActionsOpt = None,
    traffic: Annotated[list[Path] | None, typer.Option("--traffic", metavar="CAPTURE", parser=path_arg,
                                                       help="Also profile each analysed program on this capture "
                                                       "(repeat for several), against its guarantee, as `nicsim "
                                                       "xdp profile` does: profiles.csv.", show_default=False)] = None,
    keep_going: KeepGoingOpt = True,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> int:
    """Analyse several XDP objects on several targets, on the sweep pool.

    Every object on every target, as `nicsim xdp analyze` would (each with --timeout). Writes
    OUT/summary.json (each analysis's summary under `points`), sweep.csv and sweep.parquet (a
    row per analysis: naive bound, guarantee, status, bottleneck) and sweep.png. An object the
    analyzer refuses is listed with its error and the others are written (exit code 1; 2 when
    every analysis failed); `--fail-fast` stops at the first.
    """
    from nicsim.sweep import report_failed
    from nicsim.xdp.analyze import analyze_many, object_labels

    program = either(program, program_p, "--program", "-p")
    targets = [t.strip() for t in target.split(",") if t.strip()]
    if not targets:
        raise typer.BadParameter("no target given", param_hint="--target")
    summary, rows = analyze_many(objs, targets, out, executor="ray" if ray_address else executor, workers=workers,
                                 ray_address=ray_address, force=force, rate=rate.value, timeout_s=timeout,
                                 solver=solver.value, memory_mb=memory_mb, mac_limit=mac_limit, section=section,
                                 program=program,
                                 tail_calls=parse_tail_calls(tail_call, dispatch, dispatch_prio, dispatch_actions),
                                 keep_going=keep_going, traffic=traffic or ())
    failed = summary.get("failed", [])
    labels = object_labels(objs)

    def show(console: Console) -> None:
        unit, key = ("Gbit/s", "gbps") if rate == Rate.bit else ("Mpps", "mpps")
        t = Table(title=f"{len(rows) + len(failed)} analyses" + (f", {len(failed)} failed" if failed else ""))
        for c in ("object", "program", "target", f"naive {unit}", f"guarantee {unit}", "status", "bottleneck", "s"):
            t.add_column(c, justify="left" if c in ("object", "program", "target", "status", "bottleneck") else "right")

        def num(x: float | None) -> str:
            return "-" if x is None else f"{x:.3f}"

        for r in rows:
            t.add_row(r["name"], r["program"], r["target"], num(r[f"naive_{key}"]), num(r[f"guarantee_{key}"]),
                      r["status"], r["bottleneck"] or "-", f"{r['seconds']:.2f}")
        for f in failed:
            t.add_row(labels[f["object"]], "-", f["target"], "-", "-", Text(f"FAILED (point {f['point']})", style="red"),
                      "-", "-")
        console.print(t)  # each failure's error follows on standard error (report_failed)
        profiles = [(p, r) for p in summary["points"] for r in p.get("profiles", [])]
        if profiles:
            pt = Table(title=f"{len(profiles)} profiles")
            for c in ("object", "target", "capture", "packets", "paths", "sustained Mpps", "guarantee Mpps",
                      "p99 ns", "max ns", "check"):
                pt.add_column(c, justify="left" if c in ("object", "target", "capture", "check") else "right")
            for p, r in profiles:
                pt.add_row(labels[p["object"]], p["target"], Path(r["capture"]).name, f"{r['packets']:,}",
                           f"{r['distinct_paths']:,}", num(r["sustained_mpps"]), num(r["guarantee_mpps"]),
                           num(r["p99_ns"]), num(r["max_ns"]),
                           Text("ok", style="green") if r["check_ok"] else Text("SOUNDNESS BUG", style="bold red"))
            console.print(pt)

    ui.result(summary, show)
    bad = [(p, r) for p in summary["points"] for r in p.get("profiles", []) if not r["check_ok"]]
    for p, r in bad:
        f = r["check_first"] or {}
        ui.warn(f"{p['object']} on {p['target']}: packet {f.get('index')} of {r['capture']} is {f.get('what')} "
                f"({r['costlier_than_guarantee'] + r['no_path_in_graph']:,} such packets)", label="SOUNDNESS BUG:")
    for p in summary["points"]:
        if p["summary"]["stopped"] == "error":  # the solver failed: the bound so far stands
            ui.warn(f"{p['object']} on {p['target']}: program {p['summary']['object']['program']}: the solver failed "
                    f"on {p['summary']['memory']['solver_ended']}; its guarantee is the bound reached before")
    ui.wrote(out)
    code = report_failed(failed, len(rows) + len(failed), out, lambda f: f"{f['object']} on {f['target']}")
    return max(code, 1 if bad else 0)


@xdp_app.command("profile")
def xdp_profile(
    obj: ObjArg,
    traffic: Annotated[Path, typer.Option("--traffic", metavar="CAPTURE", parser=path_arg, help="The packets: a pcap "
                                          "or pcapng capture of Ethernet frames, run in order.",
                                          show_default=False)],
    out: OutOpt,
    target: Annotated[str, typer.Option("--target", "-t", metavar="TARGET", help="Target model: `nfp`, `x86-jit` "
                                        "(after `nicsim xdp calibrate`) or a target TOML file.")] = "nfp",
    maps: Annotated[list[str] | None, typer.Option("--maps", metavar="FILE|NAME=FILE", help="Map entries before "
                                                   "the first packet: a JSON file of maps ({name: {\"entries\": "
                                                   "{key_hex: value_hex}}}, an analysis's summary.json) or, as "
                                                   "NAME=FILE, the output of `bpftool map dump -j` for map NAME "
                                                   "(repeat for several). Default: empty maps.",
                                                   show_default=False)] = None,
    analysis: Annotated[Path | None, typer.Option("--analysis", "-a", metavar="DIR", parser=path_arg,
                                                  help="Folder of `nicsim xdp analyze` for OBJ on the same target: "
                                                  "its guarantee is checked against every packet. Default: a "
                                                  "packet-rate analysis runs here (for at most --timeout).",
                                                  show_default=False)] = None,
    packets: Annotated[str | None, typer.Option("--packets", metavar="parquet", help="Also write "
                                                "packets.parquet, one row per packet.", show_default=False)] = None,
    kernel: Annotated[bool, typer.Option("--kernel", help="x86-jit: run the same packets through "
                                         "BPF_PROG_TEST_RUN one by one (map state carried) and put the measured ns "
                                         "beside each path's estimate. Needs root.")] = False,
    section: SectionOpt = None,
    program: ProgramOpt = None,
    loop_bound: Annotated[int | None, typer.Option("--loop-bound", metavar="N", callback=in_range(0, U32_MAX),
                                                   help="As for `nicsim xdp analyze`.")] = None,
    mac_limit: Annotated[bool, typer.Option("--mac-limit/--no-mac-limit", help="Include the target's MAC packet "
                                            "limit (an --analysis gives its own).")] = True,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", callback=in_range(0, MAX_SECONDS),
                                           help="Seconds for the analysis run here (no --analysis).")] = 60.0,
    map_size: MapSizeOpt = None,
    tail_call: TailCallOpt = None,
    dispatch: DispatchOpt = None,
    dispatch_prio: DispatchPrioOpt = None,
    dispatch_actions: DispatchActionsOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> int:
    """Profile an XDP program on a capture: the rate it sustains on this traffic, beside its guarantee.

    Every packet of the capture runs through nicsim's interpreter in order, with the map state
    carried from packet to packet (counters grow, entries appear), from empty maps or --maps.
    Each packet's path is costed on the target by the analysis's own cost function. Reports the
    rate the target sustains on this traffic (cores, DRAM engine, MAC), the distribution of the
    per-packet cost, the share of each action and path and the costliest packets, and checks
    every packet against the guarantee: a packet costlier than it is a soundness bug of the
    analyzer (exit code 1). Writes summary.json, paths.csv, actions.csv, costliest_packets.csv
    and .pcap, maps_after.json and profile.png.
    """
    from nicsim.xdp.profile import profile

    with ui.Progress("profiling", transient=True) as bar:
        s = profile(obj, traffic, out, target=target, maps=maps, analysis=analysis, packets_table=packets, kernel=kernel,
                    section=section, program=program, loop_bound=loop_bound, map_sizes=parse_map_sizes(map_size),
                    tail_calls=parse_tail_calls(tail_call, dispatch, dispatch_prio, dispatch_actions),
                    mac_limit=mac_limit, timeout_s=timeout, force=force, progress=lambda what: bar.update(detail=what))
    for w in s.get("warnings", []):
        ui.warn(w)

    def show(console: Console) -> None:
        n = s["packets"]
        t = Table(title=f"{s['object']['program']} on {s['target']}: {s['capture']}", show_header=False)
        t.add_column(style="bold")
        t.add_column(justify="right")
        su, g = s["sustained"], s["guarantee"]
        t.add_row("packets", f"{n['total']:,} ({n['costed']:,} costed, {s['distinct_paths']:,} distinct paths)")
        t.add_row("on this traffic", "no rate: no packet took a costed path" if su["pps"] is None else
                  f"{su['pps'] / 1e6:,.3f} Mpps, {su['bps'] / 1e9:,.3f} Gbit/s "
                  f"({su['bottleneck']}; mean packet {su['mean_packet_bytes']:,.1f} B)")
        if g.get("pps"):
            t.add_row("guarantee", f"{g['pps'] / 1e6:,.3f} Mpps ({g['status']}; {g['source']})")
        c = s["cost_ns"]
        if c["mean"] is not None:
            t.add_row("ns per packet", f"mean {c['mean']:,.1f}, p50 {c['p50']:,.1f}, p99 {c['p99']:,.1f}, "
                      f"max {c['max']:,.1f} (guarantee {g['ns'] or float('nan'):,.1f}, naive "
                      f"{s['naive']['ns']:,.1f})")
        t.add_row("actions", ", ".join(f"{a['xdp_action']} {a['share']:.1%}" for a in s["actions"][:6]))
        ck = s["check"]
        t.add_row("check", Text("every packet within the guarantee", style="green") if ck["ok"] and ck["checked"]
                  else Text("not checked (no guarantee)") if ck["ok"] else
                  Text(f"SOUNDNESS BUG: {ck['costlier_than_guarantee']:,} packets costlier than the guarantee, "
                       f"{ck['no_path_in_graph']:,} on no path of the graph", style="bold red"))
        console.print(t)
        pt = Table(title="the most frequent paths")
        for col in ("path", "packets", "share", "action", "insns", "ns", "bottleneck"):
            pt.add_column(col, justify="left" if col in ("action", "bottleneck") else "right")
        for r in s["paths"][:10]:
            pt.add_row(str(r["path"]), f"{r['packets']:,}", f"{r['share']:.1%}", r["xdp_action"], str(r["insns"]),
                       f"{r['ns']:,.1f}", r["bottleneck"])
        console.print(pt)
        if "kernel" in s:
            kn, e = s["kernel"], s["kernel"]["errors"]
            console.print(f"kernel: {kn['packets']:,} packets, median {kn['median_ns'] or 0:,.1f} ns; per path, measured "
                          f"against estimated: median {e.get('median_pct') or 0:+.1f} %, from {e.get('min_pct') or 0:+.1f} "
                          f"to {e.get('max_pct') or 0:+.1f} %"
                          + (f"; {kn['action_mismatches']:,} packets with another action in the kernel"
                             if kn["action_mismatches"] else ""), highlight=False)
        if s["costliest_packets"]:
            k = s["costliest_packets"][0]
            console.print(f"costliest packet: index {k['index']} ({k['ns']:,.1f} ns, path {k['path']})"
                          + (" — costliest_packets.pcap" if out is not None else ""), highlight=False)

    ui.result(s, show)
    ck = s["check"]
    if ck.get("first"):
        f = ck["first"]
        ui.warn(f"packet {f['index']} of {traffic} (captured at {f['ts_ns']} ns, {f['bytes']} B) is "
                 + (f"costlier than the guarantee: {f['ns']:,.1f} ns per packet against {ck['guarantee_ns']:,.1f} "
                    f"(path {f['path']})" if f["what"] == "costlier than the guarantee" else
                    "on no path of the analysis's graph (the graph left out an edge the packet takes)")
                 + f"; {ck['costlier_than_guarantee'] + ck['no_path_in_graph']:,} such packets; the guarantee "
                 f"({ck['guarantee_source']}) is wrong: please report it", label="SOUNDNESS BUG:")
    if ck.get("kernel_action_mismatches"):
        ui.warn(f"{ck['kernel_action_mismatches']:,} packets return another action in the kernel than in the "
                f"interpreter (first: packet {s['kernel']['first_mismatch']})", label="MISMATCH:")
    ui.wrote(out)
    return 0 if ck["ok"] else 1


@xdp_app.command("calibrate")
def xdp_calibrate(
    out: Annotated[str | None, typer.Option("--out", "-o", metavar="FILE", help="Target file to write (default: "
                                            "where `--target x86-jit` reads it, ~/.cache/nicsim/x86-jit.toml or "
                                            "$NICSIM_X86_JIT).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace --out even if `nicsim xdp calibrate` did not "
                                        "write it.")] = False,
    _json: Annotated[bool, typer.Option("--json", help="Print the measurements as JSON on stdout: the target "
                                        "file's path and each micro-benchmark's class, ns and what it runs.",
                                        callback=_set_json, expose_value=False, is_eager=True)] = False,
    _quiet: QuietOpt = False,
) -> None:
    """Measure this machine's kernel JIT and write the `x86-jit` target.

    Runs generated micro-benchmarks with BPF_PROG_TEST_RUN, one per BPF instruction class and
    helper (as the paper's section 4 measures the NFP), and writes their costs in nanoseconds
    as a target file for `nicsim xdp analyze --target x86-jit`. Needs the privileges to load
    BPF programs (root). Takes about 40 s.
    """
    import os

    from nicsim.xdp.calibrate import calibrate
    from nicsim.xdp.validate import load_warning, machine_load

    before = os.getloadavg()[0]
    measured: dict = {}
    with ui.Progress("calibrating", transient=True) as bar:
        path = calibrate(out, progress=lambda name: bar.update(detail=name), force=force, measured=measured)
    if warning := load_warning(machine_load(before, os.getloadavg()[0]), "calibrating"):
        ui.warn(warning)
    for r in measured.get("refused", []):
        ui.warn(f"this kernel's verifier refuses bpf_{r['name'].split('.')[0]} to XDP programs, so it was not timed "
                f"({r['why']}); the target file says how it is costed, if at all")
    if ui.state.json:
        ui.result({"path": str(path), "calibration": measured}, lambda _console: None)
    ui.note(f"wrote {path}")


@xdp_app.command("helpers")
def xdp_helpers(
    target: Annotated[list[str] | None, typer.Option("--target", "-t", metavar="TARGET", help="Target to list the "
                                                      "costs of: `nfp`, `x86-jit` or a target file (repeat for "
                                                      "several; default: nfp, and x86-jit if calibrated here).",
                                                      show_default=False)] = None,
    _json: JsonOpt = False, _quiet: QuietOpt = False,
) -> None:
    """List the BPF helpers and map types the analyzer supports, with their costs per target.

    A helper is supported when the analyzer models what it does and the target gives it a cost;
    `bpf_map_lookup_elem (hash)` is the helper on a map of that type; the XDP metadata kfuncs are
    listed apart. Then every helper an XDP program may call, with what the interpreter and the
    symbolic executor do with it and its status per target (`cost`; `refused`; `no cost`, with the
    target's rule in `--json`), and every kfunc the kernel gives XDP programs with its status per
    target (refused ones with their reason in `--json`). Any other helper, map type or kfunc in a
    program is an error that names it. Each cost's source is in `--json` and in docs/xdp.md.
    """
    from nicsim.xdp.helpers import supported

    s = supported(target)

    def show(console: Console) -> None:
        table = Table(title="Helpers the analyzer supports, and their costs")
        table.add_column("helper")
        table.add_column("map type")
        for t in s["targets"]:
            table.add_column(t)
        for r in s["helpers"]:
            table.add_row(r["helper"], r["map_type"] or "", *(r["costs"].get(t, {}).get("text", "-")
                                                              for t in s["targets"]))
        console.print(table)
        types = Table(title="Map types the analyzer models")
        types.add_column("map type")
        types.add_column("what a program can do")
        for name, what in s["map_types"].items():
            types.add_row(name, what)
        console.print(types)
        every = Table(title="Every helper an XDP program may call (Linux 6.1 and later), and its status")
        every.add_column("helper")
        every.add_column("family")
        every.add_column("interpreter")
        every.add_column("symbolic")
        for t in s["targets"]:
            every.add_column(t)
        for r in s["xdp_helpers"]:
            every.add_row(r["helper"] + ("" if r["linux_6_1"] else " (later)"), r["family"],
                          "yes" if r["interpreter"] else "no", r["symbolic"],
                          *(r["status"][t].split(":")[0] for t in s["targets"]))
        console.print(every)
        kf = Table(title="kfuncs the analyzer models (any other is refused, naming it)")
        kf.add_column("kfunc")
        kf.add_column("gives")
        for t in s["targets"]:
            kf.add_column(t)
        for r in s["kfuncs"]:
            kf.add_row(r["kfunc"], r["what"], *(r["costs"].get(t, {}).get("text", "-") for t in s["targets"]))
        console.print(kf)
        every_kf = Table(title="Every kfunc an XDP program may call (the kernel's list), and its status")
        every_kf.add_column("kfunc")
        every_kf.add_column("family")
        every_kf.add_column("running kernel")
        for t in s["targets"]:
            every_kf.add_column(t)
        for r in s["xdp_kfuncs"]:
            every_kf.add_row(r["kfunc"], r["family"], r["running_kernel"] or "?",
                             *(r["status"][t].split(":")[0] for t in s["targets"]))
        console.print(every_kf)

    ui.result(s, show)


@xdp_app.command("validate")
def xdp_validate(
    obj: Annotated[Path, typer.Argument(metavar="OBJ", parser=path_arg, help="The BPF object that was analysed.",
                                        show_default=False)],
    analysis: Annotated[Path, typer.Option("--analysis", "-a", metavar="DIR", parser=path_arg, help="Folder of `nicsim xdp analyze` "
                                           "for OBJ.", show_default=False)],
    out: Annotated[Path | None, typer.Option("--out", "-o", metavar="DIR", help="Folder for validation.json "
                                             "(default: the analysis folder).", parser=check_out_arg,
                                             show_default=False)] = None,
    packets: Annotated[int, typer.Option("--packets", metavar="N", callback=in_range(0, 1_000_000),
                                         help="Random packets, and as many mutated ones.")] = 1000,
    runs: Annotated[int, typer.Option("--runs", metavar="N", callback=in_range(1, 10_000),
                                      help="Kernel runs per packet; its time is their median.")] = 15,
    seed: Annotated[int, typer.Option("--seed", metavar="N", callback=in_range(0, U64_MAX),
                                      help="Seed of the random and mutated packets.")] = 1,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", callback=in_range(0, MAX_SECONDS),
                                           help="Seconds for the x86-jit analysis.")] = 60.0,
    section: Annotated[str | None, typer.Option("--section", "-s", metavar="NAME", help="ELF section of the program "
                                                "(default: the analysis's; it must be the program analysed).")] = None,
    program: Annotated[str | None, typer.Option("--program", metavar="NAME", help="Function name of the "
                                                "program (default: the analysis's).")] = None,
    program_p: ProgramShortOpt = None,
    paths: PathsValidateOpt = None,
    path_runs: Annotated[int, typer.Option("--path-runs", metavar="N", callback=in_range(1, 100_000),
                                           help="Kernel runs per path with --paths, each from a fresh packet and "
                                           "map state.")] = 201,
    kconfig: Annotated[Path | None, typer.Option(
        "--kconfig", metavar="FILE", parser=path_arg, help="The kernel configuration for the object's `__kconfig` "
        "externs (default: the one the analysis took, `object.kconfig`, else the running kernel's).",
        show_default=False)] = None,
    btf: Annotated[Path | None, typer.Option(
        "--btf", metavar="FILE", parser=path_arg, help="The BTF for the object's CO-RE relocations (default: the one "
        "the analysis took, `object.btf`).", show_default=False)] = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> int:
    """Check an analysis against the interpreter and the running kernel.

    Runs the example packet in nicsim's eBPF interpreter (it must take the reported path), loads
    OBJ into the kernel with the analysis's map entries and runs the packet with
    BPF_PROG_TEST_RUN (it must return the reported action), then times the example and
    `--packets` random and mutated packets in the kernel and compares them with the x86-jit
    guarantee (a packet-rate analysis on the calibrated target): none may be more than 5 %
    slower. Writes validation.json, timing.csv and a plot of the times against the guarantee.
    With --paths K, also the accuracy study (the paper's section 6.1): the K slowest satisfiable
    paths on x86-jit, each path's estimate against its measured time (accuracy.csv and .png, the
    error distribution in validation.json); a path the kernel does not take as the interpreter
    does is reported as a mismatch. Exit code 1 if a check fails. Needs root for the kernel.
    """
    from nicsim.xdp.validate import analysis_btf, analysis_kconfig, load_warning, validate

    program = either(program, program_p, "--program", "-p")
    if kconfig is None:  # the configuration the analysis took (a file it names), unless NICSIM_KCONFIG says
        kconfig_used = analysis_kconfig(analysis)  # None for a summary validate() then refuses
        if kconfig_used is not None and not os.environ.get("NICSIM_KCONFIG"):
            kconfig = Path(kconfig_used)
    use_kconfig(kconfig)
    if btf is None and "NICSIM_BTF" not in os.environ:  # the BTF the analysis's relocations took
        btf_used = analysis_btf(analysis)
        if btf_used is not None:
            btf = Path(btf_used)
    use_btf(btf)
    with ui.Progress("validating", transient=True) as bar:
        r = validate(obj, analysis, out, packets=packets, runs=runs, seed=seed, timeout_s=timeout,
                     progress=lambda what: bar.update(detail=what), force=force, section=section, program=program,
                     paths=paths, path_runs=path_runs)

    def show(console: Console) -> None:
        t = Table(title=f"validation of {obj.name}", show_header=False)
        t.add_column(style="bold")
        t.add_column()
        for name, ok in r["checks"].items():
            t.add_row(Text("pass", style="green") if ok else Text("FAIL", style="red"), name)
        tm = r["timing"]
        if "example_ns" in tm:
            t.add_row("example", f"{tm['example_ns']:.0f} ns/packet")
        if tm["slowest"] is None:
            t.add_row("packets", "none timed (--packets 0)")
        else:
            t.add_row("slowest", f"{tm['slowest']['ns']:.0f} ns/packet ({tm['slowest']['kind']}, "
                      f"{tm['slowest']['bytes']} B)")
        if tm.get("guarantee_ns") and tm["slowest"] is None:
            t.add_row("x86-jit guarantee", f"{tm['guarantee_ns']:.0f} ns/packet ({tm['guarantee_status']})")
        elif tm.get("guarantee_ns"):
            t.add_row("x86-jit guarantee", f"{tm['guarantee_ns']:.0f} ns/packet ({tm['guarantee_status']}); "
                      f"slowest is {tm['slowest_vs_guarantee']:.0%} of it")
        else:
            t.add_row("x86-jit guarantee", tm["note"])
        console.print(t)
        if "paths" in r:
            show_paths(console, r["paths"], f"the {r['paths']['found']} slowest satisfiable paths on x86-jit "
                       f"({r['paths']['runs_per_path']} fresh runs each)")

    ui.result(r, show)
    if warning := load_warning(r["load"], "timing"):
        ui.warn(warning)
    ui.wrote(out or analysis)
    return 0 if r["ok"] else 1


def show_paths(console: Console, study: dict, title: str) -> None:
    """The accuracy study's table (a row per path) and its error distribution."""
    t = Table(title=title)
    named = any("program" in p for p in study["rows"])
    if named:
        t.add_column("program")
    for c in ("rank", "estimate ns", "measured ns", "fresh ns", "stream ns", "error", "bottleneck", "action", "bytes",
              "fresh", "status"):
        t.add_column(c, justify="left" if c in ("bottleneck", "action", "status", "fresh") else "right")
    for p in study["rows"]:
        fresh = "+".join(w for w, k in (("packet", "writes_packet"), ("maps", "writes_maps")) if p.get(k)) or "-"
        measured = "" if p["measured_ns"] is None else f"{p['measured_ns']:.1f}"
        def ns(k: str, p: dict = p) -> str:
            return "" if p.get(k) is None else f"{p[k]:.1f}"
        stream = ns("stream_ns") + (f" ({p['stream_packets']})" if p.get("stream_ns") is not None else "")
        t.add_row(*([p["program"]] if named else []), str(p["rank"]), f"{p['estimate_ns']:.1f}", measured,
                  ns("fresh_ns"), stream,
                  "" if p["error_pct"] is None else f"{p['error_pct']:+.1f} %", p["bottleneck"], p["xdp_action"],
                  str(p["packet_bytes"]), fresh, p["status"] if p["status"] == "ok" else Text(p["status"], style="red"))
    console.print(t)
    e = study["errors"]
    oh = study.get("overhead")
    if oh:
        console.print(f"per-packet overhead (the empty program): {oh['target_ns']:.1f} ns in the x86-jit target "
                      f"(calibrated), {oh['measured_ns']:.1f} ns measured now as the paths are")
    if e.get("min_pct") is None:
        console.print(f"no path measured on its own path ({e['mismatched']} mismatched)")
        return
    console.print(f"error over {e['paths']} paths: median {e['median_pct']:+.1f} %, at most {e['max_over_pct']:.1f} % "
                  f"over, {e['max_under_pct']:.1f} % under; within ±5 %: {e['within_5_pct']:.0%}, ±10 %: "
                  f"{e['within_10_pct']:.0%}" + (f"; {e['mismatched']} mismatched" if e["mismatched"] else "")
                  + (f"; {e['beaten']} BEATEN" if e.get("beaten") else ""))
