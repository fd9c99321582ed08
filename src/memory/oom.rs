//! Recognising a device out-of-memory in a CubeCL error.
//!
//! CubeCL turns a driver out-of-memory (CUDA's `CUDA_ERROR_OUT_OF_MEMORY`) into
//! `IoError::OutOfMemory`, displayed as `out of device memory allocating {size} bytes`, after
//! one cleanup-and-retry. It reaches Burn as an `ExecutionError` when a dependent buffer is
//! read, not from `sync`. Burn passes the text on, so the text is what can be matched.

/// The size of the failed allocation, if `text` reports a device out-of-memory.
pub fn out_of_memory_size(text: &str) -> Option<u64> {
    const MARKER: &str = "out of device memory allocating ";
    let start = text.find(MARKER)? + MARKER.len();
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_size_in_cubecl_wording_wherever_it_is_wrapped() {
        // As ExecutionError::WithContext displays an IoError::OutOfMemory.
        let text = "An error happened during execution\nCaused by:\n  out of device memory \
                    allocating 536870912 bytes\n   0: backtrace...";
        assert_eq!(out_of_memory_size(text), Some(536_870_912));
        assert_eq!(
            out_of_memory_size(
                "WithContext { reason: \"out of device memory allocating 4096 bytes\" }"
            ),
            Some(4096)
        );
    }

    #[test]
    fn other_errors_are_not_out_of_memory() {
        assert_eq!(
            out_of_memory_size("The device is poisoned\nCaused by:\n  illegal address"),
            None
        );
        assert_eq!(
            out_of_memory_size("out of device memory allocating many bytes"),
            None
        );
        assert_eq!(out_of_memory_size(""), None);
    }
}
