//! Named metrics of a step, and their sums over an epoch.
//!
//! Sums stay on the device until the epoch ends: reading a value waits for the device, and a
//! read per step costs the step its overlap with the backend's threads. They are kept without
//! autodiff (`Tensor::inner`): an operation on an autodiff tensor, even a detached one, pays the
//! graph's bookkeeping, and on a host-bound step (W0) the sums' three operations a step were
//! about 6% of the step (docs/performance.md, "A host-bound step").

use std::collections::BTreeMap;

use burn::tensor::{DType, Device, ExecutionError, Tensor};
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
    /// Adds a batch (or step) of `samples` samples: `loss` and each metric are means over it
    /// (taken without their graphs).
    pub fn add(&mut self, loss: Tensor<1>, metrics: Vec<Metric>, samples: usize) {
        let weight = samples as f64;
        let weighted = loss.inner().mul_scalar(weight);
        self.loss = Some(match self.loss.take() {
            Some(sum) => sum + weighted,
            None => weighted,
        });
        for metric in metrics {
            let value = metric.value.inner().mul_scalar(weight);
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

    /// The mean loss so far, kept as its sum until it is read: no division on the device for
    /// a mean that no one reads. `None` if nothing was added.
    pub(crate) fn deferred_loss_mean(&self) -> Option<DeviceMean> {
        Some(DeviceMean {
            sum: self.loss.clone()?,
            samples: self.samples,
        })
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
        let value = |v: f64| Tensor::<1>::from_floats([v as f32], device).inner();
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

/// A mean on the device, as its sum and its count: divided when it is read.
#[derive(Debug, Clone)]
pub(crate) struct DeviceMean {
    sum: Tensor<1>,
    samples: usize,
}

impl DeviceMean {
    /// The mean, read from the device (waits for it). The division is the one the device
    /// would take, in the sum's own precision where that is f32 (so the figure is the same
    /// to the last bit as `sum / samples` on the device).
    pub(crate) fn read(self) -> Result<f64, ExecutionError> {
        crate::memory::synced();
        let n = self.samples.max(1);
        let data = self.sum.try_into_data()?;
        let value = match data.dtype() {
            DType::F32 => (data.iter::<f32>().next()).map(|v| f64::from(v / n as f32)),
            _ => (data.iter::<f64>().next()).map(|v| v / n as f64),
        };
        Ok(value.unwrap_or(f64::NAN))
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

    #[test]
    fn a_mean_read_on_the_host_is_the_device_s_division_to_the_last_bit() {
        let device = Device::flex().autodiff();
        let mut sums = MetricSums::default();
        for (loss, samples) in [(0.1f32, 3), (1.7, 7), (2.3, 16)] {
            let loss = Tensor::<1>::from_floats([loss], &device).require_grad();
            sums.add(loss.mul_scalar(1.5), Vec::new(), samples);
        }
        // Kept without the graph's bookkeeping.
        assert!(!sums.loss.as_ref().unwrap().is_autodiff());
        let divided = read(sums.mean_loss().unwrap()).unwrap();
        let read_mean = sums.deferred_loss_mean().unwrap().read().unwrap();
        // A division in f64 of the f32 sum would differ in its last bits.
        assert_eq!(
            read_mean.to_bits(),
            divided.to_bits(),
            "{read_mean} {divided}"
        );
        let sum = read(sums.loss.clone().unwrap()).unwrap();
        assert_ne!((sum / 26.0).to_bits(), divided.to_bits());
    }
}
