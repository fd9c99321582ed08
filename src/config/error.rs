//! [`ConfigError`]: what a config says that cannot be used, and where it says it.

use std::fmt;

/// A configuration that cannot be used, located as precisely as possible.
///
/// Displays as one line: `configs/x.toml:7:1: train.batch_size must be > 0, got 0`, or
/// `--set train.batch_size=0: ...` when the value came from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where: `file:line:col`, `file`, or `--set key=value`.
    pub origin: String,
    /// The dotted key at fault, when one is known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// A path as the text a config holds. A config (TOML) and a run's JSON records are UTF-8 only,
/// so a path whose bytes are not UTF-8 is refused in one line (naming what gave it) rather than
/// recorded with U+FFFD in place of the user's bytes, which would name another file.
pub fn path_text(what: &str, path: &std::path::Path) -> Result<String, ConfigError> {
    path.to_str().map(str::to_owned).ok_or_else(|| ConfigError {
        origin: what.to_string(),
        key: None,
        message: format!(
            "{path:?} is not valid UTF-8, and tidemark records this path in its config and \
             JSON files, which hold text only: rename it, or choose another"
        ),
    })
}

/// An error's text on one line, for a record or a table cell that holds one: its lines trimmed
/// and joined with "; " (an error's detail goes on the lines after its headline).
pub fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join("; ")
}

/// An error's headline: its first line, which says what and where (its detail follows).
pub fn headline(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// `text` cut to `max` characters with `…` where it is longer: a value quoted in an error (a
/// `--set` the user wrote, a number serde prints in full) never pushes the error's line past
/// what a terminal shows.
pub(crate) fn clipped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((cut, _)) if text.chars().count() > max => format!("{}…", &text[..cut]),
        _ => text.to_string(),
    }
}

/// `text` with each value quoted in backticks (serde's way) cut to `max` characters.
pub(crate) fn clipped_quotes(text: &str, max: usize) -> String {
    text.split('`')
        .enumerate()
        .map(|(i, part)| match i % 2 {
            1 => clipped(part, max),
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join("`")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_quoted_value_is_clipped_and_a_short_one_kept() {
        assert_eq!(super::clipped("abcdef", 4), "abc…");
        assert_eq!(super::clipped("abcd", 4), "abcd");
        assert_eq!(super::clipped("ééééé", 3), "éé…");
        let serde = "invalid type: floating point `-0.000000000000001702`, expected a string";
        assert_eq!(
            super::clipped_quotes(serde, 8),
            "invalid type: floating point `-0.0000…`, expected a string"
        );
    }
}
