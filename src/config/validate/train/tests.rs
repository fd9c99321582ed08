//! `[train]`'s optimizer, clipping, schedule and early-stopping keys, through the file loader:
//! each error names the key, its place and the value.

use crate::config::{parse, to_toml, MonitorMode, OptimizerKind, ScheduleKind};

fn error(text: &str) -> String {
    parse(text, "x.toml", &[]).unwrap_err().to_string()
}

#[test]
fn optimizer_keys_apply_to_their_optimizers_only() {
    assert_eq!(
        error("[train]\noptimizer = \"sgd\"\nbetas = [0.9, 0.99]\n"),
        "x.toml:3:1: train.betas only applies with train.optimizer = \"adam\" or \"adamw\""
    );
    assert_eq!(
        error("[train]\nnesterov = true\n"),
        "x.toml:2:1: train.nesterov only applies with train.optimizer = \"sgd\""
    );
    assert_eq!(
        error("[train]\noptimizer = \"sgd\"\nnesterov = true\n"),
        "x.toml:3:1: train.nesterov needs train.momentum > 0 (Nesterov momentum is a kind of \
         momentum)"
    );
    assert_eq!(
        error("[train]\nbetas = [0.9]\n"),
        "x.toml:2:1: train.betas must be two numbers in [0, 1), like [0.9, 0.999]; got [0.9]"
    );
    assert_eq!(
        error("[train]\noptimizer = \"rmsprop\"\nmomentum = 1.5\n"),
        "x.toml:3:1: train.momentum must be in [0, 1), got 1.5"
    );
}

#[test]
fn each_optimizer_gets_its_own_defaults() {
    let train = |name: &str| {
        parse(&format!("[train]\noptimizer = \"{name}\"\n"), "x.toml", &[])
            .unwrap()
            .train
    };
    let adamw = train("adamw");
    assert_eq!(adamw.optimizer, OptimizerKind::Adamw);
    assert_eq!((adamw.betas, adamw.eps), (Some([0.9, 0.999]), Some(1e-5)));
    assert_eq!(adamw.momentum, None);
    let sgd = train("sgd");
    assert_eq!(
        (sgd.momentum, sgd.nesterov, sgd.betas),
        (Some(0.0), Some(false), None)
    );
    let rmsprop = train("rmsprop");
    assert_eq!((rmsprop.alpha, rmsprop.momentum), (Some(0.99), Some(0.0)));
}

#[test]
fn clipping_takes_one_positive_bound() {
    assert_eq!(
        error("[train]\nclip_grad_norm = 0\n"),
        "x.toml:2:1: train.clip_grad_norm must be a finite number > 0, got 0"
    );
    assert_eq!(
        error("[train]\nclip_grad_norm = 1.0\nclip_grad_value = 0.5\n"),
        "x.toml:3:1: train.clip_grad_value cannot be set with train.clip_grad_norm; choose one \
         way to clip"
    );
}

#[test]
fn schedule_keys_are_checked_against_the_kind() {
    assert_eq!(
        error("[train.schedule]\nkind = \"cosine\"\nstep_size = 10\n"),
        "x.toml:3:1: train.schedule.step_size only applies with train.schedule.kind = \"step\""
    );
    assert_eq!(
        error("[train.schedule]\nkind = \"step\"\n"),
        "x.toml:1:8: train.schedule.step_size is required with kind = \"step\": the optimizer \
         steps between two decays"
    );
    assert_eq!(
        error("[train.schedule]\nkind = \"exponential\"\ngamma = 1.5\n"),
        "x.toml:3:1: train.schedule.gamma must be in (0, 1], got 1.5"
    );
    assert_eq!(
        error("[train]\nlr = 0.01\n[train.schedule]\nkind = \"cosine\"\nmin_lr = 0.1\n"),
        "x.toml:5:1: train.schedule.min_lr must be in [0, train.lr = 0.01], got 0.1"
    );
    assert_eq!(
        error("[train]\nlr = 2.0\n[train.schedule]\nkind = \"cosine\"\n"),
        "x.toml:2:1: train.lr must be at most 1 with a cosine schedule or a warmup (Burn's \
         schedulers' range), got 2"
    );
    assert_eq!(
        error("[train.schedule]\nkind = \"triangle\"\n"),
        "x.toml:2:1: train.schedule.kind must be one of \"constant\", \"linear\", \"cosine\", \
         \"step\", \"exponential\", \"plateau\", \"piecewise\", got \"triangle\""
    );
    let piecewise = |keys: &str| error(&format!("[train.schedule]\nkind = \"piecewise\"\n{keys}"));
    assert_eq!(
        piecewise("factors = [0.5]\n"),
        "x.toml:1:8: train.schedule.milestones is required with kind = \"piecewise\": the epochs \
         after which the rate changes (milestones) and the factor of train.lr from each on \
         (factors)"
    );
    assert_eq!(
        piecewise("milestones = [2, 2]\nfactors = [0.5, 0.1]\n"),
        "x.toml:3:1: train.schedule.milestones must be epochs above 0, increasing, at least one; \
         got [2, 2]"
    );
    assert_eq!(
        piecewise("milestones = [2, 4]\nfactors = [0.5]\n"),
        "x.toml:4:1: train.schedule.factors must be one factor for each of the 2 milestones, got 1"
    );
    assert_eq!(
        piecewise("milestones = [2]\nfactors = [-1.0]\n"),
        "x.toml:4:1: train.schedule.factors must be numbers > 0, got -1"
    );
    assert!(
        piecewise("milestones = [2]\nfactors = [0.5]\nwarmup_steps = 10\n").starts_with(
            "x.toml:5:1: train.schedule.warmup_steps does not go with kind = \"piecewise\""
        )
    );
    assert!(
        error("[train.schedule]\nkind = \"cosine\"\nmilestones = [2]\n")
            .contains("train.schedule.milestones")
    );
    assert!(error("[train.schedule]\nwarmup = 5\n")
        .starts_with("x.toml:2:1: unknown key train.schedule.warmup"));
}

#[test]
fn early_stopping_watches_a_validation_metric() {
    assert_eq!(
        error("[train.early_stopping]\nmonitor = \"loss\"\n"),
        "x.toml:2:1: train.early_stopping.monitor must name a validation metric, like \
         \"val_loss\" or \"val_accuracy\"; got \"loss\""
    );
    assert_eq!(
        error("[train.early_stopping]\npatience = -1\n"),
        "x.toml:2:1: train.early_stopping.patience must be >= 0, got -1"
    );
    let mode = |monitor: &str| {
        let text = format!("[train.early_stopping]\nmonitor = \"{monitor}\"\n");
        parse(&text, "x.toml", &[])
            .unwrap()
            .train
            .early_stopping
            .unwrap()
            .mode
    };
    // Resolved into the table, so that a run's config.toml says it.
    assert_eq!(mode("val_accuracy"), Some(MonitorMode::Max));
    assert_eq!(mode("val_rmse"), Some(MonitorMode::Min));
}

#[test]
fn a_full_recipe_round_trips_through_its_resolved_file() {
    let text = "[train]\noptimizer = \"adamw\"\nlr = 0.003\nweight_decay = 0.05\n\
                clip_grad_norm = 1.0\n[train.schedule]\nkind = \"cosine\"\nwarmup_steps = 50\n\
                [train.early_stopping]\npatience = 4\n";
    let config = parse(text, "x.toml", &[]).unwrap();
    let schedule = config.train.schedule.as_ref().unwrap();
    assert_eq!(
        (schedule.kind, schedule.warmup_steps, schedule.min_lr),
        (ScheduleKind::Cosine, 50, Some(0.0))
    );
    let early = config.train.early_stopping.as_ref().unwrap();
    assert_eq!((early.patience, early.restore_best), (4, true));
    let resolved = to_toml(&config);
    assert!(resolved.contains("[train.schedule]"), "{resolved}");
    assert_eq!(parse(&resolved, "resolved.toml", &[]).unwrap(), config);
}
