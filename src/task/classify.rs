//! The built-in classification task: any [`Network`] trained with cross-entropy on labelled
//! samples, with validation accuracy.

use burn::data::dataloader::batcher::Batcher;
use burn::tensor::Device;

use super::{cross_entropy, Compute, Splits, StepOutput, Task};
use crate::data::{ClassificationBatch, ClassificationBatcher, Sample};
use crate::model::Network;

/// Classification: `[batch, features]` to class logits, cross-entropy loss, `accuracy` as a
/// validation metric.
pub struct Classify<N> {
    build: Box<dyn Fn(&Device) -> N>,
    sections: &'static [&'static str],
    data: Splits<Sample>,
}

impl<N: Network> Classify<N> {
    /// Trains the network `build` makes on `train`, validating on `valid`.
    pub fn new(
        train: Vec<Sample>,
        valid: Vec<Sample>,
        build: impl Fn(&Device) -> N + 'static,
    ) -> Self {
        Self {
            build: Box::new(build),
            sections: &[],
            data: Splits::in_memory(train, valid),
        }
    }
}

impl<N: Network> Classify<N> {
    /// Says that the config's `sections` describe this task (see [`Task::config_sections`]).
    pub(crate) fn owning(mut self, sections: &'static [&'static str]) -> Self {
        self.sections = sections;
        self
    }
}

impl<N: Network> Classify<N> {
    /// The metrics its steps report.
    pub const METRICS: &'static [&'static str] = &["accuracy"];
}

impl<N: Network> Task for Classify<N> {
    type Model = N;
    type Item = Sample;
    type Batch = ClassificationBatch;

    fn name(&self) -> String {
        "classify".into()
    }

    fn config_sections(&self) -> &'static [&'static str] {
        self.sections
    }

    fn metric_names(&self) -> Option<&'static [&'static str]> {
        Some(Self::METRICS)
    }

    fn half_precision_unsupported(&self) -> Option<String> {
        N::half_precision_unsupported().map(String::from)
    }

    fn model(&self, device: &Device) -> N {
        (self.build)(device)
    }

    fn data(&self) -> Splits<Sample> {
        self.data.clone()
    }

    fn batcher(&self) -> &dyn Batcher<Sample, ClassificationBatch> {
        &ClassificationBatcher
    }

    fn step(&self, model: &N, batch: ClassificationBatch, cx: &Compute) -> StepOutput {
        let logits = cx.output(model.forward(cx.input(batch.inputs)));
        let loss = cross_entropy(logits, batch.targets);
        StepOutput::new(loss)
    }

    fn valid_step(&self, model: &N, batch: ClassificationBatch, cx: &Compute) -> StepOutput {
        let n = batch.len();
        let logits = cx.output(model.forward(cx.input(batch.inputs)));
        let hits = logits
            .clone()
            .argmax(1)
            .reshape([n])
            .equal(batch.targets.clone())
            .float()
            .mean();
        let loss = cross_entropy(logits, batch.targets);
        StepOutput::new(loss).metric("accuracy", hits)
    }
}
