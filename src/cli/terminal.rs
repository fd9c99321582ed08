//! What the CLI shows while it trains: progress and one line per epoch on stderr ([`Terminal`]),
//! and one line per run of a sweep ([`SweepTerminal`]).

use std::io::{IsTerminal, Write};

use std::time::Duration;

use indicatif::{HumanDuration, ProgressBar, ProgressStyle};

use super::draw::{fitted_width, stderr_target};

use crate::memory::Action;
use crate::memory::{format_bytes, format_signed_bytes};
use crate::record::{EpochProgress, Observer, SearchStatus, Warning};
use crate::record::{Event, Snapshot};
use crate::report::format_metric;

/// One line per run of a sweep (plus everything `Terminal` shows, when verbose).
pub(super) struct SweepTerminal {
    pub(super) run: usize,
    pub(super) runs: usize,
    pub(super) inner: Terminal,
}

impl Observer for SweepTerminal {
    fn message(&mut self, text: &str) {
        // Run 0 is the search itself (its preflight), told even when quiet.
        if self.run == 0 {
            self.inner.println(&format!("sweep: {text}"));
        } else if !self.inner.quiet {
            let line = format!("run {}/{}: {text}", self.run, self.runs);
            self.inner.println(&line);
        }
    }

    fn warning(&mut self, warning: &Warning) {
        let line = format!("run {}/{}: warning: {warning}", self.run, self.runs);
        self.inner.println(&line);
    }

    fn step(&mut self, progress: &EpochProgress) {
        self.inner.step(progress);
    }

    fn search_status(&mut self, status: &SearchStatus) {
        self.inner.search_status(status);
    }

    fn snapshot(&mut self, s: &Snapshot) {
        self.inner.snapshot(s);
        if let (Event::RunEnd, Some(r)) = (s.event, s.retained) {
            let line = format!(
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
            self.inner.println(&line);
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

/// Progress on stderr. On a terminal, an `indicatif` bar for the steps of the epoch, with the
/// epoch, samples/s, the epoch's ETA, the loss, the lr and the memory in use (against the
/// limit, with one); every other line prints above it. Elsewhere (a log, `2>file`), plain lines
/// only: no bar, no control characters.
pub(super) struct Terminal {
    quiet: bool,
    tty: bool,
    /// The bar of the epoch it counts, and the room its message has (the terminal's width,
    /// read as the bar starts, less the bar itself).
    bar: Option<(ProgressBar, usize, Option<usize>)>,
    /// A search's live view of its trials in parallel, on a terminal.
    table: Option<ProgressBar>,
}

impl Terminal {
    pub(super) fn new(quiet: bool) -> Self {
        Self {
            quiet,
            tty: std::io::stderr().is_terminal(),
            bar: None,
            table: None,
        }
    }

    /// Prints `text` on its own line: above the bar while one is shown.
    pub(super) fn println(&self, text: &str) {
        let text = &escaped(text);
        match (&self.bar, &self.table) {
            (Some((bar, ..)), _) => bar.println(text),
            (None, Some(table)) => table.println(text),
            // A closed stderr (the search that reads a trial's is gone) is no reason to panic.
            // On a terminal the line is cleared first: a `^C` the terminal echoed while no
            // bar was drawn sits at its start.
            (None, None) => {
                let clear = if self.tty { "\r\x1b[K" } else { "" };
                let _ = writeln!(std::io::stderr(), "{clear}{text}");
            }
        }
    }

    /// Redraws a search's live view (on a terminal only: piped, the search's own lines say
    /// the same); it goes once nothing runs.
    pub(super) fn search_status(&mut self, status: &SearchStatus) {
        if !self.tty {
            return;
        }
        if status.running.is_empty() && status.waiting == 0 {
            if let Some(table) = self.table.take() {
                table.finish_and_clear();
            }
            return;
        }
        let table = self.table.get_or_insert_with(|| {
            let table = ProgressBar::with_draw_target(None, stderr_target());
            let style = ProgressStyle::with_template("{msg}").expect("a valid template");
            table.set_style(style);
            table
        });
        let width = fitted_width();
        let lines: Vec<String> = (status.lines().lines()).map(|l| fitted(l, width)).collect();
        table.set_message(lines.join("\n"));
    }

    /// Removes the bar (at an epoch's end, and before the run's last lines).
    fn clear_bar(&mut self) {
        if let Some((bar, ..)) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// The bar for `p`'s epoch, started if it is a new one, with its message's room.
    fn bar_for(&mut self, p: &EpochProgress) -> (&ProgressBar, Option<usize>) {
        if self
            .bar
            .as_ref()
            .is_some_and(|(_, epoch, _)| *epoch != p.epoch)
        {
            self.clear_bar();
        }
        let (bar, _, room) = self.bar.get_or_insert_with(|| {
            // The bar on one row of the terminal: its message cut to what the rest leaves.
            let fixed = format!(
                "epoch {}/{} [] {}/{}  ",
                p.epoch, p.epochs, p.steps, p.steps
            );
            let room = fitted_width().map(|w| w.saturating_sub(fixed.len() + 24));
            let bar = ProgressBar::with_draw_target(Some(p.steps as u64), stderr_target());
            let style =
                ProgressStyle::with_template("epoch {prefix} [{bar:24}] {pos}/{len}  {msg}")
                    .expect("a valid template")
                    .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(format!("{}/{}", p.epoch, p.epochs));
            (bar, p.epoch, room)
        });
        (bar, *room)
    }
}

/// `text` cut to `width` columns, where there is one.
fn fitted(text: &str, width: Option<usize>) -> String {
    match width {
        Some(width) => console::truncate_str(text, width, "…").into_owned(),
        None => text.to_string(),
    }
}

/// The bar's message:
/// `loss 0.5421  lr 3.00e-3  2406 samples/s  mem 8.4 MiB / 64.0 MiB  eta 12 seconds (run 2 minutes)`.
fn progress_message(p: &EpochProgress) -> String {
    let lr = p.lr.map_or(String::new(), |lr| format!("  lr {lr:.2e}"));
    let memory = match (p.bytes_in_use, p.limit_bytes) {
        (Some(used), Some(limit)) => {
            format!("  mem {} / {}", format_bytes(used), format_bytes(limit))
        }
        (Some(used), None) => format!("  mem {}", format_bytes(used)),
        _ => String::new(),
    };
    let eta = |s: f64| HumanDuration(Duration::from_secs_f64(s.clamp(0.0, 1e9)));
    format!(
        "loss {:.4}{lr}  {:.0} samples/s{memory}  eta {} (run {})",
        p.loss,
        p.samples_per_sec,
        eta(p.epoch_eta_s),
        eta(p.run_eta_s)
    )
}

/// A bar or a live view still drawn when the run or the search ends (an error, a stop) is
/// taken off the screen, not left half drawn above the last lines.
impl Drop for Terminal {
    fn drop(&mut self) {
        self.clear_bar();
        if let Some(table) = self.table.take() {
            table.finish_and_clear();
        }
    }
}

impl Observer for Terminal {
    fn message(&mut self, text: &str) {
        if !self.quiet {
            self.println(text);
        }
    }

    fn warning(&mut self, warning: &Warning) {
        if !self.quiet {
            self.println(&format!("warning: {warning}"));
        }
    }

    fn step(&mut self, p: &EpochProgress) {
        if self.quiet || !self.tty {
            return;
        }
        let message = progress_message(p);
        let (bar, room) = self.bar_for(p);
        bar.set_position(p.step as u64);
        bar.set_message(fitted(&message, room));
    }

    fn snapshot(&mut self, s: &Snapshot) {
        // `fit`'s probes are told by its one line, which lists them.
        if self.quiet || s.action == Some(Action::Probe) {
            return;
        }
        let memory = format!(
            "in use {}  peak {}  reserved {} ({})",
            format_bytes(s.memory.bytes_in_use),
            format_bytes(s.memory.peak_bytes_in_use),
            format_bytes(s.memory.bytes_reserved),
            s.memory.source
        );
        if matches!(s.event, Event::Epoch | Event::RunEnd) {
            self.clear_bar();
        }
        let line = match s.event {
            Event::RunStart => format!("start: {memory}"),
            Event::Epoch => format!(
                "epoch {}  loss {}  val_loss {}{}  lr {}{}  {} samples/s  {memory}",
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
                format!("end: {memory}{retained}")
            }
            Event::Resume => format!("resume: {}; {memory}", s.detail.as_deref().unwrap_or("")),
            Event::MemoryAction => format!(
                "memory {}: {}",
                s.action.map_or("action", Action::name),
                s.detail.as_deref().unwrap_or("")
            ),
        };
        self.println(&line);
    }
}

/// `text` with its control characters shown escaped (`\u{1b}`), newlines and tabs kept: a name
/// or a path from a config or a file is the user's to choose, and the terminal is theirs too.
pub(crate) fn escaped(text: &str) -> String {
    without_passwords(text)
        .chars()
        .flat_map(|c| match c.is_control() && c != '\n' && c != '\t' {
            true => c.escape_unicode().collect::<Vec<char>>(),
            false => vec![c],
        })
        .collect()
}

/// `text` with the password of each URL in it (`redis://:PASSWORD@HOST`,
/// `redis://USER:PASSWORD@HOST`) shown as `***`: a storage's address is named in progress and
/// errors, which land in a job array's logs.
fn without_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        // The authority: up to the path, a space or a quote.
        let end = after
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(after.len());
        let authority = &after[..end];
        // A placeholder (`redis://:PASSWORD@HOST:PORT`, as a hint writes it) is kept.
        let secret = (authority.rfind('@'))
            .and_then(|a| Some((authority[..a].find(':')?, a)))
            .filter(|&(colon, a)| &authority[colon + 1..a] != "PASSWORD");
        match secret {
            Some((colon, a)) => {
                out.push_str(&authority[..=colon]);
                out.push_str("***");
                out.push_str(&authority[a..]);
            }
            None => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod escape_tests {
    #[test]
    fn a_url_s_password_is_never_shown() {
        let shown = super::escaped(
            "--storage redis://:s3cret@127.0.0.1:6379: NOAUTH; rejoin with redis://me:pw@h/0 \
             or redis://h:1 (a user, a@b); give redis://:PASSWORD@HOST",
        );
        assert_eq!(
            shown,
            "--storage redis://:***@127.0.0.1:6379: NOAUTH; rejoin with redis://me:***@h/0 or \
             redis://h:1 (a user, a@b); give redis://:PASSWORD@HOST"
        );
    }

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(super::escaped("a\u{1b}[2Jb\tc\n"), "a\\u{1b}[2Jb\tc\n");
        assert_eq!(
            super::escaped("ok: r\u{e9}sum\u{e9}"),
            "ok: r\u{e9}sum\u{e9}"
        );
    }
}
