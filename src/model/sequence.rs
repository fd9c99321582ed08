//! A sequence model: stacked LSTMs from Burn's `nn` over a window of a series, with a linear
//! head on the last hidden state.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use super::{not_empty, positives};
use crate::config::Invalid;

/// `[model]` of `kind = "lstm"`: stacked LSTM layers (Burn's `nn::Lstm`) over the sample's
/// values, one per step, then a linear head on the last step's hidden state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LstmConfig {
    /// Hidden size of each layer, input side first.
    #[serde(deserialize_with = "positives")]
    pub hidden: Vec<usize>,
}

impl Default for LstmConfig {
    fn default() -> Self {
        Self { hidden: vec![32] }
    }
}

impl LstmConfig {
    /// Checks the settings beyond their types.
    pub fn check(&self) -> Result<(), Invalid> {
        not_empty("model.hidden", &self.hidden, "LSTM layer")
    }
}

/// LSTM layers over `[batch, steps]` windows (one value per step), then a linear head that
/// predicts `[batch, outputs]` from the last step's hidden state.
#[derive(Module, Debug)]
pub struct Lstm {
    layers: Vec<burn::nn::Lstm>,
    head: Linear,
}

impl Lstm {
    /// `hidden` gives each layer's hidden size, input side first.
    pub fn new(hidden: &[usize], outputs: usize, device: &Device) -> Self {
        let mut width = 1;
        let layers = hidden
            .iter()
            .map(|&h| {
                let layer = burn::nn::LstmConfig::new(width, h, true).init(device);
                width = h;
                layer
            })
            .collect();
        Self {
            layers,
            head: LinearConfig::new(width, outputs).init(device),
        }
    }

    /// Predictions for `[batch, steps]` windows.
    pub fn forward(&self, inputs: Tensor<2>) -> Tensor<2> {
        let [batch, steps] = inputs.dims();
        let mut x: Tensor<3> = inputs.reshape([batch, steps, 1]);
        let mut last = None;
        for layer in &self.layers {
            let (sequence, state) = layer.forward(x, None);
            x = sequence;
            last = Some(state.hidden);
        }
        let last = last.unwrap_or_else(|| x.reshape([batch, steps]));
        self.head.forward(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_map_to_one_prediction_per_output() {
        let device = Device::flex();
        let model = Lstm::new(&[8, 4], 2, &device);
        let out = model.forward(Tensor::zeros([3, 12], &device));
        assert_eq!(out.dims(), [3, 2]);
    }
}
