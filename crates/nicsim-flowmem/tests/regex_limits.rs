//! Regex patterns are the user's: compiling one into dense DFAs is bounded
//! (`nicsim_flowmem::regex_limits`), and a pattern past a bound gets a one-line error saying it
//! is too large and what the limit is, quickly, instead of taking memory without bound. The
//! patterns streams are searched with still compile, and match in linear time (a DFA).

use std::time::{Duration, Instant};

use nicsim_flowmem::model::Workload;
use nicsim_flowmem::{regex_limits, FlowError, StreamRegex};

/// The `flowmem bench` default (python/nicsim/flowmem/memory.py).
const HTTP: &str = r"(GET|POST|PUT|DELETE) /[a-z0-9/._-]* HTTP/1\.[01]";

/// The error of compiling `pattern` both ways (stream regex, model workload), which must agree,
/// and the time it took.
fn refused(pattern: &str) -> (String, Duration) {
    let t = Instant::now();
    let e = StreamRegex::new(pattern).expect_err("refused");
    let took = t.elapsed();
    assert!(matches!(e, FlowError::Regex { .. }));
    let m = Workload::regex(pattern).expect_err("refused by the model too");
    let (a, b) = (e.to_string(), m.to_string());
    assert!(!a.contains('\n') && !b.contains('\n'), "{a}");
    assert!(a.len() < 400, "one short line: {a}");
    (a, took)
}

#[test]
fn nested_repetitions_are_refused_quickly_with_the_limit() {
    let (msg, took) = refused("(a{1000}){1000}");
    assert!(msg.contains("too large") && msg.contains("10 MiB"), "{msg}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let (msg, _) = refused("a{100000}");
    assert!(msg.contains("too large"), "{msg}");
}

#[test]
fn a_dfa_that_grows_exponentially_is_refused_with_the_limit() {
    // The 30th byte from the end is a 1: a DFA needs 2^30 states to know.
    let (msg, took) = refused("[01]*1[01]{30}");
    assert!(
        msg.contains("too large")
            && msg.contains(&format!("{} MiB", regex_limits::DFA_SIZE_LIMIT_BYTES >> 20)),
        "{msg}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn long_and_deep_patterns_are_refused_before_they_are_built() {
    let long = "a".repeat(regex_limits::MAX_PATTERN_BYTES + 1);
    let (msg, took) = refused(&long);
    assert!(
        msg.contains("too large") && msg.contains("4096 bytes"),
        "{msg}"
    );
    assert!(
        msg.contains("...") && msg.len() < 200,
        "the pattern is shortened: {msg}"
    );
    assert!(took < Duration::from_millis(100), "{took:?}");
    let deep = format!("{}a{}", "(".repeat(100), ")".repeat(100));
    let (msg, _) = refused(&deep);
    assert!(
        msg.contains("too large") && msg.contains("64 levels"),
        "{msg}"
    );
    // A plain syntax error is still reported as one.
    let (msg, _) = refused("(unclosed");
    assert!(
        msg.contains("invalid regex") && !msg.contains("too large"),
        "{msg}"
    );
    assert!(msg.ends_with("regex parse error: unclosed group"), "{msg}");
}

#[test]
fn the_patterns_streams_are_searched_with_compile_and_match() {
    let hay = b"xx GET /index.html HTTP/1.1\r\nHost: a\r\n\r\nPOST /api/v1 HTTP/1.0\r\n";
    let re = StreamRegex::new(HTTP).unwrap();
    assert_eq!(re.find_iter(hay).len(), 2);
    for p in [
        HTTP,
        r"\x00\x01\x02\x03",
        r"[a-z0-9._%+-]{1,64}@[a-z0-9.-]+\.[a-z]{2,6}",
        r"(?i)content-length: *[0-9]{1,10}",
        r"User-Agent: [^\r\n]{0,200}",
        "a{1000}",
    ] {
        StreamRegex::new(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        Workload::regex(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    }
}
