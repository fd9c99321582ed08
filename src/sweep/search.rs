//! What a search's directory holds besides its journal, its views: its plan (`plan.json`,
//! from the `[sweep]` table, as the journal keeps it) and its ranking (`sweep.json`,
//! `sweep.md`, `sweep.svg`), written from its study's rows.

use std::path::Path;

use super::plan::{SearchPlan, TpePlan};
use super::results::rank::{ranking, TrialRow};
use super::results::sweep_svg::picture;
use super::space::Space;
use crate::error::Error;
use crate::record::write_atomic;
use crate::report::render_search_svg;

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
