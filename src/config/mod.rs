//! Configuration in two stages: [`RawConfig`], the file read into the config's types (serde,
//! unknown keys rejected; each table in its own type, but `[model]` and `[data]`, whose keys
//! depend on their kind, kept as written until their own readers read them: the kind's, and
//! [`DataConfig`]'s in validation), then
//! [`RunConfig`], validated once by [`TryFrom`]. Errors name the file, line, column, key and
//! value.

mod builder;
pub mod defaults;
mod error;
mod fields;
mod key_error;
mod load;
mod overrides;
mod raw;
mod serde_checks;
mod size;
mod types;
mod validate;

pub use builder::ConfigBuilder;
pub(crate) use error::{clipped, quoted};
pub use error::{headline, one_line, path_text, ConfigError, Number};
pub use load::{load, load_checked, load_raw, parse, parse_checked, to_toml, Check, RawFile};
pub use overrides::Override;
pub use raw::*;
pub use serde_checks::{positive, positive_or_none, positives, positives_or_none};
pub use size::{parse_bytes, DeviceBudget, MemorySize, ValueError};
pub use types::*;
pub use validate::Invalid;

/// The sections that describe a config's task: a task its model kind builds from the config
/// owns them (its run's `config.toml` keeps them), a task defined in code none.
pub(crate) const TASK_SECTIONS: &[&str] = &["data", "model"];
