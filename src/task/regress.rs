//! The built-in regression task: any [`Network`] trained with mean squared error on rows of
//! features and target values, with MAE and RMSE as metrics. Forecasting a series from windows
//! of its past is this task on windows (see [`crate::data::series`]).

use burn::data::dataloader::batcher::Batcher;
use burn::tensor::Device;

use super::{Baselines, Compute, Splits, StepOutput, Task};
use crate::data::{Row, RowBatch, RowBatcher};
use crate::model::Network;

/// Regression with mean squared error. `mae` and `rmse` are reported in the targets' own units:
/// targets that were standardised are scaled back by `unit_scale`.
pub struct Regress<N> {
    name: String,
    build: Box<dyn Fn(&Device) -> N>,
    sections: &'static [&'static str],
    data: Splits<Row>,
    unit_scale: f64,
    notes: Vec<String>,
    baselines: Baselines,
}

impl<N: Network> Regress<N> {
    /// Trains the network `build` makes on `train`, validating on `valid`; `unit_scale` turns a
    /// target difference back into the data's units (1 if targets are not scaled).
    pub fn new(
        train: Vec<Row>,
        valid: Vec<Row>,
        unit_scale: f64,
        build: impl Fn(&Device) -> N + 'static,
    ) -> Self {
        Self {
            name: "regress".into(),
            build: Box::new(build),
            sections: &[],
            data: Splits::in_memory(train, valid),
            unit_scale,
            notes: Vec::new(),
            baselines: Baselines::new(),
        }
    }

    /// Lines to show before training.
    pub fn with_notes(mut self, notes: Vec<String>) -> Self {
        self.notes = notes;
        self
    }

    /// Baselines to compare the model with, each a name and its `mae` and `rmse`.
    pub fn with_baselines(mut self, baselines: Vec<(String, [(&str, f64); 2])>) -> Self {
        self.baselines = baselines
            .into_iter()
            .map(|(name, metrics)| {
                let metrics = metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect();
                (name, metrics)
            })
            .collect();
        self
    }

    /// Says that the config's `sections` describe this task (see [`Task::config_sections`]).
    pub(crate) fn owning(mut self, sections: &'static [&'static str]) -> Self {
        self.sections = sections;
        self
    }

    /// Renames the task (e.g. `forecast`).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }

    fn output(&self, model: &N, batch: RowBatch, cx: &Compute, metrics: bool) -> StepOutput {
        let predicted = cx.output(model.forward(cx.input(batch.inputs)));
        let error = predicted - batch.targets;
        let square = error.clone().powi_scalar(2).mean();
        let out = StepOutput::new(square.clone());
        if !metrics {
            return out;
        }
        let scale = self.unit_scale;
        out.metric("mae", error.abs().mean().mul_scalar(scale))
            .rms_metric("rmse", square.mul_scalar(scale * scale))
    }
}

impl<N: Network> Regress<N> {
    /// The metrics its steps report, in the targets' units.
    pub const METRICS: &'static [&'static str] = &["mae", "rmse"];
}

impl<N: Network> Task for Regress<N> {
    type Model = N;
    type Item = Row;
    type Batch = RowBatch;

    fn name(&self) -> String {
        self.name.clone()
    }

    fn config_sections(&self) -> &'static [&'static str] {
        self.sections
    }

    fn metric_names(&self) -> Option<&'static [&'static str]> {
        Some(Self::METRICS)
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn baselines(&self) -> Baselines {
        self.baselines.clone()
    }

    fn half_precision_unsupported(&self) -> Option<String> {
        N::half_precision_unsupported().map(String::from)
    }

    fn model(&self, device: &Device) -> N {
        (self.build)(device)
    }

    fn data(&self) -> Splits<Row> {
        self.data.clone()
    }

    fn batcher(&self) -> &dyn Batcher<Row, RowBatch> {
        &RowBatcher
    }

    fn step(&self, model: &N, batch: RowBatch, cx: &Compute) -> StepOutput {
        self.output(model, batch, cx, false)
    }

    fn valid_step(&self, model: &N, batch: RowBatch, cx: &Compute) -> StepOutput {
        self.output(model, batch, cx, true)
    }
}
