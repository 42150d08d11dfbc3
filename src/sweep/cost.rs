//! A sweep's `cost`: every point's GPUs must have a price (checked when the grid is resolved,
//! before anything runs), and a simulated point's report gets the cost columns
//! (`usd_per_hour`, `usd_per_million_output_tokens`, `usd_per_million_requests`) at the rates it
//! is ranked on (per the window for a capped run). The arithmetic is `crate::report::cost`'s.

use super::record::WINDOW_SUFFIX;
use super::resolve::ResolvedPoint;
use super::spec::Spec;
use crate::config::SimConfig;
use crate::error::InputError;
use crate::report::cost::{self, GpuPrices, COST_KEYS, DEFAULT_PRICE_KEY};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Refuses a point (to be simulated) one of whose pools runs on a GPU without a price.
pub(crate) fn check_priced(spec: &Spec, p: &ResolvedPoint) -> Result<(), InputError> {
    let Some(prices) = &spec.cost else {
        return Ok(());
    };
    let pools = cost::pools(&p.config.topology);
    match cost::unpriced(&pools, prices) {
        None => Ok(()),
        Some(pool) => {
            let add = match &pool.system {
                Some(s) => format!("add `{s}: <USD>` or `{DEFAULT_PRICE_KEY}: <USD>`"),
                None => format!("add `{DEFAULT_PRICE_KEY}: <USD>`"),
            };
            Err(InputError::new(format!(
                "{}: cost.gpu_hour_usd: no price for {} of point {}; {add}",
                spec.file.display(),
                cost::describe_unpriced(pool),
                p.id
            )))
        }
    }
}

/// The AIC systems a point's pools run on (for [`unused_prices`]).
pub(crate) fn systems(p: &ResolvedPoint) -> impl Iterator<Item = String> {
    cost::pools(&p.config.topology)
        .into_iter()
        .filter_map(|pool| pool.system)
}

/// Warnings for system prices no simulated point uses (a misspelt system name would otherwise
/// go unnoticed behind a `default`).
pub(crate) fn unused_prices(prices: &GpuPrices, used: &BTreeSet<String>) -> Vec<String> {
    prices
        .systems
        .keys()
        .filter(|s| !used.contains(*s))
        .map(|s| {
            format!(
                "cost.gpu_hour_usd.{s}: no point of the grid runs on aic_system \"{s}\" (is the \
                 name spelt as in aic_system?)"
            )
        })
        .collect()
}

/// Sets the cost columns of a point's report from the spec's prices (removing earlier ones, so a
/// result reused under new prices is priced anew); nothing without prices.
pub(crate) fn price_report(report: &mut Map<String, Value>, config: &SimConfig, spec: &Spec) {
    for k in COST_KEYS {
        report.remove(k);
    }
    let Some(usd_per_hour) = spec
        .cost
        .as_ref()
        .and_then(|prices| cost::usd_per_hour(&cost::pools(&config.topology), prices))
    else {
        return;
    };
    // The rate the leaderboard ranks on: per the window when the run was capped.
    let rate = |key: &str| {
        report
            .get(&format!("{key}{WINDOW_SUFFIX}"))
            .or_else(|| report.get(key))
            .and_then(Value::as_f64)
    };
    let figures = cost::figures(
        usd_per_hour,
        rate("output_throughput_tok_s"),
        rate("request_throughput_rps"),
    );
    for (k, v) in figures {
        report.insert(k.to_string(), Value::from(v));
    }
}
