//! The builder's cases: each setter with the file text it should equal.

use super::*;
use crate::config::{EmaConfig, EmaDevice, EmaWeights};

pub(super) fn train_cases() -> Cases {
    let cases: Vec<(ConfigBuilder, &str)> = vec![
        (
            b().epochs(3).batch_size(16).accumulation_steps(2).lr(0.01),
            "[train]\nepochs = 3\nbatch_size = 16\naccumulation_steps = 2\nlr = 0.01",
        ),
        (b().weight_decay(0.01), "[train]\nweight_decay = 0.01"),
        (b().find_lr(), "[train]\nlr = \"find\""),
        (
            b().optimizer(OptimizerKind::Adamw, 1e-3)
                .betas(0.8, 0.99)
                .eps(1e-7),
            "[train]\noptimizer = \"adamw\"\nlr = 1e-3\nbetas = [0.8, 0.99]\neps = 1e-7",
        ),
        (
            b().optimizer(OptimizerKind::Sgd, 0.1).momentum(0.9, true),
            "[train]\noptimizer = \"sgd\"\nlr = 0.1\nmomentum = 0.9\nnesterov = true",
        ),
        (
            b().optimizer(OptimizerKind::Rmsprop, 0.01).alpha(0.9),
            "[train]\noptimizer = \"rmsprop\"\nlr = 0.01\nalpha = 0.9",
        ),
        (b().clip_grad_norm(1.0), "[train]\nclip_grad_norm = 1.0"),
        (b().clip_grad_value(0.5), "[train]\nclip_grad_value = 0.5"),
        (
            b().precision(Precision::F16)
                .loss_scaling(LossScaling::Dynamic, 1024.0, 100),
            "[train]\nprecision = \"f16\"\nloss_scaling = \"dynamic\"\n\
             initial_loss_scale = 1024.0\nloss_scale_growth_interval = 100",
        ),
        (
            b().gradient_checkpointing(true),
            "[train]\ngradient_checkpointing = true",
        ),
        (
            b().device(Backend::Wgpu, 0)
                .offload_gradients(Offload::Host)
                .offload_optimizer(Offload::Auto),
            "[device]\nbackend = \"wgpu\"\nindex = 0\n[train.offload]\ngradients = \"host\"\n\
             optimizer = \"auto\"",
        ),
    ];
    cases.into_iter().map(|(b, t)| (b, text(t))).collect()
}

/// `[train.schedule]` and `[train.early_stopping]`.
pub(super) fn train_table_cases() -> Cases {
    let schedule = |kind, min_lr, decay_steps, step_size, gamma| ScheduleConfig {
        kind,
        warmup_steps: 10,
        min_lr,
        decay_steps,
        step_size,
        gamma,
        ..Default::default()
    };
    let plateau = ScheduleConfig {
        monitor: Some("val_accuracy".into()),
        mode: Some(MonitorMode::Max),
        factor: Some(0.5),
        patience: Some(2),
        min_delta: Some(0.01),
        cooldown: Some(1),
        ..schedule(ScheduleKind::Plateau, Some(1e-5), None, None, None)
    };
    let early = EarlyStoppingConfig {
        monitor: "val_accuracy".into(),
        mode: Some(MonitorMode::Max),
        patience: 3,
        min_delta: 0.001,
        restore_best: true,
    };
    let cases: Vec<(ConfigBuilder, &str)> = vec![
        (
            b().schedule(schedule(
                ScheduleKind::Cosine,
                Some(1e-5),
                Some(100),
                None,
                None,
            )),
            "[train.schedule]\nkind = \"cosine\"\nwarmup_steps = 10\nmin_lr = 1e-5\n\
             decay_steps = 100",
        ),
        (
            b().schedule(schedule(
                ScheduleKind::Step,
                None,
                None,
                Some(30),
                Some(0.5),
            )),
            "[train.schedule]\nkind = \"step\"\nwarmup_steps = 10\nstep_size = 30\ngamma = 0.5",
        ),
        (
            b().schedule(ScheduleConfig {
                kind: ScheduleKind::Piecewise,
                milestones: Some(vec![2, 4]),
                factors: Some(vec![0.5, 0.1]),
                ..ScheduleConfig::default()
            }),
            "[train.schedule]\nkind = \"piecewise\"\nwarmup_steps = 0\nmilestones = [2, 4]\nfactors = [0.5, 0.1]",
        ),
        (
            b().schedule(plateau),
            "[train.schedule]\nkind = \"plateau\"\nwarmup_steps = 10\nmin_lr = 1e-5\n\
             monitor = \"val_accuracy\"\nmode = \"max\"\nfactor = 0.5\npatience = 2\n\
             min_delta = 0.01\ncooldown = 1",
        ),
        (
            b().ema(EmaConfig {
                decay: 0.99,
                start_step: 5,
                device: EmaDevice::Same,
                evaluate_with: EmaWeights::Raw,
            }),
            "[train.ema]\ndecay = 0.99\nstart_step = 5\ndevice = \"same\"\nevaluate_with = \"raw\"",
        ),
        (
            b().early_stopping(early),
            "[train.early_stopping]\nmonitor = \"val_accuracy\"\nmode = \"max\"\n\
             patience = 3\nmin_delta = 0.001\nrestore_best = true",
        ),
    ];
    cases.into_iter().map(|(b, t)| (b, text(t))).collect()
}

pub(super) fn other_cases() -> Cases {
    // `[model]` is a kind's name and its keys: a program's kind here (a built-in kind's setters
    // are tested with the kinds, `kinds/builtin/builder.rs`).
    let csv = b()
        .seed(3)
        .output_dir("out")
        .tensorboard(true)
        .log_every_steps(20)
        .device(Backend::Cpu, 1)
        .execution(Execution::Fused)
        .model("sales")
        .model_key("width", 64)
        .csv(DIGITS)
        .label_column(Column::Name("label".into()))
        .header(true)
        .validation_fraction(0.25)
        .stratify(false)
        .standardize(false)
        .num_workers(2);
    let synthetic = b().synthetic(100, 64, 3).data_seed(9).noise(0.5);
    let series = b()
        .series(CO2, 52)
        .column(Column::Name("co2".into()))
        .header(true)
        .horizon(4)
        .holdout(104)
        .gaps(GapPolicy::Previous)
        .season(52);
    vec![
        (
            csv,
            format!(
                "seed = 3\noutput_dir = \"out\"\ntensorboard = true\nlog_every_steps = 20\n[device]\nbackend = \"cpu\"\nindex = 1\n\
                 execution = \"fused\"\n[model]\nkind = \"sales\"\nwidth = 64\n[data]\nkind = \"csv\"\npath = '{DIGITS}'\n\
                 label_column = \"label\"\nheader = true\nvalidation_fraction = 0.25\n\
                 stratify = false\nstandardize = false\nnum_workers = 2"
            ),
        ),
        (
            b().csv(DIGITS)
                .target_column(Column::Index(3))
                .header(false),
            format!("[data]\nkind = \"csv\"\npath = '{DIGITS}'\ntarget_column = 3\nheader = false"),
        ),
        (
            synthetic,
            "[data]\nkind = \"synthetic\"\nsamples = 100\nfeatures = 64\nclasses = 3\nseed = 9\n\
             noise = 0.5"
                .into(),
        ),
        (
            series,
            format!(
                "[data]\nkind = \"series\"\n\
                 path = '{CO2}'\nwindow = 52\ncolumn = \"co2\"\nheader = true\nhorizon = 4\n\
                 holdout = 104\ngaps = \"previous\"\nseason = 52"
            ),
        ),
        (
            b().idx(DIGITS, CO2),
            format!("[data]\nkind = \"idx\"\nimages = '{DIGITS}'\nlabels = '{CO2}'"),
        ),
    ]
    .into_iter()
    .map(|(b, t)| (b, text(&t)))
    .collect()
}

/// `[memory]` and `[checkpoint]`.
pub(super) fn memory_cases() -> Cases {
    let memory = b()
        .preallocate(MemorySize::Bytes(1 << 20))
        .memory_limit(MemorySize::Bytes(1 << 30), OnLimit::Shrink)
        .clear(ClearPolicy::Never)
        .snapshot(SnapshotEvery::Epoch)
        .checkpoint_every_steps(50)
        .keep_best(3, Some("val_accuracy"), Some(MonitorMode::Max));
    let cases: Vec<(ConfigBuilder, &str)> = vec![
        (
            memory,
            "[memory]\npolicy = \"preallocate\"\npreallocate = 1048576\nlimit = 1073741824\n\
             on_limit = \"shrink\"\nclear = \"never\"\nsnapshot = \"epoch\"\n[checkpoint]\n\
             every_steps = 50\nkeep_best = 3\nmonitor = \"val_accuracy\"\nmode = \"max\"",
        ),
        (
            b().growth()
                .memory_limit(MemorySize::Fraction(0.5), OnLimit::Fit),
            "[memory]\npolicy = \"growth\"\nlimit = 0.5\non_limit = \"fit\"",
        ),
        (
            b().device_budget(MemorySize::Bytes(8 << 30), false),
            "[memory]\ndevice_budget = 8589934592\nwait = false",
        ),
        (
            b().device_budget(crate::config::DeviceBudget::Device, true),
            "[memory]\ndevice_budget = \"device\"\nwait = true",
        ),
    ];
    cases.into_iter().map(|(b, t)| (b, text(t))).collect()
}
