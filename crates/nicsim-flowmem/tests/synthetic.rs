//! Adversarial reassembly cases built with the packet library's frame builder: in and out of
//! order, retransmissions, conflicting overlaps under each policy, holes, sequence wrap-around,
//! captures without SYN, FIN and RST, IPv6, limits and packet conservation.

mod common;

use common::*;
use nicsim_flowmem::{Config, FlowError, Hole, Limits, OverlapPolicy, Reassembler, Reassembly};
use nicsim_packet::capture::Record;
use nicsim_packet::linktype;

const ISN: u32 = 1000;

fn last_wins() -> Config {
    Config {
        overlap: OverlapPolicy::LastWins,
        ..Config::default()
    }
}

#[test]
fn in_order_with_handshake_and_fin() {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(1, 5000, SYN | ACK, b""),
        c.frame(0, ISN + 1, ACK, b"GET / HTTP/1.1\r\n"),
        c.frame(0, ISN + 17, ACK | PSH, b"Host: x\r\n\r\n"),
        c.frame(1, 5001, ACK, b"HTTP/1.1 200 OK\r\n\r\n"),
        c.frame(0, ISN + 28, FIN | ACK, b""),
    ];
    let out = reassemble(&frames, Config::default());
    assert_eq!(out.flows.len(), 1);
    assert_eq!(bytes(&out, 0, 0), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(bytes(&out, 0, 1), b"HTTP/1.1 200 OK\r\n\r\n");
    let d0 = &out.flows[0].dirs[0];
    assert!(d0.syn && d0.fin && !d0.rst);
    assert_eq!(d0.start_seq, Some(ISN + 1));
    assert!(d0.holes.is_empty());
    // Consecutive payloads of one flow sit back to back in the arena: one table entry.
    assert_eq!(d0.segments.len(), 1);
    assert_eq!((out.counts.data, out.counts.control), (3, 3));
}

#[test]
fn out_of_order_segments_land_in_place() {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 9, ACK, b"world"),
        c.frame(0, ISN + 14, ACK, b"!"),
        c.frame(0, ISN + 1, ACK, b"hello, "),
        c.frame(0, ISN + 8, ACK, b" "),
    ];
    let out = reassemble(&frames, Config::default());
    assert_eq!(bytes(&out, 0, 0), b"hello,  world!");
    assert!(out.flows[0].dirs[0].holes.is_empty());
    assert_eq!(out.counts.data, 4);
}

#[test]
fn identical_retransmission_is_counted_not_stored() {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 1, ACK, b"abcdef"),
        c.frame(0, ISN + 1, ACK, b"abcdef"),
        c.frame(0, ISN + 4, ACK, b"defghi"),
    ];
    let out = reassemble(&frames, Config::default());
    assert_eq!(bytes(&out, 0, 0), b"abcdefghi");
    assert_eq!(out.counts.retransmission, 1);
    assert_eq!(out.counts.data, 2);
    let b = out.flows[0].dirs[0].bytes;
    assert_eq!(
        (b.new_bytes, b.duplicate_bytes, b.conflict_bytes),
        (9, 9, 0)
    );
    // The retransmission was not written to the arena.
    assert_eq!(out.arena.used_bytes(), 12);
}

#[test]
fn conflicting_overlap_first_wins_by_default_last_wins_on_request() {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 1, ACK, b"AAAAAAAAAAAA"), // 0..12
        c.frame(0, ISN + 5, ACK, b"BBBB"),         // 4..8, inside: a split under last-wins
        c.frame(0, ISN + 11, ACK, b"CCCC"),        // 10..14, partly new
        c.frame(0, ISN + 1, ACK, b"DD"),           // 0..2, entirely old
    ];
    let first = reassemble(&frames, Config::default());
    assert_eq!(bytes(&first, 0, 0), b"AAAAAAAAAAAACC");
    assert_eq!(first.counts.overlap_discarded, 2);
    assert_eq!(first.counts.data, 2);
    let b = first.flows[0].dirs[0].bytes;
    assert_eq!(
        (b.new_bytes, b.conflict_bytes, b.duplicate_bytes),
        (14, 8, 0)
    );

    let last = reassemble(&frames, last_wins());
    assert_eq!(bytes(&last, 0, 0), b"DDAABBBBAACCCC");
    assert_eq!(last.counts.overlap_discarded, 0);
    assert_eq!(last.counts.data, 4);
    assert_eq!(last.flows[0].dirs[0].bytes.conflict_bytes, 8);
    // Entries: DD | AA | BBBB | AA | CCCC, all pointing into the arena, none copied.
    assert_eq!(last.flows[0].dirs[0].segments.len(), 5);
}

#[test]
fn gap_is_reported_as_a_hole_with_its_offsets() {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 1, ACK, b"01234"),
        c.frame(0, ISN + 11, ACK, b"ABCDE"),
        c.frame(0, ISN + 16, FIN | ACK, b""),
    ];
    let out = reassemble(&frames, Config::default());
    let d = &out.flows[0].dirs[0];
    assert_eq!(d.len_bytes, 15);
    assert_eq!(
        d.holes,
        vec![Hole {
            offset: 5,
            len_bytes: 5
        }]
    );
    let view = out.view(0, 0).unwrap();
    assert_eq!(view.read(0, 5).unwrap(), b"01234");
    assert_eq!(view.read(10, 5).unwrap(), b"ABCDE");
    assert!(matches!(
        view.read(3, 4),
        Err(FlowError::Hole {
            hole_offset: 5,
            hole_len_bytes: 5,
            ..
        })
    ));
    assert!(matches!(
        view.read(12, 4),
        Err(FlowError::OutOfRange { .. })
    ));
    assert_eq!(view.runs(), vec![(0, 5), (10, 15)]);
}

#[test]
fn missing_tail_before_fin_and_missing_head_after_syn_are_holes() {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 4, ACK, b"def"),
        c.frame(0, ISN + 12, FIN | ACK, b""),
    ];
    let out = reassemble(&frames, Config::default());
    let d = &out.flows[0].dirs[0];
    assert_eq!(d.len_bytes, 11);
    let holes: Vec<_> = d.holes.iter().map(|h| (h.offset, h.len_bytes)).collect();
    assert_eq!(holes, vec![(0, 3), (6, 5)]);
}

#[test]
fn sequence_numbers_wrap_around() {
    let c = Conn::v4();
    let isn = u32::MAX - 5;
    let payload: Vec<u8> = (0..40).collect();
    let frames = vec![
        c.frame(0, isn, SYN, b""),
        c.frame(0, isn.wrapping_add(1), ACK, &payload[..10]), // crosses 2^32
        c.frame(0, isn.wrapping_add(21), ACK, &payload[20..]),
        c.frame(0, isn.wrapping_add(11), ACK, &payload[10..20]),
    ];
    let out = reassemble(&frames, Config::default());
    assert_eq!(bytes(&out, 0, 0), payload);
    assert!(out.flows[0].dirs[0].holes.is_empty());
    assert_eq!(out.flows[0].dirs[0].start_seq, Some(isn.wrapping_add(1)));
}

#[test]
fn capture_without_syn_starts_at_the_lowest_sequence_number() {
    let c = Conn::v4();
    // Starts mid-stream, and the first packet seen is not the earliest.
    let frames = vec![
        c.frame(0, 7_000_010, ACK, b"klmno"),
        c.frame(0, 7_000_000, ACK, b"abcdefghij"),
        c.frame(1, 9_000_000, ACK, b"reply"),
    ];
    let out = reassemble(&frames, Config::default());
    assert_eq!(bytes(&out, 0, 0), b"abcdefghijklmno");
    assert_eq!(bytes(&out, 0, 1), b"reply");
    let d = &out.flows[0].dirs[0];
    assert!(!d.syn && d.holes.is_empty());
    assert_eq!(d.start_seq, Some(7_000_000));
}

#[test]
fn data_before_the_syn_is_left_out_and_counted() {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN - 3, ACK, b"xyzabc"),
    ];
    let out = reassemble(&frames, Config::default());
    assert_eq!(bytes(&out, 0, 0), b"bc");
    assert_eq!(out.flows[0].dirs[0].bytes.before_start_bytes, 4);
    // A SYN after the data, at another sequence number than the direction's first packet's
    // (less one): a new connection on the same 5-tuple, as tshark takes it.
    let out = reassemble(&[frames[1].clone(), frames[0].clone()], Config::default());
    assert_eq!((out.flows.len(), out.reused_tuples), (2, 1));
    assert_eq!(bytes(&out, 0, 0), b"xyzabc");
}

#[test]
fn rst_and_fin_are_recorded_per_direction() {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 1, ACK, b"x"),
        c.frame(0, ISN + 2, FIN | ACK, b"y"),
        c.frame(1, 77, RST, b""),
    ];
    let out = reassemble(&frames, Config::default());
    let [d0, d1] = &out.flows[0].dirs;
    assert!(d0.fin && !d0.rst && d1.rst && !d1.fin);
    assert_eq!(bytes(&out, 0, 0), b"xy");
    assert_eq!(d0.len_bytes, 2);
    assert_eq!(d1.len_bytes, 0);
}

#[test]
fn ipv6_flows_reassemble() {
    let c = Conn::v6();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 4, ACK, b"def"),
        c.frame(0, ISN + 1, ACK, b"abc"),
    ];
    let out = reassemble(&frames, Config::default());
    assert_eq!(bytes(&out, 0, 0), b"abcdef");
    assert!(out.flows[0].tuple.src.is_ipv6());
}

#[test]
fn flows_are_keyed_by_five_tuple_in_first_seen_order() {
    let c1 = Conn::v4();
    let c2 = Conn {
        aport: 40001,
        ..Conn::v4()
    };
    let frames = vec![
        c2.frame(1, 1, ACK, b"second-rev"),
        c1.frame(0, 1, ACK, b"first"),
        c2.frame(0, 1, ACK, b"second"),
    ];
    let out = reassemble(&frames, Config::default());
    assert_eq!(out.flows.len(), 2);
    // The first packet of flow 0 came from b: its direction 0 is b → a.
    assert_eq!(out.flows[0].tuple.sport, 80);
    assert_eq!(bytes(&out, 0, 0), b"second-rev");
    assert_eq!(bytes(&out, 0, 1), b"second");
    assert_eq!(bytes(&out, 1, 0), b"first");
}

#[test]
fn limits_drop_packets_with_their_reason() {
    let c1 = Conn::v4();
    let c2 = Conn {
        aport: 40001,
        ..Conn::v4()
    };
    let frames = vec![
        c1.frame(0, 1, ACK, b"aaaa"),
        c2.frame(0, 1, ACK, b"bbbb"),
        c1.frame(0, 9, ACK, b"cccc"),
        c1.frame(0, 20, ACK, b"dddddddd"),
    ];
    let limits = Limits {
        max_flows: 1,
        max_arena_bytes: 10,
        max_segments_per_direction: 10,
        ..Limits::default()
    };
    let out = reassemble(
        &frames,
        Config {
            limits,
            ..Config::default()
        },
    );
    assert_eq!(out.counts.over_flow_limit, 1);
    assert_eq!(out.counts.over_arena_limit, 1);
    assert_eq!(out.counts.data, 2);
    let segs = Limits {
        max_segments_per_direction: 1,
        ..Limits::default()
    };
    let frames = vec![
        c1.frame(0, 1, ACK, b"aaaa"),
        c1.frame(0, 5, ACK, b"bbbb"), // grows the entry (back to back in the arena)
        c1.frame(0, 20, ACK, b"cccc"),
    ];
    let out = reassemble(
        &frames,
        Config {
            limits: segs,
            ..Config::default()
        },
    );
    assert_eq!(out.counts.over_segment_limit, 1);
    assert_eq!(bytes(&out, 0, 0), b"aaaabbbb");
}

#[test]
fn non_tcp_malformed_cut_and_unsupported_packets_are_accounted() {
    let c = Conn::v4();
    let mut r = Reassembler::new(Config::default());
    let good = c.frame(0, ISN + 1, ACK, &[7; 100]);
    // UDP: same builder, other protocol.
    let mut udp = nicsim_packet::FrameSpec {
        eth_src: [0; 6],
        eth_dst: [0; 6],
        vlan: None,
        src: c.a,
        dst: c.b,
        proto: nicsim_packet::L4Proto::Udp,
        sport: 1,
        dport: 2,
        tos: 0,
        ttl: 1,
        tcp_seq: 0,
        tcp_ack: 0,
        tcp_flags: 0,
    }
    .build(80, b"dns")
    .unwrap();
    r.push_frame(linktype::ETHERNET, &udp, false);
    udp[12] = 0x08;
    udp[13] = 0x06; // ARP
    r.push_frame(linktype::ETHERNET, &udp, false);
    r.push_frame(linktype::ETHERNET, &good[..40], false); // garbage: truncated, not cut
                                                          // Cut inside the TCP header: nothing to keep (counted `snaplen_cut`).
    r.push(&Record {
        ts_ns: 0,
        data: good[..40].to_vec(),
        orig_len: good.len() as u32,
        linktype: 1,
    });
    // Cut in the payload: the 6 bytes captured are data, the rest of it a hole.
    r.push(&Record {
        ts_ns: 0,
        data: good[..60].to_vec(),
        orig_len: good.len() as u32,
        linktype: 1,
    });
    r.push_frame(147, &good, false);
    r.push_frame(linktype::ETHERNET, &good, false);
    let out = r.finish();
    let c = out.counts;
    assert_eq!(
        (
            c.non_tcp,
            c.non_ip,
            c.malformed,
            c.snaplen_cut,
            c.unsupported_link,
            c.data
        ),
        (1, 1, 1, 1, 1, 2)
    );
    assert_eq!(c.read, 7);
    assert_eq!(c.accounted(), 7);
    assert_eq!(
        out.unsupported_links.iter().copied().collect::<Vec<_>>(),
        [147]
    );
}

#[test]
fn same_input_same_output() {
    let c = Conn::v4();
    let frames: Vec<Vec<u8>> = (0..50u32)
        .map(|i| c.frame((i % 2) as usize, i * 7, ACK, &[i as u8; 11]))
        .collect();
    let a = reassemble(&frames, last_wins());
    let b = reassemble(&frames, last_wins());
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.counts, b.counts);
}

#[test]
fn zero_copy_path_bad_input_is_a_one_line_error_and_cut_packets_are_counted() {
    use std::sync::Arc;
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, &[]),
        c.frame(0, ISN + 1, ACK, b"hello"),
        c.frame(0, ISN + 6, ACK, b"world"),
    ];
    let good = pcap(&frames);
    let run = |bytes: Vec<u8>| Reassembly::from_capture_bytes(Arc::new(bytes), Config::default());
    // A capture cut short (the last record ends early): read up to the cut, as tshark reads
    // it, with a warning naming the offset of the record cut; both paths agree.
    let cut_short = good[..good.len() - 3].to_vec();
    let out = run(cut_short.clone()).unwrap();
    let last_at = (good.len() - 16 - frames[2].len()) as u64;
    assert_eq!((out.counts.read, out.counts.data), (2, 1));
    assert_eq!(out.leniency.cut_short_at, Some(last_at));
    assert!(
        out.leniency.warnings[0].starts_with(&format!("offset {last_at}: the file ends inside")),
        "{:?}",
        out.leniency
    );
    let path = std::env::temp_dir().join(format!("nicsim-cut-short-{}.pcap", std::process::id()));
    std::fs::write(&path, &cut_short).unwrap();
    let streamed = Reassembly::from_capture(&path, Config::default()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(streamed.leniency, out.leniency);
    assert_eq!(streamed.counts, out.counts);
    // An impossible captured length in the middle of the file is still an error.
    let mut corrupt = good.clone();
    corrupt[24 + 8..24 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let message = run(corrupt).unwrap_err().to_string();
    assert!(!message.contains('\n'), "{message}");
    assert!(
        message.starts_with("invalid record at offset 24: captured length"),
        "{message}"
    );
    // A bad magic number.
    let mut bad = good.clone();
    bad[..4].copy_from_slice(b"GIF8");
    let message = run(bad).unwrap_err().to_string();
    assert_eq!(
        message,
        "bad magic number 0x47494638 at offset 0 (not a pcap or pcapng file)"
    );
    // A snaplen-cut packet (captured length below the original): the bytes captured are
    // kept, the rest of its payload is a hole.
    let mut cut = pcap(&frames[..2]);
    let last = c.frame(0, ISN + 6, ACK, b"world");
    let keep = last.len() - 7; // 4 bytes of FCS, 3 of the payload
    for word in [9_u32, 0, keep as u32, last.len() as u32] {
        cut.extend_from_slice(&word.to_le_bytes());
    }
    cut.extend_from_slice(&last[..keep]);
    let out = run(cut).unwrap();
    assert_eq!((out.counts.snaplen_cut, out.counts.data), (0, 2));
    assert_eq!(out.counts.read, 3);
    assert_eq!(out.counts.accounted(), 3);
    assert!(out.arena.is_capture_backed());
    let view = out.view(0, 0).unwrap();
    assert_eq!(view.len(), 10);
    assert_eq!(view.read(0, 7).unwrap(), b"hellowo");
    let holes: Vec<(u64, u64)> = out.flows[0].dirs[0]
        .holes
        .iter()
        .map(|h| (h.offset, h.len_bytes))
        .collect();
    assert_eq!(holes, [(7, 3)]);
}

#[test]
fn unacknowledged_data_is_kept_or_dropped_as_asked() {
    use nicsim_flowmem::UnackedPolicy;
    let c = Conn::v4();
    let peer = 5000u32;
    // a → b: "hello " (acknowledged), a hole of 4 bytes, "world" (never acknowledged); b
    // acknowledges "hello " and a byte of the hole's data it received, then resets.
    let frames = vec![
        c.frame(0, ISN, SYN, &[]),
        c.frame_ack(1, peer, ISN + 1, SYN | ACK, &[]),
        c.frame_ack(0, ISN + 1, peer + 1, ACK, b"hello "),
        c.frame_ack(0, ISN + 11, peer + 1, ACK, b"world"),
        c.frame_ack(1, peer + 1, ISN + 7, ACK, &[]),
        c.frame_ack(1, peer + 1, ISN + 8, ACK | RST, &[]),
    ];
    let policy = |unacked| Config {
        unacked,
        ..Config::default()
    };
    let keep = reassemble(&frames, policy(UnackedPolicy::Keep));
    let d = &keep.flows[0].dirs[0];
    assert_eq!((d.len_bytes, d.bytes.unacked_bytes), (15, 0));
    assert_eq!(
        d.holes,
        [Hole {
            offset: 6,
            len_bytes: 4
        }]
    );
    // Dropped: the stream ends at the last byte captured before the peer's highest ACK (7):
    // "hello ", not the hole's acknowledged byte, nor "world".
    let drop = reassemble(&frames, policy(UnackedPolicy::Drop));
    let d = &drop.flows[0].dirs[0];
    assert_eq!((d.len_bytes, d.bytes.unacked_bytes), (6, 5));
    assert!(d.holes.is_empty());
    assert_eq!(bytes(&drop, 0, 0), b"hello ");
    // The other direction has no data; a direction whose peer never acknowledged is kept.
    let frames = [
        c.frame(0, ISN, SYN, &[]),
        c.frame(0, ISN + 1, ACK, b"alone"),
    ];
    let d = &reassemble(&frames, policy(UnackedPolicy::Drop)).flows[0].dirs[0];
    assert_eq!(d.len_bytes, 5);
    // Acknowledgements across the 32-bit wrap: the highest in sequence order counts.
    let wrap = u32::MAX - 2;
    let frames = vec![
        c.frame(0, wrap, SYN, &[]),
        c.frame_ack(0, wrap.wrapping_add(1), 1, ACK, b"abcdefgh"),
        c.frame_ack(1, 0, wrap.wrapping_add(5), ACK, &[]),
        c.frame_ack(1, 0, wrap.wrapping_add(3), ACK, &[]), // older: not the highest
    ];
    let out = reassemble(&frames, policy(UnackedPolicy::Drop));
    assert_eq!(bytes(&out, 0, 0), b"abcd");
}

#[test]
fn a_syn_at_a_new_sequence_number_opens_a_new_flow_on_the_same_tuple() {
    // As tshark's "TCP port numbers reused": after a FIN, after a RST, or with no close at all;
    // a retransmitted SYN (the same sequence number) is the same connection.
    let c = Conn::v4();
    let conn = |isn: u32, data: &[u8], close: u8| {
        let mut f = vec![
            c.frame(0, isn, SYN, b""),
            c.frame(0, isn, SYN, b""), // retransmitted
            c.frame_ack(1, 77, isn + 1, SYN | ACK, b""),
            c.frame_ack(0, isn + 1, 78, ACK | PSH, data),
        ];
        if close != 0 {
            f.push(c.frame_ack(0, isn + 1 + data.len() as u32, 78, close | ACK, b""));
        }
        f
    };
    let mut frames = conn(ISN, b"first", FIN);
    frames.extend(conn(9000, b"second", RST));
    frames.extend(conn(20000, b"third", 0));
    frames.extend(conn(30000, b"fourth", 0));
    let out = reassemble(&frames, Config::default());
    assert_eq!(out.reused_tuples, 3);
    let streams: Vec<Vec<u8>> = (0..out.flows.len()).map(|f| bytes(&out, f, 0)).collect();
    assert_eq!(streams, [&b"first"[..], b"second", b"third", b"fourth"]);
    // The server's SYN/ACK at the same sequence number every time opens nothing.
    assert!(out.flows.iter().all(|f| f.dirs[1].syn));
}

/// `frame` (Ethernet, IPv4) with `options` (a multiple of 4 bytes) after its IP header.
fn with_ipv4_options(frame: &[u8], options: &[u8]) -> Vec<u8> {
    let mut f = frame[..34].to_vec();
    f[14] += (options.len() / 4) as u8;
    let total = u16::from_be_bytes([f[16], f[17]]) + options.len() as u16;
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(options);
    f.extend_from_slice(&frame[34..]);
    f
}

/// A packet whose IPv4 options tshark calls malformed (suricata-verify's
/// tcp-session-decode-malformed-ipv4: a Security option of length 2 in a 32-byte header) has
/// no TCP in tshark's stream: its payload is not taken, and it is counted `malformed`. An
/// option of a bad length tshark only notes (below 2) leaves the payload taken.
#[test]
fn a_packet_with_ipv4_options_tshark_calls_malformed_is_dropped() {
    let c = Conn::v4();
    let security_len_2 = [130, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 1, ACK, b"hello"),
        with_ipv4_options(&c.frame(0, ISN + 6, ACK, b"X"), &security_len_2),
        c.frame(0, ISN + 6, FIN | ACK, b""),
    ];
    let out = reassemble(&frames, Config::default());
    assert_eq!((out.counts.malformed, out.counts.data), (1, 1));
    assert_eq!(out.counts.accounted(), out.counts.read);
    assert_eq!(out.view(0, 0).unwrap().read(0, 5).unwrap(), b"hello");
    assert_eq!(out.view(0, 0).unwrap().len(), 5);
    let mut frames = frames;
    frames[2] = with_ipv4_options(&c.frame(0, ISN + 6, ACK, b"X"), &[200, 1, 0, 0]);
    let out = reassemble(&frames, Config::default());
    assert_eq!((out.counts.malformed, out.counts.data), (0, 2));
    assert_eq!(out.view(0, 0).unwrap().read(0, 6).unwrap(), b"helloX");
}

#[test]
fn an_ip_length_beyond_an_uncut_frame_is_the_packets_error_not_a_cut() {
    // A frame whose IPv4 total length claims 10 bytes more than it holds, though the capture
    // cut nothing (captured length = original): its payload is what it holds, and no hole
    // follows (tshark: "IPv4 total length exceeds packet length"); it was taken for a snaplen
    // cut, and 10 missing bytes pushed the rest of the stream along. Cut by 3 bytes, the same
    // frame misses 3, what the capture cut, not the 10 its header claims.
    use std::sync::Arc;
    let c = Conn::v4();
    let mut claims_more = c.frame(0, ISN + 1, ACK | PSH, b"hello");
    claims_more.truncate(claims_more.len() - 4); // no FCS: the frame ends with the payload
    let total = u16::from_be_bytes([claims_more[16], claims_more[17]]) + 10;
    claims_more[16..18].copy_from_slice(&total.to_be_bytes());
    claims_more[24..26].copy_from_slice(&[0, 0]); // the header checksum is not checked
    let frames = vec![
        c.frame(0, ISN, SYN, &[]),
        claims_more.clone(),
        c.frame(0, ISN + 6, ACK, b"world"),
    ];
    let out = Reassembly::from_capture_bytes(Arc::new(pcap(&frames)), Config::default()).unwrap();
    assert_eq!((out.counts.snaplen_cut, out.counts.data), (0, 2));
    let view = out.view(0, 0).unwrap();
    assert_eq!(view.len(), 10);
    assert_eq!(view.read(0, 10).unwrap(), b"helloworld");
    assert!(out.flows[0].dirs[0].holes.is_empty());
    // The same frame cut by 3 bytes: "he" kept, 3 bytes missing (not the 13 its header claims).
    let mut cut = pcap(&frames[..1]);
    let keep = claims_more.len() - 3;
    for word in [9_u32, 0, keep as u32, claims_more.len() as u32] {
        cut.extend_from_slice(&word.to_le_bytes());
    }
    cut.extend_from_slice(&claims_more[..keep]);
    let out = Reassembly::from_capture_bytes(Arc::new(cut), Config::default()).unwrap();
    let holes: Vec<(u64, u64)> = out.flows[0].dirs[0]
        .holes
        .iter()
        .map(|h| (h.offset, h.len_bytes))
        .collect();
    assert_eq!(holes, [(2, 3)]);
}
