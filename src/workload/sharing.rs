//! Which prompt blocks can ever be shared. An engine block's content hash is determined by the
//! trace-block ids up to the one holding its last token, so block `j` of a request can only be
//! found in a KV cache (or a router's index) if some *other* request has the same id prefix and
//! is long enough to contain the block. Blocks past that point are unique to their request: the
//! simulator keeps them as anonymous cached blocks (they still occupy KV capacity and age in the
//! LRU) without hashing or indexing them, which is most of a long prompt.

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

/// For every request, the number of leading full engine blocks of `block_size` tokens that
/// another request of the workload may also hold. 0 for requests with unique content.
pub fn shared_prefix_blocks(w: &Workload, block_size: u32) -> Vec<u32> {
    let bs = block_size.max(1) as u64;
    let tbs = w.trace_block_size.max(1) as u64;
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
    const ROOT: u32 = u32::MAX;
    for (ri, r) in w.requests.iter().enumerate() {
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
            parent = node;
        }
    }
    let mut out = vec![0u32; w.requests.len()];
    for (ri, r) in w.requests.iter().enumerate() {
        if !matches!(r.content, Content::Blocks { .. }) {
            continue;
        }
        let full = r.input_length as u64 / bs;
        let ids = w.blocks_of(r);
        let mut parent = ROOT;
        let mut depth_node: Vec<u32> = Vec::new();
        let mut j = 0u64;
        'blocks: while j < full {
            let end = (j + 1) * bs;
            let b = ((end - 1) / tbs) as usize;
            while depth_node.len() <= b {
                let Some(&id) = ids.get(depth_node.len()) else {
                    break 'blocks;
                };
                let Some(&node) = children.get(&(parent, id)) else {
                    break 'blocks;
                };
                depth_node.push(node);
                parent = node;
            }
            let n = &nodes[depth_node[b] as usize];
            let other = if n.top1_req == ri as u32 {
                n.top2
            } else {
                n.top1
            };
            if (other as u64) < end {
                break;
            }
            j += 1;
        }
        out[ri] = j as u32;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::trace::parse_trace;

    #[test]
    fn shared_prefixes_in_engine_blocks() {
        let text = concat!(
            "{\"timestamp\":0,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,2]}\n",
            "{\"timestamp\":1,\"input_length\":700,\"output_length\":1,\"hash_ids\":[1,2]}\n",
            "{\"timestamp\":2,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,3]}\n",
            "{\"timestamp\":3,\"input_length\":512,\"output_length\":1,\"hash_ids\":[9]}\n",
        );
        let w = parse_trace(text, "t.jsonl", 512).unwrap();
        let s = shared_prefix_blocks(&w, 64);
        // Requests 0 and 1 share ids [1,2]; request 1 only has 700 tokens, so request 0 shares
        // blocks up to token 640 (10 blocks) and request 1 its 10 full blocks; request 2 shares
        // id 1 (8 blocks) with both; request 3 is alone.
        assert_eq!(s, vec![10, 10, 8, 0]);
        // Engine blocks larger than a trace block.
        let s = shared_prefix_blocks(&w, 1024);
        assert_eq!(s, vec![0, 0, 0, 0]);
    }
}
