//! The advisor's estimates as `summary.json`, `tidemark report` and a limit error show them:
//! each lever with the `--set` changes that apply it, what it saves, and what else it does.

use serde::{Deserialize, Serialize};

use super::{Estimate, Lever};
use crate::memory::usage::format_bytes;

/// A lever as `summary.json` holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeverRecord {
    /// What it is, e.g. `accumulation x4`.
    pub lever: String,
    /// The config changes that apply it, as `tidemark train --set` takes them.
    pub set: Vec<String>,
    /// Bytes off the training peak (negative: it rises).
    pub saves: i64,
    /// What else it does: what it adds, or why it cannot help.
    pub note: String,
}

impl From<&Estimate> for LeverRecord {
    fn from(e: &Estimate) -> Self {
        let adds = format_bytes(e.adds);
        let (lever, set, note) = match e.lever {
            Lever::Accumulation {
                k,
                micro_batch,
                steps,
            } => (
                format!("accumulation x{k}"),
                vec![
                    format!("train.batch_size={micro_batch}"),
                    format!("train.accumulation_steps={steps}"),
                ],
                if e.adds > 0 {
                    format!("the same update; holds a second gradient set ({adds})")
                } else {
                    "the same update".to_string()
                },
            ),
            Lever::SmallerMicroBatch { micro_batch } => (
                "a smaller micro-batch".to_string(),
                vec![format!("train.batch_size={micro_batch}")],
                "the effective batch halves".to_string(),
            ),
            Lever::Checkpointing => (
                "gradient checkpointing".to_string(),
                vec!["train.gradient_checkpointing=true".to_string()],
                "recomputes memory-bound operations in the backward pass".to_string(),
            ),
            Lever::Bf16 => (
                "bf16 compute".to_string(),
                vec!["train.precision=bf16".to_string()],
                format!("counts the bf16 copy of the weights ({adds})"),
            ),
            Lever::OffloadGradients { .. }
            | Lever::EmaOnHost { .. }
            | Lever::OffloadOptimizer { .. } => to_host(&e.lever),
            Lever::Sgd { momentum: false } => (
                "SGD in place of the optimizer".to_string(),
                vec!["train.optimizer=sgd".to_string()],
                format!(
                    "drops the optimizer's state ({adds}); keys only the optimizer takes \
                     (train.betas, train.eps, train.alpha) must go from the config"
                ),
            ),
            Lever::Sgd { momentum: true } => (
                "SGD without momentum".to_string(),
                vec![
                    "train.momentum=0".to_string(),
                    "train.nesterov=false".to_string(),
                ],
                format!("drops the momentum buffer ({adds})"),
            ),
        };
        Self {
            lever,
            set,
            saves: e.saves,
            note,
        }
    }
}

/// A lever that moves part of the run to host memory: its name, the keys it sets, and what it
/// costs per step.
fn to_host(lever: &Lever) -> (String, Vec<String>, String) {
    match *lever {
        Lever::OffloadGradients { moved } => (
            "the gradient sum in host memory".to_string(),
            vec!["train.offload.gradients=host".to_string()],
            format!(
                "the same update; moves {} between the device and the host per step",
                format_bytes(moved)
            ),
        ),
        Lever::EmaOnHost { moved } => (
            "the moving average in host memory".to_string(),
            vec!["train.ema.device=host".to_string()],
            format!(
                "the same average, blended in host memory and brought to the device for \
                 validation; moves {} from the device to the host per step",
                format_bytes(moved)
            ),
        ),
        Lever::OffloadOptimizer { moved } => (
            "the optimizer in host memory".to_string(),
            vec!["train.offload.optimizer=host".to_string()],
            format!(
                "the same update, run in host memory with an f32 master copy of the \
                 weights; moves {} between the device and the host per step",
                format_bytes(moved)
            ),
        ),
        _ => unreachable!("only the host-memory levers are described here"),
    }
}

/// The advisor's estimates as `summary.json` holds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdviceRecord {
    /// The training peak the savings are taken from.
    pub peak: u64,
    /// The levers, the largest saving first.
    pub levers: Vec<LeverRecord>,
}

impl AdviceRecord {
    /// A saving that counts: at least 1% of the peak.
    fn helps(&self, lever: &LeverRecord) -> bool {
        lever.saves > 0 && lever.saves as f64 >= 0.01 * self.peak as f64
    }

    /// The levers that help, as one clause each: `accumulation x4 saves 52.7 MiB (--set
    /// train.batch_size=1024 --set train.accumulation_steps=4)`; with `limit`, only those
    /// whose estimate brings the peak under it.
    pub fn helping(&self, limit: Option<u64>) -> Vec<String> {
        self.levers
            .iter()
            .filter(|l| self.helps(l))
            .filter(|l| limit.is_none_or(|limit| self.peak as i64 - l.saves <= limit as i64))
            .map(|l| {
                format!(
                    "{} saves {} ({})",
                    l.lever,
                    format_bytes(l.saves as u64),
                    sets(l)
                )
            })
            .collect()
    }

    /// The levers that cannot help, with why: `bf16 compute adds 3.7 MiB (counts ...)`.
    pub fn not_helping(&self) -> Vec<String> {
        self.levers
            .iter()
            .filter(|l| !self.helps(l))
            .map(|l| {
                let by = if l.saves < 0 {
                    format!("adds {}", format_bytes(l.saves.unsigned_abs()))
                } else {
                    format!("saves {}", format_bytes(l.saves as u64))
                };
                format!("{} {by} ({})", l.lever, l.note)
            })
            .collect()
    }

    /// The table `tidemark report` prints.
    pub fn table(&self) -> String {
        let mut out = format!(
            "what would lower the training peak of {} (estimated from one probed step per lever):\n",
            format_bytes(self.peak)
        );
        for l in self.levers.iter().filter(|l| self.helps(l)) {
            let share = 100.0 * l.saves as f64 / self.peak.max(1) as f64;
            out += &format!(
                "  {:<30} saves {:>10} ({share:>3.0}%)  {}; {}\n",
                l.lever,
                format_bytes(l.saves as u64),
                sets(l),
                l.note
            );
        }
        let not = self.not_helping();
        if !not.is_empty() {
            out += &format!("  cannot help: {}\n", not.join("; "));
        }
        out
    }
}

/// `--set a=1 --set b=2`.
fn sets(lever: &LeverRecord) -> String {
    lever
        .set
        .iter()
        .map(|s| format!("--set {s}"))
        .collect::<Vec<_>>()
        .join(" ")
}
