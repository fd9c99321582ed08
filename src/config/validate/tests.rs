//! Validation of a config as read: defaults, ranges, choices and the keys of other kinds.

use super::*;

fn with(edit: impl FnOnce(&mut RawConfig)) -> std::result::Result<RunConfig, Invalid> {
    let mut raw = RawConfig::default();
    edit(&mut raw);
    RunConfig::try_from(raw)
}

#[test]
fn empty_config_takes_the_defaults() {
    let cfg = with(|_| {}).unwrap();
    assert_eq!(cfg.train.batch_size, 128);
    assert_eq!(cfg.train.accumulation_steps, 1);
    assert_eq!(cfg.device.backend, Backend::Flex);
    // The kind's keys are the kind's: the config holds the name and the keys as written.
    assert_eq!((cfg.model.kind(), cfg.model.settings.len()), ("mlp", 0));
    assert!(matches!(cfg.data.source, DataSource::Synthetic(_)));
}

#[test]
fn zero_and_negative_sizes_name_the_key_and_value() {
    // Set in code (a file's reader says the same as it reads: tests/cli/fuzz.rs).
    let err = with(|r| r.train.batch_size = 0).unwrap_err();
    assert_eq!(err.message, "train.batch_size must be > 0, got 0");
}

#[test]
fn unknown_choice_lists_the_options() {
    let err = crate::config::parse("[train]\noptimizer = \"adagrad\"", "t.toml", &[]);
    assert_eq!(
        err.unwrap_err().to_string(),
        "t.toml:2:1: train.optimizer must be one of \"adam\", \"adamw\", \"sgd\", \"rmsprop\", \
         got \"adagrad\""
    );
}

/// The config of a file whose `[data]` is `text`, or its error.
fn data(text: &str) -> std::result::Result<RunConfig, crate::config::ConfigError> {
    crate::config::parse(&format!("[data]\n{text}"), "d.toml", &[])
}

const CO2: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/co2-weekly.csv");

#[test]
fn keys_of_the_other_data_kind_are_rejected() {
    assert_eq!(
        data("kind = \"synthetic\"\npath = \"x.csv\"")
            .unwrap_err()
            .to_string(),
        "d.toml:3:1: data.path only applies with data.kind = \"csv\" or \"series\""
    );
    assert_eq!(
        data(&format!("kind = \"csv\"\npath = \"{CO2}\"\nwindow = 4"))
            .unwrap_err()
            .to_string(),
        "d.toml:4:1: data.window only applies with data.kind = \"series\""
    );
    // Of several, the first in the kinds' order.
    assert_eq!(
        data("images = \"i\"\nnoise = 0.5\nwindow = 3")
            .unwrap_err()
            .to_string(),
        "d.toml:3:1: data.noise only applies with data.kind = \"synthetic\""
    );
}

#[test]
fn the_kind_follows_from_the_keys_when_unset() {
    let series = data(&format!("path = \"{CO2}\"\nwindow = 8")).unwrap();
    assert!(matches!(series.data.source, DataSource::Series(_)));
    let table = data(&format!("path = \"{CO2}\"")).unwrap();
    assert!(matches!(table.data.source, DataSource::Csv(_)));
    assert_eq!(
        data(&format!("path = \"{CO2}\"\ncolumn = 0"))
            .unwrap_err()
            .to_string(),
        "d.toml:1:2: data.window is required with data.kind = \"series\""
    );
}

#[test]
fn missing_csv_file_is_named() {
    let err = with(|r| {
        r.data.insert("kind".into(), "csv".into());
        r.data.insert("path".into(), "no/such/file.csv".into());
    })
    .unwrap_err();
    assert_eq!(err.key, "data.path");
    assert!(err.message.contains("no/such/file.csv"), "{}", err.message);
}

/// `[data]` is read as it is, each kind's keys by its own type: an error names the key and
/// its line, worded as the rest of the config's are.
#[test]
fn a_data_table_s_errors_name_the_key_where_it_is_written() {
    let cases = [
        (
            "kind = \"parquet\"",
            "d.toml:2:1: data.kind must be one of \"synthetic\", \"csv\", \"idx\", \"series\", \
             got \"parquet\"",
        ),
        (
            "kind = 3",
            "d.toml:2:1: data.kind: invalid type: integer `3`, expected a string",
        ),
        (
            "samples = -3",
            "d.toml:2:1: data.samples must be > 0, got -3",
        ),
        ("seed = -1", "d.toml:2:1: data.seed must be >= 0, got -1"),
        (
            "classes = 1",
            "d.toml:2:1: data.classes must be >= 2, got 1",
        ),
        (
            "noise = -0.5",
            "d.toml:2:1: data.noise must be a finite number >= 0, got -0.5",
        ),
        (
            "validation_fraction = 1.5",
            "d.toml:2:1: data.validation_fraction must be in (0, 1), got 1.5",
        ),
        (
            "num_workers = -2",
            "d.toml:2:1: data.num_workers must be >= 0, got -2",
        ),
        (
            "samples = \"many\"",
            "d.toml:2:1: data.samples: invalid type: string \"many\", expected an integer",
        ),
        (
            "validaton_fraction = 0.1",
            "d.toml:2:1: unknown key data.validaton_fraction (did you mean \
             data.validation_fraction?)",
        ),
        (
            "path = 3",
            "d.toml:2:1: data.path: invalid type: integer `3`, expected a string (a path)",
        ),
        (
            "kind = \"csv\"\nlabel_column = true",
            "d.toml:3:1: data.label_column: expected a column's index (an integer, -1 the last) \
             or its header (a string)",
        ),
        (
            "kind = \"idx\"\nimages = \"i\"",
            "d.toml:1:2: data.labels is required with data.kind = \"idx\"",
        ),
    ];
    for (text, expected) in cases {
        let got = data(text).unwrap_err().to_string();
        assert_eq!(got.lines().next().unwrap(), expected, "{text}");
    }
    let every = data("sample = 3").unwrap_err().to_string();
    assert!(
        every.contains("(did you mean data.samples?)")
            && every.contains("expected one of kind, samples, features")
            && every.ends_with("stratify, standardize, num_workers"),
        "{every}"
    );
    let gaps = data(&format!("path = \"{CO2}\"\nwindow = 8\ngaps = \"mean\""))
        .unwrap_err()
        .to_string();
    assert_eq!(
        gaps,
        "d.toml:4:1: data.gaps must be one of \"none\", \"interpolate\", \"previous\", \
         \"skip\", got \"mean\""
    );
    let series = data(&format!("path = \"{CO2}\"\nwindow = 0"))
        .unwrap_err()
        .to_string();
    assert_eq!(series, "d.toml:3:1: data.window must be > 0, got 0");
}

/// A key's default that depends on the kind is written in: what a run's `config.toml` holds.
#[test]
fn the_defaults_a_kind_sets_are_written_in() {
    let synthetic = data("").unwrap().data;
    assert_eq!(
        (synthetic.stratify, synthetic.standardize),
        (Some(false), Some(false))
    );
    let DataSource::Synthetic(s) = &synthetic.source else {
        unreachable!()
    };
    assert_eq!(
        (s.samples, s.features, s.classes, s.seed),
        (8192, 64, 10, 7)
    );
    let csv = data(&format!("path = \"{CO2}\"")).unwrap().data;
    assert_eq!((csv.stratify, csv.standardize), (Some(true), Some(true)));
    let DataSource::Csv(c) = &csv.source else {
        unreachable!()
    };
    assert_eq!(c.label_column, Some(Column::Index(-1)));
    let target = data(&format!("path = \"{CO2}\"\ntarget_column = \"co2\"")).unwrap();
    let DataSource::Csv(c) = &target.data.source else {
        unreachable!()
    };
    assert_eq!(
        (c.label_column.as_ref(), target.data.stratify),
        (None, Some(false))
    );
    let series = data(&format!("path = \"{CO2}\"\nwindow = 8")).unwrap().data;
    let DataSource::Series(s) = &series.source else {
        unreachable!()
    };
    assert_eq!(
        (s.horizon, s.season, s.gaps, &s.column, s.holdout),
        (1, 1, GapPolicy::Interpolate, &Column::Index(-1), None)
    );
}

#[test]
fn memory_section_validates_sizes_and_combinations() {
    // `[memory]` is read as it is: the file's text, each error located at its key.
    let memory = |text: &str| crate::config::parse(&format!("[memory]\n{text}"), "m.toml", &[]);
    let message = |text: &str| memory(text).unwrap_err().to_string();
    let cfg = memory("limit = \"512MiB\"\non_limit = \"shrink\"").unwrap();
    assert_eq!(cfg.memory.limit, Some(MemorySize::Bytes(512 << 20)));
    assert_eq!(cfg.memory.on_limit, OnLimit::Shrink);
    assert_eq!(cfg.memory.clear, ClearPolicy::BetweenRuns);
    let pre = memory("policy = \"preallocate\"").unwrap();
    assert_eq!(pre.memory.preallocate, Some(MemorySize::Fraction(0.75)));
    assert_eq!(
        message("limit = \"lots\""),
        "m.toml:2:1: memory.limit must be a size like \"512MiB\" or \"2GB\", got \"lots\""
    );
    assert_eq!(
        message("on_limit = \"shrink\""),
        "m.toml:2:1: memory.on_limit = \"shrink\" needs memory.limit to be set"
    );
    let kept = memory("preallocate = \"1GiB\"").unwrap();
    assert_eq!(kept.memory.preallocate, Some(MemorySize::Bytes(1 << 30)));
    let err = memory("policy = \"preallocate\"\nclear = \"every_epoch\"").unwrap_err();
    assert_eq!(err.key.as_deref(), Some("memory.clear"));
    assert_eq!(
        message("policy = \"preallocate\"\npreallocate = \"1GiB\"\nlimit = \"512MiB\""),
        "m.toml:3:1: memory.preallocate (1GiB) is larger than memory.limit (512MiB)"
    );
    // A size set in code that a file's could not be is refused in the file's words.
    let zero = with(|r| r.memory.limit = Some(MemorySize::Bytes(0))).unwrap_err();
    assert_eq!(zero.message, "memory.limit must be > 0, got 0");
    let share = with(|r| r.memory.preallocate = Some(MemorySize::Fraction(1.5))).unwrap_err();
    assert_eq!(
        share.message,
        "memory.preallocate must be a fraction in (0, 1] or a size like \"512MiB\", got 1.5"
    );
}

#[test]
fn fractions_and_rates_are_range_checked() {
    assert!(data("validation_fraction = 1.0").is_err());
    assert!(with(|r| r.train.lr = f64::NAN).is_err());
    assert!(with(|r| r.train.lr = 0.0).is_err());
}

#[test]
fn stratify_needs_classes_but_false_is_always_accepted() {
    let series = |stratify: bool| {
        data(&format!(
            "path = \"{CO2}\"\nwindow = 8\nstratify = {stratify}"
        ))
    };
    // A series run writes `stratify = false` into its config.toml, which must load again.
    assert!(!series(false).unwrap().data.stratify());
    let err = series(true).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("data.stratify"));
    assert!(
        err.to_string()
            .starts_with("d.toml:4:1: data.stratify needs classes"),
        "{err}"
    );
}

/// `[run]`, `[device]` and `[train.offload]` are read as they are (serde, a key's default
/// beside it): their errors still name the key and its line, worded as the config's own.
#[test]
fn tables_read_as_they_are_say_what_is_wrong_as_the_rest_do() {
    let cases = [
        ("[run]\nseed = -1", "t.toml:2:1: run.seed must be >= 0, got -1"),
        (
            "[run]\nlog_every_steps = 0",
            "t.toml:2:1: run.log_every_steps must be > 0, got 0",
        ),
        (
            "[run]\nname = \"a/b\"",
            "t.toml:2:1: run.name must be a non-empty directory name without slashes, got \"a/b\"",
        ),
        ("[device]\nindex = -2", "t.toml:2:1: device.index must be >= 0, got -2"),
        (
            "[device]\nbackend = \"tpu\"",
            "t.toml:2:1: device.backend must be one of \"flex\", \"cpu\", \"cuda\", \"wgpu\", got \"tpu\"",
        ),
        (
            "[device]\nexecution = \"lazy\"",
            "t.toml:2:1: device.execution must be one of \"eager\", \"fused\", got \"lazy\"",
        ),
        (
            "[train.offload]\ngradients = \"gpu\"",
            "t.toml:2:1: train.offload.gradients must be one of \"none\", \"host\", \"auto\", got \"gpu\"",
        ),
        (
            "[memory]\nclear = 3",
            "t.toml:2:1: memory.clear: invalid type, expected a string (a name, in quotes)",
        ),
        (
            "[checkpoint]\nkeep_best = 0",
            "t.toml:2:1: checkpoint.keep_best must be > 0, got 0",
        ),
        (
            "[train.early_stopping]\nmode = \"up\"",
            "t.toml:2:1: train.early_stopping.mode must be one of \"min\", \"max\", got \"up\"",
        ),
        (
            "[device]\nindx = 1",
            "t.toml:2:1: unknown key device.indx (did you mean device.index?); expected one of \
             backend, index, execution",
        ),
    ];
    for (text, said) in cases {
        let error = crate::config::parse(text, "t.toml", &[]).unwrap_err();
        assert_eq!(crate::config::one_line(&error.to_string()), said, "{text}");
    }
    // Left out, each key is its default.
    let config = crate::config::parse("", "t.toml", &[]).unwrap();
    let (run, device) = (&config.run, &config.device);
    assert_eq!(
        (run.name.as_str(), run.seed, run.output_dir.as_path()),
        ("run", 42, std::path::Path::new("runs"))
    );
    assert_eq!(
        (device.backend, device.index, device.execution),
        (Backend::Flex, 0, None)
    );
    assert!(config.train.offload.is_none());
}
