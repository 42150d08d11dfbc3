//! `dynosim deploy`: from a simulated deployment (a sweep point, by default the winner, or a
//! `dynosim run` report with its flags) to the files that run and check it for real:
//! `deployment.yaml` (a Dynamo 1.4.2 `DynamoGraphDeployment`), `launch.sh` (Dynamo's CLI on one
//! machine or in a Slurm job), `benchmark.sh` (+ `benchmark_trace.jsonl`: the AIPerf command
//! replaying the simulated workload), `deployment.json` (the exact `dynosim run` flags, for
//! `dynosim validate --deployment-from`) and `README.md`.
//!
//! Everything is rendered in memory first, then written into a temporary folder next to OUT and
//! renamed into place: bad input (exit 2) or a failed write leaves nothing behind.

pub mod bench;
pub mod files;
pub mod k8s;
pub mod launch;
pub mod source;

use crate::error::InputError;
use source::{Pick, Target};
use std::path::{Path, PathBuf};

/// The model deployed when the point's timing names none (DynoSim's polynomial timing models no
/// particular model) and `--model` is not given.
pub const DEFAULT_MODEL: &str = "Qwen/Qwen3-0.6B";

/// What `dynosim deploy` was asked.
#[derive(Debug, Clone)]
pub struct DeployOptions {
    pub source: PathBuf,
    pub point: Option<u64>,
    pub top: Option<usize>,
    pub output: PathBuf,
    pub model: Option<String>,
    pub image: Option<String>,
    pub name: Option<String>,
    pub hf_secret: String,
    pub warmup_requests: u64,
    pub run_flags: Vec<String>,
}

/// A failure: bad input (exit 2) or a failed write (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{0}")]
    Io(String),
}

/// One rendered deployment folder.
struct Rendered {
    /// Sub-folder of OUT ("" for a single deployment).
    dir: String,
    files: Vec<(String, Vec<u8>)>,
    warnings: Vec<String>,
}

/// Runs `dynosim deploy`; returns the folders written and the warnings to print.
pub fn deploy(opt: &DeployOptions) -> Result<(Vec<PathBuf>, Vec<String>), DeployError> {
    let pick = match (opt.point, opt.top) {
        (Some(p), _) => Pick::Point(p),
        (None, Some(0)) => return Err(InputError::new("--top: expected 1 or more").into()),
        (None, Some(k)) => Pick::Top(k),
        (None, None) => Pick::Top(1),
    };
    check_output(&opt.output)?;
    let targets = source::targets(&opt.source, pick, &opt.run_flags)?;
    let many = opt.top.is_some_and(|k| k > 1);
    let mut rendered = Vec::new();
    for t in &targets {
        let dir = if many {
            format!(
                "rank-{}-point-{}",
                t.rank.unwrap_or(0),
                t.source["point"].as_u64().unwrap_or(0)
            )
        } else {
            String::new()
        };
        rendered.push(render(t, opt, dir)?);
    }
    write_all(&opt.output, &rendered)?;
    let mut dirs = Vec::new();
    let mut warnings = Vec::new();
    for r in rendered {
        dirs.push(if r.dir.is_empty() {
            opt.output.clone()
        } else {
            opt.output.join(&r.dir)
        });
        warnings.extend(r.warnings);
    }
    warnings.dedup();
    Ok((dirs, warnings))
}

/// OUT must be new (or an empty folder): deploy never mixes its files with others.
fn check_output(out: &Path) -> Result<(), InputError> {
    if out.exists() {
        let empty = out.is_dir()
            && std::fs::read_dir(out)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
        if !empty {
            return Err(InputError::new(format!(
                "-o {}: already exists and is not an empty folder; give a new folder",
                out.display()
            )));
        }
    }
    Ok(())
}

/// The model of a target: `--model`, else the AIC model its engine args name.
fn model_of(t: &Target, given: &Option<String>) -> (String, Option<String>) {
    if let Some(m) = given {
        return (m.clone(), None);
    }
    let aic = t.raw_engines.iter().find_map(|e| {
        e.get("aic_model_path")
            .and_then(|v| v.as_str())
            .map(str::to_string)
    });
    match aic {
        Some(m) => (m, Some("the model of the point's AIC timing".into())),
        None => (
            DEFAULT_MODEL.to_string(),
            Some(
                "a stand-in: the point's timing (DynoSim's polynomial or a profile) names no model; \
                 pass --model"
                    .to_string(),
            ),
        ),
    }
}

/// A DNS-1123 name for the manifest.
fn dgd_name(t: &Target, given: &Option<String>) -> Result<String, InputError> {
    let raw = match given {
        Some(n) => n.clone(),
        None => match t.source["kind"].as_str() {
            Some("sweep") => format!(
                "dynosim-{}-p{}",
                t.source["sweep"].as_str().unwrap_or("sweep"),
                t.source["point"].as_u64().unwrap_or(0)
            ),
            _ => "dynosim-deployment".into(),
        },
    };
    let mut name: String = raw
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.truncate(63);
    let name = name.trim_matches('-').to_string();
    if given.is_some() && name != *given.as_deref().unwrap_or("") {
        return Err(InputError::new(format!(
            "--name {raw}: a Kubernetes name takes lowercase letters, digits and '-' (at most 63, starting and ending with a letter or digit)"
        )));
    }
    Ok(name)
}

fn render(t: &Target, opt: &DeployOptions, dir: String) -> Result<Rendered, InputError> {
    let (model, model_note) = model_of(t, &opt.model);
    let plan = launch::plan(&t.config, &t.raw_engines, &t.run_args, &model)?;
    let what = t.label.clone();
    let image = opt.image.clone().unwrap_or_else(|| plan.engine.image());
    let name = dgd_name(t, &opt.name)?;
    let yaml = k8s::yaml(
        &plan,
        &k8s::K8sOptions {
            name: &name,
            image: &image,
            hf_secret: &opt.hf_secret,
        },
        &what,
    );
    let b = bench::bench(
        &t.workload,
        &t.config["load"],
        t.config["max_sim_time_ms"].as_f64(),
        &t.sla,
        opt.warmup_requests,
    )?;
    let mut warnings = Vec::new();
    if opt.model.is_none()
        && model_note
            .as_deref()
            .is_some_and(|n| n.starts_with("a stand-in"))
    {
        warnings.push(format!(
            "{what}: its timing names no model; the files deploy {model} (pass --model)"
        ));
    }
    let dj = files::deployment_json(t, &plan, &b);
    let mut files = vec![
        ("deployment.yaml".to_string(), yaml.into_bytes()),
        (
            "launch.sh".to_string(),
            files::launch_sh(&plan, &what).into_bytes(),
        ),
        (
            "benchmark.sh".to_string(),
            files::benchmark_sh(&b, &model, &what).into_bytes(),
        ),
        (
            "deployment.json".to_string(),
            format!(
                "{}\n",
                serde_json::to_string_pretty(&dj).unwrap_or_default()
            )
            .into_bytes(),
        ),
        (
            "README.md".to_string(),
            files::readme(t, &plan, &b, model_note.as_deref()).into_bytes(),
        ),
    ];
    if let Some(trace) = &b.trace {
        files.push((bench::TRACE_FILE.to_string(), trace.clone()));
    }
    Ok(Rendered {
        dir,
        files,
        warnings,
    })
}

/// Writes every folder under a temporary sibling of `out`, then renames it into place.
fn write_all(out: &Path, rendered: &[Rendered]) -> Result<(), DeployError> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "deploy".into());
    if !parent.is_dir() {
        return Err(InputError::new(format!(
            "-o {}: its parent folder {} does not exist",
            out.display(),
            parent.display()
        ))
        .into());
    }
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let io = |what: &Path, e: std::io::Error| {
        DeployError::Io(format!("cannot write {}: {e}", what.display()))
    };
    let result = (|| {
        let _ = std::fs::remove_dir_all(&tmp);
        for r in rendered {
            let dir = if r.dir.is_empty() {
                tmp.clone()
            } else {
                tmp.join(&r.dir)
            };
            std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
            for (file, bytes) in &r.files {
                let path = dir.join(file);
                std::fs::write(&path, bytes).map_err(|e| io(&path, e))?;
                if file.ends_with(".sh") {
                    set_executable(&path).map_err(|e| io(&path, e))?;
                }
            }
        }
        if out.is_dir() {
            // An empty folder (checked before rendering) is replaced.
            std::fs::remove_dir(out).map_err(|e| io(out, e))?;
        }
        std::fs::rename(&tmp, out).map_err(|e| io(out, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

#[cfg(unix)]
fn set_executable(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> std::io::Result<()> {
    Ok(())
}
