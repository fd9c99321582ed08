//! Code and files give the same config: each setter writes the key a file writes, reaches the
//! same validated [`RunConfig`], and fails with the same error naming that key.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;

use super::*;
use crate::config::{parse, Column, GapPolicy, MonitorMode, ScheduleKind};

/// Files that exist (validation checks only that).
const CO2: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/co2-weekly.csv");
const DIGITS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/digits.csv.gz");

/// The text of a file with `[run] name = "b"` and `toml`.
fn text(toml: &str) -> String {
    format!("[run]\nname = \"b\"\n{toml}")
}

fn b() -> ConfigBuilder {
    ConfigBuilder::new("b")
}

/// Builders with the file each should equal.
type Cases = Vec<(ConfigBuilder, String)>;

mod cases;

use cases::{memory_cases, other_cases, train_cases, train_table_cases};

/// Each builder writes the keys its file writes, and builds the config the file parses to.
fn assert_same(cases: Cases) {
    for (builder, toml) in cases {
        let raw = crate::config::load::read(toml::from_str(&toml).unwrap()).unwrap();
        assert_eq!(builder.raw, raw, "{toml}");
        assert_eq!(
            builder.build().unwrap(),
            parse(&toml, "t.toml", &[]).unwrap(),
            "{toml}"
        );
    }
}

#[test]
fn every_train_key_the_docs_show_has_a_setter_equal_to_its_toml() {
    assert_same(train_cases());
    assert_same(train_table_cases());
}

#[test]
fn every_model_data_device_and_memory_key_has_a_setter_equal_to_its_toml() {
    assert_same(other_cases());
    assert_same(memory_cases());
}

/// `section.field` for each field of `T`.
fn keys<T: DeserializeOwned>(section: &str) -> Vec<String> {
    crate::config::fields::fields::<T>()
        .iter()
        .map(|f| format!("{section}.{f}"))
        .collect()
}

/// The dotted keys of `value`, each with its value.
fn key_values(prefix: &str, value: &toml::Value, out: &mut BTreeMap<String, toml::Value>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                let key = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                key_values(&key, value, out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), value.clone());
        }
    }
}

/// The dotted keys `builder` sets to other than a new builder's value (a table read as it is
/// writes every key, at its default where nothing set it).
fn set_keys(builder: &ConfigBuilder, out: &mut BTreeSet<String>) {
    let of = |builder: &ConfigBuilder| {
        let mut values = BTreeMap::new();
        key_values(
            "",
            &toml::Value::try_from(&builder.raw).unwrap(),
            &mut values,
        );
        values
    };
    let base = of(&b());
    for (key, value) in of(builder) {
        if base.get(&key) != Some(&value) {
            out.insert(key);
        }
    }
}

#[test]
fn the_setters_reach_every_key_a_file_takes() {
    let tables = [
        "train.schedule",
        "train.early_stopping",
        "train.offload",
        "train.ema",
    ];
    let every: BTreeSet<String> = [
        keys::<crate::config::RunSection>("run"),
        keys::<crate::config::DeviceConfig>("device"),
        // A kind's own keys are the kind's: the built-in kinds' setters are tested with them.
        vec!["model.kind".to_string()],
        vec!["data.kind".to_string()],
        keys::<crate::config::SyntheticConfig>("data"),
        keys::<crate::config::CsvConfig>("data"),
        keys::<crate::config::IdxConfig>("data"),
        keys::<crate::config::SeriesConfig>("data"),
        keys::<crate::config::DataConfig>("data"),
        keys::<crate::config::TrainConfig>("train"),
        keys::<crate::config::ScheduleConfig>("train.schedule"),
        keys::<crate::config::EarlyStoppingConfig>("train.early_stopping"),
        keys::<crate::config::EmaConfig>("train.ema"),
        keys::<crate::config::OffloadConfig>("train.offload"),
        keys::<crate::config::MemoryConfig>("memory"),
        keys::<crate::config::CheckpointConfig>("checkpoint"),
    ]
    .concat()
    .into_iter()
    .filter(|k| !tables.contains(&k.as_str()))
    .collect();
    assert!(
        every.len() > 60 && every.contains("data.num_workers"),
        "{every:?}"
    );
    let mut set = BTreeSet::new();
    let cases = train_cases().into_iter().chain(train_table_cases());
    for (builder, _) in cases.chain(other_cases()).chain(memory_cases()) {
        set_keys(&builder, &mut set);
    }
    // Set by every case, at a name of its own; and a key of one value, its default.
    set.extend(["run.name".to_string(), "memory.snapshot".to_string()]);
    let missing: Vec<_> = every.difference(&set).collect();
    assert!(missing.is_empty(), "keys no setter reaches: {missing:?}");
}

/// Builders given a value a file could not hold, each with the file that gives it.
fn bad_value_cases() -> Cases {
    let size = MemorySize::Bytes;
    vec![
        (b().betas(1.5, 0.9), "[train]\nbetas = [1.5, 0.9]".into()),
        (
            b().synthetic(10, 4, 1),
            "[data]\nkind = \"synthetic\"\nsamples = 10\nfeatures = 4\nclasses = 1".into(),
        ),
        (
            b().csv("nope.csv"),
            "[data]\nkind = \"csv\"\npath = \"nope.csv\"".into(),
        ),
        (
            b().csv(DIGITS)
                .label_column(Column::Index(0))
                .target_column(Column::Index(1)),
            format!(
                "[data]\nkind = \"csv\"\npath = '{DIGITS}'\nlabel_column = 0\ntarget_column = 1"
            ),
        ),
        (
            b().series(CO2, 8).horizon(0),
            format!("[data]\nkind = \"series\"\npath = '{CO2}'\nwindow = 8\nhorizon = 0"),
        ),
        (
            b().series(CO2, 8).stratify(true),
            format!("[data]\nkind = \"series\"\npath = '{CO2}'\nwindow = 8\nstratify = true"),
        ),
        (
            b().validation_fraction(1.0),
            "[data]\nvalidation_fraction = 1.0".into(),
        ),
        (
            b().preallocate(size(1 << 30))
                .memory_limit(size(1 << 20), OnLimit::Fail),
            "[memory]\npolicy = \"preallocate\"\npreallocate = 1073741824\nlimit = 1048576\n\
             on_limit = \"fail\""
                .into(),
        ),
        (
            b().preallocate(MemorySize::Fraction(0.5))
                .clear(ClearPolicy::EveryEpoch),
            "[memory]\npolicy = \"preallocate\"\npreallocate = 0.5\nclear = \"every_epoch\"".into(),
        ),
        (
            b().checkpoint_every_steps(0),
            "[checkpoint]\nevery_steps = 0".into(),
        ),
        (b().log_every_steps(0), "log_every_steps = 0".into()),
        (
            b().keep_best(0, None, None),
            "[checkpoint]\nkeep_best = 0".into(),
        ),
        (
            b().memory_limit(MemorySize::Bytes(0), OnLimit::Fail),
            "[memory]\nlimit = 0".into(),
        ),
        (
            b().memory_limit(MemorySize::Fraction(1.5), OnLimit::Fail),
            "[memory]\nlimit = 1.5".into(),
        ),
        (
            b().schedule(crate::config::ScheduleConfig {
                kind: ScheduleKind::Cosine,
                decay_steps: Some(0),
                ..Default::default()
            }),
            "[train.schedule]\nkind = \"cosine\"\ndecay_steps = 0".into(),
        ),
        (
            b().schedule(crate::config::ScheduleConfig {
                kind: ScheduleKind::Step,
                step_size: Some(0),
                ..Default::default()
            }),
            "[train.schedule]\nkind = \"step\"\nstep_size = 0".into(),
        ),
        (
            b().schedule(crate::config::ScheduleConfig {
                kind: ScheduleKind::Piecewise,
                milestones: Some(vec![2, 1]),
                factors: Some(vec![0.5, 0.1]),
                ..Default::default()
            }),
            "[train.schedule]\nkind = \"piecewise\"\nmilestones = [2, 1]\nfactors = [0.5, 0.1]"
                .into(),
        ),
    ]
}

#[test]
fn a_bad_value_from_a_setter_fails_as_the_file_does() {
    for (builder, toml) in bad_value_cases() {
        let code = builder.build().unwrap_err();
        let file = parse(&text(&toml), "t.toml", &[]).unwrap_err();
        assert_eq!(
            (&code.key, &code.message),
            (&file.key, &file.message),
            "{toml}"
        );
        let key = code.key.as_deref().unwrap();
        assert!(code.message.starts_with(key), "{code}");
        assert_eq!(code.to_string(), format!("config: {}", file.message));
        assert!(!code.to_string().contains('\n'), "{code}");
    }
}

#[test]
fn a_program_s_kind_keeps_its_keys_and_another_kind_set_over_it_drops_them() {
    let text = "[run]\nname = \"t\"\n\n[model]\nkind = \"sales\"\nwidth = 64\n";
    let config = parse(text, "t.toml", &[]).unwrap();
    let model = &config.model;
    assert_eq!(
        (model.kind(), model.settings["width"].as_integer()),
        ("sales", Some(64))
    );
    // Through the builder and back, as a variant of it: the kind's keys stay.
    let again = ConfigBuilder::from_config(&config)
        .epochs(2)
        .build()
        .unwrap();
    assert_eq!(again.model, config.model);
    // Set to another kind, it is that kind, without the first kind's keys.
    let other = ConfigBuilder::from_config(&config)
        .model("mlp")
        .model_key("hidden", toml::Value::Array(vec![8.into()]))
        .build()
        .unwrap();
    assert_eq!(other.model.kind(), "mlp");
    let hidden = other.model.settings.get("hidden").map(ToString::to_string);
    assert_eq!(
        (other.model.settings.len(), hidden.as_deref()),
        (1, Some("[8]"))
    );
}

#[test]
fn a_path_that_is_not_utf8_is_refused_by_build_naming_its_key() {
    use std::os::unix::ffi::OsStrExt;
    let odd = std::path::Path::new(std::ffi::OsStr::from_bytes(b"runs\xff"));
    let err = ConfigBuilder::new("demo")
        .synthetic(64, 4, 2)
        .output_dir(odd)
        .build()
        .unwrap_err();
    assert_eq!(err.key.as_deref(), Some("run.output_dir"));
    assert!(
        err.to_string().contains("\"runs\\xFF\" is not valid UTF-8"),
        "{err}"
    );
    let err = ConfigBuilder::new("demo").csv(odd).build().unwrap_err();
    assert_eq!(err.key.as_deref(), Some("data.path"));
    let fine = ConfigBuilder::new("demo")
        .synthetic(64, 4, 2)
        .output_dir("runs-é");
    let built = fine.build().unwrap();
    assert_eq!(built.run.output_dir, std::path::Path::new("runs-é"));
}

#[test]
fn a_value_set_in_code_that_a_config_file_cannot_hold_is_refused_naming_it() {
    let error = b().seed(u64::MAX).build().unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "config: run.seed must be at most {}, got {}",
            i64::MAX,
            u64::MAX
        )
    );
    let error = (b().device(Backend::Flex, usize::MAX)).build().unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("config: device.index must be at most"),
        "{error}"
    );
    // The counts of a table read as it is, set in code.
    let huge = usize::MAX;
    let early = EarlyStoppingConfig {
        patience: huge,
        ..Default::default()
    };
    let schedule = |edit: fn(&mut crate::config::ScheduleConfig)| {
        let mut schedule = crate::config::ScheduleConfig {
            kind: ScheduleKind::Piecewise,
            milestones: Some(vec![1]),
            factors: Some(vec![0.5]),
            ..Default::default()
        };
        edit(&mut schedule);
        b().schedule(schedule)
    };
    let cases = [
        (b().checkpoint_every_steps(huge), "checkpoint.every_steps"),
        (b().keep_best(huge, None, None), "checkpoint.keep_best"),
        (b().early_stopping(early), "train.early_stopping.patience"),
        (
            schedule(|s| s.milestones = Some(vec![1, usize::MAX])),
            "train.schedule.milestones",
        ),
        (
            schedule(|s| {
                s.kind = ScheduleKind::Step;
                (s.milestones, s.factors) = (None, None);
                s.step_size = Some(usize::MAX);
            }),
            "train.schedule.step_size",
        ),
        // `[data]`'s counts, written into its table as a file's are.
        (b().data_seed(u64::MAX), "data.seed"),
        (b().synthetic(huge, 4, 2), "data.samples"),
        (b().num_workers(huge), "data.num_workers"),
    ];
    for (builder, key) in cases {
        let error = builder.build().unwrap_err().to_string();
        let said = format!(
            "config: {key} must be at most {}, got {}",
            i64::MAX,
            u64::MAX
        );
        assert_eq!(error, said);
    }
    // Set again to a value a file can hold, it is that value.
    let again = b().num_workers(huge).num_workers(2).build().unwrap();
    assert_eq!(again.data.num_workers, 2);
    // At the edge, it is written and read back.
    let config = b().seed(i64::MAX as u64).build().unwrap();
    let again = parse(&crate::config::to_toml(&config), "t.toml", &[]).unwrap();
    assert_eq!(again.run.seed, i64::MAX as u64);
}
