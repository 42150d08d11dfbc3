//! The `cost:` section of a spec: GPU-hour prices (`gpu_hour_usd`), one number for every GPU or
//! a price per AIC system with an optional `default`. Part of the spec parser; it uses the
//! parser's helpers and nothing else. Whether every point's GPUs have a price is checked once
//! the points are resolved (`expand`).

use super::*;
use crate::report::cost::{GpuPrices, DEFAULT_PRICE_KEY};

const COST_KEYS: &[&str] = &["gpu_hour_usd"];

const EXPECTED: &str = "expected {gpu_hour_usd: <USD per GPU-hour>} or {gpu_hour_usd: \
    {<aic_system>: <USD>, .., default: <USD>}}";

/// A price: a finite number >= 0 (USD per GPU-hour).
fn price(ctx: &Ctx, v: &Yaml, path: &str) -> Result<f64, InputError> {
    let j = yaml_to_json(ctx, v, path)?;
    expect_float(
        ctx,
        &j,
        path,
        "a finite number >= 0 (USD per GPU-hour)",
        |x| x.is_finite() && x >= 0.0,
    )
}

/// `cost: {gpu_hour_usd: 2.5}` or `cost: {gpu_hour_usd: {h200_sxm: 3.5, default: 2.0}}`.
pub(super) fn parse_cost(ctx: &Ctx, v: &Yaml) -> Result<GpuPrices, InputError> {
    let m = mapping(ctx, v, "cost")?.ok_or_else(|| ctx.err("cost", EXPECTED))?;
    let mut prices = None;
    for (k, pv) in m {
        let k = key_str(ctx, k, "cost")?;
        let path = join("cost", k);
        if k != "gpu_hour_usd" {
            return Err(ctx.err(&path, format!("unknown key{}", suggestion(k, COST_KEYS))));
        }
        prices = Some(match pv {
            Yaml::Mapping(systems) => {
                let mut out = GpuPrices::default();
                for (sk, sv) in systems {
                    let name = key_str(ctx, sk, &path)?;
                    let spath = join(&path, name);
                    if name.trim().is_empty() {
                        return Err(ctx.err(&path, "an AIC system name must not be empty"));
                    }
                    let usd = price(ctx, sv, &spath)?;
                    if name == DEFAULT_PRICE_KEY {
                        out.default = Some(usd);
                    } else {
                        out.systems.insert(name.to_string(), usd);
                    }
                }
                if out.default.is_none() && out.systems.is_empty() {
                    return Err(ctx.err(&path, EXPECTED));
                }
                out
            }
            other => GpuPrices::uniform(price(ctx, other, &path)?),
        });
    }
    prices.ok_or_else(|| ctx.err("cost", EXPECTED))
}
