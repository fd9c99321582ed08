//! CSV datasets: numeric feature columns and one target column, an integer class label
//! (`data.label_column`) or a value to predict (`data.target_column`).

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

fn samples(
    (records, features): Records,
    config: &CsvConfig,
) -> Result<(Vec<Sample>, usize, usize), DataError> {
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

fn read(config: &CsvConfig) -> Result<Records, DataError> {
    let path = config.path.display().to_string();
    let io = |message: String| DataError::Io {
        path: path.clone(),
        message,
    };
    let bytes = std::fs::read(&config.path).map_err(|e| io(e.to_string()))?;
    let bytes = if config.path.extension().is_some_and(|e| e == "gz") {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .map_err(|e| io(format!("cannot decompress (gzip): {e}")))?;
        text
    } else {
        bytes
    };
    let text = String::from_utf8(bytes).map_err(|e| io(format!("not UTF-8 text: {e}")))?;
    parse(&text, &path, config)
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
    let (target_key, target_column, is_label) = match (&config.target_column, &config.label_column)
    {
        (Some(column), _) => ("data.target_column", column.clone(), false),
        (None, column) => (
            "data.label_column",
            column.clone().unwrap_or(Column::Index(-1)),
            true,
        ),
    };
    let format = |line: usize, message: String| DataError::Format {
        path: path.to_string(),
        line,
        message,
    };
    let rows: Vec<(usize, csv::StringRecord)> = records(text, path)?
        .into_iter()
        .filter(|(_, record)| !record.iter().all(str::is_empty))
        .collect();
    let Some((_, first)) = rows.first() else {
        return Err(DataError::Unusable(format!("{path}: the file has no rows")));
    };
    let width = first.len();
    let has_header = config
        .header
        .unwrap_or_else(|| first.iter().any(|cell| cell.parse::<f64>().is_err()));
    let header: Option<Vec<String>> = has_header.then(|| first.iter().map(String::from).collect());
    let label = match &target_column {
        Column::Index(i) => {
            let idx = if *i < 0 { width as i64 + i } else { *i };
            if idx < 0 || idx >= width as i64 {
                return Err(format(
                    rows[0].0,
                    format!("{target_key} = {i} is out of range for {width} columns"),
                ));
            }
            idx as usize
        }
        Column::Name(name) => {
            let Some(header) = &header else {
                return Err(format(
                    rows[0].0,
                    format!("{target_key} = \"{name}\" needs a header row, and this file has none"),
                ));
            };
            header.iter().position(|h| h == name).ok_or_else(|| {
                format(
                    rows[0].0,
                    format!(
                        "no column named \"{name}\" (columns: {})",
                        header.join(", ")
                    ),
                )
            })?
        }
    };
    if width < 2 {
        return Err(format(
            rows[0].0,
            format!("need at least one feature column and a label column, got {width} column(s)"),
        ));
    }
    let column_name = |c: usize| match &header {
        Some(h) => format!("column {} (\"{}\")", c + 1, h[c]),
        None => format!("column {}", c + 1),
    };
    let mut samples = Vec::with_capacity(rows.len());
    for (line, record) in rows.iter().skip(usize::from(has_header)) {
        if record.len() != width {
            return Err(format(
                *line,
                format!(
                    "expected {width} columns like the first row, got {}",
                    record.len()
                ),
            ));
        }
        let mut features = Vec::with_capacity(width - 1);
        let mut target = 0.0;
        for (c, cell) in record.iter().enumerate() {
            if c == label && is_label {
                target = cell.parse::<usize>().map_err(|_| {
                    format(
                        *line,
                        format!(
                            "{}: label must be a non-negative integer, got \"{cell}\"",
                            column_name(c)
                        ),
                    )
                })? as f64;
            } else if c == label {
                target = cell
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| {
                        format(
                            *line,
                            format!(
                                "{}: target must be a finite number, got \"{cell}\"",
                                column_name(c)
                            ),
                        )
                    })?;
            } else {
                let value = cell
                    .parse::<f32>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| {
                        format(
                            *line,
                            format!(
                                "{}: expected a finite number, got \"{cell}\"",
                                column_name(c)
                            ),
                        )
                    })?;
                features.push(value);
            }
        }
        samples.push((features, target));
    }
    if samples.is_empty() {
        return Err(DataError::Unusable(format!(
            "{path}: the file has a header but no data rows"
        )));
    }
    Ok((samples, width - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(label: Column, header: Option<bool>) -> CsvConfig {
        CsvConfig {
            path: "t.csv".into(),
            label_column: Some(label),
            target_column: None,
            header,
        }
    }

    fn parse_classes(
        text: &str,
        path: &str,
        config: &CsvConfig,
    ) -> Result<(Vec<Sample>, usize, usize), DataError> {
        samples(parse(text, path, config)?, config)
    }

    #[test]
    fn a_target_column_gives_rows_of_values() {
        let cfg = CsvConfig {
            target_column: Some(Column::Name("price".into())),
            label_column: None,
            ..config(Column::Index(-1), None)
        };
        let (records, features) = parse("a,price,b\n1,2.5,3\n4,-1e3,6\n", "t.csv", &cfg).unwrap();
        assert_eq!(features, 2);
        assert_eq!(records[1], (vec![4.0, 6.0], -1000.0));
        let err = parse("a,price\n1,x\n", "t.csv", &cfg).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv:2: column 2 (\"price\"): target must be a finite number, got \"x\""
        );
    }

    #[test]
    fn detects_a_header_and_finds_the_label_by_name() {
        let text = "a,label,b\n1,0,2\n3,1,4\n";
        let (samples, features, classes) =
            parse_classes(text, "t.csv", &config(Column::Name("label".into()), None)).unwrap();
        assert_eq!((features, classes), (2, 2));
        assert_eq!(
            samples[1],
            Sample {
                features: vec![3.0, 4.0],
                label: 1
            }
        );
    }

    #[test]
    fn headerless_files_use_the_last_column_by_default() {
        let (samples, features, classes) =
            parse_classes("1,2,0\n3,4,2\n", "t.csv", &config(Column::Index(-1), None)).unwrap();
        assert_eq!((samples.len(), features, classes), (2, 2, 3));
    }

    #[test]
    fn gzip_files_are_decompressed_and_corrupt_ones_named() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"1,2,0\n3,4,1\n").unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        let cfg = CsvConfig {
            path: path.clone(),
            ..config(Column::Index(-1), None)
        };
        let (samples, features, classes) = load_csv(&cfg).unwrap();
        assert_eq!((samples.len(), features, classes), (2, 2, 2));
        std::fs::write(&path, b"not gzip at all").unwrap();
        let err = load_csv(&cfg).unwrap_err().to_string();
        assert!(err.contains("cannot decompress (gzip)"), "{err}");
        assert!(err.contains("t.csv.gz"), "{err}");
    }

    #[test]
    fn lines_are_counted_past_blank_lines() {
        // The csv crate numbers the third line 2 here, as it skips the blank one.
        let err = parse_classes(
            "1,2,0\n\n3,x,1\n",
            "t.csv",
            &config(Column::Index(-1), None),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv:3: column 2: expected a finite number, got \"x\""
        );
    }

    #[test]
    fn errors_name_line_and_column() {
        let err =
            parse_classes("1,2,0\n3,x,1\n", "t.csv", &config(Column::Index(-1), None)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv:2: column 2: expected a finite number, got \"x\""
        );
        let err =
            parse_classes("1,2,0\n3,1\n", "t.csv", &config(Column::Index(-1), None)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv:2: expected 3 columns like the first row, got 2"
        );
        let err = parse_classes(
            "a,y\n1,-1\n",
            "t.csv",
            &config(Column::Name("y".into()), None),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv:2: column 2 (\"y\"): label must be a non-negative integer, got \"-1\""
        );
        let err = parse_classes(
            "a,y\n1,1\n",
            "t.csv",
            &config(Column::Name("z".into()), None),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("no column named \"z\" (columns: a, y)"),
            "{err}"
        );
        assert!(parse_classes("", "t.csv", &config(Column::Index(-1), None)).is_err());
    }
}
