//! The one place that turns a [`DeviceConfig`] into a Burn [`Device`], with errors that say
//! how to get what was asked for. Nothing else in tidemark constructs a device.

use burn::tensor::Device;

use crate::config::{Backend, DeviceConfig, Execution};

pub mod kernel_cache;
pub(crate) mod threads;

pub use threads::join_compute_pool;

/// Why the requested device cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The binary was built without the backend's cargo feature.
    #[error(
        "device.backend = \"{backend}\" is not compiled into this build; rebuild with \
         `--features {backend}` (e.g. `cargo run --release --features {backend} -- train ...`)"
    )]
    NotCompiled {
        /// The backend asked for.
        backend: Backend,
    },
    /// The backend is compiled in but has no device at that index.
    #[error("device.backend = \"{backend}\", device.index = {index}: {reason}")]
    Unavailable {
        /// The backend asked for.
        backend: Backend,
        /// The index asked for.
        index: usize,
        /// What was found instead.
        reason: String,
    },
    /// The directory named for CubeCL's caches cannot hold them.
    #[error(
        "the kernel cache {}: {reason} (set TIDEMARK_KERNEL_CACHE to a writable directory, \
         or to `off`)",
        path.display()
    )]
    KernelCache {
        /// The directory.
        path: std::path::PathBuf,
        /// Why it cannot be made.
        reason: String,
    },
    /// The execution mode asked for is not the one this build runs the backend in.
    #[error("{}", execution_message(*backend, *wanted))]
    Execution {
        /// The backend asked for.
        backend: Backend,
        /// The mode asked for.
        wanted: Execution,
    },
}

fn execution_message(backend: Backend, wanted: Execution) -> String {
    match wanted {
        Execution::Fused => format!(
            "device.execution = \"fused\" on {backend} needs Burn's kernel fusion, which is \
             chosen when building; rebuild with `--features {backend},fused`"
        ),
        Execution::Eager => format!(
            "device.execution = \"eager\" on {backend}: this build has Burn's kernel fusion \
             compiled in (feature `fused`), and Burn 0.22 cannot turn it off at run time; \
             rebuild without `--features fused`"
        ),
    }
}

/// The execution mode a run on `config` gets: flex has only one (it runs each operation as
/// it comes), CubeCL backends the one this build has ([`Execution::BUILT`]). Asking a CubeCL
/// backend for the other is an error; asking flex for `fused` is not, and the run says so.
pub fn execution(config: &DeviceConfig) -> Result<Execution, BackendError> {
    match (config.backend, config.execution) {
        (Backend::Flex, _) => Ok(Execution::Eager),
        (_, None) => Ok(Execution::BUILT),
        (_, Some(wanted)) if wanted == Execution::BUILT => Ok(wanted),
        (backend, Some(wanted)) => Err(BackendError::Execution { backend, wanted }),
    }
}

/// The backends compiled into this build.
pub fn compiled_backends() -> Vec<Backend> {
    Backend::ALL
        .into_iter()
        .filter(|b| is_compiled(*b))
        .collect()
}

/// Whether `backend`'s cargo feature is enabled in this build.
pub fn is_compiled(backend: Backend) -> bool {
    match backend {
        Backend::Flex => true,
        Backend::Cpu => cfg!(feature = "cpu"),
        Backend::Cuda => cfg!(feature = "cuda"),
        Backend::Wgpu => cfg!(feature = "wgpu"),
    }
}

/// Picks the (non-autodiff) device for `config`.
///
/// Devices are enumerated before one is constructed: Burn builds a CUDA device lazily, and
/// without a driver its first operation panics on a worker thread. Enumeration returns an
/// empty list instead, which becomes [`BackendError::Unavailable`].
pub fn select(config: &DeviceConfig) -> Result<Device, BackendError> {
    let backend = config.backend;
    if !is_compiled(backend) {
        return Err(BackendError::NotCompiled { backend });
    }
    execution(config)?;
    #[cfg(all(
        feature = "kernel-cache",
        any(feature = "cuda", feature = "cpu", feature = "wgpu")
    ))]
    if backend != Backend::Flex {
        kernel_cache::install()?;
    }
    match backend {
        Backend::Flex => single(backend, config.index, Device::flex),
        #[cfg(feature = "cpu")]
        Backend::Cpu => single(backend, config.index, Device::cpu),
        #[cfg(feature = "cuda")]
        Backend::Cuda => cuda(config.index),
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => pick(
            backend,
            config.index,
            Device::enumerate(burn::tensor::DeviceType::Wgpu).into_vec(),
            "no wgpu adapter found (on Linux without a GPU, install Mesa's software Vulkan \
             driver: `apt-get install mesa-vulkan-drivers libvulkan1`)",
        ),
        #[allow(unreachable_patterns)]
        _ => Err(BackendError::NotCompiled { backend }),
    }
}

#[cfg(feature = "cuda")]
fn cuda(index: usize) -> Result<Device, BackendError> {
    let found = Device::enumerate(burn::tensor::DeviceType::Cuda).into_vec();
    if found.is_empty() {
        return Err(BackendError::Unavailable {
            backend: Backend::Cuda,
            index,
            reason: "no CUDA device or driver is available (no GPU found, or libcuda could not \
                     be loaded; check `nvidia-smi`)"
                .into(),
        });
    }
    pick(Backend::Cuda, index, found, "")
}

/// Backends with exactly one device.
fn single(backend: Backend, index: usize, make: fn() -> Device) -> Result<Device, BackendError> {
    if index == 0 {
        Ok(make())
    } else {
        Err(BackendError::Unavailable {
            backend,
            index,
            reason: "this backend has a single device; use device.index = 0".into(),
        })
    }
}

#[allow(dead_code)] // Used only by the GPU backends' arms.
fn pick(
    backend: Backend,
    index: usize,
    found: Vec<Device>,
    none_hint: &str,
) -> Result<Device, BackendError> {
    let count = found.len();
    found
        .into_iter()
        .nth(index)
        .ok_or_else(|| BackendError::Unavailable {
            backend,
            index,
            reason: if count == 0 {
                none_hint.to_string()
            } else {
                format!("only {count} device(s) found (indices 0..{count})")
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flex_is_always_available() {
        assert!(select(&DeviceConfig {
            backend: Backend::Flex,
            index: 0,
            execution: None,
        })
        .is_ok());
        assert!(compiled_backends().contains(&Backend::Flex));
    }

    #[test]
    fn single_device_backends_reject_other_indices() {
        let err = select(&DeviceConfig {
            backend: Backend::Flex,
            index: 1,
            execution: None,
        })
        .unwrap_err();
        assert!(err.to_string().contains("device.index = 1"), "{err}");
    }

    #[test]
    fn missing_features_name_the_feature() {
        for backend in [Backend::Cuda, Backend::Wgpu, Backend::Cpu] {
            if is_compiled(backend) {
                continue;
            }
            let err = select(&DeviceConfig {
                backend,
                index: 0,
                execution: None,
            })
            .unwrap_err();
            assert_eq!(err, BackendError::NotCompiled { backend });
            assert!(
                err.to_string().contains(&format!("--features {backend}")),
                "{err}"
            );
        }
    }

    #[test]
    fn execution_modes_follow_the_build() {
        let config = |backend, execution| DeviceConfig {
            backend,
            index: 0,
            execution,
        };
        for asked in [None, Some(Execution::Eager), Some(Execution::Fused)] {
            assert_eq!(
                execution(&config(Backend::Flex, asked)),
                Ok(Execution::Eager),
                "flex has one mode"
            );
        }
        assert_eq!(
            execution(&config(Backend::Wgpu, None)),
            Ok(Execution::BUILT)
        );
        let other = match Execution::BUILT {
            Execution::Eager => Execution::Fused,
            Execution::Fused => Execution::Eager,
        };
        let err = execution(&config(Backend::Cuda, Some(other))).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("device.execution = \"{other}\" on cuda")),
            "{text}"
        );
        assert!(text.contains("--features"), "{text}");
    }

    #[test]
    fn picking_past_the_end_says_how_many_exist() {
        let err = pick(Backend::Wgpu, 2, vec![Device::flex()], "none").unwrap_err();
        assert!(
            err.to_string()
                .ends_with("only 1 device(s) found (indices 0..1)"),
            "{err}"
        );
        let err = pick(Backend::Wgpu, 0, vec![], "install a driver").unwrap_err();
        assert!(err.to_string().ends_with("install a driver"), "{err}");
    }
}
