//! `examples/k8s_indexed_job.yaml` cannot run here; this checks that it parses and that the
//! fields that make it behave like the Slurm script agree: shard count everywhere, SIGTERM passed
//! on to dynosim with a grace period below the pod's, a merge that fails at once on exit 3, and
//! shard/merge command lines the real CLI accepts.

use clap::Parser;
use dynosim::cli::{Cli, Command};
use serde::Deserialize;
use serde_yaml::Value;

fn docs() -> Vec<Value> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/k8s_indexed_job.yaml"),
    )
    .unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).expect("valid YAML"))
        .collect()
}

fn job<'a>(docs: &'a [Value], name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == "Job" && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no Job {name}"))
}

fn env<'a>(container: &'a Value, name: &str) -> &'a str {
    container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("no env {name}"))
}

/// The script's first line as argv, with `$VAR`s replaced (quotes dropped, no spaces in values).
fn argv(script: &str, vars: &[(&str, &str)]) -> Vec<String> {
    let mut line = script.lines().next().unwrap().trim().to_string();
    for (k, v) in vars {
        line = line.replace(&format!("${k}"), v);
    }
    line.trim_end_matches('&')
        .split_whitespace()
        .map(|w| w.trim_matches('"').to_string())
        .filter(|w| w != "exec")
        .collect()
}

fn rule_codes(job: &Value, container: &str) -> Vec<i64> {
    job["spec"]["podFailurePolicy"]["rules"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "FailJob" && r["onExitCodes"]["containerName"] == container)
        .flat_map(|r| r["onExitCodes"]["values"].as_sequence().unwrap().clone())
        .map(|v| v.as_i64().unwrap())
        .collect()
}

#[test]
fn kubernetes_example_matches_the_slurm_behaviour() {
    let docs = docs();
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[0]["kind"], "PersistentVolumeClaim");
    let claim = docs[0]["metadata"]["name"].as_str().unwrap();

    let sweep = job(&docs, "dynosim-sweep");
    let spec = &sweep["spec"];
    let pod = &spec["template"]["spec"];
    let shard = &pod["containers"][0];
    let shards: i64 = env(shard, "SHARDS").parse().unwrap();
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"].as_i64(), Some(shards));
    assert_eq!(spec["parallelism"].as_i64(), Some(shards));
    assert!(spec["backoffLimitPerIndex"].as_i64().unwrap() >= 1);
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(rule_codes(sweep, "shard"), vec![2]);
    // SIGTERM: sh forwards it, dynosim's grace ends before the pod's.
    let stop_grace: f64 = env(shard, "STOP_GRACE").parse().unwrap();
    assert!(stop_grace + 5.0 <= pod["terminationGracePeriodSeconds"].as_f64().unwrap());
    let script = shard["args"][0].as_str().unwrap();
    assert!(script.contains("trap 'kill -TERM \"$child\""), "{script}");
    assert!(script.contains("[ \"$code\" -le 1 ]"), "{script}");
    let args = argv(
        script,
        &[
            ("SPEC", env(shard, "SPEC")),
            ("JOB_COMPLETION_INDEX", "3"),
            ("SHARDS", &shards.to_string()),
            ("STOP_GRACE", env(shard, "STOP_GRACE")),
        ],
    );
    match Cli::try_parse_from(&args).unwrap().command {
        Command::Sweep(s) => {
            assert_eq!(s.shard, Some((3, shards as u32)));
            assert!(s.resume);
            assert_eq!(s.stop_grace, stop_grace);
            assert_eq!(
                s.output_dir.unwrap().to_str(),
                Some("/results/shards/3"),
                "each index has its own folder"
            );
        }
        other => panic!("{other:?}"),
    }

    let merge = job(&docs, "dynosim-merge");
    let mpod = &merge["spec"]["template"]["spec"];
    assert_eq!(mpod["restartPolicy"], "Never");
    let codes = rule_codes(merge, "merge");
    assert!(
        codes.contains(&3) && codes.contains(&2),
        "partial merge fails the Job"
    );
    let wait = &mpod["initContainers"][0];
    assert_eq!(env(wait, "SHARDS").parse::<i64>().unwrap(), shards);
    let merge_script = mpod["containers"][0]["args"][0].as_str().unwrap();
    let args = argv(merge_script, &[]);
    match Cli::try_parse_from(&args).unwrap().command {
        Command::Merge(m) => {
            assert_eq!(m.output_dir.to_str(), Some("/results/merged"));
            assert!(!m.allow_partial);
        }
        other => panic!("{other:?}"),
    }
    for d in [pod, mpod] {
        assert_eq!(d["volumes"][0]["persistentVolumeClaim"]["claimName"], claim);
    }
}
