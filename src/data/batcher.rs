//! Samples to tensors.

use burn::data::dataloader::batcher::Batcher;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::Sample;

/// A batch of inputs `[n, features]` and class targets `[n]`.
#[derive(Debug, Clone)]
pub struct ClassificationBatch {
    /// Inputs.
    pub inputs: Tensor<2>,
    /// Target classes.
    pub targets: Tensor<1, Int>,
}

impl ClassificationBatch {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.targets.dims()[0]
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Stacks [`Sample`]s into a [`ClassificationBatch`] on the loader's device.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClassificationBatcher;

impl Batcher<Sample, ClassificationBatch> for ClassificationBatcher {
    fn batch(&self, items: Vec<Sample>, device: &Device) -> ClassificationBatch {
        let n = items.len();
        let features = items.first().map_or(0, |s| s.features.len());
        let mut flat = Vec::with_capacity(n * features);
        let mut labels = Vec::with_capacity(n);
        for sample in items {
            flat.extend_from_slice(&sample.features);
            labels.push(sample.label as i64);
        }
        ClassificationBatch {
            inputs: Tensor::from_data(TensorData::new(flat, [n, features]), device),
            targets: Tensor::from_data(TensorData::new(labels, [n]), device),
        }
    }
}

/// One row: input features and the values to predict.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Inputs.
    pub features: Vec<f32>,
    /// Targets.
    pub targets: Vec<f32>,
}

/// Rows as tensors: inputs `[n, features]`, targets `[n, targets]`.
#[derive(Debug, Clone)]
pub struct RowBatch {
    /// Inputs.
    pub inputs: Tensor<2>,
    /// Targets.
    pub targets: Tensor<2>,
}

/// Stacks [`Row`]s into a [`RowBatch`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RowBatcher;

impl Batcher<Row, RowBatch> for RowBatcher {
    fn batch(&self, items: Vec<Row>, device: &Device) -> RowBatch {
        let n = items.len();
        let features = items.first().map_or(0, |r| r.features.len());
        let outputs = items.first().map_or(0, |r| r.targets.len());
        let mut inputs = Vec::with_capacity(n * features);
        let mut targets = Vec::with_capacity(n * outputs);
        for row in items {
            inputs.extend_from_slice(&row.features);
            targets.extend_from_slice(&row.targets);
        }
        RowBatch {
            inputs: Tensor::from_data(TensorData::new(inputs, [n, features]), device),
            targets: Tensor::from_data(TensorData::new(targets, [n, outputs]), device),
        }
    }
}
