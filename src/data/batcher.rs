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
