//! The shape of `src/`, checked from its imports: every module lives on a floor, and a module
//! imports only from floors below its own (never up, never sideways into another room of the
//! same floor); no two files import each other, directly or round a circle; no file is longer
//! than `MAX_FILE_LINES`. A new module must be given a floor here, which is the point: where it
//! sits in the data flow is decided, not drifted into.
//!
//! Imports are read as text: every `crate::a::b`, `super::…` and `self::…` path in a file's
//! shipped code, resolved to the longest module that exists as a file. Unit tests are left out
//! (an inline `#[cfg(test)] mod tests { … }`, a sibling `tests.rs`): a test may build its fixture
//! with a stage above the one it tests (parse a trace to test block sharing), which is no route
//! the program takes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Rooms, bottom floor first. A room is a top-level module, or a folder inside one that has a
/// floor of its own (`workload` holds the requests and their shared block and session machinery, `workload::formats` parses files into them).
const FLOORS: &[&[&str]] = &[
    &["error", "signals"],
    &["output_file"],
    &["timing", "workload"],
    &["workload::formats"],
    &["config"],
    &["calibrate"],
    &["engine"],
    &["router", "report"],
    &["sim"],
    &["sweep"],
    &["cli", "compare"],
    &["run"],
    &["validate", "deploy"],
    &["calibrate::command"],
];

const MAX_FILE_LINES: usize = 1500;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/` (but the binary's `main.rs`) with its module path.
fn modules() -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &mut files);
    let mut mods = BTreeMap::new();
    for path in files {
        let rel = path.strip_prefix(src()).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        if parts == ["main"] {
            continue;
        }
        if parts == ["lib"] {
            parts.clear();
        }
        mods.insert(parts, path);
    }
    mods
}

/// The module a path names: the longest prefix of it that is a file.
fn resolve(
    mods: &BTreeMap<Vec<String>, PathBuf>,
    here: &[String],
    is_mod_file: bool,
    path: &str,
) -> Option<Vec<String>> {
    let mut parts = path.split("::").peekable();
    let mut cur: Vec<String> = match parts.peek().copied() {
        Some("crate") => {
            parts.next();
            Vec::new()
        }
        Some("super") => {
            // `super` of `a/b.rs` (module a::b) is `a`; of `a/b/mod.rs` (also a::b) it is `a`.
            let _ = is_mod_file;
            let mut cur = here.to_vec();
            while parts.peek() == Some(&"super") {
                parts.next();
                cur.pop();
            }
            cur
        }
        Some("self") => {
            parts.next();
            here.to_vec()
        }
        _ => return None,
    };
    let mut best = mods.contains_key(&cur).then(|| cur.clone());
    for part in parts {
        cur.push(part.to_string());
        if mods.contains_key(&cur) {
            best = Some(cur.clone());
        } else {
            break;
        }
    }
    best
}

/// The `crate::…`/`super::…`/`self::…` paths a file names, with `{a, b::c}` groups expanded
/// one level (enough for `use crate::x::{y, z}`).
fn paths_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = text[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            if at > 0 && (is_ident(bytes[at - 1]) || bytes[at - 1] == b':') {
                continue;
            }
            let mut end = at;
            while end < bytes.len() && (is_ident(bytes[end]) || bytes[end] == b':') {
                end += 1;
            }
            let head = text[at..end].trim_end_matches(':').to_string();
            if text[end..].starts_with('{') {
                if let Some(close) = text[end..].find('}') {
                    for item in text[end + 1..end + close].split(',') {
                        let item = item.split_whitespace().next().unwrap_or("");
                        let item = item.trim_end_matches(':');
                        if !item.is_empty() && item != "self" {
                            out.push(format!("{head}::{item}"));
                        }
                    }
                }
            }
            out.push(head);
        }
    }
    out
}

/// A file's text up to its inline unit tests (by convention the last item of a file).
fn shipped_code(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    }
}

fn room_of(module: &[String]) -> Option<String> {
    if module.is_empty() {
        return None;
    }
    let two = module
        .iter()
        .take(2)
        .cloned()
        .collect::<Vec<_>>()
        .join("::");
    if FLOORS.iter().any(|f| f.contains(&two.as_str())) {
        return Some(two);
    }
    Some(module[0].clone())
}

fn floor_of(room: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&room))
}

/// File-level edges: module -> modules it names (not its own ancestors).
fn edges() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mods = modules();
    let mut edges = BTreeMap::new();
    for (module, path) in &mods {
        if module.last().is_some_and(|m| m == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let text = shipped_code(&text);
        let is_mod_file = path
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
        let mut to = BTreeSet::new();
        for p in paths_in(text) {
            if let Some(target) = resolve(&mods, module, is_mod_file, &p) {
                let ancestor = target.len() <= module.len() && module[..target.len()] == target[..];
                if !ancestor {
                    to.insert(target);
                }
            }
        }
        edges.insert(module.clone(), to);
    }
    edges
}

#[test]
fn every_room_has_a_floor() {
    let missing: BTreeSet<String> = modules()
        .keys()
        .filter_map(|m| room_of(m))
        .filter(|r| floor_of(r).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "rooms without a floor in FLOORS: {missing:?}"
    );
}

#[test]
fn imports_only_run_down() {
    let mut up = Vec::new();
    for (from, tos) in edges() {
        let Some(from_room) = room_of(&from) else {
            continue;
        };
        for to in tos {
            let Some(to_room) = room_of(&to) else {
                continue;
            };
            if from_room == to_room {
                continue;
            }
            // A folder's own sub-room (`workload` -> `workload::formats`) is below it by FLOORS.
            let (Some(a), Some(b)) = (floor_of(&from_room), floor_of(&to_room)) else {
                continue;
            };
            if b >= a {
                up.push(format!(
                    "{} -> {} ({from_room} floor {a}, {to_room} floor {b})",
                    from.join("::"),
                    to.join("::")
                ));
            }
        }
    }
    assert!(
        up.is_empty(),
        "imports that do not run down:\n{}",
        up.join("\n")
    );
}

#[test]
fn no_import_circles_between_files() {
    let edges = edges();
    // Tarjan's strongly connected components, iterative enough for a few hundred files.
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        circles: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            let Some((w, _)) = s.edges.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.circles.push(component);
            }
        }
    }
    let mut s = State {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        circles: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    assert!(
        s.circles.is_empty(),
        "files that import each other: {:?}",
        s.circles
    );
}

#[test]
fn no_file_is_too_long() {
    let long: Vec<String> = modules()
        .values()
        .filter_map(|p| {
            let n = std::fs::read_to_string(p).unwrap().lines().count();
            (n > MAX_FILE_LINES).then(|| format!("{} ({n} lines)", p.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines: {long:?}"
    );
}

#[test]
fn the_reader_finds_imports() {
    // The scanner itself: groups, nested paths, `super`.
    let found = paths_in("use crate::a::{b, c::d};\nlet x = super::e::f(1);");
    assert!(found.contains(&"crate::a::b".to_string()), "{found:?}");
    assert!(found.contains(&"crate::a::c::d".to_string()), "{found:?}");
    assert!(found.contains(&"super::e::f".to_string()), "{found:?}");
    let code = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::z;\n}\n";
    assert_eq!(paths_in(shipped_code(code)), ["crate::a"]);
}
