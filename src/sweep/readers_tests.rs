//! Every reader of a file tidemark writes and reads back (a search's journal, the `plan.json`
//! of a search whose journal does not keep it, a checkpoint's `meta.json` and `manifest.json`,
//! a run's `summary.json`), fed arbitrary bytes and arbitrary values in each field of a real file
//! (`tests/readers/`: a population trained two at a time, and a TPE search pruned by ASHA):
//! it reads the file, or refuses
//! it in one line that names the file, with exit code 2; it never panics or aborts, and what
//! it reads goes on as far as the command that reads it goes (a plan's trials drawn, a
//! journal's rows ranked and a population's schedule written).
//!
//! `PROPTEST_CASES` sets the inputs each property tries (256 by default); CI pins
//! `PROPTEST_RNG_SEED`. A long run: `PROPTEST_CASES=100000 cargo test --lib readers_tests`.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;

use crate::error::Error;
use crate::record::RunSummary;
use crate::train::Checkpoint;

const PLAN: &str = include_str!("../../tests/readers/plan.json");
const PLAN_TPE: &str = include_str!("../../tests/readers/plan-tpe.json");
const JOURNAL: &str = include_str!("../../tests/readers/journal.log");
const JOURNAL_TPE: &str = include_str!("../../tests/readers/journal-tpe.log");
const META: &str = include_str!("../../tests/readers/meta.json");
const MANIFEST: &str = include_str!("../../tests/readers/manifest.json");
const SUMMARY: &str = include_str!("../../tests/readers/summary.json");

/// A read that succeeded, or an error as the command line gives it: exit 2, one line, naming
/// `file`.
fn read_or_refused<T>(read: Result<T, Error>, file: &str) -> Result<Option<T>, TestCaseError> {
    match read {
        Ok(value) => Ok(Some(value)),
        Err(e) => {
            let text = e.to_string();
            prop_assert_eq!(e.exit_code(), 2, "{}", text);
            prop_assert!(text.contains(file), "{} does not name {}", text, file);
            prop_assert!(!text.contains('\n'), "{}", text);
            Ok(None)
        }
    }
}

/// A JSON value of any kind, with the numbers and names that break readers: out of range,
/// negative, huge, not finite (as JSON has it, `null`), paths and names reaching out.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        // Most often a word or a count of the file's own, in another field's place.
        4 => word().prop_map(Value::from),
        3 => prop_oneof![0..=5u64, Just(99), Just(4_294_967_296)].prop_map(Value::from),
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => prop_oneof![
            Just(0.0),
            Just(-1.0),
            Just(1e300),
            Just(-1e-300),
            any::<f64>()
        ]
        .prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
        2 => prop_oneof![
            Just(String::new()),
            Just("..".to_string()),
            Just("../../../../etc/passwd".to_string()),
            Just("/etc/passwd".to_string()),
            Just("a/b".to_string()),
            Just("epoch-3".to_string()),
            Just("x".repeat(5000)),
            any::<String>(),
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(".{0,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every node of `value` by its path (object keys, array indices), the root first.
fn paths(value: &Value, at: Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let mut next = at.clone();
                next.push(Value::String(k.clone()));
                paths(v, next, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let mut next = at.clone();
                next.push(Value::from(i));
                paths(v, next, out);
            }
        }
        _ => {}
    }
}

/// `value` with the node at the `pick`-th path (modulo their count) replaced by `new`, or
/// removed from its object or array where `remove`.
fn replaced(value: &Value, pick: usize, new: Value, remove: bool) -> Value {
    let mut all = Vec::new();
    paths(value, Vec::new(), &mut all);
    let path = &all[pick % all.len()];
    let mut out = value.clone();
    let Some((last, parents)) = path.split_last() else {
        return new;
    };
    let mut node = &mut out;
    for step in parents {
        node = match step {
            Value::String(k) => &mut node[k.as_str()],
            _ => &mut node[step.as_u64().unwrap() as usize],
        };
    }
    match (node, last) {
        (Value::Object(map), Value::String(k)) if remove => drop(map.remove(k)),
        (Value::Array(items), i) if remove => drop(items.remove(i.as_u64().unwrap() as usize)),
        (Value::Object(map), Value::String(k)) => drop(map.insert(k.clone(), new)),
        (Value::Array(items), i) => items[i.as_u64().unwrap() as usize] = new,
        _ => {}
    }
    out
}

/// `value` with the key of the `pick`-th node that has one (modulo their count) renamed `to`.
fn renamed(value: &Value, pick: usize, to: &str) -> Value {
    let mut all = Vec::new();
    paths(value, Vec::new(), &mut all);
    let keyed: Vec<&Vec<Value>> = all
        .iter()
        .filter(|p| p.last().is_some_and(Value::is_string))
        .collect();
    let Some(path) = (!keyed.is_empty()).then(|| keyed[pick % keyed.len()]) else {
        return value.clone();
    };
    let mut out = value.clone();
    let (last, parents) = path.split_last().unwrap();
    let mut node = &mut out;
    for step in parents {
        node = match step {
            Value::String(k) => &mut node[k.as_str()],
            _ => &mut node[step.as_u64().unwrap() as usize],
        };
    }
    if let Value::Object(map) = node {
        let moved = map.remove(last.as_str().unwrap()).unwrap();
        map.insert(to.to_string(), moved);
    }
    out
}

/// A word a record is made of (a method, a mode, a key, a state), to put in another's place.
fn word() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("grid"),
        Just("random"),
        Just("tpe"),
        Just("pbt"),
        Just("min"),
        Just("max"),
        Just("train.lr"),
        Just("train.momentum"),
        Just("val_loss"),
        Just("completed"),
        Just("paused"),
        Just("from"),
        Just("values"),
        Just("../../../outside"),
    ]
}

/// A JSON node changed: its value replaced by `new`, removed, or its key renamed.
fn changed(json: &Value, (pick, new, how, to): (usize, Value, u8, &str)) -> Value {
    match how % 3 {
        0 => replaced(json, pick, new, false),
        1 => replaced(json, pick, new, true),
        _ => renamed(json, pick, to),
    }
}

/// A file's text changed one of three ways: arbitrary bytes in place of it all, a stretch of
/// it replaced by arbitrary bytes, or one of its fields' values replaced (or removed).
fn damaged(template: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let json: Value = serde_json::from_str(template).expect("a JSON template");
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..400),
        (
            any::<usize>(),
            0..64usize,
            proptest::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(move |(at, len, bytes)| {
                let mut text = template.as_bytes().to_vec();
                let at = at % (text.len() + 1);
                let end = (at + len).min(text.len());
                text.splice(at..end, bytes);
                text
            }),
        (any::<usize>(), any_value(), any::<u8>(), word())
            .prop_map(move |change| serde_json::to_vec_pretty(&changed(&json, change)).unwrap()),
    ]
}

/// A journal's lines changed as [`damaged`] changes a file, one line at a time (or the whole
/// file's bytes).
fn damaged_journal(journal: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let count = journal.lines().count();
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..400),
        1 => (0..count).prop_map(move |cut| {
            let kept: Vec<&str> = journal.lines().take(cut).collect();
            kept.join("\n").into_bytes()
        }),
        4 => (0..count, (any::<usize>(), any_value(), any::<u8>(), word())).prop_map(
            move |(line, change)| {
                let mut out = String::new();
                for (i, text) in journal.lines().enumerate() {
                    if i == line {
                        let json: Value = serde_json::from_str(text).unwrap();
                        out += &serde_json::to_string(&changed(&json, change.clone())).unwrap();
                    } else {
                        out += text;
                    }
                    out.push('\n');
                }
                out.into_bytes()
            }
        ),
    ]
}

/// A scratch directory for one property, written afresh for each input.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A run directory in `dir` whose latest checkpoint, `epoch-4`, holds `meta` and `manifest`
/// (the manifest listing `meta`'s size where `sized`, as a checkpoint written so would), and
/// the other files the manifest template lists, at their sizes.
fn checkpoint(dir: &Path, meta: &[u8], manifest: &[u8], sized: bool) -> PathBuf {
    let run = dir.join("run");
    let at = run.join("checkpoints/epoch-4");
    let _ = std::fs::remove_dir_all(&run);
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(run.join("checkpoints/latest"), "epoch-4").unwrap();
    let listed: Value = serde_json::from_str(MANIFEST).unwrap();
    for (name, size) in listed["files"].as_object().unwrap() {
        if name != "meta.json" {
            std::fs::write(at.join(name), vec![0u8; size.as_u64().unwrap() as usize]).unwrap();
        }
    }
    std::fs::write(at.join("meta.json"), meta).unwrap();
    let manifest = match sized {
        true => {
            let mut listed = listed;
            listed["files"]["meta.json"] = Value::from(meta.len());
            serde_json::to_vec(&listed).unwrap()
        }
        false => manifest.to_vec(),
    };
    std::fs::write(at.join("manifest.json"), manifest).unwrap();
    run
}

proptest! {
    #[test]
    fn a_plan_is_read_and_drawn_from_or_refused_naming_it(
        bytes in prop_oneof![damaged(PLAN), damaged(PLAN_TPE)]
    ) {
        let dir = scratch();
        std::fs::write(dir.path().join("plan.json"), &bytes).unwrap();
        if let Some(plan) = read_or_refused(super::plan::read_plan(dir.path()), "plan.json")? {
            // As a resume goes on from it: its search, and its trials drawn.
            if let Some(space) = plan.search.and_then(|s| s.space()) {
                let _ = space.trials();
            }
        }
    }

    #[test]
    fn a_journal_is_ranked_or_refused_naming_it(
        bytes in prop_oneof![damaged_journal(JOURNAL), damaged_journal(JOURNAL_TPE)]
    ) {
        let dir = scratch();
        let path = dir.path().join("journal.log");
        std::fs::write(&path, &bytes).unwrap();
        let spec = path.display().to_string();
        if let Some(studies) = read_or_refused(super::report_study(&spec), "journal.log")? {
            for mut study in studies {
                super::rank(&mut study.rows, study.mode);
                let _ = super::schedule_text(&study.rows);
            }
        }
    }

    #[test]
    fn a_checkpoint_s_state_is_read_or_refused_naming_it(bytes in damaged(META)) {
        let dir = scratch();
        let run = checkpoint(dir.path(), &bytes, MANIFEST.as_bytes(), true);
        if let Some(opened) = read_or_refused(Checkpoint::latest(&run), "meta.json")? {
            let _ = opened.describe();
        }
    }

    #[test]
    fn a_checkpoint_s_manifest_is_read_or_refused_naming_what_it_lists(
        bytes in damaged(MANIFEST)
    ) {
        let dir = scratch();
        let run = checkpoint(dir.path(), META.as_bytes(), &bytes, false);
        // A list naming a file outside its checkpoint (at its size, as a hostile one would:
        // `schedule.bpk`'s, renamed) is refused, whatever else it lists.
        let outside = dir.path().join("outside");
        std::fs::write(&outside, [b'x'; 256]).unwrap();
        let listed: Option<Value> = serde_json::from_slice(&bytes).ok();
        let names: Vec<String> = (listed.as_ref())
            .and_then(|m| m["files"].as_object())
            .map(|files| files.keys().cloned().collect())
            .unwrap_or_default();
        let reaching = names.iter().any(|n| n.contains('/') || n == ".." || n.is_empty());
        let opened = Checkpoint::latest(&run);
        prop_assert!(!(reaching && opened.is_ok()), "{:?} opened", names);
        if let Err(e) = opened {
            let text = e.to_string();
            prop_assert_eq!(e.exit_code(), 2, "{}", text);
            prop_assert!(text.contains("checkpoints/epoch-4"), "{}", text);
            prop_assert!(!text.contains('\n'), "{}", text);
        }
    }

    #[test]
    fn a_summary_is_read_or_refused_naming_it(bytes in damaged(SUMMARY)) {
        let dir = scratch();
        std::fs::write(dir.path().join("summary.json"), &bytes).unwrap();
        let read = RunSummary::read(dir.path()).map_err(Error::from);
        if let Some(Some(summary)) = read_or_refused(read, "summary.json")? {
            let _ = summary.monitored("val_loss");
        }
    }
}
