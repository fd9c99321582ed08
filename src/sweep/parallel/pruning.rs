//! The pruner's part of a parallel search: a trial it pauses is held (its lease back in the
//! budget) until it promotes it; one it promotes starts before any new trial; at the end, the
//! trials still paused are pruned.

use std::path::Path;

use super::state::State;
use crate::error::Error;
use crate::record::Observer;

/// Moves every trial the pruner promotes now from held to promoted.
pub(super) fn promote(state: &mut State<'_, '_>, observer: &mut dyn Observer) -> Result<(), Error> {
    let Some(pruner) = state.pruner.as_deref_mut() else {
        return Ok(());
    };
    let held = &mut state.held;
    while let Some(number) = pruner.promote(|n| held.contains_key(&n))? {
        let trial = held.remove(&number).expect("promoted only if held");
        observer.message(&format!(
            "{} goes on: it ranks high enough at its rung",
            trial.0.name()
        ));
        state.promoted.push(trial);
    }
    Ok(())
}

/// When nothing else is left: the trial the pruner lets go on so that one trains to the end,
/// if any; returns whether there was one.
pub(super) fn promote_last(
    state: &mut State<'_, '_>,
    observer: &mut dyn Observer,
) -> Result<bool, Error> {
    let Some(pruner) = state.pruner.as_deref_mut() else {
        return Ok(false);
    };
    let Some(held) = pruner.promote_last()?.and_then(|n| state.held.remove(&n)) else {
        return Ok(false);
    };
    let line = format!(
        "{} goes on: the best at its rung, so that one trial trains to the end",
        held.0.name()
    );
    observer.message(&line);
    state.promoted.push(held);
    Ok(true)
}

/// At the end: the pruner prunes the trials still paused.
pub(super) fn finish(
    state: &mut State<'_, '_>,
    dir: &Path,
    observer: &mut dyn Observer,
) -> Result<(), Error> {
    let Some(pruner) = state.pruner.as_deref_mut() else {
        return Ok(());
    };
    for (trial, why) in pruner.finish(dir)? {
        observer.message(&format!("trial-{trial:03} pruned: {why}"));
    }
    Ok(())
}
