//! Memory per optimizer step, in a bounded number of points: each point is the highest figure
//! of a run of consecutive steps, so that no step's peak is lost when steps are many.

use serde::{Deserialize, Serialize};

/// Points an epoch keeps at least, once it has that many steps; it keeps at most twice as
/// many.
pub const POINTS_PER_EPOCH: usize = 32;

/// One point of an epoch's step trace: the steps up to `step` since the point before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepSample {
    /// The last optimizer step the point covers (counted over the run, from 1).
    pub step: usize,
    /// The highest figure in use over the steps it covers (their backward passes and updates).
    pub peak: u64,
    /// In use after its last step's update.
    pub in_use: u64,
}

impl StepSample {
    /// This point extended by the next step's `later`.
    fn merge(self, later: StepSample) -> StepSample {
        StepSample {
            step: later.step,
            peak: self.peak.max(later.peak),
            in_use: later.in_use,
        }
    }
}

/// An epoch's step trace as it is recorded: each point covers `bucket` steps (the last point
/// `filled` of them), and when there are more than twice [`POINTS_PER_EPOCH`] points,
/// neighbours merge and `bucket` doubles. The bucket carries over to the next epoch, which
/// has as many steps.
#[derive(Debug, Clone)]
pub struct StepTrace {
    samples: Vec<StepSample>,
    bucket: usize,
    filled: usize,
}

impl Default for StepTrace {
    fn default() -> Self {
        Self {
            samples: Vec::new(),
            bucket: 1,
            filled: 0,
        }
    }
}

impl StepTrace {
    /// Records one step.
    pub fn push(&mut self, sample: StepSample) {
        match self.samples.last_mut() {
            Some(last) if self.filled < self.bucket => {
                *last = last.merge(sample);
                self.filled += 1;
            }
            _ => {
                self.samples.push(sample);
                self.filled = 1;
            }
        }
        if self.samples.len() > 2 * POINTS_PER_EPOCH {
            self.halve();
        }
    }

    /// Merges neighbouring points: each covers twice the steps.
    fn halve(&mut self) {
        let odd = self.samples.len() % 2 == 1;
        self.filled = if odd {
            self.filled
        } else {
            self.bucket + self.filled
        };
        self.samples = self
            .samples
            .chunks(2)
            .map(|pair| pair.iter().copied().reduce(StepSample::merge).unwrap())
            .collect();
        self.bucket *= 2;
    }

    /// The epoch's points, leaving the trace empty for the next epoch.
    pub fn take(&mut self) -> Vec<StepSample> {
        self.filled = 0;
        std::mem::take(&mut self.samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(step: usize, peak: u64) -> StepSample {
        StepSample {
            step,
            peak,
            in_use: step as u64,
        }
    }

    #[test]
    fn few_steps_keep_a_point_each() {
        let mut trace = StepTrace::default();
        for step in 1..=10 {
            trace.push(sample(step, 100 + step as u64));
        }
        let points = trace.take();
        assert_eq!(points.len(), 10);
        assert_eq!(points[3], sample(4, 104));
        assert!(trace.take().is_empty());
    }

    #[test]
    fn many_steps_are_bounded_and_keep_every_peak() {
        let mut trace = StepTrace::default();
        let steps = 1000;
        for step in 1..=steps {
            // One spike, at step 777.
            let peak = if step == 777 { 9_000 } else { 100 };
            trace.push(sample(step, peak));
        }
        let points = trace.take();
        assert!(
            (POINTS_PER_EPOCH..=2 * POINTS_PER_EPOCH).contains(&points.len()),
            "{} points",
            points.len()
        );
        // Every step is covered once, in order, ending at the last.
        assert_eq!(points.last().unwrap().step, steps);
        assert!(points.windows(2).all(|w| w[0].step < w[1].step));
        // The spike survives the merging, in the point that covers step 777.
        let spike = points.iter().find(|p| p.step >= 777).unwrap();
        assert_eq!(spike.peak, 9_000);
        assert_eq!(points.iter().filter(|p| p.peak == 9_000).count(), 1);
        // In use is the last step's of each point.
        assert_eq!(points.last().unwrap().in_use, steps as u64);
    }

    #[test]
    fn the_next_epoch_keeps_the_bucket_and_its_own_steps() {
        let mut trace = StepTrace::default();
        for step in 1..=200 {
            trace.push(sample(step, 1));
        }
        let first = trace.take();
        for step in 201..=400 {
            trace.push(sample(step, 2));
        }
        let second = trace.take();
        assert_eq!(first.len(), second.len());
        assert!(second.iter().all(|p| p.step > 200 && p.peak == 2));
    }
}
