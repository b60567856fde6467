//! Ethernet FCS offload: the last 4 bytes are the little-endian CRC-32 of the rest.

use crate::{DropReason, FuncMeta, FunctionalOffload, OffloadKind};

pub(crate) struct Crc;

fn fcs(body: &[u8]) -> [u8; 4] {
    crc32fast::hash(body).to_le_bytes()
}

impl FunctionalOffload for Crc {
    fn kind(&self) -> OffloadKind {
        OffloadKind::Crc
    }

    fn process(&self, frame: &mut Vec<u8>, _meta: &mut FuncMeta) -> Result<(), DropReason> {
        let end = frame.len().checked_sub(4).ok_or(DropReason::Malformed)?;
        if frame[end..] == fcs(&frame[..end]) {
            Ok(())
        } else {
            Err(DropReason::BadFcs)
        }
    }

    fn prepare(&self, frame: &mut Vec<u8>) {
        if let Some(end) = frame.len().checked_sub(4) {
            let sum = fcs(&frame[..end]);
            frame[end..].copy_from_slice(&sum);
        }
    }
}
