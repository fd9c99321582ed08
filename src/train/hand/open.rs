//! A hand loop's run opened: a new one (its directory made, its model seeded) or one resumed
//! from its latest checkpoint (weights, optimizer, schedule, loss scaler and micro-batch back).

use std::time::Instant;

use burn::module::Module;
use burn::tensor::Device;

use super::{HandLoop, Tally};
use crate::backend;
use crate::config::{OnLimit, RunConfig};
use crate::error::Error;
use crate::record::Observer;
use crate::train::build_optimizer;
use crate::train::checkpoint::Checkpointer;
use crate::train::decide::{EarlyStop, Schedule};
use crate::train::epochs::{seeded, steps_per_epoch};
use crate::train::precision::MixedPrecision;
use crate::train::resume::{open_run, Resume};
use crate::train::run_dir;
use crate::train::stats::Stats;
use crate::train::step::{footprint, Clip, HostMaster};

impl<M: Module + 'static> HandLoop<M> {
    /// Opens the run: new, or `resume`d.
    pub(super) fn open(
        config: RunConfig,
        samples: usize,
        model: impl FnOnce(&Device) -> M,
        observer: Box<dyn Observer>,
        resume: Option<Resume>,
    ) -> Result<Self, Error> {
        let device = backend::select(&config.device)?.autodiff();
        // As the trainer's steps: recomputed activations where the config asks.
        let device = match config.train.gradient_checkpointing {
            true => device.gradient_checkpointing(),
            false => device,
        };
        let (prepared, run_dir, layout) = open_run(&config, &device, resume.as_ref())?;
        run_dir::write_hand_config(&run_dir, &config)?;
        let train = &config.train;
        let (mut guard, mut recorder) = prepared.open(&run_dir, layout, observer)?;
        let mut model = seeded(config.run.seed, &device, model);
        let footprint = footprint(&model, train, None);
        guard.set_footprint(footprint);
        let total_steps = steps_per_epoch(train, samples) * train.epochs;
        let mut optimizer = build_optimizer(train);
        let mut schedule = Schedule::new(train, total_steps);
        let mut precision = MixedPrecision::from_config(train);
        let to_come = footprint.gradients + footprint.device_optimizer();
        let (mut stats, epoch) = match &resume {
            None => {
                guard.run_start(&mut recorder, to_come)?;
                (Stats::default(), 0)
            }
            Some(resume) => {
                let checkpoint = &resume.checkpoint;
                let state = &checkpoint.state;
                checkpoint.load_model(&mut model)?;
                optimizer = checkpoint.load_optimizer(optimizer)?;
                schedule = checkpoint.load_schedule(schedule)?;
                if let Some(scaler) = &state.loss_scaler {
                    precision = MixedPrecision::new(train.precision, Some(scaler.clone()));
                }
                let (at, detail) = ((state.epoch, state.step), checkpoint.describe());
                guard.resume_start(&mut recorder, at, to_come, detail)?;
                (resume.stats(), state.epoch)
            }
        };
        stats.train_samples = samples;
        let to_fit = config.memory.on_limit == OnLimit::Fit && resume.is_none();
        // Early stopping's patience and best so far come back with the checkpoint.
        let early_state = resume
            .as_ref()
            .and_then(|r| r.checkpoint.state.early_stop.clone());
        // A run early stopping had ended (killed before `finish`) stays ended.
        let stopped_early = early_state.as_ref().is_some_and(|s| s.stopped_at.is_some());
        let early_stop = (train.early_stopping.clone())
            .map(|c| EarlyStop::new(c, early_state.unwrap_or_default()));
        Ok(HandLoop {
            optimizer,
            master: HostMaster::default(),
            precision,
            schedule,
            clip: Clip::from_config(train),
            checkpointer: Checkpointer::new(&run_dir),
            config,
            run_dir,
            device,
            guard,
            recorder,
            model: Some(model),
            stats,
            to_fit,
            failed: None,
            early_stop,
            stopped_early,
            epoch,
            open: false,
            tally: Tally::default(),
            started: Instant::now(),
        })
    }
}
