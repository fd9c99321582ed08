//! Which epochs' checkpoints `[checkpoint] keep_best = k` keeps: the `k` best by the monitored
//! figure, best first (`best-1`), a tie going to the earlier epoch. A decision on numbers: the
//! checkpointer reads the ranking from disk, asks this for the next, writes it, and only then
//! deletes what it no longer lists.

use crate::config::MonitorMode;
use crate::record::RankedCheckpoint;

/// The ranking once checkpoint `new` has been written: `earlier`'s entries with `new`, the
/// best `k` kept. Entries of epochs from `new`'s on are dropped first: they were trained again
/// after a resume. A value that is not a number ranks nowhere.
pub fn rank(
    earlier: &[RankedCheckpoint],
    new: RankedCheckpoint,
    k: usize,
    mode: MonitorMode,
) -> Vec<RankedCheckpoint> {
    let mut ranking: Vec<RankedCheckpoint> = (earlier.iter())
        .filter(|r| r.epoch < new.epoch)
        .cloned()
        .collect();
    if !new.value.is_nan() {
        ranking.push(new);
    }
    ranking.sort_by(|a, b| mode.order(a.value, b.value).then(a.epoch.cmp(&b.epoch)));
    ranking.truncate(k);
    ranking
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(epoch: usize, value: f64) -> RankedCheckpoint {
        RankedCheckpoint {
            name: format!("epoch-{epoch}"),
            epoch,
            value,
        }
    }

    fn epochs(ranking: &[RankedCheckpoint]) -> Vec<usize> {
        ranking.iter().map(|r| r.epoch).collect()
    }

    #[test]
    fn the_k_best_are_kept_best_first_a_tie_to_the_earlier_epoch() {
        let values = [0.9, 0.5, 0.7, 0.5, 0.4, 0.8];
        let mut ranking = Vec::new();
        let mut seen = Vec::new();
        for (i, v) in values.into_iter().enumerate() {
            ranking = rank(&ranking, at(i + 1, v), 3, MonitorMode::Min);
            seen.push(epochs(&ranking));
        }
        assert_eq!(seen[0], [1]);
        assert_eq!(seen[2], [2, 3, 1]);
        assert_eq!(seen[3], [2, 4, 3]);
        assert_eq!(seen[5], [5, 2, 4]);
        let max = rank(&ranking, at(7, 0.95), 2, MonitorMode::Max);
        assert_eq!(epochs(&max), [7, 2]);
    }

    #[test]
    fn epochs_trained_again_replace_their_entries_and_nan_ranks_nowhere() {
        let ranking = vec![at(3, 0.1), at(1, 0.5), at(2, 0.6)];
        // Resumed after epoch 2: epoch 3 is trained again, and scores worse this time.
        let again = rank(&ranking, at(3, 0.7), 3, MonitorMode::Min);
        assert_eq!(epochs(&again), [1, 2, 3]);
        let nan = rank(&again, at(4, f64::NAN), 3, MonitorMode::Min);
        assert_eq!(epochs(&nan), [1, 2, 3]);
    }
}
