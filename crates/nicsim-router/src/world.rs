//! What the router's components share: the packets in flight, every FIFO and RAM ring (kernel
//! FIFOs, so that pushes and pops wake the right ports), each NIC's tables and scheduler state,
//! drop counters by place, class and reason, the protocol's invariant counters, and the sink.

use std::collections::BTreeMap;

use nicsim_kernel::{Calendar, FifoId, FifoSet, Slab, SlabId, Time};

use crate::measure::Sink;
use crate::ternary::{Ternary, Ternary80};

/// Service class: high priority (a classification mask matched) or low.
pub const HI: usize = 0;
/// Service class: low priority (no classification mask matched, or classification off).
pub const LO: usize = 1;
/// Class names by class index, for reports.
pub const CLASS_NAMES: [&str; 2] = ["high", "low"];

/// No NIC (a packet's output before routing).
pub const NO_NIC: u8 = u8::MAX;

/// A packet in flight: its headers, where it goes and how it is carried.
#[derive(Debug, Clone)]
pub struct Pkt {
    /// Sequence number: the sending port's index in the top 16 bits, then a count.
    pub seq: u64,
    /// Frame bytes including FCS.
    pub frame_bytes: u32,
    /// IPv4 source address.
    pub src: u32,
    /// IPv4 destination address.
    pub dst: u32,
    /// IP ToS byte.
    pub tos: u8,
    /// IP TTL, decremented on forwarding.
    pub ttl: u8,
    /// IP protocol.
    pub proto: u8,
    /// The NIC it arrived at.
    pub in_nic: u8,
    /// The NIC it leaves by ([`NO_NIC`] before routing).
    pub out_nic: u8,
    /// The class the input NIC queues the packet in.
    pub class: u8,
    /// The class its headers mark it as (the class masks' verdict, even with classification
    /// off); statistics are kept by this class.
    pub marked: u8,
    /// Forwarded NIC to NIC (else through the PC).
    pub fast: bool,
    /// Carried by a burst within an output NIC's grant.
    pub granted: bool,
    /// Bytes of this packet (data, descriptors, length header) that crossed the bus.
    pub bus_bytes: u32,
    /// First bit on the tester's wire.
    pub t_sent: Time,
}

/// Handle of a packet in [`World::pkts`].
pub type PktId = SlabId;

/// A grant or request: bytes per class.
pub type Bytes2 = [u32; 2];

/// Where a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// The MAC's receive buffer of NIC n.
    MacRx(u8),
    /// An input FIFO of NIC n (fast-path or slow-path pair).
    Input(u8),
    /// The Linux IP stack.
    Cpu,
    /// An output FIFO of NIC n (never, if the protocol holds).
    Output(u8),
}

/// A packet burst on its way over the bus: its packets (popped from the input FIFOs when it
/// was composed) with the byte offset at which each one's last byte is on the bus.
#[derive(Debug, Clone, Default)]
pub struct Burst {
    /// The output NIC it goes to.
    pub to: u8,
    /// The packets, each with the bus offset (bytes) of its last byte.
    pub pkts: std::collections::VecDeque<(PktId, u64)>,
    /// Bytes of the whole burst on the bus: header, packets with their length headers, trailing REQ.
    pub total_bytes: u64,
    /// Bytes of it put on the bus so far.
    pub sent_bytes: u64,
    /// The RES's grant per class, and the frame bytes of each class landed so far: checked
    /// as packets land, independently of how the burst was composed.
    pub grant: Bytes2,
    /// Frame bytes landed in the output FIFO so far, per class.
    pub landed_bytes: [u64; 2],
}

/// One FPGA NIC: its FIFOs, its tables and the three schedulers' state.
#[derive(Debug, Clone)]
pub struct Nic {
    /// The NIC's name in the configuration.
    pub name: String,
    /// FPGA fast path on (else every packet takes the slow path).
    pub fast_path: bool,
    /// Classification on (else every packet is queued as low priority).
    pub classify: bool,
    /// Routing masks in priority order, each with its output NIC.
    pub routes: Vec<(Ternary, u8)>,
    /// (destination: a NIC index, `SLOW` or `ANY`; mask).
    pub classes: Vec<(u8, Ternary80)>,
    /// The MAC's receive buffer.
    pub mac_rx: FifoId,
    /// Per output NIC: its [high, low] input FIFOs; none for itself, nor without a fast path
    /// (see [`Nic::inq_pair`]).
    pub inq: Vec<Option<[FifoId; 2]>>,
    /// The slow-path input FIFOs [high, low].
    pub slow_in: [FifoId; 2],
    /// The fast-path output FIFO.
    pub out_fast: FifoId,
    /// The slow-path output FIFO.
    pub out_slow: FifoId,
    /// The driver's rings in RAM: two reception rings (one per class) and a transmit ring.
    pub rx_ring: [FifoId; 2],
    /// The driver's transmit ring in RAM.
    pub tx_ring: FifoId,
    // Request scheduler (this NIC as input).
    /// Per output NIC: it has packets waiting here and no REQ has been sent for them yet.
    pub active: Vec<bool>,
    /// The request scheduler's round-robin pointer over output NICs.
    pub req_ptr: usize,
    /// The output NIC whose RES this NIC waits for after its REQ.
    pub awaiting_res: Option<u8>,
    // Burst scheduler (as input): RES received per output NIC, not yet served.
    /// Per output NIC: its RES's grant per class, not yet served by a burst.
    pub res_in: Vec<Option<Bytes2>>,
    /// The burst scheduler's round-robin pointer over output NICs.
    pub burst_ptr: usize,
    /// The burst on its way over the bus, if any.
    pub burst: Option<Burst>,
    // Response scheduler (as output): the latest REQ per input NIC.
    /// Per input NIC: the bytes per class its latest REQ asked for.
    pub req_in: Vec<Option<Bytes2>>,
    /// The response scheduler's round-robin pointer over input NICs.
    pub res_ptr: usize,
    /// Sent a RES to this input and waits for the REQ that trails its burst.
    pub serving: Option<u8>,
    // DMA engine: round robin over its four channels; REQ and RES alternate on channel (iii).
    /// The DMA engine's round-robin pointer over its four channels.
    pub chan_ptr: usize,
    /// The last message sent on channel (iii) was a RES (a waiting REQ goes next).
    pub last_msg_was_res: bool,
    /// Fairness: per peer, turns the scheduler gave to others while the peer waited.
    pub req_waits: Vec<u32>,
    /// As `req_waits`, for the response scheduler.
    pub res_waits: Vec<u32>,
    /// As `req_waits`, for the burst scheduler.
    pub burst_waits: Vec<u32>,
}

/// Class-mask destinations besides NIC indices.
pub const SLOW: u8 = 254;
/// Class-mask destination that matches any destination.
pub const ANY: u8 = 253;

impl Nic {
    /// The output NIC of the first matching route, if any.
    #[inline]
    pub fn route(&self, dst: u32) -> Option<u8> {
        self.routes
            .iter()
            .find(|(t, _)| t.matches(dst))
            .map(|&(_, n)| n)
    }
    /// The [high, low] input FIFOs for output NIC `j`, which a route can lead to (the config
    /// check rejects a route to the NIC itself, and a NIC without a fast path routes nothing).
    #[inline]
    pub fn inq_pair(&self, j: usize) -> [FifoId; 2] {
        self.inq[j].expect("input FIFOs for a routed output")
    }
    /// The class the masks give a packet bound for `dest` (a NIC index or `SLOW`), whether
    /// or not classification is on.
    #[inline]
    pub fn marked_class(&self, dest: u8, key: u128) -> usize {
        let hit = self
            .classes
            .iter()
            .any(|&(d, m)| (d == dest || d == ANY) && m.matches(key));
        if hit {
            HI
        } else {
            LO
        }
    }
}

/// Counters that the protocol's invariants are checked on.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ProtoStats {
    /// REQs the request schedulers sent (trailing REQs not included).
    pub reqs: u64,
    /// REQs that trailed a burst (counted where they arrive).
    pub trailing_reqs: u64,
    /// REQs that asked for no bytes (they end an exchange; counted where they arrive).
    pub null_reqs: u64,
    /// RES messages sent.
    pub res: u64,
    /// Bursts sent.
    pub bursts: u64,
    /// Bursts that carried no packet.
    pub empty_bursts: u64,
    /// Packets carried by bursts.
    pub burst_packets: u64,
    /// Packets that landed in an output FIFO beyond their class's grant in the RES their
    /// burst answered (must stay 0).
    pub grant_violations: u64,
    /// Fast-path packets delivered that did not land within a grant (must stay 0).
    pub ungranted_delivered: u64,
    /// Packets that found no room in an output FIFO (must stay 0).
    pub output_overflows: u64,
    /// A RES arrived while the previous one from the same output was unserved (must stay 0).
    pub duplicate_res: u64,
    /// The most turns any request / response / burst scheduler gave to others while one
    /// peer waited.
    pub max_req_waits: u32,
    /// The most turns a response scheduler gave to others while one peer waited.
    pub max_res_waits: u32,
    /// The most turns a burst scheduler gave to others while one peer waited.
    pub max_burst_waits: u32,
}

/// Bus activity.
#[derive(Debug, Clone, Default)]
pub struct BusStats {
    /// Transactions on the bus.
    pub transactions: u64,
    /// Ticks the bus was held.
    pub busy_ticks: u64,
    /// Bus cycles spent in data phases.
    pub data_cycles: u64,
    /// Bus cycles spent in transaction overhead (address, attribute, response, turnaround).
    pub overhead_cycles: u64,
    /// Cycles by channel: download, upload, messages, bursts.
    pub cycles_by_channel: [u64; 4],
    /// Bus bytes of packets that were dropped after crossing it.
    pub wasted_bytes: u64,
    /// Ticks the memory bus was busy with DMA.
    pub memory_busy_ticks: u64,
}

/// Everything the router's components share.
pub struct World {
    /// Pending wake-ups and the current instant.
    pub cal: Calendar,
    /// The packets in flight.
    pub pkts: Slab<Pkt>,
    /// Every FIFO and RAM ring, holding packet handles.
    pub q: FifoSet<PktId>,
    /// The NICs, by index.
    pub nics: Vec<Nic>,
    /// The Linux routing table: each NIC's subnet.
    pub subnets: Vec<Ternary>,
    /// (place, class, reason) → (packets, frame bytes).
    pub drops: BTreeMap<(Place, u8, &'static str), (u64, u64)>,
    /// The testers' counters.
    pub sink: Sink,
    /// The protocol's invariant counters.
    pub proto: ProtoStats,
    /// Bus activity.
    pub bus: BusStats,
    /// Ticks the CPU spent forwarding.
    pub cpu_busy_ticks: u64,
    /// When the last packet so far left the router (delivered or dropped).
    pub last_out: Time,
}

nicsim_kernel::has_calendar!(World);

impl World {
    /// Drop a packet in flight at `place`, counting the reason; bus bytes it used are wasted.
    pub fn drop_pkt(&mut self, id: PktId, place: Place, reason: &'static str) {
        let p = &self.pkts[id];
        let e = self.drops.entry((place, p.marked, reason)).or_default();
        e.0 += 1;
        e.1 += p.frame_bytes as u64;
        self.bus.wasted_bytes += p.bus_bytes as u64;
        self.pkts.free(id);
        self.last_out = self.last_out.max(self.cal.now());
    }

    /// The packet's last bit reached the tester at `t_rx` through output NIC `nic`.
    pub fn deliver(&mut self, id: PktId, nic: u8, t_rx: Time) {
        let p = &self.pkts[id];
        if p.fast && !p.granted {
            self.proto.ungranted_delivered += 1;
        }
        self.sink.deliver(t_rx, nic, p);
        self.pkts.free(id);
        self.last_out = self.last_out.max(t_rx);
    }

    /// Push into FIFO `f` (the caller checked room).
    #[inline]
    pub fn push(&mut self, f: FifoId, now: Time, id: PktId, bytes: u32, head: Time, tail: Time) {
        self.q.push(&mut self.cal, f, now, id, bytes, head, tail);
    }

    /// Pop the front of FIFO `f`, if any.
    #[inline]
    pub fn pop(&mut self, f: FifoId, now: Time) -> Option<nicsim_kernel::Slot<PktId>> {
        self.q.pop(&mut self.cal, f, now)
    }
}
