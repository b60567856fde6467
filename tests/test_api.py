"""The Python API: load_config, run, Datapath, sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

import nicsim
from nicsim.sweep import sweep

from conftest import PAPER, conforms

SMALL = {"traffic.packets": 2000, "measure.window": [100, 1900]}


@pytest.fixture(scope="module")
def small() -> nicsim.Config:
    return nicsim.load_config(PAPER, SMALL.items())


def test_datapath_in_slices_with_remap(small: nicsim.Config) -> None:
    dp = nicsim.Datapath(small)
    assert dp.now_us == 0.0
    assert dp.run(until_us=20.0) is False
    assert dp.now_us == pytest.approx(20.0)
    dp.remap("flow4", ["crc"])
    with pytest.raises(nicsim.ConfigError):
        dp.remap("flow4", ["nope"])
    assert dp.run() is True
    s = dp.summary()
    p = s["packets"]
    assert p["offered"] == 2000 and p["offered"] == p["delivered"] + p["dropped_total"] + p["in_flight"]


def test_run_matches_stepwise(small: nicsim.Config, tmp_path: Path) -> None:
    a = nicsim.run(small)
    b = nicsim.run(small, out=tmp_path / "out")
    assert a == b
    assert (tmp_path / "out" / "summary.json").exists()


def test_api_errors_name_file_and_key(small: nicsim.Config) -> None:
    bad = dict(small)
    bad["arch"] = "fpga"
    with pytest.raises(nicsim.ConfigError) as e:
        nicsim.Datapath(nicsim.config.Config(bad, source="x.toml"))
    assert e.value.file == "x.toml" and e.value.path == "arch"
    assert str(e.value).startswith("x.toml: arch: ")


def test_sweep_order_and_determinism(small: nicsim.Config) -> None:
    params = {"traffic.rate_gbps": [64.0, 96.0, 128.0]}
    serial = sweep(small, params, workers=1, progress=False)
    parallel = sweep(small, params, workers=2, progress=False)
    assert [p["params"]["traffic.rate_gbps"] for p in parallel] == [64.0, 96.0, 128.0]
    assert serial == parallel
    assert [p["summary"]["offered_gbps"] for p in serial] == [64.0, 96.0, 128.0]


def test_sweep_reports_bad_points_before_running(small: nicsim.Config) -> None:
    with pytest.raises(nicsim.ConfigError, match="arch"):
        sweep(small, {"arch": ["flexpipe", "fpga"]}, progress=False)
    with pytest.raises(nicsim.InputError, match="executor"):
        sweep(small, {"arch": ["flexpipe"]}, executor="slurm", progress=False)


def test_the_extension_stub_names_what_the_extension_defines() -> None:
    # python/nicsim/_core.pyi (shipped with py.typed, as pydantic-core does): every class,
    # function and method of the extension, and nothing it does not have.
    import ast

    from nicsim import _core

    stub = ast.parse((Path(nicsim.__file__).parent / "_core.pyi").read_text())
    declared: dict[str, set[str]] = {}
    for node in stub.body:
        if isinstance(node, ast.ClassDef):
            declared[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            declared[node.name] = set()
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert set(declared) == public
    for name, members in declared.items():
        obj = getattr(_core, name)
        if isinstance(obj, type) and not issubclass(obj, Exception):
            have = {m for m in vars(obj) if not m.startswith("__") or m in ("__new__", "__len__")}
            assert members == have, name
    assert (Path(nicsim.__file__).parent / "py.typed").is_file()


@pytest.mark.parametrize("arch,variant", [("flexpipe", "eval"), ("panic", "full"), ("staticpipe", "eval")])
def test_datapath_summary_matches_its_typed_dicts(small: nicsim.Config, arch: str, variant: str) -> None:
    """The TypedDicts in nicsim.datapath.summary describe what a real run returns, key by key
    (the Rust structs produce it); the checker itself finds a stray key."""
    from nicsim.datapath import simulate
    from nicsim.datapath.summary import Summary

    params = {**SMALL, "arch": arch, "panic.variant": variant, "functional": True}
    s = simulate(nicsim.load_config(PAPER, params.items()))
    assert conforms(s, Summary) == []
    assert s["fifos"] and s["per_flow"] and ("panic" in s) == (arch == "panic")
    s["fifos"]["dma.in"]["capacity"] = 1
    assert conforms(s, Summary) == ["summary.fifos.dma.in.capacity: not in the type"]
