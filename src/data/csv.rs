//! CSV datasets: numeric feature columns and one target column, an integer class label
//! (`data.label_column`) or a value to predict (`data.target_column`).

use super::csv_error::CsvError;
use super::{DataError, Row, Sample};
use crate::config::{Column, CsvConfig};

/// Reads a classification CSV (`config.label_column`). Returns the samples, the number of
/// features and the number of classes (largest label + 1).
///
/// Whether the first row is a header is detected when `config.header` is unset: it is a
/// header if any of its cells is not a number. A path ending in `.gz` is decompressed.
pub fn load_csv(config: &CsvConfig) -> Result<(Vec<Sample>, usize, usize), DataError> {
    samples(read(config)?, config)
}

/// The classes a file may have beyond its rows: labels up to 65,535 are taken whatever the
/// file's length.
const MAX_SPARSE_CLASSES: usize = 1 << 16;

fn samples(
    (records, features): Records,
    config: &CsvConfig,
) -> Result<(Vec<Sample>, usize, usize), DataError> {
    // Labels are class numbers from 0: one far above the rest (a stray value, an id column)
    // would size the model's output, and the split's lists, for classes no row has.
    let most = records.len().max(MAX_SPARSE_CLASSES);
    if let Some((row, label)) = (records.iter().enumerate())
        .find(|(_, r)| r.1 >= most as f64)
        .map(|(i, r)| (i + 1, r.1))
    {
        return Err(DataError::Unusable(format!(
            "{}: data row {row}: label {label} would make {} classes for {} rows; a label is a \
             class number from 0, at most {} here (the rows or 65535, the larger)",
            config.path.display(),
            label + 1.0,
            records.len(),
            most - 1
        )));
    }
    let classes = records.iter().map(|r| r.1 as usize + 1).max().unwrap_or(0);
    if classes < 2 {
        return Err(DataError::Unusable(format!(
            "{}: every label is 0; need at least 2 classes",
            config.path.display()
        )));
    }
    let samples = records
        .into_iter()
        .map(|(features, label)| Sample {
            features,
            label: label as usize,
        })
        .collect();
    Ok((samples, features, classes))
}

/// Reads a regression CSV (`config.target_column`). Returns the rows (one target each) and the
/// number of features.
pub fn load_csv_rows(config: &CsvConfig) -> Result<(Vec<Row>, usize), DataError> {
    let (records, features) = read(config)?;
    let rows = records
        .into_iter()
        .map(|(features, target)| Row {
            features,
            targets: vec![target as f32],
        })
        .collect();
    Ok((rows, features))
}

/// Each data row's features and target (a label, with a label column), and the feature count.
type Records = (Vec<(Vec<f32>, f64)>, usize);

/// A data row's features and, where the file has the column, its label or target.
pub type InputRow = (Vec<f32>, Option<f64>);

fn read(config: &CsvConfig) -> Result<Records, DataError> {
    let path = config.path.display().to_string();
    parse(&read_text(&config.path)?, &path, config)
}

/// Reads a CSV laid out like `config`'s training file, to score or predict on: with its label
/// or target column (each row's value is `Some`), or without it (`None`: every column is a
/// feature). `features` is the training data's count; any other width is refused, naming the
/// file, the line and the columns expected.
pub fn load_csv_inputs(config: &CsvConfig, features: usize) -> Result<Vec<InputRow>, DataError> {
    let path = config.path.display().to_string();
    let text = read_text(&config.path)?;
    let rows = data_rows(&text, &path)?;
    let width = rows[0].1.len();
    let (column, _) = target_of(config);
    let with_target = match width {
        w if w == features + 1 => true,
        w if w == features => false,
        _ => {
            let message = format!(
                "{width} columns, but the run's data has {} ({features} features and {column}); \
                 a file to predict on may leave the {column} out",
                features + 1
            );
            return Err(DataError::Format {
                path,
                line: rows[0].0,
                message,
            });
        }
    };
    let layout = Layout::of(&rows, &path, config, with_target)?;
    layout.values(&rows, &path)
}

/// The file's text: decompressed if its name ends in `.gz`.
fn read_text(file: &std::path::Path) -> Result<String, DataError> {
    let path = file.display().to_string();
    let io = |message: String| DataError::Io {
        path: path.clone(),
        message,
    };
    let bytes = std::fs::read(file).map_err(|e| io(e.to_string()))?;
    let bytes = if file.extension().is_some_and(|e| e == "gz") {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .map_err(|e| io(format!("cannot decompress (gzip): {e}")))?;
        text
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|e| io(format!("not UTF-8 text: {e}")))
}

/// Every record of a CSV text (cells trimmed, rows of any width), with the file line it is on.
/// The `csv` crate's positions do not count the blank lines it skips (a record starts where the
/// previous one ended), so the lines are counted here from the byte offsets.
pub(super) fn records(
    text: &str,
    path: &str,
) -> Result<Vec<(usize, csv::StringRecord)>, DataError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let (bytes, mut scanned, mut line) = (text.as_bytes(), 0, 1);
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| DataError::Format {
            path: path.to_string(),
            line: e.position().map_or(0, |p| p.line() as usize),
            message: e.to_string(),
        })?;
        let mut start = record
            .position()
            .map_or(0, |p| p.byte() as usize)
            .max(scanned);
        while bytes.get(start).is_some_and(|b| matches!(b, b'\r' | b'\n')) {
            start += 1;
        }
        line += bytes
            .get(scanned..start)
            .map_or(0, |s| s.iter().filter(|&&b| b == b'\n').count());
        scanned = start;
        rows.push((line, record));
    }
    Ok(rows)
}

fn parse(text: &str, path: &str, config: &CsvConfig) -> Result<Records, DataError> {
    let rows = data_rows(text, path)?;
    let layout = Layout::of(&rows, path, config, true)?;
    let records = layout.values(&rows, path)?;
    let features = layout.width - 1;
    let records = records
        .into_iter()
        .map(|(f, t)| (f, t.expect("a layout with a target reads one per row")))
        .collect();
    Ok((records, features))
}

/// The config key of the target column and the column it names (the last, by default).
fn target_of(config: &CsvConfig) -> (&'static str, Column) {
    match (&config.target_column, &config.label_column) {
        (Some(column), _) => ("data.target_column", column.clone()),
        (None, column) => (
            "data.label_column",
            column.clone().unwrap_or(Column::Index(-1)),
        ),
    }
}

/// The records that are not blank, with their lines; an error if there are none.
fn data_rows(text: &str, path: &str) -> Result<Vec<(usize, csv::StringRecord)>, DataError> {
    let rows: Vec<(usize, csv::StringRecord)> = records(text, path)?
        .into_iter()
        .filter(|(_, record)| !record.iter().all(str::is_empty))
        .collect();
    if rows.is_empty() {
        return Err(DataError::Unusable(format!("{path}: the file has no rows")));
    }
    Ok(rows)
}

/// How a file's columns are read: its header, its width and its target column.
struct Layout {
    header: Option<Vec<String>>,
    width: usize,
    /// The target column, and whether it holds class labels (else values).
    target: Option<(usize, bool)>,
}

impl Layout {
    /// The layout of `rows` under `config`; `with_target` false reads every column as a
    /// feature.
    fn of(
        rows: &[(usize, csv::StringRecord)],
        path: &str,
        config: &CsvConfig,
        with_target: bool,
    ) -> Result<Self, DataError> {
        let (line, first) = &rows[0];
        let width = first.len();
        let has_header = config
            .header
            .unwrap_or_else(|| first.iter().any(|cell| cell.parse::<f64>().is_err()));
        let header: Option<Vec<String>> =
            has_header.then(|| first.iter().map(String::from).collect());
        let format = |message: String| DataError::Format {
            path: path.to_string(),
            line: *line,
            message,
        };
        let mut layout = Layout {
            header,
            width,
            target: None,
        };
        if !with_target {
            return Ok(layout);
        }
        let (key, column) = target_of(config);
        let index = (layout.column(key, &column)).map_err(|e| format(e.to_string()))?;
        if width < 2 {
            return Err(format(format!(
                "need at least one feature column and a label column, got {width} column(s)"
            )));
        }
        layout.target = Some((index, config.target_column.is_none()));
        Ok(layout)
    }

    /// The index of `column` (the value of config key `key`).
    fn column(&self, key: &str, column: &Column) -> Result<usize, CsvError> {
        let width = self.width;
        match column {
            Column::Index(i) => {
                let idx = if *i < 0 { width as i64 + i } else { *i };
                usize::try_from(idx)
                    .ok()
                    .filter(|&c| c < width)
                    .ok_or_else(|| CsvError::OutOfRange {
                        key: key.to_string(),
                        index: *i,
                        width,
                    })
            }
            Column::Name(name) => {
                let Some(header) = &self.header else {
                    return Err(CsvError::NoHeader {
                        key: key.to_string(),
                        name: name.clone(),
                    });
                };
                (header.iter().position(|h| h == name)).ok_or_else(|| CsvError::NoSuchColumn {
                    name: name.clone(),
                    columns: header.join(", "),
                })
            }
        }
    }

    /// `column 2 ("price")`, or `column 2` without a header.
    fn name(&self, c: usize) -> String {
        match &self.header {
            Some(h) => format!("column {} (\"{}\")", c + 1, h[c]),
            None => format!("column {}", c + 1),
        }
    }

    /// Every data row's features and target.
    fn values(
        &self,
        rows: &[(usize, csv::StringRecord)],
        path: &str,
    ) -> Result<Vec<InputRow>, DataError> {
        let skip = usize::from(self.header.is_some());
        let records = rows
            .iter()
            .skip(skip)
            .map(|(line, record)| {
                self.row(record).map_err(|e| DataError::Format {
                    path: path.to_string(),
                    line: *line,
                    message: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if records.is_empty() {
            return Err(DataError::Unusable(format!(
                "{path}: the file has a header but no data rows"
            )));
        }
        Ok(records)
    }

    /// One row's features and target.
    fn row(&self, record: &csv::StringRecord) -> Result<(Vec<f32>, Option<f64>), CsvError> {
        if record.len() != self.width {
            return Err(CsvError::Width {
                width: self.width,
                got: record.len(),
            });
        }
        let mut features = Vec::with_capacity(self.width);
        let mut target = None;
        for (c, cell) in record.iter().enumerate() {
            match self.target {
                Some((t, true)) if t == c => target = Some(self.label(c, cell)?),
                Some((t, false)) if t == c => target = Some(self.target(c, cell)?),
                _ => features.push(self.feature(c, cell)?),
            }
        }
        Ok((features, target))
    }

    fn label(&self, c: usize, cell: &str) -> Result<f64, CsvError> {
        let label = cell.parse::<usize>().map(|l| l as f64);
        label.map_err(|_| CsvError::Label {
            column: self.name(c),
            cell: cell.to_string(),
        })
    }

    fn target(&self, c: usize, cell: &str) -> Result<f64, CsvError> {
        let value = cell.parse::<f64>().ok().filter(|v| v.is_finite());
        value.ok_or_else(|| CsvError::Target {
            column: self.name(c),
            cell: cell.to_string(),
        })
    }

    fn feature(&self, c: usize, cell: &str) -> Result<f32, CsvError> {
        let value = cell.parse::<f32>().ok().filter(|v| v.is_finite());
        value.ok_or_else(|| CsvError::Feature {
            column: self.name(c),
            cell: cell.to_string(),
        })
    }
}

#[cfg(test)]
mod tests;
