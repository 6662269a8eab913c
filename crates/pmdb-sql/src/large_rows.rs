//! Rows longer than one engine record takes. Such a row's encoding is cut into chunks of
//! the database's chunk size (at most [`MAX_CHUNK`]), kept in the table's
//! `sql.<id>.chunks` subtable under the row key followed by the chunk's number, and the
//! rows subtable holds a short reference in the row's place (its length, chunk size and
//! checksum): every piece goes into the batch that writes the row, so a reader at any
//! snapshot finds the reference and its chunks together, or neither. The engine's
//! per-record limit stays its own detail. Byte table: `docs/format.md`, "Row stored out
//! of line".

use std::borrow::Cow;

use pmdb_engine::{Snapshot, Subtable};

use crate::error::{CodecError, Result, SqlError};
use crate::reader::Reader;

/// Most bytes per chunk: a row longer than the chunk size is stored out of line.
pub const MAX_CHUNK: usize = 256 << 10;

/// Fewest bytes per chunk: a database whose records take less stores no row out of line
/// (a row longer than a record is refused, as the engine refuses the record).
pub const MIN_CHUNK: usize = 1 << 10;

/// Longest row stored: PostgreSQL's 1 GB for one field, and room for the rest of the row.
pub const MAX_ROW: u64 = 1 << 31;

/// What a reference starts with: as a row's column count, more than any table has.
const MARK: [u8; 2] = [0xff, 0xff];

/// Mark, length (u64), chunk size (u32), CRC-32 of the whole encoding (u32).
const REFERENCE_LEN: usize = 2 + 8 + 4 + 4;

/// Where a reader takes the chunks of a row from: the place it read the row from.
pub trait ChunkSource {
    fn chunk(&self, chunks: &Subtable, key: &[u8]) -> Result<Option<Vec<u8>>>;
}

/// The committed state as it is now.
pub struct Committed;

impl ChunkSource for Committed {
    fn chunk(&self, chunks: &Subtable, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(chunks.get(key)?.map(|v| v.to_vec()))
    }
}

impl ChunkSource for Snapshot {
    fn chunk(&self, chunks: &Subtable, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.get(chunks, key)?.map(|v| v.to_vec()))
    }
}

/// The chunk size of a database whose records hold at most `max_value` bytes; `None` if
/// it stores no row out of line.
pub fn chunk_size(max_value: usize) -> Option<usize> {
    (max_value >= MIN_CHUNK).then(|| max_value.min(MAX_CHUNK))
}

/// How many chunks of `size` bytes an encoding of `len` bytes is stored in (0: it is
/// stored whole).
pub fn chunks_for(len: usize, size: usize) -> u32 {
    if len <= size {
        0
    } else {
        u32::try_from(len.div_ceil(size)).unwrap_or(u32::MAX)
    }
}

/// Key of chunk `n` of the row stored under `row_key`.
pub fn chunk_key(row_key: &[u8], n: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(row_key.len() + 4);
    k.extend_from_slice(row_key);
    k.extend_from_slice(&n.to_be_bytes());
    k
}

/// The reference stored in place of `row`, cut into chunks of `size` bytes.
pub fn reference(row: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(REFERENCE_LEN);
    out.extend_from_slice(&MARK);
    out.extend_from_slice(&(row.len() as u64).to_le_bytes());
    out.extend_from_slice(&(size as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(row).to_le_bytes());
    out
}

/// How many chunks the stored row value `stored` has (0 if it is stored whole).
pub fn chunks_of(stored: &[u8]) -> Result<u32, CodecError> {
    if !is_reference(stored) {
        return Ok(0);
    }
    let r = read_reference(stored)?;
    Ok(chunks_for(r.len, r.size))
}

/// Whether a stored row value is a reference to chunks.
pub fn is_reference(stored: &[u8]) -> bool {
    stored.starts_with(&MARK)
}

/// The row's whole encoding: `stored` itself, or, if it is a reference, its chunks read
/// from `source` (found in `chunks`, the chunk subtable of table `table`, if it has one)
/// and checked against the reference's length and checksum.
pub fn whole<'a>(
    source: &dyn ChunkSource,
    chunks: Option<&Subtable>,
    table: &str,
    row_key: &[u8],
    stored: &'a [u8],
) -> Result<Cow<'a, [u8]>> {
    if !is_reference(stored) {
        return Ok(Cow::Borrowed(stored));
    }
    let damaged = |source| SqlError::Damaged {
        what: format!("row in table {table:?}"),
        source,
    };
    let Reference { len, size, crc } = read_reference(stored).map_err(damaged)?;
    let invalid = |reason| {
        damaged(CodecError::Invalid {
            what: "row stored out of line",
            reason,
        })
    };
    let chunks = chunks.ok_or_else(|| invalid("the table has no chunks".into()))?;
    let mut row = Vec::with_capacity(len.min(64 * MAX_CHUNK));
    for n in 0..chunks_for(len, size) {
        let part = source
            .chunk(chunks, &chunk_key(row_key, n))?
            .ok_or_else(|| invalid(format!("chunk {n} is missing")))?;
        let want = (len - row.len()).min(size);
        if part.len() != want {
            let reason = format!("chunk {n} holds {} bytes, not {want}", part.len());
            return Err(invalid(reason));
        }
        row.extend_from_slice(&part);
    }
    if crc32fast::hash(&row) != crc {
        return Err(invalid("checksum mismatch".into()));
    }
    Ok(Cow::Owned(row))
}

/// A reference, as read back.
struct Reference {
    len: usize,
    size: usize,
    crc: u32,
}

/// The reference `stored`, checked: a length the chunk size does not hold, within
/// [`MAX_ROW`], and a chunk size within [`MIN_CHUNK`]..=[`MAX_CHUNK`].
fn read_reference(stored: &[u8]) -> Result<Reference, CodecError> {
    let mut r = Reader::new("row reference", stored);
    r.take::<2>()?;
    let len = u64::from_le_bytes(r.take()?);
    let size = u32::from_le_bytes(r.take()?) as usize;
    let crc = u32::from_le_bytes(r.take()?);
    r.finish()?;
    if !(MIN_CHUNK..=MAX_CHUNK).contains(&size) {
        return Err(r.invalid(format!("chunks of {size} bytes")));
    }
    if len > MAX_ROW || chunks_for(len as usize, size) == 0 {
        return Err(r.invalid(format!("{len} bytes in chunks of {size}")));
    }
    Ok(Reference {
        len: len as usize,
        size,
        crc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_rows_stay_whole() {
        assert_eq!(chunks_for(0, MIN_CHUNK), 0);
        assert_eq!(chunks_for(MAX_CHUNK, MAX_CHUNK), 0);
        assert_eq!(chunks_for(MAX_CHUNK + 1, MAX_CHUNK), 2);
        assert_eq!(chunks_for(3 * MIN_CHUNK, MIN_CHUNK), 3);
        assert_eq!(chunk_size(MIN_CHUNK - 1), None);
        assert_eq!(chunk_size(1 << 20), Some(MAX_CHUNK));
        // A row's encoding starts with its column count, at most 1600: never the mark.
        assert!(!is_reference(&1600u16.to_le_bytes()));
        assert_eq!(chunks_of(&1600u16.to_le_bytes()), Ok(0));
    }

    #[test]
    fn damaged_references_are_refused() {
        let good = reference(&[7; 3000], MIN_CHUNK);
        assert_eq!(chunks_of(&good), Ok(3));
        // Cut, too long, a chunk size out of range, a length the chunk size holds.
        assert!(chunks_of(&good[..good.len() - 1]).is_err());
        assert!(chunks_of(&[good.as_slice(), &[0]].concat()).is_err());
        assert!(chunks_of(&reference(&[7; 3000], 512)).is_err());
        assert!(chunks_of(&reference(&[7; 3000], MAX_CHUNK + 1)).is_err());
        assert!(chunks_of(&reference(&[7; 100], MIN_CHUNK)).is_err());
        let mut huge = good.clone();
        huge[2..10].copy_from_slice(&(MAX_ROW + 1).to_le_bytes());
        assert!(chunks_of(&huge).is_err());
    }

    proptest! {
        #[test]
        fn references_keep_length_and_checksum(row in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let r = reference(&row, MIN_CHUNK);
            prop_assert_eq!(r.len(), REFERENCE_LEN);
            prop_assert!(is_reference(&r));
            prop_assert_eq!(u64::from_le_bytes(r[2..10].try_into().unwrap()), row.len() as u64);
            prop_assert_eq!(u32::from_le_bytes(r[10..14].try_into().unwrap()), MIN_CHUNK as u32);
            prop_assert_eq!(u32::from_le_bytes(r[14..].try_into().unwrap()), crc32fast::hash(&row));
        }

        /// Any bytes given as a reference are a count or an error, never a panic.
        #[test]
        fn any_bytes_read_as_a_reference_do_not_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..24),
        ) {
            let _ = chunks_of(&[MARK.as_slice(), &tail].concat());
        }

        #[test]
        fn chunk_keys_sort_by_row_then_number(
            a in proptest::collection::vec(any::<u8>(), 0..8),
            n in any::<u32>(),
            m in any::<u32>(),
        ) {
            prop_assert_eq!(chunk_key(&a, n).cmp(&chunk_key(&a, m)), n.cmp(&m));
            prop_assert!(chunk_key(&a, n).starts_with(&a));
        }
    }
}
