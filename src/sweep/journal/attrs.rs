//! The attributes tidemark keeps in a study's journal, beside what Optuna records: which trial
//! of the plan a trial is, who trains it and whether it beats, where it paused, what it took.

use serde_json::json;

use super::op::Op;

/// Study system attribute: the plan's identity (method, keys, trials, monitor).
pub const PLAN: &str = "tidemark:plan";
/// Study system attribute: the search whole, as `plan.json` shows it (a
/// [`SearchPlan`](crate::sweep::SearchPlan)): what a resume and a report of its sweep directory
/// go on from. Set by the worker that creates the study, and again by a resume that changes it
/// (its trials at once, its budget).
pub const SEARCH: &str = "tidemark:search";
/// Study system attribute: the plan's trial numbers in the order they are created (the
/// search's `order`: largest probed step first, or as listed), set once by the first worker.
pub const ORDER: &str = "tidemark:order";
/// Study system attribute, followed by a worker's id: where its process runs (its
/// [`process_space`](super::worker_id::process_space)) and its pid, so that a worker on the
/// same machine can tell that its process has ended.
pub const PROCESS_OF: &str = "tidemark:process:";
/// Trial system attribute: the trial it trains again (a resumed search's failed, deleted or
/// shorter trial): `{"trial": id, "ended": "failed" | "completed"}`, how that one ended.
pub const RETRY_OF: &str = "tidemark:retry_of";
/// Trial system attribute: its 1-based number in the plan (`trial-007`).
pub const NUMBER: &str = "tidemark:trial";
/// Trial system attribute: the worker that trains it (null when none does).
pub const WORKER: &str = "tidemark:worker";
/// Trial system attribute: the time of its worker's last heartbeat.
pub const BEAT: &str = "tidemark:heartbeat";
/// Trial system attribute: the finished trials TPE drew it from, as inclusive runs of numbers
/// (`[[1, 5], [7, 9]]`).
pub const DRAWN_FROM: &str = "tidemark:drawn_from";
/// Trial system attribute: the ASHA rung it waits at (null once promoted).
pub const PAUSED: &str = "tidemark:paused";
/// Trial system attribute: the ASHA rung it was last promoted from.
pub const PROMOTED: &str = "tidemark:promoted";
/// Study system attribute, followed by an interval's epoch: population based training's
/// decision there, `{"exploits": [[member, copied], ...]}` by trial number, recorded once,
/// with the checkpoints copied.
pub const GENERATION: &str = "tidemark:pbt:";
/// Trial system attribute, followed by an interval's epoch: the member it copied there and the
/// settings it goes on with, `{"from": number, "values": {key: value}}`.
pub const EXPLOIT: &str = "tidemark:exploit:";
/// Trial system attribute: its runs in a child process under its lease, as the worker that
/// packed it keeps them (a [`Slot`](crate::sweep::Slot): the lease, the child's pid, when each
/// run started and ended), written at each start and end.
pub const SLOT: &str = "tidemark:slot";
/// Study system attribute, followed by a worker's id: the budget its packed trials shared and
/// how many it ran at once, `{"budget_bytes": n, "parallel": n}`.
pub const PACKED: &str = "tidemark:packed:";
/// Trial user attribute: why it failed, or why it was pruned.
pub const REASON: &str = "tidemark:reason";
/// Trial user attribute: what it took and gave back (its row's memory figures).
pub const MEMORY: &str = "tidemark:memory";
/// Trial user attribute: the epochs it trained.
pub const EPOCHS: &str = "tidemark:epochs";

/// The user attributes of trial `id` as it ends: the epochs it trained, what it took (its
/// row's memory figures, as JSON), and why it failed or was pruned.
pub fn ended(
    id: usize,
    epochs: Option<usize>,
    memory: Option<serde_json::Value>,
    reason: Option<&str>,
) -> Vec<Op> {
    let attrs = [
        (EPOCHS, epochs.map(|e| json!(e))),
        (MEMORY, memory),
        (REASON, reason.map(|r| json!(r))),
    ];
    (attrs.into_iter())
        .filter_map(|(key, value)| {
            Some(Op::UserAttr {
                trial: id,
                key: key.into(),
                value: value?,
            })
        })
        .collect()
}

/// A heartbeat of trial `id`: the time it was written (for people; workers compare changes).
pub fn beat(id: usize) -> Op {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    Op::SystemAttr {
        trial: id,
        key: BEAT.into(),
        value: json!((unix * 1000.0).round() / 1000.0),
    }
}
