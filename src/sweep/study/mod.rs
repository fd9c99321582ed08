//! A study many workers share (`tidemark sweep --storage`), kept in Optuna's journal format so
//! that Optuna's own tools read it. In layers, each importing only those before it:
//! 1. the format: `json` (Python's non-finite floats), `op` (the operations), `params` (the
//!    varied keys as Optuna's distributions), `replay` (a journal read as Optuna reads it),
//!    `worker_id`;
//! 2. where it lives: `file` (a journal file under Optuna's lock), `redis` (Optuna's Redis
//!    journal), `storage` (either, and transactions);
//! 3. the search in it: `attrs` (what tidemark records beside Optuna), `joined` (the study, joined or created), `next` (a worker's next piece of work),
//!    `rungs` (ASHA across workers), `heartbeat`, `trial` (one trial trained and recorded), `rows` (the study's table);
//! 4. `worker`: the loop; `report`: a study's table from its storage alone.

mod attrs;
mod file;
mod heartbeat;
mod joined;
mod json;
mod next;
mod op;
mod params;
mod redis;
mod replay;
mod report;
mod rows;
mod rungs;
mod storage;
mod trial;
mod worker;
mod worker_id;

pub use report::{report, StudyReport};
pub use worker::work;
