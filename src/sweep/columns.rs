//! Which leaderboard columns come first and how numbers are written for people: the key metrics
//! of a spec (`rank_by`, then `require`, then `pareto`) ahead of every other metric, and short
//! numbers for screens (the CSV's 10 significant digits live in `values`). Shared by the CSV, the console table, `leaderboard.md` and `report.html`; it formats and
//! orders, it never ranks.

use super::spec::{Bound, Objective};
use super::values::float_sig;
use serde_json::Value;

/// The metrics a spec asks about, in the order `rank_by`, `require`, `pareto`, each once;
/// `gpus` is left out (it has its own column).
pub fn key_metrics(rank_by: &[Objective], require: &[Bound], pareto: &[Objective]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let names = rank_by
        .iter()
        .map(|o| &o.metric)
        .chain(require.iter().map(|b| &b.metric))
        .chain(pareto.iter().map(|o| &o.metric));
    for m in names {
        if m != "gpus" && !out.contains(m) {
            out.push(m.clone());
        }
    }
    out
}

/// The key metrics of a spec: a capacity search's answer first (the capacity, its bracket and
/// the per-GPU throughput there), then [`key_metrics`].
pub fn spec_key_metrics(spec: &super::spec::Spec) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if spec.search.is_some() {
        out.extend(
            [
                "capacity",
                "capacity_bracket_high",
                "request_throughput_rps_per_gpu",
            ]
            .map(String::from),
        );
    }
    for m in key_metrics(&spec.rank_by, &spec.require, &spec.pareto) {
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// The key metrics the console always shows: a capacity search's answer, then the metrics of
/// `rank_by` and `require` (not `pareto`'s).
pub fn spec_required_metrics(spec: &super::spec::Spec) -> Vec<String> {
    let search = spec.search.as_ref().map(|_| {
        [
            "capacity",
            "capacity_bracket_high",
            "request_throughput_rps_per_gpu",
        ]
    });
    let mut out: Vec<String> = search.into_iter().flatten().map(String::from).collect();
    for m in key_metrics(&spec.rank_by, &spec.require, &[]) {
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// `all` (sorted metric names) with the `key` metrics first, in their order, each followed by
/// its rate per the window (`<key>_window`, what a capped run is ranked on) when there is one;
/// each name once. Key metrics no row has are left out.
pub fn ordered_metrics(key: &[String], all: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in key {
        let window = format!("{k}{}", super::record::WINDOW_SUFFIX);
        for m in [k, &window] {
            if all.contains(m) && !out.contains(m) {
                out.push(m.clone());
            }
        }
    }
    out.extend(
        all.iter()
            .filter(|m| !out.contains(m))
            .cloned()
            .collect::<Vec<_>>(),
    );
    out
}

/// A number for a table read on screen: integers whole, other values with two decimals (four
/// significant digits below 1).
pub fn short_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x}")
    } else if x.abs() < 1.0 {
        float_sig(x, 4)
    } else {
        format!("{x:.2}")
    }
}

/// A report value for a table read on screen (see [`short_number`]); text as it is.
pub fn short_value(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::Number(n)) => n.as_f64().map(short_number).unwrap_or_default(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// `text` cut to `width` characters, with `…` as the last one when cut.
pub fn shorten(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut s: String = text.chars().take(width - 1).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::values::csv_number;
    use serde_json::json;

    fn obj(maximize: bool, m: &str) -> Objective {
        Objective {
            maximize,
            metric: m.into(),
        }
    }

    #[test]
    fn key_metrics_in_spec_order_once() {
        let require = [Bound {
            metric: "p99_ttft_ms".into(),
            min: None,
            max: Some(1.0),
        }];
        let k = key_metrics(
            &[
                obj(true, "goodput_request_throughput_rps"),
                obj(false, "gpus"),
            ],
            &require,
            &[obj(true, "p99_ttft_ms"), obj(true, "a")],
        );
        assert_eq!(k, ["goodput_request_throughput_rps", "p99_ttft_ms", "a"]);
        let all: Vec<String> = ["a", "b", "c", "p99_ttft_ms"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(ordered_metrics(&k, &all), ["p99_ttft_ms", "a", "b", "c"]);
    }

    #[test]
    fn ten_significant_digits() {
        let t = |v: Value| match v {
            Value::Number(n) => csv_number(&n),
            _ => unreachable!(),
        };
        assert_eq!(t(json!(1162.7352491641798)), "1162.735249");
        assert_eq!(t(json!(0.1 + 0.2)), "0.3");
        assert_eq!(t(json!(2348334622.3617268)), "2348334622");
        assert_eq!(t(json!(12345678901234.5)), "12345678900000");
        assert_eq!(t(json!(1.5e-7)), "0.00000015");
        assert_eq!(t(json!(0.08169232467879517)), "0.08169232468");
        assert_eq!(t(json!(123456789012345_i64)), "123456789012345");
        assert_eq!(t(json!(2.0)), "2");
        assert_eq!(t(json!(-3.25)), "-3.25");
        for x in [1.0 / 3.0, 98765.43210987654, 1e-12 / 7.0, 6.02e23] {
            let s = float_sig(x, 10);
            let back: f64 = s.parse().unwrap();
            assert!(((back - x) / x).abs() < 1e-9, "{x} -> {s}");
            let digits: String = s
                .chars()
                .filter(|c| c.is_ascii_digit())
                .collect::<String>()
                .trim_start_matches('0')
                .trim_end_matches('0')
                .to_string();
            assert!(digits.len() <= 10, "{x} -> {s}");
        }
    }

    #[test]
    fn screen_numbers_and_shortening() {
        assert_eq!(short_number(350.03888), "350.04");
        assert_eq!(short_number(12.0), "12");
        assert_eq!(short_number(0.0816923), "0.08169");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
