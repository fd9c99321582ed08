//! Checkpoints keep the latest complete epoch, and it loads back.

use super::*;
use crate::model::{initialize, Mlp};
use crate::model::{Activation, MlpConfig};
use crate::train::build_optimizer;
use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Device, Tensor};

#[test]
fn keeps_only_the_latest_complete_epoch_and_it_loads_back() {
    let dir = tempfile::tempdir().unwrap();
    let device = Device::flex().autodiff();
    let cfg = MlpConfig {
        hidden: vec![8],
        activation: Activation::Relu,
        dropout: 0.0,
    };
    let model = Mlp::new(&cfg, 4, 3, &device);
    initialize(&model);
    let optimizer = build_optimizer(
        &crate::config::ConfigBuilder::new("t")
            .build()
            .unwrap()
            .train,
    );
    let ckpt = Checkpointer::new(dir.path());
    ckpt.save(0, 0, &model, &optimizer).unwrap();
    let second = ckpt.save(1, 10, &model, &optimizer).unwrap();
    assert_eq!(latest_checkpoint(dir.path()), Some(second.clone()));
    assert!(!dir.path().join("checkpoints/epoch-0").exists());
    for file in ["model.bpk", "optimizer.bpk", "meta.json"] {
        assert!(second.join(file).is_file(), "{file}");
    }
    // A fresh model, initialised differently, computes what the saved one did once loaded.
    // Another model, each weight 1 more than the saved one's: different whatever flex's
    // generator (one per process, which other tests' runs reseed) drew.
    let fresh = model.clone().map(&mut AddOne);
    let x = burn::tensor::Tensor::<2>::ones([2, 4], &device);
    let out = |m: &Mlp| {
        m.forward(x.clone())
            .into_data()
            .try_to_vec::<f32>()
            .unwrap()
    };
    assert_ne!(out(&fresh), out(&model));
    let loaded = fresh
        .try_load_file(second.join("model.bpk"))
        .expect("the checkpoint loads");
    assert_eq!(out(&loaded), out(&model));
}

#[test]
fn the_best_checkpoint_is_kept_beside_the_latest_until_a_better_one() {
    let dir = tempfile::tempdir().unwrap();
    let device = Device::flex().autodiff();
    let cfg = MlpConfig {
        hidden: vec![4],
        activation: Activation::Relu,
        dropout: 0.0,
    };
    let model = Mlp::new(&cfg, 3, 2, &device);
    let config = crate::config::ConfigBuilder::new("t").build().unwrap();
    let optimizer = build_optimizer(&config.train);
    let ckpt = Checkpointer::new(dir.path());
    let save = |epoch: usize, best: bool| {
        let state = CheckpointState::at_epoch(epoch, epoch * 10);
        let marks = Marks { best, ranked: None };
        ckpt.save_run(&state, &model, &optimizer, &[], marks)
            .unwrap();
    };
    let names = || {
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join("checkpoints"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert!(Checkpoint::best(dir.path())
        .unwrap_err()
        .to_string()
        .contains("kept no best checkpoint"));
    save(1, true);
    save(2, false);
    save(3, false);
    assert_eq!(names(), ["best", "epoch-1", "epoch-3", "latest"]);
    assert_eq!(Checkpoint::best(dir.path()).unwrap().state.epoch, 1);
    assert_eq!(Checkpoint::latest(dir.path()).unwrap().state.epoch, 3);
    save(4, true);
    assert_eq!(names(), ["best", "epoch-4", "latest"]);
    assert_eq!(Checkpoint::best(dir.path()).unwrap().state.epoch, 4);
}

/// The one list of a checkpoint's files is what a run writes: with a plateau schedule and a
/// moving average, and with neither. A file added to a checkpoint without its place on the
/// list, or a place without its file, fails here.
#[test]
fn a_run_writes_exactly_the_files_the_list_names_for_its_config() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "[train.schedule]\nkind = \"plateau\"\npatience = 1\n[train.ema]\ndecay = 0.9\n";
    for (name, tables) in [("plain", ""), ("extras", extra)] {
        let text = format!(
            "[run]\nname = \"{name}\"\noutput_dir = \"{}\"\n[model]\nhidden = [8]\n\
             [data]\nkind = \"synthetic\"\nsamples = 64\nfeatures = 4\nclasses = 2\n\
             [train]\nepochs = 1\nbatch_size = 32\n{tables}",
            dir.path().display()
        );
        let config = crate::config::parse(&text, "t.toml", &[]).unwrap();
        let extras = Extras::of(&config);
        assert_eq!(extras.ema && extras.plateau, !tables.is_empty());
        crate::Trainer::new(config).run().unwrap();
        let checkpoint = dir.path().join(name).join("checkpoints/epoch-1");
        let mut written: Vec<String> = std::fs::read_dir(&checkpoint)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        written.sort();
        let mut listed: Vec<String> = File::ALL
            .into_iter()
            .filter(|f| f.written(extras))
            .map(|f| f.name().to_string())
            .collect();
        listed.sort();
        assert_eq!(written, listed, "{name}");
        // The checkpoint's own list: every other file, at its size.
        let manifest = Manifest::read(&checkpoint).unwrap().unwrap();
        let on_disk: std::collections::BTreeMap<String, u64> = (written.iter())
            .filter(|f| f.as_str() != "manifest.json")
            .map(|f| (f.clone(), checkpoint.join(f).metadata().unwrap().len()))
            .collect();
        assert_eq!(manifest.files, on_disk, "{name}");
    }
}

/// A checkpoint copied into another run's directory by its list is that run's latest, with
/// the same files and weights; a file of it truncated after is refused, named, before any is
/// read.
#[test]
fn a_checkpoint_copies_by_its_list_and_a_changed_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[run]\nname = \"a\"\noutput_dir = \"{}\"\n[model]\nhidden = [8]\n\
         [data]\nkind = \"synthetic\"\nsamples = 64\nfeatures = 4\nclasses = 2\n\
         [train]\nepochs = 1\nbatch_size = 32\n[train.ema]\ndecay = 0.9\n",
        dir.path().display()
    );
    let config = crate::config::parse(&text, "t.toml", &[]).unwrap();
    crate::Trainer::new(config).run().unwrap();
    let from = Checkpoint::latest(&dir.path().join("a")).unwrap();
    let other = dir.path().join("b");
    let copied = from.copy_into(&other).unwrap();
    assert_eq!(copied.dir, other.join("checkpoints/epoch-1"));
    assert_eq!(Checkpoint::latest(&other).unwrap().state, from.state);
    let files = |d: &Path| {
        let mut names: Vec<(String, u64)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().into_string().unwrap(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        names.sort();
        names
    };
    assert_eq!(files(&copied.dir), files(&from.dir));
    assert!(files(&copied.dir).iter().any(|(f, _)| f == "ema.bpk"));
    assert_eq!(copied.weights().unwrap(), from.weights().unwrap());
    // Truncated in the copy: refused where it is opened, naming the file and both sizes.
    let ema = copied.dir.join("ema.bpk");
    let size = ema.metadata().unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&ema)
        .unwrap()
        .set_len(size / 2)
        .unwrap();
    let error = Checkpoint::latest(&other).unwrap_err().to_string();
    let says = format!(
        "ema.bpk: {} bytes, where the checkpoint's manifest.json lists {size}: truncated or \
         changed since it was written",
        size / 2
    );
    assert!(error.contains(&says), "{error}");
    std::fs::remove_file(&ema).unwrap();
    let error = Checkpoint::latest(&other).unwrap_err().to_string();
    assert!(
        error.contains("ema.bpk: missing, and the checkpoint's manifest.json lists it"),
        "{error}"
    );
}

/// A copy of the directory `from` at `to`, file for file.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        match entry.file_type().unwrap().is_dir() {
            true => copy_dir(&entry.path(), &target),
            false => drop(std::fs::copy(entry.path(), target).unwrap()),
        }
    }
}

#[test]
fn a_copied_checkpoint_resumed_retuned_goes_on_as_its_source_would_to_the_bit() {
    let dir = tempfile::tempdir().unwrap();
    let config = |name: &str, lr: f64, epochs: usize| {
        let text = format!(
            "[run]\nname = \"{name}\"\noutput_dir = \"{}\"\n[model]\nhidden = [16]\n\
             [data]\nkind = \"synthetic\"\nsamples = 256\nfeatures = 8\nclasses = 3\n\
             [train]\nepochs = {epochs}\nbatch_size = 32\nlr = {lr:?}\n\
             [train.schedule]\nkind = \"cosine\"\nmin_lr = 1e-5\n[train.ema]\ndecay = 0.9\n",
            dir.path().display()
        );
        crate::config::parse(&text, "t.toml", &[]).unwrap()
    };
    // Two members after one epoch, at their own rates.
    crate::Trainer::new(config("a", 1e-3, 1)).run().unwrap();
    crate::Trainer::new(config("b", 3e-2, 1)).run().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    // `a` goes on at a new rate: its run, copied, resumed retuned.
    copy_dir(&a, &dir.path().join("a2"));
    let summary = crate::Trainer::new(config("a2", 1.2e-3, 2))
        .resume(dir.path().join("a2"))
        .retune()
        .run()
        .unwrap();
    assert_eq!(summary.epochs, 2);
    // `b` copies `a`'s checkpoint and takes the same rate (an exploit, then an explore).
    let from = Checkpoint::latest(&a).unwrap();
    from.copy_into(&b).unwrap();
    crate::Trainer::new(config("b", 1.2e-3, 2))
        .resume(&b)
        .retune()
        .run()
        .unwrap();
    let weights = |run: &str| {
        let checkpoint = Checkpoint::latest(&dir.path().join(run)).unwrap();
        assert_eq!(checkpoint.state.epoch, 2, "{run}");
        checkpoint.weights().unwrap()
    };
    assert_eq!(weights("b"), weights("a2"));
    // The new rate took effect: `a` gone on at its own rate ends elsewhere.
    copy_dir(&a, &dir.path().join("a3"));
    crate::Trainer::new(config("a3", 1e-3, 2))
        .resume(dir.path().join("a3"))
        .run()
        .unwrap();
    assert_ne!(weights("a3"), weights("a2"));
    // The member's record says what changed: its config, and its `resume` snapshot.
    let saved = std::fs::read_to_string(b.join("config.toml")).unwrap();
    assert!(saved.contains("lr = 0.0012"), "{saved}");
    let snapshots = std::fs::read_to_string(b.join("snapshots.jsonl")).unwrap();
    assert!(
        snapshots.contains("resuming from checkpoints/epoch-1: 1 epochs, 7 steps done; retuned: train.lr 0.03 -> 0.0012"),
        "{snapshots}"
    );
    // Without `retune`, the rate is refused as before; with it, a key of the model's still is.
    let refused = |trainer: crate::Trainer| trainer.run().unwrap_err().to_string();
    let plain = refused(crate::Trainer::new(config("a2", 1e-4, 3)).resume(dir.path().join("a2")));
    assert!(
        plain.contains("train.lr is 0.0012 in the run's config.toml but 0.0001 here"),
        "{plain}"
    );
    let mut wider = config("a2", 1.2e-3, 3);
    let settings = crate::model::MlpConfig {
        hidden: vec![32],
        ..Default::default()
    };
    wider.model = crate::config::ModelConfig::with_settings("mlp", &settings).unwrap();
    let shape = refused(
        crate::Trainer::new(wider)
            .resume(dir.path().join("a2"))
            .retune(),
    );
    assert!(shape.contains("model.hidden is [16]"), "{shape}");
    assert!(
        shape.contains("and, retuned, train.lr, train.weight_decay"),
        "{shape}"
    );
}

/// Adds 1 to every weight.
struct AddOne;

impl ModuleMapper for AddOne {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        param.map(|tensor| tensor.add_scalar(1.0))
    }
}
