//! The `dynosim` binary: parse the command line, dispatch, map errors to exit codes
//! (2 = bad input, including clap's own errors; 1 = failure while simulating or writing).

use clap::Parser;
use dynosim::cli::{Cli, Command};
use dynosim::error::InputError;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(*args),
        Command::Sweep(_) | Command::Merge(_) => {
            Err(anyhow::anyhow!("this subcommand is not implemented yet"))
        }
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

fn run(args: dynosim::cli::RunArgs) -> anyhow::Result<()> {
    let plan = dynosim::run::plan(&args.with_env_defaults())?;
    dynosim::run::execute(&plan)
}
