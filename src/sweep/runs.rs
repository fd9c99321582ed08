//! A sweep of runs: one config trained N times with new seeds, one after another in one
//! process, each in its own run directory, and the table of what each took and gave back.

use std::path::{Path, PathBuf};

use super::plan::{write_plan, Plan};
use super::results::{table, SweepRow};
use super::trial_run::{run_name, summary, train_or_resume};
use crate::config::{to_toml, ConfigBuilder, RunConfig};
use crate::error::Error;
use crate::kinds::Kinds;
use crate::record::{write_atomic, Observer};
use crate::train::run_dir;

/// Runs `config` `runs` times, reporting run `i` of `n` to `observer(i, n)`. Run `i` is named `run-<i>` with seed `seed + i - 1`, inside
/// `<output_dir>/<name>-sweep/` (`-sweep-2`, ... if that exists). Writes the base config and
/// the plan there first (for [`resume_sweep`](super::resume_sweep)), then `sweep.json` and `sweep.md`.
pub fn sweep(
    kinds: &Kinds,
    config: &RunConfig,
    runs: usize,
    observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<SweepRow>), Error> {
    // As a run's: its `config.toml` holds `[model]` as the kind reads it, defaults filled in.
    let config = &kinds.resolved(config)?;
    let name = format!("{}-sweep", config.run.name);
    let dir = run_dir::create(&config.run.output_dir, &name)?;
    let path = dir.join("config.toml");
    write_atomic(&path, to_toml(config).as_bytes()).map_err(|e| Error::io(&path, e))?;
    write_plan(&dir, &Plan { runs, search: None })?;
    run_all(kinds, &dir, config, runs, observer)
}

pub(super) fn run_all(
    kinds: &Kinds,
    dir: &Path,
    config: &RunConfig,
    runs: usize,
    mut observer: impl FnMut(usize, usize) -> Box<dyn Observer>,
) -> Result<(PathBuf, Vec<SweepRow>), Error> {
    for run in 1..=runs {
        let cfg = ConfigBuilder::from_config(config)
            .output_dir(dir)
            .name(run_name(run))
            .seed(config.run.seed + run as u64 - 1)
            .build()?;
        let run_dir = dir.join(&cfg.run.name);
        // Its row is read back from its summary.json below: the sweep keeps nothing per run
        // in memory while it trains (see docs/search.md, "A long search stays flat").
        train_or_resume(kinds, cfg, &run_dir, observer(run, runs), None, None)?;
    }
    let rows = (1..=runs)
        .map(|run| Ok(SweepRow::of(run, summary(&dir.join(run_name(run)))?)))
        .collect::<Result<Vec<_>, Error>>()?;
    let json = serde_json::to_vec_pretty(&rows).expect("rows serialise");
    write_atomic(&dir.join("sweep.json"), &json)
        .map_err(|e| Error::io(dir.join("sweep.json"), e))?;
    write_atomic(&dir.join("sweep.md"), table(&rows).as_bytes())
        .map_err(|e| Error::io(dir.join("sweep.md"), e))?;
    Ok((dir.to_path_buf(), rows))
}
