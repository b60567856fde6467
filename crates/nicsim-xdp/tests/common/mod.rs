//! What the XDP integration tests share: the clang-built suite in $NICSIM_XDP_OBJS and the
//! test programs in $NICSIM_XDP_TEST_OBJS (`make xdp-suite` builds both; `make test` does so
//! first) and the `nfp` target.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;

use nicsim_xdp::{Analysis, Options, Target, XdpError};

/// Where the object `name.o` is: in the suite's folder, else in the test programs' folder.
pub fn obj_path(name: &str) -> PathBuf {
    let folder =
        |var: &str, default: &str| {
            PathBuf::from(std::env::var(var).unwrap_or_else(|_| {
                format!("{}/../../target/{default}", env!("CARGO_MANIFEST_DIR"))
            }))
            .join(format!("{name}.o"))
        };
    let suite = folder("NICSIM_XDP_OBJS", "xdp");
    let tests = folder("NICSIM_XDP_TEST_OBJS", "xdp-tests");
    if suite.exists() || !tests.exists() {
        suite
    } else {
        tests
    }
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
