//! FlowView against the contiguous stream: random segmentations (shuffled, duplicated, some
//! dropped to make holes, sequence numbers near wrap-around) must give the same bytes, scan
//! results and regex matches (same offsets) as regex-automata and memchr on contiguous runs.

mod common;

use common::*;
use memchr::memmem;
use nicsim_flowmem::baseline::Contiguous;
use nicsim_flowmem::{Config, StreamRegex};
use proptest::prelude::*;

const PATTERNS: &[&str] = &[
    "ab+c",
    "a[bc]*d",
    "abc|bcd|cd",
    r"\bab",
    "b?",
    "x*",
    "a.{3}b",
    "^a",
    "c$",
    r"(?m)^d",
    "d\n",
    "[ab]{2,5}c?",
    "(a|ab)(c|bcd)",
    "dddd+",
    // Accelerated states (the DFA skips with memchr while they loop): a start state with few
    // ways out, and match states that loop on all but one or two bytes.
    "a[^d]*",
    "c[^\n]*d",
    "[^abc]+",
];

const LITERALS: &[&[u8]] = &[b"a", b"ab", b"abc", b"dd", b"ddd"];

/// Splits `stream` into segments of the given lengths (cycled), as (offset, len).
fn segment(stream_len: usize, lens: &[usize]) -> Vec<(usize, usize)> {
    let mut segs = Vec::new();
    let mut at = 0;
    for &len in lens.iter().cycle() {
        if at >= stream_len {
            break;
        }
        let len = len.min(stream_len - at);
        segs.push((at, len));
        at += len;
    }
    segs
}

/// The runs of bytes covered by `segs`.
fn covered_runs(stream_len: usize, segs: &[(usize, usize)]) -> Vec<(u64, u64)> {
    let mut present = vec![false; stream_len];
    for &(at, len) in segs {
        present[at..at + len].fill(true);
    }
    let mut runs = Vec::new();
    let mut i = 0;
    while i < stream_len {
        if present[i] {
            let start = i;
            while i < stream_len && present[i] {
                i += 1;
            }
            runs.push((start as u64, i as u64));
        } else {
            i += 1;
        }
    }
    runs
}

fn check(stream: &[u8], segs: &[(usize, usize)], isn: u32, order: &[usize], dups: &[usize]) {
    let c = Conn::v4();
    let mut frames = vec![c.frame(0, isn, SYN, b"")];
    let mut sent: Vec<(usize, usize)> = Vec::new();
    if !segs.is_empty() {
        sent.extend(order.iter().map(|&i| segs[i % segs.len()]));
        sent.extend(dups.iter().map(|&i| segs[i % segs.len()]));
    }
    for &(at, len) in &sent {
        let seq = isn.wrapping_add(1).wrapping_add(at as u32);
        frames.push(c.frame(0, seq, ACK, &stream[at..at + len]));
    }
    let out = reassemble(&frames, Config::default());
    let runs = covered_runs(stream.len(), &sent);
    if runs.is_empty() {
        assert!(out.flows[0].dirs[0].segments.is_empty());
        return;
    }
    let view = out.view(0, 0).unwrap();
    assert_eq!(view.runs(), runs);
    assert_eq!(view.len(), runs.last().unwrap().1);
    let holes: Vec<(u64, u64)> = view
        .holes()
        .iter()
        .map(|h| (h.offset, h.offset + h.len_bytes))
        .collect();
    let expected_holes: Vec<(u64, u64)> = std::iter::once(0)
        .chain(runs.iter().map(|r| r.1))
        .zip(runs.iter().map(|r| r.0))
        .filter(|(a, b)| a < b)
        .collect();
    assert_eq!(holes, expected_holes);
    for &(s, e) in &runs {
        assert_eq!(
            view.read(s, (e - s) as usize).unwrap(),
            &stream[s as usize..e as usize]
        );
    }
    let run_bytes: Vec<&[u8]> = runs
        .iter()
        .map(|&(s, e)| &stream[s as usize..e as usize])
        .collect();
    // Linear scans.
    let mut histogram = [0_u64; 256];
    for run in &run_bytes {
        for &b in *run {
            histogram[usize::from(b)] += 1;
        }
    }
    assert_eq!(view.byte_histogram(), histogram);
    for byte in [b'\n', b'a', 0, 255] {
        assert_eq!(view.count_byte(byte), histogram[usize::from(byte)]);
    }
    for needle in LITERALS {
        let want: usize = run_bytes
            .iter()
            .map(|r| memmem::find_iter(r, needle).count())
            .sum();
        assert_eq!(
            view.count_literal(needle),
            want as u64,
            "literal {needle:?}"
        );
    }
    // Regex.
    let mut baseline = Contiguous::assemble(&view);
    for pattern in PATTERNS {
        let re = StreamRegex::new(pattern).unwrap();
        let want: Vec<(u64, u64)> = runs
            .iter()
            .zip(&run_bytes)
            .flat_map(|(&(s, _), r)| {
                re.find_iter(r)
                    .into_iter()
                    .map(move |(a, b)| (a + s, b + s))
            })
            .collect();
        assert_eq!(
            view.regex_matches(&re).unwrap(),
            want,
            "pattern {pattern:?}"
        );
        assert_eq!(
            baseline.regex_matches(&re),
            want,
            "baseline, pattern {pattern:?}"
        );
    }
}

fn stream_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(b"abcd x\n".to_vec()), 0..240)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_segmentations_match_the_contiguous_stream(
        stream in stream_strategy(),
        lens in prop::collection::vec(1_usize..9, 1..8),
        isn in prop_oneof![Just(u32::MAX - 50), any::<u32>()],
        shuffle in prop::collection::vec(any::<prop::sample::Index>(), 0..64),
        dups in prop::collection::vec(0_usize..1000, 0..6),
    ) {
        let segs = segment(stream.len(), &lens);
        // A permutation of all segments: Fisher-Yates driven by `shuffle`.
        let mut order: Vec<usize> = (0..segs.len()).collect();
        for (i, idx) in shuffle.iter().enumerate() {
            if order.len() > 1 {
                let j = idx.index(order.len());
                let i = i % order.len();
                order.swap(i, j);
            }
        }
        check(&stream, &segs, isn, &order, &dups);
    }

    #[test]
    fn random_losses_make_holes_that_matches_never_cross(
        stream in stream_strategy(),
        lens in prop::collection::vec(1_usize..9, 1..8),
        isn in any::<u32>(),
        keep in prop::collection::vec(any::<bool>(), 1..40),
    ) {
        let segs = segment(stream.len(), &lens);
        let order: Vec<usize> = (0..segs.len()).filter(|i| keep[i % keep.len()]).collect();
        check(&stream, &segs, isn, &order, &[]);
    }
}

#[test]
fn matches_straddling_many_one_byte_segments() {
    let stream = b"xxabbbbbbbbbbbbbcxx dddddddddd\nabcd".to_vec();
    let segs: Vec<(usize, usize)> = (0..stream.len()).map(|i| (i, 1)).collect();
    let order: Vec<usize> = (0..segs.len()).rev().collect();
    check(&stream, &segs, u32::MAX - 10, &order, &[]);
    // And the matches really straddle: "ab+c" spans 15 one-byte segments.
    let c = Conn::v4();
    let frames: Vec<Vec<u8>> = std::iter::once(c.frame(0, 0, SYN, b""))
        .chain((0..stream.len()).map(|i| c.frame(0, 1 + i as u32, ACK, &stream[i..i + 1])))
        .collect();
    // Interleave another flow so the arena entries are not back to back.
    let other = Conn {
        aport: 1,
        ..Conn::v4()
    };
    let frames: Vec<Vec<u8>> = frames
        .into_iter()
        .enumerate()
        .flat_map(|(i, f)| [f, other.frame(0, i as u32, ACK, b"-")])
        .collect();
    let out = reassemble(&frames, Config::default());
    let view = out.view(0, 0).unwrap();
    assert_eq!(view.segments().len(), stream.len());
    let re = StreamRegex::new("ab+c").unwrap();
    assert_eq!(view.regex_matches(&re).unwrap(), vec![(2, 17), (31, 34)]);
    assert_eq!(view.count_literal(b"ddd"), 3);
}
