//! The front door under random input: the config loader and `--set` parsing never panic, and
//! every error they give is one line under 300 characters (a detail too long for it, on indented
//! lines after). Each case that once failed is kept below as a plain test.
//! `PROPTEST_CASES` sets how many inputs each property tries (256 by default).

use proptest::prelude::*;
use tidemark::config::{parse, Override};

/// Sections and keys as written in configs, with a few that do not exist.
const KEYS: &[(&str, &[&str])] = &[
    ("run", &["name", "seed", "output_dir", "nope"]),
    ("device", &["backend", "index", "execution"]),
    (
        "model",
        &[
            "kind",
            "hidden",
            "activation",
            "dropout",
            "input",
            "channels",
            "kernel_size",
            "pool",
            "batch_norm",
        ],
    ),
    (
        "data",
        &[
            "kind",
            "samples",
            "features",
            "classes",
            "seed",
            "noise",
            "path",
            "label_column",
            "target_column",
            "header",
            "column",
            "window",
            "horizon",
            "holdout",
            "gaps",
            "season",
            "validation_fraction",
            "stratify",
            "standardize",
            "num_workers",
        ],
    ),
    (
        "train",
        &[
            "epochs",
            "batch_size",
            "accumulation_steps",
            "optimizer",
            "lr",
            "weight_decay",
            "precision",
            "loss_scaling",
            "initial_loss_scale",
            "loss_scale_growth_interval",
            "gradient_checkpointing",
            "betas",
            "eps",
            "momentum",
            "clip_grad_norm",
            "clip_grad_value",
        ],
    ),
    (
        "train.schedule",
        &[
            "kind",
            "warmup_steps",
            "min_lr",
            "decay_steps",
            "step_size",
            "gamma",
            "monitor",
            "mode",
            "factor",
            "patience",
            "min_delta",
            "cooldown",
            "milestones",
            "factors",
        ],
    ),
    (
        "train.early_stopping",
        &["monitor", "mode", "patience", "min_delta", "restore_best"],
    ),
    (
        "train.ema",
        &["decay", "start_step", "device", "evaluate_with"],
    ),
    (
        "checkpoint",
        &["every_steps", "keep_best", "monitor", "mode"],
    ),
    (
        "memory",
        &[
            "policy",
            "preallocate",
            "limit",
            "on_limit",
            "clear",
            "snapshot",
        ],
    ),
    ("trian", &["epochs"]),
];

/// A TOML value of any type, with the edges validation has to catch.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(1),
            Just(i64::MAX),
            Just(i64::MIN)
        ]
        .prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:?}")),
        prop_oneof![
            Just("nan"),
            Just("inf"),
            Just("-inf"),
            Just("1e308"),
            Just("-0.0")
        ]
        .prop_map(String::from),
        any::<bool>().prop_map(|v| v.to_string()),
        "[a-z0-9_. /\\\\-]{0,12}".prop_map(|s| format!("{s:?}")),
        prop_oneof![
            Just("\"512MiB\""),
            Just("\"0B\""),
            Just("\"1.5GB\""),
            Just("\"18446744073709551615TiB\""),
            Just("\"mlp\""),
            Just("\"cnn\""),
            Just("\"lstm\""),
            Just("\"series\""),
            Just("\"csv\""),
            Just("\"idx\""),
            Just("\"shrink\""),
            Just("\"preallocate\""),
            Just("\"f16\""),
            Just("\"cosine\""),
            Just("\"piecewise\""),
            Just("\"plateau\""),
            Just("\"step\""),
            Just("\"val_loss\""),
            Just("\"max\""),
            Just("\"sgd\""),
            Just("\"find\""),
        ]
        .prop_map(String::from),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(|items| format!("[{}]", items.join(", ")))
    })
}

/// A config file of random known (and some unknown) keys with random values, each section
/// and key once, so that most files reach validation.
fn config_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (0..KEYS.len(), any::<prop::sample::Index>(), value()),
        0..12,
    )
    .prop_map(|entries| {
        let entries = (entries.into_iter())
            .map(|(table, key, value)| (table, key.get(KEYS[table].1).to_string(), value));
        let tables: Vec<&str> = KEYS.iter().map(|(name, _)| *name).collect();
        toml_text(&tables, entries, false)
    })
}

/// The TOML text of `entries` (a table's place in `tables`, a key, a value): the tables in
/// `tables`' order, those with a key (the first one always, with `first_always`), each key
/// once (as first drawn), a dotted key quoted. A table's keys follow its header, so a table's
/// own keys come before the tables under it.
fn toml_text(
    tables: &[&str],
    entries: impl IntoIterator<Item = (usize, String, String)>,
    first_always: bool,
) -> String {
    let mut keys: Vec<Vec<(String, String)>> = vec![Vec::new(); tables.len()];
    for (table, key, value) in entries {
        if !keys[table].iter().any(|(k, _)| *k == key) {
            keys[table].push((key, value));
        }
    }
    let mut text = String::new();
    for (at, (name, entries)) in tables.iter().zip(keys).enumerate() {
        if entries.is_empty() && !(first_always && at == 0) {
            continue;
        }
        text.push_str(&format!("[{name}]\n"));
        for (key, value) in entries {
            let key = match key.contains('.') {
                true => format!("{key:?}"),
                false => key,
            };
            text.push_str(&format!("{key} = {value}\n"));
        }
    }
    text
}

fn one_line(error: impl std::fmt::Display) -> Result<(), TestCaseError> {
    let text = error.to_string();
    prop_assert!(!text.trim().is_empty(), "an empty error");
    // One line under 300 characters, what and where; a detail too long for it on indented
    // lines after (the keys an unknown one could be).
    let mut lines = text.lines();
    let headline = lines.next().unwrap_or_default();
    prop_assert!(
        headline.chars().count() < 300,
        "a long error line: {text:?}"
    );
    prop_assert!(
        lines.all(|l| l.starts_with("  ") && l.trim().len() > 1),
        "an error of several lines: {text:?}"
    );
    Ok(())
}

proptest! {
    #[test]
    fn any_set_text_parses_or_fails_in_one_line(text in "\\PC{0,40}") {
        if let Err(e) = Override::parse(&text) {
            one_line(e)?;
        }
    }

    #[test]
    fn any_text_loads_or_fails_in_one_line(text in "\\PC{0,200}") {
        if let Err(e) = parse(&text, "fuzz.toml", &[]) {
            one_line(e)?;
        }
    }

    #[test]
    fn random_configs_and_overrides_validate_or_fail_in_one_line(
        text in config_text(),
        set in prop::collection::vec(
            (0..KEYS.len(), any::<prop::sample::Index>(), value()),
            0..3,
        ),
    ) {
        let mut overrides = Vec::new();
        for (section, key, value) in set {
            let (name, keys) = KEYS[section];
            match Override::parse(&format!("{name}.{}={value}", key.get(keys))) {
                Ok(o) => overrides.push(o),
                Err(e) => one_line(e)?,
            }
        }
        match parse(&text, "fuzz.toml", &overrides) {
            // What validation accepts, it can write back and read again unchanged. Compared as
            // debug text: a model's settings are a kind's to check (not `parse`'s), and may hold
            // a NaN, which is never equal to itself.
            Ok(config) => {
                let written = tidemark::config::to_toml(&config);
                let again = parse(&written, "written.toml", &[]).map(|c| format!("{c:?}"));
                prop_assert_eq!(again.ok(), Some(format!("{config:?}")), "{}", written);
                // Its dependent defaults left out (a search's base), it validates back to it.
                let unresolved = tidemark::config::to_toml(&config.unresolved());
                let again = parse(&unresolved, "unresolved.toml", &[]).map(|c| format!("{c:?}"));
                prop_assert_eq!(again.ok(), Some(format!("{config:?}")), "{}", unresolved);
            }
            Err(e) => one_line(e)?,
        }
    }
}

/// What a `[sweep]` key takes, for drawing values that mostly get past serde to the checks.
#[derive(Clone, Copy, Debug)]
enum Takes {
    Count,
    Fraction,
    Name,
    Size,
    Seconds,
    Domain,
    Numbers,
}

/// The `[sweep]` keys (and the tables under it) that random search tables are made of.
const SWEEP_KEYS: &[(&str, &[(&str, Takes)])] = &[
    (
        "sweep",
        &[
            ("method", Takes::Name),
            ("trials", Takes::Count),
            ("seed", Takes::Count),
            ("monitor", Takes::Name),
            ("mode", Takes::Name),
            ("order", Takes::Name),
            ("parallel", Takes::Count),
            ("budget", Takes::Size),
            ("heartbeat", Takes::Seconds),
            ("grace", Takes::Seconds),
        ],
    ),
    (
        "sweep.vary",
        &[
            ("train.lr", Takes::Domain),
            ("train.batch_size", Takes::Domain),
            ("train.weight_decay", Takes::Domain),
            ("model.hidden", Takes::Domain),
            ("memory.policy", Takes::Domain),
        ],
    ),
    (
        "sweep.prune",
        &[
            ("method", Takes::Name),
            ("min_epochs", Takes::Count),
            ("reduction", Takes::Count),
            ("startup", Takes::Count),
        ],
    ),
    (
        "sweep.pbt",
        &[
            ("population", Takes::Count),
            ("interval", Takes::Count),
            ("quantile", Takes::Fraction),
            ("resample", Takes::Fraction),
            ("factors", Takes::Numbers),
        ],
    ),
];

/// A value `takes` would have, four times in five; one of `value()`'s edges otherwise.
fn sweep_value(takes: Takes) -> BoxedStrategy<String> {
    let count = (-2i64..12).prop_map(|v| v.to_string());
    let fraction = (-0.5f64..1.5).prop_map(|v| format!("{v:?}"));
    let number = prop_oneof![count.clone(), fraction.clone(), value()];
    let numbers = prop::collection::vec(number.clone(), 0..4)
        .prop_map(|items| format!("[{}]", items.join(", ")));
    let plausible = match takes {
        Takes::Count => count.boxed(),
        Takes::Fraction => fraction.boxed(),
        Takes::Numbers => numbers.boxed(),
        Takes::Seconds => prop_oneof![count, fraction].boxed(),
        Takes::Size => prop_oneof![fraction, Just("\"512MiB\"".to_string())].boxed(),
        Takes::Name => prop::sample::select(vec![
            "random",
            "tpe",
            "pbt",
            "grid",
            "asha",
            "median",
            "none",
            "min",
            "max",
            "val_loss",
            "val_accuracy",
            "listed",
            "largest_first",
        ])
        .prop_map(|n| format!("{n:?}"))
        .boxed(),
        Takes::Domain => prop_oneof![
            numbers,
            (number.clone(), number, any::<bool>())
                .prop_map(|(min, max, log)| format!("{{ min = {min}, max = {max}, log = {log} }}")),
        ]
        .boxed(),
    };
    prop_oneof![4 => plausible, 1 => value()].boxed()
}

/// One `[sweep]` entry: its table, its key and a value.
fn sweep_entry(
    section: impl Strategy<Value = usize>,
) -> impl Strategy<Value = (usize, String, String)> {
    (section, any::<prop::sample::Index>()).prop_flat_map(|(section, key)| {
        let (name, takes) = *key.get(SWEEP_KEYS[section].1);
        (Just(section), Just(name.to_string()), sweep_value(takes))
    })
}

/// A config file's random `[sweep]` tables, each section and key once; `[sweep.vary]` has one
/// key at least, so that most tables reach the checks past it.
fn sweep_text() -> impl Strategy<Value = String> {
    let entries = prop::collection::vec(sweep_entry(0..SWEEP_KEYS.len()), 0..10);
    (sweep_entry(Just(1)), entries).prop_map(|(first, entries)| {
        let tables: Vec<&str> = SWEEP_KEYS.iter().map(|(name, _)| *name).collect();
        toml_text(&tables, std::iter::once(first).chain(entries), true)
    })
}

proptest! {
    #[test]
    fn random_search_tables_validate_or_fail_in_one_line(text in sweep_text()) {
        // What serde refuses is the loader's to word (above); the search's own checks here.
        let Ok(raw) = toml::from_str::<tidemark::config::RawConfig>(&text) else {
            return Ok(());
        };
        if let Err(e) = tidemark::sweep::Space::from_raw(&raw.sweep.unwrap_or_default()) {
            one_line(&e.message)?;
            prop_assert!(e.message.starts_with(&e.key), "the key first: {:?}", e.message);
        }
    }
}

/// Found by `any_text_loads_or_fails_in_one_line`: the TOML parser's message ran over two lines.
#[test]
fn a_bad_escape_is_one_line() {
    let err = parse("\"\\🃑", "fuzz.toml", &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        "fuzz.toml:1:3: invalid TOML: invalid escape sequence; expected `b`, `f`, `n`, `r`, `t`, \
         `u`, `U`, `\\`, `\"`"
    );
}

/// Found by `random_configs_and_overrides_validate_or_fail_in_one_line`: a section written twice.
#[test]
fn a_section_written_twice_is_one_line() {
    let err = parse("[train]\nepochs = 1\n[train]\nlr = 0.1\n", "fuzz.toml", &[])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "fuzz.toml:3:1: invalid TOML: invalid table header; duplicate key `train` in document root"
    );
}

/// Found by `random_configs_and_overrides_validate_or_fail_in_one_line`: a number an error
/// quoted in full ran 300 digits long.
#[test]
fn a_huge_number_in_an_error_is_written_short() {
    let set = Override::parse("data.validation_fraction=2.638128847576501e306").unwrap();
    let err = parse("", "fuzz.toml", &[set]).unwrap_err().to_string();
    assert_eq!(
        err,
        "--set data.validation_fraction=2.638128847576501e306: data.validation_fraction must \
         be in (0, 1), got 2.638128847576501e306"
    );
}

/// Found by `random_configs_and_overrides_validate_or_fail_in_one_line`: a NaN in a model's
/// settings (a kind's to check, not the loader's) reads back as it was written.
#[test]
fn a_nan_among_a_models_settings_writes_back() {
    let config = parse("[model]\nhidden = [[nan]]\n", "fuzz.toml", &[]).unwrap();
    let written = tidemark::config::to_toml(&config);
    assert!(written.contains("hidden = [[nan]]"), "{written}");
    let again = parse(&written, "written.toml", &[]).unwrap();
    assert_eq!(format!("{again:?}"), format!("{config:?}"));
}

/// The search's own checks on `text`'s `[sweep]` table.
fn search_error(text: &str) -> String {
    let raw: tidemark::config::RawConfig = toml::from_str(text).unwrap();
    let space = tidemark::sweep::Space::from_raw(&raw.sweep.unwrap());
    space.unwrap_err().message
}

/// Found by `random_search_tables_validate_or_fail_in_one_line`: a varied key's value quoted in
/// full, and a heartbeat too long for a clock, which panicked.
#[test]
fn a_search_table_with_huge_numbers_fails_in_one_short_line() {
    assert_eq!(
        search_error("[sweep.vary]\n\"train.lr\" = 1e308\n"),
        "sweep.vary.train.lr: must be a list of values or a range { min, max, log }, got 1e308"
    );
    assert_eq!(
        search_error("[sweep]\nheartbeat = 2.2e154\n[sweep.vary]\n\"train.lr\" = [0.1]\n"),
        "sweep.heartbeat: must be a number of seconds above 0 and at most 604800 (a week), got \
         2.2e154"
    );
    assert_eq!(
        search_error("[sweep]\ngrace = 604801\n[sweep.vary]\n\"train.lr\" = [0.1]\n"),
        "sweep.grace: must be a number of seconds above 0 and at most 604800 (a week), got 604801"
    );
}
