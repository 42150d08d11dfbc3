//! The native G1 KV block pool of a vLLM worker (spec §4.3): physical block copies that are either
//! private (a partial block owned by one sequence) or cached (a full block registered under its
//! chained sequence hash, shared by reference count). Cached copies nobody references form the
//! inactive pool, evicted in plain LRU order. The pool also reports `Stored`/`Removed` events for
//! the KV router's indexer.
//!
//! Storage is index-based: slots live in a `Vec`, the LRU list is intrusive (prev/next indices).

use rustc_hash::FxHashMap;

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Sequence hash when cached.
    hash: u64,
    cached: bool,
    /// In `by_hash` (findable by prefix matching). Cached blocks that nobody else can ever
    /// match are kept unmapped: they hold capacity and age in the LRU, nothing more.
    mapped: bool,
    /// Whether the router is told about this block (prompt blocks only).
    visible: bool,
    refs: u32,
    in_lru: bool,
    prev: u32,
    next: u32,
    /// Next copy registered under the same hash.
    next_dup: u32,
}

/// A change of the set of hashes a worker holds, for the router's indexer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvEvent {
    Stored(u64),
    Removed(u64),
}

/// Result of matching a sequence's block hashes against the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PrefixMatch {
    /// Leading blocks present (active or inactive).
    pub blocks: u32,
    /// Of those, blocks whose copy is currently referenced.
    pub active_blocks: u32,
}

#[derive(Debug, Clone)]
pub struct KvPool {
    capacity: u32,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    /// Physical copies in use (private + cached, active or inactive).
    copies: u32,
    /// Cached copies with no reference (the LRU pool).
    inactive: u32,
    lru_head: u32,
    lru_tail: u32,
    by_hash: FxHashMap<u64, u32>,
    events: Vec<KvEvent>,
    record_events: bool,
}

impl KvPool {
    pub fn new(capacity: u32, record_events: bool) -> Self {
        KvPool {
            capacity,
            slots: Vec::new(),
            free_slots: Vec::new(),
            copies: 0,
            inactive: 0,
            lru_head: NIL,
            lru_tail: NIL,
            by_hash: FxHashMap::default(),
            events: Vec::new(),
            record_events,
        }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Blocks referenced by running sequences (`copies − inactive`).
    #[inline]
    pub fn num_active(&self) -> u32 {
        self.copies - self.inactive
    }

    /// Blocks that can be handed out without failing: free capacity plus evictable copies.
    #[inline]
    pub fn available(&self) -> u32 {
        self.capacity - self.copies + self.inactive
    }

    /// Events since the last call, in the order they happened.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, KvEvent> {
        self.events.drain(..)
    }

    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Walks `hashes` from the start while each is present.
    pub fn match_prefix(&self, hashes: &[u64]) -> PrefixMatch {
        let mut m = PrefixMatch::default();
        for h in hashes {
            let Some(&first) = self.by_hash.get(h) else {
                break;
            };
            m.blocks += 1;
            if self.active_copy(first) != NIL {
                m.active_blocks += 1;
            }
        }
        m
    }

    /// Whether `hash` is present, and if so whether a copy of it is referenced.
    pub fn lookup(&self, hash: u64) -> Option<bool> {
        let &first = self.by_hash.get(&hash)?;
        Some(self.active_copy(first) != NIL)
    }

    fn active_copy(&self, first: u32) -> u32 {
        let mut s = first;
        while s != NIL {
            if self.slots[s as usize].refs > 0 {
                return s;
            }
            s = self.slots[s as usize].next_dup;
        }
        NIL
    }

    /// Takes a reference on a copy of a present hash (an active copy if one exists, otherwise the
    /// first inactive copy, which leaves the LRU pool). Returns `None` if the hash is absent.
    pub fn acquire(&mut self, hash: u64) -> Option<u32> {
        let first = *self.by_hash.get(&hash)?;
        let mut s = self.active_copy(first);
        if s == NIL {
            s = first;
            self.lru_remove(s);
            self.inactive -= 1;
        }
        self.slots[s as usize].refs += 1;
        Some(s)
    }

    /// Allocates `n` private blocks all-or-nothing, evicting inactive copies from the LRU head as
    /// needed. Pushes the new slot ids onto `out`. Returns false (allocating nothing) when the pool
    /// cannot supply them.
    pub fn allocate(&mut self, n: u32, out: &mut Vec<u32>) -> bool {
        if n > self.available() {
            return false;
        }
        let free = self.capacity - self.copies;
        let mut to_evict = n.saturating_sub(free);
        while to_evict > 0 {
            self.evict_head();
            to_evict -= 1;
        }
        for _ in 0..n {
            let slot = Slot {
                hash: 0,
                cached: false,
                mapped: false,
                visible: false,
                refs: 1,
                in_lru: false,
                prev: NIL,
                next: NIL,
                next_dup: NIL,
            };
            let id = match self.free_slots.pop() {
                Some(id) => {
                    self.slots[id as usize] = slot;
                    id
                }
                None => {
                    self.slots.push(slot);
                    (self.slots.len() - 1) as u32
                }
            };
            self.copies += 1;
            out.push(id);
        }
        true
    }

    /// Marks a private block that just became full as cached without making it findable (its
    /// content is unique to its sequence). [`KvPool::map`] can expose it later.
    pub fn seal(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        debug_assert!(!s.cached);
        s.cached = true;
    }

    /// Makes a sealed block findable under `hash` (no router event: it is never a prompt block
    /// another request could share).
    pub fn map(&mut self, slot: u32, hash: u64) {
        debug_assert!(self.slots[slot as usize].cached && !self.slots[slot as usize].mapped);
        self.slots[slot as usize].cached = false;
        self.register(slot, hash, false);
    }

    /// Registers a private block that just became full under its sequence hash.
    pub fn register(&mut self, slot: u32, hash: u64, visible: bool) {
        let s = &mut self.slots[slot as usize];
        debug_assert!(!s.cached);
        s.cached = true;
        s.mapped = true;
        s.hash = hash;
        s.visible = visible;
        match self.by_hash.entry(hash) {
            std::collections::hash_map::Entry::Occupied(e) => {
                // Another copy of the same content: chain it behind the first.
                let first = *e.get();
                let after = self.slots[first as usize].next_dup;
                self.slots[first as usize].next_dup = slot;
                self.slots[slot as usize].next_dup = after;
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(slot);
                if visible && self.record_events {
                    self.events.push(KvEvent::Stored(hash));
                }
            }
        }
    }

    /// Drops one reference. Cached copies nobody references join the LRU tail; private copies
    /// return their capacity at once.
    pub fn release(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        debug_assert!(s.refs > 0);
        s.refs -= 1;
        if s.refs > 0 {
            return;
        }
        if s.cached {
            self.lru_push_tail(slot);
            self.inactive += 1;
        } else {
            self.copies -= 1;
            self.free_slots.push(slot);
        }
    }

    fn evict_head(&mut self) {
        let victim = self.lru_head;
        debug_assert!(victim != NIL);
        self.lru_remove(victim);
        self.inactive -= 1;
        self.copies -= 1;
        if !self.slots[victim as usize].mapped {
            self.slots[victim as usize].cached = false;
            self.free_slots.push(victim);
            return;
        }
        self.slots[victim as usize].mapped = false;
        let hash = self.slots[victim as usize].hash;
        let visible = self.slots[victim as usize].visible;
        // Unlink from its hash chain.
        let next = self.slots[victim as usize].next_dup;
        self.slots[victim as usize].next_dup = NIL;
        let first = match self.by_hash.entry(hash) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let first = *e.get();
                if first == victim {
                    if next == NIL {
                        e.remove();
                        if visible && self.record_events {
                            self.events.push(KvEvent::Removed(hash));
                        }
                    } else {
                        e.insert(next);
                    }
                }
                first
            }
            std::collections::hash_map::Entry::Vacant(_) => unreachable!("mapped block in map"),
        };
        if first != victim {
            let mut p = first;
            while self.slots[p as usize].next_dup != victim {
                p = self.slots[p as usize].next_dup;
            }
            self.slots[p as usize].next_dup = next;
        }
        self.slots[victim as usize].cached = false;
        self.free_slots.push(victim);
    }

    fn lru_push_tail(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        s.in_lru = true;
        s.prev = self.lru_tail;
        s.next = NIL;
        if self.lru_tail != NIL {
            self.slots[self.lru_tail as usize].next = slot;
        } else {
            self.lru_head = slot;
        }
        self.lru_tail = slot;
    }

    fn lru_remove(&mut self, slot: u32) {
        let Slot { prev, next, .. } = self.slots[slot as usize];
        if prev != NIL {
            self.slots[prev as usize].next = next;
        } else {
            self.lru_head = next;
        }
        if next != NIL {
            self.slots[next as usize].prev = prev;
        } else {
            self.lru_tail = prev;
        }
        let s = &mut self.slots[slot as usize];
        s.in_lru = false;
        s.prev = NIL;
        s.next = NIL;
    }

    /// Consistency check used by tests: counters agree with the slots.
    #[cfg(test)]
    pub fn check(&self) {
        let live: Vec<&Slot> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.free_slots.contains(&(*i as u32)))
            .map(|(_, s)| s)
            .collect();
        assert_eq!(live.len() as u32, self.copies);
        assert_eq!(
            live.iter().filter(|s| s.in_lru).count() as u32,
            self.inactive
        );
        assert!(self.copies <= self.capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocate_register_release_and_reuse() {
        let mut p = KvPool::new(4, true);
        let mut blocks = Vec::new();
        assert!(p.allocate(3, &mut blocks));
        p.register(blocks[0], 10, true);
        p.register(blocks[1], 11, true);
        assert_eq!(p.num_active(), 3);
        // Release in reverse order: the suffix becomes the older LRU entry.
        for &b in blocks.iter().rev() {
            p.release(b);
        }
        assert_eq!(p.num_active(), 0);
        assert_eq!(p.available(), 4);
        assert_eq!(
            p.match_prefix(&[10, 11, 12]),
            PrefixMatch {
                blocks: 2,
                active_blocks: 0
            }
        );
        // Allocating 3 needs one eviction (1 free + 2 inactive): the suffix (11) goes first.
        let mut more = Vec::new();
        assert!(p.allocate(3, &mut more));
        assert_eq!(p.match_prefix(&[10, 11]).blocks, 1);
        let ev: Vec<_> = p.drain_events().collect();
        assert_eq!(
            ev,
            vec![
                KvEvent::Stored(10),
                KvEvent::Stored(11),
                KvEvent::Removed(11)
            ]
        );
        p.check();
    }

    #[test]
    fn acquire_prefers_active_copies_and_all_or_nothing_allocation() {
        let mut p = KvPool::new(3, false);
        let mut a = Vec::new();
        assert!(p.allocate(1, &mut a));
        p.register(a[0], 7, true);
        let s = p.acquire(7).unwrap();
        assert_eq!(s, a[0]);
        assert_eq!(p.match_prefix(&[7]).active_blocks, 1);
        assert!(!p.allocate(3, &mut Vec::new()));
        assert_eq!(p.num_active(), 1);
        p.release(s);
        p.release(a[0]);
        assert_eq!(p.num_active(), 0);
        assert_eq!(p.match_prefix(&[7]).active_blocks, 0);
        p.check();
    }

    #[test]
    fn duplicate_copies_keep_hash_until_last_evicted() {
        let mut p = KvPool::new(2, true);
        let mut a = Vec::new();
        assert!(p.allocate(2, &mut a));
        p.register(a[0], 5, true);
        p.register(a[1], 5, true);
        p.release(a[0]);
        p.release(a[1]);
        assert!(p.allocate(1, &mut Vec::new()));
        assert_eq!(p.match_prefix(&[5]).blocks, 1);
        assert!(p.allocate(1, &mut Vec::new()));
        assert_eq!(p.match_prefix(&[5]).blocks, 0);
        let ev: Vec<_> = p.drain_events().collect();
        assert_eq!(ev, vec![KvEvent::Stored(5), KvEvent::Removed(5)]);
        p.check();
    }
}
