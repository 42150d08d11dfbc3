//! Interning raw trace-block ids to the dense `u32` ids a [`Workload`](super::Workload) stores
//! (`Workload::block_ids`). Shared by the trace readers of `formats/` and the synthetic generator;
//! it knows nothing of file formats, engines or simulation.

use super::Content;
use rustc_hash::FxHashMap as HashMap;
use std::collections::hash_map::Entry;

/// Raw ids below this are interned through a table indexed by the raw id (grown on demand, so at
/// most 8 MiB), the others through a hash map. Mooncake traces and the synthetic generator number
/// their blocks densely from 0 or 1, so nearly every lookup is a plain table read.
const DIRECT_LIMIT: u64 = 1 << 21;

/// Marks a raw id of the direct table that has not been seen yet.
const UNSEEN: u32 = u32::MAX;

/// Interns raw 64-bit block ids to dense `u32` ids in first-seen order.
#[derive(Debug, Default)]
pub(crate) struct BlockInterner {
    /// Dense id of each raw id below [`DIRECT_LIMIT`] (index = raw id), or [`UNSEEN`].
    direct: Vec<u32>,
    /// Dense ids of the raw ids from [`DIRECT_LIMIT`] on.
    map: HashMap<u64, u32>,
    /// Number of distinct raw ids interned so far (the next dense id).
    distinct: usize,
    /// Interned ids of all stored prompts, referenced by `Content::Blocks`.
    pub(crate) block_ids: Vec<u32>,
}

impl BlockInterner {
    /// Appends the interned ids of `raw` to `block_ids`; returns the content reference, or `None`
    /// when the id space or the store would exceed `u32`.
    pub(crate) fn push_prompt(&mut self, raw: impl IntoIterator<Item = u64>) -> Option<Content> {
        let start = u32::try_from(self.block_ids.len()).ok()?;
        for id in raw {
            let dense = if id < DIRECT_LIMIT {
                let i = id as usize;
                if i >= self.direct.len() {
                    let len = (i + 1).next_power_of_two().max(1024);
                    self.direct.resize(len.min(DIRECT_LIMIT as usize), UNSEEN);
                }
                match self.direct[i] {
                    UNSEEN => {
                        let d = Self::next_dense(&mut self.distinct)?;
                        self.direct[i] = d;
                        d
                    }
                    d => d,
                }
            } else {
                match self.map.entry(id) {
                    Entry::Occupied(e) => *e.get(),
                    Entry::Vacant(e) => *e.insert(Self::next_dense(&mut self.distinct)?),
                }
            };
            self.block_ids.push(dense);
        }
        let len = u32::try_from(self.block_ids.len() - start as usize).ok()?;
        start.checked_add(len)?;
        Some(Content::Blocks { start, len })
    }

    /// Takes the next dense id. `None` from the 2^32-th distinct id on: its own dense id would be
    /// [`UNSEEN`], and the prompt interning it cannot be stored anyway (every interned id is also
    /// in `block_ids`, which would then exceed `u32` indices, so `push_prompt` fails either way).
    fn next_dense(distinct: &mut usize) -> Option<u32> {
        let d = u32::try_from(*distinct).ok().filter(|&d| d != UNSEEN)?;
        *distinct += 1;
        Some(d)
    }

    pub(crate) fn num_distinct(&self) -> u32 {
        // push_prompt never lets the count grow past u32::MAX.
        u32::try_from(self.distinct).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interner_direct_table_and_map_agree() {
        // Ids below and above DIRECT_LIMIT interleaved keep the first-seen numbering.
        let mut i = BlockInterner::default();
        let big = DIRECT_LIMIT;
        let a = i
            .push_prompt([5, big, 5, u64::MAX, 0, big + 1, big])
            .unwrap();
        let b = i.push_prompt([DIRECT_LIMIT - 1, u64::MAX, 1]).unwrap();
        assert_eq!(a, Content::Blocks { start: 0, len: 7 });
        assert_eq!(b, Content::Blocks { start: 7, len: 3 });
        assert_eq!(i.block_ids, [0, 1, 0, 2, 3, 4, 1, 5, 2, 6]);
        assert_eq!(i.num_distinct(), 7);
        assert!(i.direct.len() <= DIRECT_LIMIT as usize);
    }
}
