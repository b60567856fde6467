//! Ternary masks: a value and a care mask, as the FPGA NIC stores its routing (32 bits on the
//! destination address) and classification (80 bits: ToS, source, destination, protocol)
//! entries. A key matches when it equals the value on every bit the mask cares about; tables
//! are scanned in priority order and the first match wins.

use std::net::Ipv4Addr;

/// A 32-bit ternary entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ternary {
    /// Bits a key must have where `mask` is set.
    pub value: u32,
    /// Bits that must match (1) or are don't-care (0).
    pub mask: u32,
}

impl Ternary {
    /// Matches every key.
    pub const ANY: Ternary = Ternary { value: 0, mask: 0 };
    /// `key` equals the value on every bit of the mask.
    #[inline]
    pub fn matches(&self, key: u32) -> bool {
        key & self.mask == self.value
    }
    /// Some key matches both.
    pub fn overlaps(&self, o: &Ternary) -> bool {
        let both = self.mask & o.mask;
        self.value & both == o.value & both
    }
}

/// An 80-bit classification entry over ToS (8) | source (32) | destination (32) | protocol (8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ternary80 {
    /// Bits a key must have where `mask` is set (layout of [`class_key`]).
    pub value: u128,
    /// Bits that must match (1) or are don't-care (0).
    pub mask: u128,
}

/// The 80-bit classification key of a packet.
#[inline]
pub fn class_key(tos: u8, src: u32, dst: u32, proto: u8) -> u128 {
    (tos as u128) << 72 | (src as u128) << 40 | (dst as u128) << 8 | proto as u128
}

impl Ternary80 {
    /// An entry from (value, mask) pairs of the ToS and protocol and ternaries on the addresses.
    pub fn new(tos: (u8, u8), src: Ternary, dst: Ternary, proto: (u8, u8)) -> Ternary80 {
        Ternary80 {
            value: class_key(tos.0, src.value, dst.value, proto.0),
            mask: class_key(tos.1, src.mask, dst.mask, proto.1),
        }
    }
    /// `key` equals the value on every bit of the mask.
    #[inline]
    pub fn matches(&self, key: u128) -> bool {
        key & self.mask == self.value
    }
}

/// `*`, an address (exact), `a.b.c.d/len` (prefix) or `a.b.c.d/m.m.m.m` (any mask).
pub fn parse_ip_ternary(s: &str) -> Result<Ternary, String> {
    let s = s.trim();
    if s == "*" {
        return Ok(Ternary::ANY);
    }
    let (addr, mask) = match s.split_once('/') {
        None => (s, u32::MAX),
        Some((a, m)) => {
            let mask = if m.contains('.') {
                u32::from(
                    m.parse::<Ipv4Addr>()
                        .map_err(|_| format!("'{m}' is not a mask (a.b.c.d or a length)"))?,
                )
            } else {
                let len: u32 = m
                    .parse()
                    .ok()
                    .filter(|l| *l <= 32)
                    .ok_or_else(|| format!("'{m}' is not a prefix length 0..=32"))?;
                if len == 0 {
                    0
                } else {
                    u32::MAX << (32 - len)
                }
            };
            (a, mask)
        }
    };
    let a: Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("'{addr}' is not an IPv4 address"))?;
    Ok(Ternary {
        value: u32::from(a) & mask,
        mask,
    })
}

fn parse_u8(s: &str) -> Result<u8, String> {
    let s = s.trim();
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u8::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    };
    v.ok_or_else(|| format!("'{s}' is not a byte (0..=255 or 0x00..=0xff)"))
}

/// `*`, a byte (exact) or `value/mask`, each decimal or 0x-hex. Returns (value, mask).
pub fn parse_u8_ternary(s: &str) -> Result<(u8, u8), String> {
    let s = s.trim();
    if s == "*" {
        return Ok((0, 0));
    }
    match s.split_once('/') {
        None => Ok((parse_u8(s)?, 0xff)),
        Some((v, m)) => {
            let (v, m) = (parse_u8(v)?, parse_u8(m)?);
            Ok((v & m, m))
        }
    }
}

/// Like [`parse_u8_ternary`], also accepting `tcp`, `udp` and `icmp`.
pub fn parse_proto_ternary(s: &str) -> Result<(u8, u8), String> {
    match crate::config::parse_proto(s.trim()) {
        Ok(p) if !s.contains('/') => Ok((p, 0xff)),
        _ => parse_u8_ternary(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_parse_and_match() {
        let t = parse_ip_ternary("10.0.1.0/24").unwrap();
        assert!(t.matches(u32::from(Ipv4Addr::new(10, 0, 1, 77))));
        assert!(!t.matches(u32::from(Ipv4Addr::new(10, 0, 2, 1))));
        let t = parse_ip_ternary("10.0.0.5/255.0.0.255").unwrap();
        assert!(t.matches(u32::from(Ipv4Addr::new(10, 9, 9, 5))));
        assert!(!t.matches(u32::from(Ipv4Addr::new(10, 9, 9, 6))));
        assert_eq!(parse_ip_ternary("*").unwrap(), Ternary::ANY);
        assert!(parse_ip_ternary("10.0.0.0/33").is_err());
        assert!(parse_ip_ternary("10.0.0/8").is_err());
        assert_eq!(parse_u8_ternary("0xb8/0xfc").unwrap(), (0xb8, 0xfc));
        assert_eq!(parse_proto_ternary("udp").unwrap(), (17, 0xff));
        assert!(parse_u8_ternary("256").is_err());
        let a = parse_ip_ternary("10.0.0.0/16").unwrap();
        let b = parse_ip_ternary("10.0.1.0/24").unwrap();
        let c = parse_ip_ternary("10.1.0.0/16").unwrap();
        assert!(a.overlaps(&b) && !a.overlaps(&c));
        let k = Ternary80::new((0xb8, 0xff), Ternary::ANY, b, (17, 0xff));
        assert!(k.matches(class_key(
            0xb8,
            1,
            u32::from(Ipv4Addr::new(10, 0, 1, 3)),
            17
        )));
        assert!(!k.matches(class_key(0, 1, u32::from(Ipv4Addr::new(10, 0, 1, 3)), 17)));
    }
}
