//! Fuzz target `config_flowmem_target`: arbitrary bytes through [`nicsim_config_fuzz::flowmem_target`] (see
//! src/lib.rs for what is checked). Seeds: the shipped files, copied by `make fuzz-config`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| nicsim_config_fuzz::flowmem_target(data));
