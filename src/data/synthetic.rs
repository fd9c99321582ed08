//! Synthetic classification: each class has a random centre on the unit-variance Gaussian,
//! and samples are centre + `noise` x Gaussian noise. With noise around 1 and tens of
//! features the classes overlap enough that accuracy climbs over several epochs instead of
//! jumping to 100% at once.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::Sample;
use crate::config::SyntheticConfig;

/// Generates the samples described by `config`, deterministically from its seed.
pub fn generate(config: &SyntheticConfig) -> Vec<Sample> {
    let mut rng = StdRng::seed_from_u64(config.seed);
    let centres: Vec<Vec<f32>> = (0..config.classes)
        .map(|_| (0..config.features).map(|_| gaussian(&mut rng)).collect())
        .collect();
    let noise = config.noise as f32;
    (0..config.samples)
        .map(|i| {
            let label = i % config.classes;
            let features = centres[label]
                .iter()
                .map(|c| c + noise * gaussian(&mut rng))
                .collect();
            Sample { features, label }
        })
        .collect()
}

/// A standard normal draw (Box-Muller).
fn gaussian(rng: &mut impl Rng) -> f32 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(seed: u64) -> SyntheticConfig {
        SyntheticConfig {
            samples: 300,
            features: 8,
            classes: 3,
            seed,
            noise: 0.5,
        }
    }

    #[test]
    fn same_seed_same_data_and_balanced_classes() {
        let a = generate(&config(1));
        assert_eq!(a, generate(&config(1)));
        assert_ne!(a, generate(&config(2)));
        assert_eq!(a.len(), 300);
        for class in 0..3 {
            assert_eq!(a.iter().filter(|s| s.label == class).count(), 100);
        }
        assert!(a
            .iter()
            .all(|s| s.features.len() == 8 && s.features.iter().all(|f| f.is_finite())));
    }

    #[test]
    fn classes_are_separable_by_nearest_centre() {
        // Learnable: the class mean is a better predictor than chance by a wide margin.
        let data = generate(&config(3));
        let means: Vec<Vec<f32>> = (0..3)
            .map(|c| {
                let members: Vec<&Sample> = data.iter().filter(|s| s.label == c).collect();
                (0..8)
                    .map(|j| {
                        members.iter().map(|s| s.features[j]).sum::<f32>() / members.len() as f32
                    })
                    .collect()
            })
            .collect();
        let correct = data
            .iter()
            .filter(|s| {
                let dist = |m: &Vec<f32>| {
                    m.iter()
                        .zip(&s.features)
                        .map(|(a, b)| (a - b).powi(2))
                        .sum::<f32>()
                };
                (0..3).min_by(|&a, &b| dist(&means[a]).total_cmp(&dist(&means[b]))) == Some(s.label)
            })
            .count();
        assert!(correct > 250, "nearest-centre accuracy {correct}/300");
    }
}
