//! The native G1 KV block pool of a vLLM worker (spec §4.3). Capacity is `num_gpu_blocks` block
//! copies, each private (a partial block owned by one sequence), or cached (full). Cached copies
//! nobody references form the inactive pool, evicted in plain LRU order (head first); sequences
//! release their blocks suffix first. The pool reports `Stored`/`Removed` events of shareable
//! prompt blocks for the KV router's indexer.
//!
//! Two kinds of cached blocks are kept, for speed without changing any result:
//! - *mapped* blocks, findable by their content id (the dense id of a shareable prompt block:
//!   see `workload::sharing::PromptBlocks`), one slot each, reference counted, with duplicate
//!   copies chained behind the first in the order they were cached; as in DynoSim 1.4.2, a
//!   prefix hit always takes the first (oldest) copy, even an inactive one while a duplicate is
//!   in use;
//! - *anonymous* blocks, whose content no other request can ever match: a sequence only counts
//!   them, and on release they enter the LRU as one extent of `n` blocks, evicted one block at a
//!   time from its suffix end, as the per-block LRU would. A preempted sequence's extent keeps
//!   its owner, so the sequence can re-hit its own blocks when it is re-admitted.
//!
//! Private blocks are only counted. Storage is index-based: slots in a `Vec`, an intrusive LRU,
//! and an [`IdMap`] from content id to its first slot.

use rustc_hash::FxHashMap;

/// No entry ([`IdMap`]'s value for an id never set; no slot).
pub(crate) const NIL: u32 = u32::MAX;

const PAGE_BITS: u32 = 10;
const PAGE: usize = 1 << PAGE_BITS;

/// Content id -> `u32` (`u32::MAX` when absent), stored in pages of 1024 entries allocated on
/// first write: memory follows the ids one engine or router has seen, not all of the
/// workload's, and a lookup is two indexed loads.
#[derive(Debug, Clone, Default)]
pub struct IdMap {
    pages: Vec<Option<Box<[u32; PAGE]>>>,
}

impl IdMap {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn get(&self, id: u32) -> u32 {
        match self.pages.get((id >> PAGE_BITS) as usize) {
            Some(Some(page)) => page[id as usize & (PAGE - 1)],
            _ => NIL,
        }
    }

    #[inline]
    pub fn set(&mut self, id: u32, value: u32) {
        let p = (id >> PAGE_BITS) as usize;
        if p >= self.pages.len() {
            self.pages.resize_with(p + 1, || None);
        }
        let page = self.pages[p].get_or_insert_with(|| Box::new([NIL; PAGE]));
        page[id as usize & (PAGE - 1)] = value;
    }

    #[cfg(test)]
    /// Whether no id maps to anything.
    pub fn is_empty(&self) -> bool {
        self.pages
            .iter()
            .flatten()
            .all(|p| p.iter().all(|&v| v == NIL))
    }
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Content id (mapped block) or owner key (owned extent).
    key: u64,
    /// Blocks this LRU entry stands for: 0 for a mapped block, n for an anonymous extent.
    extent: u32,
    owned: bool,
    /// Whether the router is told about this block.
    visible: bool,
    refs: u32,
    prev: u32,
    next: u32,
    /// Next copy registered under the same content id.
    next_dup: u32,
}

/// A change of the set of content ids a worker holds, for the router's indexer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvEvent {
    Stored(u32),
    Removed(u32),
}

/// Result of matching a sequence's block content ids against the pool.
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
    /// Block copies in use (private, cached active, cached inactive).
    copies: u32,
    /// Cached copies with no reference (the LRU pool), in blocks.
    inactive: u32,
    lru_head: u32,
    lru_tail: u32,
    /// Content id -> first slot holding it (`NIL` when absent).
    by_id: IdMap,
    /// Inactive extents of preempted sequences, by owner key.
    owners: FxHashMap<u64, u32>,
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
            by_id: IdMap::new(),
            owners: FxHashMap::default(),
            events: Vec::new(),
            record_events,
        }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Blocks referenced by resident sequences (`copies − inactive`).
    #[inline]
    pub fn num_active(&self) -> u32 {
        self.copies - self.inactive
    }

    /// Blocks that can be handed out: free capacity plus evictable copies.
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

    /// First slot holding content `id`, or `NIL`.
    #[inline]
    fn first_of(&self, id: u32) -> u32 {
        self.by_id.get(id)
    }

    /// Walks `ids` from the start while each is present.
    pub fn match_prefix(&self, ids: &[u32]) -> PrefixMatch {
        let mut m = PrefixMatch::default();
        for &id in ids {
            let first = self.first_of(id);
            if first == NIL {
                break;
            }
            m.blocks += 1;
            if self.slots[first as usize].refs > 0 {
                m.active_blocks += 1;
            }
        }
        m
    }

    fn new_slot(&mut self, slot: Slot) -> u32 {
        match self.free_slots.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Takes a reference on the first copy of a present content id (the oldest cached one; an
    /// inactive copy leaves the LRU pool even if a duplicate is in use, as DynoSim 1.4.2's pool
    /// only ever hits `by_hash[hash].first()`). Returns `None` if absent.
    pub fn acquire(&mut self, id: u32) -> Option<u32> {
        let s = self.first_of(id);
        if s == NIL {
            return None;
        }
        if self.slots[s as usize].refs == 0 {
            self.lru_remove(s);
            self.inactive -= 1;
        }
        self.slots[s as usize].refs += 1;
        Some(s)
    }

    /// Allocates `n` private blocks all-or-nothing, evicting inactive copies from the LRU head as
    /// needed. Returns false (allocating nothing) when the pool cannot supply them.
    pub fn allocate(&mut self, n: u32) -> bool {
        if n > self.available() {
            return false;
        }
        let free = self.capacity - self.copies;
        self.evict(n.saturating_sub(free));
        self.copies += n;
        true
    }

    /// How many blocks (at most `max`) can be allocated one at a time from now on without
    /// failing, and, when the pool reports events and `keep_visible`, without evicting a block
    /// the router was told about: free capacity plus the evictable run at the LRU head.
    pub fn quiet_allocations(&self, max: u32, keep_visible: bool) -> u32 {
        if !(keep_visible && self.record_events) {
            return self.available().min(max);
        }
        let mut n = self.capacity - self.copies;
        let mut s = self.lru_head;
        while n < max && s != NIL {
            let slot = &self.slots[s as usize];
            if slot.extent > 0 {
                n = n.saturating_add(slot.extent);
            } else if slot.visible {
                break;
            } else {
                n += 1;
            }
            s = slot.next;
        }
        n.min(max)
    }

    /// Returns `n` private blocks.
    pub fn free_private(&mut self, n: u32) {
        self.copies -= n;
    }

    /// One private block of the caller became full with shareable content: it becomes a cached
    /// block findable under content `id` (a duplicate copy if the id is already present).
    /// Returns its slot, referenced once.
    pub fn register_private(&mut self, id: u32, visible: bool) -> u32 {
        let slot = self.new_slot(Slot {
            key: id as u64,
            extent: 0,
            owned: false,
            visible,
            refs: 1,
            prev: NIL,
            next: NIL,
            next_dup: NIL,
        });
        let first = self.by_id.get(id);
        if first != NIL {
            // Another copy of the same content: chain it last (copies are hit oldest first).
            let mut last = first;
            while self.slots[last as usize].next_dup != NIL {
                last = self.slots[last as usize].next_dup;
            }
            self.slots[last as usize].next_dup = slot;
        } else {
            self.by_id.set(id, slot);
            if visible && self.record_events {
                self.events.push(KvEvent::Stored(id));
            }
        }
        slot
    }

    /// Drops one reference to a mapped block; unreferenced, it joins the LRU tail.
    pub fn release(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        debug_assert!(s.refs > 0);
        s.refs -= 1;
        if s.refs == 0 {
            self.lru_push_tail(slot);
            self.inactive += 1;
        }
    }

    /// `n` anonymous blocks a sequence held are released: they join the LRU tail as one extent
    /// (suffix evicted first). With `owner`, the extent can be re-acquired by that sequence.
    pub fn release_anonymous(&mut self, n: u32, owner: Option<u64>) {
        if n == 0 {
            return;
        }
        let slot = self.new_slot(Slot {
            key: owner.unwrap_or(0),
            extent: n,
            owned: owner.is_some(),
            visible: false,
            refs: 0,
            prev: NIL,
            next: NIL,
            next_dup: NIL,
        });
        if let Some(key) = owner {
            if let Some(old) = self.owners.insert(key, slot) {
                self.slots[old as usize].owned = false;
            }
        }
        self.lru_push_tail(slot);
        self.inactive += n;
    }

    /// Blocks of `owner`'s inactive extent still in the pool (its prefix side).
    pub fn owned_blocks(&self, owner: u64) -> u32 {
        self.owners
            .get(&owner)
            .map_or(0, |&s| self.slots[s as usize].extent)
    }

    /// Re-acquires the first `n` blocks of `owner`'s extent (they become the caller's anonymous
    /// blocks again). The rest of the extent stays inactive, no longer findable.
    pub fn take_owned(&mut self, owner: u64, n: u32) -> u32 {
        let Some(slot) = self.owners.remove(&owner) else {
            return 0;
        };
        let s = &mut self.slots[slot as usize];
        s.owned = false;
        let taken = n.min(s.extent);
        s.extent -= taken;
        self.inactive -= taken;
        if s.extent == 0 {
            self.lru_remove(slot);
            self.free_slots.push(slot);
        }
        taken
    }

    /// Evicts `n` inactive blocks from the LRU head.
    fn evict(&mut self, mut n: u32) {
        while n > 0 {
            let victim = self.lru_head;
            debug_assert!(victim != NIL);
            let extent = self.slots[victim as usize].extent;
            if extent > 0 {
                let e = extent.min(n);
                self.slots[victim as usize].extent -= e;
                self.inactive -= e;
                self.copies -= e;
                n -= e;
                if e == extent {
                    self.lru_remove(victim);
                    if self.slots[victim as usize].owned {
                        self.owners.remove(&self.slots[victim as usize].key);
                    }
                    self.free_slots.push(victim);
                }
                continue;
            }
            self.lru_remove(victim);
            self.inactive -= 1;
            self.copies -= 1;
            n -= 1;
            self.unmap(victim);
            self.free_slots.push(victim);
        }
    }

    /// Removes an evicted mapped block from its chain of copies.
    fn unmap(&mut self, victim: u32) {
        let id = self.slots[victim as usize].key as u32;
        let visible = self.slots[victim as usize].visible;
        let next = self.slots[victim as usize].next_dup;
        self.slots[victim as usize].next_dup = NIL;
        let first = self.first_of(id);
        debug_assert!(first != NIL, "mapped block missing from the index");
        if first == NIL {
            return;
        }
        if first == victim {
            self.by_id.set(id, next);
            if next == NIL && visible && self.record_events {
                self.events.push(KvEvent::Removed(id));
            }
            return;
        }
        let mut p = first;
        while self.slots[p as usize].next_dup != victim {
            p = self.slots[p as usize].next_dup;
        }
        self.slots[p as usize].next_dup = next;
    }

    fn lru_push_tail(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
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
        s.prev = NIL;
        s.next = NIL;
    }

    /// Consistency check used by tests: the LRU holds exactly the inactive blocks.
    #[cfg(test)]
    pub fn check(&self) {
        let mut blocks = 0u32;
        let mut s = self.lru_head;
        while s != NIL {
            let slot = &self.slots[s as usize];
            blocks += if slot.extent > 0 { slot.extent } else { 1 };
            assert_eq!(slot.refs, 0);
            s = slot.next;
        }
        assert_eq!(blocks, self.inactive);
        assert!(self.copies <= self.capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_map_pages() {
        let mut m = IdMap::new();
        assert_eq!(m.get(5), NIL);
        assert!(m.is_empty());
        m.set(3_000_000, 7);
        m.set(5, 1);
        assert_eq!(
            (m.get(3_000_000), m.get(5), m.get(6), m.get(4_000_000)),
            (7, 1, NIL, NIL)
        );
        // Only the two pages written are allocated.
        assert_eq!(m.pages.iter().flatten().count(), 2);
        m.set(5, NIL);
        m.set(3_000_000, NIL);
        assert!(m.is_empty());
    }

    #[test]
    fn register_release_reuse_and_suffix_first_eviction() {
        let mut p = KvPool::new(4, true);
        assert!(p.allocate(3));
        let a = p.register_private(10, true);
        let b = p.register_private(11, true);
        assert_eq!(p.num_active(), 3);
        // Release suffix first: the private tail, then 11, then 10.
        p.free_private(1);
        p.release(b);
        p.release(a);
        assert_eq!(p.num_active(), 0);
        assert_eq!(p.available(), 4);
        assert_eq!(
            p.match_prefix(&[10, 11, 12]),
            PrefixMatch {
                blocks: 2,
                active_blocks: 0
            }
        );
        // Allocating 3 needs one eviction (2 free + 2 inactive): the suffix (11) goes first.
        assert!(p.allocate(3));
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
    fn acquire_shares_a_copy_and_all_or_nothing_allocation() {
        let mut p = KvPool::new(3, false);
        assert!(p.allocate(1));
        let a = p.register_private(7, true);
        let s = p.acquire(7).unwrap();
        assert_eq!(s, a);
        assert_eq!(p.match_prefix(&[7]).active_blocks, 1);
        assert!(!p.allocate(3));
        assert_eq!(p.num_active(), 1);
        p.release(s);
        p.release(a);
        assert_eq!(p.num_active(), 0);
        assert_eq!(p.match_prefix(&[7]).active_blocks, 0);
        p.check();
    }

    #[test]
    fn hits_take_the_first_copy_even_when_a_duplicate_is_active() {
        let mut p = KvPool::new(4, false);
        assert!(p.allocate(3));
        let a = p.register_private(7, true);
        let b = p.register_private(7, true);
        let c = p.register_private(7, true);
        p.release(a);
        // `b` and `c` are in use, but the first copy `a` is the one found: inactive.
        assert_eq!(p.match_prefix(&[7]).active_blocks, 0);
        assert_eq!(p.num_active(), 2);
        assert_eq!(p.acquire(7), Some(a));
        assert_eq!(p.num_active(), 3);
        p.release(a);
        p.release(b);
        p.release(c);
        // Evicting the first leaves the next copy in caching order first.
        assert!(p.allocate(2));
        assert_eq!(p.acquire(7), Some(b));
        p.check();
    }

    #[test]
    fn duplicate_copies_keep_the_id_until_last_evicted() {
        let mut p = KvPool::new(2, true);
        assert!(p.allocate(2));
        let a = p.register_private(5, true);
        let b = p.register_private(5, true);
        p.release(a);
        p.release(b);
        assert!(p.allocate(1));
        assert_eq!(p.match_prefix(&[5]).blocks, 1);
        assert!(p.allocate(1));
        assert_eq!(p.match_prefix(&[5]).blocks, 0);
        let ev: Vec<_> = p.drain_events().collect();
        assert_eq!(ev, vec![KvEvent::Stored(5), KvEvent::Removed(5)]);
        p.check();
    }

    #[test]
    fn anonymous_extents_evict_block_by_block_and_owners_rehit() {
        let mut p = KvPool::new(10, false);
        assert!(p.allocate(6));
        p.release_anonymous(6, Some(99));
        assert_eq!(p.num_active(), 0);
        assert_eq!(p.owned_blocks(99), 6);
        // 4 free blocks, then 2 evicted from the extent's suffix end.
        assert!(p.allocate(6));
        assert_eq!(p.owned_blocks(99), 4);
        p.check();
        assert_eq!(p.take_owned(99, 3), 3);
        assert_eq!(p.owned_blocks(99), 0);
        assert_eq!(p.num_active(), 9);
        // The remaining block is still inactive and evictable.
        assert_eq!(p.available(), 1);
        assert!(p.allocate(1));
        assert_eq!(p.available(), 0);
        p.check();
    }
}
