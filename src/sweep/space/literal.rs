//! A trial's values as text: as TOML writes them inline (exact, for configs and the best
//! trial's line), and rounded for reading (tables and the terminal).

/// A value as TOML writes it inline.
pub fn literal(value: &toml::Value) -> String {
    match value {
        toml::Value::Float(f) => format!("{f}"),
        other => other.to_string(),
    }
}

/// A number's value, an integer or a float (a rate, a width); `None` for any other value.
pub fn number(value: &toml::Value) -> Option<f64> {
    match value {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// `value` for reading: floats (in arrays too) to `digits` significant digits, `0.00409` or
/// `1.38e-4`; the rest as [`literal`] writes it.
pub fn rounded(value: &toml::Value, digits: usize) -> String {
    match value {
        toml::Value::Float(f) => significant(*f, digits),
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| rounded(v, digits)).collect();
            format!("[{}]", items.join(", "))
        }
        other => literal(other),
    }
}

/// `f` to `digits` significant digits: plain from 0.001 to 99999, else in scientific notation;
/// without trailing zeros.
fn significant(f: f64, digits: usize) -> String {
    if f == 0.0 || !f.is_finite() {
        return format!("{f}");
    }
    let digits = digits.max(1);
    let exponent = f.abs().log10().floor() as i32;
    let trim = |s: String| match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    };
    if (-3..5).contains(&exponent) {
        let decimals = (digits as i32 - 1 - exponent).max(0) as usize;
        return trim(format!("{f:.decimals$}"));
    }
    let text = format!("{f:.*e}", digits - 1);
    let (mantissa, exp) = text.split_once('e').expect("scientific notation");
    format!("{}e{exp}", trim(mantissa.to_string()))
}
