//! Where a step sums its micro-batches' gradients: on the device, with Burn's
//! [`GradientsAccumulator`], or in host memory (`train.offload.gradients = "host"`), as
//! DeepSpeed's ZeRO-Offload and PyTorch FSDP's `CPUOffload` keep what the device does not need.
//!
//! Burn's backward pass always returns a fresh gradient set, so a device sum holds two sets
//! while a micro-batch's gradients are added: the sum and the newest. Summed on the host, each
//! parameter's gradient moves to host memory as soon as its backward pass is done and is added
//! there, its device copy dropped at once; after the last micro-batch the sum moves back. The
//! device then holds one gradient set, for one set read back per micro-batch and one written
//! back per step. The host adds in f32, as the device does, in the same order.

use std::marker::PhantomData;

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::{Device, Tensor};

use crate::config::{Offload, OffloadConfig};
use crate::train::moved::moved_to;
use crate::train::Layout;

/// Where a step keeps its gradient sum, and where the sum is wanted for the update.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SumPlace {
    /// The sum is kept in host memory (`train.offload.gradients`).
    pub on_host: bool,
    /// The update runs in host memory (`train.offload.optimizer`): a host sum stays there.
    pub update_on_host: bool,
}

impl SumPlace {
    /// Where `offload` puts the sum from the start (`"auto"` keeps it on the device until a
    /// limit moves it).
    pub fn configured(offload: &OffloadConfig) -> Self {
        SumPlace {
            on_host: offload.gradients == Offload::Host,
            update_on_host: offload.optimizer == Offload::Host,
        }
    }
}

impl From<Layout> for SumPlace {
    fn from(layout: Layout) -> Self {
        SumPlace {
            on_host: layout.gradients == Offload::Host,
            update_on_host: layout.optimizer_on_host(),
        }
    }
}

/// A step's sum of its micro-batches' gradients.
pub enum GradientSum<M> {
    /// On the device.
    Device(GradientsAccumulator<M>),
    /// In host memory.
    Host(Box<HostSum<M>>),
}

impl<M: Module> GradientSum<M> {
    /// An empty sum for a step of `micro_batches`, kept where `place` says: in host memory
    /// only where there is a sum to keep (one micro-batch's gradients are the step's own).
    pub fn for_step(place: impl Into<SumPlace>, micro_batches: usize) -> Self {
        let place = place.into();
        match place.on_host && micro_batches > 1 {
            true => GradientSum::Host(Box::new(HostSum::new(place.update_on_host))),
            false => GradientSum::Device(GradientsAccumulator::new()),
        }
    }

    /// Adds one micro-batch's gradients of `model`'s parameters.
    pub fn add(&mut self, model: &M, grads: GradientsParams) {
        match self {
            GradientSum::Device(accumulator) => accumulator.accumulate(model, grads),
            GradientSum::Host(sum) => sum.add(model, grads),
        }
    }

    /// The sum, and the sum emptied: on the device the gradients came from, or in host memory
    /// where the update runs there.
    pub fn take(&mut self, model: &M) -> GradientsParams {
        match self {
            GradientSum::Device(accumulator) => accumulator.grads(),
            GradientSum::Host(sum) => sum.take(model),
        }
    }
}

/// Gradients summed in host memory (Burn's `flex` device), each moved there as it comes.
pub struct HostSum<M> {
    sum: GradientsParams,
    host: Device,
    /// The device the gradients came from, where the sum goes back.
    origin: Option<Device>,
    /// The update runs in host memory: the sum stays there.
    stays: bool,
    phantom: PhantomData<M>,
}

impl<M: Module> HostSum<M> {
    fn new(stays: bool) -> Self {
        HostSum {
            sum: GradientsParams::new(),
            host: Device::flex(),
            origin: None,
            stays,
            phantom: PhantomData,
        }
    }

    fn add(&mut self, model: &M, mut grads: GradientsParams) {
        let mut visitor = ToHost {
            sum: &mut self.sum,
            new: &mut grads,
            host: &self.host,
            origin: &mut self.origin,
        };
        model.visit(&mut visitor);
    }

    fn take(&mut self, model: &M) -> GradientsParams {
        let sum = std::mem::take(&mut self.sum);
        match self.origin.take() {
            Some(device) if !self.stays => sum.to_device(&device, model),
            _ => sum,
        }
    }
}

/// Moves each parameter's new gradient to the host and adds it to the sum there.
struct ToHost<'a> {
    sum: &'a mut GradientsParams,
    new: &'a mut GradientsParams,
    host: &'a Device,
    origin: &'a mut Option<Device>,
}

impl ModuleVisitor for ToHost<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let Some(new) = self.new.remove::<D>(param.id) else {
            return;
        };
        self.origin.get_or_insert_with(|| new.device());
        // Through its data, read now: the device copy goes with `new` before the next
        // parameter's move, and the host copy carries no autodiff context of the device's.
        let new = to_host(new, self.host);
        let sum = match self.sum.remove::<D>(param.id) {
            Some(sum) => sum.add(new),
            None => new,
        };
        self.sum.register::<D>(param.id, sum);
    }
}

/// `tensor` read into host memory (`host`, flex): through its data, with no autodiff context
/// of the device's.
pub(super) fn to_host<const D: usize>(tensor: Tensor<D>, host: &Device) -> Tensor<D> {
    moved_to(tensor, host)
}
