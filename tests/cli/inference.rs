//! `tidemark evaluate` and `tidemark predict` on finished runs: the figures they give are the
//! run's own (its validation metric, from predictions on its training file), and bad input is
//! one line and exit 2.

use serde_json::Value;

use super::{num, write_badly_scaled_csv, Env};

/// A series with a trend and a 12-step cycle, no gaps: `values` in file order.
fn write_series(env: &Env, name: &str) -> Vec<f64> {
    let values: Vec<f64> = (0..400)
        .map(|t| {
            let cycle = (t as f64 * std::f64::consts::TAU / 12.0).sin();
            let noise = ((t * 7919) % 101) as f64 / 101.0 - 0.5;
            50.0 + 0.05 * t as f64 + 3.0 * cycle + 0.3 * noise
        })
        .collect();
    let text: String = values.iter().map(|v| format!("{v:.3}\n")).collect();
    env.write(name, &format!("level\n{text}"));
    values
        .iter()
        .map(|v| (v * 1000.0).round() / 1000.0)
        .collect()
}

/// The rows of a CSV file with a header, as numbers.
fn read_csv(env: &Env, name: &str) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(env.path(name)).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

#[test]
fn predict_on_the_training_file_reproduces_the_validation_metric() {
    let env = Env::new();
    let values = write_series(&env, "level.csv");
    env.write(
        "series.toml",
        "[run]\nname = \"level\"\n[model]\nhidden = [32]\n[data]\npath = \"level.csv\"\n\
         column = \"level\"\nwindow = 24\nhorizon = 2\nholdout = 60\n[train]\nepochs = 3\n",
    );
    let run = env.run(&["train", "--config", "series.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let run = env.run(&[
        "predict",
        "runs/level",
        "--data",
        "level.csv",
        "--out",
        "forecast.csv",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let (header, rows) = read_csv(&env, "forecast.csv");
    assert_eq!(header, ["index", "forecast_1", "forecast_2"]);
    // A window ends at every value from the 24th to the last: 400 - 24 + 1 rows, the last
    // forecasting the two values after the file.
    assert_eq!(rows.len(), 377, "{}", run.stdout());
    assert_eq!((rows[0][0], rows[376][0]), (24.0, 400.0));
    // The windows whose targets lie in the held-out last 60 values are the run's validation.
    let split = values.len() - 60;
    let errors: Vec<f64> = rows
        .iter()
        .filter(|r| r[0] as usize >= split && r[0] as usize + 2 <= values.len())
        .flat_map(|r| {
            let at = r[0] as usize;
            [r[1] - values[at], r[2] - values[at + 1]]
        })
        .collect();
    assert_eq!(errors.len(), 2 * 59);
    let mae = errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64;
    let rmse = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt();
    let summary = env.summary("runs/level");
    for (mine, theirs) in [(mae, "final_val_mae"), (rmse, "final_val_rmse")] {
        let run_value = num(&summary, theirs);
        assert!(
            (mine - run_value).abs() < 1e-4 * run_value,
            "{theirs}: {mine} from predict.csv, {run_value} in the run"
        );
    }
    // evaluate on the file scores those same windows and every earlier one.
    let run = env.run(&["evaluate", "runs/level", "--data", "level.csv"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let evaluation: Value = serde_json::from_str(
        &std::fs::read_to_string(env.path("runs/level/evaluation.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(evaluation["samples"], 400 - 24 - 2 + 1);
    assert_eq!(evaluation["checkpoint"], "epoch-3");
}

#[test]
fn evaluate_scores_the_validation_split_as_the_run_did_and_predict_agrees() {
    let env = Env::new();
    write_badly_scaled_csv(&env, "scaled.csv");
    env.write(
        "c.toml",
        "[run]\nname = \"c\"\n[model]\nhidden = [32]\ndropout = 0.2\n[data]\n\
         path = \"scaled.csv\"\nlabel_column = \"digit\"\n[train]\nepochs = 3\n",
    );
    let run = env.run(&["train", "--config", "c.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let summary = env.summary("runs/c");
    let run = env.run(&["evaluate", "runs/c"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert!(
        run.stdout()
            .contains("(checkpoints/epoch-3) on validation split, 240 samples: loss "),
        "{}",
        run.stdout()
    );
    let text = std::fs::read_to_string(env.path("runs/c/evaluation.json")).unwrap();
    let evaluation: Value = serde_json::from_str(&text).unwrap();
    // The same weights, data and code as the run's last validation, dropout off.
    assert!((num(&evaluation, "loss") - num(&summary, "final_val_loss")).abs() < 1e-9);
    assert!(
        (evaluation["metrics"]["accuracy"].as_f64().unwrap() - num(&summary, "final_val_accuracy"))
            .abs()
            < 1e-9
    );

    // On the whole file: evaluate's accuracy is the share of predict's classes that are right.
    let run = env.run(&["evaluate", "runs/c", "--data", "scaled.csv"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let text = std::fs::read_to_string(env.path("runs/c/evaluation.json")).unwrap();
    let whole: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(whole["samples"], 1200);
    let run = env.run(&[
        "predict",
        "runs/c",
        "--data",
        "scaled.csv",
        "--out",
        "p.csv",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let (header, rows) = read_csv(&env, "p.csv");
    assert_eq!(header, ["row", "class", "p_0", "p_1", "p_2", "p_3"]);
    let (_, data) = read_csv(&env, "scaled.csv");
    assert_eq!(rows.len(), data.len());
    let mut right = 0;
    for (p, d) in rows.iter().zip(&data) {
        assert!((p[2..].iter().sum::<f64>() - 1.0).abs() < 1e-4, "{p:?}");
        let best = (2..6).fold(2, |b, c| if p[c] > p[b] { c } else { b });
        assert_eq!(p[1] as usize, best - 2);
        right += usize::from(p[1] == d[4]);
    }
    let accuracy = right as f64 / data.len() as f64;
    let evaluated = whole["metrics"]["accuracy"].as_f64().unwrap();
    assert!(
        (accuracy - evaluated).abs() < 1e-9,
        "{accuracy} {evaluated}"
    );
}

#[test]
fn a_regression_prediction_is_in_the_targets_units() {
    let env = Env::new();
    let text: String = (0..300)
        .map(|i| {
            let x = i as f64 / 10.0;
            format!("{x},{}\n", 1000.0 + 40.0 * x + ((i * 37) % 11) as f64)
        })
        .collect();
    env.write("r.csv", &format!("x,price\n{text}"));
    env.write(
        "r.toml",
        "[run]\nname = \"r\"\n[model]\nhidden = [16]\n[data]\npath = \"r.csv\"\n\
         target_column = \"price\"\n[train]\nepochs = 4\n",
    );
    assert_eq!(env.run(&["train", "--config", "r.toml"]).code(), 0);
    // A file of features only: predict needs no target.
    let features: String = (0..300).map(|i| format!("{}\n", i as f64 / 10.0)).collect();
    env.write("x.csv", &format!("x\n{features}"));
    let run = env.run(&["predict", "runs/r", "--data", "x.csv", "--out", "p.csv"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let (header, rows) = read_csv(&env, "p.csv");
    assert_eq!(header, ["row", "prediction"]);
    let (_, data) = read_csv(&env, "r.csv");
    let mae = rows
        .iter()
        .zip(&data)
        .map(|(p, d)| (p[1] - d[1]).abs())
        .sum::<f64>()
        / 300.0;
    let run = env.run(&["evaluate", "runs/r", "--data", "r.csv"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let text = std::fs::read_to_string(env.path("runs/r/evaluation.json")).unwrap();
    let evaluated = serde_json::from_str::<Value>(&text).unwrap()["metrics"]["mae"]
        .as_f64()
        .unwrap();
    assert!(
        (mae - evaluated).abs() < 1e-3 * evaluated,
        "{mae} from p.csv, {evaluated} from evaluate"
    );
}

#[test]
fn bad_input_to_evaluate_and_predict_is_one_line_and_exit_2() {
    let env = Env::new();
    write_badly_scaled_csv(&env, "scaled.csv");
    env.write(
        "c.toml",
        "[run]\nname = \"c\"\n[model]\nhidden = [8]\n[data]\npath = \"scaled.csv\"\n\
         label_column = \"digit\"\n[train]\nepochs = 1\n",
    );
    assert_eq!(env.run(&["train", "--config", "c.toml"]).code(), 0);
    env.write("narrow.csv", "f0,f1,digit\n1,2,0\n");
    let narrow = env.run(&["evaluate", "runs/c", "--data", "narrow.csv"]);
    narrow.fails_with(
        2,
        &[
            "narrow.csv:1: 3 columns, but the run's data has 9",
            "data.label_column); a file to predict on may leave",
        ],
    );
    // One space between words: no string continuation that kept its indentation.
    assert!(!narrow.stderr().contains("  "), "{}", narrow.stderr());
    // Features only: fine to predict on, but nothing to score against.
    env.write("unlabelled.csv", "1,2,3,4,5,6,7,8\n");
    env.run(&["evaluate", "runs/c", "--data", "unlabelled.csv"])
        .fails_with(2, &["unlabelled.csv: has no label column to score against"]);
    let run = env.run(&[
        "predict",
        "runs/c",
        "--data",
        "unlabelled.csv",
        "--out",
        "p.csv",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    env.write(
        "other.csv",
        "f0,f1,f2,f3,label,f4,f5,f6,f7\n1,2,3,4,0,5,6,7,8\n",
    );
    env.run(&["evaluate", "runs/c", "--data", "other.csv"])
        .fails_with(2, &["other.csv:1: no column named \"digit\""]);
    env.write(
        "class9.csv",
        "f0,f1,f2,f3,digit,f4,f5,f6,f7\n1,2,3,4,9,5,6,7,8\n",
    );
    env.run(&["evaluate", "runs/c", "--data", "class9.csv"])
        .fails_with(
            2,
            &["class9.csv: data row 1: label 9 is not one of the run's 4 classes"],
        );
    env.run(&["evaluate", "runs/c", "--checkpoint", "epoch-7"])
        .fails_with(
            2,
            &[
                "--checkpoint: no checkpoint named \"epoch-7\"",
                "(there are: latest, epoch-1)",
            ],
        );
    env.run(&["evaluate", "runs/c", "--checkpoint", "best"])
        .fails_with(
            2,
            &["checkpoints/best: missing: the run kept no best checkpoint"],
        );
    env.run(&["evaluate", "runs/nothing"])
        .fails_with(2, &["not a run directory"]);
    env.run(&[
        "predict",
        "runs/c",
        "--data",
        "missing.csv",
        "--out",
        "p.csv",
    ])
    .fails_with(2, &["missing.csv"]);
    // --out never replaces the input or a file of the run; a new file or a .csv at the run's
    // top may be written.
    let predict = |out: &str| {
        env.run(&[
            "predict",
            "runs/c",
            "--data",
            "unlabelled.csv",
            "--out",
            out,
        ])
    };
    let before = super::outside::tree(env.dir.path());
    predict("unlabelled.csv").fails_with(
        2,
        &[
            "--out unlabelled.csv: the file --data reads",
            "never replace their input",
        ],
    );
    for out in [
        "runs/c/summary.json",
        "runs/c/config.toml",
        "runs/c/checkpoints/epoch-1/model.bpk",
        "runs/c/checkpoints/new.csv",
        "runs/c",
    ] {
        let what = match out.strip_prefix("runs/c/") {
            Some(within) => format!("{within} is the run's own"),
            None => "the run's directory itself".into(),
        };
        predict(out).fails_with(
            2,
            &[
                &format!("--out {out}: {what};"),
                "a .csv at the top of runs/c",
            ],
        );
    }
    assert_eq!(super::outside::tree(env.dir.path()), before);
    for _ in 0..2 {
        assert_eq!(predict("runs/c/predictions.csv").code(), 0);
    }
    let (header, rows) = read_csv(&env, "runs/c/predictions.csv");
    assert_eq!((header.len(), rows.len()), (6, 1), "{header:?}");
}
