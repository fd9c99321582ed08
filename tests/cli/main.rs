//! Runs the real `tidemark` binary in a temporary directory and checks exit codes, stderr and
//! the files it writes; and the library from Rust. One test binary, a module per area.

mod advisor;
mod app;
mod bad_input;
mod breakdown;
mod custom;
mod damaged_files;
mod data;
mod docs;
mod ema;
mod experiments;
mod fit;
mod flat_search;
mod fuzz;
mod hand_edited;
mod inference;
mod journal_lost;
mod keep_best;
mod kill_anywhere;
mod leases;
mod lr_find;
mod memory;
mod outside;
mod pace;
mod parallel;
mod pbt;
mod picture;
mod plateau;
mod prune;
mod recipe;
mod refused_resume;
mod resume;
mod run_dir;
mod search;
mod stop;
mod study;
mod study_median;
mod study_packed;
mod tensorboard;
mod threads;
mod tpe;
mod training;
#[cfg(feature = "wgpu")]
mod wgpu;
// Named for CI's wgpu step, which runs the tests whose path names wgpu.
#[cfg(feature = "wgpu")]
mod wgpu_app;
#[cfg(feature = "wgpu")]
mod wgpu_kernels;
#[cfg(feature = "wgpu")]
mod wgpu_leases;
#[cfg(feature = "wgpu")]
mod wgpu_offload;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

// The library-level tests below read host memory, as the binary does.
#[global_allocator]
static ALLOC: tidemark::memory::CountingAllocator = tidemark::memory::CountingAllocator::new();

/// A temporary working directory with helpers to write configs and run the CLI in it.
struct Env {
    dir: tempfile::TempDir,
}

/// A small, fast config: finishes in a few seconds even in a debug build.
const SMALL: &str = r#"
[run]
name = "small"
seed = 1

[model]
hidden = [32]

[data]
kind = "synthetic"
samples = 1200
features = 16
classes = 4
noise = 1.5
num_workers = 1

[train]
epochs = 3
batch_size = 32
lr = 0.003
"#;

impl Env {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A directory holding `small.toml` (the [`SMALL`] config).
    fn small() -> Self {
        let env = Self::new();
        env.write("small.toml", SMALL);
        env
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, contents: &str) -> &Self {
        std::fs::write(self.path(rel), contents).unwrap();
        self
    }

    /// `tidemark train --config small.toml --set run.name=NAME`, then `extra`.
    fn train_small(&self, name: &str, extra: &[&str]) -> Run {
        let set_name = format!("run.name={name}");
        let mut args = vec!["train", "--config", "small.toml", "--set", &set_name];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_program(Path::new(env!("CARGO_BIN_EXE_tidemark")), args)
    }

    /// `tidemark` with arguments that need not be UTF-8.
    fn run_os(&self, args: &[&std::ffi::OsStr]) -> Run {
        self.run_program(Path::new(env!("CARGO_BIN_EXE_tidemark")), args)
    }

    /// `program` (the `tidemark` binary, or an app's) with `args`, in this directory.
    fn run_program<S: AsRef<std::ffi::OsStr>>(&self, program: &Path, args: &[S]) -> Run {
        let output = Command::new(program)
            .args(args)
            .current_dir(self.dir.path())
            .env("RUST_BACKTRACE", "1")
            // Mesa's Vulkan driver complains on stderr when this is unset.
            .env("XDG_RUNTIME_DIR", self.dir.path())
            .output()
            .unwrap();
        Run(output)
    }

    fn snapshots(&self, run_dir: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.path(run_dir).join("snapshots.jsonl")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The last epoch `run_dir`'s snapshots record.
    fn epochs_done(&self, run_dir: &str) -> u64 {
        (self.snapshots(run_dir).iter())
            .filter(|s| s["event"] == "epoch")
            .filter_map(|s| s["epoch"].as_u64())
            .max()
            .unwrap_or(0)
    }

    /// `tidemark` with `args` started in the environment's directory, its stderr piped.
    fn spawn(&self, args: &[&str]) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_tidemark"))
            .args(args)
            .current_dir(self.dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn summary(&self, run_dir: &str) -> Value {
        let text = std::fs::read_to_string(self.path(run_dir).join("summary.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// `tidemark` with `args`, killed (SIGKILL, by itself) at the failpoint `moment:pass`
    /// (`src/failpoint.rs`), counted afresh; asserts that it was.
    fn killed_at(&self, args: &[&str], moment: &str) {
        let _ = std::fs::remove_file(self.path("count"));
        let output = Command::new(env!("CARGO_BIN_EXE_tidemark"))
            .args(args)
            .current_dir(self.dir.path())
            .env("TIDEMARK_FAILPOINT", format!("{moment}:KILL"))
            .env("TIDEMARK_FAILPOINT_COUNT", self.path("count"))
            .output()
            .unwrap();
        let signal = std::os::unix::process::ExitStatusExt::signal(&output.status);
        assert_eq!(signal, Some(9), "{args:?} at {moment}");
    }
}

/// The state of process `pid` as `/proc/PID/stat` gives it (`R` running, `S` sleeping, `T`
/// stopped, `Z` a zombie), if the process is there.
fn process_state(pid: impl std::fmt::Display) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name in parentheses may hold spaces and parentheses; the state follows the last one.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Polls for `ready` while `child` (a `tidemark` process) runs. One that ends first fails the
/// test with its stderr; one still waiting after ten minutes (a hang: a trial's first epoch on
/// lavapipe under a loaded CI machine has taken over a minute) is stopped, with its children
/// (SIGTERM first: a search passes it to its children and waits for them), before the test
/// fails, so that no process outlives it. `what` names what is waited for.
fn wait_for<T>(
    child: &mut std::process::Child,
    what: &str,
    mut ready: impl FnMut() -> Option<T>,
) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(value) = ready() {
            return value;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                std::io::Read::read_to_string(&mut pipe, &mut stderr).ok();
            }
            panic!("tidemark ended ({status}) before {what}: {stderr}");
        }
        if start.elapsed() > std::time::Duration::from_secs(600) {
            let pid = child.id().to_string();
            Command::new("kill").args(["-TERM", &pid]).status().ok();
            std::thread::sleep(std::time::Duration::from_secs(5));
            child.kill().ok();
            child.wait().ok();
            panic!("not {what} in 10 minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

struct Run(Output);

impl Run {
    fn code(&self) -> i32 {
        self.0.status.code().expect("exited normally")
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }

    /// Asserts a clean failure: this exit code, exactly one line on stderr (under 300
    /// characters) containing each of `needles`, and no panic.
    fn fails_with(&self, code: i32, needles: &[&str]) {
        self.fails_with_detail(code, needles, &[]);
    }

    /// Asserts a clean failure whose error line (under 300 characters, with each of `needles`)
    /// is followed by detail lines, indented, holding each of `detail`.
    fn fails_with_detail(&self, code: i32, needles: &[&str], detail: &[&str]) {
        let stderr = self.stderr();
        assert_eq!(self.code(), code, "stderr: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("backtrace"),
            "{stderr}"
        );
        let mut lines = stderr.trim_end().lines();
        let line = lines.next().unwrap_or_default();
        assert!(line.starts_with("error: "), "{stderr}");
        assert!(
            line.chars().count() < 300,
            "an error line of 300 characters or more: {line}"
        );
        for needle in needles {
            assert!(line.contains(needle), "{needle:?} not in: {line}");
        }
        let rest: Vec<&str> = lines.collect();
        assert_eq!(rest.is_empty(), detail.is_empty(), "detail lines: {stderr}");
        assert!(rest.iter().all(|l| l.starts_with("  ")), "{stderr}");
        let rest = rest.join("\n");
        for needle in detail {
            assert!(rest.contains(needle), "{needle:?} not in: {rest}");
        }
    }
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// Writes `samples` as a CSV with a header, the label in a named middle column, and feature
/// `j` multiplied by 10^(j - 3): scales from 1e-3 to 1e4.
fn write_badly_scaled_csv(env: &Env, name: &str) {
    let samples = tidemark::data::generate(&tidemark::config::SyntheticConfig {
        samples: 1200,
        features: 8,
        classes: 4,
        seed: 5,
        noise: 1.0,
    });
    let mut text = String::from("f0,f1,f2,f3,digit,f4,f5,f6,f7\n");
    for s in &samples {
        let cells: Vec<String> = s
            .features
            .iter()
            .enumerate()
            .map(|(j, x)| format!("{}", x * 10f32.powi(j as i32 - 3)))
            .collect();
        text.push_str(&format!(
            "{},{},{}\n",
            cells[..4].join(","),
            s.label,
            cells[4..].join(",")
        ));
    }
    env.write(name, &text);
}

/// An IDX file: magic (two zero bytes, type 0x08, rank), big-endian dimensions, bytes.
fn idx_bytes(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend(d.to_be_bytes());
    }
    out.extend(data);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

impl Env {
    /// Trains a shipped digits config (`configs/{config}.toml`, reading `data/digits.csv.gz`
    /// from the repository) with `overrides` (`key=value`).
    fn train_digits(&self, config: &str, overrides: &[&str]) -> Run {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let config = root.join(format!("configs/{config}.toml"));
        let data = format!(
            "data.path=\"{}\"",
            root.join("data/digits.csv.gz").display()
        );
        let mut args = vec![
            "train",
            "--config",
            config.to_str().unwrap(),
            "--set",
            &data,
        ];
        for o in overrides {
            args.extend(["--set", o]);
        }
        self.run(&args)
    }
}

/// Epoch peak and epoch losses of a run of SMALL, reshaped so that activations dominate.
fn wide_batch_run(env: &Env, name: &str, extra: &[&str]) -> (Run, Vec<Value>) {
    let mut args = vec![
        "--quiet",
        "--set",
        "data.samples=3000",
        "--set",
        "train.epochs=2",
        "--set",
        "model.hidden=[256, 256, 256]",
        "--set",
        "train.batch_size=1200",
    ];
    args.extend_from_slice(extra);
    let run = env.train_small(name, &args);
    let snaps = env.snapshots(&format!("runs/{name}"));
    (run, snaps)
}

fn epoch_peak(snaps: &[Value]) -> f64 {
    snaps
        .iter()
        .filter(|s| s["event"] == "epoch")
        .map(|s| num(s, "peak_bytes_in_use"))
        .fold(0.0, f64::max)
}

fn epoch_losses(snaps: &[Value]) -> Vec<f64> {
    snaps
        .iter()
        .filter(|s| s["event"] == "epoch")
        .map(|s| num(s, "loss"))
        .collect()
}

/// What the process held in use at the run's start: the figure a run's own memory sits on
/// (its share of it moves between machines: gemm's per-thread buffers follow the size of the
/// L2 cache), so a bound on what a run holds is a share of its figures above this one.
/// The memory rows of a sweep of runs (`sweep --runs N`) in `dir`, by run: each trial's
/// `memory` in its `sweep.json`, whose trials are ranked.
fn sweep_runs(dir: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("sweep.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let mut trials = json["trials"].as_array().unwrap().clone();
    trials.sort_by_key(|t| t["trial"].as_u64().unwrap());
    trials.iter().map(|t| t["memory"].clone()).collect()
}

fn start_in_use(snaps: &[Value]) -> f64 {
    num(&snaps[0], "bytes_in_use")
}

/// The run's peak, from its summary (it includes the checkpoints, which epoch peaks do not).
fn run_peak(env: &Env, run_dir: &str) -> f64 {
    num(&env.summary(run_dir), "peak_bytes_in_use")
}
