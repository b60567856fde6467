//! The kfuncs an XDP program may call, by the kernel's own list ([`KFUNCS`]: one row per kfunc,
//! the modelled ones and, for each other, why it is refused), and the semantics of the modelled
//! ones: the XDP metadata kfuncs (`bpf_xdp_metadata_rx_timestamp`, `_rx_hash`,
//! `_rx_vlan_tag`) and the conntrack lookup and release (`bpf_xdp_ct_lookup`,
//! `bpf_ct_release`), for the interpreter and for the symbolic executor (docs/xdp.md, "kfuncs").
//! The one-line refusal of the others is `crate::interp::kfunc_refusal`;
//! an extern the running kernel does not have ([`kernel_knows`]) is refused as one that lives in
//! another object, to be linked first (`bpftool gen object`).

/// A kfunc an XDP program may call, as the analyzer knows it.
#[derive(Debug, Clone, Copy)]
pub struct Kfunc {
    /// Its name (the kernel function's).
    pub name: &'static str,
    /// Its family (the kernel's kfunc set it is registered in).
    pub family: &'static str,
    /// Why the analysis refuses it; `None` for a kfunc it analyses.
    pub refused: Option<&'static str>,
}

const fn kf(name: &'static str, family: &'static str) -> Kfunc {
    Kfunc {
        name,
        family,
        refused: None,
    }
}

const fn no(name: &'static str, family: &'static str, why: &'static str) -> Kfunc {
    Kfunc {
        name,
        family,
        refused: Some(why),
    }
}

// The reasons of the refused families, one line each.
const CT_WHY: &str = "only the conntrack lookup is modelled (a new entry, its insertion and its \
                      setters are not)";
const SKB_WHY: &str = "a tc (skb) kfunc: its context argument is a struct __sk_buff, which the \
                       verifier refuses in an XDP program (it shares the conntrack kfunc set \
                       that is registered for XDP)";
const OBJ_WHY: &str = "allocated objects (bpf_obj_new, the lists and red-black trees that hold \
                       them, their reference counts) are kernel memory the analysis does not \
                       follow, and a list or tree walk costs what the program put in it";
const TASK_WHY: &str = "tasks and cgroups are kernel objects, not the packet's: the analysis does \
                        not model them";
const ITER_KERNEL_WHY: &str = "iterates over kernel objects (tasks, cgroups, VMAs): how many \
                               there are is the kernel's, not bounded by the program";
const ITER_BITS_WHY: &str = "iterates over the set bits of a memory region (up to 512 words): not \
                             modelled yet";
const CRYPTO_WHY: &str = "bpf_crypto: a cipher over the dynptrs' bytes, whose context a syscall \
                          program creates; not modelled (cost grows with the data and the \
                          cipher)";
const XFRM_WHY: &str = "IPsec (xfrm) state lookup: the kernel's xfrm state table is not modelled";
const KEY_WHY: &str = "keyrings (signature verification keys) are not modelled";
const LOCK_WHY: &str = "resilient spin locks and IRQ state: a lock that may fail (deadlock, \
                        timeout) is not modelled";
const KMEM_WHY: &str = "reads kernel or user memory at any address: not modelled (as the task \
                        family's helpers)";
const STR_WHY: &str = "string kfuncs read kernel memory at any address (__ign arguments), up to \
                       XATTR_SIZE_MAX (65,536) bytes a string: not modelled";
const DEFER_WHY: &str = "work that runs later (workqueues, task work), not on the packet's path: \
                         not modelled";
const DYNPTR_MORE_WHY: &str = "a dynptr copy or fill over any length: not modelled yet";
const PULL_WHY: &str = "bpf_xdp_pull_data (Linux 6.18) moves non-linear packet bytes into the \
                        linear part and moves the packet's bounds: not modelled (the analysis \
                        takes a linear packet)";

/// Every kfunc an XDP program may call that the analyzer has a row for: the modelled ones
/// first (their semantics in this module and in `crate::interp`/`crate::symex`), then the
/// kernel's others, each refused in one line. The list is Linux 6.18's (x86-64, its BTF's
/// `bpf_kfunc` tags, each probed with the verifier: [`crate::kernel::xdp_kfuncs`]), plus
/// `bpf_xdp_flow_lookup` (net/netfilter/nf_flow_table_bpf.c, Linux 6.10+ with
/// CONFIG_NF_FLOW_TABLE). tests/helper_coverage.rs fails when the running kernel gives XDP a
/// kfunc without a row.
pub const KFUNCS: &[Kfunc] = &[
    kf("bpf_xdp_metadata_rx_timestamp", "xdp_metadata"),
    kf("bpf_xdp_metadata_rx_hash", "xdp_metadata"),
    kf("bpf_xdp_metadata_rx_vlan_tag", "xdp_metadata"),
    kf("bpf_xdp_ct_lookup", "conntrack"),
    kf("bpf_ct_release", "conntrack"),
    // conntrack: the rest
    no("bpf_xdp_ct_alloc", "conntrack", CT_WHY),
    no("bpf_ct_insert_entry", "conntrack", CT_WHY),
    no("bpf_ct_set_timeout", "conntrack", CT_WHY),
    no("bpf_ct_change_timeout", "conntrack", CT_WHY),
    no("bpf_ct_set_status", "conntrack", CT_WHY),
    no("bpf_ct_change_status", "conntrack", CT_WHY),
    no("bpf_ct_set_nat_info", "conntrack", CT_WHY),
    no("bpf_skb_ct_lookup", "conntrack", SKB_WHY),
    no("bpf_skb_ct_alloc", "conntrack", SKB_WHY),
    no(
        "bpf_xdp_flow_lookup",
        "flowtable",
        "the netfilter flowtable lookup: the flowtable is the kernel's, its entries are not \
         modelled",
    ),
    no("bpf_xdp_get_xfrm_state", "xfrm", XFRM_WHY),
    no("bpf_xdp_xfrm_state_release", "xfrm", XFRM_WHY),
    no("bpf_xdp_pull_data", "packet", PULL_WHY),
    // open-coded iterators
    kf("bpf_iter_num_new", "iter_num"),
    kf("bpf_iter_num_next", "iter_num"),
    kf("bpf_iter_num_destroy", "iter_num"),
    no("bpf_iter_bits_new", "iter_bits", ITER_BITS_WHY),
    no("bpf_iter_bits_next", "iter_bits", ITER_BITS_WHY),
    no("bpf_iter_bits_destroy", "iter_bits", ITER_BITS_WHY),
    no("bpf_iter_task_new", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_task_next", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_task_destroy", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_task_vma_new", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_task_vma_next", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_task_vma_destroy", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_css_new", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_css_next", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_css_destroy", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_css_task_new", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_css_task_next", "iter_kernel", ITER_KERNEL_WHY),
    no("bpf_iter_css_task_destroy", "iter_kernel", ITER_KERNEL_WHY),
    // dynptrs
    kf("bpf_dynptr_from_xdp", "dynptr"),
    kf("bpf_dynptr_slice", "dynptr"),
    kf("bpf_dynptr_slice_rdwr", "dynptr"),
    kf("bpf_dynptr_adjust", "dynptr"),
    kf("bpf_dynptr_is_null", "dynptr"),
    kf("bpf_dynptr_is_rdonly", "dynptr"),
    kf("bpf_dynptr_size", "dynptr"),
    kf("bpf_dynptr_clone", "dynptr"),
    no("bpf_dynptr_copy", "dynptr", DYNPTR_MORE_WHY),
    no("bpf_dynptr_memset", "dynptr", DYNPTR_MORE_WHY),
    no("bpf_probe_read_kernel_dynptr", "dynptr", KMEM_WHY),
    no("bpf_probe_read_kernel_str_dynptr", "dynptr", KMEM_WHY),
    no("bpf_probe_read_user_dynptr", "dynptr", KMEM_WHY),
    no("bpf_probe_read_user_str_dynptr", "dynptr", KMEM_WHY),
    // casts, RCU, preemption
    no(
        "bpf_cast_to_kern_ctx",
        "cast",
        "gives the kernel's struct xdp_buff behind the context, whose fields are not modelled",
    ),
    no(
        "bpf_rdonly_cast",
        "cast",
        "gives an untrusted read-only pointer to any kernel type: kernel memory is not modelled",
    ),
    kf("bpf_rcu_read_lock", "rcu"),
    kf("bpf_rcu_read_unlock", "rcu"),
    kf("bpf_preempt_disable", "rcu"),
    kf("bpf_preempt_enable", "rcu"),
    no("bpf_local_irq_save", "lock", LOCK_WHY),
    no("bpf_local_irq_restore", "lock", LOCK_WHY),
    no("bpf_res_spin_lock", "lock", LOCK_WHY),
    no("bpf_res_spin_unlock", "lock", LOCK_WHY),
    no("bpf_res_spin_lock_irqsave", "lock", LOCK_WHY),
    no("bpf_res_spin_unlock_irqrestore", "lock", LOCK_WHY),
    // allocated objects
    no("bpf_obj_new_impl", "obj", OBJ_WHY),
    no("bpf_obj_drop_impl", "obj", OBJ_WHY),
    no("bpf_percpu_obj_new_impl", "obj", OBJ_WHY),
    no("bpf_percpu_obj_drop_impl", "obj", OBJ_WHY),
    no("bpf_refcount_acquire_impl", "obj", OBJ_WHY),
    no("bpf_list_push_front_impl", "obj", OBJ_WHY),
    no("bpf_list_push_back_impl", "obj", OBJ_WHY),
    no("bpf_list_pop_front", "obj", OBJ_WHY),
    no("bpf_list_pop_back", "obj", OBJ_WHY),
    no("bpf_list_front", "obj", OBJ_WHY),
    no("bpf_list_back", "obj", OBJ_WHY),
    no("bpf_rbtree_add_impl", "obj", OBJ_WHY),
    no("bpf_rbtree_remove", "obj", OBJ_WHY),
    no("bpf_rbtree_first", "obj", OBJ_WHY),
    no("bpf_rbtree_root", "obj", OBJ_WHY),
    no("bpf_rbtree_left", "obj", OBJ_WHY),
    no("bpf_rbtree_right", "obj", OBJ_WHY),
    // tasks, cgroups, kernel memory
    no("bpf_task_acquire", "task", TASK_WHY),
    no("bpf_task_release", "task", TASK_WHY),
    no("bpf_task_from_pid", "task", TASK_WHY),
    no("bpf_task_from_vpid", "task", TASK_WHY),
    no("bpf_task_get_cgroup1", "task", TASK_WHY),
    no("bpf_task_under_cgroup", "task", TASK_WHY),
    no("bpf_cgroup_acquire", "task", TASK_WHY),
    no("bpf_cgroup_release", "task", TASK_WHY),
    no("bpf_cgroup_ancestor", "task", TASK_WHY),
    no("bpf_cgroup_from_id", "task", TASK_WHY),
    no(
        "bpf_cgroup_read_xattr",
        "task",
        "reads a cgroup's extended attribute: not modelled",
    ),
    no(
        "bpf_send_signal_task",
        "task",
        "signals to tasks are not modelled",
    ),
    no("bpf_get_kmem_cache", "task", KMEM_WHY),
    no(
        "bpf_map_sum_elem_count",
        "maps",
        "a map's element count summed over its CPUs: not modelled yet",
    ),
    no("bpf_crypto_encrypt", "crypto", CRYPTO_WHY),
    no("bpf_crypto_decrypt", "crypto", CRYPTO_WHY),
    no("bpf_lookup_system_key", "key", KEY_WHY),
    no("bpf_key_put", "key", KEY_WHY),
    no("bpf_strcmp", "strings", STR_WHY),
    no("bpf_strcasecmp", "strings", STR_WHY),
    no("bpf_strchr", "strings", STR_WHY),
    no("bpf_strchrnul", "strings", STR_WHY),
    no("bpf_strnchr", "strings", STR_WHY),
    no("bpf_strrchr", "strings", STR_WHY),
    no("bpf_strlen", "strings", STR_WHY),
    no("bpf_strnlen", "strings", STR_WHY),
    no("bpf_strspn", "strings", STR_WHY),
    no("bpf_strcspn", "strings", STR_WHY),
    no("bpf_strstr", "strings", STR_WHY),
    no("bpf_strnstr", "strings", STR_WHY),
    no(
        "bpf_stream_vprintk_impl",
        "trace",
        "BPF streams (printing into the program's stream, Linux 6.17+): not modelled",
    ),
    no("bpf_wq_init", "deferred", DEFER_WHY),
    no("bpf_wq_set_callback_impl", "deferred", DEFER_WHY),
    no("bpf_wq_start", "deferred", DEFER_WHY),
    no("bpf_task_work_schedule_signal_impl", "deferred", DEFER_WHY),
    no("bpf_task_work_schedule_resume_impl", "deferred", DEFER_WHY),
    no(
        "bpf_throw",
        "control",
        "BPF exceptions (bpf_throw unwinds the program into its exception callback) are not \
         modelled",
    ),
    no(
        "__bpf_trap",
        "control",
        "the compiler's trap (__builtin_trap): the verifier refuses a program that can reach it",
    ),
    no(
        "bpf_modify_return_test_tp",
        "test",
        "a kernel selftest kfunc (net/bpf/test_run.c), not for programs",
    ),
];

/// Whether the interpreter runs kfunc `name` exactly as the kernel does, so that the kernel
/// loader calls it (by its vmlinux BTF id) and `nicsim xdp validate` checks it: the number
/// iterator. (The metadata kfuncs need a device-bound program; the conntrack kfuncs' answers
/// are the kernel's table's.)
pub fn runs_as_kernel(name: &str) -> bool {
    crate::helpers::iter_num::is_iter_num(name)
        || crate::helpers::dynptr::is_dynptr(name)
        || NO_VALUE.contains(&name)
}

/// kfuncs that take no argument, give no value and change nothing the program can read: the
/// RCU read-side section (`bpf_rcu_read_lock`/`_unlock`: rcu_read_lock() and its end, which
/// the verifier pairs) and preemption off and on (`bpf_preempt_disable`/`_enable`: the
/// preemption count, also paired by the verifier). The interpreter gives r0 = 0 (the verifier
/// lets no program read a void kfunc's r0), the symbolic executor fresh r0–r5, the abstract
/// values unknown r0–r5 and nothing else.
pub const NO_VALUE: [&str; 4] = [
    "bpf_rcu_read_lock",
    "bpf_rcu_read_unlock",
    "bpf_preempt_disable",
    "bpf_preempt_enable",
];

/// The row of kfunc `name`, if it has one.
pub fn find(name: &str) -> Option<&'static Kfunc> {
    KFUNCS.iter().find(|k| k.name == name)
}

/// Every kfunc row as JSON for `nicsim xdp helpers`: `[{kfunc, family, modelled, refused,
/// running_kernel}]`, the rows in table order, then any kfunc the running kernel gives XDP
/// without a row (refused: none should be, tests/helper_coverage.rs). `running_kernel` is `xdp`
/// (the running kernel gives XDP programs this kfunc: [`crate::kernel::xdp_kfuncs`]), `absent`
/// (it has no kfunc of that name, or does not give it to XDP), or null (it cannot be asked).
pub fn listing() -> serde_json::Value {
    let kernel = crate::kernel::xdp_kfuncs().ok();
    let status = |name: &str| -> serde_json::Value {
        match kernel {
            Some(k) if k.iter().any(|(n, _)| n == name) => "xdp".into(),
            Some(_) => "absent".into(),
            None => serde_json::Value::Null,
        }
    };
    let mut rows: Vec<serde_json::Value> = KFUNCS
        .iter()
        .map(|k| {
            serde_json::json!({
                "kfunc": k.name,
                "family": k.family,
                "modelled": k.refused.is_none(),
                "refused": k.refused,
                "running_kernel": status(k.name),
            })
        })
        .collect();
    for (name, _) in kernel.unwrap_or_default() {
        if find(name).is_none() {
            rows.push(serde_json::json!({
                "kfunc": name,
                "family": "unknown",
                "modelled": false,
                "refused": "the analyzer has no row for this kfunc (newer than its list)",
                "running_kernel": "xdp",
            }));
        }
    }
    serde_json::Value::Array(rows)
}

/// Whether the running kernel's BTF (`/sys/kernel/btf/vmlinux`) names `name` (a function or a
/// variable: its string table holds every name its types and functions have), `None` when it
/// cannot be read. Read once.
pub fn kernel_knows(name: &str) -> Option<bool> {
    static BTF: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    let btf = BTF
        .get_or_init(|| std::fs::read("/sys/kernel/btf/vmlinux").ok())
        .as_ref()?;
    let needle = [&[0u8][..], name.as_bytes(), &[0u8][..]].concat();
    Some(btf.windows(needle.len()).any(|w| w == needle.as_slice()))
}

/// The interpreter's side.
mod run {
    use crate::insn::Size;
    use crate::interp::*;

    impl Machine<'_> {
        /// `bpf_xdp_ct_lookup(ctx, tuple, tuple_len, opts, opts_len)` as nf_conntrack_bpf.c
        /// (Linux 6.10+) checks its arguments: opts NULL gives NULL; else a failed check sets
        /// `opts->error` and gives NULL; a tuple that passes finds a zeroed entry
        /// (`RunOptions::ct_found`, `opts->dir` set to 0, the original direction) or sets -ENOENT.
        /// A netns_id of 0 or more names no namespace here (-ENONET). `bpf_ct_release(ct)` releases
        /// an entry the program holds.
        pub(crate) fn conntrack(&mut self, pc: u32, name: &str) -> Result<u64, Fault> {
            if name == KFUNC_CT_RELEASE {
                return match self.region_of(self.regs[1]) {
                    (Region::Conn { n }, 0) if self.conns[n as usize] => {
                        self.conns[n as usize] = false;
                        Ok(0)
                    }
                    _ => Err(invalid(
                        pc,
                        format!("kfunc {name}: r1 is not a conntrack entry the program holds"),
                    )),
                };
            }
            if !matches!(self.region_of(self.regs[1]), (Region::Ctx, 0)) {
                return Err(invalid(pc, format!("kfunc {name}: r1 is not the context")));
            }
            let (tuple, tlen, opts, olen) =
                (self.regs[2], self.regs[3], self.regs[4], self.regs[5]);
            if opts == 0 {
                return Ok(0);
            }
            // The verifier checks each pointer is memory of its size (the sizes are the limits).
            if tlen > 0 && tuple != 0 {
                self.place(pc, tuple, tlen.min(64) as usize, Access::HelperRead)?;
            }
            self.place(pc, opts, olen.clamp(1, 64) as usize, Access::Store)?;
            let byte =
                |m: &Self, o: u64| m.load(pc, opts.wrapping_add(o), Size::B, Access::HelperRead);
            let err: i64 = if tuple == 0 || (olen != CT_OPTS_SZ && olen != CT_OPTS_OLD_SZ) {
                -EINVAL
            } else {
                let reserved = if olen == CT_OPTS_SZ {
                    byte(self, 13)? | byte(self, 14)? | byte(self, 15)?
                } else {
                    byte(self, 10)? | byte(self, 11)?
                };
                let l4 = byte(self, 8)?;
                let netns = self.load(pc, opts, Size::W, Access::HelperRead)? as u32 as i32;
                if reserved != 0 {
                    -EINVAL
                } else if l4 != 6 && l4 != 17 {
                    -EPROTO
                } else if netns < -1 {
                    -EINVAL
                } else if tlen != CT_TUPLE_V4 && tlen != CT_TUPLE_V6 {
                    -EAFNOSUPPORT
                } else if netns >= 0 {
                    -ENONET
                } else {
                    if olen == CT_OPTS_SZ && byte(self, 12)? == 0 {
                        self.store(
                            pc,
                            opts + 12,
                            Size::B,
                            NF_CT_DEFAULT_ZONE_DIR as u64,
                            Access::Store,
                        )?;
                    }
                    if self.opts.ct_found {
                        0
                    } else {
                        -ENOENT
                    }
                }
            };
            if err != 0 {
                self.store(pc, opts + 4, Size::W, err as u32 as u64, Access::Store)?;
                return Ok(0);
            }
            self.store(pc, opts + 9, Size::B, 0, Access::Store)?;
            let n = self.conns.len() as u32;
            self.conns.push(true);
            Ok(self.ptr(Region::Conn { n }, 0))
        }
    }
}

/// The symbolic executor's side.
mod sym {

    use crate::insn::Size;
    use crate::interp::{EAFNOSUPPORT, EINVAL, ENODATA, ENOENT, EOPNOTSUPP};

    use crate::symex::*;

    impl Sym<'_> {
        /// A kfunc call. The XDP metadata kfuncs (interp.rs `KFUNC_XDP_METADATA`) return 0, having
        /// written fresh outputs through r2 (and r3), or -ENODATA / -EOPNOTSUPP, writing nothing
        /// (a device's implementation or the kernel's default). Any other kfunc is refused by the
        /// costing before symbolic execution: as a helper nothing is known of.
        pub(crate) fn kfunc(&mut self, id: u32) {
            let name = self.p.kfunc_name(id);
            if crate::helpers::iter_num::is_iter_num(&name) {
                let r0 = self.iter_num(&name);
                return self.set(0, r0);
            }
            if crate::helpers::dynptr::is_dynptr(&name) {
                let r0 = self.dynptr(&name);
                return self.set(0, r0);
            }
            if super::NO_VALUE.contains(&name.as_str()) {
                for r in 0..=5 {
                    let v = self.fresh64("clob");
                    self.set(r, v);
                }
                return;
            }
            if name == crate::interp::KFUNC_CT_LOOKUP || name == crate::interp::KFUNC_CT_RELEASE {
                let r0 = if name == crate::interp::KFUNC_CT_LOOKUP {
                    self.ct_lookup()
                } else {
                    // bpf_ct_release: void, no value changes (a pointer that is not an entry the
                    // program holds is the verifier's refusal; here it changes nothing either).
                    V::S(bv64(0))
                };
                for r in 1..=5 {
                    let v = self.fresh64("clob");
                    self.set(r, v);
                }
                return self.set(0, r0);
            }
            let Some(outs) = crate::interp::kfunc_outputs(&name) else {
                return self.call(u32::MAX);
            };
            let x = self.fresh("(_ BitVec 64)", "kf");
            let ret = self.def(
                "(_ BitVec 64)",
                &format!(
                    "(ite (= {x} {z}) {z} (ite (= {x} {one}) {} {}))",
                    bv64((-ENODATA) as u64),
                    bv64((-EOPNOTSUPP) as u64),
                    z = bv64(0),
                    one = bv64(1),
                ),
            );
            let ok = self.def("Bool", &format!("(= {ret} {})", bv64(0)));
            for (a, n) in outs.iter().enumerate() {
                let ptr = self.reg(2 + a as u8);
                for i in 0..*n as i64 {
                    let d = self.byte_at(&ptr, i);
                    let V::S(old) = self.load(&d, Size::B) else {
                        unreachable!("loads give scalars")
                    };
                    let new = self.fresh("(_ BitVec 8)", "kfo");
                    let b = self.def(
                        "(_ BitVec 64)",
                        &format!("(ite {ok} ((_ zero_extend 56) {new}) {old})"),
                    );
                    self.store(&d, Size::B, &V::S(b));
                }
            }
            for r in 1..=5 {
                let v = self.fresh64("clob");
                self.set(r, v);
            }
            self.set(0, V::S(ret));
        }

        /// `bpf_xdp_ct_lookup(ctx, tuple, tuple_len, opts, opts_len)` (nf_conntrack_bpf.c, Linux
        /// 6.10+): opts NULL gives NULL, nothing written. Else the error is the first failed check
        /// (tuple NULL or opts_len neither 12 nor 16: -EINVAL; reserved bytes not 0: -EINVAL;
        /// l4proto neither TCP nor UDP: -EPROTO; netns_id below -1: -EINVAL; tuple_len neither
        /// the IPv4 nor the IPv6 tuple's: -EAFNOSUPPORT), then for a netns_id of 0 or more a fresh
        /// -ENONET, then found (0) or -ENOENT, a fresh condition (the conntrack table is not the
        /// program's). A non-zero error is written to `opts->error` and the result is NULL; else
        /// the result is an entry whose bytes read fresh (`Region::Record`: its null condition is
        /// the error's) and `opts->dir` is fresh. A 16-byte opts' ct_zone_dir of 0 becomes 3
        /// once the checks pass; an opts_len that is not a constant makes the opts' frame fresh.
        pub(crate) fn ct_lookup(&mut self) -> V {
            use crate::interp::{
                CT_OPTS_OLD_SZ, CT_OPTS_SZ, CT_TUPLE_V4, CT_TUPLE_V6, ENONET, EPROTO,
                NF_CT_DEFAULT_ZONE_DIR,
            };
            let (tuple, tlen, opts, olen) = (self.reg(2), self.reg(3), self.reg(4), self.reg(5));
            if !matches!(opts, V::P(..)) {
                return V::S(bv64(0));
            }
            let c = |e: i64| bv64(e as u64);
            let tuple_null = match &tuple {
                V::P(..) => "false".to_string(),
                V::S(t) => format!("(= {t} {})", bv64(0)),
                _ => "false".to_string(),
            };
            let ol = self.scalar(&olen);
            let tl = self.scalar(&tlen);
            let olen_k = match &olen {
                V::S(t) if *t == bv64(CT_OPTS_SZ) => Some(CT_OPTS_SZ),
                V::S(t) if *t == bv64(CT_OPTS_OLD_SZ) => Some(CT_OPTS_OLD_SZ),
                _ => None,
            };
            let byte = |s: &mut Self, i: i64| -> String {
                if i >= CT_OPTS_OLD_SZ as i64 && olen_k != Some(CT_OPTS_SZ) {
                    let f = s.fresh("(_ BitVec 8)", "cto");
                    return s.def("(_ BitVec 64)", &format!("((_ zero_extend 56) {f})"));
                }
                let d = s.byte_at(&opts, i);
                let V::S(b) = s.load(&d, Size::B) else {
                    unreachable!("loads give scalars")
                };
                b
            };
            let b: Vec<String> = (0..16).map(|i| byte(self, i)).collect();
            let V::S(ns) = self.load(&opts, Size::W) else {
                unreachable!("loads give scalars")
            };
            let ns = format!("((_ extract 31 0) {ns})");
            let z = bv64(0);
            let resv = format!(
                "(ite (= {ol} {}) (not (= (bvor {} {} {}) {z})) (not (= (bvor {} {}) {z})))",
                bv64(CT_OPTS_SZ),
                b[13],
                b[14],
                b[15],
                b[10],
                b[11]
            );
            let found = self.fresh("Bool", "ctfound");
            let enonet = self.fresh("Bool", "ctnonet");
            let err = format!(
                "(ite (or {tuple_null} (not (or (= {ol} {o12}) (= {ol} {o16})))) {einval} \
             (ite {resv} {einval} \
             (ite (and (not (= {l4} {tcp})) (not (= {l4} {udp}))) {eproto} \
             (ite (bvslt {ns} #xffffffff) {einval} \
             (ite (and (not (= {tl} {t4})) (not (= {tl} {t6}))) {eafno} \
             (ite (and (bvsge {ns} #x00000000) {enonet}) {enonet_v} \
             (ite {found} {z} {enoent})))))))",
                o12 = bv64(CT_OPTS_OLD_SZ),
                o16 = bv64(CT_OPTS_SZ),
                einval = c(-EINVAL),
                l4 = b[8],
                tcp = bv64(6),
                udp = bv64(17),
                eproto = c(-EPROTO),
                t4 = bv64(CT_TUPLE_V4),
                t6 = bv64(CT_TUPLE_V6),
                eafno = c(-EAFNOSUPPORT),
                enonet_v = c(-ENONET),
                enoent = c(-ENOENT),
            );
            let err = self.def("(_ BitVec 64)", &err);
            let null = self.def("Bool", &format!("(not (= {err} {z}))"));
            // opts->error (bytes 4..8) on failure; opts->dir (byte 9) on success.
            for i in 0..4 {
                let d = self.byte_at(&opts, 4 + i);
                let v = self.def(
                    "(_ BitVec 64)",
                    &format!(
                        "(ite {null} ((_ zero_extend 56) ((_ extract {} {}) {err})) {})",
                        8 * i + 7,
                        8 * i,
                        b[4 + i as usize]
                    ),
                );
                self.store(&d, Size::B, &V::S(v));
            }
            let dir = self.fresh("(_ BitVec 8)", "ctdir");
            let d = self.byte_at(&opts, 9);
            let v = self.def(
                "(_ BitVec 64)",
                &format!("(ite {null} {} ((_ zero_extend 56) {dir}))", b[9]),
            );
            self.store(&d, Size::B, &V::S(v));
            match olen_k {
                Some(CT_OPTS_SZ) => {
                    let d = self.byte_at(&opts, 12);
                    let v = self.def(
                    "(_ BitVec 64)",
                    &format!(
                        "(ite (and (or (= {err} {z}) (= {err} {enoent})) (= {old} {z})) {dflt} {old})",
                        enoent = c(-ENOENT),
                        old = b[12],
                        dflt = bv64(NF_CT_DEFAULT_ZONE_DIR as u64),
                    ),
                );
                    self.store(&d, Size::B, &V::S(v));
                }
                Some(_) => {}
                None => self.havoc(&opts),
            }
            V::P(Region::Record { null }, bv64(0), Some(0))
        }
    }
}
