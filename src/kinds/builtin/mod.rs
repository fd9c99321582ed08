//! The built-in tasks, from a config's `[model]` and `[data]`: the one place that maps a model
//! kind and a data kind to types. Training, `evaluate` and `predict` reach the task through a
//! [`Visit`]or, so that everything after this module is generic over the network.

mod builder;
mod inputs;
mod kind;
mod loaded;
mod networks;
mod predict;

pub(crate) use networks::Builtin;

use loaded::Loaded;

use burn::tensor::Device;

use crate::config::TASK_SECTIONS;
use crate::error::Error;
use crate::model::Network;
use crate::task::{Classify, Regress};

/// What to do with a built-in task once its network's type is known.
pub(crate) trait Visit {
    /// What the visit gives.
    type Output;
    /// A classification task.
    fn classify<N: Network>(self, task: Classify<N>) -> Result<Self::Output, Error>;
    /// A regression (or forecasting) task.
    fn regress<N: Network>(self, task: Regress<N>) -> Result<Self::Output, Error>;
}

/// Builds the task of network `N` with `settings` over `loaded` and hands it to `visitor`.
pub(crate) fn visit<N: Builtin, V: Visit>(
    settings: N::Settings,
    loaded: Loaded,
    visitor: V,
) -> Result<V::Output, Error> {
    let (features, outputs) = loaded.shape();
    let build = N::build(settings, features, outputs)?;
    task(loaded, visitor, build)
}

fn task<N: Network, V: Visit>(
    loaded: Loaded,
    visitor: V,
    build: impl Fn(&Device) -> N + 'static,
) -> Result<V::Output, Error> {
    match loaded {
        Loaded::Classes(d) => {
            visitor.classify(Classify::new(d.train, d.valid, build).owning(TASK_SECTIONS))
        }
        Loaded::Rows(rows, name) => {
            let task = Regress::new(rows.train, rows.valid, rows.unit_scale, build)
                .named(name)
                .owning(TASK_SECTIONS)
                .with_notes(rows.notes)
                .with_baselines(
                    rows.baselines
                        .into_iter()
                        .map(|b| (b.name, [("mae", b.mae), ("rmse", b.rmse)]))
                        .collect(),
                );
            visitor.regress(task)
        }
    }
}
