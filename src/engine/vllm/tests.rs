//! Unit tests of the vLLM engine (and of TRT-LLM's admission on it).

use super::*;
use crate::timing::Polynomial;

fn engine(args: EngineArgs) -> Engine<Polynomial> {
    Engine::new(&args, Polynomial, false)
}

#[test]
fn worked_vector_single_request() {
    let mut e = engine(EngineArgs::default());
    // Unique content: nothing shareable, so no content ids.
    let prompts = PromptBlocks::from_lists(64, &[&[]]);
    e.enqueue(0, 1, 2048, 3, 0);
    let mut out = PassOutput::default();
    let t1 = e.step(&prompts, &mut out);
    assert_eq!(out.admitted, vec![(0, 0)]);
    assert_eq!(out.emitted, vec![(0, 1)]);
    assert!((out.prefill_ms - 49.363).abs() < 1e-3);
    assert!((out.decode_ms - 5.8454).abs() < 1e-4);
    assert!((t1 - 55.208).abs() < 1e-3);
    let t2 = e.step(&prompts, &mut out);
    assert_eq!(out.emitted, vec![(0, 2)]);
    assert!((t2 - 5.84868).abs() < 1e-5);
    let _ = e.step(&prompts, &mut out);
    assert_eq!(out.finished, vec![0]);
    assert!(!e.has_work());
    assert_eq!(e.pool().num_active(), 0);
}

fn mtp_engine(rates: &[f64], num_gpu_blocks: u64) -> Engine<Polynomial> {
    let args = EngineArgs {
        num_gpu_blocks,
        mtp: Some(crate::config::Mtp {
            nextn: rates.len() as u32,
            accept_rates: rates.to_vec(),
            seed: 42,
        }),
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    e.seed_mtp(0);
    e
}

#[test]
fn multi_token_prediction_emits_bursts_and_computes_one_token_a_pass() {
    // Both drafts always accepted: 3 tokens a pass, the last pass cut to what is left.
    let mut e = mtp_engine(&[1.0, 1.0], 16384);
    let prompts = PromptBlocks::from_lists(64, &[&[]]);
    e.enqueue(0, 1, 2048, 7, 0);
    let mut out = PassOutput::default();
    let t1 = e.step(&prompts, &mut out);
    // The prefill pass emits a burst too, timed as one decode step of the batch.
    assert_eq!(out.emitted, vec![(0, 1), (0, 2), (0, 3)]);
    assert!((t1 - 55.208).abs() < 1e-3);
    e.step(&prompts, &mut out);
    assert_eq!(out.emitted, vec![(0, 4), (0, 5), (0, 6)]);
    assert_eq!(out.prefill_ms, 0.0);
    e.step(&prompts, &mut out);
    assert_eq!(out.emitted, vec![(0, 7)]);
    assert_eq!(out.finished, vec![0]);
    assert_eq!(e.pool().num_active(), 0);
    // Never accepted: one token a pass, as without prediction.
    let mut e = mtp_engine(&[0.0, 0.0], 16384);
    e.enqueue(0, 1, 2048, 3, 0);
    for n in 1..=3 {
        e.step(&prompts, &mut out);
        assert_eq!(out.emitted, vec![(0, n)]);
    }
}

#[test]
fn multi_token_prediction_reserves_the_longest_burst_or_preempts() {
    // 2 blocks of 64: one sequence's 64-token prompt fills one; a burst of up to 3 tokens
    // needs the second, which the other sequence's prompt holds: LIFO preempts it.
    let mut e = mtp_engine(&[1.0, 1.0], 2);
    let prompts = PromptBlocks::from_lists(64, &[&[], &[]]);
    e.enqueue(0, 1, 64, 10, 0);
    e.enqueue(1, 2, 64, 10, 0);
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    assert_eq!(out.preempted, 1);
    assert_eq!(out.emitted, vec![(0, 1), (0, 2), (0, 3)]);
    assert_eq!(e.num_waiting(), 1);
    assert!(
        e.plan_stride(8, &mut Vec::new()).is_none(),
        "bursts are drawn pass by pass"
    );
}

#[test]
fn prefill_pass_overhead_adds_to_prefill_passes_only() {
    let mut e = engine(EngineArgs {
        prefill_pass_overhead_ms: 10.0,
        speedup_ratio: 2.0,
        ..EngineArgs::default()
    });
    let prompts = PromptBlocks::from_lists(64, &[&[]]);
    e.enqueue(0, 1, 2048, 3, 0);
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    // Not scaled by the speed-up: host time.
    assert!((out.prefill_ms - (49.363 / 2.0 + 10.0)).abs() < 1e-3);
    e.step(&prompts, &mut out);
    assert_eq!(out.prefill_ms, 0.0);
    assert!((out.decode_ms - 5.84868 / 2.0).abs() < 1e-4);
}

#[test]
fn decode_pass_overhead_adds_to_decoding_passes_and_strides() {
    let base = EngineArgs {
        speedup_ratio: 2.0,
        ..EngineArgs::default()
    };
    let start = |ms: f64| {
        let mut e = engine(EngineArgs {
            decode_pass_overhead_ms: ms,
            ..base.clone()
        });
        e.enqueue(0, 1, 2048, 10, 0);
        e
    };
    let prompts = PromptBlocks::from_lists(64, &[&[]]);
    let (mut out, mut plain_out) = (PassOutput::default(), PassOutput::default());
    for ms in [1.5, -1.0] {
        let (mut e, mut plain) = (start(ms), start(0.0));
        // The pass that prefills also emits the first token (DynoSim's decode time of the
        // ready sequences): both carry the overhead, not scaled by the speed-up.
        for _ in 0..2 {
            e.step(&prompts, &mut out);
            plain.step(&prompts, &mut plain_out);
            assert_eq!(out.prefill_ms, plain_out.prefill_ms);
            assert!(plain_out.decode_ms > 0.0);
            assert!((out.decode_ms - (plain_out.decode_ms + ms)).abs() < 1e-9);
        }
        assert!((plain_out.decode_ms - 5.84868 / 2.0).abs() < 1e-4);
        // A stride of decode passes: every pass carries it.
        let (mut durations, mut plain_durations) = (Vec::new(), Vec::new());
        let k = e.plan_stride(4, &mut durations).expect("a stride");
        assert_eq!(plain.plan_stride(4, &mut plain_durations), Some(k));
        for (d, p) in durations.iter().zip(&plain_durations) {
            assert!((d - (p + ms)).abs() < 1e-9, "{d} {p}");
        }
    }
    // A pass never takes less than nothing.
    let mut e = start(-1000.0);
    e.step(&prompts, &mut out);
    assert_eq!(out.decode_ms, 0.0);
    assert!(out.prefill_ms > 0.0);
}

#[test]
fn decode_time_scale_multiplies_decoding_passes_as_a_ratio_would_divide() {
    let start = |a: EngineArgs| {
        let mut e = engine(EngineArgs {
            speedup_ratio: 2.0,
            ..a
        });
        e.enqueue(0, 1, 2048, 10, 0);
        e
    };
    let mut scaled = start(EngineArgs {
        decode_time_scale: 2.0,
        ..EngineArgs::default()
    });
    let mut ratio = start(EngineArgs {
        decode_speedup_ratio: 0.5,
        ..EngineArgs::default()
    });
    let mut plain = start(EngineArgs::default());
    let prompts = PromptBlocks::from_lists(64, &[&[]]);
    let mut outs = [
        PassOutput::default(),
        PassOutput::default(),
        PassOutput::default(),
    ];
    for _ in 0..2 {
        scaled.step(&prompts, &mut outs[0]);
        ratio.step(&prompts, &mut outs[1]);
        plain.step(&prompts, &mut outs[2]);
        assert_eq!(outs[0].prefill_ms, outs[2].prefill_ms);
        assert_eq!(outs[0].decode_ms, outs[1].decode_ms);
        // Pass times are kept to the nanosecond, as DynoSim's.
        assert!((outs[0].decode_ms - 2.0 * outs[2].decode_ms).abs() <= 1e-6);
    }
    let (mut d, mut r, mut p) = (Vec::new(), Vec::new(), Vec::new());
    let k = scaled.plan_stride(4, &mut d).expect("a stride");
    assert_eq!(ratio.plan_stride(4, &mut r), Some(k));
    assert_eq!(plain.plan_stride(4, &mut p), Some(k));
    assert_eq!(d, r);
    for (d, p) in d.iter().zip(&p) {
        assert!((d - 2.0 * p).abs() <= 1e-6, "{d} {p}");
    }
    // Without a speed-up ratio (≤ 0: none) the scale still applies.
    let mut e = engine(EngineArgs {
        speedup_ratio: 0.0,
        decode_time_scale: 2.0,
        ..EngineArgs::default()
    });
    let mut unscaled = engine(EngineArgs {
        speedup_ratio: 0.0,
        ..EngineArgs::default()
    });
    e.enqueue(0, 1, 2048, 10, 0);
    unscaled.enqueue(0, 1, 2048, 10, 0);
    e.step(&prompts, &mut outs[0]);
    unscaled.step(&prompts, &mut outs[2]);
    assert!((outs[0].decode_ms - 2.0 * outs[2].decode_ms).abs() <= 1e-6);
}

#[test]
fn prefix_reuse_respects_recompute_rule() {
    let mut e = engine(EngineArgs::default());
    // Two requests with the same two-block prompt.
    let prompts = PromptBlocks::from_lists(64, &[&[0, 1], &[0, 1]]);
    e.enqueue(0, 1, 128, 1, 2);
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    assert_eq!(out.finished, vec![0]);
    e.enqueue(1, 2, 128, 1, 2);
    e.step(&prompts, &mut out);
    // Block-aligned, fully cached prompt: the last block is recomputed.
    assert_eq!(out.admitted, vec![(1, 64)]);
}

#[test]
fn preemption_when_pool_is_exhausted() {
    let args = EngineArgs {
        num_gpu_blocks: 4,
        block_size: 4,
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    let prompts = PromptBlocks::from_lists(4, &[&[], &[]]);
    e.enqueue(0, 1, 7, 4, 0);
    e.enqueue(1, 2, 7, 4, 0);
    let mut out = PassOutput::default();
    let mut finished = Vec::new();
    let mut preemptions = 0;
    for _ in 0..100 {
        if !e.has_work() {
            break;
        }
        e.step(&prompts, &mut out);
        preemptions += out.preempted;
        finished.extend_from_slice(&out.finished);
        assert!(e.pool().num_active() <= 4);
    }
    finished.sort();
    assert_eq!(finished, vec![0, 1]);
    assert!(preemptions > 0);
}

#[test]
fn oversized_prompt_is_rejected() {
    let args = EngineArgs {
        num_gpu_blocks: 2,
        block_size: 4,
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    let prompts = PromptBlocks::from_lists(4, &[&[]]);
    e.enqueue(0, 1, 9, 1, 0);
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    assert_eq!(out.rejected, vec![0]);
    assert!(!e.has_work());
}

#[test]
fn guaranteed_no_evict_reserves_to_completion_and_never_preempts() {
    let args = EngineArgs {
        engine_type: EngineType::Trtllm,
        num_gpu_blocks: 4,
        block_size: 4,
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    let prompts = PromptBlocks::from_lists(4, &[&[], &[], &[]]);
    // 7 + 4 tokens need 3 blocks to completion: the second cannot be admitted beside the
    // first (vLLM would admit both and preempt); a 16-token prompt fills the pool.
    e.enqueue(0, 1, 7, 4, 0);
    e.enqueue(1, 2, 7, 4, 0);
    e.enqueue(2, 3, 16, 4, 0);
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    assert_eq!(out.admitted, vec![(0, 0)]);
    let mut finished = Vec::new();
    let mut rejected = Vec::new();
    for _ in 0..100 {
        if !e.has_work() {
            break;
        }
        e.step(&prompts, &mut out);
        assert_eq!(out.preempted, 0);
        finished.extend_from_slice(&out.finished);
        rejected.extend_from_slice(&out.rejected);
    }
    assert_eq!(finished, vec![0, 1]);
    assert_eq!(rejected, vec![2]);
}

/// Passes until request `req` is admitted, with one sequence decoding throughout.
fn passes_until_admitted(batch_wait: crate::config::BatchWait, second_prompt: u32) -> u32 {
    let args = EngineArgs {
        engine_type: EngineType::Trtllm,
        max_num_batched_tokens: Some(1000),
        batch_wait,
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    let prompts = PromptBlocks::from_lists(64, &[&[], &[]]);
    e.enqueue(0, 1, 100, 200, 0);
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    assert_eq!(out.admitted, vec![(0, 0)]);
    e.enqueue(1, 2, second_prompt, 10, 0);
    for pass in 1..100 {
        e.step(&prompts, &mut out);
        if out.admitted.contains(&(1, 0)) {
            // The first sequence decoded in every pass that held the prompt back.
            assert_eq!(out.emitted.first().map(|x| x.0), Some(0));
            return pass;
        }
        assert!(out.prefill_ms == 0.0, "a held pass computes no prompt");
    }
    panic!("never admitted");
}

#[test]
fn trtllm_batch_waiting_holds_prompts_while_sequences_decode() {
    use crate::config::BatchWait;
    let off = BatchWait::default();
    assert_eq!(passes_until_admitted(off, 100), 1);
    // Held for 5 passes, admitted in the 6th (the count reaches the timeout).
    let wait = BatchWait {
        timeout_iters: 5,
        max_tokens_ratio: 0.9,
    };
    assert_eq!(passes_until_admitted(wait, 100), 6);
    // A prompt that brings the pass to 0.9 x 1000 tokens (899 + 1 decoding) joins at once.
    assert_eq!(passes_until_admitted(wait, 899), 1);
    assert_eq!(passes_until_admitted(wait, 898), 6);
    // As TRT-LLM: with a ratio of 0 the token test always passes, so nothing waits.
    let ratio_zero = BatchWait {
        timeout_iters: 5,
        max_tokens_ratio: 0.0,
    };
    assert_eq!(passes_until_admitted(ratio_zero, 100), 1);
}

#[test]
fn trtllm_batch_waiting_never_holds_a_prompt_when_nothing_decodes() {
    let args = EngineArgs {
        engine_type: EngineType::Trtllm,
        batch_wait: crate::config::BatchWait {
            timeout_iters: 50,
            max_tokens_ratio: 0.9,
        },
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    let prompts = PromptBlocks::from_lists(64, &[&[], &[]]);
    e.enqueue(0, 1, 100, 2, 0);
    e.enqueue(1, 2, 100, 2, 0);
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    assert_eq!(out.admitted, vec![(0, 0), (1, 0)]);
}

#[test]
fn guaranteed_no_evict_clamps_output_to_the_pool() {
    let args = EngineArgs {
        engine_type: EngineType::Trtllm,
        num_gpu_blocks: 4,
        block_size: 4,
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    let prompts = PromptBlocks::from_lists(4, &[&[]]);
    // 10 prompt tokens leave room for 6 of the 100 requested.
    e.enqueue(0, 1, 10, 100, 0);
    let mut out = PassOutput::default();
    let mut emitted = 0;
    for _ in 0..100 {
        if !e.has_work() {
            break;
        }
        e.step(&prompts, &mut out);
        emitted += out.emitted.len();
    }
    assert_eq!(emitted, 6);
}

#[test]
fn stall_preempted_request_larger_than_the_pool_but_not_a_fresh_one() {
    let args = EngineArgs {
        num_gpu_blocks: 4,
        block_size: 4,
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    e.enqueue(0, 1, 20, 4, 0);
    // A fresh request larger than the pool is rejected at admission: no stall.
    assert_eq!(e.never_schedulable(), None);
    // Preempted (its generated tokens kept), it waits at the head for good.
    let s = e.waiting[0];
    e.seqs[s as usize].exposed = true;
    assert_eq!(
        e.never_schedulable(),
        Some(StallCause::PreemptedOutgrewPool)
    );
    let prompts = PromptBlocks::from_lists(4, &[&[]]);
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    assert!(!out.progressed);
}

#[test]
fn stall_unchunked_prompt_over_the_batch_budget_unless_a_cache_hit_could_shrink_it() {
    let args = EngineArgs {
        block_size: 4,
        enable_chunked_prefill: false,
        max_num_batched_tokens: Some(10),
        ..EngineArgs::default()
    };
    let mut e = engine(EngineArgs {
        enable_prefix_caching: false,
        ..args.clone()
    });
    e.enqueue(0, 1, 20, 2, 0);
    assert_eq!(
        e.never_schedulable(),
        Some(StallCause::PromptOverBatchBudget)
    );
    // With prefix caching, a later request could cache 16 of its 20 tokens.
    let mut e = engine(args.clone());
    e.enqueue(0, 1, 20, 2, 0);
    assert_eq!(e.never_schedulable(), None);
    // TRT-LLM the same way.
    let mut e = engine(EngineArgs {
        engine_type: EngineType::Trtllm,
        enable_prefix_caching: false,
        ..args
    });
    e.enqueue(0, 1, 20, 2, 0);
    assert_eq!(
        e.never_schedulable(),
        Some(StallCause::PromptOverBatchBudget)
    );
}

#[test]
fn no_stall_while_something_runs_or_for_a_fitting_head() {
    let args = EngineArgs {
        num_gpu_blocks: 8,
        block_size: 4,
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    let prompts = PromptBlocks::from_lists(4, &[&[], &[]]);
    e.enqueue(0, 1, 20, 4, 0);
    e.enqueue(1, 2, 20, 4, 0);
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    assert_eq!(e.never_schedulable(), None);
    // TRT-LLM never stalls on KV: what does not fit to completion is rejected.
    let mut e = engine(EngineArgs {
        engine_type: EngineType::Trtllm,
        num_gpu_blocks: 4,
        block_size: 4,
        ..EngineArgs::default()
    });
    e.enqueue(0, 1, 20, 4, 0);
    assert_eq!(e.never_schedulable(), None);
}

/// A timing model with fixed pass times and a fused-step estimate.
struct FixedTimes;

impl LatencyModel for FixedTimes {
    fn prefill_ms(&self, _: u64, _: u64, _: u64) -> f64 {
        100.0
    }
    fn decode_ms(&self, _: u64, _: u64, _: u64, _: u64) -> f64 {
        10.0
    }
    fn fused_step_ms(
        &self,
        prompts: u64,
        isl: u64,
        prefix: u64,
        decodes: u64,
        _: u64,
    ) -> Option<(f64, f64)> {
        assert_eq!((prompts, isl, prefix), (1, 2048, 0));
        Some((30.0 + decodes as f64, 2.0))
    }
}

#[test]
fn fused_mixed_pass_times_a_step_that_prefills_and_decodes_as_one_forward() {
    let args = |mixed_pass| EngineArgs {
        mixed_pass,
        speedup_ratio: 2.0,
        decode_speedup_ratio: 0.5,
        prefill_pass_overhead_ms: 5.0,
        decode_pass_overhead_ms: 1.0,
        ..EngineArgs::default()
    };
    let prompts = PromptBlocks::from_lists(64, &[&[]]);
    let mut out = PassOutput::default();
    for (mode, first) in [
        // DynoSim's: a prefill plus a decode step of the sequence that emits its first token.
        (
            MixedPass::Separate,
            (100.0 / 2.0 + 5.0, 10.0 / (2.0 * 0.5) + 1.0),
        ),
        // One forward: the model's fused estimate, its decode attention scaled as decode.
        (
            MixedPass::Fused,
            (31.0 / 2.0 + 5.0, 2.0 / (2.0 * 0.5) + 1.0),
        ),
    ] {
        let mut e = Engine::new(&args(mode), FixedTimes, false);
        e.enqueue(0, 1, 2048, 3, 0);
        let t = e.step(&prompts, &mut out);
        assert_eq!((out.prefill_ms, out.decode_ms), first, "{mode:?}");
        assert_eq!(t, first.0 + first.1);
        // A pure decode pass is a decode step either way.
        e.step(&prompts, &mut out);
        assert_eq!(
            (out.prefill_ms, out.decode_ms),
            (0.0, 10.0 / (2.0 * 0.5) + 1.0)
        );
    }
    // A model without a fused estimate (the polynomial) times the step as DynoSim does.
    let run = |mode| {
        let mut e = engine(args(mode));
        e.enqueue(0, 1, 2048, 3, 0);
        let mut out = PassOutput::default();
        e.step(&prompts, &mut out);
        (out.prefill_ms, out.decode_ms)
    };
    assert_eq!(run(MixedPass::Fused), run(MixedPass::Separate));
}

#[test]
fn a_failed_reservation_is_tried_again_only_after_capacity_came_free() {
    // 10 blocks of 4 tokens. Two 24-token prompts share their first 5 blocks: both fit only
    // if the second hits the first's blocks.
    let args = EngineArgs {
        num_gpu_blocks: 10,
        block_size: 4,
        worker_type: WorkerType::Decode,
        ..EngineArgs::default()
    };
    let mut e = engine(args);
    let prompts = PromptBlocks::from_lists(4, &[&[0, 1, 2, 3, 4, 5], &[0, 1, 2, 3, 4, 6]]);
    let a = e.reserve_prebuilt(0, 1, 24, 3, prompts.of(0)).unwrap();
    // The first is not activated yet: its blocks are not cached, the second needs 6 fresh.
    assert!(e.reserve_prebuilt(1, 2, 24, 3, prompts.of(1)).is_none());
    // Once the first is activated its prefix is cached and the second would fit, but nothing
    // came free since its attempt: no new attempt.
    e.activate(a.seq, prompts.sequence_of(0));
    assert_eq!(e.reservation_fit(24, prompts.of(1)), Some((5, 1)));
    assert!(!e.can_reserve(1, 24, prompts.of(1)));
    assert!(e.reserve_prebuilt(1, 2, 24, 3, prompts.of(1)).is_none());
    // Passes that complete nothing change nothing...
    let mut out = PassOutput::default();
    e.step(&prompts, &mut out);
    assert!(out.finished.is_empty());
    assert!(e.reserve_prebuilt(1, 2, 24, 3, prompts.of(1)).is_none());
    // ...a completion does.
    while out.finished.is_empty() {
        e.step(&prompts, &mut out);
    }
    assert_eq!(out.finished, vec![0]);
    assert!(e.can_reserve(1, 24, prompts.of(1)));
    let b = e.reserve_prebuilt(1, 2, 24, 3, prompts.of(1)).unwrap();
    // Its prefix is still cached (the first's blocks, now free): only the last block moves.
    assert_eq!(b.missing_tokens, 4);
}
