//! Map helpers: `bpf_map_lookup_elem`, `bpf_map_update_elem`, `bpf_map_delete_elem` on every
//! map type the analysis models (arrays, hashes, LRU and per-CPU hashes, LPM tries, maps of
//! maps and their inner maps, global data), for the interpreter (`array_map_*`, `htab_*`,
//! `trie_lookup_elem` of Linux 6.1, with the flags and -EEXIST/-ENOENT/-E2BIG/-EINVAL) and for
//! the symbolic executor (values and presence bits as arrays, symbolic initial contents).

use crate::absint::{HELPER_MAP_DELETE, HELPER_MAP_LOOKUP, HELPER_MAP_UPDATE};
use crate::helpers::Helper;

/// The map helpers.
pub(crate) const HELPERS: &[Helper] = &[
    Helper::new(HELPER_MAP_LOOKUP, "maps")
        .run(|m, pc, id| m.map_lookup(pc, id))
        .sym(|s, id, a| s.map_call(id, a)),
    Helper::new(HELPER_MAP_UPDATE, "maps")
        .run(|m, pc, id| m.map_update(pc, id))
        .sym(|s, id, a| s.map_call(id, a)),
    Helper::new(HELPER_MAP_DELETE, "maps")
        .run(|m, pc, id| m.map_delete(pc, id))
        .sym(|s, id, a| s.map_call(id, a)),
    // Queue, stack and bloom filter maps: push, pop and peek as kernel/bpf/queue_stack_maps.c
    // and bloom_filter.c do them in the interpreter; in the symbolic executor their results,
    // and the values pop and peek write, are fresh (any contents).
    Helper::new(87, "maps")
        .run(|m, pc, id| m.map_push(pc, id))
        .sym(|s, _, [r1, _, r3, _]| s.push_call(&r1, &r3)), // map_push_elem
    Helper::new(88, "maps")
        .writes()
        .run(|m, pc, id| m.map_pop_peek(pc, id, true)), // map_pop_elem
    Helper::new(89, "maps")
        .writes()
        .run(|m, pc, id| m.map_pop_peek(pc, id, false)), // map_peek_elem
    Helper::new(164, "maps").writes().refuse(
        "bpf_for_each_map_elem calls its callback once per element of the map, which the \
         graph does not unroll (its cost grows with the map's contents)",
    ),
    // Another CPU's copy of a per-CPU map's value: read fresh.
    Helper::new(195, "maps"), // map_lookup_percpu_elem
    // A referenced kernel pointer exchanged with a map value's kptr field.
    Helper::new(194, "maps").writes(), // kptr_xchg
];

/// The interpreter's side.
mod run {
    use crate::insn::Size;
    use crate::interp::*;

    impl Machine<'_> {
        pub(crate) fn map_lookup(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let m = self.map_arg(pc, id, 1)?;
            let kind = self.maps.maps[m].kind;
            let (key_size, max_entries) = {
                let d = &self.maps.maps[m].def;
                (d.key_size as usize, d.max_entries)
            };
            let elem = match kind {
                Kind::Array => {
                    let idx = self.load(pc, self.regs[2], Size::W, Access::HelperRead)? as u32;
                    if idx >= max_entries {
                        return Ok(0);
                    }
                    self.maps.maps[m].array_elem(idx)
                }
                Kind::Hash { lru, .. } => {
                    let key = self.read(pc, self.regs[2], key_size)?;
                    let s = &mut self.maps.maps[m];
                    let Some(&e) = s.index.get(&key) else {
                        return Ok(0);
                    };
                    if lru {
                        s.touch(e);
                    }
                    e
                }
                Kind::Redirect { .. } => {
                    let key = self.read(pc, self.regs[2], key_size)?;
                    match self.maps.maps[m].index.get(&key) {
                        Some(&e) => e,
                        None => return Ok(0),
                    }
                }
                Kind::Lpm => {
                    let key = self.read(pc, self.regs[2], key_size)?;
                    match lpm_find(&self.maps.maps[m].index, &key) {
                        Some(e) => e,
                        None => return Ok(0),
                    }
                }
                Kind::Outer { .. } => {
                    // A slot with an entry holds the inner map (array_of_map_lookup_elem,
                    // htab_of_map_lookup_elem: the inner map's address, or NULL).
                    let key = self.read(pc, self.regs[2], key_size)?;
                    if !self.maps.maps[m].index.contains_key(&key) {
                        return Ok(0);
                    }
                    let want = crate::load::inner_map_name(&self.maps.maps[m].def.name);
                    let Ok(inner) = self.maps.find(&want) else {
                        return Err(self.helper_fault(
                            pc,
                            id,
                            format!(
                                "map '{}': its inner maps are not modelled",
                                self.maps.maps[m].def.name
                            ),
                        ));
                    };
                    return Ok(self.ptr(Region::Map { map: inner as u32 }, 0));
                }
                Kind::Unsupported | Kind::Events | Kind::Queue { .. } | Kind::Bloom => {
                    return Err(self.unmodelled_map(pc, id, m))
                }
            };
            Ok(self.ptr(
                Region::Value {
                    map: m as u32,
                    elem,
                },
                0,
            ))
        }

        pub(crate) fn writable_map(&self, pc: u32, id: u32, m: usize) -> Result<(), Fault> {
            let s = &self.maps.maps[m];
            if s.read_only {
                return Err(self.helper_fault(
                    pc,
                    id,
                    format!(
                        "map '{}' is read-only to programs (the verifier rejects the call)",
                        s.def.name
                    ),
                ));
            }
            Ok(())
        }

        /// `bpf_map_update_elem(map, key, value, flags)` as `array_map_update_elem` and the hash
        /// maps' update functions do it.
        ///
        /// symex.rs agrees on the result and on the map after it, except where it cannot know the
        /// map's state: a new key in a hash map gets a fresh result (the map may be full), and an
        /// LRU map's update a fresh result (after the flags check) and perhaps one key evicted,
        /// whatever its fullness. It also updates a (non-per-CPU) hash map's value in place, where
        /// the kernel replaces the element and pointers to the old one read the old value.
        pub(crate) fn map_update(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let err = |e: i64| Ok((-e) as u64);
            let m = self.map_arg(pc, id, 1)?;
            let kind = self.maps.maps[m].kind;
            if matches!(
                kind,
                Kind::Unsupported | Kind::Events | Kind::Queue { .. } | Kind::Bloom
            ) {
                return Err(self.unmodelled_map(pc, id, m));
            }
            self.writable_map(pc, id, m)?;
            let flags = self.regs[4];
            let (key_size, value_size, max_entries) = {
                let d = &self.maps.maps[m].def;
                (d.key_size as usize, d.value_size as usize, d.max_entries)
            };
            match kind {
                Kind::Array => {
                    if flags & !BPF_F_LOCK > BPF_EXIST {
                        return err(EINVAL);
                    }
                    let idx = self.load(pc, self.regs[2], Size::W, Access::HelperRead)? as u32;
                    if idx >= max_entries {
                        return err(E2BIG);
                    }
                    if flags & BPF_NOEXIST != 0 {
                        return err(EEXIST);
                    }
                    if flags & BPF_F_LOCK != 0 {
                        return err(EINVAL); // no bpf_spin_lock in the value
                    }
                    let value = self.read(pc, self.regs[3], value_size)?;
                    let s = &mut self.maps.maps[m];
                    let e = s.array_elem(idx);
                    s.arena[e as usize] = value;
                    Ok(0)
                }
                Kind::Hash { lru, in_place } => {
                    // BPF_F_LOCK needs a bpf_spin_lock in the value, which no modelled map has.
                    if flags > BPF_EXIST {
                        return err(EINVAL);
                    }
                    let key = self.read(pc, self.regs[2], key_size)?;
                    let value = self.read(pc, self.regs[3], value_size)?;
                    let s = &mut self.maps.maps[m];
                    let old = s.index.get(&key).copied();
                    match (old, flags) {
                        (Some(_), BPF_NOEXIST) => return err(EEXIST),
                        (None, BPF_EXIST) => return err(ENOENT),
                        _ => {}
                    }
                    match old {
                        Some(e) if in_place => {
                            s.arena[e as usize] = value;
                            s.touch(e);
                        }
                        Some(_) => {
                            // A new element replaces the old one; pointers to the old one still
                            // read the old value.
                            let e = s.push(key, value);
                            s.touch(e);
                        }
                        None => {
                            if s.index.len() >= max_entries as usize {
                                if !lru {
                                    return err(E2BIG);
                                }
                                // The least recently used entry makes room.
                                let victim = s
                                    .index
                                    .iter()
                                    .min_by_key(|(_, &e)| s.used[e as usize])
                                    .map(|(k, _)| k.clone());
                                if let Some(k) = victim {
                                    s.index.remove(&k);
                                }
                            }
                            if max_entries == 0 {
                                return err(E2BIG);
                            }
                            let e = s.push(key, value);
                            s.touch(e);
                        }
                    }
                    Ok(0)
                }
                // Programs do not update an lpm_trie here (user space fills it).
                Kind::Redirect { .. }
                | Kind::Outer { .. }
                | Kind::Lpm
                | Kind::Unsupported
                | Kind::Events
                | Kind::Queue { .. }
                | Kind::Bloom => Err(self.unmodelled_map(pc, id, m)),
            }
        }

        /// `bpf_map_push_elem(map, value, flags)`: a queue or stack (`queue_stack_map_push_elem`:
        /// flags BPF_ANY or BPF_EXIST, else -EINVAL; a full map -E2BIG, or with BPF_EXIST its
        /// oldest entry dropped to make room) or a bloom filter (`bloom_map_push_elem`: flags
        /// BPF_ANY, else -EINVAL; the value becomes a member).
        pub(crate) fn map_push(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let err = |e: i64| Ok((-e) as u64);
            let m = self.map_arg(pc, id, 1)?;
            let kind = self.maps.maps[m].kind;
            if !matches!(kind, Kind::Queue { .. } | Kind::Bloom) {
                return Err(self.unmodelled_map(pc, id, m));
            }
            self.writable_map(pc, id, m)?;
            let flags = self.regs[3];
            let (value_size, max_entries) = {
                let d = &self.maps.maps[m].def;
                (d.value_size as usize, d.max_entries as usize)
            };
            if kind == Kind::Bloom {
                if flags != 0 {
                    return err(EINVAL);
                }
                let value = self.read(pc, self.regs[2], value_size)?;
                self.maps.maps[m].bloom_add(&value);
                return Ok(0);
            }
            if flags & BPF_NOEXIST != 0 || flags > BPF_EXIST {
                return err(EINVAL);
            }
            let value = self.read(pc, self.regs[2], value_size)?;
            let s = &mut self.maps.maps[m];
            if s.index.len() >= max_entries {
                if flags & BPF_EXIST == 0 {
                    return err(E2BIG);
                }
                // Both a queue and a stack drop their oldest entry (the tail).
                s.index.pop_first();
            }
            s.queue_push(value);
            Ok(0)
        }

        /// `bpf_map_pop_elem(map, value)` (`pop`) and `bpf_map_peek_elem(map, value)`: a queue's
        /// oldest entry or a stack's newest written to `value` (and removed by a pop), or, when
        /// the map is empty, zeros written and -ENOENT (`__queue_map_get`, `__stack_map_get`); a
        /// bloom filter's peek reads `value` and gives 0 when it is a member, else -ENOENT
        /// (`bloom_map_peek_elem`; the verifier allows no pop of one).
        pub(crate) fn map_pop_peek(&mut self, pc: u32, id: u32, pop: bool) -> Result<u64, Fault> {
            let m = self.map_arg(pc, id, 1)?;
            let kind = self.maps.maps[m].kind;
            let value_size = self.maps.maps[m].def.value_size as usize;
            let lifo = match kind {
                Kind::Queue { lifo } => lifo,
                Kind::Bloom if !pop => {
                    let value = self.read(pc, self.regs[2], value_size)?;
                    let member = self.maps.maps[m].index.contains_key(&value);
                    return Ok(if member { 0 } else { (-ENOENT) as u64 });
                }
                _ => return Err(self.unmodelled_map(pc, id, m)),
            };
            if pop {
                self.writable_map(pc, id, m)?;
            }
            let buf = self.place(pc, self.regs[2], value_size, Access::Store)?;
            let s = &mut self.maps.maps[m];
            let entry = match lifo {
                true => s.index.iter().next_back(),
                false => s.index.iter().next(),
            }
            .map(|(k, &e)| (k.clone(), e));
            let Some((key, e)) = entry else {
                self.bytes_mut(buf, value_size).fill(0);
                return Ok((-ENOENT) as u64);
            };
            let value = s.arena[e as usize].clone();
            if pop {
                s.index.remove(&key);
            }
            self.bytes_mut(buf, value_size).copy_from_slice(&value);
            Ok(0)
        }

        pub(crate) fn map_delete(&mut self, pc: u32, id: u32) -> Result<u64, Fault> {
            let m = self.map_arg(pc, id, 1)?;
            let kind = self.maps.maps[m].kind;
            if matches!(
                kind,
                Kind::Unsupported
                    | Kind::Redirect { .. }
                    | Kind::Outer { .. }
                    | Kind::Lpm
                    | Kind::Events
                    | Kind::Queue { .. }
                    | Kind::Bloom
            ) {
                return Err(self.unmodelled_map(pc, id, m));
            }
            self.writable_map(pc, id, m)?;
            match kind {
                Kind::Array => Ok((-EINVAL) as u64),
                _ => {
                    let key_size = self.maps.maps[m].def.key_size as usize;
                    let key = self.read(pc, self.regs[2], key_size)?;
                    Ok(match self.maps.maps[m].index.remove(&key) {
                        Some(_) => 0,
                        None => (-ENOENT) as u64,
                    })
                }
            }
        }
    }
}

/// The symbolic executor's side.
mod sym {
    use crate::absint::*;
    use crate::insn::Size;
    use crate::interp::{E2BIG, EEXIST, EINVAL, ENOENT};
    use crate::load::*;
    use crate::symex::*;

    impl Sym<'_> {
        /// `bpf_map_push_elem` on the map r1 points to: on a bloom filter, 0 with flags 0 and
        /// -EINVAL with any others (`bloom_map_push_elem` cannot fail otherwise: it sets bits);
        /// on a queue or stack (which may be full: -E2BIG) or anything else, a fresh value.
        pub(crate) fn push_call(&mut self, r1: &V, flags: &V) -> V {
            match r1 {
                V::MapPtr(m) if self.p.maps[*m as usize].map_type == MAP_BLOOM_FILTER => {
                    let f = self.scalar(flags);
                    let t = format!(
                        "(ite (= {f} {}) {} {})",
                        bv64(0),
                        bv64(0),
                        bv64((-EINVAL) as u64)
                    );
                    V::S(self.def("(_ BitVec 64)", &t))
                }
                _ => self.fresh64("h"),
            }
        }

        /// A map helper on the map r1 points to; on anything else (the verifier requires a map) a
        /// fresh value.
        pub(crate) fn map_call(&mut self, helper: u32, [r1, r2, r3, r4]: [V; 4]) -> V {
            match (helper, &r1) {
                (HELPER_MAP_LOOKUP, V::MapPtr(m)) if self.p.maps[*m as usize].is_map_of_maps() => {
                    let m = *m;
                    let def = self.p.maps[m as usize].clone();
                    let key = self.stack_bytes(&r2, def.key_size.max(1));
                    let pres = self.present[m as usize].clone();
                    // The model's slot is an entry of the example only where the kernel can hold
                    // one: an array of maps' index below its size.
                    let (null, present) = if def.map_type == crate::load::MAP_ARRAY_OF_MAPS {
                        let size = self.array_size(m);
                        let null = self.def(
                            "Bool",
                            &format!("(or (bvuge {key} {size}) (not (select {pres} {key})))"),
                        );
                        (
                            null,
                            format!("(and (bvult {key} {size}) (select p{m}_0 {key}))"),
                        )
                    } else {
                        let null = self.def("Bool", &format!("(not (select {pres} {key}))"));
                        (null, format!("(select p{m}_0 {key})"))
                    };
                    self.record_lookup(m, &key, Some(present));
                    match self.p.inner_map(m) {
                        Some(inner) => V::Inner(inner, null),
                        None => V::S(self.fresh("(_ BitVec 64)", "r0")),
                    }
                }
                (HELPER_MAP_LOOKUP, V::MapPtr(m)) if self.inner.contains(m) => {
                    let m = *m;
                    self.inner_lookup(m, &r2)
                }
                (HELPER_MAP_UPDATE | HELPER_MAP_DELETE, V::MapPtr(m)) if self.inner.contains(m) => {
                    let m = *m;
                    self.havoc_aliases(m);
                    self.fresh64("upd")
                }
                (HELPER_MAP_LOOKUP, V::MapPtr(m))
                    if self.p.maps[*m as usize].map_type == crate::load::MAP_LPM_TRIE
                        && self.p.maps[*m as usize].key_size > 4 =>
                {
                    let m = *m;
                    self.lpm_lookup(m, &r2)
                }
                (HELPER_MAP_LOOKUP, V::MapPtr(m)) => {
                    let m = *m;
                    let def = self.p.maps[m as usize].clone();
                    let key = self.stack_bytes(&r2, def.key_size.max(1));
                    let null = if def.is_array() {
                        let size = self.array_size(m);
                        self.def("Bool", &format!("(bvuge {key} {size})"))
                    } else {
                        let pres = self.present[m as usize].clone();
                        self.def("Bool", &format!("(not (select {pres} {key}))"))
                    };
                    let present = (!def.is_array()).then(|| format!("(select p{m}_0 {key})"));
                    self.record_lookup(m, &key, present);
                    V::P(Region::Map { m, key, null }, bv64(0), Some(0))
                }
                (HELPER_MAP_UPDATE | HELPER_MAP_DELETE, V::MapPtr(m)) => {
                    let m = *m;
                    self.map_write(helper, m, &r2, &r3, &r4)
                }
                _ => self.fresh64("h"),
            }
        }

        /// `bpf_map_update_elem(map, key, value, flags)` and `bpf_map_delete_elem(map, key)` on map
        /// `m`: the result as the kernel gives it, and the map changed only when it is 0.
        ///
        /// Arrays (`array_map_update_elem`): unknown flags and BPF_F_LOCK (no modelled value holds
        /// a spin lock) give -EINVAL, an index past the end -E2BIG, BPF_NOEXIST -EEXIST; otherwise
        /// the update succeeds. Deleting from an array is -EINVAL. Hash maps: unknown flags give
        /// -EINVAL, BPF_NOEXIST on a present key -EEXIST, BPF_EXIST on an absent one -ENOENT; a
        /// new key may find the map full (-E2BIG; or memory short), which the query does not know:
        /// that result is a fresh value. An LRU map may fail (-ENOMEM) and evict another key
        /// whatever the key (its lists are per CPU, so eviction can come before the map is full):
        /// its result is fresh after the flags check, and one fresh key, or none, leaves. Deleting
        /// gives 0 when the key was present, else -ENOENT. Other map types: a fresh result.
        pub(crate) fn map_write(
            &mut self,
            helper: u32,
            m: u32,
            key_ptr: &V,
            val_ptr: &V,
            flags: &V,
        ) -> V {
            self.refresh_inner(m);
            let def = self.p.maps[m as usize].clone();
            let mi = m as usize;
            let key = self.stack_bytes(key_ptr, def.key_size.max(1));
            let (ks, sort) = self.map_sort(m);
            let psort = format!("(Array (_ BitVec {ks}) Bool)");
            let hash = matches!(
                def.map_type,
                MAP_HASH | MAP_PERCPU_HASH | MAP_LRU_HASH | MAP_LRU_PERCPU_HASH
            );
            let lru = matches!(def.map_type, MAP_LRU_HASH | MAP_LRU_PERCPU_HASH);
            let pres = self.present[mi].clone();
            let was = format!("(select {pres} {key})");
            if hash {
                // Whether the key had an entry before the run decides the result (a delete's 0,
                // BPF_EXIST's 0, BPF_NOEXIST's -EEXIST): the example gives the entry when the
                // model has one, as for a lookup.
                self.record_lookup(m, &key, Some(format!("(select p{m}_0 {key})")));
            }
            let c = |v: i64| bv64(v as u64);
            if helper == HELPER_MAP_DELETE {
                if def.is_array() {
                    return V::S(c(-EINVAL));
                }
                let gone = format!("(store {pres} {key} false)");
                let ret = if hash {
                    // Storing "absent" over an absent key changes nothing.
                    self.present[mi] = self.def(&psort, &gone);
                    format!("(ite {was} {} {})", c(0), c(-ENOENT))
                } else {
                    let r = self.fresh("(_ BitVec 64)", "upd");
                    self.present[mi] =
                        self.def(&psort, &format!("(ite (= {r} {}) {gone} {pres})", c(0)));
                    return V::S(r);
                };
                return V::S(self.def("(_ BitVec 64)", &ret));
            }
            let flags = self.scalar(flags);
            if matches!(def.map_type, MAP_HASH | MAP_LRU_HASH) {
                self.replace_values(m);
            }
            let old = self.mem[mi].clone();
            // The value's bytes, stored under the key.
            let val = V::P(
                Region::Map {
                    m,
                    key: key.clone(),
                    null: "false".into(),
                },
                bv64(0),
                Some(0),
            );
            for i in 0..def.value_size as i64 {
                let src = self.byte_at(val_ptr, i);
                let b = self.load(&src, Size::B);
                let dst = self.byte_at(&val, i);
                self.store(&dst, Size::B, &b);
            }
            let new = self.mem[mi].clone();
            let ret = if def.is_array() {
                let size = self.array_size(m);
                format!(
                "(ite (bvugt (bvand {flags} {}) {}) {} (ite (bvuge {key} {size}) {} \
                 (ite (not (= (bvand {flags} {}) {})) {} (ite (not (= (bvand {flags} {}) {})) {} {}))))",
                c(!BPF_F_LOCK as i64),
                c(BPF_EXIST as i64),
                c(-EINVAL),
                c(-E2BIG),
                c(BPF_NOEXIST as i64),
                c(0),
                c(-EEXIST),
                c(BPF_F_LOCK as i64),
                c(0),
                c(-EINVAL),
                c(0)
            )
            } else if hash && !lru {
                // Replacing a present key's value needs no new element, unless the map allocates
                // its elements on demand (BPF_F_NO_PREALLOC), which may fail.
                let fresh = self.fresh("(_ BitVec 64)", "upd");
                self.prefer.push((fresh.clone(), bv64(0)));
                let replace = if def.map_type == MAP_HASH && def.flags & 1 != 0 {
                    self.fresh("(_ BitVec 64)", "upd")
                } else {
                    c(0)
                };
                format!(
                    "(ite (bvugt {flags} {}) {} (ite {was} (ite (= {flags} {}) {} {replace}) \
                 (ite (= {flags} {}) {} {fresh})))",
                    c(BPF_EXIST as i64),
                    c(-EINVAL),
                    c(BPF_NOEXIST as i64),
                    c(-EEXIST),
                    c(BPF_EXIST as i64),
                    c(-ENOENT)
                )
            } else if lru {
                let fresh = self.fresh("(_ BitVec 64)", "upd");
                self.prefer.push((fresh.clone(), bv64(0)));
                format!(
                    "(ite (bvugt {flags} {}) {} {fresh})",
                    c(BPF_EXIST as i64),
                    c(-EINVAL)
                )
            } else {
                self.fresh("(_ BitVec 64)", "upd")
            };
            let ret = self.def("(_ BitVec 64)", &ret);
            let ok = self.def("Bool", &format!("(= {ret} {})", c(0)));
            self.mem[mi] = self.def(&sort, &format!("(ite {ok} {new} {old})"));
            if !def.is_array() {
                let mut base = pres.clone();
                if lru {
                    let victim = self.fresh(&format!("(_ BitVec {ks})"), &format!("evict{ks}"));
                    let evicts = self.fresh("Bool", "evicts");
                    base = self.def(
                        &psort,
                        &format!("(ite {evicts} (store {pres} {victim} false) {pres})"),
                    );
                }
                self.present[mi] = self.def(
                    &psort,
                    &format!("(ite {ok} (store {base} {key} true) {base})"),
                );
            }
            V::S(ret)
        }

        /// Record that the path reads map `m`'s entry under `key` (a term of the key's width): its
        /// initial value bytes, and `present` (whether it has an entry; `None`: always, an array),
        /// so that the model gives the entry an example packet needs.
        /// `bpf_map_lookup_elem` on lpm_trie `m` with the key at `keyp` (`{u32 prefixlen; u8
        /// data[]}`): the entry with the longest prefix length L, at most the key's prefixlen, whose
        /// key is (L, the key's data with the bits past L zeroed) — the interpreter keeps an
        /// lpm_trie's keys so normalised, and so does a model's example. An ite chain from the
        /// longest L down.
        pub(crate) fn lpm_lookup(&mut self, m: u32, keyp: &V) -> V {
            let ksz = self.p.maps[m as usize].key_size;
            let key = self.stack_bytes(keyp, ksz);
            let key = self.def(&format!("(_ BitVec {})", ksz * 8), &key);
            let plen = self.def("(_ BitVec 32)", &format!("((_ extract 31 0) {key})"));
            let pres = self.present[m as usize].clone();
            // A constant of the key's width from its bytes (byte 0 lowest).
            let konst = |bytes: &[u8]| -> String {
                let digits: String = bytes.iter().rev().map(|b| format!("{b:02x}")).collect();
                format!("#x{digits}")
            };
            let data_bits = 8 * (ksz - 4);
            let (mut chosen, mut found) = (String::new(), Vec::new());
            for l in 0..=data_bits {
                let mut mask = vec![0u8; ksz as usize];
                let mut lbytes = vec![0u8; ksz as usize];
                lbytes[..4].copy_from_slice(&l.to_le_bytes());
                for (i, b) in mask[4..].iter_mut().enumerate() {
                    let keep = l.saturating_sub(8 * i as u32).min(8);
                    *b = (0xff00u16 >> keep) as u8;
                }
                let cand = self.def(
                    &format!("(_ BitVec {})", ksz * 8),
                    &format!("(bvor (bvand {key} {}) {})", konst(&mask), konst(&lbytes)),
                );
                let cond = self.def(
                    "Bool",
                    &format!("(and (bvuge {plen} (_ bv{l} 32)) (select {pres} {cand}))"),
                );
                chosen = if l == 0 {
                    cand
                } else {
                    let c = format!("(ite {cond} {cand} {chosen})");
                    self.def(&format!("(_ BitVec {})", ksz * 8), &c)
                };
                found.push(cond);
            }
            let null = self.def("Bool", &format!("(not (or false {}))", found.join(" ")));
            self.record_lookup(m, &chosen, Some(format!("(select p{m}_0 {chosen})")));
            V::P(
                Region::Map {
                    m,
                    key: chosen,
                    null,
                },
                bv64(0),
                Some(0),
            )
        }

        /// `bpf_map_lookup_elem` through inner map `m` (a map of maps' `<outer>.inner`): the map is
        /// whichever the slot holds, so the entry's bytes are fresh ([`Region::Inner`]) and whether
        /// there is one is unknown, except in an array whose inner definition fixes its size (the
        /// kernel's `array_map_meta_equal` asks a slot's array for the template's max_entries
        /// unless the template has BPF_F_INNER_MAP): there the key below the size. The entry is
        /// reported as a lookup of `<outer>.inner`, so an example can fill the interpreter's.
        pub(crate) fn inner_lookup(&mut self, m: u32, keyp: &V) -> V {
            let def = self.p.maps[m as usize].clone();
            let key = self.stack_bytes(keyp, def.key_size.max(1));
            let key = self.def(&format!("(_ BitVec {})", def.key_size.max(1) * 8), &key);
            let sized = def.is_array() && def.max_entries > 0 && def.flags & BPF_F_INNER_MAP == 0;
            let null = if sized {
                let size = self.array_size(m);
                self.def("Bool", &format!("(bvuge {key} {size})"))
            } else {
                self.fresh("Bool", "innull")
            };
            let vals = self.fresh(INNER_VALS, "inval");
            self.lookups.push(Lookup {
                map: def.name.clone(),
                key: key.clone(),
                key_size: def.key_size,
                values: vals.clone(),
                keyed: false,
                value_size: def.value_size,
                present: (!sized).then(|| format!("(not {null})")),
                reads: Vec::new(),
            });
            V::P(Region::Inner { m, null, vals }, bv64(0), Some(0))
        }

        pub(crate) fn record_lookup(&mut self, m: u32, key: &str, present: Option<String>) {
            let def = &self.p.maps[m as usize];
            self.lookups.push(Lookup {
                map: def.name.clone(),
                key: key.to_string(),
                key_size: def.key_size,
                values: format!("m{m}_0"),
                keyed: true,
                value_size: def.value_size,
                present,
                reads: Vec::new(),
            });
        }
    }
}
