//! `tidemark sweep`: a sweep of runs (`runs`), N trainings of one config with new seeds, or,
//! with a `[sweep]` table in the config, a search ([`search`]) of its trials (a sweep of runs is
//! one too), ranked by the monitored metric. Every search is a study (`study/`, the one
//! engine): of one worker in one process, its journal in its sweep directory, or of many
//! sharing a storage. In layers, each importing only those before it:
//! 1. what a search is: its `[sweep]` table (`space/`), `shard`, `signals`; then `plan` (the
//!    plan its journal keeps and `plan.json` shows), `trial_config` and `resume_set` (what a
//!    resume may change);
//! 2. its rules (`prune/`: ASHA, the median rule, a trial's gate), and one trial's run, found
//!    finished, resumed or started (`trial_run`);
//! 3. what they take (`sizing/`: the probes, the leases, the budget) and the checks made
//!    before anything is written (`checks`);
//! 4. a trial in a child process under its lease (`parallel/`);
//! 5. what they gave (`results/`: rows, ranking, tables, `sweep.svg`);
//! 6. the commands' parts: `search` (plan, shared directory, ranking), `runs` (a search of one
//!    config's runs), and `resume`;
//! 7. the engine, `study/`.

mod checks;
mod from_code;
mod journal;
mod parallel;
mod pbt;
mod plan;
mod prune;
#[cfg(test)]
mod readers_tests;
mod results;
mod resume;
mod resume_set;
mod runs;
mod search;
mod shard;
pub(crate) mod signals;
mod sizing;
mod space;
mod study;
mod trial_config;
mod trial_run;

pub use checks::check_search;
pub use from_code::Search;
pub use parallel::{run_child, runs_trials, Slot, Timeline};
pub use plan::SearchPlan;
pub use results::{
    compact, none_completed, rank, ranking, runs_table, schedule_text, table, SweepRow, TrialRow,
    TrialStatus, RETAINED_TOLERANCE, RSS_NOISE_BYTES, RSS_TOLERANCE,
};
pub use resume::{resume_sweep, Swept};
pub use resume_set::Changes;
pub use runs::sweep;
pub use shard::Shard;
pub use sizing::LEASE_MARGIN;
pub use space::{
    Budget, Domain, DomainError, Method, Order, Packing, PruneConfig, PruneMethod, Space, Trial,
    DEFAULT_BUDGET_SHARE,
};
pub use study::{
    merge, rejoin_alone, report as report_study, search_alone as search, trial_child,
    work as work_on_study, StudyReport,
};
pub use trial_config::trial_configs;
