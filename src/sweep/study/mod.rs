//! A study many workers share (`tidemark sweep --storage`), kept in Optuna's journal format so
//! that Optuna's own tools read it (the format is `sweep/journal/`). In layers, each importing
//! only those before it:
//! 1. where it lives: `file` (a journal file under Optuna's lock), `redis` (Optuna's Redis
//!    journal), `storage` (either, and transactions);
//! 2. the search in it: `joined` (the study, joined or created), `rungs` (ASHA across workers),
//!    `next` (a worker's next piece of work), `heartbeat`, `trial` (one trial trained and
//!    recorded), `rows` (the study's table);
//! 3. `worker`: the loop; `report`: a study's table from its storage alone.

mod file;
mod heartbeat;
mod joined;
mod next;
mod redis;
mod report;
mod rows;
mod rungs;
mod storage;
mod trial;
mod worker;

pub use report::{report, StudyReport};
pub use worker::work;
