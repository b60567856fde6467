"""`nicsim reproduce`: one command per seed paper, each in `nicsim/reproduce/<paper>.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from nicsim import ui
from nicsim.options import (
    MAX_SECONDS,
    MAX_SYNTH_FLOWS,
    U64_MAX,
    Executor,
    ExecutorOpt,
    ForceOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    VerboseOpt,
    WorkersOpt,
    in_range,
    path_arg,
)

reproduce_app = typer.Typer(help="Reproduce a seed paper's results with one command.", no_args_is_help=True,
                            rich_markup_mode="markdown")


def _reproduced(out: Path, summary: dict[str, Any]) -> None:
    ui.result(summary)  # the comparison tables were printed as the experiments ran
    ui.wrote(out)


@reproduce_app.command("flexpipe")
def reproduce_flexpipe(
    out: OutOpt,
    quick: Annotated[bool, typer.Option("--quick", help="Fewer packets and points: a fast smoke run.")] = False,
    qos: Annotated[bool, typer.Option("--qos", help="Instead of the paper's figures, the experiment beyond the "
                                      "paper: priority classes in FlexPipe (strict, weighted) and PANIC's PIFO, "
                                      "per class, from 40 to 128 Gbit/s.")] = False,
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """FlexPipe (Zyla et al., 2023): Table II, Fig. 3 (throughput), Fig. 4 (latency per flow and
    size) and Fig. 5 (recirculation), each next to the paper's numbers. With --qos, priority
    classes instead (the paper's future work; docs/reproduce-flexpipe.md)."""
    from nicsim.reproduce import flexpipe

    if qos:
        from nicsim.reproduce import flexpipe_qos

        _reproduced(out, flexpipe_qos.main(out, flexpipe.PAPER_CONFIG, quick=quick, executor=executor.value,
                                           workers=workers, force=force))
        return
    _reproduced(out, flexpipe.main(out, quick=quick, executor=executor.value, workers=workers, force=force))


@reproduce_app.command("xdp")
def reproduce_xdp(
    out: OutOpt,
    quick: Annotated[bool, typer.Option("--quick", help="Path explosion searched for 5 s instead of 60 s, the "
                                        "accuracy study on 3 paths per program and 51 runs each instead of 10 and "
                                        "201 (with --paper-objects: only Table 2's objects, Fig. 8 at 1, 2, 5, 10 "
                                        "and 20 stages).")] = False,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", callback=in_range(0, MAX_SECONDS),
                                           help="Seconds each analysis may search for its SSP (path explosion: "
                                           "60 s, 5 s with --quick, never more than this).")] = 60.0,
    nfp_only: Annotated[bool, typer.Option("--nfp-only", help="Leave out the x86-jit analyses (and the "
                                           "calibration they need on a new machine).")] = False,
    paper_objects: Annotated[Path | None, typer.Option(
        "--paper-objects", metavar="DIR", parser=path_arg, help="Analyse the paper's own objects (its artifacts' "
        "data-paper/programs/*.bpf.o) on nfp beside Tables 2 and 3, with bands checked, and Fig. 8 from its "
        "Count-Min objects, instead of the suite.")] = None,
    nfp_pred: Annotated[Path | None, typer.Option(
        "--nfp-pred", metavar="PATH", parser=path_arg, help="With --paper-objects: also run the paper's own estimator (the "
        "artifacts' build/nfp-estimator, which you build) on each Table 2 object's .asm beside it, and list its "
        "wall time beside nicsim's.")] = None,
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Krude et al. (CoNEXT 2021): Tables 2 and 3 (naive bound, SSP, improvement, bottleneck,
    time) for the XDP suite on nfp beside the paper's figures, the same on x86-jit (calibrated
    first if needed), Fig. 7 (the guarantee against time) and Fig. 8 (Count-Min against its
    number of stages), the accuracy study of section 6.1 on x86-jit (the slowest paths' estimates
    against their times in the kernel), and the paper's qualitative claims checked one by one. Needs the suite
    (`make xdp-suite`)."""
    if paper_objects is not None:
        from nicsim.reproduce import xdp_paper

        _reproduced(out, xdp_paper.main(out, paper_objects, quick=quick, timeout_s=timeout, workers=workers,
                                        executor=executor.value, force=force, nfp_pred=nfp_pred))
        return
    if nfp_pred is not None:
        from nicsim.errors import InputError

        raise InputError("--nfp-pred needs --paper-objects (nfp-pred analyses the paper's NFP assembly)")
    from nicsim.reproduce import xdp

    _reproduced(out, xdp.main(out, quick=quick, timeout_s=timeout, targets=("nfp",) if nfp_only else xdp.TARGETS,
                              force=force))


@reproduce_app.command("flowmem")
def reproduce_flowmem(
    out: OutOpt,
    flows: Annotated[int | None, typer.Option("--flows", metavar="N", callback=in_range(1, MAX_SYNTH_FLOWS),
                                              help="Connections in the synthetic capture [default: 2,000; 200 with "
                                              "--quick].", show_default=False)] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A fast smoke run: 200 connections.")] = False,
    seed: Annotated[int, typer.Option("--seed", metavar="N", callback=in_range(0, U64_MAX),
                                      help="Seed of the synthetic capture.")] = 1,
    capture: Annotated[Path | None, typer.Option("--capture", metavar="CAPTURE", parser=path_arg,
                                                 help="The real capture beside the micro-benchmark [default: the "
                                                 "veth recording `make veth-captures` makes, in a source tree].",
                                                 show_default=False)] = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Packets are Not Pages (Adams et al.): the 10 × 1,510-byte micro-benchmark, DRAM traffic
    per payload byte and per-core throughput (scan and regex) of copy-based and flow-based
    addressing in the SmartNIC memory model, on the micro-benchmark, a synthetic capture and a
    real one, beside the talk's figures."""
    from nicsim.reproduce import flowmem

    _reproduced(out, flowmem.main(out, flows=flows or (200 if quick else 2000), seed=seed, force=force,
                                  capture=capture))


@reproduce_app.command("router")
def reproduce_router(
    out: OutOpt,
    quick: Annotated[bool, typer.Option("--quick", help="Shorter runs and fewer points: a fast smoke run.")] = False,
    beyond: Annotated[bool, typer.Option("--beyond/--no-beyond", help="Also sweep 2-8 NICs on PCI-X 66 and "
                                         "133 MHz (fast path, every NIC to every other at line rate).")] = True,
    executor: ExecutorOpt = Executor.local,
    workers: WorkersOpt = None,
    force: ForceOpt = False, _json: JsonOpt = False, _quiet: QuietOpt = False, _verbose: VerboseOpt = 0,
) -> None:
    """Bianco et al., "Boosting the performance of PC-based software routers with FPGA-enhanced
    network interface cards" (seed 002): set-up A's slow path, Fig. 4's saturation rate
    against frame size, set-ups B-F and the QoS runs of Figs. 5 and 6, each beside the paper
    with holds / does not hold, and beyond the paper 2-8 NICs on PCI-X."""
    from nicsim.reproduce import router

    _reproduced(out, router.main(out, quick=quick, beyond=beyond, executor=executor.value, workers=workers,
                                 force=force))


