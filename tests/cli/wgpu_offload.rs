//! Offload on real CubeCL pools (wgpu, on lavapipe where there is no GPU): the optimizer's
//! state in host memory trains to the same losses with less on the device; under a limit
//! between the two peaks, `fail` (retrying the step), `fit` and `shrink` complete with
//! `"auto"` offload and fail without it, saying which offload would fit; and a run killed with its optimizer in host memory
//! resumes to the uninterrupted run's weights.

use serde_json::Value;

use super::resume::{kill_when, latest_step_of, max_difference, spawn};
use super::wgpu::adapter_or_skip;
use super::{num, Env};

/// A parameter-heavy MLP with Adam: weights, gradients and the two moments are most of the
/// peak. 1.1 M parameters, 4.3 MiB a set; 2 epochs of one step of 4 x 128 (512 of 640 samples
/// for training). Few samples: under the limits below, fit and shrink can go down to a
/// micro-batch of 1, a lavapipe pass a sample (with 1,638 samples an epoch and batches of 256,
/// `fit` took a micro-batch of 1 and 7 minutes of CI's wgpu tests alone).
const HEAVY: &str = r#"
[run]
name = "heavy"
seed = 1

[device]
backend = "wgpu"

[model]
hidden = [1024, 1024]

[data]
kind = "synthetic"
samples = 640
features = 64
classes = 10

[train]
epochs = 2
batch_size = 128
accumulation_steps = 4
lr = 0.001
"#;

/// Trains `name` with `sets`; the exit code, stderr, and the snapshots.
fn train(env: &Env, name: &str, sets: &[&str]) -> (i32, String, Vec<Value>) {
    let run_name = format!("run.name={name}");
    let mut args = vec![
        "train",
        "--config",
        "heavy.toml",
        "--quiet",
        "--set",
        &run_name,
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    let run = env.run(&args);
    (
        run.code(),
        run.stderr(),
        env.snapshots(&format!("runs/{name}")),
    )
}

fn losses(snaps: &[Value]) -> Vec<f64> {
    let epochs = snaps.iter().filter(|s| s["event"] == "epoch");
    epochs.map(|s| num(s, "loss")).collect()
}

fn peak_in_use(snaps: &[Value]) -> f64 {
    let epochs = snaps.iter().filter(|s| s["event"] == "epoch");
    epochs
        .map(|s| num(s, "peak_bytes_in_use"))
        .fold(0.0, f64::max)
}

/// The memory actions a run took, cleanups left out.
fn actions(snaps: &[Value]) -> Vec<String> {
    let names = snaps.iter().filter_map(|s| s["action"].as_str());
    names
        .filter(|a| *a != "cleanup")
        .map(String::from)
        .collect()
}

const BOTH: [&str; 2] = [
    "train.offload.gradients=\"host\"",
    "train.offload.optimizer=\"host\"",
];

#[test]
fn optimizer_offload_keeps_the_losses_and_a_limit_between_the_peaks_needs_it() {
    if !adapter_or_skip("optimizer_offload_keeps_the_losses_and_a_limit_between_the_peaks_needs_it")
    {
        return;
    }
    let env = Env::new();
    env.write("heavy.toml", HEAVY);
    let (code, err, device) = train(&env, "device", &[]);
    assert_eq!(code, 0, "{err}");
    let (code, err, host) = train(&env, "host", &BOTH);
    assert_eq!(code, 0, "{err}");
    // The same update, computed in host memory.
    let (a, b) = (losses(&device), losses(&host));
    assert_eq!(a.len(), 2);
    for (a, b) in a.iter().zip(&b) {
        assert!((a - b).abs() < 1e-5, "losses {a} and {b}");
    }
    // The device no longer holds the moments (two sets) nor the running sum (one).
    let set = ((64 * 1024 + 1024) + (1024 * 1024 + 1024) + (1024 * 10 + 10)) as f64 * 4.0;
    let saved = peak_in_use(&device) - peak_in_use(&host);
    assert!(
        saved >= 2.5 * set,
        "offload saved {saved} B, a set is {set} B"
    );

    // The advisor ranks both as levers on the run without them, with what each moves.
    let summary = env.summary("runs/device");
    let levers = summary["advice"]["levers"].as_array().expect("advice");
    for (lever, set) in [
        (
            "the gradient sum in host memory",
            "train.offload.gradients=host",
        ),
        (
            "the optimizer in host memory",
            "train.offload.optimizer=host",
        ),
    ] {
        let found = levers.iter().find(|l| l["lever"] == lever);
        let found = found.unwrap_or_else(|| panic!("no {lever} in {levers:?}"));
        assert_eq!(found["set"][0], set);
        assert!(num(found, "saves") > 0.0, "{found}");
        assert!(
            found["note"].as_str().unwrap().contains("per step"),
            "{found}"
        );
    }

    // A limit between the two runs' pool pages (what a limit reads on pools).
    let reserved = |name: &str| num(&env.summary(&format!("runs/{name}")), "peak_bytes_reserved");
    let (high, low) = (reserved("device"), reserved("host"));
    assert!(low < 0.85 * high, "pages {low} against {high}");
    let limit = format!("memory.limit={}", ((high + low) / 2.0) as u64);
    for policy in ["fail", "fit", "shrink"] {
        let on_limit = format!("memory.on_limit=\"{policy}\"");
        let (code, err, _) = train(&env, &format!("{policy}-none"), &[&limit, &on_limit]);
        assert_eq!(code, 3, "{policy} without offload: {err}");
        assert!(
            err.contains("offload to host memory would fit: train.offload."),
            "{policy}: {err}"
        );
        let auto = [
            limit.as_str(),
            &on_limit,
            "train.offload.gradients=\"auto\"",
            "train.offload.optimizer=\"auto\"",
        ];
        let (code, err, snaps) = train(&env, &format!("{policy}-auto"), &auto);
        assert_eq!(code, 0, "{policy} with auto offload: {err}");
        assert!(
            actions(&snaps).contains(&"offload".to_string()),
            "{policy}: {:?}",
            actions(&snaps)
        );
        if policy == "fit" {
            // Probed again once the sum is in host memory, by a target that holds one
            // gradient set, not two: a micro-batch that fits, not 1 (which trained 512
            // micro-steps a step, 100 s of lavapipe).
            let epoch = snaps
                .iter()
                .find(|s| s["event"] == "epoch")
                .expect("an epoch");
            let micro = epoch["micro_batch"].as_u64().expect("micro_batch");
            assert!(
                micro > 1,
                "fit with auto offload trained at micro-batch {micro}"
            );
        }
        let last = |l: Vec<f64>| l.last().copied().unwrap();
        let (done, reference) = (last(losses(&snaps)), last(losses(&device)));
        assert!(
            (done - reference).abs() < 1e-4,
            "{policy}: {done} against {reference}"
        );
    }
}

#[test]
fn a_run_killed_with_its_optimizer_in_host_memory_resumes_to_the_uninterrupted_weights() {
    if !adapter_or_skip(
        "a_run_killed_with_its_optimizer_in_host_memory_resumes_to_the_uninterrupted_weights",
    ) {
        return;
    }
    let env = Env::new();
    // Smaller, and a checkpoint every step: 2 epochs of 7 steps of 2 x 64.
    let config = HEAVY
        .replace("samples = 640", "samples = 2048")
        .replace("hidden = [1024, 1024]", "hidden = [256, 256]")
        .replace("batch_size = 128", "batch_size = 64")
        .replace("accumulation_steps = 4", "accumulation_steps = 2")
        + "\n[checkpoint]\nevery_steps = 1\n";
    env.write("heavy.toml", &config);
    let (code, err, _) = train(&env, "reference", &BOTH);
    assert_eq!(code, 0, "{err}");
    let steps = env.summary("runs/reference")["steps"].as_u64().unwrap() as usize;
    let per_epoch = steps / 2;
    let mut args = vec![
        "train",
        "--config",
        "heavy.toml",
        "--set",
        "run.name=victim",
    ];
    for set in &BOTH {
        args.extend(["--set", set]);
    }
    let victim = env.path("runs/victim");
    let target = per_epoch + 2;
    let mut child = spawn(&env, &args);
    let killed = kill_when(&mut child, || {
        latest_step_of(&victim, per_epoch).is_some_and(|s| s >= target)
    });
    assert!(killed, "the run ended before step {target}");
    let run = env.run(&["train", "--resume", "runs/victim"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    assert_eq!(env.summary("runs/victim")["status"], "completed");
    let diff = max_difference(&env.path("runs/reference"), &victim);
    assert!(diff <= 1e-6, "the final weights differ by up to {diff:e}");
}
