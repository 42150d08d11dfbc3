//! AIConfigurator (AIC) engines for AIC timing (breadth spec §5): an [`AicEngineId`] is compiled
//! by AIConfigurator's Python SDK in a subprocess of the user's Python (never an embedded
//! interpreter), the compiled spec is cached on disk keyed by its inputs, and the Rust estimator
//! (`aiconfigurator-core`) loads it once per process; every pool and sweep point with the same id
//! shares that loaded engine through an [`AicEngines`] set.
//!
//! Which estimator loads the spec is the installed Python package's choice: 0.11.0 (DynoSim
//! 1.4.2's) or 0.12.0, told apart by the spec schema it compiles ([`super::estimator`]).
//!
//! Owns: the subprocess protocol (`helper.py`), the disk cache, the shared set, `dynosim aic
//! list`. Does not own: the latency model itself ([`super::latency`]), building a pool's timing
//! (`TimingLoader`) or where the KV estimate is applied (the callers).

use super::estimator::{self, Estimator, EstimatorVersion};
use super::{AicEngineId, AicKvEstimate};
use crate::error::InputError;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a user installs to get AIC timing (a DynoSim 1.4.2 user's Python, with
/// aiconfigurator-core 0.11.0 from `ai-dynamo[mocker]`, works as it is).
pub const INSTALL_HINT: &str = "pip install aiconfigurator-core==0.12.0";

/// The package AIC timing needs, for messages.
fn needed_package() -> String {
    format!(
        "aiconfigurator-core {} (0.11.0 is DynoSim 1.4.2's)",
        EstimatorVersion::supported()
    )
}

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
    /// The package's version; `None` for a copy without package metadata.
    #[serde(default)]
    aic_version: Option<String>,
    /// The spec schema the package compiles (which estimator loads it).
    #[serde(default)]
    schema: Option<u32>,
    #[serde(default)]
    spec_hex: String,
    #[serde(default)]
    systems_root: String,
    #[serde(default)]
    num_gpu_blocks: Option<u64>,
    /// The context-attention dtype the compile step chose because the perf data has none for the
    /// one inferred from the checkpoint (AIConfigurator's estimate-path rule), if it did.
    #[serde(default)]
    fmha_fallback: Option<String>,
}

/// A compiled engine as the Python step produced it.
#[derive(Debug, Clone)]
pub struct CompiledSpec {
    /// The estimator whose schema the spec carries.
    pub version: EstimatorVersion,
    pub spec: Vec<u8>,
    pub systems_root: PathBuf,
    /// Per-rank KV blocks from AIC's memory model, when an estimate was asked for.
    pub num_gpu_blocks: Option<u64>,
    /// The FMHA dtype used in place of the checkpoint's, when its perf data is missing.
    pub fmha_fallback: Option<String>,
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
                "AIC timing needs Python with {}, but `{py}` could not be started ({e}); install \
                 Python 3.11+ and run `{INSTALL_HINT}`, or point DYNOSIM_PYTHON at a Python that \
                 has it",
                needed_package()
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
            "AIC timing needs the Python package {} in `{}` ({}); install it with \
             `{INSTALL_HINT}`, or point DYNOSIM_PYTHON at DynoSim's Python",
            needed_package(),
            python(),
            a.message
        ),
        "broken_package" => format!(
            "AIC timing could not import aiconfigurator-core in `{}` ({}); repair that \
             install (`{INSTALL_HINT} --force-reinstall`), or point DYNOSIM_PYTHON at a Python \
             where it imports",
            python(),
            a.message
        ),
        _ => format!("{what}: {}", a.message),
    };
    if !a.available.is_empty() {
        msg.push_str(&format!("; available: {}", a.available.join(", ")));
    }
    if a.kind == "unknown_version"
        && systems_path_override().is_none()
        && a.schema != Some(EstimatorVersion::V0_11.schema())
    {
        msg.push_str(
            " (DynoSim 1.4.2's versions, e.g. vllm 0.19.0, are in AIConfigurator 0.11.0's perf \
             data: point DYNOSIM_PYTHON at DynoSim's Python, or AICONFIGURATOR_SYSTEMS_PATH at \
             0.11.0's `systems` folder)",
        );
    }
    // AIC refusing this configuration (a TP size the model's heads do not divide, no memory
    // left for the KV cache) is about the point, not about the installation or the spec's keys.
    if matches!(a.kind.as_str(), "compile_failed" | "kv_estimate_failed") {
        return InputError::unbuildable(msg);
    }
    InputError::new(msg)
}

/// What `helper.py probe` says about the installed package: which estimator loads its specs, and
/// what identifies its code on disk (part of every cache key).
#[derive(Debug, Clone, Deserialize)]
struct Installed {
    #[serde(default)]
    aic_version: Option<String>,
    schema: u32,
    fingerprint: String,
}

impl Installed {
    /// The estimator for this package's specs, or the message saying it has none.
    fn estimator(&self) -> Result<EstimatorVersion, InputError> {
        EstimatorVersion::from_schema(self.schema).ok_or_else(|| {
            InputError::new(format!(
                "`{}` has aiconfigurator-core {} (spec schema {}), whose compiled specs this \
                 dynosim cannot load; it loads {}: run `{INSTALL_HINT}`, or point DYNOSIM_PYTHON \
                 at DynoSim 1.4.2's Python",
                python(),
                self.aic_version.as_deref().unwrap_or("of unknown version"),
                self.schema,
                supported_schemas()
            ))
        })
    }
}

/// "0.11.0 (schema 4) or 0.12.0 (schema 15)".
fn supported_schemas() -> String {
    EstimatorVersion::ALL
        .map(|v| format!("{v} (schema {})", v.schema()))
        .join(" or ")
}

/// Asks the user's Python which aiconfigurator-core it has (a few hundredths of a second: the
/// SDK is not imported).
fn probe() -> Result<Installed, InputError> {
    let (stdout, stderr) = run_helper("probe", "")?;
    let a = parse_answer(&stdout, &stderr)?;
    if !a.ok {
        return Err(answer_error(&a, "AIC timing"));
    }
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("{}");
    serde_json::from_str(line)
        .map_err(|e| InputError::new(format!("AIC compile step: unexpected probe answer ({e})")))
}

fn cache_key(req: &str, py: &str, installed: &Installed) -> String {
    let mut h = Sha256::new();
    // The compile step's own code: a dynosim whose step compiles differently recompiles.
    h.update(HELPER.as_bytes());
    h.update(installed.schema.to_le_bytes());
    h.update(installed.fingerprint.as_bytes());
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
    let spec = decode_hex(&a.spec_hex)
        .ok_or_else(|| InputError::new(format!("{what}: the compile step's spec is not hex")))?;
    let schema = estimator::spec_schema(&spec);
    let version = schema.and_then(EstimatorVersion::from_schema);
    let Some(version) = version.filter(|_| schema == a.schema) else {
        return Err(InputError::new(format!(
            "{what}: `{}` has aiconfigurator-core {} and compiled a spec of schema {}, which this \
             dynosim cannot load; it loads {}: run `{INSTALL_HINT}`",
            python(),
            a.aic_version.as_deref().unwrap_or("of unknown version"),
            schema.map_or("?".into(), |s| s.to_string()),
            supported_schemas()
        )));
    };
    Ok(CompiledSpec {
        version,
        spec,
        systems_root: PathBuf::from(a.systems_root),
        num_gpu_blocks: a.num_gpu_blocks,
        fmha_fallback: a.fmha_fallback,
    })
}

/// A `helper.py serve` process kept for the compile steps of one run or sweep: the first compile
/// reads the system's perf data in Python (about 2 s), the next ones reuse it. Only a speed-up:
/// a request it does not answer is run again as a one-shot `compile`, whose errors are reported.
struct Server {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
}

impl Server {
    fn start() -> Option<Server> {
        let mut child = Command::new(python())
            .arg("-c")
            .arg(HELPER)
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let input = child.stdin.take()?;
        let output = std::io::BufReader::new(child.stdout.take()?);
        Some(Server {
            child,
            input,
            output,
        })
    }

    /// The answer to one request line, if the server gives one.
    fn ask(&mut self, req: &str) -> Option<CompileAnswer> {
        use std::io::{BufRead, Write};
        writeln!(self.input, "{req}").ok()?;
        self.input.flush().ok()?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.output.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if line.starts_with('{') {
                return serde_json::from_str(&line).ok();
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Idle between requests: ending it loses nothing; wait so no zombie is left.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Compiles `id` (and estimates its KV pool when `kv` is given), from the disk cache when an
/// identical request was compiled before, else through `server` (started on first need) or a
/// one-shot Python step. Returns whether the Python step ran, and why its answer could not be
/// kept in the disk cache where it could not.
fn compile(
    id: &AicEngineId,
    kv: Option<&AicKvEstimate>,
    installed: &mut Option<Installed>,
    server: &mut Option<Server>,
) -> Result<(CompiledSpec, Compiled), InputError> {
    let what = format!("AIC engine {}", describe(id));
    let req = serde_json::to_string(&CompileRequest {
        engine: id,
        systems_path: systems_path_override(),
        kv,
    })
    .expect("a compile request serialises");
    let py = python();
    if installed.is_none() {
        *installed = Some(probe()?);
    }
    let installed = installed.as_ref().expect("probed above");
    let version = installed.estimator()?;
    let cached = cache_dir().map(|d| d.join(format!("{}.json", cache_key(&req, &py, installed))));
    if let Some(path) = &cached {
        if let Some(a) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<CompileAnswer>(&t).ok())
        {
            if a.ok && a.schema == Some(version.schema()) {
                return Ok((from_answer(a, &what)?, Compiled::FromCache));
            }
        }
    }
    if server.is_none() {
        *server = Server::start();
    }
    let served = server.as_mut().and_then(|s| s.ask(&req));
    if served.is_none() {
        *server = None;
    }
    let a = match served {
        Some(a) if a.ok => a,
        // A refusal or no answer: the one-shot step gives the message (and its stderr).
        _ => {
            let (stdout, stderr) = run_helper("compile", &req)?;
            parse_answer(&stdout, &stderr)?
        }
    };
    // A cache that cannot be written costs only a compile next time: the run goes on, and its
    // AIC line says so.
    let unsaved = match &cached {
        _ if !a.ok => None,
        Some(path) => {
            let text = serde_json::to_string(&a).expect("answer serialises");
            crate::output_file::write_atomic(path, text.as_bytes())
                .err()
                .map(|e| {
                    let folder = path.parent().unwrap_or(path);
                    format!("`{}` cannot be written: {e}", folder.display())
                })
        }
        None => {
            Some("no folder for it: DYNOSIM_CACHE_DIR, XDG_CACHE_HOME and HOME are unset".into())
        }
    };
    Ok((from_answer(a, &what)?, Compiled::Ran { unsaved }))
}

/// Where a compiled spec came from.
enum Compiled {
    /// The disk cache.
    FromCache,
    /// The Python step; `unsaved` says why the cache did not keep its answer, where it did not.
    Ran { unsaved: Option<String> },
}

/// A loaded AIC engine, shared read-only by every simulation that uses it.
pub struct LoadedEngine {
    pub id: AicEngineId,
    pub engine: Estimator,
    /// The context-attention dtype timed in place of the checkpoint's, when the perf data has
    /// none of it ([`CompiledSpec::fmha_fallback`]).
    pub fmha_fallback: Option<String>,
}

fn load(id: &AicEngineId, c: &CompiledSpec) -> Result<LoadedEngine, InputError> {
    let engine = Estimator::load(c.version, &c.spec, &c.systems_root).map_err(|e| {
        InputError::new(format!(
            "AIC engine {}: the Rust estimator {} could not load the compiled spec ({e})",
            describe(id),
            c.version
        ))
    })?;
    // The estimator reads its perf tables lazily, by query shape, on first use (a second or
    // more): a few queries spanning the shapes a simulation asks for do it here, so that cost
    // counts as loading, not as simulating.
    let warmed = engine.warm(&c.spec, &WARM_PREFILL, &WARM_DECODE);
    if let Err(e) = warmed {
        return Err(InputError::new(format!(
            "AIC engine {}: the estimator cannot answer a first query ({e})",
            describe(id)
        )));
    }
    Ok(LoadedEngine {
        id: id.clone(),
        engine,
        fmha_fallback: c.fmha_fallback.clone(),
    })
}

/// The shapes queried while loading: `(batch, isl, prefix)` prefill and `(batch, context)` decode.
const WARM_PREFILL: [(u32, u32, u32); 4] =
    [(1, 128, 0), (1, 8192, 0), (4, 2048, 1024), (16, 512, 448)];
const WARM_DECODE: [(u32, u32); 4] = [(1, 128), (8, 2048), (64, 16384), (256, 1024)];

/// Counts of the work an [`AicEngines`] set did (reported so a sweep can show each distinct
/// engine was compiled and loaded once).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct AicStats {
    /// Distinct engines loaded into memory.
    pub loaded: u64,
    /// Python compile steps run.
    pub compiled: u64,
    /// Compiled specs read from the disk cache instead.
    pub cached: u64,
    /// Compiled specs the disk cache could not keep (they are compiled again next run).
    pub unsaved: u64,
    /// Why the first of those was not kept.
    pub unsaved_reason: Option<String>,
    /// Wall time of compiling and loading, in milliseconds.
    pub first_use_ms: u64,
    /// Loaded engines timed with bfloat16 context-attention data because their perf data has
    /// none of the checkpoint's fp8 (AIConfigurator's estimate-path fallback).
    pub fmha_fallback: u64,
    /// The estimator that loaded them (the installed Python package's version), once known.
    pub estimator: Option<&'static str>,
}

impl AicStats {
    /// One line for the console: `AIC: 4 engines loaded (2 compiled, 2 from the cache) in 2.14 s
    /// by aiconfigurator-core 0.12.0`.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "AIC: {} engine{} loaded ({} compiled, {} from the cache) in {:.2} s",
            self.loaded,
            if self.loaded == 1 { "" } else { "s" },
            self.compiled,
            self.cached,
            self.first_use_ms as f64 / 1000.0
        );
        if let Some(v) = self.estimator {
            line.push_str(&format!(" by aiconfigurator-core {v}"));
        }
        if self.fmha_fallback > 0 {
            line.push_str(&format!(
                "; {} with bfloat16 context attention: the perf data has none for the \
                 checkpoint's fp8 (as AIConfigurator's own estimate falls back; set \
                 aic_fmha_dtype to choose)",
                self.fmha_fallback
            ));
        }
        if self.unsaved > 0 {
            line.push_str(&format!(
                "; {} not kept in the engine cache ({}), so the next run compiles {} again: set \
                 DYNOSIM_CACHE_DIR to a writable folder",
                self.unsaved,
                self.unsaved_reason.as_deref().unwrap_or("unknown reason"),
                if self.unsaved == 1 { "it" } else { "them" }
            ));
        }
        line
    }
}

/// Every AIC engine one run or sweep uses, loaded once each and shared.
#[derive(Default)]
pub struct AicEngines {
    engines: Mutex<BTreeMap<AicEngineId, Arc<LoadedEngine>>>,
    kv_blocks: Mutex<BTreeMap<String, u64>>,
    compiled: AtomicU64,
    cached: AtomicU64,
    unsaved: AtomicU64,
    unsaved_reason: Mutex<Option<String>>,
    first_use_us: AtomicU64,
    fmha_fallback: AtomicU64,
    installed: Mutex<Option<Installed>>,
    server: Mutex<Option<Server>>,
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
        let (compiled, ran) = compile(id, kv, &mut self.installed.lock(), &mut self.server.lock())?;
        match ran {
            Compiled::FromCache => self.cached.fetch_add(1, Ordering::Relaxed),
            Compiled::Ran { unsaved } => {
                if let Some(why) = unsaved {
                    self.unsaved.fetch_add(1, Ordering::Relaxed);
                    self.unsaved_reason.lock().get_or_insert(why);
                }
                self.compiled.fetch_add(1, Ordering::Relaxed)
            }
        };
        let engine = match engines.get(id) {
            Some(e) => e.clone(),
            None => {
                let e = Arc::new(load(id, &compiled)?);
                engines.insert(id.clone(), e.clone());
                if compiled.fmha_fallback.is_some() {
                    self.fmha_fallback.fetch_add(1, Ordering::Relaxed);
                }
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
            unsaved: self.unsaved.load(Ordering::Relaxed),
            unsaved_reason: self.unsaved_reason.lock().clone(),
            first_use_ms: self.first_use_us.load(Ordering::Relaxed) / 1000,
            fmha_fallback: self.fmha_fallback.load(Ordering::Relaxed),
            estimator: self
                .installed
                .lock()
                .as_ref()
                .and_then(|i| EstimatorVersion::from_schema(i.schema))
                .map(EstimatorVersion::package_version),
        }
    }
}

/// What `dynosim aic list` prints: the installed perf database's systems, backends, versions,
/// and the bundled model configs.
#[derive(Debug, Clone, Deserialize)]
pub struct Catalog {
    /// The installed package's version; `None` for a copy without package metadata.
    #[serde(default)]
    pub aic_version: Option<String>,
    /// The spec schema it compiles, which picks the estimator.
    pub schema: u32,
    pub systems_root: String,
    pub databases: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// AIC's default version per system and backend, what it queries when asked for none
    /// (0.12.0's `current` slot: its newest complete collection, not the `next` development
    /// drop).
    #[serde(default)]
    pub defaults: BTreeMap<String, BTreeMap<String, String>>,
    pub models: Vec<String>,
    /// Layer count of each bundled model config, where AIC's parser (or the config) says.
    #[serde(default)]
    pub layers: BTreeMap<String, u32>,
    /// The quantisation each bundled config declares for its checkpoint
    /// (`quantization_config.quant_method`: `mxfp4` for gpt-oss; `fp8_block` for FP8 in weight
    /// blocks), where it declares one.
    #[serde(default)]
    pub checkpoint_quant: BTreeMap<String, String>,
    /// The routed experts' intermediate size of each bundled MoE config, where AIC's parser
    /// gives one.
    #[serde(default)]
    pub moe_inter_size: BTreeMap<String, u32>,
    /// How many layers of each bundled MoE model route to experts (AIC's `num_moe_layers`),
    /// where AIC can describe the model.
    #[serde(default)]
    pub moe_layers: BTreeMap<String, u32>,
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
        let estimator = EstimatorVersion::from_schema(self.schema);
        let version = match (&self.aic_version, estimator) {
            (Some(v), _) => v.clone(),
            (None, Some(e)) => format!("{e} (no package metadata; known by its spec schema)"),
            (None, None) => "of unknown version".into(),
        };
        writeln!(f, "aiconfigurator-core {version} in `{}`", python())?;
        match estimator {
            Some(EstimatorVersion::V0_11) => writeln!(
                f,
                "estimator: dynosim's aiconfigurator-core 0.11.0 (spec schema {}), DynoSim 1.4.2's",
                self.schema
            )?,
            Some(e) => writeln!(
                f,
                "estimator: dynosim's aiconfigurator-core {e} (spec schema {})",
                self.schema
            )?,
            None => writeln!(
                f,
                "estimator: none (spec schema {}; this dynosim loads {}): AIC timing would refuse \
                 to run",
                self.schema,
                supported_schemas()
            )?,
        }
        writeln!(f, "perf data: {}", self.systems_root)?;
        writeln!(
            f,
            "\nsystem  backend  versions (aic_system, aic_backend, aic_backend_version)"
        )?;
        for (system, backends) in &self.databases {
            for (backend, versions) in backends {
                let default = self
                    .defaults
                    .get(system)
                    .and_then(|b| b.get(backend))
                    .map_or(String::new(), |d| format!("  (default {d})"));
                writeln!(f, "{system}  {backend}  {}{default}", versions.join(" "))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(schema: u32, fingerprint: &str) -> Installed {
        Installed {
            aic_version: None,
            schema,
            fingerprint: fingerprint.into(),
        }
    }

    #[test]
    fn cache_keys_name_the_estimator_and_the_installed_package() {
        let (req, py) = ("{\"model_path\":\"m\"}", "/venv/bin/python");
        let a = cache_key(req, py, &installed(4, "pkg"));
        assert_eq!(a, cache_key(req, py, &installed(4, "pkg")));
        // Another estimator, or the same Python with another install of the package.
        assert_ne!(a, cache_key(req, py, &installed(15, "pkg")));
        assert_ne!(a, cache_key(req, py, &installed(4, "pkg, reinstalled")));
        assert_ne!(a, cache_key(req, "/other/python", &installed(4, "pkg")));
    }

    #[test]
    fn a_package_of_another_schema_is_refused_with_the_supported_versions() {
        let err = installed(27, "pkg").estimator().unwrap_err().to_string();
        assert!(err.contains("spec schema 27"), "{err}");
        assert!(
            err.contains("0.11.0 (schema 4) or 0.12.0 (schema 15)"),
            "{err}"
        );
        assert!(err.contains(INSTALL_HINT), "{err}");
        assert_eq!(
            installed(4, "pkg").estimator().unwrap(),
            EstimatorVersion::V0_11
        );
    }
}
