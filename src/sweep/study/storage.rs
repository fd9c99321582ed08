//! Where a study lives (`--storage`): a journal file, on a filesystem every worker can read
//! (NFS included). Every change a worker decides on is a transaction: under the journal's lock
//! it reads what the others wrote, decides from the whole study, and appends its operations, so
//! two workers never take the same piece of work.

use std::path::PathBuf;

use super::file::JournalFile;
use super::json;
use super::op::Op;
use super::replay::Journal;
use crate::config::ConfigError;
use crate::error::Error;

/// A study's storage, as this worker sees it.
#[derive(Debug)]
pub struct Storage {
    file: JournalFile,
    /// The journal replayed up to what this worker last read.
    journal: Journal,
    /// This worker's `worker_id`.
    worker: String,
    /// Where it is, as given.
    spec: String,
}

impl Storage {
    /// The storage `spec` names (a journal file's path), for `worker`.
    pub fn open(spec: &str, worker: &str) -> Result<Storage, Error> {
        if spec.contains("://") {
            return Err(Error::Config(ConfigError {
                origin: format!("--storage {spec}"),
                key: None,
                message: "is not a journal file's path; a study's storage is a file on a \
                          filesystem every worker reads (NFS included)"
                    .into(),
            }));
        }
        let file = JournalFile::open(&PathBuf::from(spec))?;
        Ok(Storage {
            file,
            journal: Journal::default(),
            worker: worker.to_string(),
            spec: spec.to_string(),
        })
    }

    /// Where it is, as given.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// This worker's id.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// Reads what was appended since the last read, and returns the study as it stands.
    pub fn sync(&mut self) -> Result<&Journal, Error> {
        for line in self.file.read_new()? {
            let (origin, number) = (
                self.file.path().display().to_string(),
                self.journal.read + 1,
            );
            let bad = |message: String| {
                Error::Config(ConfigError {
                    origin: origin.clone(),
                    key: None,
                    message: format!("record {number}: {message}"),
                })
            };
            let record = json::parse(&line).map_err(|e| bad(format!("not JSON: {e}")))?;
            self.journal.apply(&record).map_err(bad)?;
        }
        Ok(&self.journal)
    }

    /// Decides under the lock: `decide` sees the whole study and returns the operations to
    /// append and its answer.
    pub fn transact<T>(
        &mut self,
        decide: impl FnOnce(&Journal, &str) -> (Vec<Op>, T),
    ) -> Result<T, Error> {
        let _lock = self.file.lock()?;
        self.sync()?;
        let (ops, answer) = decide(&self.journal, &self.worker);
        if !ops.is_empty() {
            self.file.append_locked(&self.lines(&ops))?;
            self.sync()?;
        }
        Ok(answer)
    }

    /// Appends `ops` as they are (heartbeats, intermediate values: nothing to decide).
    pub fn append(&self, ops: &[Op]) -> Result<(), Error> {
        self.file.append(&self.lines(ops))
    }

    fn lines(&self, ops: &[Op]) -> Vec<String> {
        (ops.iter())
            .map(|op| json::line(&op.record(&self.worker)))
            .collect()
    }
}
