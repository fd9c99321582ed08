//! Where CubeCL keeps what a run compiles and tunes, so that the next run skips it (issue 66,
//! item 5).
//!
//! CubeCL persists, in one directory (its "environment", a database several processes can
//! share at once): autotune's results (which kernel won for a shape: fused mode's first epoch,
//! eager CUDA's matrix products), the kernels a backend stores once compiled (CUDA's PTX) and
//! throughput measurements. Left to itself it puts them under the outermost
//! `Cargo.toml` above the working directory (`target/environment`), else in `~/.cache/cubecl`,
//! and keeps compiled kernels only when asked. tidemark names the directory and asks:
//!
//! - `TIDEMARK_KERNEL_CACHE=DIR`: that directory (made if missing; one that cannot be made
//!   stops the run with exit 2, naming it);
//! - `TIDEMARK_KERNEL_CACHE=off`: nothing is kept between runs (every run compiles and tunes);
//! - unset: `$XDG_CACHE_HOME/tidemark/kernels`, else `~/.cache/tidemark/kernels` (where that
//!   cannot be made, the run says so on one line and keeps nothing).
//!
//! The builds that have something to keep have the `kernel-cache` feature (`cuda` and `fused`
//! turn it on). wgpu's eager build compiles WGSL, which CubeCL does not store: there a
//! second run's first step is as fast as the driver's own cache makes it (Mesa keeps its
//! compiled shaders in `~/.cache/mesa_shader_cache`; docs/performance.md, "Compiling kernels").
//!
//! CubeCL's configuration belongs to the process and is set once, before its first device:
//! the first CubeCL device tidemark picks in a process sets it, from a `cubecl.toml` found as
//! CubeCL finds one (its logging and autotune settings kept), with the cache's keys replaced.
//! An application that set CubeCL's configuration itself keeps its own.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that names the directory, or `off`.
pub const VARIABLE: &str = "TIDEMARK_KERNEL_CACHE";

/// Where compiled kernels and autotune's results are kept between runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelCache {
    /// In the directory [`VARIABLE`] names.
    Named(PathBuf),
    /// In the user's cache directory (the default).
    Default(PathBuf),
    /// Nowhere: each run compiles and tunes anew.
    Off,
}

impl KernelCache {
    /// The cache this process's environment asks for.
    pub fn from_env() -> KernelCache {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// [`KernelCache::from_env`], with the variables read through `var`; empty is unset.
    fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> KernelCache {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
        match var(VARIABLE) {
            Some(v) if v == "off" => KernelCache::Off,
            // Absolute: a search's children may start elsewhere.
            Some(v) => KernelCache::Named(std::path::absolute(&v).unwrap_or_else(|_| v.into())),
            None => var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache")))
                .map_or(KernelCache::Off, |d| {
                    KernelCache::Default(d.join("tidemark").join("kernels"))
                }),
        }
    }

    /// The directory, made if missing; `Off` stays off. A named directory that cannot be
    /// made is an error; the default one becomes `Off`, said on stderr.
    pub fn made(self) -> Result<KernelCache, super::BackendError> {
        let (KernelCache::Named(dir) | KernelCache::Default(dir)) = &self else {
            return Ok(self);
        };
        match std::fs::create_dir_all(dir) {
            Ok(()) => Ok(self),
            Err(e) => match self {
                KernelCache::Named(path) => Err(super::BackendError::KernelCache {
                    path,
                    reason: e.to_string(),
                }),
                _ => {
                    eprintln!(
                        "tidemark: kernels are compiled and tuned anew in every run: {}: {e} \
                         (set {VARIABLE} to a writable directory, or to `off` to say nothing)",
                        dir.display()
                    );
                    Ok(KernelCache::Off)
                }
            },
        }
    }

    /// The directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            KernelCache::Named(d) | KernelCache::Default(d) => Some(d),
            KernelCache::Off => None,
        }
    }
}

/// Sets CubeCL's configuration for this process to keep its caches where [`KernelCache`]
/// says, unless it is set already (by an application, or an earlier device of this process).
#[cfg(all(
    feature = "kernel-cache",
    any(feature = "cuda", feature = "cpu", feature = "wgpu")
))]
pub(super) fn install() -> Result<(), super::BackendError> {
    use burn::cubecl::config::cache::CacheConfig;
    use burn::cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};

    // Once a process: a search picks its device for each trial, and a default directory that
    // cannot be made is said once.
    static INSTALLED: std::sync::OnceLock<Result<(), super::BackendError>> =
        std::sync::OnceLock::new();
    let set = || {
        let cache = KernelCache::from_env().made()?;
        let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
        config.compilation.cache = cache.dir().is_some();
        config.autotune.disable_cache = cache.dir().is_none();
        if let Some(dir) = cache.dir() {
            config.environment.path = CacheConfig::Directory(dir.to_path_buf());
        }
        let _ = CubeClRuntimeConfig::try_set(config);
        Ok(())
    };
    INSTALLED.get_or_init(set).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> KernelCache {
        KernelCache::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn the_variable_names_the_directory_or_turns_the_cache_off() {
        let home = ("HOME", "/home/u");
        assert_eq!(
            from(&[(VARIABLE, "/scratch/k"), home]),
            KernelCache::Named("/scratch/k".into())
        );
        assert_eq!(from(&[(VARIABLE, "off"), home]), KernelCache::Off);
        // A relative one is the working directory's, made absolute for the run's children.
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            from(&[(VARIABLE, "rel/k")]),
            KernelCache::Named(cwd.join("rel/k"))
        );
        // Unset or empty: the user's cache directory, XDG's first.
        assert_eq!(
            from(&[(VARIABLE, ""), home]),
            KernelCache::Default("/home/u/.cache/tidemark/kernels".into())
        );
        assert_eq!(
            from(&[("XDG_CACHE_HOME", "/xdg"), home]),
            KernelCache::Default("/xdg/tidemark/kernels".into())
        );
        assert_eq!(from(&[]), KernelCache::Off, "no home: nothing kept");
    }

    #[test]
    fn a_named_directory_that_cannot_be_made_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let err = KernelCache::Named(file.join("kernels")).made().unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("the kernel cache {}/kernels: ", file.display())),
            "{text}"
        );
        assert!(text.ends_with("(set TIDEMARK_KERNEL_CACHE to a writable directory, or to `off`)"));
        // The default one degrades to no cache; a directory that can be made is made.
        let fallback = KernelCache::Default(file.join("kernels")).made().unwrap();
        assert_eq!(fallback, KernelCache::Off);
        let made = KernelCache::Named(dir.path().join("k/l")).made().unwrap();
        assert!(made.dir().unwrap().is_dir());
    }
}
