//! The traffic generator's packet source: sizes from a distribution or a capture, flows by
//! weight, constant or Poisson arrivals at an offered rate (Gbit/s of packet bytes), or replay
//! of a pcap/pcapng capture with its own timing or rescaled to the rate. With functional work
//! on it builds real frames and prepares them for their chain (encrypts, tags, sets the FCS),
//! so that the offloads have real work to undo.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use nicsim_kernel::{Time, Timebase};
use nicsim_offloads::{FuncMeta, FunctionalOffload};
use nicsim_packet::capture::{CaptureError, CaptureReader};
use nicsim_packet::{FrameSpec, L4Proto};
use rand::distributions::{Distribution, WeightedIndex};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Exp, LogNormal};

use crate::config::{Arrivals, Config, ReplayTiming, SizeDist};
use crate::packet::{Chain, Frame, HeaderKey, Pkt};

/// A protocol by name or number (`nicsim_packet::ip::protocol::parse`).
pub fn parse_proto(s: &str) -> Result<u8, String> {
    nicsim_packet::ip::protocol::parse(s)
}

enum Sizes {
    Choice(Vec<u32>, WeightedIndex<f64>),
    Exp(Exp<f64>, u32, u32),
    LogN(LogNormal<f64>, u32, u32),
}

impl Sizes {
    fn sample(&self, rng: &mut ChaCha8Rng) -> u32 {
        match self {
            Sizes::Choice(v, w) => v[w.sample(rng)],
            Sizes::Exp(d, lo, hi) => (d.sample(rng).round() as u32).clamp(*lo, *hi),
            Sizes::LogN(d, lo, hi) => (d.sample(rng).round() as u32).clamp(*lo, *hi),
        }
    }
}

/// A captured packet to replay.
struct Captured {
    ts_ns: u64,
    frame: Vec<u8>,
    /// The frame's length on the wire (without FCS): the capture's original length, which a
    /// snap length may have cut `frame` short of.
    wire_len: u32,
}

impl Captured {
    /// The frame as it was on the wire: the captured bytes, zeros where a snap length cut them.
    fn wire_frame(&self) -> Vec<u8> {
        let mut f = self.frame.clone();
        if f.len() < self.wire_len as usize {
            f.resize(self.wire_len as usize, 0);
        }
        f
    }

    /// Its size as the datapath sees it: the wire length with the FCS, at least 64 bytes (in
    /// 64 bits: a capture may state an original length up to 2^32 − 1).
    fn size(&self) -> u64 {
        (u64::from(self.wire_len) + 4).max(64)
    }

    /// [`Captured::size`] of a capture that [`check_capture_sizes`] accepted (at most
    /// `MAX_FRAME_BYTES`, so it fits).
    fn checked_size(&self) -> u32 {
        u32::try_from(self.size()).unwrap_or(u32::MAX)
    }
}

/// Functional offloads in physical order, shared by the generator (prepare) and the units (process).
pub type Funcs = Arc<Vec<Box<dyn FunctionalOffload>>>;

/// The packets offered: their sizes, flows, arrival times and, in functional runs, frames.
pub struct Source {
    tb: Timebase,
    total: u64,
    made: u64,
    rate_gbps: f64,
    arrivals: Arrivals,
    sizes: Option<Sizes>,
    mean_size: f64,
    flows: Vec<(FrameSpec, HeaderKey)>,
    flow_pick: Option<WeightedIndex<f64>>,
    replay: Option<(Vec<Captured>, ReplayTiming)>,
    rng_size: ChaCha8Rng,
    rng_flow: ChaCha8Rng,
    rng_arrival: ChaCha8Rng,
    rng_payload: ChaCha8Rng,
    rng_fault: ChaCha8Rng,
    bits_sent: f64,
    clock_us: f64,
    next_arrival: Option<Time>,
    build_frames: bool,
    bad_fcs: f64,
    bad_tag: f64,
    jpeg: Vec<u8>,
}

fn load_capture(path: &str) -> Result<Vec<Captured>, String> {
    // I/O errors name the file already; format errors name only their offset.
    let err = |e: CaptureError| match e {
        CaptureError::Io { .. } => e.to_string(),
        _ => format!("{path}: {e}"),
    };
    let mut reader = CaptureReader::open(Path::new(path)).map_err(err)?;
    let mut out = Vec::new();
    while let Some(rec) = reader.next_record() {
        let rec = rec.map_err(err)?;
        // A snap length keeps only the first bytes; the size on the wire is the original
        // length (which a capture may not state below what it kept).
        let wire_len = rec.orig_len.max(rec.data.len() as u32);
        out.push(Captured {
            ts_ns: rec.ts_ns,
            frame: rec.data,
            wire_len,
        });
    }
    // What the reader skipped or cut without refusing the capture (a file that ends inside
    // its last record: the traffic is the records before it) is said, not hidden; the run
    // has no other channel for it than standard error, where `nicsim` prints its warnings.
    for w in reader.leniency().warnings {
        eprintln!("warning: {path}: {w}");
    }
    if out.is_empty() {
        return Err(format!("{path}: the capture holds no packets"));
    }
    Ok(out)
}

/// The capture at `key` (`path`) against what the configuration's buffers hold: its largest
/// frame must be at most 9,600 bytes and fit every FIFO that must hold a whole packet, as the
/// configuration's check asks of generated sizes (the capture's sizes are known only now).
fn check_capture_sizes(
    cfg: &Config,
    key: &str,
    path: &str,
    caps: &[Captured],
) -> Result<(), String> {
    let Some((i, c)) = caps
        .iter()
        .enumerate()
        .max_by_key(|(i, c)| (c.size(), std::cmp::Reverse(*i)))
    else {
        return Ok(());
    };
    let size = c.size();
    if size > u64::from(crate::config::MAX_FRAME_BYTES) {
        return Err(format!(
            "{key}: {path}: packet {} is a {size}-byte frame (original length {} bytes), larger \
             than the {} bytes nicsim models",
            i + 1,
            c.wire_len,
            crate::config::MAX_FRAME_BYTES
        ));
    }
    if let Some((fifo, bytes)) = cfg
        .must_hold_packet()
        .into_iter()
        .find(|&(_, b)| u64::from(b) < size)
    {
        return Err(format!(
            "{key}: {path}: packet {} is a {size}-byte frame, which {fifo} ({bytes} bytes) cannot hold",
            i + 1
        ));
    }
    Ok(())
}

fn header_key(spec: &FrameSpec) -> HeaderKey {
    HeaderKey {
        src: spec.src,
        dst: spec.dst,
        sport: spec.sport,
        dport: spec.dport,
        proto: match spec.proto {
            L4Proto::Tcp => 6,
            L4Proto::Udp => 17,
        },
        tos: spec.tos,
        vlan: spec.vlan,
    }
}

/// Header key of a captured frame (without FCS); non-IP frames get unspecified addresses.
pub fn key_of_frame(frame: &[u8]) -> HeaderKey {
    let unspecified: IpAddr = "0.0.0.0".parse().unwrap();
    let mut k = HeaderKey {
        src: unspecified,
        dst: unspecified,
        sport: 0,
        dport: 0,
        proto: 0,
        tos: 0,
        vlan: None,
    };
    if let Ok(p) = nicsim_packet::parse(frame) {
        k.vlan = p.vlan;
        if let Some(ip) = p.ip {
            (k.src, k.dst, k.proto, k.tos) = (ip.src, ip.dst, ip.proto, ip.tos);
        }
        if let Some(l4) = p.l4 {
            (k.sport, k.dport) = (l4.sport, l4.dport);
        }
    }
    k
}

impl Source {
    /// The source of `cfg`'s traffic, whose flows send packets with `headers` (from
    /// [`Config::check`](crate::Validate::check)).
    pub fn new(
        cfg: &Config,
        headers: &[HeaderKey],
        tb: Timebase,
        build_frames: bool,
    ) -> Result<Source, String> {
        let seed = cfg.seed;
        let t = &cfg.traffic;
        let stream =
            |k: u64| ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k);
        let mut flows = Vec::new();
        for h in headers {
            let spec = FrameSpec {
                eth_src: [0x02, 0, 0, 0, 0, 1],
                eth_dst: [0x02, 0, 0, 0, 0, 2],
                vlan: h.vlan,
                src: h.src,
                dst: h.dst,
                proto: if h.proto == 6 {
                    L4Proto::Tcp
                } else {
                    L4Proto::Udp
                },
                sport: h.sport,
                dport: h.dport,
                tos: h.tos,
                ttl: 64,
                tcp_seq: 1,
                tcp_ack: 0,
                tcp_flags: 0x18,
            };
            let key = header_key(&spec);
            flows.push((spec, key));
        }
        let weights: Vec<f64> = cfg.flows.iter().map(|f| f.weight).collect();
        let flow_pick = WeightedIndex::new(&weights).ok();
        let (sizes, mean_size) = match &t.size {
            SizeDist::UniformSet { values } => {
                let m = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
                (
                    Sizes::Choice(
                        values.clone(),
                        WeightedIndex::new(vec![1.0; values.len()]).unwrap(),
                    ),
                    m,
                )
            }
            SizeDist::Fixed { bytes } => (
                Sizes::Choice(vec![*bytes], WeightedIndex::new([1.0]).unwrap()),
                *bytes as f64,
            ),
            SizeDist::Weighted { values, weights } => {
                let s: f64 = weights.iter().sum();
                let m = values
                    .iter()
                    .zip(weights)
                    .map(|(&v, w)| v as f64 * w)
                    .sum::<f64>()
                    / s;
                (
                    Sizes::Choice(
                        values.clone(),
                        WeightedIndex::new(weights)
                            .map_err(|e| format!("traffic.size.weights: {e}"))?,
                    ),
                    m,
                )
            }
            SizeDist::Exponential {
                mean_bytes,
                min_bytes,
                max_bytes,
            } => {
                let d = Sizes::Exp(Exp::new(1.0 / mean_bytes).unwrap(), *min_bytes, *max_bytes);
                let m = sample_mean(&d, seed);
                (d, m)
            }
            SizeDist::Lognormal {
                mu,
                sigma,
                min_bytes,
                max_bytes,
            } => {
                let d = Sizes::LogN(
                    LogNormal::new(*mu, *sigma).map_err(|e| format!("traffic.size: {e}"))?,
                    *min_bytes,
                    *max_bytes,
                );
                let m = sample_mean(&d, seed);
                (d, m)
            }
            SizeDist::Capture { path } => {
                let caps = load_capture(path)?;
                check_capture_sizes(cfg, "traffic.size.path", path, &caps)?;
                let v: Vec<u32> = caps.iter().map(Captured::checked_size).collect();
                let m = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
                let n = v.len();
                (
                    Sizes::Choice(v, WeightedIndex::new(vec![1.0; n]).unwrap()),
                    m,
                )
            }
        };
        let replay = match &t.replay {
            Some(r) => {
                let caps = load_capture(&r.path)?;
                check_capture_sizes(cfg, "traffic.replay.path", &r.path, &caps)?;
                if r.timing == ReplayTiming::Original {
                    // 64-bit time must hold the capture's own timing with these clocks.
                    let n = caps.len().min(t.packets as usize);
                    let first = caps.first().map_or(0, |c| c.ts_ns);
                    let span_ns = caps[..n]
                        .iter()
                        .map(|c| c.ts_ns.saturating_sub(first))
                        .max()
                        .unwrap_or(0);
                    Timebase::for_span(&cfg.clocks_mhz(), span_ns as f64 / 1e3)
                        .map_err(|e| format!("traffic.replay.path: {}: {e}", r.path))?;
                }
                // The window is checked against the packets offered when they are generated
                // (`Config::check`); a replay's count is known only now.
                let n = caps.len().min(t.packets as usize) as u64;
                if cfg.measure.window[1] > n {
                    return Err(format!(
                        "traffic.replay.path: {}: {n} packets to replay, fewer than the end of \
                         measure.window ({}); measure fewer, e.g. measure.window = [0, {n}]",
                        r.path, cfg.measure.window[1]
                    ));
                }
                Some((caps, r.timing))
            }
            None => None,
        };
        let total = match &replay {
            Some((c, _)) => t.packets.min(c.len() as u64),
            None => t.packets,
        };
        let mut s = Source {
            tb,
            total,
            made: 0,
            rate_gbps: t.rate_gbps,
            arrivals: t.arrivals,
            sizes: Some(sizes),
            mean_size,
            flows,
            flow_pick,
            replay,
            rng_size: stream(1),
            rng_flow: stream(2),
            rng_arrival: stream(3),
            rng_payload: stream(4),
            rng_fault: stream(5),
            bits_sent: 0.0,
            clock_us: 0.0,
            next_arrival: Some(Time::ZERO),
            build_frames,
            bad_fcs: t.faults.bad_fcs,
            bad_tag: t.faults.bad_tag,
            jpeg: nicsim_offloads::tiny_jpeg(8, 8, seed),
        };
        if s.replay.is_some() {
            s.sizes = None;
        }
        Ok(s)
    }

    /// Packets this source will offer in total.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Arrival time of the next packet, if any remain.
    #[inline]
    pub fn next_arrival(&self) -> Option<Time> {
        if self.made >= self.total {
            None
        } else {
            self.next_arrival
        }
    }

    /// The next packet; `chain_for` gives the chain it will be prepared for (functional runs).
    pub fn take(
        &mut self,
        chain_for: &dyn Fn(&HeaderKey, Option<u16>) -> Option<Chain>,
        funcs: Option<&Funcs>,
    ) -> Pkt {
        let t_arrival = self.next_arrival.unwrap_or(Time::ZERO);
        let id = self.made;
        self.made += 1;
        let (size, key, flow_hint, mut bytes) = match &self.replay {
            Some((caps, _)) => {
                let c = &caps[id as usize];
                let mut f = c.wire_frame();
                let key = key_of_frame(&f);
                let size = c.checked_size();
                f.resize(size as usize - 4, 0);
                nicsim_packet::fcs::append_fcs(&mut f);
                (size, key, None, self.build_frames.then_some(f))
            }
            None => {
                let fi = self
                    .flow_pick
                    .as_ref()
                    .map(|w| w.sample(&mut self.rng_flow))
                    .unwrap_or(0);
                let size = self.sizes.as_ref().unwrap().sample(&mut self.rng_size);
                let (spec, key) = &self.flows[fi];
                let size = size.max(spec.min_frame_len() as u32);
                let bytes = if self.build_frames {
                    let payload_len = size as usize - spec.header_len() - 4;
                    let mut payload = vec![0u8; payload_len];
                    payload[..4.min(payload_len)]
                        .copy_from_slice(&(id as u32).to_be_bytes()[..4.min(payload_len)]);
                    if payload_len >= 12 {
                        let body = &mut payload[4..payload_len - 8];
                        if body.len() >= self.jpeg.len() && id.is_multiple_of(2) {
                            body[..self.jpeg.len()].copy_from_slice(&self.jpeg);
                        } else {
                            self.rng_payload.fill(body);
                        }
                    }
                    spec.build(size as usize, &payload).ok()
                } else {
                    None
                };
                (size, *key, Some(fi as u16), bytes)
            }
        };
        let frame = bytes.take().map(|mut b| {
            let (plain_offset, plain) = match nicsim_packet::parse_five_tuple(&b[..b.len() - 4]) {
                Some((_, off)) if b.len() >= off + 4 + 12 => {
                    (off + 4, b[off + 4..b.len() - 4 - 8].to_vec())
                }
                _ => (0, Vec::new()),
            };
            if let (Some(funcs), Some(chain)) = (funcs, chain_for(&key, flow_hint)) {
                for &h in chain.hops().iter().rev() {
                    funcs[h as usize].prepare(&mut b);
                }
            }
            let n = b.len();
            if self.bad_tag > 0.0 && self.rng_fault.gen_bool(self.bad_tag) && plain_offset > 0 {
                b[n - 5] ^= 0x5a; // inside the SHA-3 tag, before the FCS
                let fcs = nicsim_packet::fcs::fcs(&b[..n - 4]);
                b[n - 4..].copy_from_slice(&fcs.to_le_bytes());
            }
            if self.bad_fcs > 0.0 && self.rng_fault.gen_bool(self.bad_fcs) {
                b[n - 1] ^= 0xff;
            }
            Box::new(Frame {
                bytes: b,
                plain,
                plain_offset,
                meta: FuncMeta::default(),
            })
        });
        self.advance(size);
        Pkt {
            id,
            size,
            hdr: key,
            flow: flow_hint.unwrap_or(u16::MAX),
            priority: 0,
            chain: Chain::default(),
            next: 0,
            trace: Chain::default(),
            recircs: 0,
            t_arrival,
            t_parse: Time::ZERO,
            frame,
        }
    }

    fn advance(&mut self, size: u32) {
        if self.made >= self.total {
            self.next_arrival = None;
            return;
        }
        let us_per_bit = 1.0 / (self.rate_gbps * 1e3);
        let next = match &self.replay {
            Some((caps, ReplayTiming::Original)) => {
                let i = self.made as usize;
                self.tb
                    .from_us((caps[i].ts_ns.saturating_sub(caps[0].ts_ns)) as f64 / 1e3)
            }
            _ => match self.arrivals {
                // Exact byte rate: packet i+1 arrives once packet i's bits have been offered.
                Arrivals::Constant => {
                    self.bits_sent += 8.0 * size as f64;
                    self.tb.from_us(self.bits_sent * us_per_bit)
                }
                Arrivals::Poisson => {
                    let mean_us = 8.0 * self.mean_size * us_per_bit;
                    let u: f64 = self.rng_arrival.gen_range(f64::MIN_POSITIVE..1.0);
                    self.clock_us += -mean_us * u.ln();
                    self.tb.from_us(self.clock_us)
                }
            },
        };
        self.next_arrival = Some(next);
    }
}

fn sample_mean(d: &Sizes, seed: u64) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xABCD);
    let n = 200_000;
    (0..n).map(|_| d.sample(&mut rng) as f64).sum::<f64>() / n as f64
}
