//! A run asked to stop (`Trainer::stop_when`, what a search's signal handler sets): it writes
//! a checkpoint where it is, returns `Error::Interrupted` without a summary, and its resume
//! ends where the uninterrupted run does.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tidemark::config::{ConfigBuilder, RunConfig};
use tidemark::record::Observer;
use tidemark::{Error, Trainer};

/// Sets `flag` when step `at.1` of epoch `at.0` is done.
struct StopAt {
    at: (usize, usize),
    flag: Arc<AtomicBool>,
}

impl Observer for StopAt {
    fn step_done(&mut self, epoch: usize, step: usize) {
        if (epoch, step) == self.at {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}

/// 960 training samples in steps of 32: 30 steps an epoch, 3 epochs.
fn config(dir: &Path, name: &str) -> RunConfig {
    ConfigBuilder::new(name)
        .output_dir(dir)
        .synthetic(1200, 16, 4)
        .hidden(&[32])
        .epochs(3)
        .batch_size(32)
        .build()
        .unwrap()
}

fn latest(run_dir: &Path) -> String {
    std::fs::read_to_string(run_dir.join("checkpoints/latest")).unwrap()
}

#[test]
fn a_run_asked_to_stop_checkpoints_where_it_is_and_its_resume_ends_as_if_never_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let whole = Trainer::new(config(dir.path(), "whole")).run().unwrap();
    // Mid-epoch (the 5th step of epoch 2, step 35), at epoch 1's last step, whose epoch end
    // writes its own checkpoint before the run stops, and before the first step (a flag set
    // already): checkpoint 0, from which the run starts again.
    let cases = [
        ("mid", (2, 5), "step-35"),
        ("end", (1, 30), "epoch-1"),
        ("first", (0, 0), "epoch-0"),
    ];
    for (name, at, checkpoint) in cases {
        let flag = Arc::new(AtomicBool::new(at == (0, 0)));
        let observer = StopAt {
            at,
            flag: Arc::clone(&flag),
        };
        let stopped = Trainer::new(config(dir.path(), name))
            .observer(observer)
            .stop_when(flag)
            .run();
        assert!(
            matches!(stopped, Err(Error::Interrupted)),
            "{name}: {stopped:?}"
        );
        let run_dir = dir.path().join(name);
        assert_eq!(latest(&run_dir), checkpoint, "{name}");
        assert!(!run_dir.join("summary.json").exists(), "{name}: a summary");
        let resumed = Trainer::new(config(dir.path(), name))
            .resume(&run_dir)
            .run()
            .unwrap();
        assert_eq!(resumed.steps, whole.steps, "{name}");
        let figures = |s: &tidemark::record::RunSummary| {
            [s.final_loss, s.final_val_loss, s.metric("val_accuracy")].map(Option::unwrap)
        };
        for (a, b) in figures(&resumed).into_iter().zip(figures(&whole)) {
            assert!((a - b).abs() < 1e-6, "{name}: {a} against {b}");
        }
    }
}

/// `tidemark train` stopped by SIGINT (Ctrl-C) or SIGTERM: it ends at the step under way with a
/// checkpoint there, exit 130 and one line that says how to go on, naming the run's directory
/// where the command did (`--resume`); the resume finishes the run. Before, the signal ended
/// the process where it was, its bar left half drawn, and nothing said that a resume would go
/// on.
#[test]
fn train_stopped_by_a_signal_checkpoints_says_how_to_go_on_and_resumes() {
    let env = super::Env::small();
    let stopped = |args: &[&str], signal: &str| {
        let mut child = env.spawn(args);
        let snapshots = env.path("runs/small/snapshots.jsonl");
        let epochs = || {
            let text = std::fs::read_to_string(&snapshots).unwrap_or_default();
            text.matches("\"event\":\"epoch\"").count()
        };
        let before = epochs();
        super::wait_for(&mut child, "an epoch", || (epochs() > before).then_some(()));
        let pid = child.id().to_string();
        std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        super::Run(child.wait_with_output().unwrap())
    };
    // The run's lines first, its error last.
    let ends_with = |run: &super::Run, needle: &str| {
        assert_eq!(run.code(), 130, "{}", run.stderr());
        let stderr = run.stderr();
        let last = stderr.trim_end().lines().last().unwrap_or_default();
        assert!(
            last.starts_with("error: ") && last.contains(needle),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    };
    let long = ["--set", "train.epochs=100000", "--set", "data.samples=6000"];
    let first = stopped(
        &[&["train", "--config", "small.toml"][..], &long].concat(),
        "-INT",
    );
    ends_with(
        &first,
        "stopped by a signal: the run wrote a checkpoint where it stopped; continue with \
         tidemark train --resume on its run directory (named above)",
    );
    assert!(!env.path("runs/small/summary.json").exists());
    let latest = std::fs::read_to_string(env.path("runs/small/checkpoints/latest")).unwrap();
    assert!(env
        .path("runs/small/checkpoints")
        .join(latest.trim())
        .join("manifest.json")
        .is_file());
    let resume = [
        "train",
        "--resume",
        "runs/small",
        "--set",
        "train.epochs=100000",
    ];
    let second = stopped(&resume, "-TERM");
    ends_with(&second, "continue with tidemark train --resume runs/small");
    let finish = format!("train.epochs={}", env.epochs_done("runs/small") + 1);
    let last = env.run(&[
        "train",
        "--resume",
        "runs/small",
        "--set",
        &finish,
        "--quiet",
    ]);
    assert_eq!(last.code(), 0, "{}", last.stderr());
    assert!(env.path("runs/small/summary.json").is_file());
}
