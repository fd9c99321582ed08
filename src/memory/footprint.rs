//! [`Footprint`]: what a run's tensors hold by kind (weights, gradients, optimizer state,
//! data), known from their shapes before the first step, and where offload puts them.

use serde::{Deserialize, Serialize};

/// What a run's tensors hold by kind, known before its first step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Footprint {
    /// The parameters.
    pub weights: u64,
    /// Their low-precision copy in mixed precision, made for each step (0 in f32).
    pub compute_copy: u64,
    /// The gradient sets a step holds at once during its backward passes.
    pub gradients: u64,
    /// How many sets that is: 1, or 2 with accumulation (the sum and the micro-batch's own).
    pub gradient_sets: u64,
    /// The step's gradient sum is kept in host memory (`train.offload.gradients = "host"`):
    /// the device holds one set, whatever the accumulation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_sum: bool,
    /// The optimizer's state once it has stepped.
    pub optimizer: u64,
    /// The optimizer's state, and an f32 master copy of the weights, are kept in host memory
    /// (`train.offload.optimizer = "host"`): the device holds none of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_optimizer: bool,
    /// The dataset held in memory, where it is counted (`None`: not known).
    pub data: Option<u64>,
    /// `[train.ema]`'s moving average of the weights (0 without one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub average: u64,
    /// The average is kept in host memory (`train.ema.device = "host"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_average: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Footprint {
    /// One f32 gradient set.
    pub fn gradient_set(&self) -> u64 {
        self.gradients / self.gradient_sets.max(1)
    }

    /// The moving average on the device: none where it is in host memory.
    pub fn device_average(&self) -> u64 {
        match self.host_average {
            true => 0,
            false => self.average,
        }
    }

    /// The optimizer's state on the device: none where it is in host memory.
    pub fn device_optimizer(&self) -> u64 {
        match self.host_optimizer {
            true => 0,
            false => self.optimizer,
        }
    }

    /// This footprint with the gradient sum (`sum`) and the optimizer's state (`update`) also
    /// in host memory where they say so: what a layout that `"auto"` offload changed holds.
    pub fn placed(self, sum: bool, update: bool) -> Self {
        let host_sum = self.host_sum || sum;
        let sets = if host_sum { 1 } else { self.gradient_sets };
        Footprint {
            gradients: self.gradient_set() * sets,
            gradient_sets: sets,
            host_sum,
            host_optimizer: self.host_optimizer || update,
            ..self
        }
    }

    /// What offload keeps in host memory: the gradient sum, the optimizer's state with the
    /// master copy of the weights, and the moving average.
    pub fn host_bytes(&self) -> u64 {
        let sum = if self.host_sum {
            self.gradient_set()
        } else {
            0
        };
        let update = match self.host_optimizer {
            true => self.optimizer + self.gradient_set(),
            false => 0,
        };
        let average = match self.host_average {
            true => self.average,
            false => 0,
        };
        sum + update + average
    }
}
