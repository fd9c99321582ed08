//! `tidemark lr-find`: the learning-rate finder on a copy of the config's run, its suggestion
//! printed, and where its record and picture are.

use crate::config::{LrRange, RunConfig};
use crate::kinds::Kinds;
use crate::train::lr_find::find;
use crate::train::lr_find::rule::Sweep;
use crate::{Error, Trainer};

use super::terminal::Terminal;

/// Runs the finder over `(min_lr, max_lr, steps)` and prints what it found.
pub(super) fn lr_find(
    kinds: &Kinds,
    config: &RunConfig,
    (min_lr, max_lr, steps): (f64, f64, usize),
) -> Result<(), Error> {
    let sweep = sweep(min_lr, max_lr, steps)?;
    let found = find(config, sweep, Box::new(Terminal::new(true)), |run| {
        kinds.train(Trainer::from(run))
    })?;
    outln!("{}", found.said());
    Ok(())
}

/// The finder's settings: Lightning's, over the range given.
pub(super) fn sweep(min_lr: f64, max_lr: f64, steps: usize) -> Result<Sweep, Error> {
    // The rates are min * (max / min)^r: the ratio must be a number too, or every rate past
    // the first is infinite (1e-10 up to 1e300, or a subnormal min).
    if !(min_lr.is_normal() && min_lr > 0.0 && max_lr > min_lr && (max_lr / min_lr).is_finite()) {
        return Err(Error::Usage(crate::error::UsageError::new(
            format!("--min-lr {min_lr:?} --max-lr {max_lr:?}"),
            "the finder sweeps from --min-lr up to --max-lr: both > 0, min below max, and max / min a finite number",
        )));
    }
    Ok(Sweep {
        range: LrRange {
            min_lr,
            max_lr,
            steps,
        },
        ..Sweep::default()
    })
}
