//! What one training step needs, as a limit reads it: the one model behind `on_limit = "fit"`'s
//! check of a probed micro-batch and a parallel search's lease of a trial
//! (`sweep::sizing::lease`). Both take a probe's [`StepFigures`] through [`StepFigures::peak`]
//! and compare it with [`fit_target`]; a lease is [`limit_for`] that peak with room for the
//! child's own process, so a trial whose step fits its lease is never refused by its own check.
//! Pure arithmetic, tested without a device.

/// The share of the limit that `on_limit = "fit"` keeps free: room for what one probed step
/// does not show (the loader's batches in flight, validation, the run's own records).
pub const FIT_MARGIN: f64 = 0.10;

/// A probed step's figures in bytes, as the limit reads them (in use on the host, reserved
/// pages on a device with pools), each counted from zero, not from the probe's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepFigures {
    /// The peak of its forward and backward passes.
    pub passes: u64,
    /// The optimizer's state on the device that the run's first update allocates and the
    /// passes ran without: every step after the first runs its passes beside it.
    pub state_to_come: u64,
    /// The peak of its update, where the probe ran one (the state is held there already);
    /// 0 where it did not.
    pub update: u64,
}

impl StepFigures {
    /// What a step of the run peaks at: its passes beside the optimizer's state, or its
    /// update, whichever is more. The state is counted once: the update already holds it.
    pub fn peak(&self) -> u64 {
        self.passes
            .saturating_add(self.state_to_come)
            .max(self.update)
    }
}

/// What a step may peak at under `limit` with `on_limit = "fit"`: the limit less
/// [`FIT_MARGIN`].
pub fn fit_target(limit: u64) -> u64 {
    (limit as f64 * (1.0 - FIT_MARGIN)) as u64
}

/// The smallest limit whose [`fit_target`] holds a step that peaks at `peak`.
pub fn limit_for(peak: u64) -> u64 {
    let mut limit = (peak as f64 / (1.0 - FIT_MARGIN)).ceil() as u64;
    // The float's rounding may leave the target a byte short.
    while fit_target(limit) < peak {
        limit += 1;
    }
    limit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_counted_beside_the_passes_once() {
        let probe = StepFigures {
            passes: 700,
            state_to_come: 200,
            update: 0,
        };
        assert_eq!(probe.peak(), 900, "a fit probe runs no update");
        let searched = StepFigures {
            update: 850,
            ..probe
        };
        assert_eq!(searched.peak(), 900, "the update holds the state already");
        let heavy_update = StepFigures {
            update: 1000,
            ..probe
        };
        assert_eq!(heavy_update.peak(), 1000);
    }

    #[test]
    fn the_limit_for_a_peak_is_the_smallest_whose_target_holds_it() {
        for peak in [0, 1, 9, 10, 999, 9_211_365, 123_456_789, 1 << 40] {
            let limit = limit_for(peak);
            assert!(fit_target(limit) >= peak, "{peak}: {limit}");
            assert!(
                limit == 0 || fit_target(limit - 1) < peak,
                "{peak}: {limit} is not the smallest"
            );
        }
        assert_eq!(fit_target(1000), 900);
        assert_eq!(limit_for(900), 1000);
    }
}
