//! The median rule, after Optuna's `MedianPruner`: after epoch `e` (from `min_epochs` on), a
//! trial whose best value so far is worse than the median of the completed trials' values at
//! epoch `e` is pruned. Nothing is pruned until `startup` trials have completed.

use super::record::{better, Curve, Record};
use crate::config::MonitorMode;

/// Why `own` (the trial's curve up to `epoch`) is pruned after `epoch`, or `None` if it goes
/// on.
pub fn behind_median(
    own: &Curve,
    epoch: usize,
    record: &Record,
    mode: MonitorMode,
    min_epochs: usize,
    startup: usize,
) -> Option<String> {
    if epoch < min_epochs || record.completed().count() < startup.max(1) {
        return None;
    }
    let mut at: Vec<f64> = record.completed().filter_map(|c| c.at(epoch)).collect();
    if at.is_empty() {
        return None;
    }
    at.sort_by(f64::total_cmp);
    let n = at.len();
    let median = match n % 2 {
        1 => at[n / 2],
        _ => (at[n / 2 - 1] + at[n / 2]) / 2.0,
    };
    let best = own.best_until(epoch, mode)?;
    let behind = better(best, median, mode) == median && best != median;
    behind.then(|| {
        format!(
            "median rule: its best {} so far, {best:.4}, is behind the median {median:.4} of \
             {n} completed trials at epoch {epoch}",
            record.monitor
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::record::Standing;
    use super::*;

    fn curve(values: &[f64], standing: Standing) -> Curve {
        let values = values.iter().map(|&v| Some(v)).collect();
        Curve {
            values,
            standing,
            reason: None,
        }
    }

    #[test]
    fn a_trial_behind_the_completed_median_is_pruned_after_the_startup() {
        use Standing::*;
        let mut record = Record {
            monitor: "val_loss".into(),
            ..Record::default()
        };
        for (t, first) in [(1, 0.5), (2, 0.3), (3, 0.4)] {
            record
                .trials
                .insert(t, curve(&[first, first - 0.1], Completed));
        }
        // A running trial's curve does not count.
        record.trials.insert(4, curve(&[0.0], Running));
        let slow = curve(&[0.45], Running);
        let why = behind_median(&slow, 1, &record, MonitorMode::Min, 1, 3).unwrap();
        assert_eq!(
            why,
            "median rule: its best val_loss so far, 0.4500, is behind the median 0.4000 of 3 \
             completed trials at epoch 1"
        );
        // Not before min_epochs, nor before `startup` completed, nor when at the median.
        assert_eq!(
            behind_median(&slow, 1, &record, MonitorMode::Min, 2, 3),
            None
        );
        assert_eq!(
            behind_median(&slow, 1, &record, MonitorMode::Min, 1, 4),
            None
        );
        assert_eq!(
            behind_median(&curve(&[0.4], Running), 1, &record, MonitorMode::Min, 1, 3),
            None
        );
        // The best so far counts: 0.35 at epoch 1 beats epoch 2's median 0.3? no: 0.35 > 0.3.
        let later = curve(&[0.35, 0.5], Running);
        assert!(behind_median(&later, 2, &record, MonitorMode::Min, 1, 3).is_some());
        // For a metric to maximise, the same values are ahead.
        assert_eq!(
            behind_median(&slow, 1, &record, MonitorMode::Max, 1, 3),
            None
        );
    }
}
