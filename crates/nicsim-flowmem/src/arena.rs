//! The arena: append-only payload memory standing for NIC DRAM.
//!
//! The packet handler writes each TCP payload once, at the next free address; nothing is ever
//! moved or rewritten. Flow translation tables point into it by address. The arena is bounded
//! by a byte limit so a capture cannot exhaust memory.

/// Append-only payload bytes with a capacity limit.
#[derive(Debug, Default, Clone)]
pub struct Arena {
    bytes: Vec<u8>,
    limit_bytes: u64,
}

impl Arena {
    /// An empty arena that accepts at most `limit_bytes` bytes in total.
    pub fn new(limit_bytes: u64) -> Self {
        Arena {
            bytes: Vec::new(),
            limit_bytes,
        }
    }

    /// Appends `payload` and returns its address, or `None` when it would exceed the limit.
    pub fn append(&mut self, payload: &[u8]) -> Option<u64> {
        let addr = self.bytes.len() as u64;
        if addr + payload.len() as u64 > self.limit_bytes {
            return None;
        }
        self.bytes.extend_from_slice(payload);
        Some(addr)
    }

    /// Whether `len_bytes` more bytes fit under the limit.
    pub fn fits(&self, len_bytes: usize) -> bool {
        self.bytes.len() as u64 + len_bytes as u64 <= self.limit_bytes
    }

    /// The `len_bytes` bytes at `addr` (empty when out of range; addresses come from `append`).
    pub fn get(&self, addr: u64, len_bytes: usize) -> &[u8] {
        let start = usize::try_from(addr).unwrap_or(usize::MAX);
        self.bytes
            .get(start..start.saturating_add(len_bytes))
            .unwrap_or_default()
    }

    /// Bytes written so far.
    pub fn used_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The configured limit.
    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }
}
