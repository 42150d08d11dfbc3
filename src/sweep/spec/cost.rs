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

#[cfg(test)]
mod tests {
    use super::super::parse_spec;
    use crate::report::cost::GpuPrices;
    use std::path::Path;

    const W: &str =
        "workload: {input_tokens: 100, output_tokens: 10, request_count: 5, request_rate: 1}\n";

    fn parse(extra: &str) -> Result<super::super::Spec, String> {
        parse_spec(&format!("{W}{extra}"), Path::new("sweeps/t.yaml")).map_err(|e| e.to_string())
    }

    fn err(extra: &str) -> String {
        parse(extra).expect_err("expected a spec error")
    }

    #[test]
    fn one_number_or_a_price_per_system() {
        assert_eq!(parse("").unwrap().cost, None);
        assert_eq!(
            parse("cost: {gpu_hour_usd: 2.5}\n").unwrap().cost,
            Some(GpuPrices::uniform(2.5))
        );
        assert_eq!(
            parse("cost: {gpu_hour_usd: 0}\n").unwrap().cost,
            Some(GpuPrices::uniform(0.0))
        );
        let s =
            parse("cost:\n  gpu_hour_usd: {h200_sxm: 3.5, h100_sxm: 2, default: 1.25}\n").unwrap();
        let p = s.cost.unwrap();
        assert_eq!(p.default, Some(1.25));
        assert_eq!(p.price(Some("h200_sxm")), Some(3.5));
        assert_eq!(p.price(Some("h100_sxm")), Some(2.0));
        assert_eq!(p.price(Some("b200_sxm")), Some(1.25));
        assert_eq!(p.price(None), Some(1.25));
        let only = parse("cost: {gpu_hour_usd: {h200_sxm: 3.5}}\n").unwrap();
        assert_eq!(only.cost.unwrap().price(None), None);
    }

    #[test]
    fn cost_metrics_only_with_prices() {
        let s = parse(
            "cost: {gpu_hour_usd: 2}\nrequire: {usd_per_million_requests: {max: 50}}\n\
             rank_by: [min usd_per_million_output_tokens]\npareto: [min usd_per_hour, max output_throughput_tok_s]\n",
        )
        .unwrap();
        assert_eq!(s.require[0].metric, "usd_per_million_requests");
        assert_eq!(s.rank_by[0].metric, "usd_per_million_output_tokens");
        assert!(!s.rank_by[0].maximize);
        assert_eq!(s.pareto[0].metric, "usd_per_hour");
        // The cost keys come after the other top-level keys just as well.
        assert!(parse("rank_by: [min usd_per_hour]\ncost: {gpu_hour_usd: 2}\n").is_ok());
        assert_eq!(
            err("rank_by: [min usd_per_hour]\n"),
            "sweeps/t.yaml: rank_by[0]: `usd_per_hour` exists only with GPU prices (set cost: \
             {gpu_hour_usd: <USD per GPU-hour>})"
        );
        assert_eq!(
            err("require: {usd_per_million_requests: {max: 1}}\n"),
            "sweeps/t.yaml: require.usd_per_million_requests: `usd_per_million_requests` exists \
             only with GPU prices (set cost: {gpu_hour_usd: <USD per GPU-hour>})"
        );
        assert!(
            err("pareto: [min usd_per_million_output_tokens, max gpus]\n").starts_with(
                "sweeps/t.yaml: pareto[0]: `usd_per_million_output_tokens` exists only"
            )
        );
    }

    #[test]
    fn bad_prices_name_the_key_path() {
        let expected = "expected {gpu_hour_usd: <USD per GPU-hour>} or {gpu_hour_usd: \
                        {<aic_system>: <USD>, .., default: <USD>}}";
        for (extra, msg) in [
            (
                "cost: {gpu_hour_usd: -1}",
                "cost.gpu_hour_usd: expected a finite number >= 0 (USD per GPU-hour), found number -1".to_string(),
            ),
            (
                "cost: {gpu_hour_usd: .inf}",
                "cost.gpu_hour_usd: expected a finite number, found inf".to_string(),
            ),
            (
                "cost: {gpu_hour_usd: .nan}",
                "cost.gpu_hour_usd: expected a finite number, found NaN".to_string(),
            ),
            (
                "cost: {gpu_hour_usd: \"2\"}",
                "cost.gpu_hour_usd: expected a finite number >= 0 (USD per GPU-hour), found string \"2\"".to_string(),
            ),
            (
                "cost: {gpu_hour_usd: {h200_sxm: -3.5}}",
                "cost.gpu_hour_usd.h200_sxm: expected a finite number >= 0 (USD per GPU-hour), found number -3.5".to_string(),
            ),
            (
                "cost: {gpu_hour_usd: {default: [1]}}",
                "cost.gpu_hour_usd.default: expected a finite number >= 0 (USD per GPU-hour), found a list".to_string(),
            ),
            (
                "cost: {gpu_hours_usd: 1}",
                "cost.gpu_hours_usd: unknown key; did you mean `gpu_hour_usd`?".to_string(),
            ),
            ("cost: {gpu_hour_usd: {}}", format!("cost.gpu_hour_usd: {expected}")),
            ("cost: {}", format!("cost: {expected}")),
            ("cost:", format!("cost: {expected}")),
            ("cost: 3", "cost: expected a mapping, found number 3".to_string()),
            ("cots: {gpu_hour_usd: 1}", "cots: unknown key; did you mean `cost`?".to_string()),
        ] {
            assert_eq!(err(&format!("{extra}\n")), format!("sweeps/t.yaml: {msg}"), "{extra}");
        }
    }
}
