//! Named metrics of a step, and their sums over an epoch.
//!
//! Sums stay on the device until the epoch ends: reading a value waits for the device, and a
//! read per step costs the step its overlap with the backend's threads. They are kept without
//! autodiff (`Tensor::inner`): an operation on an autodiff tensor, even a detached one, pays the
//! graph's bookkeeping, and on a host-bound step (W0) the sums' three operations a step were
//! about 6% of the step (docs/performance.md, "A host-bound step").
//!
//! On flex, which runs each operation when it is called, a value is ready as soon as it is
//! made and reading it waits for nothing: there each f32 value is read at once and summed on
//! the host, in f32 and in the order the device would sum it, so the figures are the device's
//! to the last bit: a read of the value in place of two operations a step (a multiplication
//! and an addition, each through Burn's whole dispatch), which on W0 saves about 2% of the
//! step.

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

/// Sample-weighted sums of a loss and metrics over an epoch, on the device (on flex, on the
/// host: see the module's documentation).
#[derive(Debug, Default)]
pub struct MetricSums {
    loss: Option<Sum>,
    metrics: Vec<(String, Reduce, Sum)>,
    samples: usize,
}

/// A sum of one-element f32 values (or of another type, on the device).
// A handful a run, each moved only by value: the host variant's size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
enum Sum {
    /// On the device, not read.
    Device(Tensor<1>),
    /// Values from flex, read and summed on the host in f32, as flex would sum them.
    Host(f32),
}

impl Sum {
    /// `value` (a mean over `samples` samples, without its graph) weighted by `samples`.
    fn weighted(value: Tensor<1>, samples: usize) -> Self {
        let value = value.inner();
        if let Some(read) = read_now(&value) {
            // The device's `mul_scalar` in f32: the scalar is cast to f32 first.
            return Sum::Host(read * samples as f32);
        }
        Sum::Device(value.mul_scalar(samples as f64))
    }

    /// `self + other`, on the host where both are.
    fn plus(self, other: Sum) -> Self {
        match (self, other) {
            (Sum::Host(a), Sum::Host(b)) => Sum::Host(a + b),
            (a, b) => Sum::Device(a.tensor() + b.tensor()),
        }
    }

    /// The sum as a tensor on its device.
    fn tensor(self) -> Tensor<1> {
        match self {
            Sum::Device(tensor) => tensor,
            Sum::Host(value) => Tensor::from_floats([value], &Device::flex()),
        }
    }

    /// The sum, read (a device's waits for it).
    fn read(self) -> Result<f64, ExecutionError> {
        match self {
            Sum::Device(tensor) => read(tensor),
            Sum::Host(value) => Ok(f64::from(value)),
        }
    }
}

/// The value of a one-element f32 `tensor`, where reading it waits for nothing: on flex,
/// which has run the operations that made it already. `None` elsewhere (and for any other
/// type, or a read that fails: the device sum then reports it).
fn read_now(tensor: &Tensor<1>) -> Option<f32> {
    let flex = tensor.dtype() == DType::F32 && tensor.device().without_autodiff() == Device::flex();
    let data = flex.then(|| tensor.clone().try_into_data().ok())??;
    let value = data.iter::<f32>().next();
    value
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
        let weighted = Sum::weighted(loss, samples);
        self.loss = Some(match self.loss.take() {
            Some(sum) => sum.plus(weighted),
            None => weighted,
        });
        for metric in metrics {
            let value = Sum::weighted(metric.value, samples);
            self.add_metric(metric.name.to_string(), metric.reduce, value);
        }
        self.samples += samples;
    }

    /// Adds everything `other` summed.
    pub fn merge(&mut self, other: MetricSums) {
        if let Some(loss) = other.loss {
            self.loss = Some(match self.loss.take() {
                Some(sum) => sum.plus(loss),
                None => loss,
            });
        }
        for (name, reduce, value) in other.metrics {
            self.add_metric(name, reduce, value);
        }
        self.samples += other.samples;
    }

    fn add_metric(&mut self, name: String, reduce: Reduce, value: Sum) {
        match self.metrics.iter_mut().find(|(n, ..)| *n == name) {
            Some((_, _, sum)) => *sum = sum.clone().plus(value),
            None => self.metrics.push((name, reduce, value)),
        }
    }

    /// The mean loss so far, on the device (not read); `None` if nothing was added.
    pub fn mean_loss(&self) -> Option<Tensor<1>> {
        let n = self.samples.max(1);
        Some(match self.loss.clone()? {
            Sum::Device(sum) => sum.div_scalar(n as f64),
            // The device's `div_scalar` in f32, on the host.
            Sum::Host(value) => Tensor::from_floats([value / n as f32], &Device::flex()),
        })
    }

    /// The mean loss so far, kept as its sum until it is read: no division on the device for
    /// a mean that no one reads. `None` if nothing was added.
    pub(crate) fn deferred_loss_mean(&self) -> Option<DeferredMean> {
        Some(DeferredMean {
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
            let mean = sum.read()? / n;
            let value = match reduce {
                Reduce::Mean => mean,
                Reduce::RootMean => mean.max(0.0).sqrt(),
            };
            values.insert(name, value);
        }
        Ok(Some((loss.read()? / n, values)))
    }

    /// The sums read to the host (waits for the device); `None` if nothing was added.
    pub fn to_host(&self) -> Result<Option<HostSums>, ExecutionError> {
        let Some(loss) = &self.loss else {
            return Ok(None);
        };
        let mut metrics = Vec::with_capacity(self.metrics.len());
        for (name, reduce, sum) in &self.metrics {
            metrics.push((name.clone(), *reduce, sum.clone().read()?));
        }
        Ok(Some(HostSums {
            loss: loss.clone().read()?,
            metrics,
            samples: self.samples,
        }))
    }

    /// Sums that start from `host`'s, on `device`.
    pub fn from_host(host: &HostSums, device: &Device) -> Self {
        let flex = device.clone().without_autodiff() == Device::flex();
        let value = |v: f64| match flex {
            true => Sum::Host(v as f32),
            false => Sum::Device(Tensor::<1>::from_floats([v as f32], device).inner()),
        };
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

/// A mean kept as its sum (on the device; on flex, on the host) and its count: divided when it
/// is read.
#[derive(Debug, Clone)]
pub(crate) struct DeferredMean {
    sum: Sum,
    samples: usize,
}

impl DeferredMean {
    /// The mean, read from the device (waits for it). The division is the one the device
    /// would take, in the sum's own precision where that is f32 (so the figure is the same
    /// to the last bit as `sum / samples` on the device).
    pub(crate) fn read(self) -> Result<f64, ExecutionError> {
        let n = self.samples.max(1);
        let sum = match self.sum {
            Sum::Host(value) => return Ok(f64::from(value / n as f32)),
            Sum::Device(sum) => sum,
        };
        crate::memory::synced();
        let data = sum.try_into_data()?;
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

    /// Losses whose weighted sums round differently in f32 and in f64.
    const STEPS: [(f32, usize); 5] = [(0.1, 3), (1.7, 7), (2.3, 16), (0.333, 5), (9.87, 11)];

    #[test]
    fn a_mean_read_on_the_host_is_the_device_s_division_to_the_last_bit() {
        let device = Device::flex();
        let mut sum = Tensor::<1>::from_floats([0.0], &device);
        for (loss, samples) in STEPS {
            sum = sum + Tensor::<1>::from_floats([loss], &device).mul_scalar(samples as f64);
        }
        let samples = STEPS.iter().map(|(_, n)| n).sum();
        let divided = read(sum.clone().div_scalar(samples as f64)).unwrap();
        let mean = DeferredMean {
            sum: Sum::Device(sum.clone()),
            samples,
        };
        let read_mean = mean.read().unwrap();
        assert_eq!(
            read_mean.to_bits(),
            divided.to_bits(),
            "{read_mean} {divided}"
        );
        // A division in f64 of the f32 sum would differ in its last bits.
        let sum = read(sum).unwrap();
        assert_ne!((sum / samples as f64).to_bits(), divided.to_bits());
    }

    /// On flex the sums are read at once and kept on the host, and every figure is the one the
    /// device's operations give, to the last bit.
    #[test]
    fn sums_kept_on_the_host_on_flex_are_the_device_s_to_the_last_bit() {
        let device = Device::flex();
        let autodiff = device.clone().autodiff();
        let value = |v: f32| Tensor::<1>::from_floats([v], &device);
        let (mut step, mut epoch) = (MetricSums::default(), MetricSums::default());
        let (mut on_device, mut metric) = (value(0.0), value(0.0));
        for (i, (loss, samples)) in STEPS.into_iter().enumerate() {
            // A loss with its graph, as a step's is.
            let tracked = Tensor::<1>::from_floats([loss], &autodiff).require_grad();
            let accuracy = Metric::new("acc", value(loss / 10.0), Reduce::Mean);
            step.add(tracked.mul_scalar(1.0), vec![accuracy], samples);
            on_device = on_device + value(loss).mul_scalar(samples as f64);
            metric = metric + value(loss / 10.0).mul_scalar(samples as f64);
            if i % 2 == 1 {
                epoch.merge(std::mem::take(&mut step));
            }
        }
        epoch.merge(step);
        assert!(matches!(epoch.loss, Some(Sum::Host(_))));
        let samples: usize = STEPS.iter().map(|(_, n)| n).sum();
        assert_eq!(epoch.samples(), samples);
        let bits = |v: f64| v.to_bits();
        // The step's deferred mean, the mean as a tensor, the checkpoint's sums and the
        // epoch's figures.
        let mean = read(on_device.clone().div_scalar(samples as f64)).unwrap();
        let deferred = epoch.deferred_loss_mean().unwrap().read().unwrap();
        assert_eq!(bits(deferred), bits(mean), "{deferred} {mean}");
        assert_eq!(bits(read(epoch.mean_loss().unwrap()).unwrap()), bits(mean));
        let host = epoch.to_host().unwrap().unwrap();
        assert_eq!(bits(host.loss), bits(read(on_device.clone()).unwrap()));
        assert_eq!(bits(host.metrics[0].2), bits(read(metric.clone()).unwrap()));
        let (loss, metrics) = epoch.finish().unwrap().unwrap();
        assert_eq!(bits(loss), bits(read(on_device).unwrap() / samples as f64));
        assert_eq!(
            bits(metrics["acc"]),
            bits(read(metric).unwrap() / samples as f64)
        );
        // Sums resumed from a checkpoint stay on the host, with the same figures.
        let resumed = MetricSums::from_host(&host, &autodiff);
        assert!(matches!(resumed.loss, Some(Sum::Host(_))));
        assert_eq!(resumed.to_host().unwrap().unwrap(), host);
    }

    /// A sum on the device and one on the host add on the device.
    #[test]
    fn a_device_sum_and_a_host_sum_add_on_the_device() {
        let device = Device::flex();
        let on_device = Sum::Device(Tensor::<1>::from_floats([1.5], &device));
        let on_host = Sum::weighted(Tensor::<1>::from_floats([0.25], &device), 4);
        assert!(matches!(on_host, Sum::Host(1.0)));
        let sum = on_device.plus(on_host);
        assert!(matches!(sum, Sum::Device(_)));
        assert_eq!(sum.read().unwrap(), 2.5);
        // Another type than f32 stays on the device, without its graph, with the device's
        // figures.
        let autodiff = device.autodiff();
        let f64_loss = Tensor::<1>::from_floats([0.5], &autodiff)
            .cast(DType::F64)
            .require_grad();
        let mut sums = MetricSums::default();
        sums.add(f64_loss.clone(), Vec::new(), 2);
        sums.add(f64_loss.mul_scalar(3.0), Vec::new(), 4);
        let Some(Sum::Device(sum)) = &sums.loss else {
            panic!("an f64 sum on the host: {:?}", sums.loss);
        };
        assert!(!sum.is_autodiff());
        assert_eq!(sums.to_host().unwrap().unwrap().loss, 7.0);
        assert_eq!(
            sums.deferred_loss_mean().unwrap().read().unwrap(),
            7.0 / 6.0
        );
    }
}
