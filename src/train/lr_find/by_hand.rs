//! The learning-rate finder over a hand-written loop: the loop the user already has, run on a
//! copy of its run as [`find`](super::find) runs the trainer, its rate swept by the copy's
//! schedule and each step's loss read as the loop's steps report it; the finder refuses the
//! loop's next step once it has seen enough, and the loop ends on that error as on any.

use std::sync::Arc;

use burn::module::Module;
use burn::tensor::Device;

use super::{Found, Sweeping};
use crate::config::RunConfig;
use crate::error::Error;
use crate::record::Silent;
use crate::train::lr_find::rule::Sweep;
use crate::train::HandLoop;

/// Runs the finder on a copy of `config`'s run with `sweep`: a [`HandLoop`] of the copy, its
/// model from `model` over `samples` samples an epoch (as [`HandLoop::setup`]), trained by
/// `train`, the loop's own epochs. The finder stops the loop by refusing its next step with
/// [`Error::Interrupted`] (which `train` returns, or passes on with `?`); a loop that ends
/// first ends the sweep there. Writes `lr-find.json` and `lr-find.svg`, as [`find`](super::find).
///
/// ```no_run
/// # use burn::nn::{Linear, LinearConfig};
/// # use burn::tensor::{Tensor, Device};
/// # use tidemark::HandLoop;
/// # let (x, y): (&Tensor<2>, &Tensor<2>) = todo!();
/// // The loop you have: each step's error passed on.
/// let epochs = |run: &mut HandLoop<Linear>| -> Result<(), tidemark::Error> {
///     for _epoch in run.epochs() {
///         for start in (0..1024).step_by(64) {
///             run.step(64, |model, rows| {
///                 let rows = start + rows.start..start + rows.end;
///                 let xb = x.clone().slice([rows.clone(), 0..8]);
///                 (model.forward(xb) - y.clone().slice([rows, 0..1])).powi_scalar(2).mean()
///             })?;
///         }
///         run.end_epoch(Default::default())?;
///     }
///     Ok(())
/// };
/// let config = tidemark::config::ConfigBuilder::new("hand").batch_size(64).build()?;
/// let model = |d: &Device| LinearConfig::new(8, 1).init(d);
/// let sweep = tidemark::train::lr_find::rule::Sweep::default();
/// let found = tidemark::train::lr_find::find_by_hand(&config, sweep, 1024, model, epochs)?;
/// println!("suggested rate: {:?}", found.lr());
/// # Ok::<(), tidemark::Error>(())
/// ```
pub fn find_by_hand<M: Module + 'static>(
    config: &RunConfig,
    sweep: Sweep,
    samples: usize,
    model: impl FnOnce(&Device) -> M,
    train: impl FnOnce(&mut HandLoop<M>) -> Result<(), Error>,
) -> Result<Found, Error> {
    let sweeping = Sweeping::start(config, sweep)?;
    let watcher = sweeping.watcher(Box::new(Silent));
    let mut run = HandLoop::setup_with(sweeping.copy(config), samples, model, watcher)?;
    run.stop_when(Arc::clone(&sweeping.stop));
    let trained = train(&mut run);
    // The copy's memory given back, and checked, before the run the rate is for.
    let finished = run.finish().map(|_| ());
    sweeping.end(trained.and(finished), &config.run.name)
}
