//! The egress capture (`nicsim run --egress-pcap`): every delivered frame written to a pcap
//! file as it reaches the sink, timestamped in simulated nanoseconds, and without its 4-byte
//! FCS, as captures usually are. A write error stops the capture and is reported when it is
//! finished ([`EgressCapture::finish`]), so that a full disk fails the command rather than the
//! simulation.

use std::path::Path;

use nicsim_kernel::time::Time;
use nicsim_packet::capture::{CaptureFormat, CaptureWriter};

use crate::packet::Pkt;

/// The largest frame a record holds (the pcap header's snap length).
const SNAPLEN_BYTES: u32 = 65535;
/// The Ethernet frame check sequence the model's frames carry at their end.
const FCS_BYTES: usize = 4;

/// An open egress capture.
pub struct EgressCapture {
    writer: CaptureWriter,
    ns_per_tick: f64,
    error: Option<String>,
}

impl EgressCapture {
    /// Create `path` (pcap) for a model whose ticks are `1 / ticks_per_us` µs. The error
    /// names the file.
    pub fn create(path: &Path, ticks_per_us: u64) -> Result<EgressCapture, String> {
        let writer = CaptureWriter::create(path, CaptureFormat::Pcap, SNAPLEN_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(EgressCapture {
            writer,
            ns_per_tick: 1e3 / ticks_per_us as f64,
            error: None,
        })
    }

    /// Write `pkt`, delivered at tick `t` (a packet without bytes is not written; after a
    /// write error, nothing is).
    pub fn write(&mut self, t: Time, pkt: &Pkt) {
        let (Some(f), None) = (pkt.frame.as_ref(), &self.error) else {
            return;
        };
        let frame = &f.bytes[..f.bytes.len().saturating_sub(FCS_BYTES)];
        if let Err(e) = self
            .writer
            .write((t.ticks() as f64 * self.ns_per_tick) as u64, frame)
        {
            self.error = Some(e.to_string());
        }
    }

    /// Flush and close the file; the first write error, if there was one.
    pub fn finish(self) -> Result<(), String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.writer.finish().map_err(|e| e.to_string())
    }
}
