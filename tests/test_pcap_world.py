"""The reassembler on third-party captures (../shared/pcap-world: 50 captures from the test suites
of tcpdump, zeek, suricata-verify, gopacket and scapy), against tshark 4.0's
`-z follow,tcp,raw` bytes per flow direction (their SHA-256 in reference.json, with tshark's
"[N bytes missing]" markers as N zeros, nicsim's hole policy).

Every capture must be read, at least `MATCHED` directions must be identical, and each one that
is not must be a difference documented in docs/flowmem.md ("nicsim and tshark"), listed in
`DIFFERENCES` with its class: a change that breaks another direction, or mends a listed one,
fails here until the list and the docs say so.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from pathlib import Path

import pytest

# pytest-xdist: one worker runs this module (the module's reassembly of every capture is shared by its tests).
pytestmark = pytest.mark.xdist_group("pcap-world")

ROOT = Path(__file__).resolve().parents[1]
WORLD = ROOT.parent / "shared" / "pcap-world"

#: Directions identical to tshark's, measured 2026-11-27 (was 182 of 207 on 2026-11-26), with
#: the default policies and with `unacked="tshark"` (tshark's own way with unacknowledged data).
MATCHED = {"keep": 201, "tshark": 203}

#: The directions that differ, each with its class (docs/flowmem.md, "nicsim and tshark").
DIFFERENCES = {
    # Data after a RST that the peer never acknowledged (issue 18 section 2: --unacked).
    ("suricata__tcp-rst-unacked-stream-10__TLPW1-tcp-174.56.47.59-10.3.11.101-tcp-80-49309.pcap",
     "174.56.47.59:80->10.3.11.101:49309"): "rst-unacked",
    # Snaplen-cut segments: tshark drops the bytes the capture does not hold without a marker,
    # so the stream after them shifts; nicsim keeps the captured part and marks the rest a hole.
    # (The client's direction of communityid ends with such a cut, unacknowledged: it matches
    # with unacked="tshark".)
    ("zeek__communityid__tcp.pcap", "128.232.110.120:34855->66.35.250.204:80"): "cut-bytes",
    ("zeek__communityid__tcp.pcap", "66.35.250.204:80->128.232.110.120:34855"): "cut-bytes",
    ("zeek__krb__smb2_krb.pcap", "172.19.23.143:445->10.10.34.184:56493"): "cut-bytes",
    # tshark writes a NUL after each "[N bytes missing]" marker (one byte more per hole), and
    # keeps the overlapping copy that reaches the in-order point first (neither first nor last).
    ("zeek__tcp__reassembly.pcap", "63.193.213.194:2564->128.3.97.175:80"): "hole-marker, overlap",
    # A segment whose TCP header is cut: tshark shows no direction, nicsim a hole-only one.
    ("zeek__tcp__truncated-header.pcap", "128.3.26.249:25->201.186.157.67:60827"): "cut-header",
}


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ipaddress.ip_address(addr).version == 6 else f"{addr}:{port}"


#: With unacked="tshark", the differences left: those where tshark loses positions or writes
#: its marker's NUL (docs/flowmem.md).
DIFFERENCES_TSHARK = {k: v for k, v in DIFFERENCES.items()
                      if v != "rst-unacked" and k[1] != "128.232.110.120:34855->66.35.250.204:80"}


def _directions(capture: Path, unacked: str = "keep", markers: bool = False) -> dict[str, str]:
    """SHA-256 of each direction's stream (holes zero-filled), keyed as reference.json keys;
    directions without a byte of captured data (empty, or holes only: a capture cut at the
    headers) are left out, as tshark shows none."""
    from nicsim.flowmem.reassemble import open_capture, tshark_bytes

    cap = open_capture(capture, unacked=unacked)
    out = {}
    for d in cap.directions():
        if d["payload_bytes"] == 0:
            continue
        key = f"{_endpoint(d['src'], d['sport'])}->{_endpoint(d['dst'], d['dport'])}"
        view = cap.view(d["flow"], d["direction"])
        out[key] = hashlib.sha256(tshark_bytes(view) if markers else view.to_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module", params=["keep", "tshark"])
def world(request: pytest.FixtureRequest) -> tuple[str, dict[str, dict], dict[str, dict[str, str]]]:
    if not (WORLD / "reference.json").is_file():
        pytest.skip(f"{WORLD} is not beside the clone")
    ref = json.loads((WORLD / "reference.json").read_text())
    unacked = request.param
    return unacked, ref, {name: _directions(WORLD / "captures" / name, unacked) for name in sorted(ref)}


def test_every_third_party_capture_is_read_and_agrees_with_tshark(world) -> None:
    unacked, ref, got = world
    matched, differ = 0, set()
    for name, r in ref.items():
        for key, v in r["directions"].items():
            want = {v.get("tshark_zero_filled_sha256"), v.get("independent_sha256")} - {None}
            if got[name].get(key) in want:
                matched += 1
            else:
                differ.add((name, key))
    total = sum(len(r["directions"]) for r in ref.values())
    expected = DIFFERENCES if unacked == "keep" else DIFFERENCES_TSHARK
    assert differ == set(expected), "differences changed: update DIFFERENCES and docs/flowmem.md"
    assert matched >= MATCHED[unacked] and matched + len(differ) == total
    assert matched / total >= 0.97


def test_each_capture_names_its_directions_as_tshark_does(world) -> None:
    # No direction with data that nicsim finds is unknown to tshark, but for the documented
    # ones.
    _, ref, got = world
    extra = {(n, k) for n, dirs in got.items() for k in dirs if k not in ref[n]["directions"]}
    assert extra <= set(DIFFERENCES), extra


def test_tshark_compatible_files_are_tsharks_own_output() -> None:
    # --tshark-compatible (unacked="tshark", tshark's hole markers), against tshark's output as it
    # printed it: what is left differs where tshark loses positions (snaplen cuts), chooses
    # overlapping bytes by arrival at the in-order point, or shows no direction (a cut header).
    if not (WORLD / "reference.json").is_file():
        pytest.skip(f"{WORLD} is not beside the clone")
    ref = json.loads((WORLD / "reference.json").read_text())
    matched, differ = 0, set()
    for name, r in ref.items():
        got = _directions(WORLD / "captures" / name, "tshark", markers=True)
        for key, v in r["directions"].items():
            if got.get(key) in {v.get("tshark_sha256"), v.get("independent_sha256")} - {None}:
                matched += 1
            else:
                differ.add((name, key))
    assert differ == set(DIFFERENCES_TSHARK)
    assert matched == sum(len(r["directions"]) for r in ref.values()) - len(DIFFERENCES_TSHARK) == 203
