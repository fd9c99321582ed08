//! The training panels under the memory panel, on the same epoch axis: the losses, the
//! monitored validation metric (when it is not the validation loss), and the learning rate.

use plotters::prelude::*;

use super::{Entry, Mark};
use crate::record::Snapshot;
use crate::report::palette::{BLUE, GREEN, ORANGE, PURPLE};

/// A line of a panel: its name, colour and points.
pub type Line = (String, RGBColor, Vec<(f64, f64)>);

/// One panel: its y-axis name and its lines.
pub struct Panel {
    pub title: String,
    pub lines: Vec<Line>,
}

impl Panel {
    /// The panel's legend entries.
    pub fn legend(&self) -> Vec<Entry> {
        let lines = self.lines.iter();
        lines
            .map(|(name, color, _)| (name.clone(), *color, Mark::Line))
            .collect()
    }

    /// The lowest and highest value drawn, padded, for the y axis.
    pub fn y_range(&self) -> (f64, f64) {
        let values = self
            .lines
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y));
        let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| {
            (lo.min(y), hi.max(y))
        });
        let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.05).max(1e-12);
        (lo - pad, hi + pad)
    }
}

/// A series of `(x, value)` over the epochs that have `value`.
fn series(
    epochs: &[(f64, &Snapshot)],
    value: impl Fn(&Snapshot) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let finite = |(x, s): &(f64, &Snapshot)| value(s).filter(|v| v.is_finite()).map(|v| (*x, v));
    epochs.iter().filter_map(finite).collect()
}

/// The panels that have something to draw, from the epoch snapshots placed at `epochs`:
/// losses, then `monitor` (a metric key such as `val_accuracy`) unless it is `val_loss`,
/// then the learning rate.
pub fn panels(epochs: &[(f64, &Snapshot)], monitor: Option<&str>) -> Vec<Panel> {
    let monitor = monitor.unwrap_or("val_loss");
    let val_name = if monitor == "val_loss" {
        "val_loss (monitored)"
    } else {
        "val_loss"
    };
    let losses = Panel {
        title: "loss".into(),
        lines: vec![
            ("loss".into(), BLUE, series(epochs, |s| s.loss)),
            (val_name.into(), ORANGE, series(epochs, |s| s.val_loss)),
        ],
    };
    let monitored = (monitor != "val_loss").then(|| Panel {
        title: monitor.into(),
        lines: vec![(
            format!("{monitor} (monitored)"),
            GREEN,
            series(epochs, |s| s.metric(monitor)),
        )],
    });
    let lr = Panel {
        title: "lr".into(),
        lines: vec![("lr".into(), PURPLE, series(epochs, |s| s.lr))],
    };
    let mut out = vec![losses];
    out.extend(monitored);
    out.push(lr);
    for panel in &mut out {
        panel.lines.retain(|(_, _, points)| !points.is_empty());
    }
    out.retain(|p| !p.lines.is_empty());
    out
}
