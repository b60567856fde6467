"""`nicsim xdp` on objects built as real users' are (tests/xdp/ld_*.c, built by `make xdp-suite`):
programs found as libbpf, iproute2 and older loaders find them, chosen with --section/--program
on every command that takes them, and one-line errors for what the analysis does not support."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_xdp import obj

from nicsim.xdp.summary import SweepSummary

from conftest import assert_one_line_error, conforms, nicsim


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def analyze(tmp_path: Path, name: str, *args: str, out: str = "o"):
    return nicsim("xdp", "analyze", obj(name), *args, "--timeout", "30", "--out", tmp_path / out)


@pytest.mark.parametrize("name,section,program", [
    ("ld_text_legacy", ".text", "ld_text_legacy"),  # the paper's objects: .text, no BTF, legacy maps
    ("ld_iproute2", "prog", "xdp_drop_vlan"),  # iproute2: `prog`, struct bpf_elf_map; a tc program beside
    ("ld_globals", "xdp", "ld_globals"),  # .data, .bss, .rodata, .rodata.str1.1
    ("ld_kv_pair", "xdp", "ld_kv_pair"),  # BPF_ANNOTATE_KV_PAIR's .maps.stats; empty .data and .bss (GCC)
])
def test_loader_conventions_are_analysed(tmp_path: Path, name: str, section: str, program: str) -> None:
    r = analyze(tmp_path, name)
    assert r.returncode == 0, r.stderr
    s = summary(tmp_path / "o")
    assert (s["object"]["section"], s["object"]["program"]) == (section, program)
    assert s["guarantee"]["status"] == "ssp"
    # The kernel was asked (its maps created as a loader creates them), unless BPF is not allowed.
    assert s["verifier"].get("loads") or "not permitted" in s["verifier"].get("why", ""), s["verifier"]


def test_several_programs_are_listed_and_every_listed_name_is_accepted(tmp_path: Path) -> None:
    r = analyze(tmp_path, "ld_sections")
    line = assert_one_line_error(r, "ld_sections.o", "several XDP programs", "--program", "--section")
    xdp, others = line.split("several XDP programs: ")[1].split("; ")[:2]
    # The XDP programs, then (as not XDP) the programs of other types.
    assert xdp.split(", ") == ["fwd (section xdp_fwd)", "icmp (section xdp_icmp)", "sock (section xdp_sock)"]
    assert others == "programs of other types: tc_prog (section tc), sock_filter (section socket)"
    listed = xdp.split(", ") + others.removeprefix("programs of other types: ").split(", ")
    assert not (tmp_path / "o").exists()
    for k, item in enumerate(listed):
        func, sec = item.removesuffix(")").split(" (section ")
        for opt, name in (("--section", func), ("--section", sec), ("--program", func)):
            out = f"{k}{opt}{name}"
            r = analyze(tmp_path, "ld_sections", opt, name, "--rate", "packet", out=out)
            assert r.returncode == 0, (opt, name, r.stderr)
            s = summary(tmp_path / out)
            assert (s["object"]["section"], s["object"]["program"]) == (sec, func)


def test_a_section_with_two_programs_needs_the_function(tmp_path: Path) -> None:
    r = nicsim("xdp", "analyze", obj("two_progs"), "--section", "xdp", "--out", tmp_path / "o")
    assert_one_line_error(r, "section 'xdp' holds several programs: first (section xdp), second (section xdp)",
                          "--program")
    r = nicsim("xdp", "analyze", obj("two_progs"), "--section", "xdp", "--program", "second", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert summary(tmp_path / "o")["object"]["program"] == "second"
    r = nicsim("xdp", "analyze", obj("two_progs"), "--program", "third", "--out", tmp_path / "x")
    assert_one_line_error(r, "no program named 'third' (programs: first (section xdp), second (section xdp))")


def test_metadata_kfuncs_are_analysed(tmp_path: Path) -> None:
    for name in ("ld_kfunc", "kf_rx_meta"):
        r = analyze(tmp_path, name, out=name)
        assert r.returncode == 0, r.stderr
        assert summary(tmp_path / name)["object"]["program"] == name


def test_conntrack_kfuncs_are_analysed(tmp_path: Path) -> None:
    # The conntrack lookup's outcome is free (the table is not the program's): each program
    # reaches an SSP; with bad tuple and opts lengths only the drop path is feasible.
    for name in ("ld_kfunc_ct", "kf_ct_stateful", "kf_ct_badargs", "kf_ct_badrelease"):
        r = analyze(tmp_path, name, out=name)
        assert r.returncode == 0, r.stderr
        s = summary(tmp_path / name)
        assert s["guarantee"]["status"] == "ssp", (name, s["guarantee"])
        assert s["object"]["program"] == name
    assert summary(tmp_path / "kf_ct_badargs")["path"]["retval"] == 1
    assert summary(tmp_path / "kf_ct_badargs")["paths_unsat"] >= 1
    assert summary(tmp_path / "ld_kfunc_ct")["path"]["retval"] == 2


def test_unsupported_kfunc_is_a_one_line_error(tmp_path: Path) -> None:
    r = analyze(tmp_path, "ld_kfunc_unknown")
    line = assert_one_line_error(r)
    assert line.startswith(f"nicsim: error: {obj('ld_kfunc_unknown')}: instruction 0: kfunc bpf_nicsim_no_such_kfunc "
                           "is not supported: supported kfuncs: bpf_xdp_metadata_rx_timestamp"), line
    assert not (tmp_path / "o").exists()


def test_maps_of_maps_are_analysed_with_their_inner_maps(tmp_path: Path) -> None:
    # The outer lookup gives the inner map (one synthetic `<outer>.inner` map per map of maps)
    # or NULL; the analysis reaches an SSP, and its maps include the inner ones.
    for name, inner in (("ld_map_in_map", {"outer.inner", "outer_h.inner"}),
                        ("map_in_map_acl", {"tenants.inner", "protos.inner"}), ("mim_zero", {"zero_outer.inner"}),
                        ("mim_fallback", {"lru_mapping.inner"})):  # katran's per-CPU LRU or a fallback
        r = analyze(tmp_path, name, out=name)
        assert r.returncode == 0, r.stderr
        s = summary(tmp_path / name)
        assert s["guarantee"]["status"] == "ssp", name
        assert inner <= set(s["maps"]), (name, s["maps"])
    # Slots that alias (one map in two slots, a map also used directly): every outcome the
    # kernel can give stays satisfiable (each operation ends in XDP_TX or XDP_DROP).
    r = analyze(tmp_path, "mim_alias", "--paths", "100", "--rate", "packet", out="alias")
    assert r.returncode == 0, r.stderr
    seen = {(p["example_packet_hex"][:2], p["xdp_action"]) for p in summary(tmp_path / "alias")["slowest_paths"]}
    assert {(f"0{op}", a) for op in (1, 2, 3) for a in ("XDP_TX", "XDP_DROP")} <= seen, seen
    # Any other helper through an inner map is one error naming the map.
    r = analyze(tmp_path, "mim_devmap", out="devmap")
    assert_one_line_error(r, "mim_devmap.o", "map 'ports.inner' of type devmap is not supported",
                          "bpf_redirect_map on an inner map of 'ports'")
    assert not (tmp_path / "devmap").exists()


def test_sweep_takes_the_program(tmp_path: Path) -> None:
    out = tmp_path / "s"
    r = nicsim("xdp", "sweep", obj("two_progs"), obj("ld_sections"), "--program", "second", "--out", out, "-j", "1",
               "--fail-fast")
    assert_one_line_error(r, "ld_sections.o", "no program named 'second'")
    r = nicsim("xdp", "sweep", obj("two_progs"), obj("ld_sections"), "--program", "second", "--out", out, "-j", "1")
    assert r.returncode == 1, r.stderr  # --keep-going: the other object is analysed
    s = summary(out)
    assert conforms(s, SweepSummary) == []
    assert [p["summary"]["object"]["program"] for p in s["points"]] == ["second"]
    assert [f["object"] for f in s["failed"]] == [str(obj("ld_sections"))]
    assert "no program named 'second'" in s["failed"][0]["error"]
    r = nicsim("xdp", "sweep", obj("two_progs"), "--program", "second", "--rate", "packet", "--out", out, "-j", "1")
    assert r.returncode == 0, r.stderr
    s = summary(out)
    assert conforms(s, SweepSummary) == []
    assert [p["summary"]["object"]["program"] for p in s["points"]] == ["second"]


def test_validate_runs_the_program_the_analysis_analysed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NICSIM_X86_JIT", str(tmp_path / "uncalibrated.toml"))  # no x86-jit guarantee needed
    a = tmp_path / "a"
    r = nicsim("xdp", "analyze", obj("two_progs"), "--program", "second", "--out", a)
    assert r.returncode == 0, r.stderr
    assert summary(a)["path"]["retval"] == 1  # XDP_DROP: `first` returns XDP_PASS
    r = nicsim("xdp", "validate", obj("two_progs"), "--analysis", a, "--packets", "5", "--runs", "1")
    v = json.loads((a / "validation.json").read_text())
    assert v["checks"]["example follows the reported path in the interpreter"], v
    assert v["checks"]["kernel returns the reported action"], v
    assert v["kernel"]["retval"] == 1
    r = nicsim("xdp", "validate", obj("two_progs"), "--analysis", a, "--program", "first")
    assert_one_line_error(r, "is the analysis of program 'second' in section 'xdp', not of --program first")


def test_validate_fills_a_map_of_maps_slots_in_the_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel loader stores the synthetic inner map's file descriptor in every slot the
    # example fills, as the interpreter models them: the example packet (a tenant's VLAN, a
    # listed source) reaches the inner ACL lookup in the kernel too.
    monkeypatch.setenv("NICSIM_X86_JIT", str(tmp_path / "uncalibrated.toml"))
    a = tmp_path / "a"
    r = nicsim("xdp", "analyze", obj("map_in_map_acl"), "--rate", "packet", "--out", a)
    assert r.returncode == 0, r.stderr
    s = summary(a)
    assert s["maps"]["tenants"]["entries"] and s["maps"]["tenants.inner"]["entries"], s["maps"]
    r = nicsim("xdp", "validate", obj("map_in_map_acl"), "--analysis", a, "--packets", "20", "--runs", "1")
    v = json.loads((a / "validation.json").read_text())
    assert v["checks"]["example follows the reported path in the interpreter"], v
    assert v["checks"]["kernel returns the reported action"], v
    assert v["kernel"]["retval"] == s["path"]["retval"]


def _btf(types: bytes, strings: bytes) -> bytes:
    """A BTF blob (`struct btf_header`, then the types and the strings)."""
    import struct

    return struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings)) + types + strings


def test_co_re_relocations_take_the_btf_given(tmp_path: Path) -> None:
    """`--btf FILE` (as libbpf's btf_custom_path): the object's CO-RE relocations are resolved against
    it. A BTF without `struct xdp_md` leaves the context's loads unresolved and reachable: one line
    naming the instruction, its source line and the BTF. A file that is not BTF, or none, is one line
    naming it. The default, the running kernel's, is in tests of the loader (loader.rs) and recorded
    in `object.btf`."""
    import struct

    only_int = _btf(struct.pack("<IIII", 1, 1 << 24, 4, 32), b"\0int\0")
    (tmp_path / "int.btf").write_bytes(only_int)
    r = analyze(tmp_path, "core_relo", "--btf", str(tmp_path / "int.btf"))
    assert_one_line_error(r, "instruction 0", "core_relo.c:25", "CO-RE relocation found nothing", "int.btf")
    (tmp_path / "text.btf").write_text("not BTF\n")
    r = analyze(tmp_path, "core_relo", "--btf", str(tmp_path / "text.btf"))
    assert_one_line_error(r, "core_relo.o", "text.btf", "is not BTF", "CO-RE relocations")
    r = analyze(tmp_path, "core_relo", "--btf", str(tmp_path / "nothere.btf"))
    assert_one_line_error(r, "--btf", "nothere.btf", "no such file")
    assert not (tmp_path / "o").exists()
    r = analyze(tmp_path, "core_relo")
    assert r.returncode == 0, r.stderr
    s = summary(tmp_path / "o")
    assert s["object"]["btf"] == "/sys/kernel/btf/vmlinux"
    assert s["verifier"].get("loads") is not False and "would reject" not in r.stderr  # unrelocated, it would


@pytest.mark.parametrize("what", ["kconfig", "btf", "tail-call"])
def test_force_never_replaces_a_folder_holding_what_the_loader_reads(tmp_path: Path, what: str) -> None:
    """The loader's inputs beside the object (the kernel configuration, the BTF of the CO-RE
    relocations, another object a `--tail-call` links in) are inputs like the object: `--force`
    never replaces a folder that holds one."""
    import shutil

    held = tmp_path / "held"
    held.mkdir()
    (held / "mine.txt").write_text("a user's file\n")
    if what == "kconfig":
        (held / "kconfig").write_text("CONFIG_HZ=250\nCONFIG_BPF_SYSCALL=y\n")
        args = [obj("ld_kconfig"), "--kconfig", held / "kconfig"]
    elif what == "btf":
        shutil.copy("/sys/kernel/btf/vmlinux", held / "vmlinux")
        args = [obj("core_relo"), "--btf", held / "vmlinux"]
    else:
        shutil.copy(obj("chain_next"), held / "chain_next.o")
        args = [obj("chain_root"), "--tail-call", f"root_progs=0:{held / 'chain_next.o'}:chain_next"]
    r = nicsim("xdp", "analyze", *args, "--timeout", "30", "--force", "--out", held)
    assert_one_line_error(r, "held", "holds the input")
    assert (held / "mine.txt").read_text() == "a user's file\n"


@pytest.mark.parametrize("var,name", [("NICSIM_BTF", "core_relo"), ("NICSIM_KCONFIG", "ld_kconfig")])
def test_the_loaders_files_named_by_the_environment_must_be_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   var: str, name: str) -> None:
    """A pipe (or a folder) named by NICSIM_BTF or NICSIM_KCONFIG is one line naming it, not a read
    that waits for ever for a writer."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv(var, str(fifo))
    r = analyze(tmp_path, name)
    assert_one_line_error(r, str(fifo), "not a regular file")
    monkeypatch.setenv(var, str(tmp_path))
    r = analyze(tmp_path, name)
    assert_one_line_error(r, str(tmp_path), "not a regular file" if var == "NICSIM_BTF" else "a folder")
    assert not (tmp_path / "o").exists()
