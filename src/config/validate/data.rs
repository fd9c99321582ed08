//! `[data]`.

use std::path::PathBuf;

use super::{choice, finite_in, misplaced, non_negative, positive, Invalid, Result};
use crate::config::defaults;
use crate::config::raw::*;
use crate::config::types::*;

/// The keys that only some kinds take, with those kinds.
const KIND_KEYS: &[(&str, &[&str])] = &[
    ("samples", &["synthetic"]),
    ("features", &["synthetic"]),
    ("classes", &["synthetic"]),
    ("seed", &["synthetic"]),
    ("noise", &["synthetic"]),
    ("path", &["csv", "series"]),
    ("header", &["csv", "series"]),
    ("label_column", &["csv"]),
    ("target_column", &["csv"]),
    ("images", &["idx"]),
    ("labels", &["idx"]),
    ("column", &["series"]),
    ("window", &["series"]),
    ("horizon", &["series"]),
    ("holdout", &["series"]),
    ("gaps", &["series"]),
    ("season", &["series"]),
];

/// The kind-specific keys present in `raw`.
fn present(raw: &RawData) -> Vec<&'static str> {
    [
        ("samples", raw.samples.is_some()),
        ("features", raw.features.is_some()),
        ("classes", raw.classes.is_some()),
        ("seed", raw.seed.is_some()),
        ("noise", raw.noise.is_some()),
        ("path", raw.path.is_some()),
        ("header", raw.header.is_some()),
        ("label_column", raw.label_column.is_some()),
        ("target_column", raw.target_column.is_some()),
        ("images", raw.images.is_some()),
        ("labels", raw.labels.is_some()),
        ("column", raw.column.is_some()),
        ("window", raw.window.is_some()),
        ("horizon", raw.horizon.is_some()),
        ("holdout", raw.holdout.is_some()),
        ("gaps", raw.gaps.is_some()),
        ("season", raw.season.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, here)| here.then_some(key))
    .collect()
}

/// The kind that the keys given imply, when `data.kind` is not set: a `window` is a series, an
/// `images` file is IDX, a `path` is a CSV; otherwise synthetic data.
fn implied_kind(raw: &RawData) -> &'static str {
    if raw.window.is_some() || raw.column.is_some() {
        "series"
    } else if raw.images.is_some() || raw.labels.is_some() {
        "idx"
    } else if raw.path.is_some() {
        "csv"
    } else {
        defaults::DATA_KIND
    }
}

fn existing(key: &str, path: Option<String>, kind: &str) -> Result<PathBuf> {
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
}

fn column(raw: RawColumn) -> Column {
    match raw {
        RawColumn::Index(i) => Column::Index(i),
        RawColumn::Name(n) => Column::Name(n),
    }
}

pub(super) fn data(raw: RawData) -> Result<DataConfig> {
    let kinds = ["synthetic", "csv", "idx", "series"];
    let kind = choice(
        "data.kind",
        raw.kind.as_deref(),
        implied_kind(&raw),
        &kinds.map(|k| (k, k)),
    )?;
    misplaced("data", KIND_KEYS, &present(&raw), kind)?;
    let source = match kind {
        "synthetic" => DataSource::Synthetic(synthetic(&raw)?),
        "csv" => DataSource::Csv(csv(&raw)?),
        "idx" => DataSource::Idx(IdxConfig {
            images: existing("data.images", raw.images.clone(), "idx")?,
            labels: existing("data.labels", raw.labels.clone(), "idx")?,
        }),
        _ => DataSource::Series(series(&raw)?),
    };
    // Files get the treatment real data needs; synthetic data is generated centred, scaled and
    // balanced, and keeps its plain seeded split so that the benchmark workloads stay
    // comparable from version to version. Only classes can be stratified.
    let from_file = !matches!(source, DataSource::Synthetic(_));
    let classes = match &source {
        DataSource::Csv(c) => c.target_column.is_none(),
        DataSource::Series(_) => false,
        DataSource::Synthetic(_) | DataSource::Idx(_) => true,
    };
    // `false` is what a run without classes writes back into its config.toml.
    if !classes && raw.stratify == Some(true) {
        return Err(Invalid::new(
            "data.stratify",
            "needs classes (data.label_column, synthetic or idx data); values to predict have \
             none",
        ));
    }
    Ok(DataConfig {
        source,
        standardize: raw.standardize.unwrap_or(from_file),
        stratify: raw.stratify.unwrap_or(from_file && classes),
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

fn synthetic(raw: &RawData) -> Result<SyntheticConfig> {
    let classes = positive("data.classes", raw.classes, defaults::CLASSES)?;
    if classes < 2 {
        return Err(Invalid::new(
            "data.classes",
            format_args!("must be >= 2, got {classes}"),
        ));
    }
    Ok(SyntheticConfig {
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

fn csv(raw: &RawData) -> Result<CsvConfig> {
    if raw.label_column.is_some() && raw.target_column.is_some() {
        return Err(Invalid::new(
            "data.target_column",
            "makes the run a regression, and data.label_column a classification; set one",
        ));
    }
    let target_column = raw.target_column.clone().map(column);
    Ok(CsvConfig {
        path: existing("data.path", raw.path.clone(), "csv")?,
        label_column: match (&target_column, raw.label_column.clone()) {
            (Some(_), _) => None,
            (None, label) => Some(label.map_or(Column::Index(defaults::LABEL_COLUMN), column)),
        },
        target_column,
        header: raw.header,
    })
}

fn series(raw: &RawData) -> Result<SeriesConfig> {
    let window = raw.window.ok_or_else(|| {
        Invalid::new(
            "data.window",
            "is required with data.kind = \"series\": how many past values each forecast sees",
        )
    })?;
    let gaps = choice(
        "data.gaps",
        raw.gaps.as_deref(),
        defaults::GAPS,
        &[
            GapPolicy::None,
            GapPolicy::Interpolate,
            GapPolicy::Previous,
            GapPolicy::Skip,
        ]
        .map(|g| (g.name(), g)),
    )?;
    Ok(SeriesConfig {
        path: existing("data.path", raw.path.clone(), "series")?,
        column: raw
            .column
            .clone()
            .map_or(Column::Index(defaults::SERIES_COLUMN), column),
        header: raw.header,
        window: positive("data.window", Some(window), 0)?,
        horizon: positive("data.horizon", raw.horizon, defaults::HORIZON)?,
        holdout: raw
            .holdout
            .map(|h| positive("data.holdout", Some(h), 0))
            .transpose()?,
        gaps,
        season: positive("data.season", raw.season, defaults::SEASON)?,
    })
}
