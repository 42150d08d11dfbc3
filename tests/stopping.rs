//! How the binary stops and what it keeps, as a cluster would see it: SIGTERM during a sweep
//! (like the first Ctrl-C, exit 143, bounded by --stop-grace) and during `run` (nothing left
//! behind), plain progress lines when stderr is not a terminal, partial merges (exit 3), and a
//! resume into another spec's folder.

use assert_cmd::Command;
use predicates::prelude::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

fn dynosim() -> Command {
    Command::cargo_bin("dynosim").expect("the dynosim binary")
}

fn bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("dynosim")
}

fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.as_ref().display()))
}

fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Points of a second or more each, so that a signal arrives while one runs.
const SLOW_SPEC: &str = r#"
workload: {input_tokens: 2000, output_tokens: 1000, request_count: 40000, request_rate: 50}
engine: {block_size: 64}
grid:
  num_workers: [1, 2, 3, 4]
"#;

/// Starts `dynosim sweep` with piped stderr; returns the child and a channel of its stderr lines.
fn start_sweep(
    spec: &Path,
    out: &Path,
    extra: &[&str],
) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = std::process::Command::new(bin())
        .args(["sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(["-j", "1", "--progress-every", "0.1"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// Waits for the first plain progress line (the points have started), returning the lines read.
fn wait_for_progress(rx: &mpsc::Receiver<String>) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("a progress line");
        let is_progress = line.starts_with("progress: ");
        lines.push(line);
        if is_progress {
            return lines;
        }
    }
}

#[test]
fn sigterm_stops_a_sweep_like_ctrl_c_and_resume_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("slow.yaml");
    std::fs::write(&spec, SLOW_SPEC).unwrap();
    let out = dir.path().join("out");
    let (mut child, rx) = start_sweep(&spec, &out, &[]);
    let mut lines = wait_for_progress(&rx);
    signal(child.id(), "-TERM");
    let status = child.wait().unwrap();
    lines.extend(rx.try_iter());
    let stderr = lines.join("\n");
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("terminated (SIGTERM)"), "{stderr}");
    // Plain lines: no escape codes, counts and rate.
    assert!(!stderr.contains('\x1b'));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("progress: 0/4 points (0%)")),
        "{stderr}"
    );
    // The running point finished and is in the leaderboards, marked interrupted.
    let json: serde_json::Value =
        serde_json::from_str(&read(out.join("leaderboard.json"))).unwrap();
    assert_eq!(json["interrupted"], true);
    let done = read(out.join("points.jsonl")).lines().count();
    assert!((1..4).contains(&done), "{done} points finished");
    assert_eq!(json["points"], done);
    dynosim()
        .args(["sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(["--resume", "--quiet"])
        .assert()
        .code(0);
    assert_eq!(read(out.join("points.jsonl")).lines().count(), 4);
}

#[test]
fn a_point_still_running_after_the_grace_period_is_left_for_resume() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("slow.yaml");
    std::fs::write(&spec, SLOW_SPEC).unwrap();
    let out = dir.path().join("out");
    let (mut child, rx) = start_sweep(&spec, &out, &["--stop-grace", "0"]);
    let mut lines = wait_for_progress(&rx);
    signal(child.id(), "-TERM");
    let status = child.wait().unwrap();
    lines.extend(rx.try_iter());
    let stderr = lines.join("\n");
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("grace period"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&read(out.join("leaderboard.json"))).unwrap();
    assert_eq!(json["interrupted"], true);
    // Whole lines only: a resume reads every finished point.
    let points = read(out.join("points.jsonl"));
    assert!(points.is_empty() || points.ends_with('\n'));
}

#[test]
fn sigterm_during_run_exits_143_and_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("reports/r.json");
    let child = std::process::Command::new(bin())
        .args([
            "run",
            "--input-tokens",
            "2000",
            "--output-tokens",
            "1000",
            "--request-count",
            "100000",
            "--request-rate",
            "50",
            "--report-json",
            report.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    signal(child.id(), "-TERM");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SIGTERM"));
    let left: Vec<String> = walk(dir.path());
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().map_while(Result::ok) {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path().display().to_string());
        }
    }
    out
}

const QUICK_SPEC: &str = r#"
workload: {input_tokens: 256, output_tokens: 16, request_count: 20, request_rate: 50}
grid:
  num_workers: [1, 2, 3]
  seed: [1, 2]
"#;

#[test]
fn merge_with_missing_points_exits_3_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("grid.yaml");
    std::fs::write(&spec, QUICK_SPEC).unwrap();
    let shard = |k: u32| {
        let out = dir.path().join(format!("s{k}"));
        dynosim()
            .args(["sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .args(["--shard", &format!("{k}/3"), "--quiet"])
            .assert()
            .code(0);
        out.to_str().unwrap().to_string()
    };
    let (s0, s2) = (shard(0), shard(2));
    let merged = dir.path().join("merged");
    let m = merged.to_str().unwrap();
    dynosim()
        .args(["merge", &s0, &s2, "-o", m])
        .assert()
        .code(3)
        .stdout(predicate::str::contains("(PARTIAL)"))
        .stderr(predicate::str::contains(
            "PARTIAL: 2 of 6 points are missing",
        ));
    assert_eq!(read(merged.join("MISSING")), "1\n4\n");
    dynosim()
        .args(["merge", &s0, &s2, "-o", m, "--allow-partial"])
        .assert()
        .code(0);
    assert_eq!(read(merged.join("MISSING")), "1\n4\n");
    let s1 = shard(1);
    dynosim()
        .args(["merge", &s0, &s1, &s2, "-o", m])
        .assert()
        .code(0);
    assert!(!merged.join("MISSING").exists());
}

#[test]
fn resume_into_a_folder_of_another_spec_says_so_and_keeps_its_points() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.yaml");
    let b = dir.path().join("b.yaml");
    std::fs::write(&a, QUICK_SPEC).unwrap();
    std::fs::write(&b, QUICK_SPEC.replace("[1, 2, 3]", "[3, 4]")).unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    dynosim()
        .args(["sweep", a.to_str().unwrap(), "-o", o, "--quiet"])
        .assert()
        .code(0);
    dynosim()
        .args(["sweep", b.to_str().unwrap(), "-o", o, "--resume", "--quiet"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "holds the results of a different spec",
        ))
        .stderr(predicate::str::contains(
            "2 of its finished points are in the new grid and reused, 4 more are kept in",
        ));
    assert_eq!(read(out.join("points-archive.jsonl")).lines().count(), 4);
    assert_eq!(read(out.join("points.jsonl")).lines().count(), 4);
    assert_eq!(read(out.join("leaderboard.csv")).lines().count(), 1 + 4);
}
