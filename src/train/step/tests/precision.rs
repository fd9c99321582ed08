//! Accumulation in half precision against the large batch in half precision, and loss
//! scaling's skipped steps.

use burn::tensor::Device;

use super::*;

/// `|a - b| / |b - initial|`, in the L2 norm: how far apart two updates from `initial`
/// are, relative to the size of the second.
fn relative_update_diff(initial: &[f32], a: &[f32], b: &[f32]) -> f32 {
    let norm = |v: Vec<f32>| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let diff = norm(a.iter().zip(b).map(|(x, y)| x - y).collect());
    diff / norm(b.iter().zip(initial).map(|(x, y)| x - y).collect())
}

#[test]
fn accumulation_in_f16_matches_the_large_batch_in_f16() {
    // Measured over ten runs (random initialisations): accumulated vs large batch, both in
    // f16, differ by at most 0.1% of the update (L2), while f16 itself is 0.04-7% away
    // from the f32 update (Adam amplifies the rounding of near-zero gradients, whose
    // update is their sign). The bound is 1%.
    let sizes = [64, 64, 64, 64];
    let data = samples(256);
    let f16 = || MixedPrecision::new(Precision::F16, Some(LossScaler::new(1024.0, 2000)));
    for optimizer in [OptimizerKind::Sgd, OptimizerKind::Adam] {
        let config = train_config(optimizer, 0.0);
        let start = model(&Device::flex().autodiff());
        let initial = weights(&start);
        let (exact, exact_loss) = one_update(&config, start.clone(), &data, &[256]);
        let (large, large_loss) = one_update_in(&mut f16(), &config, start.clone(), &data, &[256]);
        let (acc, acc_loss) = one_update_in(&mut f16(), &config, start, &data, &sizes);
        let f16_error = relative_update_diff(&initial, &large, &exact);
        let diff = relative_update_diff(&initial, &acc, &large);
        assert!(
            diff < 0.01,
            "{optimizer:?}: f16 accumulated differs from the f16 large batch by {diff} of \
             the update (f16 vs f32: {f16_error})"
        );
        assert!(f16_error < 0.25, "{optimizer:?}: f16 vs f32 {f16_error}");
        assert!(
            (large_loss - acc_loss).abs() < 1e-3,
            "{large_loss} vs {acc_loss}"
        );
        assert!(
            (exact_loss - large_loss).abs() < 1e-2,
            "{exact_loss} vs {large_loss}"
        );
        assert!(acc.iter().all(|w| w.is_finite()));
    }
}

#[test]
fn overflows_skip_the_step_then_the_scale_settles_and_no_weight_is_ever_nan() {
    let config = train_config(OptimizerKind::Adam, 0.0);
    let device = Device::flex().autodiff();
    let data = samples(256);
    let group: Vec<Vec<Sample>> = data.chunks(64).map(<[Sample]>::to_vec).collect();
    let mut precision =
        MixedPrecision::new(Precision::F16, Some(LossScaler::new(2f64.powi(40), 2000)));
    let mut optimizer = build_optimizer(&config);
    let mut meter = MemoryMeter::new(&device);
    let mut model = model(&device);
    let (mut skipped, mut applied, mut losses) = (0, 0, Vec::new());
    for _ in 0..40 {
        let before = weights(&model);
        let out = accumulated_step(
            &task::<Mlp>(),
            model,
            &mut optimizer,
            config.lr,
            group.clone(),
            &device,
            &mut precision,
            &mut meter,
        )
        .unwrap();
        match out.outcome {
            // A skipped step changes nothing, and halves the scale.
            GroupOutcome::Skip => {
                assert_eq!(weights(&out.model), before, "step {}", skipped + applied);
                skipped += 1;
                assert_eq!(precision.scaler().unwrap().scale(), 2f64.powi(40 - skipped));
            }
            GroupOutcome::Apply => applied += 1,
        }
        model = out.model;
        assert!(weights(&model).iter().all(|w| w.is_finite()));
        losses.push(out.loss.into_scalar::<f32>());
    }
    let scale = precision.scaler().unwrap().scale();
    assert!(
        skipped > 0 && applied > 0,
        "skipped {skipped}, applied {applied}"
    );
    assert_eq!(scale, 2f64.powi(40 - skipped));
    assert!(
        losses.last().unwrap() < &(losses[0] * 0.9),
        "training proceeds after the skips: {losses:?}"
    );
}
