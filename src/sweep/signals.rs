//! Stopping a search (and `tidemark train`, whose run stops as a search's trial does): SIGINT
//! and SIGTERM set a flag that the worker reads, so that it
//! stops its children at their checkpoints before it exits, and that a trial trained in the
//! search's own process reads between its steps ([`Trainer::stop_when`](crate::Trainer::stop_when)). A second signal while the
//! first is handled exits at once (code 130), for a search whose children do not stop. The
//! handlers are removed when the scheduler ends, and the signals then end the process again,
//! as they did before the search: signal-hook leaves a signal ignored once its last action is
//! removed, so an action registered once per process carries out the default action whenever
//! no search holds the signals ([`defaults`]). A program that searches through the library
//! gets its Ctrl-C back, and a signal while the search writes its ranking ends it (the
//! ranking is written again by `--resume`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::SigId;

use crate::error::Error;

/// The flag, and the handlers that set it, removed on drop.
pub(crate) struct StopOnSignal {
    flag: Arc<AtomicBool>,
    handlers: Vec<SigId>,
    /// Set again on drop: the signals' default actions.
    defaults: Arc<AtomicBool>,
}

impl StopOnSignal {
    /// Installs the handlers.
    pub fn install() -> Result<Self, Error> {
        let flag = Arc::new(AtomicBool::new(false));
        let defaults = defaults()?;
        let fail = |e| Error::io(Path::new("a signal handler"), e);
        let mut handlers = Vec::new();
        for signal in [SIGINT, SIGTERM] {
            // Registered first, so that it sees the flag as the earlier signal left it.
            let second =
                signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag));
            handlers.push(second.map_err(fail)?);
            handlers.push(signal_hook::flag::register(signal, Arc::clone(&flag)).map_err(fail)?);
        }
        // Only now, so that no signal finds neither the defaults nor the search's handlers.
        defaults.store(false, Ordering::SeqCst);
        Ok(StopOnSignal {
            flag,
            handlers,
            defaults,
        })
    }

    /// Whether a signal asked the search to stop.
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    /// The flag, for a trainer in this process to stop on.
    pub fn shared(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        self.defaults.store(true, Ordering::SeqCst);
        for id in self.handlers.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// The switch of the actions that carry out SIGINT's and SIGTERM's default (ending the
/// process) while it is set, registered the first time a search asks.
fn defaults() -> Result<Arc<AtomicBool>, Error> {
    static DEFAULTS: Mutex<Option<Arc<AtomicBool>>> = Mutex::new(None);
    let mut slot = DEFAULTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(defaults) = &*slot {
        return Ok(Arc::clone(defaults));
    }
    let defaults = Arc::new(AtomicBool::new(true));
    for signal in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_default(signal, Arc::clone(&defaults))
            .map_err(|e| Error::io(Path::new("a signal handler"), e))?;
    }
    *slot = Some(Arc::clone(&defaults));
    Ok(defaults)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sets_the_flag_and_the_handlers_go_with_the_guard() {
        let guard = StopOnSignal::install().unwrap();
        assert!(!guard.flag().load(Ordering::SeqCst));
        signal_hook::low_level::raise(SIGTERM).unwrap();
        assert!(guard.flag().load(Ordering::SeqCst));
        drop(guard);
    }
}
