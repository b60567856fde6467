"""`nicsim xdp analyze` on the clang-built suite ($NICSIM_XDP_OBJS, built by `make xdp-suite`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ROOT, assert_one_line_error, nicsim

OBJS = Path(os.environ.get("NICSIM_XDP_OBJS", ROOT / "target" / "xdp"))


def obj(name: str) -> Path:
    p = OBJS / f"{name}.o"
    assert p.exists(), f"{p} is missing: run `make xdp-suite`"
    return p


def test_analyze_writes_the_naive_bound(tmp_path: Path) -> None:
    out = tmp_path / "cm10"
    r = nicsim("xdp", "analyze", obj("count_min_10"), "--out", out)
    assert r.returncode == 0, r.stderr
    assert "11.93 Gbit/s" in r.stdout
    s = json.loads((out / "summary.json").read_text())
    g = s["guarantee"]
    assert g["status"] == "naive-only" and g["bottleneck"] == "dram"
    assert g["pps"] == pytest.approx(248.5e6 / 10, rel=1e-6)
    assert g["bps"] == pytest.approx(g["pps"] * 60 * 8, rel=1e-9)
    assert s["naive"]["pps"] == g["pps"]
    assert s["graph"]["loops"] == [{"insn": s["graph"]["loops"][0]["insn"], "line": s["graph"]["loops"][0]["line"],
                                    "bound": 9, "evident": True}]
    assert s["graph"]["loops"][0]["line"].startswith("count_min.c:")
    assert s["path"]["insns"] and all(line.startswith("count_min.c:") for line in s["path"]["source_lines"])
    assert s["trace"][0]["pps"] == g["pps"]
    assert s["maps"]["sketch"]["max_entries"] == 10 * 4096
    assert len(s["object"]["sha256"]) == 64


def test_same_object_same_summary(tmp_path: Path) -> None:
    runs = []
    for k in range(2):
        r = nicsim("xdp", "analyze", obj("calls"), "--out", tmp_path / str(k))
        assert r.returncode == 0, r.stderr
        s = json.loads((tmp_path / str(k) / "summary.json").read_text())
        for key in ("seconds", "trace"):
            s.pop(key)
        s["object"].pop("path")
        runs.append(s)
    assert runs[0] == runs[1]


@pytest.mark.parametrize("args,needles", [
    (["/bin/ls"], ["/bin/ls", "not a BPF object"]),
    (["{loop_nobound}"], ["no evident bound", "--loop-bound", "loop_nobound.c:"]),
    (["{calls}", "--section", "nope"], ["no program in section or function 'nope'"]),
    (["{two_progs}"], ["several XDP programs", "--section"]),
    (["{bad_printk}"], ["unsupported helper bpf_trace_printk (id 6) on target nfp"]),
    (["{calls}", "--target", "nosuch"], ["unknown target 'nosuch'"]),
    (["{truncated}"], ["truncated.o"]),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    truncated = tmp_path / "truncated.o"
    truncated.write_bytes(obj("calls").read_bytes()[:300])
    names = {"truncated": truncated, **{n: obj(n) for n in ("loop_nobound", "calls", "two_progs", "bad_printk")}}
    args = [a.format(**names) for a in args]
    out = tmp_path / "out"
    assert_one_line_error(nicsim("xdp", "analyze", *args, "--out", out), *needles)
    assert not out.exists()


def test_bad_target_file_names_the_key(tmp_path: Path) -> None:
    t = tmp_path / "t.toml"
    text = (ROOT / "python" / "nicsim" / "xdp" / "targets" / "nfp.toml").read_text()
    t.write_text(text.replace("count = 50", 'count = "fifty"'))
    assert_one_line_error(nicsim("xdp", "analyze", obj("calls"), "--target", t, "--out", tmp_path / "o"),
                          "t.toml", "cores.count")


def test_loop_bound_option(tmp_path: Path) -> None:
    r = nicsim("xdp", "analyze", obj("loop_nobound"), "--loop-bound", "32", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["graph"]["loops"][0]["bound"] == 32 and not s["graph"]["loops"][0]["evident"]
