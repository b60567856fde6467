//! SHA-3 authentication offload: the last 8 bytes of the L4 payload carry
//! `SHA3-256(key || rest of the L4 payload)[..8]`. Headers are not covered.
//!
//! `process` verifies and then strips the tag (zeroes it), so a generator frame whose
//! tag bytes start at zero comes out of `prepare` + `process` byte-for-byte unchanged;
//! that keeps the FCS valid for a CRC check placed after this offload in the chain.

use sha3::{Digest, Sha3_256};

use crate::{l4_payload, DropReason, FuncMeta, FunctionalOffload, OffloadKind, SEQ_LEN, TAG_LEN};

pub(crate) struct Sha3Tag {
    pub(crate) key: [u8; 16],
}

impl Sha3Tag {
    /// Split the frame's L4 payload into (covered, tag); `None` if it is too short.
    fn split(frame: &mut [u8]) -> Option<(&[u8], &mut [u8])> {
        let (_, range) = l4_payload(frame)?;
        if range.len() < SEQ_LEN + TAG_LEN {
            return None;
        }
        let payload = &mut frame[range];
        let (covered, tag) = payload.split_at_mut(payload.len() - TAG_LEN);
        Some((covered, tag))
    }

    fn tag(&self, covered: &[u8]) -> [u8; TAG_LEN] {
        let digest = Sha3_256::new()
            .chain_update(self.key)
            .chain_update(covered)
            .finalize();
        let mut tag = [0; TAG_LEN];
        tag.copy_from_slice(&digest[..TAG_LEN]);
        tag
    }
}

impl FunctionalOffload for Sha3Tag {
    fn kind(&self) -> OffloadKind {
        OffloadKind::Sha3
    }

    fn process(&self, frame: &mut Vec<u8>, _meta: &mut FuncMeta) -> Result<(), DropReason> {
        let (covered, tag) = Self::split(frame).ok_or(DropReason::Malformed)?;
        if *tag == self.tag(covered) {
            tag.fill(0);
            Ok(())
        } else {
            Err(DropReason::BadTag)
        }
    }

    fn prepare(&self, frame: &mut Vec<u8>) {
        if let Some((covered, tag)) = Self::split(frame) {
            tag.copy_from_slice(&self.tag(covered));
        }
    }
}
