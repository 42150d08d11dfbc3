//! Reading a finished sweep output folder back (spec copy, `sweep.json`, `points.jsonl`) for
//! `dynosim report DIR` and `dynosim compare`, and rewriting its `report.html`.

use super::html;
use super::leaderboard::rank;
use super::record::{
    read_points, write_atomic, PointRecord, SweepMeta, JSON_FILE, META_FILE, POINTS_FILE, SPEC_FILE,
};
use super::spec::{parse_spec, Spec};
use super::SweepError;
use crate::error::InputError;
use std::path::{Path, PathBuf};

/// A sweep output folder as read from disk.
pub struct Folder {
    pub dir: PathBuf,
    pub spec: Spec,
    pub meta: SweepMeta,
    pub records: Vec<PointRecord>,
}

fn input(msg: String) -> SweepError {
    SweepError::Input(InputError::new(msg))
}

/// Whether `dir` looks like a sweep output folder (has the spec copy and `sweep.json`).
pub fn is_output_folder(dir: &Path) -> bool {
    dir.is_dir() && dir.join(SPEC_FILE).is_file() && dir.join(META_FILE).is_file()
}

/// Reads an output folder; a clear input error (exit 2) when it is not one.
pub fn read_folder(dir: &Path) -> Result<Folder, SweepError> {
    let not_folder = |what: &str, e: &dyn std::fmt::Display| {
        input(format!(
            "{}: not a sweep output folder (cannot read {what}: {e})",
            dir.display()
        ))
    };
    let text =
        std::fs::read_to_string(dir.join(SPEC_FILE)).map_err(|e| not_folder(SPEC_FILE, &e))?;
    let meta_text =
        std::fs::read_to_string(dir.join(META_FILE)).map_err(|e| not_folder(META_FILE, &e))?;
    let meta: SweepMeta = serde_json::from_str(&meta_text)
        .map_err(|e| input(format!("{}: {e}", dir.join(META_FILE).display())))?;
    // The spec copy is only parsed: its trace paths are not looked at.
    let spec = parse_spec(&text, Path::new(&meta.spec_file))?;
    let points =
        read_points(dir).map_err(|e| input(format!("{}: {e}", dir.join(POINTS_FILE).display())))?;
    Ok(Folder {
        dir: dir.to_path_buf(),
        spec,
        meta,
        records: points.records,
    })
}

/// What `leaderboard.json` says about the run that wrote it: interrupted, and the points a
/// partial merge lacks (nothing when unreadable).
fn run_flags(dir: &Path) -> (bool, u64) {
    #[derive(serde::Deserialize)]
    struct Flags {
        #[serde(default)]
        interrupted: bool,
        #[serde(default)]
        missing_points: Vec<u64>,
    }
    std::fs::File::open(dir.join(JSON_FILE))
        .ok()
        .and_then(|f| serde_json::from_reader::<_, Flags>(std::io::BufReader::new(f)).ok())
        .map_or((false, 0), |f| {
            (f.interrupted, f.missing_points.len() as u64)
        })
}

/// `dynosim report DIR`: rewrites `DIR/report.html` from the folder's points; returns its path.
pub fn rewrite_report(dir: &Path) -> Result<PathBuf, SweepError> {
    let f = read_folder(dir)?;
    let rows = rank(&f.records, &f.spec.rank_by, &f.spec.pareto);
    let (interrupted, missing) = run_flags(dir);
    let page = html::Page {
        spec: &f.spec,
        points_total: f.meta.points_total,
        shard: f.meta.shard.map(|[k, n]| (k, n)),
        interrupted,
        missing,
    };
    let path = dir.join(html::HTML_FILE);
    write_atomic(
        &path,
        html::html(&rows, &f.spec.param_columns(), &page).as_bytes(),
    )
    .map_err(|e| SweepError::Io(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}
