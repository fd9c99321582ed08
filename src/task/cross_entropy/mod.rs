//! The classification loss: the mean softmax cross-entropy of logits against class indices.
//!
//! On a CubeCL device (wgpu, CUDA; with those backends' features) it takes three kernels a
//! step (`cube.rs`); elsewhere, and for logits other than `f32` or of more than 4,096 classes,
//! it is Burn's [`CrossEntropyLoss`](burn::nn::loss::CrossEntropyLoss) on logits.

use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Int, Tensor};

/// The mean softmax cross-entropy of `logits` (`[n, classes]`) against the class indices
/// `targets` (`[n]`), shape `[1]`: Burn's `CrossEntropyLoss` on logits, computed in three
/// kernels on a CubeCL device (the same loss and gradient, to the last bit on wgpu).
pub fn cross_entropy(logits: Tensor<2>, targets: Tensor<1, Int>) -> Tensor<1> {
    #[cfg(any(feature = "wgpu", feature = "cuda", feature = "cpu"))]
    if cube::applies(&logits, &targets) {
        return cube::mean(logits, targets);
    }
    CrossEntropyLossConfig::new()
        .init(&logits.device())
        .forward(logits, targets)
}

#[cfg(any(feature = "wgpu", feature = "cuda", feature = "cpu"))]
mod cube;
