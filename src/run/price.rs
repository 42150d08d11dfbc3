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

#[cfg(test)]
mod tests {
    use super::*;

    fn prices(values: &[&str]) -> Result<Option<GpuPrices>, String> {
        let v: Vec<String> = values.iter().map(|s| s.to_string()).collect();
        parse_prices(&v).map_err(|e| e.to_string())
    }

    #[test]
    fn a_bare_price_and_system_prices() {
        assert_eq!(prices(&[]), Ok(None));
        assert_eq!(prices(&["2.5"]), Ok(Some(GpuPrices::uniform(2.5))));
        let p = prices(&["h200_sxm=3.5", "h100_sxm=2.25", "1"])
            .unwrap()
            .unwrap();
        assert_eq!(p.price(Some("h200_sxm")), Some(3.5));
        assert_eq!(p.price(Some("h100_sxm")), Some(2.25));
        assert_eq!(p.price(Some("l40s")), Some(1.0));
        assert_eq!(p.price(None), Some(1.0));
    }

    #[test]
    fn bad_values_name_the_flag() {
        let expected = "expected a price in USD per GPU-hour (a finite number >= 0), or \
                        SYSTEM=USD for the GPUs of one aic_system";
        for v in [
            "-1",
            "nan",
            "inf",
            "-inf",
            "abc",
            "",
            "h200_sxm=",
            "h200_sxm=-2",
            "a=b=c",
        ] {
            assert_eq!(
                prices(&[v]).unwrap_err(),
                format!("--gpu-hour-usd {v}: {expected}"),
                "{v}"
            );
        }
        assert_eq!(
            prices(&["=3"]).unwrap_err(),
            "--gpu-hour-usd =3: expected SYSTEM=USD with an aic_system name before `=`"
        );
        assert_eq!(
            prices(&["2", "3"]).unwrap_err(),
            "--gpu-hour-usd 3: a price for every GPU is already given (one bare number; \
             SYSTEM=USD for the others)"
        );
        assert_eq!(
            prices(&["h200_sxm=2", "h200_sxm=3"]).unwrap_err(),
            "--gpu-hour-usd h200_sxm=3: h200_sxm already has a price"
        );
    }

    #[test]
    fn every_pool_needs_a_price() {
        use crate::config::EngineArgs;
        let t = Topology::Aggregated {
            num_workers: 2,
            engine: EngineArgs::default(),
        };
        let only_h200 = prices(&["h200_sxm=3"]).unwrap().unwrap();
        assert_eq!(
            check_priced(&t, &only_h200).unwrap_err().to_string(),
            "--gpu-hour-usd: no price for the aggregated pool's GPU (polynomial or NPZ timing, \
             no aic_system); add a bare --gpu-hour-usd <USD> for every GPU"
        );
        assert!(check_priced(&t, &GpuPrices::uniform(2.0)).is_ok());
        let mut report = Report::default();
        report.set_float("output_throughput_tok_s", 500.0);
        report.set_float("request_throughput_rps", 2.0);
        price_report(&mut report, &t, &GpuPrices::uniform(4.5));
        // 2 GPUs × $4.5 = $9/hour = $0.0025/s; 500 tokens/s: $5 per million tokens.
        assert_eq!(report.get("usd_per_hour"), Some(9.0));
        assert_eq!(report.get("usd_per_million_output_tokens"), Some(5.0));
        assert_eq!(report.get("usd_per_million_requests"), Some(1250.0));
    }
}
