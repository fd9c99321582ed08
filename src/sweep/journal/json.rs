//! JSON as Python's `json` writes it for Optuna's journal: compact lines in which a non-finite
//! float is the bare token `NaN`, `Infinity` or `-Infinity` (an intermediate value of a diverged
//! epoch, say), which serde_json neither writes nor reads. Such a float travels through a
//! [`Value`] as a string holding [`NON_FINITE`] and its token, and [`line`] and [`parse`]
//! convert at the edges.

use serde_json::Value;

/// The mark of a non-finite float inside a [`Value`]: this character, then the token.
const NON_FINITE: char = '\u{1}';

/// `x` as a JSON value: a number, or the marked token of a non-finite float.
pub fn float(x: f64) -> Value {
    match serde_json::Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None => {
            let token = match x {
                x if x.is_nan() => "NaN",
                x if x > 0.0 => "Infinity",
                _ => "-Infinity",
            };
            Value::String(format!("{NON_FINITE}{token}"))
        }
    }
}

/// A float of a parsed line: a number, or a non-finite token.
pub fn as_float(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.strip_prefix(NON_FINITE)? {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// `value` as one compact line (no newline), with non-finite floats as Python writes them.
pub fn line(value: &Value) -> String {
    let text = serde_json::to_string(value).expect("a JSON value serialises");
    // serde_json writes the mark as the escape \u0001, which no other text of a line holds.
    let marked = format!("\"\\u{:04x}", NON_FINITE as u32);
    ["NaN", "Infinity", "-Infinity"]
        .iter()
        .fold(text, |text, token| {
            text.replace(&format!("{marked}{token}\""), token)
        })
}

/// One line of a journal, which may hold bare `NaN`, `Infinity` and `-Infinity`.
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(&mark_tokens(text))
}

/// `text` with each non-finite token outside a string replaced by its marked string.
fn mark_tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if let Some(token) = ["NaN", "Infinity", "-Infinity"]
            .into_iter()
            .find(|t| rest.starts_with(t))
        {
            out.push_str(&format!("\"\\u{:04x}{token}\"", NON_FINITE as u32));
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_floats_are_python_tokens_both_ways() {
        let value = serde_json::json!({"a": float(f64::NAN), "b": [float(f64::INFINITY),
            float(f64::NEG_INFINITY), float(0.5)], "s": "NaN \"Infinity\""});
        let text = line(&value);
        assert_eq!(
            text,
            r#"{"a":NaN,"b":[Infinity,-Infinity,0.5],"s":"NaN \"Infinity\""}"#
        );
        let back = parse(&text).unwrap();
        assert!(as_float(&back["a"]).unwrap().is_nan());
        assert_eq!(as_float(&back["b"][0]), Some(f64::INFINITY));
        assert_eq!(as_float(&back["b"][1]), Some(f64::NEG_INFINITY));
        assert_eq!(as_float(&back["b"][2]), Some(0.5));
        assert_eq!(back["s"], "NaN \"Infinity\"");
    }
}
