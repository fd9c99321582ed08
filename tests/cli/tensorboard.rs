//! `[run] tensorboard = true` (issue 42): the run's event file read back by a reader of its
//! own, independent of tidemark's writer: TFRecord's framing with a bitwise CRC-32C (not the
//! `crc32c` crate), and the `Event` protocol buffer decoded field by field (not `prost`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Env, SMALL};

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = match crc & 1 {
                1 => (crc >> 1) ^ 0x82F6_3B78,
                _ => crc >> 1,
            };
        }
    }
    !crc
}

/// TFRecord's mask of a CRC.
fn masked(data: &[u8]) -> u32 {
    let crc = crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// The records of an event file, each checked against both of its CRCs.
fn records(bytes: &[u8]) -> Vec<&[u8]> {
    let mut at = 0;
    let mut out = Vec::new();
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
    while at < bytes.len() {
        let length = &bytes[at..at + 8];
        assert_eq!(u32_at(at + 8), masked(length), "the length's CRC at {at}");
        let n = u64::from_le_bytes(length.try_into().unwrap()) as usize;
        let data = &bytes[at + 12..at + 12 + n];
        assert_eq!(u32_at(at + 12 + n), masked(data), "the data's CRC at {at}");
        out.push(data);
        at += 16 + n;
    }
    out
}

/// One protocol buffer field: its number, and its value as a varint, fixed bytes or a
/// length-delimited slice.
enum Field<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Fixed32([u8; 4]),
    Bytes(&'a [u8]),
}

fn varint(data: &[u8], at: &mut usize) -> u64 {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = data[*at];
        *at += 1;
        value |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            break;
        }
    }
    value
}

/// A message's fields, in order.
fn fields(data: &[u8]) -> Vec<(u64, Field<'_>)> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < data.len() {
        let key = varint(data, &mut at);
        let field = match key & 7 {
            0 => Field::Varint(varint(data, &mut at)),
            1 => Field::Fixed64(data[at..at + 8].try_into().unwrap()),
            5 => Field::Fixed32(data[at..at + 4].try_into().unwrap()),
            2 => {
                let n = varint(data, &mut at) as usize;
                Field::Bytes(&data[at..at + n])
            }
            other => panic!("wire type {other}"),
        };
        at += match &field {
            Field::Fixed64(_) => 8,
            Field::Fixed32(_) => 4,
            Field::Bytes(b) => b.len(),
            Field::Varint(_) => 0,
        };
        out.push((key >> 3, field));
    }
    out
}

/// An event: its step, file version, and its summary's values by tag.
#[derive(Debug, Default)]
struct Event {
    wall_time: f64,
    step: i64,
    version: Option<String>,
    values: BTreeMap<String, f32>,
    /// A `SessionLog`'s status (1: START).
    session: Option<u64>,
}

fn event(data: &[u8]) -> Event {
    let mut e = Event::default();
    for (number, field) in fields(data) {
        match (number, field) {
            (1, Field::Fixed64(b)) => e.wall_time = f64::from_le_bytes(b),
            (2, Field::Varint(v)) => e.step = v as i64,
            (3, Field::Bytes(b)) => e.version = Some(String::from_utf8(b.to_vec()).unwrap()),
            (5, Field::Bytes(summary)) => {
                for (number, value) in fields(summary) {
                    let (1, Field::Bytes(value)) = (number, value) else {
                        panic!("a summary holds values only");
                    };
                    let (tag, scalar) = tag_and_scalar(value);
                    e.values.insert(tag, scalar);
                }
            }
            (6, Field::Bytes(log)) => {
                let status = fields(log).into_iter().find_map(|(n, f)| match (n, f) {
                    (1, Field::Varint(v)) => Some(v),
                    _ => None,
                });
                e.session = Some(status.unwrap_or(0));
            }
            (n, _) => panic!("unexpected field {n}"),
        }
    }
    e
}

/// A `Summary.Value`'s tag and `simple_value`.
fn tag_and_scalar(data: &[u8]) -> (String, f32) {
    let (mut tag, mut scalar) = (None, None);
    for (number, field) in fields(data) {
        match (number, field) {
            (1, Field::Bytes(b)) => tag = Some(String::from_utf8(b.to_vec()).unwrap()),
            (2, Field::Fixed32(b)) => scalar = Some(f32::from_le_bytes(b)),
            (n, _) => panic!("unexpected field {n} in a value"),
        }
    }
    (tag.unwrap(), scalar.expect("a simple_value"))
}

/// The event files in `dir`, in name order (TensorBoard's).
fn event_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("events.out.tfevents.")
        })
        .collect();
    files.sort();
    files
}

/// The events of the file `path`.
fn read(path: &Path) -> Vec<Event> {
    let bytes = std::fs::read(path).unwrap();
    records(&bytes).into_iter().map(event).collect()
}

/// The events of the one event file in `dir`.
fn events(dir: &Path) -> Vec<Event> {
    let files = event_files(dir);
    assert_eq!(files.len(), 1, "{files:?}");
    read(&files[0])
}

const MIB: f64 = 1024.0 * 1024.0;

#[test]
fn a_run_s_event_file_holds_every_epoch_s_and_logged_step_s_scalars() {
    let env = Env::small();
    let run = env.train_small(
        "tb",
        &[
            "--set",
            "run.tensorboard=true",
            "--set",
            "run.log_every_steps=5",
        ],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let events = events(&env.path("runs/tb"));
    assert_eq!(events[0].version.as_deref(), Some("brain.Event:2"));
    assert!(events[0].wall_time > 1.7e9, "{:?}", events[0]);
    // Every epoch's snapshot, at its global step: the loss, the val metrics, the rate and the
    // memory figures, as f32.
    let epochs: Vec<Value> = (env.snapshots("runs/tb").into_iter())
        .filter(|s| s["event"] == "epoch")
        .collect();
    assert_eq!(epochs.len(), 3);
    for s in &epochs {
        let step = s["step"].as_i64().unwrap();
        let at = events
            .iter()
            .find(|e| e.step == step && e.values.contains_key("loss"))
            .unwrap_or_else(|| panic!("no epoch scalars at step {step}"));
        let expected = [
            ("loss", s["loss"].as_f64().unwrap()),
            ("val_loss", s["val_loss"].as_f64().unwrap()),
            ("val_accuracy", s["val_accuracy"].as_f64().unwrap()),
            ("lr", s["lr"].as_f64().unwrap()),
            (
                "memory/in_use_mib",
                s["bytes_in_use"].as_f64().unwrap() / MIB,
            ),
            (
                "memory/peak_mib",
                s["peak_bytes_in_use"].as_f64().unwrap() / MIB,
            ),
            (
                "memory/reserved_mib",
                s["bytes_reserved"].as_f64().unwrap() / MIB,
            ),
        ];
        for (tag, value) in expected {
            assert_eq!(
                at.values.get(tag),
                Some(&(value as f32)),
                "{tag} at step {step}"
            );
        }
    }
    // Every 5th step's loss, rate and memory (and any step the clock logged besides).
    let logged: Vec<i64> = (events.iter())
        .filter(|e| e.values.contains_key("step/loss"))
        .map(|e| e.step)
        .collect();
    let total = epochs.last().unwrap()["step"].as_i64().unwrap();
    for step in (5..=total).step_by(5) {
        assert!(logged.contains(&step), "step {step} not logged: {logged:?}");
    }
    for e in events.iter().filter(|e| e.values.contains_key("step/loss")) {
        assert!(
            e.values["step/loss"].is_finite() && e.values["step/lr"] > 0.0,
            "{e:?}"
        );
        assert!(e.values["step/memory_in_use_mib"] > 0.0, "{e:?}");
    }
}

#[test]
fn a_search_writes_one_event_file_per_trial() {
    let env = Env::new();
    let text = format!(
        "{SMALL}\n[sweep]\nmonitor = \"val_loss\"\n[sweep.vary]\ntrain.lr = [0.001, 0.01]\n"
    );
    env.write(
        "search.toml",
        &text.replace("[run]\n", "[run]\ntensorboard = true\n"),
    );
    let run = env.run(&["sweep", "--config", "search.toml"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    for trial in ["trial-001", "trial-002"] {
        let dir = env.path(&format!("runs/small-sweep/{trial}"));
        let events = events(&dir);
        let last = events
            .iter()
            .rev()
            .find(|e| e.values.contains_key("val_loss"))
            .unwrap();
        let summary = env.summary(&format!("runs/small-sweep/{trial}"));
        let val_loss = summary["final_val_loss"].as_f64().unwrap() as f32;
        assert_eq!(last.values["val_loss"], val_loss, "{trial}");
    }
}

#[test]
fn a_resumed_run_tells_tensorboard_to_drop_what_came_after_its_checkpoint() {
    let env = Env::small();
    // Killed at its 40th step, in epoch 2 (30 steps an epoch): resumed from epoch 1's
    // checkpoint, after step 30.
    let args = [
        "train",
        "--config",
        "small.toml",
        "--set",
        "run.tensorboard=true",
    ];
    let killed: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--set", "run.log_every_steps=5"])
        .collect();
    env.killed_at(&killed, "step:40");
    // A file name holds the second it was made: the resumed run's sorts after.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let resumed = env.run(&["train", "--resume", "runs/small"]);
    assert_eq!(resumed.code(), 0, "{}", resumed.stderr());
    let files = event_files(&env.path("runs/small"));
    assert_eq!(files.len(), 2, "{files:?}");
    let resume = (env.snapshots("runs/small").into_iter())
        .find(|s| s["event"] == "resume")
        .unwrap();
    assert_eq!(resume["step"], 30);
    let second = read(&files[1]);
    assert_eq!(second[0].version.as_deref(), Some("brain.Event:2"));
    assert_eq!((second[1].session, second[1].step), (Some(1), 31));
    // The first run's file holds epoch 1; the resumed run's, epochs 2 and 3.
    let at = |events: &[Event], tag: &str| -> Vec<i64> {
        (events.iter())
            .filter(|e| e.values.contains_key(tag))
            .map(|e| e.step)
            .collect()
    };
    assert_eq!(at(&read(&files[0]), "loss"), [30]);
    assert_eq!(at(&second, "loss"), [60, 90]);
    assert!(at(&second, "step/loss").iter().all(|&s| s > 30));
}

#[test]
fn the_keys_refuse_what_they_cannot_mean() {
    let env = Env::small();
    let zero = env.train_small("bad", &["--set", "run.log_every_steps=0"]);
    zero.fails_with(2, &["run.log_every_steps must be > 0, got 0"]);
    let yes = env.train_small("bad", &["--set", "run.tensorboard=\"yes\""]);
    yes.fails_with(2, &["run.tensorboard: invalid type", "expected a boolean"]);
}
