//! Supervised windows over a series, split at the held-out end.

use super::SeriesError;

/// One supervised example: past values in, the next `horizon` values out.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// The `window` values before the first target.
    pub inputs: Vec<f32>,
    /// The `horizon` values to forecast.
    pub targets: Vec<f32>,
    /// Index of the first target in the series.
    pub index: usize,
}

/// Training and validation windows of a series whose last `holdout` points are held out.
#[derive(Debug, Clone, PartialEq)]
pub struct Windows {
    /// Windows whose targets all lie before `split`.
    pub train: Vec<Window>,
    /// Windows whose targets all lie at or after `split`.
    pub valid: Vec<Window>,
    /// Index of the first held-out point (`len - holdout`).
    pub split: usize,
}

/// Cuts `values` into windows of `window` inputs and `horizon` targets, holding out the last `holdout` points.
///
/// For every t, inputs = values[t-window .. t] and targets = values[t .. t+horizon]. A window
/// that touches a `None` is dropped, and so is one whose targets straddle the split. Validation
/// windows' inputs may reach back into the training part: that is the past.
pub fn windows(
    values: &[Option<f32>],
    window: usize,
    horizon: usize,
    holdout: usize,
) -> Result<Windows, SeriesError> {
    let n = values.len();
    let unusable = |message: String| Err(SeriesError::Unusable(message));
    if window == 0 || horizon == 0 || holdout == 0 {
        return unusable(format!(
            "data.window ({window}), data.horizon ({horizon}) and the holdout ({holdout}) must \
             each be at least 1"
        ));
    }
    if holdout >= n {
        return unusable(format!(
            "a holdout of {holdout} points leaves nothing to train on in a series of {n}; lower \
             data.holdout (or data.validation_fraction)"
        ));
    }
    let split = n - holdout;
    let need = window.saturating_add(horizon);
    if split < need {
        return unusable(format!(
            "{split} training points ({n} minus a holdout of {holdout}) are too few for one window \
             of {window} inputs and {horizon} target(s), which needs {need}; lower data.window, \
             data.horizon or data.holdout"
        ));
    }
    if holdout < horizon {
        return unusable(format!(
            "a holdout of {holdout} points is too short for one validation window of \
             data.horizon = {horizon}"
        ));
    }
    let mut out = Windows {
        train: Vec::new(),
        valid: Vec::new(),
        split,
    };
    for t in window..=n - horizon {
        let part = if t + horizon <= split {
            &mut out.train
        } else if t >= split {
            &mut out.valid
        } else {
            // Its targets straddle the split: training on it would fit held-out points, and
            // scoring it would score training points.
            continue;
        };
        // In bounds: the checks above make window <= t and t + horizon <= n.
        let inputs: Option<Vec<f32>> = values[t - window..t].iter().copied().collect();
        let targets: Option<Vec<f32>> = values[t..t + horizon].iter().copied().collect();
        if let (Some(inputs), Some(targets)) = (inputs, targets) {
            part.push(Window {
                inputs,
                targets,
                index: t,
            });
        }
    }
    let counts = [
        ("training", out.train.len(), split + 1 - need),
        ("validation", out.valid.len(), n + 1 - horizon - split),
    ];
    for (part, kept, candidates) in counts {
        if kept == 0 {
            return unusable(format!(
                "all {candidates} {part} windows touch a missing value; \
                 set data.gaps = \"interpolate\" or \"previous\""
            ));
        }
    }
    Ok(out)
}
