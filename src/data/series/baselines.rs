//! The baselines a forecast must beat, scored on the held-out windows.

use super::windows::Window;

/// Errors of a forecast on the held-out windows, in the series' own units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Errors {
    /// Mean absolute error (NaN when `n` is 0).
    pub mae: f64,
    /// Root mean squared error (NaN when `n` is 0).
    pub rmse: f64,
    /// How many (window, target) pairs were scored.
    pub n: usize,
}

/// Scores every target of every window that `predict(window, target number)` forecasts.
fn score_with(valid: &[Window], predict: impl Fn(&Window, usize) -> Option<f64>) -> Errors {
    let (mut abs, mut squared, mut n) = (0.0, 0.0, 0);
    for w in valid {
        for (j, &target) in w.targets.iter().enumerate() {
            if let Some(p) = predict(w, j) {
                let e = p - f64::from(target);
                abs += e.abs();
                squared += e * e;
                n += 1;
            }
        }
    }
    Errors {
        mae: abs / n as f64,
        rmse: (squared / n as f64).sqrt(),
        n,
    }
}

/// The seasonal-naive forecast of target `j` of a window whose first target is at `index`.
fn seasonal_source(values: &[Option<f32>], index: usize, j: usize, season: usize) -> Option<f64> {
    // Whole seasons back until before the first target, so that a horizon longer than a season
    // never forecasts from its own targets.
    let back = season.checked_mul(j.checked_div(season)? + 1)?;
    values
        .get(index.checked_add(j)?.checked_sub(back)?)
        .copied()
        .flatten()
        .map(f64::from)
}

/// Seasonal naive: predicts the value whole seasons before each target (values[i - season] for
/// the first `season` targets of a window), from the series the windows were cut from.
///
/// A target whose seasonal predecessor is missing, or lies before the series (or `season` is 0),
/// is skipped and `n` counts what was scored. With `data.gaps = "interpolate"` or
/// `"previous"` nothing is missing, so this, [`linear_trend`] and the model score the same
/// targets; with `"skip"` this baseline may score fewer of them than the model.
pub fn seasonal_naive(values: &[Option<f32>], valid: &[Window], season: usize) -> Errors {
    score_with(valid, |w, j| seasonal_source(values, w.index, j, season))
}

/// Linear trend: least squares fit value = a + b * index on the present points before `split`, extrapolated.
///
/// Scores nothing (`n` = 0) when fewer than 2 points are present before `split`.
pub fn linear_trend(values: &[Option<f32>], valid: &[Window], split: usize) -> Errors {
    let points: Vec<(f64, f64)> = values
        .iter()
        .take(split)
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i as f64, f64::from(v))))
        .collect();
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    let fit = (points.len() >= 2).then_some((my - b * mx, b));
    score_with(valid, |w, j| {
        fit.map(|(a, b)| a + b * (w.index as f64 + j as f64))
    })
}
