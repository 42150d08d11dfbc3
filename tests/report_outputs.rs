//! What people look at, checked with the real programs they use: `report.html` rendered by
//! headless Chromium (screenshot: the charts are drawn; DOM: the point ids are there), and
//! `leaderboard.csv` opened by LibreOffice Calc (numbers arrive as numbers, the header intact).
//! Both are skipped, with a message on stderr, when the program is not installed; `.ci/run`
//! installs them. Also `dynosim report`, `compare`, `completions` and `man` as users call them.

use assert_cmd::Command;
use std::io::Write;
use std::path::{Path, PathBuf};

fn dynosim() -> Command {
    Command::cargo_bin("dynosim").expect("the dynosim binary")
}

/// A sweep of 6 points: one invalid (kv_router on 1 worker), some infeasible, some ok.
const SPEC: &str = r#"# Report test: which worker count and router serve a small synthetic load?
name: report_test
workload: {input_tokens: 512, output_tokens: 32, request_count: 60, request_rate: 40}
grid:
  num_workers: [1, 2, 4]
  router_mode: [round_robin, kv_router]
slo: {ttft_ms: 300}
require: {p99_ttft_ms: {max: 60}}
rank_by: [max output_throughput_tok_s_per_gpu]
"#;

/// GPU-hour prices: the sweep gets the cost columns.
const PRICES: &str = "cost: {gpu_hour_usd: 2.5}\n";

fn sweep(dir: &Path, spec: &str, name: &str) -> PathBuf {
    let spec_path = dir.join(format!("{name}.yaml"));
    std::fs::write(&spec_path, spec).unwrap();
    let out = dir.join(name);
    dynosim()
        .args(["sweep", "--quiet", "-j", "2", "-o"])
        .arg(&out)
        .arg(&spec_path)
        .assert()
        .success();
    out
}

/// Says on stderr (past the test harness's capture) that a test did not run.
fn skip(msg: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: {msg}");
}

fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Headless Chromium with a fresh profile and nothing that reaches the network.
fn chromium(bin: &Path, profile: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// The chart colours of `report.html` (sweep/html/charts.rs).
const FEASIBLE: [u8; 3] = [31, 119, 180];
const FRONT: [u8; 3] = [214, 39, 40];
const SECOND_SERIES: [u8; 3] = [255, 127, 14];

struct Image {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

fn decode_png(path: &Path) -> Image {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(
        channels >= 3,
        "expected an RGB(A) screenshot, got {:?}",
        info.color_type
    );
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let rgb = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    Image {
        width: info.width as usize,
        height: info.height as usize,
        rgb,
    }
}

fn near(a: [u8; 3], b: [u8; 3]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= 6)
}

impl Image {
    /// Rows (top, bottom) holding pixels of `color`, and how many such pixels there are.
    fn rows_with(&self, color: [u8; 3]) -> Option<(usize, usize, usize)> {
        let mut top = usize::MAX;
        let mut bottom = 0;
        let mut n = 0;
        for y in 0..self.height {
            for x in 0..self.width {
                if near(self.rgb[y * self.width + x], color) {
                    top = top.min(y);
                    bottom = bottom.max(y);
                    n += 1;
                }
            }
        }
        (n > 0).then_some((top, bottom, n))
    }

    /// Share of pixels that are not white between rows `top..bottom`.
    fn ink(&self, top: usize, bottom: usize) -> f64 {
        let px = &self.rgb[top * self.width..(bottom + 1) * self.width];
        px.iter().filter(|p| p.iter().any(|c| *c < 235)).count() as f64 / px.len() as f64
    }
}

#[test]
fn report_renders_in_chromium() {
    let Some(bin) = find_program(&["chromium", "chromium-browser", "google-chrome"]) else {
        skip("report_renders_in_chromium: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Priced, so the page also shows the prices and the cost columns.
    let out = sweep(dir.path(), &format!("{SPEC}{PRICES}"), "out");
    let html = out.join("report.html");
    let url = format!("file://{}", html.canonicalize().unwrap().display());

    let shot = dir.path().join("shot.png");
    let o = chromium(&bin, &dir.path().join("profile1"))
        .arg("--window-size=1100,3200")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        shot.is_file(),
        "chromium wrote no screenshot: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let img = decode_png(&shot);
    assert_eq!((img.width, img.height), (1100, 3200));
    // The Pareto chart: feasible marks (blue) and the front line (red) drawn by the browser,
    // in a region full of axes, grid and labels.
    let (top, bottom, n) = img
        .rows_with(FEASIBLE)
        .expect("no feasible marks on the page");
    assert!(n > 60, "only {n} pixels of feasible marks");
    let (ftop, _, fn_) = img
        .rows_with(FRONT)
        .expect("no Pareto front line on the page");
    assert!(fn_ > 20, "only {fn_} pixels of the front line");
    assert!(
        ftop >= top.saturating_sub(460) && ftop <= bottom,
        "front line outside the chart"
    );
    let pareto_ink = img.ink(top, (top + 300).min(img.height - 1));
    assert!(
        pareto_ink > 0.03,
        "the Pareto chart region is nearly blank ({pareto_ink})"
    );
    // The latency CDFs: the second point's curve (orange) appears below the Pareto chart.
    let (ctop, cbottom, cn) = img
        .rows_with(SECOND_SERIES)
        .expect("no second latency curve on the page");
    assert!(cn > 40, "only {cn} pixels of the second latency curve");
    assert!(ctop > top, "latency charts above the Pareto chart?");
    assert!(
        img.ink(ctop, cbottom) > 0.03,
        "latency chart region nearly blank"
    );
    // Nothing but white below the page's end would mean a truncated page: the table is there.
    assert!(img.ink(cbottom, img.height - 1) > 0.005);

    // The DOM as the browser built it: every point id is on the page.
    let dom = chromium(&bin, &dir.path().join("profile2"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("<h1>report_test</h1>"), "{dom}");
    for id in 0..6 {
        assert!(
            dom.contains(&format!("id=\"point-{id}\"")),
            "point {id} not in the table"
        );
    }
    assert!(dom.contains("title=\"point 5: num_workers=4 router_mode=kv_router"));
    assert!(dom.contains("<dt>GPU-hour prices (USD)</dt><dd>every GPU 2.5</dd>"));
    assert!(dom.contains("usd_per_million_output_tokens"));
    assert!(
        dom.contains("router_mode kv_router needs more than one worker") || dom.contains("invalid")
    );
}

/// Cells of a LibreOffice flat ODS table: `(value-type, office:value, text)` per cell, rows in
/// order, repeated cells expanded.
fn ods_rows(fods: &str) -> Vec<Vec<(String, Option<String>, String)>> {
    let doc = roxmltree::Document::parse(fods).unwrap();
    let table_ns = "urn:oasis:names:tc:opendocument:xmlns:table:1.0";
    let office_ns = "urn:oasis:names:tc:opendocument:xmlns:office:1.0";
    let mut rows = Vec::new();
    for row in doc
        .descendants()
        .filter(|n| n.has_tag_name((table_ns, "table-row")))
    {
        let mut cells = Vec::new();
        for cell in row
            .children()
            .filter(|n| n.has_tag_name((table_ns, "table-cell")))
        {
            let repeat: usize = cell
                .attribute((table_ns, "number-columns-repeated"))
                .and_then(|r| r.parse().ok())
                .unwrap_or(1);
            let kind = cell
                .attribute((office_ns, "value-type"))
                .unwrap_or("")
                .to_string();
            let value = cell.attribute((office_ns, "value")).map(str::to_string);
            // The file is pretty-printed: only the text inside paragraphs is the cell's.
            let text_ns = "urn:oasis:names:tc:opendocument:xmlns:text:1.0";
            let text: String = cell
                .descendants()
                .filter(|n| n.is_text())
                .filter(|n| n.ancestors().any(|a| a.has_tag_name((text_ns, "p"))))
                .filter_map(|n| n.text())
                .collect();
            // A long run of empty cells pads the row to the sheet's width: not data.
            for _ in 0..repeat.min(1024) {
                cells.push((kind.clone(), value.clone(), text.clone()));
            }
        }
        rows.push(cells);
    }
    rows
}

#[test]
fn csv_opens_in_libreoffice_with_numbers_as_numbers() {
    let Some(bin) = find_program(&["libreoffice", "soffice"]) else {
        skip("csv_opens_in_libreoffice_with_numbers_as_numbers: no libreoffice on PATH (apt-get install libreoffice-calc-nogui)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(dir.path(), &format!("{SPEC}{PRICES}"), "out");
    let csv_path = out.join("leaderboard.csv");
    let conv = dir.path().join("conv");
    let o = std::process::Command::new(&bin)
        .arg(format!(
            "-env:UserInstallation=file://{}",
            dir.path().join("lo-profile").display()
        ))
        .args(["--headless", "--norestore"])
        // Comma-separated, double quotes, UTF-8 (76), from line 1.
        .args([
            "--infilter=CSV:44,34,76,1",
            "--convert-to",
            "fods",
            "--outdir",
        ])
        .arg(&conv)
        .arg(&csv_path)
        .output()
        .unwrap();
    let fods_path = conv.join("leaderboard.fods");
    assert!(
        fods_path.is_file(),
        "libreoffice did not convert: {} {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let sheet = ods_rows(&std::fs::read_to_string(&fods_path).unwrap());

    let mut reader = csv::Reader::from_path(&csv_path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert!(records.len() >= 6);
    // The header row arrives whole, as text, in order.
    let got: Vec<&str> = sheet[0][..header.len()]
        .iter()
        .map(|c| c.2.as_str())
        .collect();
    assert_eq!(got, header.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(sheet[0][..header.len()].iter().all(|c| c.0 == "string"));
    // Every numeric CSV field is a number in the sheet, with the same value.
    let mut numbers = 0;
    for (i, rec) in records.iter().enumerate() {
        let row = &sheet[i + 1];
        for (j, field) in rec.iter().enumerate() {
            let Ok(x) = field.parse::<f64>() else {
                continue;
            };
            let (kind, value, _) = &row[j];
            assert_eq!(
                kind,
                "float",
                "row {} column {} ({field}) arrived as {kind}",
                i + 1,
                header[j]
            );
            let v: f64 = value.as_deref().unwrap().parse().unwrap();
            assert_eq!(v, x, "row {} column {}", i + 1, header[j]);
            numbers += 1;
        }
    }
    // 3 ok/infeasible rows at least, each with dozens of metrics.
    assert!(numbers > 150, "only {numbers} numeric cells checked");
    // Key columns first: the rank_by metric right after gpus, then the require metric.
    let g = header.iter().position(|h| h == "gpus").unwrap();
    assert_eq!(header[g + 1], "output_throughput_tok_s_per_gpu");
    assert_eq!(header[g + 2], "p99_ttft_ms");
    // The cost columns of a priced sweep are numbers too (checked above with every other).
    for key in [
        "usd_per_hour",
        "usd_per_million_output_tokens",
        "usd_per_million_requests",
    ] {
        assert!(header.iter().any(|h| h == key), "no {key} column");
    }
}

#[test]
fn report_command_rewrites_the_same_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(dir.path(), SPEC, "out");
    let html = out.join("report.html");
    let first = std::fs::read(&html).unwrap();
    std::fs::remove_file(&html).unwrap();
    dynosim().arg("report").arg(&out).assert().success();
    assert_eq!(std::fs::read(&html).unwrap(), first);
    let md = std::fs::read_to_string(out.join("leaderboard.md")).unwrap();
    assert!(md.starts_with("| rank | point | status | num_workers | router_mode | gpus | output_throughput_tok_s_per_gpu | p99_ttft_ms |"), "{md}");
    // Not an output folder: exit 2.
    dynosim()
        .arg("report")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a sweep output folder"));
}

#[test]
fn compare_reports_and_folders() {
    let dir = tempfile::tempdir().unwrap();
    let a = sweep(dir.path(), SPEC, "a");
    // B: one more worker count, and the 4-worker points under another router seed do not
    // exist in A.
    let b_spec = SPEC.replace("num_workers: [1, 2, 4]", "num_workers: [2, 4, 8]");
    let b = sweep(dir.path(), &b_spec, "b");
    let o = dynosim().arg("compare").arg(&a).arg(&b).assert().success();
    let text = String::from_utf8_lossy(&o.get_output().stdout).to_string();
    assert!(
        text.contains("4 points in both (same configuration hash), 2 only in A, 2 only in B"),
        "{text}"
    );
    assert!(
        text.contains("output_throughput_tok_s_per_gpu: B/A 1.000"),
        "{text}"
    );
    assert!(text.contains("only in A"));
    assert!(
        text.contains("point 5: num_workers=8 router_mode=kv_router"),
        "{text}"
    );
    assert!(text.contains("pairing: by configuration hash"), "{text}");

    // C: the same grid at another load: no configuration is the same, so points pair by their
    // grid parameters, and the deltas of the ranking metrics are shown per point.
    let c_spec = SPEC.replace("request_rate: 40", "request_rate: 80");
    let c = sweep(dir.path(), &c_spec, "c");
    let o = dynosim().arg("compare").arg(&a).arg(&c).assert().success();
    let text = String::from_utf8_lossy(&o.get_output().stdout).to_string();
    assert!(
        text.contains("pairing: by grid parameters (num_workers, router_mode)"),
        "{text}"
    );
    assert!(text.contains("workload.request_rate 40 -> 80"), "{text}");
    assert!(
        text.contains("6 points paired, 0 only in A, 0 only in B"),
        "{text}"
    );
    assert!(!text.contains("0 points in both"), "{text}");
    let section = text
        .split("\noutput_throughput_tok_s_per_gpu")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(section.contains("B-A"), "{text}");
    // Point 2 of A (2 workers, round robin) is paired with point 2 of C.
    assert!(
        section
            .lines()
            .any(|l| l.split_whitespace().take(2).eq(["2", "2"])
                && l.ends_with("num_workers=2 router_mode=round_robin")),
        "{text}"
    );

    let ra = dir.path().join("ra.json");
    let rb = dir.path().join("rb.json");
    for (p, w) in [(&ra, "2"), (&rb, "4")] {
        dynosim()
            .args([
                "run",
                "--input-tokens",
                "512",
                "--output-tokens",
                "32",
                "--request-count",
                "60",
                "--request-rate",
                "40",
                "--num-workers",
                w,
                "--report-json",
            ])
            .arg(p)
            .assert()
            .success();
    }
    let o = dynosim()
        .arg("compare")
        .arg(&ra)
        .arg(&rb)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&o.get_output().stdout).to_string();
    let ttft = text
        .lines()
        .find(|l| l.starts_with("mean_ttft_ms"))
        .unwrap();
    assert_eq!(ttft.split_whitespace().count(), 6, "{ttft}");
    let done = text
        .lines()
        .find(|l| l.starts_with("completed_requests"))
        .unwrap();
    assert!(
        done.contains(" 60 ") && done.contains("1.000") && done.ends_with("+0.0%"),
        "{text}"
    );
    // Mixed or unknown inputs: exit 2 with a message.
    dynosim()
        .arg("compare")
        .arg(&ra)
        .arg(&a)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot compare"));
    dynosim()
        .arg("compare")
        .arg(a.join("leaderboard.csv"))
        .arg(&rb)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a report"));
}

#[test]
fn completions_and_man_page() {
    let o = dynosim().args(["completions", "bash"]).assert().success();
    let s = String::from_utf8_lossy(&o.get_output().stdout).to_string();
    assert!(s.contains("_dynosim()") && s.contains("compare") && s.contains("--resume"));
    dynosim().args(["completions", "tcsh"]).assert().code(2);
    let o = dynosim().arg("man").assert().success();
    let s = String::from_utf8_lossy(&o.get_output().stdout).to_string();
    assert!(s.contains(".TH dynosim 1") && s.contains("sweep"));
    let dir = tempfile::tempdir().unwrap();
    dynosim()
        .arg("man")
        .arg("-o")
        .arg(dir.path())
        .assert()
        .success();
    let page = std::fs::read_to_string(dir.path().join("dynosim-sweep.1")).unwrap();
    assert!(page.contains("resume") && page.contains("The spec"));
    let o = dynosim().args(["sweep", "--help"]).assert().success();
    let s = String::from_utf8_lossy(&o.get_output().stdout).to_string();
    assert!(s.contains("README.md, section \"The spec\""), "{s}");
}
