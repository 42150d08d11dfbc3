//! From point records to leaderboards: feasibility (`require`), ranking (`rank_by`), the Pareto
//! front (`pareto`), `leaderboard.csv`, `leaderboard.json` and the console's top-10 table.
//!
//! Everything here is a pure function of the records and the spec's settings, so a leaderboard
//! never depends on scheduling, on `-j`, or on how the points were split across shards.

use super::columns;
use super::record::{PointRecord, SearchOutcome, Status, DYNOSIM_VERSION};
use super::spec::{Bound, Objective, HOST_DEPENDENT_METRICS};
use super::values::{cell, float_text, value_text};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;

/// One leaderboard row.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    pub rec: &'a PointRecord,
    /// 1-based over `ok`, `infeasible`, `overloaded` then `stalled` points; `None` for points
    /// that did not run.
    pub rank: Option<u64>,
    /// On the Pareto front (`ok` points only); `None` for points that did not run.
    pub pareto: Option<bool>,
    /// With `group_by`: the group the row is ranked in, e.g. `workload.arrival_speedup_ratio=2`.
    pub group: Option<String>,
}

/// `ok` or `infeasible` for a simulated point, with the violated bounds as the reason.
pub fn classify(rec: &PointRecord, require: &[Bound]) -> (Status, Option<String>) {
    let mut violations = Vec::new();
    for b in require {
        match rec.metric(&b.metric) {
            None => violations.push(format!("{} missing from the report", b.metric)),
            Some(v) => {
                if let Some(min) = b.min.filter(|m| v < *m) {
                    violations.push(format!(
                        "{} {} < min {}",
                        b.metric,
                        float_text(v),
                        float_text(min)
                    ));
                }
                if let Some(max) = b.max.filter(|m| v > *m) {
                    violations.push(format!(
                        "{} {} > max {}",
                        b.metric,
                        float_text(v),
                        float_text(max)
                    ));
                }
            }
        }
    }
    if violations.is_empty() {
        (Status::Ok, None)
    } else {
        (Status::Infeasible, Some(violations.join("; ")))
    }
}

/// Orders two records by objectives (missing values last), then by point id.
pub fn compare(a: &PointRecord, b: &PointRecord, objectives: &[Objective]) -> Ordering {
    for o in objectives {
        let ord = match (a.metric(&o.metric), b.metric(&o.metric)) {
            (Some(x), Some(y)) => {
                if o.maximize {
                    y.total_cmp(&x)
                } else {
                    x.total_cmp(&y)
                }
            }
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.point.cmp(&b.point)
}

/// Which of `recs` are not dominated under `objectives` (missing values count as the worst).
pub fn pareto_front(recs: &[&PointRecord], objectives: &[Objective]) -> Vec<bool> {
    if objectives.is_empty() {
        return vec![false; recs.len()];
    }
    // Every objective turned into "higher is better".
    let score = |r: &PointRecord| -> Vec<f64> {
        objectives
            .iter()
            .map(|o| match r.metric(&o.metric) {
                Some(v) if o.maximize => v,
                Some(v) => -v,
                None => f64::NEG_INFINITY,
            })
            .collect()
    };
    let scores: Vec<Vec<f64>> = recs.iter().map(|r| score(r)).collect();
    // In decreasing lexicographic order a point can only be dominated by an earlier one, and
    // then also by an earlier point of the front: compare against the front only.
    let mut order: Vec<usize> = (0..recs.len()).collect();
    order.sort_by(|&i, &j| {
        for (x, y) in scores[i].iter().zip(&scores[j]) {
            match y.total_cmp(x) {
                Ordering::Equal => continue,
                o => return o,
            }
        }
        recs[i].point.cmp(&recs[j].point)
    });
    let dominates = |q: &[f64], p: &[f64]| {
        q.iter().zip(p).all(|(a, b)| a >= b) && q.iter().zip(p).any(|(a, b)| a > b)
    };
    let mut front: Vec<usize> = Vec::new();
    let mut on = vec![false; recs.len()];
    for i in order {
        if !front.iter().any(|&q| dominates(&scores[q], &scores[i])) {
            front.push(i);
            on[i] = true;
        }
    }
    on
}

/// Ranks records: points that meet every bound (`ok`, `above_range`) by `rank_by`, then those
/// that miss one (`infeasible`, `below_range`), then those that did not serve their load
/// (`overloaded`, then `stalled`), each by `rank_by`; then the rest by point id.
pub fn rank<'a>(
    records: &'a [PointRecord],
    rank_by: &[Objective],
    pareto: &[Objective],
) -> Vec<Row<'a>> {
    rank_grouped(records, rank_by, pareto, &[])
}

/// The group label of a record under `group_by` (the parameters' values, in order).
pub fn group_label(rec: &PointRecord, group_by: &[String]) -> String {
    group_by
        .iter()
        .map(|p| {
            let v = rec.parameters.get(p).map(value_text).unwrap_or_default();
            format!("{p}={v}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`rank`] within each group of `group_by` (no groups when empty): groups in order of their
/// lowest point id, ranks and Pareto fronts restarting in each; the points that did not run
/// come last, by point id.
pub fn rank_grouped<'a>(
    records: &'a [PointRecord],
    rank_by: &[Objective],
    pareto: &[Objective],
    group_by: &[String],
) -> Vec<Row<'a>> {
    let grouped = !group_by.is_empty();
    let label = |r: &PointRecord| grouped.then(|| group_label(r, group_by));
    // Groups in order of first appearance by point id.
    let mut by_point: Vec<&PointRecord> = records.iter().collect();
    by_point.sort_by_key(|r| r.point);
    let mut groups: Vec<Option<String>> = Vec::new();
    for r in &by_point {
        let g = label(r);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut rows = Vec::with_capacity(records.len());
    for g in &groups {
        let in_group = |r: &&PointRecord| label(r) == *g;
        let mut n = 0u64;
        for tier in 0..=3u8 {
            let mut ranked: Vec<&PointRecord> = by_point
                .iter()
                .copied()
                .filter(in_group)
                .filter(|r| r.status.tier() == Some(tier))
                .collect();
            ranked.sort_by(|a, b| compare(a, b, rank_by));
            let front = if tier == 0 {
                pareto_front(&ranked, pareto)
            } else {
                vec![false; ranked.len()]
            };
            for (r, on_front) in ranked.into_iter().zip(front) {
                n += 1;
                rows.push(Row {
                    rec: r,
                    rank: Some(n),
                    pareto: Some(on_front),
                    group: g.clone(),
                });
            }
        }
    }
    for r in by_point
        .into_iter()
        .filter(|r| r.status.feasible().is_none())
    {
        rows.push(Row {
            rec: r,
            rank: None,
            pareto: None,
            group: label(r),
        });
    }
    rows
}

/// The metric columns: every report key any row has, sorted, without host-dependent ones.
pub fn metric_columns(rows: &[Row]) -> Vec<String> {
    let mut keys: Vec<String> = rows
        .iter()
        .filter_map(|r| r.rec.report.as_ref())
        .flat_map(|rep| rep.keys().cloned())
        .filter(|k| !HOST_DEPENDENT_METRICS.contains(&k.as_str()))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The columns a capacity search adds before `gpus`.
pub const SEARCH_COLUMNS: [&str; 3] = ["capacity", "capacity_bracket_high", "probes"];

/// The columns an early-stopped point fills (when any row stopped early), before `gpus`: the
/// bound's metric, what was proven of it (ms) and the simulated time of the stop (ms).
pub const STOPPED_COLUMNS: [&str; 3] = ["stopped_metric", "stopped_proven_min_ms", "stopped_at_ms"];

/// `leaderboard.csv`: `rank, point, status, feasible, pareto, reason`, the parameter columns,
/// the search and early-stop columns when present, `gpus`, the `key` metrics (see [`columns::key_metrics`]), then every other metric sorted.
pub fn csv_bytes(rows: &[Row], param_columns: &[String], key: &[String]) -> Vec<u8> {
    let metrics = columns::ordered_metrics(key, &metric_columns(rows));
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let grouped = rows.iter().any(|r| r.group.is_some());
    let searched = rows.iter().any(|r| r.rec.search.is_some());
    let stopped = rows.iter().any(|r| r.rec.stopped_on.is_some());
    let mut header: Vec<String> = ["rank", "point", "status", "feasible", "pareto", "reason"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if grouped {
        header.insert(1, "group".into());
    }
    header.extend(param_columns.iter().cloned());
    if searched {
        header.extend(SEARCH_COLUMNS.iter().map(|s| s.to_string()));
    }
    if stopped {
        header.extend(STOPPED_COLUMNS.iter().map(|s| s.to_string()));
    }
    header.push("gpus".into());
    header.extend(metrics.iter().cloned());
    // Writing to a Vec cannot fail.
    let _ = w.write_record(&header);
    for row in rows {
        let r = row.rec;
        let mut fields: Vec<String> = Vec::with_capacity(header.len());
        fields.push(row.rank.map(|n| n.to_string()).unwrap_or_default());
        if grouped {
            fields.push(row.group.clone().unwrap_or_default());
        }
        fields.push(r.point.to_string());
        fields.push(r.status.as_str().to_string());
        fields.push(
            r.status
                .feasible()
                .map(|f| f.to_string())
                .unwrap_or_default(),
        );
        fields.push(row.pareto.map(|b| b.to_string()).unwrap_or_default());
        fields.push(r.reason.clone().unwrap_or_default());
        for c in param_columns {
            fields.push(cell(r.parameters.get(c)));
        }
        if searched {
            for c in SEARCH_COLUMNS {
                fields.push(r.metric(c).map(float_text).unwrap_or_default());
            }
        }
        if stopped {
            let on = r.stopped_on.as_ref();
            fields.push(on.map(|o| o.key.clone()).unwrap_or_default());
            for v in [on.and_then(|o| o.proven_min), on.and_then(|o| o.at_ms)] {
                fields.push(
                    v.map(|x| super::values::float_sig(x, super::values::CSV_SIGNIFICANT_DIGITS))
                        .unwrap_or_default(),
                );
            }
        }
        fields.push(r.gpus.map(|g| g.to_string()).unwrap_or_default());
        for m in &metrics {
            fields.push(cell(r.report.as_ref().and_then(|rep| rep.get(m))));
        }
        let _ = w.write_record(&fields);
    }
    w.into_inner().unwrap_or_default()
}

/// What `leaderboard.json` says about the sweep besides its rows.
pub struct Meta<'a> {
    pub name: &'a str,
    pub spec_text: &'a str,
    pub spec_sha256: &'a str,
    pub points_total: u64,
    pub shard: Option<(u32, u32)>,
    pub rank_by: &'a [Objective],
    pub pareto: &'a [Objective],
    pub interrupted: bool,
    /// Point ids of the grid a merge did not find (the leaderboards are then partial).
    pub missing: &'a [u64],
}

/// Distinct trace files of the rows' workloads: `[{path, sha256}]`, sorted.
fn traces(rows: &[Row]) -> Vec<Value> {
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in rows {
        let files = r
            .rec
            .workload
            .as_ref()
            .and_then(|w| w.get("files"))
            .and_then(Value::as_array);
        for f in files.into_iter().flatten() {
            let path = f
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let sha = f
                .get("sha256")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if !seen.contains(&(path.clone(), sha.clone())) {
                seen.push((path, sha));
            }
        }
    }
    seen.sort();
    seen.into_iter()
        .map(|(path, sha256)| json!({"path": path, "sha256": sha256}))
        .collect()
}

/// One row of `leaderboard.json`, borrowing from its record. Fields in alphabetical order: the
/// layout of a serde_json object (sorted keys).
#[derive(Serialize)]
struct JsonRow<'a> {
    configuration: &'a Option<Value>,
    feasible: Option<bool>,
    gpus: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    hash: &'a str,
    parameters: &'a Map<String, Value>,
    pareto: Option<bool>,
    point: u64,
    rank: Option<u64>,
    reason: &'a Option<String>,
    report: &'a Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    search: &'a Option<SearchOutcome>,
    status: Status,
    workload: &'a Option<Value>,
}

/// Serialises the rows one by one as a JSON array, without building them as values first.
struct JsonRows<'a, 'r>(&'a [Row<'r>]);

impl Serialize for JsonRows<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|row| {
            let r = row.rec;
            JsonRow {
                configuration: &r.configuration,
                feasible: r.status.feasible(),
                gpus: r.gpus,
                group: row.group.as_deref(),
                hash: &r.hash,
                parameters: &r.parameters,
                pareto: row.pareto,
                point: r.point,
                rank: row.rank,
                reason: &r.reason,
                report: &r.report,
                search: &r.search,
                status: r.status,
                workload: &r.workload,
            }
        }))
    }
}

/// The whole `leaderboard.json` document (fields in alphabetical order, see [`JsonRow`]).
#[derive(Serialize)]
struct JsonDoc<'a, 'r> {
    dynosim_version: &'a str,
    interrupted: bool,
    #[serde(skip_serializing_if = "<[u64]>::is_empty")]
    missing_points: &'a [u64],
    name: &'a str,
    pareto: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    partial: bool,
    points: usize,
    points_total: u64,
    rank_by: Vec<String>,
    rows: JsonRows<'a, 'r>,
    shard: Option<String>,
    spec: Value,
    spec_sha256: &'a str,
    spec_yaml: &'a str,
    trace_sha256: Value,
    traces: Vec<Value>,
}

/// Streams `leaderboard.json` (see [`json_bytes`]) to `w`.
pub fn write_json(rows: &[Row], meta: &Meta, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let traces = traces(rows);
    let trace_sha256 = match traces.as_slice() {
        [one] => one["sha256"].clone(),
        _ => Value::Null,
    };
    let doc = JsonDoc {
        dynosim_version: DYNOSIM_VERSION,
        interrupted: meta.interrupted,
        missing_points: meta.missing,
        name: meta.name,
        pareto: meta.pareto.iter().map(|o| o.to_string()).collect(),
        partial: !meta.missing.is_empty(),
        points: rows.len(),
        points_total: meta.points_total,
        rank_by: meta.rank_by.iter().map(|o| o.to_string()).collect(),
        rows: JsonRows(rows),
        shard: meta.shard.map(|(k, n)| format!("{k}/{n}")),
        spec: serde_yaml::from_str(meta.spec_text).unwrap_or(Value::Null),
        spec_sha256: meta.spec_sha256,
        spec_yaml: meta.spec_text,
        trace_sha256,
        traces,
    };
    serde_json::to_writer_pretty(&mut *w, &doc).map_err(std::io::Error::from)?;
    w.write_all(b"\n")
}

#[cfg(test)]
/// `leaderboard.json`: the rows with full report and configuration, the spec, its hash, the
/// traces' SHA-256 and the dynosim version.
pub fn json_bytes(rows: &[Row], meta: &Meta) -> Vec<u8> {
    let mut bytes = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_json(rows, meta, &mut bytes);
    bytes
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::Map;

    /// A record of `point` with `status` and `report` (also used by the console's tests).
    pub(crate) fn rec(point: u64, status: Status, report: Value) -> PointRecord {
        PointRecord {
            point,
            hash: format!("h{point}"),
            status,
            reason: None,
            parameters: Map::new(),
            gpus: Some(1 + point % 3),
            configuration: None,
            workload: None,
            report: report.as_object().cloned(),
            stopped_on: None,
            search: None,
        }
    }

    fn obj(maximize: bool, metric: &str) -> Objective {
        Objective {
            maximize,
            metric: metric.into(),
        }
    }

    #[test]
    fn classify_by_bounds() {
        let r = rec(
            0,
            Status::Ok,
            json!({"p99_ttft_ms": 12000.5, "completed_requests": 10}),
        );
        let b = |m: &str, min: Option<f64>, max: Option<f64>| Bound {
            metric: m.into(),
            min,
            max,
        };
        assert_eq!(classify(&r, &[]), (Status::Ok, None));
        assert_eq!(
            classify(&r, &[b("p99_ttft_ms", None, Some(20000.0))]),
            (Status::Ok, None)
        );
        let (s, why) = classify(
            &r,
            &[
                b("p99_ttft_ms", None, Some(10000.0)),
                b("completed_requests", Some(11.0), None),
            ],
        );
        assert_eq!(s, Status::Infeasible);
        assert_eq!(
            why.unwrap(),
            "p99_ttft_ms 12000.5 > max 10000; completed_requests 10 < min 11"
        );
        let (s, why) = classify(&r, &[b("mean_ttft_ms", None, Some(1.0))]);
        assert_eq!(s, Status::Infeasible);
        assert!(why.unwrap().contains("missing"));
        // gpus is a metric too.
        assert_eq!(classify(&r, &[b("gpus", None, Some(1.0))]).0, Status::Ok);
    }

    #[test]
    fn ranking_orders_ok_then_infeasible_ties_by_point() {
        let records = vec![
            rec(0, Status::Ok, json!({"thr": 5.0, "lat": 3.0})),
            rec(1, Status::Infeasible, json!({"thr": 100.0, "lat": 1.0})),
            rec(2, Status::Ok, json!({"thr": 9.0, "lat": 3.0})),
            rec(3, Status::Invalid, Value::Null),
            rec(4, Status::Ok, json!({"thr": 9.0, "lat": 2.0})),
            rec(5, Status::Ok, json!({"thr": 9.0, "lat": 2.0})),
            rec(6, Status::Skipped, Value::Null),
            rec(7, Status::Ok, json!({"lat": 0.5})),
            rec(8, Status::Failed, Value::Null),
        ];
        let rows = rank(&records, &[obj(true, "thr"), obj(false, "lat")], &[]);
        let order: Vec<(u64, Option<u64>)> = rows.iter().map(|r| (r.rec.point, r.rank)).collect();
        assert_eq!(
            order,
            vec![
                (4, Some(1)),
                (5, Some(2)),
                (2, Some(3)),
                (0, Some(4)),
                (7, Some(5)), // missing thr sorts last among ok
                (1, Some(6)),
                (3, None),
                (6, None),
                (8, None),
            ]
        );
        // Default-like single objective, min direction.
        let rows = rank(&records, &[obj(false, "lat")], &[]);
        assert_eq!(rows[0].rec.point, 7);
    }

    #[test]
    fn pareto_flags_non_dominated_ok_points() {
        let records = vec![
            rec(0, Status::Ok, json!({"a": 1.0, "b": 5.0})),
            rec(1, Status::Ok, json!({"a": 2.0, "b": 4.0})),
            rec(2, Status::Ok, json!({"a": 2.0, "b": 3.0})), // dominated by 1
            rec(3, Status::Ok, json!({"a": 3.0, "b": 1.0})),
            rec(4, Status::Ok, json!({"a": 3.0, "b": 1.0})), // equal to 3: both on the front
            rec(5, Status::Ok, json!({"a": 0.5, "b": 0.5})), // dominated
            rec(6, Status::Infeasible, json!({"a": 100.0, "b": 100.0})), // never on the front
            rec(7, Status::Ok, json!({"a": 4.0})),           // missing b: worst b, best a
        ];
        let rows = rank(
            &records,
            &[obj(true, "a")],
            &[obj(true, "a"), obj(true, "b")],
        );
        let mut flags: Vec<(u64, Option<bool>)> =
            rows.iter().map(|r| (r.rec.point, r.pareto)).collect();
        flags.sort();
        assert_eq!(
            flags,
            vec![
                (0, Some(true)),
                (1, Some(true)),
                (2, Some(false)),
                (3, Some(true)),
                (4, Some(true)),
                (5, Some(false)),
                (6, Some(false)),
                (7, Some(true)),
            ]
        );
        // A minimised objective flips the direction.
        let ok: Vec<&PointRecord> = records[..2].iter().collect();
        assert_eq!(
            pareto_front(&ok, &[obj(false, "a"), obj(true, "b")]),
            vec![true, false]
        );
        assert_eq!(pareto_front(&ok, &[]), vec![false, false]);
    }

    #[test]
    fn numbers_are_plain() {
        let t = |v: Value| cell(Some(&v));
        assert_eq!(t(json!(1234567)), "1234567");
        assert_eq!(t(json!(-3)), "-3");
        assert_eq!(t(json!(0.1)), "0.1");
        assert_eq!(t(json!(1e21)), "1000000000000000000000");
        assert_eq!(t(json!(1.5e-7)), "0.00000015");
        assert_eq!(t(json!(2.0)), "2");
        assert_eq!(t(json!(1162.7352491641798)), "1162.735249");
        assert_eq!(t(Value::Null), "");
        assert_eq!(t(json!("kv_router")), "kv_router");
        assert_eq!(t(json!(true)), "true");
    }

    #[test]
    fn csv_layout() {
        let mut a = rec(
            0,
            Status::Ok,
            json!({"output_throughput_tok_s": 10.25, "wall_time_ms": 5.0, "processed_tokens_per_s": 1.0, "processed_output_tokens_per_s": 1.0, "mean_ttft_ms": 3}),
        );
        a.parameters.insert("num_workers".into(), json!(2));
        a.parameters
            .insert("router_mode".into(), json!("kv_router"));
        let mut b = rec(1, Status::Invalid, Value::Null);
        b.reason = Some("router_mode kv_router needs more than one worker, \"quoted\"".into());
        b.parameters.insert("num_workers".into(), json!(1));
        let records = vec![a, b];
        let rows = rank(
            &records,
            &[obj(true, "output_throughput_tok_s")],
            &[obj(true, "output_throughput_tok_s")],
        );
        let text = String::from_utf8(csv_bytes(
            &rows,
            &[
                "num_workers".into(),
                "router_mode".into(),
                "engine.max_num_seqs".into(),
            ],
            &["output_throughput_tok_s".into()],
        ))
        .unwrap();
        assert_eq!(
            text,
            "rank,point,status,feasible,pareto,reason,num_workers,router_mode,engine.max_num_seqs,gpus,output_throughput_tok_s,mean_ttft_ms\n\
             1,0,ok,true,true,,2,kv_router,,1,10.25,3\n\
             ,1,invalid,,,\"router_mode kv_router needs more than one worker, \"\"quoted\"\"\",1,,,2,,\n"
        );
    }

    #[test]
    fn json_and_table() {
        let mut a = rec(0, Status::Ok, json!({"output_throughput_tok_s": 10.25}));
        a.workload = Some(
            json!({"kind": "trace", "files": [{"path": "t.jsonl", "sha256": "ab"}], "trace_block_size": 512}),
        );
        a.parameters.insert("num_workers".into(), json!(2));
        let records = vec![a, rec(1, Status::Failed, Value::Null)];
        let rank_by = [obj(true, "output_throughput_tok_s")];
        let rows = rank(&records, &rank_by, &rank_by);
        let meta = Meta {
            name: "t",
            spec_text: "seed: 1\n",
            spec_sha256: "00",
            points_total: 2,
            shard: Some((0, 2)),
            rank_by: &rank_by,
            pareto: &rank_by,
            interrupted: false,
            missing: &[],
        };
        let v: Value = serde_json::from_slice(&json_bytes(&rows, &meta)).unwrap();
        assert_eq!(v["trace_sha256"], "ab");
        assert_eq!(v["spec"]["seed"], 1);
        assert_eq!(v["shard"], "0/2");
        assert_eq!(v["dynosim_version"], DYNOSIM_VERSION);
        assert_eq!(v["rows"][0]["rank"], 1);
        assert_eq!(v["rows"][1]["status"], "failed");
        assert_eq!(v["rows"][1]["rank"], Value::Null);
    }
}
