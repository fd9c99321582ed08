//! A search: the `[sweep]` table's trials, each checked before any trains, then trained one
//! after another in one process (each in `trial-NNN/` under the sweep's directory, with its
//! resolved `config.toml`), ranked by the monitored metric. A trial that fails is recorded
//! with its reason and the search goes on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::checks::check_trials;
use super::parallel::timeline::Timeline;
use super::parallel::{train_parallel, Packed};
use super::plan::{read_plan, SearchPlan, TpePlan};
use super::prune::Pruner;
use super::results::journal::write_journal;
use super::results::rank::{rank, ranking, TrialRow};
use super::results::rows::read_rows;
use super::results::sweep_svg::picture;
use super::sequential::Sequential;
use super::signals::StopOnSignal;
use super::sizing::preflight::arrange;
use super::space::{Order, Space, Trial};
use super::tpe_draws::Draws;
use super::trial_config::{checked_trial_config, TrialBuild};
use super::trial_run::TrialErrors;
use crate::config::{to_toml, ConfigError, RunConfig};
use crate::error::Error;
use crate::kinds::Kinds;
use crate::record::{write_atomic, Observer};
use crate::report::render_search_svg;
use crate::train::run_dir;

/// What `space` plans, as `plan.json` keeps it.
pub(super) fn plan_of(space: &Space) -> SearchPlan {
    SearchPlan {
        monitor: space.monitor.name().to_string(),
        mode: space.monitor.mode(),
        trials: space.trials(),
        order: space.order,
        packing: space.packing,
        prune: space.prune,
        tpe: TpePlan::of(space),
        vary: space.vary.clone(),
        method: Some(space.method),
        seed: Some(space.seed),
    }
}

/// The sweep directory a study's workers share: created by the first, and refused if an
/// earlier search with other trials planned it.
pub(super) fn shared_dir(dir: &Path, plan: &SearchPlan) -> Result<PathBuf, Error> {
    run_dir::make_output_dir(dir)?;
    if dir.join("plan.json").is_file() {
        let earlier = read_plan(dir)?.search;
        if earlier.as_ref().map(|p| (&p.trials, &p.monitor)) != Some((&plan.trials, &plan.monitor))
        {
            return Err(Error::Sweep(crate::error::SweepError::Plan {
                origin: dir.display().to_string(),
                message: "holds a sweep with other trials; the workers of one search \
                          share its directory, so give this search another run.name or \
                          run.output_dir"
                    .into(),
            }));
        }
    }
    Ok(dir.to_path_buf())
}

/// Trains the plan's trials that have not finished, in the plan's [`Order`] (largest probed
/// step first, by default), and writes their ranking: `sweep.json` and `sweep.md`.
///
/// Nothing per trial stays in memory while the trials train (but a failed trial's error): each
/// trial's config is built when it is needed (checked, probed, trained) and dropped after, and
/// the rows are read back from the trials' `summary.json` once all have trained. So a search of
/// any length keeps the process flat (docs/search.md, "A long search stays flat").
pub fn run_trials(
    kinds: &Kinds,
    dir: &Path,
    config: &RunConfig,
    plan: &SearchPlan,
    mut observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<TrialRow>), Error> {
    let base = to_toml(config);
    check_trials(kinds, &base, &plan.trials, dir, &plan.monitor)?;
    // Checked by the kinds too: a trial TPE draws is built here, after the checks.
    let check = |c: &RunConfig| kinds.check(c);
    let config_of = |t: &Trial| checked_trial_config(&base, t, dir, &check).map_err(Error::Config);
    let n = plan.trials.len();
    let epochs = config.train.epochs;
    let mut pruner = open_pruner(dir, plan, epochs, &mut *observer(0, n))?;
    // Trials the pruner is done with (a resumed search's) are neither probed nor trained.
    let settled = |n: usize| pruner.as_ref().is_some_and(|p| p.settled(n));
    let mine = (plan.trials.iter())
        .filter(|t| !settled(t.number))
        .collect();
    // In parallel: the budget, known before the probes run. The signal handlers, with which
    // a signal from here on, the probes included, stops the search with exit code 130,
    // resumable: children are stopped by the scheduler, a trial in this process at its step.
    let budget = budget_of(plan, config)?;
    let stop = StopOnSignal::install()?;
    let mut draws = Draws::of(dir, plan);
    // TPE draws from the trials before: they train in their numbers' order.
    let order = draws.as_ref().map_or(plan.order, |_| Order::Listed);
    let build = TrialBuild {
        kinds,
        config: &config_of,
    };
    let mine = arrange(
        mine,
        build,
        (order, budget.is_some()),
        dir,
        &mut *observer(0, n),
        Some(stop.flag()),
    )?;
    let errors = match budget {
        Some(budget) => {
            let packed = Packed {
                parallel: plan.packing.parallel,
                budget,
                fit: plan.packing.fit_in_lease,
            };
            let chosen = (pruner.as_mut(), draws.as_mut());
            let observer = &mut *observer(0, n);
            train_parallel(dir, packed, mine, build, observer, chosen, stop.flag())?
        }
        None => {
            let todo = mine.into_iter().map(|(t, _)| t).collect();
            let mut sequential = Sequential {
                dir,
                build,
                observer: &mut observer,
                n,
                draws: draws.as_mut(),
                stop: stop.shared(),
            };
            sequential.train(todo, pruner.as_mut())?
        }
    };
    // TPE's draws are in the plan on disk now.
    let plan = match draws {
        Some(_) => &read_plan(dir)?.search.expect("a search's plan"),
        None => plan,
    };
    let rows = write_ranked(dir, plan, errors)?;
    // A signal at the very end still says so: the results are whole, and a resume says so.
    if stop.flag().load(Ordering::SeqCst) {
        return Err(Error::Interrupted);
    }
    drop(stop);
    Ok((dir.to_path_buf(), rows))
}

/// The budget of `plan`'s trials in parallel; `None` for one at a time.
fn budget_of(plan: &SearchPlan, config: &RunConfig) -> Result<Option<u64>, Error> {
    let parallel = plan.packing.parallel > 1;
    (parallel.then(|| super::sizing::budget::resolve(&plan.packing, config))).transpose()
}

/// The pruner of `plan`'s trials, if it prunes, with the record an earlier process
/// left checked against the trials' own files; what that rebuilt is told to `observer`.
fn open_pruner(
    dir: &Path,
    plan: &SearchPlan,
    epochs: usize,
    observer: &mut dyn Observer,
) -> Result<Option<Pruner>, Error> {
    let Some(prune) = plan.prune else {
        return Ok(None);
    };
    let numbers: Vec<usize> = plan.trials.iter().map(|t| t.number).collect();
    let (monitor, mode) = (&plan.monitor, plan.mode);
    let mut pruner = Pruner::open(dir, prune, monitor, mode, epochs, &numbers)?;
    for line in pruner.rebuilt() {
        observer.message(&line);
    }
    Ok(Some(pruner))
}

/// The rows of `plan`'s trials, read from their summaries (`errors`: those whose last run
/// failed), ranked, and written: `sweep.json`, `sweep.md` and `journal.log`.
fn write_ranked(
    dir: &Path,
    plan: &SearchPlan,
    errors: TrialErrors,
) -> Result<Vec<TrialRow>, Error> {
    let mut rows = read_rows(dir, plan, errors)?;
    rank(&mut rows, plan.mode);
    crate::failpoint::pass("results");
    write_results(dir, plan, &rows)?;
    write_journal(dir, plan, &rows)?;
    Ok(rows)
}

/// Every trial of the search in `dir`, from the trials' own `summary.json` (whichever worker
/// or process trained them), ranked; writes `sweep.json` and `sweep.md` from them, and
/// `journal.log` unless the directory is a study's (`study.json`), whose journal is its
/// storage, written as the workers train (the shards' is `journal.log` itself).
pub fn merge(dir: &Path) -> Result<(Vec<TrialRow>, SearchPlan), Error> {
    let plan = read_plan(dir)?.search.ok_or_else(|| {
        Error::Config(ConfigError {
            origin: dir.display().to_string(),
            key: None,
            message: "a sweep of runs, not a search: its table is sweep.md".into(),
        })
    })?;
    let mut rows = read_rows(dir, &plan, BTreeMap::new())?;
    rank(&mut rows, plan.mode);
    write_results(dir, &plan, &rows)?;
    if !dir.join("study.json").exists() {
        write_journal(dir, &plan, &rows)?;
    }
    Ok((rows, plan))
}

/// `sweep.json` and `sweep.md`.
pub(super) fn write_results(dir: &Path, plan: &SearchPlan, rows: &[TrialRow]) -> Result<(), Error> {
    let best = rows.iter().find(|r| r.rank == Some(1));
    let packed = Timeline::merged(dir)?.packed();
    let json = serde_json::json!({
        "monitor": plan.monitor,
        "mode": plan.mode,
        "best": best.map(|r| r.name.clone()),
        "best_config": best.map(|r| dir.join(&r.name).join("config.toml")),
        "parallel": packed.map_or(1, |(_, parallel)| parallel),
        "budget_bytes": packed.map(|(budget, _)| budget),
        "trials": rows,
    });
    let path = dir.join("sweep.json");
    let bytes = serde_json::to_vec_pretty(&json).expect("rows serialise");
    write_atomic(&path, &bytes).map_err(|e| Error::io(&path, e))?;
    let path = dir.join("sweep.md");
    let mut text = ranking(rows, &plan.monitor, plan.mode, dir);
    if let Some((budget, parallel)) = packed {
        text.push_str(&format!(
            "Trials ran up to {parallel} at a time, each in its own process under its lease, the \
             leases together under a budget of {}.\n",
            crate::memory::format_bytes(budget)
        ));
    }
    write_atomic(&path, text.as_bytes()).map_err(|e| Error::io(&path, e))?;
    let budget = packed.map(|(budget, _)| budget);
    Ok(render_search_svg(
        &picture(plan, rows, budget),
        &dir.join("sweep.svg"),
    )?)
}
