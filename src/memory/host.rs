//! Host memory accounting: a counting global allocator with a resettable high-water mark.
//!
//! Backends without device pools (`flex`) keep tensors in ordinary heap memory, so the only
//! way to see what a training step really holds, including its transient peak inside the
//! step, is to count every allocation. The `tidemark` binary installs [`CountingAllocator`];
//! a library user opts in with two lines:
//!
//! ```
//! #[global_allocator]
//! static ALLOC: tidemark::memory::CountingAllocator = tidemark::memory::CountingAllocator::new();
//! ```
//!
//! The counters are per process: every thread's allocations count, tidemark's or not. Runs
//! one after another each report their own figures (each measures against a baseline taken at
//! its start, and each epoch restarts the peak), but two runs at the same time on two threads
//! would each see the other's bytes.
//!
//! It also gives freed heap memory back to the OS ([`trim_host_heap`]): glibc keeps freed
//! pages in its arenas, so without a trim a process's resident set stays at its peak after a
//! run has released everything.
//!
//! # Why this module uses `unsafe`
//! `GlobalAlloc` is an unsafe trait, and forwarding to [`System`] calls its unsafe methods.
//! The code only adds and subtracts sizes around those calls; it never reads or writes the
//! memory, and passes every pointer and layout through unchanged, so the safety contract is
//! exactly the caller's contract with `System`. `malloc_trim` is a C function; it takes a
//! padding size, touches only the allocator's own free lists, and is safe to call at any time.
//! `mallopt` sets allocator parameters; it has no memory-safety preconditions.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use super::proc_status::{anonymous_resident_bytes, resident_set_bytes};
use super::usage::{MemorySource, MemoryUsage};

static IN_USE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Whether [`pool_host_heap`] has run.
static POOLED: AtomicBool = AtomicBool::new(false);

/// A global allocator that forwards to [`System`] and counts live bytes, for the whole process.
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingAllocator;

impl CountingAllocator {
    /// The allocator; install it with `#[global_allocator]`.
    pub const fn new() -> Self {
        CountingAllocator
    }
}

fn grew(bytes: usize) {
    let now = IN_USE.fetch_add(bytes as u64, Relaxed) + bytes as u64;
    // A plain load first: the peak is rarely passed, and `fetch_max` is a locked
    // compare-and-swap loop on every allocation (measured on W0: the allocator's own time was
    // 4% of the process).
    if now > PEAK.load(Relaxed) {
        PEAK.fetch_max(now, Relaxed);
    }
    if !INSTALLED.load(Relaxed) {
        INSTALLED.store(true, Relaxed);
    }
}

fn shrank(bytes: usize) {
    IN_USE.fetch_sub(bytes as u64, Relaxed);
}

// SAFETY: every method forwards its arguments unchanged to `System` and returns its result;
// the counting touches only the atomics above.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded from our caller, who upholds `GlobalAlloc::alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was returned by this allocator, i.e. by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was returned by `System` with `layout`; the caller upholds the rest.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            // Count the larger size first so the peak sees both blocks when a move happens.
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        new
    }
}

/// Raw counters of the counting allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCounters {
    /// Live heap bytes.
    pub in_use: u64,
    /// Highest `in_use` since the last [`reset_host_peak`].
    pub peak: u64,
    /// Whether [`CountingAllocator`] is the global allocator (it has counted something).
    pub installed: bool,
}

impl HostCounters {
    /// Reads the counters now.
    pub fn read() -> Self {
        Self {
            in_use: IN_USE.load(Relaxed),
            peak: PEAK.load(Relaxed),
            installed: INSTALLED.load(Relaxed),
        }
    }
}

/// Starts a new high-water-mark window at the current live size.
pub fn reset_host_peak() {
    PEAK.store(IN_USE.load(Relaxed), Relaxed);
}

/// Host memory now: counted heap bytes in use, the anonymous resident set as reserved.
///
/// Without the counting allocator installed, bytes in use fall back to the resident set, which
/// includes code and stacks and cannot see a transient peak between reads.
pub fn host_usage() -> MemoryUsage {
    let counters = HostCounters::read();
    let rss = resident_set_bytes();
    let (in_use, peak) = if counters.installed {
        (counters.in_use, counters.peak)
    } else {
        let rss = rss.unwrap_or(0);
        (rss, rss)
    };
    // Reserved is the anonymous part of the resident set (heap, anonymous maps, stacks): what
    // the process has taken from RAM. The file-backed part is mostly the binary's own code,
    // paged in as new code paths first run (1.2 MiB during a quickstart's first epoch).
    let reserved = anonymous_resident_bytes().or(rss);
    MemoryUsage {
        bytes_in_use: in_use,
        // Memory the allocator handed out but the kernel has not yet backed (untouched pages)
        // is in use but not resident; reserved is never reported below in use.
        bytes_reserved: reserved.unwrap_or(in_use).max(in_use),
        peak_bytes_in_use: peak.max(in_use),
        bytes_padding: 0,
        source: MemorySource::Host,
    }
}

/// Returns free heap pages to the OS, in every glibc arena. Returns whether the platform has
/// such a call (glibc on Linux); elsewhere freed memory goes back as the allocator sees fit.
pub fn trim_host_heap() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: malloc_trim only walks glibc's own free lists; it has no preconditions.
        unsafe { malloc_trim(0) };
        true
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Makes glibc keep freed memory for reuse, as CubeCL's pools keep freed pages: blocks up to
/// 32 MiB (glibc's maximum) come from the heap instead of fresh `mmap`s, and the heap is not
/// trimmed on its own; [`trim_host_heap`] still gives everything free back. Process-wide and
/// lasting. Returns whether the platform has the control (glibc).
///
/// By default glibc maps each large block afresh and unmaps it when freed, raising that
/// threshold only as it sees large blocks freed; a training step frees and re-allocates
/// megabyte-sized tensors every step, and each fresh mapping is paid for in page faults. The
/// policy benchmark measured W1 (flex) at 16.1-18.7 ms per step with these settings against
/// 21.8-30.2 ms without, over five processes each.
pub fn pool_host_heap() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::raw::c_int;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_MMAP_THRESHOLD: c_int = -3;
        const MAX_HEAP_BLOCK: c_int = 32 << 20;
        // SAFETY: mallopt only changes glibc's tuning parameters; any value is valid input.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, MAX_HEAP_BLOCK);
            mallopt(M_TRIM_THRESHOLD, c_int::MAX);
        }
        POOLED.store(true, Relaxed);
        true
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Runs `work` with glibc returning a thread arena's free top to the OS on every large free
/// (a trim threshold of 128 KiB), then sets the threshold back to [`pool_host_heap`]'s if that
/// has run; if not, it stays at 128 KiB until it does. `malloc_trim` gives back the free top of
/// the main heap only; a worker thread's arena keeps its top for good once [`pool_host_heap`]
/// has run, so one-time work that allocates on rayon's workers runs inside this. Returns
/// `work`'s result.
pub(crate) fn trimming_thread_arenas<R>(work: impl FnOnce() -> R) -> R {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::raw::c_int;
        extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        const M_TRIM_THRESHOLD: c_int = -1;
        // SAFETY: mallopt only changes glibc's tuning parameters; any value is valid input.
        unsafe { mallopt(M_TRIM_THRESHOLD, 128 << 10) };
        let result = work();
        if POOLED.load(Relaxed) {
            // SAFETY: as above.
            unsafe { mallopt(M_TRIM_THRESHOLD, c_int::MAX) };
        }
        result
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        work()
    }
}

/// What [`reserve_host_heap`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostReservation {
    /// Anonymous resident memory before.
    pub rss_before: u64,
    /// Anonymous resident memory after: the reservation is held in the heap.
    pub rss_after: u64,
}

/// Grows the process's anonymous resident memory to `bytes` (if it is below) with heap that
/// later allocations reuse instead of growing the process: the host's form of preallocation.
///
/// glibc normally serves large blocks with `mmap` and returns them on free, and trims the top
/// of the heap once it is free; both give memory back as soon as it is dropped. So this first
/// makes the heap keep freed memory ([`pool_host_heap`]), then touches heap until the
/// anonymous resident set reaches `bytes`, and frees it. The pages
/// stay resident and are handed out again by later allocations. Only [`trim_host_heap`]
/// (what `clear = "between_runs"` calls) gives them back. The thresholds stay set for the rest
/// of the process; the counting allocator's peak is reset afterwards, so the touched bytes do
/// not count as the run's.
///
/// Returns `None` where the platform has no such control (not glibc).
pub fn reserve_host_heap(bytes: u64) -> Option<HostReservation> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let rss_before = anonymous_resident_bytes()
            .or_else(resident_set_bytes)
            .unwrap_or(0);
        pool_host_heap();
        // Touch pages (vec! writes the value) until the anonymous resident set reaches
        // `bytes`, holding all blocks at once so the heap grows, then free them into it. Some
        // blocks land on free memory that was already resident, so the target is re-read
        // after each round. The blocks are small: after an earlier run's trim the heap has
        // free holes whose pages were given back, and glibc fills such holes first; small
        // blocks fill them too, so the run's allocations find resident pages there. (With
        // 16 MiB blocks, a quickstart run after an earlier one in the same process still grew
        // by 3.8 MiB; with 256 KiB blocks, by 92 KiB.)
        let chunk = 256 << 10;
        let mut blocks = Vec::new();
        for _round in 0..8 {
            let now = anonymous_resident_bytes()
                .or_else(resident_set_bytes)
                .unwrap_or(0);
            let mut left = bytes.saturating_sub(now) as usize;
            if left == 0 {
                break;
            }
            while left > 0 {
                let n = left.min(chunk);
                blocks.push(std::hint::black_box(vec![1u8; n]));
                left -= n;
            }
        }
        drop(blocks);
        reset_host_peak();
        Some(HostReservation {
            rss_before,
            rss_after: anonymous_resident_bytes()
                .or_else(resident_set_bytes)
                .unwrap_or(0),
        })
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = bytes;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The unit-test binary installs the allocator (see lib.rs), so these counters are live.
    // Other tests run in parallel threads, so assertions allow for their allocations.

    #[test]
    fn counts_a_large_allocation_and_its_release() {
        let before = HostCounters::read();
        assert!(before.installed);
        reset_host_peak();
        let block = std::hint::black_box(vec![1u8; 256 << 20]);
        let during = HostCounters::read();
        assert!(
            during.in_use >= (256 << 20),
            "in use {} should include the block",
            during.in_use
        );
        assert!(during.peak >= during.in_use);
        drop(block);
        let after = HostCounters::read();
        assert!(after.peak >= (256 << 20), "the peak survives the release");
        assert!(after.in_use < during.in_use, "the release is counted");
    }

    #[test]
    fn usage_reports_host_source_and_sane_ordering() {
        let usage = host_usage();
        assert_eq!(usage.source, MemorySource::Host);
        assert!(usage.bytes_in_use > 0);
        assert!(usage.bytes_reserved >= usage.bytes_in_use);
        assert!(usage.peak_bytes_in_use >= usage.bytes_in_use);
    }
}
