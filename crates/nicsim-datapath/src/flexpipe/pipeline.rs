//! FlexPipe's (and StaticPipe's) chain of Offloads (Fig. 1) as one component: the Ingress
//! Traffic Controller, the Offloads in their physical order, directly connected (a Traffic
//! Arbiter hands its packet straight to the next Offload's Traffic Splitter, §III), and the
//! Egress Traffic Controller.

use nicsim_kernel::{Component, Port, Time};

use super::egress::EgressTc;
use super::handshake::Next;
use super::ingress::IngressTc;
use super::load_balancer::LoadBalancer;
use super::offload::Offload;
use super::units::Ports;
use crate::world::{FifoId, World};

/// The chain as one component.
///
/// Ports, consumers first: for each Offload from the last to the first its Traffic Arbiter
/// (which hands over to the next Offload's Splitter, or to the Egress Traffic Controller) and
/// its units (events, round robin, events again); then the Ingress Traffic Controller.
pub struct Pipeline {
    ingress: IngressTc,
    /// In physical order.
    offloads: Vec<Offload<LoadBalancer>>,
    egress: EgressTc,
}

/// Ports per Offload in a [`Pipeline`]: the arbiter, the units.
const PER_OFFLOAD: usize = 2;

impl Pipeline {
    /// `offloads` (in physical order) between `ingress` and `egress`.
    pub fn new(
        ingress: IngressTc,
        mut offloads: Vec<Offload<LoadBalancer>>,
        egress: EgressTc,
    ) -> Pipeline {
        let n = offloads.len();
        for (i, o) in offloads.iter_mut().enumerate() {
            let base = (n - 1 - i) * PER_OFFLOAD;
            o.in_pipeline(Ports {
                arb: base,
                units: base + 1,
                // The previous Offload's arbiter, or the Ingress Traffic Controller.
                split: if i == 0 {
                    n * PER_OFFLOAD
                } else {
                    base + PER_OFFLOAD
                },
                late: None,
            });
        }
        Pipeline {
            ingress,
            offloads,
            egress,
        }
    }

    /// The Offloads, in physical order.
    pub fn offloads(&self) -> &[Offload<LoadBalancer>] {
        &self.offloads
    }
}

impl Component<World> for Pipeline {
    fn ports(&self) -> Vec<Port> {
        let n = self.offloads.len();
        let mut ports = Vec::with_capacity(n * PER_OFFLOAD + 1);
        for i in (0..n).rev() {
            let o = &self.offloads[i];
            let p = || Port::new(o.clock());
            let out: Vec<FifoId> = match self.offloads.get(i + 1) {
                Some(next) => next.bypass(),
                None => vec![self.egress.dma, self.egress.recirc],
            };
            let mut reads = o.bypass();
            reads.extend(o.units_out());
            ports.push(p().reads(&reads).writes(&out));
            ports.push(p().writes(&o.units_out()));
        }
        let ing = &self.ingress;
        let mut reads = vec![ing.new, ing.recirc];
        reads.extend(ing.classes.iter().flat_map(|(f, _)| f.iter().skip(1)));
        ports.push(
            Port::new(ing.link.clock)
                .reads(&reads)
                .writes(&self.offloads[0].bypass()),
        );
        ports
    }

    fn step(&mut self, port: usize, now: Time, w: &mut World) {
        let n = self.offloads.len();
        if port == n * PER_OFFLOAD {
            let next = &mut Next::Offload(&mut self.offloads[0]);
            return self.ingress.step(port, now, w, next);
        }
        let i = n - 1 - port / PER_OFFLOAD;
        if port.is_multiple_of(PER_OFFLOAD) {
            let (this, rest) = self.offloads.split_at_mut(i + 1);
            let mut next = match rest.first_mut() {
                Some(o) => Next::Offload(o),
                None => Next::Egress(&self.egress),
            };
            this[i].arbiter(now, w, &mut next);
        } else {
            self.offloads[i].units_step(now, w);
        }
    }
}
