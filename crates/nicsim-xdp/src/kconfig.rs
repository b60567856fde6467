//! `__kconfig` externs, filled as libbpf fills them (`bpf_object__resolve_externs`,
//! `set_kcfg_value_*`): every extern of the object's BTF DATASEC `.kconfig` gets a slot in one
//! read-only global-data map, `.kconfig`, whose bytes are the values of the running kernel's
//! configuration — `/boot/config-$(uname -r)`, else `/proc/config.gz` (libbpf's order), or the
//! file `NICSIM_KCONFIG` names — and `LINUX_KERNEL_VERSION` from `uname -r`. The loader then
//! relocates each `LD_IMM64` of an extern as a pointer into that map (`BPF_PSEUDO_MAP_VALUE`),
//! as libbpf does, so the analysis, the interpreter and the kernel see the same constants.
//!
//! Values: `y` 1, `m` 2, `n` (and `# CONFIG_X is not set`) 0 — libbpf's `enum
//! libbpf_tristate`; a number (decimal, `0x` hex, negative) in the variable's size, little
//! endian; a quoted string into a `char[]` (with its NUL, which must fit). An option the
//! configuration lacks is 0 when the extern is `__weak`, and otherwise an error (libbpf refuses
//! to load such an object: "extern (kcfg) 'X': value not found").

use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;

/// The environment variable naming a kernel configuration file (`.config` text) to take in
/// place of the running kernel's.
pub const KCONFIG_ENV: &str = "NICSIM_KCONFIG";

/// The largest configuration read (a distribution kernel's is about 300 kB).
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The slot of one extern in the `.kconfig` map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KconfigVar {
    /// The extern's name (`CONFIG_HZ`, `LINUX_KERNEL_VERSION`).
    pub name: String,
    /// Its byte offset in the map's value.
    pub off: u64,
}

/// The `.kconfig` map's bytes and where each extern is in them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kconfig {
    /// The map's value: every extern's bytes at its offset.
    pub data: Vec<u8>,
    /// The externs, in the order of the DATASEC.
    pub vars: Vec<KconfigVar>,
}

/// A configuration: option name -> its value as written after `=` (`y`, `m`, `100`,
/// `"text"`), with `n` for `# CONFIG_X is not set`.
pub type Config = HashMap<String, String>;

/// Parse `.config` text.
pub fn parse_config(text: &str) -> Config {
    let mut c = Config::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# ") {
            if let Some(name) = rest.strip_suffix(" is not set") {
                if name.starts_with("CONFIG_") {
                    c.insert(name.to_string(), "n".into());
                }
            }
        } else if let Some((k, v)) = line.split_once('=') {
            if k.starts_with("CONFIG_") {
                c.insert(k.to_string(), v.to_string());
            }
        }
    }
    c
}

/// The running kernel's release (`uname -r`).
fn release() -> Option<String> {
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname fills the struct it is given.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let bytes: Vec<u8> = u
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8(bytes).ok()
}

/// The running kernel's `KERNEL_VERSION` code ([`kernel_version_code`] of `uname -r`, read
/// once per process); `None` when its release does not parse.
pub fn running_version_code() -> Option<u32> {
    static CODE: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *CODE.get_or_init(|| release().as_deref().and_then(kernel_version_code))
}

/// `KERNEL_VERSION(a, b, c)` of a release such as `6.18.44-fc-v1272` (libbpf's
/// `get_kernel_version`: the patch level saturates at 255).
pub fn kernel_version_code(release: &str) -> Option<u32> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let mut num = || parts.next().and_then(|p| p.parse::<u32>().ok());
    let (a, b) = (num()?, num()?);
    let c = num().unwrap_or(0);
    Some((a << 16) + (b.min(255) << 8) + c.min(255))
}

fn read_limited(r: impl Read, what: &str) -> Result<String, String> {
    let mut s = String::new();
    r.take(MAX_CONFIG_BYTES)
        .read_to_string(&mut s)
        .map_err(|e| format!("{what}: {e}"))?;
    Ok(s)
}

/// The configuration the externs take and where it came from: `NICSIM_KCONFIG`'s file (when
/// set and not empty), else the running kernel's (read once per process).
pub fn config() -> Result<(Config, String), String> {
    // Set but empty is unset, as `NICSIM_BTF` and a shell's `VAR= cmd` mean.
    if let Some(p) = std::env::var_os(KCONFIG_ENV).filter(|p| !p.is_empty()) {
        let path = std::path::PathBuf::from(p);
        let named = |e: &dyn std::fmt::Display| {
            format!(
                "{KCONFIG_ENV}={} (the kernel configuration): {e}",
                path.display()
            )
        };
        if !path.is_file() {
            // (A pipe or a device would be read until it ends, if it ends.)
            return Err(named(&if path.is_dir() {
                "a folder, not a .config file"
            } else if path.exists() {
                "not a regular file"
            } else {
                "no such file"
            }));
        }
        let f = std::fs::File::open(&path).map_err(|e| named(&e))?;
        let text = read_limited(f, &path.display().to_string())?;
        return Ok((parse_config(&text), path.display().to_string()));
    }
    static RUNNING: OnceLock<Result<(Config, String), String>> = OnceLock::new();
    RUNNING
        .get_or_init(|| {
            let boot = release().map(|r| format!("/boot/config-{r}"));
            if let Some(b) = boot.as_deref() {
                if let Ok(f) = std::fs::File::open(b) {
                    return Ok((parse_config(&read_limited(f, b)?), b.to_string()));
                }
            }
            let gz = "/proc/config.gz";
            let f = std::fs::File::open(gz).map_err(|_| {
                format!(
                    "the running kernel's configuration is in neither {} nor {gz} (set {KCONFIG_ENV} \
                     to a .config file)",
                    boot.as_deref().unwrap_or("/boot/config-RELEASE")
                )
            })?;
            let text = read_limited(flate2::read::GzDecoder::new(f), gz)?;
            Ok((parse_config(&text), gz.to_string()))
        })
        .clone()
}

/// The bytes of one value for an extern of `size` bytes, or why it has none.
fn value_bytes(name: &str, v: &str, size: usize) -> Result<Vec<u8>, String> {
    if let Some(s) = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        if s.len() + 1 > size {
            return Err(format!(
                "the string value of {name} ({} bytes and its NUL) does not fit its {size} bytes",
                s.len()
            ));
        }
        let mut b = s.as_bytes().to_vec();
        b.resize(size, 0);
        return Ok(b);
    }
    let n: i128 = match v {
        "y" => 1,
        "m" => 2,
        "n" => 0,
        _ => {
            let (neg, digits) = v.strip_prefix('-').map_or((false, v), |d| (true, d));
            let m = match digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
            {
                Some(h) => u64::from_str_radix(h, 16),
                None => digits.parse::<u64>(),
            }
            .map_err(|_| format!("{name}={v} is neither y, m, n, a number nor a string"))?;
            if neg {
                -(m as i128)
            } else {
                m as i128
            }
        }
    };
    if !(1..=8).contains(&size) {
        return Err(format!(
            "{name}={v} is a number, but the extern has {size} bytes (1 to 8 take a number)"
        ));
    }
    Ok((n as i64).to_le_bytes()[..size].to_vec())
}

/// Lay out the externs `vars` (name, size in bytes, `__weak`) of a `.kconfig` DATASEC and fill
/// them from `cfg` (and `LINUX_KERNEL_VERSION` from `version`). `source` names the
/// configuration in errors.
pub fn build(
    vars: &[(String, u64, bool)],
    cfg: &Config,
    source: &str,
    version: Option<u32>,
) -> Result<Kconfig, String> {
    let mut data = Vec::new();
    let mut out = Vec::new();
    for (name, size, weak) in vars {
        let size = usize::try_from(*size)
            .ok()
            .filter(|&s| (1..=4096).contains(&s))
            .ok_or_else(|| format!("extern variable '{name}' (__kconfig) has {size} bytes"))?;
        // Each value aligned to its size (at most 8), as libbpf's layout does.
        let align = size.next_power_of_two().min(8);
        let off = data.len().div_ceil(align) * align;
        let bytes = match name.as_str() {
            "LINUX_KERNEL_VERSION" => match version {
                Some(v) => value_bytes(name, &v.to_string(), size)?,
                None if *weak => vec![0; size],
                None => return Err("the running kernel's release is not known".into()),
            },
            _ => match cfg.get(name) {
                Some(v) => value_bytes(name, v, size).map_err(|e| format!("{e} ({source})"))?,
                None if *weak => vec![0; size],
                None => {
                    return Err(format!(
                        "extern variable '{name}' (__kconfig) has no value in {source} and is not \
                         __weak: libbpf would refuse to load the object (give a configuration \
                         that sets it with {KCONFIG_ENV}=FILE)"
                    ))
                }
            },
        };
        data.resize(off, 0);
        data.extend(bytes);
        out.push(KconfigVar {
            name: name.clone(),
            off: off as u64,
        });
    }
    if data.is_empty() {
        data.push(0);
    }
    Ok(Kconfig { data, vars: out })
}

/// [`build`] with the configuration of [`config`] and the running kernel's version.
pub fn resolve(vars: &[(String, u64, bool)]) -> Result<Kconfig, String> {
    let needs_config = vars.iter().any(|(n, _, _)| n != "LINUX_KERNEL_VERSION");
    let (cfg, source) = if needs_config {
        config()?
    } else {
        (Config::new(), String::new())
    };
    build(
        vars,
        &cfg,
        &source,
        release().as_deref().and_then(kernel_version_code),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_text_and_values_as_libbpf_takes_them() {
        let cfg = parse_config(
            "# comment\nCONFIG_HZ=250\nCONFIG_BPF=y\nCONFIG_NF=m\n# CONFIG_DEBUG is not set\n\
             CONFIG_NAME=\"abc\"\nCONFIG_MASK=0x1f\nCONFIG_NEG=-3\n",
        );
        let vars: Vec<(String, u64, bool)> = [
            ("LINUX_KERNEL_VERSION", 4, false),
            ("CONFIG_BPF", 1, false),
            ("CONFIG_HZ", 4, false),
            ("CONFIG_NF", 4, false),
            ("CONFIG_DEBUG", 1, false),
            ("CONFIG_NAME", 8, false),
            ("CONFIG_MASK", 8, false),
            ("CONFIG_NEG", 2, false),
            ("CONFIG_ABSENT", 4, true),
        ]
        .iter()
        .map(|(n, s, w)| (n.to_string(), *s, *w))
        .collect();
        let k = build(&vars, &cfg, "test", kernel_version_code("6.18.300-x")).unwrap();
        let at = |n: &str| k.vars.iter().find(|v| v.name == n).unwrap().off as usize;
        let u32_at = |o: usize| u32::from_le_bytes(k.data[o..o + 4].try_into().unwrap());
        assert_eq!(
            u32_at(at("LINUX_KERNEL_VERSION")),
            (6 << 16) + (18 << 8) + 255
        );
        assert_eq!(k.data[at("CONFIG_BPF")], 1);
        assert_eq!(at("CONFIG_HZ") % 4, 0);
        assert_eq!(u32_at(at("CONFIG_HZ")), 250);
        assert_eq!(u32_at(at("CONFIG_NF")), 2);
        assert_eq!(k.data[at("CONFIG_DEBUG")], 0);
        assert_eq!(&k.data[at("CONFIG_NAME")..at("CONFIG_NAME") + 4], b"abc\0");
        assert_eq!(k.data[at("CONFIG_MASK")], 0x1f);
        assert_eq!(
            &k.data[at("CONFIG_NEG")..at("CONFIG_NEG") + 2],
            &(-3i16).to_le_bytes()
        );
        assert_eq!(u32_at(at("CONFIG_ABSENT")), 0);
        // A strong extern the configuration lacks, a string too long, a number too wide.
        let one = |n: &str, s: u64| build(&[(n.to_string(), s, false)], &cfg, "test", None);
        assert!(one("CONFIG_ABSENT", 4)
            .unwrap_err()
            .contains("libbpf would refuse"));
        assert!(one("CONFIG_NAME", 3).unwrap_err().contains("does not fit"));
        assert!(one("CONFIG_HZ", 16).unwrap_err().contains("1 to 8"));
    }
}
