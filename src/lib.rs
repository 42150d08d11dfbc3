//! dynosim: a fast, deterministic re-implementation of NVIDIA Dynamo 1.4.2's DynoSim offline
//! replay (`python -m dynamo.replay`), built to simulate thousands of deployment configurations.
//!
//! Data flows one way:
//! `workload` (trace or synthetic, parsed once, shared read-only) + `config` (one deployment)
//! -> `sim::simulate` (engines, router, event loop) -> `report` (statistics, table, JSON)
//! -> `sweep` (grid of points, leaderboards, report.html) -> `compare` (two reports or folders).

#![forbid(unsafe_code)]

pub mod cli;
pub mod compare;
pub mod config;
pub mod engine;
pub mod error;
pub mod report;
pub mod router;
pub mod run;
pub mod signals;
pub mod sim;
pub mod sweep;
pub mod timing;
pub mod workload;
