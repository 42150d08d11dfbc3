//! Synthetic workloads (spec §3): the simple path (unique random prompts) and the workload path
//! (sessions, shared-prefix groups, think time), seeded with `ChaCha12Rng::seed_from_u64`
//! (rand_chacha 0.9: the algorithm behind rand 0.9's `StdRng`, which DynoSim uses; named here so
//! a `rand` upgrade cannot change the stream, see the test `rng_stream_is_pinned`).
//!
//! This module owns turning the synthetic flags of `dynosim run` into a [`Workload`]. RNG use,
//! chosen to reproduce DynoSim 1.4.2 draw for draw:
//! * **Arrivals** (first turns only): their own `ChaCha12Rng::seed_from_u64(arrival_seed)`. The first
//!   session arrives at 0; each later one adds a gap. Poisson: `−(1000/R)·ln(u)` with
//!   `u = clamp(1 − rng.random::<f64>(), f64::MIN_POSITIVE, 1)`, one draw per gap (R−1 draws).
//!   Fixed interval `I > 0`: DynoSim turns it into a rate `1000/I` and adds the gap `1000/rate`
//!   cumulatively, so arrival k is a running sum (equal to `k·I` up to rounding); `I = 0` is a
//!   burst at 0. Closed loop: no timestamps (`first_arrival_ms = None`).
//! * **Content** (workload path only): `ChaCha12Rng::seed_from_u64(42)`, independent of
//!   `arrival_seed`. Per session, in session order, when `num_prefix_groups > 0` and
//!   `shared_prefix_ratio > 0`, exactly one draw `rng.random_range(0..num_prefix_groups)` with a
//!   `u32` range. (DynoSim draws from a `usize` range; rand 0.9 samples a `usize` range whose
//!   bound fits in `u32` through the `u32` sampler, so the streams are identical.) Lengths and
//!   think times are constants and draw nothing.
//!
//! Ids: simple-path sessions are `request_<idx+1>` (matching their uuid `idx+1`), workload-path
//! sessions `session_<i>`; workload-path uuids are the request's position + 1 (session-major).
//! Arrival speed-up is applied later by the simulator.

use super::blocks::BlockInterner;
pub use super::shape::{LengthDraw, RangeStyle};
use super::shape::{LENGTH_STREAM, WARMUP_ARRIVAL_STREAM, WARMUP_GROUP_STREAM};
use super::{Content, RequestSpec, SessionSpec, Workload};
use crate::error::InputError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use serde::{Deserialize, Serialize};

/// How first-turn arrivals of a synthetic workload are timed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum SyntheticArrival {
    /// Closed loop (`--replay-concurrency`): no timestamps.
    ClosedLoop,
    /// Poisson with this rate in requests/s (`--request-rate`).
    PoissonRate(f64),
    /// Constant gap in ms (`--arrival-interval-ms`); 0 = burst at t=0.
    IntervalMs(f64),
}

/// The synthetic-workload flags of `dynosim run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticSpec {
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Sessions (= requests when `turns_per_session == 1`).
    pub request_count: u32,
    pub arrival: SyntheticArrival,
    pub arrival_seed: u64,
    pub turns_per_session: u32,
    pub shared_prefix_ratio: f64,
    pub num_prefix_groups: u32,
    pub inter_turn_delay_ms: f64,
    /// `--random-range-ratio R`: input and output lengths drawn per request as uniform integers
    /// in a range given by `random_range_style`; `None` = the fixed lengths above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_range_ratio: Option<f64>,
    /// `--random-range-style`: `[⌊R·L⌋, L]` (floor, SGLang / InferenceX) or
    /// `[⌊L·(1−R)⌋, ⌈L·(1+R)⌉]` (symmetric, vLLM). Only used with `random_range_ratio`.
    #[serde(default, skip_serializing_if = "is_floor")]
    pub random_range_style: RangeStyle,
    /// `--input-tokens-stddev` (AIPerf): input lengths normal around `input_tokens` with this
    /// standard deviation (see [`super::shape`]); 0 = fixed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub input_tokens_stddev: f64,
    /// `--output-tokens-stddev` (AIPerf): the same for output lengths.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output_tokens_stddev: f64,
    /// `--warmup-request-count` (AIPerf): requests simulated before the measured ones, under
    /// the same load (concurrency or arrival process) and with lengths drawn the same way, left
    /// out of every metric; the measured phase starts when the last of them has finished.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub warmup_request_count: u32,
}

fn is_floor(s: &RangeStyle) -> bool {
    *s == RangeStyle::Floor
}
fn is_zero(v: &f64) -> bool {
    *v == 0.0
}
fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

impl Default for SyntheticSpec {
    /// One request of one input and one output token in closed loop, arrival seed 42, and
    /// DynoSim's defaults for everything else (one turn, no sharing, fixed lengths, no warm-up).
    fn default() -> Self {
        SyntheticSpec {
            input_tokens: 1,
            output_tokens: 1,
            request_count: 1,
            arrival: SyntheticArrival::ClosedLoop,
            arrival_seed: 42,
            turns_per_session: 1,
            shared_prefix_ratio: 0.0,
            num_prefix_groups: 0,
            inter_turn_delay_ms: 0.0,
            random_range_ratio: None,
            random_range_style: RangeStyle::Floor,
            input_tokens_stddev: 0.0,
            output_tokens_stddev: 0.0,
            warmup_request_count: 0,
        }
    }
}

impl SyntheticSpec {
    /// How input and output lengths are drawn (validated spec).
    pub fn length_draws(&self) -> (LengthDraw, LengthDraw) {
        match self.random_range_ratio {
            Some(r) => (
                LengthDraw::range(self.input_tokens, r, self.random_range_style),
                LengthDraw::range(self.output_tokens, r, self.random_range_style),
            ),
            None => (
                LengthDraw::normal(self.input_tokens, self.input_tokens_stddev),
                LengthDraw::normal(self.output_tokens, self.output_tokens_stddev),
            ),
        }
    }

    /// Checks the benchmark-shaped settings (range ratio and style, standard deviations,
    /// warm-up), naming the `dynosim run` flag; [`generate`] checks them too.
    pub fn check_shape(&self) -> Result<(), InputError> {
        validate_shape(self, &flag_name).map_err(InputError::new)
    }

    /// [`SyntheticSpec::check_shape`]'s rules, naming each setting by `name` of its field
    /// (`random_range_ratio`, `turns_per_session`, …): a sweep spec names its keys.
    pub fn check_shape_named(&self, name: &dyn Fn(&str) -> String) -> Result<(), String> {
        validate_shape(self, name)
    }

    /// Whether any request length is drawn rather than fixed.
    pub fn shapes_lengths(&self) -> bool {
        let (i, o) = self.length_draws();
        !matches!((i, o), (LengthDraw::Fixed(_), LengthDraw::Fixed(_)))
    }

    /// Whether any setting only sessions have is on: a shared prefix, prefix groups or an
    /// inter-turn delay.
    pub fn has_session_features(&self) -> bool {
        self.shared_prefix_ratio > 0.0
            || self.num_prefix_groups > 0
            || self.inter_turn_delay_ms > 0.0
    }

    /// Whether requests share group prefixes: prefix groups and a shared-prefix ratio both set
    /// (either alone shares nothing).
    pub fn shares_prefixes(&self) -> bool {
        self.num_prefix_groups > 0 && self.shared_prefix_ratio > 0.0
    }

    /// Whether [`generate`] takes its workload (session) path rather than the simple one: more
    /// than one turn per session, or any session setting.
    pub fn uses_workload_path(&self) -> bool {
        self.turns_per_session > 1 || self.has_session_features()
    }

    /// Reads `turns_per_session: 0` as DynoSim 1.4.2 does: without session settings its simple
    /// path ignores the count (one turn per request), so 0 becomes 1; with any of them its
    /// session path refuses 0, and so does [`generate`], so the spec is left as it is.
    pub fn with_dynosim_turns(mut self) -> Self {
        if self.turns_per_session == 0 && !self.has_session_features() {
            self.turns_per_session = 1;
        }
        self
    }

    /// Requests of the generated workload, warm-up included.
    pub fn total_requests(&self) -> u64 {
        u64::from(self.request_count) * u64::from(self.turns_per_session)
            + u64::from(self.warmup_request_count)
    }

    /// The shortest input a request can get (the fixed input length when lengths are fixed).
    pub fn min_input_tokens(&self) -> u32 {
        self.length_draws().0.bounds().0
    }
}

/// Seed of the content RNG of the workload path (fixed in DynoSim, independent of the flags).
pub const CONTENT_SEED: u64 = 42;

/// High bits of the raw id of a group-shared prefix block: `PREFIX | (group << 32) | block`.
const GROUP_PREFIX_TAG: u64 = 0xD00D_0000_0000_0000;

/// Generates the workload. `engine_block_size` is the hash-id block size of the workload path
/// (spec §3.2: the engine's, the prefill pool's when disaggregated).
///
/// With `warmup_request_count = W > 0` the first `W` sessions (`warmup_<k>`, one turn each,
/// uuids after the measured requests') are the warm-up requests ([`Workload::warmup_sessions`]);
/// the measured sessions follow with their arrivals and ids unchanged.
pub fn generate(spec: &SyntheticSpec, engine_block_size: u32) -> Result<Workload, InputError> {
    validate(spec)?;
    let block_size = engine_block_size.max(1);
    let arrivals = first_arrivals(spec.arrival, spec.request_count, spec.arrival_seed, 0);
    let warmup_arrivals = first_arrivals(
        spec.arrival,
        spec.warmup_request_count,
        spec.arrival_seed,
        WARMUP_ARRIVAL_STREAM,
    );
    let plan = Plan {
        spec,
        block_size,
        arrivals,
        warmup_arrivals,
        lengths: draw_lengths(spec),
    };
    let mut w = if spec.uses_workload_path() {
        workload_path(&plan)?
    } else {
        simple_path(&plan)
    };
    w.warmup_sessions = spec.warmup_request_count;
    Ok(w)
}

/// What both generation paths share.
struct Plan<'a> {
    spec: &'a SyntheticSpec,
    block_size: u32,
    /// First-turn arrivals of the measured sessions (`None`: closed loop).
    arrivals: Option<Vec<f64>>,
    /// Arrivals of the warm-up requests, from their own stream (relative to the run's start).
    warmup_arrivals: Option<Vec<f64>>,
    /// Drawn (input, output) lengths: the measured requests in order, then the warm-up ones;
    /// `None` when every length is fixed.
    lengths: Option<Vec<(u32, u32)>>,
}

impl Plan<'_> {
    /// Lengths of measured request `i` (position in session-major order).
    fn measured_lengths(&self, i: u32) -> (u32, u32) {
        match &self.lengths {
            Some(l) => l[i as usize],
            None => (self.spec.input_tokens, self.spec.output_tokens),
        }
    }

    /// Lengths of warm-up request `k`.
    fn warmup_lengths(&self, k: u32) -> (u32, u32) {
        let measured = self.spec.request_count * self.spec.turns_per_session;
        self.measured_lengths(measured + k)
    }

    fn warmup_arrival(&self, k: u32) -> Option<f64> {
        self.warmup_arrivals.as_ref().map(|a| a[k as usize])
    }

    /// uuid of warm-up request `k`: after every measured request's.
    fn warmup_uuid(&self, k: u32) -> u64 {
        u64::from(self.spec.request_count) * u64::from(self.spec.turns_per_session)
            + u64::from(k)
            + 1
    }
}

/// Every request's (input, output) length from the length stream (see [`super::shape`]):
/// measured requests first, in order, then warm-up requests; `None` when all are fixed.
fn draw_lengths(spec: &SyntheticSpec) -> Option<Vec<(u32, u32)>> {
    if !spec.shapes_lengths() {
        return None;
    }
    let (input, output) = spec.length_draws();
    let mut rng = ChaCha12Rng::seed_from_u64(spec.arrival_seed);
    rng.set_stream(LENGTH_STREAM);
    let n = spec.total_requests() as usize; // validated to fit in u32
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let i = input.sample(&mut rng);
        let o = output.sample(&mut rng);
        out.push((i, o));
    }
    Some(out)
}

fn validate(spec: &SyntheticSpec) -> Result<(), InputError> {
    for (flag, v) in [
        ("--input-tokens", spec.input_tokens),
        ("--output-tokens", spec.output_tokens),
        ("--request-count", spec.request_count),
        ("--turns-per-session", spec.turns_per_session),
    ] {
        if v < 1 {
            return Err(InputError::new(format!(
                "{flag} must be at least 1, got {v}"
            )));
        }
    }
    if u64::from(spec.request_count) * u64::from(spec.turns_per_session) > u64::from(u32::MAX) {
        return Err(InputError::new(format!(
            "--request-count x --turns-per-session must be at most {}, got {} x {}",
            u32::MAX,
            spec.request_count,
            spec.turns_per_session
        )));
    }
    match spec.arrival {
        SyntheticArrival::ClosedLoop => {}
        SyntheticArrival::PoissonRate(r) => {
            if !(r.is_finite() && r > 0.0) {
                return Err(InputError::new(format!(
                    "--request-rate must be a finite number > 0, got {r}"
                )));
            }
        }
        SyntheticArrival::IntervalMs(i) => {
            if !(i.is_finite() && i >= 0.0) {
                return Err(InputError::new(format!(
                    "--arrival-interval-ms must be a finite number >= 0, got {i}"
                )));
            }
        }
    }
    let ratio = spec.shared_prefix_ratio;
    if !(0.0..=1.0).contains(&ratio) {
        return Err(InputError::new(format!(
            "--shared-prefix-ratio must be between 0 and 1, got {ratio}"
        )));
    }
    let delay = spec.inter_turn_delay_ms;
    if !(delay.is_finite() && delay >= 0.0) {
        return Err(InputError::new(format!(
            "--inter-turn-delay-ms must be a finite number >= 0, got {delay}"
        )));
    }
    validate_shape(spec, &flag_name).map_err(InputError::new)
}

/// `dynosim run`'s flag for a [`SyntheticSpec`] field: `random_range_ratio` is
/// `--random-range-ratio`.
fn flag_name(field: &str) -> String {
    format!("--{}", field.replace('_', "-"))
}

/// The benchmark-shaped settings: lengths and warm-up (see [`SyntheticSpec::check_shape`]),
/// each setting named by `name` of its field.
fn validate_shape(spec: &SyntheticSpec, name: &dyn Fn(&str) -> String) -> Result<(), String> {
    let ratio_name = name("random_range_ratio");
    if let Some(r) = spec.random_range_ratio {
        let symmetric = spec.random_range_style == RangeStyle::Symmetric;
        let ok = if symmetric {
            (0.0..1.0).contains(&r)
        } else {
            (0.0..=1.0).contains(&r)
        };
        if !ok {
            let range = if symmetric {
                format!("in [0, 1) with {} symmetric", name("random_range_style"))
            } else {
                "between 0 and 1".to_string()
            };
            return Err(format!("{ratio_name} must be {range}, got {r}"));
        }
    }
    for (field, sd) in [
        ("input_tokens_stddev", spec.input_tokens_stddev),
        ("output_tokens_stddev", spec.output_tokens_stddev),
    ] {
        if !(sd.is_finite() && sd >= 0.0) {
            return Err(format!(
                "{} must be a finite number >= 0, got {sd}",
                name(field)
            ));
        }
        if sd > 0.0 && spec.random_range_ratio.is_some() {
            return Err(format!(
                "{ratio_name} cannot be combined with {} (uniform or normal lengths: choose one)",
                name(field)
            ));
        }
    }
    if spec.warmup_request_count > 0 {
        let warmup = name("warmup_request_count");
        if spec.turns_per_session > 1 {
            return Err(format!(
                "{warmup} cannot be combined with {} {} (warm-up requests are single requests; \
                 multi-turn warm-up is not simulated)",
                name("turns_per_session"),
                spec.turns_per_session
            ));
        }
        if spec.total_requests() > u64::from(u32::MAX) {
            return Err(format!(
                "{} + {warmup} must be at most {}, got {} + {}",
                name("request_count"),
                u32::MAX,
                spec.request_count,
                spec.warmup_request_count
            ));
        }
    }
    Ok(())
}

/// First-turn arrival times in ms (`None` for closed loop), Poisson gaps drawn from `stream` of
/// `seed` (0: DynoSim's arrival stream). Inputs are validated.
fn first_arrivals(
    arrival: SyntheticArrival,
    count: u32,
    seed: u64,
    stream: u64,
) -> Option<Vec<f64>> {
    // `Some(rng)` = Poisson with mean gap `gap_ms`; `None` = constant gap `gap_ms`.
    let (mut poisson, gap_ms) = match arrival {
        SyntheticArrival::ClosedLoop => return None,
        SyntheticArrival::PoissonRate(rate) => {
            let mut rng = ChaCha12Rng::seed_from_u64(seed);
            if stream != 0 {
                rng.set_stream(stream);
            }
            (Some(rng), 1000.0 / rate)
        }
        // Burst: everything at 0.
        SyntheticArrival::IntervalMs(0.0) => (None, 0.0),
        // DynoSim's constant rate 1000/I, whose gap 1000/rate may differ from I in the last bit.
        SyntheticArrival::IntervalMs(interval) => (None, 1000.0 / (1000.0 / interval)),
    };
    let mut t = 0.0;
    let mut out = Vec::with_capacity(count as usize);
    for idx in 0..count {
        if idx > 0 {
            t += match poisson.as_mut() {
                Some(rng) => {
                    let u = (1.0 - rng.random::<f64>()).clamp(f64::MIN_POSITIVE, 1.0);
                    -gap_ms * u.ln()
                }
                None => gap_ms,
            };
        }
        out.push(t);
    }
    Some(out)
}

/// Independent single-turn requests with unique prompts (spec §3.1).
fn simple_path(plan: &Plan) -> Workload {
    let n = plan.spec.request_count;
    let warm = plan.spec.warmup_request_count;
    let mut sessions = Vec::with_capacity((n + warm) as usize);
    let mut requests = Vec::with_capacity((n + warm) as usize);
    let mut push = |id: String, arrival: Option<f64>, uuid: u64, (input, output): (u32, u32)| {
        let idx = requests.len() as u32;
        sessions.push(SessionSpec {
            id,
            first_arrival_ms: arrival,
            first_request: idx,
            num_turns: 1,
        });
        requests.push(RequestSpec {
            uuid,
            input_length: input,
            output_length: output,
            content: Content::Unique,
            session: idx,
            turn: 0,
            delay_after_previous_ms: 0.0,
            priority: 0,
            strict_priority: 0,
        });
    };
    for k in 0..warm {
        push(
            format!("warmup_{}", k + 1),
            plan.warmup_arrival(k),
            plan.warmup_uuid(k),
            plan.warmup_lengths(k),
        );
    }
    for idx in 0..n {
        push(
            format!("request_{}", idx + 1),
            plan.arrivals.as_ref().map(|a| a[idx as usize]),
            u64::from(idx) + 1,
            plan.measured_lengths(idx),
        );
    }
    Workload {
        sessions,
        requests,
        block_ids: Vec::new(),
        trace_block_size: plan.block_size,
        num_distinct_blocks: 0,
        flat: true,
        warnings: Vec::new(),
        dependencies: Default::default(),
        warmup_sessions: 0,
    }
}

/// The prompt builder of the workload path: group prefixes and unique blocks, interned.
struct Prompts {
    interner: BlockInterner,
    next_unique: u64,
    raw: Vec<u64>,
}

impl Prompts {
    /// The content of a prompt of `input` tokens in prefix group `group` (validated ratio).
    fn build(
        &mut self,
        plan: &Plan,
        input: u32,
        group: Option<u32>,
    ) -> Result<Content, InputError> {
        let num_blocks = input.div_ceil(plan.block_size);
        let ratio = plan.spec.shared_prefix_ratio;
        let prefix_blocks = ((f64::from(num_blocks) * ratio).round() as u32).min(num_blocks);
        self.raw.clear();
        if let Some(g) = group {
            self.raw.extend(
                (0..u64::from(prefix_blocks)).map(|b| GROUP_PREFIX_TAG | (u64::from(g) << 32) | b),
            );
        }
        while self.raw.len() < num_blocks as usize {
            self.raw.push(self.next_unique);
            self.next_unique += 1;
        }
        self.interner
            .push_prompt(self.raw.iter().copied())
            .ok_or_else(|| {
                InputError::new(format!(
                    "synthetic workload too large: {} sessions x {} turns x {} blocks exceeds \
                     2^32 blocks",
                    plan.spec.request_count, plan.spec.turns_per_session, num_blocks
                ))
            })
    }
}

/// Sessions with shared-prefix groups and think time (spec §3.2). A prompt's shared prefix is
/// `round(blocks × shared_prefix_ratio)` of its own blocks (all prompts have the same length
/// unless lengths are drawn).
fn workload_path(plan: &Plan) -> Result<Workload, InputError> {
    let spec = plan.spec;
    let mut rng = ChaCha12Rng::seed_from_u64(CONTENT_SEED);
    let grouped = spec.shares_prefixes();
    let turns = spec.turns_per_session;
    let warm = spec.warmup_request_count; // validated: turns == 1 when > 0
    let total = spec.request_count * turns + warm; // validated to fit in u32

    let mut prompts = Prompts {
        interner: BlockInterner::default(),
        next_unique: 1,
        raw: Vec::with_capacity(spec.input_tokens.div_ceil(plan.block_size) as usize),
    };
    let mut sessions = Vec::with_capacity((spec.request_count + warm) as usize);
    let mut requests = Vec::with_capacity(total as usize);

    // Warm-up requests draw their groups from their own stream: the measured sessions' draws
    // stay DynoSim's.
    let mut warm_rng = ChaCha12Rng::seed_from_u64(CONTENT_SEED);
    warm_rng.set_stream(WARMUP_GROUP_STREAM);
    for k in 0..warm {
        let group = grouped.then(|| warm_rng.random_range(0..spec.num_prefix_groups));
        let (input, output) = plan.warmup_lengths(k);
        let content = prompts.build(plan, input, group)?;
        sessions.push(SessionSpec {
            id: format!("warmup_{}", k + 1),
            first_arrival_ms: plan.warmup_arrival(k),
            first_request: k,
            num_turns: 1,
        });
        requests.push(RequestSpec {
            uuid: plan.warmup_uuid(k),
            input_length: input,
            output_length: output,
            content,
            session: k,
            turn: 0,
            delay_after_previous_ms: 0.0,
            priority: 0,
            strict_priority: 0,
        });
    }

    for s in 0..spec.request_count {
        let group = grouped.then(|| rng.random_range(0..spec.num_prefix_groups));
        let first_measured = s * turns;
        for turn in 0..turns {
            let (input, output) = plan.measured_lengths(first_measured + turn);
            let content = prompts.build(plan, input, group)?;
            requests.push(RequestSpec {
                uuid: u64::from(first_measured + turn) + 1,
                input_length: input,
                output_length: output,
                content,
                session: warm + s,
                turn,
                delay_after_previous_ms: if turn == 0 {
                    0.0
                } else {
                    spec.inter_turn_delay_ms
                },
                priority: 0,
                strict_priority: 0,
            });
        }
        sessions.push(SessionSpec {
            id: format!("session_{s}"),
            first_arrival_ms: plan.arrivals.as_ref().map(|a| a[s as usize]),
            first_request: warm + first_measured,
            num_turns: turns,
        });
    }

    let num_distinct_blocks = prompts.interner.num_distinct();
    Ok(Workload {
        sessions,
        requests,
        block_ids: prompts.interner.block_ids,
        trace_block_size: plan.block_size,
        num_distinct_blocks,
        flat: turns == 1,
        warnings: Vec::new(),
        dependencies: Default::default(),
        warmup_sessions: 0,
    })
}

#[cfg(test)]
mod tests;
