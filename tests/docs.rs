//! The documentation as a reader uses it: README.md and every page of `docs/`.
//!
//! - Every relative link resolves to an existing file, and a `#anchor` link to a heading of its
//!   target (GitHub's heading slugs, duplicates numbered `-1`, `-2`, …). Web links are not
//!   followed.
//! - Every command line in the README's shell code blocks that starts with `dynosim` is parsed
//!   by the built binary, as honestly as a fast test allows (lines joined at `\`, shell quoting
//!   honoured, a trailing `# comment` or a pipe cut off), run in a scratch folder that links the
//!   repository's `data/`, `sweeps/`, `tests/`, `benches/` and `examples/`, in the README's order
//!   (so `compare` finds the reports written by the `run` lines before it):
//!   - `dynosim sweep SPEC …` runs with `--dry-run`: the whole spec is validated (keys, grid,
//!     engine and router JSON, trace files) and nothing is simulated or written;
//!   - `dynosim run …` has no dry-run mode, so it runs for real (the README's `run` examples are
//!     on the bundled trace, about 2 s each in a debug build); a missing `--report-json` is
//!     given one inside the scratch folder;
//!   - `compare`, `completions` and `man` (without `-o`) run for real;
//!   - anything else (`merge`, `report`, `aic`) gets `--help` appended: clap parses the words in
//!     order and acts on `--help` only when it reaches it, so an unknown flag, a malformed value
//!     or an extra positional argument before it is still refused (checked below), while rules
//!     checked after parsing (required and conflicting flags) are not.
//!
//!   Commands in `docs/` get that last, clap-level check only (several need AIC's Python package,
//!   files the reader brings, or a long simulation).
//! - The README stays a landing page: at most 300 lines, the Quick start first after the intro,
//!   its two commands in one code block.

use assert_cmd::cargo::cargo_bin_cmd;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown page of docs/, sorted.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut pages: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    assert!(!pages.is_empty(), "docs/ has no Markdown page");
    files.extend(pages);
    files
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A fenced code block: its info string (`sh`, `text`, …), its lines, and its first line number.
struct Block {
    info: String,
    lines: Vec<String>,
    line: usize,
}

/// Splits Markdown into the lines outside fenced code blocks (with their line numbers) and the
/// fenced blocks.
fn split_fences(text: &str) -> (Vec<(usize, String)>, Vec<Block>) {
    let mut prose = Vec::new();
    let mut blocks = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let fence = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f));
        match (&mut open, fence) {
            (None, Some(f)) => {
                let info = trimmed.trim_start_matches(f.chars().next().unwrap_or('`'));
                open = Some((
                    f.to_string(),
                    Block {
                        info: info.trim().to_string(),
                        lines: Vec::new(),
                        line: i + 2,
                    },
                ));
            }
            (Some((f, _)), Some(g))
                if f.as_str() == g && trimmed.trim_end().chars().all(|c| c == '`' || c == '~') =>
            {
                if let Some((_, block)) = open.take() {
                    blocks.push(block);
                }
            }
            (Some((_, block)), _) => block.lines.push(line.to_string()),
            (None, None) => prose.push((i + 1, line.to_string())),
        }
    }
    assert!(open.is_none(), "a code fence is never closed");
    (prose, blocks)
}

/// GitHub's anchor for a heading: lower case, every character that is not a letter, a digit, a
/// space, `-` or `_` dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (ATX headings outside code blocks).
fn anchors(text: &str) -> HashSet<String> {
    let (prose, _) = split_fences(text);
    let mut seen: HashSet<String> = HashSet::new();
    for (_, line) in prose {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim_end_matches('#'));
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// Removes inline code spans, so that `[a](b)` written as code is not taken for a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The targets of the inline links `[text](target)` of a Markdown text, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let (prose, _) = split_fences(text);
    let mut found = Vec::new();
    for (n, line) in prose {
        let line = without_code_spans(&line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            found.push((n, target.to_string()));
            rest = &after[end..];
        }
    }
    found
}

/// Every broken relative link of `file` (whose text is `text`), as readable messages.
fn broken_links(file: &Path, text: &str) -> Vec<String> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut broken = Vec::new();
    for (line, target) in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        let at = format!("{}:{line}: ({target})", file.display());
        if !resolved.exists() {
            broken.push(format!("{at}: no file {}", resolved.display()));
            continue;
        }
        if let Some(anchor) = anchor {
            if resolved.extension().is_none_or(|x| x != "md") {
                broken.push(format!("{at}: an anchor into a file that is not Markdown"));
            } else if !anchors(&read(&resolved)).contains(anchor) {
                broken.push(format!("{at}: no heading with anchor #{anchor}"));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut count = 0;
    for file in doc_files() {
        let text = read(&file);
        count += links(&text).len();
        broken.extend(broken_links(&file, &text));
    }
    assert!(
        count > 10,
        "only {count} links found: is the link reader broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_checker_finds_broken_links() {
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("a.md");
    fs::write(
        dir.path().join("b.md"),
        "# Top\n\n## The KV router's `--aic-*` (AIC)\n## Top\n",
    )
    .expect("write b.md");
    let text = "[ok](b.md) [ok](b.md#top) [ok](b.md#top-1) [ok](b.md#the-kv-routers---aic--aic)\n\
                [ok](#here) [web](https://example.com/x)\n\n# Here\n\
                `[code](nowhere.md)`\n```\n[code](nowhere.md)\n```\n\
                [bad](c.md) [bad](b.md#nope) [bad](#there)\n";
    fs::write(&page, text).expect("write a.md");
    let broken = broken_links(&page, text);
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(broken[0].contains("(c.md)") && broken[1].contains("#nope"));
    assert!(broken[2].contains("#there"));
}

/// Splits one shell command line into words: single and double quotes, backslash escapes; stops
/// at an unquoted `#` comment, pipe, redirection or command separator.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '#' if !in_word => break,
            '|' | '>' | '<' | ';' | '&' => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The `dynosim` command lines of a Markdown text's shell code blocks (`sh`, `bash`, `shell`,
/// `console` or no info string), continuation lines joined, each with its line number.
fn dynosim_commands(text: &str) -> Vec<(usize, Vec<String>)> {
    let (_, blocks) = split_fences(text);
    let mut commands = Vec::new();
    for block in blocks {
        if !["", "sh", "bash", "shell", "console"].contains(&block.info.as_str()) {
            continue;
        }
        let mut joined = String::new();
        let mut start = block.line;
        for (i, line) in block.lines.iter().enumerate() {
            if joined.is_empty() {
                start = block.line + i;
            }
            match line.trim_end().strip_suffix('\\') {
                Some(head) => {
                    joined.push_str(head);
                    joined.push(' ');
                }
                None => {
                    joined.push_str(line);
                    let command = std::mem::take(&mut joined);
                    let command = command.trim().trim_start_matches("$ ");
                    if command.starts_with("dynosim ") {
                        commands.push((start, shell_words(command)));
                    }
                }
            }
        }
    }
    commands
}

/// How a documented command is checked (see the module docs).
#[derive(Debug, PartialEq)]
enum Check {
    DryRun,
    RunForReal,
    ClapOnly,
}

fn check_for(words: &[String]) -> Check {
    match words.get(1).map(String::as_str) {
        Some("sweep") => Check::DryRun,
        Some("run" | "compare" | "completions") => Check::RunForReal,
        Some("man") if !words.iter().any(|w| w == "-o" || w.starts_with("--output")) => {
            Check::RunForReal
        }
        _ => Check::ClapOnly,
    }
}

/// A scratch folder that sees the repository's inputs at the same relative paths.
fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["data", "sweeps", "tests", "benches", "examples"] {
        std::os::unix::fs::symlink(root().join(name), dir.path().join(name))
            .unwrap_or_else(|e| panic!("link {name}: {e}"));
    }
    dir
}

/// Runs one documented command as `check` says; `Err` with what the binary said.
fn check_command(dir: &Path, words: &[String], check: &Check) -> Result<(), String> {
    let mut args: Vec<String> = words[1..].to_vec();
    match check {
        Check::DryRun => {
            if !args.iter().any(|a| a == "--dry-run") {
                args.push("--dry-run".into());
            }
        }
        Check::RunForReal => {
            if args[0] == "run" && !args.iter().any(|a| a == "--report-json") {
                args.push("--report-json".into());
                args.push("docs-check-report.json".into());
            }
        }
        Check::ClapOnly => args.push("--help".into()),
    }
    let out = cargo_bin_cmd!("dynosim")
        .args(&args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot start dynosim: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "exit {:?} with `dynosim {}`:\n{}",
            out.status.code(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn readme_commands_parse() {
    let readme = root().join("README.md");
    let commands = dynosim_commands(&read(&readme));
    assert!(
        commands.len() >= 3,
        "only {} dynosim commands found in README.md",
        commands.len()
    );
    let dir = sandbox();
    let mut failures = Vec::new();
    for (line, words) in &commands {
        let check = check_for(words);
        eprintln!("README.md:{line}: {check:?}: {}", words.join(" "));
        if let Err(e) = check_command(dir.path(), words, &check) {
            failures.push(format!("README.md:{line} ({check:?}): {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn docs_commands_parse_at_clap_level() {
    let dir = sandbox();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in doc_files().into_iter().skip(1) {
        for (line, words) in dynosim_commands(&read(&file)) {
            count += 1;
            eprintln!("{}:{line}: ClapOnly: {}", file.display(), words.join(" "));
            if let Err(e) = check_command(dir.path(), &words, &Check::ClapOnly) {
                failures.push(format!("{}:{line}: {e}", file.display()));
            }
        }
    }
    assert!(count > 0, "no dynosim command found in docs/");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_command_checks_refuse_what_clap_or_the_spec_refuses() {
    let dir = sandbox();
    let words = |s: &str| shell_words(s);
    for bad in [
        "dynosim run data/mooncake_conversation_trace.jsonl.gz --no-such-flag",
        "dynosim run --num-workers four",
        "dynosim run --router-mode random",
        "dynosim compare a.json b.json c.json",
        "dynosim merge shards/0 --no-such-flag",
    ] {
        assert!(
            check_command(dir.path(), &words(bad), &Check::ClapOnly).is_err(),
            "the clap-level check accepted `{bad}`"
        );
    }
    assert!(check_command(
        dir.path(),
        &words("dynosim sweep sweeps/quickstart.yaml --jobs many"),
        &Check::DryRun
    )
    .is_err());
    assert!(check_command(
        dir.path(),
        &words("dynosim sweep sweeps/no_such_spec.yaml"),
        &Check::DryRun
    )
    .is_err());
}

#[test]
fn shell_lines_are_split_as_a_shell_would() {
    let text = "```sh\ndynosim run t.jsonl --extra-engine-args '{\"block_size\":64}' \\\n  \
                --num-workers 4   # four\ndynosim man | man -l -\ncargo test\n```\n\
                ```text\ndynosim: note: not a command\n```\n";
    let commands = dynosim_commands(text);
    assert_eq!(commands.len(), 2);
    assert_eq!(commands[0].0, 2);
    assert_eq!(
        commands[0].1,
        [
            "dynosim",
            "run",
            "t.jsonl",
            "--extra-engine-args",
            "{\"block_size\":64}",
            "--num-workers",
            "4"
        ]
    );
    assert_eq!(commands[1].1, ["dynosim", "man"]);
    assert_eq!(check_for(&commands[1].1), Check::RunForReal);
}

#[test]
fn readme_is_a_landing_page() {
    let text = read(&root().join("README.md"));
    let lines = text.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; the limit is 300"
    );
    let first_section = text
        .lines()
        .find(|l| l.starts_with("## "))
        .unwrap_or_default();
    assert_eq!(first_section, "## Quick start");
    let quick_start = text
        .split("## Quick start")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_default();
    let (_, blocks) = split_fences(quick_start);
    assert_eq!(blocks.len(), 1, "the Quick start holds one code block");
    assert_eq!(
        blocks[0].lines,
        [
            "cargo run --release -- sweep sweeps/quickstart.yaml",
            "cargo test --release"
        ]
    );
}
