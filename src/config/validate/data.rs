//! `[data]` read from its table: the kind (`data.kind`, or the one the keys given imply), that
//! kind's keys into its source's type, the rest into [`DataConfig`]; then the checks beyond
//! types, and the defaults that depend on the kind written in.

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::{choice, finite_in, misplaced, Invalid, Result};
use crate::config::fields::fields;
use crate::config::key_error::describe_key_error;
use crate::config::types::*;

/// Each kind's name and keys, in the order errors name them.
fn kinds() -> [(&'static str, &'static [&'static str]); 4] {
    [
        ("synthetic", fields::<SyntheticConfig>()),
        ("csv", fields::<CsvConfig>()),
        ("idx", fields::<IdxConfig>()),
        ("series", fields::<SeriesConfig>()),
    ]
}

/// The kind that the keys given imply, when `data.kind` is not set: a `window` is a series, an
/// `images` file is IDX, a `path` is a CSV; otherwise synthetic data.
fn implied_kind(table: &toml::Table) -> &'static str {
    let has = |key: &str| table.contains_key(key);
    if has("window") || has("column") {
        "series"
    } else if has("images") || has("labels") {
        "idx"
    } else if has("path") {
        "csv"
    } else {
        "synthetic"
    }
}

/// `table` as a `T`, each error located at its key under `data` and worded as the config's
/// own; a key `T` requires and `table` lacks is one `kind` requires.
fn read<T: DeserializeOwned>(table: toml::Table, kind: &str) -> Result<T> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let key = match e.path().to_string() {
            path if path == "." => "data".to_string(),
            path => format!("data.{path}"),
        };
        let inner = e.into_inner().to_string();
        if let Some(field) = inner.strip_prefix("missing field `") {
            let field = field.split('`').next().unwrap_or(field);
            return Invalid::new(
                &format!("data.{field}"),
                format_args!("is required with data.kind = \"{kind}\""),
            );
        }
        Invalid {
            message: describe_key_error(&key, &inner),
            key,
        }
    })
}

/// `[data]` as written (`table`), read and checked: the kind's keys by its source's type, a
/// key of another kind's refused naming the kinds that take it, an unknown one with the keys
/// the table takes.
pub(super) fn data(mut table: toml::Table) -> Result<DataConfig> {
    let kinds = kinds();
    let kind = match table.remove("kind") {
        Some(value) => {
            let name = String::deserialize(value).map_err(|e| Invalid {
                key: "data.kind".into(),
                message: describe_key_error("data.kind", &e.to_string()),
            })?;
            choice("data.kind", Some(&name), "", &kinds.map(|(k, _)| (k, k)))?
        }
        None => implied_kind(&table),
    };
    // A key of another kind's is refused, naming the kinds that take it.
    let every = kind_keys(&kinds);
    let takes: Vec<(&str, Vec<&str>)> = (every.iter())
        .map(|key| {
            let with = kinds.iter().filter(|(_, keys)| keys.contains(key));
            (*key, with.map(|(k, _)| *k).collect())
        })
        .collect();
    let takes: Vec<(&str, &[&str])> = takes.iter().map(|(k, w)| (*k, &w[..])).collect();
    let present: Vec<&'static str> = (every.iter().copied())
        .filter(|k| table.contains_key(*k))
        .collect();
    misplaced("data", &takes, &present, kind)?;
    if let Some(key) = (table.keys())
        .find(|k| !every.contains(&k.as_str()) && !fields::<DataConfig>().contains(&k.as_str()))
    {
        return Err(unknown(key, &every));
    }
    let own: toml::Table = (present.iter())
        .filter_map(|k| table.remove(*k).map(|v| (k.to_string(), v)))
        .collect();
    let source = match kind {
        "synthetic" => DataSource::Synthetic(read(own, kind)?),
        "csv" => DataSource::Csv(read(own, kind)?),
        "idx" => DataSource::Idx(read(own, kind)?),
        _ => DataSource::Series(read(own, kind)?),
    };
    let data = DataConfig {
        source,
        ..read(table, kind)?
    };
    checked(data)
}

/// The keys that only some kinds take, each once, in the kinds' order.
fn kind_keys(kinds: &[(&'static str, &'static [&'static str])]) -> Vec<&'static str> {
    let mut every: Vec<&'static str> = Vec::new();
    for key in kinds.iter().flat_map(|(_, keys)| *keys) {
        if !every.contains(key) {
            every.push(key);
        }
    }
    every
}

/// An unknown key's error, with every key `[data]` takes.
fn unknown(key: &str, kind_keys: &[&str]) -> Invalid {
    let every = std::iter::once("kind")
        .chain(kind_keys.iter().copied())
        .chain(fields::<DataConfig>().iter().copied());
    let expected: Vec<String> = every.map(|k| format!("`{k}`")).collect();
    let inner = format!(
        "unknown field `{key}`, expected one of {}",
        expected.join(", ")
    );
    let key = format!("data.{key}");
    Invalid {
        message: describe_key_error(&key, &inner),
        key,
    }
}

/// `data`'s checks beyond its types, its files' presence among them, with each default that
/// depends on the kind written in (a CSV's label column, `stratify`, `standardize`). Every
/// value comes from a table (a builder's setters write one too), so its counts are in range.
fn checked(mut data: DataConfig) -> Result<DataConfig> {
    match &mut data.source {
        DataSource::Synthetic(s) => {
            if s.classes < 2 {
                return Err(Invalid::new(
                    "data.classes",
                    format_args!("must be >= 2, got {}", s.classes),
                ));
            }
            finite_in("data.noise", s.noise, 0.0, f64::MAX, "a finite number >= 0")?;
        }
        DataSource::Csv(c) => {
            if c.label_column.is_some() && c.target_column.is_some() {
                return Err(Invalid::new(
                    "data.target_column",
                    "makes the run a regression, and data.label_column a classification; set \
                     one",
                ));
            }
            existing("data.path", &c.path)?;
            if c.target_column.is_none() && c.label_column.is_none() {
                c.label_column = Some(Column::last());
            }
        }
        DataSource::Idx(i) => {
            existing("data.images", &i.images)?;
            existing("data.labels", &i.labels)?;
        }
        DataSource::Series(s) => {
            existing("data.path", &s.path)?;
        }
    }
    // `false` is what a run without classes writes back into its config.toml.
    if !data.has_classes() && data.stratify == Some(true) {
        return Err(Invalid::new(
            "data.stratify",
            "needs classes (data.label_column, synthetic or idx data); values to predict have \
             none",
        ));
    }
    data.stratify = Some(data.stratify());
    data.standardize = Some(data.standardize());
    finite_in(
        "data.validation_fraction",
        data.validation_fraction,
        f64::MIN_POSITIVE,
        1.0,
        "in (0, 1)",
    )?;
    Ok(data)
}

/// `path` names a file, or the error that says `key` does not.
fn existing(key: &str, path: &std::path::Path) -> Result<()> {
    if path.is_file() {
        Ok(())
    } else {
        Err(Invalid::new(
            key,
            format_args!("names a file that does not exist: {}", path.display()),
        ))
    }
}
