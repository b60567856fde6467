//! nicsim-offloads: the six functional SmartNIC offloads of the FlexPipe paper.
//!
//! Every offload works on a real Ethernet frame that still carries its 4-byte FCS.
//! `process` is the NIC side (check or transform, or drop with a [`DropReason`]);
//! `prepare` is the traffic-generator side and is its exact inverse, so that a frame
//! prepared by a chain's offloads in reverse order passes the chain and comes out
//! byte-for-byte as the generator built it, provided the generator left the 8 tag
//! bytes zero (the SHA-3 offload strips its tag). The L4 payload is everything from
//! the L4 header's end up to the FCS (Ethernet padding included). The timing model
//! lives elsewhere.
//!
//! Payload layout shared by the offloads that use it (`len` = L4 payload length):
//! `[0..4)` cleartext sequence number (AES IV), `[4..len-8)` the covered region
//! (AES-encrypted, may hold a JPEG), `[len-8..len)` the SHA-3 tag.

#![warn(missing_docs)]

mod aes_ctr;
mod crc;
mod firewall;
mod jpeg;
mod rss;
mod sha3_tag;

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use nicsim_packet::{parse_five_tuple, FiveTuple};

pub use firewall::{Action, Prefix, Rule, RuleError, RuleSet};
pub use jpeg::tiny_jpeg;
pub use rss::{toeplitz_hash, MICROSOFT_RSS_KEY};

/// Bytes of the L4 payload reserved at the end for the SHA-3 tag.
pub const TAG_LEN: usize = 8;
/// Bytes of the L4 payload reserved at the start for the cleartext sequence number.
pub const SEQ_LEN: usize = 4;

/// The six offloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OffloadKind {
    /// Ethernet FCS: checks the trailing CRC-32 (`prepare` writes it).
    Crc,
    /// 5-tuple firewall: drops the frames that [`OffloadParams::firewall`] denies.
    Firewall,
    /// SHA-3 authentication: checks and zeroes the 8-byte tag at the end of the L4 payload
    /// (`prepare` writes it).
    Sha3,
    /// AES-128-CTR over the covered region of the L4 payload (its own inverse).
    Aes,
    /// JPEG: decodes the covered region when it starts with a JPEG SOI marker; never changes the
    /// frame.
    Jpeg,
    /// Receive Side Scaling: the Toeplitz hash of the flow and its receive queue, into
    /// [`FuncMeta`]; never drops.
    Rss,
}

impl OffloadKind {
    /// All six offloads, in declaration order.
    pub const ALL: [OffloadKind; 6] = [
        OffloadKind::Crc,
        OffloadKind::Firewall,
        OffloadKind::Sha3,
        OffloadKind::Aes,
        OffloadKind::Jpeg,
        OffloadKind::Rss,
    ];

    /// The offload's name in configs and reports (`crc`, `firewall`, `sha3`, `aes`, `jpeg`, `rss`),
    /// which [`FromStr`] parses back.
    pub fn as_str(self) -> &'static str {
        match self {
            OffloadKind::Crc => "crc",
            OffloadKind::Firewall => "firewall",
            OffloadKind::Sha3 => "sha3",
            OffloadKind::Aes => "aes",
            OffloadKind::Jpeg => "jpeg",
            OffloadKind::Rss => "rss",
        }
    }
}

impl fmt::Display for OffloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OffloadKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        OffloadKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown offload '{s}' (expected one of crc, firewall, sha3, aes, jpeg, rss)"
                )
            })
    }
}

/// Why an offload dropped a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The trailing FCS is not the CRC-32 of the rest of the frame.
    BadFcs,
    /// The firewall's rules deny the frame's 5-tuple.
    FirewallDeny,
    /// The SHA-3 tag does not match the rest of the L4 payload.
    BadTag,
    /// The covered region starts with a JPEG SOI marker but does not decode.
    BadJpeg,
    /// The frame lacks what the offload works on: shorter than its FCS, not IPv4/IPv6 with TCP/UDP,
    /// or an L4 payload shorter than the sequence number and tag.
    Malformed,
}

impl DropReason {
    /// The reason's name in reports: `bad_fcs`, `firewall_deny`, `bad_tag`, `bad_jpeg` or
    /// `malformed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            DropReason::BadFcs => "bad_fcs",
            DropReason::FirewallDeny => "firewall_deny",
            DropReason::BadTag => "bad_tag",
            DropReason::BadJpeg => "bad_jpeg",
            DropReason::Malformed => "malformed",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Per-packet results that offloads hand to later pipeline stages.
#[derive(Default, Clone, Debug)]
pub struct FuncMeta {
    /// The frame's Toeplitz hash, set by the RSS offload; `None` for a non-IP frame or before RSS
    /// has run.
    pub rss_hash: Option<u32>,
    /// The receive queue the RSS indirection table maps the hash to (0 for a non-IP frame); `None`
    /// before RSS has run.
    pub rss_queue: Option<u16>,
}

/// One functional offload.
pub trait FunctionalOffload: Send + Sync {
    /// Which of the six offloads this is.
    fn kind(&self) -> OffloadKind;
    /// NIC side: check/transform the frame in place (frame includes FCS). Err = drop with that reason.
    fn process(&self, frame: &mut Vec<u8>, meta: &mut FuncMeta) -> Result<(), DropReason>;
    /// Generator side: the exact inverse of `process` (see the crate docs). Never changes
    /// the frame length; leaves frames it cannot handle untouched.
    fn prepare(&self, frame: &mut Vec<u8>);
}

/// Configuration shared by [`build`].
#[derive(Clone, Debug)]
pub struct OffloadParams {
    /// `None` = permit everything (non-IP/TCP/UDP frames are still `Malformed`).
    pub firewall: Option<RuleSet>,
    /// The AES-128 key of the AES offload.
    pub aes_key: [u8; 16],
    /// The key the SHA-3 offload hashes ahead of the payload to make its tag.
    pub sha3_key: [u8; 16],
    /// The 40-byte Toeplitz key of the RSS offload (by default [`MICROSOFT_RSS_KEY`]).
    pub rss_key: [u8; 40],
    /// Queues the 128-entry RSS indirection table maps to, round-robin (0 is taken as 1).
    pub rss_queues: u16,
}

impl Default for OffloadParams {
    fn default() -> Self {
        OffloadParams {
            firewall: None,
            aes_key: *b"nicsim-aes128key",
            sha3_key: *b"nicsim-sha3-key!",
            rss_key: MICROSOFT_RSS_KEY,
            rss_queues: 4,
        }
    }
}

/// Construct the offload of `kind` configured by `params`.
pub fn build(kind: OffloadKind, params: &OffloadParams) -> Box<dyn FunctionalOffload> {
    match kind {
        OffloadKind::Crc => Box::new(crc::Crc),
        OffloadKind::Firewall => Box::new(firewall::Firewall(
            params.firewall.clone().unwrap_or_default(),
        )),
        OffloadKind::Sha3 => Box::new(sha3_tag::Sha3Tag {
            key: params.sha3_key,
        }),
        OffloadKind::Aes => Box::new(aes_ctr::AesCtr::new(&params.aes_key)),
        OffloadKind::Jpeg => Box::new(jpeg::Jpeg),
        OffloadKind::Rss => Box::new(rss::Rss::new(params.rss_key, params.rss_queues)),
    }
}

/// The frame's 5-tuple and the byte range of its L4 payload (up to the FCS), or `None`
/// when the frame is too short or not IPv4/IPv6 + TCP/UDP.
fn l4_payload(frame: &[u8]) -> Option<(FiveTuple, Range<usize>)> {
    let end = frame.len().checked_sub(4)?;
    let (tuple, start) = parse_five_tuple(&frame[..end])?;
    (start <= end).then_some((tuple, start..end))
}
