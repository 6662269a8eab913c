//! The manifest: a log of version edits in the SST directory, and the CURRENT file naming
//! the live manifest.
//!
//! A manifest file is the magic `PMDBMAN4`, then records, each `length (u32) | crc32
//! (u32) | edit`; the crc covers the length and the edit. An edit is its number (u64,
//! one more than the previous edit's) and a list of changes, each a tag byte and its
//! fields. CURRENT holds `MANIFEST-<number>` and a newline.
//!
//! Besides the version, the manifest keeps the database's cumulative write totals
//! ([`WriteTotals`]): each flush and compaction edit adds what it wrote, so the totals
//! outlive restarts.

use super::{FormatError, need, u32_at};

/// First bytes of every manifest file this build writes.
pub(crate) const MANIFEST_MAGIC: &[u8; 8] = b"PMDBMAN4";
/// First bytes of a manifest written before level 0 existed (files of level 1 and
/// deeper only): read, never written. The magic changed so that a build that knows no
/// level 0 refuses a newer manifest rather than take an edit adding a level-0 file for a
/// write torn by a crash, and remove the file as unnamed.
pub(crate) const MANIFEST_MAGIC_V3: &[u8; 8] = b"PMDBMAN3";
/// First bytes of a manifest written before manifests named their database (change tag
/// 10): read, never written. The magic changed for the reason `MANIFEST_MAGIC_V1`'s did.
pub(crate) const MANIFEST_MAGIC_V2: &[u8; 8] = b"PMDBMAN2";
/// First bytes of a manifest written before the write totals (change tag 9) existed:
/// read (its totals start at zero), never written. The magic changed so that a build
/// that knows no tag 9 refuses a newer manifest rather than take its last edit for a
/// write torn by a crash.
pub(crate) const MANIFEST_MAGIC_V1: &[u8; 8] = b"PMDBMAN1";
/// Bytes before a record's edit.
pub(crate) const RECORD_HEADER: usize = 8;
/// Largest edit a record may hold: a snapshot of tens of thousands of files fits.
pub(crate) const MAX_EDIT: usize = 64 << 20;
/// The deepest level a subtable has (L0..=MAX_LEVEL).
pub(crate) const MAX_LEVEL: u8 = 7;
/// Longest internal key an SST bound may be (a 64 KiB key and its tag).
const MAX_BOUND: usize = (64 << 10) + 8;

/// One SST file as the manifest describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileMeta {
    pub number: u64,
    pub subtable: u32,
    /// 0..=MAX_LEVEL; level 0 holds flushed generations, one file each, overlapping.
    pub level: u8,
    pub size: u64,
    pub entries: u64,
    pub min_seq: u64,
    pub max_seq: u64,
    /// The oldest sequence number a reader could read at when the file was written: it
    /// holds every version such a reader needs, older versions may have been dropped.
    pub horizon: u64,
    /// Smallest and largest internal keys.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

/// Bytes the database has moved down the tiers since it was created: what flushes took
/// out of PM, and what flushes and compactions wrote to SST files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WriteTotals {
    /// Bytes of the memtable records (as the records are stored in PM) of the global-index
    /// generations flushed to SSTs.
    pub flushed_record_bytes: u64,
    /// Bytes of the SST files flushes wrote.
    pub flush_bytes: u64,
    /// Bytes of the SST files level compactions wrote (a trivial move writes none).
    pub compaction_bytes: u64,
}

impl WriteTotals {
    /// These totals with `more` added; `None` if a total would overflow.
    pub fn checked_add(self, more: WriteTotals) -> Option<WriteTotals> {
        Some(WriteTotals {
            flushed_record_bytes: self
                .flushed_record_bytes
                .checked_add(more.flushed_record_bytes)?,
            flush_bytes: self.flush_bytes.checked_add(more.flush_bytes)?,
            compaction_bytes: self.compaction_bytes.checked_add(more.compaction_bytes)?,
        })
    }
}

/// One change of a version edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// Numbers below this one are taken by files.
    NextFile(u64),
    /// Every sequence number in an SST is at most this.
    LastSeq(u64),
    /// Memtable ids below this one were handed out (never reused, so a flushed bound
    /// never covers a new memtable).
    NextMemtable(u64),
    /// Subtable ids below this one were handed out.
    NextSubtable(u32),
    AddFile(FileMeta),
    DeleteFile {
        subtable: u32,
        level: u8,
        number: u64,
    },
    /// The subtable's memtables with ids up to this one are wholly in SSTs: their PM may
    /// be freed (recovery frees what is left of them).
    Flushed {
        subtable: u32,
        memtable: u64,
    },
    /// The subtable is gone: every file of it is deleted with this edit.
    DropSubtable {
        subtable: u32,
    },
    /// Adds to the cumulative write totals: a flush's or compaction's own bytes, or, in
    /// the edit that opens a fresh manifest, the totals so far.
    Written(WriteTotals),
    /// The uuid of the pool whose database the manifest belongs to; in the edit that
    /// opens a manifest.
    Database([u8; 16]),
}

/// A version edit: applied whole or not at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Edit {
    pub number: u64,
    pub changes: Vec<Change>,
}

const T_NEXT_FILE: u8 = 1;
const T_LAST_SEQ: u8 = 2;
const T_NEXT_MEMTABLE: u8 = 3;
const T_NEXT_SUBTABLE: u8 = 4;
const T_ADD_FILE: u8 = 5;
const T_DELETE_FILE: u8 = 6;
const T_FLUSHED: u8 = 7;
const T_DROP_SUBTABLE: u8 = 8;
const T_WRITTEN: u8 = 9;
const T_DATABASE: u8 = 10;

impl Edit {
    /// The record holding this edit: header and edit.
    pub fn encode_record(&self) -> Vec<u8> {
        let mut b = vec![0u8; RECORD_HEADER];
        b.extend_from_slice(&self.number.to_le_bytes());
        for c in &self.changes {
            match c {
                Change::NextFile(n) => put(&mut b, T_NEXT_FILE, &n.to_le_bytes()),
                Change::LastSeq(n) => put(&mut b, T_LAST_SEQ, &n.to_le_bytes()),
                Change::NextMemtable(n) => put(&mut b, T_NEXT_MEMTABLE, &n.to_le_bytes()),
                Change::NextSubtable(n) => put(&mut b, T_NEXT_SUBTABLE, &n.to_le_bytes()),
                Change::AddFile(f) => {
                    b.push(T_ADD_FILE);
                    b.extend_from_slice(&f.subtable.to_le_bytes());
                    b.push(f.level);
                    for w in [f.number, f.size, f.entries, f.min_seq, f.max_seq, f.horizon] {
                        b.extend_from_slice(&w.to_le_bytes());
                    }
                    for key in [&f.smallest, &f.largest] {
                        b.extend_from_slice(&(key.len() as u32).to_le_bytes());
                        b.extend_from_slice(key);
                    }
                }
                Change::DeleteFile {
                    subtable,
                    level,
                    number,
                } => {
                    b.push(T_DELETE_FILE);
                    b.extend_from_slice(&subtable.to_le_bytes());
                    b.push(*level);
                    b.extend_from_slice(&number.to_le_bytes());
                }
                Change::Flushed { subtable, memtable } => {
                    b.push(T_FLUSHED);
                    b.extend_from_slice(&subtable.to_le_bytes());
                    b.extend_from_slice(&memtable.to_le_bytes());
                }
                Change::DropSubtable { subtable } => {
                    put(&mut b, T_DROP_SUBTABLE, &subtable.to_le_bytes())
                }
                Change::Written(w) => {
                    b.push(T_WRITTEN);
                    for n in [w.flushed_record_bytes, w.flush_bytes, w.compaction_bytes] {
                        b.extend_from_slice(&n.to_le_bytes());
                    }
                }
                Change::Database(uuid) => put(&mut b, T_DATABASE, uuid),
            }
        }
        let len = (b.len() - RECORD_HEADER) as u32;
        b[0..4].copy_from_slice(&len.to_le_bytes());
        let crc = record_crc(len, &b[RECORD_HEADER..]);
        b[4..8].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes the record at the start of `bytes`; returns the edit and the record's
    /// length.
    pub fn decode_record(bytes: &[u8]) -> Result<(Edit, usize), FormatError> {
        need(bytes, RECORD_HEADER)?;
        let len = u32_at(bytes, 0) as usize;
        if len > MAX_EDIT {
            return Err(FormatError::Invalid("manifest record length"));
        }
        let end = RECORD_HEADER + len;
        need(bytes, end)?;
        let body = &bytes[RECORD_HEADER..end];
        if record_crc(len as u32, body) != u32_at(bytes, 4) {
            return Err(FormatError::Checksum);
        }
        Ok((decode_edit(body)?, end))
    }
}

fn put(b: &mut Vec<u8>, tag: u8, fields: &[u8]) {
    b.push(tag);
    b.extend_from_slice(fields);
}

fn record_crc(len: u32, body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len.to_le_bytes());
    h.update(body);
    h.finalize()
}

/// Checked reads from an edit's bytes.
struct Fields<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or(FormatError::Truncated {
                needed: (self.at as u64).saturating_add(n as u64),
                found: self.b.len() as u64,
            })?;
        let out = &self.b[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32_at(self.take(4)?, 0))
    }

    fn u64(&mut self) -> Result<u64, FormatError> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(w))
    }

    fn level(&mut self) -> Result<u8, FormatError> {
        let level = self.u8()?;
        if level > MAX_LEVEL {
            return Err(FormatError::Invalid("manifest level"));
        }
        Ok(level)
    }

    fn bound(&mut self) -> Result<Vec<u8>, FormatError> {
        let len = self.u32()? as usize;
        if !(9..=MAX_BOUND).contains(&len) {
            return Err(FormatError::Invalid("manifest key bound length"));
        }
        Ok(self.take(len)?.to_vec())
    }
}

fn decode_edit(body: &[u8]) -> Result<Edit, FormatError> {
    let mut f = Fields { b: body, at: 0 };
    let number = f.u64()?;
    let mut changes = Vec::new();
    while f.at < body.len() {
        let change = match f.u8()? {
            T_NEXT_FILE => Change::NextFile(f.u64()?),
            T_LAST_SEQ => Change::LastSeq(f.u64()?),
            T_NEXT_MEMTABLE => Change::NextMemtable(f.u64()?),
            T_NEXT_SUBTABLE => Change::NextSubtable(f.u32()?),
            T_ADD_FILE => {
                let subtable = f.u32()?;
                let level = f.level()?;
                let mut meta = FileMeta {
                    subtable,
                    level,
                    number: f.u64()?,
                    size: f.u64()?,
                    entries: f.u64()?,
                    min_seq: f.u64()?,
                    max_seq: f.u64()?,
                    horizon: f.u64()?,
                    smallest: Vec::new(),
                    largest: Vec::new(),
                };
                meta.smallest = f.bound()?;
                meta.largest = f.bound()?;
                if meta.min_seq > meta.max_seq {
                    return Err(FormatError::Invalid("manifest file seq range"));
                }
                if crate::keys::compare(&meta.smallest, &meta.largest).is_gt() {
                    return Err(FormatError::Invalid("manifest file key range"));
                }
                Change::AddFile(meta)
            }
            T_DELETE_FILE => Change::DeleteFile {
                subtable: f.u32()?,
                level: f.level()?,
                number: f.u64()?,
            },
            T_FLUSHED => Change::Flushed {
                subtable: f.u32()?,
                memtable: f.u64()?,
            },
            T_DROP_SUBTABLE => Change::DropSubtable { subtable: f.u32()? },
            T_WRITTEN => Change::Written(WriteTotals {
                flushed_record_bytes: f.u64()?,
                flush_bytes: f.u64()?,
                compaction_bytes: f.u64()?,
            }),
            T_DATABASE => Change::Database(f.take(16)?.try_into().expect("16 bytes")),
            _ => return Err(FormatError::Invalid("manifest change tag")),
        };
        changes.push(change);
    }
    Ok(Edit { number, changes })
}

/// The name of manifest file `number`.
pub(crate) fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// The contents of CURRENT naming manifest `number`.
pub(crate) fn encode_current(number: u64) -> Vec<u8> {
    format!("{}\n", manifest_name(number)).into_bytes()
}

/// The manifest number CURRENT names.
pub(crate) fn decode_current(bytes: &[u8]) -> Result<u64, FormatError> {
    let text = std::str::from_utf8(bytes).map_err(|_| FormatError::Invalid("CURRENT"))?;
    text.strip_suffix('\n')
        .and_then(|t| t.strip_prefix("MANIFEST-"))
        .filter(|n| !n.is_empty() && n.len() <= 20 && n.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
        .ok_or(FormatError::Invalid("CURRENT"))
}

/// Bits of a manifest mark's word that hold the edit number (the rest hold the file's).
const MARK_EDIT_BITS: u32 = 24;
/// Edits a manifest file takes before a fresh one is started, so the mark holds them.
pub(crate) const MARK_MAX_EDIT: u64 = (1 << MARK_EDIT_BITS) - 1;
const MARK_MAX_FILE: u64 = (1 << (64 - MARK_EDIT_BITS)) - 1;

/// How far the manifest is durable, kept in a root cell of the pool: the number of the
/// manifest file CURRENT names and of its last edit synced, published after the sync
/// and before the engine acts on the edit. An open holds the manifest it reads to it, so
/// a damaged last record or an older copy of the manifest is caught, not taken for a
/// write a crash tore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ManifestMark {
    pub file: u64,
    pub edit: u64,
}

impl ManifestMark {
    /// The cell's word: the file number in the high 40 bits, the edit in the low 24.
    pub fn pack(self) -> Result<u64, FormatError> {
        // A manifest holds one edit at least: the version it starts from.
        if self.edit == 0 || self.file > MARK_MAX_FILE || self.edit > MARK_MAX_EDIT {
            return Err(FormatError::Invalid("manifest mark out of range"));
        }
        Ok((self.file << MARK_EDIT_BITS) | self.edit)
    }

    pub fn unpack(word: u64) -> Result<ManifestMark, FormatError> {
        let mark = ManifestMark {
            file: word >> MARK_EDIT_BITS,
            edit: word & MARK_MAX_EDIT,
        };
        if mark.edit == 0 {
            return Err(FormatError::Invalid("manifest mark names no edit"));
        }
        Ok(mark)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::testing::{bit_flips, fuzz_config};
    use super::*;
    use crate::format::record::Kind;
    use crate::keys::IKey;

    fn edit() -> Edit {
        Edit {
            number: 7,
            changes: vec![
                Change::NextFile(12),
                Change::LastSeq(900),
                Change::NextMemtable(40),
                Change::NextSubtable(3),
                Change::AddFile(FileMeta {
                    number: 11,
                    subtable: 2,
                    level: 1,
                    size: 4096,
                    entries: 30,
                    min_seq: 5,
                    max_seq: 800,
                    horizon: 700,
                    smallest: IKey::new(b"apple", 9, Kind::Put).as_slice().to_vec(),
                    largest: IKey::new(b"pear", 5, Kind::Delete).as_slice().to_vec(),
                }),
                Change::DeleteFile {
                    subtable: 2,
                    level: 2,
                    number: 4,
                },
                Change::Flushed {
                    subtable: 2,
                    memtable: 39,
                },
                Change::DropSubtable { subtable: 1 },
                Change::Written(WriteTotals {
                    flushed_record_bytes: 1 << 20,
                    flush_bytes: 700_000,
                    compaction_bytes: u64::MAX,
                }),
                Change::Database(*b"0123456789abcdef"),
            ],
        }
    }

    #[test]
    fn records_round_trip() {
        let rec = edit().encode_record();
        assert_eq!(Edit::decode_record(&rec), Ok((edit(), rec.len())));
        let mut two = rec.clone();
        two.extend_from_slice(&Edit::default().encode_record());
        assert_eq!(Edit::decode_record(&two).unwrap().1, rec.len());
    }

    #[test]
    fn every_bit_flip_is_detected() {
        let rec = edit().encode_record();
        for (bit, d) in bit_flips(&rec) {
            assert!(Edit::decode_record(&d).is_err(), "flip of bit {bit}");
        }
        for cut in 0..rec.len() {
            assert!(Edit::decode_record(&rec[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn current_round_trips_and_refuses_anything_else() {
        assert_eq!(decode_current(&encode_current(42)), Ok(42));
        for bad in [
            &b"MANIFEST-42"[..],
            b"MANIFEST-\n",
            b"MANIFEST-4x\n",
            b"manifest-1\n",
            b"",
            b"MANIFEST-99999999999999999999999\n",
        ] {
            assert!(decode_current(bad).is_err(), "{bad:?}");
        }
    }

    proptest! {
        #![proptest_config(fuzz_config())]

        #[test]
        fn any_word_is_a_mark_that_packs_back_or_refused(word in any::<u64>()) {
            if let Ok(mark) = ManifestMark::unpack(word) {
                prop_assert!(mark.edit >= 1);
                prop_assert_eq!(mark.pack(), Ok(word));
            } else {
                prop_assert_eq!(word & MARK_MAX_EDIT, 0);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = Edit::decode_record(&bytes);
            let _ = decode_current(&bytes);
        }

        /// Arbitrary edit bodies behind a valid header reach every check after it.
        #[test]
        fn arbitrary_sealed_edits_never_panic(body in prop::collection::vec(any::<u8>(), 0..200)) {
            let mut rec = vec![0u8; RECORD_HEADER];
            rec[0..4].copy_from_slice(&(body.len() as u32).to_le_bytes());
            rec[4..8].copy_from_slice(&record_crc(body.len() as u32, &body).to_le_bytes());
            rec.extend_from_slice(&body);
            if let Ok((e, len)) = Edit::decode_record(&rec) {
                prop_assert_eq!(len, rec.len());
                prop_assert_eq!(Edit::decode_record(&e.encode_record()).unwrap().0, e);
            }
        }
    }

    #[test]
    fn manifest_marks_round_trip_and_refuse_what_does_not_fit() {
        for mark in [
            ManifestMark { file: 0, edit: 1 },
            ManifestMark {
                file: 54,
                edit: 1234,
            },
            ManifestMark {
                file: MARK_MAX_FILE,
                edit: MARK_MAX_EDIT,
            },
        ] {
            assert_eq!(ManifestMark::unpack(mark.pack().unwrap()), Ok(mark));
        }
        assert!(ManifestMark { file: 3, edit: 0 }.pack().is_err());
        assert!(
            ManifestMark {
                file: 1,
                edit: MARK_MAX_EDIT + 1
            }
            .pack()
            .is_err()
        );
        assert!(ManifestMark::unpack(7 << 24).is_err());
    }
}
