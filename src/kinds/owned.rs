//! [`Owned`]: a program's task that owns its config's `[model]` and `[data]`, as a built-in
//! task does (or `[model]` alone, for a kind whose data is its own), so that its run's
//! `config.toml` keeps them and the run can be rebuilt from it.

use burn::data::dataloader::batcher::Batcher;
use burn::tensor::Device;

use crate::config::TASK_SECTIONS;
use crate::task::{Baselines, Compute, Splits, StepOutput, Task};

/// `task`, owning the config's task sections, named after its kind unless it names itself.
pub(super) struct Owned<T> {
    task: T,
    kind: String,
    sections: &'static [&'static str],
    /// The kind's metrics ([`ModelKind::metrics`](super::ModelKind::metrics)): declared once,
    /// for a search's monitor and the run's checks alike.
    metrics: &'static [&'static str],
}

impl<T: Task> Owned<T> {
    /// `task` of `kind`, which reads `[data]` unless `own_data`, and reports `metrics`.
    pub(super) fn new(
        task: T,
        kind: &str,
        own_data: bool,
        metrics: &'static [&'static str],
    ) -> Self {
        let kind = kind.to_string();
        let sections = match own_data {
            true => &["model"],
            false => TASK_SECTIONS,
        };
        Self {
            task,
            kind,
            sections,
            metrics,
        }
    }
}

impl<T: Task> Task for Owned<T> {
    type Model = T::Model;
    type Item = T::Item;
    type Batch = T::Batch;

    fn name(&self) -> String {
        match self.task.name().as_str() {
            "custom" => self.kind.clone(),
            name => name.to_string(),
        }
    }
    fn config_sections(&self) -> &'static [&'static str] {
        self.sections
    }
    fn metric_names(&self) -> Option<&'static [&'static str]> {
        match self.metrics {
            [] => self.task.metric_names(),
            kind => Some(kind),
        }
    }
    fn notes(&self) -> Vec<String> {
        self.task.notes()
    }
    fn baselines(&self) -> Baselines {
        self.task.baselines()
    }
    fn half_precision_unsupported(&self) -> Option<String> {
        self.task.half_precision_unsupported()
    }
    fn model(&self, device: &Device) -> Self::Model {
        self.task.model(device)
    }
    fn data(&self) -> Splits<Self::Item> {
        self.task.data()
    }
    fn batcher(&self) -> &dyn Batcher<Self::Item, Self::Batch> {
        self.task.batcher()
    }
    fn step(&self, model: &Self::Model, batch: Self::Batch, cx: &Compute) -> StepOutput {
        self.task.step(model, batch, cx)
    }
    fn valid_step(&self, model: &Self::Model, batch: Self::Batch, cx: &Compute) -> StepOutput {
        self.task.valid_step(model, batch, cx)
    }
}
