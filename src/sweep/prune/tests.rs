use super::*;

fn pruner(dir: &Path) -> Pruner {
    let config = PruneConfig {
        method: PruneMethod::Asha,
        min_epochs: 1,
        reduction: 3,
        startup: 5,
    };
    let mut p = Pruner::open(dir, config, "val_loss", MonitorMode::Min, 9, &[1, 2, 3]).unwrap();
    for (t, v) in [(1, 0.3), (2, 0.5), (3, 0.4)] {
        let curve = Curve {
            values: vec![Some(v)],
            standing: Standing::Paused,
            reason: None,
        };
        p.record.trials.insert(t, curve);
    }
    p
}

#[test]
fn a_trial_the_caller_cannot_run_or_whose_run_failed_is_never_promoted_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = pruner(dir.path());
    // Trial 1 is the top third at rung 1, but this process does not hold it: failed, and
    // not asked for again (a loop over promote ends).
    assert_eq!(p.promote(|_| false).unwrap(), None);
    assert_eq!(p.standing(1), Some(Standing::Failed));
    // A run that failed is failed, whatever an earlier run's summary says.
    let mut p = pruner(dir.path());
    assert_eq!(p.promote(|_| true).unwrap(), Some(1));
    let run_dir = dir.path().join("trial-001");
    assert_eq!(p.ended(1, &run_dir, true).unwrap(), Standing::Failed);
    assert_eq!(p.promote(|_| true).unwrap(), None);
    // With nothing trained to the end, the best paused trial with a value goes on.
    assert_eq!(p.promote_last().unwrap(), Some(3));
}
