//! What the Python bindings (crates/nicsim-py/src/flow.rs) used to do themselves and now call:
//! the built-in targets' TOML by name, the model over a reassembled capture and over the
//! micro-benchmark, a flow direction that is not there, and the speed benchmark of a file.

mod common;

use std::sync::Arc;

use common::*;
use nicsim_flowmem::bench::{speed_bench, speed_bench_file, views};
use nicsim_flowmem::model::{packet_buffers, MemConfig, MemModel, Workload, TARGETS};
use nicsim_flowmem::{Config, FlowView, Reassembly};

fn capture() -> Vec<u8> {
    let c = Conn::v4();
    let frames = vec![
        c.frame(0, 1000, SYN, b""),
        c.frame(0, 1001, ACK, b"GET / HTTP/1.1\r\n\r\n"),
        c.frame(1, 5000, ACK, b"HTTP/1.1 200 OK\r\n\r\nhello\n"),
    ];
    pcap(&frames)
}

#[test]
fn built_in_targets_by_name() {
    for (name, text) in TARGETS {
        assert_eq!(nicsim_flowmem::model::target_toml(name), Some(text));
        assert_eq!(MemConfig::builtin(name).unwrap().name, name);
    }
    assert_eq!(nicsim_flowmem::model::target_toml("nosuch"), None);
}

#[test]
fn the_model_over_a_reassembly_and_the_micro_benchmark() {
    let m = MemModel::new(MemConfig::builtin("u250-microblaze").unwrap());
    let r = Reassembly::from_capture_bytes(Arc::new(capture()), Config::default()).unwrap();
    let whole = m.compare_reassembly(&r, &Workload::Scan);
    let by_hand = m.compare(&views(&r), &Workload::Scan);
    assert_eq!(whole.copy, by_hand.copy);
    assert_eq!(whole.flow, by_hand.flow);
    assert!(whole.copy.payload_bytes > 0);

    let micro = m.compare_micro(10, 1510, 2048, &Workload::Scan);
    let (arena, dir) = packet_buffers(10, 1510, 2048);
    let by_hand = m.compare(&[FlowView::new(&arena, &dir)], &Workload::Scan);
    assert_eq!(micro.copy, by_hand.copy);
    assert_eq!(micro.flow, by_hand.flow);
    assert_eq!(micro.copy.payload_bytes, 15_100);
}

#[test]
fn a_flow_direction_that_is_not_there_is_named() {
    let r = Reassembly::from_capture_bytes(Arc::new(capture()), Config::default()).unwrap();
    assert!(r.try_view(0, 1).is_ok());
    assert_eq!(
        r.try_view(3, 0).err().unwrap().to_string(),
        "no flow 3 direction 0: the capture has 1 flows, directions 0 and 1"
    );
    assert!(r.try_view(0, 2).is_err());
}

#[test]
fn the_speed_benchmark_of_a_file() {
    let dir = std::env::temp_dir().join(format!("nicsim-flowmem-speed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.pcap");
    std::fs::write(&path, capture()).unwrap();
    let a = speed_bench_file(&path, 1).unwrap();
    let b = speed_bench(Arc::new(capture()), Config::default(), 1).unwrap();
    assert_eq!(
        (
            a.capture_bytes,
            a.packets,
            a.flows,
            a.streams,
            a.stream_bytes
        ),
        (
            b.capture_bytes,
            b.packets,
            b.flows,
            b.streams,
            b.stream_bytes
        )
    );
    let missing = dir.join("missing.pcap");
    let e = speed_bench_file(&missing, 1).unwrap_err();
    assert!(
        e.starts_with(&format!("cannot read {}: ", missing.display())),
        "{e}"
    );
    std::fs::write(&path, b"not a capture").unwrap();
    let e = speed_bench_file(&path, 1).unwrap_err();
    assert!(e.starts_with(&format!("{}: ", path.display())), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
