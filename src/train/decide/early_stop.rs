//! [`EarlyStop`]: after each epoch, whether the monitored metric improved (keep this epoch's
//! checkpoint as the best), and whether the run has waited long enough without improvement to
//! stop. Keras's `EarlyStopping` and burn-train's `MetricEarlyStoppingStrategy` decide the
//! same way; the state is saved with each checkpoint, so a resumed run keeps its patience.

use serde::{Deserialize, Serialize};

use crate::config::EarlyStoppingConfig;

/// What an epoch's value of the monitored metric means for the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// The best so far: this epoch's checkpoint becomes `checkpoints/best`.
    Improved,
    /// No improvement; `waited` epochs in a row now, fewer than the patience.
    Wait {
        /// Epochs without improvement, this one included.
        waited: usize,
    },
    /// No improvement for `patience` epochs in a row: stop after this epoch (Keras's and
    /// Lightning's rule).
    Stop,
}

/// The decision's state: what a checkpoint keeps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EarlyStopState {
    /// The best epoch so far and its value.
    pub best: Option<(usize, f64)>,
    /// Epochs since the best one.
    pub waited: usize,
    /// The epoch after which the run stopped, if it did.
    pub stopped_at: Option<usize>,
}

/// Early stopping on one metric.
#[derive(Debug, Clone)]
pub struct EarlyStop {
    config: EarlyStoppingConfig,
    state: EarlyStopState,
}

impl EarlyStop {
    /// Watching as `config` says, from `state` (default: a run's start).
    pub fn new(config: EarlyStoppingConfig, state: EarlyStopState) -> Self {
        Self { config, state }
    }

    /// The settings.
    pub fn config(&self) -> &EarlyStoppingConfig {
        &self.config
    }

    /// The state, for a checkpoint.
    pub fn state(&self) -> &EarlyStopState {
        &self.state
    }

    /// Records epoch `epoch`'s `value` of the monitored metric. A value that is not a number
    /// never improves.
    pub fn observe(&mut self, epoch: usize, value: f64) -> Verdict {
        if self.improves(value) {
            self.state.best = Some((epoch, value));
            self.state.waited = 0;
            return Verdict::Improved;
        }
        self.state.waited += 1;
        if self.state.waited >= self.config.patience {
            self.state.stopped_at = Some(epoch);
            return Verdict::Stop;
        }
        Verdict::Wait {
            waited: self.state.waited,
        }
    }

    fn improves(&self, value: f64) -> bool {
        if value.is_nan() {
            return false;
        }
        let Some((_, best)) = self.state.best else {
            return true;
        };
        (self.config.mode()).improves(value, best, self.config.min_delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MonitorMode;

    fn stop(mode: MonitorMode, patience: usize, min_delta: f64) -> EarlyStop {
        let config = EarlyStoppingConfig {
            monitor: "val_loss".into(),
            mode: Some(mode),
            patience,
            min_delta,
            restore_best: true,
        };
        EarlyStop::new(config, EarlyStopState::default())
    }

    fn verdicts(stop: &mut EarlyStop, values: &[f64]) -> Vec<Verdict> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| stop.observe(i + 1, v))
            .collect()
    }

    #[test]
    fn stops_after_patience_epochs_without_improvement() {
        let mut s = stop(MonitorMode::Min, 3, 0.0);
        let got = verdicts(&mut s, &[1.0, 0.8, 0.9, 0.85, 0.81]);
        use Verdict::*;
        assert_eq!(
            got,
            [
                Improved,
                Improved,
                Wait { waited: 1 },
                Wait { waited: 2 },
                Stop
            ]
        );
        assert_eq!(s.state().best, Some((2, 0.8)));
        assert_eq!(s.state().stopped_at, Some(5));
    }

    #[test]
    fn an_improvement_resets_the_wait_and_min_delta_must_be_beaten() {
        let mut s = stop(MonitorMode::Min, 2, 0.05);
        use Verdict::*;
        // 0.97 is better than 1.0 but not by more than 0.05.
        let got = verdicts(&mut s, &[1.0, 0.97, 0.9, 0.89, 0.88]);
        assert_eq!(
            got,
            [
                Improved,
                Wait { waited: 1 },
                Improved,
                Wait { waited: 1 },
                Stop
            ]
        );
        assert_eq!(s.state().best, Some((3, 0.9)));
    }

    #[test]
    fn max_mode_wants_higher_and_nan_never_improves() {
        let mut s = stop(MonitorMode::Max, 0, 0.0);
        use Verdict::*;
        assert_eq!(verdicts(&mut s, &[0.5, 0.7]), [Improved, Improved]);
        assert_eq!(s.observe(3, f64::NAN), Stop);
        assert_eq!(s.state().best, Some((2, 0.7)));
        let mut fresh = stop(MonitorMode::Min, 3, 0.0);
        assert_eq!(fresh.observe(1, f64::NAN), Wait { waited: 1 });
    }

    #[test]
    fn a_restored_state_keeps_the_patience_count() {
        let mut first = stop(MonitorMode::Min, 3, 0.0);
        verdicts(&mut first, &[1.0, 1.1]);
        let saved: EarlyStopState =
            serde_json::from_str(&serde_json::to_string(first.state()).unwrap()).unwrap();
        let mut resumed = EarlyStop::new(first.config().clone(), saved);
        assert_eq!(resumed.observe(3, 1.2), Verdict::Wait { waited: 2 });
        assert_eq!(resumed.observe(4, 1.3), Verdict::Stop);
    }
}
