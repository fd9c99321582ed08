//! One varied key's domain: a range read from its `{ min, max, log }` table, and a draw from it.

use rand::rngs::StdRng;
use rand::Rng;

use super::Domain;
use crate::config::Number;

/// One draw from `domain`.
pub(in crate::sweep) fn draw(domain: &Domain, rng: &mut StdRng) -> toml::Value {
    match domain {
        Domain::Values(values) => values[rng.random_range(0..values.len())].clone(),
        Domain::Range { min, max, log, int } => {
            let u: f64 = rng.random();
            let x = match log {
                true => (min.ln() + u * (max.ln() - min.ln())).exp(),
                false => min + u * (max - min),
            };
            match int {
                true => toml::Value::Integer(x.round().clamp(*min, *max) as i64),
                false => toml::Value::Float(x),
            }
        }
    }
}

/// What is wrong with a varied key's domain (said without the key, which its caller names).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DomainError {
    /// A key a range table does not take.
    #[error("unknown key {0} in a range (expected min, max, log)")]
    UnknownKey(String),
    /// An end of a range that is not a number.
    #[error("{end} must be a number, got {got}")]
    NotANumber {
        /// `min` or `max`.
        end: &'static str,
        /// The value written.
        got: String,
    },
    /// An end of a range left out.
    #[error("a range needs {0}")]
    Missing(&'static str),
    /// `log` that is not a boolean.
    #[error("log must be true or false, got {0}")]
    LogNotBool(String),
    /// A list of no values.
    #[error("an empty list of values")]
    Empty,
    /// A range whose min is not below its max.
    #[error("min ({}) must be below max ({})", Number(*.min), Number(*.max))]
    Reversed {
        /// The range's min.
        min: f64,
        /// The range's max.
        max: f64,
    },
    /// A log range that reaches 0 or below.
    #[error("a log range needs min > 0, got {}", Number(*.0))]
    LogAtZero(f64),
}

/// A `{ min, max, log }` table as a range.
pub(super) fn range(t: &toml::Table) -> Result<Domain, DomainError> {
    if let Some(unknown) = t
        .keys()
        .find(|k| !["min", "max", "log"].contains(&k.as_str()))
    {
        return Err(DomainError::UnknownKey(crate::config::clipped(unknown, 80)));
    }
    let end = |end: &'static str| match t.get(end) {
        Some(toml::Value::Integer(i)) => Ok((*i as f64, true)),
        Some(toml::Value::Float(f)) if f.is_finite() => Ok((*f, false)),
        Some(other) => Err(DomainError::NotANumber {
            end,
            got: crate::config::quoted(other),
        }),
        None => Err(DomainError::Missing(end)),
    };
    let ((min, int_min), (max, int_max)) = (end("min")?, end("max")?);
    let log = match t.get("log") {
        None => false,
        Some(toml::Value::Boolean(b)) => *b,
        Some(other) => return Err(DomainError::LogNotBool(crate::config::quoted(other))),
    };
    let domain = Domain::Range {
        min,
        max,
        log,
        int: int_min && int_max,
    };
    domain.check()?;
    Ok(domain)
}

impl Domain {
    /// What a draw from the domain needs: a list that is not empty, a range whose min is below
    /// its max, a log range above 0.
    pub fn check(&self) -> Result<(), DomainError> {
        match *self {
            Domain::Values(ref values) if values.is_empty() => Err(DomainError::Empty),
            Domain::Range { min, max, .. } if min >= max => Err(DomainError::Reversed { min, max }),
            Domain::Range { min, log: true, .. } if min <= 0.0 => Err(DomainError::LogAtZero(min)),
            _ => Ok(()),
        }
    }
}
