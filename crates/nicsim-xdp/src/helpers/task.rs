//! The kernel's memory and the current task: `bpf_probe_read_kernel`/`_user` and their `_str`
//! forms, `bpf_get_current_task`/`_btf`, `bpf_task_pt_regs`, `bpf_per_cpu_ptr`,
//! `bpf_this_cpu_ptr`, `bpf_snprintf_btf` (Linux 6.1's `bpf_base_func_proto`, for a loader with
//! CAP_PERFMON), and the tracing helpers later kernels give every program type (the current
//! task's ids and name, perf counters, user memory, signals). What they read is the kernel's,
//! so the symbolic executor takes their results as fresh values and the bytes they write (the
//! buffers their pointer arguments give) as fresh bytes; the interpreter, which has no kernel
//! memory, refuses them in one line.

use crate::helpers::{Helper, WriteLen};

/// `bpf_probe_read_*(dst, size, src)`: `size` bytes at `dst` (`ARG_PTR_TO_UNINIT_MEM`,
/// `ARG_CONST_SIZE_OR_ZERO`).
const PROBE_READ: &[(u8, WriteLen)] = &[(1, WriteLen::Arg(2))];

/// The kernel-memory helpers of Linux 6.1's `bpf_base_func_proto` (ids: include/uapi/linux/bpf.h).
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(35, "task"),                          // get_current_task
    Helper::new(112, "task").writes_only(PROBE_READ), // probe_read_user
    Helper::new(113, "task").writes_only(PROBE_READ), // probe_read_kernel
    Helper::new(114, "task").writes_only(PROBE_READ), // probe_read_user_str
    Helper::new(115, "task").writes_only(PROBE_READ), // probe_read_kernel_str
    Helper::new(149, "task").writes(),                // snprintf_btf
    Helper::new(153, "task"),                         // per_cpu_ptr
    Helper::new(154, "task"),                         // this_cpu_ptr
    Helper::new(158, "task"),                         // get_current_task_btf
    Helper::new(175, "task"),                         // task_pt_regs
    // Later kernels give XDP programs these too (bpf_base_func_proto): the current cgroup's
    // ids, the namespace's pid and tgid, cgroup storage.
    Helper::new(80, "task"),           // get_current_cgroup_id
    Helper::new(120, "task").writes(), // get_ns_current_pid_tgid
    Helper::new(123, "task"),          // get_current_ancestor_cgroup_id
    Helper::new(210, "task").writes(), // cgrp_storage_get
    Helper::new(211, "task"),          // cgrp_storage_delete
    // Linux 6.18's bpf_base_func_proto gives every program type (with CAP_PERFMON) the
    // tracing helpers too: the current task's ids, name, stack and storage, perf counters,
    // user memory, signals.
    Helper::new(14, "task"),           // get_current_pid_tgid
    Helper::new(15, "task"),           // get_current_uid_gid
    Helper::new(16, "task").writes(),  // get_current_comm
    Helper::new(17, "task"),           // get_cgroup_classid
    Helper::new(22, "task"),           // perf_event_read
    Helper::new(37, "task"),           // current_task_under_cgroup
    Helper::new(55, "task").writes(),  // perf_event_read_value
    Helper::new(109, "task"),          // send_signal
    Helper::new(117, "task"),          // send_signal_thread
    Helper::new(141, "task").writes(), // get_task_stack
    Helper::new(148, "task").writes(), // copy_from_user
    Helper::new(156, "task").writes(), // task_storage_get
    Helper::new(157, "task"),          // task_storage_delete
    Helper::new(176, "task").writes(), // get_branch_snapshot
    Helper::new(180, "task").writes().refuse(
        "bpf_find_vma calls its callback on the task's memory area, which the graph does not \
         splice in",
    ),
    Helper::new(191, "task").writes(), // copy_from_user_task
];
