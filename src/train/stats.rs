//! The run's training statistics as they accumulate, turned into the [`RunSummary`] at the end.
//! The loop's live state is here, not in the summary.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::checkpoint::{best_checkpoints, latest_checkpoint, Checkpoint};
use super::decide::EarlyStopState;
use crate::config::EarlyStoppingConfig;
use crate::memory::{Advice, Breakdown};
use crate::record::{current_epochs, read_snapshots, Event, Snapshot};
use crate::record::{RunStatus, RunSummary};
use crate::train::recorder::RunRecorder;
use crate::train::MemoryGuard;

/// What the epochs have produced so far: scalars only, so that the run's own records hold no
/// heap that grows while it trains (what a run keeps after release is measured to the byte).
/// The final metrics and the checkpoint are read back from the run directory at the end.
#[derive(Debug, Default)]
pub(super) struct Stats {
    pub(super) epochs: usize,
    pub(super) steps: usize,
    pub(super) skipped_steps: u64,
    pub(super) loss_scale: Option<f64>,
    pub(super) clipped_steps: u64,
    /// With early stopping: its settings and outcome.
    pub(super) early_stop: Option<(EarlyStoppingConfig, EarlyStopState)>,
    pub(super) first_loss: Option<f64>,
    pub(super) final_loss: Option<f64>,
    pub(super) final_val_loss: Option<f64>,
    throughput_sum: f64,
    throughput_epochs: usize,
    pub(super) train_samples: usize,
    pub(super) valid_samples: usize,
    /// The memory advisor's estimates, after the epochs (plain numbers, no heap).
    pub(super) advice: Option<Advice>,
    /// Highest in-use peak and reserved figure of a resumed run's earlier part.
    pub(super) earlier_peaks: (u64, u64),
    /// The micro-batch validation shrank to under `on_limit = "shrink"`, below the training
    /// step's: kept in each checkpoint, so that a resumed run validates at it too.
    pub(super) valid_micro_batch: Option<usize>,
}

/// What describes the run, fixed before it starts.
pub(super) struct Identity {
    pub(super) name: String,
    pub(super) run_dir: PathBuf,
    pub(super) task: String,
    pub(super) backend: crate::config::Backend,
    pub(super) execution: crate::config::Execution,
    pub(super) precision: crate::config::Precision,
    pub(super) baselines: crate::task::Baselines,
}

impl Stats {
    /// Records an epoch's losses and throughput.
    pub(super) fn epoch(
        &mut self,
        epoch: usize,
        loss: f64,
        val_loss: Option<f64>,
        samples_per_sec: f64,
    ) {
        self.epochs = epoch;
        self.first_loss.get_or_insert(loss);
        self.final_loss = Some(loss);
        self.final_val_loss = val_loss;
        self.throughput_sum += samples_per_sec;
        self.throughput_epochs += 1;
    }

    /// The summary, with the memory figures from the run's recorder, the last epoch's metrics
    /// (`val_<name>`, `train_<name>`) from its snapshot, and the latest checkpoint.
    pub(super) fn summary(
        self,
        id: Identity,
        (guard, recorder): (&MemoryGuard, &RunRecorder),
        status: RunStatus,
        wall_time_s: f64,
    ) -> RunSummary {
        let snapshots = read_snapshots(recorder.snapshots_path()).unwrap_or_default();
        let final_metrics = final_metrics(&snapshots, self.epochs);
        let best = Checkpoint::best(&id.run_dir).ok().map(|c| c.dir);
        let best_checkpoints = best_checkpoints(&id.run_dir);
        let early = self.early_stop.as_ref();
        let restore_best = early.is_some_and(|(config, _)| config.restore_best);
        let checkpoint = match (restore_best, &best) {
            (true, Some(best)) => Some(best.clone()),
            _ => latest_checkpoint(&id.run_dir),
        };
        let best_so_far = early.and_then(|(_, state)| state.best);
        let memory = recorder.stats();
        let (peak_in_use, peak_reserved) = (memory.peak_bytes_in_use, memory.peak_bytes_reserved);
        let peak_in_use = peak_in_use.max(self.earlier_peaks.0);
        let peak_reserved = peak_reserved.max(self.earlier_peaks.1);
        let layout = guard.layout();
        RunSummary {
            name: id.name,
            run_dir: id.run_dir,
            status,
            task: id.task,
            backend: id.backend,
            memory_source: guard.source(),
            execution: id.execution,
            precision: id.precision,
            loss_scale: self.loss_scale,
            skipped_steps: self.skipped_steps,
            clipped_steps: self.clipped_steps,
            stopped_by: None,
            stopped_early: early.is_some_and(|(_, state)| state.stopped_at.is_some()),
            monitor: early.map(|(config, _)| config.monitor.clone()),
            best_epoch: best_so_far.map(|(epoch, _)| epoch),
            best_value: best_so_far.map(|(_, value)| value),
            best_checkpoint: best,
            best_checkpoints,
            epochs: self.epochs,
            steps: self.steps,
            train_samples: self.train_samples,
            valid_samples: self.valid_samples,
            first_loss: self.first_loss,
            final_loss: self.final_loss,
            final_val_loss: self.final_val_loss,
            peak_bytes_in_use: peak_in_use,
            peak_bytes_reserved: peak_reserved,
            samples_per_sec: (self.throughput_epochs > 0)
                .then(|| self.throughput_sum / self.throughput_epochs as f64),
            micro_batch: layout.micro_batch(),
            accumulation_steps: layout.micro_steps(),
            memory_actions: memory.memory_actions,
            device_init_bytes: guard.control().device_init_bytes(),
            run_in_process: 0,
            baseline_bytes_reserved: guard.control().baseline().bytes_reserved,
            retained: memory.retained,
            limit_bytes: guard.limit_bytes(),
            growth_alarm: memory.growth_alarm(),
            breakdown: peak_breakdown(&snapshots),
            advice: self.advice.map(|a| a.record()),
            checkpoint,
            wall_time_s,
            baselines: id.baselines,
            final_metrics,
        }
    }
}

/// Epoch `epoch`'s metrics from the last of its snapshots, keyed `final_<key>`.
/// The breakdown of the epoch with the highest peak, among the epochs that count.
pub(crate) fn peak_breakdown(snapshots: &[Snapshot]) -> Option<Breakdown> {
    current_epochs(snapshots)
        .into_iter()
        .filter(|s| s.breakdown.is_some())
        .max_by_key(|s| s.memory.peak_bytes_in_use)
        .and_then(|s| s.breakdown.clone())
}

fn final_metrics(snapshots: &[Snapshot], epoch: usize) -> BTreeMap<String, f64> {
    let Some(last) = snapshots
        .iter()
        .rfind(|s| s.event == Event::Epoch && s.epoch == epoch)
    else {
        return BTreeMap::new();
    };
    last.metrics
        .iter()
        .filter_map(|(k, v)| Some((format!("final_{k}"), (*v)?)))
        .collect()
}
