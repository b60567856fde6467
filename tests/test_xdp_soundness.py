"""Soundness of the x86-jit guarantee (issue 29): a path or packet measured beyond the tolerance over
its estimate fails validation; examples stay within their maps' bounds; a program the kernel's
verifier refuses is reported as such; and the sweep: every suite program and the issue's test
programs, analysed on x86-jit with their 5 slowest paths, none beaten."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_xdp import obj

from nicsim.xdp.summary import Summary

from conftest import assert_one_line_error, conforms, nicsim

ROOT = os.geteuid() == 0


def test_example_map_entries_stay_within_each_maps_bounds() -> None:
    from nicsim.xdp.analyze import _merge_maps

    maps = {"backends": {"type": "array", "key_size": 4, "value_size": 4, "max_entries": 4096, "entries": {}},
            "flows": {"type": "lru_hash", "key_size": 4, "value_size": 2, "max_entries": 8, "entries": {}},
            "sized": {"type": "array", "key_size": 4, "value_size": 1, "max_entries": 0, "entries": {}}}
    entries = [
        # The example: an index of 2,147,487,742 into an array of 4,096 (the lookup found
        # nothing; the kernel cannot hold such an entry).
        {"map": "backends", "key_hex": (2_147_487_742).to_bytes(4, "little").hex(), "value_hex": "01020304",
         "present": True},
        {"map": "backends", "key_hex": (4095).to_bytes(4, "little").hex(), "value_hex": "0102030405", "present": True},
        {"map": "flows", "key_hex": "aabbccdd", "value_hex": "01", "present": True},
        {"map": "flows", "key_hex": "11223344", "value_hex": "0102", "present": False},
        # A map declared with 0 gets the model's size first, then its entries are checked against it.
        {"map": "sized", "key_hex": "05000000", "value_hex": "07", "present": True},
        {"map": "sized", "max_entries": 4},
    ]
    out = _merge_maps(maps, entries)
    assert out["backends"]["entries"] == {"ff0f0000": "01020304"}  # cut to value_size, in bounds only
    assert out["flows"]["entries"] == {"aabbccdd": "0100"}  # zero-padded; absent keys not written
    assert out["sized"]["max_entries"] == 4 and out["sized"]["entries"] == {}


@pytest.mark.skipif(not ROOT, reason="the kernel's verifier needs root")
def test_a_program_the_verifier_refuses_is_marked(tmp_path: Path) -> None:
    out = tmp_path / "a"
    r = nicsim("xdp", "analyze", obj("udp_unchecked"), "--out", out)
    assert r.returncode == 0, r.stderr
    assert "REJECTED" in r.stdout and "the kernel would reject this program" in r.stdout + r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert conforms(s, Summary) == []
    v = s["verifier"]
    assert v["checked"] and v["loads"] is False
    assert v["line"] == "udp_unchecked.c:19" and "udp->dest" in v["text"], v  # the unchecked read
    assert "outside of the packet" in v["reason"]
    assert any(w.startswith("the kernel would reject this program") and "udp_unchecked.c:19" in w
               for w in s["warnings"])
    # A program the verifier loads says so, and gets no such warning.
    r = nicsim("xdp", "analyze", obj("tcp_options"), "--out", tmp_path / "b")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s["verifier"] == {"checked": True, "loads": True} and "REJECTED" not in r.stdout


def _analyze_run(name: str, out: Path, k: int, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    """`nicsim xdp analyze` of test program `name` on x86-jit with its `k` slowest paths."""
    return nicsim("xdp", "analyze", obj(name), "--target", "x86-jit", "--rate", "packet", "--paths", str(k),
                  "--timeout", str(timeout), "--out", out)


def _analyze(name: str, out: Path, k: int, timeout: int = 60) -> dict:
    r = _analyze_run(name, out, k, timeout)
    assert r.returncode == 0, r.stderr
    return json.loads((out / "summary.json").read_text())


@pytest.mark.skipif(not ROOT, reason="the kernel part needs root")
def test_validate_fails_a_beaten_path_in_its_status_and_exit_code(x86_jit: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    s = _analyze("tcp_opts_walk", a, 2)
    # An estimate no kernel can meet: 5 ns a packet.
    for p in s["slowest_paths"]:
        p["ns"], p["pps"] = 5.0, 2e8
    (a / "summary.json").write_text(json.dumps(s))
    out = tmp_path / "v"
    r = nicsim("xdp", "validate", obj("tcp_opts_walk"), "--analysis", a, "--paths", "2", "--path-runs", "11",
               "--packets", "0", "--out", out)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "BEATEN" in r.stdout and "FAIL" in r.stdout
    v = json.loads((out / "validation.json").read_text())
    assert not v["ok"] and v["checks"]["no path measured more than 5% over its estimate"] is False
    rows = v["paths"]["rows"]
    assert all(x["status"].startswith("BEATEN") and x["error_pct"] > 5 for x in rows), rows
    assert v["paths"]["errors"]["beaten"] == 2 and v["paths"]["errors"]["paths"] == 2
    assert "BEATEN" in (out / "accuracy.csv").read_text()


@pytest.mark.skipif(not ROOT, reason="the kernel part needs root")
def test_validate_times_the_example_in_the_state_of_its_path(x86_jit: Path, tmp_path: Path) -> None:
    # The load balancer's slowest path inserts a new flow: the first run pins it, so an example
    # rerun on one map state would time the faster pinned path. Each timed run starts from the
    # example's own state, and must take its path (action and packet).
    a = tmp_path / "a"
    s = _analyze("l4_lb", a, 1)
    assert s["path"]["xdp_action"] == "XDP_TX"
    r = nicsim("xdp", "validate", obj("l4_lb"), "--analysis", a, "--packets", "2", "--runs", "5", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    t = json.loads(r.stdout)["timing"]
    assert t["example_fresh_state"] is True and t["example_diverged"] is False


@pytest.mark.skipif(not ROOT, reason="the x86-jit calibration needs root")
def test_stream_variants_take_the_path_in_the_state_they_evolve(x86_jit: Path, tmp_path: Path) -> None:
    # The stream of the new-flow path: every packet a new flow (the interpreter, run on the maps
    # the packets before it leave, follows the path), so no two share a flow key.
    from nicsim import _core
    from nicsim.xdp.validate import stream_variants

    s = _analyze("l4_lb", tmp_path / "a", 1)
    p = s["slowest_paths"][0]
    v = stream_variants(_core, obj("l4_lb").read_bytes(), None, None, p, 16, [])
    assert len(v) == 16 and v[0][0] == bytes.fromhex(p["example_packet_hex"])
    flows = {pkt[26:30] + pkt[34:38] for pkt, _, _ in v}  # source address and ports
    assert len(flows) == 16
    assert all(ret == p["retval"] for _, ret, _ in v)


# The sweep: the suite (path explosion's search times out before any path, so it has none to
# validate), the load balancer and option walker, and test programs of mechanisms the
# suite does not have (packet growth, maps of maps and a map picked by CPU, tail calls, a VLAN
# walk, configuration in writable global data, queue, stack and bloom filter maps; bpf_loop's paths, costed at their bound of
# iterations, measure 95 % under: make soundness). Each: an x86-jit analysis with its 5 slowest paths, and `validate --paths 5` with
# 21 fresh runs and the stream of each path. Measured: 3 to 10 s a program on the 2-core VM.
# `make soundness` (NICSIM_SOUNDNESS_ALL=1) sweeps every test program of tests/xdp/ as well;
# docs/xdp.md, "The soundness sweep", has what it found.
SWEEP = ("parser", "dos_filter", "quic_lb_v4", "quic_lb_v6", "rtp_alaw", "rtp_alaw_opt", "dns_cache", "count_min_5",
         "count_min_10", "l4_lb", "tcp_opts_walk", "ipip_encap", "map_in_map_acl", "mim_fallback", "tail_lb",
         "vlan_stack", "helpers_syncookie", "data_config", "queue_stack", "spin_lock")
SWEEP_ALL = os.environ.get("NICSIM_SOUNDNESS_ALL") == "1"
TEST_PROGRAMS = sorted(p.stem for p in (Path(__file__).parent / "xdp").glob("*.c"))


@pytest.mark.skipif(not ROOT, reason="the kernel part needs root")
@pytest.mark.parametrize("name", SWEEP + tuple(n for n in TEST_PROGRAMS if n not in SWEEP) if SWEEP_ALL else SWEEP)
def test_soundness_sweep_no_path_beats_its_estimate(name: str, x86_jit: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    if name in SWEEP:
        _analyze(name, a, 5, timeout=30)
    else:  # every test program: those nicsim or the kernel refuses are not this test's
        r = _analyze_run(name, a, 5, timeout=30)
        if r.returncode == 2:
            pytest.skip(f"not analysed: {r.stderr.strip().splitlines()[-1][:300]}")
        assert r.returncode == 0, r.stderr
        if json.loads((a / "summary.json").read_text()).get("verifier", {}).get("loads") is False:
            pytest.skip("the kernel's verifier refuses it")
    out = tmp_path / "v"
    r = nicsim("xdp", "validate", obj(name), "--analysis", a, "--paths", "5", "--path-runs", "21",
               "--packets", "0", "--out", out)
    if not (out / "validation.json").exists() and name not in SWEEP and r.returncode == 2:
        pytest.skip(f"not validated: {r.stderr.strip().splitlines()[-1][:300]}")  # e.g. kfuncs of a module
    v = json.loads((out / "validation.json").read_text())
    rows = v["paths"]["rows"]
    beaten = [x for x in rows if x["status"].startswith("BEATEN")]
    if beaten:
        # A beaten path is measured again before it fails the test: an estimate that is too low
        # is beaten again, a run that met another process's burst (the Rust tests run beside
        # pytest: a 94-ns path once measured 10.8 % over, with the empty program's excess taken
        # off) is not. The first measurement is reported with the second.
        again = tmp_path / "v2"
        r = nicsim("xdp", "validate", obj(name), "--analysis", a, "--paths", "5", "--path-runs", "21",
                   "--packets", "0", "--out", again)
        v = json.loads((again / "validation.json").read_text())
        rows = v["paths"]["rows"]
        twice = [x for x in rows if x["status"].startswith("BEATEN") and x["rank"] in {b["rank"] for b in beaten}]
        assert not twice, (twice, beaten)
        beaten = [x for x in rows if x["status"].startswith("BEATEN")]
        if beaten:
            return  # the other paths beaten now were not the first time: noise, as above
    if name == "mim_fallback":  # its paths depend on the CPU: the runs are on the one its examples assume
        assert all(x["status"] == "ok" for x in rows), rows
    assert v["checks"]["no path measured more than 5% over its estimate"]
    # Every row measured on its own path has its figures; a row that is not names why.
    for x in rows:
        assert (x["status"] == "ok") == (x["measured_ns"] is not None), x
    assert r.returncode == (0 if v["ok"] else 1)


@pytest.mark.skipif(not ROOT, reason="the kernel part needs root")
def test_the_machines_own_excess_is_taken_off_before_the_tolerance(x86_jit: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # A target calibrated on a machine far quieter than this one is now: its empty program took 1 ns.
    # Every path then measures about 80 ns more than its estimate counts as overhead; that is the
    # machine's (the empty program shows it), and is taken off before the 5 % is applied.
    import re

    quiet = tmp_path / "quiet.toml"
    quiet.write_text(re.sub(r"(?m)^overhead_cycles = [0-9.]+", "overhead_cycles = 1.000", x86_jit.read_text()))
    monkeypatch.setenv("NICSIM_X86_JIT", str(quiet))
    a = tmp_path / "a"
    _analyze("tcp_opts_walk", a, 2)
    out = tmp_path / "v"
    r = nicsim("xdp", "validate", obj("tcp_opts_walk"), "--analysis", a, "--paths", "2", "--path-runs", "11",
               "--packets", "0", "--out", out)
    v = json.loads((out / "validation.json").read_text())
    rows = v["paths"]["rows"]
    assert all(x["machine_excess_ns"] > 50 for x in rows), rows
    assert all(x["status"] == "ok" for x in rows), rows
    assert r.returncode == 0, r.stdout + r.stderr
    assert "machine_excess_ns" in (out / "accuracy.csv").read_text().splitlines()[0]


@pytest.mark.skipif(not ROOT, reason="the kernel part needs root")
def test_nothing_to_time_is_one_line(x86_jit: Path, tmp_path: Path) -> None:
    # path_explosion's path search stops (timeout) before any path: with --packets 0 there was
    # nothing to time, and validate died on max() of no packets with a traceback.
    a = tmp_path / "a"
    s = _analyze("path_explosion", a, 5, timeout=1)
    assert s["slowest_paths"] == [] and s["slowest_paths_stopped"] == "timeout"
    out = tmp_path / "v"
    r = nicsim("xdp", "validate", obj("path_explosion"), "--analysis", a, "--paths", "5", "--packets", "0",
               "--timeout", "1", "--out", out)
    assert_one_line_error(r, "path_explosion.o", "nothing to time", "--packets")
    assert not out.exists()


def test_kernel_runs_are_on_one_cpu_and_the_examples_cpu_when_asked_for() -> None:
    # The interpreter's bpf_get_smp_processor_id is 0: mim_fallback's per-CPU map, picked by CPU
    # number, took another path on CPU 1 (or left other map entries) until the runs were pinned.
    from nicsim.xdp.validate import EXAMPLE_CPU, on_cpu, run_cpu

    assert run_cpu(obj("mim_fallback").read_bytes()) == EXAMPLE_CPU
    assert run_cpu(obj("tcp_options").read_bytes()) in os.sched_getaffinity(0)  # the CPU it is on
    before = os.sched_getaffinity(0)
    with on_cpu(EXAMPLE_CPU) as pinned:
        assert pinned == (EXAMPLE_CPU in before)
        if pinned:
            assert os.sched_getaffinity(0) == {EXAMPLE_CPU}
    assert os.sched_getaffinity(0) == before
    with on_cpu(None) as pinned:
        assert not pinned and os.sched_getaffinity(0) == before


@pytest.mark.skipif(not ROOT, reason="the x86-jit calibration needs root")
def test_a_map_helper_through_a_joined_map_pointer_costs_the_worst_map(x86_jit: Path, tmp_path: Path) -> None:
    # mim_fallback updates through a pointer that is its per-CPU inner LRU map or the fallback
    # LRU map: the cost model took the plain `map_update_elem` entry (an update of a present
    # hash key, 114 ns) for that LRU insert, which then measured +13 to +29 % over its estimate.
    import tomllib

    s = _analyze("mim_fallback", tmp_path / "a", 1)
    helpers = tomllib.loads(x86_jit.read_text())["helpers"]
    worst = max(helpers[k]["cycles"] for k in ("map_update_elem", "map_update_elem.lru_hash", "map_update_elem.hash",
                                               "map_update_elem.array") if k in helpers)
    by_class = s["path"]["cost_by_class"]
    update = by_class["call bpf_map_update_elem"]
    assert update["insns"] == 1 and update["cores"] >= worst - 1e-6, (update, worst)


@pytest.mark.skipif(not ROOT, reason="the x86-jit target is calibrated on the kernel")
def test_a_syn_cookies_example_is_a_header_the_kernel_gives_a_cookie(x86_jit: Path, tmp_path: Path) -> None:
    # bpf_tcp_raw_gen_syncookie_ipv4 returns -EINVAL unless the header's length is doff * 4 (at
    # least 20), else a cookie and its MSS below 2^48. As a fresh 64-bit value, the SYN's XDP_TX
    # path (cookie >= 0) got an example with doff 0, which the interpreter and the kernel send
    # to XDP_DROP; and a negative cookie let XDP_DROP be taken on any header.
    from nicsim import _core

    s = _analyze("helpers_syncookie", tmp_path / "a", 8)
    data = obj("helpers_syncookie").read_bytes()
    tx = [p for p in s["slowest_paths"] if p["retval"] == 3]
    assert tx, [p["retval"] for p in s["slowest_paths"]]
    for p in tx:
        pkt = bytes.fromhex(p["example_packet_hex"])
        assert pkt[14 + 20 + 12] >> 4 == 5, pkt.hex()  # doff 5: the 20 bytes the program passes
        run = json.loads(_core.xdp_run(data, None, pkt, json.dumps(p["maps"]), 1_000_000))
        assert run["trace"] == p["insns"] and run["retval"] == 3
