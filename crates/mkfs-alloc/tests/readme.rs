//! The README's library example is the crate's documentation example (which
//! `cargo test` runs): the two cannot drift apart.

/// The first ```` ```rust ```` block after `marker` in `text`.
fn rust_block<'a>(text: &'a str, marker: &str) -> &'a str {
    let from = text.find(marker).expect("the marker");
    let rest = &text[from..];
    let start = rest.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let len = rest[start..].find("```").expect("the block's end");
    &rest[start..start + len]
}

#[test]
fn the_readme_example_is_the_doc_example() {
    let readme = include_str!("../../../README.md");
    let shown = rust_block(readme, "## As a library");
    let lib = include_str!("../src/lib.rs");
    // The crate docs' first example, without the `//! ` prefix and without
    // the hidden lines (set-up, checks and clean-up).
    let start = lib.find("//! ```\n").expect("a doc example") + "//! ```\n".len();
    let len = lib[start..].find("//! ```").expect("its end");
    let doc: String = lib[start..start + len]
        .lines()
        .map(|l| l.strip_prefix("//!").unwrap_or(l))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .filter(|l| !l.starts_with("# ") && *l != "#")
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        shown, doc,
        "README.md and crates/mkfs-alloc/src/lib.rs differ"
    );
    // Under ten lines of the public API (the `use` lines and blank lines
    // aside).
    let api = shown
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("use "))
        .count();
    assert!(api < 10, "{api} lines");
}
