//! The registry on disk: a directory a device, a file a lease or a waiting run, each held by
//! its process's lock (docs/design/device-leases.md). What is read here is trusted no further
//! than its holder's lock: a file no process holds is removed, whatever it says; a held one
//! that cannot be read is refused, naming it.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::LeaseError;

/// The variable naming a registry shared by a group (its directory made by hand, mode 2770).
pub const LEASES_VAR: &str = "TIDEMARK_LEASES";

/// The registry: one directory, a subdirectory a device.
#[derive(Debug, Clone)]
pub struct Registry {
    root: PathBuf,
    /// Named by [`LEASES_VAR`]: a group's, whose mode may open it to the group.
    shared: bool,
}

impl Registry {
    /// The registry this process uses: [`LEASES_VAR`]'s directory, else this user's own
    /// (`$XDG_RUNTIME_DIR/tidemark/leases`, else `~/.cache/tidemark/leases`), made mode 0700.
    pub fn locate() -> Result<Registry, LeaseError> {
        let (root, shared) = Self::where_()?;
        Registry::at(root, shared)
    }

    /// [`locate`](Self::locate)'s registry if it exists: a look makes nothing.
    pub fn find() -> Result<Option<Registry>, LeaseError> {
        let (root, shared) = Self::where_()?;
        match root.exists() {
            true => Registry::at(root, shared).map(Some),
            false => Ok(None),
        }
    }

    /// Where the registry is, and whether it is a group's.
    fn where_() -> Result<(PathBuf, bool), LeaseError> {
        let named = std::env::var_os(LEASES_VAR).filter(|v| !v.is_empty());
        if let Some(dir) = named {
            return Ok((PathBuf::from(dir), true));
        }
        let runtime = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|d| d.is_dir());
        let base = match runtime {
            Some(dir) => dir,
            None => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
                Some(home) => PathBuf::from(home).join(".cache"),
                None => {
                    let message = format!("no directory for leases: set {LEASES_VAR} or HOME");
                    return Err(LeaseError::registry(Path::new("~"), message));
                }
            },
        };
        Ok((base.join("tidemark").join("leases"), false))
    }

    /// The registry at `root` (tests, and a view of another one).
    pub fn at(root: impl Into<PathBuf>, shared: bool) -> Result<Registry, LeaseError> {
        let registry = Registry {
            root: root.into(),
            shared,
        };
        registry.make()?;
        Ok(registry)
    }

    /// Where it is.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Makes the directory (0700) or checks the one there: a directory, this user's alone
    /// unless it is a shared one.
    fn make(&self) -> Result<(), LeaseError> {
        let root = &self.root;
        match fs::symlink_metadata(root) {
            Ok(m) if !m.is_dir() => {
                return Err(LeaseError::registry(root, "is not a directory"));
            }
            Ok(m) => {
                let mode = m.permissions().mode() & 0o777;
                if !self.shared && mode & 0o077 != 0 {
                    return Err(LeaseError::registry(
                        root,
                        format!(
                            "is open to other users (mode {mode:o}); this user's registry \
                             is its own (chmod 700 it), or name a group's in {LEASES_VAR}"
                        ),
                    ));
                }
            }
            Err(_) => fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(root)
                .map_err(|e| LeaseError::registry(root, format!("cannot be made: {e}")))?,
        }
        Ok(())
    }

    /// The directory of `device` (`host`, `cuda-0`, `wgpu-0`), made if it is not there.
    pub fn device(&self, device: &str) -> Result<DeviceDir, LeaseError> {
        let path = self.root.join(device);
        match fs::symlink_metadata(&path) {
            Ok(m) if !m.is_dir() => Err(LeaseError::registry(&path, "is not a directory")),
            Ok(_) => Ok(DeviceDir {
                path,
                device: device.to_string(),
            }),
            Err(_) => {
                let mode = if self.shared { 0o2770 } else { 0o700 };
                fs::DirBuilder::new()
                    .mode(mode)
                    .create(&path)
                    .or_else(|e| match e.kind() {
                        std::io::ErrorKind::AlreadyExists => Ok(()),
                        _ => Err(e),
                    })
                    .map_err(|e| LeaseError::registry(&path, format!("cannot be made: {e}")))?;
                Ok(DeviceDir {
                    path,
                    device: device.to_string(),
                })
            }
        }
    }

    /// `device`'s directory if it has one.
    pub fn existing(&self, device: &str) -> Result<Option<DeviceDir>, LeaseError> {
        match self.root.join(device).exists() {
            true => self.device(device).map(Some),
            false => Ok(None),
        }
    }

    /// The devices it has a directory for, by name.
    pub fn devices(&self) -> Result<Vec<DeviceDir>, LeaseError> {
        let entries = fs::read_dir(&self.root)
            .map_err(|e| LeaseError::registry(&self.root, format!("cannot be read: {e}")))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        names.iter().map(|n| self.device(n)).collect()
    }
}

/// One device's directory.
#[derive(Debug, Clone)]
pub struct DeviceDir {
    path: PathBuf,
    device: String,
}

/// What a lease or a waiting run's file holds: one JSON line, written whole before the file is
/// locked and never rewritten; a second line gives the run's directory once it exists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The format's version: 1.
    pub version: u32,
    /// The holder's process.
    pub pid: u32,
    /// When the holder asked, in seconds since the epoch: a waiter's place in the queue.
    pub since: f64,
    /// The bytes it holds, or waits for.
    pub bytes: u64,
    /// The device's budget it was admitted under.
    pub budget: u64,
    /// The device's name, as its directory's.
    pub device: String,
    /// The holder's command line.
    pub command: String,
    /// A provisional lease, held while the run probes one step and sets up, before its own.
    #[serde(default)]
    pub probe: bool,
    /// How long its run is expected to hold its lease, in seconds, where the registry
    /// remembers runs of its shape (`known.rs`): what ranks a waiting run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_s: Option<f64>,
    /// A waiting run's: the provisional lease it holds while it waits for its own, larger
    /// one (its set-up is in it); 0 where it holds none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub holding: u64,
}

fn is_zero(bytes: &u64) -> bool {
    *bytes == 0
}

/// A held file found in a device's directory.
#[derive(Debug, Clone)]
pub struct Live {
    /// Its record.
    pub record: Record,
    /// Its file.
    pub path: PathBuf,
    /// The run directory its holder trains in, once it said.
    pub run_dir: Option<PathBuf>,
}

/// What a device's directory holds, read under its admission lock.
#[derive(Debug, Default)]
pub struct Scan {
    /// The leases held.
    pub leases: Vec<Live>,
    /// The runs waiting for one, oldest first.
    pub waiting: Vec<Live>,
    /// Files no process held any more, removed.
    pub removed: usize,
}

impl Scan {
    /// The bytes the leases hold.
    pub fn held(&self) -> u64 {
        self.leases.iter().map(|l| l.record.bytes).sum()
    }
}

/// A file this process holds: its lock lives as long as this value (or the process).
#[derive(Debug)]
pub struct Held {
    file: File,
    path: PathBuf,
}

impl Held {
    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds the run's directory, once it exists, for the view (absolute: the view runs
    /// elsewhere).
    pub fn note_run_dir(&mut self, run_dir: &Path) {
        let run_dir = std::path::absolute(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
        let line = serde_json::json!({ "run_dir": run_dir });
        // The view goes without it; a lease is not lost for it.
        let _ = writeln!(self.file, "{line}");
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Removed while still locked, so that no reader takes it for a dead holder's.
        let _ = fs::remove_file(&self.path);
    }
}

impl DeviceDir {
    /// The device's name.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the admission lock, blocking: held for a read and a write, never across a wait.
    pub fn admit(&self) -> Result<File, LeaseError> {
        let path = self.path.join("admit.lock");
        // Read-only where it exists: a lock needs no more, and a group's registry holds one
        // member's file.
        let file = File::open(&path)
            .or_else(|_| {
                OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&path)
            })
            .map_err(|e| LeaseError::registry(&path, format!("cannot be opened: {e}")))?;
        file.lock()
            .map_err(|e| LeaseError::registry(&path, format!("cannot be locked: {e}")))?;
        Ok(file)
    }

    /// Reads the leases and the waiting runs, removing the files no process holds.
    pub fn scan(&self) -> Result<Scan, LeaseError> {
        let entries = fs::read_dir(&self.path)
            .map_err(|e| LeaseError::registry(&self.path, format!("cannot be read: {e}")))?;
        let mut scan = Scan::default();
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| (n.starts_with("lease-") || n.starts_with("wait-")) && n.ends_with(".json"))
            .collect();
        names.sort();
        for name in names {
            let path = self.path.join(&name);
            let Some(live) = self.read_held(&path)? else {
                scan.removed += 1;
                continue;
            };
            match name.starts_with("lease-") {
                true => scan.leases.push(live),
                false => scan.waiting.push(live),
            }
        }
        scan.waiting.sort_by(|a, b| {
            a.record
                .since
                .total_cmp(&b.record.since)
                .then(a.path.cmp(&b.path))
        });
        Ok(scan)
    }

    /// The file at `path` if a process holds it; removed, and `None`, if none does.
    fn read_held(&self, path: &Path) -> Result<Option<Live>, LeaseError> {
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            // Its holder ended between the listing and here.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LeaseError::registry(path, format!("cannot be read: {e}"))),
        };
        let kind = meta.file_type();
        if !kind.is_file() || kind.is_fifo() {
            return Err(LeaseError::registry(path, "is not a regular file"));
        }
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LeaseError::registry(path, format!("cannot be read: {e}"))),
        };
        match file.try_lock_shared() {
            // No holder: whatever it says, it holds nothing.
            Ok(()) => {
                let _ = fs::remove_file(path);
                return Ok(None);
            }
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                return Err(LeaseError::registry(path, format!("cannot be locked: {e}")))
            }
        }
        let mut lines = BufReader::new(&file).lines();
        let first = lines.next().and_then(|l| l.ok()).unwrap_or_default();
        let record: Record = serde_json::from_str(&first).map_err(|e| {
            LeaseError::registry(path, format!("is held but is not a lease record: {e}"))
        })?;
        let pid = (path.file_name().and_then(|n| n.to_str()))
            .and_then(|n| n.split('-').nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let wrong = match () {
            _ if record.version != 1 => Some(format!("version {}, not 1", record.version)),
            _ if record.device != self.device => Some(format!(
                "device \"{}\" in {}'s directory",
                record.device, self.device
            )),
            _ if pid != Some(record.pid) => Some(format!("pid {} against its name", record.pid)),
            _ if record.bytes == 0 => Some("0 bytes".to_string()),
            _ => None,
        };
        if let Some(wrong) = wrong {
            return Err(LeaseError::registry(
                path,
                format!("is held but does not match itself: {wrong}"),
            ));
        }
        let run_dir = lines
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
            .find_map(|v| v["run_dir"].as_str().map(PathBuf::from));
        Ok(Some(Live {
            record,
            path: path.to_path_buf(),
            run_dir,
        }))
    }

    /// Writes `record` as a `kind` file (`lease`, `wait`) and holds it: written whole under a
    /// temporary name, locked, then renamed into place, so that no reader sees it unheld.
    pub fn hold(&self, kind: &str, record: &Record) -> Result<Held, LeaseError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("{kind}-{}-{nanos}.json", record.pid);
        let path = self.path.join(&name);
        let temporary = self.path.join(format!(".tmp-{name}"));
        let failed =
            |e: std::io::Error| LeaseError::registry(&temporary, format!("cannot be written: {e}"));
        let mut file = OpenOptions::new()
            .create_new(true)
            .read(true)
            .append(true)
            .open(&temporary)
            .map_err(failed)?;
        let line = serde_json::to_string(record).expect("a record serialises");
        writeln!(file, "{line}").map_err(failed)?;
        file.lock().map_err(failed)?;
        fs::rename(&temporary, &path).map_err(|e| {
            let _ = fs::remove_file(&temporary);
            LeaseError::registry(&path, format!("cannot be written: {e}"))
        })?;
        Ok(Held { file, path })
    }
}

/// Seconds since the epoch now.
pub fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
