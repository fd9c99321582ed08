use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};

use super::*;
use crate::model::Mlp;
use crate::model::{Activation, MlpConfig};

fn net(device: &Device) -> Mlp {
    let config = MlpConfig {
        hidden: vec![16],
        activation: Activation::Relu,
        dropout: 0.0,
    };
    Mlp::new(&config, 6, 3, device)
}

/// Gradients of `scale` times the sum of the network's outputs on a fixed input.
fn grads(model: &Mlp, scale: f64) -> GradientsParams {
    let device = Device::flex().autodiff();
    let x = Tensor::<2>::ones([4, 6], &device);
    let loss = model.forward(x).sum().mul_scalar(scale);
    GradientsParams::from_grads(loss.backward(), model)
}

/// Every gradient of `model` in `grads`, flattened in parameter order.
fn flat(grads: &GradientsParams, model: &Mlp) -> Vec<f32> {
    struct Gather<'a>(&'a GradientsParams, Vec<f32>);
    impl burn::module::ModuleVisitor for Gather<'_> {
        fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<D>>) {
            let grad = self
                .0
                .get::<D>(param.id)
                .expect("every parameter has a gradient");
            self.1.extend(grad.into_data().iter::<f32>());
        }
    }
    let mut gather = Gather(grads, Vec::new());
    model.visit(&mut gather);
    gather.1
}

fn norm(v: &[f32]) -> f64 {
    v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt()
}

fn read(flag: Tensor<1>) -> f32 {
    flag.into_scalar::<f32>()
}

#[test]
fn norm_clipping_scales_the_whole_gradient_to_the_global_norm() {
    let model = net(&Device::flex().autodiff());
    let mut g = grads(&model, 10.0);
    let before = flat(&g, &model);
    let total = norm(&before);
    assert!(
        total > 2.0,
        "the test needs a norm above the bound, got {total}"
    );
    let flag = Clip::Norm(1.0).apply(&mut g, &model).unwrap();
    let after = flat(&g, &model);
    assert!(
        (norm(&after) - 1.0).abs() < 1e-5,
        "global norm {}",
        norm(&after)
    );
    // One factor for every element: the direction is kept (per-tensor clipping would not).
    let factor = 1.0 / (total + 1e-6);
    for (a, b) in after.iter().zip(&before) {
        assert!(
            (*a as f64 - *b as f64 * factor).abs() < 1e-6,
            "{a} vs {b} * {factor}"
        );
    }
    assert_eq!(read(flag), 1.0);
    // Under the bound: untouched, and not counted.
    let mut g = grads(&model, 10.0);
    let flag = Clip::Norm(total * 2.0).apply(&mut g, &model).unwrap();
    assert_eq!(flat(&g, &model), before);
    assert_eq!(read(flag), 0.0);
}

#[test]
fn value_clipping_bounds_each_element() {
    let model = net(&Device::flex().autodiff());
    let mut g = grads(&model, 1.0);
    let before = flat(&g, &model);
    let largest = before.iter().fold(0f32, |m, x| m.max(x.abs()));
    let bound = largest / 2.0;
    let flag = Clip::Value(bound as f64).apply(&mut g, &model).unwrap();
    let after = flat(&g, &model);
    for (a, b) in after.iter().zip(&before) {
        assert_eq!(*a, b.clamp(-bound, bound));
    }
    assert_eq!(read(flag), 1.0);
    let mut g = grads(&model, 1.0);
    let flag = Clip::Value(largest as f64 * 2.0)
        .apply(&mut g, &model)
        .unwrap();
    assert_eq!(flat(&g, &model), before);
    assert_eq!(read(flag), 0.0);
}
