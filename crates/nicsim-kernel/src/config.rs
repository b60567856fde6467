//! What every model's configuration shares: the one error type a bad config produces, naming
//! the key path of the problem (`flows[2].chain[1]: ...`), which the CLI turns into a one-line
//! message and exit code 2; the one loader ([`from_toml`], [`from_json`]) that parses a config
//! into its type and has it [`Validate`] itself; the limits every model applies to the values that size its
//! memory or its time (clocks, latencies, buffers); and THE timebase check, which every
//! model's validation calls so that 64-bit time holds the run and the key at fault is named.

use crate::time::Timebase;

/// A configuration error: `path` is the key path (`traffic[0].flows[1].dst`), `msg` what was
/// expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {msg}")]
pub struct ConfigError {
    /// The key path of the offending value (`traffic[0].flows[1].dst`); empty at the document's
    /// root.
    pub path: String,
    /// What was expected there, or what is wrong with the value.
    pub msg: String,
}

/// `Err(ConfigError)` at `path`.
pub fn err<T>(path: impl Into<String>, msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError {
        path: path.into(),
        msg: msg.into(),
    })
}

/// A configuration type that checks its values once parsed (each problem at its key), and
/// loads from TOML or JSON through the one loader. [`Validate::check`] is the one check, and
/// produces what the model builds from (names parsed into types); the loaders run it and keep
/// the configuration.
pub trait Validate: Sized + serde::de::DeserializeOwned {
    /// What a successful check produces: the configuration's strings parsed into the types the
    /// model uses (`()` when the configuration needs no parsing beyond serde's).
    type Checked;

    /// Check meaning beyond types; the first problem, at its key path.
    fn check(&self) -> Result<Self::Checked, ConfigError>;

    /// [`Validate::check`], keeping only its verdict.
    fn validate(&self) -> Result<(), ConfigError> {
        self.check().map(|_| ())
    }

    /// Parse TOML text and validate it ([`from_toml`]); errors carry the key path.
    fn from_toml(text: &str) -> Result<Self, ConfigError> {
        from_toml(text)
    }

    /// Parse JSON text (what the Python front end sends after applying overrides) and validate
    /// it ([`from_json`]).
    fn from_json(text: &str) -> Result<Self, ConfigError> {
        from_json(text)
    }
}

/// The key path of a parse error: empty at the document's root, control characters escaped.
fn error_path(path: String) -> String {
    if path == "." {
        String::new()
    } else {
        printable(&path)
    }
}

/// Parse TOML text into `T` and validate it. Errors carry the key path; the message is one
/// line.
pub fn from_toml<T: serde::de::DeserializeOwned + Validate>(text: &str) -> Result<T, ConfigError> {
    let de = toml::Deserializer::new(text);
    let cfg: T = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = error_path(e.path().to_string());
        let msg = one_line(e.into_inner().message());
        ConfigError { path, msg }
    })?;
    cfg.validate()?;
    Ok(cfg)
}

/// Parse JSON text (what the Python front end sends after applying overrides) into `T` and
/// validate it; as [`from_toml`], the parser's position left out.
pub fn from_json<T: serde::de::DeserializeOwned + Validate>(text: &str) -> Result<T, ConfigError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let cfg: T = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = error_path(e.path().to_string());
        let msg = e.into_inner().to_string();
        let msg = match msg.find(" at line ") {
            Some(i) => &msg[..i],
            None => &msg,
        };
        ConfigError {
            path,
            msg: one_line(msg),
        }
    })?;
    cfg.validate()?;
    Ok(cfg)
}

/// A parser's message on one line: the toml crate's spread over several (`invalid table
/// header` / `expected newline`), and a config error is one line.
pub fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(": ")
}

/// A key path as given, with control characters escaped (`\n`): a key of a JSON document may
/// hold any character, and a config error is one line.
pub fn printable(path: &str) -> String {
    path.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The fastest clock any model takes (100 GHz, twenty times today's fastest silicon). A clock
/// sizes nothing by itself, but it scales what does: FlexPipe's Eq. 1 gives units in
/// proportion to the pipeline clock, and the tick is 1 / lcm(clocks) µs, so clocks in the
/// billions of MHz leave 64-bit time no room.
pub const MAX_CLOCK_MHZ: u32 = 100_000;

/// The most cycles one latency or one per-packet cost may take (a delay, a pipeline latency,
/// the CPU's forwarding cost): one second at the slowest clock (1 MHz), the drain
/// ([`DRAIN_US`](crate::time::DRAIN_US)) every timebase is checked to hold, so `cycles × period` cannot overflow.
pub const MAX_LATENCY_CYCLES: u64 = 1_000_000;

/// The most bytes one FIFO or buffer may hold (16 MiB, a thousand times the 15-16 kB FIFOs
/// of the papers' hardware). FIFOs allocate as packets arrive, so a huge one costs memory only
/// once traffic fills it: one record per packet in flight, and a frame in functional runs.
pub const MAX_FIFO_BYTES: u64 = 1 << 24;

/// The most bytes all of a model's FIFOs and buffers together may hold (256 MiB): at most
/// about four million minimum-size packets in flight, some hundreds of MB of packet records.
pub const MAX_BUFFERED_BYTES: u64 = 1 << 28;

/// `v` at `key` must lie in `lo..=hi` (`unit` names what it counts: `"MHz"`, `"bytes"`).
pub fn check_range(key: &str, v: u64, lo: u64, hi: u64, unit: &str) -> Result<(), ConfigError> {
    if v < lo || v > hi {
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        return err(key, format!("{v}{unit} is outside {lo}..={hi}{unit}"));
    }
    Ok(())
}

/// How far one run's traffic spans, and the key that is at fault if 64-bit time cannot hold
/// it (with `context`, a few words saying how the span came about).
#[derive(Debug, Clone)]
pub struct Span {
    /// The config key that sets this span, named when 64-bit time cannot hold it.
    pub key: String,
    /// How far the traffic spans, in simulated µs.
    pub span_us: f64,
    /// How the span came about (e.g. the packet size and rate), put before the error message; may
    /// be empty.
    pub context: String,
}

/// THE timebase check: every model's validation calls it with every clock of the run, each
/// with its key, and the spans of its traffic, each with the key that sets it, most basic
/// first. In order, the first problem is reported at its key:
/// - a clock outside `1..=`[`MAX_CLOCK_MHZ`] MHz;
/// - clocks that alone, without any traffic, leave 64-bit time less than
///   [`DRAIN_US`](crate::time::DRAIN_US): the
///   clock whose lcm with the clocks before it no longer fits is named;
/// - a span that the clocks cannot hold ([`Timebase::for_span`]): its key is named. Callers
///   list the span of the least traffic first (one packet at the configured rate, blamed on
///   the rate), then the whole traffic (blamed on the packet count or the duration).
pub fn check_timebase(clocks: &[(String, u32)], spans: &[Span]) -> Result<Timebase, ConfigError> {
    for (key, mhz) in clocks {
        check_range(key, *mhz as u64, 1, MAX_CLOCK_MHZ as u64, "MHz")?;
    }
    let mhz: Vec<u32> = clocks.iter().map(|(_, f)| *f).collect();
    for (i, (key, _)) in clocks.iter().enumerate() {
        if let Err(e) = Timebase::for_span(&mhz[..=i], 0.0) {
            return err(key.as_str(), e.to_string());
        }
    }
    for s in spans {
        if let Err(e) = Timebase::for_span(&mhz, s.span_us) {
            return err(
                s.key.as_str(),
                if s.context.is_empty() {
                    e.to_string()
                } else {
                    format!("{}; {e}", s.context)
                },
            );
        }
    }
    Ok(Timebase::for_span(&mhz, 0.0).expect("checked above"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clocks(v: &[(&str, u32)]) -> Vec<(String, u32)> {
        v.iter().map(|&(k, f)| (k.to_string(), f)).collect()
    }

    fn span(key: &str, span_us: f64) -> Span {
        Span {
            key: key.into(),
            span_us,
            context: String::new(),
        }
    }

    #[test]
    fn the_key_at_fault_is_named() {
        let ok = clocks(&[("a", 250), ("b", 150)]);
        assert_eq!(
            check_timebase(&ok, &[span("packets", 1e6)])
                .unwrap()
                .ticks_per_us(),
            750
        );
        // A clock out of range, at its key, before any lcm is taken.
        let e = check_timebase(&clocks(&[("a", 250), ("b", 4_294_967_295)]), &[]).unwrap_err();
        assert_eq!(e.path, "b");
        assert!(e.msg.contains("outside 1..=100000 MHz"), "{e}");
        assert!(check_timebase(&clocks(&[("a", 0)]), &[]).is_err());
        // Primes whose lcm leaves no room for the drain: the one that tips it is named, even
        // with no traffic at all.
        let primes = clocks(&[
            ("a", 99991),
            ("b", 99989),
            ("c", 99971),
            ("d", 99961),
            ("e", 250),
        ]);
        let e = check_timebase(&primes, &[span("packets", 1.0)]).unwrap_err();
        assert_eq!(e.path, "c", "{e}");
        assert!(e.msg.contains("drain every run needs"), "{e}");
        // Clocks that hold the drain but not this much traffic: the span's key.
        let odd = clocks(&[("a", 1000), ("b", 997), ("c", 991), ("d", 983)]);
        let spans = [span("rate", 1.0), span("packets", 1e9)];
        let e = check_timebase(&odd, &spans).unwrap_err();
        assert_eq!(e.path, "packets", "{e}");
        let spans = [
            Span {
                key: "rate".into(),
                span_us: 1e20,
                context: "one packet takes 1e20 µs".into(),
            },
            span("packets", 1e24),
        ];
        let e = check_timebase(&odd, &spans).unwrap_err();
        assert_eq!(e.path, "rate", "{e}");
        assert!(
            e.msg.starts_with("one packet takes 1e20 µs; the clocks"),
            "{e}"
        );
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn messages_on_one_line() {
        assert_eq!(
            one_line("invalid table header\nexpected newline, `#`\n"),
            "invalid table header: expected newline, `#`"
        );
        assert_eq!(one_line("plain"), "plain");
        assert_eq!(printable("a\nb.c"), "a\\nb.c");
    }

    #[test]
    fn ranges() {
        assert!(check_range("k", 5, 1, 5, "bytes").is_ok());
        let e = check_range("k", 6, 1, 5, "bytes").unwrap_err();
        assert_eq!(e.to_string(), "k: 6 bytes is outside 1..=5 bytes");
        let e = check_range("k", 0, 1, 5, "").unwrap_err();
        assert_eq!(e.to_string(), "k: 0 is outside 1..=5");
    }
}
