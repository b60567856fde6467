//! AES-128-CTR offload over the covered region `[4..len-8)` of the L4 payload.
//!
//! IV = the payload's cleartext 4-byte sequence number || the first 12 bytes of
//! SHA3-256(src ip || dst ip || sport BE || dport BE || proto), counted as a 128-bit
//! big-endian counter. Binding the IV to the flow keeps keystreams of different flows
//! with equal sequence numbers apart. CTR is its own inverse, so `prepare` = `process`.

use aes::cipher::{InnerIvInit, KeyInit, StreamCipher};
use aes::Aes128;
use ctr::cipher::StreamCipherCoreWrapper;
use ctr::{flavors, CtrCore};
use nicsim_packet::FiveTuple;
use sha3::{Digest, Sha3_256};
use std::net::IpAddr;

use crate::{l4_payload, DropReason, FuncMeta, FunctionalOffload, OffloadKind, SEQ_LEN, TAG_LEN};

pub(crate) struct AesCtr {
    cipher: Aes128,
}

impl AesCtr {
    pub(crate) fn new(key: &[u8; 16]) -> Self {
        AesCtr {
            cipher: Aes128::new(key.into()),
        }
    }

    fn apply(&self, frame: &mut [u8]) -> Result<(), DropReason> {
        let (tuple, range) = l4_payload(frame).ok_or(DropReason::Malformed)?;
        let payload = &mut frame[range];
        if payload.len() < SEQ_LEN + TAG_LEN {
            return Err(DropReason::Malformed);
        }
        let mut iv = [0u8; 16];
        iv[..SEQ_LEN].copy_from_slice(&payload[..SEQ_LEN]);
        iv[SEQ_LEN..].copy_from_slice(&flow_nonce(&tuple)[..16 - SEQ_LEN]);
        let core =
            CtrCore::<Aes128, flavors::Ctr128BE>::inner_iv_init(self.cipher.clone(), &iv.into());
        let end = payload.len() - TAG_LEN;
        StreamCipherCoreWrapper::from_core(core).apply_keystream(&mut payload[SEQ_LEN..end]);
        Ok(())
    }
}

fn flow_nonce(t: &FiveTuple) -> [u8; 32] {
    let mut h = Sha3_256::new();
    for ip in [t.src, t.dst] {
        match ip {
            IpAddr::V4(a) => h.update(a.octets()),
            IpAddr::V6(a) => h.update(a.octets()),
        }
    }
    h.update(t.sport.to_be_bytes());
    h.update(t.dport.to_be_bytes());
    h.update([t.proto]);
    h.finalize().into()
}

impl FunctionalOffload for AesCtr {
    fn kind(&self) -> OffloadKind {
        OffloadKind::Aes
    }

    fn process(&self, frame: &mut Vec<u8>, _meta: &mut FuncMeta) -> Result<(), DropReason> {
        self.apply(frame)
    }

    fn prepare(&self, frame: &mut Vec<u8>) {
        // A frame `process` would reject as malformed is left untouched.
        let _ = self.apply(frame);
    }
}
