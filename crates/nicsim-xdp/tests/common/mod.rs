//! What the XDP integration tests share: the clang-built suite in $NICSIM_XDP_OBJS (`make
//! xdp-suite` builds it; `make test` does so first) and the `nfp` target.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;

use nicsim_xdp::{Analysis, Options, Target, XdpError};

/// Where the suite object `name.o` is.
pub fn obj_path(name: &str) -> PathBuf {
    let dir = std::env::var("NICSIM_XDP_OBJS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/xdp").to_string());
    PathBuf::from(dir).join(format!("{name}.o"))
}

/// The suite object `name.o`; panics, naming `make xdp-suite`, when it is not built.
pub fn obj(name: &str) -> Vec<u8> {
    let p = obj_path(name);
    std::fs::read(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (run `make xdp-suite` first)", p.display()))
}

/// The built-in `nfp` target.
pub fn nfp() -> Target {
    Target::builtin("nfp").unwrap().unwrap()
}

/// The analysis of suite object `name` on `nfp`, with the default section.
pub fn analysis(name: &str, loop_bound: Option<u32>) -> Result<Analysis, XdpError> {
    Analysis::new(
        &obj(name),
        nfp(),
        &Options {
            loop_bound,
            memory_budget_bytes: None,
            ..Options::default()
        },
    )
}
