//! What a limit error says: the figures, the fix it suggests, and the offload that would fit.

use super::*;

#[test]
fn limit_message_names_values_and_suggests_a_fix() {
    let e = LimitExceeded {
        limit: 512 << 20,
        observed: 731 << 20,
        measure: "peak in use (host)",
        epoch: 1,
        step: 3,
        micro_batch: 256,
        accumulation_steps: 1,
        futile_shrink: None,
        shrinks: false,
        phase: Phase::Step,
        breakdown: None,
        advice: None,
        offload: Box::default(),
    };
    assert_eq!(
        e.to_string(),
        "memory limit 512.0 MiB exceeded: 731.0 MiB peak in use (host) at step 3 of epoch 1 \
         (micro-batch 256, accumulation_steps 1)\n  try train.batch_size = 128 with \
         train.accumulation_steps = 2 (same effective batch), or memory.on_limit = \"shrink\""
    );
}

#[test]
fn a_breach_after_a_futile_shrink_does_not_suggest_shrinking_again() {
    let mut advice = crate::memory::Advice::new(crate::memory::Peaks {
        training: 80 << 20,
        ..Default::default()
    });
    advice.add(
        crate::memory::Lever::Sgd { momentum: false },
        crate::memory::Effect::State(20 << 20),
        20 << 20,
    );
    let mut e = LimitExceeded {
        limit: 70 << 20,
        observed: 71 << 20,
        measure: "peak in use (host)",
        epoch: 1,
        step: 2,
        micro_batch: 32,
        accumulation_steps: 8,
        futile_shrink: Some(28 << 10),
        shrinks: false,
        phase: Phase::Step,
        breakdown: None,
        advice: Some(Box::new(advice.record())),
        offload: Box::default(),
    };
    let text = e.to_string();
    assert!(
        text.contains("SGD in place of the optimizer saves 20.0 MiB"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "; shrinking stopped: the last halving of the micro-batch saved 28.0 KiB, and each \
             further halving saves at most half as much"
        ),
        "{text}"
    );
    // Without a shrink behind it, the policies that act on their own are offered.
    e.futile_shrink = None;
    assert!(e.to_string().ends_with("or \"shrink\""), "{e}");
    // A probe of `fit` (step 0) found nothing: neither is offered again.
    e.step = 0;
    assert!(!e.to_string().contains("on_limit"), "{e}");
}

#[test]
fn a_limit_error_offers_the_offload_that_would_fit_and_only_that() {
    let hint = |key, saves| super::OffloadHint { key, saves };
    let mut e = LimitExceeded {
        limit: 100 << 20,
        observed: 120 << 20,
        measure: "reserved in the device pools",
        epoch: 1,
        step: 2,
        micro_batch: 64,
        accumulation_steps: 4,
        futile_shrink: None,
        shrinks: false,
        phase: Phase::Step,
        breakdown: None,
        advice: None,
        offload: Box::new([
            hint("train.offload.gradients", 8 << 20),
            hint("train.offload.optimizer", 30 << 20),
        ]),
    };
    // The one part that fits alone.
    let text = e.to_string();
    assert!(
        text.contains(
            "\n  offload to host memory would fit: train.offload.optimizer = \"host\" (saves \
             30.0 MiB), or \"auto\""
        ),
        "{text}"
    );
    // Neither alone, both together.
    e.offload[1].saves = 15 << 20;
    assert_eq!(
        e.offload_fix().as_deref(),
        Some(
            "train.offload.gradients = \"host\" (saves 8.0 MiB) with train.offload.optimizer = \
             \"host\" (saves 15.0 MiB)"
        )
    );
    // Not even both: not offered.
    e.offload[1].saves = 5 << 20;
    assert_eq!(e.offload_fix(), None);
    assert!(!e.to_string().contains("offload"), "{e}");
}

#[test]
fn a_refusal_at_rest_names_the_category_that_dominates_its_estimate() {
    const MIB: u64 = 1 << 20;
    let breakdown = crate::memory::Breakdown {
        weights: MIB,
        gradients: MIB,
        optimizer: MIB,
        data: 10 * MIB,
        other: 2 * MIB,
        estimated: vec!["gradients".into()],
        ..Default::default()
    };
    let mut e = LimitExceeded {
        limit: 9 * MIB,
        observed: 15 * MIB,
        measure: "needed at rest (estimated)",
        epoch: 0,
        step: 0,
        micro_batch: 128,
        accumulation_steps: 1,
        futile_shrink: None,
        shrinks: false,
        phase: Phase::RunStart,
        breakdown: Some(Box::new(breakdown)),
        advice: None,
        offload: Box::default(),
    };
    assert_eq!(
        e.to_string(),
        "memory limit 9.0 MiB exceeded: 15.0 MiB needed at rest (estimated) before training\n  \
         by category, at rest: data 10.0 MiB (67%), other 2.0 MiB (13%), weights 1.0 MiB (7%), \
         gradients 1.0 MiB (7%), optimizer 1.0 MiB (7%) (estimated: gradients)\n  \
         data 10.0 MiB (67%) dominates the estimate, where the model's parameters, gradients \
         and optimizer state are 3.0 MiB; the dataset is held in memory whole: raise \
         memory.limit or train on less data"
    );
    // Under what the model alone holds, a smaller model is what it takes.
    e.limit = 2 * MIB;
    assert!(
        e.suggestion().starts_with(
            "data 10.0 MiB (67%) dominates the estimate, and the model's parameters, gradients \
             and optimizer state alone exceed it (3.0 MiB); raise memory.limit or use a smaller \
             model"
        ),
        "{e}"
    );
}
