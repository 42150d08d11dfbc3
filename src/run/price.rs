//! `--gpu-hour-usd`: GPU-hour prices for `dynosim run` (a bare number for every GPU, or
//! `SYSTEM=USD` per AIC system, repeatable), checked against the deployment's pools before
//! anything runs, and the cost keys set on the report. The arithmetic is
//! `crate::report::cost`'s.

use super::err;
use crate::config::Topology;
use crate::error::InputError;
use crate::report::cost::{self, GpuPrices};
use crate::report::Report;

const FLAG: &str = "--gpu-hour-usd";

fn price(text: &str, given: &str) -> Result<f64, InputError> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(err(format!(
            "{FLAG} {given}: expected a price in USD per GPU-hour (a finite number >= 0), or \
             SYSTEM=USD for the GPUs of one aic_system"
        ))),
    }
}

/// The prices the flag's values give (`None` when the flag is not given).
pub(super) fn parse_prices(values: &[String]) -> Result<Option<GpuPrices>, InputError> {
    if values.is_empty() {
        return Ok(None);
    }
    let mut prices = GpuPrices::default();
    for v in values {
        match v.split_once('=') {
            None => {
                let usd = price(v, v)?;
                if prices.default.replace(usd).is_some() {
                    return Err(err(format!(
                        "{FLAG} {v}: a price for every GPU is already given (one bare number; \
                         SYSTEM=USD for the others)"
                    )));
                }
            }
            Some((system, usd)) => {
                let system = system.trim();
                if system.is_empty() {
                    return Err(err(format!(
                        "{FLAG} {v}: expected SYSTEM=USD with an aic_system name before `=`"
                    )));
                }
                let usd = price(usd, v)?;
                if prices.systems.insert(system.to_string(), usd).is_some() {
                    return Err(err(format!("{FLAG} {v}: {system} already has a price")));
                }
            }
        }
    }
    Ok(Some(prices))
}

/// Refuses a deployment one of whose pools runs on a GPU without a price.
pub(super) fn check_priced(topology: &Topology, prices: &GpuPrices) -> Result<(), InputError> {
    let pools = cost::pools(topology);
    match cost::unpriced(&pools, prices) {
        None => Ok(()),
        Some(pool) => {
            let add = match &pool.system {
                Some(s) => format!("add {FLAG} {s}=<USD>, or a bare {FLAG} <USD> for every GPU"),
                None => format!("add a bare {FLAG} <USD> for every GPU"),
            };
            Err(err(format!(
                "{FLAG}: no price for {}; {add}",
                cost::describe_unpriced(pool)
            )))
        }
    }
}

/// Sets the cost keys on a `dynosim run` report (at its output and request throughput).
pub(super) fn price_report(report: &mut Report, topology: &Topology, prices: &GpuPrices) {
    let Some(usd_per_hour) = cost::usd_per_hour(&cost::pools(topology), prices) else {
        return;
    };
    let figures = cost::figures(
        usd_per_hour,
        report.get("output_throughput_tok_s"),
        report.get("request_throughput_rps"),
    );
    for (k, v) in figures {
        report.set_float(k, v);
    }
}
