//! Stopping a parallel search: SIGINT and SIGTERM set a flag that the scheduler reads, so that
//! it stops its children at their checkpoints before it exits. A second signal while the
//! first is handled exits at once (code 130), for a search whose children do not stop. The
//! handlers are removed when the search ends, so a program that searches through the library
//! gets its Ctrl-C back.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::SigId;

use crate::error::Error;

/// The flag, and the handlers that set it, removed on drop.
pub(super) struct StopOnSignal {
    flag: Arc<AtomicBool>,
    handlers: Vec<SigId>,
}

impl StopOnSignal {
    /// Installs the handlers.
    pub fn install() -> Result<Self, Error> {
        let flag = Arc::new(AtomicBool::new(false));
        let fail = |e| Error::io(Path::new("a signal handler"), e);
        let mut handlers = Vec::new();
        for signal in [SIGINT, SIGTERM] {
            // Registered first, so that it sees the flag as the earlier signal left it.
            let second =
                signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag));
            handlers.push(second.map_err(fail)?);
            handlers.push(signal_hook::flag::register(signal, Arc::clone(&flag)).map_err(fail)?);
        }
        Ok(StopOnSignal { flag, handlers })
    }

    /// Whether a signal asked the search to stop.
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        for id in self.handlers.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

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
