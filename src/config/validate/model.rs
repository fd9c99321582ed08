//! `[model]`.

use super::{choice, finite_in, misplaced, positive, Invalid, Result};
use crate::config::defaults;
use crate::config::raw::*;
use crate::config::types::*;

/// The built-in kinds, whose keys the config reads itself; any other kind is a program's.
pub const BUILTIN_KINDS: [&str; 3] = ["mlp", "cnn", "lstm"];

/// The keys that only some kinds take, with those kinds.
const KIND_KEYS: &[(&str, &[&str])] = &[
    ("hidden", &["mlp", "lstm"]),
    ("activation", &["mlp", "cnn"]),
    ("dropout", &["mlp", "cnn"]),
    ("input", &["cnn"]),
    ("channels", &["cnn"]),
    ("kernel_size", &["cnn"]),
    ("pool", &["cnn"]),
    ("batch_norm", &["cnn"]),
];

/// The kind-specific keys present in `raw`.
fn present(raw: &RawModel) -> Vec<&'static str> {
    super::present(&[
        ("hidden", raw.hidden.is_some()),
        ("activation", raw.activation.is_some()),
        ("dropout", raw.dropout.is_some()),
        ("input", raw.input.is_some()),
        ("channels", raw.channels.is_some()),
        ("kernel_size", raw.kernel_size.is_some()),
        ("pool", raw.pool.is_some()),
        ("batch_norm", raw.batch_norm.is_some()),
    ])
}

pub(super) fn model(raw: RawModel) -> Result<ModelConfig> {
    let app_kind = raw.kind.as_deref().filter(|k| !BUILTIN_KINDS.contains(k));
    if let (Some(kind), Some(settings)) = (app_kind, &raw.app) {
        let (kind, settings) = (kind.to_string(), settings.clone());
        return Ok(ModelConfig::App(AppModel { kind, settings }));
    }
    let kinds = BUILTIN_KINDS;
    let kind = choice(
        "model.kind",
        raw.kind.as_deref(),
        defaults::MODEL_KIND,
        &kinds.map(|k| (k, k)),
    )?;
    misplaced("model", KIND_KEYS, &present(&raw), kind)?;
    let activation = choice(
        "model.activation",
        raw.activation.as_deref(),
        defaults::ACTIVATION,
        &[
            ("relu", Activation::Relu),
            ("gelu", Activation::Gelu),
            ("tanh", Activation::Tanh),
            ("sigmoid", Activation::Sigmoid),
        ],
    )?;
    let dropout = finite_in(
        "model.dropout",
        raw.dropout.unwrap_or(defaults::DROPOUT),
        0.0,
        1.0,
        "in [0, 1)",
    )?;
    match kind {
        "lstm" => lstm(raw.hidden),
        "mlp" => Ok(ModelConfig::Mlp(MlpConfig {
            hidden: match raw.hidden {
                None => defaults::HIDDEN.to_vec(),
                Some(values) => widths("model.hidden", values)?,
            },
            activation,
            dropout,
        })),
        _cnn => cnn(raw, activation, dropout),
    }
}

/// `values`, each a positive width named `key[i]`.
fn widths(key: &str, values: Vec<i64>) -> Result<Vec<usize>> {
    values
        .iter()
        .enumerate()
        .map(|(i, &w)| positive(&format!("{key}[{i}]"), Some(w), 0))
        .collect()
}

fn lstm(hidden: Option<Vec<i64>>) -> Result<ModelConfig> {
    let hidden = match hidden {
        None => defaults::LSTM_HIDDEN.to_vec(),
        Some(values) => widths("model.hidden", values)?,
    };
    if hidden.is_empty() {
        return Err(Invalid::new(
            "model.hidden",
            "needs at least one LSTM layer",
        ));
    }
    Ok(ModelConfig::Lstm(LstmConfig { hidden }))
}

fn cnn(raw: RawModel, activation: Activation, dropout: f64) -> Result<ModelConfig> {
    let input = raw.input.ok_or_else(|| {
        Invalid::new(
            "model.input",
            "is required with model.kind = \"cnn\": [channels, height, width]",
        )
    })?;
    let input: [usize; 3] = widths("model.input", input.clone())?
        .try_into()
        .map_err(|_| {
            Invalid::new(
                "model.input",
                format_args!("must be [channels, height, width], got {input:?}"),
            )
        })?;
    let channels = widths(
        "model.channels",
        raw.channels
            .unwrap_or(defaults::CHANNELS.map(|c| c as i64).to_vec()),
    )?;
    if channels.is_empty() {
        return Err(Invalid::new("model.channels", "needs at least one block"));
    }
    let pool = positive("model.pool", raw.pool, defaults::POOL)?;
    let shrink = pool
        .checked_pow(channels.len() as u32)
        .unwrap_or(usize::MAX);
    if input[1] / shrink == 0 || input[2] / shrink == 0 {
        return Err(Invalid::new(
            "model.pool",
            format_args!(
                "= {pool} after each of {} blocks shrinks a {}x{} input to nothing",
                channels.len(),
                input[1],
                input[2]
            ),
        ));
    }
    Ok(ModelConfig::Cnn(CnnConfig {
        input,
        channels,
        kernel_size: positive("model.kernel_size", raw.kernel_size, defaults::KERNEL_SIZE)?,
        pool,
        batch_norm: raw.batch_norm.unwrap_or(defaults::BATCH_NORM),
        activation,
        dropout,
    }))
}
