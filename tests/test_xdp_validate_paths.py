"""`nicsim xdp analyze --paths K` and `nicsim xdp validate --paths K`: the accuracy study of the
paper's section 6.1 (issue 17, section 5), shortened: a few paths, a few dozen kernel runs each."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_xdp import obj

from nicsim.xdp.summary import Summary

from conftest import assert_one_line_error, conforms, nicsim


def _analyze(name: str, out: Path, k: int) -> dict:
    r = nicsim("xdp", "analyze", obj(name), "--target", "x86-jit", "--rate", "packet", "--paths", str(k),
               "--timeout", "60", "--out", out)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert conforms(s, Summary) == []  # with slowest_paths
    return s


def test_analyze_paths_lists_the_slowest_satisfiable_paths(x86_jit: Path, tmp_path: Path) -> None:
    s = _analyze("count_min_5", tmp_path / "a", 4)
    paths = s["slowest_paths"]
    assert [p["rank"] for p in paths] == [1, 2, 3, 4] and s["slowest_paths_stopped"] == "paths"
    # Rank 1 is the SSP, and the rest follow slowest first.
    assert paths[0]["pps"] == s["guarantee"]["pps"] and paths[0]["insns"] == s["path"]["insns"]
    assert all(a["pps"] <= b["pps"] for a, b in zip(paths, paths[1:]))
    assert all(p["example_packet_hex"] and p["xdp_action"].startswith("XDP_") for p in paths)
    assert (tmp_path / "a" / "paths.pcap").stat().st_size > 0
    assert (tmp_path / "a" / "paths.csv").read_text().count("\n") == 5
    # More paths than the graph has: the search runs out of them and says so.
    s = _analyze("count_min_5", tmp_path / "b", 50)
    assert s["slowest_paths_stopped"] == "exhausted" and 4 < len(s["slowest_paths"]) < 50


def test_validate_paths_measures_each_path_from_a_fresh_state(x86_jit: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    _analyze("count_min_5", a, 3)
    out = tmp_path / "v"
    r = nicsim("xdp", "validate", obj("count_min_5"), "--analysis", a, "--paths", "3", "--path-runs", "31",
               "--packets", "0", "--out", out, "--json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v == json.loads((out / "validation.json").read_text())
    study = v["paths"]
    assert study["found"] == 3 and study["runs_per_path"] == 31
    rows = study["rows"]
    assert [x["status"] for x in rows] == ["ok"] * 3, rows
    # The Count-Min update path writes its counters: measured from a fresh map state each run.
    assert rows[0]["writes_maps"] and not rows[0]["writes_packet"]
    for x in rows:
        assert x["runs"] == 31 and x["measured_ns"] > 0
        assert x["error_pct"] == pytest.approx((x["measured_ns"] / x["estimate_ns"] - 1) * 100)
    e = study["errors"]
    assert e["paths"] == 3 and e["mismatched"] == 0 and e["min_pct"] <= e["median_pct"] <= e["max_pct"]
    assert 0 <= e["within_5_pct"] <= e["within_10_pct"] <= 1
    assert v["checks"]["each path's example takes its path in the interpreter and the kernel"]
    # The empty program measured as the paths are, beside the target's calibrated overhead.
    assert study["overhead"]["target_ns"] > 0 and study["overhead"]["measured_ns"] > 0
    header = (out / "accuracy.csv").read_text().splitlines()[0].split(",")
    assert {"rank", "estimate_ns", "measured_ns", "error_pct", "bottleneck", "xdp_action", "packet_bytes"} <= set(header)
    assert (out / "accuracy.png").stat().st_size > 0


def test_csum_diff_is_the_running_kernels(x86_jit: Path, tmp_path: Path) -> None:
    # bpf_csum_diff as the running kernel computes it (folded to 16 bits since Linux 6.12,
    # csum_partial's 32 bits before): csum_nat's slowest paths, checksum updates whose carries
    # the packet's bytes decide, end in the kernel as in the interpreter (action, packet, the
    # 'carries' counters). A result taken for any number made the third and fourth fold steps,
    # which no such sum needs, the slowest path, and its example one no packet runs.
    from nicsim import _core

    a = tmp_path / "a"
    s = _analyze("csum_nat", a, 4)
    r = nicsim("xdp", "validate", obj("csum_nat"), "--analysis", a, "--paths", "4", "--path-runs", "31",
               "--packets", "0", "--out", tmp_path / "v", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["paths"]["rows"]
    assert [x["status"] for x in rows] == ["ok"] * 4, rows
    # The carries the slowest path's example makes: at most two per fold of a 32-bit sum, none
    # of a 16-bit one.
    run = json.loads(_core.xdp_run(obj("csum_nat").read_bytes(), None, bytes.fromhex(s["example_packet_hex"]),
                                   json.dumps(s["maps"]), 1_000_000))
    assert run["trace"] == s["path"]["insns"]
    before = {k: int.from_bytes(bytes.fromhex(v), "little") for k, v in s["maps"]["carries"]["entries"].items()}
    after = {k: int.from_bytes(bytes.fromhex(v), "little") for k, v in run["maps"]["carries"]["entries"].items()}
    carries = {int.from_bytes(bytes.fromhex(k), "little"): after[k] - before.get(k, 0) for k in after}
    release = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
    assert all(carries.get(step, 0) == 0 for step in (2, 3)), carries
    if release >= (6, 12):
        assert not any(carries.values()), carries


def test_a_checksum_of_many_bytes_costs_what_the_kernel_takes(x86_jit: Path, tmp_path: Path) -> None:
    # bpf_csum_diff over 1 KiB: costed from the calibration's 64- and 512-byte calls, not as a
    # 64-byte call (which the kernel beat by 8 %), nor as sixteen of them.
    target = (x86_jit).read_text()
    assert "cycles_per_byte" in next(line for line in target.splitlines() if line.startswith('"csum_diff"'))
    a = tmp_path / "a"
    s = _analyze("csum_big", a, 1)
    r = nicsim("xdp", "validate", obj("csum_big"), "--analysis", a, "--paths", "1", "--path-runs", "51",
               "--packets", "0", "--out", tmp_path / "v", "--json")
    assert r.returncode == 0, r.stderr
    [row] = json.loads(r.stdout)["paths"]["rows"]
    assert row["status"] == "ok" and row["error_pct"] > -50, row
    assert s["guarantee"]["status"] == "ssp"


def test_fresh_runs_leave_the_maps_as_one_run_does(x86_jit: Path, tmp_path: Path) -> None:
    # BPF_PROG_TEST_RUN with `repeat` would add to Count-Min's counters on every repetition; the
    # study's runs each start from the analysis's map state, so after any number of them the
    # counters are what one run from that state leaves (the interpreter's).
    from nicsim import _core
    from nicsim.xdp.validate import _changed_entries

    s = _analyze("count_min_5", tmp_path / "a", 1)
    p = s["slowest_paths"][0]
    data, pkt, maps = obj("count_min_5").read_bytes(), bytes.fromhex(p["example_packet_hex"]), json.dumps(p["maps"])
    r = json.loads(_core.xdp_run(data, None, pkt, maps, 100_000))
    restore, expect = _changed_entries(r["maps_before"], r["maps"])
    assert restore and expect
    k = _core.XdpKernel(data, None, maps)
    times, diverged = k.fresh_times(pkt, 25, restore, r["retval"], bytes.fromhex(r["packet_hex"]))
    assert diverged is None and len(times) == 25
    assert all(k.get_entry(name, key) == want for name, key, want in expect)
    k2 = _core.XdpKernel(data, None, maps)
    k2.run(pkt, 25)  # the same packet repeated on one state: the counters run away
    assert any(k2.get_entry(name, key) != want for name, key, want in expect)


def test_a_path_that_rewrites_the_packet_is_measured_on_its_own_output(x86_jit: Path,
                                                                       tmp_path: Path) -> None:
    # The IPIP encapsulator's slowest path moves the head 20 bytes out and writes the outer
    # header (XDP_TX): every timed run must give the interpreter's output packet.
    a = tmp_path / "a"
    s = _analyze("ipip_encap", a, 2)
    assert s["slowest_paths"][0]["xdp_action"] == "XDP_TX"
    r = nicsim("xdp", "validate", obj("ipip_encap"), "--analysis", a, "--paths", "2", "--path-runs", "21",
               "--packets", "0", "--out", tmp_path / "v")
    v = json.loads((tmp_path / "v" / "validation.json").read_text())
    row = v["paths"]["rows"][0]
    assert row["writes_packet"] and row["status"] == "ok" and row["runs"] == 21, row
    # Every check but the timing one must pass. The timing check compares this machine's
    # wall-clock times with a calibration made earlier in the session: its verdict is a
    # measurement, not something a test may assert (BENCHMARKS.md covers speed), so it is only
    # required to be reported, and to be the only reason validate could exit 1.
    timing = [c for c in v["checks"] if c.startswith("no packet slower than the x86-jit guarantee")]
    assert len(timing) == 1, v["checks"]
    assert all(ok for c, ok in v["checks"].items() if c not in timing), v["checks"]
    assert r.returncode == (0 if v["checks"][timing[0]] else 1), (r.stderr, v["checks"])
    # The kernel's output is the interpreter's, 20 bytes longer than the input.
    from nicsim import _core

    p = s["slowest_paths"][0]
    data, pkt = obj("ipip_encap").read_bytes(), bytes.fromhex(p["example_packet_hex"])
    want = bytes.fromhex(json.loads(_core.xdp_run(data, None, pkt, json.dumps(p["maps"]), 100_000))["packet_hex"])
    k = _core.XdpKernel(data, None, json.dumps(p["maps"]))
    ret, _, got = k.run(pkt, 1)
    assert ret == 3 and bytes(got) == want and len(want) == len(pkt) + 20


def test_a_path_the_example_does_not_take_is_a_mismatch_not_an_error_figure(x86_jit: Path,
                                                                             tmp_path: Path) -> None:
    # An analysis whose second path claims another action (as a wrong model or interpreter would):
    # the study reports the mismatch, gives no error for it, and the validation fails.
    a = tmp_path / "a"
    _analyze("count_min_5", a, 3)
    s = json.loads((a / "summary.json").read_text())
    s["slowest_paths"][1]["retval"] = 1
    (a / "summary.json").write_text(json.dumps(s))
    r = nicsim("xdp", "validate", obj("count_min_5"), "--analysis", a, "--paths", "3", "--path-runs", "5",
               "--packets", "0", "--out", tmp_path / "v")
    assert r.returncode == 1, r.stderr
    v = json.loads((tmp_path / "v" / "validation.json").read_text())
    rows = v["paths"]["rows"]
    # Rows 0 and 2 are measured (with 5 runs their figures are too few to judge soundness by: the
    # sweep of test_xdp_soundness.py does that with 21; one run here read count_min_5 +26 % over).
    assert rows[0]["measured_ns"] is not None and rows[2]["measured_ns"] is not None, rows
    assert rows[1]["status"].startswith("interpreter takes another path") and rows[1]["error_pct"] is None
    assert v["paths"]["errors"]["mismatched"] == 1 and v["paths"]["errors"]["paths"] == 2
    assert not v["checks"]["each path's example takes its path in the interpreter and the kernel"]


def test_validate_paths_runs_the_x86_jit_search_itself(x86_jit: Path, tmp_path: Path) -> None:
    # An nfp analysis has no x86-jit paths: validate runs the x86-jit packet-rate search with --paths.
    a = tmp_path / "a"
    assert nicsim("xdp", "analyze", obj("count_min_2"), "--out", a).returncode == 0
    r = nicsim("xdp", "validate", obj("count_min_2"), "--analysis", a, "--paths", "2", "--path-runs", "5",
               "--packets", "0")
    assert r.returncode == 0, r.stderr
    v = json.loads((a / "validation.json").read_text())
    assert v["paths"]["found"] == 2 and [x["rank"] for x in v["paths"]["rows"]] == [1, 2]


def test_validating_into_the_analysis_folder_keeps_its_paths_table(x86_jit: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    _analyze("count_min_2", a, 2)
    table = (a / "paths.csv").read_text()
    r = nicsim("xdp", "validate", obj("count_min_2"), "--analysis", a, "--paths", "2", "--path-runs", "5",
               "--packets", "0")
    assert r.returncode == 0, r.stderr
    assert (a / "paths.csv").read_text() == table and (a / "paths.pcap").exists()
    assert (a / "accuracy.csv").read_text().count("\n") == 3 and (a / "accuracy.png").exists()


@pytest.mark.parametrize("value", ["0", "-1", "1001", "99999999999999999999999", "1.5", "three"])
def test_bad_paths_is_a_one_line_error(value: str, tmp_path: Path) -> None:
    r = nicsim("xdp", "analyze", obj("calls"), "--rate", "packet", "--paths", value, "--out", tmp_path / "o")
    assert_one_line_error(r, "--paths")
    r = nicsim("xdp", "validate", obj("calls"), "--analysis", tmp_path, "--paths", value)
    assert_one_line_error(r, "--paths")
    assert not (tmp_path / "o").exists()


def test_analyze_paths_needs_the_packet_rate(tmp_path: Path) -> None:
    r = nicsim("xdp", "analyze", obj("calls"), "--paths", "3", "--out", tmp_path / "o")
    assert_one_line_error(r, "--paths", "--rate packet")
    assert not (tmp_path / "o").exists()


def test_a_packet_the_kernel_writes_otherwise_names_the_bytes() -> None:
    # A SYN cookie is the kernel's secret: the kernel's packet differs from the interpreter's in
    # the sequence number alone, and the status says where rather than only "another packet".
    from nicsim.xdp.validate import packet_difference

    assert packet_difference(b"abcdef", b"abXdYY") == "bytes 2, 4-5 differ"
    assert packet_difference(b"ab", b"abc") == "2 bytes, the interpreter's 3"
    assert packet_difference(bytes(10), bytes([1, 0, 1, 0, 1, 0, 1, 0, 0, 0])) == \
        "bytes 0, 2, 4 and 1 more ranges differ"


def test_a_map_value_the_kernel_stamps_with_its_own_clock_is_no_mismatch(x86_jit: Path, tmp_path: Path) -> None:
    # env_stamp stores bpf_ktime_get_ns() in a map: the interpreter stores the model's time,
    # the kernel its own; the path is timed, with a note, not reported as a wrong map write.
    a = tmp_path / "a"
    _analyze("env_stamp", a, 1)
    r = nicsim("xdp", "validate", obj("env_stamp"), "--analysis", a, "--paths", "1", "--packets", "0",
               "--out", tmp_path / "v", "--json")
    row = json.loads(r.stdout)["paths"]["rows"][0]
    assert not row["status"].startswith(("kernel leaves map", "interpreter takes", "kernel takes")), row
    assert row["measured_ns"] and "its own clock or random value" in row["notes"][0], row


def test_only_bytes_holding_an_environment_result_may_differ() -> None:
    from nicsim.xdp.validate import environment_stored

    t = 123_456_789_012
    helpers = [{"helper": "bpf_ktime_get_ns", "id": 5, "value": t}]
    # A time at byte 2 (a packed struct's field, host-int's sink) is excused as an aligned one is,
    # but not a byte beside it.
    want = bytes(2) + t.to_bytes(8, "little") + bytes(6)
    assert environment_stored(bytes(2) + (t + 9).to_bytes(8, "little") + bytes(6), want, helpers)
    assert not environment_stored(b"\x01" + bytes(1) + (t + 9).to_bytes(8, "little") + bytes(6), want, helpers)
    want = t.to_bytes(8, "little") + b"\x01\x02\x03\x04\x00\x00\x00\x00"
    assert environment_stored((t + 9).to_bytes(8, "little") + want[8:], want, helpers)
    # A difference outside the stored time is a wrong write.
    assert not environment_stored((t + 9).to_bytes(8, "little") + b"\x01\x02\x03\x05" + bytes(4), want, helpers)
    assert not environment_stored(want[:8] + b"\x09" + want[9:], want, helpers)
    # Without environment results, or of another size, or an absent entry: no excuse.
    assert not environment_stored((t + 9).to_bytes(8, "little") + want[8:], want, [])
    assert not environment_stored(None, want, helpers) and not environment_stored(want[:8], want, helpers)
    # The low 32 bits of a result, as a 4-byte word (a u32 timestamp).
    w4 = (t & 0xFFFFFFFF).to_bytes(4, "little") + b"zz"
    assert environment_stored(b"\x00\x01\x02\x03zz", w4, helpers)
    # Only clocks and random numbers, and never a word of zeros: a CPU number of 0 excuses
    # no zero word the kernel wrote otherwise.
    cpu = [{"helper": "bpf_get_smp_processor_id", "id": 8, "value": 0}]
    assert not environment_stored(b"\x05\x00\x00\x00", bytes(4), cpu)
    zero_time = [{"helper": "bpf_ktime_get_ns", "id": 5, "value": 0}]
    assert not environment_stored(b"\x05" + bytes(7), bytes(8), zero_time)
    # ... but a clock the model read as 0, where the kernel stored a reading of its clock just now.
    import time

    assert environment_stored(time.monotonic_ns().to_bytes(8, "little"), bytes(8), zero_time)


def test_an_example_of_zeros_in_writable_global_data_reaches_the_kernel(x86_jit: Path, tmp_path: Path) -> None:
    # data_counter writes .data's port (10000 in the object) into the packet: the example's value
    # of .data must be the one the kernel runs with, zeros included (an entry of zeros was taken
    # for an array's untouched entry and not written, so the kernel wrote 10000).
    a = tmp_path / "a"
    s = _analyze("data_counter", a, 1)
    assert ".data" in s["maps"], s["maps"]
    r = nicsim("xdp", "validate", obj("data_counter"), "--analysis", a, "--paths", "1", "--packets", "0",
               "--out", tmp_path / "v", "--json")
    row = json.loads(r.stdout)["paths"]["rows"][0]
    assert row["status"] == "ok" or row["status"].startswith("BEATEN"), row


def test_a_path_that_needs_another_interface_says_so(x86_jit: Path, tmp_path: Path) -> None:
    # ctx_ifindex's slowest path needs ingress_ifindex 7; a test run is on the loopback
    # (ifindex 1), so validate cannot replay it, and its row names the field and the value.
    a = tmp_path / "a"
    s = _analyze("ctx_ifindex", a, 2)
    assert {"field": "ingress_ifindex", "value": 7} in s["slowest_paths"][0]["context"], s["slowest_paths"][0]
    assert s["example_context"] == s["slowest_paths"][0]["context"]
    r = nicsim("xdp", "validate", obj("ctx_ifindex"), "--analysis", a, "--paths", "2", "--packets", "0",
               "--out", tmp_path / "v", "--json")
    rows = json.loads(r.stdout)["paths"]["rows"]
    assert rows[0]["status"].startswith("interpreter takes another path"), rows[0]
    assert "needs ctx->ingress_ifindex 7, which a test run on the loopback" in rows[0]["status"], rows[0]
