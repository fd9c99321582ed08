//! Univariate time series from CSV: loading with explicit gaps ([`GapPolicy`]), supervised
//! [`windows`] for forecasting with the end of the series held out, and the two
//! `baselines` a model must beat.

mod baselines;
mod windows;

pub use baselines::{linear_trend, seasonal_naive, Errors};
pub use windows::{windows, Window, Windows};

use std::path::{Path, PathBuf};

use super::DataError as SeriesError;
use crate::config::{Column, GapPolicy};

/// A loaded series: one value per row in file order, None where missing.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// One value per row in file order, `None` where missing.
    pub values: Vec<Option<f32>>,
    /// How many values are missing.
    pub missing: usize,
    /// The value column's header, or "column N" (one-based) in a file without one.
    pub name: String,
    /// The file the series came from, for messages.
    pub path: PathBuf,
    /// The one-based file line of each value, for messages.
    pub lines: Vec<usize>,
}

/// Whether a cell is a missing value rather than a number.
fn is_missing(cell: &str) -> bool {
    cell.is_empty() || cell.eq_ignore_ascii_case("nan") || cell.eq_ignore_ascii_case("na")
}

/// Reads the series in `column` of the CSV at `path`.
///
/// With `header: None` the first row is a header if the value column is named, or if its cell
/// in the value column is neither a number nor a missing value. Only the value column is parsed;
/// other columns (dates) are ignored. In a one-column file a blank line is a missing value (that
/// is how pandas writes NaN there); in a wider file blank lines are skipped and a gap is an
/// empty field.
pub fn load_series(
    path: &Path,
    column: &Column,
    header: Option<bool>,
) -> Result<Series, SeriesError> {
    let text = std::fs::read_to_string(path).map_err(|e| SeriesError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    parse(&text, path, column, header)
}

fn parse(
    text: &str,
    path: &Path,
    column: &Column,
    header: Option<bool>,
) -> Result<Series, SeriesError> {
    let file = path.display().to_string();
    let format = |line: usize, message: String| SeriesError::Format {
        path: file.clone(),
        line,
        message,
    };
    let rows = super::csv::records(text, &file)?;
    let Some((first_line, first)) = rows.first() else {
        return Err(SeriesError::Unusable(format!(
            "{file}: the file has no rows"
        )));
    };
    let width = first.len();
    let (col, has_header) = value_column(first, *first_line, column, header, &file)?;
    let (name, label) = match has_header.then(|| first.get(col)).flatten() {
        Some(h) => (h.to_string(), format!("column {} ({h:?})", col + 1)),
        None => (format!("column {}", col + 1), format!("column {}", col + 1)),
    };
    let (mut values, mut lines) = (Vec::new(), Vec::new());
    let mut previous = if has_header { *first_line } else { 0 };
    for (line, record) in rows.iter().skip(usize::from(has_header)) {
        // The CSV reader drops blank lines, which in a one-column file are the missing values.
        if width == 1 {
            for gap in previous + 1..*line {
                values.push(None);
                lines.push(gap);
            }
        }
        previous = *line;
        if record.len() != width {
            let got = record.len();
            return Err(format(
                *line,
                format!("expected {width} field(s) like the first row, got {got}"),
            ));
        }
        let cell = record.get(col).unwrap_or_default();
        let value = if is_missing(cell) {
            None
        } else {
            let v = cell.parse::<f32>().ok().filter(|v| v.is_finite());
            Some(v.ok_or_else(|| {
                format(
                    *line,
                    format!("{label}: expected a finite number, got {cell:?}"),
                )
            })?)
        };
        values.push(value);
        lines.push(*line);
    }
    let missing = values.iter().filter(|v| v.is_none()).count();
    let present = values.len() - missing;
    if present < 2 {
        return Err(SeriesError::Unusable(format!(
            "{file}: {label} has {present} value(s) in {} row(s); a series needs at least 2",
            values.len()
        )));
    }
    Ok(Series {
        values,
        missing,
        name,
        path: path.to_path_buf(),
        lines,
    })
}

/// The value column's index in a file whose first row is `first` (on line `line`), and whether
/// that row is a header.
fn value_column(
    first: &csv::StringRecord,
    line: usize,
    column: &Column,
    header: Option<bool>,
    file: &str,
) -> Result<(usize, bool), SeriesError> {
    let format = |message: String| SeriesError::Format {
        path: file.to_string(),
        line,
        message,
    };
    let width = first.len();
    match column {
        Column::Index(i) => {
            let idx = if *i < 0 { width as i64 + i } else { *i };
            let col = usize::try_from(idx).ok().filter(|&c| c < width);
            let col = col.ok_or_else(|| {
                format(format!(
                    "value column {i} is out of range for {width} column(s)"
                ))
            })?;
            // Only the value column decides: a headerless file's other columns (ISO dates) need
            // not be numbers, and taking its first row for a header would lose that row silently.
            let cell = first.get(col).unwrap_or_default();
            Ok((
                col,
                header.unwrap_or(!is_missing(cell) && cell.parse::<f64>().is_err()),
            ))
        }
        Column::Name(name) if header != Some(false) => {
            let col = first.iter().position(|h| h == name).ok_or_else(|| {
                let names: Vec<&str> = first.iter().collect();
                let names = names.join(", ");
                format(format!("no column named {name:?} (columns: {names})"))
            })?;
            Ok((col, true))
        }
        Column::Name(name) => Err(format(format!(
            "value column {name:?} needs a header row, and header = false"
        ))),
    }
}

impl Series {
    /// Fills gaps per `gaps`; Error refuses (naming the first missing line and the count), Skip leaves them.
    pub fn fill(&self, gaps: GapPolicy) -> Result<Vec<Option<f32>>, SeriesError> {
        match gaps {
            GapPolicy::Interpolate => Ok(fill_gaps(&self.values, true)),
            GapPolicy::Previous => Ok(fill_gaps(&self.values, false)),
            GapPolicy::Skip => Ok(self.values.clone()),
            GapPolicy::None => match self.values.iter().position(Option::is_none) {
                None => Ok(self.values.clone()),
                Some(first) => {
                    let line = self.lines.get(first).copied().unwrap_or(0);
                    let count = self.values.iter().filter(|v| v.is_none()).count();
                    let rows = if count == 1 { "row" } else { "rows" };
                    Err(SeriesError::Format {
                        path: self.path.display().to_string(),
                        line,
                        message: format!(
                            "value column {:?} is missing in {count} {rows} (first at line {line}); \
                             set data.gaps = \"interpolate\", \"previous\" or \"skip\"",
                            self.name
                        ),
                    })
                }
            },
        }
    }
}

/// Interpolates (or carries forward) over every gap; values stay `None` only if none is present.
fn fill_gaps(values: &[Option<f32>], interpolate: bool) -> Vec<Option<f32>> {
    let present: Vec<(usize, f32)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i, v)))
        .collect();
    let mut k = 0;
    let mut out = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        if v.is_some() {
            out.push(*v);
            continue;
        }
        while present.get(k).is_some_and(|p| p.0 < i) {
            k += 1;
        }
        let before = k.checked_sub(1).and_then(|j| present.get(j));
        out.push(match (before, present.get(k)) {
            (Some(&(i0, v0)), Some(&(i1, v1))) if interpolate => {
                let t = (i - i0) as f64 / (i1 - i0) as f64;
                Some((f64::from(v0) + (f64::from(v1) - f64::from(v0)) * t) as f32)
            }
            (Some(&(_, v0)), _) | (None, Some(&(_, v0))) => Some(v0),
            (None, None) => None,
        });
    }
    out
}

#[cfg(test)]
mod tests;
