//! A model the project has never seen, through the library: the example's own task
//! (`examples/custom_model/task.rs`), and a second one defined here.

use std::sync::Arc;

use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::{Dataset, InMemDataset};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, TensorData};
use tidemark::config::{ConfigBuilder, OptimizerKind};
use tidemark::memory::MemoryMeter;
use tidemark::model::parameters;
use tidemark::task::{Compute, Splits, StepOutput, Task};
use tidemark::train::{accumulated_step, build_optimizer, GroupOutcome, MixedPrecision};

use super::*;

#[allow(dead_code)]
#[path = "../../examples/custom_model/task.rs"]
mod sales;

fn weights<M: Module>(model: &M) -> Vec<f32> {
    parameters(model)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn accumulation_on_the_example_model_gives_the_large_batch_update() {
    let task = sales::Sales::new(32, 320);
    let items: Vec<sales::Sale> = task.train.iter().take(64).map(Result::unwrap).collect();
    let device = Device::flex().autodiff();
    let start = task.model(&device);
    let initial = weights(&start);
    for (optimizer, lr) in [(OptimizerKind::Sgd, 0.5), (OptimizerKind::Adam, 1e-2)] {
        let config = ConfigBuilder::new("t")
            .optimizer(optimizer, lr)
            .build()
            .unwrap()
            .train;
        let update = |sizes: &[usize]| {
            let mut offset = 0;
            let group: Vec<Vec<sales::Sale>> = sizes
                .iter()
                .map(|&n| {
                    offset += n;
                    items[offset - n..offset].to_vec()
                })
                .collect();
            let out = accumulated_step(
                &task,
                start.clone(),
                &mut build_optimizer(&config),
                lr,
                group,
                &device,
                &mut MixedPrecision::f32(),
                &mut MemoryMeter::new(&device),
            )
            .unwrap();
            assert_eq!(out.outcome, GroupOutcome::Apply);
            (weights(&out.model), out.loss.into_scalar::<f32>())
        };
        let (large, large_loss) = update(&[64]);
        let (accumulated, acc_loss) = update(&[16, 16, 16, 16]);
        let (uneven, _) = update(&[24, 24, 16]);
        assert!(
            max_abs_diff(&initial, &large) > 1e-3,
            "{optimizer:?}: the update is visible"
        );
        for (what, other) in [("4 x 16", &accumulated), ("24 + 24 + 16", &uneven)] {
            let diff = max_abs_diff(&large, other);
            assert!(
                diff < 1e-5,
                "{optimizer:?}: {what} differs from 64 by {diff}"
            );
        }
        assert!(
            (large_loss - acc_loss).abs() < 1e-5,
            "{large_loss} vs {acc_loss}"
        );
    }
}

/// A task unlike any built-in: a model with no bias, on pairs, with its own batcher.
#[derive(Module, Debug)]
struct Line {
    linear: Linear,
}

struct Pairs;

impl Batcher<(f32, f32), (Tensor<2>, Tensor<2>)> for Pairs {
    fn batch(&self, items: Vec<(f32, f32)>, device: &Device) -> (Tensor<2>, Tensor<2>) {
        let n = items.len();
        let (x, y): (Vec<f32>, Vec<f32>) = items.into_iter().unzip();
        let t = |v: Vec<f32>| Tensor::from_data(TensorData::new(v, [n, 1]), device);
        (t(x), t(y))
    }
}

struct Fit {
    samples: i32,
}

impl Task for Fit {
    type Model = Line;
    type Item = (f32, f32);
    type Batch = (Tensor<2>, Tensor<2>);

    fn name(&self) -> String {
        "line".into()
    }
    fn model(&self, device: &Device) -> Line {
        Line {
            linear: LinearConfig::new(1, 1).with_bias(false).init(device),
        }
    }
    fn data(&self) -> Splits<(f32, f32)> {
        let pairs: Vec<(f32, f32)> = (0..self.samples)
            .map(|i| {
                let x = i as f32 / self.samples as f32;
                (x, 3.0 * x)
            })
            .collect();
        let train: Arc<dyn Dataset<(f32, f32)>> = Arc::new(InMemDataset::new(pairs));
        Splits::new(train, None)
    }
    fn batcher(&self) -> &dyn Batcher<(f32, f32), (Tensor<2>, Tensor<2>)> {
        &Pairs
    }
    fn step(&self, model: &Line, (x, y): Self::Batch, cx: &Compute) -> StepOutput {
        let predicted = cx.output(model.linear.forward(cx.input(x)));
        let error = predicted - y;
        StepOutput::new(error.clone().powi_scalar(2).mean()).metric("mae", error.abs().mean())
    }
}

#[test]
fn a_custom_task_writes_the_whole_run_directory_without_model_or_data_keys() {
    let dir = tempfile::tempdir().unwrap();
    let config = ConfigBuilder::new("line")
        .output_dir(dir.path())
        .epochs(3)
        .batch_size(16)
        .accumulation_steps(2)
        .optimizer(OptimizerKind::Sgd, 0.5)
        .build()
        .unwrap();
    let summary = tidemark::Trainer::new(config)
        .fit(Fit { samples: 256 })
        .unwrap();
    assert_eq!(summary.task, "line");
    assert_eq!(summary.steps, 3 * 8, "256 samples in steps of 2 x 16");
    assert_eq!(summary.valid_samples, 0);
    let (first, last) = (
        summary.metric("train_mae").unwrap(),
        summary.first_loss.unwrap(),
    );
    assert!(
        first < 0.2 && summary.final_loss.unwrap() < last / 10.0,
        "{summary:?}"
    );
    assert_eq!(summary.final_val_loss, None, "no validation split");
    for file in [
        "snapshots.jsonl",
        "summary.json",
        "memory.svg",
        "checkpoints/latest",
    ] {
        assert!(summary.run_dir.join(file).is_file(), "{file}");
    }
    let written = std::fs::read_to_string(summary.run_dir.join("config.toml")).unwrap();
    assert!(
        written.starts_with("# model and data: task \"line\", defined in code"),
        "{written}"
    );
    assert!(
        !written.contains("[model]") && !written.contains("[data]"),
        "{written}"
    );
    assert!(
        written.contains("[train]") && written.contains("[memory]"),
        "{written}"
    );
    let snaps = tidemark::record::read_snapshots(&summary.run_dir.join("snapshots.jsonl")).unwrap();
    let epochs: Vec<_> = snaps
        .iter()
        .filter(|s| s.event == tidemark::record::Event::Epoch)
        .collect();
    assert_eq!(epochs.len(), 3);
    assert!(epochs
        .iter()
        .all(|s| s.metric("train_mae").is_some() && s.val_loss.is_none()));
    let json: Value =
        serde_json::from_slice(&std::fs::read(summary.run_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(json["task"], "line");
    assert!(json["final_train_mae"].as_f64().unwrap() < 0.2, "{json}");
}

#[test]
fn a_custom_task_resumes_from_code_to_the_uninterrupted_weights() {
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str, epochs: usize| {
        ConfigBuilder::new(name)
            .output_dir(dir.path())
            .epochs(epochs)
            .batch_size(16)
            .accumulation_steps(2)
            .optimizer(OptimizerKind::Adam, 0.05)
            .build()
            .unwrap()
    };
    let whole = tidemark::Trainer::new(config("whole", 3))
        .fit(Fit { samples: 256 })
        .unwrap();
    let part = tidemark::Trainer::new(config("part", 1))
        .fit(Fit { samples: 256 })
        .unwrap();
    assert_eq!(part.steps, 8);
    let resumed = tidemark::Trainer::new(config("part", 3))
        .resume(&part.run_dir)
        .fit(Fit { samples: 256 })
        .unwrap();
    assert_eq!(
        resumed.run_dir, part.run_dir,
        "the same directory, not a new one"
    );
    assert_eq!((resumed.epochs, resumed.steps), (3, 24));
    let weights = |run: &std::path::Path| {
        tidemark::train::Checkpoint::latest(run)
            .unwrap()
            .weights()
            .unwrap()
    };
    assert_eq!(weights(&resumed.run_dir), weights(&whole.run_dir));
    assert_eq!(resumed.first_loss, whole.first_loss);
    assert_eq!(resumed.metric("train_mae"), whole.metric("train_mae"));
    // The CLI cannot build a task defined in code.
    let run_dir = part.run_dir.display().to_string();
    Env::new()
        .run(&["train", "--resume", &run_dir, "--set", "train.epochs=4"])
        .fails_with(2, &["the run trained task \"line\", defined in code"]);
}

/// Runs the named test of this binary alone in a child process: the host figures count every
/// allocation of the process, and the test harness runs other tests on other threads.
fn alone(test: &str) -> bool {
    if std::env::var_os("TIDEMARK_ALONE").is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--test-threads=1", "--nocapture"])
        .env("TIDEMARK_ALONE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

#[test]
fn trainers_one_after_another_in_one_process_each_report_their_own_figures() {
    if !alone("custom::trainers_one_after_another_in_one_process_each_report_their_own_figures") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, hidden: &[usize]| {
        let config = ConfigBuilder::new(name)
            .output_dir(dir.path())
            .synthetic(2048, 32, 4)
            .hidden(hidden)
            .epochs(2)
            .batch_size(256)
            .build()
            .unwrap();
        tidemark::Trainer::new(config).run().unwrap()
    };
    let small = run("small", &[32]);
    let big = run("big", &[512, 512]);
    let again = run("small-again", &[32]);
    // The big run's parameters (32 -> 512 -> 512 -> 4): weights, gradients and Adam's two
    // moments, four f32 copies, are 4.3 MiB that the small run does not hold.
    let big_params: u64 = (32 * 512 + 512) + (512 * 512 + 512) + (512 * 4 + 4);
    assert!(
        big.peak_bytes_in_use > small.peak_bytes_in_use + big_params * 4 * 4,
        "big {} vs small {}",
        big.peak_bytes_in_use,
        small.peak_bytes_in_use
    );
    // The same run after the big one reports what it did before it: nothing of the big run
    // is counted in its peak or in what it retained.
    let (a, b) = (
        small.peak_bytes_in_use as f64,
        again.peak_bytes_in_use as f64,
    );
    assert!((a - b).abs() < 0.05 * a, "small {a} then {b}");
    for s in [&small, &big, &again] {
        let retained = s.retained.unwrap().retained_bytes_in_use;
        assert!(
            retained.unsigned_abs() < s.peak_bytes_in_use / 100,
            "{}: retained {retained} of a {} peak",
            s.name,
            s.peak_bytes_in_use
        );
    }
}

/// The example's `sales` task as a model kind of this test's own: `width` its one key.
struct SalesKind;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SalesSettings {
    width: usize,
}

impl tidemark::kinds::ModelKind for SalesKind {
    type Settings = SalesSettings;
    type Task = sales::Sales;

    fn metrics(&self) -> &'static [&'static str] {
        &["mae"]
    }

    fn task(
        &self,
        settings: SalesSettings,
        _config: &tidemark::config::RunConfig,
    ) -> Result<sales::Sales, tidemark::Error> {
        Ok(sales::Sales::new(settings.width, 640))
    }
}

#[test]
fn a_search_from_code_trains_a_kind_of_the_program_s_own() {
    let env = Env::new();
    let search = "[run]\nname = \"code\"\nseed = 1\n\n[model]\nkind = \"sales\"\nwidth = 16\n\n\
                  [train]\nepochs = 2\nbatch_size = 64\n\n[sweep]\nmonitor = \"val_mae\"\n\n\
                  [sweep.vary]\nmodel.width = [16, 32]\ntrain.lr = [0.001, 0.01]\n";
    env.write("search.toml", search);
    let mut kinds = tidemark::App::new().kinds().clone();
    kinds.register("sales", SalesKind);
    let out = tidemark::config::Override::parse(&format!(
        "run.output_dir=\"{}\"",
        env.path("runs").display()
    ))
    .unwrap();
    let path = env.path("search.toml");
    let search = tidemark::sweep::Search::from_file(kinds.clone(), &path, &[out]).unwrap();
    let (dir, rows) = search.run().unwrap();
    assert_eq!(rows.len(), 4);
    assert!(
        rows.iter().all(|r| r.monitored.is_some()),
        "every trial completed"
    );
    assert!(dir.join("sweep.json").is_file() && dir.join("sweep.svg").is_file());
    // Each trial's config keeps the kind's keys, with its own width.
    let config = std::fs::read_to_string(dir.join("trial-003/config.toml")).unwrap();
    assert!(config.contains("kind = \"sales\"\nwidth = 32"), "{config}");
    // Without a kind of that name, the search is refused before it writes anything.
    let builtin = tidemark::App::new().kinds().clone();
    let e = tidemark::sweep::Search::from_file(builtin, &path, &[])
        .err()
        .unwrap();
    let e = e.to_string();
    assert!(
        e.contains("search.toml:6:1: model.kind = \"sales\" is not a kind"),
        "{e}"
    );
    // In parallel, from a program whose command line is not an App's: the error says which
    // program the children would have to be.
    let parallel = tidemark::config::Override::parse("sweep.parallel=2").unwrap();
    let out = format!("run.output_dir=\"{}\"", env.path("parallel").display());
    let out = tidemark::config::Override::parse(&out).unwrap();
    let search = tidemark::sweep::Search::from_file(kinds, &path, &[parallel, out]).unwrap();
    let e = search.run().err().unwrap().to_string();
    assert!(e.contains("set TIDEMARK_BIN to such a program"), "{e}");
    assert!(!env.path("parallel").exists(), "nothing is written");
}

/// A network of this test's own over the config's `[data]`: x -> relu(W1 x) -> W2.
#[derive(Module, Debug)]
struct TwoLayers {
    hidden: Linear,
    out: Linear,
}

impl tidemark::model::Network for TwoLayers {
    fn forward(&self, inputs: Tensor<2>) -> Tensor<2> {
        let hidden = burn::tensor::activation::relu(self.hidden.forward(inputs));
        self.out.forward(hidden)
    }
}

/// A kind that takes its data from tidemark's `[data]` sources: `width` its one key.
struct TwoLayersKind;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TwoLayersSettings {
    width: usize,
}

impl tidemark::kinds::ModelKind for TwoLayersKind {
    type Settings = TwoLayersSettings;
    type Task = tidemark::task::Classify<TwoLayers>;

    fn metrics(&self) -> &'static [&'static str] {
        &["accuracy"]
    }

    fn task(
        &self,
        settings: TwoLayersSettings,
        config: &tidemark::config::RunConfig,
    ) -> Result<Self::Task, tidemark::Error> {
        let data = tidemark::data::load(&config.data, config.run.seed)?;
        let (features, classes, width) = (data.features, data.classes, settings.width);
        Ok(tidemark::task::Classify::new(
            data.train,
            data.valid,
            move |d| TwoLayers {
                hidden: LinearConfig::new(features, width).init(d),
                out: LinearConfig::new(width, classes).init(d),
            },
        ))
    }
}

#[test]
fn a_kind_of_the_program_s_own_trains_on_the_config_s_data_and_resumes_from_its_config() {
    let env = Env::new();
    let text = SMALL.replace(
        "[model]\nhidden = [32]",
        "[model]\nkind = \"two\"\nwidth = 24",
    );
    env.write("two.toml", &text);
    let mut kinds = tidemark::App::new().kinds().clone();
    kinds.register("two", TwoLayersKind);
    // Registered again, the program's kind is replaced (a built-in name would panic).
    kinds.register("two", TwoLayersKind);
    assert_eq!(kinds.names(), ["cnn", "lstm", "mlp", "two"]);
    let out = format!("run.output_dir=\"{}\"", env.path("runs").display());
    let overrides = [tidemark::config::Override::parse(&out).unwrap()];
    let load = |overrides: &[tidemark::config::Override]| {
        kinds.load(&env.path("two.toml"), overrides).unwrap()
    };
    let summary = kinds
        .train(tidemark::Trainer::new(load(&overrides)))
        .unwrap();
    assert_eq!(summary.task, "classify", "the task names itself");
    assert!(summary.metric("val_accuracy").unwrap() > 0.5, "{summary:?}");
    // The run's config.toml keeps the kind's keys and the data it trained on.
    let config = std::fs::read_to_string(summary.run_dir.join("config.toml")).unwrap();
    assert!(config.contains("kind = \"two\"\nwidth = 24"), "{config}");
    assert!(
        config.contains("[data]\nkind = \"synthetic\"\nsamples = 1200"),
        "{config}"
    );
    // A longer run, resumed from it, rebuilds the model from that config.
    let longer = tidemark::config::Override::parse("train.epochs=4").unwrap();
    let resumed = tidemark::Trainer::new(load(&[overrides[0].clone(), longer]))
        .resume(summary.run_dir.clone());
    let resumed = kinds.train(resumed).unwrap();
    assert_eq!((resumed.epochs, resumed.run_dir), (4, summary.run_dir));
}
