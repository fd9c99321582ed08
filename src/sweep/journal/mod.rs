//! Optuna's journal format (`JournalStorage`, Optuna 5; docs/design/optuna-journal.md), which
//! a search's record and a shared study are kept in, so that Optuna's own tools read them:
//! `json` (Python's non-finite floats), `op` (the operations tidemark writes), `params` (the
//! varied keys as Optuna's distributions), `replay` (a journal read as Optuna replays it),
//! `attrs` (what tidemark records beside Optuna's fields), `worker_id`.

pub mod attrs;
pub mod json;
pub mod op;
pub mod params;
pub mod replay;
pub mod worker_id;
