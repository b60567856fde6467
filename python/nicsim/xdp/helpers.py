"""`nicsim xdp helpers`: what the analyzer supports — the BPF helpers and the map types it models,
with each one's cost on each target and where that cost comes from.

A helper is supported when the analyzer models what it does (the interpreter and the symbolic
executor: docs/xdp.md, "Helpers") and a target gives it a cost; the targets' `[helpers]` tables
are the list. A key `NAME.TYPE` is the helper on a map of that type (a map helper on a type
without a key is an error naming the map's type); `loop` and `loop.iteration` are bpf_loop's call
and each call of its callback (`PARTS`). kfuncs: the modelled ones are listed apart with their
costs, and every kfunc the kernel gives XDP with its status (docs/xdp.md, "kfuncs"); any other is
refused by name.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

from nicsim.xdp.analyze import load_target

#: Targets listed by default: the built-in one, and x86-jit when this machine has calibrated it.
DEFAULT_TARGETS = ("nfp", "x86-jit")
#: The map types the interpreter and the symbolic executor model (crates/nicsim-xdp/src/interp.rs,
#: `MapStore::new`; docs/xdp.md), with what a program can do with each.
MAP_TYPES = {
    "array": "lookup, update, atomics on values", "percpu_array": "as array (one CPU's copy)",
    "hash": "lookup, update, delete", "percpu_hash": "as hash (one CPU's copy)",
    "lru_hash": "as hash; an update of a full map evicts", "lru_percpu_hash": "as lru_hash (one CPU's copy)",
    "lpm_trie": "lookup (longest prefix); filled by user space",
    "devmap": "bpf_redirect_map", "devmap_hash": "bpf_redirect_map", "cpumap": "bpf_redirect_map",
    "xskmap": "bpf_redirect_map", "prog_array": "bpf_tail_call (declared slots or --tail-call)",
    "perf_event_array": "bpf_perf_event_output", "ringbuf": "bpf_ringbuf_output/reserve/submit/discard",
    "queue": "bpf_map_push_elem, _pop_elem, _peek_elem (first in, first out)", "stack": "as queue, last in first out",
    "bloom_filter": "bpf_map_push_elem, bpf_map_peek_elem (interpreter: an exact set; the kernel may also say "
                    "\"maybe\" for a value never pushed)",
    "array_of_maps": "lookup (costs as array): the inner map or NULL; lookup/update/delete through it",
    "hash_of_maps": "lookup (costs as hash): the inner map or NULL; lookup/update/delete through it",
}
#: The kfuncs the analyzer models (crates/nicsim-xdp/src/interp.rs, `KFUNC_XDP_METADATA`,
#: `KFUNC_CT_LOOKUP`, `KFUNC_CT_RELEASE`), with what each gives; a target's `[helpers]` entry of
#: the name without `bpf_` is its cost.
KFUNCS = {
    "bpf_xdp_metadata_rx_timestamp": "0 and the timestamp, -ENODATA or -EOPNOTSUPP",
    "bpf_xdp_metadata_rx_hash": "0 and the RSS hash and its type, -ENODATA or -EOPNOTSUPP",
    "bpf_xdp_metadata_rx_vlan_tag": "0 and the VLAN protocol and TCI, -ENODATA or -EOPNOTSUPP",
    "bpf_xdp_ct_lookup": "a conntrack entry (struct nf_conn, read only) or NULL with opts->error set "
                         "(-EINVAL, -EPROTO, -EAFNOSUPPORT for bad arguments; -ENONET; -ENOENT)",
    "bpf_ct_release": "releases the entry bpf_xdp_ct_lookup gave; no value changes",
}
#: What the other modelled kfuncs give, by family (crates/nicsim-xdp/src/helpers/kfuncs.rs `KFUNCS`).
KFUNC_FAMILIES = {
    "iter_num": "the open-coded number iterator (bpf_for): new 0/-EINVAL/-E2BIG, next &cur or NULL after "
                "end - start numbers, destroy; its loop bounded by the count",
    "dynptr": "a dynptr on the packet: from_xdp, a slice (a pointer into the packet, or NULL past the dynptr's "
              "size), adjust, clone, size, is_null, is_rdonly",
    "rcu": "nothing the program reads changes (RCU read-side section, preemption off/on)",
}

#: Helpers costed in parts instead of per map type (`map_type` then names the part): bpf_loop's
#: call, once, and each call of its callback.
PARTS = {"loop": "(the call, once)", "loop.iteration": "(each callback call)"}


#: Helpers whose cost grows with a size argument (nicsim_xdp::cost::sized_bytes): their entry's
#: `cycles` covers `bytes` (default 64, what the calibration measures), each byte more costs
#: `cycles_per_byte` (default: the call's cost over its bytes).
SIZED = {"csum_diff", "xdp_load_bytes", "xdp_store_bytes"}


def _cost(entry: dict[str, Any], unit: str, helper: str = "") -> str:
    parts = [f"{entry.get('cycles', 0):g} {unit}"]
    if helper in SIZED:
        covered = entry.get("bytes", 64)
        per_byte = entry.get("cycles_per_byte", entry.get("cycles", 0) / max(covered, 1))
        parts[0] += f" up to {covered} bytes, {per_byte:.3g} a byte more"
    for key, what in (("dram_reads", "DRAM reads"), ("dram_writes", "DRAM writes"), ("dram_atomics", "DRAM atomics")):
        if entry.get(key):
            parts.append(f"{entry[key]:g} {what}")
    return ", ".join(parts)


def _offload_loads(t: dict[str, Any], helper: str, map_type: str) -> bool:
    """Whether the kernel's offload for target `t`'s hardware (its `[offload]`: the NFP offload's
    helpers and map types) loads `helper` (on `map_type`); True for a target without one."""
    o = t.get("offload")
    if o is None:
        return True
    base = map_type.partition(" ")[0]  # "hash (over 4,096 entries)"
    return helper in o.get("helpers", []) and (not base or base in o.get("maps", []))


def supported(targets: tuple[str, ...] | list[str] | None = None) -> dict[str, Any]:
    """The helpers and map types with a cost on each of `targets` (default: nfp, and x86-jit if
    calibrated here; a target named explicitly must load). Returns {targets, helpers: [{helper,
    map_type, costs: {target: {text, source}}}], map_types, kfuncs: [{kfunc, what, costs}]}."""
    from nicsim.xdp.calibrate import default_path

    names = list(targets) if targets else [t for t in DEFAULT_TARGETS if t != "x86-jit" or default_path().is_file()]
    loaded: dict[str, dict[str, Any]] = {}
    for name in names:
        text, where = load_target(name)
        t = tomllib.loads(text)
        loaded[str(t.get("name", name))] = t
    rows: dict[tuple[str, str | None], dict[str, Any]] = {}
    for tname, t in loaded.items():
        unit = "ns" if t.get("cores", {}).get("clock_mhz") == 1000.0 else "cycles"
        for key, entry in t.get("helpers", {}).items():
            helper, _, map_type = key.partition(".")
            if key in PARTS:
                map_type = PARTS[key]
            elif map_type.endswith(".large"):  # x86-jit: maps of more than 4,096 entries
                map_type = f"{map_type.removesuffix('.large')} (over 4,096 entries)"
            row = rows.setdefault((helper, map_type or None), {"helper": f"bpf_{helper}", "map_type": map_type or None,
                                                                "costs": {}})
            text = _cost(entry, unit, key)
            if not _offload_loads(t, helper, map_type if key not in PARTS else ""):
                text += " (the kernel's offload refuses it)"
            row["costs"][tname] = {"text": text, "source": entry.get("source", "")}
    from nicsim import _core

    modelled = {r["kfunc"]: r["family"] for r in json.loads(_core.xdp_kfunc_rows()) if r["modelled"]}
    kfuncs = [{"kfunc": r["helper"], "what": KFUNCS.get(r["helper"]) or KFUNC_FAMILIES.get(modelled[r["helper"]], ""),
               "costs": r["costs"]}
              for r in sorted(rows.values(), key=lambda r: r["helper"]) if r["helper"] in modelled]
    helpers = sorted((r for r in rows.values() if r["helper"] not in modelled),
                     key=lambda r: (r["helper"], r["map_type"] or ""))
    typed = {r["helper"] for r in helpers if r["map_type"] and r["map_type"] not in PARTS.values()}
    for r in helpers:
        if r["map_type"] is None and r["helper"] in typed:
            r["map_type"] = "(other types)"
    return {"targets": list(loaded), "helpers": helpers, "map_types": MAP_TYPES,
            "kfuncs": kfuncs, "xdp_helpers": xdp_helpers(loaded), "xdp_kfuncs": xdp_kfuncs(loaded)}


def xdp_kfuncs(loaded: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every kfunc an XDP program may call (the kernel's list: crates/nicsim-xdp/src/helpers/kfuncs.rs,
    and any the running kernel gives XDP without a row), with whether the analyzer models it,
    whether the running kernel gives it to XDP (`running_kernel`: `xdp`, `absent`, or None when the
    kernel cannot be asked) and its status on each target: `cost`, `refused: WHY` (whatever the
    target), or `no cost: WHY` (the target's `kfunc_rule`, else its `helper_rule`)."""
    from nicsim import _core

    rows = json.loads(_core.xdp_kfunc_rows())
    for r in rows:
        short = r["kfunc"].removeprefix("bpf_")
        r["status"] = {}
        for tname, t in loaded.items():
            if r["refused"]:
                r["status"][tname] = f"refused: {r['refused']}"
            elif short in t.get("helpers", {}):
                r["status"][tname] = "cost"
            else:
                rule = t.get("kfunc_rule") or t.get("helper_rule") or (
                    "not measured by the calibration this target came from (re-run `nicsim xdp calibrate`)")
                r["status"][tname] = f"no cost: {rule}"
    return rows


def xdp_helpers(loaded: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every helper an XDP program may call (Linux 6.1's list and the later kernels' that the
    analyzer knows: crates/nicsim-xdp/src/helpers), with what the analyzer does with it and its
    status on each target: `cost` (analysed), `refused: WHY` (whatever the target), or
    `no cost: WHY` (the target's `helper_rule`, e.g. the NFP offload's list of helpers)."""
    from nicsim import _core

    rows = json.loads(_core.xdp_helper_rows())
    for r in rows:
        short = r["helper"].removeprefix("bpf_")
        r["status"] = {}
        for tname, t in loaded.items():
            costed = any(k == short or k.startswith(short + ".") for k in t.get("helpers", {}))
            if r["refused"]:
                r["status"][tname] = f"refused: {r['refused']}"
            elif costed:
                r["status"][tname] = "cost"
            else:
                rule = t.get("helper_rule") or ("not measured by the calibration this target came from "
                                                "(re-run `nicsim xdp calibrate`)")
                r["status"][tname] = f"no cost: {rule}"
    return rows
