//! Memory sizes in configs: `"512MiB"`, `"2GiB"`, `"1.5GB"`, a plain byte count, or a fraction
//! in `(0, 1]` of the device's memory.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What is wrong with a value, without its key (the caller names the key): `must be > 0, got
/// -1`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueError(pub String);

/// A size as written in TOML: a string with a unit, an integer byte count, or a fraction.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RawSize {
    /// Bytes.
    Bytes(i64),
    /// A fraction of the device's memory.
    Fraction(f64),
    /// A number with a unit.
    Text(String),
}

/// Read by type, so that a value of none of the three says what a size is (serde's untagged
/// enums only say that no variant matched).
impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Size;
        impl Visitor<'_> for Size {
            type Value = RawSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size like \"512MiB\" or a fraction in (0, 1]")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawSize, E> {
                Ok(RawSize::Bytes(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawSize, E> {
                Ok(RawSize::Bytes(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawSize, E> {
                Ok(RawSize::Fraction(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSize, E> {
                Ok(RawSize::Text(v.to_string()))
            }
        }
        deserializer.deserialize_any(Size)
    }
}

/// A validated memory size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemorySize {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A fraction in `(0, 1]` of the device's total memory.
    Fraction(f64),
}

impl MemorySize {
    /// Bytes, given the device's total memory if it is known.
    pub fn resolve(self, total: Option<u64>) -> Option<u64> {
        match self {
            MemorySize::Bytes(b) => Some(b),
            MemorySize::Fraction(f) => total.map(|t| (t as f64 * f) as u64),
        }
    }

    /// Parses the raw form; the error says what is wrong, without the key.
    pub fn parse(raw: &RawSize) -> Result<Self, ValueError> {
        match raw {
            RawSize::Bytes(b) if *b > 0 => Ok(MemorySize::Bytes(*b as u64)),
            RawSize::Bytes(b) => Err(ValueError(format!("must be > 0, got {b}"))),
            RawSize::Fraction(f) if *f > 0.0 && *f <= 1.0 => Ok(MemorySize::Fraction(*f)),
            RawSize::Fraction(f) => Err(ValueError(format!(
                "must be a fraction in (0, 1] or a size like \"512MiB\", got {}",
                super::Number(*f)
            ))),
            RawSize::Text(t) => parse_bytes(t).map(MemorySize::Bytes),
        }
    }
}

/// Parses `"512MiB"`, `"2 GiB"`, `"1.5GB"`, `"4096"`, `"64kb"` (units are case-insensitive;
/// `KB`/`MB`/`GB`/`TB` are decimal, `KiB`/`MiB`/`GiB`/`TiB` binary).
pub fn parse_bytes(text: &str) -> Result<u64, ValueError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let bad = || {
        ValueError(format!(
            "must be a size like \"512MiB\" or \"2GB\", got \"{text}\""
        ))
    };
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let too_large = || {
        ValueError(format!(
            "must be at most {} bytes, got \"{text}\"",
            u64::MAX
        ))
    };
    // Whole numbers in integers, so that every byte count reads back exactly; fractions
    // ("1.5GB") through f64, rounded to a byte.
    let bytes = if number.contains('.') {
        let value: f64 = number.parse().map_err(|_| bad())?;
        // "0.5" or "1.0" is no count of bytes: a quoted share of the memory would otherwise
        // round to a budget or a limit of 1 B.
        if scale == 1 {
            return Err(ValueError(format!(
                "must be a size with a unit (\"512MiB\") or a share of the memory unquoted, in \
                 (0, 1]: \"{text}\" is not a byte count (a decimal without a unit)"
            )));
        }
        let bytes = (value * scale as f64).round();
        if bytes >= u64::MAX as f64 {
            return Err(too_large());
        }
        bytes as u64
    } else {
        let value: u64 = number
            .parse()
            .map_err(|e: std::num::ParseIntError| match e.kind() {
                std::num::IntErrorKind::PosOverflow => too_large(),
                _ => bad(),
            })?;
        value.checked_mul(scale).ok_or_else(too_large)?
    };
    if bytes == 0 {
        return Err(ValueError(format!("must be > 0, got \"{text}\"")));
    }
    Ok(bytes)
}

impl fmt::Display for MemorySize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemorySize::Bytes(b) => {
                for (unit, scale) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
                    if b % scale == 0 {
                        return write!(f, "{}{unit}", b / scale);
                    }
                }
                write!(f, "{b}B")
            }
            MemorySize::Fraction(x) => write!(f, "{x}"),
        }
    }
}

/// Read as [`RawSize`] and checked: a value that is no size fails as serde's error, worded
/// as the config's own (`must be > 0, got 0`) and located at its key by the reader.
impl<'de> Deserialize<'de> for MemorySize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawSize::deserialize(deserializer)?;
        MemorySize::parse(&raw).map_err(|e| de::Error::custom(e.0))
    }
}

impl Serialize for MemorySize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MemorySize::Bytes(_) => s.serialize_str(&self.to_string()),
            MemorySize::Fraction(x) => s.serialize_f64(*x),
        }
    }
}

/// `memory.device_budget`: a size, or `"device"`: what the device has free when the first
/// run on it asks ([`crate::lease`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DeviceBudget {
    /// Bytes, or a share of the device's memory.
    Size(MemorySize),
    /// What the device has free for tidemark, read when no tidemark run on it holds or waits
    /// for a lease: on CUDA the driver's free memory, on flex the machine's `MemAvailable`.
    Device,
}

impl DeviceBudget {
    /// The word that sets [`DeviceBudget::Device`].
    pub const DEVICE: &'static str = "device";

    /// Parses the raw form; the error says what is wrong, without the key.
    pub fn parse(raw: &RawSize) -> Result<Self, ValueError> {
        match raw {
            RawSize::Text(t) if t.trim().eq_ignore_ascii_case(Self::DEVICE) => {
                Ok(DeviceBudget::Device)
            }
            raw => MemorySize::parse(raw).map(DeviceBudget::Size).map_err(|e| {
                ValueError(format!(
                    "{} (or \"{}\": what the device has free)",
                    e.0,
                    Self::DEVICE
                ))
            }),
        }
    }
}

impl From<MemorySize> for DeviceBudget {
    fn from(size: MemorySize) -> Self {
        DeviceBudget::Size(size)
    }
}

impl<'de> Deserialize<'de> for DeviceBudget {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawSize::deserialize(deserializer)?;
        DeviceBudget::parse(&raw).map_err(|e| de::Error::custom(e.0))
    }
}

impl Serialize for DeviceBudget {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DeviceBudget::Size(size) => size.serialize(s),
            DeviceBudget::Device => s.serialize_str(Self::DEVICE),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_budget_is_a_size_or_the_device() {
        let parse = |raw: RawSize| DeviceBudget::parse(&raw);
        assert_eq!(
            parse(RawSize::Text("Device".into())),
            Ok(DeviceBudget::Device)
        );
        assert_eq!(
            parse(RawSize::Text("2GiB".into())),
            Ok(DeviceBudget::Size(MemorySize::Bytes(2 << 30)))
        );
        assert_eq!(
            parse(RawSize::Fraction(0.5)),
            Ok(DeviceBudget::Size(MemorySize::Fraction(0.5)))
        );
        let e = parse(RawSize::Text("lots".into())).unwrap_err().0;
        assert!(
            e.ends_with("(or \"device\": what the device has free)"),
            "{e}"
        );
    }

    #[test]
    fn units_parse() {
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("1.5GB"), Ok(1_500_000_000));
        assert_eq!(parse_bytes("64kb"), Ok(64_000));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_bytes("0MiB").is_err());
        // Found by the config fuzzer: integers read back exactly, and overflow is an error.
        assert_eq!(parse_bytes("9223372036854775807B"), Ok(i64::MAX as u64));
        assert_eq!(
            parse_bytes("18446744073709551615TiB"),
            Err(ValueError(format!(
                "must be at most {} bytes, got \"18446744073709551615TiB\"",
                u64::MAX
            )))
        );
        assert!(parse_bytes("1e30").is_err());
        // A quoted fraction is no size (it rounded to 1 B: a search's budget of one byte).
        let e = parse_bytes("0.5").unwrap_err().0;
        assert!(e.contains("\"0.5\" is not a byte count"), "{e}");
        assert!(e.contains("a share of the memory unquoted"), "{e}");
        for text in ["1.0", "0.5B", "2."] {
            assert!(parse_bytes(text).is_err(), "{text}");
        }
    }

    #[test]
    fn raw_forms_validate() {
        assert_eq!(
            MemorySize::parse(&RawSize::Fraction(0.8)),
            Ok(MemorySize::Fraction(0.8))
        );
        assert!(MemorySize::parse(&RawSize::Fraction(1.5)).is_err());
        assert!(MemorySize::parse(&RawSize::Bytes(-1)).is_err());
        assert_eq!(MemorySize::Fraction(0.5).resolve(Some(1000)), Some(500));
        assert_eq!(MemorySize::Fraction(0.5).resolve(None), None);
    }

    #[test]
    fn display_round_trips() {
        for text in ["512MiB", "2GiB", "3KiB", "1000B"] {
            let size = MemorySize::Bytes(parse_bytes(text).unwrap());
            assert_eq!(size.to_string(), text);
        }
    }
}
