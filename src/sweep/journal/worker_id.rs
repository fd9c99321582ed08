//! A worker's name in the journal (`worker_id`): unique per process, as Optuna's uuid4 and
//! thread are, and readable in the terminal of the others: `HOST-PID-RANDOM`.

use std::fmt::Write as _;
use std::io::Read;

/// This process's worker id.
pub fn worker_id() -> String {
    let host = crate::record::host_name();
    format!("{host}-{}-{}", std::process::id(), random_hex())
}

/// Where this process's id means what it says: the machine's boot and the PID namespace it
/// runs in (`None` where /proc cannot tell). Two workers with the same key see the same
/// processes, so one can tell that the other's process has ended.
pub fn process_space() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(format!("{}/{}", boot.trim(), namespace.display()))
}

/// Whether process `pid`, in this process's space, has ended (no such process; one of another
/// user's is alive).
pub fn ended(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None);
    alive == Err(nix::errno::Errno::ESRCH)
}

/// 8 random bytes in hex, from the kernel (or the clock, where /dev/urandom cannot be read).
pub fn random_hex() -> String {
    let mut bytes = [0u8; 8];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        bytes = (nanos ^ u64::from(std::process::id()) << 32).to_le_bytes();
    }
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
