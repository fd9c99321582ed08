//! A tensor moved to another device (the host, for an offloaded part) through a copy of its
//! data in memory of its own: the one way Burn offers to move a tensor, made safe for pools.

use burn::tensor::{Device, Tensor, TensorData};

/// `tensor` on `device`, through its data in memory of its own (see [`owned`]).
pub(crate) fn moved_to<const D: usize>(tensor: Tensor<D>, device: &Device) -> Tensor<D> {
    Tensor::<D>::from_data(owned(tensor.into_data()), device)
}

/// `data` in memory of its own. A read from a device's pools comes back in the device's staging
/// memory (CubeCL's wgpu stream lends the mapped staging buffer to the bytes, and the pools count
/// it in use while they live): kept as it is, the host copy would hold device memory.
fn owned(data: TensorData) -> TensorData {
    TensorData::from_bytes_vec(data.as_bytes().to_vec(), data.shape().clone(), data.dtype())
}
