//! `FlowView`: one flow direction read in place through its translation table.
//!
//! Nothing here copies stream bytes except [`FlowView::read`], which copies exactly what is
//! asked for. Chunks are slices into the arena; scans and the regex search walk them in order
//! and carry their state (a histogram, a literal's partial match, a DFA state) across chunk
//! boundaries. Holes split a stream into contiguous runs: a match never spans a hole, as if
//! each run were its own haystack. Every byte a scan or search touches is counted in
//! [`FlowView::read_bytes`].

use std::cell::Cell;

use memchr::memmem;
use nicsim_packet::capture::prefetch;
use regex_automata::dfa::{dense, regex::Regex, Automaton};
use regex_automata::util::{start, syntax};
use regex_automata::{nfa::thompson, Anchored, Input};

use crate::arena::Arena;
use crate::reassembly::{Direction, Hole, Segment};
use crate::FlowError;

/// A contiguous piece of a stream, in place in the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// Stream offset of `bytes[0]`.
    pub offset: u64,
    /// The bytes.
    pub bytes: &'a [u8],
}

/// A zero-copy view of one reassembled flow direction.
#[derive(Debug)]
pub struct FlowView<'a> {
    arena: &'a Arena,
    segments: &'a [Segment],
    holes: &'a [Hole],
    len_bytes: u64,
    read_bytes: Cell<u64>,
}

impl<'a> FlowView<'a> {
    /// A view of `direction`, whose segments point into `arena`.
    pub fn new(arena: &'a Arena, direction: &'a Direction) -> Self {
        FlowView {
            arena,
            segments: &direction.segments,
            holes: &direction.holes,
            len_bytes: direction.len_bytes,
            read_bytes: Cell::new(0),
        }
    }

    /// Stream length in bytes, holes included.
    pub fn len(&self) -> u64 {
        self.len_bytes
    }

    /// Whether the stream is empty.
    pub fn is_empty(&self) -> bool {
        self.len_bytes == 0
    }

    /// Missing ranges.
    pub fn holes(&self) -> &'a [Hole] {
        self.holes
    }

    /// The translation table.
    pub fn segments(&self) -> &'a [Segment] {
        self.segments
    }

    /// Bytes scans, searches and reads have touched through this view so far.
    pub fn read_bytes(&self) -> u64 {
        self.read_bytes.get()
    }

    fn count(&self, n: usize) {
        self.read_bytes.set(self.read_bytes.get() + n as u64);
    }

    fn chunk(&self, segment: &Segment) -> Chunk<'a> {
        Chunk {
            offset: segment.offset,
            bytes: self.arena.get(segment.addr, segment.len_bytes as usize),
        }
    }

    /// All chunks in stream order; a gap between two chunks is a hole. Copies nothing.
    pub fn chunks(&self) -> impl Iterator<Item = Chunk<'a>> + '_ {
        self.segments.iter().map(|s| self.chunk(s))
    }

    /// Chunks covering `[from, to)`, cut to that range, in stream order.
    pub fn chunks_in(&self, from: u64, to: u64) -> impl Iterator<Item = Chunk<'a>> + '_ {
        let first = self
            .segments
            .partition_point(|s| s.offset + s.len_bytes <= from);
        self.segments[first..]
            .iter()
            .take_while(move |s| s.offset < to)
            .map(move |s| cut(self.chunk(s), from, to))
    }

    /// Chunks covering `[from, to)`, cut to that range, last chunk first.
    fn chunks_in_rev(&self, from: u64, to: u64) -> impl Iterator<Item = Chunk<'a>> + '_ {
        let last = self.segments.partition_point(|s| s.offset < to);
        self.segments[..last]
            .iter()
            .rev()
            .take_while(move |s| s.offset + s.len_bytes > from)
            .map(move |s| cut(self.chunk(s), from, to))
    }

    /// The byte at `offset`, when the capture holds it (no read is counted: a search's
    /// one-byte look-behind context).
    fn byte_at(&self, offset: u64) -> Option<u8> {
        self.chunks_in(offset, offset + 1)
            .next()
            .and_then(|c| c.bytes.first().copied())
    }

    /// Copies `buf.len()` bytes from `offset` into `buf`.
    pub fn read_into(&self, offset: u64, buf: &mut [u8]) -> Result<(), FlowError> {
        let len_bytes = buf.len() as u64;
        let end = offset
            .checked_add(len_bytes)
            .filter(|&end| end <= self.len_bytes)
            .ok_or(FlowError::OutOfRange {
                offset,
                len_bytes,
                stream_len_bytes: self.len_bytes,
            })?;
        if let Some(hole) = self
            .holes
            .iter()
            .find(|h| h.offset < end && h.offset + h.len_bytes > offset)
        {
            return Err(FlowError::Hole {
                offset,
                len_bytes,
                hole_offset: hole.offset,
                hole_len_bytes: hole.len_bytes,
            });
        }
        for chunk in self.chunks_in(offset, end) {
            let at = (chunk.offset - offset) as usize;
            buf[at..at + chunk.bytes.len()].copy_from_slice(chunk.bytes);
        }
        self.count(buf.len());
        Ok(())
    }

    /// Copies the `len_bytes` bytes from `offset` (only those).
    pub fn read(&self, offset: u64, len_bytes: usize) -> Result<Vec<u8>, FlowError> {
        // The range is checked before the buffer is allocated: `len_bytes` is the caller's.
        if offset
            .checked_add(len_bytes as u64)
            .is_none_or(|end| end > self.len_bytes)
        {
            return Err(FlowError::OutOfRange {
                offset,
                len_bytes: len_bytes as u64,
                stream_len_bytes: self.len_bytes,
            });
        }
        let mut buf = vec![0; len_bytes];
        self.read_into(offset, &mut buf)?;
        Ok(buf)
    }

    /// Contiguous runs `[start, end)` between holes.
    pub fn runs(&self) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for s in self.segments {
            match runs.last_mut() {
                Some(run) if run.1 == s.offset => run.1 += s.len_bytes,
                _ => runs.push((s.offset, s.offset + s.len_bytes)),
            }
        }
        runs
    }

    /// Reads every chunk once, in stream order, handing each to `visit` (the linear scans).
    fn scan(&self, mut visit: impl FnMut(&[u8])) {
        let mut chunks = self.chunks().peekable();
        while let Some(chunk) = chunks.next() {
            // The next chunk is elsewhere in the arena: start loading its first lines now.
            if let Some(next) = chunks.peek() {
                for line in next.bytes.chunks(64).take(4) {
                    prefetch(line);
                }
            }
            visit(chunk.bytes);
            self.count(chunk.bytes.len());
        }
    }

    /// Occurrences of `byte` in the whole stream (e.g. lines, for `b'\n'`): the memory-bound
    /// linear scan of the talk, SIMD-counted by memchr at close to memory bandwidth.
    pub fn count_byte(&self, byte: u8) -> u64 {
        let mut total = 0;
        self.scan(|bytes| total += memchr::memchr_iter(byte, bytes).count() as u64);
        total
    }

    /// Byte histogram of the whole stream (a linear scan with a table update per byte, so
    /// bound by the core rather than by memory on a host).
    pub fn byte_histogram(&self) -> [u64; 256] {
        let mut histogram = Histogram::new();
        self.scan(|bytes| histogram.add(bytes));
        histogram.total()
    }

    /// Non-overlapping occurrences of `needle`, leftmost first, within each run (a literal
    /// search with memchr; occurrences may straddle any number of chunks).
    pub fn count_literal(&self, needle: &[u8]) -> u64 {
        if needle.is_empty() {
            return 0;
        }
        let finder = memmem::Finder::new(needle);
        let keep = needle.len() - 1;
        let mut total = 0;
        for (run_start, run_end) in self.runs() {
            // `tail` holds the last `keep` bytes before the current chunk (the only copy: a
            // needle-sized scratch); `next_ok` is where the next occurrence may start.
            let mut tail: Vec<u8> = Vec::with_capacity(2 * keep);
            let mut next_ok = run_start;
            for chunk in self.chunks_in(run_start, run_end) {
                let tail_start = chunk.offset - tail.len() as u64;
                // Occurrences starting in the tail and ending in this chunk.
                let head = &chunk.bytes[..keep.min(chunk.bytes.len())];
                let mut window = tail.clone();
                window.extend_from_slice(head);
                let mut from = next_ok.saturating_sub(tail_start) as usize;
                while from < tail.len() {
                    match finder.find(&window[from..]) {
                        Some(i) if from + i < tail.len() => {
                            total += 1;
                            next_ok = tail_start + (from + i + needle.len()) as u64;
                            from = from + i + needle.len();
                        }
                        _ => break,
                    }
                }
                // Occurrences inside this chunk.
                let skip = next_ok.saturating_sub(chunk.offset) as usize;
                if skip < chunk.bytes.len() {
                    let mut last_end = None;
                    let mut at = skip;
                    while let Some(i) = finder.find(&chunk.bytes[at..]) {
                        total += 1;
                        at += i + needle.len();
                        last_end = Some(at);
                    }
                    if let Some(end) = last_end {
                        next_ok = chunk.offset + end as u64;
                    }
                }
                self.count(chunk.bytes.len());
                tail.extend_from_slice(chunk.bytes);
                let excess = tail.len().saturating_sub(keep);
                tail.drain(..excess);
            }
        }
        total
    }

    /// All matches of `regex` as `(start, end)` stream offsets: leftmost-first, non-overlapping,
    /// exactly as `regex-automata` reports them on each contiguous run. The forward DFA runs
    /// over the chunks with its state carried across boundaries; a reverse DFA runs back over
    /// the chunks from each match end to find its start.
    pub fn regex_matches(&self, regex: &StreamRegex) -> Result<Vec<(u64, u64)>, FlowError> {
        let mut matches = Vec::new();
        for (run_start, run_end) in self.runs() {
            let mut at = run_start;
            let mut last_end = None;
            while let Some(mut m) = self.regex_find(regex, at, run_start, run_end)? {
                if m.0 == m.1 && Some(m.1) == last_end {
                    // An empty match right after the previous match: search one byte on.
                    at += 1;
                    if at > run_end {
                        break;
                    }
                    match self.regex_find(regex, at, run_start, run_end)? {
                        Some(next) => m = next,
                        None => break,
                    }
                }
                at = m.1;
                last_end = Some(m.1);
                matches.push(m);
            }
        }
        Ok(matches)
    }

    /// The leftmost-first match starting at or after `at` within the run `[run_start, run_end)`.
    fn regex_find(
        &self,
        regex: &StreamRegex,
        at: u64,
        run_start: u64,
        run_end: u64,
    ) -> Result<Option<(u64, u64)>, FlowError> {
        let fwd = regex.regex.forward();
        let look_behind = (at > run_start).then(|| self.byte_at(at - 1)).flatten();
        let config = start::Config::new()
            .anchored(Anchored::No)
            .look_behind(look_behind);
        let mut sid = fwd.start_state(&config).map_err(|e| search_error(at, e))?;
        let mut end = None;
        'chunks: for chunk in self.chunks_in(at, run_end) {
            let bytes = chunk.bytes;
            let mut i = 0;
            while i < bytes.len() {
                sid = fwd.next_state(sid, bytes[i]);
                if fwd.is_special_state(sid) {
                    let pos = chunk.offset + i as u64;
                    if fwd.is_match_state(sid) {
                        end = Some(pos);
                    } else if fwd.is_dead_state(sid) {
                        self.count(i + 1);
                        break 'chunks;
                    } else if fwd.is_quit_state(sid) {
                        return Err(search_error(pos, "quit byte"));
                    }
                    if fwd.is_accel_state(sid) {
                        // The state loops on every byte but a few (as in regex-automata's own
                        // search): skip to the next of those, memchr-fast. A chunk boundary
                        // only ends the skip; the state carries over.
                        i += 1 + accel_skip(fwd.accelerator(sid), &bytes[i + 1..]);
                        continue;
                    }
                }
                i += 1;
            }
            self.count(bytes.len());
        }
        if !fwd.is_dead_state(sid) {
            sid = fwd.next_eoi_state(sid);
            if fwd.is_match_state(sid) {
                end = Some(run_end);
            }
        }
        let Some(end) = end else { return Ok(None) };
        if end == at || fwd.is_always_start_anchored() {
            return Ok(Some((at, end)));
        }
        // The start: the longest anchored reverse match from `end` back to no earlier than `at`.
        let rev = regex.regex.reverse();
        let look_ahead = (end < run_end).then(|| self.byte_at(end)).flatten();
        let config = start::Config::new()
            .anchored(Anchored::Yes)
            .look_behind(look_ahead);
        let mut sid = rev.start_state(&config).map_err(|e| search_error(end, e))?;
        let mut start = None;
        'rchunks: for chunk in self.chunks_in_rev(at, end) {
            for (i, &b) in chunk.bytes.iter().enumerate().rev() {
                sid = rev.next_state(sid, b);
                if rev.is_special_state(sid) {
                    let pos = chunk.offset + i as u64;
                    if rev.is_match_state(sid) {
                        start = Some(pos + 1);
                    } else if rev.is_dead_state(sid) {
                        self.count(chunk.bytes.len() - i);
                        break 'rchunks;
                    } else if rev.is_quit_state(sid) {
                        return Err(search_error(pos, "quit byte"));
                    }
                }
            }
            self.count(chunk.bytes.len());
        }
        if !rev.is_dead_state(sid) {
            sid = match (at > run_start).then(|| self.byte_at(at - 1)).flatten() {
                Some(b) => rev.next_state(sid, b),
                None => rev.next_eoi_state(sid),
            };
            if rev.is_match_state(sid) {
                start = Some(at);
            }
        }
        let start = start.ok_or_else(|| search_error(end, "reverse search found no start"))?;
        Ok(Some((start, end)))
    }
}

/// Bytes of `rest` before the first of `needles` (all of them if none is there).
fn accel_skip(needles: &[u8], rest: &[u8]) -> usize {
    let found = match *needles {
        [a] => memchr::memchr(a, rest),
        [a, b] => memchr::memchr2(a, b, rest),
        [a, b, c] => memchr::memchr3(a, b, c, rest),
        _ => Some(0),
    };
    found.unwrap_or(rest.len())
}

/// A byte histogram counted in four tables, so that runs of equal bytes (frequent in text) do
/// not serialise on one counter, loading 8 bytes at a time. The tables hold 32-bit counts (4 KB
/// on the stack, cheap to clear for short streams), added to 64-bit totals before they could
/// overflow.
pub(crate) struct Histogram {
    tables: [[u32; 256]; 4],
    /// Bytes counted in `tables` since they were last added to `totals`.
    pending_bytes: u64,
    totals: [u64; 256],
}

impl Histogram {
    /// Bytes counted in the tables before they are added to the totals (a table entry cannot
    /// exceed it, and it is below `u32::MAX`).
    const FLUSH_BYTES: u64 = 1 << 31;
    /// Pieces shorter than this are counted in the totals directly.
    const DIRECT_MAX_BYTES: usize = 256;

    /// An empty histogram.
    pub(crate) fn new() -> Self {
        Histogram {
            tables: [[0; 256]; 4],
            pending_bytes: 0,
            totals: [0; 256],
        }
    }

    /// Counts every byte of `bytes`.
    #[inline]
    pub(crate) fn add(&mut self, bytes: &[u8]) {
        if bytes.len() < Self::DIRECT_MAX_BYTES {
            // Short pieces (requests, ACK-sized data) go straight to the totals.
            for &b in bytes {
                self.totals[usize::from(b)] += 1;
            }
            return;
        }
        for piece in bytes.chunks(Self::FLUSH_BYTES as usize) {
            if self.pending_bytes + piece.len() as u64 > Self::FLUSH_BYTES {
                self.flush();
            }
            self.pending_bytes += piece.len() as u64;
            let [t0, t1, t2, t3] = &mut self.tables;
            let mut words = piece.chunks_exact(8);
            for word in &mut words {
                let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
                t0[(w & 0xff) as usize] += 1;
                t1[((w >> 8) & 0xff) as usize] += 1;
                t2[((w >> 16) & 0xff) as usize] += 1;
                t3[((w >> 24) & 0xff) as usize] += 1;
                t0[((w >> 32) & 0xff) as usize] += 1;
                t1[((w >> 40) & 0xff) as usize] += 1;
                t2[((w >> 48) & 0xff) as usize] += 1;
                t3[(w >> 56) as usize] += 1;
            }
            for &b in words.remainder() {
                t0[usize::from(b)] += 1;
            }
        }
    }

    fn flush(&mut self) {
        if self.pending_bytes == 0 {
            return;
        }
        for table in &mut self.tables {
            for (total, count) in self.totals.iter_mut().zip(table.iter_mut()) {
                *total += u64::from(std::mem::take(count));
            }
        }
        self.pending_bytes = 0;
    }

    /// The histogram.
    pub(crate) fn total(mut self) -> [u64; 256] {
        self.flush();
        self.totals
    }
}

fn cut(chunk: Chunk<'_>, from: u64, to: u64) -> Chunk<'_> {
    let lo = from.saturating_sub(chunk.offset) as usize;
    let hi = (to.min(chunk.offset + chunk.bytes.len() as u64) - chunk.offset) as usize;
    Chunk {
        offset: chunk.offset + lo as u64,
        bytes: &chunk.bytes[lo.min(hi)..hi],
    }
}

fn search_error(offset: u64, reason: impl ToString) -> FlowError {
    FlowError::Search {
        offset,
        reason: reason.to_string(),
    }
}

/// Bounds on compiling a pattern (the pattern is the user's, and a dense DFA can grow
/// exponentially with it: `(a{1000}){1000}` took memory without bound). Past one the pattern is
/// refused with [`FlowError::Regex`], quickly: each is checked while the automaton is built.
/// Patterns that scan streams (protocol keywords, request lines, signatures) are far inside
/// them: the default HTTP request-line pattern compiles to DFAs of 10 kB together.
pub mod regex_limits {
    /// Pattern length.
    pub const MAX_PATTERN_BYTES: usize = 4 << 10;
    /// Nesting depth of groups and repetitions.
    pub const MAX_NEST: u32 = 64;
    /// Heap of the Thompson NFA the DFAs are built from (the `regex` crate's default too).
    pub const NFA_SIZE_LIMIT_BYTES: usize = 10 << 20;
    /// Each dense DFA (a stream regex has a forward and a reverse one).
    pub const DFA_SIZE_LIMIT_BYTES: usize = 32 << 20;
    /// Working memory of determinization (besides the DFA).
    pub const DETERMINIZE_SIZE_LIMIT_BYTES: usize = 32 << 20;
}

/// The syntax, NFA and DFA settings of a stream pattern, with [`regex_limits`]; `unicode`
/// allows Unicode classes (the memory model's DFA keeps its historical setting).
pub(crate) fn regex_configs(unicode: bool) -> (syntax::Config, thompson::Config, dense::Config) {
    use regex_limits::*;
    (
        syntax::Config::new()
            .unicode(unicode)
            .utf8(unicode)
            .nest_limit(MAX_NEST),
        thompson::Config::new()
            .utf8(unicode)
            .nfa_size_limit(Some(NFA_SIZE_LIMIT_BYTES)),
        dense::Config::new()
            .dfa_size_limit(Some(DFA_SIZE_LIMIT_BYTES))
            .determinize_size_limit(Some(DETERMINIZE_SIZE_LIMIT_BYTES)),
    )
}

/// Refuses a pattern longer than [`regex_limits::MAX_PATTERN_BYTES`] before it is parsed.
pub(crate) fn check_pattern_len(pattern: &str) -> Result<(), FlowError> {
    let max = regex_limits::MAX_PATTERN_BYTES;
    if pattern.len() > max {
        return Err(FlowError::Regex {
            pattern: pattern.to_string(),
            reason: format!(
                "the pattern is too large: {} bytes, the limit is {max} bytes",
                pattern.len()
            ),
        });
    }
    Ok(())
}

/// The one-line reason of a failed build: a size limit named with its value.
pub(crate) fn regex_build_error(pattern: &str, e: &(dyn std::error::Error + 'static)) -> FlowError {
    use regex_limits::*;
    // The NFA's limit and syntax errors are reported by the errors the DFA builder's wraps:
    // the reason is the innermost one's. A syntax error shows the pattern with a caret line
    // under the culprit before `error: WHAT`; WHAT is enough on one line.
    let mut nfa_limit = false;
    let mut text = e.to_string();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(t) = err.downcast_ref::<thompson::BuildError>() {
            nfa_limit |= t.size_limit().is_some();
        }
        text = err.to_string();
        source = err.source();
    }
    if let Some(i) = text.rfind("error: ") {
        text = format!("regex parse error: {}", &text[i + "error: ".len()..]);
    }
    let text = text.replace('\n', " ");
    let dfa_limit = e
        .downcast_ref::<dense::BuildError>()
        .is_some_and(|d| d.is_size_limit_exceeded());
    let reason = if nfa_limit {
        format!(
            "the pattern is too large: its NFA would exceed the limit of {} MiB",
            NFA_SIZE_LIMIT_BYTES >> 20
        )
    } else if dfa_limit && text.contains("determinization") {
        format!(
            "the pattern is too large: building its DFA would take more than the limit of {} MiB \
             ({text})",
            DETERMINIZE_SIZE_LIMIT_BYTES >> 20
        )
    } else if dfa_limit {
        format!(
            "the pattern is too large: its DFA would exceed the limit of {} MiB ({text})",
            DFA_SIZE_LIMIT_BYTES >> 20
        )
    } else if text.contains("nest") {
        format!("the pattern is too large: it nests deeper than the limit of {MAX_NEST} levels")
    } else {
        text
    };
    FlowError::Regex {
        pattern: pattern.to_string(),
        reason,
    }
}

/// A regular expression compiled into forward and reverse dense DFAs, matching bytes (no
/// Unicode classes, no UTF-8 requirement: streams are binary). Matching stays linear (a DFA
/// step per byte); compiling is bounded by [`regex_limits`].
#[derive(Debug, Clone)]
pub struct StreamRegex {
    regex: Regex,
    pattern: String,
}

impl StreamRegex {
    /// Compiles `pattern`; a pattern past [`regex_limits`] is refused with a one-line
    /// [`FlowError::Regex`] naming the limit.
    pub fn new(pattern: &str) -> Result<Self, FlowError> {
        check_pattern_len(pattern)?;
        let (syntax, nfa, dfa) = regex_configs(false);
        let regex = Regex::builder()
            .syntax(syntax)
            .thompson(nfa)
            .dense(dfa)
            .build(pattern)
            .map_err(|e| regex_build_error(pattern, &e))?;
        Ok(StreamRegex {
            regex,
            pattern: pattern.to_string(),
        })
    }

    /// The source pattern.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Matches on a contiguous haystack, as `regex-automata` finds them (the reference).
    pub fn find_iter(&self, haystack: &[u8]) -> Vec<(u64, u64)> {
        self.regex
            .find_iter(Input::new(haystack))
            .map(|m| (m.start() as u64, m.end() as u64))
            .collect()
    }
}

#[cfg(test)]
mod histogram_tests {
    use super::Histogram;

    #[test]
    fn four_tables_and_direct_counts_equal_a_plain_count() {
        let bytes: Vec<u8> = (0..100_003_u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 % 7)
            .collect();
        let mut plain = [0_u64; 256];
        for &b in &bytes {
            plain[usize::from(b)] += 1;
        }
        let mut h = Histogram::new();
        // Pieces of every size class: direct (< 256 bytes), tables, and an odd tail.
        let (mut at, mut step) = (0, 1);
        while at < bytes.len() {
            let end = (at + step).min(bytes.len());
            h.add(&bytes[at..end]);
            at = end;
            step = step * 3 + 1;
        }
        assert_eq!(h.total(), plain);
    }
}
