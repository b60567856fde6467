//! Load BPF objects as `nicsim xdp analyze` does and print, for each, the program chosen (or
//! the loader's error), its maps and kfuncs:
//! `cargo run --example xdpload -p nicsim-xdp -- [--section S] [--program P] OBJ...`.
fn main() {
    let mut args = std::env::args().skip(1);
    let (mut section, mut program, mut objs) = (None, None, Vec::new());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--section" => section = args.next(),
            "--program" => program = args.next(),
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
        match nicsim_xdp::load_with(&bytes, section.as_deref(), program.as_deref()) {
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
                println!(
                    "{path}: ok section {} program {} insns {} lines {} maps [{}] kfuncs {:?}",
                    p.section,
                    p.name,
                    p.raw.len(),
                    p.lines.len(),
                    maps.join(", "),
                    p.kfuncs
                );
            }
            Err(e) => println!("{path}: error: {e}"),
        }
    }
}
