//! Adam's update as one CubeCL kernel a parameter, on every CubeCL backend (wgpu, CUDA, the
//! CubeCL CPU runtime).
//!
//! Burn's [`Adam`](burn::optim::Adam) launches thirteen element-wise kernels a parameter
//! (`scripts/kernel-count.sh`: 78 of W1's 130 kernels a step on wgpu), each reading and writing
//! the whole parameter. [`AdamKernel::adam_update`] launches one, which reads the parameter, its
//! gradient and both moments once and writes the parameter and the moments in place: the same
//! arithmetic, in the same order, as [`lanes`](super::lanes) on flex, and Burn's `Adam` to the
//! last bit on wgpu.
//!
//! It reaches the CubeCL tensors through Burn's backend extension (`#[backend_extension]`), the
//! public route for a custom kernel in dispatch-based Burn; with the `fused` feature the kernel is
//! registered with Burn's fusion as an opaque operation. No `unsafe`: the kernel is launched with
//! CubeCL's checked `launch`.

use burn::backend::{backend_extension, tensor::FloatTensor, Backend};
use burn::optim::AdamState;
use burn::tensor::{DType, Tensor};
use burn_cubecl::cubecl;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeBackend;
use cubecl::prelude::*;
use cubecl::{calculate_cube_count_elemwise, CubeDim};

use super::Constants;

/// Adam's update of one parameter on a CubeCL device.
#[backend_extension(Cube, Fusion: cfg(feature = "fused"))]
pub trait AdamKernel: Backend {
    /// `param`, `m` and `v` after one Adam step with gradient `grad`.
    #[fusion(meta = |param, _grad, m, v, _constants| (param.clone(), m.clone(), v.clone()))]
    fn adam_update(
        param: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        m: FloatTensor<Self>,
        v: FloatTensor<Self>,
        constants: Constants,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>);
}

#[derive(CubeLaunch, CubeType)]
struct Scalars {
    beta_1: f32,
    beta_2: f32,
    rest_1: f32,
    rest_2: f32,
    combined: f32,
    epsilon: f32,
    lr: f32,
    penalty: f32,
}

/// One element per unit: the loop body of [`lanes`](super::lanes).
#[cube(launch)]
fn adam_kernel(
    param: &mut [f32],
    grad: &[f32],
    m: &mut [f32],
    v: &mut [f32],
    c: &Scalars,
    #[comptime] decay: bool,
) {
    let i = ABSOLUTE_POS;
    if i >= param.len() {
        terminate!();
    }
    let p = param[i];
    let mut g = grad[i];
    if decay {
        // Burn: `tensor.mul_scalar(penalty).add(grad)` (an addition, either way round).
        g += p * c.penalty;
    }
    let m_new = m[i] * c.beta_1 + g * c.rest_1;
    let v_new = v[i] * c.beta_2 + (g * g) * c.rest_2;
    let step = (m_new * c.combined) / (f32::sqrt(v_new) + c.epsilon);
    m[i] = m_new;
    v[i] = v_new;
    param[i] = p - step * c.lr;
}

/// `tensor` as a buffer this update may write: itself when nothing else holds it and its
/// elements are contiguous, else a contiguous copy.
fn writable(tensor: CubeTensor) -> CubeTensor {
    match (tensor.can_mut(), tensor.is_contiguous()) {
        (true, true) => tensor,
        (false, true) => tensor.copy(),
        (_, false) => into_contiguous(tensor),
    }
}

impl AdamKernel for CubeBackend {
    fn adam_update(
        param: CubeTensor,
        grad: CubeTensor,
        m: CubeTensor,
        v: CubeTensor,
        c: Constants,
    ) -> (CubeTensor, CubeTensor, CubeTensor) {
        let [param, m, v] = [param, m, v].map(writable);
        let grad = match grad.is_contiguous() {
            true => grad,
            false => into_contiguous(grad),
        };
        let client = param.client.clone();
        let len = param.meta.num_elements();
        let cube_dim = CubeDim::new(&client, len);
        let cube_count = calculate_cube_count_elemwise(&client, len, cube_dim);
        adam_kernel::launch(
            &client,
            cube_count,
            cube_dim,
            param.clone().into_buffer_arg(),
            grad.into_buffer_arg(),
            m.clone().into_buffer_arg(),
            v.clone().into_buffer_arg(),
            ScalarsLaunch::new(
                c.beta_1,
                c.beta_2,
                c.rest_1,
                c.rest_2,
                c.combined,
                c.epsilon,
                c.lr,
                c.penalty.unwrap_or(0.0),
            ),
            c.penalty.is_some(),
        );
        (param, m, v)
    }
}

/// Whether [`update`] applies: `f32` tensors of one shape, without autodiff, on one CubeCL
/// device: the parameter, its gradient and the moments where there are some.
pub(super) fn fuses<const D: usize>(
    tensor: &Tensor<D>,
    grad: &Tensor<D>,
    state: Option<&AdamState<D>>,
) -> bool {
    let device = tensor.device();
    let fits = |t: &Tensor<D>| {
        t.dtype() == DType::F32 && t.shape() == tensor.shape() && t.device() == device
    };
    matches!(device.as_dispatch(), burn::backend::DispatchDevice::Cube(_))
        && fits(tensor)
        && fits(grad)
        && state.is_none_or(|s| fits(&s.momentum.moment_1) && fits(&s.momentum.moment_2))
}

/// One Adam step of `param` and its moments on their CubeCL device; see [`fuses`].
pub(super) fn update<const D: usize>(
    c: Constants,
    param: Tensor<D>,
    grad: Tensor<D>,
    m: Tensor<D>,
    v: Tensor<D>,
) -> [Tensor<D>; 3] {
    let (param, m, v) = <burn::backend::Dispatch as AdamKernel>::adam_update(
        param.into_dispatch(),
        grad.into_dispatch(),
        m.into_dispatch(),
        v.into_dispatch(),
        c,
    );
    [param, m, v].map(Tensor::from_dispatch)
}
