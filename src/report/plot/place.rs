//! Where things sit on the picture's x axis, in epochs: `run_start` at 0, epoch `e`'s end at
//! `e`, its steps in between by their step count, `run_end` (after release) half an epoch
//! after the last, and a memory action at its step, or a quarter after the snapshot before it.

use crate::record::{as_it_stands, Event, Snapshot, StepSample};

/// A snapshot and its place on the x axis.
pub type Placed<'a> = (f64, &'a Snapshot);

/// The steps an epoch's snapshot covers: after `start` steps, up to `end`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    epoch: usize,
    start: usize,
    end: usize,
}

impl Span {
    /// Where step `step` (the count after it) sits, if it is one of this epoch's.
    fn x_of(&self, step: f64) -> Option<f64> {
        let inside = step > self.start as f64 && step <= self.end as f64;
        let length = (self.end - self.start) as f64;
        inside.then(|| (self.epoch - 1) as f64 + (step - self.start as f64) / length)
    }
}

/// The steps of each epoch snapshot of the run as it stands.
fn spans(kept: &[&Snapshot]) -> Vec<Span> {
    let mut start = 0;
    let mut out = Vec::new();
    for s in kept {
        match s.event {
            Event::RunStart | Event::Resume => start = s.step,
            Event::Epoch => {
                if s.step > start && s.epoch >= 1 {
                    out.push(Span {
                        epoch: s.epoch,
                        start,
                        end: s.step,
                    });
                }
                start = s.step;
            }
            Event::RunEnd | Event::MemoryAction => {}
        }
    }
    out
}

/// Every snapshot of the run [as it stands](as_it_stands), placed, but `fit`'s probes (its own
/// marker tells them).
pub fn positions(snapshots: &[Snapshot]) -> Vec<Placed<'_>> {
    let mut kept = as_it_stands(snapshots);
    kept.retain(|s| s.action != Some(crate::memory::Action::Probe));
    let spans = spans(&kept);
    let mut last = 0.0;
    kept.into_iter()
        .map(|s| {
            let x = match s.event {
                Event::RunStart => 0.0,
                Event::Epoch | Event::Resume => s.epoch as f64,
                Event::RunEnd => s.epoch as f64 + 0.5,
                Event::MemoryAction => return (action_x(s, &spans).unwrap_or(last + 0.25), s),
            };
            last = x;
            (x, s)
        })
        .collect()
}

/// A memory action inside an epoch's steps (a shrink, a breach): at the step it stopped, the
/// one after the `step` steps done.
fn action_x(s: &Snapshot, spans: &[Span]) -> Option<f64> {
    let span = spans.iter().find(|span| span.epoch == s.epoch)?;
    span.x_of(s.step as f64 + 0.5)
}

/// The step trace's points of the run as it stands, placed: `(x, point)`.
pub fn step_points(snapshots: &[Snapshot]) -> Vec<(f64, StepSample)> {
    let kept = as_it_stands(snapshots);
    let spans = spans(&kept);
    kept.iter()
        .filter(|s| s.event == Event::Epoch)
        .flat_map(|s| {
            let span = spans.iter().find(|span| span.epoch == s.epoch).copied();
            s.steps.iter().flatten().filter_map(move |p| {
                let x = span?.x_of(p.step as f64)?;
                Some((x, *p))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::tests::snap;

    #[test]
    fn actions_sit_at_their_step_or_after_the_snapshot_before_them() {
        let mut shrink = snap(Event::MemoryAction, 1, 1, Some("shrink"));
        // Two steps done of epoch 1's four: the third is the one that breached.
        shrink.step = 2;
        let mut epochs = [
            snap(Event::Epoch, 1, 1, None),
            snap(Event::Epoch, 2, 1, None),
        ];
        epochs[0].step = 4;
        epochs[1].step = 8;
        let mut cleanup = snap(Event::MemoryAction, 2, 1, Some("cleanup"));
        cleanup.step = 8;
        let mut end = snap(Event::RunEnd, 2, 1, None);
        end.step = 8;
        let s = [
            snap(Event::MemoryAction, 0, 1, Some("reserve")),
            snap(Event::RunStart, 0, 1, None),
            shrink,
            epochs[0].clone(),
            epochs[1].clone(),
            cleanup,
            end,
        ];
        let xs: Vec<f64> = positions(&s).iter().map(|(x, _)| *x).collect();
        assert_eq!(xs, vec![0.25, 0.0, 0.625, 1.0, 2.0, 2.25, 2.5]);
    }

    #[test]
    fn step_points_spread_over_their_epoch() {
        let mut epoch = snap(Event::Epoch, 2, 1, None);
        epoch.step = 20;
        epoch.steps = Some(
            [15, 20]
                .map(|step| StepSample {
                    step,
                    peak: 9,
                    in_use: 1,
                })
                .to_vec(),
        );
        let mut first = snap(Event::Epoch, 1, 1, None);
        first.step = 10;
        let s = [snap(Event::RunStart, 0, 1, None), first, epoch];
        let xs: Vec<f64> = step_points(&s).iter().map(|(x, _)| *x).collect();
        assert_eq!(xs, vec![1.5, 2.0]);
    }

    #[test]
    fn a_resume_replaces_what_it_trains_again() {
        let s = [
            snap(Event::RunStart, 0, 1, None),
            snap(Event::Epoch, 1, 1, None),
            snap(Event::Epoch, 2, 2, None),
            snap(Event::Epoch, 3, 3, None),
            snap(Event::RunEnd, 3, 1, None),
            snap(Event::Resume, 2, 4, None),
            snap(Event::Epoch, 3, 5, None),
            snap(Event::RunEnd, 3, 6, None),
        ];
        let placed: Vec<(f64, u64)> = positions(&s)
            .iter()
            .map(|(x, s)| (*x, s.memory.bytes_in_use))
            .collect();
        let expected = [(0.0, 1), (1.0, 1), (2.0, 2), (2.0, 4), (3.0, 5), (3.5, 6)];
        assert_eq!(placed, expected);
    }
}
