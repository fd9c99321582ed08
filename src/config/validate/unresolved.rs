//! The inverse of the defaults validation writes in: a config with each key whose default
//! depends on another key's value left out where it has that default, so that a search
//! varying the key it depends on (`train.optimizer`, `train.precision`, a schedule's kind, a
//! monitor, `memory.policy`, a CSV's target column) gives each trial that key's own default,
//! as a file of the trial's values would.

use crate::config::defaults;
use crate::config::types::*;

impl RunConfig {
    /// This config with each default that depends on another key's value left out where it
    /// has the value validation would write in: validating it again gives this config back,
    /// and with another optimizer, precision, schedule kind, monitor, memory policy or a CSV's
    /// target column set over it, that key's defaults. What a search builds its trials from.
    pub fn unresolved(&self) -> RunConfig {
        let mut config = self.clone();
        let train = &mut config.train;
        unset_if(&mut train.betas, defaults::BETAS);
        unset_if(&mut train.eps, defaults::EPS);
        unset_if(&mut train.momentum, defaults::MOMENTUM);
        unset_if(&mut train.nesterov, defaults::NESTEROV);
        unset_if(&mut train.alpha, defaults::RMSPROP_ALPHA);
        let scaling = train.loss_scaling.take();
        if scaling != Some(train.loss_scaling()) {
            train.loss_scaling = scaling;
        }
        if let Some(early) = train.early_stopping.as_mut() {
            let natural = Monitor::natural_mode(&early.monitor).ok();
            if early.mode == natural {
                early.mode = None;
            }
        }
        let monitor = super::watched(train.early_stopping.as_ref());
        if let Some(schedule) = train.schedule.as_mut() {
            unresolve_schedule(schedule, &monitor);
        }
        let checkpoint = &mut config.checkpoint;
        if checkpoint.keep_best.is_some() {
            unresolve_monitor(&mut checkpoint.monitor, &mut checkpoint.mode, &monitor);
        }
        let data = &mut config.data;
        let (stratify, standardize) = (data.stratify.take(), data.standardize.take());
        if stratify != Some(data.stratify()) {
            data.stratify = stratify;
        }
        if standardize != Some(data.standardize()) {
            data.standardize = standardize;
        }
        if let DataSource::Csv(csv) = &mut data.source {
            if csv.target_column.is_none() && csv.label_column == Some(Column::last()) {
                csv.label_column = None;
            }
        }
        let memory = &mut config.memory;
        let share = MemorySize::Fraction(defaults::PREALLOCATE_FRACTION);
        if memory.policy == MemoryPolicyKind::Preallocate && memory.preallocate == Some(share) {
            memory.preallocate = None;
        }
        config
    }
}

/// `value` left out where it is `default`.
fn unset_if<T: PartialEq>(value: &mut Option<T>, default: T) {
    if value.as_ref() == Some(&default) {
        *value = None;
    }
}

/// A schedule's defaults by its kind left out: `min_lr`'s, step's `gamma`, a plateau's keys
/// (its monitor and mode against `monitor`, the one it takes without its own).
fn unresolve_schedule(schedule: &mut ScheduleConfig, monitor: &(String, MonitorMode)) {
    if matches!(
        schedule.kind,
        ScheduleKind::Linear | ScheduleKind::Cosine | ScheduleKind::Plateau
    ) {
        unset_if(&mut schedule.min_lr, defaults::MIN_LR);
    }
    if schedule.kind == ScheduleKind::Step {
        unset_if(&mut schedule.gamma, defaults::STEP_GAMMA);
    }
    if schedule.kind != ScheduleKind::Plateau {
        return;
    }
    let keras = PlateauConfig::default();
    unset_if(&mut schedule.factor, keras.factor);
    unset_if(&mut schedule.patience, keras.patience);
    unset_if(&mut schedule.min_delta, keras.min_delta);
    unset_if(&mut schedule.cooldown, keras.cooldown);
    unresolve_monitor(&mut schedule.monitor, &mut schedule.mode, monitor);
}

/// A monitor and its mode left out where they are what is taken without them: `default`'s
/// figure and mode, or (a figure of its own) that figure's own way.
fn unresolve_monitor(
    monitor: &mut Option<String>,
    mode: &mut Option<MonitorMode>,
    default: &(String, MonitorMode),
) {
    if monitor.as_ref() == Some(&default.0) {
        *monitor = None;
        unset_if(mode, default.1);
    } else if let Some(figure) = monitor.as_deref() {
        if let Ok(natural) = Monitor::natural_mode(figure) {
            unset_if(mode, natural);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{parse, to_toml, OptimizerKind, Precision};

    fn config(text: &str) -> crate::config::RunConfig {
        parse(text, "t.toml", &[]).unwrap()
    }

    #[test]
    fn a_key_set_over_an_unresolved_config_brings_its_own_defaults() {
        let base = config("[train]\nprecision = \"f32\"\n").unresolved();
        let mut f16 = base.clone();
        f16.train.precision = Precision::F16;
        let f16 = config(&to_toml(&f16));
        assert_eq!(
            f16.train.loss_scaling(),
            crate::config::LossScaling::Dynamic
        );
        let mut sgd = base;
        sgd.train.optimizer = OptimizerKind::Sgd;
        let sgd = config(&to_toml(&sgd));
        assert_eq!((sgd.train.betas, sgd.train.momentum), (None, Some(0.0)));
    }

    #[test]
    fn an_unresolved_config_validates_back_to_itself_and_keeps_what_differs() {
        let texts = [
            "",
            "[train]\noptimizer = \"sgd\"\nmomentum = 0.9\nprecision = \"f16\"\nloss_scaling = \"off\"",
            "[train.early_stopping]\nmonitor = \"val_accuracy\"\n[checkpoint]\nkeep_best = 2",
            "[train.early_stopping]\nmonitor = \"val_accuracy\"\nmode = \"min\"\n\
             [train.schedule]\nkind = \"plateau\"\nfactor = 0.5\n[checkpoint]\nkeep_best = 1\n\
             monitor = \"val_loss\"",
            "[train.schedule]\nkind = \"step\"\nstep_size = 3\ngamma = 0.5\nmin_lr = 1e-6",
            "[memory]\npolicy = \"preallocate\"",
            "[memory]\npolicy = \"preallocate\"\npreallocate = \"1GiB\"",
            "[data]\nstratify = true",
            concat!("[data]\npath = \"", env!("CARGO_MANIFEST_DIR"), "/data/co2-weekly.csv\""),
            concat!(
                "[data]\npath = \"",
                env!("CARGO_MANIFEST_DIR"),
                "/data/co2-weekly.csv\"\ntarget_column = 1\nstandardize = false"
            ),
        ];
        for text in texts {
            let config = config(text);
            let again = parse(&to_toml(&config.unresolved()), "again.toml", &[]).unwrap();
            assert_eq!(again, config, "{text}");
        }
        // What differs from the defaults stays written.
        let kept = config(texts[1]).unresolved();
        assert_eq!(kept.train.momentum, Some(0.9));
        assert_eq!(
            kept.train.loss_scaling,
            Some(crate::config::LossScaling::Off)
        );
        assert_eq!(config(texts[7]).unresolved().data.stratify, Some(true));
        // A CSV's defaults by its kind and label left out: a target set over it is a
        // regression, not a file that sets both.
        let csv = config(texts[8]).unresolved().data;
        assert_eq!((csv.stratify, csv.standardize), (None, None));
        let crate::config::DataSource::Csv(c) = &csv.source else {
            unreachable!()
        };
        assert_eq!(c.label_column, None);
        let regression = config(texts[9]).unresolved().data;
        assert_eq!(
            (regression.stratify, regression.standardize),
            (None, Some(false))
        );
    }
}
