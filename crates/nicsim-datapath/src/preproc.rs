//! The Pre-Processor's match-action table: ternary rules on header fields → flow type, and the
//! flow-type → offload-chain table that an SDN controller may rewrite at run time.

use std::net::IpAddr;

use crate::config::{MatchCfg, PortSpec};
use crate::packet::HeaderKey;

/// An address prefix as (value, mask) over 128 bits; IPv4 lives in the low 32 bits with `v6 = false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    v6: bool,
    value: u128,
    mask: u128,
}

fn addr_bits(a: &IpAddr) -> (bool, u128) {
    match a {
        IpAddr::V4(v) => (false, u32::from(*v) as u128),
        IpAddr::V6(v) => (true, u128::from(*v)),
    }
}

impl Prefix {
    pub fn parse(s: &str) -> Result<Prefix, String> {
        let (a, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("'{s}' is not an address or prefix"))?;
        let (v6, value) = addr_bits(&addr);
        let bits = if v6 { 128 } else { 32 };
        let len: u32 = match len {
            Some(l) => l
                .parse()
                .ok()
                .filter(|&n| n <= bits)
                .ok_or_else(|| format!("bad prefix length in '{s}' (0..={bits})"))?,
            None => bits,
        };
        let mask = if len == 0 {
            0
        } else {
            (!0u128 >> (128 - bits)) & !((1u128 << (bits - len)) - 1)
        };
        Ok(Prefix {
            v6,
            value: value & mask,
            mask,
        })
    }
    pub fn exact(a: &IpAddr) -> Prefix {
        let (v6, value) = addr_bits(a);
        Prefix {
            v6,
            value,
            mask: if v6 { !0 } else { u32::MAX as u128 },
        }
    }
    #[inline]
    pub fn matches(&self, a: &IpAddr) -> bool {
        self.matches_bits(addr_bits(a))
    }
    /// [`Prefix::matches`] on an address already in its [`addr_bits`] form.
    #[inline]
    fn matches_bits(&self, (v6, x): (bool, u128)) -> bool {
        v6 == self.v6 && x & self.mask == self.value
    }
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
    pub src: Option<Prefix>,
    pub dst: Option<Prefix>,
    pub sport: Option<(u16, u16)>,
    pub dport: Option<(u16, u16)>,
    pub proto: Option<u8>,
    pub tos: Option<u8>,
    pub vlan: Option<u16>,
}

impl Rule {
    /// Build from config; an error is (key, message).
    pub fn from_cfg(m: &MatchCfg) -> Result<Rule, (&'static str, String)> {
        Ok(Rule {
            src: m
                .src
                .as_deref()
                .map(Prefix::parse)
                .transpose()
                .map_err(|e| ("src", e))?,
            dst: m
                .dst
                .as_deref()
                .map(Prefix::parse)
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
            src: Some(Prefix::exact(&h.src)),
            dst: Some(Prefix::exact(&h.dst)),
            sport: Some((h.sport, h.sport)),
            dport: Some((h.dport, h.dport)),
            proto: Some(h.proto),
            tos: None,
            vlan: h.vlan,
        }
    }
    #[inline]
    pub fn matches(&self, h: &HeaderKey) -> bool {
        self.matches_with(h, addr_bits(&h.src), addr_bits(&h.dst))
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
            && self.src.is_none_or(|p| p.matches_bits(src))
            && self.dst.is_none_or(|p| p.matches_bits(dst))
    }
}

/// Rules in priority order, each naming the flow type it assigns.
#[derive(Debug, Clone, Default)]
pub struct MatchTable {
    pub rules: Vec<(Rule, u16)>,
}

impl MatchTable {
    /// The flow type of the first matching rule.
    #[inline]
    pub fn lookup(&self, h: &HeaderKey) -> Option<u16> {
        let (src, dst) = (addr_bits(&h.src), addr_bits(&h.dst));
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
        assert!(Prefix::parse("10.0.0.0/33").is_err());
        assert!(Prefix::parse("2001:db8::/32")
            .unwrap()
            .matches(&"2001:db8::1".parse().unwrap()));
    }
}
