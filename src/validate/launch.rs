//! The settings the measured servers were launched with ([`LaunchSettings`]): InferenceX's
//! launch scripts for TRT-LLM (batch waiting, attention-DP balancing, the MTP scripts' batch and
//! token budget) and SGLang (receive interval, prefill budgets, memory fraction), and the
//! prompt counts of scripts that sent another than 10 × C.

use super::points::{MeasuredPoint, Parallel, TableDeployment};
use serde_json::{json, Map, Value};

/// The scheduler settings of the servers that measured table rows (`--launch-settings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LaunchSettings {
    /// As InferenceX's launch scripts ran the measured servers:
    /// * TRT-LLM, Llama 70B at ISL/OSL 1024/1024 below TP 8: `batch_wait_timeout_iters: 20`
    ///   and `batch_wait_max_tokens_ratio: 0.9` (their `70b_fp8_*_trt` scripts);
    /// * TRT-LLM, DeepSeek-R1 with attention DP: `attention_dp_config` with `enable_balance`,
    ///   `timeout_iters: 60`, `batching_wait_iters: 0` (their `dsr1_*_trt` scripts, FP8 and FP4,
    ///   H200 and B200, with and without MTP);
    /// * TRT-LLM, gpt-oss-120b: `--max_num_tokens 20000` (`gptoss_fp4_{b200,h200}_trt.sh`), and
    ///   on B200 with attention DP `attention_dp_config: {enable_balance: true}`, with TRT-LLM's
    ///   defaults `timeout_iters: 50`, `batching_wait_iters: 10`;
    /// * SGLang, DeepSeek-R1 and Qwen3.5: their `dsr1_*` and `qwen3.5_*` scripts'
    ///   `--mem-fraction-static`, `--chunked-prefill-size`, `--max-prefill-tokens` and
    ///   `--scheduler-recv-interval` (`SglangServer`; their `--max-running-requests` is left
    ///   at the concurrency, which the measured rows above it show no cap at); and for
    ///   Qwen3.5 on B300 their client's `--num-prompts $CONC`, one wave of C prompts, in the
    ///   runs the table marks work in progress (`wip=True`);
    /// * SGLang, GLM-5: its `glm5_fp8_*` scripts' memory fraction and prefill budgets, and on
    ///   H200 its client's `$((CONC * 5))` prompts;
    /// * TRT-LLM, DeepSeek-R1 on H200 and B200 measured on or after `MTP_SCRIPTS_SINCE`: as
    ///   InferenceX's MTP scripts ran them (`MtpScript`); earlier rows, rows whose source
    ///   gives no date, and B200 FP4 rows of the container only its plain script ran
    ///   (`B200_FP4_PLAIN_ONLY_TRTLLM`), as its plain scripts;
    ///
    /// every other row with the engines' defaults.
    #[default]
    InferenceX,
    /// As `InferenceX`, with every TRT-LLM DeepSeek-R1 row run as InferenceX's MTP scripts ran
    /// them (`dsr1_fp8_h200_trt_mtp.sh`, `dsr1_fp8_b200_trt_mtp.sh`, `dsr1_fp4_b200_trt_mtp.sh`;
    /// [`MtpScript`]), whatever its date.
    InferenceXMtp,
    /// As `InferenceX`, with every TRT-LLM DeepSeek-R1 row run as InferenceX's plain scripts
    /// ran them (no multi-token prediction), whatever its date.
    InferenceXPlain,
    /// The engines' defaults on every row (no batch waiting, a receive every pass).
    None,
}

/// The day InferenceX's MTP configurations for DeepSeek-R1 on TRT-LLM landed
/// (`dsr1-fp4-b200-trt-mtp`, `dsr1-fp8-b200-trt-mtp`, `dsr1-fp8-h200-trt-mtp`; its pull request
/// 392, merged 2026-01-07). A TRT-LLM DeepSeek-R1 row measured before ran the plain scripts, as
/// no other existed; the table's rows measured since fit the MTP scripts (TPOT mean absolute
/// error 31.8 % plain, 13.4 % MTP on H200; 48.7 % and 68.9 % against 22.8 % and 33.5 % on B200
/// FP4 and FP8), the earlier ones the plain scripts (9.7 % against 14.5 % on H200, 25.0 %
/// against 32.7 % on B200; 2026-12-05, docs/accuracy.md).
pub const MTP_SCRIPTS_SINCE: &str = "2026-01-07";

/// The TRT-LLM container that InferenceX's plain DeepSeek-R1 FP4 script for B200 ran
/// (`dsr1-fp4-b200-trt`, moved to it from 1.1.0rc2.post2 by its pull request 620) and its FP4
/// MTP script never did (`dsr1-fp4-b200-trt-mtp` went from 1.1.0rc2.post2 straight to
/// 1.2.0rc6.post3, pull request 642; its perf-changelog). A B200 FP4 row measured with it ran
/// the plain script whatever its date; its 23 rows fit plain on TPOT (16 without attention DP:
/// 6.7 % against 15.6 % MTP; 2026-12-05, docs/accuracy.md).
pub const B200_FP4_PLAIN_ONLY_TRTLLM: &str = "1.2.0rc6.post2";

/// Whether a TRT-LLM DeepSeek-R1 row ran a container only InferenceX's plain script ran: a
/// B200 FP4 row of [`B200_FP4_PLAIN_ONLY_TRTLLM`].
fn plain_only_container(p: &MeasuredPoint, t: &TableDeployment) -> bool {
    p.backend == "trtllm"
        && t.script_model.contains("deepseek-r1")
        && p.system == "b200_sxm"
        && t.gemm_quant.contains("fp4")
        && p.backend_version == B200_FP4_PLAIN_ONLY_TRTLLM
}

/// The `--max_num_tokens` of InferenceX's DeepSeek-R1 TRT-LLM scripts, plain and MTP:
/// `(decode_tokens + ISL + 64 + 63) / 64 × 64`, the decode tokens being the concurrency in the
/// plain scripts and (draft tokens + 1) × the batch in the MTP ones.
fn dsr1_script_budget(decode_tokens: u64, isl: u32) -> u64 {
    (decode_tokens + u64::from(isl) + 127) / 64 * 64
}

/// What an InferenceX MTP launch script sets that the simulation has keys for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MtpScript {
    /// `num_nextn_predict_layers`: 3, or 1 with attention DP.
    pub nextn: u32,
    /// `--max_batch_size` (per attention-DP rank): the concurrency, or with attention DP the
    /// concurrency / GPUs on H200 (at least 1), / 8 on B200 FP8 and / 4 on B200 FP4 (the
    /// concurrency itself below 8 or 4).
    pub max_batch_size: u64,
    /// `--max_num_tokens`: ((nextn + 1) × batch + ISL + 127) / 64 × 64.
    pub max_num_tokens: u64,
}

impl LaunchSettings {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "inferencex" => LaunchSettings::InferenceX,
            "inferencex-mtp" => LaunchSettings::InferenceXMtp,
            "inferencex-plain" => LaunchSettings::InferenceXPlain,
            "none" => LaunchSettings::None,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            LaunchSettings::InferenceX => "inferencex",
            LaunchSettings::InferenceXMtp => "inferencex-mtp",
            LaunchSettings::InferenceXPlain => "inferencex-plain",
            LaunchSettings::None => "none",
        }
    }

    /// InferenceX's scripts (with or without MTP).
    fn inferencex(self) -> bool {
        self != LaunchSettings::None
    }

    /// Whether a row ran InferenceX's MTP script where it has one: every row under
    /// `inferencex-mtp`; under `inferencex` the rows measured on or after
    /// [`MTP_SCRIPTS_SINCE`] but those of a container only the plain script ran
    /// ([`plain_only_container`]).
    fn mtp_script_ran(self, p: &MeasuredPoint, t: &TableDeployment) -> bool {
        match self {
            LaunchSettings::InferenceXMtp => true,
            LaunchSettings::InferenceX => self.after_mtp_scripts(t) && !plain_only_container(p, t),
            LaunchSettings::InferenceXPlain | LaunchSettings::None => false,
        }
    }

    /// Under `inferencex`, a row measured on or after [`MTP_SCRIPTS_SINCE`].
    fn after_mtp_scripts(self, t: &TableDeployment) -> bool {
        self == LaunchSettings::InferenceX
            && t.measured
                .as_deref()
                .is_some_and(|day| day >= MTP_SCRIPTS_SINCE)
    }

    /// Why a TRT-LLM DeepSeek-R1 row measured since the MTP scripts landed still runs as the
    /// plain script under `inferencex`, for its `notes` (`None`: it does not, or it was not
    /// measured since).
    pub fn plain_only_reason(self, p: &MeasuredPoint, t: &TableDeployment) -> Option<String> {
        (self.after_mtp_scripts(t) && plain_only_container(p, t)).then(|| {
            format!(
                "run as InferenceX's plain script though measured after its MTP scripts landed: \
                 TRT-LLM {B200_FP4_PLAIN_ONLY_TRTLLM} ran its plain B200 FP4 script (its pull \
                 request 620), never its FP4 MTP script (1.1.0rc2.post2 to 1.2.0rc6.post3, pull \
                 request 642); --launch-settings inferencex-mtp runs it as MTP"
            )
        })
    }

    /// Why a row runs as an MTP script, for its `notes`.
    pub fn mtp_reason(self, t: &TableDeployment) -> String {
        match (self, t.measured.as_deref()) {
            (LaunchSettings::InferenceX, Some(day)) => format!(
                "measured {day}, after InferenceX's MTP scripts landed on {MTP_SCRIPTS_SINCE}; \
                 --launch-settings inferencex-plain runs it plain"
            ),
            _ => format!("--launch-settings {}", self.name()),
        }
    }

    /// The MTP script a row's pool ran as (`None`: no MTP): TRT-LLM DeepSeek-R1 on H200 (FP8)
    /// and B200 (FP8 or FP4), where `mtp_script_ran`.
    pub fn mtp(self, p: &MeasuredPoint, t: &TableDeployment, pool: &Parallel) -> Option<MtpScript> {
        if !self.mtp_script_ran(p, t)
            || p.backend != "trtllm"
            || !t.script_model.contains("deepseek-r1")
        {
            return None;
        }
        let fp4 = t.gemm_quant.contains("fp4");
        let conc = u64::from(p.workload.concurrency.unwrap_or(1)).max(1);
        let dp = pool.attention_dp > 1;
        let batch = match (p.system.as_str(), dp) {
            ("h200_sxm" | "b200_sxm", false) => conc,
            // The script's TP is every GPU of the worker (attention DP × its TP).
            ("h200_sxm", true) => (conc / u64::from(pool.gpus().max(1))).max(1),
            ("b200_sxm", true) => {
                let k = if fp4 { 4 } else { 8 };
                if conc < k {
                    conc
                } else {
                    conc / k
                }
            }
            _ => return None,
        };
        let nextn = if dp { 1 } else { 3 };
        let tokens = dsr1_script_budget((u64::from(nextn) + 1) * batch, p.workload.isl);
        Some(MtpScript {
            nextn,
            max_batch_size: batch,
            max_num_tokens: tokens,
        })
    }

    /// The benchmark's prompts per unit of concurrency where a script sent other than
    /// `--num-prompts 10×C` (`None`: `--prompts-per-concurrency`): InferenceX's Qwen3.5 scripts
    /// for B300 (`qwen3.5_*_b300.sh`) send `--num-prompts $CONC`, one wave of C prompts, in the
    /// work-in-progress runs the table marks `wip=True` (measured 2026-04-03). The database's
    /// runs of the same script (2026-04-17 and 18) measured the same deployments with TTFTs of
    /// ten waves (1,024 + 1,024 tokens at concurrency 256: 0.66 s, where the `wip` run
    /// measured 2.39 s), so they keep `--prompts-per-concurrency`.
    ///
    /// `glm5_fp8_h200.sh` sends `$((CONC * 5))`. (`glm5_fp8_b300.sh` sends one wave as it is
    /// stored today, but its 10 rows, all `wip=True`, measured ten waves' TTFTs: simulated as
    /// one wave, 192 % long at the median, where ten waves give 19 % mean absolute error.)
    pub(super) fn prompts_per_concurrency(
        self,
        p: &MeasuredPoint,
        t: &TableDeployment,
    ) -> Option<u32> {
        if !self.inferencex() || p.backend != "sglang" {
            return None;
        }
        let model = &t.script_model;
        if model.contains("qwen3.5") && p.system == "b300_sxm" && t.wip {
            Some(1)
        } else if model.contains("glm-5") && p.system == "h200_sxm" {
            Some(5)
        } else {
            None
        }
    }

    /// The `trtllm` object of a row's pool (`None`: no batch waiting or balancing).
    pub(super) fn trtllm(
        self,
        p: &MeasuredPoint,
        t: &TableDeployment,
        pool: &Parallel,
    ) -> Option<Value> {
        let model = &t.script_model;
        let llama_70b = model.contains("llama") && model.contains("70b");
        let short = p.workload.isl == 1024 && p.workload.osl == 1024;
        if !self.inferencex() || p.backend != "trtllm" {
            return None;
        }
        if model.contains("deepseek-r1") && pool.attention_dp > 1 {
            Some(json!({
                "attention_dp_enable_balance": true,
                "attention_dp_timeout_iters": 60,
                "attention_dp_batching_wait_iters": 0,
            }))
        } else if model.contains("gpt-oss") && pool.attention_dp > 1 && p.system == "b200_sxm" {
            // The script sets `enable_balance` alone: TRT-LLM's `AttentionDpConfig` defaults.
            Some(json!({
                "attention_dp_enable_balance": true,
                "attention_dp_timeout_iters": 50,
                "attention_dp_batching_wait_iters": 10,
            }))
        } else if llama_70b && short && pool.tp < 8 {
            Some(json!({
                "batch_wait_timeout_iters": 20,
                "batch_wait_max_tokens_ratio": 0.9,
            }))
        } else {
            None
        }
    }

    /// The token budget per pass of a row's server where its script sets one other than
    /// `--max-num-batched-tokens` (`None`: that flag's), on B200 and H200, the GPUs InferenceX
    /// has these TRT-LLM scripts for: its gpt-oss-120b scripts' `--max_num_tokens 20000` (in
    /// their versions of late 2025 and of 2026 alike), and its plain DeepSeek-R1 scripts'
    /// (C + ISL + 127) / 64 × 64 tokens, at least 8192. An MTP script's budget
    /// ([`MtpScript`]) replaces the latter.
    pub(super) fn max_num_tokens(self, p: &MeasuredPoint, t: &TableDeployment) -> Option<u64> {
        let scripted = matches!(p.system.as_str(), "b200_sxm" | "h200_sxm");
        if !self.inferencex() || p.backend != "trtllm" || !scripted {
            return None;
        }
        let model = &t.script_model;
        if model.contains("gpt-oss") {
            Some(20_000)
        } else if model.contains("deepseek-r1") {
            let conc = u64::from(p.workload.concurrency.unwrap_or(1));
            Some(dsr1_script_budget(conc, p.workload.isl).max(8192))
        } else {
            None
        }
    }

    /// The SGLang server a row's pool ran as (`None`: SGLang's defaults). The receive
    /// interval is 30 at concurrency 16 and above and 10 below where a script makes it depend
    /// on the concurrency (B200; B300 with BF16 or FP4 weights); H200 sets none.
    pub(super) fn sglang(
        self,
        p: &MeasuredPoint,
        t: &TableDeployment,
        pool: &Parallel,
    ) -> Option<SglangServer> {
        if self == LaunchSettings::None || p.backend != "sglang" {
            return None;
        }
        let model = &t.script_model;
        let concurrency = u64::from(p.workload.concurrency.unwrap_or(0));
        let by_concurrency = if concurrency >= 16 { 30 } else { 10 };
        let fp4 = t.gemm_quant.contains("fp4");
        let fp8 = t.gemm_quant.starts_with("fp8");
        let server = |mem: f64, chunk: u64, prefill: Option<u64>, recv| SglangServer {
            mem_fraction_static: mem,
            chunked_prefill_size: chunk,
            max_prefill_tokens: prefill,
            scheduler_recv_interval: recv,
        };
        Some(if model.contains("deepseek-r1") {
            match p.system.as_str() {
                "h200_sxm" => server(0.82, 32768, Some(32768), None),
                "b200_sxm" if fp4 => server(0.85, 16384, None, Some(by_concurrency)),
                "b200_sxm" if pool.gpus() < 8 => server(0.95, 8192, Some(8192), Some(10)),
                "b200_sxm" => server(0.82, 32768, Some(32768), Some(by_concurrency)),
                _ => return None,
            }
        } else if model.contains("qwen3.5") {
            match p.system.as_str() {
                "h200_sxm" => server(0.8, 16384, fp8.then_some(16384), None),
                "b200_sxm" if fp4 => server(0.85, 32768, Some(32768), Some(30)),
                "b300_sxm" if fp8 => server(0.8, 16384, Some(16384), Some(10)),
                "b300_sxm" if fp4 => server(0.8, 32768, Some(32768), Some(by_concurrency)),
                "b200_sxm" | "b300_sxm" => server(0.82, 32768, Some(32768), Some(by_concurrency)),
                _ => return None,
            }
        } else if model.contains("glm-5") {
            match p.system.as_str() {
                // `glm5_fp8_h200.sh` sets the memory fraction alone: the prefill budget stays
                // validate's 8192 tokens.
                "h200_sxm" => server(0.85, 8192, None, None),
                // `glm5_fp8_b200.sh`, and `glm5_fp8_b300.sh`, which reuses it.
                "b200_sxm" | "b300_sxm" => server(0.85, 32768, Some(32768), None),
                _ => return None,
            }
        } else {
            return None;
        })
    }
}

/// The settings of an InferenceX SGLang launch script that the simulation has keys for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct SglangServer {
    /// `--mem-fraction-static`.
    mem_fraction_static: f64,
    /// `--chunked-prefill-size`.
    chunked_prefill_size: u64,
    /// `--max-prefill-tokens` (`None`: SGLang's 16384).
    max_prefill_tokens: Option<u64>,
    /// `--scheduler-recv-interval` (`None`: a receive every pass).
    scheduler_recv_interval: Option<u64>,
}

impl SglangServer {
    /// Sets the engine keys: `mem_fraction_static` and the `sglang` object (`max_num_seqs`
    /// stays the concurrency).
    pub(super) fn apply(&self, o: &mut Map<String, Value>) {
        o.insert(
            "mem_fraction_static".into(),
            json!(self.mem_fraction_static),
        );
        let mut s = Map::new();
        s.insert(
            "chunked_prefill_size".into(),
            json!(self.chunked_prefill_size),
        );
        if let Some(n) = self.max_prefill_tokens {
            s.insert("max_prefill_tokens".into(), json!(n));
        }
        if let Some(n) = self.scheduler_recv_interval {
            s.insert("scheduler_recv_interval".into(), json!(n));
        }
        o.insert("sglang".into(), Value::Object(s));
    }
}
