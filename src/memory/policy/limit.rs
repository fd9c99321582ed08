//! The hard limit: what it checks, when, and the typed error of a breach.

use std::fmt;

use super::{fit_target, MemoryAction, MemoryPolicy, Phase, RunState, FIT_MARGIN};
use crate::config::OnLimit;
use crate::memory::advice::AdviceRecord;
use crate::memory::breakdown::Breakdown;
use crate::memory::usage::{format_bytes, MemorySource, MemoryUsage};

/// The memory limit was exceeded (or would be, before training starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitExceeded {
    /// The limit in bytes.
    pub limit: u64,
    /// The figure that exceeded it.
    pub observed: u64,
    /// Which figure that is.
    pub measure: &'static str,
    /// Epoch (0 before training).
    pub epoch: usize,
    /// Optimizer step (0 before training).
    pub step: usize,
    /// Micro-batch at the time.
    pub micro_batch: usize,
    /// Accumulation steps at the time.
    pub accumulation_steps: usize,
    /// With `on_limit = "shrink"`, when shrinking stopped early: what the last halving saved.
    pub futile_shrink: Option<u64>,
    /// Whether the run shrinks at a breach (`on_limit = "shrink"`): the error then advises
    /// no shrink.
    pub shrinks: bool,
    /// When it was exceeded: before training, in a step, in validation or in a checkpoint.
    pub phase: Phase,
    /// The figure by category, where the run's footprint is known.
    pub breakdown: Option<Box<Breakdown>>,
    /// The memory advisor's levers, estimated at the breach, where it could probe.
    pub advice: Option<Box<AdviceRecord>>,
    /// What offload would save, for each part that `train.offload` keeps on the device.
    pub offload: Box<[OffloadHint]>,
}

/// A part of the step that `train.offload` keeps on the device, and what moving it to host
/// memory would save there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadHint {
    /// The key that moves it (`train.offload.gradients`, `train.offload.optimizer`).
    pub key: &'static str,
    /// Device bytes it holds.
    pub saves: u64,
}

impl LimitExceeded {
    /// The figure that was exceeded where it is below the limit: in a probe of
    /// `on_limit = "fit"` (a step breached at step 0), fit's target, the limit less
    /// [`FIT_MARGIN`] ([`fit_target`]).
    pub fn target(&self) -> Option<u64> {
        (self.phase == Phase::Step && self.step == 0).then(|| fit_target(self.limit))
    }

    /// The offload that would bring the figure under the limit (under `fit`'s budget, for a
    /// probe of `fit`), with what it saves: the one part that does alone, else both, else
    /// nothing.
    pub fn offload_fix(&self) -> Option<String> {
        let room = self.target().unwrap_or(self.limit);
        let over = self.observed.saturating_sub(room);
        let one =
            |h: &OffloadHint| format!("{} = \"host\" (saves {})", h.key, format_bytes(h.saves));
        if let Some(h) = self.offload.iter().find(|h| h.saves >= over) {
            return Some(one(h));
        }
        let all: u64 = self.offload.iter().map(|h| h.saves).sum();
        (self.offload.len() > 1 && all >= over).then(|| {
            self.offload
                .iter()
                .map(one)
                .collect::<Vec<_>>()
                .join(" with ")
        })
    }
}

impl LimitExceeded {
    /// A concrete change that would likely fit.
    pub fn suggestion(&self) -> String {
        if let Some(saved) = self.futile_shrink {
            return format!(
                "the last halving of the micro-batch saved {}, and each further halving saves at \
                 most half as much, so no micro-batch fits: parameters, gradients and optimizer \
                 state dominate this peak; raise memory.limit or use a smaller model",
                format_bytes(saved)
            );
        }
        if self.phase == Phase::Checkpoint {
            let copied = match self.epoch {
                0 => "the weights (checkpoint 0, before the first step: the optimizer has no state yet)",
                _ => "the whole optimizer state",
            };
            return format!(
                "writing a checkpoint copies {copied} into host memory at once, and the \
                 checkpoint is complete on disk; {}",
                self.holds_most()
            );
        }
        if self.phase == Phase::EpochEnd && self.shrinks {
            return format!(
                "under memory.on_limit = \"shrink\" validation runs again at halves of its \
                 micro-batch, and at a micro-batch of 1 it still holds more (or the epoch's \
                 end, without validation, does): {}",
                self.holds_most()
            );
        }
        if self.phase == Phase::EpochEnd {
            return "validation runs in micro-batches of the training step's size, without \
                    gradients; a smaller train.batch_size, with proportionally more \
                    train.accumulation_steps (or memory.on_limit = \"shrink\"), makes them \
                    smaller"
                .into();
        }
        if self.phase == Phase::RunStart {
            return self.at_rest();
        }
        if self.micro_batch > 1 {
            format!(
                "try train.batch_size = {} with train.accumulation_steps = {} (same effective batch), \
                 or memory.on_limit = \"shrink\"",
                self.micro_batch.div_ceil(2),
                self.accumulation_steps * 2
            )
        } else {
            format!("the micro-batch is already 1, and {}", self.holds_most())
        }
    }
}

/// What holds a figure that no smaller micro-batch lowers (at rest, a checkpoint, validation or
/// a step at a micro-batch of 1), by its breakdown, and what lowers that.
impl LimitExceeded {
    /// The category that holds the most of the figure, and its bytes and share
    /// (`data 10.4 MiB (53%)`), where its breakdown is known.
    fn largest(&self) -> Option<(&'static str, String)> {
        let b = self.breakdown.as_deref()?;
        let (name, bytes) = b.ranked().into_iter().next()?;
        (bytes > 0).then(|| (name, b.share(name, bytes)))
    }

    /// `data 10.4 MiB (53%) holds the most of it; ...`, with what lowers it.
    fn holds_most(&self) -> String {
        match self.largest() {
            Some((name, share)) => format!("{share} holds the most of it; {}", self.relief(name)),
            None => "raise memory.limit or use a smaller model".into(),
        }
    }

    /// Why a run cannot start under the limit, by its estimate at rest: the category that
    /// dominates the estimate, and what lowers it (a smaller model where the parameters,
    /// gradients and optimizer state alone exceed the limit).
    fn at_rest(&self) -> String {
        let (Some(b), Some((name, share))) = (self.breakdown.as_deref(), self.largest()) else {
            return "what the run holds before its first step, with the gradients and optimizer \
                    state that step allocates, exceeds it; raise memory.limit or use a smaller \
                    model"
                .into();
        };
        let model = b.weights + b.gradients + b.optimizer;
        match model > self.limit {
            true => format!(
                "{share} dominates the estimate, and the model's parameters, gradients and \
                 optimizer state alone exceed it ({}); raise memory.limit or use a smaller model",
                format_bytes(model)
            ),
            false => format!(
                "{share} dominates the estimate, where the model's parameters, gradients and \
                 optimizer state are {}; {}",
                format_bytes(model),
                self.relief(name)
            ),
        }
    }

    /// What lowers what `category` holds of this figure.
    fn relief(&self, category: &str) -> &'static str {
        match category {
            "data" => {
                "the dataset is held in memory whole: raise memory.limit or train on less data"
            }
            "other" => {
                "that is the backend's buffers and the process's own allocations: raise \
                 memory.limit"
            }
            "optimizer" => {
                "raise memory.limit, or use an optimizer with less state (train.optimizer = \
                 \"sgd\" without momentum holds none)"
            }
            // A checkpoint's copy, counted outside the steps.
            "activations" if self.phase == Phase::Checkpoint && self.epoch > 0 => {
                "raise memory.limit, or use a smaller model or train.optimizer = \"sgd\" (no \
                 optimizer state)"
            }
            _ => "raise memory.limit or use a smaller model",
        }
    }
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let when = match self.phase {
            Phase::RunStart => "before training".to_string(),
            Phase::Checkpoint => format!("while writing the checkpoint of epoch {}", self.epoch),
            Phase::EpochEnd => format!("in the validation of epoch {}", self.epoch),
            Phase::Step if self.step == 0 => format!(
                "in a probe before training (micro-batch {}, accumulation_steps {})",
                self.micro_batch, self.accumulation_steps
            ),
            Phase::Step | Phase::RunEnd => format!(
                "at step {} of epoch {} (micro-batch {}, accumulation_steps {})",
                self.step, self.epoch, self.micro_batch, self.accumulation_steps
            ),
        };
        // The headline, then the detail on the lines after it.
        // An estimate at rest is no peak: its categories without where a peak fell.
        let breakdown = match (&self.breakdown, self.phase) {
            (Some(b), Phase::RunStart) => format!("\n  by category, at rest: {}", b.categories()),
            (Some(b), _) => format!("\n  by category: {b}"),
            (None, _) => String::new(),
        };
        let advice = match &self.advice {
            Some(advice) => self.advised(advice),
            None => self.suggestion(),
        };
        let advice = match self.offload_fix() {
            Some(fix) => format!(
                "offload to host memory would fit: {fix}, or \"auto\" to move it only where \
                 the limit needs it; {advice}"
            ),
            None => advice,
        };
        let exceeded = match self.target() {
            Some(target) => format!(
                ": fit's target {} (the limit less {:.0}%, room for what one probed step does \
                 not show) exceeded",
                format_bytes(target),
                FIT_MARGIN * 100.0
            ),
            None => " exceeded".to_string(),
        };
        write!(
            f,
            "memory limit {}{exceeded}: {} {} {when}{breakdown}\n  {advice}",
            format_bytes(self.limit),
            format_bytes(self.observed),
            self.measure,
        )
    }
}

impl LimitExceeded {
    /// The advisor's levers that would each bring the peak under the limit, or the one that
    /// saves most, then the policies that act on their own.
    fn advised(&self, advice: &AdviceRecord) -> String {
        let fitting = advice.helping(Some(self.limit));
        let levers = if fitting.is_empty() {
            match advice.helping(None).first() {
                Some(best) => format!(
                    "the memory advisor finds no single change that fits; the most it \
                     estimates is: {best}"
                ),
                None => "the memory advisor finds no change to the step that lowers this peak; \
                         raise memory.limit or use a smaller model"
                    .into(),
            }
        } else {
            let best: Vec<&str> = fitting.iter().take(3).map(String::as_str).collect();
            format!(
                "the memory advisor estimates that each of these fits alone: {}",
                best.join("; ")
            )
        };
        format!("{levers}{}", self.policies_left())
    }

    /// What the limit policies can still do: nothing more where a shrink was futile or `fit`'s
    /// probes found nothing (a probe is a breach at step 0), `fit` or `shrink` otherwise.
    fn policies_left(&self) -> String {
        match self.futile_shrink {
            Some(saved) => format!(
                "; shrinking stopped: the last halving of the micro-batch saved {}, and each \
                 further halving saves at most half as much",
                format_bytes(saved)
            ),
            None if self.phase == Phase::Step && self.step == 0 => String::new(),
            None => "; or memory.on_limit = \"fit\" (picks the micro-batch before the first \
                     step) or \"shrink\""
                .into(),
        }
    }
}

impl std::error::Error for LimitExceeded {}

/// A hard cap.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// The cap in bytes.
    pub bytes: u64,
    /// What to do on a breach.
    pub on_limit: OnLimit,
}

/// The figure a limit applies to: on the host the exact high-water mark of accounted bytes; on
/// CubeCL pools what is taken from the device (reserved pages), which bounds the in-use peak.
pub fn held(usage: &MemoryUsage) -> (u64, &'static str) {
    match usage.source {
        MemorySource::Host => (usage.peak_bytes_in_use, "peak in use (host)"),
        MemorySource::CubeclPool => (
            usage.bytes_reserved.max(usage.peak_bytes_in_use),
            "reserved in the device pools",
        ),
    }
}

impl Limit {
    /// Whether halving the micro-batch again cannot bring `observed` under the limit, and if
    /// so what the last halving saved. Halving the micro-batch halves activation memory, so
    /// each halving saves at most half what the one before saved, and all further halvings
    /// together at most what the last one did. That holds once the previous attempt already
    /// accumulated (before that, the first halving also adds the accumulated-gradient buffer).
    fn futile_shrink(&self, observed: u64, state: &RunState) -> Option<u64> {
        if self.on_limit != OnLimit::Shrink {
            return None;
        }
        let previous = state.previous_attempt?;
        if previous.accumulation_steps < 2 {
            return None;
        }
        let saved = previous.observed.saturating_sub(observed);
        (observed.saturating_sub(saved) > self.bytes).then_some(saved)
    }
}

impl MemoryPolicy for Limit {
    fn decide(&self, phase: Phase, usage: &MemoryUsage, state: &RunState) -> Vec<MemoryAction> {
        let breach = |observed: u64, measure: &'static str| LimitExceeded {
            limit: self.bytes,
            observed,
            measure,
            epoch: state.epoch,
            step: state.step,
            micro_batch: state.layout.micro_batch(),
            accumulation_steps: state.layout.micro_steps(),
            futile_shrink: None,
            shrinks: self.on_limit == OnLimit::Shrink,
            phase,
            breakdown: None,
            advice: None,
            offload: Box::default(),
        };
        match phase {
            Phase::RunStart if state.resting_estimate > self.bytes => vec![MemoryAction::Fail(
                breach(state.resting_estimate, "needed at rest (estimated)"),
            )],
            // Outside steps: validation (in its own window) and checkpoints. Neither shrinks
            // here: validation shrinks itself before this check (HandLoop::validate), and a
            // checkpoint's size is the model's.
            Phase::EpochEnd | Phase::Checkpoint => {
                let (observed, measure) = held(usage);
                match observed > self.bytes {
                    true => vec![MemoryAction::Fail(breach(observed, measure))],
                    false => Vec::new(),
                }
            }
            Phase::Step => {
                let (observed, measure) = held(usage);
                let futile = self.futile_shrink(observed, state);
                if observed <= self.bytes {
                    Vec::new()
                } else if let Some(saved) = futile {
                    vec![MemoryAction::Fail(LimitExceeded {
                        futile_shrink: Some(saved),
                        ..breach(observed, measure)
                    })]
                } else if self.on_limit == OnLimit::Shrink && state.layout.micro_batch() > 1 {
                    vec![MemoryAction::ShrinkBatch {
                        layout: state.layout.halved(),
                    }]
                } else {
                    vec![MemoryAction::Fail(breach(observed, measure))]
                }
            }
            _ => Vec::new(),
        }
    }
}
