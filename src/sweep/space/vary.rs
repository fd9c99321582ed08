//! The `[sweep.vary]` table flattened to dotted keys with their domains, and the trials it
//! gives.

use super::domain::range;
use super::{invalid, Domain, Method, MAX_TRIALS};
use crate::config::Invalid;

/// `[sweep.vary]` flattened to dotted keys: a table of `min`, `max` (and `log`) is a range, a
/// list is values, any other table nests keys (`train.lr = ...` is `[sweep.vary.train]`).
pub(super) fn vary(
    table: Option<&toml::Table>,
    method: Method,
) -> Result<Vec<(String, Domain)>, Invalid> {
    let Some(table) = table else {
        return Err(invalid(
            "sweep.vary",
            "must be a table of the keys to vary, e.g. train.lr = [1e-3, 1e-4]",
        ));
    };
    let mut out = Vec::new();
    flatten(table, "", method, &mut out)?;
    if out.is_empty() {
        return Err(invalid("sweep.vary", "names no key to vary"));
    }
    for (i, (key, _)) in out.iter().enumerate() {
        let at = format!("sweep.vary.{key}");
        if let Some(why) = not_a_trial_s(key) {
            return Err(invalid(&at, why));
        }
        // `"train.lr" = [...]` beside `[sweep.vary.train]`'s `lr`: one key, two lists.
        if out[..i].iter().any(|(earlier, _)| earlier == key) {
            return Err(invalid(&at, "is named twice (once as a quoted dotted key)"));
        }
    }
    Ok(out)
}

/// Why `key` cannot vary from trial to trial, where it cannot: the search sets it for each
/// trial, or it is the search's own setting.
fn not_a_trial_s(key: &str) -> Option<&'static str> {
    match key {
        "run.name" => Some("cannot vary: each trial is named by the search (trial-001, ...)"),
        "run.output_dir" => Some(
            "cannot vary: every trial runs in the search's directory; set run.output_dir outside [sweep.vary]",
        ),
        _ if key == "sweep" || key.starts_with("sweep.") => {
            Some("cannot vary: [sweep] is the search's own table, not a trial's")
        }
        _ => None,
    }
}

fn flatten(
    table: &toml::Table,
    prefix: &str,
    method: Method,
    out: &mut Vec<(String, Domain)>,
) -> Result<(), Invalid> {
    for (k, v) in table {
        let key = format!("{prefix}{k}");
        let at = format!("sweep.vary.{key}");
        match v {
            toml::Value::Array(values) if values.is_empty() => {
                return Err(invalid(&at, "an empty list gives no trials"))
            }
            toml::Value::Array(values) => out.push((key, Domain::Values(values.clone()))),
            toml::Value::Table(t) if t.contains_key("min") || t.contains_key("max") => {
                if method == Method::Grid {
                    return Err(invalid(
                        &at,
                        "a range needs method = \"random\", \"tpe\" or \"pbt\"; a grid takes a list of values",
                    ));
                }
                out.push((key, range(t).map_err(|e| invalid(&at, e))?));
            }
            toml::Value::Table(t) => flatten(t, &format!("{key}."), method, out)?,
            other => {
                return Err(invalid(
                    &at,
                    format!(
                        "must be a list of values or a range {{ min, max, log }}, got {}",
                        crate::config::quoted(other)
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// `sweep.trials`: required for random and TPE, and the number of combinations for a grid.
pub(super) fn trials(
    value: Option<i64>,
    method: Method,
    vary: &[(String, Domain)],
) -> Result<usize, Invalid> {
    let fail = |message: String| Err(invalid("sweep.trials", message));
    let too_many = |n: String| fail(format!("must be at most {MAX_TRIALS}, got {n}"));
    match (method, value) {
        (Method::Random | Method::Tpe, Some(n)) if n > MAX_TRIALS as i64 => too_many(n.to_string()),
        (Method::Random | Method::Tpe, Some(n)) if n >= 1 => Ok(n as usize),
        (Method::Random | Method::Tpe, Some(n)) => fail(format!("must be >= 1, got {n}")),
        (Method::Random, None) => fail("method = \"random\" needs trials, the number of draws".into()),
        (Method::Tpe, None) => fail("method = \"tpe\" needs trials, the number it runs".into()),
        // Its members are `[sweep.pbt] population`, read before.
        (Method::Pbt, _) => unreachable!("population based training's trials are its population"),
        (Method::Grid, None) => {
            let combinations = (vary.iter()).try_fold(1usize, |n, (_, d)| match d {
                Domain::Values(v) => n.checked_mul(v.len()).filter(|&n| n <= MAX_TRIALS),
                Domain::Range { .. } => Some(n),
            });
            let lists = || vary.iter().map(|(_, d)| match d {
                Domain::Values(v) => v.len().to_string(),
                Domain::Range { .. } => "1".into(),
            });
            match combinations {
                Some(n) => Ok(n),
                None => {
                    let product = lists().collect::<Vec<_>>().join(" x ");
                    let message = format!(
                        "the grid's lists give {product} combinations, more than the \
                         {MAX_TRIALS} a search runs; use method = \"random\" or \"tpe\""
                    );
                    Err(invalid("sweep.vary", message))
                }
            }
        }
        (Method::Grid, Some(_)) => fail(
            "a grid runs every combination of its lists; remove trials, or use method = \"random\" \
             or \"tpe\""
                .into(),
        ),
    }
}
