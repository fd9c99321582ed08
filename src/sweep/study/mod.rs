//! The one engine of every search: a study, of one worker (a search in one process, its
//! journal in its sweep directory) or of many (`tidemark sweep --storage`), kept in Optuna's
//! journal format so that Optuna's own tools read it (the format is `sweep/journal/`). In
//! layers, each importing only those before it:
//! 1. where it lives: `file` (a journal file under Optuna's lock), `redis` (Optuna's Redis
//!    journal), `storage` (either, and transactions);
//! 2. the search in it: `joined` (the study, joined or created), `rungs` (ASHA across workers),
//!    `population` (population based training across workers), `next` (a worker's next piece
//!    of work) and `origin` (where it comes from), `median` (the median rule across workers),
//!    `heartbeat`, `ending` (how a trial ended, recorded), `reporting` (its epochs, written as
//!    they come, in this process or a child), `journal_rows` (the study's table), `lost` (what
//!    a journal lost, from the trials' own files) and `recorded` (the search a sweep directory's
//!    journal keeps);
//! 3. training: `drive` (the one loop of every worker, over a runner), `trial` (one trial in
//!    this process, and the runner that trains a worker's trials there, one at a time),
//!    `slots` (the runner that packs a device: each trial in a child process under its lease)
//!    and `held` (what it holds: the trials running, their timeline);
//! 4. `worker`: a search's entry (alone, a worker of a shared study, a resume), which picks the
//!    runner; `report`: a study's table, from its journal alone.

mod drive;
mod ending;
mod file;
mod heartbeat;
mod held;
mod joined;
mod journal_rows;
mod lost;
mod median;
mod next;
mod origin;
mod population;
mod recorded;
mod redis;
mod report;
mod reporting;
mod rungs;
mod slots;
mod storage;
mod trial;
mod worker;

pub use recorded::{journal_of, recorded};
pub use report::{merge, report, StudyReport};
pub use reporting::child as trial_child;
pub use worker::{rejoin_alone, search_alone, work};
