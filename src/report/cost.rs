//! What a deployment costs at given GPU-hour prices: per hour (the GPUs of each pool, workers ×
//! TP × DP, times the price of the pool's GPU), and per million output tokens and per million
//! requests at a simulated throughput. Shared by `dynosim run --gpu-hour-usd` and a sweep's
//! `cost: {gpu_hour_usd: …}`; nothing is added to a report unless prices are given.
//!
//! A pool's GPU is the AIConfigurator system its timing names (`aic_system`); a pool timed by
//! DynoSim's polynomial or a measured NPZ profile runs on an unnamed GPU, priced by the default.

use crate::config::Topology;
use crate::timing::TimingSource;
use std::collections::BTreeMap;

/// USD per hour of the whole deployment.
pub const USD_PER_HOUR: &str = "usd_per_hour";
/// USD per million output tokens at the simulated output throughput.
pub const USD_PER_MILLION_OUTPUT_TOKENS: &str = "usd_per_million_output_tokens";
/// USD per million completed requests at the simulated request throughput.
pub const USD_PER_MILLION_REQUESTS: &str = "usd_per_million_requests";
/// The keys a priced report gets, in the order they are printed.
pub const COST_KEYS: [&str; 3] = [
    USD_PER_HOUR,
    USD_PER_MILLION_OUTPUT_TOKENS,
    USD_PER_MILLION_REQUESTS,
];

/// The name of the default price where prices are written per GPU type (`default: 2.0`).
pub const DEFAULT_PRICE_KEY: &str = "default";

/// GPU-hour prices in USD: per AIC system name, and a default for every other GPU (the unnamed
/// GPU of polynomial or NPZ timing, and systems without their own price).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuPrices {
    pub default: Option<f64>,
    pub systems: BTreeMap<String, f64>,
}

impl GpuPrices {
    /// One price for every GPU.
    pub fn uniform(usd: f64) -> Self {
        GpuPrices {
            default: Some(usd),
            systems: BTreeMap::new(),
        }
    }

    /// The price of one GPU-hour of `system` (`None`: the unnamed GPU).
    pub fn price(&self, system: Option<&str>) -> Option<f64> {
        system
            .and_then(|s| self.systems.get(s).copied())
            .or(self.default)
    }
}

/// The GPUs of one worker pool and the system they are.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolGpus {
    /// `aggregated`, `prefill` or `decode`.
    pub role: &'static str,
    /// Workers × TP × DP.
    pub gpus: u64,
    /// The AIC system of the pool's timing; `None` for polynomial or NPZ timing.
    pub system: Option<String>,
}

/// The pools of a deployment with their GPUs (the same count as [`Topology::gpus`], split).
pub fn pools(topology: &Topology) -> Vec<PoolGpus> {
    let system = |e: &crate::config::EngineArgs| match e.timing.source() {
        TimingSource::Aic { engine, .. } => Some(engine.system),
        _ => None,
    };
    match topology {
        Topology::Aggregated {
            num_workers,
            engine,
        } => vec![PoolGpus {
            role: "aggregated",
            gpus: *num_workers as u64 * engine.gpus_per_worker() as u64,
            system: system(engine),
        }],
        Topology::Disaggregated {
            num_prefill_workers,
            prefill,
            num_decode_workers,
            decode,
        } => vec![
            PoolGpus {
                role: "prefill",
                gpus: *num_prefill_workers as u64 * prefill.gpus_per_worker() as u64,
                system: system(prefill),
            },
            PoolGpus {
                role: "decode",
                gpus: *num_decode_workers as u64 * decode.gpus_per_worker() as u64,
                system: system(decode),
            },
        ],
    }
}

/// The first pool whose GPU has no price.
pub fn unpriced<'a>(pools: &'a [PoolGpus], prices: &GpuPrices) -> Option<&'a PoolGpus> {
    pools
        .iter()
        .find(|p| prices.price(p.system.as_deref()).is_none())
}

/// USD per hour of the pools: Σ GPUs × price of the pool's GPU; `None` when a pool's GPU has no
/// price (see [`unpriced`]).
pub fn usd_per_hour(pools: &[PoolGpus], prices: &GpuPrices) -> Option<f64> {
    pools.iter().try_fold(0.0, |sum, p| {
        prices
            .price(p.system.as_deref())
            .map(|usd| sum + p.gpus as f64 * usd)
    })
}

/// USD per million units at `per_second` units a second while the deployment costs
/// `usd_per_hour`; `None` when nothing is produced (or the rate is not a finite number).
pub fn usd_per_million(usd_per_hour: f64, per_second: Option<f64>) -> Option<f64> {
    let rate = per_second.filter(|r| r.is_finite() && *r > 0.0)?;
    Some(usd_per_hour / 3600.0 / rate * 1e6)
}

/// The three cost figures at a deployment's price per hour and its simulated output tokens and
/// requests per second, as (key, value) pairs in [`COST_KEYS`] order; a figure whose rate is
/// zero or missing is left out.
pub fn figures(
    usd_per_hour: f64,
    output_tok_s: Option<f64>,
    request_rps: Option<f64>,
) -> Vec<(&'static str, f64)> {
    let mut out = vec![(USD_PER_HOUR, usd_per_hour)];
    if let Some(x) = usd_per_million(usd_per_hour, output_tok_s) {
        out.push((USD_PER_MILLION_OUTPUT_TOKENS, x));
    }
    if let Some(x) = usd_per_million(usd_per_hour, request_rps) {
        out.push((USD_PER_MILLION_REQUESTS, x));
    }
    out
}

/// What a pool without a price is, for messages: `the decode pool's GPU (aic_system
/// "h100_sxm")` or `the aggregated pool's GPU (polynomial or NPZ timing, no aic_system)`.
pub fn describe_unpriced(p: &PoolGpus) -> String {
    match &p.system {
        Some(s) => format!("the {} pool's GPU (aic_system \"{s}\")", p.role),
        None => format!(
            "the {} pool's GPU (polynomial or NPZ timing, no aic_system)",
            p.role
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(role: &'static str, gpus: u64, system: Option<&str>) -> PoolGpus {
        PoolGpus {
            role,
            gpus,
            system: system.map(String::from),
        }
    }

    #[test]
    fn per_hour_is_gpus_times_the_price_of_each_pool() {
        let prices = GpuPrices {
            default: None,
            systems: [
                ("h200_sxm".to_string(), 3.5),
                ("h100_sxm".to_string(), 2.25),
            ]
            .into(),
        };
        // 2 prefill workers × TP 2 on H200, 3 decode workers × TP 4 on H100.
        let pools = [
            pool("prefill", 4, Some("h200_sxm")),
            pool("decode", 12, Some("h100_sxm")),
        ];
        assert_eq!(usd_per_hour(&pools, &prices), Some(4.0 * 3.5 + 12.0 * 2.25));
        assert_eq!(unpriced(&pools, &prices), None);
        // A pool on a system without a price (and no default) has none.
        let other = [pool("aggregated", 8, Some("b200_sxm"))];
        assert_eq!(usd_per_hour(&other, &prices), None);
        assert_eq!(unpriced(&other, &prices), Some(&other[0]));
        assert_eq!(
            describe_unpriced(&other[0]),
            "the aggregated pool's GPU (aic_system \"b200_sxm\")"
        );
        // The default prices the unnamed GPU and systems without their own price.
        let with_default = GpuPrices {
            default: Some(2.0),
            ..prices.clone()
        };
        assert_eq!(usd_per_hour(&other, &with_default), Some(16.0));
        assert_eq!(
            usd_per_hour(&[pool("aggregated", 3, None)], &with_default),
            Some(6.0)
        );
        assert_eq!(
            usd_per_hour(&[pool("aggregated", 3, None)], &GpuPrices::uniform(2.5)),
            Some(7.5)
        );
    }

    #[test]
    fn per_million_at_the_simulated_rates() {
        // $36/hour = $0.01/s; at 1,000 tokens/s a million tokens take 1,000 s: $10.
        let f = figures(36.0, Some(1000.0), Some(2.0));
        assert_eq!(
            f,
            [
                (USD_PER_HOUR, 36.0),
                (USD_PER_MILLION_OUTPUT_TOKENS, 10.0),
                (USD_PER_MILLION_REQUESTS, 5000.0)
            ]
        );
        // Nothing produced: no per-million figure (not infinity).
        assert_eq!(figures(36.0, Some(0.0), None), [(USD_PER_HOUR, 36.0)]);
        assert_eq!(usd_per_million(36.0, Some(f64::NAN)), None);
        // A free deployment costs nothing per token.
        assert_eq!(usd_per_million(0.0, Some(5.0)), Some(0.0));
    }

    #[test]
    fn pools_split_the_topology_gpus() {
        use crate::config::EngineArgs;
        let engine = EngineArgs {
            tp_size: 2,
            dp_size: 2,
            ..EngineArgs::default()
        };
        let t = Topology::Aggregated {
            num_workers: 3,
            engine: engine.clone(),
        };
        assert_eq!(pools(&t), [pool("aggregated", 12, None)]);
        let t = Topology::Disaggregated {
            num_prefill_workers: 2,
            prefill: EngineArgs {
                tp_size: 4,
                ..EngineArgs::default()
            },
            num_decode_workers: 5,
            decode: EngineArgs::default(),
        };
        let p = pools(&t);
        assert_eq!(p, [pool("prefill", 8, None), pool("decode", 5, None)]);
        assert_eq!(p.iter().map(|p| p.gpus).sum::<u64>(), t.gpus());
    }
}
