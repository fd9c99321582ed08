//! Named metrics of a step, and their sums over an epoch.
//!
//! Sums stay on the device until the epoch ends: reading a value waits for the device, and a
//! read per step costs the step its overlap with the backend's threads.

use std::collections::BTreeMap;

use burn::tensor::{Device, ExecutionError, Tensor};
use serde::{Deserialize, Serialize};

/// How an epoch's value is made from its batches' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reduce {
    /// The sample-weighted mean (accuracy, MAE, a mean loss).
    Mean,
    /// The square root of the sample-weighted mean (RMSE, from each batch's mean square).
    RootMean,
}

/// One named value of a batch.
#[derive(Debug, Clone)]
pub struct Metric {
    /// The name, e.g. `accuracy`; it appears as `val_accuracy` for validation.
    pub name: &'static str,
    /// The batch's value, shape `[1]`.
    pub value: Tensor<1>,
    /// How batches combine.
    pub reduce: Reduce,
}

impl Metric {
    /// A metric of a batch.
    pub fn new(name: &'static str, value: Tensor<1>, reduce: Reduce) -> Self {
        Self {
            name,
            value,
            reduce,
        }
    }
}

/// An epoch's mean loss and its metrics by name.
pub type Means = (f64, BTreeMap<String, f64>);

/// Sample-weighted sums of a loss and metrics over an epoch, on the device.
#[derive(Debug, Default)]
pub struct MetricSums {
    loss: Option<Tensor<1>>,
    metrics: Vec<(String, Reduce, Tensor<1>)>,
    samples: usize,
}

/// [`MetricSums`] read to the host: what a checkpoint inside an epoch keeps of the epoch so
/// far, so that a resumed epoch reports the figures an uninterrupted one would.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSums {
    /// The sample-weighted loss sum.
    pub loss: f64,
    /// Each metric's sample-weighted sum.
    pub metrics: Vec<(String, Reduce, f64)>,
    /// Samples summed.
    pub samples: usize,
}

impl MetricSums {
    /// Adds a batch (or step) of `samples` samples: `loss` and each metric are means over it.
    pub fn add(&mut self, loss: Tensor<1>, metrics: Vec<Metric>, samples: usize) {
        let weight = samples as f64;
        let weighted = loss.detach().mul_scalar(weight);
        self.loss = Some(match self.loss.take() {
            Some(sum) => sum + weighted,
            None => weighted,
        });
        for metric in metrics {
            let value = metric.value.detach().mul_scalar(weight);
            match self.metrics.iter_mut().find(|(n, ..)| *n == metric.name) {
                Some((_, _, sum)) => *sum = sum.clone() + value,
                None => self
                    .metrics
                    .push((metric.name.to_string(), metric.reduce, value)),
            }
        }
        self.samples += samples;
    }

    /// Adds everything `other` summed.
    pub fn merge(&mut self, other: MetricSums) {
        if let Some(loss) = other.loss {
            self.loss = Some(match self.loss.take() {
                Some(sum) => sum + loss,
                None => loss,
            });
        }
        for (name, reduce, value) in other.metrics {
            match self.metrics.iter_mut().find(|(n, ..)| *n == name) {
                Some((_, _, sum)) => *sum = sum.clone() + value,
                None => self.metrics.push((name, reduce, value)),
            }
        }
        self.samples += other.samples;
    }

    /// The mean loss so far, on the device (not read); `None` if nothing was added.
    pub fn mean_loss(&self) -> Option<Tensor<1>> {
        let loss = self.loss.clone()?;
        Some(loss.div_scalar(self.samples.max(1) as f64))
    }

    /// Samples added so far.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The mean loss and each metric's value, read from the device; `None` if nothing was
    /// added.
    pub fn finish(self) -> Result<Option<Means>, ExecutionError> {
        let Some(loss) = self.loss else {
            return Ok(None);
        };
        let n = self.samples.max(1) as f64;
        let mut values = BTreeMap::new();
        for (name, reduce, sum) in self.metrics {
            let mean = read(sum)? / n;
            let value = match reduce {
                Reduce::Mean => mean,
                Reduce::RootMean => mean.max(0.0).sqrt(),
            };
            values.insert(name, value);
        }
        Ok(Some((read(loss)? / n, values)))
    }

    /// The sums read to the host (waits for the device); `None` if nothing was added.
    pub fn to_host(&self) -> Result<Option<HostSums>, ExecutionError> {
        let Some(loss) = &self.loss else {
            return Ok(None);
        };
        let mut metrics = Vec::with_capacity(self.metrics.len());
        for (name, reduce, sum) in &self.metrics {
            metrics.push((name.clone(), *reduce, read(sum.clone())?));
        }
        Ok(Some(HostSums {
            loss: read(loss.clone())?,
            metrics,
            samples: self.samples,
        }))
    }

    /// Sums that start from `host`'s, on `device`.
    pub fn from_host(host: &HostSums, device: &Device) -> Self {
        let value = |v: f64| Tensor::<1>::from_floats([v as f32], device);
        Self {
            loss: Some(value(host.loss)),
            metrics: host
                .metrics
                .iter()
                .map(|(name, reduce, sum)| (name.clone(), *reduce, value(*sum)))
                .collect(),
            samples: host.samples,
        }
    }
}

/// Reads a one-element tensor. Reads are where a device reports earlier failures, an
/// out-of-memory among them.
pub(crate) fn read(tensor: Tensor<1>) -> Result<f64, ExecutionError> {
    crate::memory::synced();
    let data = tensor.try_into_data()?.convert::<f64>();
    let value = data.iter::<f64>().next().unwrap_or(f64::NAN);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

    #[test]
    fn means_are_weighted_by_samples_and_root_means_root_the_mean() {
        let device = Device::flex();
        let t = |v: f32| Tensor::<1>::from_floats([v], &device);
        let mut sums = MetricSums::default();
        sums.add(
            t(1.0),
            vec![
                Metric::new("acc", t(1.0), Reduce::Mean),
                Metric::new("rmse", t(4.0), Reduce::RootMean),
            ],
            3,
        );
        sums.add(
            t(2.0),
            vec![
                Metric::new("acc", t(0.0), Reduce::Mean),
                Metric::new("rmse", t(16.0), Reduce::RootMean),
            ],
            1,
        );
        assert_eq!(sums.samples(), 4);
        let (loss, metrics) = sums.finish().unwrap().unwrap();
        assert!((loss - 1.25).abs() < 1e-9, "{loss}");
        assert!((metrics["acc"] - 0.75).abs() < 1e-9);
        // sqrt((3 * 4 + 16) / 4) = sqrt(7), not (3 * 2 + 4) / 4 = 2.5.
        assert!((metrics["rmse"] - 7f64.sqrt()).abs() < 1e-6);
        assert!(MetricSums::default().finish().unwrap().is_none());
    }
}
