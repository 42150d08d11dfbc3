//! The `dynosim` binary: parse the command line, dispatch, map errors to exit codes
//! (2 = bad input, including clap's own errors; 1 = failure while simulating or writing).

use clap::{CommandFactory, Parser};
use dynosim::cli::{Cli, Command};
use dynosim::error::InputError;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(*args),
        Command::Sweep(args) => return sweep(args),
        Command::Merge(args) => return merge(args),
        Command::Report(args) => report(args),
        Command::Compare(args) => compare(args),
        Command::Deploy(args) => return deploy(args),
        Command::Completions(args) => {
            let mut cmd = Cli::command();
            clap_complete::generate(args.shell, &mut cmd, "dynosim", &mut std::io::stdout());
            Ok(())
        }
        Command::Man(args) => man(args),
        Command::Aic(dynosim::cli::AicCommand::List) => aic_list(),
        Command::Validate(args) => validate(*args),
        Command::Calibrate(args) => dynosim::calibrate::command::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let code = if e.downcast_ref::<InputError>().is_some() {
                2
            } else {
                1
            };
            // One line, no backtrace: the outermost message plus its causes.
            let msg = e
                .chain()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(": ");
            eprintln!("error: {msg}");
            ExitCode::from(code)
        }
    }
}

fn aic_list() -> anyhow::Result<()> {
    use std::io::Write;
    let catalog = dynosim::timing::aic::catalog()?;
    match write!(std::io::stdout().lock(), "{catalog}") {
        // `dynosim aic list | head`: a reader that stops early is not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn validate(args: dynosim::cli::ValidateArgs) -> anyhow::Result<()> {
    dynosim::validate::run_command(&args).map(|_| ())
}

fn run(args: dynosim::cli::RunArgs) -> anyhow::Result<()> {
    // Ctrl-C or SIGTERM: remove the reports' temporary files and exit 130 or 143.
    dynosim::signals::watch(dynosim::signals::OnSignal::Exit);
    let plan = dynosim::run::plan(&args.with_env_defaults())?;
    dynosim::run::execute(&plan)
}

fn sweep(args: dynosim::cli::SweepArgs) -> ExitCode {
    let opts = dynosim::sweep::SweepOptions {
        spec: args.spec,
        output: args.output_dir,
        jobs: args.jobs,
        resume: args.resume,
        shard: args.shard,
        dry_run: args.dry_run,
        print_output_dir: args.print_output_dir,
        max_points: args.max_points,
        quiet: args.quiet,
        early_stop: !args.no_early_stop,
        stop_grace: Some(std::time::Duration::from_secs_f64(args.stop_grace)),
        progress_every: std::time::Duration::from_secs_f64(args.progress_every.max(0.1)),
        calibration: args.calibration,
    };
    match dynosim::sweep::run_sweep(&opts) {
        Ok(outcome) => ExitCode::from(outcome.exit_code() as u8),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn merge(args: dynosim::cli::MergeArgs) -> ExitCode {
    match dynosim::sweep::merge(&args.dirs, &args.output_dir, args.allow_partial) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn report(args: dynosim::cli::ReportArgs) -> anyhow::Result<()> {
    match dynosim::sweep::folder::rewrite_report(&args.dir) {
        Ok(path) => {
            println!("{}", path.display());
            Ok(())
        }
        Err(dynosim::sweep::SweepError::Input(e)) => Err(e.into()),
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

fn compare(args: dynosim::cli::CompareArgs) -> anyhow::Result<()> {
    print!("{}", dynosim::compare::compare(&args.a, &args.b)?);
    Ok(())
}

fn deploy(args: dynosim::cli::DeployArgs) -> ExitCode {
    let opt = dynosim::deploy::DeployOptions {
        source: args.source,
        point: args.point,
        top: args.top,
        output: args.output_dir,
        model: args.model,
        image: args.image,
        name: args.name,
        hf_secret: args.hf_secret,
        warmup_requests: args.warmup_requests,
        run_flags: args.run_flags,
    };
    match dynosim::deploy::deploy(&opt) {
        Ok((dirs, warnings)) => {
            for w in warnings {
                eprintln!("dynosim: warning: {w}");
            }
            for d in dirs {
                println!("{}", d.display());
            }
            ExitCode::SUCCESS
        }
        Err(dynosim::deploy::DeployError::Input(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn man(args: dynosim::cli::ManArgs) -> anyhow::Result<()> {
    let cmd = Cli::command();
    match args.output_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            clap_mangen::generate_to(cmd, &dir)?;
            println!("man pages written to {}", dir.display());
        }
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?,
    }
    Ok(())
}
