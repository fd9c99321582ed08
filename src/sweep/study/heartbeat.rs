//! A worker's heartbeat: a thread that writes, every `heartbeat`, the time into each of its
//! running trials' system attribute `tidemark:heartbeat`, so that the other workers see them
//! live. It
//! stops when the worker drops it; a worker killed stops beating, and after the study's grace
//! period another worker takes its trial over.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::storage::Storage;
use crate::sweep::journal::attrs::beat;

/// The beating thread, stopped on drop.
pub struct Heartbeat {
    trials: Arc<Mutex<Vec<usize>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Starts beating, every `every`, for the trials [`Heartbeat::beat_for`] names.
    pub fn start(storage: Arc<Mutex<Storage>>, every: Duration) -> Heartbeat {
        let trials = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (of, stopped) = (Arc::clone(&trials), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut last = Instant::now();
            while !stopped.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50).min(every));
                if last.elapsed() < every {
                    continue;
                }
                last = Instant::now();
                let beats: Vec<_> = (of.lock().expect("the heartbeat's trials").iter())
                    .map(|&id| beat(id))
                    .collect();
                if beats.is_empty() {
                    continue;
                }
                // A beat that cannot be written is missed; the grace period outlasts a few.
                let mut storage = storage.lock().expect("the study's storage");
                let _ = storage.append(&beats);
            }
        });
        Heartbeat {
            trials,
            stop,
            thread: Some(thread),
        }
    }

    /// Beats for the trials `ids` from now on (none if empty).
    pub fn beat_for(&self, ids: Vec<usize>) {
        *self.trials.lock().expect("the heartbeat's trials") = ids;
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
