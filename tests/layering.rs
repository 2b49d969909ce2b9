//! The crate's layering, read from its own sources: every `use` and every
//! `crate::` / `super::` / `self::` path of every file under `src/` is
//! resolved to the module it names, and
//!
//! - no modules import each other in a circle (a module is a file). A
//!   parent module may use its own children (the usual facade: `pub use
//!   child::Item`, shared types in `mod.rs`) while they use it; inside the
//!   app not even that: `app/mod.rs` and every folder's `mod.rs` import
//!   only what lies below them;
//! - no module imports one above it: the app above the worker, above the
//!   pipeline, above the model (README's Layout), and inside the app the
//!   shell above the views and the corpus window, above the text, panels,
//!   files and runs, above the widgets, above the settings;
//! - the pure modules (analysis, statistics, colour maps, captures, …)
//!   name neither egui nor candle;
//! - no study view imports another view (shared pieces are in
//!   `app::views::shared` or the widgets).
//!
//! A `mod` declaration is not an import, and unit tests (`mod tests`) are
//! left out: `use super::*` there is how Rust tests a module.
//!
//! A workspace of crates would give some of these rules for free: a crate
//! cannot import one that does not depend on it, and Cargo refuses a
//! cycle. The cuts that would fall out are `headscope-analysis` (analysis,
//! statistics, colour maps, captures: no egui, no candle), `headscope-model`
//! (model, kernels), `headscope-pipeline` (pipeline, corpus, export, CLI)
//! and the app (worker, app). The project stays one crate all the same:
//! the rules inside a layer (the app's shell above its views, no view
//! importing another, no cycle between two files of the model) would still
//! need this test; one crate compiles once, where four would each pay for
//! their generic code again on two cores; and the Python binding, the
//! binary and the tests reach every layer through one `headscope` path.
//! This test checks the boundaries such a split would, and the finer ones
//! too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path below the crate root, e.g. `["app", "views", "shared"]`.
type ModulePath = Vec<String>;

/// One file of `src/`: its module, its code without comments and unit
/// tests, and the child modules it declares.
struct SourceFile {
    module: ModulePath,
    code: String,
    children: BTreeSet<String>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/app/views/mod.rs` → `app::views`; `src/lib.rs` → the root.
fn module_of(src: &Path, file: &Path) -> ModulePath {
    let relative = file.strip_prefix(src).expect("a file under src/");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The code without comments (line and block) and string literals, so a
/// path in prose or in a message is not read as an import.
fn strip_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && is_raw_string(&chars, i) {
            // r"…", r#"…"#
            let mut j = i + 1;
            let mut hashes = 0;
            while chars[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && is_char_literal(&chars, i) {
            // '"' and '\'' would otherwise open a string.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_raw_string(chars: &[char], i: usize) -> bool {
    let before_ok = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    before_ok && chars.get(j) == Some(&'"')
}

/// A char literal, not a lifetime: `'x'` or `'\n'`.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!(
        (chars.get(i + 1), chars.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// The code without `#[cfg(test)] mod tests { … }`.
fn without_unit_tests(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(found) = out[from..].find("#[cfg(test)]") {
        let start = from + found;
        let after = out[start + "#[cfg(test)]".len()..].trim_start();
        from = start + 1;
        if !(after.starts_with("mod ") || after.starts_with("pub mod ")) {
            continue;
        }
        let Some(brace) = out[start..].find('{') else {
            break;
        };
        let mut depth = 0;
        let mut end = start + brace;
        for (offset, c) in out[start + brace..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + brace + offset + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(start..end, "");
        from = start;
    }
    out
}

/// The child modules a file declares (`mod x;`, `pub mod x;`).
fn declared_children(code: &str) -> BTreeSet<String> {
    let mut children = BTreeSet::new();
    for line in code.lines() {
        let line = line.trim();
        let line = line
            .strip_prefix("pub ")
            .or_else(|| line.strip_prefix("pub(crate) "))
            .unwrap_or(line);
        if let Some(name) = line.strip_prefix("mod ") {
            if let Some(name) = name.strip_suffix(';') {
                children.insert(name.trim().to_string());
            }
        }
    }
    children
}

/// The paths one `use` tree names: `a::{b, c::d}` → `a::b`, `a::c::d`.
fn expand_use_tree(tree: &str) -> Vec<Vec<String>> {
    fn split_top(list: &str) -> Vec<&str> {
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0, 0);
        for (i, c) in list.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&list[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&list[start..]);
        parts
    }
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.trim();
    if tree.is_empty() {
        return Vec::new();
    }
    if let Some(open) = tree.find('{') {
        let prefix: Vec<String> = tree[..open]
            .trim_end_matches("::")
            .split("::")
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().to_string())
            .collect();
        let close = tree.rfind('}').expect("a closing brace");
        let mut paths = Vec::new();
        for part in split_top(&tree[open + 1..close]) {
            for sub in expand_use_tree(part) {
                let mut path = prefix.clone();
                path.extend(sub.into_iter().filter(|s| s != "self"));
                paths.push(path);
            }
        }
        return paths;
    }
    let plain = tree.split(" as ").next().unwrap_or(tree).trim();
    vec![plain
        .split("::")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s != "*")
        .collect()]
}

/// The paths a file's code names: its `use` trees and its inline
/// `crate::…`, `super::…` and `self::…` paths.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = find_use(rest) {
        let after = &rest[at..];
        let end = after.find(';').unwrap_or(after.len());
        paths.extend(expand_use_tree(&after[..end]));
        rest = &after[end..];
    }
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(start) {
            let at = from + found;
            from = at + start.len();
            let boundary = at == 0
                || !(bytes[at - 1].is_ascii_alphanumeric()
                    || bytes[at - 1] == b'_'
                    || bytes[at - 1] == b':');
            if !boundary {
                continue;
            }
            let end = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| at + e);
            let path: Vec<String> = code[at..end]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            paths.push(path);
        }
    }
    paths
}

/// Where the next `use` declaration's tree starts.
fn find_use(code: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(found) = code[from..].find("use ") {
        let at = from + found;
        from = at + 4;
        let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
        let before = code[line_start..at].trim();
        let starts_statement = before.is_empty()
            || before == "pub"
            || (before.starts_with("pub(") && before.ends_with(')'));
        if starts_statement && (at == 0 || !bytes[at - 1].is_ascii_alphanumeric()) {
            return Some(at + 4);
        }
    }
    None
}

/// The module `path` (named in `file`) refers to: the longest prefix that
/// is a module of the crate, or `None` for another crate or a local name.
fn resolve(
    file: &SourceFile,
    path: &[String],
    modules: &BTreeSet<ModulePath>,
) -> Option<ModulePath> {
    let first = path.first()?;
    let (mut absolute, rest): (ModulePath, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (file.module.clone(), &path[1..]),
        "super" => {
            let mut base = file.module.clone();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            (base, rest)
        }
        name if file.children.contains(name) => (file.module.clone(), path),
        _ => return None,
    };
    let mut best = modules.contains(&absolute).then(|| absolute.clone());
    for segment in rest {
        absolute.push(segment.clone());
        if modules.contains(&absolute) {
            best = Some(absolute.clone());
        } else {
            break;
        }
    }
    best
}

fn read_sources() -> Vec<SourceFile> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .iter()
        // The binary is its own crate: it only calls the library.
        .filter(|f| f.file_name().is_some_and(|n| n != "main.rs") || f.parent() != Some(&src))
        .map(|file| {
            let text = std::fs::read_to_string(file).expect("a readable source file");
            let code = without_unit_tests(&strip_comments_and_strings(&text));
            SourceFile {
                module: module_of(&src, file),
                children: declared_children(&code),
                code,
            }
        })
        .collect()
}

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        module.join("::")
    }
}

/// Every module and the modules it imports.
fn import_graph() -> (Vec<SourceFile>, BTreeMap<ModulePath, BTreeSet<ModulePath>>) {
    let files = read_sources();
    let modules: BTreeSet<ModulePath> = files.iter().map(|f| f.module.clone()).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let targets: BTreeSet<ModulePath> = named_paths(&file.code)
            .iter()
            .filter_map(|path| resolve(file, path, &modules))
            .filter(|target| *target != file.module)
            .collect();
        graph.insert(file.module.clone(), targets);
    }
    (files, graph)
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(graph: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) -> Vec<Vec<ModulePath>> {
    struct State<'a> {
        graph: &'a BTreeMap<ModulePath, BTreeSet<ModulePath>>,
        index: BTreeMap<&'a ModulePath, usize>,
        low: BTreeMap<&'a ModulePath, usize>,
        stack: Vec<&'a ModulePath>,
        on_stack: BTreeSet<&'a ModulePath>,
        next: usize,
        found: Vec<Vec<ModulePath>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a ModulePath) {
        state.index.insert(node, state.next);
        state.low.insert(node, state.next);
        state.next += 1;
        state.stack.push(node);
        state.on_stack.insert(node);
        let graph = state.graph;
        for target in graph.get(node).into_iter().flatten() {
            let Some((target, _)) = graph.get_key_value(target) else {
                continue;
            };
            if !state.index.contains_key(target) {
                visit(state, target);
                let low = state.low[target].min(state.low[node]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(target) {
                let low = state.index[target].min(state.low[node]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(member);
                component.push(member.clone());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.found
}

/// The layer of a module: a module may import only modules of a lower or
/// equal layer. The first rule whose prefix matches wins.
const LAYERS: &[(&str, u32)] = &[
    // Inside the app.
    ("app::shell", 14),
    ("app::views", 13),
    ("app::corpus", 13),
    ("app::text", 12),
    ("app::panels", 12),
    ("app::files", 12),
    ("app::runs", 12),
    ("app::startup", 12),
    ("app::widgets", 11),
    ("app::settings", 10),
    ("app::jobs", 10),
    ("app", 14),
    // The crate: the command line and the app, the worker, the pipeline,
    // the model, and the pure data and computation below them all.
    ("cli", 20),
    ("worker", 6),
    ("corpus", 5),
    ("capture_file", 5),
    ("pipeline", 4),
    ("report", 3),
    ("model", 3),
    ("input", 3),
    ("probe", 3),
    ("export", 2),
    ("npz", 2),
    ("head_map", 2),
    ("comparison", 1),
    ("corpus_stats", 1),
    ("analysis", 1),
    ("captures", 1),
    ("predictions", 1),
    ("colormap", 0),
    ("kernels", 0),
    ("tokens", 0),
    ("textfile", 0),
    ("atomic_file", 0),
    ("threads", 0),
    ("vector_store", 0),
];

fn layer_of(module: &[String]) -> Option<u32> {
    let joined = module.join("::");
    LAYERS
        .iter()
        .find(|(prefix, _)| joined == *prefix || joined.starts_with(&format!("{prefix}::")))
        .map(|&(_, layer)| layer)
}

/// Circles known and owned elsewhere, each by one of its modules, with
/// why: a circle through that module is tolerated, and the test fails once
/// it is gone so that the entry is removed.
const KNOWN_CIRCLES: &[(&str, &str)] = &[];

/// Imports against the layering known and owned elsewhere: (importer,
/// imported, why). The test fails once one is gone.
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[];

/// `graph` without the edges from a module into its own descendants.
fn without_facades(
    graph: &BTreeMap<ModulePath, BTreeSet<ModulePath>>,
) -> BTreeMap<ModulePath, BTreeSet<ModulePath>> {
    graph
        .iter()
        .map(|(module, targets)| {
            let kept = targets
                .iter()
                .filter(|t| !(t.len() > module.len() && t.starts_with(module)))
                .cloned()
                .collect();
            (module.clone(), kept)
        })
        .collect()
}

#[test]
fn no_module_imports_another_in_a_circle() {
    let (_, graph) = import_graph();
    assert!(
        graph.len() > 50,
        "the sources were read ({} modules)",
        graph.len()
    );
    let mut found = circles(&without_facades(&graph));
    // Inside the app, every edge counts.
    let app: BTreeMap<ModulePath, BTreeSet<ModulePath>> = graph
        .iter()
        .filter(|(m, _)| m.first().is_some_and(|f| f == "app"))
        .map(|(m, t)| (m.clone(), t.clone()))
        .collect();
    found.extend(circles(&app));
    let mut unknown = Vec::new();
    let mut seen = BTreeSet::new();
    for circle in &found {
        let names: Vec<String> = circle.iter().map(|m| name(m)).collect();
        match KNOWN_CIRCLES
            .iter()
            .find(|(member, _)| names.iter().any(|n| n == member))
        {
            Some((member, _)) => {
                seen.insert(*member);
            }
            None => unknown.push(names.join(" ↔ ")),
        }
    }
    assert!(
        unknown.is_empty(),
        "import circles:\n{}",
        unknown.join("\n")
    );
    for (member, why) in KNOWN_CIRCLES {
        assert!(
            seen.contains(member),
            "the circle through {member} ({why}) is gone: remove it from KNOWN_CIRCLES"
        );
    }
}

#[test]
fn no_module_imports_one_above_it() {
    let (files, graph) = import_graph();
    let mut wrong = Vec::new();
    let mut known = BTreeSet::new();
    for file in &files {
        let Some(own) = layer_of(&file.module) else {
            // The crate root only declares the modules.
            assert!(
                file.module.is_empty(),
                "{} has no layer in LAYERS",
                name(&file.module)
            );
            continue;
        };
        for target in &graph[&file.module] {
            // (The crate root itself is not a layer.)
            if let Some(theirs) = layer_of(target).filter(|&theirs| theirs > own) {
                let (from, to) = (name(&file.module), name(target));
                if KNOWN_UPWARD.iter().any(|(f, t, _)| *f == from && *t == to) {
                    known.insert((from, to));
                    continue;
                }
                wrong.push(format!(
                    "{} (layer {own}) imports {} (layer {theirs})",
                    name(&file.module),
                    name(target)
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
    for (from, to, why) in KNOWN_UPWARD {
        assert!(
            known.contains(&(from.to_string(), to.to_string())),
            "{from} no longer imports {to} ({why}): remove it from KNOWN_UPWARD"
        );
    }
}

#[test]
fn the_pure_modules_use_neither_egui_nor_candle() {
    let (files, _) = import_graph();
    let pure = [
        "analysis",
        "captures",
        "head_map",
        "predictions",
        "probe",
        "colormap",
        "kernels",
        "comparison",
        "corpus_stats",
        "export",
        "npz",
        "tokens",
        "atomic_file",
        "vector_store",
        "threads",
        "textfile",
    ];
    let mut wrong = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.module.first().is_some_and(|m| pure.contains(&m.as_str())))
    {
        for path in named_paths(&file.code) {
            if let Some(first) = path.first() {
                if ["egui", "eframe", "egui_plot", "candle_core", "candle_nn"]
                    .contains(&first.as_str())
                {
                    wrong.push(format!("{} uses {}", name(&file.module), path.join("::")));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "GUI or tensor code in pure modules:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_view_imports_another_view() {
    let (files, graph) = import_graph();
    let view_of = |module: &[String]| -> Option<String> {
        match module {
            [app, views, view, ..] if app == "app" && views == "views" => Some(view.clone()),
            _ => None,
        }
    };
    let mut views = BTreeSet::new();
    let mut wrong = Vec::new();
    for file in &files {
        let Some(own) = view_of(&file.module).filter(|v| v != "shared") else {
            continue;
        };
        views.insert(own.clone());
        for target in &graph[&file.module] {
            let registry = target.as_slice() == ["app", "views"];
            let other_view = view_of(target).is_some_and(|v| v != own && v != "shared");
            if registry || other_view {
                wrong.push(format!("{} imports {}", name(&file.module), name(target)));
            }
        }
    }
    assert!(views.len() >= 6, "the views were found: {views:?}");
    assert!(
        wrong.is_empty(),
        "views importing views:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_sees_imports_and_ignores_prose() {
    // The checks above are only as good as this reading of the sources.
    let code = strip_comments_and_strings(
        "use crate::a::{b, c::{d, e as f}, self};\n\
         // use crate::commented;\n\
         let s = \"crate::in_a_string\";\n\
         pub(crate) use super::g::H;\n\
         fn x() { crate::inline::call(); }\n",
    );
    let paths: BTreeSet<String> = named_paths(&code).iter().map(|p| p.join("::")).collect();
    for expected in [
        "crate::a::b",
        "crate::a::c::d",
        "crate::a::c::e",
        "crate::a",
        "super::g::H",
        "crate::inline::call",
    ] {
        assert!(paths.contains(expected), "{expected} in {paths:?}");
    }
    assert!(!paths
        .iter()
        .any(|p| p.contains("commented") || p.contains("in_a_string")));
    let tests = without_unit_tests(
        "use a::b;\n#[cfg(test)]\nmod tests {\n use super::*; { }\n}\nfn after() {}",
    );
    assert!(!tests.contains("super") && tests.contains("after"));
}

#[test]
fn a_circle_is_found_and_a_facade_is_not_one() {
    let module = |s: &str| -> ModulePath { s.split("::").map(str::to_string).collect() };
    let graph: BTreeMap<ModulePath, BTreeSet<ModulePath>> = [
        ("a", vec!["a::child"]),
        ("a::child", vec!["a"]),
        ("b", vec!["c"]),
        ("c", vec!["d"]),
        ("d", vec!["b"]),
    ]
    .into_iter()
    .map(|(m, targets)| (module(m), targets.into_iter().map(module).collect()))
    .collect();
    // Every edge: a ↔ a::child and b → c → d → b.
    assert_eq!(circles(&graph).len(), 2);
    // A parent using its child is its facade, not a circle.
    let found = circles(&without_facades(&graph));
    assert_eq!(found, vec![vec![module("b"), module("c"), module("d")]]);
    assert_eq!(layer_of(&module("app::views::heads")), Some(13));
    assert_eq!(layer_of(&module("app::widgets::head_grid")), Some(11));
}
