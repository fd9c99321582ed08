use burn::optim::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::optim::lr_scheduler::exponential::ExponentialLrSchedulerConfig;
use burn::optim::lr_scheduler::linear::LinearLrSchedulerConfig;
use burn::optim::lr_scheduler::module_lr_scheduler::ModuleLrScheduler;
use burn::optim::lr_scheduler::step::StepLrSchedulerConfig;

use super::*;
use crate::config::{ConfigBuilder, ScheduleConfig};

fn train(lr: f64, schedule: ScheduleConfig) -> TrainConfig {
    let mut builder = ConfigBuilder::new("t");
    builder.raw_mut().train.lr = lr;
    builder.raw_mut().train.schedule = Some(schedule);
    builder.build().unwrap().train
}

fn steps(schedule: &mut Schedule, n: usize) -> Vec<f64> {
    (0..n).map(|_| schedule.advance()).collect()
}

fn burn_steps(mut scheduler: ModuleLrScheduler, n: usize) -> Vec<f64> {
    (0..n).map(|_| scheduler.step().base()).collect()
}

fn assert_close(got: &[f64], expected: &[f64]) {
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!((g - e).abs() < 1e-12, "step {}: {g} against {e}", i + 1);
    }
}

#[test]
fn warmup_then_cosine_is_a_ramp_then_burns_cosine() {
    let config = train(
        1e-2,
        ScheduleConfig {
            kind: ScheduleKind::Cosine,
            warmup_steps: 4,
            min_lr: Some(1e-4),
            ..ScheduleConfig::default()
        },
    );
    // 100 steps in the run: 4 of warmup, 96 of cosine decay.
    let mut schedule = Schedule::new(&config, 100);
    let ramp = steps(&mut schedule, 4);
    assert_close(&ramp, &[2.5e-3, 5e-3, 7.5e-3, 1e-2]);
    let burn = CosineAnnealingLrSchedulerConfig::new(1e-2, 96)
        .with_min_lr(1e-4)
        .init()
        .unwrap();
    let rest = steps(&mut schedule, 96);
    assert_close(&rest, &burn_steps(burn, 96));
    // Burn's (and PyTorch's) cosine reaches min_lr one step after its last: the run's last
    // step is at iteration 95 of 96.
    assert!(
        (rest[95] - 1e-4).abs() < 1e-5,
        "ends near min_lr: {}",
        rest[95]
    );
    assert_eq!(schedule.current(), rest[95]);
}

#[test]
fn each_kind_follows_burns_scheduler() {
    let cases: Vec<(ScheduleConfig, ModuleLrScheduler)> = vec![
        (
            ScheduleConfig {
                kind: ScheduleKind::Linear,
                min_lr: Some(1e-3),
                decay_steps: Some(10),
                ..ScheduleConfig::default()
            },
            LinearLrSchedulerConfig::new(1e-2, 1e-3, 10).init().unwrap(),
        ),
        (
            ScheduleConfig {
                kind: ScheduleKind::Step,
                step_size: Some(3),
                gamma: Some(0.5),
                ..ScheduleConfig::default()
            },
            StepLrSchedulerConfig::new(1e-2, 3)
                .with_gamma(0.5)
                .init()
                .unwrap(),
        ),
        (
            ScheduleConfig {
                kind: ScheduleKind::Exponential,
                gamma: Some(0.9),
                ..ScheduleConfig::default()
            },
            ExponentialLrSchedulerConfig::new(1e-2, 0.9).init().unwrap(),
        ),
    ];
    for (raw, burn) in cases {
        let kind = raw.kind.name();
        let mut schedule = Schedule::new(&train(1e-2, raw), 20);
        let got = steps(&mut schedule, 20);
        assert_close(&got, &burn_steps(burn, 20));
        assert!(got[19] < got[0], "{kind} decays");
    }
}

#[test]
fn no_schedule_and_constant_keep_the_rate() {
    let config = ConfigBuilder::new("t").build().unwrap().train;
    let mut none = Schedule::new(&config, 10);
    assert_eq!(none.current(), config.lr);
    assert!(steps(&mut none, 10).iter().all(|&lr| lr == config.lr));
    let mut constant = Schedule::new(&train(3e-3, ScheduleConfig::default()), 10);
    assert!(steps(&mut constant, 10).iter().all(|&lr| lr == 3e-3));
}

#[test]
fn min_lr_floors_an_exponential_decay() {
    let config = train(
        1e-2,
        ScheduleConfig {
            kind: ScheduleKind::Exponential,
            gamma: Some(0.5),
            min_lr: Some(1e-3),
            ..ScheduleConfig::default()
        },
    );
    let got = steps(&mut Schedule::new(&config, 10), 6);
    assert_close(&got, &[1e-2, 5e-3, 2.5e-3, 1.25e-3, 1e-3, 1e-3]);
}

#[test]
fn a_saved_schedule_continues_where_it_stopped() {
    let config = train(
        1e-2,
        ScheduleConfig {
            kind: ScheduleKind::Cosine,
            warmup_steps: 5,
            ..ScheduleConfig::default()
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schedule.bpk");
    let mut whole = Schedule::new(&config, 40);
    let expected = steps(&mut whole, 40);
    // Stopped after 3 steps (inside the warmup) and after 17 (inside the decay).
    for stop in [3, 17] {
        let mut first = Schedule::new(&config, 40);
        let before = steps(&mut first, stop);
        first.save(&path).unwrap();
        let mut resumed = Schedule::new(&config, 40)
            .load(&path, first.current())
            .unwrap();
        assert_eq!(resumed.current(), before[stop - 1]);
        let after = steps(&mut resumed, 40 - stop);
        assert_close(&[before, after].concat(), &expected);
    }
}

#[test]
fn piecewise_changes_the_rate_on_the_first_step_after_each_milestone_and_resumes_there() {
    let config = train(
        0.1,
        ScheduleConfig {
            kind: ScheduleKind::Piecewise,
            milestones: Some(vec![1, 3]),
            factors: Some(vec![0.5, 0.1]),
            ..ScheduleConfig::default()
        },
    );
    // 5 epochs (the builder's default) of 2 steps: 0.1 for epoch 1, 0.05 for 2 and 3, then 0.01.
    let mut schedule = Schedule::new(&config, 10);
    let rates = steps(&mut schedule, 10);
    assert_close(
        &rates,
        &[0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.01, 0.01, 0.01, 0.01],
    );
    // Saved after 3 steps and continued at another rate: the pieces' position, the new rate's.
    let mut first = Schedule::new(&config, 10);
    steps(&mut first, 3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("schedule.bpk");
    first.save(&path).unwrap();
    let retuned = TrainConfig { lr: 0.2, ..config };
    let mut resumed = Schedule::new(&retuned, 10).load(&path, 0.05).unwrap();
    assert_close(&steps(&mut resumed, 4), &[0.1, 0.1, 0.1, 0.02]);
}
