//! What one finished point leaves behind ([`PointRecord`]), its configuration hash, and the
//! files of an output folder: `points.jsonl` (appended one complete line at a time, read back
//! tolerating a line cut short by a kill), `spec.yaml`, `sweep.json`, atomic writes.

use super::resolve::{ResolvedPoint, WorkloadSource};
use super::spec::sha256_hex;
use super::values::canonical_json;
use crate::config::SimConfig;
pub use crate::output_file::{write_atomic, write_atomic_with};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The version written into hashes and leaderboards.
pub const DYNOSIM_VERSION: &str = env!("CARGO_PKG_VERSION");

pub const POINTS_FILE: &str = "points.jsonl";
pub const SPEC_FILE: &str = "spec.yaml";
pub const META_FILE: &str = "sweep.json";
pub const CSV_FILE: &str = "leaderboard.csv";
pub const JSON_FILE: &str = "leaderboard.json";

/// The report keys that are rates over the run's duration (DynoSim divides by the time of the
/// last completion); a capped run also gets each of them per the window, as `<key>_window` (see
/// `served::add_window_rates`), which [`PointRecord::metric`] reads in their place.
pub const RATE_KEYS: [&str; 8] = [
    "request_throughput_rps",
    "input_throughput_tok_s",
    "output_throughput_tok_s",
    "total_throughput_tok_s",
    "goodput_request_throughput_rps",
    "goodput_output_throughput_tok_s",
    "output_throughput_tok_s_per_gpu",
    "request_throughput_rps_per_gpu",
];

/// The suffix of a rate per the window.
pub const WINDOW_SUFFIX: &str = "_window";

/// Outcome of one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Simulated and within every `require` bound.
    Ok,
    /// Simulated, outside a `require` bound.
    Infeasible,
    /// Outside `constraints` (not simulated).
    Skipped,
    /// A configuration DynoSim would refuse (not simulated).
    Invalid,
    /// The simulation returned an error or panicked.
    Failed,
    /// Capacity search: misses a bound even at the knob's `low`.
    BelowRange,
    /// Capacity search: meets every bound even at the knob's `high`.
    AboveRange,
    /// Simulated, but did not keep up with the load: its queue was still growing when the
    /// window (`max_sim_time_seconds`) ended (see `served`).
    Overloaded,
    /// Simulated, but could not make progress: a worker's queued requests can never be
    /// scheduled (the dead end of `dynosim run`, whether or not a time cap ended the run first).
    Stalled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Infeasible => "infeasible",
            Status::Skipped => "skipped",
            Status::Invalid => "invalid",
            Status::Failed => "failed",
            Status::BelowRange => "below_range",
            Status::AboveRange => "above_range",
            Status::Overloaded => "overloaded",
            Status::Stalled => "stalled",
        }
    }

    /// Whether the point was simulated (a report, or a proof that it misses a bound or stalls).
    pub fn ran(self) -> bool {
        self.tier().is_some()
    }

    /// Whether the point meets every `require` bound (a capacity search: at its capacity); a
    /// point that did not serve its load never does.
    pub fn feasible(self) -> Option<bool> {
        self.tier().map(|t| t == 0)
    }

    /// Where the point ranks: 0 for points that served the load within every bound (`ok`,
    /// `above_range`), 1 for those that served it but miss a bound (`infeasible`,
    /// `below_range`), 2 `overloaded`, 3 `stalled`; `None` for points that did not run.
    pub fn tier(self) -> Option<u8> {
        match self {
            Status::Ok | Status::AboveRange => Some(0),
            Status::Infeasible | Status::BelowRange => Some(1),
            Status::Overloaded => Some(2),
            Status::Stalled => Some(3),
            Status::Skipped | Status::Invalid | Status::Failed => None,
        }
    }
}

/// One line of `points.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    pub point: u64,
    /// SHA-256 of the canonical JSON of the resolved configuration and workload identity.
    pub hash: String,
    pub status: Status,
    #[serde(default)]
    pub reason: Option<String>,
    /// The parameters the grid sets for this point.
    #[serde(default)]
    pub parameters: Map<String, Value>,
    #[serde(default)]
    pub gpus: Option<u64>,
    /// The resolved `SimConfig`.
    #[serde(default)]
    pub configuration: Option<Value>,
    /// What workload was replayed (trace files with SHA-256, or the synthetic spec).
    #[serde(default)]
    pub workload: Option<Value>,
    /// The full report (DynoSim's keys plus `output_throughput_tok_s_per_gpu`).
    #[serde(default)]
    pub report: Option<Map<String, Value>>,
    /// The `require` bound a simulation stopped early on (no report then): a resumed sweep
    /// reuses the point only while it still requires at least as much.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_on: Option<StoppedOn>,
    /// A capacity search's answer for this point (its report is the run at `capacity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchOutcome>,
}

/// What a capacity search found for one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchOutcome {
    /// The highest knob value that met every bound (none: `below_range`).
    pub capacity: Option<f64>,
    /// The lowest knob value that missed a bound (none: `above_range`).
    pub bracket_high: Option<f64>,
    /// Simulations run for the point (including those taken from an earlier run).
    pub probes: u64,
}

/// The bound an early-stopped point certainly misses: `key <= max`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppedOn {
    pub key: String,
    pub max: f64,
    /// What was proven of the metric when the run stopped: it is at least this (the metric's
    /// unit, ms; none in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proven_min: Option<f64>,
    /// Simulated time of the stop, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<f64>,
}

impl PointRecord {
    /// A record for a resolved point, without outcome yet.
    pub fn new(
        p: &ResolvedPoint,
        identity: &Value,
        status: Status,
        reason: Option<String>,
    ) -> Self {
        PointRecord {
            point: p.id,
            hash: config_hash(&p.config, identity),
            status,
            reason,
            parameters: p.params.iter().cloned().collect(),
            gpus: Some(p.gpus),
            configuration: serde_json::to_value(&p.config).ok(),
            workload: Some(identity.clone()),
            report: None,
            stopped_on: None,
            search: None,
        }
    }

    /// Value of a metric for ranking: `gpus`, a capacity search's `capacity`,
    /// `capacity_bracket_high` or `probes`, a report key, or a numeric parameter the grid sets
    /// (non-finite values count as missing). A throughput or goodput rate of a capped run is
    /// read per the window (`<key>_window`, see `served::add_window_rates`), not per the time
    /// of its last completion.
    pub fn metric(&self, key: &str) -> Option<f64> {
        let v = match key {
            "gpus" => self.gpus.map(|g| g as f64),
            "capacity" => self.search.as_ref()?.capacity,
            "capacity_bracket_high" => self.search.as_ref()?.bracket_high,
            "probes" => self.search.as_ref().map(|s| s.probes as f64),
            _ => match self.report.as_ref().and_then(|r| {
                let windowed = RATE_KEYS
                    .contains(&key)
                    .then(|| r.get(&format!("{key}{WINDOW_SUFFIX}")))
                    .flatten();
                windowed.or_else(|| r.get(key))
            }) {
                Some(v) => v.as_f64(),
                None => self.parameters.get(key)?.as_f64(),
            },
        };
        v.filter(|x| x.is_finite())
    }

    /// The report with host-dependent keys removed (for comparing two runs of one point).
    pub fn stable_report(&self) -> Option<Map<String, Value>> {
        self.report.as_ref().map(|r| {
            r.iter()
                .filter(|(k, _)| !super::spec::HOST_DEPENDENT_METRICS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
    }
}

/// The identity of a point's workload: trace files with their SHA-256 (given by `trace_sha`),
/// or the synthetic spec with the block size it was generated for.
pub fn workload_identity(src: &WorkloadSource, trace_sha: impl Fn(&Path) -> String) -> Value {
    match src {
        // Open or closed loop is part of the configuration (`replay_concurrency`).
        WorkloadSource::Trace {
            files,
            paths,
            trace_block_size,
            format,
            shared_prefix_ratio,
            num_prefix_groups,
            ..
        } => {
            let mut id = json!({
                "kind": "trace",
                "files": files.iter().zip(paths).map(|(f, p)| json!({"path": f, "sha256": trace_sha(p)})).collect::<Vec<_>>(),
                "trace_block_size": trace_block_size,
            });
            // Only named when not the default, so mooncake points keep their hashes.
            if *format != crate::workload::formats::TraceFormat::Mooncake {
                id["trace_format"] = json!(format.name());
            }
            if *format == crate::workload::formats::TraceFormat::AppliedComputeAgentic {
                id["trace_shared_prefix_ratio"] = json!(shared_prefix_ratio);
                id["trace_num_prefix_groups"] = json!(num_prefix_groups);
            }
            id
        }
        WorkloadSource::Synthetic { spec, block_size } => json!({
            "kind": "synthetic",
            "synthetic": spec,
            "block_size": block_size,
        }),
    }
}

/// Stable hash of a point's configuration: SHA-256 of the canonical JSON of the resolved
/// `SimConfig`, the workload identity (trace content, not its path) and the dynosim version.
pub fn config_hash(config: &SimConfig, identity: &Value) -> String {
    let mut identity = identity.clone();
    if let Some(Value::Array(files)) = identity.get_mut("files") {
        for f in files {
            if let Some(o) = f.as_object_mut() {
                o.remove("path");
            }
        }
    }
    let doc = json!({
        "dynosim": DYNOSIM_VERSION,
        "configuration": serde_json::to_value(config).unwrap_or(Value::Null),
        "workload": identity,
    });
    sha256_hex(canonical_json(&doc).as_bytes())
}

/// SHA-256 of a file's bytes (streamed).
pub fn file_sha256(path: &Path) -> io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    io::copy(&mut f, &mut h)?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// What reading `points.jsonl` (or another file of JSON lines) found.
#[derive(Debug)]
pub struct PointsFile<T = PointRecord> {
    pub records: Vec<T>,
    /// A last line without its newline (cut short by a kill): ignored.
    pub truncated_tail: bool,
    /// Complete lines that did not parse: ignored.
    pub bad_lines: Vec<usize>,
}

impl<T> Default for PointsFile<T> {
    fn default() -> Self {
        PointsFile {
            records: Vec::new(),
            truncated_tail: false,
            bad_lines: Vec::new(),
        }
    }
}

/// Parses `points.jsonl` text: complete lines only.
pub fn parse_points(text: &str) -> PointsFile {
    parse_points_with(text)
}

/// Parses JSON-lines text into `T`s: complete lines only.
pub fn parse_points_with<T: serde::de::DeserializeOwned>(text: &str) -> PointsFile<T> {
    let mut out = PointsFile::default();
    let mut rest = text;
    let mut line_no = 0;
    while !rest.is_empty() {
        line_no += 1;
        let Some(end) = rest.find('\n') else {
            out.truncated_tail = true;
            break;
        };
        let line = rest[..end].trim();
        rest = &rest[end + 1..];
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<T>(line) {
            Ok(r) => out.records.push(r),
            Err(_) => out.bad_lines.push(line_no),
        }
    }
    out
}

/// Reads `points.jsonl` of a folder (missing file = no records).
pub fn read_points(dir: &Path) -> io::Result<PointsFile> {
    let path = dir.join(POINTS_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(parse_points(&String::from_utf8_lossy(&bytes))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(PointsFile::default()),
        Err(e) => Err(e),
    }
}

/// One JSON line (with its newline) for a record.
pub fn record_line(r: &PointRecord) -> Vec<u8> {
    let mut line = serde_json::to_vec(r).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Appends records to `points.jsonl`, one complete line per write, from many threads.
pub struct PointsWriter {
    file: Mutex<File>,
    pub path: PathBuf,
}

impl PointsWriter {
    /// Opens for appending (creating the file).
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(PointsWriter {
            file: Mutex::new(file),
            path: path.to_path_buf(),
        })
    }

    /// Blocks appends while the guard lives (no line is cut short by a process exit then).
    pub fn hold(&self) -> parking_lot::MutexGuard<'_, File> {
        self.file.lock()
    }

    pub fn append(&self, r: &PointRecord) -> io::Result<()> {
        self.append_line(&record_line(r))
    }

    /// Appends one complete line (with its newline).
    pub fn append_line(&self, line: &[u8]) -> io::Result<()> {
        let mut f = self.file.lock();
        f.write_all(line)?;
        f.flush()
    }
}

/// `sweep.json`: what a folder holds, for `--resume` and `merge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepMeta {
    pub name: String,
    pub spec_file: String,
    pub spec_sha256: String,
    pub dynosim_version: String,
    pub points_total: u64,
    /// `[K, N]` for a shard.
    pub shard: Option<[u32; 2]>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LoadSpec, RouterConfig, RouterMode, Sla, Topology};

    fn rec(point: u64) -> PointRecord {
        PointRecord {
            point,
            hash: format!("h{point}"),
            status: Status::Ok,
            reason: None,
            parameters: Map::new(),
            gpus: Some(2),
            configuration: None,
            workload: None,
            report: Some(
                serde_json::from_str(r#"{"output_throughput_tok_s": 10.5, "wall_time_ms": 3, "completed_requests": 7}"#)
                    .unwrap(),
            ),
            stopped_on: None,
            search: None,
        }
    }

    #[test]
    fn truncated_last_line_is_ignored() {
        let mut text = String::new();
        for i in 0..3 {
            text.push_str(&String::from_utf8(record_line(&rec(i))).unwrap());
        }
        let full = parse_points(&text);
        assert_eq!(full.records.len(), 3);
        assert!(!full.truncated_tail);
        // A kill in the middle of the 4th line.
        let line = String::from_utf8(record_line(&rec(3))).unwrap();
        text.push_str(&line[..line.len() / 2]);
        let cut = parse_points(&text);
        assert_eq!(cut.records, full.records);
        assert!(cut.truncated_tail);
        assert!(cut.bad_lines.is_empty());
        // A garbled complete line is reported, the rest kept.
        let garbled = format!(
            "{}not json\n{}",
            &text[..text.find('\n').unwrap() + 1],
            String::from_utf8(record_line(&rec(9))).unwrap()
        );
        let g = parse_points(&garbled);
        assert_eq!(
            g.records.iter().map(|r| r.point).collect::<Vec<_>>(),
            vec![0, 9]
        );
        assert_eq!(g.bad_lines, vec![2]);
    }

    #[test]
    fn records_round_trip_exactly() {
        let mut r = rec(4);
        r.report
            .as_mut()
            .unwrap()
            .insert("x".into(), json!(0.1 + 0.2));
        let back: PointRecord = serde_json::from_slice(&record_line(&r)).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.metric("x"), Some(0.1 + 0.2));
        assert_eq!(back.metric("gpus"), Some(2.0));
        assert_eq!(back.metric("missing"), None);
        assert!(!back.stable_report().unwrap().contains_key("wall_time_ms"));
    }

    #[test]
    fn hash_is_stable_and_ignores_trace_paths() {
        let cfg = SimConfig {
            topology: Topology::Aggregated {
                num_workers: 2,
                engine: Default::default(),
            },
            router_mode: RouterMode::RoundRobin,
            router: RouterConfig::default(),
            load: LoadSpec::default(),
            max_sim_time_ms: None,
            sla: Sla::default(),
            seed: 1,
            record_requests: false,
        };
        let a = json!({"kind": "trace", "files": [{"path": "a.jsonl", "sha256": "00"}], "trace_block_size": 512});
        let b = json!({"kind": "trace", "files": [{"path": "../b.jsonl", "sha256": "00"}], "trace_block_size": 512});
        let c = json!({"kind": "trace", "files": [{"path": "a.jsonl", "sha256": "01"}], "trace_block_size": 512});
        assert_eq!(config_hash(&cfg, &a), config_hash(&cfg, &a));
        assert_eq!(config_hash(&cfg, &a), config_hash(&cfg, &b));
        assert_ne!(config_hash(&cfg, &a), config_hash(&cfg, &c));
        let mut cfg2 = cfg.clone();
        cfg2.seed = 2;
        assert_ne!(config_hash(&cfg, &a), config_hash(&cfg2, &a));
        assert_eq!(config_hash(&cfg, &a).len(), 64);
    }

    #[test]
    fn writer_appends_whole_lines_from_threads() {
        let dir = tempfile::tempdir().unwrap();
        let w = PointsWriter::open(&dir.path().join(POINTS_FILE)).unwrap();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let w = &w;
                s.spawn(move || {
                    for i in 0..25 {
                        w.append(&rec(t * 100 + i)).unwrap();
                    }
                });
            }
        });
        let f = read_points(dir.path()).unwrap();
        assert_eq!(f.records.len(), 100);
        assert!(f.bad_lines.is_empty() && !f.truncated_tail);
        write_atomic(&dir.path().join("x.txt"), b"hello").unwrap();
        assert_eq!(std::fs::read(dir.path().join("x.txt")).unwrap(), b"hello");
        let hidden: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(hidden.is_empty(), "temporary files left: {hidden:?}");
    }
}
