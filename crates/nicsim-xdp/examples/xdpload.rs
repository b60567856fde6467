//! Load BPF objects as `nicsim xdp analyze` does and print, for each, the program chosen (or
//! the loader's error), its maps, kfuncs, the BTF its CO-RE relocations took and a hash of its
//! linked instructions (to compare two builds of the loader over a corpus):
//! `cargo run --example xdpload -p nicsim-xdp -- [--all] [--section S] [--program P] OBJ...`
//! (`--all`: every XDP program of each object, one line each).
fn main() {
    let mut args = std::env::args().skip(1);
    let (mut section, mut program, mut objs, mut all) = (None, None, Vec::new(), false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--section" => section = args.next(),
            "--program" => program = args.next(),
            "--all" => all = true,
            _ => objs.push(a),
        }
    }
    for path in objs {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                println!("{path}: {e}");
                continue;
            }
        };
        let choices: Vec<(Option<String>, Option<String>)> = if all {
            match nicsim_xdp::load::candidates(&bytes) {
                Ok(c) => c
                    .into_iter()
                    .filter(|c| !matches!(c.kind, nicsim_xdp::load::SectionType::Other))
                    .map(|c| (Some(c.section), Some(c.name)))
                    .collect(),
                Err(e) => {
                    println!("{path}: error: {e}");
                    continue;
                }
            }
        } else {
            vec![(section.clone(), program.clone())]
        };
        for (s, p) in choices {
            match nicsim_xdp::load_with(&bytes, s.as_deref(), p.as_deref()) {
                Ok(p) => {
                    let maps: Vec<String> = p
                        .maps
                        .iter()
                        .map(|m| {
                            let inner = m.inner.as_ref().map_or(String::new(), |i| {
                                format!(" of {} {}", i.type_name(), i.name)
                            });
                            format!("{}:{}{inner}", m.name, m.type_name())
                        })
                        .collect();
                    // FNV-1a over the linked instruction slots.
                    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                    for r in &p.raw {
                        for b in [r.code, r.dst | r.src << 4]
                            .into_iter()
                            .chain(r.off.to_le_bytes())
                            .chain(r.imm.to_le_bytes())
                        {
                            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
                        }
                    }
                    println!(
                        "{path}: ok section {} program {} insns {} code {h:016x} lines {} maps [{}] \
                         kfuncs {:?} core_btf {:?}",
                        p.section,
                        p.name,
                        p.raw.len(),
                        p.lines.len(),
                        maps.join(", "),
                        p.kfuncs,
                        p.core_btf
                    );
                }
                Err(e) => println!("{path}: {} error: {e}", p.unwrap_or_default()),
            }
        }
    }
}
