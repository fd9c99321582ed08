//! Where a study lives (`--storage`): a journal file, on a filesystem every worker can read
//! (NFS included), or `redis://HOST:PORT`. Every change a worker decides on is a transaction:
//! under the journal's lock it reads what the others wrote, decides from the whole study, and
//! appends its operations, so two workers never take the same piece of work.

use std::path::PathBuf;

use super::file::JournalFile;
use super::redis::RedisJournal;
use crate::error::{Error, SweepError, UsageError};
use crate::sweep::journal::json;
use crate::sweep::journal::op::Op;
use crate::sweep::journal::replay::{Journal, Keep};

/// The journal's backend.
#[derive(Debug)]
enum Backend {
    File(JournalFile),
    Redis(RedisJournal),
}

/// A study's storage, as this worker sees it.
#[derive(Debug)]
pub struct Storage {
    backend: Backend,
    /// The journal replayed up to what this worker last read.
    journal: Journal,
    /// This worker's `worker_id`.
    worker: String,
    /// Where it is, as given.
    spec: String,
}

impl Storage {
    /// The storage `spec` names (a journal file's path, or `redis://HOST:PORT`), for `worker`.
    pub fn open(spec: &str, worker: &str) -> Result<Storage, Error> {
        if spec.trim().is_empty() {
            return Err(Error::Usage(UsageError::new(
                "--storage",
                "an empty path; give a journal file's path (on a filesystem every worker \
                          reads) or redis://HOST:PORT",
            )));
        }
        let backend = match spec.split_once("://") {
            Some(("redis", _)) => Backend::Redis(RedisJournal::open(spec)?),
            Some((scheme, _)) => {
                return Err(Error::Usage(UsageError::new(
                    format!("--storage {spec}"),
                    format!(
                        "{scheme}:// is not a storage tidemark knows: give a journal file's \
                         path (on a filesystem every worker reads) or redis://HOST:PORT"
                    ),
                )))
            }
            None => {
                let path = PathBuf::from(spec);
                // A device or a pipe holds no journal, and no retry makes it one (a directory
                // is refused as it is opened, saying what to fix).
                let special = |m: &std::fs::Metadata| !m.is_file() && !m.is_dir();
                if std::fs::metadata(&path).is_ok_and(|m| special(&m)) {
                    return Err(Error::Usage(UsageError::new(
                        format!("--storage {spec}"),
                        "not a regular file; a journal is a file every worker appends to",
                    )));
                }
                Backend::File(JournalFile::open(&path).map_err(|e| file_failed(spec, e))?)
            }
        };
        Ok(Storage {
            backend,
            journal: Journal::default(),
            worker: worker.to_string(),
            spec: spec.to_string(),
        })
    }

    /// Where it is, as given.
    /// The storage read lean from here on ([`Journal::lean`]): what a finished trial keeps.
    /// Given before its first reading.
    pub fn lean(mut self, keep: Keep) -> Storage {
        debug_assert_eq!(self.journal.read, 0, "lean from the first record");
        self.journal = Journal::lean(keep);
        self
    }

    /// The journal at `spec` read whole, from its first record: every trial with all it holds
    /// (a study's rows).
    pub fn whole(spec: &str, worker: &str) -> Result<Journal, Error> {
        let mut storage = Storage::open(spec, worker)?;
        storage.sync()?;
        Ok(storage.journal)
    }

    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// This worker's id.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// Reads what was appended since the last read, and returns the study as it stands.
    pub fn sync(&mut self) -> Result<&Journal, Error> {
        let lines = match &mut self.backend {
            Backend::File(file) => file.read_new(),
            Backend::Redis(redis) => redis.read_new(),
        };
        let lines = lines.map_err(|e| self.failed(e))?;
        for line in lines {
            let (origin, number) = (self.spec.clone(), self.journal.read + 1);
            let bad = |message: String| {
                Error::Sweep(SweepError::Plan {
                    origin: origin.clone(),
                    message: format!("record {number}: {message}"),
                })
            };
            let record = json::parse(&line).map_err(|e| bad(format!("not JSON: {e}")))?;
            self.journal
                .apply(&record)
                .map_err(|e| bad(e.to_string()))?;
        }
        Ok(&self.journal)
    }

    /// Decides under the lock: `decide` sees the whole study and returns the operations to
    /// append and its answer.
    pub fn transact<T>(
        &mut self,
        decide: impl FnMut(&Journal, &str) -> (Vec<Op>, T),
    ) -> Result<T, Error> {
        let token = format!(
            "{}-{}",
            self.worker,
            crate::sweep::journal::worker_id::random_hex()
        );
        let file_lock = match &mut self.backend {
            Backend::File(file) => Some(file.lock().map_err(|e| self.failed(e))?),
            Backend::Redis(redis) => {
                redis.lock(&token)?;
                None
            }
        };
        let answer = self.locked(decide);
        if let Backend::Redis(redis) = &mut self.backend {
            redis.unlock(&token);
        }
        drop(file_lock);
        answer
    }

    /// The transaction's body, under the lock. In Redis, where a writer that is not tidemark's
    /// (Optuna's) takes no lock, the operations are appended only if nothing was appended since
    /// the decision; else the study is read again and the decision made again.
    fn locked<T>(
        &mut self,
        mut decide: impl FnMut(&Journal, &str) -> (Vec<Op>, T),
    ) -> Result<T, Error> {
        loop {
            self.sync()?;
            let (ops, answer) = decide(&self.journal, &self.worker);
            if ops.is_empty() {
                return Ok(answer);
            }
            let lines = self.lines(&ops);
            let read = self.journal.read;
            let appended = match &mut self.backend {
                Backend::File(file) => file.append_locked(&lines).map(|()| true),
                Backend::Redis(redis) => redis.append(Some(read), &lines),
            };
            let appended = appended.map_err(|e| self.failed(e))?;
            if appended {
                self.sync()?;
                return Ok(answer);
            }
        }
    }

    /// Appends `ops` as they are (heartbeats, intermediate values: nothing to decide).
    pub fn append(&mut self, ops: &[Op]) -> Result<(), Error> {
        if ops.is_empty() {
            return Ok(());
        }
        let lines = self.lines(ops);
        let appended = match &mut self.backend {
            Backend::File(file) => file.append(&lines),
            Backend::Redis(redis) => redis.append(None, &lines).map(|_| ()),
        };
        appended.map_err(|e| self.failed(e))
    }

    /// A journal file that could not be read or written, once open ([`file_failed`]).
    fn failed(&self, e: Error) -> Error {
        file_failed(&self.spec, e)
    }

    fn lines(&self, ops: &[Op]) -> Vec<String> {
        (ops.iter())
            .map(|op| json::line(&op.record(&self.worker)))
            .collect()
    }
}

/// A journal file at `spec` that could not be opened, read or written. Where its path or its
/// permissions are at fault (a directory, no permission, a read-only filesystem) it is the
/// argument's: exit code 2, with what to fix. Else its filesystem failed (full, gone, an I/O
/// error), which waiting may mend: exit code 75, rejoin once it is back.
fn file_failed(spec: &str, e: Error) -> Error {
    let Error::Io { path, source } = e else {
        return e;
    };
    let message = format!("{}: {source}", path.display());
    SweepError::storage_failed(spec, message, super::file::what_to_fix(source.kind()))
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;

    use super::*;

    /// What the CLI's tests cannot make as root (no permission, a read-only filesystem) or at
    /// all (a full disk, EIO), classified as they are.
    #[test]
    fn a_journal_s_path_or_permissions_exit_2_and_its_filesystem_failing_75() {
        let failed = |e: std::io::Error| file_failed("s/j.log", Error::io("s/j.log", e));
        let fix = [
            ErrorKind::PermissionDenied,
            ErrorKind::ReadOnlyFilesystem,
            ErrorKind::IsADirectory,
            ErrorKind::NotADirectory,
        ];
        for kind in fix {
            let e = failed(kind.into());
            assert_eq!(e.exit_code(), 2, "{kind:?}: {e}");
            let line = e.to_string();
            assert!(line.starts_with("--storage s/j.log: s/j.log: "), "{line}");
            assert!(line.contains("; ") && !line.contains("rejoin"), "{line}");
        }
        let wait = [
            std::io::Error::from(ErrorKind::StorageFull),
            std::io::Error::from(ErrorKind::TimedOut),
            std::io::Error::from_raw_os_error(5),
        ];
        for e in wait {
            let e = failed(e);
            assert_eq!(e.exit_code(), 75, "{e}");
            assert!(
                e.to_string().contains("rejoin once the storage is back"),
                "{e}"
            );
        }
    }
}
