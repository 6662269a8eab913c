//! Whether an SST file is the one the manifest names: a table opened for a database must
//! have been written by that database (its pool's uuid), under the number and for the
//! subtable the manifest records, and hold what the manifest's record says it holds.
//! Any file can be renamed into the SST directory; checking its own bytes (crcs) says it
//! is undamaged, and only this check says it belongs there.

use pmdb_pmem::format_uuid;

use super::table::Sst;
use crate::error::{DbError, Result};
use crate::format::manifest::FileMeta;

/// Refuses `sst` unless it is the file `meta` records for `database`. Tables written
/// before identities existed (properties version 1) are held to the manifest's record
/// alone: size, entries, sequence range and key range.
pub(crate) fn check_place(sst: &Sst, meta: &FileMeta, database: &[u8; 16]) -> Result<()> {
    let mut differences = Vec::new();
    let p = sst.properties();
    if let Some(id) = p.identity {
        if id.database != *database {
            differences.push(format!(
                "it was written by database {}, not this one ({})",
                format_uuid(&id.database),
                format_uuid(database)
            ));
        }
        if (id.number, id.subtable) != (meta.number, meta.subtable) {
            differences.push(format!(
                "it was written as SST {} of subtable {}, the manifest names SST {} of \
                 subtable {}",
                id.number, id.subtable, meta.number, meta.subtable
            ));
        }
    }
    if sst.file_len() != meta.size {
        differences.push(format!(
            "it holds {} bytes, the manifest recorded {}",
            sst.file_len(),
            meta.size
        ));
    }
    if p.entries != meta.entries {
        differences.push(format!(
            "it holds {} entries, the manifest recorded {}",
            p.entries, meta.entries
        ));
    }
    if (p.min_seq, p.max_seq) != (meta.min_seq, meta.max_seq) {
        differences.push(format!(
            "its sequence numbers are {}..={}, the manifest recorded {}..={}",
            p.min_seq, p.max_seq, meta.min_seq, meta.max_seq
        ));
    }
    if (&p.smallest, &p.largest) != (&meta.smallest, &meta.largest) {
        differences.push("its key range is not the one the manifest recorded".into());
    }
    if differences.is_empty() {
        return Ok(());
    }
    Err(DbError::Corrupt(format!(
        "{}: not the SST file the manifest names ({}); nothing was read from it",
        sst.name(),
        differences.join("; ")
    )))
}
