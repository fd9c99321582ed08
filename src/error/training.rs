//! [`TrainingError`]: a state met while training that stops it, neither bad input nor a lack
//! of memory: the loss diverged, loss scaling collapsed, or a hand-written loop's calls came
//! out of order. Exit code 4.

/// Training that could not go on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrainingError {
    /// The loss stopped being finite.
    #[error(
        "training diverged: loss is {loss} at step {step} of epoch {epoch}; try a lower train.lr"
    )]
    Diverged {
        /// Epoch (1-based).
        epoch: usize,
        /// Global optimizer step.
        step: usize,
        /// The loss seen.
        loss: f64,
    },
    /// Loss scaling skipped step after step: the gradients are not finite at any scale.
    #[error(
        "loss scaling skipped {skips} steps in a row, up to step {step} of epoch {epoch} \
         (scale now {scale:e}): the gradients are not finite at any scale; try \
         train.precision = \"bf16\" or a lower train.lr"
    )]
    LossScaleCollapsed {
        /// Epoch (1-based).
        epoch: usize,
        /// Global optimizer step.
        step: usize,
        /// Steps skipped in a row.
        skips: usize,
        /// The scale reached.
        scale: f64,
    },
    /// A hand-written loop's step after the run's last epoch.
    #[error(
        "HandLoop: a step after the run's last epoch (train.epochs = {epochs}); the loop trains \
         HandLoop::epochs()"
    )]
    StepAfterLastEpoch {
        /// The run's `train.epochs`.
        epochs: usize,
    },
    /// A hand-written loop's step after early stopping ended the run.
    #[error(
        "HandLoop: a step after early stopping ended the run at epoch {epoch}; the loop asks \
         HandLoop::stopped_early after each epoch, then calls finish"
    )]
    StepAfterEarlyStop {
        /// The epoch early stopping stopped after.
        epoch: usize,
    },
    /// A hand-written loop's step over no samples.
    #[error("HandLoop: a step over 0 samples (step {step}); a step trains on 1 at least")]
    EmptyStep {
        /// The step's number among the run's optimizer steps.
        step: usize,
    },
    /// A hand-written loop's `end_epoch` with no step since the epoch before ended.
    #[error(
        "HandLoop::end_epoch: no step since epoch {epoch} ended: an epoch ends after its steps"
    )]
    EpochWithoutStep {
        /// The last epoch ended.
        epoch: usize,
    },
    /// `train.lr = "find"`, and the finder's curve had too few points for a suggestion.
    #[error(
        "train.lr = \"find\": the learning-rate finder made no suggestion ({stopped}; see \
         {picture}); give train.lr a rate"
    )]
    NoLrSuggestion {
        /// Why the finder stopped.
        stopped: String,
        /// Its picture, `lr-find.svg`.
        picture: std::path::PathBuf,
    },
    /// An epoch's figures lack the one a key watches: the task's validation did not give it
    /// (in a hand-written loop, `end_epoch` without `HandLoop::validate`'s figures). Found
    /// after an epoch; a key naming a figure the task never reports is refused before the run,
    /// as a config's.
    #[error(
        "{key} = \"{figure}\" is not among the epoch's figures ({given}); the validation \
         figures come from the task's validation split (HandLoop::validate gives them to \
         end_epoch)"
    )]
    FigureMissing {
        /// The key that watches it (`train.early_stopping.monitor`).
        key: String,
        /// The figure watched.
        figure: String,
        /// The figures the epoch gave, or "none".
        given: String,
    },
    /// A hand-written loop's call after one of its steps failed.
    #[error("HandLoop: a step failed ({cause}); the run cannot go on: call finish")]
    AfterFailedStep {
        /// The failed step's error.
        cause: String,
    },
}
