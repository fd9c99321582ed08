//! Adam in one pass per parameter, in place, on the CPU.
//!
//! Burn's [`Adam`] updates a parameter in about thirteen tensor operations (two moments, bias
//! correction, square root, division, the update), each a separate pass over the parameter, four
//! of them allocating a new buffer. On flex every one of those passes runs on one core: flex
//! parallelises element-wise work only from 4 M elements. On W1 (1.86 M parameters) that was
//! about a fifth of the step, 4.3-5.2 ms against 1.2-1.3 ms fused (`examples/step_split.rs`,
//! `docs/performance.md`).
//!
//! [`FusedAdam`] does the same arithmetic, in the same order and in `f32`, in one loop over the
//! parameter, its gradient and both moments, split across rayon's threads (flex's own pool). It
//! works on the tensors' own buffers: flex hands a uniquely owned buffer out of a tensor and back
//! without a copy (`into_data`, `from_data`), and a shared one is copied first, so the result is
//! the same either way. Its state is Burn's [`AdamState`], so optimizer records (checkpoints) are
//! the same files as [`Adam`]'s and load in either.
//!
//! Only `f32` parameters on flex take this path. On a CubeCL device (wgpu, CUDA) a host loop
//! would mean two transfers per parameter; there `f32` parameters take one kernel of the same
//! arithmetic (`cube.rs`, with those backends' features). For other dtypes the step is Burn's
//! [`Adam`] unchanged.

use burn::optim::decay::WeightDecayConfig;
use burn::optim::{Adam, AdamConfig, AdamState, AdaptiveMomentumState, LearningRate, Optimizer};
use burn::tensor::{DType, Device, Tensor, TensorData};
use rayon::prelude::*;

/// Elements per parallel task: large enough that splitting costs nothing next to the work,
/// small enough that a 1 M-element parameter keeps two cores busy.
const CHUNK: usize = 1 << 15;

/// Adam with Burn's defaults (β₁ 0.9, β₂ 0.999, ε 1e-5) and optional L2 weight decay, fused on
/// flex; see the module documentation.
#[derive(Clone)]
pub struct FusedAdam {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    penalty: Option<f32>,
    /// The same optimizer, unfused, for tensors this one does not handle.
    unfused: Adam,
}

impl FusedAdam {
    /// Adam with Burn's default constants and `weight_decay` (an L2 penalty added to the
    /// gradient, as [`AdamConfig::with_weight_decay`]).
    pub fn new(weight_decay: Option<f32>) -> Self {
        // `AdamConfig`'s defaults (its fields are private; the tests check the two agree).
        Self::with(0.9, 0.999, 1e-5, weight_decay)
    }

    /// Adam with moment decay rates `beta_1` and `beta_2`, `epsilon`, and `weight_decay`.
    pub fn with(beta_1: f32, beta_2: f32, epsilon: f32, weight_decay: Option<f32>) -> Self {
        let config = AdamConfig::new()
            .with_beta_1(beta_1)
            .with_beta_2(beta_2)
            .with_epsilon(epsilon)
            .with_weight_decay(weight_decay.map(WeightDecayConfig::new));
        Self {
            beta_1,
            beta_2,
            epsilon,
            penalty: weight_decay,
            unfused: config.build(),
        }
    }

    /// Whether the fused loop applies: `f32` tensors on flex.
    fn fuses<const D: usize>(tensor: &Tensor<D>, grad: &Tensor<D>) -> bool {
        tensor.dtype() == DType::F32
            && grad.dtype() == DType::F32
            && grad.shape() == tensor.shape()
            && tensor.device().without_autodiff() == Device::flex()
    }
}

impl std::fmt::Debug for FusedAdam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FusedAdam")
            .field("beta_1", &self.beta_1)
            .field("beta_2", &self.beta_2)
            .field("epsilon", &self.epsilon)
            .field("penalty", &self.penalty)
            .finish()
    }
}

impl Optimizer for FusedAdam {
    type State<const D: usize> = AdamState<D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        // AMSGrad's third moment, moments of another dtype or shape (a foreign record): Burn's
        // own step, which handles or reports them.
        let state_fits = state.as_ref().is_none_or(|s| {
            let m = &s.momentum;
            m.max_moment_2.is_none()
                && [&m.moment_1, &m.moment_2]
                    .iter()
                    .all(|t| t.dtype() == DType::F32 && t.shape() == tensor.shape())
        });
        if !state_fits {
            return self.unfused.step(lr, tensor, grad, state);
        }
        #[cfg(any(feature = "wgpu", feature = "cuda", feature = "cpu"))]
        if cube::fuses(&tensor, &grad, state.as_ref()) {
            return self.cube_step(lr, tensor, grad, state);
        }
        if !Self::fuses(&tensor, &grad) {
            return self.unfused.step(lr, tensor, grad, state);
        }
        let device = tensor.device();
        let (time, moments) = match state {
            Some(state) => {
                let momentum = state.momentum;
                let moments = [momentum.moment_1, momentum.moment_2];
                (momentum.time + 1, Some(moments.map(Tensor::into_data)))
            }
            None => (1, None),
        };
        // On flex, `into_data` hands out the tensor's own buffer when nothing else holds it.
        let mut param = tensor.into_data();
        let grad = grad.into_data();
        let len = param.num_elements();
        let [mut m, mut v] = moments.unwrap_or_else(|| {
            let zeros = || TensorData::new(vec![0f32; len], param.shape().clone());
            [zeros(), zeros()]
        });
        let constants = Constants::new(self, time, lr);
        update(
            &constants,
            slice_mut(&mut param),
            slice(&grad),
            slice_mut(&mut m),
            slice_mut(&mut v),
        );
        drop(grad);
        let back = |data: TensorData| Tensor::<D>::from_data(data, (&device, DType::F32));
        let state = AdamState::new(AdaptiveMomentumState::new(time, back(m), back(v)));
        (back(param), Some(state))
    }

    /// Moves the moments to `device` (the gradients', when the update moves to host memory
    /// with `train.offload.optimizer`), each through its data in memory of its own: Burn's move
    /// would keep a moment read back from CubeCL's pools in their staging memory, counted on
    /// the device, until the next update replaced it.
    fn to_device<const D: usize>(mut state: Self::State<D>, device: &Device) -> Self::State<D> {
        let to = |t: Tensor<D>| match t.device() == *device {
            true => t,
            false => crate::train::moved::moved_to(t, device),
        };
        let m = &mut state.momentum;
        m.moment_1 = to(m.moment_1.clone());
        m.moment_2 = to(m.moment_2.clone());
        m.max_moment_2 = m.max_moment_2.take().map(to);
        state
    }
}

#[cfg(any(feature = "wgpu", feature = "cuda", feature = "cpu"))]
impl FusedAdam {
    /// [`Optimizer::step`] on a CubeCL device: one kernel, the moments starting at zero.
    fn cube_step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<AdamState<D>>,
    ) -> (Tensor<D>, Option<AdamState<D>>) {
        let (time, [m, v]) = match state {
            Some(state) => {
                let momentum = state.momentum;
                (momentum.time + 1, [momentum.moment_1, momentum.moment_2])
            }
            None => {
                let zeros = || Tensor::zeros(tensor.shape(), (&tensor.device(), DType::F32));
                (1, [zeros(), zeros()])
            }
        };
        let constants = Constants::new(self, time, lr);
        let [param, m, v] = cube::update(constants, tensor, grad, m, v);
        let state = AdamState::new(AdaptiveMomentumState::new(time, m, v));
        (param, Some(state))
    }
}

fn slice(data: &TensorData) -> &[f32] {
    data.as_slice().expect("an f32 buffer (checked before)")
}

fn slice_mut(data: &mut TensorData) -> &mut [f32] {
    data.as_mut_slice().expect("an f32 buffer (checked before)")
}

/// The step's scalars, computed in `f32` exactly as Burn's `AdaptiveMomentum` does.
#[derive(Clone, Copy, Debug)]
struct Constants {
    beta_1: f32,
    beta_2: f32,
    /// 1 - β₁ and 1 - β₂.
    rest_1: f32,
    rest_2: f32,
    /// √(1 - β₂ᵗ) / (1 - β₁ᵗ).
    combined: f32,
    /// ε √(1 - β₂ᵗ).
    epsilon: f32,
    lr: f32,
    penalty: Option<f32>,
}

impl Constants {
    fn new(adam: &FusedAdam, time: usize, lr: LearningRate) -> Self {
        let t = time as i32;
        let correction_2 = (1.0 - adam.beta_2.powi(t)).sqrt();
        Self {
            beta_1: adam.beta_1,
            beta_2: adam.beta_2,
            rest_1: 1.0 - adam.beta_1,
            rest_2: 1.0 - adam.beta_2,
            combined: correction_2 / (1.0 - adam.beta_1.powi(t)),
            epsilon: adam.epsilon * correction_2,
            lr: lr as f32,
            penalty: adam.penalty,
        }
    }
}

/// One chunk of the parameter, its gradient and its two moments.
type Chunk<'a> = (((&'a mut [f32], &'a [f32]), &'a mut [f32]), &'a mut [f32]);

/// One Adam update of `param` and its moments, in place, split across rayon's threads.
fn update(c: &Constants, param: &mut [f32], grad: &[f32], m: &mut [f32], v: &mut [f32]) {
    let arch = pulp::Arch::new();
    let work = |chunk: Chunk| arch.dispatch(Kernel { c, chunk });
    if param.len() <= CHUNK {
        // Handing a small parameter to the pool costs more than it saves.
        work((((param, grad), m), v));
        return;
    }
    param
        .par_chunks_mut(CHUNK)
        .zip(grad.par_chunks(CHUNK))
        .zip(m.par_chunks_mut(CHUNK))
        .zip(v.par_chunks_mut(CHUNK))
        .for_each(work);
}

/// The update of one chunk. Run through [`pulp::Arch::dispatch`], which compiles it for the
/// widest vector instructions the CPU has (AVX-512, AVX2, or the x86-64 baseline) and picks one
/// at run time: the square root and the division are most of the arithmetic, and the baseline
/// does them four lanes at a time.
struct Kernel<'a> {
    c: &'a Constants,
    chunk: Chunk<'a>,
}

impl pulp::WithSimd for Kernel<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let (c, (((param, grad), m), v)) = (self.c, self.chunk);
        // One loop per case, so that neither branches per element.
        match c.penalty {
            None => lanes(c, param, grad, m, v, |_, g| g),
            // Burn: `tensor.mul_scalar(penalty).add(grad)`.
            Some(penalty) => lanes(c, param, grad, m, v, move |p, g| p * penalty + g),
        }
    }
}

/// The element loop: `decay` gives the gradient the moments see; then, as Burn,
/// `m.mul_scalar(β₁).add(g.mul_scalar(1 - β₁))` (and the same for `v` with `g²`),
/// `m.mul_scalar(combined).div(v.sqrt().add_scalar(ε'))`, `mul_scalar(lr)` and
/// `tensor - delta`. On the first step the moments are zeros, which gives Burn's
/// `g.mul_scalar(1 - β₁)` exactly.
#[inline(always)]
fn lanes(
    c: &Constants,
    param: &mut [f32],
    grad: &[f32],
    m: &mut [f32],
    v: &mut [f32],
    decay: impl Fn(f32, f32) -> f32,
) {
    for (((p, &g), m), v) in param
        .iter_mut()
        .zip(grad)
        .zip(m.iter_mut())
        .zip(v.iter_mut())
    {
        let g = decay(*p, g);
        *m = *m * c.beta_1 + g * c.rest_1;
        *v = *v * c.beta_2 + (g * g) * c.rest_2;
        let step = (*m * c.combined) / (v.sqrt() + c.epsilon);
        *p -= step * c.lr;
    }
}

#[cfg(any(feature = "wgpu", feature = "cuda", feature = "cpu"))]
mod cube;
#[cfg(test)]
mod tests;
