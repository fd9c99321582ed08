//! What a search's trials take: one probed step of each (`preflight`), the lease a trial in
//! a child process may hold (`lease`), and the budget the leases share (`budget`).

pub(in crate::sweep) mod budget;
pub(in crate::sweep) mod lease;
pub(in crate::sweep) mod preflight;

pub use crate::memory::policy::LEASE_MARGIN;
