//! Where a search with trials in parallel stands, for a live view on a terminal: the trials
//! running with their leases, the budget in use, and the trials done, paused, pruned, failed
//! and waiting.

use crate::memory::format_bytes;

/// One running trial.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningTrial {
    /// Its name, `trial-007`.
    pub name: String,
    /// Its lease, in bytes.
    pub lease: u64,
    /// Seconds since its child started.
    pub seconds: f64,
}

/// A search's trials as they stand.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchStatus {
    /// The trials running now.
    pub running: Vec<RunningTrial>,
    /// The budget their leases share, in bytes.
    pub budget: u64,
    /// Trials not started yet (and promoted ones about to go on).
    pub waiting: usize,
    /// Trials that trained to their end.
    pub completed: usize,
    /// Trials the pruner holds at a rung.
    pub paused: usize,
    /// Trials the pruner stopped.
    pub pruned: usize,
    /// Trials that failed.
    pub failed: usize,
}

impl SearchStatus {
    /// The view, a line for the search and one per running trial:
    ///
    /// ```text
    /// leased 20.8 MiB of 11.5 GiB · 2 running, 9 waiting · 5 completed, 2 paused, 3 pruned, 0 failed
    ///   trial-003  lease 10.4 MiB  1.2 s
    /// ```
    pub fn lines(&self) -> String {
        let leased: u64 = self.running.iter().map(|r| r.lease).sum();
        let mut out = format!(
            "leased {} of {} · {} running, {} waiting · {} completed, {} paused, {} pruned, {} \
             failed",
            format_bytes(leased),
            format_bytes(self.budget),
            self.running.len(),
            self.waiting,
            self.completed,
            self.paused,
            self.pruned,
            self.failed
        );
        for r in &self.running {
            out.push_str(&format!(
                "\n  {}  lease {}  {:.1} s",
                r.name,
                format_bytes(r.lease),
                r.seconds
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_sums_the_running_leases_and_lists_each_trial() {
        let status = SearchStatus {
            running: vec![
                RunningTrial {
                    name: "trial-003".into(),
                    lease: 10 << 20,
                    seconds: 1.25,
                },
                RunningTrial {
                    name: "trial-011".into(),
                    lease: 6 << 20,
                    seconds: 0.4,
                },
            ],
            budget: 64 << 20,
            waiting: 9,
            completed: 5,
            paused: 2,
            pruned: 3,
            failed: 1,
        };
        assert_eq!(
            status.lines(),
            "leased 16.0 MiB of 64.0 MiB · 2 running, 9 waiting · 5 completed, 2 paused, 3 \
             pruned, 1 failed\n  trial-003  lease 10.0 MiB  1.2 s\n  trial-011  lease 6.0 MiB  \
             0.4 s"
        );
    }
}
