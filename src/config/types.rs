//! The validated configuration. Every value here has passed its checks, so code that takes a
//! [`RunConfig`] never re-validates. It serialises in the same shape as
//! [`RawConfig`](super::RawConfig), which is how a run writes its resolved `config.toml`.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

pub use super::size::MemorySize;

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
}

/// `[run]`: identity and output location.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSection {
    /// Run name; also the run directory's name.
    pub name: String,
    /// Seed for initialisation and shuffling.
    pub seed: u64,
    /// Directory holding run directories.
    pub output_dir: PathBuf,
}

impl RunSection {
    /// The directory this run writes: `<output_dir>/<name>`.
    pub fn run_dir(&self) -> PathBuf {
        self.output_dir.join(&self.name)
    }
}

/// A compute backend. Which ones can run depends on the cargo features the binary was built
/// with; see [`crate::backend`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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

/// `[device]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceConfig {
    /// The backend to run on.
    pub backend: Backend,
    /// Device index within that backend.
    pub index: usize,
    /// How operations run; `None`: the way this build runs them ([`Execution::BUILT`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
}

/// How a CubeCL backend executes tensor operations: the stand-in for TensorFlow's eager mode
/// and `tf.function`.
///
/// In Burn 0.22 this is a property of the build, not of a device: with Burn's `fusion` feature
/// (tidemark's `fused`), CubeCL devices queue operations lazily and run them as fused,
/// autotuned kernels; without it, every operation launches on its own. flex has one mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Execution {
    /// One kernel per operation.
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

/// `[model]`: which network to train.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ModelConfig {
    /// A multi-layer perceptron.
    Mlp(MlpConfig),
    /// A small convolutional network.
    Cnn(CnnConfig),
}

/// A stack of convolution blocks (convolution with "same" padding, optional batch norm, the
/// activation, optional max-pooling), then dropout and a linear head. Inputs are each
/// sample's features read as `[channels, height, width]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CnnConfig {
    /// The image as `[channels, height, width]`; its product is the number of features.
    pub input: [usize; 3],
    /// Output channels of each block.
    pub channels: Vec<usize>,
    /// Square kernel size.
    pub kernel_size: usize,
    /// Max-pooling window after each block; 1 means none.
    pub pool: usize,
    /// Batch normalisation after each convolution.
    pub batch_norm: bool,
    /// Non-linearity after each block.
    pub activation: Activation,
    /// Dropout before the head, in `[0, 1)`.
    pub dropout: f64,
}

/// A multi-layer perceptron: `hidden` linear layers, each followed by the activation and
/// dropout, then a linear head.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MlpConfig {
    /// Hidden layer widths, input side first.
    pub hidden: Vec<usize>,
    /// Non-linearity after each hidden layer.
    pub activation: Activation,
    /// Dropout probability after each hidden layer, in `[0, 1)`.
    pub dropout: f64,
}

/// A non-linearity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// max(0, x).
    Relu,
    /// Gaussian error linear unit.
    Gelu,
    /// Hyperbolic tangent.
    Tanh,
    /// Logistic sigmoid.
    Sigmoid,
}

/// `[data]`: the dataset and how it is split and loaded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataConfig {
    /// Where samples come from.
    #[serde(flatten)]
    pub source: DataSource,
    /// Fraction of samples held out for validation, in `(0, 1)`.
    pub validation_fraction: f64,
    /// Hold out the same fraction of every class, so both splits keep the class balance.
    pub stratify: bool,
    /// Scale each feature to mean 0, standard deviation 1, with the training split's statistics.
    pub standardize: bool,
    /// Data-loader worker threads (0 loads on the training thread).
    pub num_workers: usize,
}

/// Where samples come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DataSource {
    /// Gaussian clusters around random class centres: learnable, and needs no file.
    Synthetic(SyntheticConfig),
    /// A CSV file of numeric feature columns and one integer label column.
    Csv(CsvConfig),
    /// MNIST-format (IDX) image and label files.
    Idx(IdxConfig),
}

/// Synthetic classification data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyntheticConfig {
    /// Number of samples.
    pub samples: usize,
    /// Features per sample.
    pub features: usize,
    /// Number of classes.
    pub classes: usize,
    /// Generator seed, independent of the run seed.
    pub seed: u64,
    /// Standard deviation of the noise around each class centre (centres have unit scale).
    pub noise: f64,
}

/// A CSV dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CsvConfig {
    /// The file.
    pub path: PathBuf,
    /// The label column.
    pub label_column: Column,
    /// Whether the first row is a header; `None` detects it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<bool>,
}

/// An IDX dataset: an images file (`[n, ...]`, unsigned bytes or floats) and a labels file
/// (`[n]`, unsigned bytes), as MNIST and Fashion-MNIST ship them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdxConfig {
    /// The images file.
    pub images: PathBuf,
    /// The labels file.
    pub labels: PathBuf,
}

/// A column named by header or by index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Column {
    /// Zero-based index; negative counts from the end.
    Index(i64),
    /// Header name.
    Name(String),
}

/// `[train]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainConfig {
    /// Passes over the training split.
    pub epochs: usize,
    /// Samples per micro-batch.
    pub batch_size: usize,
    /// Micro-batches per optimizer step; the effective batch is
    /// `batch_size * accumulation_steps`.
    pub accumulation_steps: usize,
    /// The optimizer.
    pub optimizer: OptimizerKind,
    /// Learning rate.
    pub lr: f64,
    /// L2 weight decay (0 disables it).
    pub weight_decay: f64,
    /// The precision forward and backward compute in; weights and optimizer state stay f32.
    pub precision: Precision,
    /// Whether the loss is scaled to keep small gradients representable.
    pub loss_scaling: LossScaling,
    /// The scale dynamic loss scaling starts from.
    pub initial_loss_scale: f64,
    /// Clean optimizer steps after which the scale doubles.
    pub loss_scale_growth_interval: usize,
    /// Burn's gradient checkpointing on the autodiff device (its balanced strategy).
    pub gradient_checkpointing: bool,
}

/// The floating-point precision of forward and backward compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision throughout.
    F32,
    /// bfloat16 compute: f32's range, 8 bits of mantissa.
    Bf16,
    /// IEEE half precision compute: 11 bits of mantissa, largest value 65504.
    F16,
}

impl Precision {
    /// The name used in configs.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Loss scaling for low-precision training.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LossScaling {
    /// Scale the loss; unscale the gradients; skip a step whose gradients are not finite and
    /// halve the scale; double it after `loss_scale_growth_interval` clean steps.
    Dynamic,
    /// No scaling.
    Off,
}

impl TrainConfig {
    /// Samples per optimizer step.
    pub fn effective_batch_size(&self) -> usize {
        self.batch_size * self.accumulation_steps
    }
}

/// An optimizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// Adam (Kingma and Ba).
    Adam,
    /// Plain stochastic gradient descent.
    Sgd,
}

/// `[memory]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryConfig {
    /// The allocation policy.
    pub policy: MemoryPolicyKind,
    /// How much `policy = "preallocate"` reserves at run start (unused under `growth`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preallocate: Option<MemorySize>,
    /// A hard cap on what the run may hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<MemorySize>,
    /// What happens when the limit is exceeded.
    pub on_limit: OnLimit,
    /// When memory is released and the release verified.
    pub clear: ClearPolicy,
    /// When snapshots are written.
    pub snapshot: SnapshotEvery,
}

/// An allocation policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryPolicyKind {
    /// Allocate on demand; reserved memory grows with need.
    Growth,
    /// Reserve `preallocate` bytes at run start, so the run does not grow later.
    Preallocate,
}

/// What to do when the memory limit is exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnLimit {
    /// Stop with a `LimitExceeded` error (exit code 3), keeping checkpoint and snapshots.
    Fail,
    /// Halve the micro-batch and double the accumulation steps, then retry the step.
    Shrink,
}

/// When memory is released back to the device or the OS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClearPolicy {
    /// Never: pools keep their pages and the heap keeps freed memory.
    Never,
    /// After each run, release everything and verify it against the pre-run baseline.
    BetweenRuns,
    /// After every epoch too.
    EveryEpoch,
}

/// When memory snapshots are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotEvery {
    /// At run start, after every epoch and at run end.
    Epoch,
}
