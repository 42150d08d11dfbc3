//! Feeds arbitrary bytes to the Mooncake trace parser: it must return a workload or an
//! `InputError`, never panic, and never accept a workload that breaks its own invariants.
#![no_main]

use dynosim::workload::formats::mooncake::{parse_trace_with, Timing};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the trace block size and the timing mode; the rest is the text.
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let tbs = [1u32, 16, 64, 512, 0, 3, 1 << 20, u32::MAX][(head & 7) as usize];
    let timing = if head & 8 == 0 {
        Timing::OpenLoop
    } else {
        Timing::ClosedLoop
    };
    if let Ok(w) = parse_trace_with(text, "fuzz.jsonl", tbs, timing) {
        assert!(!w.requests.is_empty());
        let mut first = 0u32;
        for s in &w.sessions {
            assert_eq!(s.first_request, first);
            first += s.num_turns;
            if let Some(t) = s.first_arrival_ms {
                assert!(t.is_finite() && t >= 0.0, "{t}");
            }
        }
        assert_eq!(first as usize, w.requests.len());
        for r in &w.requests {
            assert!(r.input_length >= 1);
            let blocks = w.blocks_of(r);
            assert_eq!(
                blocks.len() as u64,
                u64::from(r.input_length).div_ceil(u64::from(tbs))
            );
            assert!(blocks.iter().all(|&b| b < w.num_distinct_blocks));
            assert!(r.delay_after_previous_ms.is_finite() && r.delay_after_previous_ms >= 0.0);
        }
    }
});
