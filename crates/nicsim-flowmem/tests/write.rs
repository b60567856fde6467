//! `nicsim_flowmem::write`: flows.json, directions.csv and a stream file only per direction
//! with a stream byte, as `nicsim flowmem reassemble` writes them; and what a flow costs the
//! reassembler (a SYN flood's flows hold one direction's state, not two).

mod common;

use common::*;
use nicsim_flowmem::names::HoleMarker;
use nicsim_flowmem::write::{write_directions, write_stream};
use nicsim_flowmem::Config;

const ISN: u32 = 1000;

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("nicsim-write-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn only_directions_with_stream_bytes_get_a_file() {
    let c = Conn::v4();
    // "abc", a hole of 3, "ghi" from a; b only acknowledges.
    let frames = vec![
        c.frame(0, ISN, SYN, b""),
        c.frame(1, 5000, SYN | ACK, b""),
        c.frame(0, ISN + 1, ACK, b"abc"),
        c.frame(0, ISN + 7, ACK, b"ghi"),
        c.frame(1, 5001, ACK, b""),
    ];
    let out = reassemble(&frames, Config::default());
    let dir = tmp("files");
    let w = write_directions(&out, &dir, HoleMarker::Zero).unwrap();
    assert_eq!(
        (w.directions, w.files, w.stream_bytes, w.hole_bytes),
        (2, 1, 9, 3)
    );
    assert_eq!(w.sizes, vec![9, 0]);
    assert_eq!(
        std::fs::read(dir.join("flow00000.0.bin")).unwrap(),
        b"abc\0\0\0ghi"
    );
    assert!(!dir.join("flow00000.1.bin").exists());
    let flows: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("flows.json")).unwrap()).unwrap();
    assert_eq!(flows[0]["file"], "flow00000.0.bin");
    assert_eq!(flows[0]["holes"], serde_json::json!([[3, 3]]));
    assert!(flows[1]["file"].is_null());
    let csv = std::fs::read_to_string(dir.join("directions.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("flow,direction,src,dst,sport,dport,proto,"));
    assert!(lines[0].ends_with(",unacked_bytes,snaplen_cut_bytes,file,holes"));
    assert!(lines[1].ends_with(",flow00000.0.bin,1"), "{}", lines[1]);
    assert!(lines[2].ends_with(",,0"), "{}", lines[2]);
    // tshark's markers: between runs only.
    let mut tshark = Vec::new();
    write_stream(&out.view(0, 0).unwrap(), HoleMarker::Tshark, &mut tshark).unwrap();
    assert_eq!(tshark, b"abc[3 bytes missing in capture file]\0ghi");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_syn_flood_writes_no_stream_file() {
    let frames: Vec<Vec<u8>> = (0..2000u16)
        .map(|i| {
            let c = Conn {
                aport: 1024 + i,
                ..Conn::v4()
            };
            c.frame(0, ISN + u32::from(i), SYN, b"")
        })
        .collect();
    let out = reassemble(&frames, Config::default());
    assert_eq!(out.flows.len(), 2000);
    let dir = tmp("syn");
    let w = write_directions(&out, &dir, HoleMarker::Zero).unwrap();
    assert_eq!((w.directions, w.files, w.stream_bytes), (4000, 0, 0));
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_reply_joins_its_flow_whichever_endpoint_is_lower() {
    // The flow table keys a connection by its endpoints in a fixed order: a reply is the same
    // flow's direction 1, whether the first sender's endpoint is the lower or the higher.
    for c in [
        Conn::v4(),
        Conn {
            a: Conn::v4().b,
            b: Conn::v4().a,
            ..Conn::v4()
        },
    ] {
        let frames = vec![
            c.frame(0, ISN, SYN, b""),
            c.frame(1, 5000, SYN | ACK, b""),
            c.frame(0, ISN + 1, ACK, b"hi"),
            c.frame(1, 5001, ACK, b"yo"),
        ];
        let out = reassemble(&frames, Config::default());
        assert_eq!(out.flows.len(), 1);
        assert_eq!(bytes(&out, 0, 0), b"hi");
        assert_eq!(bytes(&out, 0, 1), b"yo");
        assert_eq!(out.flows[0].dirs[0].src, c.a);
    }
}
