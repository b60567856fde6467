//! Test helpers: TCP segments built with the packet library's frame builder.

#![allow(dead_code)]

use std::net::IpAddr;

use nicsim_flowmem::{Config, Reassembler, Reassembly};
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

/// Reassembles Ethernet frames.
pub fn reassemble(frames: &[Vec<u8>], config: Config) -> Reassembly {
    let mut r = Reassembler::new(config);
    for frame in frames {
        r.push_frame(linktype::ETHERNET, frame, false);
    }
    let out = r.finish();
    assert_eq!(out.counts.read, frames.len() as u64);
    assert_eq!(out.counts.accounted(), out.counts.read, "{:?}", out.counts);
    out
}

/// The stream bytes of a hole-free direction, through the view.
pub fn bytes(out: &Reassembly, flow: usize, dir: usize) -> Vec<u8> {
    let view = out.view(flow, dir).unwrap();
    view.read(0, view.len() as usize).unwrap()
}
