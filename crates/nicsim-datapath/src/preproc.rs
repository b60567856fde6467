//! The Pre-Processor's match-action table: ternary rules on header fields → flow type, and the
//! flow-type → offload-chain table that an SDN controller may rewrite at run time.

use crate::config::{MatchCfg, PortSpec};
use crate::packet::HeaderKey;

use nicsim_packet::ip::addr_bits;
pub use nicsim_packet::ip::Prefix;

/// A prefix from the config, the message naming the text.
fn parse_prefix(s: &str) -> Result<Prefix, String> {
    s.parse().map_err(|reason| format!("'{s}': {reason}"))
}

fn parse_ports(p: &PortSpec) -> Result<(u16, u16), String> {
    match p {
        PortSpec::One(n) => Ok((*n, *n)),
        PortSpec::Range(s) => {
            let bad = || format!("'{s}' is not a port or a range like 1000-2000");
            let (a, b) = s.split_once('-').ok_or_else(bad)?;
            let (a, b): (u16, u16) = (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            );
            if a > b {
                return Err(bad());
            }
            Ok((a, b))
        }
    }
}

/// One ternary entry of the table. `None` fields are wildcards.
#[derive(Debug, Clone, Default)]
pub struct Rule {
    /// Source prefix.
    pub src: Option<Prefix>,
    /// Destination prefix.
    pub dst: Option<Prefix>,
    /// Source port range, both ends included.
    pub sport: Option<(u16, u16)>,
    /// Destination port range, both ends included.
    pub dport: Option<(u16, u16)>,
    /// IP protocol number.
    pub proto: Option<u8>,
    /// Type-of-service byte.
    pub tos: Option<u8>,
    /// VLAN id.
    pub vlan: Option<u16>,
}

impl Rule {
    /// Build from config; an error is (key, message).
    pub fn from_cfg(m: &MatchCfg) -> Result<Rule, (&'static str, String)> {
        Ok(Rule {
            src: m
                .src
                .as_deref()
                .map(parse_prefix)
                .transpose()
                .map_err(|e| ("src", e))?,
            dst: m
                .dst
                .as_deref()
                .map(parse_prefix)
                .transpose()
                .map_err(|e| ("dst", e))?,
            sport: m
                .sport
                .as_ref()
                .map(parse_ports)
                .transpose()
                .map_err(|e| ("sport", e))?,
            dport: m
                .dport
                .as_ref()
                .map(parse_ports)
                .transpose()
                .map_err(|e| ("dport", e))?,
            proto: m
                .proto
                .as_deref()
                .map(crate::traffic::parse_proto)
                .transpose()
                .map_err(|e| ("proto", e))?,
            tos: m.tos,
            vlan: m.vlan,
        })
    }
    /// Exact match on a flow's generated header fields.
    pub fn exact(h: &HeaderKey) -> Rule {
        Rule {
            src: Some(Prefix::exact(h.src)),
            dst: Some(Prefix::exact(h.dst)),
            sport: Some((h.sport, h.sport)),
            dport: Some((h.dport, h.dport)),
            proto: Some(h.proto),
            tos: None,
            vlan: h.vlan,
        }
    }
    /// Whether header fields `h` match this rule.
    #[inline]
    pub fn matches(&self, h: &HeaderKey) -> bool {
        self.matches_with(h, addr_bits(h.src), addr_bits(h.dst))
    }
    /// [`Rule::matches`] with `h`'s addresses already in their [`addr_bits`] form (a lookup
    /// converts them once for all rules); the cheap scalar fields are compared first.
    #[inline]
    fn matches_with(&self, h: &HeaderKey, src: (bool, u128), dst: (bool, u128)) -> bool {
        self.dport.is_none_or(|(a, b)| (a..=b).contains(&h.dport))
            && self.sport.is_none_or(|(a, b)| (a..=b).contains(&h.sport))
            && self.proto.is_none_or(|p| p == h.proto)
            && self.tos.is_none_or(|t| t == h.tos)
            && self.vlan.is_none_or(|v| Some(v) == h.vlan)
            && self.src.is_none_or(|p| p.contains_bits(src))
            && self.dst.is_none_or(|p| p.contains_bits(dst))
    }
}

/// Rules in priority order, each naming the flow type it assigns.
#[derive(Debug, Clone, Default)]
pub struct MatchTable {
    /// The rules, first match wins, each with the flow type it assigns.
    pub rules: Vec<(Rule, u16)>,
}

impl MatchTable {
    /// The flow type of the first matching rule.
    #[inline]
    pub fn lookup(&self, h: &HeaderKey) -> Option<u16> {
        let (src, dst) = (addr_bits(h.src), addr_bits(h.dst));
        self.rules
            .iter()
            .find(|(r, _)| r.matches_with(h, src, dst))
            .map(|(_, f)| *f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(src: &str, dport: u16) -> HeaderKey {
        HeaderKey {
            src: src.parse().unwrap(),
            dst: "10.0.1.1".parse().unwrap(),
            sport: 1,
            dport,
            proto: 17,
            tos: 0,
            vlan: None,
        }
    }

    #[test]
    fn first_match_wins_with_prefixes_and_ranges() {
        let m1 = MatchCfg {
            src: Some("10.0.0.0/8".into()),
            dport: Some(PortSpec::Range("100-200".into())),
            ..Default::default()
        };
        let t = MatchTable {
            rules: vec![(Rule::from_cfg(&m1).unwrap(), 0), (Rule::default(), 1)],
        };
        assert_eq!(t.lookup(&key("10.9.9.9", 150)), Some(0));
        assert_eq!(t.lookup(&key("11.0.0.1", 150)), Some(1));
        assert_eq!(t.lookup(&key("10.0.0.1", 201)), Some(1));
        assert!(parse_prefix("10.0.0.0/33").is_err());
        assert!(parse_prefix("2001:db8::/32")
            .unwrap()
            .contains("2001:db8::1".parse().unwrap()));
    }
}
