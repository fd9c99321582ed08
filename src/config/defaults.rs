//! Default values for every optional key, in one place.

/// `run.name`.
pub const RUN_NAME: &str = "run";
/// `run.seed`.
pub const SEED: u64 = 42;
/// `run.output_dir`.
pub const OUTPUT_DIR: &str = "runs";
/// `model.hidden`.
pub const HIDDEN: [usize; 2] = [1024, 1024];
/// `data.samples` (synthetic).
pub const SAMPLES: usize = 8192;
/// `data.features` (synthetic).
pub const FEATURES: usize = 64;
/// `data.classes` (synthetic).
pub const CLASSES: usize = 10;
/// `data.seed` (synthetic).
pub const DATA_SEED: u64 = 7;
/// `data.noise` (synthetic).
pub const NOISE: f64 = 1.0;
/// `data.validation_fraction`.
pub const VALIDATION_FRACTION: f64 = 0.2;
/// `data.num_workers`.
pub const NUM_WORKERS: usize = 0;
/// `train.epochs`.
pub const EPOCHS: usize = 5;
/// `train.initial_loss_scale`: 2^16, as PyTorch's `GradScaler` and TensorFlow's
/// `LossScaleOptimizer` start.
pub const INITIAL_LOSS_SCALE: f64 = 65536.0;
/// `train.loss_scale_growth_interval`, as those two use.
pub const LOSS_SCALE_GROWTH_INTERVAL: usize = 2000;
/// `train.batch_size`.
pub const BATCH_SIZE: usize = 128;
/// `train.lr`.
pub const LR: f64 = 1e-3;
/// `memory.preallocate` with `policy = "preallocate"`: JAX's default share.
pub const PREALLOCATE_FRACTION: f64 = 0.75;
/// `data.season` (series): 1, the naive "same as the last value" forecast.
pub const SEASON: usize = 1;
/// `model.hidden` with `kind = "lstm"`.
pub const LSTM_HIDDEN: [usize; 1] = [32];
