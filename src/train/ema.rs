//! [`Ema`]: `[train.ema]`, an exponential moving average of the weights (timm's `ModelEmaV2`):
//! after each optimizer step, `average = decay * average + (1 - decay) * weights`, from
//! `start_step` on (before it, the average is the weights). It is a copy of the model without
//! gradients, on the run's device or in host memory (`device = "host"`, where a device has
//! memory of its own: the device then holds it only while validation uses it). Validation,
//! and `evaluate` and `predict` on its checkpoints, use it where `evaluate_with = "average"`.
//! It is saved in every checkpoint (`ema.bpk`), and a resumed run goes on from it.

use std::collections::HashMap;
use std::path::Path;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::tensor::{Device, Tensor};

use super::checkpoint::{save_module, Checkpoint, File, SavedBeside};
use crate::config::{EmaConfig, EmaDevice, EmaWeights};
use crate::error::Error;

/// The moving average of a run's weights.
pub(super) struct Ema<M: Module> {
    average: M,
    config: EmaConfig,
    /// Where the average lives.
    device: Device,
    /// Where validation runs: the run's device without autodiff.
    home: Device,
}

impl<M: Module> Ema<M> {
    /// The average of `model` (on the autodiff device `device`) as it is now.
    pub(super) fn new(model: &M, config: &EmaConfig, device: &Device) -> Self {
        let home = device.clone().inner();
        let place = match config.device {
            EmaDevice::Same => home.clone(),
            EmaDevice::Host => Device::flex(),
        };
        Ema {
            average: model.valid().fork(&place),
            config: config.clone(),
            device: place,
            home,
        }
    }

    /// After optimizer step `step` (from 1): the average moves toward `model`'s weights.
    pub(super) fn update(&mut self, model: &M, step: usize) {
        let decay = match step > self.config.start_step {
            true => self.config.decay,
            false => 0.0,
        };
        let mut weights = Weights {
            device: self.device.clone(),
            by_id: HashMap::new(),
        };
        model.visit(&mut weights);
        let mut blend = Blend {
            decay,
            by_id: weights.by_id,
        };
        // A module's clone shares its tensors: the map makes the new ones.
        self.average = self.average.clone().map(&mut blend);
    }

    /// The weights validation uses: the average, on the run's device, or `model`'s own.
    pub(super) fn for_validation(&self, model: &M) -> M {
        match self.config.evaluate_with {
            EmaWeights::Average => self.average.clone().fork(&self.home),
            EmaWeights::Raw => model.valid(),
        }
    }

    /// The average as `checkpoint` holds it.
    pub(super) fn load(&mut self, checkpoint: &Checkpoint) -> Result<(), Error> {
        checkpoint.load_module(&mut self.average, File::Ema.name())
    }
}

impl<M: Module> SavedBeside for Ema<M> {
    /// Writes the average into the checkpoint directory `dir`.
    fn save(&self, dir: &Path) -> Result<(), Error> {
        save_module(&self.average, dir, File::Ema.name(), "moving average")
    }
}

/// The model's weights by parameter, flat, detached and on the average's device.
struct Weights {
    device: Device,
    by_id: HashMap<ParamId, Tensor<1>>,
}

impl ModuleVisitor for Weights {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let value = param.val().without_autodiff();
        let n = value.shape().num_elements();
        let flat = value.reshape([n]).to_device(&self.device);
        self.by_id.insert(param.id, flat);
    }
}

/// Each parameter of the average moved toward the weights' by `1 - decay`.
struct Blend {
    decay: f64,
    by_id: HashMap<ParamId, Tensor<1>>,
}

impl ModuleMapper for Blend {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let Some(weights) = self.by_id.remove(&param.id) else {
            return param;
        };
        let decay = self.decay;
        param.map(|average| {
            let shape = average.shape();
            let weights: Tensor<D> = weights.reshape(shape);
            match decay == 0.0 {
                true => weights,
                false => average.mul_scalar(decay) + weights.mul_scalar(1.0 - decay),
            }
        })
    }
}
