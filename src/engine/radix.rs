//! SGLang's radix prefix cache over KV pages (breadth §1), counted in pages: which physical page
//! holds what does not matter to the results, only how many are free, cached-and-evictable or
//! cached-and-locked, the tree's shape (node splits, leaf extension, partial tail eviction) and
//! the least-recently-used order of its leaves.
//!
//! A page is identified by a [`PageKey`]: the content id of a shareable prompt page (equal keys
//! exactly when the pages hold the same tokens after the same prefix), or a key private to one
//! request and position for everything else (prompt tails no other request holds, outputs).
//! Like DynoSim, children are found by a page's key and the path spells the prefix. Access
//! times come from a logical clock that ticks once wherever DynoSim reads the wall clock.

use rustc_hash::FxHashMap;

/// Identity of one page of content.
pub type PageKey = u64;

const PRIVATE: u64 = 1 << 63;
pub const NO_NODE: u32 = u32::MAX;
const ROOT: u32 = 0;

/// The page keys of one request's sequence: its shareable prompt pages first (content ids),
/// then pages private to it.
#[derive(Clone, Copy)]
pub struct PageKeys<'a> {
    pub shared: &'a [u32],
    pub req: u32,
}

impl PageKeys<'_> {
    #[inline]
    pub fn get(&self, i: u32) -> PageKey {
        match self.shared.get(i as usize) {
            Some(&id) => id as u64,
            None => PRIVATE | (self.req as u64) << 32 | i as u64,
        }
    }

    /// Whether a key is a shareable content id (one a router can index).
    #[inline]
    pub fn is_shared(key: PageKey) -> bool {
        key & PRIVATE == 0
    }
}

#[derive(Debug, Default)]
struct Node {
    parent: u32,
    children: FxHashMap<PageKey, u32>,
    key: Vec<PageKey>,
    lock_ref: u32,
    last_access: u64,
    /// Position in `RadixCache::leaves` while an evictable leaf.
    leaf_pos: u32,
}

/// The cache of one SGLang engine: page pool plus radix tree.
#[derive(Debug)]
pub struct RadixCache {
    nodes: Vec<Node>,
    free_nodes: Vec<u32>,
    total_pages: u32,
    free_pages: u32,
    evictable_pages: u64,
    /// Unlocked leaves, candidates for eviction.
    leaves: Vec<u32>,
    clock: u64,
}

impl RadixCache {
    pub fn new(total_pages: u32) -> Self {
        let root = Node {
            parent: NO_NODE,
            leaf_pos: NO_NODE,
            ..Node::default()
        };
        RadixCache {
            nodes: vec![root],
            free_nodes: Vec::new(),
            total_pages,
            free_pages: total_pages,
            evictable_pages: 0,
            leaves: Vec::new(),
            clock: 0,
        }
    }

    #[cfg(test)]
    pub fn root(&self) -> u32 {
        ROOT
    }
    pub fn total_pages(&self) -> u32 {
        self.total_pages
    }
    /// Pages in the free pool.
    pub fn available_pages(&self) -> u32 {
        self.free_pages
    }
    /// Cached pages no running request holds.
    pub fn evictable_pages(&self) -> u64 {
        self.evictable_pages
    }

    /// Takes `n` pages from the free pool (no eviction).
    pub fn alloc(&mut self, n: u32) -> bool {
        if n > self.free_pages {
            return false;
        }
        self.free_pages -= n;
        true
    }
    pub fn free(&mut self, n: u32) {
        self.free_pages += n;
        debug_assert!(self.free_pages <= self.total_pages);
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Leading pages of `node`'s key equal to pages `from..end` of `keys`.
    fn common(&self, node: u32, keys: &PageKeys, from: u32, end: u32) -> u32 {
        let k = &self.nodes[node as usize].key;
        let n = (k.len() as u32).min(end - from) as usize;
        // The shareable part compares slice against slice (the hot loop of LPM scoring).
        let shared = keys.shared.get(from as usize..).unwrap_or(&[]);
        let m = n.min(shared.len());
        // Whole chunks first (branch-free, vectorisable), then the chunk that differs.
        const CHUNK: usize = 16;
        let mut same = 0;
        for (ka, sb) in k[..m]
            .chunks_exact(CHUNK)
            .zip(shared[..m].chunks_exact(CHUNK))
        {
            if !ka
                .iter()
                .zip(sb)
                .fold(true, |eq, (a, b)| eq & (*a == *b as u64))
            {
                break;
            }
            same += CHUNK;
        }
        same += k[same..m]
            .iter()
            .zip(&shared[same..m])
            .take_while(|(a, b)| **a == **b as u64)
            .count();
        if same < m {
            return same as u32;
        }
        (m..n)
            .take_while(|&j| k[j] == keys.get(from + j as u32))
            .count() as u32
            + m as u32
    }

    /// Longest cached prefix of the first `n` pages: (pages matched, node ending it). Splits the
    /// node where the match ends inside it and refreshes the path's access time.
    pub fn match_prefix(&mut self, keys: &PageKeys, n: u32) -> (u32, u32) {
        let now = self.tick();
        self.nodes[ROOT as usize].last_access = now;
        let mut cur = ROOT;
        let mut matched = 0;
        while matched < n {
            let Some(&child) = self.nodes[cur as usize].children.get(&keys.get(matched)) else {
                break;
            };
            let common = self.common(child, keys, matched, n);
            let len = self.nodes[child as usize].key.len() as u32;
            if common < len {
                cur = self.split(child, common);
                matched += common;
                break;
            }
            matched += common;
            cur = child;
            self.nodes[cur as usize].last_access = now;
        }
        (matched, cur)
    }

    /// Pages of the first `n` that are cached, without touching anything (LPM's scoring).
    pub fn prefix_match_len(&self, keys: &PageKeys, n: u32) -> u32 {
        let mut cur = ROOT;
        let mut matched = 0;
        while matched < n {
            let Some(&child) = self.nodes[cur as usize].children.get(&keys.get(matched)) else {
                break;
            };
            let common = self.common(child, keys, matched, n);
            matched += common;
            if common < self.nodes[child as usize].key.len() as u32 {
                break;
            }
            cur = child;
        }
        matched
    }

    /// Inserts pages `prefix..end` of a sequence whose first `prefix` pages are the path to
    /// `start`. Returns (last node of the path, pages newly added to the tree); the others were
    /// cached already, so the caller's own copies of them are redundant.
    pub fn insert_from(
        &mut self,
        start: u32,
        prefix: u32,
        keys: &PageKeys,
        end: u32,
        allow_locked_tail: bool,
    ) -> (u32, u32) {
        if end <= prefix {
            return (start, 0);
        }
        let now = self.tick();
        let mut c = start;
        while c != NO_NODE {
            self.nodes[c as usize].last_access = now;
            c = self.nodes[c as usize].parent;
        }
        let mut cur = start;
        let mut off = prefix;
        while off < end {
            let node = &self.nodes[cur as usize];
            let can_extend = cur != ROOT
                && node.children.is_empty()
                && (node.lock_ref == 0
                    || (allow_locked_tail && cur == start && node.lock_ref == 1));
            if can_extend {
                let added = end - off;
                let locked = node.lock_ref > 0;
                let n = &mut self.nodes[cur as usize];
                n.key.extend((off..end).map(|i| keys.get(i)));
                n.last_access = now;
                if !locked {
                    self.evictable_pages += added as u64;
                }
                return (cur, added);
            }
            let Some(&child) = self.nodes[cur as usize].children.get(&keys.get(off)) else {
                let added = end - off;
                return (self.create_child(cur, keys, off, end), added);
            };
            let common = self.common(child, keys, off, end);
            let len = self.nodes[child as usize].key.len() as u32;
            if common == len {
                off += common;
                cur = child;
                self.nodes[cur as usize].last_access = now;
            } else {
                let mid = self.split(child, common);
                off += common;
                if off < end {
                    let added = end - off;
                    return (self.create_child(mid, keys, off, end), added);
                }
                return (mid, 0);
            }
        }
        (cur, 0)
    }

    fn new_node(&mut self, node: Node) -> u32 {
        match self.free_nodes.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    fn create_child(&mut self, parent: u32, keys: &PageKeys, from: u32, end: u32) -> u32 {
        let now = self.tick();
        let key: Vec<PageKey> = (from..end).map(|i| keys.get(i)).collect();
        let first = key[0];
        let id = self.new_node(Node {
            parent,
            children: FxHashMap::default(),
            key,
            lock_ref: 0,
            last_access: now,
            leaf_pos: NO_NODE,
        });
        self.remove_leaf(parent);
        self.nodes[parent as usize].children.insert(first, id);
        self.add_leaf(id);
        self.evictable_pages += (end - from) as u64;
        id
    }

    /// Splits `child` after `at` pages; returns the new upper node.
    fn split(&mut self, child: u32, at: u32) -> u32 {
        let c = &mut self.nodes[child as usize];
        let first = c.key[0];
        let suffix = c.key.split_off(at as usize);
        let prefix = std::mem::replace(&mut c.key, suffix);
        let (parent, lock_ref, last_access) = (c.parent, c.lock_ref, c.last_access);
        let suffix_first = c.key[0];
        let mut children = FxHashMap::default();
        children.insert(suffix_first, child);
        let mid = self.new_node(Node {
            parent,
            children,
            key: prefix,
            lock_ref,
            last_access,
            leaf_pos: NO_NODE,
        });
        self.nodes[child as usize].parent = mid;
        self.nodes[parent as usize].children.insert(first, mid);
        mid
    }

    fn add_leaf(&mut self, id: u32) {
        if self.nodes[id as usize].leaf_pos == NO_NODE {
            self.nodes[id as usize].leaf_pos = self.leaves.len() as u32;
            self.leaves.push(id);
        }
    }

    fn remove_leaf(&mut self, id: u32) {
        let pos = self.nodes[id as usize].leaf_pos;
        if pos != NO_NODE {
            self.leaves.swap_remove(pos as usize);
            if let Some(&moved) = self.leaves.get(pos as usize) {
                self.nodes[moved as usize].leaf_pos = pos;
            }
            self.nodes[id as usize].leaf_pos = NO_NODE;
        }
    }

    pub fn inc_lock(&mut self, node: u32) {
        let mut c = node;
        while c != ROOT && c != NO_NODE {
            let n = &mut self.nodes[c as usize];
            n.lock_ref += 1;
            if n.lock_ref == 1 {
                self.evictable_pages -= n.key.len() as u64;
                self.remove_leaf(c);
            }
            c = self.nodes[c as usize].parent;
        }
    }

    pub fn dec_lock(&mut self, node: u32) {
        let mut c = node;
        while c != ROOT && c != NO_NODE {
            let n = &mut self.nodes[c as usize];
            if n.lock_ref == 0 {
                break;
            }
            n.lock_ref -= 1;
            if n.lock_ref == 0 {
                self.evictable_pages += n.key.len() as u64;
                if n.children.is_empty() {
                    self.add_leaf(c);
                }
            }
            c = self.nodes[c as usize].parent;
        }
    }

    /// Evicts least recently used unlocked pages until `pages` are freed or none is left;
    /// pushes the keys of the evicted pages to `removed` when given (only a router needs them).
    /// Returns the pages freed.
    pub fn evict(&mut self, pages: u32, mut removed: Option<&mut Vec<PageKey>>) -> u32 {
        let mut evicted = 0;
        while evicted < pages {
            let Some(&victim) = self
                .leaves
                .iter()
                .min_by_key(|&&id| self.nodes[id as usize].last_access)
            else {
                break;
            };
            let len = self.nodes[victim as usize].key.len() as u32;
            let take = (pages - evicted).min(len);
            if take < len {
                let n = &mut self.nodes[victim as usize];
                if let Some(removed) = removed.as_deref_mut() {
                    removed.extend_from_slice(&n.key[(len - take) as usize..]);
                }
                n.key.truncate((len - take) as usize);
                self.free_pages += take;
                self.evictable_pages -= take as u64;
                evicted += take;
                continue;
            }
            self.remove_leaf(victim);
            let n = std::mem::take(&mut self.nodes[victim as usize]);
            if let Some(removed) = removed.as_deref_mut() {
                removed.extend_from_slice(&n.key);
            }
            self.free_pages += len;
            self.evictable_pages -= len as u64;
            evicted += len;
            self.free_nodes.push(victim);
            let p = n.parent;
            self.nodes[p as usize].children.remove(&n.key[0]);
            let pn = &self.nodes[p as usize];
            if p != ROOT && pn.children.is_empty() && pn.lock_ref == 0 {
                self.add_leaf(p);
            }
        }
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(shared: &[u32]) -> PageKeys<'_> {
        PageKeys { shared, req: 9 }
    }

    #[test]
    fn insert_match_split_and_evict() {
        let mut c = RadixCache::new(100);
        let a = [1, 2, 3, 4, 5];
        let (node, added) = c.insert_from(c.root(), 0, &keys(&a), 5, false);
        assert_eq!(added, 5);
        assert_eq!(c.evictable_pages(), 5);
        let b = [1, 2, 3, 6, 7];
        let (m, mid) = c.match_prefix(&keys(&b), 5);
        assert_eq!(m, 3);
        assert_ne!(mid, node);
        let (_, added) = c.insert_from(mid, 3, &keys(&b), 5, false);
        assert_eq!(added, 2);
        assert_eq!(c.prefix_match_len(&keys(&b), 5), 5);
        assert_eq!(c.evictable_pages(), 7);
        c.inc_lock(mid);
        assert_eq!(c.evictable_pages(), 4);
        // Oldest leaf first ([4, 5]), then [6, 7]; the locked prefix stays.
        let mut removed = Vec::new();
        assert_eq!(c.evict(10, Some(&mut removed)), 4);
        assert_eq!(removed, vec![4, 5, 6, 7]);
        c.dec_lock(mid);
        assert_eq!(c.evictable_pages(), 3);
        removed.clear();
        // Partial eviction takes the tail of the leaf.
        assert_eq!(c.evict(1, Some(&mut removed)), 1);
        assert_eq!(removed, vec![3]);
        assert_eq!(c.prefix_match_len(&keys(&a), 5), 2);
    }

    #[test]
    fn private_pages_never_match_another_request() {
        let mut c = RadixCache::new(10);
        let k1 = PageKeys {
            shared: &[7],
            req: 1,
        };
        let k2 = PageKeys {
            shared: &[7],
            req: 2,
        };
        c.insert_from(c.root(), 0, &k1, 3, false);
        assert_eq!(c.prefix_match_len(&k2, 3), 1);
        assert_eq!(c.prefix_match_len(&k1, 3), 3);
    }
}
