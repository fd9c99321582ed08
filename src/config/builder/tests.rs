//! Code and files give the same config: each setter writes the key a file writes, reaches the
//! same validated [`RunConfig`], and fails with the same error naming that key.

use std::cell::Cell;
use std::collections::BTreeSet;

use serde::de::{self, DeserializeOwned, Visitor};

use super::*;
use crate::config::{
    parse, Column, GapPolicy, MonitorMode, RawCheckpoint, RawData, RawDevice, RawEarlyStopping,
    RawMemory, RawModel, RawOffload, RawRun, RawSchedule, RawTrain, ScheduleKind,
};

/// Files that exist (validation checks only that).
const CO2: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/co2-weekly.csv");
const DIGITS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/digits.csv.gz");

/// The text of a file with `[run] name = "b"` and `toml`.
fn text(toml: &str) -> String {
    format!("[run]\nname = \"b\"\n{toml}")
}

fn b() -> ConfigBuilder {
    ConfigBuilder::new("b")
}

/// Builders with the file each should equal.
type Cases = Vec<(ConfigBuilder, String)>;

fn train_cases() -> Cases {
    let cases: Vec<(ConfigBuilder, &str)> = vec![
        (
            b().epochs(3).batch_size(16).accumulation_steps(2).lr(0.01),
            "[train]\nepochs = 3\nbatch_size = 16\naccumulation_steps = 2\nlr = 0.01",
        ),
        (b().weight_decay(0.01), "[train]\nweight_decay = 0.01"),
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
fn train_table_cases() -> Cases {
    let schedule = |kind, min_lr, decay_steps, step_size, gamma| ScheduleConfig {
        kind,
        warmup_steps: 10,
        min_lr,
        decay_steps,
        step_size,
        gamma,
    };
    let early = EarlyStoppingConfig {
        monitor: "val_accuracy".into(),
        mode: MonitorMode::Max,
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
            b().early_stopping(early),
            "[train.early_stopping]\nmonitor = \"val_accuracy\"\nmode = \"max\"\n\
             patience = 3\nmin_delta = 0.001\nrestore_best = true",
        ),
    ];
    cases.into_iter().map(|(b, t)| (b, text(t))).collect()
}

fn other_cases() -> Cases {
    let mlp_on_csv = b()
        .seed(3)
        .output_dir("out")
        .device(Backend::Cpu, 1)
        .execution(Execution::Fused)
        .mlp(&[16, 8])
        .activation(Activation::Gelu)
        .dropout(0.1)
        .csv(DIGITS)
        .label_column(Column::Name("label".into()))
        .header(true)
        .validation_fraction(0.25)
        .stratify(false)
        .standardize(false)
        .num_workers(2);
    let cnn = b()
        .cnn([1, 8, 8], &[4, 8], 5)
        .pool(2)
        .batch_norm(false)
        .activation(Activation::Tanh)
        .dropout(0.2)
        .synthetic(100, 64, 3)
        .data_seed(9)
        .noise(0.5);
    let lstm = b()
        .lstm(&[16, 8])
        .series(CO2, 52)
        .column(Column::Name("co2".into()))
        .header(true)
        .horizon(4)
        .holdout(104)
        .gaps(GapPolicy::Previous)
        .season(52);
    vec![
        (
            mlp_on_csv,
            format!(
                "seed = 3\noutput_dir = \"out\"\n[device]\nbackend = \"cpu\"\nindex = 1\n\
                 execution = \"fused\"\n[model]\nkind = \"mlp\"\nhidden = [16, 8]\n\
                 activation = \"gelu\"\ndropout = 0.1\n[data]\nkind = \"csv\"\npath = '{DIGITS}'\n\
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
            cnn,
            "[model]\nkind = \"cnn\"\ninput = [1, 8, 8]\nchannels = [4, 8]\nkernel_size = 5\n\
             pool = 2\nbatch_norm = false\nactivation = \"tanh\"\ndropout = 0.2\n[data]\n\
             kind = \"synthetic\"\nsamples = 100\nfeatures = 64\nclasses = 3\nseed = 9\n\
             noise = 0.5"
                .into(),
        ),
        (
            lstm,
            format!(
                "[model]\nkind = \"lstm\"\nhidden = [16, 8]\n[data]\nkind = \"series\"\n\
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
fn memory_cases() -> Cases {
    let memory = b()
        .preallocate(MemorySize::Bytes(1 << 20))
        .memory_limit(MemorySize::Bytes(1 << 30), OnLimit::Shrink)
        .clear(ClearPolicy::Never)
        .snapshot(SnapshotEvery::Epoch)
        .checkpoint_every_steps(50);
    let cases: Vec<(ConfigBuilder, &str)> = vec![
        (
            memory,
            "[memory]\npolicy = \"preallocate\"\npreallocate = 1048576\nlimit = 1073741824\n\
             on_limit = \"shrink\"\nclear = \"never\"\nsnapshot = \"epoch\"\n[checkpoint]\n\
             every_steps = 50",
        ),
        (
            b().growth()
                .memory_limit(MemorySize::Fraction(0.5), OnLimit::Fit),
            "[memory]\npolicy = \"growth\"\nlimit = 0.5\non_limit = \"fit\"",
        ),
    ];
    cases.into_iter().map(|(b, t)| (b, text(t))).collect()
}

/// Each builder writes the keys its file writes, and builds the config the file parses to.
fn assert_same(cases: Cases) {
    for (builder, toml) in cases {
        let raw: RawConfig = toml::from_str(&toml).unwrap();
        assert_eq!(builder.raw, raw, "{toml}");
        assert_eq!(
            builder.build().unwrap(),
            parse(&toml, "t.toml", &[]).unwrap(),
            "{toml}"
        );
    }
}

#[test]
fn every_train_key_the_docs_show_has_a_setter_equal_to_its_toml() {
    assert_same(train_cases());
    assert_same(train_table_cases());
}

#[test]
fn every_model_data_device_and_memory_key_has_a_setter_equal_to_its_toml() {
    assert_same(other_cases());
    assert_same(memory_cases());
}

/// A deserializer that only records the field names of the struct asked of it.
struct Fields(Cell<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for &Fields {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only a struct's fields are read"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(fields);
        self.deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// `section.field` for each field of `T`.
fn keys<T: DeserializeOwned>(section: &str) -> Vec<String> {
    let fields = Fields(Cell::new(&[]));
    let _ = T::deserialize(&fields);
    fields
        .0
        .get()
        .iter()
        .map(|f| format!("{section}.{f}"))
        .collect()
}

/// The dotted keys with a value in `value`.
fn set_keys(prefix: &str, value: &toml::Value, out: &mut BTreeSet<String>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                let key = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                set_keys(&key, value, out);
            }
        }
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

#[test]
fn the_setters_reach_every_key_a_file_takes() {
    let tables = ["train.schedule", "train.early_stopping", "train.offload"];
    let every: BTreeSet<String> = [
        keys::<RawRun>("run"),
        keys::<RawDevice>("device"),
        keys::<RawModel>("model"),
        keys::<RawData>("data"),
        keys::<RawTrain>("train"),
        keys::<RawSchedule>("train.schedule"),
        keys::<RawEarlyStopping>("train.early_stopping"),
        keys::<RawOffload>("train.offload"),
        keys::<RawMemory>("memory"),
        keys::<RawCheckpoint>("checkpoint"),
    ]
    .concat()
    .into_iter()
    .filter(|k| !tables.contains(&k.as_str()))
    .collect();
    assert!(
        every.len() > 60 && every.contains("data.num_workers"),
        "{every:?}"
    );
    let mut set = BTreeSet::new();
    let cases = train_cases().into_iter().chain(train_table_cases());
    for (builder, _) in cases.chain(other_cases()).chain(memory_cases()) {
        set_keys("", &toml::Value::try_from(&builder.raw).unwrap(), &mut set);
    }
    let missing: Vec<_> = every.difference(&set).collect();
    assert!(missing.is_empty(), "keys no setter reaches: {missing:?}");
}

#[test]
fn a_bad_value_from_a_setter_fails_as_the_file_does() {
    let size = MemorySize::Bytes;
    let cases: Vec<(ConfigBuilder, String)> = vec![
        (b().betas(1.5, 0.9), "[train]\nbetas = [1.5, 0.9]".into()),
        (b().dropout(1.5), "[model]\ndropout = 1.5".into()),
        (
            b().mlp(&[8]).pool(2),
            "[model]\nkind = \"mlp\"\nhidden = [8]\npool = 2".into(),
        ),
        (
            b().cnn([1, 4, 4], &[8, 8, 8], 3),
            "[model]\nkind = \"cnn\"\ninput = [1, 4, 4]\nchannels = [8, 8, 8]\nkernel_size = 3"
                .into(),
        ),
        (
            b().lstm(&[]),
            "[model]\nkind = \"lstm\"\nhidden = []".into(),
        ),
        (
            b().synthetic(10, 4, 1),
            "[data]\nkind = \"synthetic\"\nsamples = 10\nfeatures = 4\nclasses = 1".into(),
        ),
        (
            b().csv("nope.csv"),
            "[data]\nkind = \"csv\"\npath = \"nope.csv\"".into(),
        ),
        (
            b().csv(DIGITS)
                .label_column(Column::Index(0))
                .target_column(Column::Index(1)),
            format!(
                "[data]\nkind = \"csv\"\npath = '{DIGITS}'\nlabel_column = 0\ntarget_column = 1"
            ),
        ),
        (
            b().series(CO2, 8).horizon(0),
            format!("[data]\nkind = \"series\"\npath = '{CO2}'\nwindow = 8\nhorizon = 0"),
        ),
        (
            b().series(CO2, 8).stratify(true),
            format!("[data]\nkind = \"series\"\npath = '{CO2}'\nwindow = 8\nstratify = true"),
        ),
        (
            b().validation_fraction(1.0),
            "[data]\nvalidation_fraction = 1.0".into(),
        ),
        (
            b().preallocate(size(1 << 30))
                .memory_limit(size(1 << 20), OnLimit::Fail),
            "[memory]\npolicy = \"preallocate\"\npreallocate = 1073741824\nlimit = 1048576\n\
             on_limit = \"fail\""
                .into(),
        ),
        (
            b().preallocate(MemorySize::Fraction(0.5))
                .clear(ClearPolicy::EveryEpoch),
            "[memory]\npolicy = \"preallocate\"\npreallocate = 0.5\nclear = \"every_epoch\"".into(),
        ),
        (
            b().checkpoint_every_steps(0),
            "[checkpoint]\nevery_steps = 0".into(),
        ),
    ];
    for (builder, toml) in cases {
        let code = builder.build().unwrap_err();
        let file = parse(&text(&toml), "t.toml", &[]).unwrap_err();
        assert_eq!(
            (&code.key, &code.message),
            (&file.key, &file.message),
            "{toml}"
        );
        let key = code.key.as_deref().unwrap();
        assert!(code.message.starts_with(key), "{code}");
        assert_eq!(code.to_string(), format!("config: {}", file.message));
        assert!(!code.to_string().contains('\n'), "{code}");
    }
}
