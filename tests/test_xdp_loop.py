"""`bpf_loop` (helper 181) with a bounded callback: analysis, costs, the kernel, hostile inputs
(tests/xdp/loop_callback.c, loop_cb_nested.c, loop_cb_pktlen.c, loop_cb_ret2.c), and summarised
calls whose nr_loops is known only at run time (loop_cb_summary.c)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, assert_one_line_error, nicsim, xdp_object

NFP = tomllib.loads((ROOT / "crates" / "nicsim-xdp" / "targets" / "nfp.toml").read_text())["helpers"]


def obj(name: str) -> Path:
    p = xdp_object(name)
    assert p.exists(), f"{p} is missing: run `make xdp-suite`"
    return p


def analyze(name: str, out: Path, *args: str) -> dict:
    r = nicsim("xdp", "analyze", obj(name), "--rate", "packet", "--no-mac-limit", *args, "--out", out)
    assert r.returncode == 0, r.stderr
    return json.loads((out / "summary.json").read_text())


def call_pc(s: dict) -> list[int]:
    return [lp["insn"] for lp in s["graph"]["loops"]]


@pytest.mark.parametrize(("name", "args", "bounds"), [
    ("loop_callback", (), [8]),
    ("loop_cb_nested", (), [4, 4]),
    ("loop_cb_pktlen", ("--loop-bound", "5"), [5]),
    ("loop_cb_ret2", (), [8]),
])
def test_bpf_loop_costs_its_call_once_and_each_callback_call(name: str, args: tuple[str, ...], bounds: list[int],
                                                              tmp_path: Path) -> None:
    s = analyze(name, tmp_path / "a", *args)
    assert s["guarantee"]["status"] == "ssp"
    assert [lp["bound"] for lp in s["graph"]["loops"]] == bounds
    # The SSP's bpf_loop cost: `loop` once per call, `loop.iteration` per call of a callback
    # (each callback call comes back to the call: a call's visits less one).
    insns = s["path"]["insns"]
    visits = sum(insns.count(pc) for pc in call_pc(s))
    calls = len([pc for pc in call_pc(s) if pc in insns])
    if name == "loop_cb_nested":  # the inner call is made once per outer callback call
        inner, outer = call_pc(s)
        calls = insns.count(outer) - 1 + 1
    want = NFP["loop"]["cycles"] * calls + NFP["loop.iteration"]["cycles"] * (visits - calls)
    got = s["path"]["cost_by_class"]["call bpf_loop"]["cores"]
    assert got == pytest.approx(want), (visits, calls)
    assert visits > calls  # the SSP calls its callback


def test_the_slowest_path_walks_every_option(tmp_path: Path) -> None:
    # loop_callback: the SSP calls the callback 8 times (walks 8 options) and drops the packet.
    s = analyze("loop_callback", tmp_path / "a")
    insns = s["path"]["insns"]
    assert insns.count(call_pc(s)[0]) == 9 and s["path"]["xdp_action"] == "XDP_DROP"
    # A smaller bound is a faster program: loop_cb_pktlen with 2 calls against 5.
    fast = analyze("loop_cb_pktlen", tmp_path / "b", "--loop-bound", "2")
    slow = analyze("loop_cb_pktlen", tmp_path / "c", "--loop-bound", "5")
    assert fast["guarantee"]["pps"] > slow["guarantee"]["pps"]


def test_a_counter_kept_across_a_call_bounds_its_loop(tmp_path: Path) -> None:
    # loop_call_counter: `for (i = 0; i < 4; i++)` with a bpf-to-bpf call in its body, the counter
    # in a callee-saved register. Each return restores it from its own iteration's call site:
    # the bound is evident (the loop runs its body at most 4 times: 3 back edges), and the
    # slowest path runs it four times, its example doing so in the interpreter.
    from nicsim import _core

    s = analyze("loop_call_counter", tmp_path / "a")
    assert [(lp["bound"], lp["evident"]) for lp in s["graph"]["loops"]] == [(3, True)]
    assert s["guarantee"]["status"] == "ssp"
    assert s["path"]["insns"].count(call_pc(s)[0]) == 4  # the loop's head, once an iteration
    data = xdp_object("loop_call_counter").read_bytes()
    run = json.loads(_core.xdp_run(data, None, bytes.fromhex(s["example_packet_hex"]), json.dumps(s["maps"]),
                                   100_000))
    assert run["trace"] == s["path"]["insns"]


BPF_MAX_LOOPS = 1 << 23


@pytest.mark.parametrize("target", ["nfp", "x86-jit"])
def test_nr_loops_from_the_packet_is_summarised_with_the_kernels_cap(target: str, x86_jit: Path,
                                                                     tmp_path: Path) -> None:
    # Without --loop-bound the call is summarised: its callback once, counted BPF_MAX_LOOPS times
    # (the kernel's cap: more gives -E2BIG without a call); `loop` once, `loop.iteration` per call.
    s = analyze("loop_cb_pktlen", tmp_path / "a", "--target", target)
    assert s["guarantee"]["status"] == "ssp"
    [lp] = s["graph"]["loops"]
    assert (lp["bound"], lp["summary"], lp["evident"]) == (BPF_MAX_LOOPS, True, True)
    costs = NFP if target == "nfp" else tomllib.loads(x86_jit.read_text())["helpers"]
    want = costs["loop"]["cycles"] + BPF_MAX_LOOPS * costs["loop.iteration"]["cycles"]
    got = s["path"]["cost_by_class"]["call bpf_loop"]["cores"]
    assert got == pytest.approx(want, rel=1e-6)
    # The callback's instructions count BPF_MAX_LOOPS times each: the path's cost is above the
    # loop's own by at least that many instructions.
    assert s["path"]["cost_by_class"]["load"]["cores"] >= BPF_MAX_LOOPS
    # With --loop-bound the loop is unrolled as before: far faster.
    b = analyze("loop_cb_pktlen", tmp_path / "b", "--target", target, "--loop-bound", "2")
    assert not b["graph"]["loops"][0]["summary"]
    assert b["guarantee"]["pps"] > 1000 * s["guarantee"]["pps"]


def test_a_summary_call_is_any_call_not_the_first(tmp_path: Path) -> None:
    # loop_cb_summary's callback counts in a hash map only once an earlier call set `seen` through
    # its context: the summary's one call starts from what earlier calls may have written, so
    # the slowest path makes the update (2^23 times).
    s = analyze("loop_cb_summary", tmp_path / "a")
    assert s["guarantee"]["status"] == "ssp"
    [lp] = s["graph"]["loops"]
    assert lp["summary"] and lp["bound"] == BPF_MAX_LOOPS
    upd = s["path"]["cost_by_class"]["call bpf_map_update_elem"]
    assert upd["insns"] == 1 and upd["cores"] >= BPF_MAX_LOOPS
    out = nicsim("xdp", "analyze", obj("loop_cb_summary"), "--rate", "packet", "--out", tmp_path / "b").stdout
    assert "summarised" in out and "BPF_MAX_LOOPS" in out


@pytest.mark.parametrize("name", ["loop_callback", "loop_cb_nested", "loop_cb_pktlen"])
def test_validate_runs_bpf_loop_in_the_kernel(name: str, x86_jit: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    analyze(name, a, *(("--loop-bound", "4") if name == "loop_cb_pktlen" else ()))
    r = nicsim("xdp", "validate", obj(name), "--analysis", a, "--packets", "300")
    v = json.loads((a / "validation.json").read_text())
    assert {"example follows the reported path in the interpreter", "kernel returns the reported action"} <= set(
        v["checks"])
    if name != "loop_cb_pktlen":  # its guarantee holds for 4 calls only (--loop-bound)
        assert v["ok"] and r.returncode == 0, (v["checks"], v["timing"]["slowest"], r.stderr)


def test_a_callback_returning_2_is_analysed_and_the_verifier_refuses_it(tmp_path: Path) -> None:
    # The helper stops at any non-zero result: the path that stops after 4 calls is the SSP
    # (XDP_DROP), and the kernel's verifier refuses the program, naming the callback's result.
    a = tmp_path / "a"
    s = analyze("loop_cb_ret2", a)
    assert s["path"]["xdp_action"] == "XDP_DROP" and s["path"]["insns"].count(call_pc(s)[0]) == 5
    r = nicsim("xdp", "validate", obj("loop_cb_ret2"), "--analysis", a)
    assert_one_line_error(r, "verifier rejected", "should have been in [0, 1]")


def test_the_interpreter_runs_bpf_loop_as_the_kernel_does() -> None:
    from nicsim import _core

    def syn(opts: bytes) -> bytes:
        eth = bytes(12) + b"\x08\x00"
        ip = bytes([0x45, 0, 0, 40 + len(opts)]) + bytes(5) + b"\x06" + bytes(10)
        tcp = bytes(12) + bytes([(5 + len(opts) // 4) << 4, 0x02]) + bytes(6)
        return eth + ip + tcp + opts

    cases = [syn(b"\x02\x04\x05\xb4" + b"\x01" * 4), syn(b"\x01" * 12), syn(b"\x02\x04\x05\xb4\x00" + bytes(3)),
             syn(b"\x03\x01" * 8), syn(b"\x01" * 7 + b"\x02\x04\x05\xb4" + b"\x01"), syn(b"\x02\x01" + bytes(6))]
    data = obj("loop_callback").read_bytes()
    k = _core.XdpKernel(data, None, "")
    seen = set()
    for pkt in cases:
        want, _dur, _ = k.run(pkt, 1)
        got = json.loads(_core.xdp_run(data, None, pkt, "{}", 100_000))
        assert got["retval"] == want, pkt.hex()
        seen.add(want)
    assert seen == {1, 2}  # XDP_DROP (an MSS seen within 8 options), XDP_PASS


def test_helpers_lists_bpf_loop_with_both_costs(x86_jit: Path) -> None:
    r = nicsim("xdp", "helpers", "--json")
    assert r.returncode == 0, r.stderr
    by = {(h["helper"], h["map_type"]): h for h in json.loads(r.stdout)["helpers"]}
    for part in ("(the call, once)", "(each callback call)"):
        row = by[("bpf_loop", part)]
        assert set(row["costs"]) == {"nfp", "x86-jit"}, part
        assert row["costs"]["nfp"]["source"].startswith("estimate"), part
        assert row["costs"]["x86-jit"]["source"].startswith("measured"), part
    x86 = tomllib.loads(x86_jit.read_text())["helpers"]
    assert x86["loop.iteration"]["cycles"] > 0

