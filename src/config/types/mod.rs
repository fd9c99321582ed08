//! The validated configuration. Every value here has passed its checks, so code that takes a
//! [`RunConfig`] never re-validates. It serialises in the same shape as
//! [`RawConfig`](super::RawConfig), which is how a run writes its resolved `config.toml`.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod data;
mod early_stopping;
mod ema;
mod memory;
mod model;
mod monitor;
mod monitor_mode;
mod schedule;
mod train;

pub use super::size::{DeviceBudget, MemorySize};
pub use data::*;
pub use early_stopping::*;
pub use ema::*;
pub use memory::*;
pub use model::*;
pub use monitor::Monitor;
pub use monitor_mode::MonitorMode;
pub use schedule::*;
pub use train::*;

/// A complete, validated run configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunConfig {
    /// `[run]`.
    pub run: RunSection,
    /// `[device]`.
    pub device: DeviceConfig,
    /// `[model]`.
    pub model: ModelConfig,
    /// `[data]`.
    pub data: DataConfig,
    /// `[train]`.
    pub train: TrainConfig,
    /// `[memory]`.
    pub memory: MemoryConfig,
    /// `[checkpoint]`.
    pub checkpoint: CheckpointConfig,
}

/// `[checkpoint]`: checkpoints are written before the first step and after every epoch; this
/// adds some inside long epochs, and keeps the best epochs'.
///
/// The file's table reads into it as it is, a key of the table one field here. `monitor` and
/// `mode`, whose defaults depend on early stopping's, are left `None` where the file leaves
/// them out and validation writes them in where `keep_best` is set; [`Self::kept_best`] gives
/// the three together. The checks beyond types are in `validate/checkpoint.rs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct CheckpointConfig {
    /// Also every this many optimizer steps (counted in the run), so that a run stopped inside
    /// an epoch loses at most that many; `None`: only at epoch ends.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::positive_or_none"
    )]
    pub every_steps: Option<usize>,
    /// Keep the checkpoints of this many best epochs, besides the latest.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::positive_or_none"
    )]
    pub keep_best: Option<usize>,
    /// The validation figure that ranks them: by default early stopping's, where the run has
    /// it, else `val_loss`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
    /// Whether lower or higher is better: by default early stopping's with its monitor, else
    /// the figure's own way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<MonitorMode>,
}

impl CheckpointConfig {
    /// What `keep_best` keeps, ranked how: `None` without it. A table not validated yet (one
    /// built in code) ranks by `val_loss`, or its monitor's own way, where it leaves them out.
    pub fn kept_best(&self) -> Option<KeepBest> {
        let keep_best = self.keep_best?;
        let monitor = (self.monitor.clone()).unwrap_or_else(|| Monitor::VAL_LOSS.into());
        let natural = Monitor::natural_mode(&monitor).unwrap_or(MonitorMode::Min);
        Some(KeepBest {
            keep_best,
            mode: self.mode.unwrap_or(natural),
            monitor,
        })
    }
}

/// `[checkpoint] keep_best = k`, `monitor`, `mode`, resolved: the `k` best epochs' checkpoints
/// are kept (`best-1` the best), besides the latest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeepBest {
    /// How many.
    pub keep_best: usize,
    /// The validation figure that ranks them: `val_loss` or `val_<metric>`.
    pub monitor: String,
    /// Whether lower or higher is better.
    pub mode: MonitorMode,
}

/// `[run]`: identity and output location. Read from the file as it is, each key's default
/// beside it; the name's check beyond its type is in `validate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct RunSection {
    /// Run name; also the run directory's name (default `run`).
    pub name: String,
    /// Seed for initialisation and shuffling (default 42).
    pub seed: u64,
    /// Directory holding run directories (default `runs`).
    pub output_dir: PathBuf,
    /// Also write the run's scalars as TensorBoard's event file in the run directory.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tensorboard: bool,
    /// Also log (the terminal's progress, TensorBoard's `step/` scalars) every this many
    /// optimizer steps, besides about once a second.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::positive_or_none"
    )]
    pub log_every_steps: Option<usize>,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            name: "run".into(),
            seed: 42,
            output_dir: "runs".into(),
            tensorboard: false,
            log_every_steps: None,
        }
    }
}

impl RunSection {
    /// The directory this run writes: `<output_dir>/<name>`.
    pub fn run_dir(&self) -> PathBuf {
        self.output_dir.join(&self.name)
    }
}

/// A compute backend. Which ones can run depends on the cargo features the binary was built
/// with; see [`crate::backend`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Burn's pure-Rust CPU backend (always compiled in).
    Flex,
    /// CubeCL's CPU runtime (feature `cpu`).
    Cpu,
    /// NVIDIA CUDA (feature `cuda`).
    Cuda,
    /// wgpu: Vulkan, Metal or DirectX (feature `wgpu`).
    Wgpu,
}

impl Backend {
    /// Every backend, in the order the docs list them.
    pub const ALL: [Backend; 4] = [Backend::Flex, Backend::Cpu, Backend::Cuda, Backend::Wgpu];

    /// The name used in configs and in the cargo feature that enables it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Flex => "flex",
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Wgpu => "wgpu",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `[device]`, read from the file as it is: the backend (default `flex`), its device index
/// (default 0) and the execution mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub struct DeviceConfig {
    /// The backend to run on.
    pub backend: Backend,
    /// Device index within that backend.
    pub index: usize,
    /// How operations run; `None`: the way this build runs them ([`Execution::BUILT`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            backend: Backend::Flex,
            index: 0,
            execution: None,
        }
    }
}

/// How a CubeCL backend executes tensor operations: the stand-in for TensorFlow's eager mode
/// and `tf.function`.
///
/// In Burn 0.22 this is a property of the build, not of a device: with Burn's `fusion` feature
/// (tidemark's `fused`), CubeCL devices queue operations lazily and run them as fused,
/// autotuned kernels; without it, every operation launches on its own. flex has one mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Execution {
    /// One kernel per operation.
    #[default]
    Eager,
    /// Burn's fusion: a lazy operation stream compiled into fused, autotuned kernels.
    Fused,
}

impl Execution {
    /// The mode this build runs CubeCL backends in.
    pub const BUILT: Execution = if cfg!(feature = "fused") {
        Execution::Fused
    } else {
        Execution::Eager
    };

    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            Execution::Eager => "eager",
            Execution::Fused => "fused",
        }
    }
}

impl fmt::Display for Execution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
