//! AIConfigurator (AIC) engines for AIC timing (breadth spec §5): an [`AicEngineId`] is compiled
//! by AIConfigurator's Python SDK in a subprocess of the user's Python (never an embedded
//! interpreter), the compiled spec is cached on disk keyed by its inputs, and the Rust estimator
//! (`aiconfigurator-core`) loads it once per process; every pool and sweep point with the same id
//! shares that loaded engine through an [`AicEngines`] set.
//!
//! Owns: the subprocess protocol (`helper.py`), the disk cache, the shared set, `dynosim aic
//! list`. Does not own: the latency model itself (`engine::timing::aic`) or where the KV estimate
//! is applied (the callers).

use crate::config::aic::{AicEngineId, AicKvEstimate};
use crate::error::InputError;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The AIConfigurator package version whose compiled specs this build loads (the crate and the
/// PyPI wheel are released together; the spec's schema version must match).
pub const AIC_VERSION: &str = "0.12.0";

/// What a user installs to get AIC timing.
pub const INSTALL_HINT: &str = "pip install aiconfigurator-core==0.12.0";

const HELPER: &str = include_str!("helper.py");

/// The Python interpreter that runs the compile step: `DYNOSIM_PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("DYNOSIM_PYTHON")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "python3".into())
}

/// A perf-data folder that replaces the installed package's (`AICONFIGURATOR_SYSTEMS_PATH`),
/// e.g. AIConfigurator 0.11.0's `systems` folder for DynoSim 1.4.2's vLLM 0.19.0 data.
pub fn systems_path_override() -> Option<String> {
    std::env::var("AICONFIGURATOR_SYSTEMS_PATH")
        .ok()
        .filter(|s| !s.is_empty())
}

/// Where compiled specs are cached: `DYNOSIM_CACHE_DIR`, else `$XDG_CACHE_HOME/dynosim`, else
/// `~/.cache/dynosim`, each with `/aic` appended.
pub fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("DYNOSIM_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("dynosim")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/dynosim")))?;
    Some(base.join("aic"))
}

/// The compile step's request (also the cache key).
#[derive(Debug, Clone, Serialize)]
struct CompileRequest<'a> {
    #[serde(flatten)]
    engine: &'a AicEngineId,
    systems_path: Option<String>,
    kv: Option<&'a AicKvEstimate>,
}

/// The compile step's answer, as cached on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CompileAnswer {
    ok: bool,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    available: Vec<String>,
    #[serde(default)]
    aic_version: String,
    #[serde(default)]
    spec_hex: String,
    #[serde(default)]
    systems_root: String,
    #[serde(default)]
    num_gpu_blocks: Option<u64>,
}

/// A compiled engine as the Python step produced it.
#[derive(Debug, Clone)]
pub struct CompiledSpec {
    pub spec: Vec<u8>,
    pub systems_root: PathBuf,
    /// Per-rank KV blocks from AIC's memory model, when an estimate was asked for.
    pub num_gpu_blocks: Option<u64>,
}

fn describe(id: &AicEngineId) -> String {
    format!(
        "{} on {} ({} {}, TP {})",
        id.model_path, id.system, id.backend, id.backend_version, id.tp_size
    )
}

/// Runs `helper.py CMD` with `stdin`, returning its JSON answer; a missing interpreter or package
/// is an [`InputError`] with the install command.
fn run_helper(cmd: &str, stdin: &str) -> Result<(String, String), InputError> {
    let py = python();
    let mut child = Command::new(&py)
        .arg("-c")
        .arg(HELPER)
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            InputError::new(format!(
                "AIC timing needs Python with aiconfigurator-core {AIC_VERSION}, but `{py}` could \
                 not be started ({e}); install Python 3.11+ and run `{INSTALL_HINT}`, or point \
                 DYNOSIM_PYTHON at a Python that has it"
            ))
        })?;
    {
        use std::io::Write;
        let mut input = child.stdin.take().expect("stdin is piped");
        // A helper that exits early closes its stdin; its answer then says why.
        let _ = input.write_all(stdin.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| InputError::new(format!("AIC compile step (`{py}`) failed: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    Ok((stdout, stderr))
}

fn parse_answer(stdout: &str, stderr: &str) -> Result<CompileAnswer, InputError> {
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    line.and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
            InputError::new(format!(
                "the AIC compile step (`{}`) gave no answer; its last error lines:\n{}",
                python(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ))
        })
}

fn answer_error(a: &CompileAnswer, what: &str) -> InputError {
    let mut msg = match a.kind.as_str() {
        "missing_package" => format!(
            "AIC timing needs the Python package aiconfigurator-core {AIC_VERSION} in `{}` \
             ({}); install it with `{INSTALL_HINT}`",
            python(),
            a.message
        ),
        _ => format!("{what}: {}", a.message),
    };
    if !a.available.is_empty() {
        msg.push_str(&format!("; available: {}", a.available.join(", ")));
    }
    if a.kind == "unknown_version" && systems_path_override().is_none() {
        msg.push_str(
            " (DynoSim 1.4.2's versions, e.g. vllm 0.19.0, are in AIConfigurator 0.11.0's perf \
             data: point AICONFIGURATOR_SYSTEMS_PATH at its `systems` folder)",
        );
    }
    InputError::new(msg)
}

fn cache_key(req: &str, py: &str) -> String {
    let mut h = Sha256::new();
    h.update(AIC_VERSION.as_bytes());
    h.update([0]);
    h.update(py.as_bytes());
    h.update([0]);
    h.update(req.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn from_answer(a: CompileAnswer, what: &str) -> Result<CompiledSpec, InputError> {
    if !a.ok {
        return Err(answer_error(&a, what));
    }
    if a.aic_version != AIC_VERSION {
        return Err(InputError::new(format!(
            "{what}: `{}` has aiconfigurator-core {}, but this dynosim loads specs of {AIC_VERSION} \
             (their schema versions differ); run `{INSTALL_HINT}`",
            python(),
            a.aic_version
        )));
    }
    let spec = decode_hex(&a.spec_hex)
        .ok_or_else(|| InputError::new(format!("{what}: the compile step's spec is not hex")))?;
    Ok(CompiledSpec {
        spec,
        systems_root: PathBuf::from(a.systems_root),
        num_gpu_blocks: a.num_gpu_blocks,
    })
}

/// Compiles `id` (and estimates its KV pool when `kv` is given), from the disk cache when an
/// identical request was compiled before. Returns whether the Python step ran.
pub fn compile(
    id: &AicEngineId,
    kv: Option<&AicKvEstimate>,
) -> Result<(CompiledSpec, bool), InputError> {
    let what = format!("AIC engine {}", describe(id));
    let req = serde_json::to_string(&CompileRequest {
        engine: id,
        systems_path: systems_path_override(),
        kv,
    })
    .expect("a compile request serialises");
    let py = python();
    let cached = cache_dir().map(|d| d.join(format!("{}.json", cache_key(&req, &py))));
    if let Some(path) = &cached {
        if let Some(a) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<CompileAnswer>(&t).ok())
        {
            if a.ok && a.aic_version == AIC_VERSION {
                return Ok((from_answer(a, &what)?, false));
            }
        }
    }
    let (stdout, stderr) = run_helper("compile", &req)?;
    let a = parse_answer(&stdout, &stderr)?;
    if a.ok {
        if let Some(path) = &cached {
            write_atomically(path, &serde_json::to_string(&a).expect("answer serialises"));
        }
    }
    Ok((from_answer(a, &what)?, true))
}

/// Best effort: a cache that cannot be written only costs a recompile next time.
fn write_atomically(path: &Path, text: &str) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// A loaded AIC engine, shared read-only by every simulation that uses it.
pub struct LoadedEngine {
    pub id: AicEngineId,
    pub engine: aiconfigurator_core::engine::Engine,
}

fn load(id: &AicEngineId, c: &CompiledSpec) -> Result<LoadedEngine, InputError> {
    let engine = aiconfigurator_core::engine::Engine::from_spec_bytes(&c.spec, &c.systems_root)
        .map_err(|e| {
            InputError::new(format!(
                "AIC engine {}: the Rust estimator could not load the compiled spec ({e}); if \
                 this is a schema-version mismatch, run `{INSTALL_HINT}`",
                describe(id)
            ))
        })?;
    // The estimator reads its perf tables lazily, by query shape, on first use (a second or
    // more): a few queries spanning the shapes a simulation asks for do it here, so that cost
    // counts as loading, not as simulating.
    let warm = || -> Result<(), aiconfigurator_core::AicError> {
        for (bs, isl, prefix) in [(1, 128, 0), (1, 8192, 0), (4, 2048, 1024), (16, 512, 448)] {
            engine.predict_prefill_latency(bs, isl, prefix)?;
        }
        for (bs, ctx) in [(1, 128), (8, 2048), (64, 16384), (256, 1024)] {
            engine.predict_decode_latency(bs, ctx, 2)?;
        }
        Ok(())
    };
    if let Err(e) = warm() {
        return Err(InputError::new(format!(
            "AIC engine {}: the estimator cannot answer a first query ({e})",
            describe(id)
        )));
    }
    Ok(LoadedEngine {
        id: id.clone(),
        engine,
    })
}

/// Counts of the work an [`AicEngines`] set did (reported so a sweep can show each distinct
/// engine was compiled and loaded once).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AicStats {
    /// Distinct engines loaded into memory.
    pub loaded: u64,
    /// Python compile steps run.
    pub compiled: u64,
    /// Compiled specs read from the disk cache instead.
    pub cached: u64,
    /// Wall time of compiling and loading, in milliseconds.
    pub first_use_ms: u64,
}

impl AicStats {
    /// One line for the console: `AIC: 4 engines loaded (2 compiled, 2 from the cache) in 2.1 s`.
    pub fn summary(&self) -> String {
        format!(
            "AIC: {} engine{} loaded ({} compiled, {} from the cache) in {:.1} s",
            self.loaded,
            if self.loaded == 1 { "" } else { "s" },
            self.compiled,
            self.cached,
            self.first_use_ms as f64 / 1000.0
        )
    }
}

/// Every AIC engine one run or sweep uses, loaded once each and shared.
#[derive(Default)]
pub struct AicEngines {
    engines: Mutex<BTreeMap<AicEngineId, Arc<LoadedEngine>>>,
    kv_blocks: Mutex<BTreeMap<String, u64>>,
    compiled: AtomicU64,
    cached: AtomicU64,
    first_use_us: AtomicU64,
}

impl std::fmt::Debug for AicEngines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AicEngines")
            .field("stats", &self.stats())
            .finish()
    }
}

impl AicEngines {
    pub fn new() -> Self {
        Self::default()
    }

    /// The loaded engine for `id`, compiling and loading it on first use. When `kv` is given,
    /// also AIC's per-rank KV-block estimate for it.
    pub fn get(
        &self,
        id: &AicEngineId,
        kv: Option<&AicKvEstimate>,
    ) -> Result<(Arc<LoadedEngine>, Option<u64>), InputError> {
        let kv_key =
            kv.map(|k| serde_json::to_string(&(id, k)).expect("a KV estimate request serialises"));
        // One lock for the whole first use: concurrent sweep points asking for the same engine
        // wait for one compile instead of racing several.
        let mut engines = self.engines.lock();
        let known_blocks = kv_key
            .as_ref()
            .and_then(|k| self.kv_blocks.lock().get(k).copied());
        if let Some(e) = engines.get(id) {
            if kv.is_none() || known_blocks.is_some() {
                return Ok((e.clone(), known_blocks));
            }
        }
        let started = std::time::Instant::now();
        let (compiled, ran) = compile(id, kv)?;
        let counter = if ran { &self.compiled } else { &self.cached };
        counter.fetch_add(1, Ordering::Relaxed);
        let engine = match engines.get(id) {
            Some(e) => e.clone(),
            None => {
                let e = Arc::new(load(id, &compiled)?);
                engines.insert(id.clone(), e.clone());
                e
            }
        };
        if let (Some(k), Some(blocks)) = (kv_key, compiled.num_gpu_blocks) {
            self.kv_blocks.lock().insert(k, blocks);
        }
        self.first_use_us
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        if kv.is_some() && compiled.num_gpu_blocks.is_none() {
            return Err(InputError::new(format!(
                "AIC engine {}: the compile step returned no KV-block estimate",
                describe(id)
            )));
        }
        Ok((engine, compiled.num_gpu_blocks))
    }

    pub fn stats(&self) -> AicStats {
        AicStats {
            loaded: self.engines.lock().len() as u64,
            compiled: self.compiled.load(Ordering::Relaxed),
            cached: self.cached.load(Ordering::Relaxed),
            first_use_ms: self.first_use_us.load(Ordering::Relaxed) / 1000,
        }
    }
}

/// What `dynosim aic list` prints: the installed perf database's systems, backends, versions,
/// and the bundled model configs.
#[derive(Debug, Clone, Deserialize)]
pub struct Catalog {
    pub aic_version: String,
    pub systems_root: String,
    pub databases: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    pub models: Vec<String>,
}

pub fn catalog() -> Result<Catalog, InputError> {
    let (stdout, stderr) = run_helper("list", "")?;
    let a = parse_answer(&stdout, &stderr)?;
    if !a.ok {
        return Err(answer_error(&a, "dynosim aic list"));
    }
    serde_json::from_str(
        stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or("{}"),
    )
    .map_err(|e| InputError::new(format!("dynosim aic list: unexpected answer ({e})")))
}

impl std::fmt::Display for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "aiconfigurator-core {}", self.aic_version)?;
        writeln!(f, "perf data: {}", self.systems_root)?;
        writeln!(
            f,
            "\nsystem  backend  versions (aic_system, aic_backend, aic_backend_version)"
        )?;
        for (system, backends) in &self.databases {
            for (backend, versions) in backends {
                writeln!(f, "{system}  {backend}  {}", versions.join(" "))?;
            }
        }
        writeln!(
            f,
            "\nbundled models (aic_model_path; a local model folder also works):"
        )?;
        for m in &self.models {
            writeln!(f, "{m}")?;
        }
        Ok(())
    }
}

/// The timing model and KV-pool estimate of one pool's `aic_*` args, built through `loader` (one
/// loaded engine per distinct [`AicEngineId`]). `origin` prefixes errors.
pub fn build_timing(
    loader: &mut crate::engine::timing::TimingLoader,
    args: &crate::config::aic::AicArgs,
    origin: &str,
) -> Result<(crate::engine::timing::Timing, Option<u64>), InputError> {
    let with_origin = |e: InputError| InputError::new(format!("{origin}: {}", e.0));
    let (engine, blocks) = loader
        .aic_engines()
        .get(&args.engine, args.kv_estimate.as_ref())
        .map_err(with_origin)?;
    let timing = aic_timing(loader, engine)?;
    Ok((timing, blocks))
}

/// The AIC timing model of a loaded engine, one per engine id in `loader` (so AIC timing and the
/// KV router's load estimator of the same engine share its memo).
fn aic_timing(
    loader: &mut crate::engine::timing::TimingLoader,
    engine: Arc<LoadedEngine>,
) -> Result<crate::engine::timing::Timing, InputError> {
    let key = format!(
        "aic\n{}",
        serde_json::to_string(&engine.id).expect("an engine id serialises")
    );
    loader.get_or_build(key, || {
        Ok(crate::engine::timing::Timing::aic(Arc::new(
            crate::engine::timing::AicLatency::new(engine),
        )))
    })
}

/// The KV router's AIC prefill-load estimator for `id` (`router_prefill_load_model: "aic"`),
/// built through `loader`: the engine is compiled and loaded once, and shared with AIC timing of
/// the same engine. `origin` prefixes errors.
pub fn build_prefill_load_estimator(
    loader: &mut crate::engine::timing::TimingLoader,
    id: &AicEngineId,
    origin: &str,
) -> Result<crate::router::prefill_load::PrefillLoadEstimator, InputError> {
    let with_origin = |e: InputError| InputError::new(format!("{origin}: {}", e.0));
    let (engine, _) = loader.aic_engines().get(id, None).map_err(with_origin)?;
    let timing = aic_timing(loader, engine)?;
    let latency = timing
        .aic_latency()
        .expect("an AIC engine's timing is AIC timing")
        .clone();
    Ok(crate::router::prefill_load::PrefillLoadEstimator::new(
        latency,
    ))
}
