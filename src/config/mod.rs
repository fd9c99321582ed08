//! Configuration in two stages: [`RawConfig`] as written (serde, unknown keys rejected), then
//! [`RunConfig`], validated once by [`TryFrom`]. Errors name the file, line, column, key and
//! value.

mod app_keys;
mod builder;
pub mod defaults;
mod error;
mod key_error;
mod load;
mod overrides;
mod raw;
mod raw_lr;
mod size;
mod types;
mod validate;

pub use app_keys::{split_app_model, Check};
pub use builder::ConfigBuilder;
pub(crate) use error::clipped;
pub use error::{headline, one_line, path_text, ConfigError};
pub(crate) use key_error::describe_key_error;
pub use load::{load, load_checked, load_raw, parse, parse_checked, to_toml, RawFile};
pub use overrides::Override;
pub use raw::*;
pub use size::{parse_bytes, MemorySize, ValueError};
pub use types::*;
pub use validate::Invalid;

pub use validate::BUILTIN_KINDS;

/// The sections that describe a config's task: a task its model kind builds from the config
/// owns them (its run's `config.toml` keeps them), a task defined in code none.
pub(crate) const TASK_SECTIONS: &[&str] = &["data", "model"];
