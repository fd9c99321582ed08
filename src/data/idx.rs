//! MNIST-format (IDX) files: an images file and a labels file, gzip-compressed or not.
//!
//! An IDX file is two zero bytes, a type byte, a byte giving the number of dimensions, each
//! dimension as a big-endian `u32`, then the values, big-endian, row-major. Images are
//! `[n, rows, cols]` (or any `[n, ...]`) and labels `[n]`.

use std::path::Path;

use super::{DataError, Sample};
use crate::config::IdxConfig;

/// An IDX array: its shape and its values as `f32`.
#[derive(Debug, Clone, PartialEq)]
struct IdxArray {
    dims: Vec<usize>,
    values: Vec<f32>,
}

/// Reads both files. Returns the samples (each image flattened), the number of features (the
/// product of the image dimensions after the first) and the number of classes (largest label
/// + 1).
pub fn load_idx(config: &IdxConfig) -> Result<(Vec<Sample>, usize, usize), DataError> {
    let images = read(&config.images)?;
    let labels = read(&config.labels)?;
    let unusable = |path: &Path, message: String| {
        DataError::Unusable(format!("{}: {message}", path.display()))
    };
    if images.dims.len() < 2 {
        return Err(unusable(
            &config.images,
            format!(
                "an images file has at least 2 dimensions ([count, ...]), this one has {}",
                images.dims.len()
            ),
        ));
    }
    if labels.dims.len() != 1 {
        return Err(unusable(
            &config.labels,
            format!(
                "a labels file has 1 dimension ([count]), this one has {}",
                labels.dims.len()
            ),
        ));
    }
    let (count, label_count) = (images.dims[0], labels.dims[0]);
    if count != label_count {
        return Err(unusable(
            &config.labels,
            format!(
                "holds {label_count} labels, but {} holds {count} images",
                config.images.display()
            ),
        ));
    }
    let features: usize = images.dims[1..].iter().product();
    let mut classes = 0;
    let mut samples = Vec::with_capacity(count);
    for (i, (image, &label)) in images
        .values
        .chunks_exact(features.max(1))
        .zip(&labels.values)
        .enumerate()
    {
        if label < 0.0 || label.fract() != 0.0 {
            return Err(unusable(
                &config.labels,
                format!("label {i} is {label}; labels must be non-negative integers"),
            ));
        }
        let label = label as usize;
        classes = classes.max(label + 1);
        samples.push(Sample {
            features: image.to_vec(),
            label,
        });
    }
    if samples.is_empty() {
        return Err(unusable(&config.images, "holds no images".into()));
    }
    if classes < 2 {
        return Err(unusable(
            &config.labels,
            "every label is 0; need at least 2 classes".into(),
        ));
    }
    Ok((samples, features, classes))
}

/// Reads and parses one IDX file, decompressing a `.gz` path.
fn read(path: &Path) -> Result<IdxArray, DataError> {
    let io = |message: String| DataError::Io {
        path: path.display().to_string(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| io(e.to_string()))?;
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut raw)
            .map_err(|e| io(format!("cannot decompress (gzip): {e}")))?;
        raw
    } else {
        bytes
    };
    parse(&bytes).map_err(|e| io(e.to_string()))
}

/// What makes bytes no IDX file (said without the path, which the reader adds).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum IdxError {
    /// The first four bytes are not an IDX magic number.
    #[error(
        "not an IDX file: it must start with two zero bytes, a type and a rank (magic number \
         like 0x00000803), got {0}"
    )]
    Magic(String),
    /// A data type byte IDX does not define.
    #[error("unknown IDX data type 0x{0:02x}")]
    Kind(u8),
    /// A header shorter than its rank needs.
    #[error("truncated header: rank {rank} needs {header} bytes, the file has {got}")]
    Header {
        /// The rank byte.
        rank: usize,
        /// The header's bytes for that rank.
        header: usize,
        /// The file's bytes.
        got: usize,
    },
    /// Data of another length than the dimensions need.
    #[error("{} the data: dimensions {dims:?} need {expected} bytes, the file has {got}", if got < expected { "truncated" } else { "extra bytes after" })]
    Data {
        /// The dimensions in the header.
        dims: Vec<usize>,
        /// The bytes they need.
        expected: usize,
        /// The bytes after the header.
        got: usize,
    },
}

/// Parses IDX bytes.
fn parse(bytes: &[u8]) -> Result<IdxArray, IdxError> {
    let [0, 0, kind, rank, ..] = *bytes else {
        let magic = bytes.iter().take(4).map(|b| format!("{b:02x}")).collect();
        return Err(IdxError::Magic(magic));
    };
    let (width, decode): (usize, fn(&[u8]) -> f32) = match kind {
        0x08 => (1, |b| f32::from(b[0])),
        0x09 => (1, |b| f32::from(b[0] as i8)),
        0x0B => (2, |b| f32::from(i16::from_be_bytes([b[0], b[1]]))),
        0x0C => (4, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as f32),
        0x0D => (4, |b| f32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        0x0E => (8, |b| {
            f64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32
        }),
        other => return Err(IdxError::Kind(other)),
    };
    let rank = usize::from(rank);
    let header = 4 + 4 * rank;
    if rank == 0 || bytes.len() < header {
        return Err(IdxError::Header {
            rank,
            header,
            got: bytes.len(),
        });
    }
    let dims: Vec<usize> = bytes[4..header]
        .chunks_exact(4)
        .map(|d| u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize)
        .collect();
    let count: usize = dims.iter().product();
    let expected = count * width;
    let data = &bytes[header..];
    if data.len() != expected {
        return Err(IdxError::Data {
            dims,
            expected,
            got: data.len(),
        });
    }
    Ok(IdxArray {
        values: data.chunks_exact(width).map(decode).collect(),
        dims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(kind: u8, dims: &[u32], data: &[u8]) -> Vec<u8> {
        let mut out = vec![0, 0, kind, dims.len() as u8];
        for d in dims {
            out.extend(d.to_be_bytes());
        }
        out.extend(data);
        out
    }

    #[test]
    fn parses_bytes_and_floats() {
        let a = parse(&idx(0x08, &[2, 2], &[0, 1, 2, 255])).unwrap();
        assert_eq!(a.dims, vec![2, 2]);
        assert_eq!(a.values, vec![0.0, 1.0, 2.0, 255.0]);
        let f = parse(&idx(0x0D, &[1], &1.5f32.to_be_bytes())).unwrap();
        assert_eq!(f.values, vec![1.5]);
    }

    #[test]
    fn corrupt_files_say_what_is_wrong() {
        let said = |bytes: &[u8]| parse(bytes).unwrap_err().to_string();
        assert!(said(&[1, 2, 3, 4]).starts_with("not an IDX file"));
        assert!(said(&[1, 2, 3, 4]).ends_with("got 01020304"));
        assert_eq!(said(&idx(0x07, &[1], &[0])), "unknown IDX data type 0x07");
        assert_eq!(
            said(&idx(0x08, &[2, 2], &[0, 1, 2])),
            "truncated the data: dimensions [2, 2] need 4 bytes, the file has 3"
        );
        assert_eq!(
            said(&idx(0x08, &[1], &[0, 1])),
            "extra bytes after the data: dimensions [1] need 1 bytes, the file has 2"
        );
        assert!(said(&[0, 0, 8, 3, 0, 0]).starts_with("truncated header"));
    }
}
