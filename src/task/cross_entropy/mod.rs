//! The classification loss: the mean softmax cross-entropy of logits against class indices.
//!
//! On a CubeCL device (wgpu, CUDA; with those backends' features) it takes three kernels a
//! step (`cube.rs`); elsewhere, and for other dtypes or more than
//! [`cube::MAX_CLASSES`](self) classes, it is Burn's
//! [`CrossEntropyLoss`](burn::nn::loss::CrossEntropyLoss) on logits.

use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Int, Tensor};

/// The mean cross-entropy of `logits` (`[n, classes]`) against `targets` (`[n]`), shape `[1]`.
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
