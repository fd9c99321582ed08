//! The series loader on the shipped CO2 file and on files written here, windows, and baselines.

use super::*;

const CO2: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/co2-weekly.csv");

fn co2() -> Series {
    load_series(Path::new(CO2), &Column::Index(-1), None).unwrap()
}

fn temp_csv(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("series-{}-{name}.csv", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

fn some(values: &[f32]) -> Vec<Option<f32>> {
    values.iter().copied().map(Some).collect()
}

fn indices(windows: &[Window]) -> Vec<usize> {
    windows.iter().map(|w| w.index).collect()
}

#[test]
fn co2_loads_with_its_gaps_and_refuses_them_by_line() {
    let s = co2();
    assert_eq!(
        (s.values.len(), s.missing, s.name.as_str()),
        (2284, 59, "co2")
    );
    assert_eq!((s.lines[0], s.lines[2283]), (2, 2285));
    assert_eq!(s.values[0], Some(316.1));
    let by_name = load_series(Path::new(CO2), &Column::Name("co2".into()), Some(true));
    assert_eq!(by_name.unwrap(), s);
    let err = s.fill(GapPolicy::None).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{CO2}:8: value column \"co2\"")),
        "{err}"
    );
    assert!(
        err.contains("missing in 59 rows (first at line 8)"),
        "{err}"
    );
    assert!(
        err.contains("data.gaps = \"interpolate\", \"previous\" or \"skip\""),
        "{err}"
    );
    assert_eq!(s.fill(GapPolicy::Skip).unwrap(), s.values);
}

#[test]
fn interpolate_and_previous_fill_gaps() {
    let s = co2();
    let (inter, prev) = (
        s.fill(GapPolicy::Interpolate).unwrap(),
        s.fill(GapPolicy::Previous).unwrap(),
    );
    assert!(inter.iter().chain(&prev).all(Option::is_some));
    assert!((inter[6].unwrap() - 317.2).abs() < 1e-4, "{:?}", inter[6]);
    assert_eq!(
        (prev[6], s.values[5], s.values[7]),
        (Some(316.9), Some(316.9), Some(317.5))
    );
    // A run of gaps, a leading one and a trailing one.
    let hand = vec![None, Some(1.0), None, None, Some(4.0), None];
    assert_eq!(
        fill_gaps(&hand, true),
        some(&[1.0, 1.0, 2.0, 3.0, 4.0, 4.0])
    );
    assert_eq!(
        fill_gaps(&hand, false),
        some(&[1.0, 1.0, 1.0, 1.0, 4.0, 4.0])
    );
}

#[test]
fn co2_windows_and_baselines() {
    let values = co2().fill(GapPolicy::Interpolate).unwrap();
    let w = windows(&values, 52, 1, 208).unwrap();
    assert_eq!((w.train.len(), w.valid.len(), w.split), (2024, 208, 2076));
    assert!(w.valid.iter().all(|v| v.index >= w.split));
    assert!(w
        .train
        .iter()
        .all(|t| t.index < w.split && t.inputs.len() == 52));
    assert_eq!(
        w.valid[0].inputs,
        values[2024..2076]
            .iter()
            .map(|v| v.unwrap())
            .collect::<Vec<_>>()
    );
    let naive = seasonal_naive(&values, &w.valid, 52);
    let trend = linear_trend(&values, &w.valid, w.split);
    eprintln!("co2 holdout 208: seasonal naive {naive:?}, linear trend {trend:?}");
    for e in [naive, trend] {
        assert!(
            e.rmse.is_finite() && e.rmse > 0.0 && e.mae > 0.0 && e.mae <= e.rmse,
            "{e:?}"
        );
        assert_eq!(e.n, 208);
    }
    // Cross-checked with an independent float64 computation in Python.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
    assert!(
        close(naive.mae, 1.78365) && close(naive.rmse, 2.00844),
        "{naive:?}"
    );
    assert!(
        close(trend.mae, 3.74807) && close(trend.rmse, 4.27932),
        "{trend:?}"
    );
}

#[test]
fn single_column_files_with_and_without_header() {
    let with = temp_csv("with", "co2\n1.5\n2.5\n\n4.5\n");
    let s = load_series(&with, &Column::Index(-1), None).unwrap();
    assert_eq!((s.name.as_str(), s.missing), ("co2", 1));
    assert_eq!(
        (s.values, s.lines),
        (
            vec![Some(1.5), Some(2.5), None, Some(4.5)],
            vec![2, 3, 4, 5]
        )
    );
    let without = temp_csv("without", "\n1.5\r\n2.5\r\nNA\r\n4\r\n5\r\n");
    let s = load_series(&without, &Column::Index(-1), None).unwrap();
    assert_eq!(
        (s.name.as_str(), s.missing, s.lines.clone()),
        ("column 1", 2, vec![1, 2, 3, 4, 5, 6])
    );
    let filled = s.fill(GapPolicy::Interpolate).unwrap();
    assert_eq!(filled, some(&[1.5, 1.5, 2.5, 3.25, 4.0, 5.0]));
    let w = windows(&filled, 2, 1, 1).unwrap();
    assert_eq!(
        (indices(&w.train), indices(&w.valid)),
        (vec![2, 3, 4], vec![5])
    );
    let err = s.fill(GapPolicy::None).unwrap_err().to_string();
    assert!(
        err.contains("without.csv:1: value column \"column 1\" is missing in 2 rows"),
        "{err}"
    );
    for path in [with, without] {
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn headerless_files_with_text_dates_keep_their_first_row() {
    let p = Path::new("t.csv");
    let text = "1958-03-29,316.1\n1958-04-05,\n1958-04-12,317.6\n";
    let s = parse(text, p, &Column::Index(-1), None).unwrap();
    assert_eq!((s.name.as_str(), s.missing), ("column 2", 1));
    assert_eq!((s.values[0], s.lines.clone()), (Some(316.1), vec![1, 2, 3]));
    let err = parse(text, p, &Column::Name("co2".into()), Some(false)).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("t.csv:1: value column \"co2\" needs a header"));
}

#[test]
fn bad_input_errors_name_file_line_column_and_value() {
    let p = Path::new("t.csv");
    let col = Column::Index(-1);
    let err = parse("date,co2\n1,2\n2,abc\n", p, &col, None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "t.csv:3: column 2 (\"co2\"): expected a finite number, got \"abc\""
    );
    let err = parse("1,2\n2\n", p, &col, None).unwrap_err().to_string();
    assert_eq!(
        err,
        "t.csv:2: expected 2 field(s) like the first row, got 1"
    );
    let err = parse("a,b\n1,2\n", p, &Column::Name("c".into()), None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "t.csv:1: no column named \"c\" (columns: a, b)"
    );
    let err = parse("1,2\n", p, &Column::Index(2), None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "t.csv:1: value column 2 is out of range for 2 column(s)"
    );
    assert!(parse("", p, &col, None)
        .unwrap_err()
        .to_string()
        .contains("no rows"));
    let err = parse("v\n1\nnan\n", p, &col, None).unwrap_err().to_string();
    assert!(err.contains("has 1 value(s) in 2 row(s)"), "{err}");
    let missing = load_series(Path::new("/nonexistent/s.csv"), &col, None).unwrap_err();
    assert!(matches!(missing, SeriesError::Io { .. }));
}

#[test]
fn skip_drops_exactly_the_windows_touching_a_gap() {
    let mut values = some(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]);
    values[3] = None;
    let w = windows(&values, 2, 1, 3).unwrap();
    assert_eq!(
        (indices(&w.train), indices(&w.valid), w.split),
        (vec![2, 6], vec![7, 8, 9], 7)
    );
    assert_eq!(
        w.train[1],
        Window {
            inputs: vec![5.0, 6.0],
            targets: vec![7.0],
            index: 6
        }
    );
    // Horizon 2: every training window now touches the gap.
    let err = windows(&values, 2, 2, 3).unwrap_err().to_string();
    assert!(
        err.starts_with("all 4 training windows touch a missing value"),
        "{err}"
    );
    // Without gaps, the window straddling the split (t = 5) belongs to neither part.
    let full = some(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let w = windows(&full, 2, 2, 4).unwrap();
    assert_eq!(
        (indices(&w.train), indices(&w.valid)),
        (vec![2, 3, 4], vec![6, 7, 8])
    );
    for (window, horizon, holdout, needle) in [
        (0, 1, 1, "window (0)"),
        (2, 1, 10, "holdout of 10 points leaves nothing"),
        (
            5,
            3,
            3,
            "7 training points (10 minus a holdout of 3) are too few",
        ),
        (
            2,
            3,
            2,
            "holdout of 2 points is too short for one validation window of data.horizon = 3",
        ),
    ] {
        let err = windows(&full, window, horizon, holdout)
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{err}");
    }
}

#[test]
fn baselines_on_a_hand_made_series() {
    let mut values = some(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let w = windows(&values, 1, 3, 3).unwrap();
    assert_eq!(indices(&w.valid), vec![7]);
    // Season 2, targets 7, 8, 9 come from 5, 6 and (two seasons back, not target 7) 5.
    let naive = seasonal_naive(&values, &w.valid, 2);
    assert_eq!(
        (naive.mae, naive.rmse, naive.n),
        (8.0 / 3.0, 8f64.sqrt(), 3)
    );
    let trend = linear_trend(&values, &w.valid, w.split);
    assert!(trend.mae < 1e-9 && trend.n == 3, "{trend:?}");
    values[5] = None;
    assert_eq!(seasonal_naive(&values, &w.valid, 2).n, 1);
    assert!(seasonal_naive(&values, &w.valid, 0).mae.is_nan());
}
