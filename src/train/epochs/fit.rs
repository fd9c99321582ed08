//! `memory.on_limit = "fit"`: plan, then lock. Before the first step the step is probed at the
//! configured micro-batch and at halves of it, and the run trains at the largest that fits
//! under the limit with [`MARGIN`] to spare, keeping the effective batch through accumulation.
//! From then on the limit is enforced as with `"fail"`.
//!
//! A probe runs the forward and backward passes of one step's first micro-batches (two when
//! the step accumulates, so that the running sum and a micro-batch's own gradients are both
//! counted) and adds the optimizer's state, which the first update will allocate. It changes
//! no weights (the gradients are dropped, never applied), draws nothing from the loader (the
//! items come from the dataset itself) and nothing that training draws later (each step seeds
//! the device's generator). Afterwards the free memory is given back (pool pages, heap pages)
//! and what the probes kept is measured and recorded. Preallocation is refused with `"fit"`:
//! the release would give its reservation back.

use super::probe::StepUnder;
use super::setup::Run;
use super::Epochs;
use crate::error::Error;
use crate::memory::policy::{LimitExceeded, Phase};
use crate::memory::MemorySource;
use crate::memory::{format_bytes, format_signed_bytes};
use crate::task::Task;

/// The share of the limit a fitted step may not use: room for what one step's probe does not
/// see (the update's temporaries, validation).
pub(super) const MARGIN: f64 = 0.10;

/// One probed micro-batch: its size and the peak predicted for a step at it.
struct Probe {
    micro_batch: usize,
    peak: u64,
}

/// What the last halving saved (0 if it saved nothing, or if there was none).
fn last_saving(probes: &[Probe]) -> u64 {
    match probes {
        [.., before, last] => before.peak.saturating_sub(last.peak),
        _ => 0,
    }
}

/// Whether halving further cannot reach `budget`: each halving saves at most half what the
/// one before saved (the activations halve), so once the last saving is no more than the gap
/// left, no micro-batch fits. The first halving from no accumulation is not compared: it adds
/// a gradient set that later halvings do not.
fn futile(probes: &[Probe], accumulation: usize, budget: u64) -> bool {
    let comparable = if accumulation > 1 { 2 } else { 3 };
    match probes {
        [.., last] if probes.len() >= comparable => {
            last_saving(probes) <= last.peak.saturating_sub(budget)
        }
        _ => false,
    }
}

impl<T: Task> Epochs<'_, T> {
    /// Probes, picks the micro-batch and records the choice; an error if none fits.
    pub(super) fn fit(&mut self, run: &mut Run<T>) -> Result<(), Error> {
        let limit = self
            .governor
            .control()
            .limit_bytes()
            .expect("validated: fit needs a limit");
        let budget = (limit as f64 * (1.0 - MARGIN)) as u64;
        let items = self.probe_items()?;
        let before = self.governor.control_mut().read()?.bytes_in_use;
        let (batch, accumulation) = (
            self.config.train.batch_size,
            self.config.train.accumulation_steps,
        );
        let mut probes = Vec::new();
        let mut factor = 1;
        loop {
            let micro_batch = batch.div_ceil(factor);
            let at = StepUnder::run_as_configured(run);
            let peak = self
                .probe(&at, &items, micro_batch, accumulation * factor)?
                .held
                + run.footprint.optimizer;
            probes.push(Probe { micro_batch, peak });
            if peak <= budget || micro_batch == 1 || futile(&probes, accumulation, budget) {
                break;
            }
            factor *= 2;
        }
        let kept = self.governor.control_mut().release()?.bytes_in_use as i64 - before as i64;
        let chosen = probes.last().expect("one probe at least");
        let tried = probes
            .iter()
            .map(|p| format!("{}: {}", p.micro_batch, format_bytes(p.peak)))
            .collect::<Vec<_>>()
            .join(", ");
        if chosen.peak > budget {
            return Err(self.governor.fail(LimitExceeded {
                limit,
                observed: chosen.peak,
                measure: match self.governor.control().source() {
                    MemorySource::Host => "peak in use with the optimizer's state to come",
                    MemorySource::CubeclPool => {
                        "reserved in the device pools with the optimizer's state to come"
                    }
                },
                epoch: 0,
                step: 0,
                micro_batch: chosen.micro_batch,
                accumulation_steps: accumulation * factor,
                futile_shrink: (chosen.micro_batch > 1).then(|| last_saving(&probes)),
                phase: Phase::Step,
                breakdown: None,
                advice: None,
            }));
        }
        let detail = format!(
            "micro-batch {batch} -> {}, accumulation_steps {accumulation} -> {} (effective \
             batch unchanged): a step's peak probed at {tried}, against {} ({} limit less \
             {:.0}%); the probes kept {} after release",
            chosen.micro_batch,
            accumulation * factor,
            format_bytes(budget),
            format_bytes(limit),
            MARGIN * 100.0,
            format_signed_bytes(kept),
        );
        self.governor.fit_layout(factor, detail)
    }
}
