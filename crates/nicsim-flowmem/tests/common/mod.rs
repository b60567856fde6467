//! Test helpers: TCP segments built with the packet library's frame builder.

#![allow(dead_code)]

use std::net::IpAddr;

use std::sync::Arc;

use nicsim_flowmem::{Config, Limits, Reassembler, Reassembly};
use nicsim_packet::tcp::flags;
use nicsim_packet::{linktype, FrameSpec, L4Proto};

pub const SYN: u8 = flags::SYN;
pub const ACK: u8 = flags::ACK;
pub const FIN: u8 = flags::FIN;
pub const RST: u8 = flags::RST;
pub const PSH: u8 = flags::PSH;

/// One endpoint pair; `frame(dir, ...)` builds a segment from side `dir` (0: a → b, 1: b → a).
#[derive(Clone, Copy)]
pub struct Conn {
    pub a: IpAddr,
    pub b: IpAddr,
    pub aport: u16,
    pub bport: u16,
}

impl Conn {
    pub fn v4() -> Self {
        Conn {
            a: "10.0.0.1".parse().unwrap(),
            b: "10.0.0.2".parse().unwrap(),
            aport: 40000,
            bport: 80,
        }
    }

    pub fn v6() -> Self {
        Conn {
            a: "2001:db8::1".parse().unwrap(),
            b: "2001:db8::2".parse().unwrap(),
            aport: 40000,
            bport: 443,
        }
    }

    pub fn frame(&self, dir: usize, seq: u32, tcp_flags: u8, payload: &[u8]) -> Vec<u8> {
        self.frame_ack(dir, seq, 0, tcp_flags, payload)
    }

    pub fn frame_ack(
        &self,
        dir: usize,
        seq: u32,
        ack: u32,
        tcp_flags: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let (src, dst, sport, dport) = match dir {
            0 => (self.a, self.b, self.aport, self.bport),
            _ => (self.b, self.a, self.bport, self.aport),
        };
        let spec = FrameSpec {
            eth_src: [2, 0, 0, 0, 0, 1],
            eth_dst: [2, 0, 0, 0, 0, 2],
            vlan: None,
            src,
            dst,
            proto: L4Proto::Tcp,
            sport,
            dport,
            tos: 0,
            ttl: 64,
            tcp_seq: seq,
            tcp_ack: ack,
            tcp_flags,
        };
        // Exact length: the builder would pad a short payload with zeros to 64-byte frames.
        let len = spec.header_len() + payload.len() + 4;
        spec.build(len, payload).unwrap()
    }
}

/// Reassembles Ethernet frames. Unless a limit is set, also reassembles them zero-copy from an
/// in-memory pcap of the same frames and checks both give the same flows.
pub fn reassemble(frames: &[Vec<u8>], config: Config) -> Reassembly {
    let mut r = Reassembler::new(config);
    for frame in frames {
        r.push_frame(linktype::ETHERNET, frame, false);
    }
    let out = r.finish();
    assert_eq!(out.counts.read, frames.len() as u64);
    assert_eq!(out.counts.accounted(), out.counts.read, "{:?}", out.counts);
    if config.limits == Limits::default() {
        let in_place = Reassembly::from_capture_bytes(Arc::new(pcap(frames)), config).unwrap();
        assert_same_flows(&out, &in_place);
    }
    out
}

/// An in-memory pcap (microsecond, little-endian, Ethernet) of `frames`.
pub fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for word in [0xa1b2_c3d4_u32, 0x0004_0002, 0, 0, 65_535, 1] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for (i, frame) in frames.iter().enumerate() {
        let len = frame.len() as u32;
        for word in [i as u32, 0, len, len] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(frame);
    }
    out
}

/// Checks two reassemblies of the same packets (appended and capture-backed arenas) agree:
/// counts, flows, holes, byte accounting, and every stream's bytes; only the translation
/// tables' addresses (and how adjacent entries merged) may differ.
pub fn assert_same_flows(a: &Reassembly, b: &Reassembly) {
    assert_eq!(a.counts, b.counts);
    assert_eq!(a.arena.used_bytes(), b.arena.used_bytes());
    assert_eq!(a.flows.len(), b.flows.len());
    for (i, (fa, fb)) in a.flows.iter().zip(&b.flows).enumerate() {
        assert_eq!(fa.tuple, fb.tuple, "flow {i}");
        for d in 0..2 {
            let (x, y) = (&fa.dirs[d], &fb.dirs[d]);
            assert_eq!(
                (x.start_seq, x.syn, x.fin, x.rst, x.len_bytes, x.packets),
                (y.start_seq, y.syn, y.fin, y.rst, y.len_bytes, y.packets),
                "flow {i} dir {d}"
            );
            assert_eq!((&x.holes, x.bytes), (&y.holes, y.bytes), "flow {i} dir {d}");
            let (va, vb) = (a.view(i, d).unwrap(), b.view(i, d).unwrap());
            for (s, e) in va.runs() {
                assert_eq!(
                    va.read(s, (e - s) as usize).unwrap(),
                    vb.read(s, (e - s) as usize).unwrap(),
                    "flow {i} dir {d}"
                );
            }
            assert_eq!(va.runs(), vb.runs());
        }
    }
}

/// The stream bytes of a hole-free direction, through the view.
pub fn bytes(out: &Reassembly, flow: usize, dir: usize) -> Vec<u8> {
    let view = out.view(flow, dir).unwrap();
    view.read(0, view.len() as usize).unwrap()
}
