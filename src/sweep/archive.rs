//! What `--resume` keeps: every finished point (status ok or infeasible, with a report) that an
//! output folder ever held survives any later run into that folder. Points the current run
//! reuses stay in `points.jsonl`; the others (another spec's grid, another shard, a point the
//! edited spec now skips, another dynosim version) move to `points-archive.jsonl` beside it
//! before `points.jsonl` is rewritten, and the spec they came from is kept as
//! `spec-archive-<sha256 prefix>.yaml`. The archive is only ever added to, and its points are
//! reused like `points.jsonl`'s when a later grid contains them again.
//!
//! Failed, skipped and invalid records hold no results and are recomputed, not kept.

use super::record::{
    parse_points, record_line, write_atomic, PointRecord, SweepMeta, META_FILE, POINTS_FILE,
    SPEC_FILE,
};
use std::collections::HashSet;
use std::io;
use std::path::Path;

pub const ARCHIVE_FILE: &str = "points-archive.jsonl";

/// The finished records of a folder, from `points.jsonl` and the archive, with what reading
/// them found worth a warning.
#[derive(Debug, Default)]
pub struct Previous {
    /// Finished records of `points.jsonl`, then of the archive.
    pub records: Vec<PointRecord>,
    pub warnings: Vec<String>,
    /// The folder's `sweep.json`, if readable.
    pub meta: Option<SweepMeta>,
}

fn read_text(path: &Path) -> io::Result<Option<String>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads what a folder holds from earlier runs.
pub fn read_previous(dir: &Path) -> io::Result<Previous> {
    let mut out = Previous::default();
    for file in [POINTS_FILE, ARCHIVE_FILE] {
        let path = dir.join(file);
        let Some(text) = read_text(&path)? else {
            continue;
        };
        let f = parse_points(&text);
        if f.truncated_tail {
            out.warnings.push(format!(
                "{}: ignoring an incomplete last line (the run was killed)",
                path.display()
            ));
        }
        if !f.bad_lines.is_empty() {
            out.warnings.push(format!(
                "{}: ignoring unreadable lines {:?}",
                path.display(),
                f.bad_lines
            ));
        }
        out.records
            .extend(f.records.into_iter().filter(|r| r.status.ran()));
    }
    out.meta = read_text(&dir.join(META_FILE))
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok());
    Ok(out)
}

/// Adds to `dir`'s archive the finished records of `previous` whose configuration hash is not in
/// `kept` and not archived yet (atomically: a kill leaves the old archive or the new one).
/// Returns how many were added. Call it before `points.jsonl` is rewritten.
pub fn archive_unkept(
    dir: &Path,
    previous: &[PointRecord],
    kept: &HashSet<&str>,
) -> io::Result<usize> {
    let path = dir.join(ARCHIVE_FILE);
    let existing = read_text(&path)?.unwrap_or_default();
    let mut archived: HashSet<String> = parse_points(&existing)
        .records
        .into_iter()
        .map(|r| r.hash)
        .collect();
    let mut added: Vec<&PointRecord> = Vec::new();
    for r in previous {
        if r.status.ran() && !kept.contains(r.hash.as_str()) && archived.insert(r.hash.clone()) {
            added.push(r);
        }
    }
    if added.is_empty() {
        return Ok(0);
    }
    added.sort_by(|a, b| (a.point, &a.hash).cmp(&(b.point, &b.hash)));
    let mut bytes = existing.into_bytes();
    // A line cut short by a kill during an older append is completed so the next line parses.
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    for r in &added {
        bytes.extend(record_line(r));
    }
    write_atomic(&path, &bytes)?;
    Ok(added.len())
}

/// Keeps the folder's old `spec.yaml` as `spec-archive-<sha256 prefix>.yaml` (once), before the
/// new spec's copy replaces it. Returns its file name.
pub fn archive_spec(dir: &Path, old_sha256: &str) -> io::Result<Option<String>> {
    let Some(text) = read_text(&dir.join(SPEC_FILE))? else {
        return Ok(None);
    };
    let name = format!(
        "spec-archive-{}.yaml",
        &old_sha256[..old_sha256.len().min(12)]
    );
    let path = dir.join(&name);
    if !path.exists() {
        write_atomic(&path, text.as_bytes())?;
    }
    Ok(Some(name))
}

#[cfg(test)]
mod tests {
    use super::super::record::Status;
    use super::*;

    fn rec(point: u64, hash: &str, status: Status) -> PointRecord {
        PointRecord {
            point,
            hash: hash.into(),
            status,
            reason: None,
            parameters: Default::default(),
            gpus: Some(1),
            configuration: None,
            workload: None,
            report: status.ran().then(Default::default),
            stopped_on: None,
            search: None,
        }
    }

    #[test]
    fn archive_only_grows_and_skips_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let prev = vec![
            rec(0, "a", Status::Ok),
            rec(1, "b", Status::Infeasible),
            rec(2, "c", Status::Failed),
            rec(3, "d", Status::Ok),
        ];
        let kept: HashSet<&str> = ["d"].into_iter().collect();
        assert_eq!(archive_unkept(dir.path(), &prev, &kept).unwrap(), 2);
        // Again: nothing new. A half-written line at the end is completed, not glued to.
        assert_eq!(archive_unkept(dir.path(), &prev, &kept).unwrap(), 0);
        let path = dir.path().join(ARCHIVE_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"point\": 9, \"ha");
        std::fs::write(&path, text).unwrap();
        let more = vec![rec(0, "e", Status::Ok)];
        assert_eq!(
            archive_unkept(dir.path(), &more, &HashSet::new()).unwrap(),
            1
        );
        let p = read_previous(dir.path()).unwrap();
        let hashes: Vec<&str> = p.records.iter().map(|r| r.hash.as_str()).collect();
        assert_eq!(hashes, vec!["a", "b", "e"]);
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    }
}
