//! `dynosim merge`: the union of shard folders (same spec, checked by hash) into one folder with
//! the leaderboards of all their points. Duplicated points must agree (host-dependent report
//! fields aside); the merged `leaderboard.csv` is byte-identical to a single whole run's.

use super::output::{write_leaderboards, RunContext};
use super::record::{
    read_points, record_line, write_atomic, PointRecord, SweepMeta, DYNOSIM_VERSION, META_FILE,
    POINTS_FILE, SPEC_FILE,
};
use super::spec::{parse_spec, sha256_hex};
use super::SweepError;
use crate::error::InputError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The point ids a partial merge lacks, one per line.
pub const MISSING_FILE: &str = "MISSING";

/// Exit code of a merge that lacks points (without `--allow-partial`).
pub const PARTIAL_EXIT_CODE: i32 = 3;

fn input(msg: String) -> SweepError {
    SweepError::Input(InputError::new(msg))
}

struct Shard {
    dir: PathBuf,
    text: String,
    sha: String,
    meta: SweepMeta,
}

fn read_shard(dir: &Path) -> Result<Shard, SweepError> {
    let text = std::fs::read_to_string(dir.join(SPEC_FILE)).map_err(|e| {
        input(format!(
            "{}: not a sweep output folder (cannot read {SPEC_FILE}: {e})",
            dir.display()
        ))
    })?;
    let meta_text = std::fs::read_to_string(dir.join(META_FILE)).map_err(|e| {
        input(format!(
            "{}: not a sweep output folder (cannot read {META_FILE}: {e})",
            dir.display()
        ))
    })?;
    let meta: SweepMeta = serde_json::from_str(&meta_text)
        .map_err(|e| input(format!("{}: {e}", dir.join(META_FILE).display())))?;
    let sha = sha256_hex(text.as_bytes());
    if sha != meta.spec_sha256 {
        return Err(input(format!(
            "{}: {SPEC_FILE} does not match the spec hash in {META_FILE}",
            dir.display()
        )));
    }
    Ok(Shard {
        dir: dir.to_path_buf(),
        text,
        sha,
        meta,
    })
}

/// Whether two records of the same point disagree (wall-time fields aside).
fn conflicts(a: &PointRecord, b: &PointRecord) -> bool {
    a.hash != b.hash
        || a.status != b.status
        || a.reason != b.reason
        || a.stable_report() != b.stable_report()
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Memory the merged records take per byte of `points.jsonl` (JSON values are about nine times
/// their text; measured on a synthetic grid, rounded up).
const MEMORY_PER_POINTS_BYTE: u64 = 10;

/// Refuses a merge whose records cannot be held in memory (they are all ranked together).
pub(crate) fn check_merge_fits(points_bytes: u64, budget: u64) -> Result<(), SweepError> {
    let need = points_bytes.saturating_mul(MEMORY_PER_POINTS_BYTE);
    if need <= budget {
        return Ok(());
    }
    use crate::config::limits::human_bytes;
    Err(input(format!(
        "the shards' {} of {POINTS_FILE} would need about {} of memory to rank together, more \
         than this machine's {}; merge them on a machine with more memory",
        human_bytes(points_bytes),
        human_bytes(need),
        human_bytes(budget)
    )))
}

/// The shards come from one spec, run by one dynosim version (a warning when not this one).
fn check_same_sweep(shards: &[Shard]) -> Result<(), SweepError> {
    let first = &shards[0];
    for s in &shards[1..] {
        if s.sha != first.sha {
            return Err(input(format!(
                "{} and {} come from different specs (SHA-256 {} vs {})",
                first.dir.display(),
                s.dir.display(),
                &first.sha[..12],
                &s.sha[..12]
            )));
        }
        if s.meta.dynosim_version != first.meta.dynosim_version {
            return Err(input(format!(
                "{} and {} were run by different dynosim versions ({} vs {})",
                first.dir.display(),
                s.dir.display(),
                first.meta.dynosim_version,
                s.meta.dynosim_version
            )));
        }
    }
    if first.meta.dynosim_version != DYNOSIM_VERSION {
        eprintln!(
            "dynosim: warning: the shards were run by dynosim {}, this is {DYNOSIM_VERSION}",
            first.meta.dynosim_version
        );
    }
    Ok(())
}

/// `out` is none of the inputs and, when it exists, empty or an earlier merge of the same spec.
fn check_merge_output(shards: &[Shard], out: &Path) -> Result<(), SweepError> {
    let first = &shards[0];
    if let Some(s) = shards.iter().find(|s| same_path(&s.dir, out)) {
        return Err(input(format!(
            "merge output {} is one of the input folders ({}); choose another -o",
            out.display(),
            s.dir.display()
        )));
    }
    // An existing output folder may only be a previous merge of the same spec.
    if out.exists() {
        let is_empty = std::fs::read_dir(out)
            .map(|mut e| e.next().is_none())
            .unwrap_or(false);
        if !is_empty {
            let previous_merge = read_shard(out)
                .map(|s| s.sha == first.sha && s.meta.shard.is_none())
                .unwrap_or(false);
            if !previous_merge {
                return Err(input(format!(
                    "merge output folder {} is not empty (only an earlier merge of the same spec \
                     may be overwritten)",
                    out.display()
                )));
            }
        }
    }
    Ok(())
}

/// Every shard's records, one per point id (a point in two shards must agree), in id order.
fn union_of(shards: &[Shard], total: u64) -> Result<Vec<PointRecord>, SweepError> {
    let mut union: BTreeMap<u64, (PointRecord, usize)> = BTreeMap::new();
    for (i, s) in shards.iter().enumerate() {
        let f = read_points(&s.dir)
            .map_err(|e| input(format!("{}: {e}", s.dir.join(POINTS_FILE).display())))?;
        if f.truncated_tail {
            eprintln!(
                "dynosim: warning: {}: ignoring an incomplete last line (the run was killed; finish it with --resume)",
                s.dir.join(POINTS_FILE).display()
            );
        }
        if !f.bad_lines.is_empty() {
            eprintln!(
                "dynosim: warning: {}: ignoring unreadable lines {:?}",
                s.dir.join(POINTS_FILE).display(),
                f.bad_lines
            );
        }
        for r in f.records {
            if r.point >= total {
                return Err(input(format!(
                    "{}: point {} is outside the {total}-point grid",
                    s.dir.join(POINTS_FILE).display(),
                    r.point
                )));
            }
            match union.get(&r.point) {
                Some((prev, j)) if conflicts(prev, &r) => {
                    return Err(input(format!(
                        "point {} differs between {} and {} (status {} vs {}, hash {} vs {})",
                        r.point,
                        shards[*j].dir.display(),
                        s.dir.display(),
                        prev.status.as_str(),
                        r.status.as_str(),
                        &prev.hash[..prev.hash.len().min(12)],
                        &r.hash[..r.hash.len().min(12)]
                    )));
                }
                Some(_) => {}
                None => {
                    union.insert(r.point, (r, i));
                }
            }
        }
    }
    Ok(union.into_values().map(|(r, _)| r).collect())
}

/// Writes the merged spec, sweep.json, points, probes and the MISSING mark; returns the mark's
/// path.
fn write_merged(
    shards: &[Shard],
    out: &Path,
    records: &[PointRecord],
    missing: &[u64],
) -> Result<PathBuf, SweepError> {
    let first = &shards[0];
    let io = |e: std::io::Error| SweepError::Io(format!("cannot write to {}: {e}", out.display()));
    std::fs::create_dir_all(out).map_err(io)?;
    write_atomic(&out.join(SPEC_FILE), first.text.as_bytes()).map_err(io)?;
    let meta = SweepMeta {
        shard: None,
        ..first.meta.clone()
    };
    write_atomic(
        &out.join(META_FILE),
        &serde_json::to_vec_pretty(&meta).unwrap_or_default(),
    )
    .map_err(io)?;
    let lines: Vec<u8> = records.iter().flat_map(record_line).collect();
    write_atomic(&out.join(POINTS_FILE), &lines).map_err(io)?;
    super::capacity::merge_probes(shards.iter().map(|s| s.dir.as_path()), out).map_err(io)?;
    // MISSING first: a partial merge is never seen without its mark, even if killed here.
    let missing_path = out.join(MISSING_FILE);
    if missing.is_empty() {
        match std::fs::remove_file(&missing_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
            _ => {}
        }
    } else {
        let text: String = missing.iter().map(|m| format!("{m}\n")).collect();
        write_atomic(&missing_path, text.as_bytes()).map_err(io)?;
    }
    Ok(missing_path)
}

/// Merges shard folders into `out`; returns the merged records' count and the missing point ids.
pub(crate) fn merge_dirs(
    dirs: &[PathBuf],
    out: &Path,
    quiet: bool,
) -> Result<(u64, Vec<u64>), SweepError> {
    if dirs.is_empty() {
        return Err(input("merge needs at least one sweep output folder".into()));
    }
    let shards: Vec<Shard> = dirs
        .iter()
        .map(|d| read_shard(d))
        .collect::<Result<_, _>>()?;
    let first = &shards[0];
    check_same_sweep(&shards)?;
    check_merge_output(&shards, out)?;
    let points_bytes: u64 = shards
        .iter()
        .map(|s| {
            std::fs::metadata(s.dir.join(POINTS_FILE))
                .map(|m| m.len())
                .unwrap_or(0)
        })
        .sum();
    check_merge_fits(points_bytes, crate::config::limits::memory_budget())?;
    // The spec copy is only parsed: its trace paths are not looked at.
    let spec = parse_spec(&first.text, Path::new(&first.meta.spec_file))?;
    let total = first.meta.points_total;

    let records = union_of(&shards, total)?;
    let missing: Vec<u64> = {
        let mut have = records.iter().map(|r| r.point).peekable();
        let mut m = Vec::new();
        for id in 0..total {
            if have.peek() == Some(&id) {
                have.next();
            } else {
                m.push(id);
            }
        }
        m
    };

    let missing_path = write_merged(&shards, out, &records, &missing)?;
    let run = RunContext {
        dir: out,
        spec: &spec,
        points_total: total,
        shard: None,
        quiet,
    };
    write_leaderboards(&run, &records, false, &missing)?;
    if !missing.is_empty() {
        let shown: Vec<String> = missing.iter().take(20).map(|m| m.to_string()).collect();
        eprintln!(
            "dynosim: PARTIAL: {} of {total} points are missing from the merged folders (ids in \
             {}): {}{}",
            missing.len(),
            missing_path.display(),
            shown.join(", "),
            if missing.len() > 20 { ", ..." } else { "" }
        );
    }
    if !quiet {
        println!(
            "merged {} of {total} points from {} folders into {}{}",
            records.len(),
            shards.len(),
            out.display(),
            if missing.is_empty() { "" } else { " (PARTIAL)" }
        );
    }
    Ok((records.len() as u64, missing))
}
