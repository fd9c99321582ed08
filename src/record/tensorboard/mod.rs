//! A run's scalars (`scalars.rs`) as TensorBoard reads them (`[run] tensorboard = true`): an
//! event file `events.out.tfevents.<seconds>.<host>.<pid>` in the run directory, so that
//! `tensorboard --logdir runs/` shows each run, and each trial of a search, as its own run.
//!
//! The file is TFRecord's framing of `Event` protocol buffers (`event.rs`): for each record,
//! its length as a little-endian u64, the masked CRC-32C of those 8 bytes, the data, and the
//! masked CRC-32C of the data. The CRC comes from the `crc32c` crate and the encoding from
//! `prost`; no maintained Rust crate writes the files themselves.

mod event;
mod scalars;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use prost::Message;

pub use event::{Event, SessionLog, Summary, Value, START};

/// The file version TensorBoard expects in a file's first event.
const FILE_VERSION: &str = "brain.Event:2";

/// An event file being written.
pub struct EventFile {
    file: BufWriter<File>,
    path: PathBuf,
}

impl EventFile {
    /// Creates a new event file in `dir` and writes its first event, the file version.
    pub fn create(dir: &Path) -> std::io::Result<EventFile> {
        let host = crate::record::host_name();
        let seconds = wall_time() as u64;
        let name = format!(
            "events.out.tfevents.{seconds}.{host}.{}",
            std::process::id()
        );
        let path = dir.join(name);
        let file = BufWriter::new(File::create(&path)?);
        let mut events = EventFile { file, path };
        events.write(&Event {
            wall_time: wall_time(),
            step: 0,
            file_version: Some(FILE_VERSION.into()),
            summary: None,
            session_log: None,
        })?;
        events.file.flush()?;
        Ok(events)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the scalars `values` (tag, value) at global step `step`; those without a value
    /// are left out.
    pub fn scalars(&mut self, step: usize, values: &[(&str, Option<f64>)]) -> std::io::Result<()> {
        let value: Vec<Value> = (values.iter())
            .filter_map(|(tag, v)| {
                Some(Value {
                    tag: tag.to_string(),
                    simple_value: Some((*v)? as f32),
                })
            })
            .collect();
        if value.is_empty() {
            return Ok(());
        }
        self.write(&Event {
            wall_time: wall_time(),
            step: step as i64,
            file_version: None,
            summary: Some(Summary { value }),
            session_log: None,
        })
    }

    /// Says that the run restarts at global step `step` (it resumed from a checkpoint after
    /// `step - 1` steps): TensorBoard drops the earlier files' scalars from `step` on.
    pub fn restart(&mut self, step: usize) -> std::io::Result<()> {
        self.write(&Event {
            wall_time: wall_time(),
            step: step as i64,
            file_version: None,
            summary: None,
            session_log: Some(SessionLog { status: START }),
        })
    }

    /// Writes what is buffered to the file.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }

    /// Writes `event` as one record.
    fn write(&mut self, event: &Event) -> std::io::Result<()> {
        self.file.write_all(&record(&event.encode_to_vec()))
    }
}

/// Seconds since the Unix epoch, now.
fn wall_time() -> f64 {
    (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `data` framed as a TFRecord: length, its masked CRC, the data, its masked CRC.
fn record(data: &[u8]) -> Vec<u8> {
    let length = (data.len() as u64).to_le_bytes();
    let mut out = Vec::with_capacity(data.len() + 16);
    out.extend_from_slice(&length);
    out.extend_from_slice(&masked_crc(&length).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc(data).to_le_bytes());
    out
}

/// TFRecord's masked CRC-32C: rotated right by 15 bits, plus a constant, so that a CRC of data
/// holding CRCs is not itself one.
fn masked_crc(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The masked CRC of "123456789".
    const MASKED_CHECK: u32 = 0xC78A_B0E5;

    #[test]
    fn a_record_is_framed_with_masked_crcs() {
        // CRC-32C("123456789") is 0xE3069283 (its check value); rotated right by 15 bits and
        // 0xa282ead8 added, as TFRecord masks it (worked out by hand).
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(masked_crc(b"123456789"), MASKED_CHECK);
        let framed = record(b"abc");
        assert_eq!(framed.len(), 3 + 16);
        assert_eq!(&framed[..8], &3u64.to_le_bytes());
        assert_eq!(&framed[12..15], b"abc");
        assert_eq!(framed[15..], masked_crc(b"abc").to_le_bytes());
    }

    #[test]
    fn a_zero_is_written_and_a_missing_value_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = EventFile::create(dir.path()).unwrap();
        file.scalars(7, &[("lr", Some(0.0)), ("val_loss", None)])
            .unwrap();
        file.flush().unwrap();
        let bytes = std::fs::read(file.path()).unwrap();
        let first = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let second = &bytes[first + 16..];
        let len = u64::from_le_bytes(second[..8].try_into().unwrap()) as usize;
        let event = Event::decode(&second[12..12 + len]).unwrap();
        assert_eq!(event.step, 7);
        let values = event.summary.unwrap().value;
        assert_eq!(values.len(), 1);
        assert_eq!(
            (values[0].tag.as_str(), values[0].simple_value),
            ("lr", Some(0.0))
        );
    }
}
