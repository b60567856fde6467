//! A captured frame decoded down to its transport segment, as tshark decodes captures.
//!
//! [`decode`] starts from the capture's link type ([`linktype`]: Ethernet, loopback, raw IP,
//! Linux cooked v1/v2, IP over InfiniBand, NFLOG, Cisco HDLC, PPP, 802.11 with and without
//! radiotap, and others), walks encapsulations at any depth (802.1Q/802.1ad tags, MPLS label
//! stacks, PPPoE with a one- or two-byte PPP protocol), and tunnels (GRE, enhanced GRE as PPTP
//! uses it, VXLAN, IP in IP) to the innermost IP packet, whose segment it returns with the
//! outermost tunnel's endpoints. It reads lengths as they appear in real captures, not as a NIC
//! would check them (where [`crate::parse`] refuses):
//! - an IPv4 total length of 0 (TSO/GSO frames captured on the sending host) or an IPv6 payload
//!   length of 0 without a jumbo option is the frame's length, as tshark takes it;
//! - an IPv6 jumbogram (payload length 0 and a Hop-by-Hop Jumbo option) has the option's
//!   length;
//! - the packet ends at the smaller of its IP length and what its encapsulation says (a PPPoE
//!   payload length, a tunnel's IP length): padding is never payload;
//! - a frame holding fewer bytes than its IP length (a snaplen cut, or a short record) gives
//!   the bytes it has, and says how many are missing;
//! - a UDP length field below 8 (other than an IPv6 jumbogram's 0) ends the decoding at the UDP
//!   header, as tshark's "Bad length value < 8" does (no tunnel behind it, no payload); a
//!   length inside the packet ends the datagram there;
//! - an IPv4 option shorter than the fields tshark reads of it (a Security option of length 2)
//!   is an error, as tshark marks such a packet malformed and dissects nothing after its IP
//!   header; other bad option lengths only end the option walk, as in tshark.
//!
//! Checksums are not verified.

use std::net::IpAddr;
use std::ops::Range;

use crate::ip::protocol;
use crate::parse::{IpInfo, L4Info, TcpInfo};
use crate::{be16, be32, ipv6, tcp, Layer, ParseError};

/// Link types (pcap `LINKTYPE_*` numbers) that [`decode`] understands.
pub mod linktype {
    /// BSD loopback: a 4-byte address family in host byte order.
    pub const NULL: u32 = 0;
    /// Ethernet II.
    pub const ETHERNET: u32 = 1;
    /// PPP (RFC 1661), perhaps with the HDLC address and control bytes.
    pub const PPP: u32 = 9;
    /// FDDI: frame control, destination and source addresses (13 bytes), then an LLC header.
    pub const FDDI: u32 = 10;
    /// Raw IP on some BSDs (DLT_RAW = 12 or 14); the version nibble selects IPv4 or IPv6.
    pub const RAW_BSD: u32 = 12;
    /// Raw IP, OpenBSD numbering.
    pub const RAW_OPENBSD: u32 = 14;
    /// PPP in HDLC-like framing (RFC 1662), or Cisco HDLC.
    pub const PPP_HDLC: u32 = 50;
    /// PPPoE without its Ethernet header (RFC 2516).
    pub const PPP_ETHER: u32 = 51;
    /// RFC 1483 LLC/SNAP-encapsulated ATM.
    pub const ATM_RFC1483: u32 = 100;
    /// Raw IP; the version nibble selects IPv4 or IPv6.
    pub const RAW: u32 = 101;
    /// Cisco HDLC: address, control, and an EtherType.
    pub const C_HDLC: u32 = 104;
    /// IEEE 802.11 frames without radio information.
    pub const IEEE802_11: u32 = 105;
    /// OpenBSD loopback: a 4-byte address family in network byte order.
    pub const LOOP: u32 = 108;
    /// Linux cooked capture v1 (16-byte header, protocol at offset 14).
    pub const LINUX_SLL: u32 = 113;
    /// OpenBSD pflog: a header of its own length, then the packet.
    pub const PFLOG: u32 = 117;
    /// IEEE 802.11 frames behind a radiotap header.
    pub const IEEE802_11_RADIOTAP: u32 = 127;
    /// MPLS label stack, then the packet.
    pub const MPLS: u32 = 219;
    /// Raw IPv4.
    pub const IPV4: u32 = 228;
    /// Raw IPv6.
    pub const IPV6: u32 = 229;
    /// Linux netfilter log (NFLOG): a header, then TLVs, the packet in one of them.
    pub const NFLOG: u32 = 239;
    /// IP over InfiniBand: a 40-byte pseudo-header, then RFC 4391's 4-byte header with an
    /// EtherType.
    pub const IPOIB: u32 = 242;
    /// Linux cooked capture v2 (20-byte header, protocol at offset 0).
    pub const LINUX_SLL2: u32 = 276;
    /// ARCNET (BSD): source, destination, then a protocol id.
    pub const ARCNET_BSD: u32 = 7;
    /// ARCNET (Linux): source, destination, a 2-byte offset, then a protocol id.
    pub const ARCNET_LINUX: u32 = 129;
    /// 802.11 behind a Prism monitor-mode header (its length at 4, little-endian: 144).
    pub const PRISM: u32 = 119;
    /// SunATM: a 4-byte pseudo-header (flags, VPI, VCI), then the cell payload (LLC/SNAP).
    pub const SUNATM: u32 = 123;
    /// 802.11 behind an AVS header (magic 0x8021100x, its length at 4, big-endian).
    pub const AVS: u32 = 163;
    /// Per-Packet Information: a header (its length at 2 and the inner link type at 4, both
    /// little-endian), then a frame of that link type.
    pub const PPI: u32 = 192;
    /// Solaris ipnet: a 24-byte header (the address family at 1: 2 IPv4, 26 IPv6), then IP.
    pub const IPNET: u32 = 226;
    /// Apple PKTAP: a header (its length at 0 and the inner link type at 4, little-endian),
    /// then a frame of that link type.
    pub const PKTAP: u32 = 258;
    /// Endace ERF records: a 16-byte header (the record type at 8, its length at 10), extension
    /// headers, then the packet (Ethernet behind 2 bytes, PoS HDLC, or IP).
    pub const ERF: u32 = 197;
    /// Frame Relay: a Q.922 address, then RFC 2427's control and NLPID, or Cisco's EtherType.
    pub const FRELAY: u32 = 107;
    /// Linux Classical IP over ATM: IP.
    pub const LINUX_ATM_CLIP: u32 = 106;
    /// PPP with a 1-byte direction pseudo-header (pppd's captures).
    pub const PPP_WITH_DIR: u32 = 204;
    /// Hilscher netANALYZER: a 4-byte header, then the Ethernet frame with its FCS.
    pub const NETANALYZER: u32 = 240;
    /// IEEE 802.5 Token Ring: access and frame control, the addresses (a source-routing field
    /// when the source's top bit is set), then LLC.
    pub const TOKEN_RING: u32 = 6;
    /// TZSP (TaZmen Sniffer Protocol) as a link type: its header and tagged fields, then
    /// Ethernet.
    pub const TZSP: u32 = 128;
    /// Wireshark's exported PDUs: tag-length-value fields (big-endian; tag 12 names the
    /// dissector: `eth`, `eth_withoutfcs`, `ip`, ...), then the PDU.
    pub const WIRESHARK_UPPER_PDU: u32 = 252;

    /// Whether [`super::decode`] decodes frames of this link type.
    pub fn is_supported(linktype: u32) -> bool {
        matches!(
            linktype,
            NULL | ETHERNET
                | PPP
                | FDDI
                | RAW_BSD
                | RAW_OPENBSD
                | PPP_HDLC
                | PPP_ETHER
                | ATM_RFC1483
                | RAW
                | C_HDLC
                | IEEE802_11
                | LOOP
                | LINUX_SLL
                | PFLOG
                | IEEE802_11_RADIOTAP
                | MPLS
                | IPV4
                | IPV6
                | NFLOG
                | IPOIB
                | LINUX_SLL2
                | ARCNET_BSD
                | ARCNET_LINUX
                | PRISM
                | SUNATM
                | AVS
                | PPI
                | IPNET
                | PKTAP
                | ERF
                | FRELAY
                | LINUX_ATM_CLIP
                | PPP_WITH_DIR
                | NETANALYZER
                | TOKEN_RING
                | TZSP
                | WIRESHARK_UPPER_PDU
        )
    }

    /// libpcap's names of the private link types 147-162 (`USER0` ... `USER15`).
    const USER: [&str; 16] = [
        "USER0", "USER1", "USER2", "USER3", "USER4", "USER5", "USER6", "USER7", "USER8", "USER9",
        "USER10", "USER11", "USER12", "USER13", "USER14", "USER15",
    ];

    /// The link type's name, as libpcap's `pcap_datalink_val_to_name` gives it (for messages).
    pub fn name(linktype: u32) -> Option<&'static str> {
        Some(match linktype {
            NULL => "NULL",
            ETHERNET => "EN10MB",
            PPP => "PPP",
            FDDI => "FDDI",
            RAW_BSD | RAW_OPENBSD | RAW => "RAW",
            PPP_HDLC => "PPP_SERIAL",
            PPP_ETHER => "PPP_ETHER",
            ATM_RFC1483 => "ATM_RFC1483",
            C_HDLC => "C_HDLC",
            IEEE802_11 => "IEEE802_11",
            LOOP => "LOOP",
            LINUX_SLL => "LINUX_SLL",
            PFLOG => "PFLOG",
            IEEE802_11_RADIOTAP => "IEEE802_11_RADIO",
            MPLS => "MPLS",
            IPV4 => "IPV4",
            IPV6 => "IPV6",
            NFLOG => "NFLOG",
            IPOIB => "IPOIB",
            LINUX_SLL2 => "LINUX_SLL2",
            ARCNET_BSD => "ARCNET",
            ARCNET_LINUX => "ARCNET_LINUX",
            PRISM => "PRISM_HEADER",
            SUNATM => "SUNATM",
            AVS => "IEEE802_11_RADIO_AVS",
            PPI => "PPI",
            IPNET => "IPNET",
            PKTAP => "PKTAP",
            ERF => "ERF",
            FRELAY => "FRELAY",
            LINUX_ATM_CLIP => "LINUX_ATM_CLIP",
            PPP_WITH_DIR => "PPP_WITH_DIR",
            NETANALYZER => "NETANALYZER",
            TOKEN_RING => "IEEE802",
            TZSP => "TZSP",
            WIRESHARK_UPPER_PDU => "WIRESHARK_UPPER_PDU",
            // The link types nicsim does not decode, as libpcap names them (its `dlt_choices`),
            // so that a refused capture's link type is recognised.
            3 => "AX25",
            8 => "SLIP",
            114 => "LTALK",
            122 => "IP_OVER_FC",
            138 => "APPLE_IP_OVER_IEEE1394",
            139 => "MTP2_WITH_PHDR",
            140 => "MTP2",
            141 => "MTP3",
            142 => "SCCP",
            143 => "DOCSIS",
            144 => "LINUX_IRDA",
            147..=162 => return USER[(linktype - 147) as usize].into(),
            165 => "BACNET_MS_TP",
            166 => "PPP_PPPD",
            169 => "GPRS_LLC",
            177 => "LINUX_LAPD",
            182 => "MFR",
            187 => "BLUETOOTH_HCI_H4",
            189 => "USB_LINUX",
            195 => "IEEE802_15_4",
            196 => "SITA",
            201 => "BLUETOOTH_HCI_H4_WITH_PHDR",
            202 => "AX25_KISS",
            203 => "LAPD",
            205 => "C_HDLC_WITH_DIR",
            206 => "FRELAY_WITH_DIR",
            209 => "IPMB_LINUX",
            215 => "IEEE802_15_4_NONASK_PHY",
            220 => "USB_LINUX_MMAPPED",
            224 => "FC_2",
            225 => "FC_2_WITH_FRAME_DELIMS",
            227 => "CAN_SOCKETCAN",
            230 => "IEEE802_15_4_NOFCS",
            231 => "DBUS",
            235 => "DVB_CI",
            236 => "MUX27010",
            237 => "STANAG_5066_D_PDU",
            241 => "NETANALYZER_TRANSPARENT",
            243 => "MPEG_2_TS",
            244 => "NG40",
            245 => "NFC_LLCP",
            247 => "INFINIBAND",
            248 => "SCTP",
            249 => "USBPCAP",
            250 => "RTAC_SERIAL",
            251 => "BLUETOOTH_LE_LL",
            253 => "NETLINK",
            254 => "BLUETOOTH_LINUX_MONITOR",
            255 => "BLUETOOTH_BREDR_BB",
            256 => "BLUETOOTH_LE_LL_WITH_PHDR",
            257 => "PROFIBUS_DL",
            259 => "EPON",
            260 => "IPMI_HPM_2",
            261 => "ZWAVE_R1_R2",
            262 => "ZWAVE_R3",
            263 => "WATTSTOPPER_DLM",
            264 => "ISO_14443",
            265 => "RDS",
            266 => "USB_DARWIN",
            268 => "SDLC",
            270 => "LORATAP",
            271 => "VSOCK",
            272 => "NORDIC_BLE",
            273 => "DOCSIS31_XRA31",
            274 => "ETHERNET_MPACKET",
            275 => "DISPLAYPORT_AUX",
            278 => "OPENVIZSLA",
            279 => "EBHSCR",
            280 => "VPP_DISPATCH",
            281 => "DSA_TAG_BRCM",
            282 => "DSA_TAG_BRCM_PREPEND",
            283 => "IEEE802_15_4_TAP",
            284 => "DSA_TAG_DSA",
            285 => "DSA_TAG_EDSA",
            286 => "ELEE",
            287 => "Z_WAVE_SERIAL",
            288 => "USB_2_0",
            289 => "ATSC_ALP",
            290 => "ETW",
            _ => return None,
        })
    }
}

/// EtherTypes the walk follows.
mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const IPV6: u16 = 0x86dd;
    pub const VLAN: u16 = 0x8100;
    pub const QINQ: u16 = 0x88a8;
    pub const QINQ_LEGACY: u16 = 0x9100;
    pub const QINQ_LEGACY2: u16 = 0x9200;
    pub const MPLS: u16 = 0x8847;
    pub const MPLS_MULTICAST: u16 = 0x8848;
    pub const PPPOE_SESSION: u16 = 0x8864;
    /// Transparent Ethernet bridging (an Ethernet frame inside GRE).
    pub const TEB: u16 = 0x6558;
    /// PPP inside enhanced GRE (PPTP).
    pub const PPP: u16 = 0x880b;
    /// ERSPAN types I and II (in GRE).
    pub const ERSPAN_2: u16 = 0x88be;
    /// ERSPAN type III (in GRE).
    pub const ERSPAN_3: u16 = 0x22eb;
    /// WCCP redirection in GRE: IP, perhaps behind a 4-byte redirect header.
    pub const WCCP: u16 = 0x883e;
    /// Network Service Header (RFC 8300).
    pub const NSH: u16 = 0x894f;
    /// IEEE 802.1ah provider backbone bridging (MAC-in-MAC): an I-TAG, then a customer frame.
    pub const PBB: u16 = 0x88e7;
    /// Cisco VN-Tag: 4 bytes, then an EtherType.
    pub const VN_TAG: u16 = 0x8926;
    /// IEEE 802.1BR E-Tag: 6 bytes, then an EtherType.
    pub const E_TAG: u16 = 0x893f;
    /// Cisco MetaData (security group tag): 6 bytes, then an EtherType.
    pub const CISCO_METADATA: u16 = 0x8909;
    /// TRILL (RFC 6325): a 6-byte header and its options, then an Ethernet frame.
    pub const TRILL: u16 = 0x22f3;
    /// Cisco FabricPath (MAC-in-MAC, "DCE"): the outer addresses, this EtherType, the
    /// forwarding tag and TTL (2 bytes), then the Ethernet frame and its FCS (tshark's `cfp`).
    pub const FABRICPATH: u16 = 0x8903;
    /// An 802.2 LLC frame longer than 802.3's length field allows ("jumbo LLC").
    pub const JUMBO_LLC: u16 = 0x8870;
    /// High-availability Seamless Redundancy (IEC 62439-3): a 4-byte tag, then an EtherType.
    pub const HSR: u16 = 0x892f;
    /// IEEE 802.1CB redundancy tag: 4 bytes (reserved, sequence), then an EtherType.
    pub const R_TAG: u16 = 0xf1c1;
    /// MACsec (IEEE 802.1AE): the SecTAG, then (not encrypted) an EtherType and the data, and
    /// the 16-byte ICV.
    pub const MACSEC: u16 = 0x88e5;
}

/// UDP ports on which tshark 4.0 decodes a tunnel by default (its `udp.port` dissector table,
/// `tshark -G decodes`), and which [`decode`] walks into.
pub mod udp_port {
    /// GTP-U, GTP version 1 user plane (3GPP TS 29.281).
    pub const GTP_U: u16 = 2152;
    /// L2TP (RFC 2661 version 2; RFC 3931 version 3 over UDP).
    pub const L2TP: u16 = 1701;
    /// GENEVE (RFC 8926).
    pub const GENEVE: u16 = 6081;
    /// VXLAN (RFC 7348).
    pub const VXLAN: u16 = 4789;
    /// VXLAN with the Generic Protocol Extension (draft-ietf-nvo3-vxlan-gpe).
    pub const VXLAN_GPE: u16 = 4790;
    /// Teredo (RFC 4380).
    pub const TEREDO: u16 = 3544;
    /// GRE over UDP (RFC 8086).
    pub const GRE: u16 = 4754;
    /// MPLS over UDP (RFC 7510).
    pub const MPLS: u16 = 6635;
    /// LISP data plane (RFC 9300).
    pub const LISP_DATA: u16 = 4341;
    /// AYIYA ("Anything In Anything", draft-massar-v6ops-ayiya).
    pub const AYIYA: u16 = 5072;
    /// TZSP (TaZmen Sniffer Protocol).
    pub const TZSP: u16 = 37008;
    /// Juniper packet mirroring (Jmirror).
    pub const JMIRROR: u16 = 30030;
    /// AMT, automatic multicast tunneling (RFC 7450).
    pub const AMT: u16 = 2268;
}

/// The UDP port of VXLAN (RFC 7348).
pub const VXLAN_PORT: u16 = udp_port::VXLAN;

/// Encapsulations and tunnels walked at most in one frame (tags, labels, headers): more is
/// malformed (a frame of 65,535 bytes could otherwise hold 16,000 tags). An IP datagram
/// reassembled from fragments continues the count of the frame that completed it.
pub const MAX_LAYERS: usize = 64;

/// How a segment was tunnelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TunnelKind {
    /// GRE (RFC 2784), or PPTP's enhanced GRE (also GRE over UDP, RFC 8086).
    Gre,
    /// VXLAN (RFC 7348).
    Vxlan,
    /// IPv4 or IPv6 directly in IP.
    IpInIp,
    /// GTP-U version 1 (UDP 2152).
    GtpU,
    /// GENEVE (UDP 6081).
    Geneve,
    /// VXLAN-GPE (UDP 4790).
    VxlanGpe,
    /// Teredo (IPv6 in UDP 3544).
    Teredo,
    /// L2TP version 2 data (PPP), or version 3 (over UDP 1701 or IP protocol 115).
    L2tp,
    /// ERSPAN type I, II or III (in GRE).
    Erspan,
    /// EtherIP (IP protocol 97, RFC 3378).
    EtherIp,
    /// MPLS over UDP (6635) or in IP (protocol 137).
    Mpls,
    /// LISP data (UDP 4341, RFC 9300).
    Lisp,
    /// AYIYA, "Anything In Anything" (UDP 5072).
    Ayiya,
    /// TZSP, TaZmen Sniffer Protocol (UDP 37008), carrying Ethernet.
    Tzsp,
    /// Juniper packet mirroring (UDP 30030).
    Jmirror,
    /// AMT multicast data (UDP 2268, RFC 7450).
    Amt,
    /// Network Service Header (RFC 8300; EtherType 0x894f, in GRE or VXLAN-GPE).
    Nsh,
    /// An Ethernet frame directly in IP (protocol 143, RFC 8986's End.DX2).
    EthInIp,
}

impl TunnelKind {
    /// Its name in summaries.
    pub fn name(self) -> &'static str {
        match self {
            TunnelKind::Gre => "gre",
            TunnelKind::Vxlan => "vxlan",
            TunnelKind::IpInIp => "ip-in-ip",
            TunnelKind::GtpU => "gtp-u",
            TunnelKind::Geneve => "geneve",
            TunnelKind::VxlanGpe => "vxlan-gpe",
            TunnelKind::Teredo => "teredo",
            TunnelKind::L2tp => "l2tp",
            TunnelKind::Erspan => "erspan",
            TunnelKind::EtherIp => "etherip",
            TunnelKind::Mpls => "mpls-in-ip",
            TunnelKind::Lisp => "lisp",
            TunnelKind::Ayiya => "ayiya",
            TunnelKind::Tzsp => "tzsp",
            TunnelKind::Jmirror => "jmirror",
            TunnelKind::Amt => "amt",
            TunnelKind::Nsh => "nsh",
            TunnelKind::EthInIp => "eth-in-ip",
        }
    }
}

/// The outermost tunnel of a segment: its kind and the outer IP endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tunnel {
    /// How.
    pub kind: TunnelKind,
    /// The outer IP source.
    pub src: IpAddr,
    /// The outer IP destination.
    pub dst: IpAddr,
}

/// Tunnels a stack records (outermost first); a deeper stack counts the rest in `depth`.
pub const MAX_TUNNELS_RECORDED: usize = 8;

/// Every tunnel a segment came through, outermost first: the first
/// [`MAX_TUNNELS_RECORDED`] kinds, and how many there were.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TunnelStack {
    kinds: [Option<TunnelKind>; MAX_TUNNELS_RECORDED],
    depth: u16,
}

impl TunnelStack {
    fn push(&mut self, kind: TunnelKind) {
        if let Some(slot) = self.kinds.get_mut(usize::from(self.depth)) {
            *slot = Some(kind);
        }
        self.depth = self.depth.saturating_add(1);
    }

    /// How many tunnels the segment came through.
    pub fn depth(&self) -> usize {
        usize::from(self.depth)
    }

    /// The recorded kinds, outermost first.
    pub fn kinds(&self) -> impl Iterator<Item = TunnelKind> + '_ {
        self.kinds.iter().map_while(|k| *k)
    }

    /// The stack as text, outermost first (`"gtp-u/gre"`; `""` without a tunnel), with `/...`
    /// when it was deeper than it records.
    pub fn names(&self) -> String {
        let mut out: Vec<&str> = self.kinds().map(TunnelKind::name).collect();
        if self.depth() > MAX_TUNNELS_RECORDED {
            out.push("...");
        }
        out.join("/")
    }
}

/// An IP fragment: what [`crate::defrag`] needs to put its datagram together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    /// The datagram's identification (IPv4's 16 bits, IPv6's 32).
    pub ident: u32,
    /// Where this fragment's bytes go in the datagram's payload.
    pub offset_bytes: usize,
    /// More fragments follow.
    pub more: bool,
    /// The protocol of the datagram's payload (IPv4's protocol, the IPv6 fragment header's
    /// next header).
    pub protocol: u8,
    /// The fragment's bytes in the frame.
    pub data: Range<usize>,
    /// The frame holds all of them (a cut fragment is not reassembled, as tshark does not).
    pub complete: bool,
}

/// The innermost IP packet's segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The innermost IP header (`total_len` as the packet's length was taken: see the module).
    pub ip: IpInfo,
    /// Ports (and TCP fields) of a TCP or UDP segment whose header the frame holds.
    pub l4: Option<L4Info>,
    /// The packet is a fragment of a larger datagram.
    pub fragment: bool,
    /// The payload bytes the frame holds (after the TCP/UDP header; for other protocols, after
    /// the IP headers).
    pub payload: Range<usize>,
    /// Payload bytes the packet's length claims beyond what the frame holds.
    pub missing: usize,
    /// The outermost tunnel the packet came through.
    pub tunnel: Option<Tunnel>,
    /// Every tunnel it came through, outermost first.
    pub tunnels: TunnelStack,
    /// VLAN id of the innermost 802.1Q tag.
    pub vlan: Option<u16>,
    /// The fragment's details when `fragment` is set (IPv4 or IPv6).
    pub frag: Option<Fragment>,
    /// Encapsulations walked to reach this packet (the count [`MAX_LAYERS`] bounds).
    pub layers: usize,
}

/// What comes next at an offset of the frame.
#[derive(Debug, Clone, Copy)]
enum Next {
    /// An Ethernet II header.
    Ethernet,
    /// What an EtherType announces.
    Ether(u16),
    /// A PPP protocol field (one byte when compressed: PFC).
    Ppp,
    /// IPv4 or IPv6, by the version nibble.
    Ip,
    /// An 802.11 frame.
    Wifi,
    /// Not IP.
    Other,
}

/// The frame of pcap link type `linktype` as the Ethernet frame an XDP program would see, into
/// `out` (its capacity reused): an Ethernet frame as it is; a frame whose link header announces
/// an EtherType (SLL, SLL2, null/loopback, raw IP, IPoIB, C-HDLC, …) as that EtherType and the
/// link layer's payload behind an Ethernet header with locally administered addresses
/// (02:00:00:00:00:02 to 02:00:00:00:00:01). `false`: the link type or the frame gives no
/// EtherType (802.11, PPP, not IP) or its link header is cut short.
pub fn ethernet_frame(linktype: u32, frame: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Ok((at, next, end)) = link(linktype, frame) else {
        return false;
    };
    let payload = &frame[at.min(frame.len())..end.min(frame.len())];
    let ether = match next {
        Next::Ethernet => {
            out.extend_from_slice(payload);
            return true;
        }
        Next::Ether(t) => t,
        Next::Ip => match payload.first().map(|b| b >> 4) {
            Some(4) => ethertype::IPV4,
            Some(6) => ethertype::IPV6,
            _ => return false,
        },
        Next::Ppp | Next::Wifi | Next::Other => return false,
    };
    out.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02]);
    out.extend_from_slice(&ether.to_be_bytes());
    out.extend_from_slice(payload);
    true
}

/// Decode a frame of pcap link type `linktype` (see [`linktype`]). `Ok(None)`: the frame holds
/// no IP packet (ARP, an encrypted 802.11 frame, a protocol the walk does not follow). `Err`:
/// a header it must traverse is truncated or malformed (naming the layer and the offset), or the
/// link type is not supported.
pub fn decode(linktype: u32, frame: &[u8]) -> Result<Option<Segment>, ParseError> {
    let (at, next, end) = link(linktype, frame)?;
    Walk {
        frame,
        end,
        vlan: None,
        tunnel: None,
        tunnels: TunnelStack::default(),
        layers: 0,
    }
    .walk(at, next)
}

/// Decode an IP datagram reassembled from fragments ([`crate::defrag`]) that `outer`, its
/// last fragment, came in: the walk goes on inside it (into tunnels, or to its segment) with
/// `outer`'s tunnels, VLAN and layer count.
pub fn decode_datagram(datagram: &[u8], outer: &Segment) -> Result<Option<Segment>, ParseError> {
    Walk {
        frame: datagram,
        end: usize::MAX,
        vlan: outer.vlan,
        tunnel: outer.tunnel,
        tunnels: outer.tunnels,
        layers: outer.layers,
    }
    .walk(0, Next::Ip)
}

/// IPComp (RFC 3173): the IP protocol whose payload is compressed.
pub const IPCOMP: u8 = 108;

/// Most bytes an IPComp payload inflates to: an IP datagram's (its 16-bit length).
pub const MAX_IPCOMP_INFLATED: usize = 65_535;

/// The payload of an IPComp packet `seg` (protocol [`IPCOMP`]) held in `frame`, inflated as
/// tshark inflates it: whole in the frame, a DEFLATE stream (RFC 2394) of at most
/// [`MAX_IPCOMP_INFLATED`] bytes, its CPI DEFLATE's (2) or a negotiated one (256 and above, as
/// IKE sets them; not OUI, LZS or LZJH: 1, 3, 4). Its next header and the inflated bytes; None
/// otherwise.
pub fn ipcomp_inflate(frame: &[u8], seg: &Segment) -> Option<(u8, Vec<u8>)> {
    let p = frame.get(seg.payload.clone())?;
    if seg.ip.proto != IPCOMP || seg.missing > 0 || p.len() < 4 || matches!(be16(p, 2), 1 | 3 | 4) {
        return None;
    }
    use miniz_oxide::inflate::{decompress_to_vec_with_limit, decompress_to_vec_zlib_with_limit};
    let data = &p[4..];
    let out = decompress_to_vec_with_limit(data, MAX_IPCOMP_INFLATED)
        .or_else(|_| decompress_to_vec_zlib_with_limit(data, MAX_IPCOMP_INFLATED))
        .ok()?;
    Some((p[0], out))
}

/// The segment an inflated IPComp payload (`payload`, of protocol `next`) holds, the IPComp
/// packet being `outer`: an inner IP packet (tunnel mode), or the transport segment of the
/// outer addresses (transport mode).
pub fn decode_ipcomp(
    payload: &[u8],
    next: u8,
    outer: &Segment,
) -> Result<Option<Segment>, ParseError> {
    let mut walk = Walk {
        frame: payload,
        end: usize::MAX,
        vlan: outer.vlan,
        tunnel: outer.tunnel,
        tunnels: outer.tunnels,
        layers: outer.layers + 1,
    };
    if matches!(next, protocol::IPV4_IN_IP | protocol::IPV6_IN_IP) {
        return walk.walk(0, Next::Ip);
    }
    let info = IpInfo {
        proto: next,
        total_len: payload.len(),
        ..outer.ip
    };
    match walk.upper(0, 0, payload.len(), info, None, true)? {
        Step::Done(s) => Ok(Some(s)),
        Step::Inner(at, n) => walk.walk(at, n),
    }
}

fn short(layer: Layer, at: usize, needed: usize, frame: &[u8]) -> ParseError {
    ParseError::truncated(layer, at, needed, frame.len().saturating_sub(at))
}

fn need(frame: &[u8], layer: Layer, at: usize, n: usize) -> Result<(), ParseError> {
    if frame.len() < at.saturating_add(n) {
        return Err(short(layer, at, n, frame));
    }
    Ok(())
}

/// Where the link layer's payload starts, what it is, and where it ends.
fn link(kind: u32, frame: &[u8]) -> Result<(usize, Next, usize), ParseError> {
    use self::linktype as lt;
    let by_family = |family: u32| match family {
        2 => Next::Ether(ethertype::IPV4),
        // AF_INET6 differs per OS: BSD 24, FreeBSD 28, macOS 30, Linux 10.
        10 | 24 | 28 | 30 => Next::Ether(ethertype::IPV6),
        _ => Next::Other,
    };
    let (at, next) = match kind {
        lt::ETHERNET => (0, Next::Ethernet),
        lt::NULL | lt::LOOP => {
            need(frame, Layer::Link, 0, 4)?;
            let raw = [frame[0], frame[1], frame[2], frame[3]];
            // NULL is in the capturing host's byte order: accept either.
            let family = match kind {
                lt::LOOP => u32::from_be_bytes(raw),
                _ if u32::from_le_bytes(raw) < 0x1_0000 => u32::from_le_bytes(raw),
                _ => u32::from_be_bytes(raw),
            };
            (4, by_family(family))
        }
        lt::RAW | lt::RAW_BSD | lt::RAW_OPENBSD => (0, Next::Ip),
        lt::IPV4 => (0, Next::Ether(ethertype::IPV4)),
        lt::IPV6 => (0, Next::Ether(ethertype::IPV6)),
        lt::MPLS => (0, Next::Ether(ethertype::MPLS)),
        lt::LINUX_SLL | lt::LINUX_SLL2 => {
            let (len, proto) = if kind == lt::LINUX_SLL {
                need(frame, Layer::Link, 0, 16)?;
                (16, be16(frame, 14))
            } else {
                need(frame, Layer::Link, 0, 20)?;
                (20, be16(frame, 0))
            };
            match proto {
                // Linux's ETH_P_* pseudo-protocols below 0x0600 (tshark's sll dissector): a
                // whole Ethernet frame, or an 802.2 LLC frame.
                SLL_P_ETHERNET => (len, Next::Ethernet),
                SLL_P_802_2 => llc(frame, len)?,
                p => (len, Next::Ether(p)),
            }
        }
        lt::IPNET => {
            need(frame, Layer::Link, 0, 24)?;
            match frame[1] {
                2 => (24, Next::Ether(ethertype::IPV4)),
                26 => (24, Next::Ether(ethertype::IPV6)),
                _ => (24, Next::Other),
            }
        }
        lt::PRISM | lt::AVS => {
            // The header's own length: little-endian for Prism, big-endian for AVS.
            need(frame, Layer::Link, 0, 8)?;
            let raw = [frame[4], frame[5], frame[6], frame[7]];
            let len = if kind == lt::PRISM {
                u32::from_le_bytes(raw)
            } else {
                u32::from_be_bytes(raw)
            } as usize;
            if len < 8 {
                return Err(ParseError::malformed(
                    Layer::Link,
                    4,
                    "header length below 8",
                ));
            }
            need(frame, Layer::Link, 0, len)?;
            (len, Next::Wifi)
        }
        lt::SUNATM => {
            // The pseudo-header, then LLC/SNAP as RFC 1483 has it.
            need(frame, Layer::Link, 0, 12)?;
            if frame[4..10] == [0xaa, 0xaa, 0x03, 0, 0, 0] {
                (12, Next::Ether(be16(frame, 10)))
            } else {
                (4, Next::Other)
            }
        }
        lt::PPI | lt::PKTAP => {
            // A header of its own length, then a frame of the link type it names (one level:
            // a PPI or PKTAP frame inside is not walked).
            need(frame, Layer::Link, 0, 8)?;
            let len = if kind == lt::PPI {
                usize::from(u16::from_le_bytes([frame[2], frame[3]]))
            } else {
                u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize
            };
            let inner = u32::from_le_bytes([frame[4], frame[5], frame[6], frame[7]]);
            if len < 8 {
                return Err(ParseError::malformed(
                    Layer::Link,
                    0,
                    "header length below 8",
                ));
            }
            need(frame, Layer::Link, 0, len)?;
            if matches!(inner, lt::PPI | lt::PKTAP) || !lt::is_supported(inner) {
                (len, Next::Other)
            } else {
                let (a, n, end) = link(inner, &frame[len..])?;
                return Ok((len + a, n, end.saturating_add(len)));
            }
        }
        lt::ERF => return erf(frame),
        lt::LINUX_ATM_CLIP => (0, Next::Ip),
        lt::NETANALYZER => {
            need(frame, Layer::Link, 0, 4)?;
            (4, Next::Ethernet)
        }
        lt::TOKEN_RING => {
            // AC, FC, destination, source; a routing field (its length in the low 5 bits of
            // its first byte) when the source's top bit is set; then LLC.
            need(frame, Layer::Link, 0, 14)?;
            let mut at = 14;
            if frame[8] & 0x80 != 0 {
                need(frame, Layer::Link, 14, 1)?;
                at += usize::from(frame[14] & 0x1f);
            }
            llc(frame, at)?
        }
        lt::TZSP => {
            need(frame, Layer::Link, 0, 4)?;
            match tzsp(frame, 0, frame.len()) {
                Some((at, next, _)) => (at, next),
                None => (0, Next::Other),
            }
        }
        lt::WIRESHARK_UPPER_PDU => {
            // Tags until the end-of-options tag (0): the dissector's name (12) says what the
            // PDU is.
            let mut at = 0;
            let mut next = Next::Other;
            loop {
                need(frame, Layer::Link, at, 4)?;
                let (tag, len) = (be16(frame, at), usize::from(be16(frame, at + 2)));
                need(frame, Layer::Link, at + 4, len)?;
                if tag == 0 {
                    break (at + 4 + len, next);
                }
                if tag == 12 {
                    let name = &frame[at + 4..at + 4 + len];
                    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(len)];
                    next = match name {
                        b"eth" | b"eth_withoutfcs" | b"eth_withfcs" | b"eth_maybefcs" => {
                            Next::Ethernet
                        }
                        b"ip" | b"ipv6" | b"raw_ip" => Next::Ip,
                        _ => Next::Other,
                    };
                }
                at += 4 + len;
            }
        }
        lt::PPP_WITH_DIR => {
            // The direction, then PPP as in link type 9.
            need(frame, Layer::Link, 0, 1)?;
            let (a, n, end) = link(lt::PPP, &frame[1..])?;
            return Ok((1 + a, n, end.saturating_add(1)));
        }
        lt::FRELAY => {
            // The Q.922 address (2 to 4 bytes: its last has the EA bit), then RFC 2427's UI
            // control (3) and NLPID (0xcc IPv4, 0x8e IPv6, 0x80 SNAP after a pad byte), or
            // Cisco's encapsulation: an EtherType (tshark's fr dissector tells them apart so).
            let Some(ea) = frame.iter().take(4).position(|b| b & 1 == 1) else {
                return Err(ParseError::malformed(
                    Layer::Link,
                    0,
                    "Frame Relay address without its end",
                ));
            };
            let at = ea + 1;
            need(frame, Layer::Link, at, 2)?;
            match (frame[at], frame[at + 1]) {
                (0x03, 0xcc) => (at + 2, Next::Ether(ethertype::IPV4)),
                (0x03, 0x8e) => (at + 2, Next::Ether(ethertype::IPV6)),
                (0x03, 0x00) if frame.get(at + 2) == Some(&0x80) => {
                    need(frame, Layer::Link, at, 8)?;
                    (at + 8, Next::Ether(be16(frame, at + 6)))
                }
                (0x03, _) => (at + 2, Next::Other),
                _ => (at + 2, Next::Ether(be16(frame, at))),
            }
        }
        lt::IPOIB => {
            // A 40-byte pseudo-header (the Global Route Header, or zeros and the destination
            // address), then RFC 4391's header: a 2-byte EtherType and 2 reserved bytes.
            need(frame, Layer::Link, 0, 44)?;
            (44, Next::Ether(be16(frame, 40)))
        }
        lt::C_HDLC => {
            // Address (0x0f unicast, 0x8f broadcast), control 0, then an EtherType.
            need(frame, Layer::Link, 0, 4)?;
            (4, Next::Ether(be16(frame, 2)))
        }
        lt::PPP | lt::PPP_HDLC => {
            need(frame, Layer::Link, 0, 2)?;
            match frame[0] {
                // Cisco HDLC framing in a PPP link type (libpcap's DLT_PPP_SERIAL does this).
                0x0f | 0x8f => {
                    need(frame, Layer::Link, 0, 4)?;
                    (4, Next::Ether(be16(frame, 2)))
                }
                // HDLC address and control (RFC 1662), then the protocol.
                0xff if frame[1] == 0x03 => (2, Next::Ppp),
                _ => (0, Next::Ppp),
            }
        }
        lt::PPP_ETHER => {
            need(frame, Layer::Link, 0, 6)?;
            (0, Next::Ether(ethertype::PPPOE_SESSION))
        }
        lt::FDDI => {
            // Frame control, destination, source (wiretap's and tshark's fddi: no padding by
            // default), then LLC; SNAP gives the EtherType.
            llc(frame, 13)?
        }
        lt::ATM_RFC1483 => {
            // LLC/SNAP: AA AA 03, an OUI of zeros, the EtherType.
            need(frame, Layer::Link, 0, 8)?;
            if frame[..6] == [0xaa, 0xaa, 0x03, 0, 0, 0] {
                (8, Next::Ether(be16(frame, 6)))
            } else {
                (0, Next::Other)
            }
        }
        lt::PFLOG => {
            // pfloghdr: its length (padded to 4 bytes) first, the address family next.
            need(frame, Layer::Link, 0, 2)?;
            let len = (usize::from(frame[0]) + 3) & !3;
            need(frame, Layer::Link, 0, len.max(4))?;
            (len, by_family(u32::from(frame[1])))
        }
        lt::NFLOG => return nflog(frame),
        lt::ARCNET_BSD | lt::ARCNET_LINUX => {
            // The protocol id, then (RFC 1201: IP 212, IPv6 196) a split flag and a sequence
            // number, 4 more bytes for an exception packet (split flag 0xff), or (RFC 1051:
            // IP 240) nothing.
            let id_at = if kind == lt::ARCNET_BSD { 2 } else { 4 };
            need(frame, Layer::Link, 0, id_at + 1)?;
            match frame[id_at] {
                240 => (id_at + 1, Next::Ether(ethertype::IPV4)),
                212 | 196 => {
                    need(frame, Layer::Link, 0, id_at + 4)?;
                    let at = if frame[id_at + 1] == 0xff {
                        id_at + 8
                    } else {
                        id_at + 4
                    };
                    let ether = if frame[id_at] == 212 {
                        ethertype::IPV4
                    } else {
                        ethertype::IPV6
                    };
                    (at, Next::Ether(ether))
                }
                _ => (id_at + 1, Next::Other),
            }
        }
        lt::IEEE802_11 => (0, Next::Wifi),
        lt::IEEE802_11_RADIOTAP => {
            need(frame, Layer::Link, 0, 8)?;
            let len = usize::from(u16::from_le_bytes([frame[2], frame[3]]));
            if len < 8 {
                return Err(ParseError::malformed(
                    Layer::Link,
                    2,
                    "radiotap length below 8",
                ));
            }
            need(frame, Layer::Link, 0, len)?;
            let flags = radiotap_flags(&frame[..len]);
            // The frame ends with its FCS when the flags say so (tshark leaves it out).
            let end = match flags & RADIOTAP_F_FCS {
                0 => usize::MAX,
                _ => frame.len().saturating_sub(4).max(len),
            };
            if flags & RADIOTAP_F_DATAPAD != 0 {
                // The 802.11 header is padded to 4 bytes.
                let (at, next) = wifi_padded(frame, len)?;
                return Ok((at, next, end));
            }
            return Ok((len, Next::Wifi, end));
        }
        _ => {
            return Err(ParseError::malformed(
                Layer::Link,
                0,
                "unsupported link type",
            ))
        }
    };
    Ok((at, next, usize::MAX))
}

/// An Endace ERF record (`LINKTYPE_ERF`, wiretap's erf.c and tshark's `erf` dissector): a
/// 16-byte header — timestamp, type (bit 7: extension headers follow), flags, the record's
/// length (`rlen`, big-endian, with this header), a loss counter or colour, the wire length —
/// then 8-byte extension headers while each one's bit 7 is set, then the packet by type:
/// Ethernet (2, 11, 16, 20) behind a 2-byte offset and pad, PoS HDLC (1, 10, 15, 19: PPP or
/// Cisco HDLC, guessed from the first bytes as tshark does), multichannel HDLC (5, 17) behind a
/// 4-byte header, IPv4 (22) and IPv6 (23). The record ends at `rlen`; other types (ATM,
/// InfiniBand, padding, metadata) carry no IP packet this walk follows.
fn erf(frame: &[u8]) -> Result<(usize, Next, usize), ParseError> {
    need(frame, Layer::Link, 0, 16)?;
    let rlen = usize::from(be16(frame, 10));
    let mut at = 16;
    let mut more = frame[8] & 0x80 != 0;
    while more {
        need(frame, Layer::Link, at, 8)?;
        more = frame[at] & 0x80 != 0;
        at += 8;
    }
    let end = if rlen >= at { rlen } else { usize::MAX };
    let body = &frame[..frame.len().min(end)];
    let (skip, next) = match frame[8] & 0x7f {
        2 | 11 | 16 | 20 => (2, Next::Ethernet),
        22 => (0, Next::Ether(ethertype::IPV4)),
        23 => (0, Next::Ether(ethertype::IPV6)),
        1 | 10 | 15 | 19 | 5 | 17 => {
            let skip = if matches!(frame[8] & 0x7f, 5 | 17) {
                4
            } else {
                0
            };
            need(body, Layer::Link, at + skip, 2)?;
            let (a, n, _) = link(linktype::PPP_HDLC, &body[at + skip..])?;
            return Ok((at + skip + a, n, end));
        }
        _ => (0, Next::Other),
    };
    need(body, Layer::Link, at, skip)?;
    Ok((at + skip, next, end))
}

/// NFLOG (`LINKTYPE_NFLOG`): a 4-byte header (address family, version, resource id), then
/// TLVs, each a length (of the whole TLV, padded to 4 bytes) and a type in the capturing host's
/// byte order; the packet is the payload of type NFULA_PAYLOAD (9).
fn nflog(frame: &[u8]) -> Result<(usize, Next, usize), ParseError> {
    const NFULA_PAYLOAD: u16 = 9;
    need(frame, Layer::Link, 0, 4)?;
    let mut at = 4;
    // The byte order: the one in which the first TLV's length fits.
    let le = {
        let l = frame
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]));
        l.is_some_and(|l| l >= 4 && at + usize::from(l) <= frame.len())
    };
    let read16 = |at: usize| {
        let b = [frame[at], frame[at + 1]];
        if le {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    };
    while at + 4 <= frame.len() {
        let len = usize::from(read16(at));
        let kind = read16(at + 2) & 0x7fff; // the top bit marks a nested attribute
        if len < 4 || at + len > frame.len() {
            return Err(ParseError::malformed(
                Layer::Link,
                at,
                "NFLOG TLV length out of range",
            ));
        }
        if kind == NFULA_PAYLOAD {
            // The packet ends where its TLV does.
            return Ok((at + 4, Next::Ip, at + len));
        }
        at += (len + 3) & !3;
    }
    Ok((frame.len(), Next::Other, usize::MAX))
}

/// Radiotap's flags: the frame includes its FCS (`IEEE80211_RADIOTAP_F_FCS`).
const RADIOTAP_F_FCS: u8 = 0x10;
/// Radiotap's flags: the 802.11 header is padded to 32 bits (`IEEE80211_RADIOTAP_F_DATAPAD`).
const RADIOTAP_F_DATAPAD: u8 = 0x20;

/// The radiotap header `rt`'s flags field (0 when absent).
fn radiotap_flags(rt: &[u8]) -> u8 {
    // The present bitmaps: a chain of 32-bit words while bit 31 is set.
    let mut at = 4;
    let present = u32::from_le_bytes([rt[4], rt[5], rt[6], rt[7]]);
    let mut word = present;
    while word & (1 << 31) != 0 && at + 8 <= rt.len() {
        at += 4;
        word = u32::from_le_bytes([rt[at], rt[at + 1], rt[at + 2], rt[at + 3]]);
    }
    let mut field = at + 4;
    if present & 1 != 0 {
        // TSFT: 8 bytes, aligned to 8.
        field = (field + 7) & !7;
        field += 8;
    }
    match present & 2 {
        0 => 0,
        _ => rt.get(field).copied().unwrap_or(0),
    }
}

/// An 802.11 frame at `at` whose header is padded to 4 bytes: where its LLC header starts.
fn wifi_padded(frame: &[u8], at: usize) -> Result<(usize, Next), ParseError> {
    let (hdr, next) = wifi_header(frame, at)?;
    let Some(hdr) = hdr else {
        return Ok((at, next));
    };
    let padded = at + ((hdr - at + 3) & !3);
    llc(frame, padded)
}

/// An 802.11 frame at `at`: the offset after its MAC header (None with `Next::Other` for frames
/// that hold no IP: management, control, null data, protected).
fn wifi_header(frame: &[u8], at: usize) -> Result<(Option<usize>, Next), ParseError> {
    need(frame, Layer::Link, at, 2)?;
    let (fc, flags) = (frame[at], frame[at + 1]);
    let (kind, subtype) = ((fc >> 2) & 3, fc >> 4);
    if kind != 2 || subtype & 4 != 0 || flags & 0x40 != 0 {
        return Ok((None, Next::Other)); // not data, no data (null), or encrypted
    }
    let mut len = 24;
    if flags & 3 == 3 {
        len += 6; // a fourth address (WDS)
    }
    if subtype & 8 != 0 {
        len += 2; // QoS control
        if flags & 0x80 != 0 {
            len += 4; // HT control
        }
    }
    need(frame, Layer::Link, at, len)?;
    Ok((Some(at + len), Next::Other))
}

/// The largest value of an Ethernet header's type field that is an IEEE 802.3 length (1,500
/// bytes: `ETH_DATA_LEN`); from 1,536 (0x0600) it is an EtherType.
const MAX_8023_LENGTH: u16 = 1500;

/// Linux cooked captures' protocol for a whole Ethernet frame (`ETH_P_ALL`'s neighbour
/// `LINUX_SLL_P_ETHERNET`, 3) and for an 802.2 LLC frame (`LINUX_SLL_P_802_2`, 4).
const SLL_P_ETHERNET: u16 = 0x0003;
const SLL_P_802_2: u16 = 0x0004;

/// An LLC header at `at`: SNAP (AA AA 03, an OUI of zeros or the bridge-tunnel one) gives an
/// EtherType; anything else is not IP.
fn llc(frame: &[u8], at: usize) -> Result<(usize, Next), ParseError> {
    need(frame, Layer::Link, at, 8)?;
    let snap = frame[at..at + 3] == [0xaa, 0xaa, 0x03]
        && (frame[at + 3..at + 6] == [0, 0, 0] || frame[at + 3..at + 6] == [0, 0, 0xf8]);
    Ok(if snap {
        (at + 8, Next::Ether(be16(frame, at + 6)))
    } else if frame[at..at + 3] == [0x06, 0x06, 0x03] {
        // DSAP and SSAP 0x06: IP (RFC 1042's other form; tshark's llc decodes it).
        (at + 3, Next::Ether(ethertype::IPV4))
    } else {
        (at, Next::Other)
    })
}

struct Walk<'a> {
    frame: &'a [u8],
    /// Where the current packet ends, as its encapsulation says (`usize::MAX`: it does not).
    end: usize,
    vlan: Option<u16>,
    tunnel: Option<Tunnel>,
    tunnels: TunnelStack,
    layers: usize,
}

impl Walk<'_> {
    fn walk(mut self, mut at: usize, mut next: Next) -> Result<Option<Segment>, ParseError> {
        let frame = self.frame;
        loop {
            self.layers += 1;
            if self.layers > MAX_LAYERS {
                return Err(ParseError::malformed(
                    Layer::Link,
                    at,
                    "more than 64 encapsulations",
                ));
            }
            next = match next {
                Next::Other => return Ok(None),
                Next::Ethernet => {
                    need(frame, Layer::Ethernet, at, 14)?;
                    at += 14;
                    match be16(frame, at - 2) {
                        // IEEE 802.3: a length, and an LLC header after it (SNAP carries an
                        // EtherType, as tshark's eth dissector decodes it).
                        len if len <= MAX_8023_LENGTH && frame.len() >= at + 8 => {
                            // The frame ends where its length says: what follows is padding
                            // or a trailer (tshark's eth dissector cuts the LLC payload there).
                            self.end = self.end.min(at + usize::from(len));
                            let (a, n) = llc(frame, at)?;
                            at = a;
                            n
                        }
                        len if len <= MAX_8023_LENGTH => Next::Other, // not even an LLC header
                        t => Next::Ether(t),
                    }
                }
                Next::Wifi => {
                    let (hdr, n) = wifi_header(frame, at)?;
                    match hdr {
                        Some(h) => {
                            let (a, n) = llc(frame, h)?;
                            at = a;
                            n
                        }
                        None => n,
                    }
                }
                Next::Ppp => {
                    need(frame, Layer::Link, at, 1)?;
                    // Protocol-field compression: an odd first byte is a one-byte protocol.
                    let proto = if frame[at] & 1 == 1 {
                        at += 1;
                        u16::from(frame[at - 1])
                    } else {
                        need(frame, Layer::Link, at, 2)?;
                        at += 2;
                        be16(frame, at - 2)
                    };
                    match proto {
                        0x0021 => Next::Ether(ethertype::IPV4),
                        0x0057 => Next::Ether(ethertype::IPV6),
                        0x0281 => Next::Ether(ethertype::MPLS),
                        _ => Next::Other,
                    }
                }
                Next::Ip => {
                    need(frame, Layer::Link, at, 1)?;
                    match frame[at] >> 4 {
                        4 => Next::Ether(ethertype::IPV4),
                        6 => Next::Ether(ethertype::IPV6),
                        _ => Next::Other,
                    }
                }
                Next::Ether(t) => match t {
                    ethertype::VLAN
                    | ethertype::QINQ
                    | ethertype::QINQ_LEGACY
                    | ethertype::QINQ_LEGACY2 => {
                        need(frame, Layer::Vlan, at, 4)?;
                        self.vlan = Some(be16(frame, at) & 0x0fff);
                        at += 4;
                        match be16(frame, at - 2) {
                            // An 802.3 length and an LLC header after the tag.
                            len if len <= MAX_8023_LENGTH => {
                                self.end = self.end.min(at + usize::from(len));
                                let (a, n) = llc(frame, at)?;
                                at = a;
                                n
                            }
                            t => Next::Ether(t),
                        }
                    }
                    ethertype::MPLS | ethertype::MPLS_MULTICAST => {
                        // Labels to the bottom of the stack (its S bit).
                        loop {
                            need(frame, Layer::Link, at, 4)?;
                            at += 4;
                            self.layers += 1;
                            if self.layers > MAX_LAYERS {
                                return Err(ParseError::malformed(
                                    Layer::Link,
                                    at,
                                    "more than 64 encapsulations",
                                ));
                            }
                            if frame[at - 2] & 1 == 1 {
                                break;
                            }
                        }
                        // Then IPv4 or IPv6 by the version nibble, or (0) a pseudowire control
                        // word and an Ethernet frame.
                        need(frame, Layer::Link, at, 1)?;
                        match frame[at] >> 4 {
                            4 | 6 => Next::Ip,
                            0 => {
                                at += 4;
                                Next::Ethernet
                            }
                            _ => Next::Other,
                        }
                    }
                    ethertype::PPPOE_SESSION => {
                        // Version/type, code, session id, payload length; then PPP.
                        need(frame, Layer::Link, at, 6)?;
                        let len = usize::from(be16(frame, at + 4));
                        at += 6;
                        self.end = self.end.min(at.saturating_add(len));
                        Next::Ppp
                    }
                    ethertype::TEB => Next::Ethernet,
                    ethertype::JUMBO_LLC => {
                        let (a, n) = llc(frame, at)?;
                        at = a;
                        n
                    }
                    ethertype::FABRICPATH => {
                        // The frame inside ends with its own FCS, which tshark (`eth_withfcs`)
                        // takes off.
                        need(frame, Layer::Link, at, 2)?;
                        at += 2;
                        self.end = self.end.min(frame.len().saturating_sub(4)).max(at);
                        Next::Ethernet
                    }
                    ethertype::PBB => {
                        // The I-TAG (flags, service id), then the customer's addresses.
                        need(frame, Layer::Link, at, 4)?;
                        at += 4;
                        Next::Ethernet
                    }
                    ethertype::MACSEC => {
                        // TCI/AN (E: encrypted, SC: an 8-byte SCI follows), short length,
                        // packet number; then, unless encrypted, the data and a 16-byte ICV.
                        need(frame, Layer::Link, at, 6)?;
                        let tci = frame[at];
                        at += if tci & 0x20 != 0 { 14 } else { 6 };
                        if tci & 0x08 != 0 {
                            Next::Other
                        } else {
                            need(frame, Layer::Link, at, 2)?;
                            self.end = self.end.min(frame.len().saturating_sub(16)).max(at);
                            at += 2;
                            Next::Ether(be16(frame, at - 2))
                        }
                    }
                    ethertype::VN_TAG
                    | ethertype::E_TAG
                    | ethertype::CISCO_METADATA
                    | ethertype::HSR
                    | ethertype::R_TAG => {
                        let len = if matches!(t, ethertype::E_TAG | ethertype::CISCO_METADATA) {
                            6
                        } else {
                            4
                        };
                        need(frame, Layer::Link, at, len + 2)?;
                        at += len + 2;
                        Next::Ether(be16(frame, at - 2))
                    }
                    ethertype::TRILL => {
                        // Version, reserved, multi-destination, options length (4-byte
                        // words), hop count; egress and ingress nicknames; the options.
                        need(frame, Layer::Link, at, 6)?;
                        at += 6 + usize::from((be16(frame, at) >> 6) & 0x1f) * 4;
                        Next::Ethernet
                    }
                    ethertype::NSH => {
                        let (a, n) = nsh(frame, at)?;
                        self.tunnels.push(TunnelKind::Nsh);
                        at = a;
                        n
                    }
                    ethertype::PPP => {
                        // PPP in enhanced GRE: perhaps with the HDLC address and control bytes.
                        if frame.get(at..at + 2) == Some(&[0xff, 0x03]) {
                            at += 2;
                        }
                        Next::Ppp
                    }
                    ethertype::IPV4 => match self.ipv4(at)? {
                        Step::Done(s) => return Ok(Some(s)),
                        Step::Inner(a, n) => {
                            at = a;
                            n
                        }
                    },
                    ethertype::IPV6 => match self.ipv6(at)? {
                        Step::Done(s) => return Ok(Some(s)),
                        Step::Inner(a, n) => {
                            at = a;
                            n
                        }
                    },
                    _ => Next::Other,
                },
            };
        }
    }

    /// An IPv4 packet at `at`.
    fn ipv4(&mut self, at: usize) -> Result<Step, ParseError> {
        let frame = self.frame;
        need(frame, Layer::Ipv4, at, 20)?;
        if frame[at] >> 4 != 4 {
            return Err(ParseError::malformed(Layer::Ipv4, at, "version is not 4"));
        }
        let hl = usize::from(frame[at] & 0x0f) * 4;
        if hl < 20 {
            return Err(ParseError::malformed(Layer::Ipv4, at, "IHL below 5"));
        }
        need(frame, Layer::Ipv4, at, hl)?;
        ipv4_options(frame, at, hl)?;
        let total = usize::from(be16(frame, at + 2));
        // TSO/GSO frames captured on the sending host carry 0: the frame's length is the packet's.
        let claimed = if total == 0 {
            self.end.min(frame.len()).saturating_sub(at)
        } else {
            total
        };
        if claimed < hl {
            return Err(ParseError::malformed(
                Layer::Ipv4,
                at,
                "total length shorter than header",
            ));
        }
        let frag = be16(frame, at + 6);
        let (more, offset) = (frag & 0x2000 != 0, frag & 0x1fff);
        // Authentication headers (RFC 4302) between IPv4 and what it carries: walked past.
        let (mut hl, mut proto) = (hl, frame[at + 9]);
        while proto == protocol::AH && !more && offset == 0 {
            need(frame, Layer::Ipv4, at + hl, 2)?;
            let len = (usize::from(frame[at + hl + 1]) + 2) * 4;
            need(frame, Layer::Ipv4, at + hl, len)?;
            proto = frame[at + hl];
            hl += len;
            self.layers += 1;
        }
        let src: IpAddr = std::net::Ipv4Addr::from(be32(frame, at + 12)).into();
        let dst: IpAddr = std::net::Ipv4Addr::from(be32(frame, at + 16)).into();
        let info = IpInfo {
            src,
            dst,
            proto,
            tos: frame[at + 1],
            ttl: frame[at + 8],
            total_len: claimed,
        };
        let frag = (more || offset != 0).then(|| Fragment {
            ident: u32::from(be16(frame, at + 4)),
            offset_bytes: usize::from(offset) * 8,
            more,
            protocol: info.proto,
            data: at + hl..at + hl,
            complete: false,
        });
        self.upper(at, hl, claimed, info, frag, offset == 0)
    }

    /// An IPv6 packet at `at`.
    fn ipv6(&mut self, at: usize) -> Result<Step, ParseError> {
        let frame = self.frame;
        need(frame, Layer::Ipv6, at, 40)?;
        if frame[at] >> 4 != 6 {
            return Err(ParseError::malformed(Layer::Ipv6, at, "version is not 6"));
        }
        let payload_len = usize::from(be16(frame, at + 4));
        let next_header = frame[at + 6];
        let claimed = if payload_len != 0 {
            40 + payload_len
        } else {
            match jumbo(frame, at) {
                Some(len) => 40 + len,
                // As IPv4's 0 (TSO): the frame's length.
                None => self.end.min(frame.len()).saturating_sub(at).max(40),
            }
        };
        let present = (at + claimed).min(self.end).min(frame.len());
        if present < at + 40 {
            // The encapsulation (a PPPoE or NFLOG length) ends inside the fixed header.
            return Err(ParseError::truncated(
                Layer::Ipv6,
                at,
                40,
                present.saturating_sub(at),
            ));
        }
        let upper = ipv6::upper_layer_in(next_header, &frame[at + 40..present])
            .map_err(|e| e.shifted(at))?;
        let src: IpAddr = std::net::Ipv6Addr::from(crate::bytes::<16>(frame, at + 8)).into();
        let dst: IpAddr = std::net::Ipv6Addr::from(crate::bytes::<16>(frame, at + 24)).into();
        let word = be32(frame, at);
        let info = IpInfo {
            src,
            dst,
            proto: upper.protocol,
            tos: (word >> 20) as u8,
            ttl: frame[at + 7],
            total_len: claimed,
        };
        let frag = upper.fragment.map(|f| Fragment {
            ident: f.ident,
            offset_bytes: usize::from(f.offset),
            more: f.more,
            protocol: f.next_header,
            data: at + f.data_offset..at + f.data_offset,
            complete: false,
        });
        let present_upper = upper.header_present();
        self.upper(at, upper.offset, claimed, info, frag, present_upper)
    }

    /// The IP packet at `at` (headers `hl` bytes, `claimed` bytes in all): a tunnel to walk
    /// into, or the segment. `frag`: the packet is a fragment (its `data` starts where the
    /// fragment's bytes do).
    fn upper(
        &mut self,
        at: usize,
        hl: usize,
        claimed: usize,
        info: IpInfo,
        mut frag: Option<Fragment>,
        upper_present: bool,
    ) -> Result<Step, ParseError> {
        let frame = self.frame;
        // The packet ends at the smaller of its length and its encapsulation's.
        let claimed_end = (at + claimed).min(self.end);
        let present_end = claimed_end.min(frame.len());
        let l4 = at + hl;
        if frag.is_none() && l4 <= present_end {
            let ipv6 = info.src.is_ipv6();
            let found = inner(frame, info.proto, l4, present_end, claimed_end, ipv6)?;
            if let Some((inner_at, next, kind, end)) = found {
                self.tunnel.get_or_insert(Tunnel {
                    kind,
                    src: info.src,
                    dst: info.dst,
                });
                self.tunnels.push(kind);
                // A TSO packet inside (of IP length 0) takes what is left of the tunnel's
                // payload: not the trailer after the tunnel's end.
                self.end = end;
                return Ok(Step::Inner(inner_at, next));
            }
        }
        if let Some(f) = &mut frag {
            let start = f.data.start.min(present_end);
            f.data = start..present_end;
            f.complete = present_end == claimed_end;
        }
        let fragment = frag.is_some();
        let mut seg = Segment {
            ip: info,
            l4: None,
            fragment,
            payload: l4.min(present_end)..present_end,
            missing: claimed_end - present_end,
            tunnel: self.tunnel,
            tunnels: self.tunnels,
            vlan: self.vlan,
            frag,
            layers: self.layers,
        };
        // A fragment's transport header is read once its datagram is put together (the first
        // fragment may hold only part of it).
        if !upper_present || fragment {
            return Ok(Step::Done(seg));
        }
        match info.proto {
            protocol::TCP => {
                let t = tcp::Packet::new_checked(&frame[l4.min(present_end)..present_end])
                    .map_err(|e| e.shifted(l4))?;
                seg.l4 = Some(L4Info {
                    sport: t.src_port(),
                    dport: t.dst_port(),
                    tcp: Some(TcpInfo {
                        seq: t.seq_number(),
                        ack: t.ack_number(),
                        flags: t.flags(),
                        window: t.window_len(),
                    }),
                });
                seg.payload = l4 + t.header_len()..present_end;
            }
            protocol::UDP => {
                need(frame, Layer::Udp, l4, 8)?;
                if present_end < l4 + 8 {
                    return Err(short(Layer::Udp, l4, 8, &frame[..present_end]));
                }
                seg.l4 = Some(L4Info {
                    sport: be16(frame, l4),
                    dport: be16(frame, l4 + 2),
                    tcp: None,
                });
                // The datagram ends where its length says, when that is inside the packet.
                let end = udp_end(frame, l4, claimed_end, info.src.is_ipv6()).unwrap_or(l4 + 8);
                seg.payload = l4 + 8..end.min(present_end);
                seg.missing = end - end.min(present_end);
            }
            _ => {}
        }
        Ok(Step::Done(seg))
    }
}

/// The shortest length (type and length bytes included) of each IPv4 option tshark 4.0
/// dissects whose fields it reads: a shorter one makes tshark's option dissector read past the
/// option, and the packet is malformed. Measured on tshark 4.0.17 (every option type with every
/// length from 0 to 15); they are the lengths packet-ip.c's option table gives its options
/// (fixed-length ones: their length; variable ones: their minimum).
fn ipv4_option_min_len(kind: u8) -> Option<usize> {
    Some(match kind {
        7 | 130 | 131 | 133 | 137 => 3, // record route, security, loose/strict source route, extended security
        11 | 12 | 68 | 136 | 148 => 4,  // MTU probe and reply, timestamp, stream id, router alert
        134 => 6,                       // commercial security (CIPSO)
        25 => 8,                        // quick-start
        82 => 12,                       // traceroute
        _ => return None,
    })
}

/// Walks the options of the IPv4 header at `at` (`hl` bytes long) as tshark's packet-ip.c
/// does (`dissect_ip_options`): end of options (0) stops the walk, no-operation (1) is one
/// byte, any other option has a length byte. A length byte past the header, a length below 2
/// or one that runs past the header only ends the walk (tshark notes it and goes on to the
/// transport header); a known option shorter than its fields ([`ipv4_option_min_len`]: a
/// Security option of length 2, say) is an error, as tshark marks the packet malformed and
/// dissects nothing after the IP header.
fn ipv4_options(frame: &[u8], at: usize, hl: usize) -> Result<(), ParseError> {
    let (mut k, end) = (at + 20, at + hl);
    while k < end {
        let kind = frame[k];
        match kind {
            0 => break,
            1 => {
                k += 1;
                continue;
            }
            _ => {}
        }
        let Some(&len) = frame.get(k + 1).filter(|_| k + 1 < end) else {
            break;
        };
        let len = usize::from(len);
        if len < 2 || k + len > end {
            break;
        }
        if ipv4_option_min_len(kind).is_some_and(|min| len < min) {
            return Err(ParseError::malformed(
                Layer::Ipv4,
                at,
                "an option is shorter than its fields (tshark: malformed packet)",
            ));
        }
        k += len;
    }
    Ok(())
}

/// IP protocols that carry a tunnel tshark 4.0 decodes by default (`ip.proto` table).
mod ip_proto {
    pub const ETHERIP: u8 = 97;
    pub const L2TP: u8 = 115;
    pub const MPLS_IN_IP: u8 = 137;
    pub const ETHERNET: u8 = 143;
}

/// The tunnel an IP packet's payload at `l4` is, when it is one tshark decodes by default:
/// where the inner packet starts, what it is, the tunnel's kind, and where the tunnel's
/// payload ends. `end`: where the packet's captured bytes end; `claimed_end`: where its length
/// says it ends. The payload ends where the packet does, or before it at the UDP datagram's
/// length and within that at the tunnel's own length (GTP-U's, L2TPv2's), as tshark's
/// dissectors hand the inner packet only those bytes (a shorter length: bytes missing).
fn inner(
    frame: &[u8],
    proto: u8,
    l4: usize,
    end: usize,
    claimed_end: usize,
    ipv6: bool,
) -> Result<Option<(usize, Next, TunnelKind, usize)>, ParseError> {
    let found = match proto {
        protocol::IPV4_IN_IP => Some((l4, Next::Ether(ethertype::IPV4), TunnelKind::IpInIp)),
        protocol::IPV6_IN_IP => Some((l4, Next::Ether(ethertype::IPV6), TunnelKind::IpInIp)),
        protocol::GRE => gre(frame, l4)?,
        ip_proto::ETHERIP => {
            // A 2-byte header whose version nibble is 3, then an Ethernet frame.
            (end >= l4 + 2 && frame[l4] >> 4 == 3).then_some((
                l4 + 2,
                Next::Ethernet,
                TunnelKind::EtherIp,
            ))
        }
        ip_proto::MPLS_IN_IP => Some((l4, Next::Ether(ethertype::MPLS), TunnelKind::Mpls)),
        ip_proto::L2TP => l2tpv3(frame, l4, end, false),
        ip_proto::ETHERNET => Some((l4, Next::Ethernet, TunnelKind::EthInIp)),
        protocol::UDP if end >= l4 + 8 => {
            // A length below 8 ends the decoding at the UDP header (no tunnel).
            let Some(udp_claimed_end) = udp_end(frame, l4, claimed_end, ipv6) else {
                return Ok(None);
            };
            let end = udp_claimed_end.min(end);
            let (sport, dport) = (be16(frame, l4), be16(frame, l4 + 2));
            // tshark tries the lower port's dissector first.
            let (lo, hi) = (sport.min(dport), sport.max(dport));
            let found = match udp_tunnel(frame, lo, l4 + 8, end)? {
                Some(t) => Some(t),
                None if hi != lo => udp_tunnel(frame, hi, l4 + 8, end)?,
                None => None,
            };
            return Ok(
                found.map(|(at, next, kind, limit)| (at, next, kind, udp_claimed_end.min(limit)))
            );
        }
        _ => None,
    };
    Ok(found.map(|(at, next, kind)| (at, next, kind, claimed_end)))
}

/// Where the UDP datagram whose 8-byte header is at `l4` ends, in an IP packet ending at
/// `end`, as tshark's packet-udp.c reads its length field: `None` for a length below 8 (tshark:
/// "Bad length value < 8", and it decodes nothing after the header), except 0 over IPv6 (a
/// jumbogram, RFC 2675: the IP payload's length); a length past the packet is the packet's
/// (tshark flags it and decodes on); a shorter one ends the datagram before the packet does.
fn udp_end(frame: &[u8], l4: usize, end: usize, ipv6: bool) -> Option<usize> {
    let len = usize::from(be16(frame, l4 + 4));
    match len {
        0 if ipv6 => Some(end),
        0..=7 => None,
        _ => Some(end.min(l4 + len)),
    }
}

/// The tunnel a UDP payload at `at` (ending at `end`) on port `port` is, as [`inner`] gives
/// it, but with, last, where the tunnel's own length field ends its payload (`usize::MAX`: it
/// has none).
fn udp_tunnel(
    frame: &[u8],
    port: u16,
    at: usize,
    end: usize,
) -> Result<Option<(usize, Next, TunnelKind, usize)>, ParseError> {
    let has = |n: usize| end >= at.saturating_add(n);
    let found = match port {
        udp_port::VXLAN if has(8) => {
            // The 8-byte VXLAN header (flags with I set), an Ethernet frame.
            (frame[at] & 0x08 != 0).then_some((at + 8, Next::Ethernet, TunnelKind::Vxlan))
        }
        udp_port::VXLAN_GPE if has(8) => {
            let next = match frame[at + 3] {
                1 => Next::Ether(ethertype::IPV4),
                2 => Next::Ether(ethertype::IPV6),
                3 => Next::Ethernet,
                4 => Next::Ether(ethertype::NSH),
                5 => Next::Ether(ethertype::MPLS),
                _ => Next::Other,
            };
            Some((at + 8, next, TunnelKind::VxlanGpe))
        }
        udp_port::GENEVE if has(8) => {
            // Version and option length (4-byte words), flags, protocol type, VNI.
            if frame[at] >> 6 != 0 {
                return Ok(None);
            }
            let len = 8 + usize::from(frame[at] & 0x3f) * 4;
            need(frame, Layer::Link, at, len)?;
            Some((
                at + len,
                Next::Ether(be16(frame, at + 2)),
                TunnelKind::Geneve,
            ))
        }
        udp_port::GTP_U if has(8) => return gtp_u(frame, at, end),
        udp_port::TEREDO => teredo(frame, at, end),
        udp_port::L2TP if has(2) => match be16(frame, at) & 0x000f {
            2 => return l2tpv2(frame, at, end),
            3 => l2tpv3(frame, at, end, true),
            _ => None,
        },
        udp_port::GRE => gre(frame, at)?,
        udp_port::MPLS => Some((at, Next::Ether(ethertype::MPLS), TunnelKind::Mpls)),
        udp_port::LISP_DATA if has(9) => {
            // An 8-byte header (nonce, instance id, locator status), then IPv4 or IPv6.
            matches!(frame[at + 8] >> 4, 4 | 6).then_some((at + 8, Next::Ip, TunnelKind::Lisp))
        }
        udp_port::AYIYA if has(8) => {
            // Identity length (2^n bytes) and type, signature length (4-byte words), hash
            // and authentication methods, operation (1: forward), next header, epoch; then the
            // identity and the signature.
            let id_len = 1_usize << (frame[at] >> 4);
            let sig_len = usize::from(frame[at + 1] >> 4) * 4;
            let inner = at + 8 + id_len + sig_len;
            let next = match frame[at + 3] {
                protocol::IPV4_IN_IP => Next::Ether(ethertype::IPV4),
                protocol::IPV6_IN_IP => Next::Ether(ethertype::IPV6),
                _ => Next::Other,
            };
            (frame[at + 2] & 0x0f == 1 && inner < end).then_some((inner, next, TunnelKind::Ayiya))
        }
        udp_port::TZSP if has(4) => tzsp(frame, at, end),
        udp_port::JMIRROR if has(12) => {
            // Mirror and session ids, then IPv4 with a 20-byte header, IPv6, or PPP in HDLC
            // framing (tshark's heuristic).
            let b = &frame[at + 8..at + 12];
            if b[0] == 0x45 || (b[0] >> 4 == 6 && b[1] & 0x0f == 0 && b[2] == 0 && b[3] == 0) {
                Some((at + 8, Next::Ip, TunnelKind::Jmirror))
            } else if b[0] == 0xff && b[1] == 0x03 && b[2] & 0x0f == 0 && b[3] == 0x21 {
                Some((at + 10, Next::Ppp, TunnelKind::Jmirror))
            } else {
                None
            }
        }
        udp_port::AMT if has(3) => {
            // Version 0, type 6 (multicast data), a reserved byte, then the IP packet.
            (frame[at] == 0x06).then_some((at + 2, Next::Ip, TunnelKind::Amt))
        }
        _ => None,
    };
    Ok(found.map(|(at, next, kind)| (at, next, kind, usize::MAX)))
}

/// A GTP-U header at `at` (3GPP TS 29.281): version 1, G-PDU (message type 255), perhaps
/// with the sequence number, N-PDU number and a chain of extension headers; then the user's
/// IPv4 or IPv6 packet (by its version nibble, as tshark's "TPDU heuristic" takes it), which
/// ends where the header's length (of what follows its first 8 bytes) says.
fn gtp_u(
    frame: &[u8],
    at: usize,
    end: usize,
) -> Result<Option<(usize, Next, TunnelKind, usize)>, ParseError> {
    let flags = frame[at];
    if flags >> 5 != 1 || flags & 0x10 == 0 || frame[at + 1] != 0xff {
        return Ok(None); // not version 1 GTP (PT set), or not a G-PDU (echo, end marker, ...)
    }
    let mut inner = at + 8;
    if flags & 0x07 != 0 {
        // E, S or PN: the sequence number, N-PDU number and next extension type are present.
        need(frame, Layer::Link, at, 12)?;
        inner = at + 12;
        let mut next_type = frame[at + 11];
        // Each extension header: its length in 4-byte words, its content, the next type.
        while next_type != 0 {
            need(frame, Layer::Link, inner, 1)?;
            let len = usize::from(frame[inner]) * 4;
            if len == 0 {
                return Err(ParseError::malformed(
                    Layer::Link,
                    inner,
                    "GTP-U extension header of length 0",
                ));
            }
            need(frame, Layer::Link, inner, len)?;
            next_type = frame[inner + len - 1];
            inner += len;
        }
    }
    if inner >= end {
        return Ok(None);
    }
    let payload_end = at + 8 + usize::from(be16(frame, at + 2));
    Ok(Some((inner, Next::Ip, TunnelKind::GtpU, payload_end)))
}

/// A Teredo packet at `at` (RFC 4380): an optional authentication header (0x0001) and origin
/// indication (0x0000), then IPv6.
fn teredo(frame: &[u8], mut at: usize, end: usize) -> Option<(usize, Next, TunnelKind)> {
    if end >= at + 4 && frame[at..at + 2] == [0, 1] {
        // Authentication: client id and authentication value lengths, an 8-byte nonce and a
        // confirmation byte.
        at += 4 + usize::from(frame[at + 2]) + usize::from(frame[at + 3]) + 9;
    }
    if end >= at + 8 && frame.get(at..at + 2) == Some(&[0, 0]) {
        at += 8; // origin indication
    }
    (end >= at + 40 && frame[at] >> 4 == 6).then_some((
        at,
        Next::Ether(ethertype::IPV6),
        TunnelKind::Teredo,
    ))
}

/// An L2TP version 2 header at `at` (RFC 2661): data messages (T clear) carry PPP, which
/// ends where the header's length says, when it has one (L set).
fn l2tpv2(
    frame: &[u8],
    at: usize,
    end: usize,
) -> Result<Option<(usize, Next, TunnelKind, usize)>, ParseError> {
    let flags = be16(frame, at);
    if flags & 0x8000 != 0 {
        return Ok(None); // a control message
    }
    let mut len = 2 + 4; // flags, tunnel and session ids
    if flags & 0x4000 != 0 {
        len += 2; // length
    }
    if flags & 0x0800 != 0 {
        len += 4; // Ns, Nr
    }
    if flags & 0x0200 != 0 {
        // Offset size, then that many bytes of padding.
        need(frame, Layer::Link, at, len + 2)?;
        len += 2 + usize::from(be16(frame, at + len));
    }
    need(frame, Layer::Link, at, len)?;
    let payload_end = if flags & 0x4000 != 0 {
        at + usize::from(be16(frame, at + 2))
    } else {
        usize::MAX
    };
    let mut inner = at + len;
    if frame.get(inner..inner + 2) == Some(&[0xff, 0x03]) {
        inner += 2; // PPP's HDLC address and control
    }
    Ok((inner < end).then_some((inner, Next::Ppp, TunnelKind::L2tp, payload_end)))
}

/// L2TP version 3 data (RFC 3931) at `at`, over UDP (`udp`: flags and version, 2 reserved
/// bytes, then the session) or directly in IP: a session id (0 is a control message), then
/// an Ethernet pseudowire (RFC 4719) without cookie or L2-specific sublayer, when an Ethernet
/// header carrying IP (or a VLAN tag, or MPLS) follows. tshark decodes the payload only when the
/// capture holds the control connection that set the session's pseudowire type (its "detect"
/// settings); nicsim does not follow the control connection, and takes this, the common case.
fn l2tpv3(frame: &[u8], at: usize, end: usize, udp: bool) -> Option<(usize, Next, TunnelKind)> {
    let session = if udp { at + 4 } else { at };
    if udp && frame.get(at).is_some_and(|f| f & 0x80 != 0) {
        return None; // a control message
    }
    let inner = session + 4;
    if end < inner + 14 || be32(frame, session) == 0 {
        return None;
    }
    matches!(
        be16(frame, inner + 12),
        ethertype::IPV4 | ethertype::IPV6 | ethertype::VLAN | ethertype::QINQ | ethertype::MPLS
    )
    .then_some((inner, Next::Ethernet, TunnelKind::L2tp))
}

enum Step {
    Done(Segment),
    Inner(usize, Next),
}

/// A GRE header at `at` (RFC 2784/2890, and PPTP's enhanced GRE, version 1): where its payload
/// starts and what it is; None for a version this walk does not know.
fn gre(frame: &[u8], at: usize) -> Result<Option<(usize, Next, TunnelKind)>, ParseError> {
    need(frame, Layer::Link, at, 4)?;
    let flags = be16(frame, at);
    let proto = be16(frame, at + 2);
    let mut len = 4;
    match flags & 7 {
        0 => {
            for bit in [0x8000, 0x2000, 0x1000] {
                // Checksum (and reserved), key, sequence number: 4 bytes each.
                if flags & bit != 0 {
                    len += 4;
                }
            }
        }
        1 => {
            // Enhanced GRE (PPTP): payload length and call id, then sequence and
            // acknowledgement numbers when their bits are set.
            len += 4;
            if flags & 0x1000 != 0 {
                len += 4;
            }
            if flags & 0x0080 != 0 {
                len += 4;
            }
        }
        _ => return Ok(None),
    }
    need(frame, Layer::Link, at, len)?;
    let inner = at + len;
    Ok(Some(match proto {
        // ERSPAN type II (a sequence number in GRE; an 8-byte header of version 1) or type I
        // (no sequence number, no header), then the mirrored Ethernet frame.
        ethertype::ERSPAN_2 if flags & 0x1000 != 0 => {
            need(frame, Layer::Link, inner, 8)?;
            (inner + 8, Next::Ethernet, TunnelKind::Erspan)
        }
        ethertype::ERSPAN_2 => (inner, Next::Ethernet, TunnelKind::Erspan),
        ethertype::ERSPAN_3 => {
            // A 12-byte header; its O flag (the last bit) adds an 8-byte platform subheader.
            need(frame, Layer::Link, inner, 12)?;
            let len = if frame[inner + 11] & 1 != 0 { 20 } else { 12 };
            need(frame, Layer::Link, inner, len)?;
            (inner + len, Next::Ethernet, TunnelKind::Erspan)
        }
        ethertype::WCCP => {
            // A 4-byte redirect header unless IPv4 follows at once (tshark's test).
            need(frame, Layer::Link, inner, 1)?;
            let ip = if frame[inner] >> 4 == 4 {
                inner
            } else {
                inner + 4
            };
            (ip, Next::Ip, TunnelKind::Gre)
        }
        _ => (inner, Next::Ether(proto), TunnelKind::Gre),
    }))
}

/// A TZSP header at `at`: version 1, type (received or sent), encapsulation (1: Ethernet),
/// then tagged fields up to the end tag (1; 0 is one byte of padding); then the frame.
fn tzsp(frame: &[u8], at: usize, end: usize) -> Option<(usize, Next, TunnelKind)> {
    if frame[at] != 1 || frame[at + 1] > 1 || be16(frame, at + 2) != 1 {
        return None;
    }
    let mut k = at + 4;
    loop {
        match *frame.get(k).filter(|_| k < end)? {
            0 => k += 1,
            1 => break Some((k + 1, Next::Ethernet, TunnelKind::Tzsp)),
            _ => k += 2 + usize::from(*frame.get(k + 1)?),
        }
    }
}

/// A Network Service Header at `at` (RFC 8300): version 0, the header's length in 4-byte
/// words (at least the base and service path headers), the next protocol.
fn nsh(frame: &[u8], at: usize) -> Result<(usize, Next), ParseError> {
    need(frame, Layer::Link, at, 8)?;
    let len = usize::from(be16(frame, at) & 0x3f) * 4;
    if frame[at] >> 6 != 0 || len < 8 {
        return Ok((at, Next::Other));
    }
    need(frame, Layer::Link, at, len)?;
    let next = match frame[at + 3] {
        1 => Next::Ether(ethertype::IPV4),
        2 => Next::Ether(ethertype::IPV6),
        3 => Next::Ethernet,
        4 => Next::Ether(ethertype::NSH),
        5 => Next::Ether(ethertype::MPLS),
        _ => Next::Other,
    };
    Ok((at + len, next))
}

/// The length a Hop-by-Hop Jumbo Payload option gives an IPv6 packet at `at` with payload
/// length 0 (RFC 2675), if it has one.
fn jumbo(frame: &[u8], at: usize) -> Option<usize> {
    if frame.get(at + 6) != Some(&protocol::HOP_BY_HOP) {
        return None;
    }
    let hbh = at + 40;
    let len = (usize::from(*frame.get(hbh + 1)?) + 1) * 8;
    let opts = frame.get(hbh + 2..hbh + len)?;
    let mut k = 0;
    while k < opts.len() {
        match opts[k] {
            0 => k += 1, // Pad1
            0xc2 if opts.get(k + 1) == Some(&4) && k + 6 <= opts.len() => {
                let v = u32::from_be_bytes([opts[k + 2], opts[k + 3], opts[k + 4], opts[k + 5]]);
                return Some(v as usize);
            }
            _ => k += 2 + usize::from(*opts.get(k + 1)?),
        }
    }
    None
}

#[cfg(test)]
mod ethernet_frame_tests {
    use super::*;

    #[test]
    fn other_link_types_become_ethernet_frames() {
        let ip = [
            0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let mut out = Vec::new();
        assert!(ethernet_frame(linktype::RAW, &ip, &mut out));
        assert_eq!(out[12..14], [0x08, 0x00]);
        assert_eq!(out[14..], ip);
        // Linux cooked capture: the protocol at offset 14.
        let mut sll = vec![0u8; 16];
        sll[14..16].copy_from_slice(&[0x86, 0xdd]);
        sll.extend_from_slice(&[0x60, 0, 0, 0]);
        assert!(ethernet_frame(linktype::LINUX_SLL, &sll, &mut out));
        assert_eq!(out[12..], [0x86, 0xdd, 0x60, 0, 0, 0]);
        // Ethernet stays as it is; a cut SLL header and 802.11 give none.
        assert!(ethernet_frame(linktype::ETHERNET, &sll, &mut out));
        assert_eq!(out, sll);
        assert!(!ethernet_frame(linktype::LINUX_SLL, &sll[..10], &mut out));
        assert!(!ethernet_frame(linktype::IEEE802_11, &sll, &mut out));
        assert!(!ethernet_frame(9999, &sll, &mut out));
    }
}
