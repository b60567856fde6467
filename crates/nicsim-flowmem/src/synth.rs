//! `nicsim flowmem synth`: a synthetic TCP capture with real handshakes, HTTP-like requests and
//! responses, and the impairments a tap sees on a real network: loss (the segment is missing
//! and its retransmission comes later), reordering (a segment arrives after later ones) and
//! spurious retransmissions (an identical copy arrives later).
//!
//! Response sizes follow a Pareto distribution (heavy-tailed, as flow sizes are) whose scale is
//! set so that `share_le_10kb` of flows carry at most 10 KB, the share the talk measured over
//! 1.6 billion flows (93.16 %). Flows start as a Poisson process; their packets interleave in
//! time order. The same configuration and seed give the same capture, byte for byte.
//!
//! Memory is bounded by the flows in progress: packets are generated per flow, kept in a
//! time-ordered heap as descriptors, and their payload is computed when written (a flow's
//! bytes are a function of its seed and the stream offset, so a retransmission carries exactly
//! the bytes of the original).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use nicsim_packet::capture::{CaptureError, CaptureFormat, CaptureWriter};
use nicsim_packet::tcp::flags;
use nicsim_packet::{FrameSpec, L4Proto};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// What to generate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SynthConfig {
    /// TCP connections.
    pub flows: u64,
    /// Random seed.
    pub seed: u64,
    /// Share of flows whose response is at most 10 KB (sets the Pareto scale).
    pub share_le_10kb: f64,
    /// Pareto shape of the response size (smaller: heavier tail).
    pub pareto_alpha: f64,
    /// Largest response.
    pub max_flow_bytes: u64,
    /// Probability that a data segment is lost before the tap (and retransmitted).
    pub loss: f64,
    /// Probability that a data segment is delayed past later ones.
    pub reorder: f64,
    /// Probability that a data segment is retransmitted although it arrived.
    pub duplicate: f64,
    /// TCP maximum segment size.
    pub mss_bytes: u32,
    /// Mean connections started per second.
    pub flows_per_s: f64,
    /// Round-trip time between client and server.
    pub rtt_us: f64,
    /// Each flow's sending rate.
    pub flow_gbps: f64,
    /// Share of connections over IPv6.
    pub ipv6_share: f64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            flows: 1000,
            seed: 1,
            share_le_10kb: 0.9316,
            pareto_alpha: 1.1,
            max_flow_bytes: 16 << 20,
            loss: 0.01,
            reorder: 0.01,
            duplicate: 0.005,
            mss_bytes: 1448,
            flows_per_s: 20_000.0,
            rtt_us: 100.0,
            flow_gbps: 1.0,
            ipv6_share: 0.2,
        }
    }
}

impl SynthConfig {
    /// Checks every field; the error names it.
    pub fn check(&self) -> Result<(), String> {
        let prob = [
            ("loss", self.loss),
            ("reorder", self.reorder),
            ("duplicate", self.duplicate),
            ("ipv6_share", self.ipv6_share),
        ];
        for (k, p) in prob {
            if !(0.0..1.0).contains(&p) {
                return Err(format!("{k}: must be in [0, 1), got {p}"));
            }
        }
        if !(self.share_le_10kb > 0.0 && self.share_le_10kb < 1.0) {
            return Err(format!(
                "share_le_10kb: must be in (0, 1), got {}",
                self.share_le_10kb
            ));
        }
        let positive = [
            ("pareto_alpha", self.pareto_alpha),
            ("flows_per_s", self.flows_per_s),
            ("rtt_us", self.rtt_us),
            ("flow_gbps", self.flow_gbps),
        ];
        for (k, v) in positive {
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("{k}: must be positive, got {v}"));
            }
        }
        if !(64..=9000).contains(&self.mss_bytes) {
            return Err(format!(
                "mss_bytes: must be in 64..=9000, got {}",
                self.mss_bytes
            ));
        }
        if self.max_flow_bytes == 0 {
            return Err("max_flow_bytes: must be positive".into());
        }
        Ok(())
    }

    /// The Pareto scale (smallest response) that puts `share_le_10kb` of flows at ≤ 10 KB.
    pub fn pareto_min_bytes(&self) -> f64 {
        10_240.0 * (1.0 - self.share_le_10kb).powf(1.0 / self.pareto_alpha)
    }
}

/// What a generated capture holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SynthReport {
    /// Connections.
    pub flows: u64,
    /// Packets written.
    pub packets: u64,
    /// Bytes of the capture's frames.
    pub frame_bytes: u64,
    /// Response bytes (server to client), as sent once.
    pub response_bytes: u64,
    /// Request bytes (client to server).
    pub request_bytes: u64,
    /// Data segments lost before the tap (each retransmitted).
    pub lost: u64,
    /// Data segments delivered late.
    pub reordered: u64,
    /// Spurious retransmissions.
    pub duplicated: u64,
    /// Responses of at most 10 KB.
    pub flows_le_10kb: u64,
}

/// One packet to write: when, which flow, what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pkt {
    ts_ns: u64,
    order: u64, // ties broken in generation order
    flow: u32,
    from_server: bool,
    tcp_flags: u8,
    seq: u32,
    ack: u32,
    offset: u64, // stream offset of the payload
    len: u32,
}

/// A connection's identity and its streams.
struct Conn {
    client: IpAddr,
    server: IpAddr,
    cport: u16,
    sport: u16,
    cisn: u32,
    sisn: u32,
    seed: u64,
    request: Vec<u8>,
    response_len: u64,
}

const WORDS: [&str; 32] = [
    "the", "packet", "flow", "memory", "cache", "stream", "segment", "offset", "address", "nic",
    "dram", "line", "rate", "core", "table", "byte", "copy", "page", "burst", "latency", "queue",
    "header", "payload", "tcp", "window", "ack", "server", "client", "session", "token", "data",
    "user",
];

const BLOCK: u64 = 1024;

impl Conn {
    fn header(&self) -> String {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
            self.response_len
        )
    }

    /// Response stream bytes [off, off + len): a header, then text generated block by block
    /// from the flow's seed (so any range is reproducible on its own).
    fn response(&self, off: u64, len: usize, out: &mut Vec<u8>) {
        out.clear();
        let header = self.header();
        let h = header.len() as u64;
        let mut at = off;
        let end = off + len as u64;
        while at < end {
            if at < h {
                let take = (h.min(end) - at) as usize;
                out.extend_from_slice(&header.as_bytes()[at as usize..at as usize + take]);
                at += take as u64;
                continue;
            }
            let b = (at - h) / BLOCK;
            let block = self.block(b);
            let from = (at - h - b * BLOCK) as usize;
            let take = ((end - at) as usize).min(BLOCK as usize - from);
            out.extend_from_slice(&block[from..from + take]);
            at += take as u64;
        }
    }

    fn block(&self, b: u64) -> [u8; BLOCK as usize] {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut out = [b' '; BLOCK as usize];
        let mut i = 0;
        while i < out.len() {
            let w = WORDS[rng.gen_range(0..WORDS.len())].as_bytes();
            let n = w.len().min(out.len() - i);
            out[i..i + n].copy_from_slice(&w[..n]);
            i += n;
            if i < out.len() {
                out[i] = if rng.gen_ratio(1, 12) { b'\n' } else { b' ' };
                i += 1;
            }
        }
        out
    }
}

/// Writes a synthetic capture to `path` (pcap or pcapng); `progress(packets)` is called now
/// and then.
pub fn synthesize(
    config: &SynthConfig,
    path: &Path,
    format: CaptureFormat,
    progress: &mut dyn FnMut(u64),
) -> Result<SynthReport, CaptureError> {
    let mut w = CaptureWriter::create(path, format, 65_535)?;
    let report = generate(config, &mut |ts, frame| w.write(ts, frame), progress)?;
    w.finish()?;
    Ok(report)
}

/// Where generated frames go: `sink(ts_ns, frame)`.
pub type Sink<'a> = dyn FnMut(u64, &[u8]) -> Result<(), CaptureError> + 'a;

/// Generates the capture's frames in time order into `sink`.
pub fn generate(
    config: &SynthConfig,
    sink: &mut Sink<'_>,
    progress: &mut dyn FnMut(u64),
) -> Result<SynthReport, CaptureError> {
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut rep = SynthReport {
        flows: config.flows,
        ..SynthReport::default()
    };
    let xm = config.pareto_min_bytes();
    let rtt_ns = (config.rtt_us * 1e3) as u64;
    let mss = config.mss_bytes as u64;
    let gap_ns = ((mss * 8) as f64 / config.flow_gbps).ceil() as u64; // ns per full segment
    let mut heap: BinaryHeap<Reverse<Pkt>> = BinaryHeap::new();
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut remaining: Vec<u32> = Vec::new(); // packets left per flow, to free its state
    let mut order = 0u64;
    let mut next_start_ns = 0u64;
    let mut started = 0u64;
    let mut payload = Vec::with_capacity(mss as usize);
    loop {
        // Start every flow due before the next packet to write (or the first flow).
        while started < config.flows
            && heap
                .peek()
                .is_none_or(|Reverse(p)| next_start_ns <= p.ts_ns)
        {
            let id = conns.len() as u32;
            let (conn, pkts) = start_flow(
                config,
                &mut rng,
                id,
                next_start_ns,
                xm,
                rtt_ns,
                gap_ns,
                &mut rep,
            );
            remaining.push(pkts.len() as u32);
            conns.push(Some(conn));
            for mut p in pkts {
                p.order = order;
                order += 1;
                heap.push(Reverse(p));
            }
            started += 1;
            let u: f64 = rng.gen_range(f64::EPSILON..1.0);
            next_start_ns += (-u.ln() / config.flows_per_s * 1e9) as u64;
        }
        let Some(Reverse(p)) = heap.pop() else {
            break;
        };
        let conn = conns[p.flow as usize].as_ref().expect("live flow");
        if p.from_server {
            conn.response(p.offset, p.len as usize, &mut payload);
        } else {
            payload.clear();
            let o = p.offset as usize;
            payload.extend_from_slice(&conn.request[o..o + p.len as usize]);
        }
        let (src, dst, sport, dport) = if p.from_server {
            (conn.server, conn.client, conn.sport, conn.cport)
        } else {
            (conn.client, conn.server, conn.cport, conn.sport)
        };
        let spec = FrameSpec {
            eth_src: [2, 0, 0, 0, 0, if p.from_server { 2 } else { 1 }],
            eth_dst: [2, 0, 0, 0, 0, if p.from_server { 1 } else { 2 }],
            vlan: None,
            src,
            dst,
            proto: L4Proto::Tcp,
            sport,
            dport,
            tos: 0,
            ttl: 64,
            tcp_seq: p.seq,
            tcp_ack: p.ack,
            tcp_flags: p.tcp_flags,
        };
        // Exact length (the builder would pad the payload itself up to 64-byte frames); its
        // length includes the FCS, which a capture does not hold.
        let len = spec.header_len() + payload.len() + 4;
        let frame = spec.build(len, &payload).expect("valid synthetic frame");
        let frame = &frame[..frame.len() - 4];
        sink(p.ts_ns, frame)?;
        rep.packets += 1;
        rep.frame_bytes += frame.len() as u64;
        let left = &mut remaining[p.flow as usize];
        *left -= 1;
        if *left == 0 {
            conns[p.flow as usize] = None;
        }
        if rep.packets.is_multiple_of(65_536) {
            progress(rep.packets);
        }
    }
    progress(rep.packets);
    Ok(rep)
}

/// One connection's packets: handshake, request, response segments with their impairments,
/// the client's ACKs, and the FIN exchange.
#[allow(clippy::too_many_arguments)]
fn start_flow(
    c: &SynthConfig,
    rng: &mut ChaCha8Rng,
    id: u32,
    t0: u64,
    xm: f64,
    rtt_ns: u64,
    gap_ns: u64,
    rep: &mut SynthReport,
) -> (Conn, Vec<Pkt>) {
    let v6 = rng.gen_bool(c.ipv6_share);
    let (client, server): (IpAddr, IpAddr) = if v6 {
        (
            Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, (id >> 16) as u16, id as u16).into(),
            Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 1 + (id % 64) as u16).into(),
        )
    } else {
        (
            Ipv4Addr::new(10, 1 + (id >> 16) as u8 % 200, (id >> 8) as u8, id as u8).into(),
            Ipv4Addr::new(192, 0, 2, 1 + (id % 64) as u8).into(),
        )
    };
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    let response_len = ((xm / u.powf(1.0 / c.pareto_alpha)) as u64).clamp(1, c.max_flow_bytes);
    let cisn: u32 = rng.gen();
    let sisn: u32 = rng.gen();
    let request = format!(
        "GET /object/{id} HTTP/1.1\r\nHost: host{}.example\r\nUser-Agent: nicsim-synth/1\r\nAccept: */*\r\n\r\n",
        id % 97
    )
    .into_bytes();
    let mut conn = Conn {
        client,
        server,
        cport: rng.gen_range(32_768..61_000),
        sport: if rng.gen_bool(0.5) { 80 } else { 8080 },
        cisn,
        sisn,
        seed: rng.gen(),
        request,
        response_len: 0,
    };
    conn.response_len = response_len;
    let total = conn.header().len() as u64 + response_len;
    rep.response_bytes += total;
    rep.request_bytes += conn.request.len() as u64;
    if total <= 10_240 {
        rep.flows_le_10kb += 1;
    }
    let half = rtt_ns / 2;
    let mss = c.mss_bytes as u64;
    let mut pkts = Vec::new();
    let mut pkt = |ts_ns, from_server, tcp_flags, seq, ack, offset, len| {
        pkts.push(Pkt {
            ts_ns,
            order: 0,
            flow: id,
            from_server,
            tcp_flags,
            seq,
            ack,
            offset,
            len,
        })
    };
    let (ci, si) = (conn.cisn, conn.sisn);
    let req = conn.request.len() as u32;
    pkt(t0, false, flags::SYN, ci, 0, 0, 0);
    pkt(
        t0 + half,
        true,
        flags::SYN | flags::ACK,
        si,
        ci.wrapping_add(1),
        0,
        0,
    );
    pkt(
        t0 + rtt_ns,
        false,
        flags::ACK,
        ci.wrapping_add(1),
        si.wrapping_add(1),
        0,
        0,
    );
    pkt(
        t0 + rtt_ns + 1_000,
        false,
        flags::ACK | flags::PSH,
        ci.wrapping_add(1),
        si.wrapping_add(1),
        0,
        req,
    );
    let cack = ci.wrapping_add(1 + req);
    // Response segments, back to back at the flow's rate after half an RTT.
    let mut t = t0 + rtt_ns + 1_000 + half;
    let mut off = 0u64;
    let mut k = 0u64;
    let mut last_ts = t;
    while off < total {
        let len = mss.min(total - off);
        let seq = si.wrapping_add(1).wrapping_add(off as u32);
        let fl = if off + len == total {
            flags::ACK | flags::PSH
        } else {
            flags::ACK
        };
        if rng.gen_bool(c.loss) {
            // Lost before the tap: the sender retransmits after an RTT (three duplicate ACKs).
            rep.lost += 1;
            let at = t + rtt_ns;
            pkt(at, true, fl, seq, cack, off, len as u32);
            last_ts = last_ts.max(at);
        } else if rng.gen_bool(c.reorder) {
            rep.reordered += 1;
            let at = t + gap_ns * rng.gen_range(2..6);
            pkt(at, true, fl, seq, cack, off, len as u32);
            last_ts = last_ts.max(at);
        } else {
            pkt(t, true, fl, seq, cack, off, len as u32);
            if rng.gen_bool(c.duplicate) {
                rep.duplicated += 1;
                let at = t + rtt_ns;
                pkt(at, true, fl, seq, cack, off, len as u32);
                last_ts = last_ts.max(at);
            }
        }
        last_ts = last_ts.max(t);
        off += len;
        k += 1;
        // The client acknowledges every second segment, half an RTT later at the tap.
        if k.is_multiple_of(2) || off == total {
            pkt(
                t + half,
                false,
                flags::ACK,
                cack,
                seq.wrapping_add(len as u32),
                0,
                0,
            );
        }
        t += (gap_ns * len).div_ceil(mss);
    }
    let sfin = si.wrapping_add(1).wrapping_add(total as u32);
    let tf = last_ts + 1_000;
    pkt(tf, true, flags::FIN | flags::ACK, sfin, cack, 0, 0);
    pkt(
        tf + half,
        false,
        flags::FIN | flags::ACK,
        cack,
        sfin.wrapping_add(1),
        0,
        0,
    );
    pkt(
        tf + rtt_ns,
        true,
        flags::ACK,
        sfin.wrapping_add(1),
        cack.wrapping_add(1),
        0,
        0,
    );
    (conn, pkts)
}
