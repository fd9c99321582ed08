use super::*;
use crate::memory::{Breakdown, MemorySource, MemoryUsage, PeakPhase};
use crate::record::StepSample;

pub fn snap(event: Event, epoch: usize, in_use: u64, action: Option<&str>) -> Snapshot {
    let memory = MemoryUsage {
        bytes_in_use: in_use,
        bytes_reserved: in_use * 2,
        peak_bytes_in_use: in_use * 3 / 2,
        bytes_padding: 0,
        source: MemorySource::Host,
    };
    Snapshot {
        micro_batch: 8,
        action: action.map(|a| serde_json::from_value(serde_json::json!(a)).unwrap()),
        ..Snapshot::new(event, epoch, memory)
    }
}

#[test]
fn labels_close_together_go_on_rows_below_each_other() {
    let s = [
        snap(Event::MemoryAction, 0, 1, Some("fit")),
        snap(Event::MemoryAction, 0, 1, Some("shrink")),
        snap(Event::MemoryAction, 1, 1, Some("cleanup")),
        snap(Event::MemoryAction, 3, 1, Some("cleanup")),
    ];
    let placed: Vec<Placed> = [0.25, 0.3, 0.5, 3.25].into_iter().zip(&s).collect();
    assert_eq!(memory::label_rows(&placed, 4.0), [0, 1, 2, 0]);
    // Wide apart, all on the top row.
    assert_eq!(memory::label_rows(&placed, 0.4), [0, 0, 0, 0]);
}

/// A two-epoch run with a step trace, a breakdown, losses, lr and a monitored accuracy.
fn run() -> Vec<Snapshot> {
    let mut epochs: Vec<Snapshot> = (1..=2)
        .map(|e| {
            let mut s = snap(Event::Epoch, e, 20 << 20, None);
            s.step = 4 * e;
            s.loss = Some(1.0 / e as f64);
            s.val_loss = Some(1.2 / e as f64);
            s.lr = Some(1e-3);
            s.metrics
                .insert("val_accuracy".into(), Some(0.5 + 0.1 * e as f64));
            s.steps = Some(
                (4 * e - 3..=4 * e)
                    .map(|step| StepSample {
                        step,
                        peak: 29 << 20,
                        in_use: 20 << 20,
                    })
                    .collect(),
            );
            s.breakdown = Some(Breakdown {
                phase: PeakPhase::Backward,
                weights: 5 << 20,
                gradients: 5 << 20,
                optimizer: 10 << 20,
                data: 0,
                activations: 9 << 20,
                other: 1 << 20,
                host: 0,
                estimated: vec![],
            });
            s
        })
        .collect();
    let mut shrink = snap(Event::MemoryAction, 2, 20 << 20, Some("shrink"));
    shrink.step = 5;
    shrink.micro_batch = 4;
    let second = epochs.pop().unwrap();
    vec![
        snap(Event::RunStart, 0, 10 << 20, None),
        epochs.pop().unwrap(),
        shrink,
        second,
        snap(Event::MemoryAction, 2, 20 << 20, Some("cleanup")),
        snap(Event::RunEnd, 2, 5 << 20, None),
    ]
}

#[test]
fn writes_both_panels_with_their_legends_limit_and_actions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.svg");
    let of = PictureOf {
        title: "t",
        limit: Some(64 << 20),
        monitor: Some("val_accuracy"),
    };
    render_memory_svg(&run(), of, &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg"));
    for text in [
        "in use",
        "reserved",
        "peak in use per step",
        "peak: activations",
        "peak: optimizer",
        "limit 64.0 MiB",
        "shrink to 4",
        "cleanup",
        "t: memory per step and epoch (host)",
        "val_accuracy (monitored)",
        "\nval_loss\n",
        "\nlr\n",
    ] {
        assert!(svg.contains(text), "{text} missing");
    }
    // Three panels: the memory one and two under it.
    assert!(svg.contains(&format!("height=\"{}\"", MEMORY_HEIGHT + 3 * PANEL_HEIGHT)));
}

#[test]
fn a_run_with_no_epochs_draws_the_memory_panel_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.svg");
    let s = [
        snap(Event::RunStart, 0, 10 << 20, None),
        snap(Event::MemoryAction, 1, 10 << 20, Some("limit")),
    ];
    render_memory_svg(&s, PictureOf::default(), &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.contains(&format!("height=\"{MEMORY_HEIGHT}\"")));
    assert!(svg.contains("peak in use") && !svg.contains("peak in use per step"));
}
