//! Validation in a hand loop, in one call: the loop's validation closure over its data in
//! micro-batches at the run's micro-batch (a limit that shrank the training step holds for
//! validation too), on the model in inference mode in the run's compute precision, as the
//! trainer validates; what it held is measured in its own window and checked against the
//! limit at the epoch's end.

use std::ops::Range;

use burn::module::Module;
use burn::tensor::Device;

use super::HandLoop;
use crate::config::OnLimit;
use crate::error::Error;
use crate::task::{MetricSums, StepOutput};
use crate::train::step::micro_ranges;
use crate::train::EpochFigures;

impl<M: Module + 'static> HandLoop<M> {
    /// Scores the model on the loop's `samples` validation samples: `output` gets the model
    /// (in inference mode, in the run's precision) and a range of the samples, and returns
    /// that part's mean loss and metrics, as a task's `valid_step` does. Returns the epoch's
    /// validation figures (`val_loss` and each metric as `val_<name>`, weighted by samples),
    /// to give [`end_epoch`](Self::end_epoch) (early stopping watches them there), and counts
    /// `samples` as the run's `valid_samples`. Under `on_limit = "shrink"`, validation that
    /// breaches the limit runs again at half its micro-batch: `output` may be called again for
    /// the same samples, and must change nothing the loop keeps.
    pub fn validate(
        &mut self,
        samples: usize,
        output: impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<EpochFigures, Error> {
        self.validate_batches(&[samples], output)
    }

    /// [`validate`](Self::validate) over batches of `batches` samples each, in order: each is
    /// cut into micro-batches on its own, as [`step_batches`](Self::step_batches) cuts a
    /// step's, so that a short batch stays short. `output` gets ranges of `0..` their sum.
    pub fn validate_batches(
        &mut self,
        batches: &[usize],
        mut output: impl FnMut(&M, Range<usize>) -> StepOutput,
    ) -> Result<EpochFigures, Error> {
        self.validate_as(|model, micro, sums| {
            for rows in micro_ranges(batches, micro) {
                let n = rows.len();
                let out = output(model, rows);
                sums.add(out.loss, out.metrics, n);
            }
            Ok(())
        })
    }

    /// Validation, each part's loss and metrics (and samples) added to the sums by `parts`,
    /// which gets the model (in inference mode, in the run's precision) and the micro-batch:
    /// the one validation every loop runs.
    pub(in crate::train) fn validate_as(
        &mut self,
        mut parts: impl FnMut(&M, usize, &mut MetricSums) -> Result<(), Error>,
    ) -> Result<EpochFigures, Error> {
        if let Some(failed) = &self.course.failed {
            return Err(super::step::stopped(&failed.message));
        }
        let precision = &self.learner.precision;
        let model = precision.compute_model(&self.learner.for_validation());
        let shrinks = self.config.memory.on_limit == OnLimit::Shrink;
        // The training step's micro-batch, or the smaller one validation shrank to before.
        let layout = self.guard.layout().micro_batch();
        let mut micro = (self.stats.valid_micro_batch).map_or(layout, |m| m.min(layout));
        let (means, samples) = loop {
            self.guard.readings().open_window();
            let mut sums = MetricSums::default();
            parts(&model, micro, &mut sums)?;
            let samples = sums.samples();
            let means = (sums.finish().map_err(Error::device)?, samples);
            let window = self.guard.readings().window()?;
            let half = match shrinks {
                true => {
                    (self.guard).shrink_validation(&mut self.rec, self.epoch, &window, micro)?
                }
                false => None,
            };
            match half {
                Some(half) => micro = half,
                None => {
                    self.place.validated = Some(window);
                    break means;
                }
            }
        };
        if micro < layout {
            self.stats.valid_micro_batch = Some(micro);
        }
        self.stats.valid_samples = samples;
        let Some((val_loss, metrics)) = means else {
            return Ok(EpochFigures::default());
        };
        Ok(EpochFigures {
            val_loss: Some(val_loss),
            metrics: (metrics.into_iter())
                .map(|(name, value)| (format!("val_{name}"), value))
                .collect(),
            ..EpochFigures::default()
        })
    }

    /// An epoch without validation: its end is checked against the limit over what it holds
    /// from here (a window of its own, as validation's), not over the last step's update.
    pub(in crate::train) fn no_validation(&mut self) -> EpochFigures {
        self.guard.readings().open_window();
        self.place.validated = Some(self.guard.readings().peek_window());
        EpochFigures::default()
    }

    /// The device a loop's validation batches go on: the configured one, without autodiff,
    /// as the model [`validate`](Self::validate) hands its closure is.
    pub fn validation_device(&self) -> &Device {
        &self.named.base_device
    }
}
