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
        ],
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
        let mut sections: Vec<(&str, Vec<(&str, String)>)> = Vec::new();
        for (section, key, value) in entries {
            let (name, keys) = KEYS[section];
            let key = key.get(keys);
            let at = match sections.iter().position(|(n, _)| *n == name) {
                Some(at) => at,
                None => {
                    sections.push((name, Vec::new()));
                    sections.len() - 1
                }
            };
            if !sections[at].1.iter().any(|(k, _)| *k == *key) {
                sections[at].1.push((key, value));
            }
        }
        sections
            .iter()
            .map(|(name, entries)| {
                let lines: String = entries
                    .iter()
                    .map(|(k, v)| format!("{k} = {v}\n"))
                    .collect();
                format!("[{name}]\n{lines}")
            })
            .collect()
    })
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
            // What validation accepts, it can write back and read again unchanged.
            Ok(config) => {
                let written = tidemark::config::to_toml(&config);
                let again = parse(&written, "written.toml", &[]);
                prop_assert_eq!(again.as_ref().ok(), Some(&config), "{}", written);
            }
            Err(e) => one_line(e)?,
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
