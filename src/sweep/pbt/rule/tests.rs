//! The rule's decisions, against Ray Tune's: the ends' sizes, who copies whom, and each
//! key's perturbation.

use super::*;

fn lr_range() -> (String, Domain) {
    let range = Domain::Range {
        min: 1e-4,
        max: 1e-1,
        log: true,
        int: false,
    };
    ("train.lr".to_string(), range)
}

fn batch_list() -> (String, Domain) {
    let list = [16, 32, 64, 128].map(toml::Value::Integer).to_vec();
    ("train.batch_size".to_string(), Domain::Values(list))
}

/// `n` members, member `i` (from 1) at value `i` and `train.lr = i / 1000`.
fn population(n: usize) -> Vec<Member> {
    (1..=n)
        .map(|number| Member {
            number,
            value: number as f64,
            values: BTreeMap::from([(
                "train.lr".to_string(),
                toml::Value::Float(number as f64 / 1000.0),
            )]),
        })
        .collect()
}

#[test]
fn the_ends_are_a_quarter_rounded_up_and_at_most_half_as_ray_s() {
    let rule = Rule::default();
    let ends: Vec<usize> = [1, 2, 3, 4, 5, 8, 9, 16].map(|n| rule.ends(n)).to_vec();
    assert_eq!(ends, [0, 1, 1, 1, 2, 2, 3, 4]);
    let half = Rule {
        quantile: 0.5,
        ..Rule::default()
    };
    assert_eq!([4, 5].map(|n| half.ends(n)), [2, 2]);
}

#[test]
fn the_bottom_copies_the_top_perturbed_the_worst_first() {
    let rule = Rule {
        resample: 0.0,
        ..Rule::default()
    };
    let members = population(8);
    for mode in [MonitorMode::Min, MonitorMode::Max] {
        let exploits = rule.decide(&members, &[lr_range()], mode, 7, 2);
        // Lower is better: 7 and 8 copy 1 or 2; higher is better: 2 and 1 copy 8 or 7.
        let (bottom, top) = match mode {
            MonitorMode::Min => ([8, 7], [1, 2]),
            MonitorMode::Max => ([1, 2], [8, 7]),
        };
        let copiers: Vec<usize> = exploits.iter().map(|e| e.member).collect();
        assert_eq!(copiers, bottom, "{mode:?}");
        for exploit in &exploits {
            assert!(top.contains(&exploit.from), "{exploit:?}");
            let copied = exploit.from as f64 / 1000.0;
            let lr = exploit.values["train.lr"].as_float().unwrap();
            let factor = lr / copied;
            assert!(
                (factor - 1.2).abs() < 1e-12 || (factor - 0.8).abs() < 1e-12,
                "{exploit:?}"
            );
        }
    }
}

#[test]
fn a_diverged_member_ranks_last_and_copies() {
    let mut members = population(4);
    members[0].value = f64::NAN;
    for mode in [MonitorMode::Min, MonitorMode::Max] {
        let exploits = Rule::default().decide(&members, &[lr_range()], mode, 1, 1);
        assert_eq!(exploits.len(), 1);
        assert_eq!(exploits[0].member, 1, "{mode:?}");
        assert_eq!(
            exploits[0].from,
            [2, 4][usize::from(mode == MonitorMode::Max)]
        );
    }
}

#[test]
fn the_same_study_decides_the_same_and_another_interval_draws_anew() {
    let rule = Rule::default();
    let members = population(16);
    let vary = [lr_range(), batch_list()];
    let at = |seed, epoch| rule.decide(&members, &vary, MonitorMode::Min, seed, epoch);
    assert_eq!(at(3, 4), at(3, 4));
    // Members given in another order: the same decisions.
    let mut shuffled = members.clone();
    shuffled.reverse();
    assert_eq!(
        rule.decide(&shuffled, &vary, MonitorMode::Min, 3, 4),
        at(3, 4)
    );
    assert_ne!(at(3, 4), at(3, 8));
    assert_ne!(at(3, 4), at(4, 4));
}

#[test]
fn a_key_is_drawn_again_a_quarter_of_the_time_else_perturbed_within_its_domain() {
    let rule = Rule::default();
    let vary = [lr_range(), batch_list()];
    let values = BTreeMap::from([
        ("train.lr".to_string(), toml::Value::Float(0.09)),
        ("train.batch_size".to_string(), toml::Value::Integer(16)),
    ]);
    let mut rng = StdRng::seed_from_u64(11);
    let (mut perturbed, mut lists) = (0, BTreeMap::new());
    let n = 4000;
    for _ in 0..n {
        let out = rule.explore(&values, &vary, &mut rng);
        let lr = out["train.lr"].as_float().unwrap();
        assert!((1e-4..=1e-1).contains(&lr), "{lr}");
        // ×1.2 of 0.09 is over the range: kept at its top.
        if lr == 0.1 || (lr - 0.072).abs() < 1e-12 {
            perturbed += 1;
        }
        *lists
            .entry(out["train.batch_size"].as_integer().unwrap())
            .or_insert(0) += 1;
    }
    // A quarter drawn again (a draw lands on 0.1 or 0.072 with probability 0).
    let share = perturbed as f64 / n as f64;
    assert!((share - 0.75).abs() < 0.03, "{share}");
    // From 16, the first: its neighbour 32 or itself (clamped) three times in four, and each
    // of the four a sixteenth of the time besides.
    let of = |b: i64| lists.get(&b).copied().unwrap_or(0) as f64 / n as f64;
    assert!((of(16) - (0.375 + 0.0625)).abs() < 0.03, "{lists:?}");
    assert!((of(32) - (0.375 + 0.0625)).abs() < 0.03, "{lists:?}");
    assert!((of(128) - 0.0625).abs() < 0.02, "{lists:?}");
}

#[test]
fn a_population_too_small_to_split_copies_nothing() {
    let exploits = Rule::default().decide(&population(1), &[lr_range()], MonitorMode::Min, 0, 1);
    assert!(exploits.is_empty());
}
