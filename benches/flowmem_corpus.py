"""nicsim's reassembly against tshark's `follow,tcp,raw` on a folder of captures (issue 33).

    .venv/bin/python benches/flowmem_corpus.py DIR [--unacked keep|tshark] [--json OUT] [--list]

For every capture in DIR (pcap, pcapng, also gzip- or xz-compressed as tshark reads them):
tshark lists the TCP streams with data (`-Y tcp.len>0`) and prints each with `-z follow,tcp,raw,N`;
each direction's bytes, with every "[N bytes missing in capture file]" marker replaced by N zero
bytes (tshark's NUL after it stays), are hashed with SHA-256: the comparison of
tests/test_pcap_world.py, whose `tshark_zero_filled_sha256` is made the same way. nicsim's side is
`open_capture(capture, unacked=...)`, each direction with captured data as `to_bytes()` (holes
zero-filled; with `--tshark-compatible`, unacked="tshark" and tshark's markers, compared with
tshark's output as printed), keyed `src:sport->dst:dport` (IPv6 in brackets) as tshark names its nodes.

It reports the captures tshark follows (at least one stream with data), how many of them nicsim
refuses (an error, or no TCP flow), and how many of tshark's directions are identical. tshark's
answers are cached per capture in DIR/.tshark-ref/ (delete it after changing tshark; a file
made before format 2 is remade). A 5-tuple that several connections reused is several tshark
streams and several nicsim flows: the n-th stream with data in a direction is compared with the
n-th flow with data there (keys `...#n` from the second on). At most `--max-streams` streams
(default 40) of a capture are followed: the rest are left out of the counts (the report says how
many).

A direction that differs is explained when the difference is tshark's output rather than the
stream (docs/flowmem.md): `nul-after-marker`, nicsim's bytes equal tshark's once the NUL tshark
writes after each "[N bytes missing]" marker is dropped (the yardstick's byte, not the stream's);
`snaplen-cut`, the direction has bytes a snap length cut (`snaplen_cut_bytes`) and tshark's output
is nicsim's captured runs joined without its holes (tshark writes no marker for such bytes, so the
rest of its stream moves up). Both are reported
apart from the identical count, never in it.

The captures are not part of the repository: docs/flowmem.md lists the public projects the
measured corpus came from, with their commits.
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import json
import re
import subprocess
import sys
from pathlib import Path

MARKER = re.compile(rb"\[(\d+) bytes missing in capture file\]")
MARKER_NUL = re.compile(rb"\[(\d+) bytes missing in capture file\]\0?")
#: The cache's format: 2 keys reused 5-tuples per stream (`#n`) and keeps the hashes the
#: explanations need.
REF_FORMAT = 2
SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".cap.gz", ".pcap.xz", ".pcapng.xz")


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ipaddress.ip_address(addr).version == 6 else f"{addr}:{port}"


def _node(text: str) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":")
    return str(ipaddress.ip_address(host.strip("[]"))), int(port)


def _follow_output(text: str) -> list[tuple[tuple[str, int], tuple[str, int], bytes, bytes]]:
    """Each stream of `tshark -q -z follow,tcp,raw,...` output, in stream order (tshark prints
    the last asked first): (node 0, node 1, bytes node 0 sent, bytes node 1 sent)."""
    out = []
    for block in text.split("=" * 67):
        lines = block.splitlines()
        nodes = [ln.split(":", 1)[1] for ln in lines if ln.startswith("Node ")]
        if len(nodes) != 2:
            continue
        try:
            n0, n1 = _node(nodes[0]), _node(nodes[1])
        except ValueError:
            continue
        sent = [bytearray(), bytearray()]
        for ln in lines:
            if not ln.strip() or ln.startswith(("Follow:", "Filter:", "Node ")):
                continue
            side = 1 if ln.startswith("\t") else 0
            try:
                sent[side] += bytes.fromhex(ln.strip())
            except ValueError:
                continue
        filt = [ln for ln in lines if ln.startswith("Filter:")]
        stream = int(filt[0].rsplit(" ", 1)[1]) if filt and filt[0].rsplit(" ", 1)[1].isdigit() else -1
        out.append((stream, n0, n1, bytes(sent[0]), bytes(sent[1])))
    return [(n0, n1, b0, b1) for _, n0, n1, b0, b1 in sorted(out, key=lambda o: o[0])]


def _zero_filled(data: bytes) -> bytes:
    return MARKER.sub(lambda m: b"\0" * int(m.group(1)), data)


def _zero_filled_without_nul(data: bytes) -> bytes:
    return MARKER_NUL.sub(lambda m: b"\0" * int(m.group(1)), data)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _occurrence_keys(keys: list[str]) -> list[str]:
    """`keys` in order, the n-th repetition of one as `key#n` (n from 2): a reused 5-tuple."""
    seen: dict[str, int] = {}
    out = []
    for k in keys:
        seen[k] = seen.get(k, 0) + 1
        out.append(k if seen[k] == 1 else f"{k}#{seen[k]}")
    return out


def tshark_reference(capture: Path, max_streams: int) -> dict:
    """tshark's directions of `capture`: {key: sha256 of the zero-filled bytes}, or
    `{"followed": False}` when tshark cannot read it or finds no TCP data."""
    listed = subprocess.run(["tshark", "-n", "-r", str(capture), "-Y", "tcp.len>0", "-T", "fields", "-e", "tcp.stream"],
                            capture_output=True, text=True, timeout=600)
    streams = sorted({int(s.split(",")[0]) for s in listed.stdout.split() if s.split(",")[0].isdigit()})
    if not streams:
        return {"followed": False, "tshark_error": listed.returncode != 0}
    left_out = max(0, len(streams) - max_streams)
    streams = streams[:max_streams]
    keys: list[str] = []
    datas: list[bytes] = []
    for i in range(0, len(streams), 100):
        args = [a for s in streams[i:i + 100] for a in ("-z", f"follow,tcp,raw,{s}")]
        res = subprocess.run(["tshark", "-n", "-r", str(capture), "-q", *args], capture_output=True, text=True,
                             timeout=1200)
        for n0, n1, b0, b1 in _follow_output(res.stdout):  # in stream order
            for (a, b), data in (((n0, n1), b0), ((n1, n0), b1)):
                if data:
                    keys.append(f"{_endpoint(*a)}->{_endpoint(*b)}")
                    datas.append(data)
    raw = dict(zip(_occurrence_keys(keys), datas))
    return {"format": REF_FORMAT, "followed": bool(raw),
            "directions": {k: _sha(_zero_filled(v)) for k, v in raw.items()},
            "tshark_sha256": {k: _sha(v) for k, v in raw.items()},
            "without_nul_sha256": {k: _sha(_zero_filled_without_nul(v)) for k, v in raw.items()},
            "streams": len(streams), "streams_left_out": left_out}


def nicsim_directions(capture: Path, unacked: str, markers: bool = False) -> tuple[dict[str, str], dict[str, str]] | str:
    """nicsim's directions with captured data (SHA-256 of each stream, and of its captured runs
    joined without holes), or the one-line error that refused the capture; `markers`: each
    written as `--hole-marker tshark` writes it (tshark's own text)."""
    from nicsim.errors import InputError
    from nicsim.flowmem.reassemble import open_capture, tshark_bytes

    try:
        cap = open_capture(capture, unacked=unacked)
    except InputError as e:
        return str(e)
    except BaseException as e:  # a panic: report it, never hide it
        return f"CRASH {type(e).__name__}: {e}"
    if len(cap) == 0:
        return "no TCP flow"
    keys, hashes, joined = [], [], []
    for d in sorted(cap.directions(), key=lambda d: (d["flow"], d["direction"])):
        if d["payload_bytes"] == 0:
            continue
        keys.append(f"{_endpoint(d['src'], d['sport'])}->{_endpoint(d['dst'], d['dport'])}")
        view = cap.view(d["flow"], d["direction"])
        hashes.append(_sha(tshark_bytes(view) if markers else view.to_bytes()))
        # Only a direction nicsim marks as cut by the snap length (snaplen_cut_bytes) can be
        # explained as one.
        joined.append(_sha(b"".join(bytes(c) for _, c in view.chunks())) if d.get("snaplen_cut_bytes") else "")
    keys = _occurrence_keys(keys)
    return dict(zip(keys, hashes)), dict(zip(keys, joined))


def explain(key: str, ref: dict, got: dict[str, str], joined: dict[str, str], as_printed: bool) -> str | None:
    """Why a differing direction differs, when tshark's output rather than the stream is the
    reason (see the module's doc), else None."""
    if key not in got:
        return None
    if not as_printed and ref["without_nul_sha256"][key] == got[key]:
        return "nul-after-marker"
    if ref["tshark_sha256"][key] == joined[key] and ref["tshark_sha256"][key] != got[key]:
        return "snaplen-cut"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--unacked", default="keep", choices=["keep", "tshark", "drop"])
    ap.add_argument("--max-streams", type=int, default=40)
    ap.add_argument("--tshark-compatible", action="store_true",
                    help="compare `--tshark-compatible` files (unacked=tshark, tshark's hole markers) with tshark's "
                         "output as printed (tests/test_pcap_world.py's third comparison)")
    ap.add_argument("--json", type=Path, help="write per-capture results here")
    ap.add_argument("--list", action="store_true", help="print each refused capture and differing direction")
    args = ap.parse_args()
    cache = args.folder / ".tshark-ref"
    cache.mkdir(exist_ok=True)
    captures = sorted(p for p in args.folder.iterdir() if p.is_file() and p.name.lower().endswith(SUFFIXES))
    report = {}
    followed = refused = identical = total = left_out = 0
    explained: dict[str, int] = {}
    for cap in captures:
        ref_file = cache / (cap.name + ".json")
        ref = json.loads(ref_file.read_text()) if ref_file.is_file() else {}
        if ref.get("format") != REF_FORMAT:
            try:
                ref = tshark_reference(cap, args.max_streams)
            except subprocess.TimeoutExpired:
                ref = {"followed": False, "timeout": True}
            ref_file.write_text(json.dumps(ref))
        if not ref["followed"]:
            continue
        followed += 1
        left_out += ref.get("streams_left_out", 0)
        want = ref["tshark_sha256"] if args.tshark_compatible else ref["directions"]
        got = nicsim_directions(cap, "tshark" if args.tshark_compatible else args.unacked, args.tshark_compatible)
        entry: dict = {"directions": len(ref["directions"])}
        total += len(ref["directions"])
        if isinstance(got, str):
            refused += 1
            entry["refused"] = got
            if args.list:
                print(f"REFUSED {cap.name}: {got}")
        else:
            got, joined = got
            differ = sorted(k for k, v in want.items() if got.get(k) != v)
            identical += len(ref["directions"]) - len(differ)
            entry["differ"] = differ
            why = {k: explain(k, ref, got, joined, args.tshark_compatible) for k in differ}
            entry["explained"] = {k: v for k, v in why.items() if v}
            for v in entry["explained"].values():
                explained[v] = explained.get(v, 0) + 1
            if args.list:
                for k in differ:
                    note = f" [{why[k]}: tshark's output]" if why[k] else ""
                    print(f"DIFFERS {cap.name} {k}{'' if k in got else ' (nicsim has no such direction)'}{note}")
        report[cap.name] = entry
    share = identical / total if total else 0.0
    print(f"{len(captures)} captures, {followed} followed by tshark; {refused} refused by nicsim; "
          f"{identical} of {total} directions identical ({100 * share:.1f} %), "
          + ("--tshark-compatible against tshark's output as printed" if args.tshark_compatible
             else f"unacked={args.unacked}, tshark's markers as zeros")
          + (f"; {left_out} streams beyond --max-streams left out" if left_out else ""))
    n_explained = sum(explained.values())
    print(f"of the {total - identical} that differ, {n_explained} are tshark's output rather than the stream"
          + (" (" + ", ".join(f"{n} {k}" for k, n in sorted(explained.items())) + ")" if explained else "")
          + f"; {total - identical - n_explained} unexplained; identical or explained: {identical + n_explained} "
          f"({100 * (identical + n_explained) / total if total else 0.0:.1f} %)")
    if args.json:
        args.json.write_text(json.dumps({"captures": len(captures), "followed": followed, "refused": refused,
                                         "identical": identical, "directions": total, "explained": explained,
                                         "per_capture": report},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
