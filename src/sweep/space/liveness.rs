//! `[sweep] heartbeat` and `[sweep] grace`, in seconds: how a shared study's workers
//! (`tidemark sweep --storage`) tell that a trial's worker lives. A worker writes a heartbeat
//! for its trial every `heartbeat` seconds; a trial whose heartbeat stays unchanged for `grace`
//! seconds, as another worker sees it, is taken over by that worker.

use std::time::Duration;

use super::invalid;
use crate::config::{quoted, Invalid, RawSweep};

/// The longest heartbeat or grace, in seconds: a week.
pub const MOST_SECONDS: u64 = 7 * 24 * 3600;

/// How often a worker beats, and how long a silent trial waits before it is taken over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Liveness {
    /// Between two heartbeats of a running trial.
    pub heartbeat: Duration,
    /// Silence after which another worker takes the trial over.
    pub grace: Duration,
}

/// The defaults: a heartbeat every 10 s, taken over after 60 s of silence (a worker's
/// heartbeats wait behind the journal's lock, and a busy filesystem can hold one for seconds).
impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            heartbeat: Duration::from_secs(10),
            grace: Duration::from_secs(60),
        }
    }
}

impl Liveness {
    /// Reads them from `[sweep]`; the grace must be at least twice the heartbeat, and neither
    /// longer than [`MOST_SECONDS`] (a time that far ahead is past what a clock adds up to).
    pub fn from_raw(raw: &RawSweep) -> Result<Liveness, Invalid> {
        let seconds = |key: &str, value: Option<&toml::Value>, default: Duration| {
            let seconds = match value {
                None => return Ok(default),
                Some(toml::Value::Integer(i)) => *i as f64,
                Some(toml::Value::Float(f)) => *f,
                Some(_) => f64::NAN,
            };
            match seconds > 0.0 && seconds <= MOST_SECONDS as f64 {
                true => Ok(Duration::from_secs_f64(seconds)),
                false => Err(invalid(
                    key,
                    format!(
                        "must be a number of seconds above 0 and at most {MOST_SECONDS} (a week), \
                         got {}",
                        quoted(value.expect("a value"))
                    ),
                )),
            }
        };
        let default = Liveness::default();
        let heartbeat = seconds("sweep.heartbeat", raw.heartbeat.as_ref(), default.heartbeat)?;
        let grace = seconds("sweep.grace", raw.grace.as_ref(), default.grace)?;
        if grace < heartbeat * 2 {
            return Err(invalid(
                "sweep.grace",
                format!(
                    "must be at least twice sweep.heartbeat ({} s), got {} s: a live worker's \
                     trial would be taken over between two of its heartbeats",
                    heartbeat.as_secs_f64(),
                    grace.as_secs_f64()
                ),
            ));
        }
        Ok(Liveness { heartbeat, grace })
    }
}
