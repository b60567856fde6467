"""`nicsim xdp calibrate`: the `x86-jit` target, measured on this machine.

The Rust core (`nicsim_xdp::calibrate`) runs generated micro-benchmarks through the running
kernel's JIT with `BPF_PROG_TEST_RUN`, one per instruction class and helper, as the paper's §4
measures the NFP; this module turns the measured nanoseconds into a target file in the format
of the built-in `nfp` target (crates/nicsim-xdp/targets/nfp.toml; here one core whose "cycle"
is one nanosecond) and writes it where `--target x86-jit` looks for it.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

from nicsim.errors import InputError
from nicsim.output import check_output_file, make_parents, missing_parents
from nicsim.xdp.summary import Calibration


def default_path() -> Path:
    """Where `--target x86-jit` is read from: $NICSIM_X86_JIT, else the user's cache folder."""
    env = os.environ.get("NICSIM_X86_JIT")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "nicsim" / "x86-jit.toml"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure(progress: Callable[[str], None] | None = None, budget_s: float = 0.5) -> Calibration:
    """Run the micro-benchmarks: {"overhead_ns", "classes": [{"name", "ns", "what"}]}
    (`nicsim.xdp.summary.Calibration`)."""
    from nicsim import _core

    return json.loads(_core.xdp_calibrate(progress or (lambda _n: None), budget_s))


def target_toml(m: Calibration) -> str:
    """The target file for the measurements `m` (see `measure`)."""
    ns = {c["name"]: c["ns"] for c in m["classes"]}
    what = {c["name"]: c["what"] for c in m["classes"]}

    def f(x: float) -> str:
        return f"{x:.3f}"

    lines = [
        HEADER + " with",
        "# BPF_PROG_TEST_RUN micro-benchmarks (nicsim_xdp::calibrate). One core; a cycle is one ns.",
        f"# Measured {time.strftime('%Y-%m-%d %H:%M:%S %Z')} on {_cpu()}, kernel {platform.release()}.",
        'name = "x86-jit"',
        f'description = "x86-64 BPF JIT, one core of {_cpu()} (kernel {platform.release()}), '
        'one packet per BPF_PROG_TEST_RUN"',
        'helper_rule = "this calibration did not measure it, nor cost it by analogy with what it measured '
        '(nicsim xdp helpers lists every helper\'s status)"',
        *(f"# This kernel's verifier refused the benchmark of {r['name']}: {r['why']}" for r in m.get("refused", [])),
        "",
        "[limits]",
        "mac_pps = inf              # no NIC in the measurement",
        "min_packet_bytes = 60",
        "mtu_bytes = 1500",
        "",
        "[cores]",
        "clock_mhz = 1000.0         # a cycle is a nanosecond",
        "count = 1",
        f"overhead_cycles = {f(m['overhead_ns'])}  # the empty program, one run per BPF_PROG_TEST_RUN (90th percentile of 2,001)",
        "",
        "[insn]                     # ns per instruction: dependency chains, so latencies",
    ]
    for key in ("alu", "alu64", "mul", "div", "endian", "ld_imm64"):
        lines.append(f"{key} = {f(ns[key])}  # {what[key]}")
    lines += [
        "jmp_compare = 0.0          # in jmp_taken / jmp_not_taken",
        f"jmp_taken = {f(ns['jmp_taken'])}  # {what['jmp_taken']}",
        f"jmp_not_taken = {f(ns['jmp_not_taken'])}  # {what['jmp_not_taken']}",
        f"ja = {f(ns['ja'])}  # {what['ja']}",
        "exit = 0.0                 # the program's exit is in overhead_cycles, a callee's in call_local",
        f"call_local = {f(ns['call_local'])}  # {what['call_local']}",
        f"stack = {f(ns['stack'])}  # {what['stack']}",
        "",
        "[memory]",
        f"issue_wait_cycles = {f(min(ns['packet_load'], ns['map_load']))}  # the cheaper load: the latencies below add the rest",
        f"issue_nowait_cycles = {f(ns['packet_store'])}  # {what['packet_store']}",
        f"packet_latency_cycles = {f(ns['packet_load'])}  # {what['packet_load']}",
        *_worst_memory(ns, what),
        "",
        "[helpers]",
    ]

    def helper(key: str, name: str, note: str = "") -> None:
        if name not in ns:  # refused by this kernel (`Calibration.refused`): left uncosted
            return
        src = what[name] + (f"; {note}" if note else "")
        lines.append(f'"{key}" = {{ cycles = {f(ns[name])}, source = "measured: {src}" }}')

    def worst(key: str, names: tuple[str, ...], note: str = "") -> None:
        # The worst of the states measured (issue 29: a hit, a miss, an insert that evicts ...):
        # the analysis does not know which one a packet meets. Names not measured (a file
        # calibrated before they were) are left out.
        got = [n for n in names if n in ns]
        if not got:
            return
        top = max(got, key=lambda n: ns[n])
        src = "; ".join(f"{what[n]} {ns[n]:.1f} ns" for n in got)
        lines.append(f'"{key}" = {{ cycles = {f(ns[top])}, source = "measured, the worst of: {src}'
                     + (f"; {note}" if note else "") + '" }')

    helper("map_lookup_elem.array", "map_lookup_elem.array")
    helper("map_lookup_elem.percpu_array", "map_lookup_elem.percpu_array")
    # Hash maps: the worst of the states measured, on tables of 2^12 entries for maps of at most
    # 4,096 entries (nicsim_xdp::calibrate::SMALL_MAP_ENTRIES) and, as `.large`, on tables of 2^20
    # for larger ones (docs/xdp.md, "The x86-jit target").
    for sfx in ("", ".large"):
        hash_lookups = ("map_lookup_elem.hash", f"map_lookup_elem.hash.hit{sfx}", f"map_lookup_elem.hash.miss{sfx}")
        worst(f"map_lookup_elem.hash{sfx}", hash_lookups)
        worst(f"map_lookup_elem.percpu_hash{sfx}", (*hash_lookups, "map_lookup_elem.percpu_hash.hit"))
        worst(f"map_lookup_elem.lru_hash{sfx}", (*hash_lookups, f"map_lookup_elem.lru_hash.hit{sfx}"))
        # The LRU per-CPU hash (per-CPU flow counters): an LRU hash's lookup, which marks the
        # entry, of one CPU's copy.
        worst(f"map_lookup_elem.lru_percpu_hash{sfx}",
              (*hash_lookups, f"map_lookup_elem.lru_hash.hit{sfx}", "map_lookup_elem.percpu_hash.hit"))
        inserts = ("map_update_elem", f"map_update_elem.hash.new{sfx}")
        for t in ("hash", "percpu_hash"):
            worst(f"map_update_elem.{t}{sfx}", inserts, "the insert of a new key is measured with its delete, charged whole")
        for t in ("lru_hash", "lru_percpu_hash"):
            worst(f"map_update_elem.{t}{sfx}", (*inserts, f"map_update_elem.lru_hash.new{sfx}"))
        for t in ("hash", "percpu_hash", "lru_hash", "lru_percpu_hash"):
            worst(f"map_delete_elem.{t}{sfx}", inserts, "a delete as an update, or as an insert of a new key with its delete")
    helper("map_update_elem.array", "map_update_elem.array")
    helper("map_update_elem.percpu_array", "map_update_elem.array", "taken as array")
    helper("map_update_elem", "map_update_elem")
    worst("map_delete_elem", ("map_update_elem", "map_update_elem.hash.new"),
          "a delete as an update, or as an insert of a new key with its delete")
    for name in ("ktime_get_ns", "get_prandom_u32", "get_smp_processor_id", "redirect", "redirect_map",
                 "xdp_adjust_head", "xdp_adjust_tail"):
        helper(name, name)
    if "csum_diff" in ns and "csum_diff.512" in ns:
        # Its cost grows with the bytes summed: 64 bytes as measured, each byte more as the
        # 512-byte call's 448 bytes more (nicsim_xdp::target::HelperCost::cycles_for_bytes).
        per_byte = max(0.0, (ns["csum_diff.512"] - ns["csum_diff"]) / 448)
        lines.append(f'"csum_diff" = {{ cycles = {f(ns["csum_diff"])}, bytes = 64, cycles_per_byte = {per_byte:.4f}, '
                     f'source = "measured: {what["csum_diff"]}; each byte beyond 64 as {what["csum_diff.512"]} '
                     f'({ns["csum_diff.512"]:.1f} ns) less the 64-byte call, over 448 bytes" }}')
    else:  # measured before 2026-12-07: each byte beyond 64 as the 64-byte call's bytes (more than they cost)
        helper("csum_diff", "csum_diff")
    for name in ("xdp_load_bytes", "xdp_store_bytes"):
        if name in ns:
            helper(name, name)
        else:  # measured since 2026-11-26; older measurements: as csum_diff of 64 bytes
            helper(name, "csum_diff", "taken as csum_diff of 64 bytes")
    # Measured since issue 32 (2026-12-06); a file from an older calibration lacks them (the
    # analysis then says to re-run it).
    for name in ("get_numa_node_id", "jiffies64", "ktime_get_boot_ns", "ktime_get_tai_ns", "xdp_get_buff_len",
                 "check_mtu", "trace_printk", "tcp_raw_gen_syncookie_ipv4", "tcp_raw_check_syncookie_ipv4",
                 "xdp_adjust_meta"):
        if name in ns:
            helper(name, name)
    # A helper this kernel's verifier refused to its benchmark (kernels differ by version and
    # configuration: `Calibration.refused`) is not timed; where a measured helper does the same
    # work it is costed as that one, marked so, for programs analysed for a kernel that has it
    # (the analysis also asks the running kernel's verifier, which says the program is refused).
    for r in m.get("refused", []):
        like = _LIKE_WHEN_REFUSED.get(r["name"])
        if like and like[0] in ns:
            lines.append(f'"{r["name"]}" = {{ cycles = {f(ns[like[0]])}, source = "analogy: {like[0]} measured; '
                         f'this kernel refused its benchmark ({_toml_text(r["why"])}): {like[1]}" }}')
    if "ktime_get_coarse_ns" in ns:  # measured since 2026-11-26; older measurements: as ktime_get_ns
        helper("ktime_get_coarse_ns", "ktime_get_coarse_ns")
    else:
        helper("ktime_get_coarse_ns", "ktime_get_ns", "taken as ktime_get_ns")

    def composite(key: str, parts: tuple[str, ...], why: str) -> None:
        # Helpers a micro-benchmark cannot time as a program uses them, costed as measured
        # classes (docs/xdp.md, "The x86-jit target").
        if any(p not in ns for p in parts):  # a part this kernel refused: left uncosted
            return
        total = sum(ns[p] for p in parts)
        lines.append(f'"{key}" = {{ cycles = {f(total)}, source = "analogy: {" + ".join(parts)} measured; {why}" }}')

    composite("map_lookup_elem.lpm_trie", ("map_lookup_elem.hash", "map_lookup_elem.hash"),
              "a trie walk's cost grows with its depth, which a benchmark's trie does not have: taken as two hash "
              "lookups (an estimate)")
    if "tail_call" in ns:  # measured since 2026-11-26
        # The jump into the target (the count incremented, an indirect jump) is not timed: taken
        # as a bpf-to-bpf call.
        total = ns["tail_call"] + ns["call_local"]
        lines.append(f'"tail_call" = {{ cycles = {f(total)}, source = "measured: {what["tail_call"]}, plus call_local '
                     'for the jump into the target (not timed: a jump cannot be repeated in one program)" }')
    else:  # older measurements: the slot read as an array lookup, the jump as a bpf-to-bpf call
        composite("tail_call", ("map_lookup_elem.array", "call_local"), "not measured by this calibration")

    events = ("without a reader (perf) or consumer (ring buffer) the call returns early or the buffer fills, "
              "so it is not timed: taken as a hash update, a locked write of a record")
    for key in ("perf_event_output", "ringbuf_output", "ringbuf_reserve"):
        composite(key, ("map_update_elem",), events)
    for key in ("ringbuf_submit", "ringbuf_discard"):
        composite(key, ("get_smp_processor_id", "atomic"),
                  "a call and one atomic write of the record's header (the consumer's wake-up not counted)")
    composite("fib_lookup", ("map_lookup_elem.hash", "map_lookup_elem.hash"),
              "the route and the neighbour, each as a hash lookup (without routes the kernel's lookup returns early)")
    for key in ("xdp_metadata_rx_timestamp", "xdp_metadata_rx_hash", "xdp_metadata_rx_vlan_tag"):
        composite(key, ("get_smp_processor_id",),
                  "kfunc, not timed (the benchmarks load no BTF): a call that returns a value without memory "
                  "work; the kernel's default returns -EOPNOTSUPP at once, a driver's reads the receive "
                  "descriptor (a few loads, not counted)")
    composite("xdp_ct_lookup", ("map_lookup_elem.hash",),
              "kfunc, not timed (the benchmarks load no BTF, and the conntrack kfuncs need nf_conntrack's module "
              "BTF): the conntrack table is a hash table, the tuple hashed and its bucket walked (the argument "
              "checks, a few compares, not counted)")
    # kfuncs the benchmarks do not time (they load no BTF): a kfunc is a direct call the verifier
    # does not inline, so each is taken as get_numa_node_id, the measured helper that is such a
    # call and does nothing else (get_smp_processor_id is inlined on x86-64: no call at all).
    for key in ("iter_num_new", "iter_num_next", "iter_num_destroy"):
        composite(key, ("get_numa_node_id",),
                  "kfunc, not timed: a call the verifier does not inline, as get_numa_node_id's, that compares "
                  "and writes the iterator's two ints on the stack (kernel/bpf/bpf_iter.c), a few ALU operations "
                  "and stack accesses not counted")
    for key in ("dynptr_from_xdp", "dynptr_slice", "dynptr_slice_rdwr"):
        composite(key, ("xdp_get_buff_len",),
                  "kfunc, not timed: a call that reads the packet's length (as bpf_xdp_get_buff_len) and writes "
                  "the dynptr, or checks the slice against it and returns a pointer into the linear packet "
                  "(net/core/filter.c bpf_xdp_pointer); a few compares not counted")
    for key in ("dynptr_adjust", "dynptr_is_null", "dynptr_is_rdonly", "dynptr_size", "dynptr_clone"):
        composite(key, ("get_numa_node_id",),
                  "kfunc, not timed: a call the verifier does not inline, as get_numa_node_id's, that reads or "
                  "writes the dynptr's 16 bytes on the stack (kernel/bpf/helpers.c); a few loads not counted")
    for key in ("rcu_read_lock", "rcu_read_unlock", "preempt_disable", "preempt_enable"):
        composite(key, ("get_numa_node_id",),
                  "kfunc, not timed: a call that changes the preemption count (rcu_read_lock() of a preemptible "
                  "kernel, preempt_disable()), a few instructions not counted")
    composite("ct_release", ("get_smp_processor_id", "atomic"),
              "kfunc, not timed (as bpf_xdp_ct_lookup): a call and the entry's reference count decremented, one "
              "atomic operation")
    if "spin_lock.pair" in ns:  # measured since 2026-12-08 (the lock's map created with BTF)
        for key in ("spin_lock", "spin_unlock"):
            lines.append(f'"{key}" = {{ cycles = {f(ns["spin_lock.pair"] / 2)}, source = "measured: '
                         f'{what["spin_lock.pair"]}, halved (the verifier pairs every lock with an unlock on each '
                         'path)" }')
    else:  # older measurements (an analogy a validation beat by 15 %: docs/xdp.md)
        for key in ("spin_lock", "spin_unlock"):
            composite(key, ("get_smp_processor_id", "atomic"),
                      "uncontended: a call and one atomic operation (not timed by this calibration: re-run "
                      "nicsim xdp calibrate)")
    if "trace_printk" in ns:
        composite("trace_vprintk", ("trace_printk",),
                  "the same formatting and trace-buffer write, its arguments read from an array")
        composite("snprintf", ("trace_printk",),
                  "the same formatting into the program's buffer, no trace-buffer write (an upper bound)")
    if "tcp_raw_gen_syncookie_ipv4" in ns:
        for v in ("gen", "check"):
            composite(f"tcp_raw_{v}_syncookie_ipv6", (f"tcp_raw_{v}_syncookie_ipv4",) * 3,
                      "the IPv4 cost (measured) three times: siphash over 36 bytes of addresses and ports where IPv4 "
                      "hashes 12 (an estimate)")
        composite("tcp_gen_syncookie", ("tcp_raw_gen_syncookie_ipv4",) * 3,
                  "with a listening socket: as the raw IPv6 one (the socket's checks not counted; an estimate)")
        composite("tcp_check_syncookie", ("tcp_raw_check_syncookie_ipv4",) * 3,
                  "with a listening socket: as the raw IPv6 one (an estimate)")
    for key in ("sk_lookup_tcp", "sk_lookup_udp", "skc_lookup_tcp"):
        if key in ns:  # measured since issue 29's soundness sweep (2026-12-07): a miss, both tables searched
            # A hit on a listening socket makes the same search (the established table misses
            # first) and takes a reference: one atomic more than the miss measured.
            total = ns[key] + ns["atomic"]
            lines.append(f'"{key}" = {{ cycles = {f(total)}, source = "measured: {what[key]}; plus atomic for the '
                         'reference a hit takes (a hit on a listening socket searches both tables as a miss does)" }')
        else:  # older measurements (an analogy the sweep found beaten by 13 to 30 %)
            composite(key, ("map_lookup_elem.hash", "map_lookup_elem.hash"),
                      "not timed by this calibration: the established and the listening sockets' hash tables, "
                      "each as a hash lookup (an estimate; re-run nicsim xdp calibrate)")
    composite("sk_release", ("get_smp_processor_id", "atomic"),
              "a call and the socket's reference count decremented (an estimate)")
    for key in ("skc_to_tcp6_sock", "skc_to_tcp_sock", "skc_to_tcp_timewait_sock", "skc_to_tcp_request_sock",
                "skc_to_udp6_sock", "skc_to_unix_sock", "skc_to_mptcp_sock"):
        composite(key, ("get_smp_processor_id",), "a call that checks the socket's type (an estimate)")
    if all(n in ns for n in ("timer_init", "timer_set_callback", "timer_start.now", "timer_start.later",
                             "timer_cancel")):  # measured since 2026-12-08 (the timer's map created with BTF)
        for name in ("timer_init", "timer_set_callback", "timer_cancel", "timer_start.later"):
            helper(name, name)
        # A start whose delay the analysis cannot show to be at least 1 ms (nicsim_xdp::cost:
        # `timer_start.later` then) may expire within the packet's run: the worse of the two.
        worst("timer_start", ("timer_start.now", "timer_start.later"),
              "a delay not shown to be at least 1 ms may expire at once, its interrupt and callback on the packet's CPU")
    else:  # older measurements
        for key in ("timer_init", "timer_set_callback", "timer_start", "timer_cancel"):
            composite(key, ("map_update_elem",),
                      "not timed by this calibration (re-run nicsim xdp calibrate): as a hash update, a locked "
                      "write; an estimate (a start that expires at once was measured at 15 µs since: docs/xdp.md)")
    composite("strncmp", ("csum_diff",), "a pass over at most the first string's bytes, as csum_diff's over 64 "
              "(an estimate)")
    if "map_lookup_elem.devmap" in ns:  # measured since 2026-12-07 (an array's inlined lookup took its place)
        helper("map_lookup_elem.devmap", "map_lookup_elem.devmap")
        composite("map_lookup_elem.xskmap", ("map_lookup_elem.devmap",),
                  "an array of sockets indexed by the key, as the device map's call (an estimate)")
    else:
        composite("map_lookup_elem.devmap", ("map_lookup_elem.array",),
                  "an array indexed by the key, as array_map_lookup_elem (not inlined: an estimate; re-run nicsim "
                  "xdp calibrate)")
        composite("map_lookup_elem.xskmap", ("map_lookup_elem.array",),
                  "an array indexed by the key, as array_map_lookup_elem (not inlined: an estimate)")
    composite("map_lookup_elem.cpumap", ("map_lookup_elem.array",),
              "an array indexed by the key (programs may not look a CPU map up: the verifier refuses it)")
    composite("map_lookup_elem.devmap_hash", ("map_lookup_elem.hash",), "a hash of device entries (an estimate)")
    # Helpers the calibration does not time, costed by what they do (issue 32; docs/xdp.md,
    # "The x86-jit target"): each an estimate from measured classes, marked so in the file.
    # bpf_map_lookup_percpu_elem (Linux 5.19+) looks up another CPU's value: a call (the verifier
    # inlines only the plain lookup), then the per-CPU lookup's own work.
    composite("map_lookup_percpu_elem.percpu_array", ("map_lookup_elem.percpu_array", "get_smp_processor_id"),
              "the per-CPU array's lookup and a call (percpu_array_map_lookup_percpu_elem is not inlined)")
    for sfx in ("", ".large"):
        pc_hash = ("map_lookup_elem.hash", f"map_lookup_elem.hash.hit{sfx}", f"map_lookup_elem.hash.miss{sfx}",
                   "map_lookup_elem.percpu_hash.hit")
        worst(f"map_lookup_percpu_elem.percpu_hash{sfx}", pc_hash,
              "htab_percpu_map_lookup_percpu_elem: the per-CPU hash's lookup (not inlined)")
        worst(f"map_lookup_percpu_elem.lru_percpu_hash{sfx}", (*pc_hash, f"map_lookup_elem.lru_hash.hit{sfx}"),
              "the LRU per-CPU hash's lookup, which marks the entry")
    worst("map_lookup_percpu_elem", ("map_lookup_elem.hash", "map_lookup_elem.hash.hit.large",
                                     "map_lookup_elem.hash.miss.large", "map_lookup_elem.lru_hash.hit.large"),
          "a map the analysis cannot place: the worst lookup measured")
    # Queue, stack and bloom filter maps: measured since 2026-12-08 (the queue's three helpers, the
    # bloom filter's push and peek); a stack runs the queue's code with the other end
    # (kernel/bpf/queue_stack_maps.c: the same lock and copy). The plain entries, for a map the
    # analysis cannot place, are the worst of them.
    queue = ("map_push_elem.queue", "map_pop_elem.queue", "map_peek_elem.queue")
    if all(n in ns for n in queue):
        for n in queue:
            helper(n, n)
            helper(n.replace(".queue", ".stack"), n, "taken as the queue's (the same code, the other end)")
        helper("map_push_elem.bloom_filter", "map_push_elem.bloom_filter")
        helper("map_peek_elem.bloom_filter", "map_peek_elem.bloom_filter")
        for key in ("map_push_elem", "map_pop_elem", "map_peek_elem"):
            worst(key, tuple(n for n in (f"{key}.queue", f"{key}.bloom_filter") if n in ns))
    else:  # measured before 2026-12-08
        for key in ("map_push_elem", "map_pop_elem", "map_peek_elem"):
            composite(key, ("map_update_elem",),
                      "queue and stack maps (kernel/bpf/queue_stack_maps.c) take a raw spin lock and copy one value: "
                      "as a hash update, a locked write of a value (an estimate)")
    composite("kptr_xchg", ("get_smp_processor_id", "atomic"), "a call and one atomic exchange (an estimate)")
    for key in ("strtol", "strtoul"):
        composite(key, ("csum_diff",), "a pass over at most the buffer's bytes (at most 64 for the parse): as "
                  "csum_diff's over 64 bytes (an estimate)")
    for key in ("ringbuf_query", "per_cpu_ptr", "this_cpu_ptr"):
        composite(key, ("get_smp_processor_id",), "a call that reads a counter or computes a per-CPU address, "
                  "without memory work of its own (an estimate)")
    for key in ("probe_read_kernel", "probe_read_user", "probe_read_kernel_str", "probe_read_user_str"):
        composite(key, ("csum_diff",) * 8, "copy_from_kernel_nofault / copy_from_user_nofault (or the _str "
                  "forms' strncpy) of at most the destination's bytes, 512 for a stack buffer, the most a program's "
                  "stack frame holds: as csum_diff's pass over 64 bytes, eight times (an estimate; a read into a "
                  "map value of more than 512 bytes may cost more)")
    for key in ("get_current_pid_tgid", "get_current_uid_gid", "get_current_task", "get_current_task_btf",
                "task_pt_regs", "get_current_cgroup_id", "get_current_ancestor_cgroup_id"):
        composite(key, ("get_smp_processor_id", "map_load"),
                  "a call that reads the current task's fields: as get_smp_processor_id and one map value's load "
                  "(an estimate)")
    if "loop" in ns and "loop_16" in ns:  # measured since 2026-11-27
        helper("loop", "loop")
        lines.append(f'"loop.iteration" = {{ cycles = {f(ns["loop_16"] / 16)}, source = "measured: '
                     f'{what["loop_16"]}, over 16 (one call of the callback, its exit included)" }}')
    else:  # older measurements: the call as a bpf-to-bpf call, each iteration as one more
        composite("loop", ("call_local",), "not measured by this calibration")
        composite("loop.iteration", ("call_local", "jmp_taken", "alu64", "alu64"),
                  "not measured by this calibration: the callback's call, the counter's test and increment")
    return "\n".join(lines) + "\n"


#: Helpers whose benchmark a kernel may refuse (it lacks them, or they are configured out),
#: and the measured helper that does the same work: (helper, why).
_LIKE_WHEN_REFUSED = {
    "xdp_adjust_meta": ("xdp_adjust_head", "moves data_meta where bpf_xdp_adjust_head moves data, with the same "
                        "checks against the frame's headroom"),
    "xdp_get_buff_len": ("get_smp_processor_id", "a call that returns a field of the frame, without memory work"),
    "ktime_get_boot_ns": ("ktime_get_ns", "the same clock read, with the boot offset added"),
    "ktime_get_tai_ns": ("ktime_get_ns", "the same clock read, with the TAI offset added"),
    "jiffies64": ("get_smp_processor_id", "a call that reads a counter"),
    "get_numa_node_id": ("get_smp_processor_id", "a call that reads a per-CPU value"),
}


def _toml_text(text: str) -> str:
    """`text` inside a TOML basic string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _worst_memory(ns: dict[str, float], what: dict[str, str]) -> list[str]:
    """The map-value latencies and atomic costs: the worst of one value read again and again and a
    random value of an array of 2^14 (the level-2 cache holds it); for arrays of more than 1 MB of
    values (nicsim_xdp::cost::SMALL_ARRAY_BYTES) a random value of an array of 2^20 (issue 29)."""
    out = []
    for key, hot, random in (("map_latency_cycles", "map_load", "map_load.random"),
                             ("atomic_cycles", "atomic", "atomic.random")):
        got = [n for n in (hot, random) if n in ns]
        top = max(got, key=lambda n: ns[n])
        out.append(f"{key} = {ns[top]:.3f}  # the worst of: " + "; ".join(f"{what[n]} {ns[n]:.1f} ns" for n in got))
        if f"{random}.large" in ns:
            large = max(ns[top], ns[f"{random}.large"])
            out.append(f"{key.replace('_cycles', '_large_cycles')} = {large:.3f}  # {what[random + '.large']}")
    return out


#: The first line of every target file `calibrate` writes: a file that starts otherwise is not
#: nicsim's, and is replaced only with `force`.
HEADER = "# The x86-64 JIT of the running kernel, measured by `nicsim xdp calibrate`"


def calibrate(out: str | os.PathLike[str] | None = None, progress: Callable[[str], None] | None = None,
              budget_s: float = 0.5, force: bool = False, measured: Calibration | None = None) -> Path:
    """Measure and write the target file (atomically); returns its path. An existing file that
    `calibrate` did not write is replaced only with `force`. The measurements are also put in
    `measured` (a dict) when it is given."""
    if out is not None and os.fspath(out) == "":
        raise InputError("--out: the target file is an empty path; give a file name (e.g. --out x86.toml)")
    path = Path(out) if out is not None else default_path()
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a target file name")
    check_output_file(path)
    if os.path.lexists(path) and not force:
        try:
            with path.open("rb") as f:
                ours = f.read(len(HEADER)) == HEADER.encode()
        except OSError:
            ours = False
        if not ours:
            raise InputError(f"{path}: exists and was not written by `nicsim xdp calibrate`; give another --out, "
                             "or --force to replace it")
    made = missing_parents(path)
    try:  # the file can be written: found out now, not after the measurements
        where = made[0].parent if made else path.parent
        if not where.is_dir():
            raise NotADirectoryError(20, "Not a directory", str(where))
        probe = where / f".{path.name}.probe-{os.getpid()}"
        probe.mkdir()
        probe.rmdir()
    except OSError as e:
        raise InputError(f"{path}: cannot write the target: {e.strerror}") from None
    m = measure(progress, budget_s)
    if measured is not None:
        measured.update(m)
    text = target_toml(m)
    try:
        make_parents(path)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            tmp.write_text(text)
            check_output_file(path)  # again, after the measurements
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as e:
        raise InputError(f"{path}: cannot write the target: {e.strerror}") from None
    return path
