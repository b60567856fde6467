//! Fuzz target: arbitrary bytes as a capture. Both readers (streaming `CaptureReader` and
//! in-place `CaptureSlice`) must never panic, must agree record for record, error for error
//! and warning for warning (a file cut short inside a record), every error must be one line,
//! and the zero-copy reassembler must take whatever they accept with every packet accounted
//! for.

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use nicsim_flowmem::{Config, Reassembly};
use nicsim_packet::capture::{CaptureReader, CaptureSlice, Record};

fuzz_target!(|data: &[u8]| {
    let mut leniency = (None, None);
    let streaming: Vec<Result<Record, String>> = match CaptureReader::from_bytes(data.to_vec()) {
        Ok(mut reader) => {
            let records = reader
                .by_ref()
                .map(|r| r.map_err(|e| e.to_string()))
                .collect();
            leniency.0 = Some(reader.leniency());
            records
        }
        Err(e) => vec![Err(e.to_string())],
    };
    let in_place: Vec<Result<Record, String>> = match CaptureSlice::new(data) {
        Ok(mut reader) => {
            let records = reader
                .by_ref()
                .map(|r| {
                    r.map(|r| {
                        assert_eq!(&data[r.data_offset..r.data_offset + r.data.len()], r.data);
                        r.to_record()
                    })
                    .map_err(|e| e.to_string())
                })
                .collect();
            leniency.1 = Some(reader.leniency());
            records
        }
        Err(e) => vec![Err(e.to_string())],
    };
    assert_eq!(streaming, in_place);
    // The same warnings, and the same offset where the data ends inside a record.
    assert_eq!(leniency.0, leniency.1);
    for item in &streaming {
        match item {
            Ok(record) => assert!(record.data.len() <= record.orig_len as usize),
            Err(message) => assert!(!message.contains('\n'), "{message}"),
        }
    }
    let records = streaming.iter().filter(|r| r.is_ok()).count() as u64;
    match Reassembly::from_capture_bytes(Arc::new(data.to_vec()), Config::default()) {
        Ok(r) => {
            assert_eq!(r.counts.read, records);
            assert_eq!(r.counts.accounted(), r.counts.read);
            for f in 0..r.flows.len() {
                for d in 0..2 {
                    let view = r.view(f, d).expect("a view of every direction");
                    for (start, end) in view.runs() {
                        view.read(start, (end - start) as usize)
                            .expect("runs are readable");
                    }
                }
            }
        }
        Err(e) => assert!(streaming.last().is_some_and(|r| r.is_err()), "{e}"),
    }
});
