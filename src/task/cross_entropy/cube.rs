//! Softmax cross-entropy as two CubeCL kernels forward and one backward, with its own autodiff
//! step.
//!
//! Burn's [`CrossEntropyLoss`](burn::nn::loss::CrossEntropyLoss) on logits is a log-softmax
//! (a maximum, a subtraction, an exponential, a sum, a logarithm, a subtraction), a gather, a
//! mean and a negation; autodiff differentiates each, and the backward pass adds a scatter into
//! zeros and the log-softmax's own. On wgpu that is 25 kernels of W1's step
//! (`scripts/kernel-count.sh`). Here: one kernel a row for each sample's loss (keeping the row's
//! maximum and sum of exponentials), Burn's mean of the losses, and on the way back one kernel
//! for `(softmax - one_hot(target)) · grad / n`. The arithmetic is Burn's log-softmax's, row by row:
//! `m = max(x)`, `l = ln Σ exp(x - m)`, the loss `-((x_t - m) - l)`, and the sum in the order
//! Burn's reduction takes it on wgpu (partial sums of every fourth, second or single element,
//! as the row's length allows). On lavapipe the loss and gradient are Burn's to the last bit;
//! a reduction Burn tunes differently (CUDA's autotune, very long rows) may differ there.
//!
//! It reaches the CubeCL tensors through Burn's backend extension, and autodiff through
//! `burn::backend::autodiff`'s `Backward`, the route Burn's own extensions take (burn-signal's
//! FFT). No `unsafe`: the kernels are launched with CubeCL's checked `launch`.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{unary, Backward, Ops, OpsKind};
use burn::backend::autodiff::Autodiff;
use burn::backend::ops::FloatTensorOps;
use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{backend_extension, Backend};
use burn::tensor::{DType, Tensor};
use burn_cubecl::cubecl;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;
use cubecl::prelude::*;
use cubecl::{calculate_cube_count_elemwise, CubeDim};

/// The most classes a row may have for this path: one unit walks a row three times, which a
/// vocabulary of tens of thousands would make slower than Burn's reductions.
pub(super) const MAX_CLASSES: usize = 4096;

/// The mean cross-entropy of a batch, and its gradient.
#[backend_extension(Cube, Autodiff, Fusion: cfg(feature = "fused"))]
pub trait CrossEntropyKernel: Backend {
    /// The mean loss (shape `[1]`) of `logits` (`[n, classes]`) against `targets` (`[n]`), and
    /// each row's maximum and sum of exponentials (`[n]` each), kept for the gradient.
    #[fusion(meta = fusion_meta::mean)]
    fn cross_entropy_mean(
        logits: FloatTensor<Self>,
        targets: IntTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>);

    /// The gradient of the mean loss with respect to `logits`, given the loss's gradient
    /// `grad` (`[1]`).
    #[fusion(dtype = logits, shape = logits)]
    fn cross_entropy_grad(
        logits: FloatTensor<Self>,
        targets: IntTensor<Self>,
        top: FloatTensor<Self>,
        sum: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
}

#[cfg(feature = "fused")]
mod fusion_meta {
    use burn::backend::fusion::custom::TensorSpec;

    pub(super) fn mean(
        logits: &TensorSpec,
        _targets: &TensorSpec,
    ) -> (TensorSpec, TensorSpec, TensorSpec) {
        let row = || TensorSpec::new([logits.shape[0]].into(), logits.dtype);
        (TensorSpec::new([1].into(), logits.dtype), row(), row())
    }
}

/// One unit a row: the row's loss, maximum and sum of exponentials.
#[cube(launch)]
fn rows_kernel<I: Int>(
    logits: &[f32],
    targets: &[I],
    losses: &mut [f32],
    tops: &mut [f32],
    sums: &mut [f32],
    classes: usize,
    lanes: usize,
) {
    let row = ABSOLUTE_POS;
    if row >= losses.len() {
        terminate!();
    }
    let start = row * classes;
    let mut top = logits[start];
    for j in 1..classes {
        top = max(top, logits[start + j]);
    }
    // In Burn's reduction's order: `lanes` partial sums, each of every `lanes`-th element,
    // then the partial sums in turn (cubek's one-unit reduction of a row read `lanes` at once).
    let mut sum = 0.0f32;
    for lane in 0..lanes {
        let mut part = 0.0f32;
        let mut j = lane;
        while j < classes {
            part += f32::exp(logits[start + j] - top);
            j += lanes;
        }
        sum += part;
    }
    let target = usize::cast_from(targets[row]);
    losses[row] = -((logits[start + target] - top) - f32::ln(sum));
    tops[row] = top;
    sums[row] = sum;
}

/// One unit an element: the gradient autodiff takes through Burn's loss, in its order. With
/// `q = (1/n) · grad[0]` (the mean's and the negation's), the log-softmax's subtraction gives
/// `-q` at the target and `q` to the row's logarithm, which gives `q · (1 / sum)` to each
/// exponential, so `q · (1 / sum) · exp(x - top)`, less `q` at the target.
#[cube(launch)]
fn grad_kernel<I: Int>(
    logits: &[f32],
    targets: &[I],
    tops: &[f32],
    sums: &[f32],
    grad: &[f32],
    out: &mut [f32],
    classes: usize,
    scale: f32,
) {
    let i = ABSOLUTE_POS;
    if i >= out.len() {
        terminate!();
    }
    let row = i / classes;
    let q = scale * grad[0];
    let through_sum = (q * (1.0f32 / sums[row])) * f32::exp(logits[i] - tops[row]);
    let at_target = usize::cast_from(targets[row]) == i % classes;
    out[i] = select(at_target, through_sum + -q, through_sum);
}

fn contiguous(tensor: CubeTensor) -> CubeTensor {
    match tensor.is_contiguous() {
        true => tensor,
        false => into_contiguous(tensor),
    }
}

/// Launches `$kernel` with the targets' integer type.
macro_rules! by_int {
    ($dtype:expr, $kernel:ident, $($arg:expr),* $(,)?) => {
        match $dtype {
            DType::I64 => $kernel::launch::<i64>($($arg),*),
            DType::I32 => $kernel::launch::<i32>($($arg),*),
            DType::U32 => $kernel::launch::<u32>($($arg),*),
            DType::U64 => $kernel::launch::<u64>($($arg),*),
            other => panic!("cross-entropy targets of dtype {other:?} (checked before)"),
        }
    };
}

impl CrossEntropyKernel for CubeBackend {
    fn cross_entropy_mean(
        logits: CubeTensor,
        targets: CubeTensor,
    ) -> (CubeTensor, CubeTensor, CubeTensor) {
        let (logits, targets) = (contiguous(logits), contiguous(targets));
        let [rows, classes] = logits.meta.shape()[..] else {
            panic!("cross-entropy logits of rank 2 (checked before)")
        };
        let client = logits.client.clone();
        let empty = || {
            empty_device_dtype(
                client.clone(),
                logits.device.clone(),
                [rows].into(),
                DType::F32,
            )
        };
        let (losses, tops, sums) = (empty(), empty(), empty());
        let cube_dim = CubeDim::new(&client, rows);
        let cube_count = calculate_cube_count_elemwise(&client, rows, cube_dim);
        by_int!(
            targets.dtype,
            rows_kernel,
            &client,
            cube_count,
            cube_dim,
            logits.into_buffer_arg(),
            targets.clone().into_buffer_arg(),
            losses.clone().into_buffer_arg(),
            tops.clone().into_buffer_arg(),
            sums.clone().into_buffer_arg(),
            classes,
            // The widest vector Burn reads an f32 row with (16 bytes) that divides the row.
            [4, 2, 1]
                .into_iter()
                .find(|v| classes % v == 0)
                .unwrap_or(1),
        );
        (Self::float_mean(losses), tops, sums)
    }

    fn cross_entropy_grad(
        logits: CubeTensor,
        targets: CubeTensor,
        tops: CubeTensor,
        sums: CubeTensor,
        grad: CubeTensor,
    ) -> CubeTensor {
        let (logits, targets) = (contiguous(logits), contiguous(targets));
        let [rows, classes] = logits.meta.shape()[..] else {
            panic!("cross-entropy logits of rank 2 (checked before)")
        };
        let client = logits.client.clone();
        let out = empty_device_dtype(
            client.clone(),
            logits.device.clone(),
            [rows, classes].into(),
            DType::F32,
        );
        let len = rows * classes;
        let cube_dim = CubeDim::new(&client, len);
        let cube_count = calculate_cube_count_elemwise(&client, len, cube_dim);
        by_int!(
            targets.dtype,
            grad_kernel,
            &client,
            cube_count,
            cube_dim,
            logits.into_buffer_arg(),
            targets.into_buffer_arg(),
            tops.into_buffer_arg(),
            sums.into_buffer_arg(),
            grad.into_buffer_arg(),
            out.clone().into_buffer_arg(),
            classes,
            // Burn's mean backward: `1 / n` in f64, taken to the gradient's f32.
            (1.0 / rows as f64) as f32,
        );
        out
    }
}

impl<B: Backend + CrossEntropyKernel, C: CheckpointStrategy> CrossEntropyKernel for Autodiff<B, C> {
    fn cross_entropy_mean(
        logits: FloatTensor<Self>,
        targets: IntTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        #[derive(Debug)]
        struct CrossEntropy;

        impl<B: Backend + CrossEntropyKernel> Backward<B, 1> for CrossEntropy {
            type State = (FloatTensor<B>, IntTensor<B>, FloatTensor<B>, FloatTensor<B>);

            fn backward(
                self,
                ops: Ops<Self::State, 1>,
                grads: &mut Gradients,
                _checkpointer: &mut Checkpointer,
            ) {
                let (logits, targets, tops, sums) = ops.state;
                unary::<B, _>(ops.parents, ops.node, grads, |grad| {
                    B::cross_entropy_grad(logits, targets, tops, sums, grad)
                });
            }
        }

        let node = logits.node();
        let logits = logits.into_primitive();
        let (loss, tops, sums) = B::cross_entropy_mean(logits.clone(), targets.clone());
        let state = (logits, targets, tops.clone(), sums.clone());
        let loss = match CrossEntropy.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(state, loss),
            OpsKind::UnTracked(prep) => prep.finish(loss),
        };
        let constant = <FloatTensor<Self>>::new;
        (loss, constant(tops), constant(sums))
    }

    fn cross_entropy_grad(
        logits: FloatTensor<Self>,
        targets: IntTensor<Self>,
        tops: FloatTensor<Self>,
        sums: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        // A gradient of the gradient is not kept: the result is a constant.
        <FloatTensor<Self>>::new(B::cross_entropy_grad(
            logits.into_primitive(),
            targets,
            tops.into_primitive(),
            sums.into_primitive(),
            grad.into_primitive(),
        ))
    }
}

/// Whether [`mean`] applies: `f32` logits of at least one row and at most [`MAX_CLASSES`]
/// classes on a CubeCL device, integer targets, one a row (Burn's loss reports a mismatch).
pub(super) fn applies(logits: &Tensor<2>, targets: &Tensor<1, burn::tensor::Int>) -> bool {
    let device = logits.device().without_autodiff();
    let [rows, classes] = logits.dims();
    matches!(device.as_dispatch(), burn::backend::DispatchDevice::Cube(_))
        && logits.dtype() == DType::F32
        && rows > 0
        && (1..=MAX_CLASSES).contains(&classes)
        && targets.dims() == [rows]
        && matches!(
            targets.dtype(),
            DType::I64 | DType::I32 | DType::U32 | DType::U64
        )
}

/// The mean cross-entropy of `logits` against `targets`, shape `[1]`; see [`applies`].
pub(super) fn mean(logits: Tensor<2>, targets: Tensor<1, burn::tensor::Int>) -> Tensor<1> {
    let (loss, _, _) = <burn::backend::Dispatch as CrossEntropyKernel>::cross_entropy_mean(
        logits.into_dispatch(),
        targets.into_dispatch(),
    );
    Tensor::from_dispatch(loss)
}
