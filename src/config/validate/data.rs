//! `[data]`.

use std::path::PathBuf;

use super::{choice, finite_in, non_negative, positive, Invalid, Result};
use crate::config::defaults;
use crate::config::raw::*;
use crate::config::types::*;

/// An error if a key is present that only applies with another `data.kind`.
fn misplaced_key(key: &str, present: bool, with: &str) -> Result<()> {
    if present {
        Err(Invalid::new(
            key,
            format_args!("only applies with data.kind = \"{with}\""),
        ))
    } else {
        Ok(())
    }
}

pub(super) fn data(raw: RawData) -> Result<DataConfig> {
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Synthetic,
        Csv,
        Idx,
    }
    let kind = choice(
        "data.kind",
        raw.kind.as_deref(),
        Kind::Synthetic,
        &[
            ("synthetic", Kind::Synthetic),
            ("csv", Kind::Csv),
            ("idx", Kind::Idx),
        ],
    )?;
    let existing = |key: &str, path: Option<String>, kind: &str| -> Result<PathBuf> {
        let path = path.ok_or_else(|| {
            Invalid::new(key, format_args!("is required with data.kind = \"{kind}\""))
        })?;
        let path = PathBuf::from(path);
        if path.is_file() {
            Ok(path)
        } else {
            Err(Invalid::new(
                key,
                format_args!("names a file that does not exist: {}", path.display()),
            ))
        }
    };
    if kind != Kind::Idx {
        misplaced_key("data.images", raw.images.is_some(), "idx")?;
        misplaced_key("data.labels", raw.labels.is_some(), "idx")?;
    }
    let misplaced = misplaced_key;
    let source = match kind {
        Kind::Synthetic => {
            misplaced("data.path", raw.path.is_some(), "csv")?;
            misplaced("data.label_column", raw.label_column.is_some(), "csv")?;
            misplaced("data.header", raw.header.is_some(), "csv")?;
            let classes = positive("data.classes", raw.classes, defaults::CLASSES)?;
            if classes < 2 {
                return Err(Invalid::new(
                    "data.classes",
                    format_args!("must be >= 2, got {classes}"),
                ));
            }
            DataSource::Synthetic(SyntheticConfig {
                samples: positive("data.samples", raw.samples, defaults::SAMPLES)?,
                features: positive("data.features", raw.features, defaults::FEATURES)?,
                classes,
                seed: non_negative("data.seed", raw.seed, defaults::DATA_SEED)?,
                noise: finite_in(
                    "data.noise",
                    raw.noise.unwrap_or(defaults::NOISE),
                    0.0,
                    f64::MAX,
                    "a finite number >= 0",
                )?,
            })
        }
        Kind::Csv => {
            for (key, present) in [
                ("data.samples", raw.samples.is_some()),
                ("data.features", raw.features.is_some()),
                ("data.classes", raw.classes.is_some()),
                ("data.seed", raw.seed.is_some()),
                ("data.noise", raw.noise.is_some()),
            ] {
                misplaced(key, present, "synthetic")?;
            }
            let path = existing("data.path", raw.path, "csv")?;
            DataSource::Csv(CsvConfig {
                path,
                label_column: match raw.label_column {
                    None => Column::Index(-1),
                    Some(RawColumn::Index(i)) => Column::Index(i),
                    Some(RawColumn::Name(n)) => Column::Name(n),
                },
                header: raw.header,
            })
        }
        Kind::Idx => {
            for (key, present, with) in [
                ("data.samples", raw.samples.is_some(), "synthetic"),
                ("data.features", raw.features.is_some(), "synthetic"),
                ("data.classes", raw.classes.is_some(), "synthetic"),
                ("data.seed", raw.seed.is_some(), "synthetic"),
                ("data.noise", raw.noise.is_some(), "synthetic"),
                ("data.path", raw.path.is_some(), "csv"),
                ("data.label_column", raw.label_column.is_some(), "csv"),
                ("data.header", raw.header.is_some(), "csv"),
            ] {
                misplaced(key, present, with)?;
            }
            DataSource::Idx(IdxConfig {
                images: existing("data.images", raw.images, "idx")?,
                labels: existing("data.labels", raw.labels, "idx")?,
            })
        }
    };
    // Files get the treatment real data needs; synthetic data is generated centred, scaled and
    // balanced, and keeps its plain seeded split so that the benchmark workloads stay
    // comparable from version to version.
    let from_file = !matches!(source, DataSource::Synthetic(_));
    let standardize = raw.standardize.unwrap_or(from_file);
    Ok(DataConfig {
        source,
        standardize,
        stratify: raw.stratify.unwrap_or(from_file),
        validation_fraction: finite_in(
            "data.validation_fraction",
            raw.validation_fraction
                .unwrap_or(defaults::VALIDATION_FRACTION),
            f64::MIN_POSITIVE,
            1.0,
            "in (0, 1)",
        )?,
        num_workers: non_negative(
            "data.num_workers",
            raw.num_workers,
            defaults::NUM_WORKERS as u64,
        )? as usize,
    })
}
