//! `leaderboard.md`: the top rows as a GitHub-flavoured Markdown table, for a pull request or a
//! wiki page. Same columns as the console table (rank, point, status, reason, parameters, gpus,
//! key metrics), without a width limit.

use super::columns::{short_number, short_value};
use super::leaderboard::Row;
use super::record::{Status, CSV_FILE};
use super::values::value_text;

pub const MD_FILE: &str = "leaderboard.md";

/// Rows in `leaderboard.md`.
pub const MD_ROWS: usize = 20;

/// A table cell: `|` escaped, line breaks flattened.
fn md(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The first `n` rows as a Markdown table, with a line naming the rest.
pub fn markdown(rows: &[Row], params: &[String], key: &[String], n: usize) -> String {
    let mut header: Vec<String> = vec!["rank".into(), "point".into(), "status".into()];
    header.extend(params.iter().cloned());
    header.push("gpus".into());
    // A key "metric" that is a parameter or gpus already has its column.
    let key: Vec<&String> = key
        .iter()
        .filter(|m| *m != "gpus" && !params.contains(m))
        .collect();
    header.extend(key.iter().map(|m| m.to_string()));
    header.push("reason".into());
    let numeric = |h: &str| !matches!(h, "status" | "reason") && !params.iter().any(|p| p == h);
    let mut out = String::new();
    out.push_str(&format!(
        "| {} |\n",
        header.iter().map(|h| md(h)).collect::<Vec<_>>().join(" | ")
    ));
    out.push_str(&format!(
        "|{}|\n",
        header
            .iter()
            .map(|h| if numeric(h) { "---:" } else { "---" })
            .collect::<Vec<_>>()
            .join("|")
    ));
    for row in rows.iter().take(n) {
        let r = row.rec;
        let mut cells = vec![
            row.rank.map(|x| x.to_string()).unwrap_or_default(),
            r.point.to_string(),
            if row.pareto == Some(true) {
                format!("**{}** (front)", r.status.as_str())
            } else {
                r.status.as_str().to_string()
            },
        ];
        cells.extend(
            params
                .iter()
                .map(|c| r.parameters.get(c).map(value_text).unwrap_or_default()),
        );
        cells.push(r.gpus.map(|g| g.to_string()).unwrap_or_default());
        for m in &key {
            cells.push(match r.metric(m) {
                Some(x) => short_number(x),
                None => short_value(r.report.as_ref().and_then(|rep| rep.get(m.as_str()))),
            });
        }
        cells.push(match (r.status, r.reason.as_deref()) {
            (Status::Ok, Some(why)) if !super::served::warns(why) => String::new(),
            (_, why) => why.unwrap_or_default().to_string(),
        });
        out.push_str(&format!(
            "| {} |\n",
            cells.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    if rows.len() > n {
        out.push_str(&format!(
            "\n… {} more rows in `{CSV_FILE}`.\n",
            rows.len() - n
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::leaderboard::rank;
    use crate::sweep::record::PointRecord;
    use crate::sweep::spec::Objective;
    use serde_json::{json, Map};

    #[test]
    fn table_with_reasons_and_rest() {
        let mut records = Vec::new();
        for i in 0..4u64 {
            let mut params = Map::new();
            params.insert("router_mode".into(), json!("kv_router"));
            records.push(PointRecord {
                search: None,
                stopped_on: None,
                point: i,
                hash: format!("h{i}"),
                status: if i == 3 {
                    Status::Infeasible
                } else {
                    Status::Ok
                },
                reason: (i == 3).then(|| "p99_ttft_ms 3000 > max 1000 | x".to_string()),
                parameters: params,
                gpus: Some(2),
                configuration: None,
                workload: None,
                report: json!({"thr": i as f64 + 0.25}).as_object().cloned(),
            });
        }
        let obj = [Objective {
            maximize: true,
            metric: "thr".into(),
        }];
        let rows = rank(&records, &obj, &obj);
        let t = markdown(&rows, &["router_mode".into()], &["thr".into()], 3);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "| rank | point | status | router_mode | gpus | thr | reason |"
        );
        assert_eq!(lines[1], "|---:|---:|---|---|---:|---:|---|");
        assert_eq!(
            lines[2],
            "| 1 | 2 | **ok** (front) | kv_router | 2 | 2.25 |  |"
        );
        assert_eq!(lines.len(), 7, "{t}");
        assert_eq!(lines[6], "… 1 more rows in `leaderboard.csv`.");
        let t = markdown(&rows, &["router_mode".into()], &["thr".into()], 10);
        assert!(t.contains("| p99_ttft_ms 3000 > max 1000 \\| x |"), "{t}");
    }
}
