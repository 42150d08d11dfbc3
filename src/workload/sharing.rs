//! Which prompt blocks can ever be shared. An engine block's content hash is determined by the
//! trace-block ids up to the one holding its last token, so block `j` of a request can only be
//! found in a KV cache (or a router's index) if some *other* request has the same id prefix and
//! is long enough to contain the block. Blocks past that point are unique to their request: the
//! simulator keeps them as anonymous cached blocks (they still occupy KV capacity and age in the
//! LRU) without hashing or indexing them, which is most of a long prompt.

use super::session_streams::session_blocks;
use super::{Content, Workload};
use rustc_hash::FxHashMap;

#[derive(Clone, Copy)]
struct Node {
    /// Longest input among requests through this node, and which request it is.
    top1: u32,
    top1_req: u32,
    /// Second longest input among requests through this node (0 if none).
    top2: u32,
}

/// The shareable prompt blocks of every request of a workload for one engine block size, as
/// dense content ids: two requests' blocks have the same id exactly when they hold the same
/// tokens at the same position after the same prefix (what vLLM's chained block hashes tell
/// apart). Only the leading full blocks that another request of the workload may also hold get
/// an id; the rest of a prompt is unique to its request. Computed once per (workload, block
/// size) and shared read-only by every simulation of it.
#[derive(Debug, Clone, Default)]
pub struct PromptBlocks {
    block_size: u32,
    /// `ids[starts[r]..starts[r + 1]]` are request `r`'s shareable blocks.
    starts: Vec<usize>,
    ids: Vec<u32>,
    num_ids: u32,
    /// `mooncake-delta` only (else empty): per request, where its ids end (they are a prefix of
    /// its session's list, which starts at `starts[r]`) and how many of them are prompt blocks
    /// (the rest hold output tokens a later turn's prompt repeats).
    ends: Vec<usize>,
    prompt_lens: Vec<u32>,
    /// `mooncake-delta` only (else empty): per request, where its ids end counting the block
    /// of its last output token (SGLang's cached sequence).
    whole_ends: Vec<usize>,
}

impl PromptBlocks {
    pub fn new(w: &Workload, block_size: u32) -> Self {
        if w.is_delta() {
            return Self::of_delta(w, block_size);
        }
        let mut starts = Vec::with_capacity(w.requests.len() + 1);
        let mut ids: Vec<u32> = Vec::new();
        let num_ids = for_each_shared_run(w, block_size, |r, base, n| {
            while starts.len() <= r {
                starts.push(ids.len());
            }
            ids.extend(base..base + n);
        });
        while starts.len() <= w.requests.len() {
            starts.push(ids.len());
        }
        PromptBlocks {
            block_size: block_size.max(1),
            starts,
            ids,
            num_ids,
            ends: Vec::new(),
            prompt_lens: Vec::new(),
            whole_ends: Vec::new(),
        }
    }

    /// The blocks of a `mooncake-delta` workload's session streams, output blocks included.
    fn of_delta(w: &Workload, block_size: u32) -> Self {
        let b = session_blocks(w, block_size);
        let mut starts = Vec::with_capacity(b.spans.len() + 1);
        let mut ends = Vec::with_capacity(b.spans.len());
        let mut prompt_lens = Vec::with_capacity(b.spans.len());
        let mut whole_ends = Vec::with_capacity(b.spans.len());
        for span in &b.spans {
            starts.push(span.start);
            ends.push(span.start + span.computed as usize);
            prompt_lens.push(span.prompt);
            whole_ends.push(span.start + span.whole as usize);
        }
        starts.push(b.ids.len());
        PromptBlocks {
            block_size: block_size.max(1),
            starts,
            ids: b.ids,
            num_ids: b.num_ids,
            ends,
            prompt_lens,
            whole_ends,
        }
    }

    /// Engine block size the ids were computed for.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Number of distinct content ids (all ids are `< num_ids`).
    pub fn num_ids(&self) -> u32 {
        self.num_ids
    }

    /// Content ids of request `req`'s shareable leading full prompt blocks.
    #[inline]
    pub fn of(&self, req: u32) -> &[u32] {
        let seq = self.sequence_of(req);
        match self.prompt_lens.get(req as usize) {
            Some(&n) => &seq[..n as usize],
            None => seq,
        }
    }

    /// Content ids of request `req`'s shareable leading full blocks of prompt *and* output: what
    /// an engine registers as the sequence grows. Longer than [`PromptBlocks::of`] only where a
    /// later request's prompt holds this one's output tokens (`mooncake-delta`).
    #[inline]
    pub fn sequence_of(&self, req: u32) -> &[u32] {
        let r = req as usize;
        let end = match self.ends.get(r) {
            Some(&e) => Some(e),
            None => self.starts.get(r + 1).copied(),
        };
        match (self.starts.get(r), end) {
            (Some(&a), Some(b)) => &self.ids[a..b],
            _ => &[],
        }
    }

    /// Content ids of request `req`'s shareable leading full blocks of prompt and output,
    /// counting the block its last output token completes: what SGLang's radix cache holds
    /// (it keeps that token's slot, where vLLM never computes its KV). Differs from
    /// [`PromptBlocks::sequence_of`] only in `mooncake-delta` workloads.
    #[inline]
    pub fn whole_sequence_of(&self, req: u32) -> &[u32] {
        let r = req as usize;
        match (self.starts.get(r), self.whole_ends.get(r)) {
            (Some(&a), Some(&b)) => &self.ids[a..b],
            _ => self.sequence_of(req),
        }
    }

    /// Explicit content ids per request (tests).
    #[cfg(test)]
    pub(crate) fn from_lists(block_size: u32, lists: &[&[u32]]) -> Self {
        let mut p = PromptBlocks {
            block_size,
            ..PromptBlocks::default()
        };
        for l in lists {
            p.starts.push(p.ids.len());
            p.ids.extend_from_slice(l);
        }
        p.starts.push(p.ids.len());
        p.num_ids = p.ids.iter().map(|&i| i + 1).max().unwrap_or(0);
        p
    }
}

/// How many ids [`PromptBlocks::new`] would store for `w` and `block_size` (the total of every
/// request's shareable blocks), without allocating them. Exact: both walk the same trie.
pub fn shared_block_count(w: &Workload, block_size: u32) -> u64 {
    let mut count = 0u64;
    if w.is_delta() {
        return session_blocks(w, block_size).ids.len() as u64;
    }
    for_each_shared_run(w, block_size, |_, _, n| count += u64::from(n));
    count
}

/// An upper bound of [`shared_block_count`] in one pass over the requests, without the trie: a
/// request can only share full blocks that its trace-block ids cover.
pub fn shared_block_bound(w: &Workload, block_size: u32) -> u64 {
    let bs = block_size.max(1) as u64;
    let tbs = w.trace_block_size.max(1) as u64;
    w.requests
        .iter()
        .map(|r| match r.content {
            Content::Blocks { len, .. } => {
                (r.input_length as u64 / bs).min(u64::from(len) * tbs / bs)
            }
            // Prompt and output blocks of the session stream.
            Content::Delta { .. } => (u64::from(r.input_length) + u64::from(r.output_length)) / bs,
            Content::Unique => 0,
        })
        .sum()
}

/// Walks the shareable blocks of every request in request order, calling `emit(r, base, n)` for
/// each run of `n > 0` consecutive ids `base..base + n` of request `r` (in block order).
/// Returns the number of distinct ids.
fn for_each_shared_run(
    w: &Workload,
    block_size: u32,
    mut emit: impl FnMut(usize, u32, u32),
) -> u32 {
    let bs = block_size.max(1) as u64;
    let tbs = w.trace_block_size.max(1) as u64;
    let trie = Trie::build(w);
    // A block's content is fixed by the trie node of the trace block holding its last token
    // (the id path up to it) and its index: each node owns the ids of the engine blocks that
    // end inside its trace block, allocated the first time one of them is shared.
    let mut node_base = vec![u32::MAX; trie.nodes.len()];
    let mut next_id = 0u32;
    for (ri, r) in w.requests.iter().enumerate() {
        let full = r.input_length as u64 / bs;
        for (b, &node) in trie.path(ri).iter().enumerate() {
            // Engine blocks ending in trace block b: floor(b·tbs/bs) .. floor((b+1)·tbs/bs).
            let first_j = b as u64 * tbs / bs;
            let stop_j = ((b as u64 + 1) * tbs / bs).min(full);
            if first_j >= full {
                break;
            }
            let n = &trie.nodes[node as usize];
            let other = if n.top1_req == ri as u32 {
                n.top2
            } else {
                n.top1
            };
            // Block j is shared while another request through this node holds its last token:
            // (j + 1)·bs <= other.
            let ok_j = (other as u64 / bs).min(stop_j);
            if ok_j > first_j {
                let base = &mut node_base[node as usize];
                if *base == u32::MAX {
                    let count = (b as u64 + 1) * tbs / bs - first_j;
                    // Ids stay below u32::MAX (the pool's "absent" marker); a workload this
                    // large cannot be held in memory anyway, so sharing simply stops there.
                    let Some(top) = (next_id as u64)
                        .checked_add(count)
                        .filter(|&t| t < u32::MAX as u64)
                    else {
                        break;
                    };
                    *base = next_id;
                    next_id = top as u32;
                }
                // The node's ids number `count < u32::MAX`, so the run fits in u32.
                emit(ri, *base, (ok_j - first_j) as u32);
            }
            if ok_j < stop_j || stop_j == full {
                break;
            }
        }
    }
    next_id
}

const ROOT: u32 = u32::MAX;

/// Trie of the repeated trace-block id prefixes of all requests, with each request's path.
struct Trie {
    nodes: Vec<Node>,
    /// `paths[path_starts[r]..path_starts[r + 1]]`: the nodes of request `r`'s leading ids.
    paths: Vec<u32>,
    path_starts: Vec<usize>,
}

impl Trie {
    fn build(w: &Workload) -> Trie {
        // An id used by a single request can end no shared prefix: only ids seen at least twice
        // (at any position) enter the trie, which keeps it small on real traces.
        let mut seen = vec![0u8; w.num_distinct_blocks as usize];
        for r in &w.requests {
            for &id in w.blocks_of(r) {
                if let Some(c) = seen.get_mut(id as usize) {
                    *c = c.saturating_add(1);
                }
            }
        }
        let repeated = |id: u32| seen.get(id as usize).is_some_and(|&c| c >= 2);
        let mut children: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut nodes: Vec<Node> = Vec::new();
        let mut paths = Vec::new();
        let mut path_starts = Vec::with_capacity(w.requests.len() + 1);
        for (ri, r) in w.requests.iter().enumerate() {
            path_starts.push(paths.len());
            if !matches!(r.content, Content::Blocks { .. }) {
                continue;
            }
            let mut parent = ROOT;
            let input = r.input_length;
            for &id in w.blocks_of(r) {
                if !repeated(id) {
                    break;
                }
                let next = nodes.len() as u32;
                let node = *children.entry((parent, id)).or_insert(next);
                if node == next {
                    nodes.push(Node {
                        top1: 0,
                        top1_req: u32::MAX,
                        top2: 0,
                    });
                }
                let n = &mut nodes[node as usize];
                if input > n.top1 {
                    n.top2 = n.top1;
                    n.top1 = input;
                    n.top1_req = ri as u32;
                } else if input > n.top2 {
                    n.top2 = input;
                }
                paths.push(node);
                parent = node;
            }
        }
        path_starts.push(paths.len());
        Trie {
            nodes,
            paths,
            path_starts,
        }
    }

    fn path(&self, r: usize) -> &[u32] {
        &self.paths[self.path_starts[r]..self.path_starts[r + 1]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::formats::mooncake::{load_trace, parse_trace};
    use crate::workload::synthetic::{generate, SyntheticArrival, SyntheticSpec};

    fn shared_counts(w: &Workload, bs: u32) -> Vec<usize> {
        let p = PromptBlocks::new(w, bs);
        (0..w.requests.len() as u32)
            .map(|r| p.of(r).len())
            .collect()
    }

    #[test]
    fn shared_prefixes_in_engine_blocks() {
        let text = concat!(
            "{\"timestamp\":0,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,2]}\n",
            "{\"timestamp\":1,\"input_length\":700,\"output_length\":1,\"hash_ids\":[1,2]}\n",
            "{\"timestamp\":2,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,3]}\n",
            "{\"timestamp\":3,\"input_length\":512,\"output_length\":1,\"hash_ids\":[9]}\n",
        );
        let w = parse_trace(text, "t.jsonl", 512).unwrap();
        // Requests 0 and 1 share ids [1,2]; request 1 only has 700 tokens, so request 0 shares
        // blocks up to token 640 (10 blocks) and request 1 its 10 full blocks; request 2 shares
        // id 1 (8 blocks) with both; request 3 is alone.
        assert_eq!(shared_counts(&w, 64), vec![10, 10, 8, 0]);
        let p = PromptBlocks::new(&w, 64);
        assert_eq!(p.of(0), p.of(1));
        assert_eq!(p.of(0)[..8], p.of(2)[..]);
        assert_eq!(p.num_ids(), 16);
        // Engine blocks larger than a trace block.
        assert_eq!(shared_counts(&w, 1024), vec![0, 0, 0, 0]);
    }

    fn splitmix(x: u64) -> u64 {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// vLLM-style chained content hash of a prompt's first `blocks` engine blocks, each trace id
    /// standing for `tbs` identical tokens: the definition the dense ids must agree with.
    fn chained_hashes(ids: &[u32], tbs: u64, bs: u64, blocks: usize) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut parent = 0x5EEDu64;
        for j in 0..blocks as u64 {
            let mut local = 0xC0FFEEu64;
            for t in j * bs..(j + 1) * bs {
                let id = ids.get((t / tbs) as usize).copied().unwrap_or(u32::MAX) as u64;
                local = splitmix(local ^ splitmix(id));
            }
            parent = splitmix(parent ^ splitmix(local));
            out.push((parent, j));
        }
        out
    }

    /// The trace of `dense_ids_match_chained_hashes`: prompts over a few ids, with lengths that
    /// cut trace and engine blocks anywhere.
    fn random_trace() -> String {
        let mut text = String::new();
        let mut state = 12345u64;
        for i in 0..60 {
            state = splitmix(state);
            let n = 1 + (state % 5) as usize;
            let ids: Vec<String> = (0..n)
                .map(|k| ((state >> (8 * k)) % if k == 0 { 2 } else { 3 }).to_string())
                .collect();
            let len = 1 + (state >> 40) % (n as u64 * 20);
            text.push_str(&format!(
                "{{\"timestamp\":{i},\"input_length\":{len},\"output_length\":1,\"hash_ids\":[{}]}}\n",
                ids.join(",")
            ));
        }
        text
    }

    #[test]
    fn dense_ids_match_chained_hashes() {
        let text = random_trace();
        for (tbs, bs) in [(20u32, 4u32), (20, 7), (20, 20), (20, 30), (16, 16)] {
            let w = parse_trace(&text, "t.jsonl", tbs).unwrap();
            let p = PromptBlocks::new(&w, bs);
            let mut by_hash: FxHashMap<(u64, u64), u32> = FxHashMap::default();
            let mut by_id: FxHashMap<u32, (u64, u64)> = FxHashMap::default();
            for (ri, r) in w.requests.iter().enumerate() {
                let ids = p.of(ri as u32);
                let hashes = chained_hashes(w.blocks_of(r), tbs as u64, bs as u64, ids.len());
                for (&id, &h) in ids.iter().zip(&hashes) {
                    assert!(id < p.num_ids());
                    assert_eq!(*by_hash.entry(h).or_insert(id), id, "tbs {tbs} bs {bs}");
                    assert_eq!(*by_id.entry(id).or_insert(h), h, "tbs {tbs} bs {bs}");
                }
                // Past the shared prefix, no other request holds the next block.
                let full = r.input_length / bs;
                if (ids.len() as u32) < full {
                    let all = chained_hashes(w.blocks_of(r), tbs as u64, bs as u64, full as usize);
                    let next = all[ids.len()];
                    let others = w.requests.iter().enumerate().filter(|&(o, q)| {
                        o != ri
                            && q.input_length / bs > ids.len() as u32
                            && chained_hashes(w.blocks_of(q), tbs as u64, bs as u64, ids.len() + 1)
                                [ids.len()]
                                == next
                    });
                    assert_eq!(others.count(), 0, "tbs {tbs} bs {bs} request {ri}");
                }
            }
        }
    }

    #[test]
    fn count_matches_the_stored_ids() {
        let check = |w: &Workload, bs: u32, what: &str| {
            let p = PromptBlocks::new(w, bs);
            let count = shared_block_count(w, bs);
            assert_eq!(count, p.ids.len() as u64, "{what}, block size {bs}");
            assert!(
                shared_block_bound(w, bs) >= count,
                "{what}, block size {bs}"
            );
            assert_eq!(p.starts.len(), w.requests.len() + 1, "{what}");
        };
        let small = concat!(
            "{\"timestamp\":0,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,2]}\n",
            "{\"timestamp\":1,\"input_length\":700,\"output_length\":1,\"hash_ids\":[1,2]}\n",
            "{\"timestamp\":2,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,3]}\n",
            "{\"timestamp\":3,\"input_length\":512,\"output_length\":1,\"hash_ids\":[9]}\n",
        );
        let random = random_trace();
        for bs in [1, 7, 16, 64, 512, 1024, 5000] {
            check(&parse_trace(small, "t.jsonl", 512).unwrap(), bs, "small");
            for tbs in [16, 20] {
                check(&parse_trace(&random, "t.jsonl", tbs).unwrap(), bs, "random");
            }
        }
        check(&Workload::default(), 64, "empty");
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for (path, tbs) in [
            ("data/mooncake_conversation_trace.jsonl.gz", 512),
            ("tests/data/traces/conv_2k.jsonl.gz", 512),
            ("tests/data/traces/sessions.jsonl.gz", 512),
            ("tests/data/traces/sessions.jsonl.gz", 64),
        ] {
            let w = load_trace(&root.join(path), tbs).unwrap();
            assert!(shared_block_count(&w, 64) > 0, "{path}");
            for bs in [16, 64, 100, 512, 2048] {
                check(&w, bs, path);
            }
        }
        // Synthetic workloads: shared-prefix groups (some of one session), several turns.
        for (count, turns, ratio, groups) in [
            (10, 1, 0.5, 1),
            (10, 1, 1.0, 3),
            (7, 3, 0.3, 20),
            (5, 2, 0.0, 0),
            (1, 1, 0.9, 1),
        ] {
            let spec = SyntheticSpec {
                input_tokens: 1000,
                output_tokens: 1,
                request_count: count,
                arrival: SyntheticArrival::IntervalMs(1.0),
                arrival_seed: 1,
                turns_per_session: turns,
                shared_prefix_ratio: ratio,
                num_prefix_groups: groups,
                inter_turn_delay_ms: 0.0,
                ..SyntheticSpec::default()
            };
            for bs in [16, 64, 300] {
                let w = generate(&spec, bs).unwrap();
                check(&w, bs, &format!("{spec:?}"));
            }
        }
    }

    #[test]
    fn count_of_an_enormous_shared_prefix_does_not_overflow() {
        // 100 prompts of 4e9 tokens sharing one 4e9-token trace block: 62.5 M shared blocks each.
        let rows: String = (0..100)
            .map(|i| {
                format!(
                    "{{\"timestamp\":{i},\"input_length\":4000000000,\"output_length\":1,\"hash_ids\":[0]}}\n"
                )
            })
            .collect();
        let w = parse_trace(&rows, "t.jsonl", 4_000_000_000).unwrap();
        assert_eq!(shared_block_count(&w, 64), 100 * 62_500_000);
        assert_eq!(shared_block_bound(&w, 64), 100 * 62_500_000);
        assert_eq!(shared_block_count(&w, 1), 100 * 4_000_000_000);
        // Two groups of one-token blocks: the second group's 4e9 ids would reach u32::MAX, so
        // its sharing stops at once, as in `PromptBlocks::new`.
        let two: String = rows
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{}\n", l.replace("[0]", &format!("[{}]", i % 2))))
            .collect();
        let w2 = parse_trace(&two, "t.jsonl", 4_000_000_000).unwrap();
        assert_eq!(shared_block_count(&w2, 1), 50 * 4_000_000_000);
        assert_eq!(shared_block_count(&w2, 2), 100 * 2_000_000_000);
    }
}
