//! `docs/contract.md` is the contract the code and documents cite: its internal links resolve,
//! and nothing in `src/` or `docs/` still cites the old external "spec §N".

use std::path::Path;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// GitHub's anchor of a Markdown heading: lowercase, punctuation dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|&ch| ch.is_alphanumeric() || ch == ' ' || ch == '-' || ch == '_')
        .map(|ch| if ch == ' ' { '-' } else { ch })
        .collect()
}

fn files_under(directory: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(directory).unwrap_or_else(|error| panic!("{}: {error}", directory.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn every_link_into_the_contract_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let contract = read(&root.join("docs/contract.md"));
    let anchors: Vec<String> =
        contract.lines().filter_map(|line| line.strip_prefix('#')).map(|h| anchor(h.trim_start_matches('#'))).collect();
    assert!(anchors.contains(&"13-unknown-keys-duplicate-keys-strict-mode".to_string()), "{anchors:?}");
    let mut files = Vec::new();
    files_under(&root.join("docs"), &mut files);
    let mut checked = 0;
    for path in files {
        let text = read(&path);
        let own = path.ends_with("contract.md");
        for (prefix, applies) in [("](#", own), ("](contract.md#", true)] {
            if !applies {
                continue;
            }
            for piece in text.split(prefix).skip(1) {
                let target = piece.split(')').next().unwrap_or("");
                assert!(anchors.iter().any(|a| a == target), "{}: broken link #{target}", path.display());
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} links checked");
}

#[test]
fn sources_and_docs_cite_the_contract_not_the_old_spec() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    files_under(&root.join("src"), &mut files);
    files_under(&root.join("docs"), &mut files);
    let stale: Vec<String> = files
        .iter()
        .filter(|path| read(path).to_lowercase().contains("spec §"))
        .map(|path| path.display().to_string())
        .collect();
    assert_eq!(stale, Vec::<String>::new(), "cite docs/contract.md §N instead");
}
