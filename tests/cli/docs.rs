//! The docs as files: every page reaches the doctests, every relative link and anchor resolves,
//! and the README's teaser is a piece of the doctest it points to.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.push(root().join("README.md"));
    pages
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces made hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(page: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut in_code = false;
    let mut found = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            found.insert(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

/// The `(target)` of every `[text](target)` outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut found = vec![];
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    found
}

#[test]
fn every_relative_link_in_the_docs_names_a_file_and_heading_that_exist() {
    let mut broken = vec![];
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in links(&text) {
            if link.starts_with("http") || link.starts_with("crate::") {
                continue;
            }
            let (file, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let name = page.strip_prefix(root()).unwrap().display().to_string();
            if !target.exists() {
                broken.push(format!("{name}: {link}: no such file"));
            } else if !fragment.is_empty() && !anchors(&target).contains(fragment) {
                broken.push(format!("{name}: {link}: no such heading"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_of_the_docs_is_a_doctest() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    // The README's one Rust block is checked against docs/library.md below.
    let readme = root().join("README.md");
    for page in pages().into_iter().filter(|p| *p != readme) {
        let relative = page.strip_prefix(root()).unwrap().display().to_string();
        let included = format!("include_str!(\"../{relative}\")");
        assert!(
            lib.contains(&included),
            "src/lib.rs does not include {relative}"
        );
    }
}

#[test]
fn the_readme_teaser_is_part_of_the_library_doctest() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let library = std::fs::read_to_string(root().join("docs/library.md")).unwrap();
    let fence = "```rust\n";
    let start = readme.find(fence).expect("the README has a Rust teaser") + fence.len();
    let teaser = &readme[start..start + readme[start..].find("```").unwrap()];
    assert!(teaser.lines().count() >= 10, "{teaser}");
    for line in teaser.lines() {
        assert!(library.contains(line), "not in docs/library.md: {line}");
    }
}
