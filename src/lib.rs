//! dynosim: a fast, deterministic re-implementation of NVIDIA Dynamo 1.4.2's DynoSim offline
//! replay (`python -m dynamo.replay`), built to simulate thousands of deployment configurations.
//!
//! Data flows one way:
//! `workload` (trace or synthetic, parsed once, shared read-only) + `config` (one deployment)
//! -> `sim::simulate` (engines, router, event loop) -> `report` (statistics, table, JSON)
//! -> `sweep` (grid of points, leaderboards, report.html) -> `compare` (two reports or folders).
//! `timing` (latency models: polynomial, NPZ profile, AIConfigurator) sits below `config`.
//!
//! The names a program needs to simulate or sweep are re-exported at the root (below); the
//! modules stay public for the command layer and the tests, and their internals are
//! `pub(crate)`. `tests/architecture.rs` keeps the floors: a module imports only from below.
//!
//! The binary is Unix-only today (signal handling, and a link flag for the two AIConfigurator
//! estimator crates in `build.rs`); see docs/run.md.

#![forbid(unsafe_code)]

pub mod calibrate;
pub mod cli;
pub mod compare;
pub mod config;
pub mod deploy;
pub(crate) mod engine;
pub mod error;
pub mod output_file;
pub mod report;
pub(crate) mod router;
pub mod run;
pub mod signals;
pub mod sim;
pub mod sweep;
pub mod timing;
pub mod validate;
pub mod workload;

pub use config::SimConfig;
pub use error::{InputError, SimError};
pub use report::Report;
pub use sim::{simulate, SimOutput};
pub use sweep::{merge, run_sweep, SweepError, SweepOptions, SweepOutcome};
pub use workload::formats::mooncake::load_trace;
pub use workload::synthetic::{generate as generate_synthetic, SyntheticSpec};
pub use workload::Workload;
