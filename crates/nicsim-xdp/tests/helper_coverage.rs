//! Every helper an XDP program may call has semantics in the analyzer (a row of
//! `nicsim_xdp::helpers`: the interpreter's and the symbolic executor's meaning, or the reason
//! it is refused), by the kernel's own lists: the helper names and ids of the uapi header
//! (`/usr/include/linux/bpf.h`, linux-libc-dev) and of libbpf's `bpf_helper_defs.h`
//! (libbpf-dev), Linux 6.1's list for XDP (`helpers::LINUX_6_1_XDP`), and the running kernel's,
//! asked of its verifier (needs the privileges of `bpf(2)`; without them that part says so and
//! passes). The Makefile's `xdp-tools` installs both headers.

use std::collections::BTreeMap;

use nicsim_xdp::helpers::{self, names::HELPER_NAMES};

/// `FN(name, ...)` entries of `__BPF_FUNC_MAPPER` in the uapi header, in id order.
fn uapi_names() -> Option<Vec<String>> {
    let text = std::fs::read_to_string("/usr/include/linux/bpf.h").ok()?;
    let start = text.find("#define __BPF_FUNC_MAPPER(FN)")?;
    let body = &text[start..];
    let end = body.find("\n\n").unwrap_or(body.len());
    let mut names = Vec::new();
    for part in body[..end].split("FN(").skip(2) {
        let name: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        names.push(name);
    }
    Some(names)
}

/// `bpf_NAME ... = (void *) ID;` of libbpf's helper definitions: id → name without `bpf_`.
fn libbpf_names() -> Option<BTreeMap<u32, String>> {
    let text = std::fs::read_to_string("/usr/include/bpf/bpf_helper_defs.h").ok()?;
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("static ")) {
        let (Some(a), Some(b)) = (line.find("(*bpf_"), line.rfind("(void *) ")) else {
            continue;
        };
        let name: String = line[a + 6..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let id: u32 = line[b + 9..].trim_end_matches(';').trim().parse().ok()?;
        out.insert(id, name);
    }
    Some(out)
}

#[test]
fn helper_names_and_ids_agree_with_the_kernel_headers() {
    let Some(uapi) = uapi_names() else {
        panic!("/usr/include/linux/bpf.h is missing: install linux-libc-dev (make xdp-tools)");
    };
    assert!(
        uapi.len() >= 209,
        "uapi header lists {} helpers",
        uapi.len()
    );
    for (i, name) in uapi.iter().enumerate() {
        let id = i + 1;
        assert_eq!(
            HELPER_NAMES.get(id).copied(),
            Some(name.as_str()),
            "helper {id} in the uapi header"
        );
    }
    let Some(libbpf) = libbpf_names() else {
        panic!(
            "/usr/include/bpf/bpf_helper_defs.h is missing: install libbpf-dev (make xdp-tools)"
        );
    };
    for (id, name) in &libbpf {
        if let Some(ours) = HELPER_NAMES.get(*id as usize) {
            assert_eq!(ours, name, "helper {id} in bpf_helper_defs.h");
        }
    }
}

#[test]
fn every_helper_linux_6_1_gives_xdp_has_semantics() {
    let missing: Vec<String> = helpers::LINUX_6_1_XDP
        .iter()
        .filter(|&&id| helpers::find(id).is_none())
        .map(|&id| helpers::helper_name(id))
        .collect();
    assert!(
        missing.is_empty(),
        "no semantics for: {}",
        missing.join(", ")
    );
    // And every row is a helper that XDP programs of 6.1 or the running kernel may call (a row
    // for a helper no kernel gives XDP would be dead code).
    let probe = nicsim_xdp::kernel::xdp_helper_allowed(1);
    for h in helpers::all() {
        let in_6_1 = helpers::LINUX_6_1_XDP.contains(&h.id);
        let now = probe.is_ok() && nicsim_xdp::kernel::xdp_helper_allowed(h.id).unwrap_or(false);
        assert!(
            in_6_1 || now || probe.is_err(),
            "{} has a row but no kernel gives it to XDP",
            helpers::helper_name(h.id)
        );
    }
}

#[test]
fn every_helper_the_running_kernel_gives_xdp_has_semantics() {
    let max_id = libbpf_names()
        .and_then(|m| m.keys().max().copied())
        .unwrap_or(0)
        .max(HELPER_NAMES.len() as u32)
        + 32;
    let mut allowed = Vec::new();
    for id in 1..=max_id {
        match nicsim_xdp::kernel::xdp_helper_allowed(id) {
            Ok(true) => allowed.push(id),
            Ok(false) => {}
            Err(e) => {
                eprintln!("the running kernel cannot be asked which helpers XDP may call: {e}");
                return;
            }
        }
    }
    assert!(
        allowed.contains(&1) && allowed.contains(&44),
        "the probe finds no XDP helper: {allowed:?}"
    );
    let missing: Vec<String> = allowed
        .iter()
        .filter(|&&id| helpers::find(id).is_none())
        .map(|&id| helpers::helper_name(id))
        .collect();
    assert!(
        missing.is_empty(),
        "the running kernel gives XDP programs helpers without semantics: {}",
        missing.join(", ")
    );
}

/// Every kfunc the running kernel gives XDP programs has a row (semantics, or a refusal with its
/// reason): the kernel's kfuncs are the FUNCs its BTF tags `bpf_kfunc`, and which XDP may call
/// is asked of its verifier (`kernel::xdp_kfunc_allowed`). Without the privileges of `bpf(2)`
/// or the kernel's BTF, this part says so and passes.
#[test]
fn every_kfunc_the_running_kernel_gives_xdp_has_a_row() {
    use nicsim_xdp::helpers::kfuncs;
    let (all, tagged) = match nicsim_xdp::kernel::vmlinux_kfuncs() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("the running kernel's kfuncs cannot be read: {e}");
            return;
        }
    };
    if !tagged {
        eprintln!(
            "the running kernel's BTF has no bpf_kfunc tags: checked the documented list only"
        );
    }
    let allowed = match nicsim_xdp::kernel::xdp_kfuncs() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("the running kernel cannot be asked which kfuncs XDP may call: {e}");
            return;
        }
    };
    // The probe can fail: a kfunc the verifier refuses for XDP (a tracing one) and one it allows.
    if tagged {
        let id = |n: &str| all.iter().find(|(k, _)| k == n).map(|(_, i)| *i);
        if let Some(i) = id("bpf_fentry_test1") {
            assert!(!nicsim_xdp::kernel::xdp_kfunc_allowed(i).unwrap());
        }
        assert!(
            allowed.iter().any(|(n, _)| n == "bpf_xdp_metadata_rx_hash"),
            "the probe finds no XDP kfunc: {allowed:?}"
        );
    }
    let missing: Vec<&str> = allowed
        .iter()
        .filter(|(n, _)| kfuncs::find(n).is_none())
        .map(|(n, _)| n.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "the running kernel gives XDP programs kfuncs without a row (semantics or a refusal with \
         its reason) in helpers/kfuncs.rs: {}",
        missing.join(", ")
    );
    // Each row: modelled, or refused with a one-line reason; each name once.
    let mut seen = std::collections::BTreeSet::new();
    for k in kfuncs::KFUNCS {
        assert!(seen.insert(k.name), "{} has two rows", k.name);
        if let Some(why) = k.refused {
            assert!(
                !why.is_empty() && !why.contains('\n'),
                "{}: {why:?}",
                k.name
            );
            let line = nicsim_xdp::interp::kfunc_refusal(k.name).unwrap();
            assert!(line.contains(why), "{line}");
        } else {
            assert_eq!(
                nicsim_xdp::interp::kfunc_refusal(k.name),
                None,
                "{}",
                k.name
            );
        }
    }
}
