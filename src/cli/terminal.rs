//! What the CLI shows while it trains: progress and one line per epoch on stderr ([`Terminal`]),
//! and one line per run of a sweep ([`SweepTerminal`]).

use std::io::{IsTerminal, Write};

use crate::memory::{format_bytes, format_signed_bytes};
use crate::memory::{EpochProgress, Observer, Warning};
use crate::report::{format_metric, Event, Snapshot};

/// One line per run of a sweep (plus everything `Terminal` shows, when verbose).
pub(super) struct SweepTerminal {
    pub(super) run: usize,
    pub(super) runs: usize,
    pub(super) inner: Terminal,
}

impl Observer for SweepTerminal {
    fn message(&mut self, text: &str) {
        if !self.inner.quiet {
            eprintln!("run {}/{}: {text}", self.run, self.runs);
        }
    }

    fn warning(&mut self, warning: &Warning) {
        eprintln!("run {}/{}: warning: {warning}", self.run, self.runs);
    }

    fn step(&mut self, progress: &EpochProgress) {
        self.inner.step(progress);
    }

    fn snapshot(&mut self, s: &Snapshot) {
        self.inner.snapshot(s);
        if let (Event::RunEnd, Some(r)) = (s.event, s.retained) {
            eprintln!(
                "run {}/{}: peak {} in use; after release {} in use ({} vs before), RSS {} -> {} -> {}",
                self.run,
                self.runs,
                format_bytes(s.memory.peak_bytes_in_use),
                format_bytes(s.memory.bytes_in_use),
                format_signed_bytes(r.retained_bytes_in_use),
                format_bytes(r.rss_before_bytes),
                format_bytes(r.rss_peak_bytes),
                format_bytes(r.rss_after_bytes),
            );
        }
    }
}

/// A metric's key as the epoch line shows it (`val_accuracy` as `val_acc`, as it always was).
fn short(key: &str) -> &str {
    match key {
        "val_accuracy" => "val_acc",
        "train_accuracy" => "train_acc",
        key => key,
    }
}

pub(super) fn fmt_opt(value: Option<f64>, digits: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// Progress on stderr: an updating line within each epoch on a terminal, one line per epoch.
pub(super) struct Terminal {
    quiet: bool,
    tty: bool,
}

impl Terminal {
    pub(super) fn new(quiet: bool) -> Self {
        Self {
            quiet,
            tty: std::io::stderr().is_terminal(),
        }
    }
}

impl Observer for Terminal {
    fn message(&mut self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    fn warning(&mut self, warning: &Warning) {
        if !self.quiet {
            eprintln!("warning: {warning}");
        }
    }

    fn step(&mut self, p: &EpochProgress) {
        if !self.quiet && self.tty {
            let lr = p.lr.map_or(String::new(), |lr| format!("  lr {lr:.2e}"));
            eprint!(
                "\repoch {}/{}  step {}/{}  loss {:.4}{lr}   ",
                p.epoch, p.epochs, p.step, p.steps, p.loss
            );
            let _ = std::io::stderr().flush();
        }
    }

    fn snapshot(&mut self, s: &Snapshot) {
        if self.quiet {
            return;
        }
        let memory = format!(
            "in use {}  peak {}  reserved {} ({})",
            format_bytes(s.memory.bytes_in_use),
            format_bytes(s.memory.peak_bytes_in_use),
            format_bytes(s.memory.bytes_reserved),
            s.memory.source
        );
        let clear = if self.tty { "\r\x1b[2K" } else { "" };
        match s.event {
            Event::RunStart => eprintln!("start: {memory}"),
            Event::Epoch => eprintln!(
                "{clear}epoch {}  loss {}  val_loss {}{}  lr {}{}  {} samples/s  {memory}",
                s.epoch,
                fmt_opt(s.loss, 4),
                fmt_opt(s.val_loss, 4),
                s.metrics
                    .iter()
                    .filter_map(|(k, v)| Some(format!(
                        "  {} {}",
                        short(k),
                        format_metric(k, (*v)?)
                    )))
                    .collect::<String>(),
                s.lr.map_or("-".into(), |lr| format!("{lr:.2e}")),
                s.clipped_steps
                    .map_or(String::new(), |n| format!("  clipped {n}")),
                fmt_opt(s.samples_per_sec, 0),
            ),
            Event::RunEnd => {
                let retained = s.retained.map_or(String::new(), |r| {
                    format!(
                        "  retained {} in use, {} reserved",
                        format_signed_bytes(r.retained_bytes_in_use),
                        format_signed_bytes(r.retained_bytes_reserved)
                    )
                });
                eprintln!("{clear}end: {memory}{retained}")
            }
            Event::Resume => eprintln!(
                "{clear}resume: {}; {memory}",
                s.detail.as_deref().unwrap_or("")
            ),
            Event::MemoryAction => eprintln!(
                "{clear}memory {}: {}",
                s.action.as_deref().unwrap_or("action"),
                s.detail.as_deref().unwrap_or("")
            ),
        }
    }
}
