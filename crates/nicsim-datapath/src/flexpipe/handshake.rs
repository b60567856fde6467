//! The valid/ready hand-over between directly connected blocks (FlexPipe §III: the Offloads
//! are "directly connected to each other"). A sender takes the front packet of one of its
//! input FIFOs and hands it over its link only when the receiver can take it now: the next
//! Offload's Traffic Splitter, the Egress Traffic Controller, or a plain FIFO. When it cannot,
//! the sender sleeps until whatever would free room (or change what it picks) wakes it.

use nicsim_kernel::{Link, Time, Transfer};

use super::egress::EgressTc;
use crate::packet::PktId;
use crate::world::{FifoId, World};

/// A block that takes packets straight from a sender, deciding per packet where it lands and
/// whether it can take it now: an Offload's Traffic Splitter.
pub trait Receiver {
    /// Where packet `item` of `bytes` would land if sent at `now`; `None` when it cannot be
    /// taken now (the receiver then wakes the sender when that may change).
    fn route(&mut self, now: Time, w: &mut World, item: PktId, bytes: u32) -> Option<Route>;
    /// Packet `item` of `bytes` is on its way over transfer `tr`, to `route` (from
    /// [`Receiver::route`] at the same instant).
    fn enter(
        &mut self,
        now: Time,
        w: &mut World,
        route: Route,
        item: PktId,
        bytes: u32,
        tr: Transfer,
    );
    /// Whether the sender should wake for packet `item`: it might be taken then.
    fn may_take(&mut self, w: &mut World, item: PktId, bytes: u32) -> bool;
}

/// Where a sender's packet goes next, and whether it can go there now.
pub enum Next<'a, R> {
    /// A FIFO (PANIC: a crossbar port).
    Fifo(FifoId),
    /// An Offload's Traffic Splitter (FlexPipe: the Offloads are directly connected).
    Offload(&'a mut R),
    /// The Egress Traffic Controller.
    Egress(&'a EgressTc),
}

/// Where a packet handed to a [`Next`] lands.
#[derive(Debug, Clone, Copy)]
pub enum Route {
    /// A FIFO: the next stage's, an Offload's bypass FIFO, the DMA engine's or the
    /// recirculation FIFO.
    Fifo(FifoId),
    /// A unit of the Offload, through its Load Balancer.
    Unit(usize),
    /// The unit refuses the packet, which goes back out through the bypass path (PANIC's
    /// detour, see `panic::credits`).
    Refused,
}

impl<R: Receiver> Next<'_, R> {
    /// Where packet `item` of `bytes` would land if sent at `now`; `None` when it cannot be
    /// taken now (whoever would free room wakes the sender).
    #[inline]
    fn route(&mut self, now: Time, w: &mut World, item: PktId, bytes: u32) -> Option<Route> {
        match self {
            Next::Fifo(f) => w.room(*f, bytes).then_some(Route::Fifo(*f)),
            Next::Offload(o) => o.route(now, w, item, bytes),
            Next::Egress(e) => {
                let to = e.target(&w.pkts[item]);
                w.room(to, bytes).then_some(Route::Fifo(to))
            }
        }
    }

    /// Packet `item` is on its way over transfer `tr`, to `route`.
    #[inline]
    fn enter(
        &mut self,
        now: Time,
        w: &mut World,
        route: Route,
        item: PktId,
        bytes: u32,
        tr: Transfer,
    ) {
        match (self, route) {
            (Next::Offload(o), r) => o.enter(now, w, r, item, bytes, tr),
            (Next::Egress(e), Route::Fifo(to)) => e.enter(now, w, to, item, bytes, tr),
            (_, Route::Fifo(to)) => w.push(to, now, item, bytes, tr.head, tr.tail),
            (_, r) => unreachable!("{r:?} into a FIFO"),
        }
    }

    /// Whether the sender should wake for packet `item` (when its first beat is there and its
    /// link is free): it might be taken then. Otherwise whatever frees room wakes the sender.
    #[inline]
    fn may_take(&mut self, w: &mut World, item: PktId, bytes: u32) -> bool {
        match self {
            Next::Fifo(f) => w.room(*f, bytes),
            Next::Offload(o) => o.may_take(w, item, bytes),
            Next::Egress(e) => w.room(e.target(&w.pkts[item]), bytes),
        }
    }
}

/// The front packet of a sender's input, as its pick found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Front {
    pub fifo: FifoId,
    pub item: PktId,
    pub bytes: u32,
}

impl Front {
    /// FIFO `fifo`'s front packet, if its first beat is there by `t`.
    #[inline]
    pub fn ready(w: &World, fifo: FifoId, t: Time) -> Option<Front> {
        w.q.ready_front(fifo, t).map(|s| Front {
            fifo,
            item: s.item,
            bytes: s.bytes,
        })
    }
}

/// Send `front` (its first beat there by `now`) over `link` to `next`, if the link is free
/// and `next` can take it.
#[inline]
pub fn send_front<R: Receiver>(
    now: Time,
    w: &mut World,
    front: Front,
    link: &mut Link,
    next: &mut Next<R>,
) -> bool {
    debug_assert_eq!(Some(front), Front::ready(w, front.fifo, now));
    let Front { fifo, item, bytes } = front;
    if !link.is_free(now) {
        return false;
    }
    let Some(route) = next.route(now, w, item, bytes) else {
        return false;
    };
    let slot = w.pop(fifo, now).unwrap();
    let tr = link.send_beats(now, link.beats_for(bytes), slot.tail);
    next.enter(now, w, route, item, bytes, tr);
    true
}

/// Wake `port` (of the component being stepped) for its next [`send_front`] from one of
/// `inputs`, where `pick(w, t)` is the front packet it takes at time `t` (of those whose front
/// packet's first beat is there by `t`). What it picks changes only as front packets arrive,
/// so it is woken at the first of those times (once `link` is free) at which it would pick a
/// packet `next` might take. If it would pick one `next` cannot take, only `next` making room
/// (which wakes it) or a push into one of its inputs (which can change what it picks) can
/// change that: the inputs then wake it at their next push.
#[inline]
pub fn wake_send<R: Receiver, const N: usize>(
    w: &mut World,
    port: usize,
    link: &Link,
    inputs: [FifoId; N],
    pick: impl Fn(&World, Time) -> Option<Front>,
    next: &mut Next<R>,
) {
    let now = w.cal.now();
    let at = |f: FifoId| w.q.front(f).map(|s| link.free_from(s.head.max(now)));
    // Every input's front time (`Time::MAX`: none), earliest first.
    let mut times = [Time::MAX; N];
    for (t, &f) in times.iter_mut().zip(&inputs) {
        if let Some(at) = at(f) {
            *t = at;
        }
    }
    if N == 2 {
        if times[0] > times[1] {
            times.swap(0, 1);
        }
    } else {
        // The Ingress Traffic Controller with classes.
        times.sort_unstable();
    }
    if times[0] == Time::MAX {
        return; // a push wakes it
    }
    let (mut last, mut blocked) = (None, false);
    for t in times.into_iter().filter(|&t| t != Time::MAX) {
        let Some(f) = pick(w, t).filter(|f| Some(f.fifo) != last) else {
            continue;
        };
        last = Some(f.fifo);
        if next.may_take(w, f.item, f.bytes) {
            w.cal.wake_port(port, t);
            return;
        }
        blocked = true;
    }
    if blocked {
        inputs.iter().for_each(|&f| w.q.wait_for_push(f));
    }
}
