//! The hole bound (`Limits::max_hole_bytes`): a capture sets sequence numbers freely, and a
//! stream laid out contiguously (the stream files, the copy-based baseline, the memory model)
//! is as long as they say. Captures built here with the packet library's frame builder jump
//! by about 2^31, put a FIN far past the data, or open many small holes; each direction's
//! holes stay within the bound, the packets past it are counted as `hole_too_large`, and the
//! packets stay conserved.

mod common;

use std::sync::Arc;

use common::*;
use nicsim_flowmem::baseline::Contiguous;
use nicsim_flowmem::{Config, Limits, Reassembly};

const ISN: u32 = 1000;

fn with_max_hole(max_hole_bytes: u64) -> Config {
    Config {
        limits: Limits {
            max_hole_bytes,
            ..Limits::default()
        },
        ..Config::default()
    }
}

/// Reassembles `frames` appended and in place (a pcap in memory); both must agree.
fn both(frames: &[Vec<u8>], config: Config) -> Reassembly {
    let out = reassemble(frames, config);
    let in_place = Reassembly::from_capture_bytes(Arc::new(pcap(frames)), config).unwrap();
    assert_same_flows(&out, &in_place);
    assert_eq!(out.counts.accounted(), out.counts.read);
    out
}

fn holes(out: &Reassembly, flow: usize, dir: usize) -> Vec<(u64, u64)> {
    let d = &out.flows[flow].dirs[dir];
    d.holes.iter().map(|h| (h.offset, h.len_bytes)).collect()
}

fn hole_bytes(out: &Reassembly, flow: usize, dir: usize) -> u64 {
    holes(out, flow, dir).iter().map(|h| h.1).sum()
}

#[test]
fn a_sequence_jump_of_2_to_the_31_cuts_the_direction_at_the_hole() {
    // The hostile capture: 100 bytes after the handshake, then segments about 2^31 further on
    // (a 4 GB hole), and a FIN after them. Before the bound it gave a 2 GB stream.
    let c = Conn::v4();
    let jump = ISN + 1 + (1 << 31) - 100;
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(1, 5000, SYN | ACK, b""),
        c.frame(0, ISN + 1, ACK, &[b'a'; 100]),
        c.frame(0, jump, ACK, &[b'b'; 100]),
        c.frame(0, jump + 100, ACK, &[b'c'; 100]),
        c.frame(0, jump + 200, FIN | ACK, b""),
        // Data before the cut still fills in; but sequence numbers are unwrapped relative to
        // the highest seen, and after the jump the first segment's number reads as 2^31 on.
        c.frame(0, ISN + 101, ACK, &[b'a'; 100]),
        c.frame(0, ISN + 1, ACK, &[b'a'; 100]),
    ];
    let out = both(&frames, Config::default());
    let d = &out.flows[0].dirs[0];
    assert!(d.cut);
    assert_eq!(d.len_bytes, 200);
    assert!(d.holes.is_empty());
    assert!(!d.fin, "the FIN lay past the cut");
    assert_eq!(out.counts.hole_too_large, 4);
    assert_eq!(out.counts.data, 2);
    assert_eq!(out.counts.control, 2);
    assert!(!out.flows[0].dirs[1].cut);
    // What is laid out contiguously is bounded too.
    let view = out.view(0, 0).unwrap();
    assert_eq!(Contiguous::assemble(&view).bytes, vec![b'a'; 200]);
}

#[test]
fn a_jump_backwards_without_a_syn_drops_that_segment_alone() {
    // Without a SYN the stream starts at its lowest sequence number: a segment 2^31 + 100
    // bytes on reads as one 2^31 - 100 bytes before the data, which would open a 2 GB hole at
    // the head. It is dropped; the data after the first segment is not affected.
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, 7_000_000, ACK, b"first"),
        c.frame(0, 7_000_000u32.wrapping_add((1 << 31) + 100), ACK, b"far"),
        c.frame(0, 7_000_005, ACK, b"second"),
    ];
    let out = both(&frames, Config::default());
    let d = &out.flows[0].dirs[0];
    assert!(d.cut);
    assert_eq!(bytes(&out, 0, 0), b"firstsecond");
    assert_eq!(d.start_seq, Some(7_000_000));
    assert_eq!(out.counts.hole_too_large, 1);
    assert_eq!(out.counts.data, 2);
}

#[test]
fn a_fin_far_past_the_data_is_dropped() {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 1, ACK, b"hello"),
        c.frame(0, ISN + 1_000_000_000, FIN | ACK, b""),
        c.frame(0, ISN + 6, ACK, b" world"),
        c.frame(0, ISN + 100, ACK, b"later"), // a hole of 88 bytes: within the bound
    ];
    let out = both(&frames, Config::default());
    let d = &out.flows[0].dirs[0];
    assert!(d.cut && !d.fin);
    assert_eq!(holes(&out, 0, 0), vec![(11, 88)]);
    assert_eq!(d.len_bytes, 104);
    assert_eq!(out.counts.hole_too_large, 1);
    // A FIN within the bound leaves a tail hole as before.
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 1, ACK, b"hello"),
        c.frame(0, ISN + 1_000_006, FIN | ACK, b""),
    ];
    let out = both(&frames, Config::default());
    let d = &out.flows[0].dirs[0];
    assert!(!d.cut && d.fin);
    assert_eq!(holes(&out, 0, 0), vec![(5, 1_000_000)]);
}

#[test]
fn the_bound_is_on_all_holes_of_a_direction_together() {
    // Holes of 10 bytes each, bound 25: the third would make 30.
    let c = Conn::v4();
    let mut frames = vec![c.frame(0, ISN, SYN, b"")];
    for k in 0..5u32 {
        frames.push(c.frame(0, ISN + 1 + 15 * k, ACK, b"01234"));
    }
    let out = both(&frames, with_max_hole(25));
    let d = &out.flows[0].dirs[0];
    assert!(d.cut);
    assert_eq!(holes(&out, 0, 0), vec![(5, 10), (20, 10)]);
    assert_eq!(d.len_bytes, 35);
    assert_eq!(out.counts.hole_too_large, 2);
    // Exactly at the bound is within it.
    let out = both(&frames[..4], with_max_hole(20));
    assert!(!out.flows[0].dirs[0].cut);
    assert_eq!(hole_bytes(&out, 0, 0), 20);
    // Filling a hole makes room again: the same holes, but the first filled before the third
    // opens.
    let mut frames = frames[..3].to_vec();
    frames.push(c.frame(0, ISN + 6, ACK, b"ABCDEFGHIJ"));
    frames.push(c.frame(0, ISN + 1 + 30, ACK, b"01234"));
    frames.push(c.frame(0, ISN + 1 + 45, ACK, b"01234"));
    let out = both(&frames, with_max_hole(25));
    assert!(!out.flows[0].dirs[0].cut);
    assert_eq!(holes(&out, 0, 0), vec![(20, 10), (35, 10)]);
}

#[test]
fn a_missing_head_after_the_syn_counts_and_a_late_syn_cannot_open_one() {
    let c = Conn::v4();
    // SYN, then data 100 bytes later: a head hole of 99 with bound 50 cuts at the start.
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(0, ISN + 100, ACK, b"data"),
    ];
    let out = both(&frames, with_max_hole(50));
    let d = &out.flows[0].dirs[0];
    assert!(d.cut && d.syn);
    assert_eq!(d.len_bytes, 0);
    assert_eq!(out.counts.hole_too_large, 1);
    // The SYN arriving after the data (reordered in the capture) would open the same hole:
    // the SYN is dropped, and the stream starts at its data. (A SYN/ACK: a SYN without ACK at
    // another sequence number than the first packet's, less one, opens a new connection.)
    let frames = vec![
        c.frame(0, ISN + 100, ACK, b"data"),
        c.frame(0, ISN, SYN | ACK, b""),
    ];
    let out = both(&frames, with_max_hole(50));
    let d = &out.flows[0].dirs[0];
    assert!(d.cut && !d.syn);
    assert_eq!(bytes(&out, 0, 0), b"data");
    assert_eq!(out.counts.hole_too_large, 1);
    // Within the bound the late SYN is kept and the head is a hole.
    let out = both(&frames, with_max_hole(99));
    let d = &out.flows[0].dirs[0];
    assert!(!d.cut && d.syn);
    assert_eq!(holes(&out, 0, 0), vec![(0, 99)]);
}

#[test]
fn many_directions_each_stay_within_the_bound() {
    // 200 connections, each with a SYN and one segment 2^31 further on: every direction is
    // cut at its start, and nothing laid out contiguously is longer than the bound.
    let mut frames = Vec::new();
    for i in 0..200u16 {
        let c = Conn {
            aport: 10_000 + i,
            ..Conn::v4()
        };
        frames.push(c.frame(0, ISN, SYN, b""));
        frames.push(c.frame(0, ISN + (1 << 31) - 7, ACK, b"x"));
        frames.push(c.frame(0, ISN + 1, ACK, b"y"));
    }
    let out = both(&frames, Config::default());
    assert_eq!(out.counts.hole_too_large, 200);
    assert_eq!(out.counts.data, 200);
    let total: u64 = out.flows.iter().map(|f| f.dirs[0].len_bytes).sum();
    assert_eq!(total, 200);
    assert!(out.flows.iter().all(|f| f.dirs[0].cut));
}
