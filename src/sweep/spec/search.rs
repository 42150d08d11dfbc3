//! The `search:` section of a spec: parsed (`parse_search`) and checked against the rest of the
//! spec (`check_search`). Part of the spec parser; it uses the parser's helpers and nothing else.

use super::*;

/// `search: {capacity: {knob, low, high, precision}}`.
pub(super) fn parse_search(ctx: &Ctx, v: &Yaml) -> Result<CapacitySearch, InputError> {
    let m = mapping(ctx, v, "search")?.ok_or_else(|| {
        ctx.err(
            "search",
            "expected {capacity: {knob: .., low: .., high: ..}}",
        )
    })?;
    let mut found = None;
    for (k, cv) in m {
        let k = key_str(ctx, k, "search")?;
        if k != "capacity" {
            return Err(ctx.err(
                &join("search", k),
                format!("unknown search{}", suggestion(k, &["capacity"])),
            ));
        }
        found = Some(cv);
    }
    let cv = found.ok_or_else(|| {
        ctx.err(
            "search",
            "expected {capacity: {knob: .., low: .., high: ..}}",
        )
    })?;
    let path = "search.capacity";
    let fields = mapping(ctx, cv, path)?.ok_or_else(|| {
        ctx.err(
            path,
            "expected {knob: .., low: .., high: .., precision: ..}",
        )
    })?;
    let (mut knob, mut low, mut high, mut precision) = (None, None, None, 0.02);
    let positive = |x: f64| x.is_finite() && x > 0.0;
    for (k, fv) in fields {
        let k = key_str(ctx, k, path)?;
        let fpath = join(path, k);
        let j = yaml_to_json(ctx, fv, &fpath)?;
        match k {
            "knob" => {
                let name = expect_choice(ctx, &j, &fpath, CAPACITY_KNOBS)?;
                knob = Some(name.to_string());
            }
            "low" => {
                low = Some(expect_float(
                    ctx,
                    &j,
                    &fpath,
                    "a finite number > 0",
                    positive,
                )?)
            }
            "high" => {
                high = Some(expect_float(
                    ctx,
                    &j,
                    &fpath,
                    "a finite number > 0",
                    positive,
                )?)
            }
            "precision" => {
                precision = expect_float(ctx, &j, &fpath, "a number > 0 and < 1 (relative)", |x| {
                    x > 0.0 && x < 1.0
                })?
            }
            _ => {
                return Err(ctx.err(
                    &fpath,
                    format!(
                        "unknown key{}",
                        suggestion(k, &["knob", "low", "high", "precision"])
                    ),
                ))
            }
        }
    }
    let missing = |f: &str| ctx.err(path, format!("`{f}` is required"));
    let knob = knob.ok_or_else(|| missing("knob"))?;
    let low = low.ok_or_else(|| missing("low"))?;
    let high = high.ok_or_else(|| missing("high"))?;
    if low >= high {
        return Err(ctx.err(
            &join(path, "low"),
            format!("low ({low}) must be below high ({high})"),
        ));
    }
    if knob == "workload.replay_concurrency" {
        for (name, x) in [("low", low), ("high", high)] {
            if x.fract() != 0.0 {
                return Err(ctx.err(
                    &join(path, name),
                    "expected a whole number of requests in flight",
                ));
            }
        }
    }
    Ok(CapacitySearch {
        knob,
        low,
        high,
        precision,
    })
}

/// A search needs `require`, a knob of the spec's workload type, and a grid that leaves the
/// knob alone.
pub(super) fn check_search(ctx: &Ctx, spec: &Spec, s: &CapacitySearch) -> Result<(), InputError> {
    if spec.require.is_empty() {
        return Err(ctx.err(
            "search.capacity",
            "a capacity search looks for the most load that meets every `require` bound, but the \
             spec has no `require` (add e.g. require: {p99_ttft_ms: {max: 2000}})",
        ));
    }
    let trace = spec.workload.get("trace").is_some_and(|v| !v.is_null())
        || spec
            .axes
            .iter()
            .flat_map(|a| a.params())
            .any(|p| p.path == "workload.trace");
    let fits = match s.workload_key() {
        "arrival_speedup_ratio" => trace,
        "request_rate" => !trace,
        _ => true,
    };
    if !fits {
        let kind = if trace {
            "a trace"
        } else {
            "a synthetic workload"
        };
        let use_instead = if trace {
            "workload.arrival_speedup_ratio or workload.replay_concurrency"
        } else {
            "workload.request_rate or workload.replay_concurrency"
        };
        return Err(ctx.err(
            "search.capacity.knob",
            format!("`{}` does not apply to {kind}; use {use_instead}", s.knob),
        ));
    }
    for a in &spec.axes {
        if let Some(p) = a.params().into_iter().find(|p| overlaps(&p.path, &s.knob)) {
            return Err(ctx.err(
                &format!("grid.{}", a.name),
                format!(
                    "sets `{}`, the knob the capacity search varies; remove it from the grid",
                    p.path
                ),
            ));
        }
    }
    Ok(())
}
