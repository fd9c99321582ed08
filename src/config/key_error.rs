//! What a wrong key's error says: serde's wording rewritten to name the key, an unknown key
//! with the key it is a typo of and, on the line after, the keys its table takes.

/// Of `candidates`, the one `word` is a typo of: at most a third of its letters (and at least
/// one) away by edit distance, the nearest first.
fn closest<'a>(word: &str, candidates: &'a [String]) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), c.as_str()))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The edit distance between `a` and `b`, by characters, where swapping two neighbours is one
/// edit (`trian` is one from `train`).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Rewrites serde's wording into one that names the key.
pub(crate) fn describe_key_error(key: &str, inner: &str) -> String {
    let inner = inner.lines().next().unwrap_or(inner).trim();
    if let Some(rest) = inner.strip_prefix("unknown field `") {
        let field = rest.split('`').next().unwrap_or(rest);
        // serde's "expected `a`", "expected `a` or `b`", "expected one of `a`, `b`, `c`".
        let expected: Vec<String> = rest
            .split_once(", expected ")
            .map(|(_, e)| {
                e.split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let section = key.rsplit_once('.').map(|(s, _)| s);
        let full = |field: &str| match section {
            Some(s) => format!("{s}.{field}"),
            None => field.to_string(),
        };
        // The key meant, where one is a typo away; the whole list on the line after.
        let meant = closest(field, &expected)
            .map(|k| format!(" (did you mean {}?)", full(k)))
            .unwrap_or_default();
        let list = match expected.as_slice() {
            [] => String::new(),
            [one] => format!("\n  expected {one}"),
            [a, b] => format!("\n  expected {a} or {b}"),
            all => format!("\n  expected one of {}", all.join(", ")),
        };
        return format!("unknown key {}{meant}{list}", full(field));
    }
    // An enum's unknown name, as the config words a choice: `must be one of "a", "b", got "c"`.
    if let Some(rest) = inner.strip_prefix("unknown variant `") {
        let (value, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let names: Vec<String> = (expected.split('`').skip(1).step_by(2))
            .map(|n| format!("\"{n}\""))
            .collect();
        return format!("{key} must be one of {}, got \"{value}\"", names.join(", "));
    }
    // A number or a boolean where an enum's name goes: the TOML reader says only "unit
    // variant", which is its own word, not the config's.
    if inner.starts_with("invalid type: unit variant") {
        return format!("{key}: invalid type, expected a string (a name, in quotes)");
    }
    // A negative count for a size: as the config words it.
    if let Some(rest) = inner.strip_prefix("invalid value: integer `") {
        if let Some((value, "expected usize" | "expected u64")) = rest
            .split_once("`, ")
            .map(|(v, e)| (v, e.trim_end_matches('.')))
        {
            return format!("{key} must be >= 0, got {value}");
        }
    }
    // A check inside a deserializer (a size above 0) words its message as the config's own.
    if inner.starts_with("must be ") {
        return format!("{key} {inner}");
    }
    let inner = super::error::clipped_quotes(inner, 40)
        .replace("expected i64", "expected an integer")
        .replace("expected u64", "expected an integer >= 0")
        .replace("expected usize", "expected an integer >= 0")
        .replace("expected f64", "expected a number")
        .replace("expected path string", "expected a string (a path)")
        .replace("expected a map", "expected a table");
    format!("{key}: {inner}")
}
