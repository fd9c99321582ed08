//! Default values of the keys whose default depends on another key's value, which validation
//! writes in. A table read as it is keeps each other key's default beside its field (`[run]`,
//! `[device]`, `[data]`, `[train]`, `[train.schedule]`, `[train.ema]`, `[train.offload]`,
//! `[train.early_stopping]`, `[memory]`, `[checkpoint]`, a built-in kind's `[model]`).

// [model]
/// `model.kind`.
pub const MODEL_KIND: &str = "mlp";

// [train]: the defaults that depend on the optimizer; the table's others are `TrainConfig`'s
// own (and `train.loss_scaling`'s, dynamic with f16 and off otherwise, its method's).
/// `train.betas` (`adam`, `adamw`): Burn's and PyTorch's.
pub const BETAS: [f64; 2] = [0.9, 0.999];
/// `train.eps` (`adam`, `adamw`, `rmsprop`): Burn's.
pub const EPS: f64 = 1e-5;
/// `train.momentum` (`sgd`, `rmsprop`): none, as in PyTorch and Keras.
pub const MOMENTUM: f64 = 0.0;
/// `train.nesterov` (`sgd`).
pub const NESTEROV: bool = false;
/// `train.alpha` (`rmsprop`): PyTorch's and Burn's.
pub const RMSPROP_ALPHA: f64 = 0.99;

// [train.schedule]: the defaults that depend on the kind; the table's others (and a plateau's)
// are `ScheduleConfig`'s own.
/// `train.schedule.min_lr` (`cosine`, `linear`; `step` and `exponential` have no floor).
pub const MIN_LR: f64 = 0.0;
/// `train.schedule.gamma` with `kind = "step"`: Burn's and PyTorch's.
pub const STEP_GAMMA: f64 = 0.1;

// [train.early_stopping]
/// `checkpoint.monitor` without early stopping, and a search's `sweep.monitor`
/// (`EarlyStoppingConfig` and a plateau take `Monitor::VAL_LOSS` as their own).
pub const MONITOR: &str = super::types::Monitor::VAL_LOSS;
// The table's other defaults are `EarlyStoppingConfig`'s own.

// [memory]: the table's other defaults are `MemoryConfig`'s own.
/// `memory.preallocate` with `policy = "preallocate"`: JAX's default share.
pub const PREALLOCATE_FRACTION: f64 = 0.75;
