//! The CSV reader's parsing, header detection, gzip and error messages.
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
    let err = parse_classes("1,2,0\n3,1\n", "t.csv", &config(Column::Index(-1), None)).unwrap_err();
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
