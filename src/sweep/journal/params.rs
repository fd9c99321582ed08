//! A trial's varied keys as Optuna's parameters: each key's domain as the distribution Optuna
//! serialises (`distribution_to_json`, embedded as a string), each value in Optuna's internal
//! form, and back.
//!
//! - a list of values is a `CategoricalDistribution`; the internal value is the index. A value
//!   Optuna cannot hold as a choice (a list such as `[256, 256]`) is its TOML text;
//! - a range is a `FloatDistribution` (`log` as written), or an `IntDistribution` where both
//!   ends are integers.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::op::Op;
use crate::sweep::space::{literal, Domain};

/// `domain` as Optuna's distribution JSON, with Python's separators.
pub fn distribution(domain: &Domain) -> String {
    let value = match domain {
        Domain::Values(values) => json!({"name": "CategoricalDistribution",
            "attributes": {"choices": values.iter().map(choice).collect::<Vec<_>>()}}),
        Domain::Range {
            min,
            max,
            log,
            int: true,
        } => json!({"name": "IntDistribution",
            "attributes": {"log": log, "step": 1, "low": *min as i64, "high": *max as i64}}),
        Domain::Range { min, max, log, .. } => json!({"name": "FloatDistribution",
            "attributes": {"step": null, "low": min, "high": max, "log": log}}),
    };
    python_separators(&value)
}

/// A choice as Optuna holds one: a string, number or boolean, else its TOML text.
fn choice(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => json!(s),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        other => json!(literal(other)),
    }
}

/// `value` in `domain`, in Optuna's internal form; `None` if the domain does not hold it.
pub fn internal(domain: &Domain, value: &toml::Value) -> Option<f64> {
    match (domain, value) {
        (Domain::Values(values), _) => values.iter().position(|v| v == value).map(|i| i as f64),
        (Domain::Range { .. }, toml::Value::Integer(i)) => Some(*i as f64),
        (Domain::Range { .. }, toml::Value::Float(f)) => Some(*f),
        _ => None,
    }
}

/// The value of `domain` whose internal form is `x`.
pub fn external(domain: &Domain, x: f64) -> Option<toml::Value> {
    match domain {
        Domain::Values(values) => values.get(x as usize).cloned(),
        Domain::Range { int: true, .. } => Some(toml::Value::Integer(x.round() as i64)),
        Domain::Range { .. } => Some(toml::Value::Float(x)),
    }
}

/// The operations that set trial `id`'s parameters: each varied key's value, with its
/// distribution (a key whose value its domain does not hold is left out).
pub fn param_ops(
    id: usize,
    vary: &[(String, Domain)],
    values: &BTreeMap<String, toml::Value>,
) -> Vec<Op> {
    (vary.iter())
        .filter_map(|(key, domain)| {
            Some(Op::Param {
                trial: id,
                name: key.clone(),
                internal: internal(domain, values.get(key)?)?,
                distribution: distribution(domain),
            })
        })
        .collect()
}

/// A trial's values from its parameters (`None` if one is missing or out of its domain).
pub fn values_of(
    vary: &[(String, Domain)],
    params: &BTreeMap<String, (f64, String)>,
) -> Option<BTreeMap<String, toml::Value>> {
    (vary.iter())
        .map(|(key, domain)| Some((key.clone(), external(domain, params.get(key)?.0)?)))
        .collect()
}

/// A parameter as a row shows it, from its internal value and distribution alone (a report
/// needs no config): a choice as its TOML text, a number as written.
pub fn display(x: f64, distribution: &str) -> String {
    let parsed: Value = serde_json::from_str(distribution).unwrap_or_default();
    let choice = &parsed["attributes"]["choices"][x as usize];
    match (parsed["name"].as_str(), choice) {
        (Some("CategoricalDistribution"), Value::String(s)) if s.starts_with('[') => s.clone(),
        (Some("CategoricalDistribution"), Value::String(s)) => format!("{s:?}"),
        (Some("CategoricalDistribution"), other) => other.to_string(),
        (Some("IntDistribution"), _) => format!("{}", x.round() as i64),
        _ => format!("{x}"),
    }
}

/// A trial's value of a parameter (`x` in Optuna's internal representation, under
/// `distribution`), typed as the search's plan holds it.
pub fn typed(x: f64, distribution: &str) -> toml::Value {
    let text = display(x, distribution);
    (format!("x = {text}").parse::<toml::Table>())
        .ok()
        .and_then(|mut t| t.remove("x"))
        .unwrap_or(toml::Value::String(text))
}

/// Compact JSON with Python's default separators (`", "` and `": "`), outside strings.
fn python_separators(value: &Value) -> String {
    let text = serde_json::to_string(value).expect("a JSON value serialises");
    let mut out = String::with_capacity(text.len() + 16);
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        out.push(c);
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if c == ',' || c == ':' {
            out.push(' ');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_optunas_distributions() {
        let log = Domain::Range {
            min: 0.001,
            max: 1.0,
            log: true,
            int: false,
        };
        // serde_json orders the keys; Optuna reads them by name.
        assert_eq!(
            distribution(&log),
            r#"{"attributes": {"high": 1.0, "log": true, "low": 0.001, "step": null}, "name": "FloatDistribution"}"#
        );
        let width = Domain::Range {
            min: 1.0,
            max: 10.0,
            log: false,
            int: true,
        };
        assert_eq!(
            distribution(&width),
            r#"{"attributes": {"high": 10, "log": false, "low": 1, "step": 1}, "name": "IntDistribution"}"#
        );
        let hidden: toml::Value = toml::Value::Array(vec![256.into(), 256.into()]);
        let list = Domain::Values(vec!["a:b".into(), hidden.clone(), 3.into()]);
        assert_eq!(
            distribution(&list),
            r#"{"attributes": {"choices": ["a:b", "[256, 256]", 3]}, "name": "CategoricalDistribution"}"#
        );
        assert_eq!(internal(&list, &hidden), Some(1.0));
        assert_eq!(external(&list, 1.0), Some(hidden));
        assert_eq!(external(&width, 4.0), Some(toml::Value::Integer(4)));
        assert_eq!(internal(&log, &toml::Value::Float(0.01)), Some(0.01));
    }
}
