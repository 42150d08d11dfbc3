//! The table a sweep prints when it ends: the best rows in the leaderboard's column order
//! (rank, point, status, parameters, gpus, key metrics), the reason of every row that is not
//! `ok` on a line under it, and no wider than the terminal ([`terminal_width`]). The metrics the
//! spec ranks by and requires are always shown; when the table is too wide, parameter columns
//! are cut first (then `gpus` and the other key metrics), and what is cut is named under the
//! table; rows that are cut are counted.

use super::columns::{short_number, short_value, shorten};
use super::leaderboard::Row;
use super::record::{Status, CSV_FILE};
use super::served;
use super::values::value_text;

/// Terminal width the table fits in when the terminal's is unknown (not a terminal, no
/// `COLUMNS`).
pub const WIDTH: usize = 100;

/// The width the table fits in: `COLUMNS` when it is a positive number, else the width of the
/// terminal on stdout, else [`WIDTH`].
pub fn terminal_width() -> usize {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return n;
    }
    ::console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| usize::from(cols))
        .filter(|c| *c > 0)
        .unwrap_or(WIDTH)
}

/// What a column shows, in the order columns are given room when the table is too wide.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Priority {
    /// rank, point, status, and the metrics of `rank_by` and `require`: always shown.
    Always,
    Gpus,
    /// Other key metrics (`pareto`).
    Key,
    Parameter,
}

/// Space between columns.
const GAP: usize = 2;

struct Column {
    header: String,
    cells: Vec<String>,
    right: bool,
}

impl Column {
    fn new(header: &str, cells: Vec<String>, right: bool) -> Self {
        Column {
            header: header.to_string(),
            cells,
            right,
        }
    }

    /// Width of the cells, and of the header's longest unbreakable piece.
    fn width(&self) -> usize {
        let cells = self
            .cells
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0);
        let piece = header_pieces(&self.header)
            .iter()
            .map(|p| p.chars().count())
            .max()
            .unwrap_or(0);
        cells.max(piece).max(self.min_width())
    }

    /// Long metric names wrap over a few header lines rather than widening a column of short
    /// numbers: at least 14 characters, unless the whole header is shorter.
    fn min_width(&self) -> usize {
        self.header.chars().count().min(14)
    }
}

/// A header cut after `_` and `.`, so it can wrap.
fn header_pieces(h: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in h.chars() {
        cur.push(c);
        if c == '_' || c == '.' {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The header wrapped into lines of at most `width` characters.
fn wrap_header(h: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for p in header_pieces(h) {
        if !cur.is_empty() && cur.chars().count() + p.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        cur.push_str(&p);
    }
    lines.push(cur);
    lines
}

/// The columns that fit in `width`, in their order, and the headers of those that do not. Room
/// goes to the columns by priority; parameters in their order, the first that does not fit
/// ending them.
fn fit_columns(
    cols: Vec<Column>,
    priority: &[Priority],
    width: usize,
) -> (Vec<(Column, usize)>, Vec<String>) {
    let widths: Vec<usize> = cols.iter().map(Column::width).collect();
    let mut by_priority: Vec<usize> = (0..cols.len()).collect();
    by_priority.sort_by_key(|&i| (priority[i], i));
    let mut used = 0;
    let mut keep = vec![false; cols.len()];
    let mut params_full = false;
    for i in by_priority {
        let fits = used + widths[i] <= width;
        let take = match priority[i] {
            Priority::Always => true,
            Priority::Parameter => {
                params_full |= !fits;
                !params_full
            }
            _ => fits,
        };
        if take {
            used += widths[i] + GAP;
            keep[i] = true;
        }
    }
    let mut kept: Vec<(Column, usize)> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    for ((c, w), k) in cols.into_iter().zip(widths).zip(keep) {
        if k {
            kept.push((c, w));
        } else {
            dropped.push(c.header);
        }
    }
    (kept, dropped)
}

/// The table's columns for the `shown` rows, each with its priority for room.
fn columns(
    shown: &[&Row],
    key: &[String],
    required: &[String],
    param_columns: &[String],
) -> (Vec<Column>, Vec<Priority>) {
    let mut cols = vec![
        Column::new(
            "rank",
            shown
                .iter()
                .map(|r| r.rank.map(|x| x.to_string()).unwrap_or_default())
                .collect(),
            true,
        ),
        Column::new(
            "point",
            shown.iter().map(|r| r.rec.point.to_string()).collect(),
            true,
        ),
        Column::new(
            "status",
            shown
                .iter()
                .map(|r| {
                    let s = r.rec.status.as_str();
                    if r.pareto == Some(true) {
                        format!("{s}*")
                    } else {
                        s.to_string()
                    }
                })
                .collect(),
            false,
        ),
    ];
    let mut priority = vec![Priority::Always; cols.len()];
    for c in param_columns {
        priority.push(Priority::Parameter);
        let cells: Vec<String> = shown
            .iter()
            .map(|r| r.rec.parameters.get(c).map(value_text).unwrap_or_default())
            .collect();
        let numeric = cells
            .iter()
            .all(|c| c.is_empty() || c.parse::<f64>().is_ok());
        cols.push(Column::new(c, cells, numeric));
    }
    priority.push(if required.iter().any(|m| m == "gpus") {
        Priority::Always
    } else {
        Priority::Gpus
    });
    cols.push(Column::new(
        "gpus",
        shown
            .iter()
            .map(|r| r.rec.gpus.map(|g| g.to_string()).unwrap_or_default())
            .collect(),
        true,
    ));
    // A key "metric" that is a parameter or gpus already has its column.
    for m in key
        .iter()
        .filter(|m| *m != "gpus" && !param_columns.contains(m))
    {
        let cells: Vec<String> = shown
            .iter()
            .map(|r| match r.rec.metric(m) {
                Some(x) => short_number(x),
                // A point stopped early on this metric: what was proven of it.
                None => match r.rec.stopped_on.as_ref().filter(|o| &o.key == m) {
                    Some(on) => on
                        .proven_min
                        .map(|x| format!("≥{}", short_number(x)))
                        .unwrap_or_default(),
                    None => short_value(r.rec.report.as_ref().and_then(|rep| rep.get(m))),
                },
            })
            .collect();
        priority.push(if required.contains(m) {
            Priority::Always
        } else {
            Priority::Key
        });
        cols.push(Column::new(m, cells, true));
    }
    (cols, priority)
}

/// The console's table of the first `n` rows (in leaderboard order), with `key` metrics, of
/// which the `required` ones (`rank_by`, `require`) are always shown, fitting in `width`
/// characters.
pub fn top_table(
    rows: &[Row],
    key: &[String],
    required: &[String],
    param_columns: &[String],
    n: usize,
    width: usize,
) -> String {
    if !rows.iter().any(|r| r.rank.is_some()) {
        return "no point finished a simulation\n".to_string();
    }
    let shown: Vec<&Row> = rows.iter().take(n).collect();
    let (cols, priority) = columns(&shown, key, required, param_columns);
    let reasons: Vec<String> = shown
        .iter()
        .map(|r| match (r.rec.status, r.rec.reason.as_deref()) {
            // An ok row's reason is shown only when it warns (other reasons of ok rows are
            // the duplicate's `same as point N` or a search's bracket).
            (Status::Ok, Some(why)) if !served::warns(why) => String::new(),
            (_, why) => why.unwrap_or_default().to_string(),
        })
        .collect();

    let (kept, dropped) = fit_columns(cols, &priority, width);
    // A reason goes on its own line under its row, starting under the status.
    let indent = kept[0].1 + kept[1].1 + 2 * GAP;

    let header_lines: Vec<Vec<String>> = kept
        .iter()
        .map(|(c, w)| wrap_header(&c.header, *w))
        .collect();
    let depth = header_lines.iter().map(Vec::len).max().unwrap_or(1);
    let mut out = String::new();
    let last = kept.len() - 1;
    let line_out = |out: &mut String, cells: Vec<&str>| {
        let mut text = String::new();
        for (i, ((c, w), cell)) in kept.iter().zip(cells).enumerate() {
            let pad = w.saturating_sub(cell.chars().count());
            if c.right {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                if i != last {
                    text.push_str(&" ".repeat(pad));
                }
            }
            if i != last {
                text.push_str(&" ".repeat(GAP));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    // Wrapped headers sit on the bottom line, like the numbers under them.
    for l in 0..depth {
        let cells: Vec<&str> = header_lines
            .iter()
            .map(|h| {
                let skip = depth - h.len();
                if l < skip {
                    ""
                } else {
                    h[l - skip].as_str()
                }
            })
            .collect();
        line_out(&mut out, cells);
    }
    for (r, reason) in reasons.iter().enumerate() {
        line_out(
            &mut out,
            kept.iter().map(|(c, _)| c.cells[r].as_str()).collect(),
        );
        if !reason.is_empty() {
            out.push_str(&" ".repeat(indent));
            out.push_str(&shorten(
                &format!("└ {reason}"),
                width.saturating_sub(indent).max(20),
            ));
            out.push('\n');
        }
    }
    out.push_str("(* = on the Pareto front)");
    if rows.len() > shown.len() {
        out.push_str(&format!(
            "\n… {} more rows in {CSV_FILE}",
            rows.len() - shown.len()
        ));
    }
    if !dropped.is_empty() {
        out.push_str(&format!(
            "\nnot shown (too wide): {}",
            shorten(&dropped.join(", "), width.saturating_sub(22).max(20))
        ));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::leaderboard::rank;
    use crate::sweep::leaderboard::tests::rec;
    use crate::sweep::spec::Objective;
    use serde_json::{json, Value};

    #[test]
    fn fits_width_shows_reasons_and_counts_the_rest() {
        let mut records = Vec::new();
        for i in 0..14u64 {
            let mut r = rec(
                i,
                if i % 2 == 1 {
                    Status::Infeasible
                } else {
                    Status::Ok
                },
                json!({"goodput_request_throughput_rps": i as f64 * 1.5, "mean_ttft_ms": 1000.0 / (i + 1) as f64, "p99_ttft_ms": 12345.678}),
            );
            if r.status == Status::Infeasible {
                r.reason = Some(
                    "p99_ttft_ms 12345.678 > max 2000; mean_itl_ms 55.5 > max 40; mean_e2e_latency_ms 99999.5 > max 5000; and a long tail"
                        .into(),
                );
            }
            r.parameters.insert("num_workers".into(), json!(i));
            r.parameters
                .insert("router_mode".into(), json!("kv_router"));
            r.parameters
                .insert("engine.max_num_batched_tokens".into(), json!(8192));
            records.push(r);
        }
        let mut bad = rec(20, Status::Invalid, Value::Null);
        bad.reason = Some("router_mode kv_router needs more than one worker".into());
        records.push(bad);
        let rank_by = [Objective {
            maximize: true,
            metric: "goodput_request_throughput_rps".into(),
        }];
        let rows = rank(&records, &rank_by, &rank_by);
        let key: Vec<String> = vec![
            "goodput_request_throughput_rps".into(),
            "mean_ttft_ms".into(),
            "p99_ttft_ms".into(),
            "goodput_request_throughput_rps".into(),
        ];
        let params: Vec<String> = vec![
            "num_workers".into(),
            "router_mode".into(),
            "engine.max_num_batched_tokens".into(),
        ];
        let t = top_table(&rows, &key[..3], &key[..1], &params, 10, WIDTH);
        // A parameter named as a key metric is not shown twice.
        let with_param: Vec<String> = vec!["num_workers".into(), key[0].clone()];
        let t2 = top_table(&rows, &with_param, &with_param, &params, 10, WIDTH);
        assert_eq!(t2.matches("workers").count(), 1, "{t2}");
        for l in t.lines() {
            assert!(l.chars().count() <= WIDTH, "{l:?} is too wide\n{t}");
        }
        assert!(t.contains("… 5 more rows in leaderboard.csv"), "{t}");
        // Every infeasible row shown carries its (shortened) reason on the next line.
        let lines: Vec<&str> = t.lines().collect();
        let infeasible: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].contains("infeasible"))
            .collect();
        assert_eq!(infeasible.len(), 3, "{t}");
        for i in infeasible {
            assert!(
                lines[i + 1].contains("└ p99_ttft_ms 12345.678 > max 2000; mean_itl_ms"),
                "{t}"
            );
            assert!(lines[i + 1].ends_with('…'), "{t}");
        }
        // No column twice.
        let header = lines[..4].join(" ");
        assert_eq!(header.matches("gpus").count(), 1, "{t}");
        // The first header line ends with the wrapped start of the key metric names; the data
        // line starts with the rank.
        let data: Vec<&str> = t
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        assert_eq!(data.len(), 10, "{t}");
        assert!(t.contains("kv_router"), "{t}");
        // Parameters are cut first, the key metrics stay.
        assert!(
            t.contains("not shown (too wide): engine.max_num_batched_tokens"),
            "{t}"
        );
        // On a narrow terminal the required metric stays, the parameters and the other key
        // metrics go.
        let narrow = top_table(&rows, &key[..3], &key[..1], &params, 10, 50);
        assert!(narrow.contains("goodput_"), "{narrow}");
        assert!(
            narrow.contains("not shown (too wide): num_workers, router_mode, "),
            "{narrow}"
        );
        assert!(!narrow.contains("kv_router"), "{narrow}");
        for l in narrow.lines() {
            assert!(l.chars().count() <= 50, "{l:?} is too wide\n{narrow}");
        }
        // All rows shown: the invalid point and its reason appear, and nothing is "more".
        let t = top_table(&rows, &key[..1], &key[..1], &params[..1], 100, WIDTH);
        assert!(!t.contains("more rows"), "{t}");
        let lines: Vec<&str> = t.lines().collect();
        let i = lines.iter().position(|l| l.contains("invalid")).unwrap();
        assert!(
            lines[i + 1].contains("└ router_mode kv_router needs more than one worker"),
            "{t}"
        );
    }

    #[test]
    fn headers_wrap_at_underscores() {
        assert_eq!(
            wrap_header("goodput_request_throughput_rps", 16),
            ["goodput_request_", "throughput_rps"]
        );
        assert_eq!(wrap_header("gpus", 4), ["gpus"]);
        assert_eq!(
            wrap_header("engine.max_num_seqs", 10),
            ["engine.", "max_num_", "seqs"]
        );
    }
}
