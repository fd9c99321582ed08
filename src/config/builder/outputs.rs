//! The setters of what a run writes besides its weights: checkpoints inside epochs and the
//! best kept, TensorBoard's event file, and how often it logs.

use super::ConfigBuilder;
use crate::config::types::MonitorMode;

impl ConfigBuilder {
    /// Also write the run's scalars as TensorBoard's event file in the run directory.
    pub fn tensorboard(mut self, on: bool) -> Self {
        self.raw.run.tensorboard = on;
        self
    }

    /// Also write a checkpoint every `steps` optimizer steps inside an epoch.
    pub fn checkpoint_every_steps(mut self, steps: usize) -> Self {
        self.raw.checkpoint.every_steps = Some(steps);
        self
    }

    /// Keep the `k` best epochs' checkpoints beside the latest (`checkpoint.keep_best`),
    /// ranked by `monitor` (default: early stopping's, else `val_loss`) with `mode` (default:
    /// the figure's natural one).
    pub fn keep_best(mut self, k: usize, monitor: Option<&str>, mode: Option<MonitorMode>) -> Self {
        self.raw.checkpoint.keep_best = Some(k);
        self.raw.checkpoint.monitor = monitor.map(str::to_string);
        self.raw.checkpoint.mode = mode;
        self
    }

    /// Also log (the progress, TensorBoard's `step/` scalars) every `steps` optimizer steps.
    pub fn log_every_steps(mut self, steps: usize) -> Self {
        self.raw.run.log_every_steps = Some(steps);
        self
    }
}
