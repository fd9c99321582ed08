//! What a search's directory holds besides its journal, its views: its plan (`plan.json`,
//! from the `[sweep]` table, as the journal keeps it), the directory its workers share, and
//! its ranking (`sweep.json`, `sweep.md`, `sweep.svg`), written from its study's rows.

use std::path::{Path, PathBuf};

use super::plan::{read_plan, SearchPlan, TpePlan};
use super::results::rank::{ranking, TrialRow};
use super::results::sweep_svg::picture;
use super::space::Space;
use super::study::{planned, study_of};
use crate::error::Error;
use crate::record::write_atomic;
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
        pbt: space.pbt.clone(),
    }
}

/// The sweep directory a study's workers share: created by the first, and refused if it holds
/// a search with other trials, as the journal it names records that search (its `study.json`'s
/// storage, or its own `journal.log`).
pub(super) fn shared_dir(dir: &Path, plan: &SearchPlan) -> Result<PathBuf, Error> {
    run_dir::make_output_dir(dir)?;
    let other = |p: &SearchPlan| (&p.trials, &p.monitor) != (&plan.trials, &plan.monitor);
    let has = |name: &str| dir.join(name).is_file();
    // A journal alone is a shard's storage, opened before anything was planned here.
    let other = if has("study.json") || (has("journal.log") && has("config.toml")) {
        let (spec, name) = study_of(dir)?;
        // None: a worker named the study here and has not begun it yet.
        planned(dir, &spec, &name)?.is_some_and(|p| other(&p))
    } else if dir.join("plan.json").is_file() {
        // A sweep an earlier tidemark wrote without a journal (a sweep of runs).
        read_plan(dir)?.search.is_none_or(|p| other(&p))
    } else {
        false
    };
    if other {
        return Err(Error::Sweep(crate::error::SweepError::Plan {
            origin: dir.display().to_string(),
            message: "holds a sweep with other trials; the workers of one search \
                      share its directory, so give this search another run.name or \
                      run.output_dir"
                .into(),
        }));
    }
    Ok(dir.to_path_buf())
}

/// `sweep.json`, `sweep.md` (a sweep of runs' with its runs' memory table) and `sweep.svg`;
/// `packed`, the budget and the trials at once where its trials ran in parallel.
pub(super) fn write_results(
    dir: &Path,
    plan: &SearchPlan,
    rows: &[TrialRow],
    packed: Option<(u64, usize)>,
) -> Result<(), Error> {
    let best = rows.iter().find(|r| r.rank == Some(1));
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
    if let Some(schedule) = crate::sweep::results::schedule_text(rows) {
        text.push('\n');
        text.push_str(&schedule);
    }
    if plan.is_repeat() {
        text.push('\n');
        text.push_str(&crate::sweep::results::runs_table(rows));
    }
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
