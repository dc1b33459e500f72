//! The crate's modules form layers: no import cycle between them.
//!
//! Reads every file of `src/` (the binary excepted), collects the `crate::…` and `super::…` paths
//! it names outside its `#[cfg(test)]` module, maps each to a unit — a top-level module, or one
//! engine (`engines::greedy`, `engines::exact`, …) — and fails when any units form an import
//! cycle, naming the imports that close it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use petgraph::algo::tarjan_scc;
use petgraph::graphmap::DiGraphMap;

/// The module path of a source file, e.g. `src/engines/exact/lns.rs` → `engines::exact::lns`.
fn module_of(file: &Path, src: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|last| last == "mod" || last == "lib") {
        parts.pop();
    }
    parts
}

/// The unit a module path belongs to: its top-level module, or its engine.
fn unit_of(path: &[String]) -> Option<String> {
    match path {
        [] => None,
        [engines, engine, ..] if engines == "engines" && engine.chars().all(|c| c.is_ascii_lowercase() || c == '_') => {
            Some(format!("engines::{engine}"))
        }
        [first, ..] => Some(first.clone()),
    }
}

/// The file's code without its trailing `#[cfg(test)] mod tests` (tests may import freely) and
/// without line comments (doc links name modules without importing them).
fn code_of(text: &str) -> String {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    code.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Every path a `use` tree names, braces expanded: `a::{b, c::{d}}` → `a::b`, `a::c::d`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).trim().to_string()];
    };
    let prefix = tree[..open].trim();
    let inner = tree[open + 1..tree.rfind('}').unwrap_or(tree.len())].to_string();
    let mut items = Vec::new();
    let (mut depth, mut start) = (0_usize, 0_usize);
    for (index, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(inner[start..index].to_string());
                start = index + 1;
            }
            _ => {}
        }
    }
    items.push(inner[start..].to_string());
    items
        .iter()
        .filter(|item| !item.trim().is_empty())
        .flat_map(|item| expand(item))
        .map(|rest| if rest == "self" { prefix.trim_end_matches("::").to_string() } else { format!("{prefix}{rest}") })
        .collect()
}

/// The module paths a file's code names: `use` trees and inline `crate::`/`super::` paths,
/// resolved against the file's own module.
fn imports(text: &str, module: &[String]) -> BTreeSet<Vec<String>> {
    let mut paths: Vec<String> = Vec::new();
    for statement in text.split(';') {
        let statement = statement.trim_start();
        let body = statement.strip_prefix("pub(crate) use ").or_else(|| statement.strip_prefix("pub use "));
        let body = body.or_else(|| statement.strip_prefix("use "));
        if let Some(body) = body {
            paths.extend(expand(body));
        }
    }
    for start in ["crate::", "super::"] {
        let mut rest = text;
        while let Some(at) = rest.find(start) {
            let tail = &rest[at..];
            let end = tail.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(tail.len());
            paths.push(tail[..end].to_string());
            rest = &tail[start.len()..];
        }
    }
    let mut resolved = BTreeSet::new();
    for path in paths {
        let mut parts: Vec<&str> = path.split("::").filter(|part| !part.is_empty()).collect();
        let mut base: Vec<String> = match parts.first() {
            Some(&"crate") => {
                parts.remove(0);
                Vec::new()
            }
            Some(&"super") => {
                let mut base = module.to_vec();
                while parts.first() == Some(&"super") {
                    parts.remove(0);
                    base.pop();
                }
                base
            }
            _ => continue,
        };
        // Only lower-case segments are modules; `crate::Plan` names the root.
        base.extend(
            parts
                .iter()
                .take_while(|part| part.starts_with(|c: char| c.is_ascii_lowercase()))
                .map(|part| part.to_string()),
        );
        resolved.insert(base);
    }
    resolved
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|entry| entry.ok().map(|entry| entry.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "bin") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            out.push(path);
        }
    }
}

/// The import graph between units, each edge with one import that makes it.
fn unit_graph() -> BTreeMap<(String, String), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("src/ is readable");
        let module = module_of(&file, &src);
        let Some(from) = unit_of(&module) else { continue };
        for path in imports(&code_of(&text), &module) {
            if let Some(to) = unit_of(&path) {
                if to != from && !(to == "engines" && from.starts_with("engines::")) {
                    let shown = format!(
                        "{} names crate::{}",
                        file.strip_prefix(&src).unwrap_or(&file).display(),
                        path.join("::")
                    );
                    edges.entry((from.clone(), to)).or_insert(shown);
                }
            }
        }
    }
    edges
}

/// The strongly connected components of more than one unit.
fn cycles(edges: &BTreeMap<(String, String), String>) -> Vec<BTreeSet<String>> {
    let mut graph: DiGraphMap<&str, (), std::hash::RandomState> = DiGraphMap::default();
    for (from, to) in edges.keys() {
        graph.add_edge(from.as_str(), to.as_str(), ());
    }
    tarjan_scc(&graph)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| component.into_iter().map(str::to_string).collect())
        .collect()
}

#[test]
fn no_module_is_in_an_import_cycle() {
    let edges = unit_graph();
    let mut report = String::new();
    for cycle in cycles(&edges) {
        report.push_str(&format!("cycle through {cycle:?}:\n"));
        for ((from, to), shown) in &edges {
            if cycle.contains(from) && cycle.contains(to) {
                report.push_str(&format!("  {from} -> {to}: {shown}\n"));
            }
        }
    }
    assert!(report.is_empty(), "{report}");
}

/// The writers, adapters and front ends (docs/design.md's upper layers).
const UPPER: &[&str] = &["render", "report", "json", "control", "simulate", "sizing", "sagemaker", "execute"];

/// The core below the engines: types, the validated problem, plans and fleets, the checker and
/// the explanations.
const CORE: &[&str] =
    &["model", "index", "error", "violation", "text", "problem", "plan", "fleet", "verify", "explain"];

/// Whether `unit` is an engine or the engines' shared module.
fn is_engine(unit: &str) -> bool {
    unit == "engines" || unit.starts_with("engines::")
}

#[test]
fn engines_import_nothing_above_them_and_the_core_no_engine() {
    let mut report = String::new();
    for ((from, to), shown) in &unit_graph() {
        // The run limits and stop reasons are the one engine module the plan names.
        let allowed = from == "plan" && to == "engines::limits";
        let engine_upward = is_engine(from) && UPPER.contains(&to.as_str());
        let core_upward = CORE.contains(&from.as_str()) && (UPPER.contains(&to.as_str()) || is_engine(to));
        if (engine_upward || core_upward) && !allowed {
            report.push_str(&format!("  {from} -> {to}: {shown}\n"));
        }
    }
    assert!(report.is_empty(), "imports against the layers:\n{report}");
}

#[test]
fn the_cycle_finder_sees_a_cycle() {
    let edge = |from: &str, to: &str| ((from.to_string(), to.to_string()), String::new());
    let edges: BTreeMap<_, _> = [edge("a", "b"), edge("b", "c"), edge("c", "a"), edge("c", "d")].into_iter().collect();
    let found = cycles(&edges);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0], ["a", "b", "c"].iter().map(|unit| unit.to_string()).collect());
}

#[test]
fn the_graph_reader_sees_imports() {
    // The reader itself: a test that could not fail would prove nothing.
    let edges = unit_graph();
    assert!(edges.keys().any(|(from, to)| from == "engines::exact" && to == "problem"), "{edges:?}");
    assert_eq!(expand("a::{b, c::{d, e as f}, self}"), vec!["a::b", "a::c::d", "a::c::e", "a"]);
}
