//! The checks an extent passes before it is mapped, the same whether it was read from a
//! file or from a crash image: a header that decodes, a length that matches it, the index
//! its place promises, extent 0's pool and geometry, and the zone size the caller expects.
//! Each failure is its own error, so a user learns what is wrong with which file.

use std::path::Path;

use crate::error::{PmemError, Result};
use crate::layout::{ExtentHeader, FORMAT_VERSION, HEADER_LEN, HeaderError};
use crate::options::PoolOptions;
use crate::uuid::format_uuid;

/// Decodes the header at the start of `bytes`, the extent at `path`.
pub(crate) fn decode_header(path: &Path, bytes: &[u8]) -> Result<ExtentHeader> {
    let path = path.to_path_buf();
    ExtentHeader::decode(bytes).map_err(|e| match e {
        HeaderError::Short => PmemError::Truncated {
            path,
            found: bytes.len() as u64,
            expected: HEADER_LEN,
        },
        HeaderError::BadMagic => PmemError::ForeignFile { path },
        HeaderError::Version(found) => PmemError::UnsupportedVersion {
            path,
            found,
            supported: FORMAT_VERSION,
        },
        HeaderError::Checksum => PmemError::Corrupt {
            path,
            reason: "header checksum mismatch".into(),
        },
        HeaderError::Invalid(reason) => PmemError::Corrupt {
            path,
            reason: format!("invalid header: {reason}"),
        },
    })
}

/// Checks that the extent at `path`, `len` bytes long, is as long as its header states.
pub(crate) fn check_length(path: &Path, len: u64, header: &ExtentHeader) -> Result<()> {
    let path = path.to_path_buf();
    let expected = header.extent_len;
    match len.cmp(&expected) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Less => Err(PmemError::Truncated {
            path,
            found: len,
            expected,
        }),
        std::cmp::Ordering::Greater => Err(PmemError::Corrupt {
            path,
            reason: format!("{len} bytes, longer than the {expected} its header states"),
        }),
    }
}

/// Checks extent `index`'s header against its place, extent 0's header (`first`; none
/// for extent 0 itself) and the options.
pub(crate) fn check_extent(
    path: &Path,
    header: &ExtentHeader,
    index: u16,
    first: Option<&ExtentHeader>,
    options: &PoolOptions,
) -> Result<()> {
    if header.extent != index {
        return Err(PmemError::Corrupt {
            path: path.into(),
            reason: format!(
                "header says extent {}, file is extent {index}",
                header.extent
            ),
        });
    }
    if let Some(expected) = options.zone_size
        && expected != header.geometry.zone_size
    {
        return Err(PmemError::ZoneSizeMismatch {
            path: path.into(),
            found: header.geometry.zone_size,
            expected,
        });
    }
    if let Some(first) = first {
        if first.uuid != header.uuid {
            return Err(PmemError::ForeignExtent {
                path: path.into(),
                found: format_uuid(&header.uuid),
                expected: format_uuid(&first.uuid),
            });
        }
        if first.geometry.zone_size != header.geometry.zone_size {
            return Err(PmemError::ZoneSizeMismatch {
                path: path.into(),
                found: header.geometry.zone_size,
                expected: first.geometry.zone_size,
            });
        }
        if first.geometry != header.geometry {
            return Err(PmemError::Corrupt {
                path: path.into(),
                reason: "geometry differs from extent 0".into(),
            });
        }
    }
    Ok(())
}
