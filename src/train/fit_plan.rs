//! `memory.on_limit = "fit"`'s decisions, for the trainer's loop and a hand loop alike. Before
//! the first step, the step is probed from the smallest micro-batch of the configured one's
//! halvings up, each only where the probes before it predict that it fits, and the run trains
//! at the largest that fits under [`fit_target`], keeping the effective batch through
//! accumulation. A probe's figure is [`StepFigures::peak`], the same model a parallel search
//! leases a trial by. Pure: the probes' figures in, the next probe and the choice (or the
//! error) out.

use crate::config::TrainConfig;
use crate::error::Error;
use crate::memory::policy::{fit_target, held, LimitExceeded, Phase, StepFigures, FIT_MARGIN};
use crate::memory::{format_bytes, format_signed_bytes, MemorySource, MemoryUsage};
use crate::train::recorder::RunRecorder;
use crate::train::MemoryGuard;

/// How far past the largest micro-batch that fit the next probe may go: a probe that does not
/// fit passes it by what this many times its activations add at most.
const REACH: usize = 4;

/// What one probe read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// Its window: the peak of its passes (on pools, with what they reserved).
    pub(crate) window: MemoryUsage,
    /// In use when it started.
    pub(crate) start: u64,
    /// The optimizer's state on the device that the run's first update allocates.
    pub(crate) state_to_come: u64,
    /// It stopped after a micro-batch whose figure already passed the target.
    pub(crate) stopped: bool,
}

impl Reading {
    /// The probe's figures in the one model of a step's need.
    fn figures(&self) -> StepFigures {
        probed(&self.window, self.state_to_come)
    }
}

/// A probe's figures: its passes as the limit reads them, the state still to come, no update.
fn probed(window: &MemoryUsage, state_to_come: u64) -> StepFigures {
    StepFigures {
        passes: held(window).0,
        state_to_come,
        update: 0,
    }
}

/// One probed micro-batch: its size, its halving factor, the peak predicted for a step at it
/// and what the probe read.
pub(crate) struct FitProbe {
    pub(crate) micro_batch: usize,
    factor: usize,
    pub(crate) peak: u64,
    pub(crate) reading: Reading,
}

/// What the probes were run against.
pub(crate) struct FitTarget {
    pub(crate) limit: u64,
    pub(crate) batch: usize,
    pub(crate) accumulation: usize,
    pub(crate) source: MemorySource,
    /// One gradient set, from the model's shapes (0 where unknown).
    gradient_set: u64,
    /// The step's gradient sum is in host memory: the device holds one set however it
    /// accumulates.
    host_sum: bool,
}

impl FitTarget {
    /// The target of a run under `guard`'s limit with `train`'s layout.
    pub(crate) fn of(guard: &MemoryGuard, train: &TrainConfig) -> Self {
        let footprint = guard.footprint().unwrap_or_default();
        FitTarget {
            limit: guard.limit_bytes().expect("validated: fit needs a limit"),
            batch: train.batch_size,
            accumulation: train.accumulation_steps,
            source: guard.source(),
            gradient_set: footprint.gradient_set(),
            host_sum: footprint.host_sum,
        }
    }

    /// What a fitted step may hold: the limit less [`FIT_MARGIN`].
    pub(crate) fn budget(&self) -> u64 {
        fit_target(self.limit)
    }

    /// Whether a probe whose window reads `window`, with `state_to_come`, has already passed
    /// the target: it stops there, as a step stops at the limit.
    pub(crate) fn passed(&self, window: &MemoryUsage, state_to_come: u64) -> bool {
        probed(window, state_to_come).peak() > self.budget()
    }

    /// Probes a step at the configured micro-batch's halvings, from a micro-batch of one up:
    /// `probe(micro_batch, micro_steps)` reads one. Each next probe is at the largest halving
    /// that the probes so far predict fits, no more than [`REACH`] times the largest that
    /// fit, and below the smallest that did not; it stops where none is predicted to fit. So
    /// a probe's shape (which a backend may compile kernels for) is one the model expects to
    /// fit, and one that does not passes the largest fitting figure by a bounded step.
    pub(crate) fn probe_halves(
        &self,
        mut probe: impl FnMut(usize, usize) -> Result<Reading, Error>,
    ) -> Result<Vec<FitProbe>, Error> {
        let factors = self.factors();
        let mut probes: Vec<FitProbe> = Vec::new();
        // The largest index of `factors` that fit, and the smallest that did not.
        let (mut fits, mut over) = (None::<usize>, factors.len());
        let mut next = Some(0);
        while let Some(at) = next {
            let factor = factors[at];
            let micro_batch = self.batch.div_ceil(factor);
            let reading = probe(micro_batch, self.accumulation * factor)?;
            let peak = reading.figures().peak();
            probes.push(FitProbe {
                micro_batch,
                factor,
                peak,
                reading,
            });
            match peak <= self.budget() {
                true => fits = Some(at),
                false => over = at,
            }
            let Some(fits) = fits else { break };
            let reach = REACH * self.batch.div_ceil(factors[fits]);
            next = ((fits + 1)..over)
                .rev()
                .filter(|&i| self.batch.div_ceil(factors[i]) <= reach)
                .find(|&i| self.predict(&probes, factors[i]) <= self.budget());
        }
        Ok(probes)
    }

    /// The halving factors of the configured micro-batch, from the one at a micro-batch of
    /// one up to the configured (1).
    fn factors(&self) -> Vec<usize> {
        let mut factors = vec![1];
        while self.batch.div_ceil(*factors.last().expect("one")) > 1 {
            factors.push(factors.last().expect("one") * 2);
        }
        factors.reverse();
        factors
    }

    /// The gradient bytes a step at `factor` holds at once: the sum and a micro-batch's own
    /// where it accumulates on the device.
    fn gradients(&self, factor: usize) -> u64 {
        let sets = match self.accumulation * factor > 1 && !self.host_sum {
            true => 2,
            false => 1,
        };
        self.gradient_set * sets
    }

    /// What does not grow with the micro-batch in `p`'s figure at `factor`: what was in use
    /// when it started, the optimizer's state to come, and the gradients.
    fn fixed(&self, p: &FitProbe, factor: usize) -> u64 {
        p.reading.start + p.reading.state_to_come + self.gradients(factor)
    }

    /// What `p`'s figure holds beyond its peak in use: on pools, the pages its allocations
    /// were rounded up to (0 on the host, whose figure is what is in use).
    fn slack(p: &FitProbe) -> u64 {
        held(&p.reading.window)
            .0
            .saturating_sub(p.reading.window.peak_bytes_in_use)
    }

    /// The peak predicted for a step at `factor` from `probes`: what grows with the
    /// micro-batch (activations, the batch) on a line between the nearest probes below and
    /// above it, or through the two largest below it (never falling), or in proportion from a
    /// single one (its pool pages' rounding carried as it is).
    fn predict(&self, probes: &[FitProbe], factor: usize) -> u64 {
        let m = self.batch.div_ceil(factor);
        let grows = |p: &FitProbe| p.peak.saturating_sub(self.fixed(p, p.factor)) as f64;
        let mut below: Vec<&FitProbe> = probes.iter().filter(|p| p.micro_batch < m).collect();
        below.sort_by_key(|p| std::cmp::Reverse(p.micro_batch));
        let above = (probes.iter())
            .filter(|p| p.micro_batch > m)
            .min_by_key(|p| p.micro_batch);
        let Some(&a) = below.first() else { return 0 };
        let b = above.or(below.get(1).copied());
        let (ma, m) = (a.micro_batch as f64, m as f64);
        let grown = match b {
            Some(b) => {
                let slope = (grows(b) - grows(a)) / (b.micro_batch as f64 - ma);
                grows(a) + slope.max(0.0) * (m - ma)
            }
            // From one probe, what it holds in use past the fixed part grows in proportion;
            // the pages it reserved past that are one page's rounding, not a sample's worth
            // (at a micro-batch of one on pools they are most of the figure).
            None => (grows(a) - Self::slack(a) as f64).max(0.0) * m / ma + Self::slack(a) as f64,
        };
        self.fixed(a, factor) + grown.max(0.0).ceil() as u64
    }

    /// The largest probed micro-batch that fits, or `None`.
    fn chosen<'p>(&self, probes: &'p [FitProbe]) -> Option<&'p FitProbe> {
        (probes.iter())
            .filter(|p| p.peak <= self.budget())
            .max_by_key(|p| p.micro_batch)
    }

    /// Why `probes` found no micro-batch that fits, or `None` where one does: what an
    /// `offload` memory action says before the probes run again.
    pub(crate) fn short(&self, probes: &[FitProbe]) -> Option<String> {
        let smallest = probes.first().expect("one probe at least");
        self.chosen(probes).is_none().then(|| {
            format!(
                "no micro-batch fits: a step at micro-batch {} peaks at {}, over fit's target {} \
                 ({} limit less {:.0}%); probing again",
                smallest.micro_batch,
                format_bytes(smallest.peak),
                format_bytes(self.budget()),
                format_bytes(self.limit),
                FIT_MARGIN * 100.0
            )
        })
    }

    /// After the probes: records each (its window's figures, counted in the run's peak),
    /// gives back what they took, and records the chosen micro-batch as a `fit` memory
    /// action, or fails the run if none fits. `before`: bytes in use before them.
    pub(crate) fn conclude(
        &self,
        (guard, rec): (&mut MemoryGuard, &mut RunRecorder),
        probes: Vec<FitProbe>,
        before: u64,
    ) -> Result<(), Error> {
        for p in &probes {
            guard.record_probe(rec, p.reading.window, p.factor, self.told(p))?;
        }
        let kept = guard.readings().release()? as i64 - before as i64;
        match self.choose(&probes, kept) {
            Ok((factor, detail)) => guard.fit_layout(rec, factor, detail),
            Err(e) => Err(guard.fail(rec, e)),
        }
    }

    /// A probe's `probe` memory action: `micro-batch 64 (accumulation_steps 4): a step
    /// peaks at 8.4 MiB with the optimizer's state to come (7.0 MiB in use in the probe),
    /// within fit's target 7.8 MiB`.
    fn told(&self, p: &FitProbe) -> String {
        let stopped = match p.reading.stopped {
            true => ", stopped after the micro-batch that passed it",
            false => "",
        };
        format!(
            "micro-batch {} (accumulation_steps {}): a step peaks at {} with the optimizer's \
             state to come ({} in the probe), {} fit's target {}{stopped}",
            p.micro_batch,
            self.accumulation * p.factor,
            format_bytes(p.peak),
            format_bytes(held(&p.reading.window).0),
            match p.peak <= self.budget() {
                true => "within",
                false => "over",
            },
            format_bytes(self.budget()),
        )
    }

    /// The layout's factor and the `fit` memory action's detail, or the error if no probed
    /// micro-batch fits. `kept`: what the probes kept in use after their release.
    fn choose(&self, probes: &[FitProbe], kept: i64) -> Result<(usize, String), LimitExceeded> {
        let budget = self.budget();
        let tried = probes
            .iter()
            .map(|p| format!("{}: {}", p.micro_batch, format_bytes(p.peak)))
            .collect::<Vec<_>>()
            .join(", ");
        let Some(chosen) = self.chosen(probes) else {
            let smallest = probes.first().expect("one probe at least");
            return Err(LimitExceeded {
                limit: self.limit,
                observed: smallest.peak,
                measure: match self.source {
                    MemorySource::Host => "peak in use with the optimizer's state to come",
                    MemorySource::CubeclPool => {
                        "reserved in the device pools with the optimizer's state to come"
                    }
                },
                epoch: 0,
                step: 0,
                micro_batch: smallest.micro_batch,
                accumulation_steps: self.accumulation * smallest.factor,
                futile_shrink: None,
                shrinks: false,
                phase: Phase::Step,
                breakdown: None,
                advice: None,
                offload: Box::default(),
            });
        };
        // The next larger halving, where no probe read it: the model kept it out.
        let larger = (chosen.factor > 1).then(|| self.batch.div_ceil(chosen.factor / 2));
        let untried = match larger {
            Some(m) if probes.iter().all(|p| p.micro_batch != m) => {
                format!("; micro-batch {m} not probed, predicted over it")
            }
            _ => String::new(),
        };
        let detail = format!(
            "micro-batch {} -> {}, accumulation_steps {} -> {} (effective batch unchanged): a \
             step's peak probed at {tried}{untried}, against fit's target {} ({} limit less \
             {:.0}%); the probes kept {} after release",
            self.batch,
            chosen.micro_batch,
            self.accumulation,
            self.accumulation * chosen.factor,
            format_bytes(budget),
            format_bytes(self.limit),
            FIT_MARGIN * 100.0,
            format_signed_bytes(kept),
        );
        Ok((chosen.factor, detail))
    }
}

#[cfg(test)]
mod tests;
