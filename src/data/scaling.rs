//! Standardisation with the training split's statistics: fitted once on the training samples,
//! applied to both splits, and to any file a finished run scores or predicts on.

use super::{moments, Row, Sample};

/// Each feature's training mean and the factor that scales its deviation to unit variance
/// (1 for a constant feature, which is only centred): classification samples.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureScaling {
    mean: Vec<f64>,
    factor: Vec<f64>,
}

impl FeatureScaling {
    /// The statistics of `train`'s `features` features.
    pub fn fit(train: &[Sample], features: usize) -> Self {
        let n = train.len() as f64;
        let mut mean = vec![0.0f64; features];
        for s in train {
            for (m, &x) in mean.iter_mut().zip(&s.features) {
                *m += f64::from(x) / n;
            }
        }
        let mut var = vec![0.0f64; features];
        for s in train {
            for ((v, &x), m) in var.iter_mut().zip(&s.features).zip(&mean) {
                *v += (f64::from(x) - m).powi(2) / n;
            }
        }
        let factor = var
            .iter()
            .map(|v| if *v > 0.0 { 1.0 / v.sqrt() } else { 1.0 })
            .collect();
        Self { mean, factor }
    }

    /// Scales `features` in place.
    pub fn apply(&self, features: &mut [f32]) {
        for ((x, m), k) in features.iter_mut().zip(&self.mean).zip(&self.factor) {
            *x = ((f64::from(*x) - m) * k) as f32;
        }
    }
}

/// Each feature's and the target's training mean and standard deviation: regression rows.
#[derive(Debug, Clone, PartialEq)]
pub struct RowScaling {
    features: Vec<(f64, f64)>,
    /// The target's mean and standard deviation: a scaled target times the deviation plus the
    /// mean is back in the data's units.
    pub target: (f64, f64),
}

impl RowScaling {
    /// The statistics of `train`'s `features` features and first target.
    pub fn fit(train: &[Row], features: usize) -> Self {
        let features = (0..features)
            .map(|j| moments(train.iter().map(|r| f64::from(r.features[j]))))
            .collect();
        let target = moments(train.iter().map(|r| f64::from(r.targets[0])));
        Self { features, target }
    }

    /// Scales `row`'s features, and its first target if it has one, in place.
    pub fn apply(&self, row: &mut Row) {
        for (x, (mean, std)) in row.features.iter_mut().zip(&self.features) {
            *x = ((f64::from(*x) - mean) / std) as f32;
        }
        if let Some(t) = row.targets.first_mut() {
            *t = ((f64::from(*t) - self.target.0) / self.target.1) as f32;
        }
    }
}
