//! Reassembly in slices of records (`Reassembly::from_capture_bytes_until`): an error from the
//! caller's check between slices (Ctrl-C, SIGTERM in the bindings) stops it at once; without
//! one, the result is the whole capture's, as `from_capture_bytes` gives it.

mod common;

use std::sync::Arc;

use common::*;
use nicsim_flowmem::{Config, Reassembly, SharedBytes, RECORDS_PER_SLICE};

/// One SYN per flow, `n` flows: `n` records.
fn flood(n: u32) -> Vec<u8> {
    let frames: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut c = Conn::v4();
            c.aport = 1024 + (i % 60_000) as u16;
            c.bport = 80 + (i / 60_000) as u16;
            c.frame(0, 1000, SYN, b"")
        })
        .collect();
    pcap(&frames)
}

#[test]
fn an_error_between_slices_stops_the_reassembly() {
    let n = 3 * RECORDS_PER_SLICE as u32 + 5;
    let capture: SharedBytes = Arc::new(flood(n));
    let mut calls = 0;
    let r = Reassembly::from_capture_bytes_until(Arc::clone(&capture), Config::default(), || {
        calls += 1;
        if calls == 2 {
            Err("interrupted")
        } else {
            Ok(())
        }
    });
    assert_eq!(r.err(), Some("interrupted"));
    assert_eq!(calls, 2);

    let mut calls = 0;
    let whole = Reassembly::from_capture_bytes_until(capture.clone(), Config::default(), || {
        calls += 1;
        Ok::<(), ()>(())
    })
    .unwrap()
    .unwrap();
    assert_eq!(calls, 3); // between the four slices
    let once = Reassembly::from_capture_bytes(capture, Config::default()).unwrap();
    assert_eq!(whole.flows.len(), once.flows.len());
    assert_eq!(whole.counts.read, n as u64);
}
