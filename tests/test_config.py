"""Configuration loading: overrides, value parsing, path resolution and error messages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import nicsim
from nicsim.config import get_key, parse_key, parse_override, parse_sweep_param, parse_value, split_top_level, with_overrides

from conftest import PAPER


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("96", 96),
        ("1.5", 1.5),
        ("true", True),
        ('"panic"', "panic"),
        ("panic", "panic"),
        ("[100, 1900]", [100, 1900]),
        ('["crc","rss"]', ["crc", "rss"]),
        ('{dist = "fixed", bytes = 64}', {"dist": "fixed", "bytes": 64}),
        ("10.0.0.0/8", "10.0.0.0/8"),
        ("", ""),
    ],
)
def test_parse_value(text: str, value: object) -> None:
    assert parse_value(text) == value


def test_parse_key() -> None:
    assert parse_key("flows[0].chain") == ["flows", 0, "chain"]
    assert parse_key("offloads[1].units") == ["offloads", 1, "units"]
    assert parse_key("a[1][2].b") == ["a", 1, 2, "b"]
    with pytest.raises(nicsim.ConfigError, match="count from 0"):  # not Python's negative indices
        parse_key("traffic[-1].rate_mbps")
    with pytest.raises(nicsim.ConfigError, match="not a key path"):
        parse_key("flows[x].chain")
    with pytest.raises(nicsim.ConfigError, match="not a key path"):
        parse_key("a..b")


def test_parse_override() -> None:
    assert parse_override("traffic.rate_gbps=96") == ("traffic.rate_gbps", 96)
    assert parse_override('flows[0].chain=["crc","rss"]') == ("flows[0].chain", ["crc", "rss"])
    assert parse_override("a=b=c") == ("a", "b=c")
    with pytest.raises(nicsim.ConfigError, match="expected KEY=VALUE"):
        parse_override("traffic.rate_gbps")


def test_split_top_level_respects_brackets_and_quotes() -> None:
    assert split_top_level("64,96,128") == ["64", "96", "128"]
    assert split_top_level('["crc","rss"],["crc"]') == ['["crc","rss"]', '["crc"]']
    assert split_top_level("{a = 1, b = [2, 3]},x") == ["{a = 1, b = [2, 3]}", "x"]
    assert split_top_level('"a,b",c') == ['"a,b"', "c"]
    assert parse_sweep_param('flows[0].chain=["crc","rss"],["crc"]') == ("flows[0].chain", [["crc", "rss"], ["crc"]])
    assert parse_sweep_param("arch=flexpipe,panic") == ("arch", ["flexpipe", "panic"])


def test_load_config_applies_overrides() -> None:
    cfg = nicsim.load_config(PAPER, ["traffic.rate_gbps=96", 'flows[0].chain=["crc","rss"]', "pipeline.clock_mhz=300",
                                     "arch=panic", "traffic.faults.bad_fcs=0.5"])
    assert cfg["traffic"]["rate_gbps"] == 96
    assert cfg["flows"][0]["chain"] == ["crc", "rss"]
    assert cfg["flows"][1]["chain"] == ["crc", "sha3", "jpeg", "rss"]
    assert cfg["pipeline"]["clock_mhz"] == 300
    assert cfg["arch"] == "panic"
    assert cfg["traffic"]["faults"] == {"bad_fcs": 0.5}
    assert cfg.source == str(PAPER)
    # (key, value) pairs and mappings work as well, and the original is not modified.
    again = with_overrides(cfg, {"traffic.rate_gbps": 64.0})
    assert again["traffic"]["rate_gbps"] == 64.0 and cfg["traffic"]["rate_gbps"] == 96


def test_override_errors_name_the_key() -> None:
    with pytest.raises(nicsim.ConfigError) as e:
        nicsim.load_config(PAPER, ['flows[9].chain=["crc"]'])
    assert str(e.value) == "--param: flows[9].chain: index 9 out of range (flows has 4 entries)"
    with pytest.raises(nicsim.ConfigError, match="seed is not a table"):
        nicsim.load_config(PAPER, ["seed.x=1"])
    # Validated by the core, reported against the --param that set the key, with its path.
    with pytest.raises(nicsim.ConfigError) as e:
        nicsim.load_config(PAPER, ['flows[0].chain=["crc","nope"]'])
    assert str(e.value).startswith("--param: flows[0].chain[1]: unknown offload 'nope'")
    # A problem elsewhere in the file stays the file's.
    with pytest.raises(nicsim.ConfigError) as e:
        nicsim.load_config(PAPER, ['offloads[0].name="renamed"'])
    assert str(e.value).startswith(f"{PAPER}: flows[")
    with pytest.raises(nicsim.ConfigError, match=r"traffic\.rate_gbps: must be a finite number"):
        nicsim.load_config(PAPER, ["traffic.rate_gbps=nan"])


def test_a_protocol_is_a_name_or_a_number_as_text_or_as_a_number() -> None:
    # config-reference.md: "`tcp`, `udp`, `icmp` (any case) or a protocol number".
    for v in ('"udp"', '"17"', "17", '"TCP"'):
        nicsim.load_config(PAPER, [f"flows[0].proto={v}", f"flows[1].match.proto={v}"])
    with pytest.raises(nicsim.ConfigError, match=r"flows\[0\]\.proto"):
        nicsim.load_config(PAPER, ["flows[0].proto=256"])
    with pytest.raises(nicsim.ConfigError, match=r"flows\[0\]\.proto"):
        nicsim.load_config(PAPER, ["flows[0].proto=1.5"])
    # An integer beyond TOML's 64 bits is named as such, not as a float.
    with pytest.raises(nicsim.ConfigError, match="integer out of TOML's 64-bit range"):
        nicsim.load_config(PAPER, ["seed=18446744073709551616"])


def test_toml_syntax_error_has_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('seed = 1\narch = "flexpipe"\n[traffic\n')
    with pytest.raises(nicsim.ConfigError) as e:
        nicsim.load_config(bad)
    assert str(e.value).startswith(f"{bad}: line 3, column 9: ")


def test_relative_paths_resolve_against_the_config_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfgdir = tmp_path / "cfg"
    cfgdir.mkdir()
    text = PAPER.read_text().replace('size = { dist = "uniform_set", values = [64, 128, 256, 512, 1024, 1500] }',
                                     'size = { dist = "capture", path = "sizes.pcap" }\nreplay = { path = "../caps/in.pcap" }')
    (cfgdir / "c.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    cfg = nicsim.load_config(Path("cfg/c.toml"))
    assert get_key(cfg, "traffic.size.path") == str(cfgdir.resolve() / "sizes.pcap")
    assert get_key(cfg, "traffic.replay.path") == str(tmp_path.resolve() / "caps" / "in.pcap")
    # A path given as an override is relative to the current directory.
    cfg = nicsim.load_config(cfgdir / "c.toml", ["traffic.replay.path=here.pcap"])
    assert get_key(cfg, "traffic.replay.path") == os.path.join(str(tmp_path.resolve()), "here.pcap")
    assert get_key(cfg, "traffic.size.path") == str(cfgdir.resolve() / "sizes.pcap")
