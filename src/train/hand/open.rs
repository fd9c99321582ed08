//! A hand loop's run opened: a new one (its directory made, its model seeded) or one resumed
//! from its latest checkpoint (weights, optimizer, schedule, loss scaler, early stopping and
//! micro-batch back), its [`Learner`] built as the trainer's is.

use std::time::Instant;

use burn::module::Module;
use burn::tensor::Device;

use super::HandLoop;
use crate::backend;
use crate::config::RunConfig;
use crate::error::Error;
use crate::record::Observer;
use crate::train::checkpoint::{Checkpoint, Checkpointer};
use crate::train::epochs::{seeded, steps_per_epoch};
use crate::train::learner::{run_device, Learner, Tally};
use crate::train::resume::{open_run, Resume};
use crate::train::run_dir;
use crate::train::stats::Stats;
use crate::train::step::footprint;

impl<M: Module + 'static> HandLoop<M> {
    /// Opens the run: new, or `resume`d.
    pub(super) fn open(
        config: RunConfig,
        samples: usize,
        model: impl FnOnce(&Device) -> M,
        observer: Box<dyn Observer>,
        resume: Option<Resume>,
    ) -> Result<Self, Error> {
        let train = &config.train;
        let device = run_device(&backend::select(&config.device)?, train);
        let (prepared, run_dir, layout) = open_run(&config, &device, resume.as_ref())?;
        run_dir::write_hand_config(&run_dir, &config)?;
        let mut guard = prepared.open(&run_dir, layout, observer)?;
        let model = seeded(config.run.seed, &device, model);
        let footprint = footprint(&model, train, None);
        guard.set_footprint(footprint);
        let per_epoch = steps_per_epoch(train, samples);
        let total_steps = per_epoch * train.epochs;
        let mut learner = Learner::new(train, config.run.seed, device, model, total_steps);
        let to_come = footprint.gradients + footprint.device_optimizer();
        let (mut stats, epoch, resumed) = match &resume {
            None => {
                guard.run_start(to_come)?;
                (Stats::default(), 0, None)
            }
            Some(resume) => {
                let checkpoint = &resume.checkpoint;
                let state = &checkpoint.state;
                inside_an_epoch(checkpoint, per_epoch)?;
                learner.restore(checkpoint, train)?;
                let inside = state.step_in_epoch > 0;
                let resumed = inside.then(|| Tally::resumed(state, &learner.device));
                let (at, detail) = ((state.epoch, state.step), checkpoint.describe());
                guard.resume_start(at, to_come, detail)?;
                (resume.stats(), state.epoch, resumed)
            }
        };
        stats.train_samples = samples;
        Ok(HandLoop {
            checkpointer: Checkpointer::for_run(&run_dir, &config),
            config,
            run_dir,
            guard,
            learner,
            stats,
            starting: resume.is_none(),
            failed: None,
            epoch,
            open: false,
            tally: Tally::default(),
            resumed,
            steps_per_epoch: per_epoch,
            task: "hand loop".into(),
            validated: None,
            started: Instant::now(),
            last_report: Instant::now(),
            stop: None,
        })
    }
}

/// Refuses a checkpoint inside an epoch past the epoch's `steps` steps (one of other data).
fn inside_an_epoch(checkpoint: &Checkpoint, steps: usize) -> Result<(), Error> {
    let inside = checkpoint.state.step_in_epoch;
    if inside < steps {
        return Ok(());
    }
    let message = format!("step_in_epoch = {inside} but an epoch of this data has {steps} steps");
    Err(Error::checkpoint(checkpoint.dir.join("meta.json"), message))
}
