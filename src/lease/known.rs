//! What a device's registry remembers of the runs that completed on it: for a run of the same
//! shape (its config but for what changes neither its memory nor its step, such as its name,
//! seed, epochs and learning rate, and the program that runs it: [`shape_of`]), the lease it
//! settled on and its time an epoch. A run that ran before asks for
//! that lease at once, in place of the largest on the device, to probe and set up in; and a
//! waiting run's expected time ranks it among the runs that asked with it (`admit.rs`).
//!
//! A remembered figure is a hint, never a lease: the run still probes, and leases what its
//! probe finds. A file that cannot be read is passed over as if it were not there, and the
//! next run of that shape to complete writes it anew.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::DeviceDir;
use crate::config::RunConfig;

/// The most shapes a device's directory remembers: past it, the one written longest ago goes.
pub const MOST_REMEMBERED: usize = 512;

/// What is remembered of one shape of run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Known {
    /// The format's version: 1.
    pub version: u32,
    /// The lease its last completed run settled on.
    pub bytes: u64,
    /// Seconds an epoch, its lease held (its probe and set-up not counted).
    pub seconds_per_epoch: f64,
}

/// The name under which `config`'s shape of run is remembered: two CRC-32Cs of its config as
/// JSON, less what changes neither its memory nor its step (its name, output directory, seed,
/// epochs, TensorBoard and logging, checkpoints, the lease's own keys, and the optimizer's
/// numbers that a search varies: the learning rate and its schedule, weight decay, betas,
/// epsilon, Nesterov, alpha, the loss scale's start and growth, early stopping), and of the
/// program's name, so that two apps' models under one config are two shapes.
pub(crate) fn shape_of(config: &RunConfig) -> String {
    let mut value = serde_json::to_value(config).expect("a config serialises");
    for (table, key) in [
        ("run", "name"),
        ("run", "output_dir"),
        ("run", "seed"),
        ("run", "tensorboard"),
        ("run", "log_every_steps"),
        ("train", "epochs"),
        ("train", "lr"),
        ("train", "schedule"),
        ("train", "weight_decay"),
        ("train", "betas"),
        ("train", "eps"),
        ("train", "nesterov"),
        ("train", "alpha"),
        ("train", "initial_loss_scale"),
        ("train", "loss_scale_growth_interval"),
        ("train", "early_stopping"),
        ("memory", "wait"),
        ("memory", "device_budget"),
    ] {
        if let Some(t) = value.get_mut(table).and_then(|t| t.as_object_mut()) {
            t.remove(key);
        }
    }
    if let Some(top) = value.as_object_mut() {
        top.remove("checkpoint");
    }
    let program = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let text = format!("{program}\n{value}");
    let first = crc32c::crc32c(text.as_bytes());
    let second = crc32c::crc32c_append(0x7469_6465, text.as_bytes());
    format!("{first:08x}{second:08x}")
}

impl DeviceDir {
    fn known_path(&self, shape: &str) -> PathBuf {
        self.path().join(format!("known-{shape}.json"))
    }

    /// What is remembered of runs of `shape`, if anything readable.
    pub fn known(&self, shape: &str) -> Option<Known> {
        let text = std::fs::read_to_string(self.known_path(shape)).ok()?;
        let known: Known = serde_json::from_str(&text).ok()?;
        let sane = known.version == 1
            && known.bytes > 0
            && known.seconds_per_epoch.is_finite()
            && known.seconds_per_epoch >= 0.0;
        sane.then_some(known)
    }

    /// How many shapes of run it remembers.
    pub fn remembered(&self) -> usize {
        self.known_files().len()
    }

    /// Its `known-*.json` files, with when each was last written.
    fn known_files(&self) -> Vec<(std::time::SystemTime, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(self.path()) else {
            return Vec::new();
        };
        (entries.filter_map(|e| e.ok()))
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("known-") && name.ends_with(".json")
            })
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect()
    }

    /// Remembers `known` for runs of `shape`, in place of what was. A registry that cannot
    /// take it loses a hint, not a run: the error is the caller's to pass over.
    pub fn remember(&self, shape: &str, known: &Known) -> std::io::Result<()> {
        let line = serde_json::to_string(known).expect("a figure serialises");
        crate::record::write_atomic(&self.known_path(shape), format!("{line}\n").as_bytes())?;
        let mut files = self.known_files();
        if files.len() > MOST_REMEMBERED {
            files.sort();
            for (_, path) in &files[..files.len() - MOST_REMEMBERED] {
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunConfig;
    use crate::lease::Registry;

    fn config(text: &str) -> RunConfig {
        crate::config::parse(text, "shape.toml", &[]).unwrap()
    }

    #[test]
    fn a_shape_is_the_config_but_for_what_changes_neither_memory_nor_step() {
        let base = "[run]\nname = \"a\"\nseed = 1\n[model]\nhidden = [64]\n[data]\nkind = \
                    \"synthetic\"\n[train]\nepochs = 2\n";
        let shape = shape_of(&config(base));
        let renamed = base
            .replace("name = \"a\"", "name = \"b\"")
            .replace("seed = 1", "seed = 7");
        assert_eq!(shape_of(&config(&renamed)), shape);
        assert_eq!(
            shape_of(&config(&base.replace("epochs = 2", "epochs = 9"))),
            shape
        );
        let tuned = base.replace("epochs = 2", "epochs = 2\nlr = 0.1\nweight_decay = 0.01");
        assert_eq!(shape_of(&config(&tuned)), shape);
        assert_ne!(shape_of(&config(&base.replace("[64]", "[65]"))), shape);
        let batch = base.replace("epochs = 2", "epochs = 2\nbatch_size = 7");
        assert_ne!(shape_of(&config(&batch)), shape);
        assert_eq!(shape.len(), 16);
    }

    #[test]
    fn a_remembered_figure_reads_back_and_a_damaged_one_is_passed_over() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Registry::at(tmp.path().join("r"), false)
            .unwrap()
            .device("host")
            .unwrap();
        assert_eq!(dir.known("abc"), None);
        let known = Known {
            version: 1,
            bytes: 5 << 20,
            seconds_per_epoch: 0.25,
        };
        dir.remember("abc", &known).unwrap();
        assert_eq!(dir.known("abc"), Some(known));
        // Past the most it keeps, the oldest goes.
        for i in 0..MOST_REMEMBERED {
            dir.remember(&format!("s{i:04}"), &known).unwrap();
        }
        assert_eq!(dir.remembered(), MOST_REMEMBERED);
        assert_eq!(dir.known("abc"), None);
        assert_eq!(
            dir.known(&format!("s{:04}", MOST_REMEMBERED - 1)),
            Some(known)
        );
        dir.remember("abc", &known).unwrap();
        for damaged in [
            "{",
            "{\"version\":2,\"bytes\":1,\"seconds_per_epoch\":1}",
            "",
        ] {
            std::fs::write(dir.path().join("known-abc.json"), damaged).unwrap();
            assert_eq!(dir.known("abc"), None, "{damaged}");
        }
        // Not a lease: a scan passes it by.
        assert_eq!(dir.scan().unwrap().leases.len(), 0);
    }
}
