"""Benchmarks (`make bench`): how fast the datapath simulator, the router-fabric simulator and
the XDP analyzer run, measured in-process, and how fast flow memory reassembles and scans a
capture held in memory (in a fresh child process, whose peak memory is measured too).

Prints a table and writes out/bench/bench.json. Figures are recorded in BENCHMARKS.md with the
machine and this command. Each case is timed `--repeat` times (the long datapath runs at most
3 times) and the best run is kept (the machine's other load only ever slows a run down).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nicsim
from nicsim.config import load_config

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "python" / "nicsim" / "configs" / "flexpipe_paper.toml"


def timed(overrides: dict, repeat: int) -> dict:
    cfg = load_config(PAPER, overrides)
    best = None
    for _ in range(repeat):
        dp = nicsim.Datapath(cfg)
        t0 = time.perf_counter()
        dp.run()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    s = dp.summary()
    return {"seconds": best, "packets": s["packets"]["offered"], "packets_per_second": s["packets"]["offered"] / best,
            "instants": s["engine"]["instants"], "throughput_gbps": s["throughput_gbps"]}


def router_case(repeat: int, duration_us: float) -> dict:
    """Set-up F (three NICs, fast path, 3 Gbit/s of 64-byte frames) for `duration_us` of
    simulated time: simulated packets per second on one core (the run, its summary included)."""
    from nicsim import router

    cfg = router.load(ROOT / "configs" / "router" / "setup_f.toml", {"run.duration_us": duration_us})
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        s = router.simulate(cfg)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    n = s["packets"]["offered"]
    return {"seconds": best, "packets": n, "packets_per_second": n / best, "instants": s["engine"]["instants"],
            "target_packets_per_second": 2e6}


def sizing_case(workers: int | None) -> dict:
    """`nicsim offloads size` on the paper's configuration (11,000 packets, p99 sojourn at most
    20 µs, no loss) on the local pool: the whole search, from the baseline to the joint check."""
    from nicsim.datapath.sizing import size_offloads

    cfg = load_config(PAPER)
    t0 = time.perf_counter()
    s = size_offloads(cfg, {"p99_us": 20.0, "loss": 0.0}, workers=workers, progress=False)
    dt = time.perf_counter() - t0
    return {"seconds": dt, "runs": s["runs"], "rounds": s["rounds"], "seconds_per_run": dt / s["runs"],
            "total_units": s["total_units"], "eq1_total_units": s["eq1_total_units"], "workers": workers or os.cpu_count()}


def xdp_cases(timeout_s: float) -> dict:
    """Time to the SSP of each suite program with each solver (the paper's evaluation setting:
    no MAC limit), and the enumeration's paths/s without a solver."""
    from nicsim import _core
    from nicsim.xdp import analyze, load_target
    from nicsim.xdp.solver import SOLVERS
    from nicsim.xdp.suite import SUITE, object_path

    results = {}
    for p in SUITE:
        if p.paper_ssp_s is None:
            continue
        row = {"paper_ssp_s": p.paper_ssp_s, "target_s": p.paper_ssp_s / 10}
        for solver in SOLVERS:
            s = analyze(object_path(p.name), timeout_s=timeout_s, solver=solver, mac_limit=False)
            row[solver] = {"seconds": s["seconds"], "naive_s": s["trace"][0]["seconds"], "status": s["guarantee"]["status"],
                           "gbps": s["guarantee"]["bps"] / 1e9}
        results[f"xdp time to SSP, {p.name}"] = row
        cells = "  ".join(f"{k} {row[k]['seconds']:7.2f} s ({row[k]['status']})" for k in SOLVERS)
        print(f"xdp time to SSP, {p.name:<40} {cells}  target <= {row['target_s']:.2f} s", flush=True)
    # Path explosion has no SSP to find: the time to its naive bound, and its search's memory
    # after the timeout (issue 3: naive bound in under 1 s, then bounded memory).
    s = analyze(object_path("path_explosion"), timeout_s=timeout_s, mac_limit=False)
    results["xdp path explosion"] = row = {"naive_s": s["trace"][0]["seconds"], "seconds": s["seconds"],
                                           "search_memory_mb": s["search_memory_mb"], "paths": s["paths_enumerated"],
                                           "naive_gbps": s["naive"]["bps"] / 1e9, "gbps": s["guarantee"]["bps"] / 1e9}
    print(f"xdp path explosion: naive bound after {row['naive_s']:.3f} s; {row['paths']:,} paths, "
          f"{row['search_memory_mb']} MB of search state after {row['seconds']:.0f} s", flush=True)
    text, tname = load_target("nfp")
    # The enumeration alone: paths handed out in order (as `next_query` gets them before it builds
    # a path's edge list for symbolic execution), then with every path's edge list built too.
    for name in ("path_explosion", "parser"):
        for edges in (False, True):
            search = _core.XdpSearch(object_path(name).read_bytes(), text, tname, None, None, True, 4096, False)
            t0 = time.perf_counter()
            n = search.enumerate(3_000_000, 20.0, edges)
            dt = time.perf_counter() - t0
            what = "with edge lists" if edges else "without SMT"
            results[f"xdp enumeration {what}, {name}"] = {"paths": n, "seconds": dt, "paths_per_second": n / dt}
            print(f"xdp enumeration {what}, {name:<26} {n:10,} paths {dt:7.2f} s {n / dt:12,.0f} paths/s", flush=True)
    return results


def xdp_profile_cases(packets: int, timeout_s: float) -> dict:
    """`nicsim xdp profile` of suite programs on a generated capture of `packets` packets (the
    analysis's example, random and mutated packets, repeated; microsecond timestamps): the
    profile's wall time (the whole command's work in-process, summary and tables included, no
    plot) and the core loop's packets per second on one core (the interpreter, the walk through
    the graph, the costing: `profile_seconds`)."""
    import struct

    from nicsim.xdp import analyze
    from nicsim.xdp.profile import profile
    from nicsim.xdp.suite import object_path
    from nicsim.xdp.validate import packets_to_time

    results = {}
    for name in ("count_min_5", "parser", "dns_cache"):
        obj = object_path(name)
        with tempfile.TemporaryDirectory() as tmp:
            a = Path(tmp) / "a"
            s = analyze(obj, a, rate="packet", timeout_s=timeout_s, mac_limit=False)
            example = bytes.fromhex(s["example_packet_hex"]) if s.get("example_packet_hex") else None
            pool = [p for _, p in packets_to_time(example, 500, seed=1)]
            cap = Path(tmp) / "c.pcap"
            with cap.open("wb") as f:
                f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
                for i in range(packets):
                    pkt = pool[i % len(pool)]
                    f.write(struct.pack("<IIII", i // 1_000_000, i % 1_000_000, len(pkt), len(pkt)) + pkt)
            t0 = time.perf_counter()
            r = profile(obj, cap, None, analysis=a)
            wall = time.perf_counter() - t0
        core_s = r["profile_seconds"]
        results[f"xdp profile, {name}"] = row = {"packets": packets, "seconds": wall, "core_seconds": core_s,
                                                 "packets_per_second_per_core": packets / core_s,
                                                 "distinct_paths": r["distinct_paths"]}
        print(f"xdp profile, {name:<24} {packets:,} packets: {wall:6.1f} s wall, core loop {core_s:6.1f} s "
              f"({row['packets_per_second_per_core']:,.0f} packets/s per core, {r['distinct_paths']} paths)",
              flush=True)
    return results


def xdp_paper_cases(folder: Path, nfp_pred: str | None, timeout_s: float) -> dict:
    """The paper's own objects (`NICSIM_PAPER_OBJECTS=DIR`, the artifacts' data-paper/programs):
    the wall time of the whole `nicsim xdp analyze OBJ --no-mac-limit` command, as a user waits for
    it (best of 3), with the analysis's own time from its summary; with `NFP_PRED=PATH` (the
    artifacts' build/nfp-estimator, built by the user), the paper's estimator on the same
    program's NFP assembly beside it, its wall time (one run: minutes on the long programs), one
    after the other on the same machine (nicsim.xdp.nfp_pred)."""
    from nicsim.reproduce.xdp_paper import objects, paper_table
    from nicsim.xdp import nfp_pred as pred

    papers = paper_table()
    nicsim_cmd = ROOT / ".venv" / "bin" / "nicsim"
    results = {}
    for obj in objects(folder):
        if obj.name not in papers or "path-explosion" in obj.name:
            continue
        best, summary = None, None
        for _ in range(3):
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                subprocess.run([os.fspath(nicsim_cmd), "xdp", "analyze", os.fspath(obj), "--no-mac-limit", "--quiet",
                                "--timeout", str(timeout_s), "--out", os.path.join(tmp, "o")], check=True)
                dt = time.perf_counter() - t0
                s = json.loads(Path(tmp, "o", "summary.json").read_text())
            if best is None or dt < best:
                best, summary = dt, s
        row = {"nicsim_wall_s": best, "nicsim_analysis_s": summary["seconds"],
               "status": summary["guarantee"]["status"], "gbps": summary["guarantee"]["bps"] / 1e9,
               "paths_enumerated": summary["paths_enumerated"], "paths_unsat": summary["paths_unsat"],
               "paths_pruned": summary["paths_pruned"]}
        line = f"xdp paper object, {obj.name:<32} nicsim {best:7.2f} s wall ({summary['seconds']:.2f} s analysis)"
        if nfp_pred:
            p = pred.run(nfp_pred, obj, 3600.0)
            row.update(nfp_pred_wall_s=p["wall_s"], nfp_pred_ssp_s=p["ssp_s"], nfp_pred_status=p["status"])
            if p["wall_s"]:
                row["ratio"] = p["wall_s"] / best
                line += f"  nfp-pred {p['wall_s']:8.2f} s wall ({p['status']})  {row['ratio']:7.1f}x"
            else:
                line += f"  nfp-pred: {p['status']}"
        results[f"xdp paper object, {obj.name}"] = row
        print(line, flush=True)
    return results


# The flow-memory child: read the capture into memory, time reassembly + scan and the baseline.
FLOW_CHILD = "import sys; from nicsim import _core; print(_core.flow_speed_bench(sys.argv[1], int(sys.argv[2])))"


def flow_cases(flows: int, repeat: int) -> dict:
    """Issue 4: zero-copy reassembly plus a linear scan (count of newline bytes) of a >= 1 GB synthetic
    capture held in memory, >= 10 Gbit/s on one core; the copy-based baseline beside it; peak
    memory (the child's maximum RSS) under 1.5x the capture size."""
    from nicsim import _core

    with tempfile.TemporaryDirectory(prefix="nicsim-flow-bench-") as tmp:
        path = Path(tmp) / "synth.pcap"
        t0 = time.perf_counter()
        synth = json.loads(_core.flow_synth(str(path), json.dumps({"flows": flows, "seed": 1})))
        gen_s = time.perf_counter() - t0
        size = path.stat().st_size
        print(f"flow memory: synthetic capture of {flows:,} flows, {synth['packets']:,} packets, "
              f"{size / 1e9:.3f} GB (written in {gen_s:.1f} s)", flush=True)
        child = subprocess.Popen([sys.executable, "-c", FLOW_CHILD, str(path), str(repeat)],
                                 stdout=subprocess.PIPE, text=True)
        out = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise SystemExit(f"flow memory benchmark failed (exit {child.returncode})")
    r = json.loads(out)
    peak = usage.ru_maxrss * 1024  # kilobytes on Linux
    r.update({"synth_flows": flows, "peak_rss_child_bytes": peak, "peak_over_capture": peak / size,
              "targets": {"flow_gbps_min": 10.0, "peak_over_capture_max": 1.5}})
    print(f"flow memory, zero-copy reassembly + scan  {r['reassembly_seconds'] * 1e3:8.1f} + "
          f"{r['flow_scan_seconds'] * 1e3:8.1f} ms {r['flow_gbps']:6.2f} Gbit/s (target >= 10)", flush=True)
    print(f"flow memory, zero-copy with the histogram {r['reassembly_seconds'] * 1e3:8.1f} + "
          f"{r['flow_histogram_seconds'] * 1e3:8.1f} ms {r['flow_histogram_gbps']:6.2f} Gbit/s "
          f"(compute-bound variant, for comparison)", flush=True)
    print(f"flow memory, copy baseline                 {r['reassembly_seconds'] * 1e3:8.1f} + "
          f"{r['copy_assemble_scan_seconds'] * 1e3:8.1f} ms {r['copy_gbps']:6.2f} Gbit/s "
          f"(zero-copy {r['speedup']:.2f}x)", flush=True)
    print(f"flow memory, peak RSS {peak / 1e9:.3f} GB = {r['peak_over_capture']:.3f}x the capture (target < 1.5)",
          flush=True)
    return {f"flow memory, {flows:,}-flow synthetic capture in memory": r}


def replay_real_capture(src: Path, dst: Path, copies: int) -> int:
    """Write `copies` copies of the real (pcap, Ethernet) capture `src` into `dst`, copy k with
    every TCP port moved by k (both directions alike, so each copy is a set of connections of
    its own, with the original's segment sizes, losses, retransmissions and timing order).
    Returns the packets written."""
    import struct

    data = src.read_bytes()
    magic = data[:4]
    if magic not in (bytes.fromhex("d4c3b2a1"), bytes.fromhex("4d3cb2a1")) or \
            struct.unpack_from("<I", data, 20)[0] != 1:
        raise SystemExit(f"{src}: not a little-endian Ethernet pcap")
    records = []
    at = 24
    while at + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, at + 8)[0]
        records.append((data[at:at + 16], bytearray(data[at + 16:at + 16 + caplen])))
        at += 16 + caplen
    ports = []  # (record, offset of the TCP ports)
    for k, (_, frame) in enumerate(records):
        if frame[12:14] == b"\x08\x00" and frame[23] == 6:
            ports.append((k, 14 + (frame[14] & 15) * 4))
        elif frame[12:14] == b"\x86\xdd" and frame[20] == 6:
            ports.append((k, 54))
    written = 0
    with dst.open("wb") as out:
        out.write(data[:24])
        for c in range(copies):
            for k, off in ports:
                head, frame = records[k]
                f = bytearray(frame)
                sport, dport = struct.unpack_from("!HH", f, off)
                struct.pack_into("!HH", f, off, (sport + c) & 0xFFFF, (dport + c) & 0xFFFF)
                out.write(head)
                out.write(f)
                written += 1
    return written


def flow_real_mix(repeat: int, copies: int = 300) -> dict:
    """Issue 18 section 4: reassembly and scan speed on a real mix, not only synthetic: the veth
    recording `make veth-captures` makes (Linux TCP over IPv4 and IPv6 with 3 % loss: real
    segment sizes, retransmissions, reordering), replayed `copies` times as distinct connections
    into one large capture, through the same child as the synthetic case."""
    src = ROOT / "target" / "veth-captures" / "sender_side.pcap"
    if not src.is_file():
        print(f"flow memory, real mix: skipped ({src} is missing: `make veth-captures`, as root)", flush=True)
        return {}
    with tempfile.TemporaryDirectory(prefix="nicsim-flow-real-") as tmp:
        path = Path(tmp) / "replayed.pcap"
        packets = replay_real_capture(src, path, copies)
        size = path.stat().st_size
        child = subprocess.run([sys.executable, "-c", FLOW_CHILD, str(path), str(repeat)], stdout=subprocess.PIPE,
                               text=True, check=True)
    r = json.loads(child.stdout)
    r.update({"source": str(src.relative_to(ROOT)), "copies": copies, "packets_written": packets,
              "capture_bytes": size})
    print(f"flow memory, real mix ({src.name} x {copies}, {size / 1e9:.2f} GB, {packets:,} packets): zero-copy "
          f"reassembly + scan {r['reassembly_seconds'] * 1e3:.1f} + {r['flow_scan_seconds'] * 1e3:.1f} ms "
          f"{r['flow_gbps']:.2f} Gbit/s, copy baseline {r['copy_gbps']:.2f} Gbit/s", flush=True)
    return {f"flow memory, real mix: {src.name} replayed {copies} times": r}


LARGER_CHILD = """
import json, sys, time
from nicsim.flowmem.reassemble import open_capture
t0 = time.perf_counter()
cap = open_capture(sys.argv[1])
seconds = time.perf_counter() - t0
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
kb = lambda k: int(status[k].split()[0]) * 1024
print(json.dumps({"seconds": seconds, "flows": len(cap), "packets": cap.counts()["read"],
                  "rss_anon_bytes": kb("RssAnon"), "rss_file_bytes": kb("RssFile")}))
"""


def flow_larger_than_memory(flows: int) -> dict:
    """Issue 18 section 4: a capture twice the memory the reassembler may use. The child runs in a
    memory cgroup (v1 or v2, where this machine lets us make one) limited to half the capture's
    size; the capture is mapped, not read (`nicsim.flowmem.open_capture`), so its pages are the
    file's and the kernel drops them as it needs. Reports whether it finished, its time, and the
    anonymous memory it held (tables, Python)."""
    from nicsim import _core

    roots = [Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")]
    root = next((r for r in roots if (r / "memory.limit_in_bytes").exists() or (r / "cgroup.subtree_control").exists()),
                None)
    with tempfile.TemporaryDirectory(prefix="nicsim-flow-large-") as tmp:
        path = Path(tmp) / "synth.pcap"
        _core.flow_synth(str(path), json.dumps({"flows": flows, "seed": 2}))
        size = path.stat().st_size
        limit = size // 2
        group = None if root is None else root / f"nicsim-bench-{os.getpid()}"
        try:
            group.mkdir()
            v1 = (group / "memory.limit_in_bytes").exists()
            (group / ("memory.limit_in_bytes" if v1 else "memory.max")).write_text(str(limit))
        except (OSError, AttributeError) as e:
            print(f"flow memory, larger than memory: skipped (no memory cgroup to run in: {e})", flush=True)
            return {}
        def uncached() -> None:
            # The file's pages leave the page cache, so that the child's reads are charged to
            # its own group (pages the writer left cached count against the writer's).
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)

        def enter() -> None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

        try:
            uncached()
            t0 = time.perf_counter()
            child = subprocess.run([sys.executable, "-c", LARGER_CHILD, str(path)], stdout=subprocess.PIPE, text=True,
                                   preexec_fn=enter)
            wall = time.perf_counter() - t0
            # The control: reading the capture into memory, as the reassembler did before, in the
            # same limit (it must fail, or the limit proves nothing).
            uncached()
            control = subprocess.run([sys.executable, "-c", f"len(open({str(path)!r}, 'rb').read())"],
                                     preexec_fn=enter, stderr=subprocess.DEVNULL)
        finally:
            group.rmdir()
    r = {"capture_bytes": size, "memory_limit_bytes": limit, "exit_code": child.returncode, "wall_seconds": wall,
         "control_read_into_memory_exit_code": control.returncode}
    if child.returncode == 0:
        r.update(json.loads(child.stdout))
    print(f"flow memory, a {size / 1e9:.2f} GB capture in {limit / 1e9:.2f} GB of memory: "
          + (f"done in {wall:.1f} s, {r['rss_anon_bytes'] / 1e6:.0f} MB anonymous" if child.returncode == 0
             else f"failed (exit {child.returncode})")
          + f"; reading it into memory instead: exit {control.returncode}", flush=True)
    return {f"flow memory, {size / 1e9:.2f} GB capture in a {limit / 1e9:.2f} GB memory limit": r}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--long-packets", type=int, default=1_000_000)
    ap.add_argument("--only", choices=["datapath", "sizing", "xdp", "xdp-profile", "router", "flowmem"],
                    help="Run one subsystem's cases.")
    ap.add_argument("--router-us", type=float, default=100_000.0, help="Simulated µs of the router case.")
    ap.add_argument("--flow-flows", type=int, default=160_000,
                    help="Flows of the flow-memory capture (160,000: about 1.16 GB).")
    ap.add_argument("--xdp-timeout", type=float, default=60.0, help="Seconds per XDP analysis.")
    ap.add_argument("--profile-packets", type=int, default=1_000_000, help="Packets of the `xdp profile` capture.")
    args = ap.parse_args()
    long = {"traffic.packets": args.long_packets, "measure.window": [500, args.long_packets - 500]}
    cases = {
        "paper experiment, flexpipe (11,000 packets, timing only)": {},
        "paper experiment, staticpipe": {"arch": "staticpipe"},
        "paper experiment, panic (eval)": {"arch": "panic"},
        "paper experiment, panic (full)": {"arch": "panic", "panic.variant": "full"},
        f"long flexpipe run ({args.long_packets:,} packets, timing only)": long,
        f"long flexpipe run ({args.long_packets // 10:,} packets, functional offloads)": {
            "functional": True, "traffic.packets": args.long_packets // 10, "measure.window": [500, args.long_packets // 10 - 500]},
    }
    results = {}
    ap_profile = args.profile_packets
    if args.only in ("sizing", "xdp", "xdp-profile", "router", "flowmem"):
        cases = {}
    for name, overrides in cases.items():
        # The long runs take a second each: best of 3 (at most --repeat), not of --repeat.
        repeat = args.repeat if "paper" in name else min(args.repeat, 3)
        results[name] = r = timed(overrides, repeat)
        print(f"{name:<62} {r['seconds'] * 1e3:10.1f} ms {r['packets_per_second']:12,.0f} packets/s")
    if args.only in (None, "sizing"):
        name = "offload sizing, paper experiment (p99 <= 20 us, no loss)"
        results[name] = r = sizing_case(None)
        print(f"{name:<62} {r['seconds'] * 1e3:10.1f} ms {r['runs']:5d} runs in {r['rounds']} rounds "
              f"({r['total_units']} units against Eq. 1's {r['eq1_total_units']})", flush=True)
    if args.only in (None, "router"):
        name = f"router set-up F ({args.router_us / 1e3:g} ms simulated, 3 NICs, fast path, 64 B)"
        results[name] = r = router_case(args.repeat, args.router_us)
        print(f"{name:<62} {r['seconds'] * 1e3:10.1f} ms {r['packets_per_second']:12,.0f} packets/s "
              f"(target >= 2,000,000)", flush=True)
    if args.only in (None, "xdp"):
        results.update(xdp_cases(args.xdp_timeout))
        if os.environ.get("NICSIM_PAPER_OBJECTS"):
            results.update(xdp_paper_cases(Path(os.environ["NICSIM_PAPER_OBJECTS"]), os.environ.get("NFP_PRED"),
                                           args.xdp_timeout))
    if args.only in (None, "xdp-profile"):
        results.update(xdp_profile_cases(ap_profile, args.xdp_timeout))
    if args.only in (None, "flowmem"):
        results.update(flow_cases(args.flow_flows, args.repeat))
        results.update(flow_larger_than_memory(args.flow_flows))
        results.update(flow_real_mix(args.repeat))
    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "python": platform.python_version()}
    out = ROOT / "out" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps({"machine": machine, "results": results}, indent=2, sort_keys=True))
    print(f"wrote {out / 'bench.json'}")


if __name__ == "__main__":
    main()
