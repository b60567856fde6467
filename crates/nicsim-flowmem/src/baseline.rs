//! The copy-based baseline: each flow direction is first assembled into a contiguous buffer
//! (reading every segment from the arena and writing the buffer), then scanned there.
//! Counters say how many bytes were copied and read, for comparison with [`crate::FlowView`].

use memchr::memmem;

use crate::view::{FlowView, Histogram, StreamRegex};

/// One stream assembled into contiguous memory, with its runs between holes.
#[derive(Debug, Clone, Default)]
pub struct Contiguous {
    /// The stream; holes are zero-filled (and never searched across).
    pub bytes: Vec<u8>,
    /// Contiguous runs `[start, end)` between holes.
    pub runs: Vec<(u64, u64)>,
    /// Bytes copied into `bytes`.
    pub copied_bytes: u64,
    /// Bytes read: the segments while assembling, then everything the workloads scan.
    pub read_bytes: u64,
}

impl Contiguous {
    /// Assembles `view`'s stream (reads each segment once, writes it once).
    pub fn assemble(view: &FlowView<'_>) -> Self {
        let mut bytes = vec![0; view.len() as usize];
        let mut copied = 0;
        for chunk in view.chunks() {
            let at = chunk.offset as usize;
            bytes[at..at + chunk.bytes.len()].copy_from_slice(chunk.bytes);
            copied += chunk.bytes.len() as u64;
        }
        Contiguous {
            bytes,
            runs: view.runs(),
            copied_bytes: copied,
            read_bytes: copied,
        }
    }

    fn run(&self, (start, end): (u64, u64)) -> &[u8] {
        &self.bytes[start as usize..end as usize]
    }

    /// Occurrences of `byte` over the runs (the memory-bound linear scan).
    pub fn count_byte(&mut self, byte: u8) -> u64 {
        let mut total = 0;
        for &run in &self.runs {
            total += memchr::memchr_iter(byte, self.run(run)).count() as u64;
            self.read_bytes += run.1 - run.0;
        }
        total
    }

    /// Byte histogram over the runs.
    pub fn byte_histogram(&mut self) -> [u64; 256] {
        let mut tables = Histogram::new();
        for &run in &self.runs {
            tables.add(self.run(run));
            self.read_bytes += run.1 - run.0;
        }
        tables.total()
    }

    /// Non-overlapping occurrences of `needle` within each run.
    pub fn count_literal(&mut self, needle: &[u8]) -> u64 {
        if needle.is_empty() {
            return 0;
        }
        let finder = memmem::Finder::new(needle);
        let mut total = 0;
        for &run in &self.runs {
            total += finder.find_iter(self.run(run)).count() as u64;
            self.read_bytes += run.1 - run.0;
        }
        total
    }

    /// Regex matches within each run, as stream offsets.
    pub fn regex_matches(&mut self, regex: &StreamRegex) -> Vec<(u64, u64)> {
        let mut matches = Vec::new();
        for &run in &self.runs {
            let found = regex.find_iter(self.run(run));
            // One forward pass over the run, and a reverse pass over each match for its start
            // (as regex-automata's DFA regex does; the same accounting as FlowView's).
            self.read_bytes += run.1 - run.0;
            self.read_bytes += found.iter().map(|(s, e)| e - s).sum::<u64>();
            matches.extend(found.into_iter().map(|(s, e)| (s + run.0, e + run.0)));
        }
        matches
    }
}
