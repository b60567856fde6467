"""`__kconfig` externs (issue 32): filled as libbpf fills them, from the running kernel's
configuration or the file NICSIM_KCONFIG names (tests/xdp/ld_kconfig.c)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_one_line_error, nicsim, xdp_object


def _analyze(tmp_path: Path, name: str) -> dict:
    out = tmp_path / name
    r = nicsim("xdp", "analyze", xdp_object("ld_kconfig"), "--target", "nfp", "--rate", "packet", "--out", out)
    assert r.returncode == 0, r.stderr
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize(("config", "action"), [
    # HZ = 1000: a first byte below 100 takes the counting XDP_TX path, the slowest.
    ("CONFIG_HZ=1000\nCONFIG_BPF_SYSCALL=y\n", "XDP_TX"),
    # HZ = 0 (no byte is below 0) or BPF_SYSCALL a module: that path is infeasible.
    ("CONFIG_HZ=0\nCONFIG_BPF_SYSCALL=y\n", "XDP_PASS"),
    ("CONFIG_HZ=1000\nCONFIG_BPF_SYSCALL=m\n", "XDP_PASS"),
])
def test_kconfig_externs_take_the_configurations_values(config: str, action: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("# a kernel configuration\n" + config)
    monkeypatch.setenv("NICSIM_KCONFIG", str(cfg))
    s = _analyze(tmp_path, "a")
    assert s["guarantee"]["status"] == "ssp", s["guarantee"]
    assert s["path"]["xdp_action"] == action
    if s["verifier"]["checked"]:
        # The .kconfig map is passed to the kernel as libbpf passes it: the verifier loads it.
        assert s["verifier"]["loads"], s["verifier"]


def test_kconfig_extern_without_a_value_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("CONFIG_BPF_SYSCALL=y\n")
    monkeypatch.setenv("NICSIM_KCONFIG", str(cfg))
    r = nicsim("xdp", "analyze", xdp_object("ld_kconfig"), "--target", "nfp", "--out", tmp_path / "o")
    assert_one_line_error(r, "CONFIG_HZ", "not __weak", "libbpf would refuse")
    monkeypatch.setenv("NICSIM_KCONFIG", str(tmp_path / "missing"))
    r = nicsim("xdp", "analyze", xdp_object("ld_kconfig"), "--target", "nfp", "--out", tmp_path / "p")
    line = assert_one_line_error(r, f"NICSIM_KCONFIG={tmp_path / 'missing'}", "no such file")
    assert "bad BPF object" not in line  # the environment's file is bad, not the object


def test_kconfig_externs_of_the_running_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    if not (Path("/proc/config.gz").exists() or Path(f"/boot/config-{platform.release()}").exists()):
        pytest.skip("the running kernel's configuration is not readable here")
    monkeypatch.delenv("NICSIM_KCONFIG", raising=False)
    s = _analyze(tmp_path, "a")
    assert s["guarantee"]["status"] == "ssp", s["guarantee"]
    # Set but empty is unset (as NICSIM_BTF=""): it was "NICSIM_KCONFIG=: no such file".
    monkeypatch.setenv("NICSIM_KCONFIG", "")
    assert _analyze(tmp_path, "b")["guarantee"] == s["guarantee"]


def test_kconfig_option_names_the_configuration_and_validate_takes_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # --kconfig FILE is NICSIM_KCONFIG=FILE; the analysis records it (object.kconfig) and validate
    # takes it, so that the interpreter and the kernel see the analysis's constants.
    monkeypatch.delenv("NICSIM_KCONFIG", raising=False)
    none, every = tmp_path / "hz0", tmp_path / "hz2560"
    none.write_text("CONFIG_HZ=0\nCONFIG_BPF_SYSCALL=y\n")  # no first byte is below 0: XDP_PASS
    every.write_text("CONFIG_HZ=2560\nCONFIG_BPF_SYSCALL=y\n")  # every first byte is below 256: XDP_TX
    out = tmp_path / "a"
    r = nicsim("xdp", "analyze", xdp_object("ld_kconfig"), "--target", "nfp", "--rate", "packet", "--kconfig", none,
               "--out", out)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["path"]["xdp_action"] == "XDP_PASS" and s["object"]["kconfig"] == str(none.absolute())
    checks = "example follows the reported path in the interpreter"
    r = nicsim("xdp", "validate", xdp_object("ld_kconfig"), "--analysis", out, "--packets", "0", "--out", tmp_path / "v")
    v = json.loads((tmp_path / "v" / "validation.json").read_text())
    assert v["checks"][checks], v["checks"]
    # Another configuration given to validate: the example takes another path there.
    r = nicsim("xdp", "validate", xdp_object("ld_kconfig"), "--analysis", out, "--packets", "0", "--kconfig", every,
               "--out", tmp_path / "w")
    v = json.loads((tmp_path / "w" / "validation.json").read_text())
    assert not v["checks"][checks], v["checks"]
    r = nicsim("xdp", "analyze", xdp_object("ld_kconfig"), "--kconfig", tmp_path / "missing", "--out", tmp_path / "m")
    assert_one_line_error(r, "--kconfig")
