use super::*;

fn samples(n: usize) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            features: vec![i as f32],
            label: i % 2,
        })
        .collect()
}

#[test]
fn split_is_seeded_and_disjoint() {
    for stratify in [false, true] {
        let a = split(samples(100), 1, 2, 0.2, 3, stratify).unwrap();
        let b = split(samples(100), 1, 2, 0.2, 3, stratify).unwrap();
        assert_eq!((a.train.len(), a.valid.len()), (80, 20));
        assert_eq!(a.valid, b.valid);
        assert_ne!(
            a.valid,
            split(samples(100), 1, 2, 0.2, 4, stratify).unwrap().valid
        );
        let mut all: Vec<i64> = a
            .train
            .iter()
            .chain(&a.valid)
            .map(|s| s.features[0] as i64)
            .collect();
        all.sort();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
    }
}

/// Samples whose label is the class given by `counts`, feature = index.
fn classes(counts: &[usize]) -> Vec<Sample> {
    counts
        .iter()
        .enumerate()
        .flat_map(|(label, &n)| std::iter::repeat_n(label, n))
        .enumerate()
        .map(|(i, label)| Sample {
            features: vec![i as f32],
            label,
        })
        .collect()
}

fn per_class(samples: &[Sample], classes: usize) -> Vec<usize> {
    let mut counts = vec![0; classes];
    for s in samples {
        counts[s.label] += 1;
    }
    counts
}

#[test]
fn stratified_split_keeps_every_class_share() {
    // 90/10 imbalance, 20% held out: 18 and 2, whatever the seed.
    for seed in 0..20 {
        let d = split(classes(&[90, 10]), 1, 2, 0.2, seed, true).unwrap();
        assert_eq!(per_class(&d.valid, 2), vec![18, 2], "seed {seed}");
        assert_eq!(per_class(&d.train, 2), vec![72, 8], "seed {seed}");
    }
    // A plain shuffle gets the rare class's share wrong for some seed.
    assert!((0..20).any(|seed| {
        let d = split(classes(&[90, 10]), 1, 2, 0.2, seed, false).unwrap();
        per_class(&d.valid, 2) != vec![18, 2]
    }));
}

#[test]
fn shipped_digits_split_holds_out_a_fifth_of_every_class() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/digits-mlp.toml");
    let config = crate::config::load(std::path::Path::new(path), &[]).unwrap();
    let mut data = config.data.clone();
    data.standardize = Some(false);
    let d = load(&data, 42).unwrap();
    let (valid, train) = (per_class(&d.valid, 10), per_class(&d.train, 10));
    for class in 0..10 {
        let share = (valid[class] + train[class]) as f64 * 0.2;
        assert!(
            (valid[class] as f64 - share).abs() < 1.0,
            "class {class}: {} held out of {}",
            valid[class],
            valid[class] + train[class]
        );
    }
    assert_eq!(d.valid.len(), 359);
    // The plain seeded shuffle, for comparison (shown with `-- --nocapture`).
    data.stratify = Some(false);
    let plain = per_class(&load(&data, 42).unwrap().valid, 10);
    let range = |v: &[usize]| (*v.iter().min().unwrap(), *v.iter().max().unwrap());
    eprintln!(
        "held out per class: stratified {:?}, plain shuffle {:?}",
        range(&valid),
        range(&plain)
    );
    assert!(range(&plain).1 - range(&plain).0 > 2, "{plain:?}");
}

#[test]
fn stratified_split_rounds_to_the_plain_total() {
    // Shares 3.3, 3.3 and 3.3 of 10 held out: floors 3 + 3 + 3, one more for the first
    // largest remainder; the total matches round(33 × 0.3) = 10.
    let d = split(classes(&[11, 11, 11]), 1, 3, 0.3, 7, true).unwrap();
    assert_eq!(d.valid.len(), 10);
    let counts = per_class(&d.valid, 3);
    assert!(counts.iter().all(|&c| c == 3 || c == 4), "{counts:?}");
    // Neither split is left sorted by label.
    let labels: Vec<usize> = d.train.iter().map(|s| s.label).collect();
    assert!(labels.windows(2).any(|w| w[0] > w[1]), "{labels:?}");
}

#[test]
fn stratified_split_leaves_a_rare_class_its_only_sample() {
    // 5 of 9 held out: shares 2.2, 2.2 and 0.6. Class 2 has the largest remainder, but
    // its one sample stays in training, and class 0 gives one more instead.
    assert_eq!(class_quotas(&[4, 4, 1], 5), vec![3, 2, 0]);
    let d = split(classes(&[4, 4, 1]), 1, 3, 0.55, 1, true).unwrap();
    assert_eq!(per_class(&d.valid, 3), vec![3, 2, 0]);
    assert_eq!(per_class(&d.train, 3), vec![1, 2, 1]);
    // Only when nothing else can give may a class give its last sample.
    assert_eq!(class_quotas(&[1, 1], 1), vec![1, 0]);
}

#[test]
fn standardizing_uses_the_training_split_only() {
    let mut d = Dataset {
        train: vec![
            Sample {
                features: vec![1.0, 5.0],
                label: 0,
            },
            Sample {
                features: vec![3.0, 5.0],
                label: 1,
            },
        ],
        valid: vec![Sample {
            features: vec![100.0, 7.0],
            label: 0,
        }],
        features: 2,
        classes: 2,
    };
    d.standardize();
    // Training mean (2, 5), standard deviation (1, 0): the validation sample does not
    // move them, and the constant feature is only centred.
    assert_eq!(d.train[0].features, vec![-1.0, 0.0]);
    assert_eq!(d.train[1].features, vec![1.0, 0.0]);
    assert_eq!(d.valid[0].features, vec![98.0, 2.0]);
}

#[test]
fn split_keeps_one_sample_on_each_side() {
    let d = split(samples(3), 1, 2, 0.01, 0, true).unwrap();
    assert_eq!((d.train.len(), d.valid.len()), (2, 1));
    assert!(split(samples(1), 1, 2, 0.5, 0, true).is_err());
}
