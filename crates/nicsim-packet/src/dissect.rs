//! A frame as a protocol tree, layer by layer with each header's fields named as `tshark -V`
//! names them: Ethernet II, its 802.1Q/802.1ad tags, IPv4 or IPv6, TCP or UDP, then the payload
//! (what `nicsim xdp analyze` prints of its example packet). The structure is [`crate::parse`]'s
//! (lengths checked as a NIC checks them); the fields are read from the header views at the
//! offsets it found. A frame it refuses gives the layers before the one refused, and the error.
//!
//! Lenient as tshark is (Wireshark 4.0's `packet-ip.c`, `packet-ipv6.c`, `packet-udp.c`,
//! `packet-tcp.c`): an IPv4 total length of 0 (presumed TCP segmentation offload), an IPv4 or
//! IPv6 length past the frame's end and a UDP length past the IP payload's are shown as they are,
//! with an `Expert Info` field saying what is wrong, and decoding goes on with the bytes there
//! are; a header tshark stops at (IPv4 version not 4, IHL below 5, total length below the
//! header's; IPv6 version not 6; TCP data offset below 5; UDP length below 8) is shown with its
//! fields and an `Expert Info` field, and the error. An MPLS label stack is shown entry by
//! entry, then the IPv4 or IPv6 packet after it.

use crate::ip::protocol;
use crate::{ethernet, ipv4, ipv6, parse, tcp, udp, Layer as ErrLayer, ParseError};

/// One field of a layer: its name and its value as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name (`Source Address`, `Time to Live`, …).
    pub name: &'static str,
    /// Its value (`10.0.0.1`, `64`, `0x0800 (IPv4)`, …).
    pub value: String,
}

/// One layer of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// The protocol as tshark names it (`Ethernet II`, `Internet Protocol Version 4`, …).
    pub name: &'static str,
    /// Where its header starts in the frame.
    pub offset: usize,
    /// Its header's bytes (the payload's, for `Data`).
    pub len: usize,
    /// Its fields, in header order.
    pub fields: Vec<Field>,
}

/// What [`dissect`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dissection {
    /// The layers, outermost first.
    pub layers: Vec<Layer>,
    /// Why the frame could not be parsed further, when it could not.
    pub error: Option<ParseError>,
}

/// How many payload bytes the `Data` layer shows.
pub const DATA_SHOWN_BYTES: usize = 32;

fn field(name: &'static str, value: impl ToString) -> Field {
    Field {
        name,
        value: value.to_string(),
    }
}

fn mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// An EtherType with its protocol's name, as tshark shows it: `IPv4 (0x0800)`.
fn ethertype(t: u16) -> String {
    let name = match t {
        ethernet::ETHERTYPE_IPV4 => "IPv4",
        ethernet::ETHERTYPE_IPV6 => "IPv6",
        ethernet::ETHERTYPE_ARP => "ARP",
        ethernet::TPID_VLAN => "802.1Q Virtual LAN",
        ethernet::TPID_QINQ | ethernet::TPID_QINQ_LEGACY => "802.1ad Provider Bridge (Q-in-Q)",
        ETHERTYPE_MPLS => "MPLS label switched packet",
        ETHERTYPE_MPLS_MULTICAST => "MPLS multicast label switched packet",
        _ => "Unknown",
    };
    format!("{name} (0x{t:04x})")
}

/// An IP protocol number with its name: `TCP (6)`.
fn ip_protocol(p: u8) -> String {
    let name = match p {
        protocol::HOP_BY_HOP => "IPv6 Hop-by-Hop Option",
        protocol::ICMP => "ICMP",
        protocol::IPV4_IN_IP => "IPIP",
        protocol::TCP => "TCP",
        protocol::UDP => "UDP",
        protocol::IPV6_IN_IP => "IPv6",
        protocol::ROUTING => "Routing Header for IPv6",
        protocol::FRAGMENT => "Fragment Header for IPv6",
        protocol::GRE => "Generic Routing Encapsulation",
        protocol::ESP => "Encap Security Payload",
        protocol::AH => "Authentication Header",
        protocol::ICMPV6 => "ICMPv6",
        protocol::NO_NEXT_HEADER => "IPv6 No Next Header",
        protocol::DEST_OPTS => "Destination Options for IPv6",
        _ => "Unknown",
    };
    format!("{name} ({p})")
}

/// TCP flag bits with their names: `0x012 (SYN, ACK)`.
fn tcp_flags(f: u8) -> String {
    const NAMES: [&str; 8] = ["FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"];
    let set: Vec<&str> = (0..8)
        .filter(|i| f >> i & 1 == 1)
        .map(|i| NAMES[i])
        .collect();
    format!(
        "0x{f:03x} ({})",
        if set.is_empty() {
            "none".to_string()
        } else {
            set.join(", ")
        }
    )
}

fn ipv4_layer(v: &ipv4::Packet<&[u8]>, offset: usize) -> Layer {
    let mut flags = Vec::new();
    if v.dont_frag() {
        flags.push("Don't fragment");
    }
    if v.more_frags() {
        flags.push("More fragments");
    }
    let bits = u8::from(v.dont_frag()) << 1 | u8::from(v.more_frags());
    Layer {
        name: "Internet Protocol Version 4",
        offset,
        len: v.header_len(),
        fields: vec![
            field("Version", v.version()),
            field("Header Length", format!("{} bytes", v.header_len())),
            field("Differentiated Services Codepoint", v.dscp()),
            field("Explicit Congestion Notification", v.ecn()),
            field("Total Length", v.total_len()),
            field("Identification", format!("0x{0:04x} ({0})", v.ident())),
            field(
                "Flags",
                format!(
                    "0x{bits:x}{}",
                    flags.iter().map(|f| format!(", {f}")).collect::<String>()
                ),
            ),
            field("Fragment Offset", usize::from(v.frag_offset()) * 8),
            field("Time to Live", v.ttl()),
            field("Protocol", ip_protocol(v.protocol())),
            field("Header Checksum", format!("0x{:04x}", v.checksum())),
            field("Source Address", v.src_addr()),
            field("Destination Address", v.dst_addr()),
        ],
    }
}

fn ipv6_fields(v: &ipv6::Packet<&[u8]>) -> Vec<Field> {
    vec![
        field("Version", v.version()),
        field("Traffic Class", format!("0x{:02x}", v.traffic_class())),
        field("Flow Label", format!("0x{:05x}", v.flow_label())),
        field("Payload Length", v.payload_len()),
        field("Next Header", ip_protocol(v.next_header())),
        field("Hop Limit", v.hop_limit()),
        field("Source Address", v.src_addr()),
        field("Destination Address", v.dst_addr()),
    ]
}

fn tcp_layer(t: &tcp::Packet<&[u8]>, offset: usize) -> Layer {
    Layer {
        name: "Transmission Control Protocol",
        offset,
        len: t.header_len(),
        fields: vec![
            field("Source Port", t.src_port()),
            field("Destination Port", t.dst_port()),
            field("Sequence Number (raw)", t.seq_number()),
            field("Acknowledgment number (raw)", t.ack_number()),
            field("Header Length", format!("{} bytes", t.header_len())),
            field("Flags", tcp_flags(t.flags())),
            field("Window", t.window_len()),
            field("Checksum", format!("0x{:04x}", t.checksum())),
            field("Urgent Pointer", t.urgent_at()),
        ],
    }
}

fn udp_layer(frame: &[u8], offset: usize, sport: u16, dport: u16) -> Layer {
    Layer {
        name: "User Datagram Protocol",
        offset,
        len: udp::HEADER_LEN,
        fields: vec![
            field("Source Port", sport),
            field("Destination Port", dport),
            field("Length", crate::be16(frame, offset + 4)),
            field(
                "Checksum",
                format!("0x{:04x}", crate::be16(frame, offset + 6)),
            ),
        ],
    }
}

/// The name of tshark's warnings, a field of the layer they are about.
pub const EXPERT_INFO: &str = "Expert Info";

/// A length tshark tolerates, changed in the copy [`dissect`] decodes: the layer's offset, the
/// field, the value the frame holds, and tshark's warning.
struct Tolerated {
    layer: usize,
    name: &'static str,
    value: String,
    warning: String,
}

/// `frame` with the lengths tshark tolerates set to the bytes there are (see the module), and
/// what was changed.
fn tolerate(frame: &[u8]) -> (Vec<u8>, Vec<Tolerated>) {
    let mut f = frame.to_vec();
    let mut notes = Vec::new();
    let n = f.len();
    if n < ethernet::HEADER_LEN {
        return (f, notes);
    }
    let mut at = 12;
    for _ in 0..2 {
        if ethernet::is_tpid(crate::be16(&f, at)) && n >= at + 6 {
            at += ethernet::TAG_LEN;
        }
    }
    let l3 = at + 2;
    let (proto, l4, end) = match crate::be16(&f, at) {
        ethernet::ETHERTYPE_IPV4 => {
            let Some(v) = ipv4::Packet::new_header_only(&f[l3..]) else {
                return (f, notes);
            };
            let (hl, total, avail) = (v.header_len(), usize::from(v.total_len()), n - l3);
            if v.version() != 4 || hl < ipv4::HEADER_LEN || hl > avail {
                return (f, notes);
            }
            let (proto, whole) = (v.protocol(), v.frag_offset() == 0 && !v.more_frags());
            let fixed = avail.min(usize::from(u16::MAX));
            if total == 0 || (total > avail && total >= hl) {
                notes.push(Tolerated {
                    layer: l3,
                    name: "Total Length",
                    value: total.to_string(),
                    warning: if total == 0 {
                        format!("Total Length 0: {avail} bytes, presumed to be because of \"TCP segmentation offload\" (TSO)")
                    } else {
                        format!("IPv4 total length exceeds packet length ({avail} bytes)")
                    },
                });
                f[l3 + 2..l3 + 4].copy_from_slice(&(fixed as u16).to_be_bytes());
            }
            if !whole {
                return (f, notes);
            }
            (
                proto,
                l3 + hl,
                l3 + usize::from(crate::be16(&f, l3 + 2)).min(avail),
            )
        }
        ethernet::ETHERTYPE_IPV6 => {
            let Some(v) = ipv6::Packet::new_header_only(&f[l3..]) else {
                return (f, notes);
            };
            let (plen, avail) = (usize::from(v.payload_len()), n - l3 - ipv6::HEADER_LEN);
            if v.version() != 6 {
                return (f, notes);
            }
            let proto = v.next_header();
            if plen > avail {
                notes.push(Tolerated {
                    layer: l3,
                    name: "Payload Length",
                    value: plen.to_string(),
                    warning: format!("IPv6 payload length exceeds framing length ({avail} bytes)"),
                });
                f[l3 + 4..l3 + 6].copy_from_slice(&(avail as u16).to_be_bytes());
            }
            let l4 = l3 + ipv6::HEADER_LEN;
            (proto, l4, l4 + plen.min(avail))
        }
        _ => return (f, notes),
    };
    if proto == protocol::UDP && l4 + udp::HEADER_LEN <= end {
        let len = usize::from(crate::be16(&f, l4 + 4));
        if len > end - l4 {
            notes.push(Tolerated {
                layer: l4,
                name: "Length",
                value: len.to_string(),
                warning: format!("Length {len} (bogus, payload length {})", end - l4),
            });
            f[l4 + 4..l4 + 6].copy_from_slice(&((end - l4) as u16).to_be_bytes());
        }
    }
    (f, notes)
}

/// The header tshark stops at, shown with its fields and tshark's warning (see the module):
/// the layer refused by `err`, when it is one of those.
fn bogus(frame: &[u8], err: &ParseError) -> Option<Layer> {
    let ParseError::Malformed { layer, offset, .. } = *err else {
        return None;
    };
    let at = frame.get(offset..)?;
    let warn = |w: String| field(EXPERT_INFO, w);
    match layer {
        ErrLayer::Ipv4 => {
            let v = ipv4::Packet::new_header_only(at)?;
            let mut l = ipv4_layer(&v, offset);
            l.len = ipv4::HEADER_LEN;
            let (hl, total) = (v.header_len(), v.total_len());
            l.fields.push(warn(if v.version() != 4 {
                format!("Bogus IPv4 version ({}, must be 4)", v.version())
            } else if hl < ipv4::HEADER_LEN {
                format!("Bogus IP header length ({hl}, must be at least 20)")
            } else {
                format!("Bogus IP length ({total}, less than header length {hl})")
            }));
            Some(l)
        }
        ErrLayer::Ipv6 => {
            let v = ipv6::Packet::new_header_only(at)?;
            let mut fields = ipv6_fields(&v);
            fields.push(warn(format!(
                "Bogus IPv6 version ({}, must be 6)",
                v.version()
            )));
            Some(Layer {
                name: "Internet Protocol Version 6",
                offset,
                len: ipv6::HEADER_LEN,
                fields,
            })
        }
        ErrLayer::Tcp => {
            let t = tcp::Packet::new_header_only(at)?;
            let mut l = tcp_layer(&t, offset);
            l.len = tcp::HEADER_LEN;
            l.fields.push(warn(format!(
                "Bogus TCP header length ({}, must be at least 20)",
                t.header_len()
            )));
            Some(l)
        }
        ErrLayer::Udp if at.len() >= udp::HEADER_LEN => {
            let mut l = udp_layer(frame, offset, crate::be16(at, 0), crate::be16(at, 2));
            l.fields.push(warn(format!(
                "Length {} (bogus, must be >= 8)",
                crate::be16(at, 4)
            )));
            Some(l)
        }
        _ => None,
    }
}

/// EtherType of MPLS (RFC 3032): a label stack, then what tshark decodes after it.
const ETHERTYPE_MPLS: u16 = 0x8847;
/// EtherType of multicast MPLS.
const ETHERTYPE_MPLS_MULTICAST: u16 = 0x8848;
/// Bytes of one label stack entry.
const MPLS_ENTRY_BYTES: usize = 4;
/// Label stack entries shown at most.
const MAX_MPLS_LABELS: usize = 16;

/// An MPLS frame as tshark shows it: the Ethernet header and tags, a layer per label stack
/// entry, then IPv4 or IPv6 by the first nibble after the bottom of the stack (decoded as
/// [`lenient`] decodes a frame, at their offsets), or the rest as data. `None` for a frame that
/// is not MPLS or whose stack has no bottom within the frame (shown as data, as before).
fn mpls(frame: &[u8]) -> Option<Dissection> {
    let n = frame.len();
    let mut at = 12;
    for _ in 0..2 {
        if n >= at + 6 && ethernet::is_tpid(crate::be16(frame, at)) {
            at += ethernet::TAG_LEN;
        }
    }
    if n < at + 2 || ![ETHERTYPE_MPLS, ETHERTYPE_MPLS_MULTICAST].contains(&crate::be16(frame, at)) {
        return None;
    }
    let mut layers: Vec<Layer> = strict(frame)
        .layers
        .into_iter()
        .filter(|l| l.offset < at + 2)
        .collect();
    let mut off = at + 2;
    let mut bottom = false;
    while !bottom && layers.len() < MAX_MPLS_LABELS + 3 && off + MPLS_ENTRY_BYTES <= n {
        let e = u32::from_be_bytes([frame[off], frame[off + 1], frame[off + 2], frame[off + 3]]);
        bottom = e >> 8 & 1 == 1;
        layers.push(Layer {
            name: "MultiProtocol Label Switching Header",
            offset: off,
            len: MPLS_ENTRY_BYTES,
            fields: vec![
                field("MPLS Label", e >> 12),
                field("MPLS Experimental Bits", e >> 9 & 7),
                field("MPLS Bottom Of Label Stack", e >> 8 & 1),
                field("MPLS TTL", e & 0xff),
            ],
        });
        off += MPLS_ENTRY_BYTES;
    }
    if !bottom {
        return None;
    }
    let inner = match frame.get(off).map(|b| b >> 4) {
        Some(4) => ethernet::ETHERTYPE_IPV4,
        Some(6) => ethernet::ETHERTYPE_IPV6,
        _ => {
            if off < n {
                layers.push(Layer {
                    name: "Data",
                    offset: off,
                    len: n - off,
                    fields: vec![field("Length", n - off)],
                });
            }
            return Some(Dissection {
                layers,
                error: None,
            });
        }
    };
    // The payload as an Ethernet frame of its own, its offsets moved back to the frame's.
    let mut own = vec![0u8; 12];
    own.extend_from_slice(&inner.to_be_bytes());
    own.extend_from_slice(&frame[off..]);
    let shift = off - ethernet::HEADER_LEN;
    let d = lenient(&own);
    layers.extend(d.layers.into_iter().skip(1).map(|mut l| {
        l.offset += shift;
        l
    }));
    Some(Dissection {
        layers,
        error: d.error.map(|e| e.shifted(shift)),
    })
}

/// The frame's layers (see the module).
pub fn dissect(frame: &[u8]) -> Dissection {
    mpls(frame).unwrap_or_else(|| lenient(frame))
}

/// [`dissect`] of a frame that is not MPLS.
fn lenient(frame: &[u8]) -> Dissection {
    let (view, notes) = tolerate(frame);
    let mut d = strict(&view);
    for t in notes {
        let Some(l) = d
            .layers
            .iter_mut()
            .find(|l| l.offset == t.layer && l.name != "Padding")
        else {
            continue;
        };
        if let Some(k) = l.fields.iter().position(|f| f.name == t.name) {
            l.fields[k].value = t.value;
            l.fields.insert(k + 1, field(EXPERT_INFO, t.warning));
        }
    }
    if let Some(l) = d.error.as_ref().and_then(|e| bogus(frame, e)) {
        d.layers.push(l);
    }
    d
}

/// The frame's layers as the parser finds them (lengths checked).
fn strict(frame: &[u8]) -> Dissection {
    let mut layers = Vec::new();
    let eth = match ethernet::Packet::new_checked(frame) {
        Ok(p) => p,
        Err(e) => {
            return Dissection {
                layers,
                error: Some(e),
            }
        }
    };
    // The tags as the parser reads them (at most two; a third is its error, below).
    let mut tags = Vec::new();
    let mut type_at = 12;
    let mut next = eth.ethertype();
    while ethernet::is_tpid(next) && tags.len() < 2 && frame.len() >= type_at + 6 {
        tags.push((
            type_at,
            next,
            crate::be16(frame, type_at + 2),
            crate::be16(frame, type_at + 4),
        ));
        type_at += ethernet::TAG_LEN;
        next = crate::be16(frame, type_at);
    }
    layers.push(Layer {
        name: "Ethernet II",
        offset: 0,
        len: ethernet::HEADER_LEN,
        fields: vec![
            field("Destination", mac(eth.dst_addr())),
            field("Source", mac(eth.src_addr())),
            field("Type", ethertype(eth.ethertype())),
        ],
    });
    for &(at, tpid, tci, inner) in &tags {
        layers.push(Layer {
            name: if tpid == ethernet::TPID_VLAN {
                "802.1Q Virtual LAN"
            } else {
                "802.1ad Provider Bridge (Q-in-Q)"
            },
            offset: at,
            len: ethernet::TAG_LEN,
            fields: vec![
                field("Priority", tci >> 13),
                field("DEI", tci >> 12 & 1),
                field("ID", tci & 0x0fff),
                field("Type", ethertype(inner)),
            ],
        });
    }
    // A transport header the parser refuses: the IP header before it is still shown.
    let (p, refused) = match parse(frame) {
        Ok(p) => (p, None),
        Err(e) => match e {
            ParseError::Malformed {
                layer: ErrLayer::Tcp | ErrLayer::Udp,
                ..
            }
            | ParseError::Truncated {
                layer: ErrLayer::Tcp | ErrLayer::Udp,
                ..
            } => match crate::parse::parse_network_only(frame) {
                Ok(p) => (p, Some(e)),
                Err(_) => {
                    return Dissection {
                        layers,
                        error: Some(e),
                    }
                }
            },
            _ => {
                return Dissection {
                    layers,
                    error: Some(e),
                }
            }
        },
    };
    let l3 = &frame[p.l3_offset..];
    if let Some(ip) = p.ip {
        if ip.src.is_ipv4() {
            let v = ipv4::Packet::new_checked(l3).expect("the parser read this header");
            layers.push(ipv4_layer(&v, p.l3_offset));
        } else {
            let v = ipv6::Packet::new_checked(l3).expect("the parser read this header");
            let mut fields = ipv6_fields(&v);
            if v.next_header() != ip.proto {
                fields.push(field(
                    "Upper Layer (after extension headers)",
                    ip_protocol(ip.proto),
                ));
            }
            layers.push(Layer {
                name: "Internet Protocol Version 6",
                offset: p.l3_offset,
                len: p.l4_offset.unwrap_or(p.payload_offset) - p.l3_offset,
                fields,
            });
        }
    }
    if refused.is_some() {
        return Dissection {
            layers,
            error: refused,
        };
    }
    if let (Some(at), Some(ip)) = (p.l4_offset, p.ip) {
        let l4 = &frame[at..];
        match (ip.proto, p.l4) {
            (protocol::TCP, Some(_)) => {
                let t = tcp::Packet::new_checked(l4).expect("the parser read this header");
                layers.push(tcp_layer(&t, at));
            }
            (protocol::UDP, Some(l)) => {
                // The header's own fields (a first fragment's length covers the datagram).
                layers.push(udp_layer(frame, at, l.sport, l.dport));
            }
            _ => {}
        }
    }
    // The packet ends where its IP length says; bytes after it are the frame's padding (or FCS).
    let end = match p.ip {
        Some(ip) => (p.l3_offset + ip.total_len).min(frame.len()),
        None => frame.len(),
    };
    let payload = &frame[p.payload_offset.min(end)..end];
    if !payload.is_empty() {
        let shown = &payload[..payload.len().min(DATA_SHOWN_BYTES)];
        let mut hex: Vec<String> = shown.iter().map(|b| format!("{b:02x}")).collect();
        if payload.len() > shown.len() {
            hex.push(format!("… ({} more)", payload.len() - shown.len()));
        }
        let name = match (p.ip, p.l4) {
            (Some(ip), None) if p.l4_offset.is_some() => match ip.proto {
                protocol::ICMP => "Internet Control Message Protocol",
                protocol::ICMPV6 => "Internet Control Message Protocol v6",
                _ => "Data",
            },
            _ => "Data",
        };
        layers.push(Layer {
            name,
            offset: p.payload_offset,
            len: payload.len(),
            fields: vec![field("Length", payload.len()), field("Data", hex.join(" "))],
        });
    }
    if end < frame.len() {
        layers.push(Layer {
            name: "Padding",
            offset: end,
            len: frame.len() - end,
            fields: vec![field("Length", frame.len() - end)],
        });
    }
    Dissection {
        layers,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FrameSpec, L4Proto};

    fn names(d: &Dissection) -> Vec<&str> {
        d.layers.iter().map(|l| l.name).collect()
    }

    fn value<'a>(l: &'a Layer, name: &str) -> &'a str {
        &l.fields.iter().find(|f| f.name == name).unwrap().value
    }

    fn spec(src: [u8; 4], proto: L4Proto, vlan: Option<u16>) -> FrameSpec {
        FrameSpec {
            eth_src: [2, 0, 0, 0, 0, 1],
            eth_dst: [2, 0, 0, 0, 0, 2],
            vlan,
            src: src.into(),
            dst: [10, 0, 0, 2].into(),
            proto,
            sport: 1000,
            dport: 53,
            tos: 0,
            ttl: 64,
            tcp_seq: 7,
            tcp_ack: 9,
            tcp_flags: crate::tcp::flags::SYN | crate::tcp::flags::ACK,
        }
    }

    #[test]
    fn a_tagged_udp_frame_layer_by_layer() {
        // 64 bytes: 18 + 20 + 8, a payload of 14 (3 given, zeros after), and the 4-byte FCS.
        let frame = spec([10, 0, 0, 1], L4Proto::Udp, Some(7))
            .build(64, &[1, 2, 3])
            .unwrap();
        let d = dissect(&frame);
        assert_eq!(d.error, None);
        assert_eq!(
            names(&d),
            [
                "Ethernet II",
                "802.1Q Virtual LAN",
                "Internet Protocol Version 4",
                "User Datagram Protocol",
                "Data",
                "Padding"
            ]
        );
        assert_eq!(value(&d.layers[0], "Type"), "802.1Q Virtual LAN (0x8100)");
        assert_eq!(value(&d.layers[1], "ID"), "7");
        assert_eq!(value(&d.layers[1], "Type"), "IPv4 (0x0800)");
        assert_eq!(value(&d.layers[2], "Protocol"), "UDP (17)");
        assert_eq!(value(&d.layers[2], "Source Address"), "10.0.0.1");
        assert_eq!(value(&d.layers[2], "Time to Live"), "64");
        assert_eq!(value(&d.layers[3], "Destination Port"), "53");
        assert_eq!(value(&d.layers[3], "Length"), "22");
        assert_eq!(value(&d.layers[4], "Length"), "14");
        assert!(value(&d.layers[4], "Data").starts_with("01 02 03 00"));
        assert_eq!(value(&d.layers[5], "Length"), "4");
    }

    #[test]
    fn a_tcp_frame_names_its_flags() {
        let frame = spec([10, 0, 0, 1], L4Proto::Tcp, None)
            .build(80, b"hello")
            .unwrap();
        let d = dissect(&frame);
        let t = &d.layers[2];
        assert_eq!(t.name, "Transmission Control Protocol");
        assert_eq!(value(t, "Flags"), "0x012 (SYN, ACK)");
        assert_eq!(value(t, "Sequence Number (raw)"), "7");
        assert_eq!(d.layers.last().unwrap().name, "Padding");
    }

    #[test]
    fn a_truncated_header_keeps_the_layers_before_it() {
        let mut frame = spec([10, 0, 0, 1], L4Proto::Udp, None)
            .build(64, &[])
            .unwrap();
        frame.truncate(20); // 6 bytes of the IPv4 header
        let d = dissect(&frame);
        assert_eq!(names(&d), ["Ethernet II"]);
        assert!(d.error.is_some());
        assert_eq!(dissect(&[0; 5]).layers, []);
    }

    fn expert(l: &Layer) -> Vec<&str> {
        l.fields
            .iter()
            .filter(|f| f.name == EXPERT_INFO)
            .map(|f| f.value.as_str())
            .collect()
    }

    /// A 64-byte UDP frame without FCS: Ethernet 14, IPv4 20 (at 14), UDP 8 (at 34), 22 more.
    fn udp64() -> Vec<u8> {
        let mut f = spec([10, 0, 0, 1], L4Proto::Udp, None)
            .build(68, &[])
            .unwrap();
        f.truncate(64);
        f
    }

    #[test]
    fn a_bogus_ipv4_header_is_shown_with_tsharks_warning_where_tshark_stops() {
        for (byte0, total, warning) in [
            (0x05, 50, "Bogus IPv4 version (0, must be 4)"),
            (0x40, 50, "Bogus IP header length (0, must be at least 20)"),
            (0x45, 10, "Bogus IP length (10, less than header length 20)"),
        ] {
            let mut f = udp64();
            f[14] = byte0;
            f[16..18].copy_from_slice(&u16::to_be_bytes(total));
            let d = dissect(&f);
            assert_eq!(names(&d), ["Ethernet II", "Internet Protocol Version 4"]);
            let ip = &d.layers[1];
            assert_eq!(expert(ip), [warning]);
            assert_eq!(value(ip, "Source Address"), "10.0.0.1");
            assert_eq!(ip.len, 20);
            assert!(d.error.is_some(), "decoding stops where tshark's does");
        }
        // IPv6 version 0, and TCP's data offset 0 and UDP's length 3, likewise.
        let mut f = vec![0u8; 80];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        let d = dissect(&f);
        assert_eq!(expert(&d.layers[1]), ["Bogus IPv6 version (0, must be 6)"]);
        let mut f = spec([10, 0, 0, 1], L4Proto::Tcp, None)
            .build(64, &[])
            .unwrap();
        f[46] = 0;
        let d = dissect(&f);
        assert_eq!(names(&d)[2], "Transmission Control Protocol");
        assert_eq!(
            expert(&d.layers[2]),
            ["Bogus TCP header length (0, must be at least 20)"]
        );
        let mut f = udp64();
        f[38..40].copy_from_slice(&[0, 3]);
        let d = dissect(&f);
        assert_eq!(expert(&d.layers[2]), ["Length 3 (bogus, must be >= 8)"]);
    }

    #[test]
    fn lengths_tshark_tolerates_are_warned_about_and_decoding_goes_on() {
        // Total length 0 (TSO): the frame's 50 bytes.
        let mut f = udp64();
        f[16..18].copy_from_slice(&[0, 0]);
        let d = dissect(&f);
        assert_eq!(d.error, None);
        assert_eq!(
            names(&d),
            [
                "Ethernet II",
                "Internet Protocol Version 4",
                "User Datagram Protocol",
                "Data"
            ]
        );
        assert_eq!(value(&d.layers[1], "Total Length"), "0");
        assert!(expert(&d.layers[1])[0].contains("TCP segmentation offload"));
        // Past the frame's end: the bytes there are.
        f[16..18].copy_from_slice(&[0, 200]);
        let d = dissect(&f);
        assert_eq!(value(&d.layers[1], "Total Length"), "200");
        assert_eq!(
            expert(&d.layers[1]),
            ["IPv4 total length exceeds packet length (50 bytes)"]
        );
        assert_eq!(names(&d).len(), 4);
        // A UDP length past the IP payload's.
        let mut f = udp64();
        f[38..40].copy_from_slice(&[0, 99]);
        let d = dissect(&f);
        assert_eq!(d.error, None);
        assert_eq!(value(&d.layers[2], "Length"), "99");
        assert_eq!(
            expert(&d.layers[2]),
            ["Length 99 (bogus, payload length 30)"]
        );
        // IPv6 payload length past the frame's end.
        let mut f = vec![0u8; 80];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[18..20].copy_from_slice(&[1, 0]);
        f[20] = 17;
        f[58..60].copy_from_slice(&[0, 26]);
        let d = dissect(&f);
        assert_eq!(d.error, None);
        assert_eq!(
            expert(&d.layers[1]),
            ["IPv6 payload length exceeds framing length (26 bytes)"]
        );
        assert_eq!(names(&d)[2], "User Datagram Protocol");
        // A well-formed frame has no warning.
        assert!(dissect(&udp64())
            .layers
            .iter()
            .all(|l| expert(l).is_empty()));
    }

    #[test]
    fn no_frame_makes_the_lenient_dissector_panic() {
        // Random frames of every short length, with IPv4 or IPv6 (after zero to two tags) and
        // TCP or UDP likely, their lengths random: every leniency's edge.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let n = (next() % 120) as usize;
            let mut f: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            let mut at = 12;
            for _ in 0..next() % 3 {
                if f.len() >= at + 6 {
                    f[at..at + 2].copy_from_slice(&[0x81, 0x00]);
                    at += 4;
                }
            }
            if f.len() >= at + 2 {
                let t: [u8; 2] = [[0x08, 0x00], [0x86, 0xdd], [0x88, 0x47]][(next() % 3) as usize];
                f[at..at + 2].copy_from_slice(&t);
            }
            if f.len() > at + 11 && next() % 2 == 0 {
                f[at + 2] = 0x45; // IPv4, IHL 5
                f[at + 11] = if next() % 2 == 0 { 6 } else { 17 };
            }
            let d = dissect(&f);
            assert!(d.layers.iter().all(|l| l.offset <= f.len()));
        }
    }

    #[test]
    fn an_mpls_stack_is_shown_label_by_label_then_the_ip_packet() {
        // Ethernet, two labels (16 and 17, the second the bottom, TTL 64), then IPv4/UDP.
        let ip = udp64();
        let mut f = ip[..12].to_vec();
        f.extend_from_slice(&[0x88, 0x47, 0x00, 0x01, 0x00, 0x40, 0x00, 0x01, 0x11, 0x40]);
        f.extend_from_slice(&ip[14..]);
        let d = dissect(&f);
        assert_eq!(d.error, None);
        assert_eq!(
            names(&d)[..5],
            [
                "Ethernet II",
                "MultiProtocol Label Switching Header",
                "MultiProtocol Label Switching Header",
                "Internet Protocol Version 4",
                "User Datagram Protocol"
            ]
        );
        assert_eq!(
            value(&d.layers[0], "Type"),
            "MPLS label switched packet (0x8847)"
        );
        assert_eq!(value(&d.layers[1], "MPLS Label"), "16");
        assert_eq!(value(&d.layers[2], "MPLS Bottom Of Label Stack"), "1");
        assert_eq!(value(&d.layers[2], "MPLS TTL"), "64");
        assert_eq!((d.layers[3].offset, d.layers[4].offset), (22, 42));
        // A bogus IPv4 header after the stack: its warning, and the error at the frame's offset.
        f[22] = 0x40;
        let d = dissect(&f);
        assert_eq!(
            expert(&d.layers[3]),
            ["Bogus IP header length (0, must be at least 20)"]
        );
        assert!(d.error.unwrap().to_string().contains("offset 22"));
        // Neither IPv4 nor IPv6 after the stack (tshark tells them by the first nibble): data.
        f[22] = 0x05;
        let d = dissect(&f);
        assert_eq!(names(&d)[3], "Data");
        assert_eq!((d.layers[3].offset, d.error), (22, None));
        // No bottom of the stack in the frame: data, as before.
        let d = dissect(&f[..20]);
        assert_eq!(names(&d), ["Ethernet II", "Data"]);
    }
}
