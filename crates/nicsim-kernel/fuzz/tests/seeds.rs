//! The fuzz targets' checks on the shipped configurations (TOML, and as JSON for the two the
//! Python front end sends as JSON), on some mutations of them, and on bytes that are not a
//! configuration at all. Runs on stable: `cargo test` in this folder.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

fn files(dir: &str) -> Vec<String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "{dir}");
    v.iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

fn as_json(toml_text: &str) -> String {
    let v: toml::Value = toml::from_str(toml_text).unwrap();
    serde_json::to_string(&v).unwrap()
}

/// The text, and variants with each number in turn made huge, zero and negative.
fn mutations(text: &str) -> Vec<String> {
    let mut out = vec![text.to_string(), String::new(), "\u{0}\u{ff}[".into()];
    for (i, line) in text.lines().enumerate() {
        if let Some((key, value)) = line.split_once(" = ") {
            if value.trim_start().starts_with(|c: char| c.is_ascii_digit()) {
                for v in ["4294967295", "0", "-1", "1e300", "nan"] {
                    let mut lines: Vec<String> = text.lines().map(String::from).collect();
                    lines[i] = format!("{key} = {v}");
                    out.push(lines.join("\n"));
                }
            }
        }
    }
    out
}

#[test]
fn datapath_seeds() {
    let texts = files("configs");
    for text in &texts {
        nicsim_config_fuzz::datapath(as_json(text).as_bytes());
        for m in mutations(text) {
            nicsim_config_fuzz::datapath(m.as_bytes());
        }
    }
}

#[test]
fn router_seeds() {
    for text in files("configs/router") {
        nicsim_config_fuzz::router(as_json(&text).as_bytes());
        for m in mutations(&text).iter().step_by(7) {
            nicsim_config_fuzz::router(m.as_bytes());
        }
    }
}

#[test]
fn flowmem_target_seeds() {
    for text in files("crates/nicsim-flowmem/targets") {
        for m in mutations(&text) {
            nicsim_config_fuzz::flowmem_target(m.as_bytes());
        }
    }
}

#[test]
fn xdp_target_seeds() {
    for text in files("crates/nicsim-xdp/targets") {
        for m in mutations(&text) {
            nicsim_config_fuzz::xdp_target(m.as_bytes());
        }
    }
}

/// The toml crate's syntax errors span lines (`invalid table header` / `expected newline`);
/// every loader puts them on one (found by `make fuzz-config`).
#[test]
fn toml_syntax_errors_are_one_line() {
    for text in [
        "[a]\nx = 1\n[a]\n",
        "[[nics]]\n[nics]\n",
        "x = 1.e\n",
        "[x y]\n",
    ] {
        nicsim_config_fuzz::datapath(text.as_bytes());
        nicsim_config_fuzz::router(text.as_bytes());
        nicsim_config_fuzz::flowmem_target(text.as_bytes());
        nicsim_config_fuzz::xdp_target(text.as_bytes());
    }
}

/// A JSON key may hold a newline; the key path in the error escapes it (found by
/// `make fuzz-config`).
#[test]
fn key_paths_are_one_line() {
    let text = "{\"ru\\nn\": 1}";
    nicsim_config_fuzz::datapath(text.as_bytes());
    nicsim_config_fuzz::router(text.as_bytes());
    let e = <nicsim_router::Config as nicsim_router::Validate>::from_json(text).unwrap_err();
    assert!(e.to_string().contains("ru\\nn"), "{e}");
}
