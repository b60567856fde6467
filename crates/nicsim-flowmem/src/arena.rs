//! The arena: payload memory standing for NIC DRAM, where payloads stay where they were written.
//!
//! Two backings. An **appended** arena receives each TCP payload once, at the next free address
//! (streaming from a file: the packet handler writes the payload to DRAM). A **capture-backed**
//! arena is the capture buffer itself (the whole capture is already in memory, as DRAM holding
//! the received frames): a payload's address is its byte offset in the capture, and nothing is
//! copied. Either way nothing is ever moved or rewritten; flow translation tables point into it
//! by address. Stored payload bytes are bounded by a limit so a capture cannot exhaust memory.
//!
//! A payload that does not lie in one piece in the capture (a TCP segment of an IP datagram
//! put together from fragments) is appended to a capture-backed arena too: it goes to a side
//! buffer whose addresses follow the capture's (from the capture's length plus one: the gap keeps
//! a table entry from running from the capture into the side buffer).

use std::fmt;
use std::sync::Arc;

/// A capture held in memory and shared with its owner (a `Vec`, or a buffer of the caller's,
/// such as a Python `bytes` object).
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

#[derive(Clone)]
enum Backing {
    Appended(Vec<u8>),
    Capture(SharedBytes),
}

/// Payload bytes with a capacity limit: appended, or in place in a capture held in memory.
#[derive(Clone)]
pub struct Arena {
    backing: Backing,
    /// Payloads appended to a capture-backed arena, at addresses from the capture's length on.
    side: Vec<u8>,
    limit_bytes: u64,
    used_bytes: u64,
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new(0)
    }
}

impl fmt::Debug for Arena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena")
            .field("capture_backed", &self.is_capture_backed())
            .field("memory_bytes", &self.memory_bytes())
            .field("used_bytes", &self.used_bytes)
            .field("limit_bytes", &self.limit_bytes)
            .finish()
    }
}

impl Arena {
    /// An empty appended arena that accepts at most `limit_bytes` bytes in total.
    pub fn new(limit_bytes: u64) -> Self {
        Arena {
            backing: Backing::Appended(Vec::new()),
            side: Vec::new(),
            limit_bytes,
            used_bytes: 0,
        }
    }

    /// An arena that is the capture buffer `capture`: payloads are referenced in place
    /// ([`Arena::reference`]), at most `limit_bytes` of them in total.
    pub fn over_capture(capture: SharedBytes, limit_bytes: u64) -> Self {
        Arena {
            backing: Backing::Capture(capture),
            side: Vec::new(),
            limit_bytes,
            used_bytes: 0,
        }
    }

    /// Whether the arena is a capture buffer (payloads in place) rather than appended.
    pub fn is_capture_backed(&self) -> bool {
        matches!(self.backing, Backing::Capture(_))
    }

    /// Appends `payload` and returns its address, or `None` when it would exceed the limit.
    /// In a capture-backed arena it goes to the side buffer (after the capture's addresses).
    pub fn append(&mut self, payload: &[u8]) -> Option<u64> {
        if !self.fits(payload.len()) {
            return None;
        }
        let addr = self.next_addr();
        match &mut self.backing {
            Backing::Appended(bytes) => bytes.extend_from_slice(payload),
            Backing::Capture(_) => self.side.extend_from_slice(payload),
        }
        self.used_bytes += payload.len() as u64;
        Some(addr)
    }

    /// Stores the `len_bytes` payload bytes already at capture offset `addr` (nothing is copied)
    /// and returns `addr`; `None` when over the limit, outside the capture, or the arena is
    /// appended.
    pub fn reference(&mut self, addr: u64, len_bytes: usize) -> Option<u64> {
        let Backing::Capture(capture) = &self.backing else {
            return None;
        };
        let capture_len = (**capture).as_ref().len() as u64;
        if addr.checked_add(len_bytes as u64)? > capture_len || !self.fits(len_bytes) {
            return None;
        }
        self.used_bytes += len_bytes as u64;
        Some(addr)
    }

    /// Whether `len_bytes` more bytes fit under the limit.
    pub fn fits(&self, len_bytes: usize) -> bool {
        self.used_bytes + len_bytes as u64 <= self.limit_bytes
    }

    /// The `len_bytes` bytes at `addr` (empty when out of range; addresses come from `append`
    /// or `reference`).
    #[inline]
    pub fn get(&self, addr: u64, len_bytes: usize) -> &[u8] {
        let (bytes, addr): (&[u8], u64) = match &self.backing {
            Backing::Appended(bytes) => (bytes, addr),
            Backing::Capture(capture) => {
                let capture: &[u8] = (**capture).as_ref();
                match addr.checked_sub(capture.len() as u64 + 1) {
                    Some(side) => (&self.side, side),
                    None => (capture, addr),
                }
            }
        };
        let start = usize::try_from(addr).unwrap_or(usize::MAX);
        bytes
            .get(start..start.saturating_add(len_bytes))
            .unwrap_or_default()
    }

    /// Payload bytes stored so far (appended, or referenced in the capture).
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    /// Bytes of memory the arena holds: the appended bytes, or the whole capture buffer and
    /// the side buffer.
    pub fn memory_bytes(&self) -> u64 {
        match &self.backing {
            Backing::Appended(bytes) => bytes.len() as u64,
            Backing::Capture(capture) => (**capture).as_ref().len() as u64 + self.side.len() as u64,
        }
    }

    /// The address [`Arena::append`] gives the next payload.
    pub fn next_addr(&self) -> u64 {
        match &self.backing {
            Backing::Appended(bytes) => bytes.len() as u64,
            Backing::Capture(capture) => {
                (**capture).as_ref().len() as u64 + 1 + self.side.len() as u64
            }
        }
    }

    /// Whether `addr` lies in the capture buffer of a capture-backed arena (not in its side
    /// buffer, nor in an appended arena).
    pub fn in_capture(&self, addr: u64) -> bool {
        match &self.backing {
            Backing::Appended(_) => false,
            Backing::Capture(capture) => addr < (**capture).as_ref().len() as u64,
        }
    }

    /// The configured limit.
    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }
}
