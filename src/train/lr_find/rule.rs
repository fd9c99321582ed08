//! Lightning's learning-rate finder (`Tuner.lr_find`), as numbers: the rate of each of its
//! steps (exponential from `min_lr` to `max_lr` over `num_training` steps), the loss smoothed
//! as Lightning smooths it, the stop once the smoothed loss passes `early_stop_threshold`
//! times the best, and the suggestion: the steepest descent of the smoothed loss against the
//! rate on its log axis (`torch.gradient` with `log10` of the rates as spacing, as Lightning's
//! current finder; on the exponential sweep the same point as its earlier gradient by index),
//! skipping the first `skip_begin` points and the last `skip_end`. No device: the finder feeds it each step's loss.

use serde::{Deserialize, Serialize};

use crate::config::LrRange;

/// The finder's settings, Lightning's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The rates: exponential from `min_lr` to `max_lr` over `num_training` steps.
    pub range: LrRange,
    /// The smoothing of the loss.
    pub beta: f64,
    /// The stop: the smoothed loss above this many times the best.
    pub early_stop_threshold: f64,
    /// Points skipped at the start for the suggestion.
    pub skip_begin: usize,
    /// Points skipped at the end for the suggestion.
    pub skip_end: usize,
}

impl Default for Sweep {
    fn default() -> Self {
        Sweep {
            range: LrRange {
                min_lr: 1e-8,
                max_lr: 1.0,
                steps: 100,
            },
            beta: 0.98,
            early_stop_threshold: 4.0,
            skip_begin: 10,
            skip_end: 1,
        }
    }
}

/// One step of the finder.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The step's rate.
    pub lr: f64,
    /// Its loss.
    pub loss: f64,
    /// The loss smoothed up to it.
    pub smoothed: f64,
}

/// The finder's curve as it grows.
#[derive(Debug, Clone, Default)]
pub struct Curve {
    /// The steps so far.
    pub points: Vec<Point>,
    avg: f64,
    best: f64,
}

impl Curve {
    /// Adds the step at rate `lr` with loss `loss`; whether the finder goes on (not past
    /// `early_stop_threshold` times the best smoothed loss, nor at `num_training` steps).
    pub fn push(&mut self, sweep: &Sweep, lr: f64, loss: f64) -> bool {
        // The bias correction of an average started at 0, from the first step (fastai's, and
        // Lightning 1's; Lightning 2 divides by 1 - beta^(step + 1), one step off since its
        // global step moved, which pulls its first points down toward 0).
        let step = self.points.len() + 1;
        self.avg = sweep.beta * self.avg + (1.0 - sweep.beta) * loss;
        let smoothed = self.avg / (1.0 - sweep.beta.powi(step as i32));
        let diverged = step > 1 && smoothed > sweep.early_stop_threshold * self.best;
        if step == 1 || smoothed < self.best {
            self.best = smoothed;
        }
        self.points.push(Point { lr, loss, smoothed });
        !diverged && !smoothed.is_nan() && self.points.len() < sweep.range.steps
    }
}

/// The suggested rate: the point of steepest descent (`None` with fewer than 2 finite points
/// between the skipped ones), its index among `points`.
pub fn suggestion(points: &[Point], sweep: &Sweep) -> Option<usize> {
    let end = points.len().checked_sub(sweep.skip_end)?;
    let kept: Vec<usize> = (sweep.skip_begin..end)
        .filter(|&i| points[i].smoothed.is_finite())
        .collect();
    if kept.len() < 2 {
        return None;
    }
    let x: Vec<f64> = kept.iter().map(|&i| points[i].lr.log10()).collect();
    let y: Vec<f64> = kept.iter().map(|&i| points[i].smoothed).collect();
    let slopes = gradient(&y, &x);
    let steepest = (0..slopes.len()).min_by(|&a, &b| slopes[a].total_cmp(&slopes[b]))?;
    Some(kept[steepest])
}

/// `torch.gradient(y, spacing=[x])` (edge order 1): one-sided at the ends, and inside the
/// second-order difference for uneven spacing.
fn gradient(y: &[f64], x: &[f64]) -> Vec<f64> {
    let n = y.len();
    (0..n)
        .map(|i| match i {
            0 => (y[1] - y[0]) / (x[1] - x[0]),
            i if i == n - 1 => (y[i] - y[i - 1]) / (x[i] - x[i - 1]),
            i => {
                let (hl, hr) = (x[i] - x[i - 1], x[i + 1] - x[i]);
                (hl * hl * y[i + 1] - hr * hr * y[i - 1] + (hr * hr - hl * hl) * y[i])
                    / (hl * hr * (hl + hr))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rates_span_min_to_max_exponentially() {
        let sweep = Sweep::default();
        assert_eq!(sweep.range.rate(0), 1e-8);
        assert!((sweep.range.rate(99) - 1.0).abs() < 1e-12);
        let ratio = sweep.range.rate(51) / sweep.range.rate(50);
        assert!((ratio - 1e8f64.powf(1.0 / 99.0)).abs() < 1e-9);
    }

    #[test]
    fn the_loss_is_smoothed_and_the_finder_stops_past_four_times_the_best() {
        let sweep = Sweep::default();
        let mut curve = Curve::default();
        assert!(curve.push(&sweep, 1e-8, 2.0));
        // Bias-corrected, the first smoothed value is the first loss itself; the second
        // (0.98 * 0.04 + 0.02 * 0.5) / (1 - 0.98^2).
        assert!((curve.points[0].smoothed - 2.0).abs() < 1e-12);
        for _ in 0..5 {
            assert!(curve.push(&sweep, 1e-7, 0.5));
        }
        let second = (0.98 * 0.04 + 0.02 * 0.5) / (1.0 - 0.98f64.powi(2));
        assert!((curve.points[1].smoothed - second).abs() < 1e-12);
        let best = curve
            .points
            .iter()
            .map(|p| p.smoothed)
            .fold(f64::MAX, f64::min);
        let mut going = true;
        while going {
            going = curve.push(&sweep, 1e-6, 100.0);
        }
        assert!(curve.points.last().unwrap().smoothed > 4.0 * best);
        let before = &curve.points[curve.points.len() - 2];
        assert!(before.smoothed <= 4.0 * best);
    }

    #[test]
    fn the_suggestion_is_the_steepest_descent_between_the_skipped_points() {
        let sweep = Sweep {
            range: LrRange {
                steps: 30,
                ..Sweep::default().range
            },
            ..Sweep::default()
        };
        // A loss that falls fastest (against the rate) at point 20, then rises.
        let points: Vec<Point> = (0..30)
            .map(|i| {
                let lr = sweep.range.rate(i);
                let smoothed = match i {
                    i if i < 20 => 1.0 - 0.01 * i as f64,
                    20 => 0.2,
                    i => 0.2 + 0.1 * (i - 20) as f64,
                };
                Point {
                    lr,
                    loss: smoothed,
                    smoothed,
                }
            })
            .collect();
        let best = suggestion(&points, &sweep).unwrap();
        assert!(best == 19 || best == 20, "{best}");
        // Fewer than two points between the skipped ones: none.
        assert_eq!(suggestion(&points[..12], &sweep), None);
    }

    #[test]
    fn the_gradient_is_torch_s_on_uneven_spacing() {
        // y = x^2 on uneven points: the second-order formula is exact inside.
        let x = [0.0, 1.0, 3.0, 4.0];
        let y: Vec<f64> = x.iter().map(|v| v * v).collect();
        let g = gradient(&y, &x);
        assert_eq!(g[0], 1.0);
        assert!((g[1] - 2.0).abs() < 1e-12 && (g[2] - 6.0).abs() < 1e-12);
        assert_eq!(g[3], 7.0);
    }
}
