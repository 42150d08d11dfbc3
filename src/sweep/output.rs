//! The output folder stage: where a sweep writes (`output_dir`, checked before anything runs),
//! the folder prepared before the first point (earlier points archived, spec copy, `sweep.json`,
//! the settled points), and the leaderboards written at the end (`leaderboard.csv`/`.json`/`.md`,
//! `report.html`, the console table and summary). Planners and `merge` call it; it runs nothing.

use super::archive;
use super::leaderboard::{self, Meta};
use super::record::{
    record_line, write_atomic, write_atomic_with, PointRecord, PointsWriter, SweepMeta, CSV_FILE,
    DYNOSIM_VERSION, JSON_FILE, META_FILE, POINTS_FILE, SPEC_FILE,
};
use super::spec::Spec;
use super::{columns, console, html, markdown};
use super::{SweepError, SweepOptions, SweepOutcome};
use crate::error::InputError;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// What the leaderboards of one run are written from: the folder, the spec, the grid's size and
/// the shard (as in `sweep.json`), and whether the console stays quiet.
#[derive(Clone, Copy)]
pub(crate) struct RunContext<'a> {
    pub dir: &'a Path,
    pub spec: &'a Spec,
    /// Points of the whole grid (not only the shard's).
    pub points_total: u64,
    pub shard: Option<(u32, u32)>,
    /// `--quiet`: no table, no summary.
    pub quiet: bool,
}

/// Where the results go: `-o`, else the spec's `output`, else `results/<name>`; a shard without
/// `-o` gets its own sibling folder.
pub(crate) fn output_dir(spec: &Spec, opts: &SweepOptions) -> PathBuf {
    if let Some(o) = &opts.output {
        return o.clone();
    }
    let base = spec
        .output
        .clone()
        .unwrap_or_else(|| Path::new("results").join(&spec.name));
    match opts.shard {
        Some((k, n)) => {
            let name = base
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| spec.name.clone());
            base.with_file_name(format!("{name}-shard-{k}-of-{n}"))
        }
        None => base,
    }
}

/// Refuses a non-empty output folder unless resuming; refuses a file in its place or on its
/// path (found before anything is loaded or run; nothing is created here).
pub(crate) fn check_output_dir(dir: &Path, resume: bool) -> Result<(), SweepError> {
    if dir.exists() && !dir.is_dir() {
        return Err(SweepError::Input(InputError::new(format!(
            "output folder {} is a file",
            dir.display()
        ))));
    }
    let mut ancestor = dir.parent();
    while let Some(a) = ancestor.filter(|a| !a.as_os_str().is_empty()) {
        match std::fs::metadata(a) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(SweepError::Input(InputError::new(format!(
                    "cannot write to output folder {}: {} is a file, not a folder",
                    dir.display(),
                    a.display()
                ))))
            }
            Err(_) => ancestor = a.parent(),
        }
    }
    if let Err((probed, e)) = crate::report::json::probe_writable(dir) {
        return Err(SweepError::Input(InputError::new(format!(
            "cannot write to output folder {}: cannot create files in {}: {e}",
            dir.display(),
            probed.display()
        ))));
    }
    if !resume {
        if let Ok(mut entries) = std::fs::read_dir(dir) {
            if entries.next().is_some() {
                return Err(SweepError::Input(InputError::new(format!(
                    "output folder {} is not empty: continue it with --resume, or choose another \
                     folder with -o",
                    dir.display()
                ))));
            }
        }
    }
    Ok(())
}

pub(crate) fn unwritable(dir: &Path, e: std::io::Error) -> SweepError {
    SweepError::Input(InputError::new(format!(
        "cannot write to output folder {}: {e}",
        dir.display()
    )))
}

/// The output folder before anything runs: earlier finished points this run does not reuse
/// (archived first, so that a kill at any moment loses none), spec copy, meta, and the points
/// settled so far (sorted by id); returns the writer that appends the rest.
pub(crate) fn prepare_folder(
    run: &RunContext,
    previous: &archive::Previous,
    settled: &mut [PointRecord],
) -> Result<PointsWriter, SweepError> {
    let RunContext {
        dir,
        spec,
        points_total: total,
        shard,
        ..
    } = *run;
    std::fs::create_dir_all(dir).map_err(|e| unwritable(dir, e))?;
    keep_earlier_points(dir, spec, previous, settled)?;
    write_atomic(&dir.join(SPEC_FILE), spec.text.as_bytes()).map_err(|e| unwritable(dir, e))?;
    let meta = SweepMeta {
        name: spec.name.clone(),
        spec_file: spec.file.display().to_string(),
        spec_sha256: spec.sha256.clone(),
        dynosim_version: DYNOSIM_VERSION.to_string(),
        points_total: total,
        shard: shard.map(|(k, n)| [k, n]),
    };
    let meta_bytes = serde_json::to_vec_pretty(&meta).unwrap_or_default();
    write_atomic(&dir.join(META_FILE), &meta_bytes).map_err(|e| unwritable(dir, e))?;
    settled.sort_by_key(|r| r.point);
    let settled_bytes: Vec<u8> = settled.iter().flat_map(record_line).collect();
    write_atomic(&dir.join(POINTS_FILE), &settled_bytes).map_err(|e| unwritable(dir, e))?;
    PointsWriter::open(&dir.join(POINTS_FILE)).map_err(|e| unwritable(dir, e))
}

/// Before `points.jsonl` is rewritten with this run's points: archives the earlier finished
/// points this run does not reuse, and says so when the folder held another spec's results.
fn keep_earlier_points(
    dir: &Path,
    spec: &Spec,
    previous: &archive::Previous,
    settled: &[PointRecord],
) -> Result<(), SweepError> {
    let kept: HashSet<&str> = settled
        .iter()
        .filter(|r| r.status.ran())
        .map(|r| r.hash.as_str())
        .collect();
    let archived =
        archive::archive_unkept(dir, &previous.records, &kept).map_err(|e| unwritable(dir, e))?;
    let archive_path = dir.join(archive::ARCHIVE_FILE);
    match &previous.meta {
        Some(m) if m.spec_sha256 != spec.sha256 => {
            let old_spec = archive::archive_spec(dir, &m.spec_sha256)
                .map_err(|e| unwritable(dir, e))?
                .map(|f| format!(" (its spec is kept as {f})"))
                .unwrap_or_default();
            eprintln!(
                "dynosim: {} holds the results of a different spec (\"{}\" from {}, SHA-256 \
                 {}; now \"{}\", {}): {} of its finished points are in the new grid and reused, \
                 {archived} more are kept in {}{old_spec}; the leaderboards cover the new grid",
                dir.display(),
                m.name,
                m.spec_file,
                &m.spec_sha256[..m.spec_sha256.len().min(12)],
                spec.name,
                &spec.sha256[..12],
                kept.len(),
                archive_path.display()
            );
        }
        _ if archived > 0 => eprintln!(
            "dynosim: {archived} finished points of {} are not part of this run (another shard \
             or an edited spec); they are kept in {}",
            dir.display(),
            archive_path.display()
        ),
        _ => {}
    }
    Ok(())
}

/// Counts the outcome, writes the leaderboards of `records` (sorted by point) and prints the
/// summary.
pub(crate) fn finish_sweep(
    run: &RunContext,
    outcome: &mut SweepOutcome,
    records: Vec<PointRecord>,
    reused: usize,
    interrupted: bool,
) -> Result<(), SweepError> {
    outcome.interrupted = interrupted;
    outcome.not_run = outcome.points - records.len() as u64;
    outcome.reused = reused as u64;
    outcome.count_statuses(&records);
    outcome.output = Some(run.dir.to_path_buf());
    write_leaderboards(run, &records, interrupted, &[])?;
    for w in super::served::console_warnings(&records) {
        eprintln!("dynosim: warning: {w}");
    }
    if !run.quiet {
        println!("{}", outcome.summary());
    }
    Ok(())
}

/// Writes `leaderboard.csv`, `leaderboard.json`, `leaderboard.md` and `report.html` (atomically)
/// and prints the top-10 table.
pub(crate) fn write_leaderboards(
    run: &RunContext,
    records: &[PointRecord],
    interrupted: bool,
    missing: &[u64],
) -> Result<(), SweepError> {
    let RunContext {
        dir,
        spec,
        points_total: total,
        shard,
        quiet,
    } = *run;
    let rows = leaderboard::rank_grouped(records, &spec.rank_by, &spec.pareto, &spec.group_by);
    let columns = spec.param_columns();
    let io = |e: std::io::Error| {
        SweepError::Io(format!(
            "cannot write the leaderboards in {}: {e}",
            dir.display()
        ))
    };
    let key = columns::spec_key_metrics(spec);
    write_atomic(
        &dir.join(CSV_FILE),
        &leaderboard::csv_bytes(&rows, &columns, &key),
    )
    .map_err(io)?;
    let meta = Meta {
        name: &spec.name,
        spec_text: &spec.text,
        spec_sha256: &spec.sha256,
        points_total: total,
        shard,
        rank_by: &spec.rank_by,
        pareto: &spec.pareto,
        interrupted,
        missing,
    };
    write_atomic_with(&dir.join(JSON_FILE), |w| {
        leaderboard::write_json(&rows, &meta, w)
    })
    .map_err(io)?;
    let page = html::Page {
        spec,
        points_total: total,
        shard,
        interrupted,
        missing: missing.len() as u64,
    };
    write_atomic(
        &dir.join(html::HTML_FILE),
        html::html(&rows, &columns, &page).as_bytes(),
    )
    .map_err(io)?;
    write_atomic(
        &dir.join(markdown::MD_FILE),
        markdown::markdown(&rows, &columns, &key, markdown::MD_ROWS).as_bytes(),
    )
    .map_err(io)?;
    if !quiet {
        let required = columns::spec_required_metrics(spec);
        let width = console::terminal_width();
        print!(
            "{}",
            console::top_table(&rows, &key, &required, &columns, 10, width)
        );
    }
    Ok(())
}
