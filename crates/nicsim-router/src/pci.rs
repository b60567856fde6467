//! The shared PCI/PCI-X bus, the NICs' DMA engines on it, and the distributed REQ/RES/burst
//! scheduling protocol that runs over it (section III-B of the paper).
//!
//! **Bus.** One transaction at a time. A transaction of `b` bytes holds the bus for
//! `overhead_cycles + ceil(8 b / width_bits)` cycles, and carries at most `max_burst_bytes`.
//! A fast-path burst longer than that is cut into several transactions, re-arbitrated between
//! them; a slow-path packet's data is cut likewise, each piece paying its own overhead, but its
//! pieces follow each other without re-arbitration (one frame at most, so the NIC holds the
//! bus for at most a few µs; docs/router.md). The arbiter is round
//! robin over the NICs (bus masters) that have something to send, and arbitration is hidden
//! (the next transaction starts when the previous one ends). Every crossing is a transaction:
//! a slow-path packet crosses twice (upload to RAM, download from RAM), a fast-path packet
//! once (inside a burst). DMA into or out of RAM also occupies the memory bus.
//!
//! **DMA engine** of each NIC: four channels, served round robin when the NIC is granted the
//! bus — (i) slow-path download RAM → slow-path output FIFO (descriptor and data reads, split
//! transactions: the bus is free during the memory read latency), (ii) slow-path upload input
//! FIFO → RAM reception ring of the packet's class (data and descriptor write-back; high
//! class first), (iii) REQ and RES messages (alternating when both are waiting), (iv) bursts.
//!
//! **Protocol** (III-B), per NIC as input and as output:
//! - *Request scheduler*: scans the active output NICs round robin from its request pointer,
//!   sends one a REQ with the bytes stored in its two input FIFOs (packets whose last byte is
//!   in; one still arriving through input processing is not yet stored), clears its active
//!   flag, and waits for that output's RES before sending another REQ.
//! - *Response scheduler*: scans the input NICs with a pending REQ round robin from its
//!   response pointer, sends one a RES granting bytes of room in its fast-path output FIFO by
//!   strict priority (high class first, low gets what is left), and waits for the REQ that
//!   trails that input's burst before it sends any other RES.
//! - *Burst scheduler*: scans the output NICs whose RES it holds round robin from its burst
//!   pointer and sends one a burst: a header, high-priority packets then low-priority ones
//!   (each behind a length header) within the grant, and a trailing REQ with the bytes now in
//!   its input FIFOs (a null REQ when none are stored, which ends the exchange; if a packet is
//!   still arriving, the output stays active and gets a REQ once it is stored). When neither
//!   head-of-line packet fits, the burst is empty: header and trailing REQ only.
//!
//! Invariants (counted in `World::proto`, checked by the tests): output FIFOs never
//! overflow, every fast-path packet delivered was carried within a grant, no scheduler passes
//! over a waiting peer more than once per other peer, and every packet is accounted for.
//!
//! Decisions where the paper is silent (docs/router.md): an initial REQ is only sent for a
//! non-empty pair (a pair drained by a burst since it became active just goes inactive); a REQ
//! carries the FIFO occupancy when the message is put on the bus; a burst takes its packets
//! out of the input FIFOs when it is composed and they land in the output FIFO when the
//! transaction that carries their last byte ends; the trailing REQ is computed when the
//! burst's last transaction ends; the output NIC sends a RES only when its fast-path output
//! FIFO has room for the bytes asked for or for `res_min_free_bytes` (default: the largest
//! frame the port takes, 1518 bytes or a larger jumbo frame), whichever is less, so that the
//! grant admits the head-of-line packet.

use nicsim_kernel::{Clock, Component, FifoId, Link, Port, Server, Time, Width};

use crate::world::{Burst, Bytes2, Place, World, HI, LO};

/// DMA channels.
const DOWNLOAD: usize = 0;
const UPLOAD: usize = 1;
const MSG: usize = 2;
const BURST: usize = 3;

/// What a transaction does when it ends.
#[derive(Debug, Clone, Copy)]
enum Done {
    /// Effects happened at the start (slow-path transfers).
    Nothing,
    Req {
        from: u8,
        to: u8,
        bytes: Bytes2,
    },
    Res {
        from: u8,
        to: u8,
        grant: Bytes2,
    },
    /// A piece of NIC `nic`'s burst.
    Chunk {
        nic: u8,
    },
}

/// The bus, its round-robin arbiter and the NICs' DMA engines.
pub struct PciBus {
    /// The bus clock.
    pub clock: Clock,
    /// Bus width (bits per data phase).
    pub width: Width,
    /// Bus cycles per transaction besides its data phases.
    pub overhead_cycles: u64,
    /// Most bytes one transaction carries.
    pub max_burst_bytes: u64,
    /// Bytes of a REQ or RES message, and of a burst's trailing REQ.
    pub msg_bytes: u32,
    /// Bytes of a burst's header.
    pub burst_header_bytes: u32,
    /// Bytes of the length header ahead of each packet in a burst.
    pub length_header_bytes: u32,
    /// Bytes of a descriptor, moved with each slow-path packet.
    pub descriptor_bytes: u32,
    /// Free bytes of the fast-path output FIFO that let an output send a RES.
    pub res_min_free_bytes: u32,
    /// The memory bus (width × transfers per clock, on the memory clock).
    pub mem: Link,
    /// From a memory read request to its first data, in ticks.
    pub mem_read_latency: u64,
    /// FIFOs and rings it reads and writes (for the calendar).
    pub reads: Vec<FifoId>,
    /// FIFOs and rings it writes (for the calendar).
    pub writes: Vec<FifoId>,
    /// The transaction in progress (what to do when it ends), and until when.
    server: Server<Done>,
    /// The arbiter's round-robin pointer over bus masters.
    rr: usize,
}

impl PciBus {
    /// An idle bus for `cfg`, on the bus and memory clocks.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: &crate::config::Config,
        clock: Clock,
        mem_clock: Clock,
        mem_read_latency: u64,
        reads: Vec<FifoId>,
        writes: Vec<FifoId>,
    ) -> PciBus {
        let (b, n, m) = (&cfg.pc.bus, &cfg.nic, &cfg.pc.memory);
        PciBus {
            clock,
            width: Width::new(b.width_bits),
            overhead_cycles: b.overhead_cycles as u64,
            max_burst_bytes: b.max_burst_bytes as u64,
            msg_bytes: n.msg_bytes,
            burst_header_bytes: n.burst_header_bytes,
            length_header_bytes: n.length_header_bytes,
            descriptor_bytes: cfg.pc.driver.descriptor_bytes,
            res_min_free_bytes: cfg.res_min_free_bytes(),
            mem: Link::new(m.width_bits * m.transfers_per_clock, mem_clock),
            mem_read_latency,
            reads,
            writes,
            server: Server::default(),
            rr: 0,
        }
    }

    /// Bus bytes per data phase (packets start on a data-phase boundary).
    fn pad(&self, bytes: u32) -> u64 {
        let w = (self.width.bits / 8) as u64;
        (bytes as u64).div_ceil(w) * w
    }

    /// Occupy the memory bus for `bytes` from `t` on; returns when it is done.
    fn memory(&mut self, t: Time, bytes: u32, w: &mut World) -> Time {
        let start = self
            .mem
            .clock
            .edge_at_or_after(t.max(self.mem.busy_until()));
        let tr = self.mem.send(start, bytes, start);
        w.bus.memory_busy_ticks += tr.tail - start;
        tr.tail
    }

    /// Transactions that carry `bytes` of data (at most `max_burst_bytes` each).
    fn pieces(&self, bytes: u32) -> u64 {
        (bytes as u64).div_ceil(self.max_burst_bytes).max(1)
    }

    /// Start `transactions` back to back, `cycles` in all (of which `data` are data phases),
    /// on channel `chan`.
    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        now: Time,
        cycles: u64,
        data: u64,
        transactions: u64,
        chan: usize,
        done: Done,
        w: &mut World,
    ) {
        let t = self.clock.cycles(cycles);
        self.server.start(done, now, t);
        let b = &mut w.bus;
        b.transactions += transactions;
        b.busy_ticks += t;
        b.data_cycles += data;
        b.overhead_cycles += cycles - data;
        b.cycles_by_channel[chan] += cycles;
    }

    /// NIC `m`'s DMA engine, granted the bus: start its next transaction, if any.
    fn dma(&mut self, m: usize, now: Time, w: &mut World) -> bool {
        for k in 0..4 {
            let c = (w.nics[m].chan_ptr + k) % 4;
            let go = match c {
                DOWNLOAD => self.download(m, now, w),
                UPLOAD => self.upload(m, now, w),
                MSG => self.message(m, now, w),
                _ => self.burst(m, now, w),
            };
            if go {
                w.nics[m].chan_ptr = (c + 1) % 4;
                return true;
            }
        }
        false
    }

    /// Channel (i): the front of the transmit ring into the slow-path output FIFO.
    fn download(&mut self, m: usize, now: Time, w: &mut World) -> bool {
        let (ring, out) = (w.nics[m].tx_ring, w.nics[m].out_slow);
        let Some(s) = w.q.ready_front(ring, now) else {
            return false;
        };
        let bytes = w.pkts[s.item].frame_bytes;
        if !w.q.room(out, bytes) {
            return false;
        }
        let slot = w.pop(ring, now).expect("ready front");
        let (d, o) = (
            self.width.beats(self.descriptor_bytes) + self.width.beats(bytes),
            self.overhead_cycles,
        );
        // Descriptor read and data read (one per piece), each a split transaction (request
        // and completion).
        let pieces = self.pieces(bytes);
        self.start(
            now,
            2 * o * (1 + pieces) + d,
            d,
            1 + pieces,
            DOWNLOAD,
            Done::Nothing,
            w,
        );
        let mem_done = self.memory(now, bytes + self.descriptor_bytes, w);
        let land = self.server.busy_until().max(mem_done) + self.mem_read_latency;
        w.pkts[slot.item].bus_bytes += bytes + self.descriptor_bytes;
        w.push(out, now, slot.item, bytes, land, land);
        true
    }

    /// Channel (ii): the slow-path input FIFOs (high class first) into their RAM rings.
    fn upload(&mut self, m: usize, now: Time, w: &mut World) -> bool {
        for class in [HI, LO] {
            let (f, ring) = (w.nics[m].slow_in[class], w.nics[m].rx_ring[class]);
            let Some(s) = w.q.ready_front(f, now) else {
                continue;
            };
            if !w.q.room(ring, 1) {
                continue;
            }
            let bytes = s.bytes;
            let slot = w.pop(f, now).expect("ready front");
            let d = self.width.beats(self.descriptor_bytes) + self.width.beats(bytes);
            // Data write (one per piece) and descriptor write-back.
            let pieces = self.pieces(bytes);
            self.start(
                now,
                (pieces + 1) * self.overhead_cycles + d,
                d,
                pieces + 1,
                UPLOAD,
                Done::Nothing,
                w,
            );
            let land =
                self.server
                    .busy_until()
                    .max(self.memory(now, bytes + self.descriptor_bytes, w));
            w.pkts[slot.item].bus_bytes += bytes + self.descriptor_bytes;
            w.push(ring, now, slot.item, 1, land, land);
            return true;
        }
        false
    }

    /// Channel (iii): a RES (response scheduler) or a REQ (request scheduler).
    fn message(&mut self, m: usize, now: Time, w: &mut World) -> bool {
        let n = w.nics.len();
        let nic = &w.nics[m];
        // The response scheduler's next input in round-robin order, and whether its output
        // FIFO has room enough: the bytes asked for, up to `res_min_free_bytes`.
        let next_req = (0..n)
            .map(|k| (nic.res_ptr + k) % n)
            .find(|&i| nic.req_in[i].is_some());
        let res_ready = nic.serving.is_none()
            && next_req.is_some_and(|i| {
                let [hi, lo] = nic.req_in[i].expect("pending");
                let need = (hi as u64 + lo as u64).min(self.res_min_free_bytes as u64);
                w.q.room(nic.out_fast, need as u32)
            });
        // Active outputs whose pair emptied since (a burst took the packets) go inactive
        // without a REQ: there is nothing to ask for.
        if nic.awaiting_res.is_none() {
            for j in 0..n {
                if w.nics[m].active[j] {
                    let [h, l] = w.nics[m].inq_pair(j);
                    if w.q.is_fifo_empty(h) && w.q.is_fifo_empty(l) {
                        w.nics[m].active[j] = false;
                        w.nics[m].req_waits[j] = 0;
                    }
                }
            }
        }
        let nic = &w.nics[m];
        // An active output can be sent a REQ once a packet is stored in its pair (the first
        // one may still be arriving through the NIC's input processing).
        let stored = |j: usize| {
            let [h, l] = w.nics[m].inq_pair(j);
            w.q.stored_bytes(h, now) + w.q.stored_bytes(l, now) > 0
        };
        // One bit per output (at most 64 NICs, checked with the config).
        let eligible: u64 = (0..n)
            .filter(|&j| nic.active[j] && stored(j))
            .fold(0, |bits, j| bits | 1 << j);
        let is_eligible = |j: usize| eligible >> j & 1 == 1;
        let req_ready = nic.awaiting_res.is_none() && eligible != 0;
        let send_res = match (res_ready, req_ready) {
            (false, false) => return false,
            (true, true) => !nic.last_msg_was_res,
            (r, _) => r,
        };
        let cycles = self.overhead_cycles + self.width.beats(self.msg_bytes);
        let data = self.width.beats(self.msg_bytes);
        if send_res {
            let nic = &mut w.nics[m];
            let i = next_req.expect("a pending REQ");
            let req = nic.req_in[i].take().expect("pending");
            let free = w.q.free_bytes(nic.out_fast);
            let hi = (req[HI] as u64).min(free);
            let lo = (req[LO] as u64).min(free - hi);
            nic.serving = Some(i as u8);
            nic.res_ptr = (i + 1) % n;
            nic.last_msg_was_res = true;
            nic.res_waits[i] = 0;
            for k in 0..n {
                if nic.req_in[k].is_some() {
                    nic.res_waits[k] += 1;
                    w.proto.max_res_waits = w.proto.max_res_waits.max(nic.res_waits[k]);
                }
            }
            w.proto.res += 1;
            let grant = [hi as u32, lo as u32];
            self.start(
                now,
                cycles,
                data,
                1,
                MSG,
                Done::Res {
                    from: m as u8,
                    to: i as u8,
                    grant,
                },
                w,
            );
        } else {
            let nic = &mut w.nics[m];
            let j = (0..n)
                .map(|k| (nic.req_ptr + k) % n)
                .find(|&j| is_eligible(j))
                .expect("an active output");
            let [h, l] = nic.inq_pair(j);
            let bytes = [
                w.q.stored_bytes(h, now) as u32,
                w.q.stored_bytes(l, now) as u32,
            ];
            nic.active[j] = false;
            nic.awaiting_res = Some(j as u8);
            nic.req_ptr = (j + 1) % n;
            nic.last_msg_was_res = false;
            nic.req_waits[j] = 0;
            for k in (0..n).filter(|&k| is_eligible(k) && k != j) {
                nic.req_waits[k] += 1;
                w.proto.max_req_waits = w.proto.max_req_waits.max(nic.req_waits[k]);
            }
            w.proto.reqs += 1;
            let done = Done::Req {
                from: m as u8,
                to: j as u8,
                bytes,
            };
            self.start(now, cycles, data, 1, MSG, done, w);
        }
        true
    }

    /// Channel (iv): continue the burst in progress, or compose one for the next RES held.
    fn burst(&mut self, m: usize, now: Time, w: &mut World) -> bool {
        if w.nics[m].burst.is_none() && !self.compose(m, now, w) {
            return false;
        }
        let b = w.nics[m].burst.as_mut().expect("a burst");
        let chunk = self.max_burst_bytes.min(b.total_bytes - b.sent_bytes);
        b.sent_bytes += chunk;
        let data = self.width.beats(chunk as u32);
        self.start(
            now,
            self.overhead_cycles + data,
            data,
            1,
            BURST,
            Done::Chunk { nic: m as u8 },
            w,
        );
        true
    }

    /// The burst scheduler picks the next output whose RES it holds and composes its burst.
    fn compose(&mut self, m: usize, now: Time, w: &mut World) -> bool {
        let n = w.nics.len();
        let nic = &mut w.nics[m];
        let Some(j) = (0..n)
            .map(|k| (nic.burst_ptr + k) % n)
            .find(|&j| nic.res_in[j].is_some())
        else {
            return false;
        };
        let grant = nic.res_in[j].take().expect("held RES");
        nic.burst_ptr = (j + 1) % n;
        nic.burst_waits[j] = 0;
        for k in 0..n {
            if nic.res_in[k].is_some() {
                nic.burst_waits[k] += 1;
                w.proto.max_burst_waits = w.proto.max_burst_waits.max(nic.burst_waits[k]);
            }
        }
        let fifos = nic.inq_pair(j);
        let mut burst = Burst {
            to: j as u8,
            grant,
            ..Default::default()
        };
        let mut offset = self.burst_header_bytes as u64;
        for class in [HI, LO] {
            let mut used = 0u64;
            while let Some(s) = w.q.ready_front(fifos[class], now) {
                if used + s.bytes as u64 > grant[class] as u64 {
                    break;
                }
                used += s.bytes as u64;
                let slot = w.pop(fifos[class], now).expect("ready front");
                offset += self.length_header_bytes as u64 + self.pad(slot.bytes);
                w.pkts[slot.item].bus_bytes += self.length_header_bytes + slot.bytes;
                burst.pkts.push_back((slot.item, offset));
            }
        }
        w.proto.bursts += 1;
        w.proto.burst_packets += burst.pkts.len() as u64;
        if burst.pkts.is_empty() {
            w.proto.empty_bursts += 1;
        }
        burst.total_bytes = offset + self.msg_bytes as u64;
        w.nics[m].burst = Some(burst);
        true
    }

    /// A transaction ends at `now`.
    fn complete(&mut self, done: Done, now: Time, w: &mut World) {
        match done {
            Done::Nothing => {}
            Done::Req { from, to, bytes } => deliver_req(w, from, to, bytes, false),
            Done::Res { from, to, grant } => {
                let nic = &mut w.nics[to as usize];
                if nic.res_in[from as usize].is_some() {
                    w.proto.duplicate_res += 1;
                }
                nic.res_in[from as usize] = Some(grant);
                if nic.awaiting_res == Some(from) {
                    nic.awaiting_res = None;
                }
            }
            Done::Chunk { nic } => {
                let m = nic as usize;
                let b = w.nics[m].burst.as_mut().expect("burst in progress");
                let (to, sent) = (b.to as usize, b.sent_bytes);
                let finished = sent == b.total_bytes;
                let out = w.nics[to].out_fast;
                // Packets whose last byte has crossed land in the output FIFO.
                while let Some(&(id, end)) = w.nics[m].burst.as_ref().and_then(|b| b.pkts.front()) {
                    if end > sent {
                        break;
                    }
                    let b = w.nics[m].burst.as_mut().expect("burst");
                    b.pkts.pop_front();
                    let (bytes, class) = (w.pkts[id].frame_bytes, w.pkts[id].class as usize & 1);
                    b.landed_bytes[class] += bytes as u64;
                    let granted = b.landed_bytes[class] <= b.grant[class] as u64;
                    w.pkts[id].granted = granted;
                    if !granted {
                        w.proto.grant_violations += 1;
                    }
                    if w.q[out].has_room(bytes) {
                        w.push(out, now, id, bytes, now, now);
                    } else {
                        w.proto.output_overflows += 1;
                        w.drop_pkt(id, Place::Output(to as u8), "output_fifo_full");
                    }
                }
                if finished {
                    w.nics[m].burst = None;
                    // The trailing REQ: the bytes stored in this input's FIFOs now. When none
                    // are, but a packet is still arriving, the output stays active: its REQ
                    // goes out once the packet is stored.
                    let [h, l] = w.nics[m].inq_pair(to);
                    let bytes = [
                        w.q.stored_bytes(h, now) as u32,
                        w.q.stored_bytes(l, now) as u32,
                    ];
                    w.nics[m].active[to] =
                        bytes == [0, 0] && !(w.q.is_fifo_empty(h) && w.q.is_fifo_empty(l));
                    w.nics[m].req_waits[to] = 0;
                    deliver_req(w, nic, to as u8, bytes, true);
                }
            }
        }
    }
}

/// A REQ from input `from` reaches output `to`. Only the REQ that trails a burst ends the
/// response scheduler's wait for that input; a null REQ withdraws the input's request.
fn deliver_req(w: &mut World, from: u8, to: u8, bytes: Bytes2, trailing: bool) {
    let null = bytes == [0, 0];
    if trailing {
        w.proto.trailing_reqs += 1;
    }
    if null {
        w.proto.null_reqs += 1;
    }
    let nic = &mut w.nics[to as usize];
    nic.req_in[from as usize] = (!null).then_some(bytes);
    if null {
        // The input withdrew its request: it is no longer waiting for a turn.
        nic.res_waits[from as usize] = 0;
    }
    if trailing && nic.serving == Some(from) {
        nic.serving = None;
    }
}

impl Component<World> for PciBus {
    fn ports(&self) -> Vec<Port> {
        vec![Port::new(self.clock)
            .reads(&self.reads)
            .writes(&self.writes)]
    }

    fn step(&mut self, _: usize, now: Time, w: &mut World) {
        if self.server.is_free(now) {
            if let Some(done) = self.server.finish() {
                self.complete(done, now, w);
            }
            let n = w.nics.len();
            for k in 0..n {
                let m = (self.rr + k) % n;
                if self.dma(m, now, w) {
                    self.rr = (m + 1) % n;
                    break;
                }
            }
        }
        if let Some(t) = self.server.ends() {
            w.cal.wake_port(0, t);
            return;
        }
        // Idle: the earliest packet not yet ready at the front of a FIFO it serves (others
        // wake it through the calendar: a push into an empty FIFO, room made, a message).
        let mut next = Time::MAX;
        for nic in &w.nics {
            for f in [nic.tx_ring, nic.slow_in[HI], nic.slow_in[LO]] {
                if let Some(s) = w.q.front(f) {
                    if s.head > now {
                        next = next.min(s.head);
                    }
                }
            }
            // An active output whose first packet is still arriving: its REQ is due then.
            for (j, _) in nic.active.iter().enumerate().filter(|(_, &a)| a) {
                for f in nic.inq_pair(j) {
                    if let Some(s) = w.q.front(f) {
                        if s.tail > now {
                            next = next.min(s.tail);
                        }
                    }
                }
            }
        }
        if next != Time::MAX {
            w.cal.wake_port(0, next);
        }
    }
}
