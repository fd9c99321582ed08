//! `memory.on_limit = "fit"`'s decisions, for the trainer's loop and a hand loop alike: the
//! step is probed at the configured micro-batch and at halves of it, and the run trains at the
//! largest that fits under the limit with [`MARGIN`] to spare, keeping the effective batch
//! through accumulation. Pure: the probes' figures in, the choice (or the error) out.

use crate::config::TrainConfig;
use crate::error::Error;
use crate::memory::policy::{LimitExceeded, Phase};
use crate::memory::MemorySource;
use crate::memory::{format_bytes, format_signed_bytes};
use crate::train::MemoryGuard;

/// The share of the limit a fitted step may not use: room for what one step's probe does not
/// see (the update's temporaries, validation).
pub(crate) const MARGIN: f64 = crate::memory::policy::FIT_MARGIN;

/// One probed micro-batch: its size and the peak predicted for a step at it.
pub(crate) struct FitProbe {
    pub(crate) micro_batch: usize,
    pub(crate) peak: u64,
}

/// What the probes were run against.
pub(crate) struct FitTarget {
    pub(crate) limit: u64,
    pub(crate) batch: usize,
    pub(crate) accumulation: usize,
    pub(crate) source: MemorySource,
}

impl FitTarget {
    /// The target of a run under `guard`'s limit with `train`'s layout.
    pub(crate) fn of(guard: &MemoryGuard, train: &TrainConfig) -> Self {
        FitTarget {
            limit: guard.limit_bytes().expect("validated: fit needs a limit"),
            batch: train.batch_size,
            accumulation: train.accumulation_steps,
            source: guard.source(),
        }
    }

    /// Probes a step at the configured micro-batch and at halves of it until one fits or no
    /// smaller one can: `probe(micro_batch, micro_steps)` gives a step's predicted peak.
    /// Returns the probes and the factor of the last.
    pub(crate) fn probe_halves(
        &self,
        mut probe: impl FnMut(usize, usize) -> Result<u64, Error>,
    ) -> Result<(Vec<FitProbe>, usize), Error> {
        let mut probes = Vec::new();
        let mut factor = 1;
        loop {
            let micro_batch = self.batch.div_ceil(factor);
            let peak = probe(micro_batch, self.accumulation * factor)?;
            probes.push(FitProbe { micro_batch, peak });
            if self.done(&probes) {
                return Ok((probes, factor));
            }
            factor *= 2;
        }
    }

    /// Why `probed` found no micro-batch that fits, or `None` where the last one fits: what
    /// an `offload` memory action says before the probes run again.
    pub(crate) fn short(&self, (probes, _): &(Vec<FitProbe>, usize)) -> Option<String> {
        let last = probes.last().expect("one probe at least");
        (last.peak > self.budget()).then(|| {
            format!(
                "no micro-batch fits: a step at micro-batch {} peaks at {}, over {} ({} limit \
                 less {:.0}%); probing again",
                last.micro_batch,
                format_bytes(last.peak),
                format_bytes(self.budget()),
                format_bytes(self.limit),
                MARGIN * 100.0
            )
        })
    }

    /// After the probes: gives back what they took, and records the chosen micro-batch as a
    /// `fit` memory action, or fails the run if none fits. `before`: bytes in use before them.
    pub(crate) fn conclude(
        &self,
        guard: &mut MemoryGuard,
        (probes, factor): (Vec<FitProbe>, usize),
        before: u64,
    ) -> Result<(), Error> {
        let kept = guard.release()? as i64 - before as i64;
        match self.choose(&probes, factor, kept) {
            Ok((factor, detail)) => guard.fit_layout(factor, detail),
            Err(e) => Err(guard.fail(e)),
        }
    }

    /// What a fitted step may hold: the limit less [`MARGIN`].
    pub(crate) fn budget(&self) -> u64 {
        (self.limit as f64 * (1.0 - MARGIN)) as u64
    }

    /// Whether to stop probing after `probes`: the last fits, is at one sample, or halving
    /// further cannot reach the budget.
    fn done(&self, probes: &[FitProbe]) -> bool {
        let last = probes.last().expect("one probe at least");
        last.peak <= self.budget()
            || last.micro_batch == 1
            || futile(probes, self.accumulation, self.budget())
    }

    /// The layout's factor and the `fit` memory action's detail, or the error if no probed
    /// micro-batch fits. `kept`: what the probes kept in use after their release.
    fn choose(
        &self,
        probes: &[FitProbe],
        factor: usize,
        kept: i64,
    ) -> Result<(usize, String), LimitExceeded> {
        let chosen = probes.last().expect("one probe at least");
        let budget = self.budget();
        let tried = probes
            .iter()
            .map(|p| format!("{}: {}", p.micro_batch, format_bytes(p.peak)))
            .collect::<Vec<_>>()
            .join(", ");
        if chosen.peak > budget {
            return Err(LimitExceeded {
                limit: self.limit,
                observed: chosen.peak,
                measure: match self.source {
                    MemorySource::Host => "peak in use with the optimizer's state to come",
                    MemorySource::CubeclPool => {
                        "reserved in the device pools with the optimizer's state to come"
                    }
                },
                epoch: 0,
                step: 0,
                micro_batch: chosen.micro_batch,
                accumulation_steps: self.accumulation * factor,
                futile_shrink: (chosen.micro_batch > 1).then(|| last_saving(probes)),
                phase: Phase::Step,
                breakdown: None,
                advice: None,
                offload: Box::default(),
            });
        }
        let detail = format!(
            "micro-batch {} -> {}, accumulation_steps {} -> {} (effective batch unchanged): a \
             step's peak probed at {tried}, against {} ({} limit less {:.0}%); the probes kept \
             {} after release",
            self.batch,
            chosen.micro_batch,
            self.accumulation,
            self.accumulation * factor,
            format_bytes(budget),
            format_bytes(self.limit),
            MARGIN * 100.0,
            format_signed_bytes(kept),
        );
        Ok((factor, detail))
    }
}

/// What the last halving saved (0 if it saved nothing, or if there was none).
fn last_saving(probes: &[FitProbe]) -> u64 {
    match probes {
        [.., before, last] => before.peak.saturating_sub(last.peak),
        _ => 0,
    }
}

/// Whether halving further cannot reach `budget`: each halving saves at most half what the
/// one before saved (the activations halve), so once the last saving is no more than the gap
/// left, no micro-batch fits. The first halving from no accumulation is not compared: it adds
/// a gradient set that later halvings do not.
fn futile(probes: &[FitProbe], accumulation: usize, budget: u64) -> bool {
    let comparable = if accumulation > 1 { 2 } else { 3 };
    match probes {
        [.., last] if probes.len() >= comparable => {
            last_saving(probes) <= last.peak.saturating_sub(budget)
        }
        _ => false,
    }
}
