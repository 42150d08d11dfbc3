//! The engine blocks of `mooncake-delta` session streams (`Content::Delta`, spec §2.4), for one
//! engine block size: turn k's prompt is the session's earlier new inputs and outputs, so later
//! turns find earlier turns' prompt *and output* blocks. `workload::sharing` hands these blocks to
//! engines and routers. This module reads a parsed [`Workload`] only; the reader that builds the
//! streams (`formats::mooncake_delta`) is not called from here.

use super::{Content, SessionSpec, Workload};
use rustc_hash::FxHashMap;

/// Full engine blocks of a request's computed sequence: its prompt and all but the last output
/// token (whose KV is never computed). What vLLM and TRT-LLM cache.
fn computed_blocks(input: u32, output: u32, bs: u64) -> u64 {
    let computed = u64::from(input).max(u64::from(input) + u64::from(output).saturating_sub(1));
    computed / bs
}

/// Full engine blocks of a request's whole sequence, its prompt and every output token: what
/// SGLang's radix cache holds, which keeps a slot for the last output token too.
fn sequence_blocks(input: u32, output: u32, bs: u64) -> u64 {
    (u64::from(input) + u64::from(output)) / bs
}

/// The shareable engine blocks of a delta workload's sessions for one engine block size.
pub(crate) struct SessionBlocks {
    /// Each session's shareable blocks, one list per session, as dense content ids.
    pub ids: Vec<u32>,
    /// Per request, where its blocks are in `ids`: a prefix of its session's list.
    pub spans: Vec<Span>,
    /// Number of distinct ids (all are below it).
    pub num_ids: u32,
}

/// One request's blocks: a prefix of its session's list of ids.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    /// Where its session's list starts in `SessionBlocks::ids`.
    pub start: usize,
    /// Its shareable blocks of prompt and output, all but the last output token's (what vLLM
    /// and TRT-LLM cache).
    pub computed: u32,
    /// How many of those are prompt blocks.
    pub prompt: u32,
    /// Its shareable blocks counting the last output token's (what SGLang caches).
    pub whole: u32,
}

/// Cuts every session's token stream into engine blocks of `block_size` tokens and keeps, per
/// request, the leading blocks of its computed sequence that another request also holds. Two
/// blocks have the same id exactly when the streams up to their ends are equal.
///
/// Output tokens are unique to their request, so a block holding one (and every block after
/// it) belongs to its session alone: only the blocks before a session's first output token can
/// be shared with other sessions, and only those are identified by content. A session's later blocks are shared by its own turns: block `j` is held by every
/// turn whose computed sequence reaches past it, so by two turns or more below the
/// second-longest sequence.
pub(crate) fn session_blocks(w: &Workload, block_size: u32) -> SessionBlocks {
    let bs = u64::from(block_size.max(1));
    let tbs = u64::from(w.trace_block_size.max(1));
    let turns_of = |s: &SessionSpec| {
        &w.requests[s.first_request as usize..(s.first_request + s.num_turns) as usize]
    };
    // Trace ids used before the first output token of at least two sessions: a block holding
    // any other id (and every block after it) can only be its own session's.
    let mut sessions_of = vec![0u8; w.num_distinct_blocks as usize];
    let mut last_session = vec![u32::MAX; w.num_distinct_blocks as usize];
    for (si, s) in w.sessions.iter().enumerate() {
        for r in turns_of(s) {
            for &id in w.blocks_of(r) {
                let i = id as usize;
                if last_session[i] != si as u32 {
                    last_session[i] = si as u32;
                    sessions_of[i] = sessions_of[i].saturating_add(1);
                }
            }
            if r.output_length > 0 {
                break;
            }
        }
    }
    drop(last_session);

    // Pass 1: the content blocks of each session's stream before its first output token (up to
    // its first id no other session uses there), and how many requests hold each.
    let mut by_content: FxHashMap<(u32, u64), u32> = FxHashMap::default();
    let mut holders: Vec<u32> = Vec::new();
    let mut content: Vec<u32> = Vec::new();
    let mut content_starts: Vec<usize> = Vec::with_capacity(w.sessions.len() + 1);
    for s in &w.sessions {
        content_starts.push(content.len());
        let turns = turns_of(s);
        let before_output: u64 = turns
            .iter()
            .position(|r| r.output_length > 0)
            .map_or(turns.last(), |k| turns.get(k))
            .map_or(0, |r| u64::from(r.input_length));
        let from = content.len();
        let mut stream = BlockStream::new(bs, before_output / bs);
        'turns: for r in turns {
            let Content::Delta { new_input, .. } = r.content else {
                continue;
            };
            let mut left = u64::from(new_input);
            for &id in w.blocks_of(r) {
                if sessions_of[id as usize] < 2 {
                    break 'turns;
                }
                let n = left.min(tbs);
                stream.push(
                    u64::from(id),
                    n,
                    &mut by_content,
                    &mut holders,
                    &mut content,
                );
                left -= n;
            }
            if r.output_length > 0 {
                break 'turns;
            }
        }
        let own = &content[from..];
        for r in turns {
            let n = computed_blocks(r.input_length, r.output_length, bs).min(own.len() as u64);
            for &id in &own[..n as usize] {
                holders[id as usize] = holders[id as usize].saturating_add(1);
            }
        }
    }
    content_starts.push(content.len());

    // Pass 2: each session's shareable prefix, renumbered densely in session order.
    let mut dense = vec![u32::MAX; holders.len()];
    let mut next_id = 0u32;
    let mut ids: Vec<u32> = Vec::new();
    let mut spans = Vec::with_capacity(w.requests.len());
    for (si, s) in w.sessions.iter().enumerate() {
        let turns = turns_of(s);
        let own = &content[content_starts[si]..content_starts[si + 1]];
        let mut shared = own
            .iter()
            .take_while(|&&b| holders[b as usize] >= 2)
            .count() as u64;
        if shared == own.len() as u64 && turns.len() >= 2 {
            // The last turn's prompt holds the turn before it whole, its last output token too.
            let r = &turns[turns.len() - 2];
            shared = shared.max(sequence_blocks(r.input_length, r.output_length, bs));
        }
        // Ids run out at u32::MAX (the pool's "absent" marker): sharing then stops.
        let shared = shared.min(u64::from(u32::MAX - 1 - next_id)) as usize;
        let start = ids.len();
        for j in 0..shared {
            let id = match own.get(j) {
                Some(&b) => {
                    let d = &mut dense[b as usize];
                    if *d == u32::MAX {
                        *d = next_id;
                        next_id += 1;
                    }
                    *d
                }
                None => {
                    next_id += 1;
                    next_id - 1
                }
            };
            ids.push(id);
        }
        for r in turns {
            let n = computed_blocks(r.input_length, r.output_length, bs).min(shared as u64);
            let prompt = (u64::from(r.input_length) / bs).min(n);
            let whole = sequence_blocks(r.input_length, r.output_length, bs).min(shared as u64);
            spans.push(Span {
                start,
                computed: n as u32,
                prompt: prompt as u32,
                whole: whole as u32,
            });
        }
    }
    SessionBlocks {
        ids,
        spans,
        num_ids: next_id,
    }
}

/// Cuts a token stream, given as runs of equal tokens, into engine blocks of `bs` tokens and
/// numbers each block by its content and its parent's number (so equal numbers mean equal
/// streams up to the block's end).
struct BlockStream {
    bs: u64,
    /// Blocks still wanted; later tokens are ignored.
    left: u64,
    parent: u32,
    /// Tokens in the current block, its hash so far and its last (not yet hashed) run.
    filled: u64,
    hash: u64,
    run: Option<(u64, u64)>,
}

const EMPTY_BLOCK_HASH: u64 = 0x243F_6A88_85A3_08D3;

impl BlockStream {
    fn new(bs: u64, blocks: u64) -> Self {
        BlockStream {
            bs,
            left: blocks,
            parent: u32::MAX,
            filled: 0,
            hash: EMPTY_BLOCK_HASH,
            run: None,
        }
    }

    /// Appends `n` tokens of value `token`, closing every block they fill.
    fn push(
        &mut self,
        token: u64,
        mut n: u64,
        by_content: &mut FxHashMap<(u32, u64), u32>,
        holders: &mut Vec<u32>,
        blocks: &mut Vec<u32>,
    ) {
        while n > 0 && self.left > 0 {
            let take = n.min(self.bs - self.filled);
            // Equal neighbouring tokens form one run, so the hash depends on the tokens only.
            self.run = match self.run {
                Some((t, c)) if t == token => Some((t, c + take)),
                Some((t, c)) => {
                    self.hash = mix(self.hash ^ mix(t) ^ mix(c.rotate_left(29)));
                    Some((token, take))
                }
                None => Some((token, take)),
            };
            self.filled += take;
            n -= take;
            if self.filled == self.bs {
                if let Some((t, c)) = self.run.take() {
                    self.hash = mix(self.hash ^ mix(t) ^ mix(c.rotate_left(29)));
                }
                let next = holders.len() as u32;
                let id = *by_content.entry((self.parent, self.hash)).or_insert(next);
                if id == next {
                    holders.push(0);
                }
                blocks.push(id);
                self.parent = id;
                self.filled = 0;
                self.hash = EMPTY_BLOCK_HASH;
                self.left -= 1;
            }
        }
    }
}

/// SplitMix64's finaliser: a 64-bit mix good enough that distinct block contents under one
/// parent do not collide in practice.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
