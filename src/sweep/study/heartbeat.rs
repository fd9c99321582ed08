//! A worker's heartbeat: a thread that writes, every `heartbeat`, the time into its running
//! trial's system attribute `tidemark:heartbeat`, so that the other workers see it live. It
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
    trial: Arc<Mutex<Option<usize>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Starts beating, every `every`, for the trial [`Heartbeat::beat_for`] names.
    pub fn start(storage: Arc<Mutex<Storage>>, every: Duration) -> Heartbeat {
        let trial = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let (of, stopped) = (Arc::clone(&trial), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut last = Instant::now();
            while !stopped.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50).min(every));
                if last.elapsed() < every {
                    continue;
                }
                last = Instant::now();
                let Some(id) = *of.lock().expect("the heartbeat's trial") else {
                    continue;
                };
                // A beat that cannot be written is missed; the grace period outlasts a few.
                let mut storage = storage.lock().expect("the study's storage");
                let _ = storage.append(&[beat(id)]);
            }
        });
        Heartbeat {
            trial,
            stop,
            thread: Some(thread),
        }
    }

    /// Beats for trial `id` from now on, or for none.
    pub fn beat_for(&self, id: Option<usize>) {
        *self.trial.lock().expect("the heartbeat's trial") = id;
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
