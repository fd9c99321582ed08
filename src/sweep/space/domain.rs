//! One varied key's domain: a range read from its `{ min, max, log }` table, and a draw from it.

use rand::rngs::StdRng;
use rand::Rng;

use super::Domain;

/// One draw from `domain`.
pub(super) fn draw(domain: &Domain, rng: &mut StdRng) -> toml::Value {
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

/// A `{ min, max, log }` table as a range; the error says what is wrong, without the key.
pub(super) fn range(t: &toml::Table) -> Result<Domain, String> {
    if let Some(unknown) = t
        .keys()
        .find(|k| !["min", "max", "log"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown key {unknown} in a range (expected min, max, log)"
        ));
    }
    let end = |name: &str| match t.get(name) {
        Some(toml::Value::Integer(i)) => Ok((*i as f64, true)),
        Some(toml::Value::Float(f)) if f.is_finite() => Ok((*f, false)),
        Some(other) => Err(format!("{name} must be a number, got {other}")),
        None => Err(format!("a range needs {name}")),
    };
    let ((min, int_min), (max, int_max)) = (end("min")?, end("max")?);
    let log = match t.get("log") {
        None => false,
        Some(toml::Value::Boolean(b)) => *b,
        Some(other) => return Err(format!("log must be true or false, got {other}")),
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
    /// its max, a log range above 0. The error says what is wrong, without the key.
    pub fn check(&self) -> Result<(), String> {
        match *self {
            Domain::Values(ref values) if values.is_empty() => {
                Err("an empty list of values".into())
            }
            Domain::Range { min, max, .. } if min >= max => {
                Err(format!("min ({min}) must be below max ({max})"))
            }
            Domain::Range { min, log: true, .. } if min <= 0.0 => {
                Err(format!("a log range needs min > 0, got {min}"))
            }
            _ => Ok(()),
        }
    }
}
