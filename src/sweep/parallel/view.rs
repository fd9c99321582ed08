//! What a parallel search tells as it goes: a line at each start and end with the trials
//! running, the budget leased and the trials waiting, and the live view's
//! [`SearchStatus`] (a terminal redraws it; piped, the lines say the same).

use std::time::Instant;

use super::scheduler::Pack;
use super::state::{in_use, State};
use super::timeline::now;
use crate::memory::format_bytes;
use crate::record::{Observer, RunningTrial, SearchStatus};

impl Pack {
    /// Tells the live view where the trials stand.
    pub(super) fn show(&self, state: &mut State<'_, '_>, observer: &mut dyn Observer) {
        let at = now();
        let t = &state.tally;
        let status = SearchStatus {
            running: (state.running.iter())
                .map(|r| RunningTrial {
                    name: r.trial.name(),
                    lease: r.lease,
                    seconds: at - r.started,
                })
                .collect(),
            budget: self.budget,
            waiting: state.waiting.len() + state.unprobed.len() + state.promoted.len(),
            completed: t.completed,
            // Paused trials promoted since are running or waiting, not paused.
            paused: state.held.len(),
            pruned: t.pruned,
            failed: t.failed,
        };
        observer.search_status(&status);
        state.shown = Instant::now();
    }

    /// `2 running (trial-003, trial-007), 24.6 MiB of 1.9 GiB leased; 9 waiting`.
    pub(super) fn status(&self, state: &State<'_, '_>) -> String {
        let names: Vec<String> = state.running.iter().map(|r| r.trial.name()).collect();
        let waiting = match state.waiting.len() + state.unprobed.len() {
            0 => String::new(),
            n => format!("; {n} waiting"),
        };
        let running = match names.len() {
            0 => "none running".to_string(),
            n => format!(
                "{n} running ({}), {} of {} leased",
                names.join(", "),
                format_bytes(in_use(&state.running)),
                format_bytes(self.budget)
            ),
        };
        format!("{running}{waiting}")
    }
}
