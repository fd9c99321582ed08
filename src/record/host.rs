//! The machine's name, as a record shows it: in an event file's name (TensorBoard's
//! `events.out.tfevents.<seconds>.<host>.<pid>`) and in a study worker's id.

/// The host name, or `localhost` where it cannot be read.
pub fn host_name() -> String {
    (nix::unistd::gethostname().ok())
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into())
}
