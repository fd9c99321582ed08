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

/// A number as an error quotes it: as written where that is short, in exponent form where
/// plain digits would run long (`2.6e306`, not 307 digits; `1e-300`, not 300 zeros).
#[derive(Debug, Clone, Copy)]
pub struct Number(pub f64);

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plain = self.0.to_string();
        match plain.len() > 24 {
            true => write!(f, "{:e}", self.0),
            false => f.write_str(&plain),
        }
    }
}

/// A TOML value as an error quotes it: a float as [`Number`] writes it, any other value cut to
/// 80 characters.
pub(crate) fn quoted(value: &toml::Value) -> String {
    match value {
        toml::Value::Float(f) => Number(*f).to_string(),
        other => clipped(&other.to_string(), 80),
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

    #[test]
    fn a_number_runs_long_only_in_exponent_form() {
        use super::Number;
        assert_eq!(Number(0.001).to_string(), "0.001");
        assert_eq!(Number(-3.0).to_string(), "-3");
        assert_eq!(
            Number(2.638128847576501e306).to_string(),
            "2.638128847576501e306"
        );
        assert_eq!(Number(-1e-300).to_string(), "-1e-300");
        assert_eq!(Number(f64::NAN).to_string(), "NaN");
    }
}
