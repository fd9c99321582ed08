//! The learning-rate finder (`tidemark lr-find`, `train.lr = "find"`), Lightning's
//! `Tuner.lr_find` ([`rule`]): a short training run on a copy of the config's run, its rate
//! swept exponentially from `min_lr` to `max_lr`, one step's loss read after each step, until
//! the smoothed loss passes 4 times its best or the steps are done; the suggestion is the
//! steepest descent.
//!
//! It changes no run: the copy trains from the same initial weights in
//! `<output_dir>/<name>-lr-find/steps/`, deleted afterwards, and the run directory
//! `<output_dir>/<name>` is not touched. It trains under the run's own `[memory]` settings, so
//! a limit holds for the finder as for the run. What it found is written beside it:
//! `lr-find.json` (every step's rate and losses, the settings, the suggestion) and
//! `lr-find.svg`.

mod by_hand;
pub mod rule;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::config::RunConfig;
use crate::error::{Error, TrainingError};
use crate::record::{EpochProgress, Observer, RunSummary, Snapshot, Warning};
use crate::report::{render_lr_find_svg, LrFindPicture};
pub use by_hand::find_by_hand;
use rule::{suggestion, Curve, Point, Sweep};

/// What the finder found.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// Its settings.
    pub sweep: Sweep,
    /// Every step's rate, loss and smoothed loss.
    pub points: Vec<Point>,
    /// The suggested point, by index, if the curve had enough points.
    pub suggestion: Option<usize>,
    /// Why it stopped.
    pub stopped: String,
    /// Where `lr-find.json` and `lr-find.svg` are.
    #[serde(skip)]
    pub dir: PathBuf,
}

impl Found {
    /// The suggested rate.
    pub fn lr(&self) -> Option<f64> {
        self.suggestion.map(|i| self.points[i].lr)
    }

    /// What it found, in a line: `lr-find: suggested lr 1.26e-3 (steepest descent at step 62
    /// of 87; stopped at step 87: ...); <dir>/lr-find.json, lr-find.svg`.
    pub fn said(&self) -> String {
        let files = format!("{}, lr-find.svg", self.dir.join("lr-find.json").display());
        match (self.lr(), self.suggestion) {
            (Some(lr), Some(i)) => format!(
                "lr-find: suggested lr {lr:.3e} (steepest descent at step {} of {}; stopped {}); \
                 {files}",
                i + 1,
                self.points.len(),
                self.stopped
            ),
            _ => format!(
                "lr-find: no suggestion: {} steps, too few past the first {} (stopped {}); \
                 {files}",
                self.points.len(),
                self.sweep.skip_begin,
                self.stopped
            ),
        }
    }
}

/// The run the finder trains: a copy of the config's run, the observer that reads its steps
/// (and tells `find`'s observer), and the flag that stops it once the curve is done. A caller
/// trains it as it trains a run (`Trainer::from(run)`).
pub struct FinderRun {
    /// The copy: `<output_dir>/<name>-lr-find/steps/`, its rate swept.
    pub config: RunConfig,
    /// Reads each step's loss and rate, and tells the observer given to [`find`].
    pub observer: Box<dyn Observer>,
    /// Set when the curve is done: the copy stops there.
    pub stop: Arc<AtomicBool>,
}

/// Runs the finder on a copy of `config`'s run with `sweep`, training it through `train` (the
/// kinds' `|run| kinds.train(Trainer::from(run))`, or `Trainer::from(run).fit(task)` for a task
/// in code), and writes what it found. `observer` sees the copy's steps.
pub fn find(
    config: &RunConfig,
    sweep: Sweep,
    observer: Box<dyn Observer>,
    train: impl FnOnce(FinderRun) -> Result<RunSummary, Error>,
) -> Result<Found, Error> {
    let sweeping = Sweeping::start(config, sweep)?;
    let run = FinderRun {
        config: sweeping.copy(config),
        observer: Box::new(sweeping.watcher(observer)),
        stop: Arc::clone(&sweeping.stop),
    };
    let trained = train(run).map(|_| ());
    sweeping.end(trained, &config.run.name)
}

/// A sweep under way: where it writes, the curve its copy's steps grow, and the flag that
/// stops the copy.
struct Sweeping {
    sweep: Sweep,
    dir: PathBuf,
    curve: Arc<Mutex<Curve>>,
    stop: Arc<AtomicBool>,
}

impl Sweeping {
    /// A sweep of `config`'s run, its copy's directory cleared of an earlier one's.
    fn start(config: &RunConfig, sweep: Sweep) -> Result<Self, Error> {
        let dir = (config.run.output_dir).join(format!("{}-lr-find", config.run.name));
        let sweeping = Sweeping {
            sweep,
            dir,
            curve: Arc::default(),
            stop: Arc::default(),
        };
        sweeping.clear()?;
        Ok(sweeping)
    }

    /// The copy of `config` it trains.
    fn copy(&self, config: &RunConfig) -> RunConfig {
        copy(config, &self.dir, &self.sweep)
    }

    /// The copy's observer, around `inner`.
    fn watcher(&self, inner: Box<dyn Observer>) -> Watcher {
        Watcher {
            inner,
            sweep: self.sweep,
            curve: Arc::clone(&self.curve),
            stop: Arc::clone(&self.stop),
        }
    }

    /// Removes the copy's steps.
    fn clear(&self) -> Result<(), Error> {
        let scratch = self.dir.join("steps");
        match scratch.exists() {
            true => std::fs::remove_dir_all(&scratch).map_err(|e| Error::io(&scratch, e)),
            false => Ok(()),
        }
    }

    /// The sweep's end, once its copy has `trained`: the copy's steps removed, the
    /// suggestion, and `lr-find.json` and `lr-find.svg` written for run `name`.
    fn end(self, trained: Result<(), Error>, name: &str) -> Result<Found, Error> {
        let stopped = self.stop.load(Ordering::SeqCst);
        let reason = match trained {
            Ok(()) => None,
            Err(Error::Interrupted) if stopped => None,
            // Stopped from outside (the run's own stop): the copy's directory goes, and so
            // does the finder.
            Err(Error::Interrupted) => {
                self.clear()?;
                return Err(Error::Interrupted);
            }
            Err(Error::Training(TrainingError::Diverged { step, .. })) => {
                Some(format!("the loss was not finite at step {step}"))
            }
            Err(e) => return Err(e),
        };
        self.clear()?;
        let points = std::mem::take(&mut self.curve.lock().expect("the curve").points);
        let stopped = reason.unwrap_or_else(|| stop_reason(&points, &self.sweep, stopped));
        let found = Found {
            suggestion: suggestion(&points, &self.sweep),
            sweep: self.sweep,
            points,
            stopped,
            dir: self.dir,
        };
        write(&found, name)?;
        Ok(found)
    }
}

/// The copy of `config` the finder trains: in `dir/steps`, the rate swept, every step's loss
/// read, and nothing else that watches epochs (schedule, early stopping, kept checkpoints,
/// TensorBoard).
fn copy(config: &RunConfig, dir: &Path, sweep: &Sweep) -> RunConfig {
    let mut copy = config.clone();
    copy.run.output_dir = dir.to_path_buf();
    copy.run.name = "steps".into();
    copy.run.tensorboard = false;
    copy.run.log_every_steps = Some(1);
    // Each epoch has a step at least: the finder stops itself at its last step.
    copy.train.epochs = sweep.range.steps;
    copy.train.schedule = None;
    copy.train.early_stopping = None;
    copy.train.lr_range = Some(sweep.range);
    copy.train.find_lr = false;
    copy.checkpoint = Default::default();
    copy
}

/// Why the finder stopped: its steps done, the loss past its threshold (where it stopped the
/// copy), or the copy's own end (a hand loop that ended before the sweep's steps).
fn stop_reason(points: &[Point], sweep: &Sweep, stopped: bool) -> String {
    match (points.len() >= sweep.range.steps, stopped) {
        (true, _) => format!("after {} steps", points.len()),
        (false, true) => format!(
            "at step {}: the smoothed loss passed {} times its best",
            points.len(),
            sweep.early_stop_threshold
        ),
        (false, false) => format!("the loop ended after {} steps", points.len()),
    }
}

/// Writes `lr-find.json` and `lr-find.svg` in `found.dir`.
fn write(found: &Found, name: &str) -> Result<(), Error> {
    std::fs::create_dir_all(&found.dir).map_err(|e| Error::io(&found.dir, e))?;
    let mut json = serde_json::to_value(found).expect("a finder's result serialises");
    json["lr"] = serde_json::json!(found.lr());
    crate::record::write_json(&found.dir.join("lr-find.json"), &json)?;
    let picture = LrFindPicture {
        title: name.to_string(),
        points: (found.points.iter())
            .map(|p| (p.lr, p.loss, p.smoothed))
            .collect(),
        suggestion: found.suggestion,
    };
    Ok(render_lr_find_svg(
        &picture,
        &found.dir.join("lr-find.svg"),
    )?)
}

/// The copy's observer: each step's rate and loss go to the curve, which says when to stop.
struct Watcher {
    inner: Box<dyn Observer>,
    sweep: Sweep,
    curve: Arc<Mutex<Curve>>,
    stop: Arc<AtomicBool>,
}

impl Observer for Watcher {
    fn message(&mut self, _text: &str) {}
    fn warning(&mut self, warning: &Warning) {
        self.inner.warning(warning)
    }
    fn step(&mut self, progress: &EpochProgress) {
        // Steps after the stop was asked for (the run stops at the next) are not the finder's.
        if self.stop.load(Ordering::SeqCst) {
            return;
        }
        let lr = progress.lr.unwrap_or(f64::NAN);
        let going = self
            .curve
            .lock()
            .expect("the curve")
            .push(&self.sweep, lr, progress.loss);
        if !going {
            self.stop.store(true, Ordering::SeqCst);
        }
        self.inner.step(progress)
    }
    fn step_done(&mut self, epoch: usize, step: usize) {
        self.inner.step_done(epoch, step)
    }
    fn snapshot(&mut self, _snapshot: &Snapshot) {}
}
