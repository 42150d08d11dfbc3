//! `--deployment-from OUT`: the deployment and the measurement of a `dynosim deploy` folder.
//! `OUT/deployment.json` holds the exact `dynosim run` flags of the deployed point (`run_args`)
//! and where its benchmark writes AIPerf's export (`benchmark_export.summary`); the flags become
//! the deployment flags of the AIPerf export, which is added to the measured inputs.

use crate::cli::{Cli, Command, ValidateArgs};
use crate::error::InputError;
use clap::Parser;
use serde_json::Value;

/// `args` with the deployment flags and the export of `args.deployment_from` (unchanged when
/// it is not given).
pub fn apply(args: &ValidateArgs) -> Result<ValidateArgs, InputError> {
    let Some(dir) = &args.deployment_from else {
        return Ok(args.clone());
    };
    let file = dir.join("deployment.json");
    let text = std::fs::read_to_string(&file).map_err(|e| {
        InputError::new(format!(
            "--deployment-from {}: cannot read {} ({e}); give a folder written by `dynosim deploy`",
            dir.display(),
            file.display()
        ))
    })?;
    let dep: Value = serde_json::from_str(&text).map_err(|e| {
        InputError::new(format!(
            "{}:{}: not valid JSON ({e})",
            file.display(),
            e.line()
        ))
    })?;
    let run_args: Vec<String> = dep["run_args"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .ok_or_else(|| {
            InputError::new(format!(
                "{}: run_args: missing (a list of `dynosim run` flags)",
                file.display()
            ))
        })?;
    let mut argv = vec!["dynosim".to_string(), "run".to_string()];
    argv.extend(run_args);
    let run = match Cli::try_parse_from(&argv) {
        Ok(Cli {
            command: Command::Run(r),
        }) => *r,
        Ok(_) => {
            return Err(InputError::new(format!(
                "{}: run_args: not `dynosim run` flags",
                file.display()
            )))
        }
        Err(e) => {
            let msg = e.to_string();
            let line = msg
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ")
                .to_string();
            return Err(InputError::new(format!(
                "{}: run_args: {line}",
                file.display()
            )));
        }
    };
    let summary = dep["benchmark_export"]["summary"]
        .as_str()
        .unwrap_or("aiperf/profile_export_aiperf.json");
    let export = dir.join(summary);
    if !export.is_file() {
        return Err(InputError::new(format!(
            "--deployment-from {}: no AIPerf export at {} yet (run {} first)",
            dir.display(),
            export.display(),
            dir.join("benchmark.sh").display()
        )));
    }
    let mut out = args.clone();
    out.measured.push(export);
    out.deployment.extra_engine_args = run.extra_engine_args;
    out.deployment.prefill_engine_args = run.prefill_engine_args;
    out.deployment.decode_engine_args = run.decode_engine_args;
    out.deployment.num_workers = run.num_workers;
    out.deployment.num_prefill_workers = run.num_prefill_workers;
    out.deployment.num_decode_workers = run.num_decode_workers;
    out.deployment.router_mode = run.router_mode;
    out.deployment.router_config = run.router_config;
    Ok(out)
}
