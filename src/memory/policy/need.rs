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

/// The share added to the limit a run's measured step needs: room for what the process that
/// trains holds that the probing one did not (its recorder and loader, the heap's state).
/// `fit`'s own margin, for what one probed step does not show, is inside [`limit_for`].
pub const LEASE_MARGIN: f64 = 0.15;

/// What a probe measured of one run (a search's trial, a run under a device's budget), in
/// bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    /// In use when the probe started: the process's state and the trial's data.
    pub before: u64,
    /// The step's peak above `before`.
    pub step: u64,
    /// A checkpoint's copy: the weights and the optimizer's state, from their shapes.
    pub checkpoint: u64,
    /// On a device with pools, what they had reserved by the step's end: a limit there reads
    /// reserved pages, which exceed what is in use.
    pub reserved: Option<u64>,
}

/// The memory lease of a run with these figures: the limit under which `on_limit = "fit"`
/// takes its step, with [`LEASE_MARGIN`] more.
pub fn lease_for(m: Measured) -> u64 {
    let need = (m.before + m.step.max(m.checkpoint)).max(m.reserved.unwrap_or(0));
    (limit_for(need) as f64 * (1.0 + LEASE_MARGIN)).ceil() as u64
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

    #[test]
    fn a_lease_is_the_limit_fit_takes_the_step_under_with_the_margin() {
        let m = Measured {
            before: 100,
            step: 300,
            checkpoint: 50,
            reserved: None,
        };
        // 400 needed: fit takes it under a limit of 445 (its target 400), and the child's
        // process has 15% more.
        assert_eq!(limit_for(400), 445);
        assert_eq!(lease_for(m), 512);
        let m = Measured {
            checkpoint: 700,
            ..m
        };
        assert_eq!(lease_for(m), (limit_for(800) as f64 * 1.15).ceil() as u64);
        let pools = Measured {
            reserved: Some(1600),
            ..m
        };
        assert_eq!(
            lease_for(pools),
            (limit_for(1600) as f64 * 1.15).ceil() as u64,
            "pages reserved above what is in use"
        );
    }
}
