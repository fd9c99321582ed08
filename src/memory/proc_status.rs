//! What Linux says of the process's memory: its resident set (whole, anonymous, peak) from
//! `/proc/self/status`, and the machine's available memory from `/proc/meminfo`.

/// The process's resident set size, where the OS reports it (Linux).
pub fn resident_set_bytes() -> Option<u64> {
    proc_status_bytes("VmRSS:")
}

/// The anonymous part of the resident set: heap, anonymous maps and stacks, without the
/// binary's code and other file-backed pages (Linux 4.5+).
pub fn anonymous_resident_bytes() -> Option<u64> {
    proc_status_bytes("RssAnon:")
}

/// Memory the kernel says is available to new allocations without swapping (Linux
/// `MemAvailable`).
pub fn available_host_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The process's peak resident set since start or the last [`reset_peak_resident_set`].
pub fn peak_resident_set_bytes() -> Option<u64> {
    proc_status_bytes("VmHWM:")
}

/// Resets the kernel's peak-resident-set mark to the current resident set (Linux 4.0+).
/// Returns whether it worked.
pub fn reset_peak_resident_set() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn proc_status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
