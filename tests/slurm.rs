//! `examples/slurm_sweep.sh` against a real single-node Slurm cluster that this test starts under
//! a temporary folder (its own munged key and socket, slurmctld and slurmd in the foreground, as
//! root, no cgroups) and stops afterwards by pid. Skipped, with a message on stderr, when Slurm
//! and munge are not installed or the test is not run as root; `.ci/run` installs them.
//!
//! One test, in order: a 3-shard array plus merge equals a one-machine run byte for byte; a
//! cancelled shard makes the merge exit 3 with the missing ids; running the script again runs
//! only the missing points and completes the same bytes; scancel of a running shard reaches
//! dynosim as SIGTERM, which writes its leaderboards (marked interrupted) within its grace
//! period, and the merge reports what is missing. Paths contain a `'` and a space.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const DAEMONS: [&str; 5] = ["munged", "slurmctld", "slurmd", "sbatch", "scontrol"];

fn skip(why: &str) {
    // Written past the test harness's capture, so the skip is visible in CI logs.
    let _ = writeln!(
        std::io::stderr().lock(),
        "\nSKIPPED slurm_array_merge_cancel_and_rerun: {why}"
    );
}

/// Where a program is: on the PATH, or in the sbin folders a non-root PATH may lack.
fn which(cmd: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
}

fn daemon(cmd: &str) -> Command {
    Command::new(which(cmd).unwrap_or_else(|| PathBuf::from(cmd)))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The daemons this test started; stopped by pid when dropped.
struct Cluster {
    root: tempfile::TempDir,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // slurmd before slurmctld before munged: each may still talk to the next.
        for (_, child) in self.daemons.iter_mut().rev() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Cluster {
    fn log(&self, file: &str) -> String {
        std::fs::read_to_string(self.root.path().join(file)).unwrap_or_default()
    }

    fn cmd(&self, program: &str) -> Command {
        let mut c = daemon(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    fn start() -> Cluster {
        let root = tempfile::tempdir().unwrap();
        let t = root.path().to_path_buf();
        // munged wants its socket's folder searchable by all, its key private.
        std::fs::set_permissions(&t, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let mut key = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut key))
            .unwrap();
        std::fs::write(t.join("munge.key"), &key).unwrap();
        std::fs::set_permissions(
            t.join("munge.key"),
            std::os::unix::fs::PermissionsExt::from_mode(0o400),
        )
        .unwrap();
        for d in ["state", "spool"] {
            std::fs::create_dir(t.join(d)).unwrap();
        }
        let node = daemon("slurmd").arg("-C").output().unwrap();
        let node_line = String::from_utf8_lossy(&node.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        let node_name = node_line
            .split_whitespace()
            .next()
            .and_then(|w| w.strip_prefix("NodeName="))
            .expect("slurmd -C prints NodeName=")
            .to_string();
        let conf = t.join("slurm.conf");
        let p = |f: &str| t.join(f).display().to_string();
        std::fs::write(
            &conf,
            format!(
                "ClusterName=dynosimtest\n\
                 SlurmctldHost={node_name}(127.0.0.1)\n\
                 SlurmUser=root\n\
                 SlurmdUser=root\n\
                 SlurmctldPort={}\n\
                 SlurmdPort={}\n\
                 AuthType=auth/munge\n\
                 CredType=cred/munge\n\
                 AuthInfo=socket={}\n\
                 StateSaveLocation={}\n\
                 SlurmdSpoolDir={}\n\
                 SlurmctldPidFile={}\n\
                 SlurmdPidFile={}\n\
                 SlurmctldLogFile={}\n\
                 SlurmdLogFile={}\n\
                 ProctrackType=proctrack/linuxproc\n\
                 TaskPlugin=task/none\n\
                 SelectType=select/cons_tres\n\
                 SelectTypeParameters=CR_CPU\n\
                 EnforcePartLimits=ALL\n\
                 MailProg=/bin/true\n\
                 ReturnToService=2\n\
                 JobCompType=jobcomp/none\n\
                 {node_line} NodeAddr=127.0.0.1\n\
                 PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
                free_port(),
                free_port(),
                p("munge.sock"),
                p("state"),
                p("spool"),
                p("slurmctld.pid"),
                p("slurmd.pid"),
                p("slurmctld.log"),
                p("slurmd.log"),
            ),
        )
        .unwrap();
        let mut cluster = Cluster {
            root,
            conf,
            daemons: Vec::new(),
        };
        let out = |name: &str| std::fs::File::create(t.join(name)).unwrap();
        let munged = daemon("munged")
            .arg("--foreground")
            .arg(format!("--socket={}", p("munge.sock")))
            .arg(format!("--key-file={}", p("munge.key")))
            .arg(format!("--pid-file={}", p("munged.pid")))
            .arg(format!("--log-file={}", p("munged.log")))
            .arg(format!("--seed-file={}", p("munged.seed")))
            .stdout(out("munged.out"))
            .stderr(out("munged.err"))
            .spawn()
            .unwrap();
        cluster.daemons.push(("munged", munged));
        wait_until(Duration::from_secs(10), || t.join("munge.sock").exists())
            .unwrap_or_else(|| panic!("munged did not start: {}", cluster.log("munged.err")));
        let ctld = cluster
            .cmd("slurmctld")
            .args(["-D", "-i"])
            .stdout(out("slurmctld.out"))
            .stderr(out("slurmctld.err"))
            .spawn()
            .unwrap();
        cluster.daemons.push(("slurmctld", ctld));
        let slurmd = cluster
            .cmd("slurmd")
            .args(["-D", "-N", &node_name])
            .stdout(out("slurmd.out"))
            .stderr(out("slurmd.err"))
            .spawn()
            .unwrap();
        cluster.daemons.push(("slurmd", slurmd));
        let idle = wait_until(Duration::from_secs(30), || {
            cluster
                .cmd("sinfo")
                .args(["--noheader", "--format=%t"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        if idle.is_none() {
            panic!(
                "the node did not become idle:\n{}\n{}",
                cluster.log("slurmctld.err"),
                cluster.log("slurmd.err")
            );
        }
        cluster
    }
}

fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> Option<()> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ok() {
            return Some(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}

const SPEC: &str = r#"# 12 quick points; the output folder comes from here, with a ' and a space in it
name: slurmtest
workload: {input_tokens: 300, output_tokens: 20, request_count: 40, request_rate: 20}
grid:
  num_workers: [1, 2, 3]
  router_mode: [round_robin, kv_router]
  seed: [1, 2]
constraints: {max_gpus: 2}
output: "res/it's out"
"#;

/// Points of a few seconds each, to cancel while they run.
const SLOW_SPEC: &str = r#"
name: slow
workload: {input_tokens: 2000, output_tokens: 1000, request_count: 60000, request_rate: 50}
engine: {block_size: 64}
grid:
  num_workers: [1, 2, 3, 4]
output: res/slow
"#;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/slurm_sweep.sh")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn slurm_array_merge_cancel_and_rerun() {
    let missing: Vec<&str> = DAEMONS
        .iter()
        .copied()
        .filter(|c| which(c).is_none())
        .collect();
    if !missing.is_empty() {
        return skip(&format!(
            "Slurm is not installed (no {}); apt-get install --no-install-recommends slurmctld \
             slurmd slurm-client munge",
            missing.join(", ")
        ));
    }
    if !is_root() {
        return skip("the test cluster runs its daemons as root (SlurmUser=root)");
    }
    let started = Instant::now();
    let cluster = Cluster::start();
    let work = cluster.root.path().join("it's here");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("grid.yaml"), SPEC).unwrap();
    let dynosim = env!("CARGO_BIN_EXE_dynosim");
    let out = work.join("res/it's out");
    let logs = work.join("res/it's out-logs");

    // The one-machine run.
    let whole = Command::new(dynosim)
        .current_dir(&work)
        .args(["sweep", "grid.yaml", "-o", "whole", "--quiet"])
        .output()
        .unwrap();
    assert!(whole.status.success(), "{}", text(&whole));
    let whole_csv = read(&work.join("whole/leaderboard.csv"));

    let run_script_with = |args: &[&str], extra_env: &[(&str, &str)]| {
        let mut c = cluster.cmd("bash");
        c.current_dir(&work)
            .arg(script())
            .args(args)
            .env("DYNOSIM", dynosim)
            .env("WAIT_POLL", "1")
            .env_remove("OUT")
            .env_remove("CPUS");
        for (k, v) in extra_env {
            c.env(k, v);
        }
        c
    };
    let run_script =
        |extra_env: &[(&str, &str)]| run_script_with(&["--wait", "grid.yaml", "3"], extra_env);

    // 1. Three shards and the merge equal the one-machine run.
    let o = run_script(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(read(&out.join("leaderboard.csv")), whole_csv);
    assert!(!out.join("MISSING").exists());
    // CPUS defaulted to what the node has.
    let cpus = cluster
        .cmd("sinfo")
        .args(["--noheader", "--format=%c"])
        .output()
        .unwrap();
    let cpus = String::from_utf8_lossy(&cpus.stdout).trim().to_string();
    assert!(
        read(&logs.join("shard.sh")).contains(&format!("-j {cpus} ")),
        "{}",
        read(&logs.join("shard.sh"))
    );
    // More CPUs than any node has fails at submission.
    let o = run_script(&[("CPUS", "100000")]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("largest node has"), "{}", text(&o));

    // 2. A fresh folder whose shard 1 is cancelled before it runs: the merge exits 3.
    for d in ["res/it's out", "res/it's out-shards", "res/it's out-logs"] {
        std::fs::remove_dir_all(work.join(d)).unwrap();
    }
    let held = run_script(&[("SBATCH_ARGS", "--hold")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut jobs: Vec<String> = Vec::new();
    wait_until(Duration::from_secs(20), || {
        let o = cluster
            .cmd("squeue")
            .args(["--noheader", "--array", "--format=%i"])
            .output()
            .unwrap();
        jobs = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .collect();
        jobs.len() == 4
    })
    .unwrap_or_else(|| panic!("the held jobs did not appear: {jobs:?}"));
    let shard1 = jobs
        .iter()
        .find(|j| j.ends_with("_1"))
        .unwrap_or_else(|| panic!("{jobs:?}"))
        .clone();
    let array = shard1.trim_end_matches("_1").to_string();
    let merge = jobs
        .iter()
        .find(|j| !j.contains('_'))
        .unwrap_or_else(|| panic!("{jobs:?}"))
        .clone();
    let ok = |o: Output| assert!(o.status.success(), "{}", text(&o));
    ok(cluster.cmd("scancel").arg(&shard1).output().unwrap());
    ok(cluster
        .cmd("scontrol")
        .args(["release", &array, &merge])
        .output()
        .unwrap());
    let o = held.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let want_missing: String = (0..12u64)
        .filter(|id| id % 3 == 1)
        .map(|id| format!("{id}\n"))
        .collect();
    assert_eq!(read(&out.join("MISSING")), want_missing);
    let json: serde_json::Value =
        serde_json::from_str(&read(&out.join("leaderboard.json"))).unwrap();
    assert_eq!(json["partial"], true);
    assert_eq!(json["missing_points"], serde_json::json!([1, 4, 7, 10]));
    let merge_log = read(&logs.join("merge.log"));
    assert!(merge_log.contains("PARTIAL"), "{merge_log}");
    assert!(!work.join("res/it's out-shards/1").exists());

    // 3. Running the script again completes it: shards 0 and 2 reuse every point, shard 1 runs.
    let o = run_script(&[]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(read(&out.join("leaderboard.csv")), whole_csv);
    assert!(!out.join("MISSING").exists());
    for k in [0, 2] {
        let log = read(&logs.join(format!("shard-{k}.log")));
        let simulated: usize = read(&work.join(format!("res/it's out-shards/{k}/points.jsonl")))
            .lines()
            .filter(|l| l.contains("\"status\":\"ok\""))
            .count();
        assert!(
            log.contains(&format!("({simulated} from the earlier run)")),
            "shard {k} ran points again:\n{log}"
        );
    }
    let log1 = read(&logs.join("shard-1.log"));
    assert!(!log1.contains("from the earlier run"), "{log1}");

    // 4. scancel of a running shard: Slurm's SIGTERM stops it like Ctrl-C; with a 1 s grace
    // period the point still running is dropped, the leaderboards are written and marked
    // interrupted, and the merge reports the missing points.
    std::fs::write(work.join("slow.yaml"), SLOW_SPEC).unwrap();
    let o = run_script_with(&["slow.yaml", "1"], &[("STOP_GRACE", "1")])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let slow_logs = work.join("res/slow-logs");
    // sweep.json is written just before the first points start; each takes seconds.
    wait_until(Duration::from_secs(60), || {
        work.join("res/slow-shards/0/sweep.json").exists()
    })
    .expect("the slow shard started");
    std::thread::sleep(Duration::from_millis(300));
    let array = cluster
        .cmd("squeue")
        .args(["--noheader", "--format=%F", "--name=dynosim-slow"])
        .output()
        .unwrap();
    let array = String::from_utf8_lossy(&array.stdout).trim().to_string();
    ok(cluster.cmd("scancel").arg(&array).output().unwrap());
    wait_until(Duration::from_secs(60), || {
        cluster
            .cmd("squeue")
            .args(["--noheader"])
            .output()
            .is_ok_and(|o| o.stdout.is_empty())
    })
    .expect("the queue drained");
    let log = read(&slow_logs.join("shard-0.log"));
    assert!(log.contains("terminated (SIGTERM)"), "{log}");
    assert!(log.contains("grace period"), "{log}");
    let json: serde_json::Value =
        serde_json::from_str(&read(&work.join("res/slow-shards/0/leaderboard.json"))).unwrap();
    assert_eq!(json["interrupted"], true);
    let merge_log = read(&slow_logs.join("merge.log"));
    assert!(merge_log.contains("PARTIAL"), "{merge_log}");
    let missing = read(&work.join("res/slow/MISSING"));
    let finished = read(&work.join("res/slow-shards/0/points.jsonl"))
        .lines()
        .count();
    assert_eq!(missing.lines().count(), 4 - finished, "{missing}");

    let _ = writeln!(
        std::io::stderr().lock(),
        "\nslurm_array_merge_cancel_and_rerun: {:.1} s with the cluster's start",
        started.elapsed().as_secs_f64()
    );
}
