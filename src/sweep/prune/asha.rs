//! Asynchronous successive halving (Li et al., 2018, "A System for Massively Parallel
//! Hyperparameter Tuning"), as pure decisions on a [`Record`].
//!
//! Rungs sit at `min_epochs`, `min_epochs · η`, `min_epochs · η²`, ... before the last epoch. A
//! trial pauses at each rung it reaches, its checkpoint kept. Whenever a worker is free, the
//! search promotes a paused trial that ranks in the top `⌊n/η⌋` of the `n` trials recorded at
//! its rung (the highest rung first), and starts a new trial only when none can be promoted.
//! Deciding only on arrival would promote too many early trials; pausing lets a later, better
//! trial take the place. Once every trial has been started and none can be promoted, the trials
//! still paused are pruned; but if none has trained to the end (a search of fewer trials than
//! its rungs need: 3 trials where η = 3 and there are two rungs), the best at the highest rung
//! goes on first, so that there is a trained trial to choose.

use super::record::{Record, Standing};
use crate::config::MonitorMode;

/// The rungs, in epochs: `min_epochs · η^k` below `epochs`.
pub fn rungs(min_epochs: usize, reduction: usize, epochs: usize) -> Vec<usize> {
    let mut rungs = Vec::new();
    let mut rung = min_epochs.max(1);
    while rung < epochs {
        rungs.push(rung);
        rung = rung.saturating_mul(reduction.max(2));
    }
    rungs
}

/// Where a trial that has trained `done` epochs pauses next: the first rung after it, or
/// `None` to train to the end.
pub fn next_stop(rungs: &[usize], done: usize) -> Option<usize> {
    rungs.iter().copied().find(|&r| r > done)
}

/// The trials recorded at `rung`, best first, with their values (ties by trial number).
fn ranked_at(record: &Record, rung: usize, mode: MonitorMode) -> Vec<(usize, f64)> {
    let mut at: Vec<(usize, f64)> = record
        .trials
        .iter()
        .filter_map(|(&t, c)| c.at(rung).map(|v| (t, v)))
        .collect();
    at.sort_by(|a, b| mode.order(a.1, b.1).then(a.0.cmp(&b.0)));
    at
}

/// A paused trial to promote: one in the top `⌊n/η⌋` at its rung, the highest rung first and
/// the best first within it.
pub fn promotable(
    record: &Record,
    rungs: &[usize],
    mode: MonitorMode,
    reduction: usize,
) -> Option<usize> {
    rungs.iter().rev().find_map(|&rung| {
        let ranked = ranked_at(record, rung, mode);
        let top = ranked.len() / reduction.max(2);
        ranked[..top].iter().map(|&(t, _)| t).find(|t| {
            let curve = &record.trials[t];
            curve.standing == Standing::Paused && curve.epochs() == rung
        })
    })
}

/// The best trial paused at `rung`.
pub fn best_paused_at(record: &Record, rung: usize, mode: MonitorMode) -> Option<usize> {
    ranked_at(record, rung, mode)
        .into_iter()
        .map(|(t, _)| t)
        .find(|t| {
            let curve = &record.trials[t];
            curve.standing == Standing::Paused && curve.epochs() == rung
        })
}

/// Why trial `trial`, left paused at `rung` when the search ran out of trials, is pruned.
pub fn left_behind(
    record: &Record,
    trial: usize,
    rung: usize,
    mode: MonitorMode,
    reduction: usize,
) -> String {
    let ranked = ranked_at(record, rung, mode);
    let place = ranked
        .iter()
        .position(|&(t, _)| t == trial)
        .map_or(0, |p| p + 1);
    let top = ranked.len() / reduction.max(2);
    format!(
        "ASHA: ranked {place} of {} by {} at epoch {rung}, where the top {top} went on",
        ranked.len(),
        record.monitor
    )
}

#[cfg(test)]
mod tests {
    use super::super::record::Curve;
    use super::*;

    fn record(curves: &[(usize, &[f64], Standing)]) -> Record {
        Record {
            monitor: "val_loss".into(),
            trials: curves
                .iter()
                .map(|&(t, v, standing)| {
                    let values = v.iter().map(|&x| Some(x)).collect();
                    (
                        t,
                        Curve {
                            values,
                            standing,
                            reason: None,
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn rungs_grow_by_the_reduction_below_the_last_epoch() {
        assert_eq!(rungs(1, 3, 9), vec![1, 3]);
        assert_eq!(rungs(1, 3, 10), vec![1, 3, 9]);
        assert_eq!(rungs(2, 2, 9), vec![2, 4, 8]);
        assert_eq!(next_stop(&[1, 3], 0), Some(1));
        assert_eq!(next_stop(&[1, 3], 1), Some(3));
        assert_eq!(next_stop(&[1, 3], 3), None);
    }

    #[test]
    fn only_the_top_third_at_a_rung_is_promoted_the_highest_rung_first() {
        use Standing::*;
        // Two trials at rung 1: ⌊2/3⌋ = 0 promote.
        let two = record(&[(1, &[0.5], Paused), (2, &[0.4], Paused)]);
        assert_eq!(promotable(&two, &[1, 3], MonitorMode::Min, 3), None);
        // A third, better: it alone is in the top 1 of 3.
        let mut three = two.clone();
        three.trials.extend(record(&[(3, &[0.3], Paused)]).trials);
        assert_eq!(promotable(&three, &[1, 3], MonitorMode::Min, 3), Some(3));
        assert_eq!(promotable(&three, &[1, 3], MonitorMode::Max, 3), Some(1));
        // Once promoted (running past the rung), it still counts there, and no other is
        // promoted until three more arrive.
        three.trials.get_mut(&3).unwrap().standing = Running;
        assert_eq!(promotable(&three, &[1, 3], MonitorMode::Min, 3), None);
        // A trial paused at rung 3 among three there goes before rung 1's.
        let high = record(&[
            (1, &[0.5, 0.4, 0.2], Paused),
            (2, &[0.4, 0.3, 0.3], Completed),
            (3, &[0.3, 0.2, 0.25], Completed),
            (4, &[0.1], Paused),
            (5, &[0.9], Paused),
            (6, &[0.8], Paused),
        ]);
        assert_eq!(promotable(&high, &[1, 3], MonitorMode::Min, 3), Some(1));
        assert_eq!(best_paused_at(&high, 1, MonitorMode::Min), Some(4));
        let why = left_behind(&high, 5, 1, MonitorMode::Min, 3);
        assert_eq!(
            why,
            "ASHA: ranked 6 of 6 by val_loss at epoch 1, where the top 2 went on"
        );
    }
}
