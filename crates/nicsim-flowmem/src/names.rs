//! The names users give the flow-memory options (`--overlap first`, `--unacked tshark`,
//! `--retrieval selective`, `--workload regex`): one `FromStr` each, and one message for a name
//! that is none of them, so that the CLI, the Python API and the bindings say the same.

use std::str::FromStr;

use crate::bench::HostWorkload;
use crate::model::{Retrieval, Workload};
use crate::{FlowError, OverlapPolicy, StreamRegex, UnackedPolicy};

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
            expected: choices.iter().map(|(n, _)| *n).collect(),
        })
}

impl FromStr for OverlapPolicy {
    type Err = FlowError;
    /// `first` (the bytes that arrived first stay) or `last`.
    fn from_str(s: &str) -> Result<Self, FlowError> {
        choose(
            "overlap policy",
            s,
            &[
                ("first", OverlapPolicy::FirstWins),
                ("last", OverlapPolicy::LastWins),
            ],
        )
    }
}

impl FromStr for UnackedPolicy {
    type Err = FlowError;
    /// `keep`, `drop` or `tshark`.
    fn from_str(s: &str) -> Result<Self, FlowError> {
        choose(
            "unacked policy",
            s,
            &[
                ("keep", UnackedPolicy::Keep),
                ("drop", UnackedPolicy::Drop),
                ("tshark", UnackedPolicy::Tshark),
            ],
        )
    }
}

impl FromStr for Retrieval {
    type Err = FlowError;
    /// `whole` or `selective`.
    fn from_str(s: &str) -> Result<Self, FlowError> {
        choose(
            "retrieval",
            s,
            &[
                ("whole", Retrieval::Whole),
                ("selective", Retrieval::Selective),
            ],
        )
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
        choose(
            "workload",
            s,
            &[("scan", WorkloadKind::Scan), ("regex", WorkloadKind::Regex)],
        )
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
}
