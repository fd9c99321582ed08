//! The executor: the only code that applies memory actions to a device.

use std::sync::Once;

use burn::tensor::{Device, ExecutionError, Tensor};

use super::host::{pool_host_heap, reserve_host_heap, trim_host_heap, trimming_thread_arenas};
use super::policy::MemoryAction;
use super::pools::device_pool_figures;
use super::usage::{format_bytes, MemorySource};
use super::Action;

/// Number of arena pages a reservation is split into; each serves buffers up to its size.
pub const RESERVE_BLOCKS: u64 = 4;

/// What applying an action did, for logs and `memory_action` events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// What was done: reserve or cleanup.
    pub action: Action,
    /// What happened, in words.
    pub detail: String,
}

/// Applies [`MemoryAction`]s to one device.
#[derive(Debug, Clone)]
pub struct Executor {
    device: Device,
    source: MemorySource,
}

impl Executor {
    /// An executor for `device` (its non-autodiff form is used).
    pub fn new(device: &Device, source: MemorySource) -> Self {
        Self {
            device: device.clone().without_autodiff(),
            source,
        }
    }

    /// Applies a device action. `Fail` and `ShrinkBatch` change the run, not the device; the
    /// training loop handles them, and they are returned as `Ok(None)` here.
    pub fn apply(&mut self, action: &MemoryAction) -> Result<Option<Applied>, ExecutionError> {
        match action {
            MemoryAction::Cleanup => {
                self.cleanup()?;
                Ok(Some(Applied {
                    action: Action::Cleanup,
                    detail: match self.source {
                        MemorySource::CubeclPool => "released unused pool pages".into(),
                        MemorySource::Host => "returned free heap pages to the OS".into(),
                    },
                }))
            }
            MemoryAction::Reserve { bytes } => self.reserve(*bytes).map(Some),
            MemoryAction::Fail(_) | MemoryAction::ShrinkBatch { .. } => Ok(None),
        }
    }

    /// Runs a small training-like workload (matrix products forward and backward, one small
    /// enough to run on the calling thread and one large enough to use the backend's thread
    /// pool) and releases it, so the backend's one-time state exists before a run's baseline
    /// is taken. On flex that is the matrix-product packing buffers, 2 MiB for each thread
    /// that multiplies, kept for the life of the process (measured: 6.0 MiB with 3 threads);
    /// on CubeCL, compiled kernels and autotune results. Without it, the first run of a
    /// process would appear to keep that state. On flex it also runs one large transposed copy
    /// (`warm_large_copies`), whose code would otherwise be paged in by the first run with
    /// 1024-wide layers, and, once per process, a deep product on every worker
    /// (`warm_packing_depth`).
    ///
    /// With `release`, the warm-up's own memory is released afterwards (a cleanup); without
    /// it (`clear = "never"`), nothing is given back, as that policy promises.
    ///
    /// On the host it first makes the heap keep freed memory for reuse, as the device pools do
    /// ([`pool_host_heap`]): growth then holds what it grew to until a cleanup.
    pub fn warm_up(&mut self, release: bool) -> Result<(), ExecutionError> {
        if self.source == MemorySource::Host {
            warm_packing_depth(&self.device);
            pool_host_heap();
            warm_every_thread(&self.device);
        }
        let device = self.device.clone().autodiff();
        for n in [32, 512] {
            let x = Tensor::<2>::ones([n, n], &device).require_grad();
            let y = burn::tensor::activation::relu(x.clone().matmul(x)).sum();
            drop(y.backward());
        }
        if self.source == MemorySource::Host {
            warm_large_copies(&self.device);
        }
        if release {
            self.cleanup()
        } else {
            self.device.sync()
        }
    }

    /// Lets Burn free what it keeps of graphs that are gone. Burn's autodiff records each
    /// graph in a process-wide map (`burn-autodiff`'s `runtime::graph::STATE`); entries of
    /// tensors that never reached a `backward` (a detached loss sum, a validation pass) stay
    /// there until the next `backward` cleans up orphans. After a W1-sized run that is about
    /// 10 KiB, which the next run's warm-up would free: one backward pass on a 1×1 tensor frees
    /// it now, so that what a run keeps is measured after Burn has let go.
    pub fn settle(&mut self) -> Result<(), ExecutionError> {
        let plain = self.device.clone().autodiff();
        for device in [plain.clone(), plain.gradient_checkpointing()] {
            let x = Tensor::<2>::ones([1, 1], &device).require_grad();
            drop(x.clone().matmul(x).sum().backward());
        }
        self.device.sync()
    }

    /// Syncs (the fusion backend's cleanup does not drain its queue), then releases.
    pub fn cleanup(&mut self) -> Result<(), ExecutionError> {
        self.device.sync()?;
        self.device.memory_cleanup();
        self.device.sync()?;
        trim_host_heap();
        Ok(())
    }

    /// Reserves `bytes` in the pools of the calling thread's stream.
    ///
    /// CubeCL's default (adaptive) memory manager serves allocations over 64 KiB from an
    /// arena of sliced pages sized to the largest request so far (plus 1 MiB), and smaller
    /// ones from a pool of 8 MiB pages. Freed pages stay reserved until `memory_cleanup`. So:
    /// one small allocation opens a small-pool page, and [`RESERVE_BLOCKS`] large blocks held
    /// at the same time open that many arena pages; dropping them leaves the pages reserved
    /// and ready to be sliced by later allocations up to one block's size.
    ///
    /// The runtime also keeps each kernel launch's metadata (shapes, strides, scalars) in a
    /// per-stream cache of device buffers, evicting the least recently used entry once full
    /// (wgpu: 512 entries, each a page of its uniform pool; CUDA: 4096, sliced from the small
    /// pool). Training fills it as it goes, since an optimizer's scalars change every step,
    /// and on wgpu that showed as about 1 MiB of reserved growth after the reservation. So the
    /// reservation also fills the cache, with [`LAUNCH_CACHE_FILL`] launches of distinct
    /// metadata; afterwards each new entry takes the page of the one it evicts.
    fn reserve(&mut self, bytes: u64) -> Result<Applied, ExecutionError> {
        if self.source == MemorySource::Host {
            return Ok(Applied {
                action: Action::Reserve,
                detail: match reserve_host_heap(bytes) {
                    Some(r) => format!(
                        "reserved {} of heap: anonymous resident memory {} -> {}",
                        format_bytes(bytes),
                        format_bytes(r.rss_before),
                        format_bytes(r.rss_after)
                    ),
                    None => "not applied: this platform's allocator cannot hold a reservation \
                             (glibc only)"
                        .into(),
                },
            });
        }
        let before = device_pool_figures(&self.device).unwrap_or_default();
        let small_page = 8 << 20;
        let block_bytes = (bytes.saturating_sub(small_page) / RESERVE_BLOCKS)
            .saturating_sub(1 << 20)
            .max(1 << 20);
        let small = Tensor::<1>::zeros([1024], &self.device);
        let blocks: Vec<Tensor<1>> = (0..RESERVE_BLOCKS)
            .map(|_| Tensor::<1>::zeros([(block_bytes / 4) as usize], &self.device))
            .collect();
        self.device.sync()?;
        drop((small, blocks));
        self.device.sync()?;
        self.fill_launch_cache()?;
        let after = device_pool_figures(&self.device).unwrap_or_default();
        Ok(Applied {
            action: Action::Reserve,
            detail: format!(
                "reserved {}: pool reserved {} -> {}",
                format_bytes(bytes),
                format_bytes(before.reserved),
                format_bytes(after.reserved)
            ),
        })
    }
}

/// Launches made by [`Executor::reserve`] to fill the runtime's launch-metadata cache: more
/// than wgpu's 512 entries.
pub const LAUNCH_CACHE_FILL: usize = 600;

impl Executor {
    /// Launches [`LAUNCH_CACHE_FILL`] small kernels whose metadata differ (by a scalar), each
    /// read back so that it really runs, and keeps nothing.
    fn fill_launch_cache(&mut self) -> Result<(), ExecutionError> {
        let x = Tensor::<2>::ones([4, 8], &self.device);
        for i in 0..LAUNCH_CACHE_FILL {
            x.clone().mul_scalar(1.0 + i as f64).try_into_data()?;
        }
        self.device.sync()
    }
}

/// The device's total memory where it is known: physical RAM for host-memory backends; for
/// CubeCL devices what the runtime reports (CUDA: the card's memory; wgpu: the largest
/// device-local heap on Vulkan or Metal, nothing elsewhere).
pub fn device_total_memory(device: &Device, source: MemorySource) -> Option<u64> {
    match source {
        MemorySource::Host => {
            let info = std::fs::read_to_string("/proc/meminfo").ok()?;
            let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        }
        MemorySource::CubeclPool => cube_total_memory(device),
    }
}

#[cfg(any(feature = "cuda", feature = "cpu", feature = "wgpu"))]
fn cube_total_memory(device: &Device) -> Option<u64> {
    match device.clone().without_autodiff().as_dispatch() {
        burn::backend::DispatchDevice::Cube(d) => d.client().properties().memory.max_memory(),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

#[cfg(not(any(feature = "cuda", feature = "cpu", feature = "wgpu")))]
fn cube_total_memory(_device: &Device) -> Option<u64> {
    None
}

/// Makes every thread that may multiply matrices on flex allocate its packing buffer now, for
/// the baseline. gemm keeps one per thread (`gemm-common`'s `L2_SLAB`, the size of the L2
/// cache) from that thread's first product on, for the life of the process. Which of rayon's
/// workers take part in a large product is up to the scheduler, so without this a run's peak
/// holds one more buffer in some processes than in others (measured: 2 MiB, in every other
/// run of a parameter-heavy MLP). A product below burn-flex's parallel threshold runs on the
/// thread that calls it: one on each worker, and one here (the same buffer, where this thread
/// is one of the workers: [`crate::backend::join_compute_pool`]).
fn warm_every_thread(device: &Device) {
    let product = || {
        let x = Tensor::<2>::ones([160, 160], device);
        drop(x.clone().matmul(x).into_data());
    };
    rayon::broadcast(|_| product());
    product();
}

/// Makes every rayon worker pack a deep matrix product once per process, so that the pages of
/// its packing buffer that deep products use are resident before any run's baseline. Each
/// worker's buffer (2 MiB here) is touched as deep as the products that worker has packed
/// for; which worker packs which block of a parallel product is up to the scheduler, so
/// without this a worker's buffer could deepen in any run, not only the first: in 3 of 25
/// processes of `configs/search-random.toml`, 0.7 to 1.0 MiB arrived that way between two
/// later trials. Each worker multiplies [128, 1024] by [1024, 1024] itself (the smallest
/// product measured to reach the full depth), with inputs made here. Its output is allocated in
/// the worker's arena, whose free top glibc keeps for good once the heap is pooled, so the
/// products run before [`pool_host_heap`] and with thread arenas trimmed on free.
fn warm_packing_depth(device: &Device) {
    static DONE: Once = Once::new();
    DONE.call_once(|| {
        let lhs = Tensor::<2>::ones([128, 1024], device);
        let rhs = Tensor::<2>::ones([1024, 1024], device);
        trimming_thread_arenas(|| {
            rayon::broadcast(|_| drop(lhs.clone().matmul(rhs.clone()).into_data()))
        });
    });
}

/// Runs burn-flex's parallel copy once: a transpose made contiguous, at its threshold of
/// 2^20 elements (a [1024, 1024] weight's gradient takes that path in backward). That code is
/// paged into the process the first time it runs: in a sweep whose trials grow, 0.5 MiB of
/// resident set arrived with the first trial of two 1024-wide layers and stayed (measured on
/// `configs/search-grid.toml`: rayon closures of `copy_2d_tiled`). Part of the process's
/// one-time state, like the packing buffers, so it comes before the baseline.
fn warm_large_copies(device: &Device) {
    let x = Tensor::<2>::ones([1024, 1024], device);
    drop(x.transpose().into_data());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{policy::LimitExceeded, HostCounters};

    #[test]
    fn host_total_is_physical_memory() {
        let total = device_total_memory(&Device::flex(), MemorySource::Host).unwrap();
        assert!(total > 256 << 20, "{total}");
    }

    #[test]
    fn host_cleanup_trims_and_reserve_holds_heap() {
        let mut exec = Executor::new(&Device::flex(), MemorySource::Host);
        let applied = exec.apply(&MemoryAction::Cleanup).unwrap().unwrap();
        assert_eq!(applied.action, Action::Cleanup);
        let before = crate::memory::anonymous_resident_bytes().unwrap();
        let target = before + (32 << 20);
        let applied = exec
            .apply(&MemoryAction::Reserve { bytes: target })
            .unwrap()
            .unwrap();
        assert!(
            applied
                .detail
                .starts_with(&format!("reserved {}", format_bytes(target))),
            "{}",
            applied.detail
        );
        // The touched pages stay resident after they are freed (other tests run in parallel,
        // so the bound is loose).
        let after = crate::memory::anonymous_resident_bytes().unwrap();
        assert!(after > before + (16 << 20), "{before} -> {after}");
        let fail = MemoryAction::Fail(LimitExceeded {
            limit: 1,
            observed: 2,
            measure: "x",
            epoch: 0,
            step: 0,
            micro_batch: 1,
            accumulation_steps: 1,
            futile_shrink: None,
            shrinks: false,
            phase: crate::memory::Phase::RunStart,
            breakdown: None,
            advice: None,
            offload: Box::default(),
        });
        assert_eq!(exec.apply(&fail).unwrap(), None);
        assert!(HostCounters::read().installed);
    }
}
