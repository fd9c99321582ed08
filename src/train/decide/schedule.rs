//! [`Schedule`]: the learning rate per optimizer step, from `[train.schedule]`, built from
//! Burn's schedulers: a linear warmup, then a linear, cosine, step or exponential decay (or a
//! constant), joined by Burn's sequential scheduler; or, for `plateau`, the configured rate
//! times what [`Plateau`] decides at each epoch's end (Burn has no such scheduler).

use std::path::Path;

use burn::optim::lr_scheduler::constant::ConstantLr;
use burn::optim::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::optim::lr_scheduler::exponential::ExponentialLrSchedulerConfig;
use burn::optim::lr_scheduler::linear::LinearLrSchedulerConfig;
use burn::optim::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::optim::lr_scheduler::sequential::SequentialLrSchedulerConfig;
use burn::optim::lr_scheduler::step::StepLrSchedulerConfig;
use burn::optim::lr_scheduler::{LrSchedulerConfig, LrSchedulerRecord};

use super::plateau::{Plateau, PlateauState};
use crate::config::{defaults, LrRange, PlateauConfig, ScheduleConfig, ScheduleKind, TrainConfig};
use crate::error::Error;

/// The learning rate of each optimizer step. Advanced once per optimizer step (not per
/// micro-batch), and saved with each checkpoint so that a resumed run continues it.
#[derive(Clone)]
pub struct Schedule {
    scheduler: ModuleLrScheduler,
    /// `step` and `exponential` with `min_lr`: the floor Burn's schedulers do not have.
    floor: f64,
    /// The rate of the latest step; the configured one before the first.
    current: f64,
    /// `plateau`: its decision, whose scale multiplies the rate.
    plateau: Option<Plateau>,
    /// The learning-rate finder's sweep, and the steps taken on it.
    range: Option<(LrRange, usize)>,
}

impl Schedule {
    /// The schedule `config` describes for a run of `total_steps` optimizer steps (which sets
    /// how long a `cosine` or `linear` decay lasts when `decay_steps` is not given).
    pub fn new(config: &TrainConfig, total_steps: usize) -> Self {
        let lr = config.lr;
        if let Some(range) = config.lr_range {
            return Self {
                range: Some((range, 0)),
                ..Self::from_burn(ConstantLr::from(range.min_lr).into(), range.min_lr, 0.0)
            };
        }
        let Some(schedule) = &config.schedule else {
            return Self::from_burn(ConstantLr::from(lr).into(), lr, 0.0);
        };
        let warmup = schedule.warmup_steps;
        let decay_steps = schedule
            .decay_steps
            .unwrap_or(total_steps.saturating_sub(warmup))
            .max(1);
        let (mut schedulers, mut milestones) = (Vec::new(), Vec::new());
        match warmup {
            0 => {}
            // One step of warmup is one step at the rate itself.
            1 => schedulers.push(LrSchedulerConfig::Constant(lr)),
            // Steps 1..=w at s * lr / w: Burn's linear scheduler gives `initial` at its first
            // step and `final` after `num_iters` more.
            w => schedulers.push(LinearLrSchedulerConfig::new(lr / w as f64, lr, w - 1).into()),
        }
        if warmup > 0 {
            milestones.push(warmup);
        }
        let per_epoch = total_steps / config.epochs.max(1);
        schedulers.push(decay(schedule, lr, decay_steps, per_epoch));
        let scheduler = SequentialLrSchedulerConfig::new(schedulers, milestones)
            .init()
            .expect("a validated schedule builds");
        let floor = match schedule.kind {
            ScheduleKind::Step | ScheduleKind::Exponential => schedule.min_lr.unwrap_or(0.0),
            _ => 0.0,
        };
        let plateau =
            (schedule.plateau()).map(|p| Plateau::new(&p, lr, schedule.min_lr.unwrap_or(0.0)));
        Self {
            plateau,
            ..Self::from_burn(scheduler, lr, floor)
        }
    }

    fn from_burn(scheduler: ModuleLrScheduler, lr: f64, floor: f64) -> Self {
        Self {
            scheduler,
            floor,
            current: lr,
            plateau: None,
            range: None,
        }
    }

    /// Advances one optimizer step and returns its learning rate.
    pub fn advance(&mut self) -> f64 {
        if let Some((range, step)) = self.range.as_mut() {
            self.current = range.rate(*step);
            *step += 1;
            return self.current;
        }
        let scale = self.plateau.as_ref().map_or(1.0, Plateau::scale);
        self.current = (self.scheduler.step().base() * scale).max(self.floor);
        self.current
    }

    /// What the schedule watches at each epoch's end (`plateau`'s figure, patience, ...).
    pub fn watches(&self) -> Option<&PlateauConfig> {
        self.plateau.as_ref().map(Plateau::config)
    }

    /// An epoch's end with the watched figure's `value`: the rates before and after, where
    /// the rate drops from the next step on.
    pub fn observe(&mut self, value: f64) -> Option<(f64, f64)> {
        self.plateau.as_mut()?.observe(value)
    }

    /// The learning rate of the latest step (the configured rate before the first).
    pub fn current(&self) -> f64 {
        self.current
    }

    /// Writes the scheduler's state (Burn's record, in burnpack) to `path`, and a plateau's
    /// beside it (`plateau.json`).
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let failed = |e: &dyn std::fmt::Debug| Error::CheckpointSave {
            dir: path.parent().unwrap_or(path).to_path_buf(),
            what: "schedule",
            message: format!("{e:?}"),
        };
        self.scheduler
            .to_record()
            .save(path)
            .map_err(|e| failed(&e))?;
        if let Some(plateau) = &self.plateau {
            let json = serde_json::to_vec_pretty(plateau.state()).expect("states serialise");
            std::fs::write(path.with_file_name(PLATEAU_FILE), json).map_err(|e| failed(&e))?;
        }
        Ok(())
    }

    /// This schedule, continued from the state saved at `path`, whose last step ran at
    /// `current`.
    pub fn load(self, path: &Path, current: f64) -> Result<Self, Error> {
        let record = LrSchedulerRecord::load(path)
            .map_err(|e| Error::checkpoint(path, format!("cannot be loaded: {e:?}")))?;
        let mut plateau = self.plateau;
        if let Some(plateau) = plateau.as_mut() {
            plateau.resume(read_plateau(&path.with_file_name(PLATEAU_FILE))?);
        }
        Ok(Self {
            scheduler: self.scheduler.load_record(record),
            current,
            plateau,
            ..self
        })
    }
}

/// A plateau schedule's state in a checkpoint, beside Burn's record (on the checkpoint's list
/// of files, `train::checkpoint::File`).
pub(crate) const PLATEAU_FILE: &str = "plateau.json";

/// The plateau schedule's state saved at `path`, checked as a config is: a missing, garbled or
/// out-of-range file is an error naming it and the key.
pub(crate) fn read_plateau(path: &Path) -> Result<PlateauState, Error> {
    let text = std::fs::read(path).map_err(|e| Error::checkpoint(path, e.to_string()))?;
    let state: PlateauState = crate::record::parse_json(&text)
        .map_err(|e| Error::checkpoint(path, format!("not a plateau's state: {e}")))?;
    match state.invalid() {
        Some(why) => Err(Error::checkpoint(path, why)),
        None => Ok(state),
    }
}

/// Burn's scheduler for the part after the warmup.
fn decay(
    schedule: &ScheduleConfig,
    lr: f64,
    decay_steps: usize,
    per_epoch: usize,
) -> LrSchedulerConfig {
    let min_lr = schedule.min_lr.unwrap_or(0.0);
    match schedule.kind {
        // A constant rate a piece, each from the first step after its milestone's epoch.
        ScheduleKind::Piecewise => {
            let (milestones, factors) = (
                schedule.milestones.clone().unwrap_or_default(),
                schedule.factors.clone().unwrap_or_default(),
            );
            let rates = std::iter::once(lr).chain(factors.iter().map(|f| lr * f));
            let steps = milestones.iter().map(|m| (m * per_epoch).max(1));
            let pieces = rates.map(LrSchedulerConfig::Constant).collect();
            // Strictly increasing for Burn: an epoch of no steps moves no milestone.
            let mut at = Vec::new();
            for step in steps {
                at.push(step.max(at.last().map_or(1, |l: &usize| l + 1)));
            }
            SequentialLrSchedulerConfig::new(pieces, at).into()
        }
        ScheduleKind::Constant | ScheduleKind::Plateau => LrSchedulerConfig::Constant(lr),
        ScheduleKind::Linear => LinearLrSchedulerConfig::new(lr, min_lr, decay_steps).into(),
        ScheduleKind::Cosine => CosineAnnealingLrSchedulerConfig::new(lr, decay_steps)
            .with_min_lr(min_lr)
            .into(),
        ScheduleKind::Step => StepLrSchedulerConfig::new(lr, schedule.step_size.unwrap_or(1))
            .with_gamma(schedule.gamma.unwrap_or(defaults::STEP_GAMMA))
            .into(),
        ScheduleKind::Exponential => {
            ExponentialLrSchedulerConfig::new(lr, schedule.gamma.unwrap_or(1.0)).into()
        }
    }
}

#[cfg(test)]
mod tests;
