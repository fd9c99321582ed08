//! The optimizer's update in host memory (`train.offload.optimizer = "host"`), as DeepSpeed's
//! ZeRO-Offload runs it: the optimizer's state and an f32 master copy of the weights live in
//! host memory (Burn's `flex` device), each step's gradients are read there, Burn's optimizer
//! updates the master copy there, and the updated weights are written back over the device's.
//!
//! The device then holds the weights, the step's activations and its gradients in flight, and
//! no optimizer state. Per step that costs one gradient set read back (none more when the sum
//! is on the host already) and one weight set written to the device. The update is Burn's own
//! ([`apply_gradients`]: loss scaling, clipping, the optimizer), in f32 on both sides, so it
//! computes what the device would; where the state lives does not change the checkpoint,
//! which saves it through Burn's record wherever it is.

use std::collections::HashMap;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, ExecutionError, Tensor};

use super::sum::to_host;
use super::{apply_gradients, Clip, Updated};
use crate::train::precision::{GroupOutcome, MixedPrecision};

/// The f32 master copy of the weights in host memory, while the update runs there.
pub struct HostMaster<M> {
    master: Option<M>,
}

impl<M> Default for HostMaster<M> {
    fn default() -> Self {
        HostMaster { master: None }
    }
}

impl<M: Module> HostMaster<M> {
    /// Forgets the master copy: the next update in host memory copies the model again (after
    /// a checkpoint is loaded into it, say).
    pub fn reset(&mut self) {
        self.master = None;
    }

    /// Applies `grads` to `model` with the update in host memory: the gradients read there,
    /// [`apply_gradients`] on the master copy (made from `model` on the first call), and the
    /// updated weights written over `model`'s on its device.
    pub fn apply(
        &mut self,
        model: M,
        grads: GradientsParams,
        optimizer: &mut ModuleOptimizer,
        (precision, clip): (&mut MixedPrecision, Option<Clip>),
        lr: f64,
    ) -> Result<Updated<M>, ExecutionError> {
        let host = Device::flex();
        let master = match self.master.take() {
            Some(master) => master,
            // Autodiff tensors, as Burn's optimizer takes parameters (it keeps their autodiff
            // state); the gradients are plain ones.
            None => (model.clone()).map(&mut ReadToHost {
                host: &host.clone().autodiff(),
            }),
        };
        let grads = grads_on_host(grads, &master, &host);
        let updated = apply_gradients(master, grads, optimizer, precision, clip, lr)?;
        let (model, device) = match updated.outcome {
            GroupOutcome::Apply => write_weights(model, &updated.model),
            GroupOutcome::Skip => (model, None),
        };
        let clipped = match device {
            Some(device) => updated.clipped.map(|flag| flag.to_device(&device)),
            None => updated.clipped,
        };
        self.master = Some(updated.model);
        Ok(Updated {
            model,
            outcome: updated.outcome,
            clipped,
        })
    }
}

/// Maps each float parameter to a host copy of it.
struct ReadToHost<'a> {
    host: &'a Device,
}

impl ModuleMapper for ReadToHost<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, tensor, mapper) = param.consume();
        Param::from_mapped_value(id, to_host(tensor, self.host), mapper)
    }
}

/// `grads` with every gradient of `model`'s parameters in host memory (those there already
/// stay as they are).
fn grads_on_host<M: Module>(
    mut grads: GradientsParams,
    model: &M,
    host: &Device,
) -> GradientsParams {
    struct Move<'a> {
        grads: &'a mut GradientsParams,
        host: &'a Device,
    }
    impl ModuleVisitor for Move<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(grad) = self.grads.remove::<D>(param.id) {
                let grad = match grad.device() == *self.host {
                    true => grad,
                    false => to_host(grad, self.host),
                };
                self.grads.register::<D>(param.id, grad);
            }
        }
    }
    model.visit(&mut Move {
        grads: &mut grads,
        host,
    });
    grads
}

/// Writes `master`'s weights over `model`'s, parameter by parameter, each device copy
/// dropped before its new value is written; returns the model and its device.
fn write_weights<M: Module>(model: M, master: &M) -> (M, Option<Device>) {
    let mut values = Flat(HashMap::new());
    master.visit(&mut values);
    let mut write = Write {
        values: values.0,
        device: None,
    };
    let model = model.map(&mut write);
    (model, write.device)
}

/// Each parameter's value, flattened (a view on flex, no copy).
struct Flat(HashMap<ParamId, Tensor<1>>);

impl ModuleVisitor for Flat {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let value = param.val();
        let n = value.shape().num_elements();
        self.0.insert(param.id, value.reshape([n]));
    }
}

/// Replaces each parameter's value by the master's, on the parameter's device, keeping its
/// autodiff state (gradients required, checkpointing strategy).
struct Write {
    values: HashMap<ParamId, Tensor<1>>,
    device: Option<Device>,
}

impl ModuleMapper for Write {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, old, mapper) = param.consume();
        let Some(value) = self.values.remove(&id) else {
            return Param::from_mapped_value(id, old, mapper);
        };
        let (device, shape) = (old.device(), old.shape());
        let (require_grad, strategy) =
            (old.is_require_grad(), old.gradient_checkpointing_strategy());
        drop(old);
        let mut new = Tensor::<1>::from_data(value.into_data(), &device).reshape(shape);
        if let Some(strategy) = strategy {
            new = new.with_gradient_checkpointing_strategy(strategy);
        }
        if require_grad {
            new = new.require_grad();
        }
        self.device.get_or_insert(device);
        Param::from_mapped_value(id, new, mapper)
    }
}
