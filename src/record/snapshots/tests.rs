use super::*;
use crate::memory::MemorySource;

fn snapshot(epoch: usize) -> Snapshot {
    let memory = MemoryUsage {
        bytes_in_use: 10,
        bytes_reserved: 20,
        peak_bytes_in_use: 15,
        bytes_padding: 0,
        source: MemorySource::Host,
    };
    Snapshot {
        step: epoch * 10,
        loss: Some(0.5),
        samples_per_sec: Some(1000.0),
        rss_bytes: Some(30),
        micro_batch: 8,
        elapsed_s: 1.5,
        metrics: BTreeMap::from([("val_accuracy".to_string(), Some(0.9))]),
        ..Snapshot::new(Event::Epoch, epoch, memory)
    }
}

#[test]
fn lines_have_the_documented_flat_fields() {
    let value = serde_json::to_value(snapshot(1)).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "event",
        "epoch",
        "step",
        "loss",
        "val_loss",
        "val_accuracy",
        "samples_per_sec",
        "bytes_in_use",
        "bytes_reserved",
        "peak_bytes_in_use",
        "bytes_padding",
        "source",
        "elapsed_s",
    ] {
        assert!(keys.contains(&key), "missing {key} in {keys:?}");
    }
    assert_eq!(value["event"], "epoch");
    assert_eq!(value["source"], "host");
    assert!(value["val_loss"].is_null());
    assert_eq!(value["val_accuracy"], 0.9);
    let back: Snapshot = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(back.metric("val_accuracy"), Some(0.9));
    assert_eq!(back.metrics.len(), 1, "{:?}", back.metrics);
    assert!(value.get("action").is_none() && value.get("retained_bytes_in_use").is_none());
}

#[test]
fn run_end_carries_retained_figures_flat() {
    let mut s = snapshot(1);
    s.event = Event::RunEnd;
    s.retained = Some(Retained {
        retained_bytes_in_use: -5,
        retained_bytes_reserved: 7,
        rss_before_bytes: 1,
        rss_peak_bytes: 3,
        rss_after_bytes: 2,
    });
    let value = serde_json::to_value(&s).unwrap();
    assert_eq!(value["retained_bytes_in_use"], -5);
    assert_eq!(value["rss_peak_bytes"], 3);
    let back: Snapshot = serde_json::from_value(value).unwrap();
    assert_eq!(back, s);
}

#[test]
fn a_resume_leaves_out_the_epochs_it_trains_again() {
    let mut resume = snapshot(1);
    resume.event = Event::Resume;
    let all = [snapshot(1), snapshot(2), resume, snapshot(2), snapshot(3)];
    let epochs: Vec<*const Snapshot> = current_epochs(&all).into_iter().map(|s| s as _).collect();
    let expected: Vec<*const Snapshot> = [&all[0], &all[3], &all[4]].map(|s| s as _).to_vec();
    assert_eq!(epochs, expected);
}

/// A log of one snapshot, with `tail` written after it.
fn one_snapshot_then(tail: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.jsonl");
    SnapshotWriter::open(&path)
        .unwrap()
        .append(&snapshot(1))
        .unwrap();
    let mut text = std::fs::read(&path).unwrap();
    text.extend_from_slice(tail);
    std::fs::write(&path, &text).unwrap();
    (dir, path)
}

#[test]
fn a_line_cut_off_by_a_kill_is_left_out_and_then_replaced() {
    let (_dir, path) = one_snapshot_then(br#"{"event":"epoch","epo"#);
    let log = read_snapshot_log(&path).unwrap();
    assert_eq!(log.snapshots, vec![snapshot(1)]);
    assert_eq!(
        log.cut_line,
        Some(2),
        "the cut line is said, not dropped silently"
    );
    SnapshotWriter::open(&path)
        .unwrap()
        .append(&snapshot(2))
        .unwrap();
    assert_eq!(
        read_snapshots(&path).unwrap(),
        vec![snapshot(1), snapshot(2)]
    );
    assert_eq!(read_snapshot_log(&path).unwrap().cut_line, None);
}

#[test]
fn a_complete_line_that_is_not_a_snapshot_names_the_file_and_line_once() {
    let (_dir, path) = one_snapshot_then(b"oops\n");
    let e = read_snapshots(&path).unwrap_err().to_string();
    let at = format!("{}:2: not a snapshot", path.display());
    assert!(e.starts_with(&at), "{e}");
    assert_eq!(e.matches("snapshots.jsonl").count(), 1, "{e}");
}

#[test]
fn a_resume_supersedes_later_epochs_their_actions_and_the_old_end() {
    let with = |event: Event, epoch: usize| Snapshot {
        event,
        ..snapshot(epoch)
    };
    let all = [
        with(Event::RunStart, 0),
        snapshot(1),
        with(Event::MemoryAction, 1),
        snapshot(2),
        with(Event::MemoryAction, 2),
        with(Event::RunEnd, 2),
        with(Event::Resume, 1),
        snapshot(2),
    ];
    let kept: Vec<(Event, usize)> = as_it_stands(&all)
        .iter()
        .map(|s| (s.event, s.epoch))
        .collect();
    let expected = [
        (Event::RunStart, 0),
        (Event::Epoch, 1),
        (Event::MemoryAction, 1),
        (Event::Resume, 1),
        (Event::Epoch, 2),
    ];
    assert_eq!(kept, expected);
}

#[test]
fn appending_keeps_earlier_lines_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.jsonl");
    SnapshotWriter::open(&path)
        .unwrap()
        .append(&snapshot(1))
        .unwrap();
    let mut writer = SnapshotWriter::open(&path).unwrap();
    writer.append(&snapshot(2)).unwrap();
    let read = read_snapshots(&path).unwrap();
    assert_eq!(read, vec![snapshot(1), snapshot(2)]);
}
