//! [`Monitor`]: the validation figure early stopping watches or a search ranks by, with whether
//! lower or higher is better. The one place the rule lives: a monitor names `val_loss` or
//! `val_<metric>` (a figure the task reports on its validation split); without a mode, an
//! accuracy is better higher and anything else lower.

use serde::{Deserialize, Serialize};

use super::MonitorMode;
use crate::config::ValueError;

/// The loss on the validation split.
const VAL_LOSS: &str = "val_loss";
/// What every validation figure's name starts with.
const PREFIX: &str = "val_";

/// A validation figure, and which way is better.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Monitor {
    name: String,
    mode: MonitorMode,
}

impl Monitor {
    /// The loss on the validation split: what every monitor watches by default.
    pub const VAL_LOSS: &'static str = VAL_LOSS;

    /// The monitor `name`, with `mode`, or without one its natural mode; the error says what
    /// is wrong with `name`.
    pub fn new(name: impl Into<String>, mode: Option<MonitorMode>) -> Result<Monitor, ValueError> {
        let name = name.into();
        let natural = Monitor::natural_mode(&name)?;
        Ok(Monitor {
            mode: mode.unwrap_or(natural),
            name,
        })
    }

    /// Whether lower or higher is better for the figure `name`: higher for an accuracy, else
    /// lower; an error if `name` is not a validation figure.
    pub fn natural_mode(name: &str) -> Result<MonitorMode, ValueError> {
        if !Monitor::is_validation(name) {
            return Err(ValueError(format!(
                "must name a validation metric, like \"val_loss\" or \"val_accuracy\"; got \
                 \"{name}\""
            )));
        }
        Ok(match name.contains("accuracy") {
            true => MonitorMode::Max,
            false => MonitorMode::Min,
        })
    }

    /// Whether `key` names a validation figure: `val_loss` or `val_<metric>`.
    pub fn is_validation(key: &str) -> bool {
        key.len() > PREFIX.len() && key.starts_with(PREFIX)
    }

    /// The figures a task reporting `metrics` can be watched by: `val_loss` and each metric's
    /// `val_<name>`.
    pub fn figures(metrics: &[&str]) -> Vec<String> {
        std::iter::once(VAL_LOSS.to_string())
            .chain(metrics.iter().map(|m| format!("{PREFIX}{m}")))
            .collect()
    }

    /// The value of the figure `name` among a run's: its validation loss `val_loss`, else the
    /// metric `metric` gives for the key. The one place `val_loss` is told from a metric.
    pub fn value_of(
        name: &str,
        val_loss: Option<f64>,
        metric: impl FnOnce(&str) -> Option<f64>,
    ) -> Option<f64> {
        match name {
            VAL_LOSS => val_loss,
            key => metric(key),
        }
    }

    /// The figure's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Which way is better.
    pub fn mode(&self) -> MonitorMode {
        self.mode
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_monitor_names_a_validation_figure_with_its_natural_mode() {
        assert_eq!(
            Monitor::new("val_accuracy", None).unwrap().mode(),
            MonitorMode::Max
        );
        assert_eq!(
            Monitor::new("val_mae", None).unwrap().mode(),
            MonitorMode::Min
        );
        let chosen = Monitor::new("val_accuracy", Some(MonitorMode::Min)).unwrap();
        assert_eq!(
            (chosen.name(), chosen.mode()),
            ("val_accuracy", MonitorMode::Min)
        );
        for bad in ["loss", "val_", "train_loss"] {
            let e = Monitor::new(bad, None).unwrap_err().0;
            assert!(e.starts_with("must name a validation metric"), "{bad}: {e}");
        }
        assert_eq!(
            Monitor::figures(&["accuracy"]),
            ["val_loss", "val_accuracy"]
        );
        assert!(Monitor::is_validation("val_rmse") && !Monitor::is_validation("train_rmse"));
    }
}
