//! A hand loop's run opened: a new one (its directory made, its model seeded) or one resumed
//! from its latest checkpoint (weights, optimizer, schedule, loss scaler, early stopping and
//! micro-batch back), its [`Learner`] built as the trainer's is.

use std::time::Instant;

use burn::module::Module;
use burn::tensor::Device;

use super::HandLoop;
use crate::backend;
use crate::config::{OnLimit, RunConfig};
use crate::error::Error;
use crate::record::Observer;
use crate::train::checkpoint::Checkpointer;
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
        let total_steps = steps_per_epoch(train, samples) * train.epochs;
        let mut learner = Learner::new(train, config.run.seed, device, model, total_steps);
        let to_come = footprint.gradients + footprint.device_optimizer();
        let (mut stats, epoch) = match &resume {
            None => {
                guard.run_start(to_come)?;
                (Stats::default(), 0)
            }
            Some(resume) => {
                let checkpoint = &resume.checkpoint;
                learner.restore(checkpoint, train)?;
                let state = &checkpoint.state;
                let (at, detail) = ((state.epoch, state.step), checkpoint.describe());
                guard.resume_start(at, to_come, detail)?;
                (resume.stats(), state.epoch)
            }
        };
        stats.train_samples = samples;
        let to_fit = config.memory.on_limit == OnLimit::Fit && resume.is_none();
        Ok(HandLoop {
            checkpointer: Checkpointer::new(&run_dir),
            config,
            run_dir,
            guard,
            learner,
            stats,
            to_fit,
            failed: None,
            epoch,
            open: false,
            tally: Tally::default(),
            validated: None,
            started: Instant::now(),
        })
    }
}
