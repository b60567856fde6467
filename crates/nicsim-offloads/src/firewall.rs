//! Firewall offload: an ordered rule list over the 5-tuple, first match wins, else the
//! default action. Prefixes are pre-parsed into integer network/mask pairs.
//!
//! Rule text, one rule per line, `#` starts a comment:
//! ```text
//! deny tcp 10.0.0.0/8 any sport any dport 22-23
//! permit udp any 192.168.1.0/24 dport 53
//! default deny
//! ```
//! i.e. `ACTION PROTO SRC DST [sport RANGE] [dport RANGE]` with ACTION `permit|deny`,
//! PROTO `tcp|udp|icmp|any|0..=255`, SRC/DST `any` or an IPv4/IPv6 CIDR (a bare address is
//! a host), RANGE `any|N|N-M`; plus at most one `default ACTION` (permit if absent).

use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;

use nicsim_packet::ip::protocol;
pub use nicsim_packet::ip::Prefix;
use nicsim_packet::FiveTuple;

use crate::{l4_payload, DropReason, FuncMeta, FunctionalOffload, OffloadKind};

/// What the firewall does with a frame: a rule's verdict, or a rule set's default for frames no
/// rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Let the frame through (the default).
    #[default]
    Permit,
    /// Drop the frame with [`DropReason::FirewallDeny`].
    Deny,
}

impl FromStr for Action {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "permit" => Ok(Action::Permit),
            "deny" => Ok(Action::Deny),
            _ => Err(format!("bad action '{s}' (expected permit or deny)")),
        }
    }
}

/// One rule; `None` / full ranges match anything. Build with [`Rule::new`] and the
/// chained setters, e.g. `Rule::new(Action::Deny).proto(6).dport(22..=23)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// What to do with a frame that matches.
    pub action: Action,
    /// The IP protocol number to match (6 TCP, 17 UDP); `None` matches any.
    pub proto: Option<u8>,
    /// The prefix the source address must lie in; `None` matches any.
    pub src: Option<Prefix>,
    /// The prefix the destination address must lie in; `None` matches any.
    pub dst: Option<Prefix>,
    /// The source ports to match (inclusive); `0..=65535` matches any.
    pub sport: RangeInclusive<u16>,
    /// The destination ports to match (inclusive); `0..=65535` matches any.
    pub dport: RangeInclusive<u16>,
}

impl Rule {
    /// A rule that matches every packet.
    pub fn new(action: Action) -> Rule {
        Rule {
            action,
            proto: None,
            src: None,
            dst: None,
            sport: 0..=u16::MAX,
            dport: 0..=u16::MAX,
        }
    }

    /// Matches only IP protocol `proto` (6 TCP, 17 UDP).
    pub fn proto(self, proto: u8) -> Rule {
        Rule {
            proto: Some(proto),
            ..self
        }
    }

    /// Matches only source addresses within `prefix`.
    pub fn src(self, prefix: Prefix) -> Rule {
        Rule {
            src: Some(prefix),
            ..self
        }
    }

    /// Matches only destination addresses within `prefix`.
    pub fn dst(self, prefix: Prefix) -> Rule {
        Rule {
            dst: Some(prefix),
            ..self
        }
    }

    /// Matches only source ports within `ports`.
    pub fn sport(self, ports: RangeInclusive<u16>) -> Rule {
        Rule {
            sport: ports,
            ..self
        }
    }

    /// Matches only destination ports within `ports`.
    pub fn dport(self, ports: RangeInclusive<u16>) -> Rule {
        Rule {
            dport: ports,
            ..self
        }
    }

    /// Whether a frame with 5-tuple `t` meets every condition of the rule.
    pub fn matches(&self, t: &FiveTuple) -> bool {
        self.proto.is_none_or(|p| p == t.proto)
            && self.sport.contains(&t.sport)
            && self.dport.contains(&t.dport)
            && self.src.is_none_or(|p| p.contains(t.src))
            && self.dst.is_none_or(|p| p.contains(t.dst))
    }
}

/// An ordered rule list with a default action.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    /// The rules, tried in order; the first that matches decides.
    pub rules: Vec<Rule>,
    /// The action for a frame no rule matches (permit unless the text says `default deny`).
    pub default: Action,
}

/// A rule-text error: `line N: <what was wrong with which token>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The 1-based number of the offending line in the rule text.
    pub line: usize,
    /// What was wrong, naming the offending token.
    pub message: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for RuleError {}

impl RuleSet {
    /// Parse the line-oriented format described in the module docs.
    pub fn parse(text: &str) -> Result<RuleSet, RuleError> {
        let mut set = RuleSet::default();
        let mut seen_default = false;
        for (i, line) in text.lines().enumerate() {
            let err = |message: String| RuleError {
                line: i + 1,
                message,
            };
            let line = line.split('#').next().unwrap_or_default();
            let mut tokens = line.split_whitespace();
            match tokens.next() {
                None => {}
                Some("default") => {
                    if seen_default {
                        return Err(err("duplicate 'default'".into()));
                    }
                    seen_default = true;
                    set.default = expect(&mut tokens, "action after 'default'")
                        .and_then(str::parse)
                        .map_err(err)?;
                    if let Some(extra) = tokens.next() {
                        return Err(err(format!(
                            "unexpected token '{extra}' after default action"
                        )));
                    }
                }
                Some(action) => set.rules.push(parse_rule(action, tokens).map_err(err)?),
            }
        }
        Ok(set)
    }

    /// The action for a packet with this 5-tuple.
    pub fn evaluate(&self, t: &FiveTuple) -> Action {
        self.rules
            .iter()
            .find(|r| r.matches(t))
            .map_or(self.default, |r| r.action)
    }
}

fn parse_rule<'a>(action: &str, mut tokens: impl Iterator<Item = &'a str>) -> Result<Rule, String> {
    let action = match action {
        "permit" => Action::Permit,
        "deny" => Action::Deny,
        a => {
            return Err(format!(
                "bad action '{a}' (expected permit, deny or default)"
            ))
        }
    };
    let mut rule = Rule::new(action);
    rule.proto = match expect(&mut tokens, "protocol")? {
        "any" => None,
        p => Some(protocol::from_name(p).ok_or_else(|| {
            format!("bad protocol '{p}' (expected tcp, udp, icmp, any or 0..=255)")
        })?),
    };
    rule.src = parse_addr(expect(&mut tokens, "source prefix")?)?;
    rule.dst = parse_addr(expect(&mut tokens, "destination prefix")?)?;
    let (mut sport, mut dport) = (None, None);
    while let Some(keyword) = tokens.next() {
        let slot = match keyword {
            "sport" => &mut sport,
            "dport" => &mut dport,
            t => return Err(format!("unexpected token '{t}' (expected sport or dport)")),
        };
        if slot.is_some() {
            return Err(format!("duplicate '{keyword}'"));
        }
        *slot = Some(parse_ports(expect(
            &mut tokens,
            &format!("port range after '{keyword}'"),
        )?)?);
    }
    rule.sport = sport.unwrap_or(0..=u16::MAX);
    rule.dport = dport.unwrap_or(0..=u16::MAX);
    Ok(rule)
}

fn expect<'a>(tokens: &mut impl Iterator<Item = &'a str>, what: &str) -> Result<&'a str, String> {
    tokens.next().ok_or_else(|| format!("missing {what}"))
}

fn parse_addr(tok: &str) -> Result<Option<Prefix>, String> {
    match tok {
        "any" => Ok(None),
        _ => tok
            .parse()
            .map(Some)
            .map_err(|why| format!("bad prefix '{tok}' ({why})")),
    }
}

fn parse_ports(tok: &str) -> Result<RangeInclusive<u16>, String> {
    let (lo, hi) = match tok {
        "any" => return Ok(0..=u16::MAX),
        _ => tok.split_once('-').unwrap_or((tok, tok)),
    };
    match (lo.parse::<u16>(), hi.parse::<u16>()) {
        (Ok(lo), Ok(hi)) if lo <= hi => Ok(lo..=hi),
        _ => Err(format!(
            "bad port range '{tok}' (expected any, N or N-M with N <= M <= 65535)"
        )),
    }
}

pub(crate) struct Firewall(pub(crate) RuleSet);

impl FunctionalOffload for Firewall {
    fn kind(&self) -> OffloadKind {
        OffloadKind::Firewall
    }

    fn process(&self, frame: &mut Vec<u8>, _meta: &mut FuncMeta) -> Result<(), DropReason> {
        let (tuple, _) = l4_payload(frame).ok_or(DropReason::Malformed)?;
        match self.0.evaluate(&tuple) {
            Action::Permit => Ok(()),
            Action::Deny => Err(DropReason::FirewallDeny),
        }
    }

    fn prepare(&self, _frame: &mut Vec<u8>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use nicsim_packet::ip::protocol::{TCP, UDP};

    fn tuple(src: &str, dst: &str, sport: u16, dport: u16, proto: u8) -> FiveTuple {
        FiveTuple {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            sport,
            dport,
            proto,
        }
    }

    #[test]
    fn parses_and_matches_first_rule_wins() {
        let set = RuleSet::parse(
            "# ssh and telnet from 10/8 are blocked\n\
             deny tcp 10.0.0.0/8 any sport any dport 22-23\n\
             permit udp any 192.168.1.0/24 dport 53   # dns\n\
             \n\
             deny 17 2001:db8::/32 any\n\
             permit any 10.1.2.3 any\n\
             default deny\n",
        )
        .unwrap();
        assert_eq!(set.rules.len(), 4);
        assert_eq!(set.default, Action::Deny);
        let eval = |s, d, sp, dp, p| set.evaluate(&tuple(s, d, sp, dp, p));
        assert_eq!(eval("10.9.8.7", "1.2.3.4", 999, 22, TCP), Action::Deny);
        assert_eq!(eval("10.9.8.7", "1.2.3.4", 999, 24, TCP), Action::Deny); // default
        assert_eq!(eval("10.1.2.3", "1.2.3.4", 999, 24, TCP), Action::Permit); // host rule
        assert_eq!(eval("10.1.2.3", "1.2.3.4", 999, 23, TCP), Action::Deny); // first rule wins
        assert_eq!(eval("8.8.8.8", "192.168.1.77", 5, 53, UDP), Action::Permit);
        assert_eq!(eval("8.8.8.8", "192.168.2.77", 5, 53, UDP), Action::Deny);
        assert_eq!(eval("2001:db8::1", "::1", 5, 53, UDP), Action::Deny);
        // IPv4 prefixes never match IPv6 addresses and vice versa.
        assert!(!"0.0.0.0/0"
            .parse::<Prefix>()
            .unwrap()
            .contains("::".parse().unwrap()));
        assert!("::/0"
            .parse::<Prefix>()
            .unwrap()
            .contains("ff02::1".parse().unwrap()));
    }

    #[test]
    fn builder_matches_parsed_rule() {
        let parsed = RuleSet::parse("deny tcp 10.0.0.0/8 any dport 22-23").unwrap();
        let built = Rule::new(Action::Deny)
            .proto(TCP)
            .src("10.0.0.0/8".parse().unwrap())
            .dport(22..=23);
        assert_eq!(parsed.rules, vec![built]);
        assert_eq!(RuleSet::parse("").unwrap(), RuleSet::default());
    }

    #[test]
    fn errors_name_line_and_token() {
        let cases = [
            (
                "permit any any any\n\n# c\ndeny tcp 10.0.0.0/33 any",
                "line 4: bad prefix '10.0.0.0/33' (prefix length must be 0..=32)",
            ),
            (
                "deny tcp ::/129 any",
                "line 1: bad prefix '::/129' (prefix length must be 0..=128)",
            ),
            (
                "deny tcp 10.0.0.x any",
                "line 1: bad prefix '10.0.0.x' (not an IPv4 or IPv6 address)",
            ),
            (
                "allow tcp any any",
                "line 1: bad action 'allow' (expected permit, deny or default)",
            ),
            (
                "deny sctp any any",
                "line 1: bad protocol 'sctp' (expected tcp, udp, icmp, any or 0..=255)",
            ),
            ("deny tcp any", "line 1: missing destination prefix"),
            (
                "deny tcp any any dport 30-20",
                "line 1: bad port range '30-20' (expected any, N or N-M with N <= M <= 65535)",
            ),
            (
                "deny tcp any any dport",
                "line 1: missing port range after 'dport'",
            ),
            (
                "deny tcp any any dport 1 dport 2",
                "line 1: duplicate 'dport'",
            ),
            (
                "deny tcp any any port 1",
                "line 1: unexpected token 'port' (expected sport or dport)",
            ),
            (
                "default deny\ndefault permit",
                "line 2: duplicate 'default'",
            ),
            (
                "default drop",
                "line 1: bad action 'drop' (expected permit or deny)",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                RuleSet::parse(text).unwrap_err().to_string(),
                want,
                "{text:?}"
            );
        }
    }
}
