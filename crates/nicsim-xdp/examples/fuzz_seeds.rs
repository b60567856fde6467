//! Seeds for the `decode` fuzz target (crates/nicsim-xdp/fuzz): writes the linked instruction
//! bytes of each object's program(s), as the loader hands them to the decoder, to OUT_DIR.
//! `cargo run --example fuzz_seeds -p nicsim-xdp -- OUT_DIR OBJ...` (`make fuzz` runs it).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: fuzz_seeds OUT_DIR OBJ...");
        std::process::exit(2);
    }
    let out = std::path::Path::new(&args[1]);
    std::fs::create_dir_all(out).unwrap();
    let mut n = 0;
    for path in &args[2..] {
        let bytes = std::fs::read(path).unwrap();
        let stem = std::path::Path::new(path)
            .file_stem()
            .unwrap()
            .to_string_lossy();
        // Every program the object offers (each function --program can choose).
        let progs: Vec<_> = match nicsim_xdp::load::candidates(&bytes) {
            Ok(cands) => cands
                .iter()
                .filter_map(|c| {
                    let want = format!("{}/{}", c.section, c.name);
                    nicsim_xdp::load_with(&bytes, None, Some(&want))
                        .map_err(|e| eprintln!("fuzz_seeds: {path}: {e} (skipped)"))
                        .ok()
                })
                .collect(),
            Err(e) => {
                eprintln!("fuzz_seeds: {path}: {e} (skipped)");
                Vec::new()
            }
        };
        for p in progs {
            let code: Vec<u8> = p
                .raw
                .iter()
                .flat_map(|r| {
                    let mut s = vec![r.code, r.dst | (r.src << 4)];
                    s.extend_from_slice(&r.off.to_le_bytes());
                    s.extend_from_slice(&r.imm.to_le_bytes());
                    s
                })
                .collect();
            let name = format!("{stem}-{}", p.name);
            std::fs::write(out.join(name), code).unwrap();
            n += 1;
        }
    }
    eprintln!("fuzz_seeds: {n} programs into {}", out.display());
}
