"""Flow reassembly against tshark's `follow,tcp,raw` on generated captures whose input space is wide
(issue 33): segment orders, retransmitted and overlapping copies, IP fragment splits and orders
(IPv4 and IPv6), and 5-tuples reused by later connections. Hypothesis draws each capture; nicsim's
`--tshark-compatible` bytes (unacked="tshark", tshark's hole markers) must equal tshark's output
for every stream, and the stream's bytes must be the data sent (so the test fails for nicsim's own
mistakes also where tshark is not installed).

A modest number of examples runs in `make test` (NICSIM_PROPERTY_EXAMPLES raises it).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SYN, FIN, RST, PSH, ACK = 0x02, 0x01, 0x04, 0x08, 0x10
CLIENT4, SERVER4 = bytes([10, 1, 0, 1]), bytes([10, 1, 0, 2])
CLIENT6, SERVER6 = bytes.fromhex("20010db8000000000000000000000001"), bytes.fromhex("20010db8000000000000000000000002")
CPORT, SPORT = 40123, 8080
TSHARK = shutil.which("tshark")


def props(default: int) -> Any:
    n = int(os.environ.get("NICSIM_PROPERTY_EXAMPLES", default))
    return settings(max_examples=n, deadline=None, database=None, derandomize=True)


def tcp(sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes) -> bytes:
    # No checksum: tshark does not check TCP checksums by default.
    return struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0,
                       0) + payload


def ipv4(src: bytes, dst: bytes, body: bytes, ident: int = 1, frag: int = 0x4000, proto: int = 6) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), ident, frag, 64, proto, 0, src, dst) + body


def ipv6(src: bytes, dst: bytes, body: bytes, nh: int = 6) -> bytes:
    return struct.pack("!IHBB16s16s", 6 << 28, len(body), nh, 64, src, dst) + body


def eth(ip: bytes) -> bytes:
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + (b"\x86\xdd" if ip[0] >> 4 == 6 else b"\x08\x00") + ip


def packet(v6: bool, to_server: bool, seq: int, ack: int, flags: int, payload: bytes = b"") -> bytes:
    c, s = (CLIENT6, SERVER6) if v6 else (CLIENT4, SERVER4)
    src, dst, sp, dp = (c, s, CPORT, SPORT) if to_server else (s, c, SPORT, CPORT)
    t = tcp(sp, dp, seq, ack, flags, payload)
    return ipv6(src, dst, t) if v6 else ipv4(src, dst, t)


def fragments(ip: bytes, cuts: list[int], order: list[int], ident: int) -> list[bytes]:
    """`ip` (a whole IPv4 or IPv6 packet) as fragments cut at `cuts` (multiples of 8 inside its
    payload), sent in `order`."""
    v6 = ip[0] >> 4 == 6
    head, body = (ip[:40], ip[40:]) if v6 else (ip[:20], ip[20:])
    bounds = [0, *cuts, len(body)]
    pieces = []
    for lo, hi in zip(bounds, bounds[1:]):
        more = hi < len(body)
        if v6:
            fh = struct.pack("!BBHI", 6, 0, lo | int(more), ident)
            pieces.append(ipv6(head[8:24], head[24:40], fh + body[lo:hi], nh=44))
        else:
            pieces.append(ipv4(head[12:16], head[16:20], body[lo:hi], ident, (0x2000 if more else 0) | lo // 8))
    return [pieces[i] for i in order]


def write_pcap(path: Path, ips: list[bytes]) -> None:
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    for i, ip in enumerate(ips):
        f = eth(ip)
        out += struct.pack("<IIII", 1_000_000 + i, 0, len(f), len(f)) + f
    path.write_bytes(bytes(out))


def tshark_follow(path: Path, streams: int) -> list[tuple[tuple[str, int], bytes, bytes]]:
    """TCP streams 0 to `streams` - 1 as tshark follows them in `path`, in stream order: (node 0,
    node 0's bytes, node 1's bytes); `follow,tcp,raw` output as printed (markers and all). A
    stream tshark does not have is left out."""
    assert TSHARK
    args = [a for s in range(streams) for a in ("-z", f"follow,tcp,raw,{s}")]
    text = subprocess.run([TSHARK, "-n", "-r", str(path), "-q", *args], capture_output=True, text=True,
                          check=True).stdout
    out = []
    for block in text.split("=" * 67):
        lines = block.splitlines()
        nodes = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Node ")]
        if len(nodes) != 2 or nodes[0] == ":0":
            continue
        host, _, port = nodes[0].rpartition(":")
        # tshark prints the streams last asked first: ordered by the filter's stream number.
        stream = next(int(ln.rsplit(" ", 1)[1]) for ln in lines if ln.startswith("Filter:"))
        sent = [bytearray(), bytearray()]
        for ln in lines:
            if ln.strip() and not ln.startswith(("Follow:", "Filter:", "Node ")):
                sent[1 if ln.startswith("\t") else 0] += bytes.fromhex(ln.strip())
        out.append((stream, (host.strip("[]"), int(port)), bytes(sent[0]), bytes(sent[1])))
    return [(n, a, b) for _, n, a, b in sorted(out)]


def nicsim_follow(path: Path) -> list[tuple[tuple[str, int], bytes, bytes]]:
    """nicsim's flows as `--tshark-compatible` writes them, in flow order, those with data."""
    from nicsim.flowmem.reassemble import open_capture, tshark_bytes

    cap = open_capture(path, unacked="tshark")
    by_flow: dict[int, dict[int, Any]] = {}
    for d in cap.directions():
        by_flow.setdefault(d["flow"], {})[d["direction"]] = d
    out = []
    for flow, dirs in sorted(by_flow.items()):
        if not any(d["payload_bytes"] for d in dirs.values()):
            continue
        first = dirs.get(0) or dirs[1]
        node0 = (first["src"], first["sport"]) if 0 in dirs else (first["dst"], first["dport"])
        data = [tshark_bytes(cap.view(flow, k)) if k in dirs and dirs[k]["payload_bytes"] else b"" for k in (0, 1)]
        out.append((node0, data[0], data[1]))
    return out


def _same(ours: list, theirs: list) -> None:
    # tshark's node 0 is the side of the stream's first packet, as nicsim's direction 0.
    assert [(n, a, b) for n, a, b in ours] == [(n, a, b) for n, a, b in theirs]


@st.composite
def reordered_stream(draw: Any) -> tuple[bool, bytes, list[bytes]]:
    """One connection: the client's data cut into segments, sent in a drawn order with drawn
    retransmissions and overlapping copies (of the same bytes), some IP-fragmented (cuts and
    fragment order drawn); the server acknowledges everything at the end and closes."""
    v6 = draw(st.booleans())
    data = bytes((i * 7 + 3) % 251 for i in range(draw(st.integers(1, 600))))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(data) - 1)), max_size=6)) - {len(data)})
    bounds = [0, *cuts, len(data)]
    segs = list(zip(bounds, bounds[1:]))
    # Overlapping copies: a drawn range of the same bytes, sent again.
    for _ in range(draw(st.integers(0, 3))):
        lo = draw(st.integers(0, len(data) - 1))
        segs.append((lo, draw(st.integers(lo + 1, len(data)))))
    order = draw(st.permutations(range(len(segs))))
    isn_c, isn_s = draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**32 - 1))
    end = isn_c + 1 + len(data)
    ips = [packet(v6, True, isn_c, 0, SYN), packet(v6, False, isn_s, isn_c + 1, SYN | ACK),
           packet(v6, True, isn_c + 1, isn_s + 1, ACK)]
    ident = 100
    for i in order:
        lo, hi = segs[i]
        ip = packet(v6, True, isn_c + 1 + lo, isn_s + 1, ACK | PSH, data[lo:hi])
        body = len(ip) - (40 if v6 else 20)
        if body > 16 and draw(st.booleans()):
            fcuts = sorted(draw(st.sets(st.integers(1, (body - 1) // 8).map(lambda k: k * 8), min_size=1,
                                        max_size=3)))
            forder = draw(st.permutations(range(len(fcuts) + 1)))
            ident += 1
            ips += fragments(ip, fcuts, forder, ident)
        else:
            ips.append(ip)
    ips += [packet(v6, False, isn_s + 1, end, ACK), packet(v6, True, end, isn_s + 1, FIN | ACK),
            packet(v6, False, isn_s + 1, end + 1, FIN | ACK), packet(v6, True, end + 1, isn_s + 2, ACK)]
    return v6, data, ips


@props(6)
@given(case=reordered_stream())
def test_reordered_overlapping_fragmented_streams_equal_tshark(case: Any, tmp_path_factory: Any) -> None:
    v6, data, ips = case
    path = tmp_path_factory.mktemp("r") / "r.pcap"
    write_pcap(path, ips)
    ours = nicsim_follow(path)
    # Every byte arrived and was acknowledged: the stream is the data sent.
    client = "2001:db8::1" if v6 else "10.1.0.1"
    assert ours == [((client, CPORT), data, b"")]
    if TSHARK:
        _same(ours, tshark_follow(path, 2))


def follow_model(events: list[tuple[int, ...]], data: bytes) -> bytes:
    """One direction as tshark's follow writes it (epan/dissectors/packet-tcp.c,
    `follow_tcp_tap_listener`, `check_follow_fragments`), written out independently of nicsim:
    `events` in capture order, `(lo, hi)` a segment of this direction's data (offsets from the
    SYN's sequence number + 1) or `(ack,)` a packet of the peer acknowledging offset `ack`. A run
    after a hole waits until the hole's data arrives or a *later* acknowledgement is *beyond* the
    run's start; then the hole is written as tshark's marker."""
    nxt, queued, out = 0, {}, bytearray()

    def drain() -> None:
        nonlocal nxt
        while queued and min(queued) <= nxt:
            hi = queued.pop(min(queued))
            if hi > nxt:
                out.extend(data[nxt:hi])
                nxt = hi

    for event in events:
        if len(event) == 1:
            while queued and event[0] > min(queued):
                lo = min(queued)
                out.extend(f"[{lo - nxt} bytes missing in capture file]".encode() + b"\0")
                nxt = lo
                drain()
        elif event[0] <= nxt:
            if event[1] > nxt:
                out.extend(data[nxt:event[1]])
                nxt = event[1]
                drain()
        else:
            queued[event[0]] = max(queued.get(event[0], 0), event[1])
    return bytes(out)


@st.composite
def lost_and_acknowledged(draw: Any) -> tuple[bytes, list[tuple[int, ...]], list[bytes]]:
    """One connection whose capture misses some of the client's segments (some retransmitted
    later, some never), the others in a drawn order, with the server's acknowledgements at drawn
    places: each acknowledges a drawn offset, a run's start, one byte beyond it, or the end."""
    data = bytes((i * 5 + 1) % 253 for i in range(draw(st.integers(2, 400))))
    cuts = sorted(draw(st.sets(st.integers(1, len(data) - 1), max_size=6)))
    bounds = [0, *cuts, len(data)]
    segs = list(zip(bounds, bounds[1:]))
    lost = draw(st.sets(st.integers(0, len(segs) - 1), max_size=len(segs) - 1))
    sent = [segs[i] for i in draw(st.permutations([i for i in range(len(segs)) if i not in lost]))]
    sent += [segs[i] for i in sorted(lost) if draw(st.booleans())]  # retransmitted late
    acks = st.sampled_from(sorted({*bounds, *(b + 1 for b in bounds[:-1])}))
    events: list[tuple[int, ...]] = []
    for seg in sent:
        events += [(draw(acks),) for _ in range(draw(st.integers(0, 2)))]
        events.append(seg)
    events += [(draw(acks),) for _ in range(draw(st.integers(0, 2)))]
    isn_c, isn_s = draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**32 - 1))
    ips = [packet(False, True, isn_c, 0, SYN), packet(False, False, isn_s, isn_c + 1, SYN | ACK),
           packet(False, True, isn_c + 1, isn_s + 1, ACK)]
    for event in events:
        if len(event) == 1:
            ips.append(packet(False, False, isn_s + 1, isn_c + 1 + event[0], ACK))
        else:
            lo, hi = event
            ips.append(packet(False, True, isn_c + 1 + lo, isn_s + 1, ACK | PSH, data[lo:hi]))
    return data, events, ips


@props(8)
@given(case=lost_and_acknowledged())
def test_runs_after_holes_are_written_when_tshark_writes_them(case: Any, tmp_path_factory: Any) -> None:
    # tshark writes a run after a hole only on an acknowledgement beyond its start that arrives
    # after it (not one equal to its start, nor one before it): nicsim follows it packet by packet.
    data, events, ips = case
    path = tmp_path_factory.mktemp("a") / "a.pcap"
    write_pcap(path, ips)
    ours = nicsim_follow(path)
    assert [(n, a) for n, a, _ in ours] == [(("10.1.0.1", CPORT), follow_model(events, data))]
    if TSHARK:
        _same(ours, tshark_follow(path, 2))


def test_an_acknowledgement_equal_to_a_runs_start_or_before_it_writes_nothing_after_the_hole(
        tmp_path: Path) -> None:
    data = bytes(range(60))
    for events, written in (([(0, 20), (40, 60), (40,)], 20), ([(0, 20), (41,), (40, 60)], 20),
                            ([(0, 20), (40, 60), (41,)], 20 + 35 + 20)):
        ips = [packet(False, True, 99, 0, SYN), packet(False, False, 7, 100, SYN | ACK)]
        for event in events:
            ips.append(packet(False, False, 8, 100 + event[0], ACK) if len(event) == 1
                       else packet(False, True, 100 + event[0], 8, ACK | PSH, data[event[0]:event[1]]))
        path = tmp_path / f"{len(ips)}-{written}.pcap"
        write_pcap(path, ips)
        ours = nicsim_follow(path)
        assert len(ours[0][1]) == written, events
        if TSHARK:
            _same(ours, tshark_follow(path, 1))


@pytest.mark.parametrize("data_after", ["second", "first"])
def test_a_later_syn_ack_at_another_sequence_number_is_the_new_base_as_in_tshark(data_after: str,
                                                                                  tmp_path: Path) -> None:
    # Two SYN-ACKs at different sequence numbers (nDPI's tls_multiple_synack_different_seq):
    # tshark numbers the server's stream from the later one, so data that follows it is written
    # and data that follows the first is not.
    first, second = 238755595, 2829651200
    base = second if data_after == "second" else first
    ips = [packet(False, True, 3420771758, 0, SYN), packet(False, False, first, 3420771759, SYN | ACK),
           packet(False, False, second, 3420771759, SYN | ACK),
           packet(False, True, 3420771759, second + 1, ACK | PSH, b"q" * 30),
           packet(False, False, base + 1, 3420771789, ACK | PSH, b"r" * 20)]
    path = tmp_path / "s.pcap"
    write_pcap(path, ips)
    ours = nicsim_follow(path)
    assert ours == [(("10.1.0.1", CPORT), b"q" * 30, b"r" * 20 if data_after == "second" else b"")]
    if TSHARK:
        _same(ours, tshark_follow(path, 1))


@st.composite
def reused_tuples(draw: Any) -> tuple[list[bytes], list[bytes]]:
    """Connections one after another on one 5-tuple, each with its own initial sequence numbers,
    each ended by FIN, RST or nothing, some opened by a retransmitted SYN (the same sequence
    number: not a new connection)."""
    ips: list[bytes] = []
    sent = []
    for k in range(draw(st.integers(1, 4))):
        isn_c, isn_s = draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 2**32 - 1))
        data = f"connection {k} ".encode() * draw(st.integers(1, 20))
        syn = packet(False, True, isn_c, 0, SYN)
        ips += [syn, syn] if draw(st.booleans()) else [syn]
        ips += [packet(False, False, isn_s, isn_c + 1, SYN | ACK), packet(False, True, isn_c + 1, isn_s + 1, ACK),
                packet(False, True, isn_c + 1, isn_s + 1, ACK | PSH, data)]
        end = isn_c + 1 + len(data)
        ips.append(packet(False, False, isn_s + 1, end, ACK))
        close = draw(st.sampled_from(["fin", "rst", "none"]))
        if close == "fin":
            ips += [packet(False, True, end, isn_s + 1, FIN | ACK), packet(False, False, isn_s + 1, end + 1,
                                                                            FIN | ACK),
                    packet(False, True, end + 1, isn_s + 2, ACK)]
        elif close == "rst":
            ips.append(packet(False, True, end, 0, RST))
        sent.append(data)
    return ips, sent


@props(6)
@given(case=reused_tuples())
def test_reused_tuples_are_flows_of_their_own_as_tshark_streams(case: Any, tmp_path_factory: Any) -> None:
    from hypothesis import assume

    ips, sent = case
    # Initial sequence numbers drawn equal would be one connection: distinct, as real ones are.
    syns = [ip for ip in ips if ip[20 + 13] == SYN]
    assume(len({ip[24:28] for ip in syns}) == len(sent))
    path = tmp_path_factory.mktemp("u") / "u.pcap"
    write_pcap(path, ips)
    ours = nicsim_follow(path)
    assert [a for _, a, _ in ours] == sent
    if TSHARK:
        _same(ours, tshark_follow(path, len(sent) + 1))


def test_reused_tuple_is_counted_in_the_summary(tmp_path: Path) -> None:
    import json

    from conftest import nicsim

    ips = []
    for isn, word in ((1000, b"first"), (9000, b"second")):
        ips += [packet(False, True, isn, 0, SYN), packet(False, False, 5, isn + 1, SYN | ACK),
                packet(False, True, isn + 1, 6, ACK | PSH, word), packet(False, False, 6, isn + 1 + len(word), ACK),
                packet(False, True, isn + 1 + len(word), 6, RST)]
    path = tmp_path / "u.pcap"
    write_pcap(path, ips)
    out = tmp_path / "out"
    assert nicsim("flowmem", "reassemble", path, "--out", out).returncode == 0
    summary = json.loads((out / "summary.json").read_text())
    flows = json.loads((out / "flows.json").read_text())
    assert summary["reused_tuples"] == 1 and summary["flows"] == 2
    assert [(out / f["file"]).read_bytes() for f in flows if f["file"]] == [b"first", b"second"]


def test_records_longer_than_the_snap_length_are_read_whole(tmp_path: Path) -> None:
    # A pcap header or pcapng interface whose snap length (64) is below its records' captured
    # lengths: wiretap reads the records whole, and so does nicsim.
    ips = [packet(False, True, 100, 0, SYN), packet(False, False, 500, 101, SYN | ACK),
           packet(False, True, 101, 501, ACK | PSH, b"A" * 120), packet(False, False, 501, 221, ACK | PSH, b"B" * 90),
           packet(False, True, 221, 591, ACK)]
    pcap = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 64, 1))
    for i, ip in enumerate(ips):
        f = eth(ip)
        pcap += struct.pack("<IIII", i, 0, len(f), len(f)) + f

    def block(kind: int, body: bytes) -> bytes:
        body += bytes(-len(body) % 4)
        return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)

    ng = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)) + block(1, struct.pack("<HHI", 1, 0, 64))
    for i, ip in enumerate(ips):
        f = eth(ip)
        ng += block(6, struct.pack("<IIIII", 0, 0, i, len(f), len(f)) + f)
    for name, data in (("s.pcap", bytes(pcap)), ("s.pcapng", ng)):
        path = tmp_path / name
        path.write_bytes(data)
        ours = nicsim_follow(path)
        assert ours == [(("10.1.0.1", CPORT), b"A" * 120, b"B" * 90)], name
        if TSHARK:
            _same(ours, tshark_follow(path, 1))
