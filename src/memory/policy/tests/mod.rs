//! Policies decide from plain numbers: no device needed.

use super::*;
use crate::config::{MemorySize, OnLimit};
use crate::memory::{Layout, MemorySource};

fn usage(source: MemorySource, in_use: u64, reserved: u64, peak: u64) -> MemoryUsage {
    MemoryUsage {
        bytes_in_use: in_use,
        bytes_reserved: reserved,
        peak_bytes_in_use: peak,
        bytes_padding: 0,
        source,
    }
}

const STATE: RunState = RunState {
    previous_attempt: None,
    epoch: 2,
    step: 7,
    layout: Layout::new(256, 1),
    resting_estimate: 100,
};

#[test]
fn growth_never_acts() {
    for phase in [Phase::RunStart, Phase::Step, Phase::EpochEnd, Phase::RunEnd] {
        assert!(Growth
            .decide(phase, &usage(MemorySource::Host, 9, 9, 9), &STATE)
            .is_empty());
    }
}

#[test]
fn preallocate_reserves_once_at_start_and_only_if_short() {
    let p = Preallocate { bytes: 1000 };
    let low = usage(MemorySource::CubeclPool, 0, 10, 0);
    assert_eq!(
        p.decide(Phase::RunStart, &low, &STATE),
        vec![MemoryAction::Reserve { bytes: 1000 }]
    );
    assert!(p.decide(Phase::Step, &low, &STATE).is_empty());
    assert!(p
        .decide(
            Phase::RunStart,
            &usage(MemorySource::CubeclPool, 0, 1000, 0),
            &STATE
        )
        .is_empty());
}

#[test]
fn limit_uses_the_host_peak_and_the_pool_reservation() {
    let limit = Limit {
        bytes: 1000,
        on_limit: OnLimit::Fail,
    };
    // Host: the transient peak counts, even if in-use has fallen back.
    let host = usage(MemorySource::Host, 500, 5000, 1001);
    match limit.decide(Phase::Step, &host, &STATE).as_slice() {
        [MemoryAction::Fail(e)] => {
            assert_eq!(
                (e.limit, e.observed, e.epoch, e.step, e.micro_batch),
                (1000, 1001, 2, 7, 256)
            );
            assert_eq!(e.measure, "peak in use (host)");
        }
        other => panic!("{other:?}"),
    }
    assert!(limit
        .decide(
            Phase::Step,
            &usage(MemorySource::Host, 500, 5000, 1000),
            &STATE
        )
        .is_empty());
    // Pools: reserved pages are what the device gave up, even if in use is low.
    let pool = usage(MemorySource::CubeclPool, 10, 1200, 10);
    assert!(matches!(
        limit.decide(Phase::Step, &pool, &STATE).as_slice(),
        [MemoryAction::Fail(_)]
    ));
    // Not at run end: the run's tensors are gone by then.
    assert!(limit.decide(Phase::RunEnd, &host, &STATE).is_empty());
}

#[test]
fn validation_and_checkpoints_are_held_to_the_limit_and_never_shrink() {
    let limit = Limit {
        bytes: 64 << 20,
        on_limit: OnLimit::Shrink,
    };
    let over = usage(MemorySource::Host, 49 << 20, 50 << 20, 67 << 20);
    let under = usage(MemorySource::Host, 49 << 20, 50 << 20, 63 << 20);
    for (phase, when, advice) in [
        (
            Phase::Checkpoint,
            "while writing the checkpoint of epoch 2",
            "writing a checkpoint copies the whole optimizer state into host memory at \
             once, and the checkpoint is complete on disk",
        ),
        (
            Phase::EpochEnd,
            "in the validation of epoch 2",
            // Validation shrinks in the loop (down to 1) before this check fails it.
            "under memory.on_limit = \"shrink\" validation runs again at halves of its \
             micro-batch, and at a micro-batch of 1 it still holds more",
        ),
    ] {
        assert!(limit.decide(phase, &under, &STATE).is_empty(), "{phase:?}");
        match limit.decide(phase, &over, &STATE).as_slice() {
            [MemoryAction::Fail(e)] => {
                assert_eq!(e.phase, phase);
                let text = e.to_string();
                assert!(
                    text.starts_with(&format!(
                        "memory limit 64.0 MiB exceeded: 67.0 MiB peak in use (host) {when}\n  \
                         {advice}"
                    )),
                    "{text}"
                );
            }
            other => panic!("{phase:?}: {other:?}"),
        }
    }
}

#[test]
fn shrinking_stops_when_halving_cannot_reach_the_limit() {
    let limit = Limit {
        bytes: 1000,
        on_limit: OnLimit::Shrink,
    };
    let at = |micro_batch, accumulation_steps, prev_acc, prev_observed, observed| {
        let state = RunState {
            layout: Layout::new(micro_batch, accumulation_steps),
            previous_attempt: Some(Attempt {
                accumulation_steps: prev_acc,
                observed: prev_observed,
            }),
            ..STATE
        };
        limit.decide(
            Phase::Step,
            &usage(MemorySource::Host, 0, 0, observed),
            &state,
        )
    };
    // The first halving adds the accumulation buffer: a rise proves nothing yet.
    assert!(matches!(
        at(128, 2, 1, 1100, 1150).as_slice(),
        [MemoryAction::ShrinkBatch { .. }]
    ));
    // 1150 -> 1120 saved 30; all further halvings save at most 30 more: 1090 > 1000.
    match at(64, 4, 2, 1150, 1120).as_slice() {
        [MemoryAction::Fail(e)] => {
            assert_eq!(e.futile_shrink, Some(30));
            assert!(
                e.to_string()
                    .contains("the last halving of the micro-batch saved 30 B"),
                "{e}"
            );
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    // 1400 -> 1100 saved 300: halving again may still fit.
    assert!(matches!(
        at(64, 4, 2, 1400, 1100).as_slice(),
        [MemoryAction::ShrinkBatch { .. }]
    ));
}

#[test]
fn shrink_halves_the_micro_batch_until_one() {
    let limit = Limit {
        bytes: 1000,
        on_limit: OnLimit::Shrink,
    };
    let over = usage(MemorySource::Host, 0, 0, 2000);
    assert_eq!(
        limit.decide(Phase::Step, &over, &STATE),
        vec![MemoryAction::ShrinkBatch {
            layout: Layout::new(256, 1).halved()
        }]
    );
    let shrunk = |state: &RunState| match limit.decide(Phase::Step, &over, state).as_slice() {
        [MemoryAction::ShrinkBatch { layout }] => (layout.micro_batch(), layout.micro_steps()),
        other => panic!("{other:?}"),
    };
    assert_eq!(shrunk(&STATE), (128, 2));
    let odd = RunState {
        layout: Layout::new(5, 3),
        ..STATE
    };
    assert_eq!(shrunk(&odd), (3, 6));
    // The layout it retries at keeps what the step has moved to host memory.
    let offloaded = RunState {
        layout: Layout {
            optimizer: crate::config::Offload::Host,
            ..Layout::new(64, 1)
        },
        ..STATE
    };
    match limit.decide(Phase::Step, &over, &offloaded).as_slice() {
        [MemoryAction::ShrinkBatch { layout }] => {
            assert_eq!(layout.optimizer, crate::config::Offload::Host);
            assert_eq!((layout.micro_batch(), layout.factor), (32, 2));
        }
        other => panic!("{other:?}"),
    }
    let one = RunState {
        layout: Layout::new(1, 1),
        ..STATE
    };
    assert!(matches!(
        limit.decide(Phase::Step, &over, &one).as_slice(),
        [MemoryAction::Fail(_)]
    ));
}

#[test]
fn limit_checks_the_resting_estimate_before_training() {
    let limit = Limit {
        bytes: 1000,
        on_limit: OnLimit::Shrink,
    };
    let start = RunState {
        epoch: 0,
        step: 0,
        resting_estimate: 1500,
        ..STATE
    };
    match limit
        .decide(Phase::RunStart, &usage(MemorySource::Host, 0, 0, 0), &start)
        .as_slice()
    {
        [MemoryAction::Fail(e)] => {
            assert_eq!(e.observed, 1500);
            let text = e.to_string();
            assert!(text.starts_with("memory limit 1000 B exceeded: 1.5 KiB needed at rest (estimated) before training"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn clear_policies_clean_at_the_right_phases() {
    let u = usage(MemorySource::Host, 0, 0, 0);
    let at =
        |c: ClearPolicy, p: Phase| Clear(c).decide(p, &u, &STATE) == vec![MemoryAction::Cleanup];
    assert!(!at(ClearPolicy::Never, Phase::RunEnd));
    assert!(
        at(ClearPolicy::BetweenRuns, Phase::RunEnd)
            && !at(ClearPolicy::BetweenRuns, Phase::EpochEnd)
    );
    assert!(
        at(ClearPolicy::EveryEpoch, Phase::EpochEnd) && at(ClearPolicy::EveryEpoch, Phase::RunEnd)
    );
    assert!(!at(ClearPolicy::EveryEpoch, Phase::Step));
}

#[test]
fn policies_from_config_resolve_fractions_or_explain() {
    let mut config = MemoryConfig {
        policy: MemoryPolicyKind::Preallocate,
        preallocate: Some(MemorySize::Fraction(0.5)),
        limit: Some(MemorySize::Bytes(800)),
        on_limit: OnLimit::Fail,
        clear: ClearPolicy::BetweenRuns,
        ..MemoryConfig::default()
    };
    let policies = Policies::from_config(&config, Some(1000)).unwrap();
    let start = RunState {
        step: 0,
        resting_estimate: 0,
        ..STATE
    };
    assert_eq!(
        policies.decide(
            Phase::RunStart,
            &usage(MemorySource::CubeclPool, 0, 0, 0),
            &start
        ),
        vec![MemoryAction::Reserve { bytes: 500 }]
    );
    let err = Policies::from_config(&config, None).unwrap_err();
    assert!(
        err.0.starts_with("memory.preallocate = 0.5 is a fraction"),
        "{err}"
    );
    config.policy = MemoryPolicyKind::Growth;
    config.preallocate = None;
    let policies = Policies::from_config(&config, None).unwrap();
    assert_eq!(
        policies.decide(Phase::RunEnd, &usage(MemorySource::Host, 0, 0, 0), &STATE),
        vec![MemoryAction::Cleanup]
    );
}

mod limit_error;
