//! W1's training step split into forward pass, backward pass and optimizer update, on flex:
//! the median of each over 50 steps (after 10 warm-up steps), with the optimizer tidemark builds
//! from `configs/bench/w1.toml`. Used by `docs/performance.md`.
//!
//! ```text
//! cargo run --release --example step_split
//! RAYON_NUM_THREADS=1 cargo run --release --example step_split   # on one core
//! cargo run --release --example step_split -- --plain-heap        # glibc's default heap
//! cargo run --release --example step_split -- --burn-adam         # Burn's Adam, unfused
//! cargo run --release --example step_split -- --outside-pool      # this thread not a worker
//! ```

use std::path::Path;
use std::time::Instant;

use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Int, Tensor, TensorData};
use tidemark::config::DataSource;
use tidemark::model::{Mlp, MlpConfig};
use tidemark::train::build_optimizer;

const WARM_UP: usize = 10;
const TIMED: usize = 50;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = tidemark::config::load(Path::new("configs/bench/w1.toml"), &[])?;
    // The workload's `[model]` read into the built-in MLP's settings, as `kind = "mlp"` is.
    let mlp: MlpConfig = config.model.settings().map_err(|e| e.message)?;
    let DataSource::Synthetic(data) = &config.data.source else {
        return Err("configs/bench/w1.toml: expected synthetic data".into());
    };
    let (batch, features, classes) = (config.train.batch_size, data.features, data.classes);
    // As a run does: glibc keeps freed blocks for reuse instead of mapping each one afresh.
    // `--plain-heap` leaves glibc's defaults, as a plain Burn program has them.
    let flag = |name: &str| std::env::args().any(|a| a == name);
    let (plain_heap, burn_adam) = (flag("--plain-heap"), flag("--burn-adam"));
    // As `tidemark train` does: this thread is one of rayon's workers, so it runs its share of
    // each parallel op. `--outside-pool` hands every such op to the pool, as a plain program.
    let joined = !flag("--outside-pool") && tidemark::backend::join_compute_pool();
    if !plain_heap {
        tidemark::memory::pool_host_heap();
    }
    let device = Device::flex();
    let ad = device.clone().autodiff();
    ad.seed(config.run.seed);
    let mut model = Mlp::new(&mlp, features, classes, &ad);
    let mut optimizer = match burn_adam {
        true => AdamConfig::new().init(),
        false => build_optimizer(&config.train),
    };
    let loss_fn = CrossEntropyLossConfig::new().init(&ad);
    // Fixed inputs: the step's cost does not depend on the values.
    let x: Vec<f32> = (0..batch * features)
        .map(|i| (i % 17) as f32 / 8.0 - 1.0)
        .collect();
    let x = Tensor::<2>::from_data(TensorData::new(x, [batch, features]), &ad);
    let y: Vec<i64> = (0..batch as i64).map(|i| i % classes as i64).collect();
    let y = Tensor::<1, Int>::from_data(TensorData::new(y, [batch]), &ad);

    let mut times: [Vec<f64>; 3] = Default::default();
    for step in 0..WARM_UP + TIMED {
        let t0 = Instant::now();
        let loss = loss_fn.forward(model.forward(x.clone()), y.clone());
        let t1 = Instant::now();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let t2 = Instant::now();
        model = optimizer.step(config.train.lr, model, grads);
        device.sync()?;
        let t3 = Instant::now();
        if step >= WARM_UP {
            for (list, (a, b)) in times.iter_mut().zip([(t0, t1), (t1, t2), (t2, t3)]) {
                list.push((b - a).as_secs_f64() * 1e3);
            }
        }
    }
    let [forward, backward, update] = times.map(|mut list| {
        list.sort_by(f64::total_cmp);
        list[list.len() / 2]
    });
    println!(
        "W1 step, median of {TIMED}: forward {forward:.2} ms, backward {backward:.2} ms, \
         optimizer {update:.2} ms, sum {:.2} ms (rayon threads: {}{}; heap: {}; {})",
        forward + backward + update,
        rayon::current_num_threads(),
        if joined { ", this one among them" } else { "" },
        if plain_heap {
            "glibc's defaults"
        } else {
            "pooled"
        },
        if burn_adam {
            "Burn's Adam"
        } else {
            "tidemark's optimizer"
        }
    );
    Ok(())
}
