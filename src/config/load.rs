//! Reading a config file, applying `--set key=value` overrides, and pointing errors at the
//! line and column they come from.

use std::path::Path;

use super::error::{one_line, ConfigError};
use super::key_error::describe_key_error;
use super::overrides::Override;
use super::raw::RawConfig;
use super::types::RunConfig;
use super::validate::Invalid;

/// A program's check of a validated config: its model kinds' (`model.kind` is one it knows,
/// the kind's keys are right, and written back with their defaults filled in). Its error's key
/// is located as the config's own are.
pub type Check<'a> = &'a dyn Fn(&mut RunConfig) -> Result<(), Invalid>;

/// Where a configuration's text came from, for error locations.
struct Source<'a> {
    name: String,
    text: &'a str,
    overrides: &'a [Override],
}

impl Source<'_> {
    /// Locates `key`: an override that set it (or a table above it), else its position in the
    /// file, else the file name alone.
    fn locate(&self, key: &str) -> String {
        let base = key.split('[').next().unwrap_or(key);
        if let Some(o) = self.overrides.iter().rev().find(|o| {
            base == o.key
                || base.starts_with(&format!("{}.", o.key))
                || o.key.starts_with(&format!("{base}."))
        }) {
            return format!("--set {}", super::error::clipped(&o.text, 80));
        }
        match key_offset(self.text, base) {
            Some(offset) => {
                let (line, col) = line_col(self.text, offset);
                format!("{}:{line}:{col}", self.name)
            }
            None => self.name.clone(),
        }
    }

    fn error(&self, key: Option<String>, message: String) -> ConfigError {
        ConfigError {
            origin: match &key {
                Some(key) => self.locate(key),
                None => self.name.clone(),
            },
            key,
            message,
        }
    }
}

/// Loads and validates the config at `path`, with `overrides`. `[model]`'s keys are its kind's,
/// as written: [`load_checked`] with a program's kinds checks them
/// ([`Kinds::load`](crate::kinds::Kinds::load)), or the run does when it starts.
pub fn load(path: &Path, overrides: &[Override]) -> Result<RunConfig, ConfigError> {
    load_checked(path, overrides, &|_| Ok(()))
}

/// [`load`], then `check`.
pub fn load_checked(
    path: &Path,
    overrides: &[Override],
    check: Check<'_>,
) -> Result<RunConfig, ConfigError> {
    load_raw(path, overrides)?.config(check)
}

/// Parses and validates config `text`; `name` is used in error locations.
pub fn parse(text: &str, name: &str, overrides: &[Override]) -> Result<RunConfig, ConfigError> {
    parse_checked(text, name, overrides, &|_| Ok(()))
}

/// [`parse`], then `check`.
pub fn parse_checked(
    text: &str,
    name: &str,
    overrides: &[Override],
    check: Check<'_>,
) -> Result<RunConfig, ConfigError> {
    let source = Source {
        name: name.to_string(),
        text,
        overrides,
    };
    let raw = raw_of(&source)?;
    let located = |Invalid { key, message }| source.error(Some(key), message);
    let mut config = RunConfig::try_from(raw).map_err(located)?;
    check(&mut config).map_err(located)?;
    Ok(config)
}

/// `source`'s text as a [`RawConfig`]: TOML, with the overrides applied, in the config's types.
fn raw_of(source: &Source<'_>) -> Result<RawConfig, ConfigError> {
    let table = table_of(source.text, &source.name, source.overrides)?;
    read(table).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner().to_string();
        let message = describe_key_error(&key, &inner);
        source.error(Some(key).filter(|k| k != "."), message)
    })
}

/// A config file read as written, with its overrides: the first stage of the tables that are
/// not a run's own (`[sweep]`), whose validation is their reader's.
pub struct RawFile {
    /// The file's keys, in the config's types.
    pub raw: RawConfig,
    name: String,
    text: String,
    overrides: Vec<Override>,
}

impl RawFile {
    /// Whether the file or an override writes the dotted `key` (a table's key left out reads
    /// as its default, which the table's type cannot tell from the same value written).
    pub fn sets(&self, key: &str) -> bool {
        let Ok(table) = table_of(&self.text, &self.name, &self.overrides) else {
            return false;
        };
        let mut parts = key.split('.').peekable();
        let mut table = &table;
        while let Some(part) = parts.next() {
            match (table.get(part), parts.peek()) {
                (Some(_), None) => return true,
                (Some(toml::Value::Table(inner)), Some(_)) => table = inner,
                _ => return false,
            }
        }
        false
    }

    /// The error that `key` is wrong (`message`), located at the override that set it or its
    /// place in the file.
    pub fn error(&self, key: &str, message: String) -> ConfigError {
        let source = Source {
            name: self.name.clone(),
            text: &self.text,
            overrides: &self.overrides,
        };
        source.error(Some(key.to_string()), message)
    }

    /// The run's config the file gives: validated, then `check`ed (a program's kinds), each
    /// error located as [`error`](Self::error) locates it. One read of a file gives both this
    /// and the tables that are not a run's own (a search's `[sweep]`).
    pub fn config(&self, check: Check<'_>) -> Result<RunConfig, ConfigError> {
        let located = |Invalid { key, message }| self.error(&key, message);
        let mut config = RunConfig::try_from(self.raw.clone()).map_err(located)?;
        check(&mut config).map_err(located)?;
        Ok(config)
    }
}

/// The config file at `path`, with `overrides` applied, read into the config's types but not
/// validated: for the tables that are not a run's config (`[sweep]`).
pub fn load_raw(path: &Path, overrides: &[Override]) -> Result<RawFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        origin: path.display().to_string(),
        key: None,
        message: format!("cannot read config file: {e}"),
    })?;
    let source = Source {
        name: path.display().to_string(),
        text: &text,
        overrides,
    };
    let raw = raw_of(&source)?;
    Ok(RawFile {
        raw,
        name: source.name,
        text,
        overrides: overrides.to_vec(),
    })
}

/// `table` in the config's types. `train.lr = "find"`, a word where a rate goes, is taken out
/// of the table and read as the setting it names, `train.find_lr` (the rate then the default,
/// until the finder's replaces it).
pub(super) fn read(
    mut table: toml::Table,
) -> Result<RawConfig, serde_path_to_error::Error<toml::de::Error>> {
    let train = table.get_mut("train").and_then(toml::Value::as_table_mut);
    let find = train.is_some_and(|train| {
        let find = train.get("lr").and_then(toml::Value::as_str) == Some("find");
        if find {
            train.remove("lr");
        }
        find
    });
    let mut raw: RawConfig = serde_path_to_error::deserialize(toml::Value::Table(table))?;
    raw.train.find_lr = find;
    Ok(raw)
}

/// `text` (named `name` in errors) parsed as TOML, with `overrides` applied.
fn table_of(text: &str, name: &str, overrides: &[Override]) -> Result<toml::Table, ConfigError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| {
        let origin = match e.span() {
            Some(span) => {
                let (line, col) = line_col(text, span.start);
                format!("{name}:{line}:{col}")
            }
            None => name.to_string(),
        };
        ConfigError {
            origin,
            key: None,
            // The parser's message can run over lines ("invalid escape sequence", then what
            // was expected); errors are one line.
            message: format!("invalid TOML: {}", one_line(e.message())),
        }
    })?;
    for o in overrides {
        o.apply_to(&mut table)?;
    }
    Ok(table)
}

/// Byte offset of the dotted `key` in TOML `text`, or of its closest enclosing table.
fn key_offset(text: &str, key: &str) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut table: &dyn toml_edit::TableLike = doc.as_table();
    let mut found = None;
    // A key that is not written (a required one, missing) is placed at its table's.
    for part in key.split('.') {
        let Some((k, item)) = table.get_key_value(part) else {
            break;
        };
        found = k.span().map(|s| s.start).or(found);
        match item.as_table_like() {
            Some(t) => table = t,
            None => break,
        }
    }
    found
}

/// One-based line and column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The resolved configuration as TOML, every default filled in. Loading it gives back the
/// same [`RunConfig`].
pub fn to_toml(config: &RunConfig) -> String {
    let text = toml::to_string_pretty(config).expect("a validated config always serialises");
    if !config.train.find_lr {
        return text;
    }
    // `train.lr = "find"`, as written: the rate is the finder's, not the default held in `lr`.
    let mut table: toml::Table = toml::from_str(&text).expect("config is TOML");
    if let Some(toml::Value::Table(train)) = table.get_mut("train") {
        train.insert("lr".into(), toml::Value::String("find".into()));
    }
    toml::to_string_pretty(&table).expect("a TOML table serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "[run]\nname = \"t\"\n\n[train]\nepochs = 1\nbatch_size = 0\n";

    #[test]
    fn validation_errors_point_at_the_key() {
        let err = parse(FILE, "x.toml", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.toml:6:1: train.batch_size must be > 0, got 0"
        );
    }

    #[test]
    fn unknown_keys_are_named_with_their_section() {
        let err = parse("[train]\nbatch_sise = 4\n", "x.toml", &[]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(
                "x.toml:2:1: unknown key train.batch_sise (did you mean train.batch_size?)\n  \
                 expected one of epochs, batch_size, "
            ),
            "{text}"
        );
        let err = parse("[trian]\nepochs = 1\n", "x.toml", &[]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("x.toml:1:2: unknown key trian (did you mean train?)"),
            "{err}"
        );
        // Nothing near: no guess, the list only.
        let err = parse("[train]\nzzz = 4\n", "x.toml", &[]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("x.toml:2:1: unknown key train.zzz\n  expected one of "),
            "{text}"
        );
    }

    #[test]
    fn type_errors_name_the_key() {
        let err = parse("[train]\nepochs = \"many\"\n", "x.toml", &[]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("x.toml:2:1: train.epochs: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn syntax_errors_have_a_location() {
        let err = parse("[train\nepochs = 1\n", "x.toml", &[]).unwrap_err();
        assert!(err.to_string().starts_with("x.toml:1:"), "{err}");
        assert!(err.message.starts_with("invalid TOML"), "{err}");
    }

    #[test]
    fn overrides_replace_file_values_and_are_blamed_for_errors() {
        let fixed = parse(
            FILE,
            "x.toml",
            &[Override::parse("train.batch_size=64").unwrap()],
        )
        .unwrap();
        assert_eq!(fixed.train.batch_size, 64);
        let named = parse(
            FILE,
            "x.toml",
            &[
                Override::parse("train.batch_size=8").unwrap(),
                Override::parse("run.name=other").unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(named.run.name, "other");
        let err = parse(
            FILE,
            "x.toml",
            &[
                Override::parse("train.accumulation_steps=-2").unwrap(),
                Override::parse("train.batch_size=1").unwrap(),
            ],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "--set train.accumulation_steps=-2: train.accumulation_steps must be > 0, got -2"
        );
        let err = parse("", "x.toml", &[Override::parse("train.bogus=1").unwrap()]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--set train.bogus=1: unknown key train.bogus"),
            "{err}"
        );
    }

    #[test]
    fn malformed_overrides_are_rejected() {
        assert!(Override::parse("train.batch_size").is_err());
        assert!(Override::parse("train..x=1").is_err());
        assert!(Override::parse("=1").is_err());
    }

    #[test]
    fn resolved_config_round_trips() {
        let cfg = parse(
            FILE,
            "x.toml",
            &[Override::parse("train.batch_size=3").unwrap()],
        )
        .unwrap();
        let again = parse(&to_toml(&cfg), "resolved.toml", &[]).unwrap();
        assert_eq!(cfg, again);
    }
}
