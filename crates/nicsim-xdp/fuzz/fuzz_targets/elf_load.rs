//! Fuzz target `elf_load`: arbitrary bytes as a BPF ELF object, through the loader alone
//! (`nicsim_xdp::load`, choosing the program by section name as `--section` does) and through
//! the whole analysis that `nicsim xdp analyze` runs before its search (`Analysis::new`: load,
//! CFG, costs, constant split, then the naive summary). Errors are fine; a panic or a hang is
//! a bug. Seeds: the compiled XDP suite (`make fuzz`).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use nicsim_xdp::{load, Analysis, Options, Target};

fn nfp() -> &'static Target {
    static T: OnceLock<Target> = OnceLock::new();
    T.get_or_init(|| {
        Target::builtin("nfp")
            .expect("nfp is built in")
            .expect("the nfp target parses")
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = load(data, Some("xdp"));
    if let Ok(a) = Analysis::new(data, nfp().clone(), &Options::default()) {
        let _ = a.naive_summary();
    }
});
