//! [`Plateau`]: `[train.schedule] kind = "plateau"`'s decision, Keras's `ReduceLROnPlateau`
//! step for step: at each epoch's end, a cooldown under way counts down (and the wait is
//! reset); an epoch better than the best by more than `min_delta` becomes the best and resets
//! the wait; otherwise, outside a cooldown, the wait grows, and once it reaches `patience` the
//! rate is multiplied by `factor` (not below `min_lr`), the cooldown starts and the wait is
//! reset. Only numbers: the schedule multiplies its rate by [`Plateau::scale`].

use serde::{Deserialize, Serialize};

use crate::config::PlateauConfig;

/// Where a plateau schedule stands: saved in each checkpoint (`plateau.json`), so that a
/// resumed run goes on with the same wait, best, cooldown and scale, to the bit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlateauState {
    /// The best value so far.
    pub best: Option<f64>,
    /// Epochs without improvement since the best or the last drop.
    pub wait: usize,
    /// Epochs of cooldown left.
    pub cooldown_left: usize,
    /// The factor on the configured rate: 1 until the first drop.
    pub scale: f64,
}

impl PlateauState {
    /// Why this state cannot be a plateau schedule's (a damaged file), naming the key, or
    /// `None`: its factor is in (0, 1] (it only drops from 1) and its best value is a number.
    pub fn invalid(&self) -> Option<String> {
        if !(self.scale > 0.0 && self.scale <= 1.0) {
            return Some(format!(
                "scale = {}: the factor on the configured rate must be in (0, 1]",
                self.scale
            ));
        }
        match self.best {
            Some(best) if !best.is_finite() => Some(format!("best = {best}: not a number")),
            _ => None,
        }
    }
}

/// The decision, with its configuration.
#[derive(Debug, Clone)]
pub struct Plateau {
    config: PlateauConfig,
    /// The configured rate, and its floor.
    lr: f64,
    min_lr: f64,
    state: PlateauState,
}

impl Plateau {
    /// A plateau schedule on the rate `lr`, not dropping it below `min_lr`.
    pub fn new(config: &PlateauConfig, lr: f64, min_lr: f64) -> Self {
        Plateau {
            config: config.clone(),
            lr,
            min_lr,
            state: PlateauState {
                scale: 1.0,
                ..PlateauState::default()
            },
        }
    }

    /// What it watches, and how it drops the rate.
    pub fn config(&self) -> &PlateauConfig {
        &self.config
    }

    /// The factor on the configured rate now.
    pub fn scale(&self) -> f64 {
        self.state.scale
    }

    /// Where it stands.
    pub fn state(&self) -> &PlateauState {
        &self.state
    }

    /// Goes on from `state` (a resumed run's).
    pub fn resume(&mut self, state: PlateauState) {
        self.state = state;
    }

    /// An epoch's end with the monitored `value`: the rates before and after, where it drops.
    pub fn observe(&mut self, value: f64) -> Option<(f64, f64)> {
        let s = &mut self.state;
        if s.cooldown_left > 0 {
            s.cooldown_left -= 1;
            s.wait = 0;
        }
        let better = match s.best {
            None => !value.is_nan(),
            Some(best) => (self.config.mode).improves(value, best, self.config.min_delta),
        };
        if better {
            s.best = Some(value);
            s.wait = 0;
            return None;
        }
        if s.cooldown_left > 0 {
            return None;
        }
        s.wait += 1;
        if s.wait < self.config.patience.max(1) {
            return None;
        }
        s.wait = 0;
        let old = self.lr * s.scale;
        // Keras drops only while above the floor (its float32 comparison aside).
        if old <= self.min_lr {
            return None;
        }
        let new = (old * self.config.factor).max(self.min_lr);
        s.scale = new / self.lr;
        s.cooldown_left = self.config.cooldown;
        Some((old, new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MonitorMode;

    fn plateau(patience: usize, cooldown: usize, min_lr: f64) -> Plateau {
        let config = PlateauConfig {
            monitor: "val_loss".into(),
            mode: MonitorMode::Min,
            factor: 0.5,
            patience,
            min_delta: 0.01,
            cooldown,
        };
        Plateau::new(&config, 1.0, min_lr)
    }

    /// The rate after each of `values`.
    fn rates(p: &mut Plateau, values: &[f64]) -> Vec<f64> {
        values
            .iter()
            .map(|&v| {
                p.observe(v);
                p.scale()
            })
            .collect()
    }

    #[test]
    fn the_rate_drops_after_patience_epochs_without_a_large_enough_gain() {
        let mut p = plateau(2, 0, 0.0);
        // 0.995 is better, but not by more than min_delta: it waits.
        let got = rates(&mut p, &[1.0, 0.995, 1.2, 0.5, 0.6, 0.6, 0.6, 0.6]);
        assert_eq!(got, [1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.125]);
        assert_eq!(p.state().best, Some(0.5));
    }

    #[test]
    fn a_cooldown_holds_the_wait_and_min_lr_floors_the_rate() {
        let mut p = plateau(1, 2, 0.2);
        let got = rates(&mut p, &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        // Drops at epochs 2, 4 and 6, the last floored at 0.2, and none at the floor. Keras
        // counts a cooldown down before it judges the epoch: cooldown = 2 holds one epoch.
        assert_eq!(got, [1.0, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2]);
        let max = PlateauConfig {
            mode: MonitorMode::Max,
            ..p.config.clone()
        };
        let mut up = Plateau::new(&max, 1.0, 0.0);
        assert_eq!(rates(&mut up, &[0.5, 0.9, 0.8]), [1.0, 1.0, 0.5]);
    }
}
