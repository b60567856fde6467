//! The names users give the flow-memory options (`--overlap first`, `--unacked tshark`,
//! `--hole-marker zero`, `--retrieval selective`, `--workload regex`): one table each, one
//! `FromStr` each, and one message for a name that is none of them, so that the CLI, the Python
//! API and the bindings say the same. [`option_names`] lists every table: the Python CLI's
//! choices come from it (`_core.flow_names`).

use std::str::FromStr;

use crate::bench::HostWorkload;
use crate::model::{MemConfig, Retrieval, Workload};
use crate::reassembly::MAX_HOLE_BYTES;
use crate::{Config, FlowError, Limits, OverlapPolicy, StreamRegex, UnackedPolicy};

/// `value` as one of `choices`' values, or [`FlowError::Choice`] naming `what` and the names.
fn choose<T: Copy>(
    what: &'static str,
    value: &str,
    choices: &[(&'static str, T)],
) -> Result<T, FlowError> {
    choices
        .iter()
        .find(|(n, _)| *n == value)
        .map(|(_, t)| *t)
        .ok_or_else(|| FlowError::Choice {
            what,
            value: value.to_string(),
            expected: names_of(choices),
        })
}

fn names_of<T>(choices: &[(&'static str, T)]) -> Vec<&'static str> {
    choices.iter().map(|(n, _)| *n).collect()
}

const OVERLAP: [(&str, OverlapPolicy); 2] = [
    ("first", OverlapPolicy::FirstWins),
    ("last", OverlapPolicy::LastWins),
];

const UNACKED: [(&str, UnackedPolicy); 3] = [
    ("keep", UnackedPolicy::Keep),
    ("drop", UnackedPolicy::Drop),
    ("tshark", UnackedPolicy::Tshark),
];

const HOLE_MARKER: [(&str, HoleMarker); 2] =
    [("zero", HoleMarker::Zero), ("tshark", HoleMarker::Tshark)];

const RETRIEVAL: [(&str, Retrieval); 2] = [
    ("whole", Retrieval::Whole),
    ("selective", Retrieval::Selective),
];

const WORKLOAD: [(&str, WorkloadKind); 2] =
    [("scan", WorkloadKind::Scan), ("regex", WorkloadKind::Regex)];

/// Every option with a fixed set of names, as the CLI spells the option (without `--`, `_` for
/// `-`), with its names: `overlap`, `unacked`, `hole_marker`, `retrieval`, `workload`.
pub fn option_names() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("overlap", names_of(&OVERLAP)),
        ("unacked", names_of(&UNACKED)),
        ("hole_marker", names_of(&HOLE_MARKER)),
        ("retrieval", names_of(&RETRIEVAL)),
        ("workload", names_of(&WORKLOAD)),
    ]
}

/// Checks that `value` is one of `option`'s names ([`option_names`]), with the message of
/// the option's `FromStr`; an `option` that is none of them is refused the same way.
pub fn check_name(option: &str, value: &str) -> Result<(), FlowError> {
    match option {
        "overlap" => value.parse::<OverlapPolicy>().map(|_| ()),
        "unacked" => value.parse::<UnackedPolicy>().map(|_| ()),
        "hole_marker" => value.parse::<HoleMarker>().map(|_| ()),
        "retrieval" => value.parse::<Retrieval>().map(|_| ()),
        "workload" => value.parse::<WorkloadKind>().map(|_| ()),
        _ => Err(FlowError::Choice {
            what: "option",
            value: option.to_string(),
            expected: option_names().into_iter().map(|(n, _)| n).collect(),
        }),
    }
}

/// How the files of `nicsim flowmem reassemble` show a hole (the Python side writes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoleMarker {
    /// As many zero bytes as are missing: file offsets are stream offsets.
    Zero,
    /// tshark's text "[N bytes missing in capture file]" and a NUL (`tshark -z follow,tcp,raw`).
    Tshark,
}

impl FromStr for HoleMarker {
    type Err = FlowError;
    /// `zero` or `tshark`.
    fn from_str(s: &str) -> Result<Self, FlowError> {
        choose("hole marker", s, &HOLE_MARKER)
    }
}

impl Config {
    /// The reassembler's settings from the names users give (`overlap`, `unacked`) and the
    /// limits given, each `None` taking [`Limits::default`]'s value.
    pub fn from_names(
        overlap: &str,
        unacked: &str,
        max_flows: Option<usize>,
        max_arena_bytes: Option<u64>,
        max_segments_per_direction: Option<usize>,
        max_hole_bytes: Option<u64>,
    ) -> Result<Config, FlowError> {
        let defaults = Limits::default();
        if let Some(v) = max_hole_bytes.filter(|&v| v > MAX_HOLE_BYTES) {
            return Err(FlowError::Limit {
                option: "max_hole_bytes",
                value: v,
                lo: 0,
                hi: MAX_HOLE_BYTES,
                why: " (4 GiB: what a stream laid out contiguously may add to its payload)",
            });
        }
        Ok(Config {
            overlap: overlap.parse()?,
            unacked: unacked.parse()?,
            limits: Limits {
                max_flows: max_flows.unwrap_or(defaults.max_flows),
                max_arena_bytes: max_arena_bytes.unwrap_or(defaults.max_arena_bytes),
                max_segments_per_direction: max_segments_per_direction
                    .unwrap_or(defaults.max_segments_per_direction),
                max_hole_bytes: max_hole_bytes.unwrap_or(defaults.max_hole_bytes),
                defrag: defaults.defrag,
            },
        })
    }
}

impl MemConfig {
    /// A target from its TOML ([`MemConfig::from_toml`]), its retrieval replaced by the one
    /// named, if any (`whole` or `selective`).
    pub fn from_toml_with_retrieval(
        target_toml: &str,
        retrieval: Option<&str>,
    ) -> Result<MemConfig, String> {
        let mut c = MemConfig::from_toml(target_toml)?;
        if let Some(r) = retrieval {
            c.retrieval = r.parse::<Retrieval>().map_err(|e| e.to_string())?;
        }
        Ok(c)
    }
}

/// The model's workload named `kind` (`pattern` for a regex).
pub fn model_workload(kind: &str, pattern: Option<&str>) -> Result<Workload, FlowError> {
    kind.parse::<WorkloadKind>()?.model(pattern)
}

/// The host benchmark's workload named `kind` (`pattern` for a regex).
pub fn host_workload(kind: &str, pattern: Option<&str>) -> Result<HostWorkload, FlowError> {
    kind.parse::<WorkloadKind>()?.host(pattern)
}

/// Checks a workload and its pattern before any capture is read: the name, the model's DFA,
/// and (for any pattern given) the host's [`StreamRegex`].
pub fn check_workload(kind: &str, pattern: Option<&str>) -> Result<(), FlowError> {
    model_workload(kind, pattern)?;
    if let Some(p) = pattern {
        StreamRegex::new(p)?;
    }
    Ok(())
}

impl FromStr for OverlapPolicy {
    type Err = FlowError;
    /// `first` (the bytes that arrived first stay) or `last`.
    fn from_str(s: &str) -> Result<Self, FlowError> {
        choose("overlap policy", s, &OVERLAP)
    }
}

impl FromStr for UnackedPolicy {
    type Err = FlowError;
    /// `keep`, `drop` or `tshark`.
    fn from_str(s: &str) -> Result<Self, FlowError> {
        choose("unacked policy", s, &UNACKED)
    }
}

impl FromStr for Retrieval {
    type Err = FlowError;
    /// `whole` or `selective`.
    fn from_str(s: &str) -> Result<Self, FlowError> {
        choose("retrieval", s, &RETRIEVAL)
    }
}

/// A workload's kind by name: `scan` or `regex` (which needs a pattern).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Every byte read once.
    Scan,
    /// A regular expression over every byte.
    Regex,
}

impl FromStr for WorkloadKind {
    type Err = FlowError;
    fn from_str(s: &str) -> Result<Self, FlowError> {
        choose("workload", s, &WORKLOAD)
    }
}

impl WorkloadKind {
    /// The pattern a regex needs, or [`FlowError::NoPattern`].
    fn pattern(self, pattern: Option<&str>) -> Result<&str, FlowError> {
        pattern.ok_or(FlowError::NoPattern)
    }

    /// The SmartNIC model's workload of this kind (`pattern` for a regex).
    pub fn model(self, pattern: Option<&str>) -> Result<Workload, FlowError> {
        match self {
            WorkloadKind::Scan => Ok(Workload::Scan),
            WorkloadKind::Regex => Workload::regex(self.pattern(pattern)?),
        }
    }

    /// The host benchmark's workload of this kind (`pattern` for a regex).
    pub fn host(self, pattern: Option<&str>) -> Result<HostWorkload, FlowError> {
        match self {
            WorkloadKind::Scan => Ok(HostWorkload::Scan),
            WorkloadKind::Regex => Ok(HostWorkload::Regex(Box::new(StreamRegex::new(
                self.pattern(pattern)?,
            )?))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_and_others_get_one_message() {
        assert_eq!(
            "last".parse::<OverlapPolicy>().unwrap(),
            OverlapPolicy::LastWins
        );
        assert_eq!(
            "tshark".parse::<UnackedPolicy>().unwrap(),
            UnackedPolicy::Tshark
        );
        assert_eq!(
            "selective".parse::<Retrieval>().unwrap(),
            Retrieval::Selective
        );
        assert_eq!(
            "regex".parse::<WorkloadKind>().unwrap(),
            WorkloadKind::Regex
        );
        let e = "Keep".parse::<UnackedPolicy>().unwrap_err().to_string();
        assert_eq!(
            e,
            r#"unacked policy "Keep": expected "keep", "drop" or "tshark""#
        );
        let e = "x".parse::<Retrieval>().unwrap_err().to_string();
        assert_eq!(e, r#"retrieval "x": expected "whole" or "selective""#);
        assert_eq!(
            WorkloadKind::Regex.model(None).unwrap_err().to_string(),
            "the regex workload needs a pattern"
        );
        assert!(WorkloadKind::Regex.host(Some("(")).is_err());
        assert!(matches!(
            WorkloadKind::Scan.host(None),
            Ok(HostWorkload::Scan)
        ));
    }

    #[test]
    fn option_names_are_what_each_option_parses() {
        let all = option_names();
        let options: Vec<&str> = all.iter().map(|(o, _)| *o).collect();
        assert_eq!(
            options,
            ["overlap", "unacked", "hole_marker", "retrieval", "workload"]
        );
        for (option, values) in &all {
            for v in values {
                check_name(option, v).unwrap();
            }
            let e = check_name(option, "nosuch").unwrap_err().to_string();
            for v in values {
                assert!(e.contains(&format!("{v:?}")), "{e} lacks {v}");
            }
        }
        assert_eq!(
            all[2].1,
            ["zero", "tshark"],
            "hole markers: zero is the default"
        );
        assert_eq!(
            check_name("hole_marker", "x").unwrap_err().to_string(),
            r#"hole marker "x": expected "zero" or "tshark""#
        );
        assert_eq!(
            check_name("colour", "red").unwrap_err().to_string(),
            r#"option "colour": expected "overlap", "unacked", "hole_marker", "retrieval" or "workload""#
        );
    }

    #[test]
    fn a_hole_bound_past_4_gib_is_refused_with_its_range() {
        let ok = Config::from_names("first", "keep", None, None, None, Some(MAX_HOLE_BYTES));
        assert_eq!(ok.unwrap().limits.max_hole_bytes, MAX_HOLE_BYTES);
        for v in [MAX_HOLE_BYTES + 1, 1 << 40, u64::MAX] {
            let e = Config::from_names("first", "keep", None, None, None, Some(v)).unwrap_err();
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("max_hole_bytes {v}: expected 0..=4294967296")),
                "{text}"
            );
        }
    }

    #[test]
    fn config_from_names_takes_the_default_limits_for_none() {
        let c = Config::from_names("last", "drop", Some(7), None, None, Some(99)).unwrap();
        let d = Limits::default();
        assert_eq!(c.overlap, OverlapPolicy::LastWins);
        assert_eq!(c.unacked, UnackedPolicy::Drop);
        assert_eq!(
            c.limits,
            Limits {
                max_flows: 7,
                max_hole_bytes: 99,
                ..d
            }
        );
        let c = Config::from_names("first", "keep", None, None, None, None).unwrap();
        assert_eq!(c, Config::default());
        let e = Config::from_names("middle", "keep", None, None, None, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"overlap policy "middle": expected "first" or "last""#
        );
        assert!(Config::from_names("first", "Keep", None, None, None, None).is_err());
    }

    #[test]
    fn a_target_with_a_retrieval_by_name() {
        let text = crate::model::target_toml("u250-microblaze").unwrap();
        let plain = MemConfig::from_toml(text).unwrap();
        assert_eq!(
            MemConfig::from_toml_with_retrieval(text, None).unwrap(),
            plain
        );
        for r in [Retrieval::Whole, Retrieval::Selective] {
            let name = RETRIEVAL.iter().find(|(_, x)| *x == r).unwrap().0;
            let c = MemConfig::from_toml_with_retrieval(text, Some(name)).unwrap();
            assert_eq!(c.retrieval, r);
        }
        assert_eq!(
            MemConfig::from_toml_with_retrieval(text, Some("some")).unwrap_err(),
            r#"retrieval "some": expected "whole" or "selective""#
        );
        assert!(MemConfig::from_toml_with_retrieval("[core\n", None).is_err());
    }

    #[test]
    fn workloads_by_name_are_checked_before_a_capture() {
        check_workload("scan", None).unwrap();
        check_workload("regex", Some("GET /")).unwrap();
        assert_eq!(
            check_workload("grep", None).unwrap_err().to_string(),
            r#"workload "grep": expected "scan" or "regex""#
        );
        assert_eq!(
            check_workload("regex", None).unwrap_err().to_string(),
            "the regex workload needs a pattern"
        );
        assert!(check_workload("regex", Some("(unclosed")).is_err());
        assert!(matches!(model_workload("scan", None), Ok(Workload::Scan)));
        assert!(matches!(
            host_workload("regex", Some("a+")),
            Ok(HostWorkload::Regex(_))
        ));
    }
}
