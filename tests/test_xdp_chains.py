"""XDP chains whose programs live in other objects (docs/xdp.md, "Tail calls" and "libxdp's
dispatcher"): `--tail-call MAP=INDEX:OBJ.o[:PROGRAM]` and `--dispatch OBJ.o[:PROGRAM],...` on
tests/xdp/chain_*.c and disp_*.c, analysed, run in the interpreter and, as root, confirmed in the
kernel by `nicsim xdp validate`; bad options are one-line errors (exit 2)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from nicsim.xdp.summary import Summary

from conftest import assert_one_line_error, conforms, nicsim, xdp_object


def obj(name: str) -> Path:
    p = xdp_object(name)
    assert p.exists(), f"{p} is missing: run `make xdp-suite`"
    return p


def _validate_confirms(o: Path, analysis: Path, out: Path) -> None:
    """`nicsim xdp validate --packets 0`: the example follows its path in the interpreter and,
    as root, the kernel returns the reported action."""
    r = nicsim("xdp", "validate", o, "--analysis", analysis, "--packets", "0", "--out", out)
    v = json.loads((out / "validation.json").read_text())
    assert v["checks"]["example follows the reported path in the interpreter"], (v["checks"], r.stderr)
    if os.geteuid() == 0:
        assert v["checks"]["kernel returns the reported action"], (v["checks"], r.stderr)


def test_a_slot_of_another_object_is_analysed_with_its_maps(tmp_path: Path) -> None:
    root, nxt = obj("chain_root"), obj("chain_next")
    # Alone, the root is unbounded; the hint names the other-object form.
    r = nicsim("xdp", "analyze", root, "--out", tmp_path / "u")
    assert r.returncode == 0, r.stderr
    assert "unbounded" in r.stdout and "OBJ.o[:PROGRAM]" in " ".join(r.stdout.split())
    # With chain_next.o's program in the slot, and chain_tx after it in chain_next.o's own array.
    out = tmp_path / "c"
    r = nicsim("xdp", "analyze", root, "--out", out, "--rate", "packet", "--no-mac-limit",
               "--tail-call", f"root_progs=0:{nxt}:chain_next", "--tail-call", "chain_next.o:next_progs=0:chain_tx")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert conforms(s, Summary) == []
    assert s["guarantee"]["status"] == "ssp" and s["path"]["xdp_action"] == "XDP_TX"
    assert s["prog_arrays"] == {"root_progs": {"0": "chain_next.o:xdp/chain_next"},
                                "chain_next.o:next_progs": {"0": "chain_next.o:xdp/chain_tx"}}
    # The object's path is recorded absolute, so validate finds it from anywhere.
    assert s["object"]["tail_calls"][0] == ["root_progs", 0, f"{nxt.absolute()}:chain_next"]
    assert {"stats", "chain_next.o:stats", "chain_seen"} <= set(s["maps"])
    assert "chain_next.o:chain_seen" not in s["maps"]  # pinned by name in both: one map
    if os.geteuid() == 0:  # the kernel's verifier loads the chain: root, then chain_next.o's programs
        assert s["verifier"] == {"checked": True, "loads": True}, s["verifier"]
    _validate_confirms(root, out, tmp_path / "v")
    assert s["object"]["linked"] == {str(nxt.absolute()): hashlib.sha256(nxt.read_bytes()).hexdigest()}
    # A linked object that changed since the analysis: validate refuses in one line.
    moved = tmp_path / "chain_next.o"
    moved.write_bytes(nxt.read_bytes())
    r = nicsim("xdp", "analyze", root, "--out", tmp_path / "m", "--tail-call", f"root_progs=0:{moved}:chain_next",
               "--tail-call", "chain_next.o:next_progs=none")
    assert r.returncode == 0, r.stderr
    moved.write_bytes(moved.read_bytes() + b"\0")
    r = nicsim("xdp", "validate", root, "--analysis", tmp_path / "m", "--packets", "0", "--out", tmp_path / "mv")
    assert_one_line_error(r, "linked object", "has changed since the analysis")
    # The chain costs more than the root with its array empty.
    r = nicsim("xdp", "analyze", root, "--out", tmp_path / "n", "--rate", "packet", "--tail-call", "root_progs=none", "--no-mac-limit")
    assert r.returncode == 0, r.stderr
    alone = json.loads((tmp_path / "n" / "summary.json").read_text())
    assert alone["guarantee"]["pps"] > s["guarantee"]["pps"]


def test_dispatcher_with_components_is_analysed_as_libxdp_runs_it(tmp_path: Path) -> None:
    disp, a, b = obj("disp_mini"), obj("disp_comp_a"), obj("disp_comp_b")
    outs = {}
    for name, comps in [("none", []), ("a", [a]), ("ab", [a, b])]:
        out = tmp_path / name
        extra = ["--dispatch", ",".join(map(str, comps))] if comps else []
        r = nicsim("xdp", "analyze", disp, "--out", out, "--rate", "packet", "--no-mac-limit", *extra)
        assert r.returncode == 0, r.stderr
        outs[name] = json.loads((out / "summary.json").read_text())
        assert conforms(outs[name], Summary) == []
        assert outs[name]["guarantee"]["status"] == "ssp"
    # Each component adds its path: the guarantee falls as components are attached.
    pps = [outs[n]["guarantee"]["pps"] for n in ("none", "a", "ab")]
    assert pps[0] > pps[1] > pps[2], pps
    s = outs["ab"]
    assert s["object"]["tail_calls"] == [[":dispatch", 0, str(a.absolute())], [":dispatch", 1, str(b.absolute())]]
    assert {"disp_comp_a.o:stats", "disp_comp_b.o:sums"} <= set(s["maps"])
    # comp_b (priority 10) runs first and its sum loop is on the slowest path.
    assert "bpf_map_update_elem" in " ".join(s["path"]["cost_by_class"])
    if os.geteuid() == 0:  # the composed program (components in place of the stubs) loads
        assert s["verifier"] == {"checked": True, "loads": True}, s["verifier"]
    _validate_confirms(disp, tmp_path / "ab", tmp_path / "v")
    # xdp-loader's --prio/--actions for every component: chaining after XDP_PASS alone, b's drops end the run.
    out = tmp_path / "over"
    r = nicsim("xdp", "analyze", disp, "--out", out, "--rate", "packet", "--no-mac-limit", "--dispatch", f"{a},{b}",
               "--dispatch-prio", "60", "--dispatch-actions", "XDP_PASS")
    assert r.returncode == 0, r.stderr
    o = json.loads((out / "summary.json").read_text())
    assert [":dispatch-prio", 60, ""] in o["object"]["tail_calls"]
    assert [":dispatch-actions", 4, ""] in o["object"]["tail_calls"]
    assert o["guarantee"]["status"] == "ssp"


@pytest.mark.parametrize(("args", "needles"), [
    (["--tail-call", "root_progs=0:/nonexistent/x.o"], ["--tail-call", "no such file"]),
    (["--tail-call", "root_progs=0:NOTELF"], ["--tail-call", "not an ELF object"]),
    (["--tail-call", "root_progs=0:FIFO"], ["--tail-call", "not a regular file"]),  # read, it would hang
    (["--tail-call", "root_progs=0:DIR"], ["--tail-call", "not a regular file"]),
    (["--tail-call", "root_progs=0:NEXT:nope"], ["--tail-call", "no program"]),
    (["--tail-call", "root_progs=0:NEXT"], ["--tail-call", "several XDP programs", "chain_next.o:PROGRAM"]),
    (["--tail-call", "root_progs=4:NEXT:chain_next"], ["--tail-call", "slot 4 is past the array's 4 entries"]),
    (["--tail-call", "stats=0:NEXT:chain_next"], ["--tail-call", "not prog_array"]),
    (["--tail-call", "root_progs=0:NEXT:chain_next", "--tail-call", "chain_next.o:nosuch=0:chain_tx"],
     ["--tail-call", "nosuch"]),
    (["--tail-call", "chain_next.o:next_progs=none"], ["--tail-call", "no map 'chain_next.o:next_progs'"]),
    (["--tail-call", "nosuch=none"], ["--tail-call nosuch=none: the object has no map 'nosuch'"]),  # as given
    (["--dispatch", "NEXT:chain_tx"], ["--dispatch", "not a libxdp dispatcher"]),
    (["--dispatch", "chain_tx"], ["--dispatch", "expected OBJ.o or OBJ.o:PROGRAM"]),
    (["--dispatch", "NEXT:"], ["--dispatch", "no program after"]),
    (["--dispatch", ","], ["--dispatch", "expected OBJ.o"]),
    (["--dispatch-prio", "5"], ["--dispatch-prio", "only with --dispatch"]),
    (["--dispatch", "NEXT:chain_tx", "--dispatch-actions", "XDP_PASS,XDP_NOPE"], ["--dispatch-actions", "XDP_NOPE"]),
])
def test_bad_links_are_one_line_errors(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    notelf = tmp_path / "text.o"
    notelf.write_text("not an object\n")
    os.mkfifo(tmp_path / "fifo.o")
    (tmp_path / "dir.o").mkdir()
    subst = {"NEXT": str(obj("chain_next")), "NOTELF": str(notelf), "FIFO": str(tmp_path / "fifo.o"),
             "DIR": str(tmp_path / "dir.o")}
    for k, v in subst.items():
        args = [a.replace(k, v) for a in args]
    r = nicsim("xdp", "analyze", obj("chain_root"), "--out", tmp_path / "o", *args)
    assert_one_line_error(r, *needles)
    assert not (tmp_path / "o").exists()


def test_dispatcher_refuses_what_it_cannot_hold(tmp_path: Path) -> None:
    disp, root, nxt = obj("disp_mini"), obj("chain_root"), obj("chain_next")
    r = nicsim("xdp", "analyze", disp, "--out", tmp_path / "o", "--dispatch", str(root))
    assert_one_line_error(r, "--dispatch", "makes tail calls")
    r = nicsim("xdp", "analyze", disp, "--out", tmp_path / "o", "--dispatch", ",".join([f"{nxt}:chain_tx"] * 5))
    assert_one_line_error(r, "--dispatch", "at most 4 programs")
    assert not (tmp_path / "o").exists()


def test_help_explains_the_other_object_forms() -> None:
    r = nicsim("xdp", "analyze", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "--dispatch" in text and "OBJ.o[:PROGRAM]" in text and "pin by name" in text.replace("│ ", "")
