//! The trait a user implements to train any Burn model: [`Task`] maps a batch to a scalar loss
//! and optional named metrics; tidemark does the rest (backward pass, loss scaling, weighting
//! micro-batches, accumulation, the optimizer step, memory policies, snapshots, checkpoints).
//!
//! The built-in kinds are implementations of the same trait: [`Classify`] (cross-entropy, with
//! accuracy) and [`Regress`] (mean squared error, with MAE and RMSE), each over any
//! [`Network`](crate::model::Network).
//!
//! [`crate::guide`] walks through a minimal task (a doctest) and the contract; the examples
//! `custom_model` and `custom_loop` are fuller.

mod classify;
mod cross_entropy;
pub(crate) mod metrics;
mod regress;
pub(crate) mod score;

pub use classify::Classify;
pub use cross_entropy::cross_entropy;
pub use metrics::{HostSums, Metric, MetricSums, Reduce};
pub use regress::Regress;
pub use score::{evaluate, Score};

use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::{Dataset, InMemDataset};
use burn::module::Module;
use burn::tensor::{Device, FloatDType, Tensor};

/// Something tidemark can train: a Burn module, the data it learns from, and how a batch
/// becomes a loss.
///
/// tidemark keeps control of the micro-batch size, so that gradient accumulation and
/// `memory.on_limit = "shrink"` work for every task: it draws *items* from [`Task::data`] in
/// batches of `train.batch_size`, cuts them into micro-batches, and asks [`Task::batcher`] to
/// turn each micro-batch into a [`Task::Batch`] on the training device.
pub trait Task {
    /// The Burn module being trained.
    type Model: Module + 'static;
    /// One sample, as the datasets yield it.
    type Item: Clone + Send + Sync + std::fmt::Debug + 'static;
    /// A micro-batch on a device, as the batcher builds it.
    type Batch;

    /// A short name for the task, shown in the run's `config.toml` and summary.
    fn name(&self) -> String {
        "custom".into()
    }

    /// The config sections that describe this task: the run's `config.toml` keeps them, and a
    /// resume compares them. A built-in task that a config builds owns `[data]` and `[model]`;
    /// a task defined in code owns none (the default), so those sections, which say nothing
    /// about its run, are left out of `config.toml`.
    fn config_sections(&self) -> &'static [&'static str] {
        &[]
    }

    /// The names of the metrics its steps report (as [`StepOutput::metric`] names them), if
    /// known before training: a run then checks `train.early_stopping.monitor`, and a search
    /// its `sweep.monitor`, before the first epoch. `None` (the default): a run checks its
    /// monitor against the figures of its first epoch.
    fn metric_names(&self) -> Option<&'static [&'static str]> {
        None
    }

    /// Lines worth telling the user before training (what loading the data did).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Simple predictors scored on the validation data, to compare the model with: name, then
    /// metric name (as in [`StepOutput`]) and value. `summary.json` keeps them as `baselines`.
    fn baselines(&self) -> Baselines {
        Baselines::new()
    }

    /// Why this task's model cannot compute in bf16 or f16, if it cannot: a run then refuses
    /// `train.precision = "bf16"` or `"f16"` before it starts, and the advisor does not probe
    /// its bf16 lever. By default the model can.
    fn half_precision_unsupported(&self) -> Option<String> {
        None
    }

    /// Builds a freshly initialised model on `device` (an autodiff device during training).
    fn model(&self, device: &Device) -> Self::Model;

    /// The training and (optional) validation datasets.
    fn data(&self) -> Splits<Self::Item>;

    /// Turns a list of items into a batch on a device.
    fn batcher(&self) -> &dyn Batcher<Self::Item, Self::Batch>;

    /// The training step: the mean loss over the batch's samples (shape `[1]`), and any
    /// metrics worth following. tidemark weights micro-batches by their sample counts, scales
    /// the loss, calls `backward` and steps the optimizer.
    ///
    /// In mixed precision `model` is a low-precision compute copy: pass float inputs through
    /// [`Compute::input`] and outputs through [`Compute::output`] before the loss (both are
    /// no-ops in f32).
    fn step(&self, model: &Self::Model, batch: Self::Batch, cx: &Compute) -> StepOutput;

    /// The validation step, on the model in inference mode. Defaults to [`Task::step`].
    fn valid_step(&self, model: &Self::Model, batch: Self::Batch, cx: &Compute) -> StepOutput {
        self.step(model, batch, cx)
    }
}

/// Why `key = monitor` cannot be watched: the task does not report it (`reported`: the
/// figures it does). One message, whether found before training or after an epoch.
pub(crate) fn unknown_monitor(key: &str, monitor: &str, reported: &[String]) -> String {
    format!(
        "{key} = \"{monitor}\" is not a figure this task reports; it reports {}",
        reported.join(", ")
    )
}

/// Baselines by name, each with its metrics by name.
pub type Baselines = std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>;

/// The datasets of a task.
#[derive(Clone)]
pub struct Splits<I> {
    /// Samples to train on.
    pub train: Arc<dyn Dataset<I>>,
    /// Samples to validate on after each epoch, if any.
    pub valid: Option<Arc<dyn Dataset<I>>>,
}

impl<I> Splits<I> {
    /// Training and validation datasets.
    pub fn new(train: Arc<dyn Dataset<I>>, valid: Option<Arc<dyn Dataset<I>>>) -> Self {
        Self { train, valid }
    }
}

impl<I: Clone + Send + Sync + 'static> Splits<I> {
    /// Items held in memory; an empty `valid` means no validation.
    pub fn in_memory(train: Vec<I>, valid: Vec<I>) -> Self {
        let valid = (!valid.is_empty()).then(|| Arc::new(InMemDataset::new(valid)) as _);
        Self::new(Arc::new(InMemDataset::new(train)), valid)
    }
}

/// What a training or validation step returns.
#[derive(Debug, Clone)]
pub struct StepOutput {
    /// Mean loss over the batch's samples, shape `[1]`.
    pub loss: Tensor<1>,
    /// Named metrics of the batch, each a mean over its samples.
    pub metrics: Vec<Metric>,
}

impl StepOutput {
    /// A step with a loss and no metrics.
    pub fn new(loss: Tensor<1>) -> Self {
        Self {
            loss,
            metrics: Vec::new(),
        }
    }

    /// Adds a metric that is a mean over the batch's samples (accuracy, MAE); the epoch's value
    /// is the sample-weighted mean.
    pub fn metric(mut self, name: &'static str, value: Tensor<1>) -> Self {
        self.metrics.push(Metric::new(name, value, Reduce::Mean));
        self
    }

    /// Adds a root-mean metric (RMSE): `mean_square` is the batch's mean of squares, and the
    /// epoch's value is the square root of their sample-weighted mean, not a mean of roots.
    pub fn rms_metric(mut self, name: &'static str, mean_square: Tensor<1>) -> Self {
        self.metrics
            .push(Metric::new(name, mean_square, Reduce::RootMean));
        self
    }
}

/// The compute precision of a step: where float tensors enter and leave it.
///
/// With `train.precision = "bf16"` or `"f16"`, the model a step receives has its parameters
/// cast to that type (the f32 originals get the gradients); inputs must be cast to match, and
/// outputs are best cast back to f32 before a loss, as PyTorch's autocast and Keras'
/// `mixed_float16` policy do.
#[derive(Debug, Clone, Copy, Default)]
pub struct Compute {
    dtype: Option<FloatDType>,
}

impl Compute {
    /// Full f32 compute.
    pub fn f32() -> Self {
        Self { dtype: None }
    }

    /// Compute in `dtype` (`None`: f32).
    pub fn new(dtype: Option<FloatDType>) -> Self {
        Self { dtype }
    }

    /// The compute dtype, `None` for f32.
    pub fn dtype(&self) -> Option<FloatDType> {
        self.dtype
    }

    /// A float input, cast to the compute precision.
    pub fn input<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        match self.dtype {
            Some(dtype) => x.cast(dtype),
            None => x,
        }
    }

    /// An output, cast back to f32.
    pub fn output<const D: usize>(&self, y: Tensor<D>) -> Tensor<D> {
        match self.dtype {
            Some(_) => y.cast(FloatDType::F32),
            None => y,
        }
    }
}
