//! A journal file, as Optuna's `JournalFileBackend` keeps it: JSON lines appended under a lock
//! that holds on NFS, and read without one.
//!
//! The lock is Optuna's default (`JournalFileSymlinkLock`), so that tidemark and Optuna's own
//! processes exclude each other: creating the symlink `<journal>.lock` takes it (symlink(2) is
//! atomic on NFS), renaming it away and removing it releases it. A waiter that sees the
//! journal's modification time (the lock's target) unchanged for [`STALE_LOCK`] takes the lock
//! as left by a dead process and breaks it, as Optuna does after its grace period of 30 s.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::error::Error;

/// How long a lock's target may stand unchanged before a waiter breaks it (Optuna's default).
pub const STALE_LOCK: Duration = Duration::from_secs(30);

/// A journal file and how far this process has read it.
#[derive(Debug)]
pub struct JournalFile {
    path: PathBuf,
    /// Bytes read so far: the end of the last whole line.
    offset: u64,
}

impl JournalFile {
    /// The journal at `path`, created empty if it does not exist (as Optuna does), with its
    /// directory.
    pub fn open(path: &Path) -> Result<JournalFile, Error> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(JournalFile {
            path: path.to_path_buf(),
            offset: 0,
        })
    }

    /// The whole lines written since the last read. A last line without its newline (an append
    /// under way) waits for the next read; a line that is not JSON is an error unless it is
    /// the last (Optuna reads it again later too).
    pub fn read_new(&mut self) -> Result<Vec<String>, Error> {
        let fail = |e| Error::io(&self.path, e);
        let mut file = File::open(&self.path).map_err(fail)?;
        let end = file.metadata().map_err(fail)?.len();
        if end <= self.offset {
            return Ok(Vec::new());
        }
        file.seek(SeekFrom::Start(self.offset)).map_err(fail)?;
        let mut bytes = Vec::new();
        file.take(end - self.offset)
            .read_to_end(&mut bytes)
            .map_err(fail)?;
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let text = String::from_utf8_lossy(&bytes[..whole]).into_owned();
        self.offset += whole as u64;
        Ok(text.lines().map(str::to_string).collect())
    }

    /// Appends `lines` (each one record) under the lock, and syncs them to disk.
    pub fn append(&self, lines: &[String]) -> Result<(), Error> {
        let _lock = self.lock()?;
        self.append_locked(lines)
    }

    /// Appends `lines` while this process holds the lock, after cutting off a record that a
    /// writer killed mid-append left without its end.
    pub fn append_locked(&self, lines: &[String]) -> Result<(), Error> {
        let fail = |e| Error::io(&self.path, e);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(fail)?;
        cut_unfinished(&mut file).map_err(fail)?;
        let mut text = lines.join("\n");
        text.push('\n');
        let mut bytes = text.as_bytes();
        if crate::failpoint::armed_at("append") {
            // A writer killed half-way through its record (tests/cli/study.rs).
            let (half, rest) = bytes.split_at(bytes.len() / 2);
            file.write_all(half)
                .and_then(|()| file.sync_all())
                .map_err(fail)?;
            crate::failpoint::pass("append");
            bytes = rest;
        }
        file.write_all(bytes).map_err(fail)?;
        file.sync_all().map_err(fail)
    }

    /// Takes the lock, waiting for it (with Optuna's back-off: 1 ms doubling to 1 s).
    pub fn lock(&self) -> Result<Lock, Error> {
        self.lock_within(STALE_LOCK)
    }

    /// Takes the lock, breaking one whose target has not changed for `stale`.
    fn lock_within(&self, stale: Duration) -> Result<Lock, Error> {
        let lock = lock_path(&self.path);
        let target = self.path.file_name().map(PathBuf::from).unwrap_or_default();
        let mut wait = Duration::from_millis(1);
        let mut seen: Option<(SystemTime, Instant)> = None;
        let (began, mut said) = (Instant::now(), false);
        loop {
            match std::os::unix::fs::symlink(&target, &lock) {
                Ok(()) => return Ok(Lock { path: lock }),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(&lock, e)),
            }
            // The lock's target's modification time, followed through the link, as Optuna's
            // (the link's own where its target is gone, so that such a lock is broken too).
            let modified = (std::fs::metadata(&lock).or_else(|_| std::fs::symlink_metadata(&lock)))
                .and_then(|m| m.modified());
            if let Ok(modified) = modified {
                match seen {
                    Some((time, since)) if time == modified => {
                        if since.elapsed() > stale {
                            release(&lock);
                            seen = None;
                            continue;
                        }
                    }
                    _ => seen = Some((modified, Instant::now())),
                }
            }
            // Appends take milliseconds: a wait of seconds is a writer killed mid-append (its
            // lock names no owner, as Optuna's), which a silent pause would hide.
            if !said && began.elapsed() > SAY_WAITING {
                said = true;
                eprintln!(
                    "sweep: waiting for the journal's lock {}: another process holds it, or one \
                     killed while writing left it, which is broken once the journal has not \
                     changed for {} s",
                    lock.display(),
                    stale.as_secs()
                );
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_secs(1));
        }
    }
}

/// How long a wait for the lock goes unsaid.
const SAY_WAITING: Duration = Duration::from_secs(2);

/// What to change where a journal file could not be opened, read or written for `kind`: its
/// path or its permissions, which no wait mends; `None` where the filesystem failed.
pub(super) fn what_to_fix(kind: ErrorKind) -> Option<&'static str> {
    match kind {
        ErrorKind::IsADirectory => Some("give the path of a journal file, not of a directory"),
        ErrorKind::NotADirectory | ErrorKind::AlreadyExists => {
            Some("a file stands where its path has a directory: give another path")
        }
        ErrorKind::PermissionDenied => Some(
            "this user may not write there (the journal, and its lock <journal>.lock beside it): \
             give a journal in a directory every worker may write",
        ),
        ErrorKind::ReadOnlyFilesystem => {
            Some("its filesystem is read-only: give a journal on one every worker may write")
        }
        ErrorKind::InvalidFilename => Some("the name is too long: give a shorter path"),
        _ => None,
    }
}

/// Cuts off the end of `file` after its last newline: a record a writer killed mid-append left
/// unfinished (no reader took it: tidemark's and Optuna's wait for a line's end), which the next
/// record would otherwise be appended onto, leaving a line neither can read before others
/// (Optuna's reader stops at such a line). Returns the bytes cut. The caller holds the lock.
fn cut_unfinished(file: &mut File) -> std::io::Result<u64> {
    let len = file.metadata()?.len();
    let mut end = len;
    let mut chunk = vec![0u8; 64 << 10];
    let kept = loop {
        if end == 0 {
            break 0;
        }
        let start = end.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(part)?;
        if let Some(i) = part.iter().rposition(|&b| b == b'\n') {
            break start + i as u64 + 1;
        }
        end = start;
    };
    if kept < len {
        file.set_len(kept)?;
        file.sync_all()?;
    }
    Ok(len - kept)
}

/// `<journal>.lock`.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// A lock this process holds, released on drop.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
}

impl Drop for Lock {
    fn drop(&mut self) {
        release(&self.path);
    }
}

/// Releases a lock as Optuna does: renamed to a name of its own, then removed, so that two
/// processes breaking one stale lock cannot remove a third's.
fn release(lock: &Path) {
    let mut renamed = lock.as_os_str().to_owned();
    renamed.push(format!(
        "{}.rename",
        crate::sweep::journal::worker_id::random_hex()
    ));
    if std::fs::rename(lock, &renamed).is_ok() {
        let _ = std::fs::remove_file(&renamed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_a_killed_writer_left_unfinished_is_cut_before_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.log");
        let mut journal = JournalFile::open(&path).unwrap();
        journal.append(&["{\"a\":1}".into()]).unwrap();
        assert_eq!(journal.read_new().unwrap(), ["{\"a\":1}"]);
        // Half a record, and no newline: the writer died there.
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"op_code\":4,\"work").unwrap();
        assert!(
            journal.read_new().unwrap().is_empty(),
            "an unfinished line waits"
        );
        journal
            .append(&["{\"b\":2}".into(), "{\"c\":3}".into()])
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"
        );
        assert_eq!(journal.read_new().unwrap(), ["{\"b\":2}", "{\"c\":3}"]);
        // A journal of one unfinished line is emptied; a whole one is left as it is.
        std::fs::write(&path, "{\"half").unwrap();
        journal.append(&["{\"d\":4}".into()]).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"d\":4}\n");
        let mut file = File::options().read(true).write(true).open(&path).unwrap();
        assert_eq!(cut_unfinished(&mut file).unwrap(), 0);
    }

    #[test]
    fn the_lock_excludes_and_a_dead_holders_lock_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.log");
        let journal = JournalFile::open(&path).unwrap();
        let held = journal.lock().unwrap();
        let lock = lock_path(&path);
        assert!(lock.symlink_metadata().unwrap().file_type().is_symlink());
        // A second taker waits for the first to release it.
        let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let waiter = {
            let (journal, released) = (JournalFile::open(&path).unwrap(), released.clone());
            std::thread::spawn(move || {
                let _lock = journal.lock().unwrap();
                released.load(std::sync::atomic::Ordering::SeqCst)
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        released.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(held);
        assert!(
            waiter.join().unwrap(),
            "the waiter took the lock only once it was released"
        );
        // A lock left by a dead process (its target unchanged) is broken after `stale`.
        std::os::unix::fs::symlink("j.log", &lock).unwrap();
        let start = Instant::now();
        let taken = journal.lock_within(Duration::from_millis(150)).unwrap();
        assert!(start.elapsed() >= Duration::from_millis(150));
        drop(taken);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "only the journal is left: {left:?}");
    }

    #[test]
    fn a_line_cut_short_is_read_once_it_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.log");
        let mut journal = JournalFile::open(&path).unwrap();
        std::fs::write(&path, "{\"a\":1}\n{\"b\":").unwrap();
        assert_eq!(journal.read_new().unwrap(), ["{\"a\":1}"]);
        assert!(journal.read_new().unwrap().is_empty());
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"2}\n").unwrap();
        assert_eq!(journal.read_new().unwrap(), ["{\"b\":2}"]);
    }
}
