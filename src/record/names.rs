//! Names and paths read back from a run's or a search's own files, treated as a tar or zip
//! extractor treats an archive's entries: a name is one plain file name, joined to the
//! directory it was read for, and a path is followed only where it resolves inside that
//! directory. tidemark writes no symbolic link into a run or a search, so one that leads out
//! of it was put there by someone else, and nothing is read or written through it.

use std::path::{Path, PathBuf};

/// Why `name` is not one plain file name (empty, `.` or `..`, or holding a path separator or a
/// NUL), if it is not.
pub fn plain(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("an empty name")
    } else if name == "." || name == ".." {
        Err("a directory of its own, not a file name")
    } else if name.starts_with('/') {
        Err("an absolute path, not a file name")
    } else if name.contains(['/', '\\']) {
        Err("a path, not a file name: it holds a separator")
    } else if name.contains('\0') {
        Err("not a file name: it holds a NUL")
    } else {
        Ok(())
    }
}

/// A path that, its links followed, does not stay inside the directory it was read for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeadsOut {
    /// A link to nothing: it would be written through to wherever it names.
    #[error("a symbolic link to what does not exist (to {})", .0.display())]
    Dangling(PathBuf),
    /// A link to a place outside the directory.
    #[error("a symbolic link leads out of {} (to {})", root.display(), target.display())]
    Out {
        /// The directory, resolved.
        root: PathBuf,
        /// Where the path resolves.
        target: PathBuf,
    },
}

/// Whether `path` resolves inside `root` once every symbolic link on the way is followed:
/// `Err` with where it leads where it does not. A path that does not exist (yet) is judged by
/// the nearest of its directories that does.
pub fn inside(root: &Path, path: &Path) -> Result<(), LeadsOut> {
    let Ok(root) = root.canonicalize() else {
        // A root that cannot be resolved holds nothing to follow out of.
        return Ok(());
    };
    let mut at = path;
    let resolved = loop {
        match at.canonicalize() {
            Ok(resolved) => break resolved,
            // A link to nothing would be written through to wherever it names.
            Err(_)
                if at
                    .symlink_metadata()
                    .is_ok_and(|m| m.file_type().is_symlink()) =>
            {
                return Err(LeadsOut::Dangling(
                    std::fs::read_link(at).unwrap_or_default(),
                ));
            }
            Err(_) => match at.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => at = parent,
                _ => return Ok(()),
            },
        }
    };
    match resolved.starts_with(&root) {
        true => Ok(()),
        false => Err(LeadsOut::Out {
            root,
            target: resolved,
        }),
    }
}

/// The directory a run's checkpoint `dir` (`<run>/checkpoints/<name>`) belongs to.
pub fn run_of_checkpoint(dir: &Path) -> PathBuf {
    dir.parent()
        .and_then(Path::parent)
        .map_or_else(|| dir.to_path_buf(), Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_name_is_one_file_name() {
        assert_eq!(plain("model.bpk"), Ok(()));
        assert_eq!(plain("..a"), Ok(()));
        for bad in ["", ".", "..", "/etc/passwd", "../x", "a/b", "a\\b", "a\0b"] {
            assert!(plain(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_link_out_of_the_root_is_refused_and_one_inside_followed() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let run = root.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::fs::write(run.join("own"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), run.join("out")).unwrap();
        std::os::unix::fs::symlink(run.join("own"), run.join("in")).unwrap();
        std::os::unix::fs::symlink(outside.path(), run.join("dir")).unwrap();
        assert_eq!(inside(&run, &run.join("own")), Ok(()));
        assert_eq!(inside(&run, &run.join("in")), Ok(()));
        // Not there yet: judged by its directory.
        assert_eq!(inside(&run, &run.join("new/file")), Ok(()));
        let out = inside(&run, &run.join("out")).unwrap_err().to_string();
        assert!(out.starts_with("a symbolic link leads out of "), "{out}");
        assert!(inside(&run, &run.join("dir/new")).is_err());
        // A link to nothing, and a path under one: never written through.
        std::os::unix::fs::symlink(outside.path().join("new"), run.join("dangling")).unwrap();
        let dangling = inside(&run, &run.join("dangling")).unwrap_err().to_string();
        assert!(
            dangling.starts_with("a symbolic link to what does not exist"),
            "{dangling}"
        );
        assert!(inside(&run, &run.join("dangling/file")).is_err());
        assert!(inside(&run, &run.join("../run/../x")).is_err());
    }
}
