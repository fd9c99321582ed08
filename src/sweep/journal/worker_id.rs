//! A worker's name in the journal (`worker_id`): unique per process, as Optuna's uuid4 and
//! thread are, and readable in the terminal of the others: `HOST-PID-RANDOM`.

use std::fmt::Write as _;
use std::io::Read;

/// This process's worker id.
pub fn worker_id() -> String {
    let host = crate::record::host_name();
    format!("{host}-{}-{}", std::process::id(), random_hex())
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
