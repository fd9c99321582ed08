//! Validation of a config as read: defaults, ranges, choices and the keys of other kinds.

use super::*;
use crate::config::RawColumn;

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

#[test]
fn keys_of_the_other_data_kind_are_rejected() {
    let err = with(|r| {
        r.data.kind = Some("synthetic".into());
        r.data.path = Some("x.csv".into());
    })
    .unwrap_err();
    assert_eq!(
        err.message,
        "data.path only applies with data.kind = \"csv\" or \"series\""
    );
    let err = with(|r| {
        r.data.kind = Some("csv".into());
        r.data.window = Some(4);
    })
    .unwrap_err();
    assert_eq!(
        err.message,
        "data.window only applies with data.kind = \"series\""
    );
}

#[test]
fn the_kind_follows_from_the_keys_when_unset() {
    let csv = concat!(env!("CARGO_MANIFEST_DIR"), "/data/co2-weekly.csv");
    let series = with(|r| {
        r.data.path = Some(csv.into());
        r.data.window = Some(8);
    })
    .unwrap();
    assert!(matches!(series.data.source, DataSource::Series(_)));
    let table = with(|r| r.data.path = Some(csv.into())).unwrap();
    assert!(matches!(table.data.source, DataSource::Csv(_)));
    let err = with(|r| r.data.column = Some(RawColumn::Index(0))).unwrap_err();
    assert_eq!(err.key, "data.window", "a series needs its window");
}

#[test]
fn missing_csv_file_is_named() {
    let err = with(|r| {
        r.data.kind = Some("csv".into());
        r.data.path = Some("no/such/file.csv".into());
    })
    .unwrap_err();
    assert_eq!(err.key, "data.path");
    assert!(err.message.contains("no/such/file.csv"), "{}", err.message);
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
    assert!(with(|r| r.data.validation_fraction = Some(1.0)).is_err());
    assert!(with(|r| r.train.lr = f64::NAN).is_err());
    assert!(with(|r| r.train.lr = 0.0).is_err());
}

#[test]
fn stratify_needs_classes_but_false_is_always_accepted() {
    let csv = concat!(env!("CARGO_MANIFEST_DIR"), "/data/co2-weekly.csv");
    let series = |stratify: bool| {
        with(|r| {
            r.data.path = Some(csv.into());
            r.data.window = Some(8);
            r.data.stratify = Some(stratify);
        })
    };
    // A series run writes `stratify = false` into its config.toml, which must load again.
    assert!(!series(false).unwrap().data.stratify);
    let err = series(true).unwrap_err();
    assert_eq!(err.key, "data.stratify");
    assert!(err.message.contains("needs classes"), "{}", err.message);
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
