//! An update in host memory (`train.offload`) against the same update on the device.

use burn::tensor::Device;

use super::*;

/// Weights after `steps` clipped Adam steps over `data` in micro-batches of `sizes`, each step
/// summed and applied where `place` says (on flex, "host memory" is the same memory, but the
/// path is the offloaded one: the sum kept apart, the master copy, the weights written back).
fn steps_placed(model: Mlp, place: SumPlace, data: &[Sample], sizes: &[usize]) -> Vec<f32> {
    let config = train_config(OptimizerKind::Adam, 1e-3);
    let device = Device::flex().autodiff();
    let mut precision = MixedPrecision::f32();
    let mut optimizer = build_optimizer(&config);
    let mut master = HostMaster::default();
    let clip = Some(Clip::Norm(0.5));
    let mut model = model;
    for step in 0..3 {
        let group = cut(&data[step * 256..], sizes);
        let Ok(acc) = accumulate_gradients(
            &task::<Mlp>(),
            &model,
            group,
            &device,
            &precision,
            place,
            || Ok::<(), std::convert::Infallible>(()),
        );
        let (lr, grads) = (config.lr, acc.grads);
        let updated = match place.update_on_host {
            true => master.apply(model, grads, &mut optimizer, (&mut precision, clip), lr),
            false => apply_gradients(model, grads, &mut optimizer, &mut precision, clip, lr),
        }
        .unwrap();
        assert!(updated.clipped.is_some(), "a clipped step reports");
        model = updated.model;
    }
    weights(&model)
}

#[test]
fn an_update_in_host_memory_takes_the_steps_the_device_update_takes() {
    let data = samples(768);
    let start = model(&Device::flex().autodiff());
    let initial = weights(&start);
    let sizes = [64, 64, 64, 64];
    let device = steps_placed(start.clone(), SumPlace::default(), &data, &sizes);
    let host = SumPlace {
        on_host: true,
        update_on_host: true,
    };
    let offloaded = steps_placed(start, host, &data, &sizes);
    // Three steps moved the weights, and every step reached every parameter: a parameter the
    // written-back model no longer trained would stop moving and differ.
    let moved = initial.iter().zip(&device).filter(|(a, b)| a != b).count();
    assert!(
        moved > initial.len() * 9 / 10,
        "{moved} of {}",
        initial.len()
    );
    let diff = device
        .iter()
        .zip(&offloaded)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(diff <= 1e-6, "the offloaded steps differ by up to {diff:e}");
}
