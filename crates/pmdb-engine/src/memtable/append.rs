//! The append side of a memtable, used by the commit leader: a part of a commit group
//! becomes chunks in the memtable's zones (a new zone allocated, its header persisted,
//! when the current one is full). Nothing is flushed or published here.

use std::sync::atomic::Ordering;

use pmdb_pmem::PmOff;
use smallvec::SmallVec;

use super::{Log, Memtable, at_off};
use crate::art::Version;
use crate::error::{DbError, Result};
use crate::format::chunk::{CHUNK_HEADER, ChunkHeader, ChunkKind};
use crate::format::head::{HALF_MASK, HeadWord};
use crate::format::record::{self, Kind};
use crate::format::zone::{ZONE_HEADER, ZoneHeader};
use crate::keys;

/// A record handed to the commit pipeline.
pub(crate) struct RecIn<'a> {
    pub seq: u64,
    pub kind: Kind,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// What appending one part produced: its bounds, the ranges to persist and each
/// record's version (where it landed), ready for the index.
pub(crate) struct Appended {
    pub start: u64,
    pub end: u64,
    pub ranges: SmallVec<[(PmOff, usize); 2]>,
    pub versions: Vec<Version>,
    /// Bytes of the records appended, as stored (chunk and zone headers excluded).
    pub record_bytes: u64,
}

impl Appended {
    /// The head word that publishes the part.
    pub fn head(&self) -> HeadWord {
        HeadWord {
            start: self.start,
            end: self.end,
        }
    }
}

impl Memtable {
    /// Moves a position past a zone header, or to the next zone when no chunk header
    /// fits in what is left of the current one.
    fn normalize(&self, pos: u64) -> u64 {
        let zs = self.zone_size;
        let (z, off) = (pos / zs, pos % zs);
        if off < ZONE_HEADER as u64 {
            z * zs + ZONE_HEADER as u64
        } else if zs - off < CHUNK_HEADER as u64 {
            (z + 1) * zs + ZONE_HEADER as u64
        } else {
            pos
        }
    }

    /// Appends one part of a commit group as chunks (with a zone-end chunk where a
    /// record does not fit in the rest of a zone). Nothing is published or flushed here.
    pub fn append_part(
        &self,
        lsn: u64,
        nparts: u32,
        recs: &[RecIn<'_>],
        buf: &mut Vec<u8>,
    ) -> Result<Appended> {
        let mut log = self.log.lock();
        let zs = self.zone_size as usize;
        let start = self.normalize(log.published);
        let mut pos = start;
        let mut out = Appended {
            start,
            end: start,
            ranges: SmallVec::new(),
            versions: Vec::with_capacity(recs.len()),
            record_bytes: 0,
        };
        let mut i = 0;
        while i < recs.len() {
            let z = (pos / self.zone_size) as usize;
            let off = (pos % self.zone_size) as usize;
            let zone = self.zone(&mut log, z)?;
            let avail = zs - off - CHUNK_HEADER;
            buf.clear();
            let first = i;
            while i < recs.len() {
                let r = &recs[i];
                let len = record::record_len(r.key.len(), r.value.len());
                if buf.len() + len > avail {
                    break;
                }
                let at = buf.len();
                buf.resize(at + len, 0);
                record::encode(&mut buf[at..], r.seq, r.kind, r.key, r.value);
                out.versions.push(Version {
                    tag: keys::tag(r.seq, r.kind),
                    rec: at_off(zone, off + CHUNK_HEADER + at).to_raw(),
                });
                out.record_bytes += len as u64;
                i += 1;
            }
            let chunk_at = at_off(zone, off);
            if i == first {
                if off == ZONE_HEADER {
                    return Err(DbError::ValueTooLarge {
                        len: recs[i].value.len(),
                        max: avail,
                    });
                }
                let end = ChunkHeader {
                    kind: ChunkKind::ZoneEnd,
                    lsn,
                    nparts,
                    payload_len: 0,
                    first_seq: recs[i].seq,
                    records: 0,
                    payload_crc: 0,
                };
                self.pool.write(chunk_at, &end.encode())?;
                out.ranges.push((chunk_at, CHUNK_HEADER));
                pos = (z as u64 + 1) * self.zone_size + ZONE_HEADER as u64;
                continue;
            }
            let next = self.normalize(pos + (CHUNK_HEADER + buf.len()) as u64);
            if next > HALF_MASK {
                // Validation keeps each batch below this; a group of many is refused whole.
                return Err(DbError::BatchTooLarge {
                    bytes: next - start,
                    max: HALF_MASK - start,
                });
            }
            let header = ChunkHeader {
                kind: ChunkKind::Data,
                lsn,
                nparts,
                payload_len: buf.len() as u32,
                first_seq: recs[first].seq,
                records: (i - first) as u32,
                payload_crc: crc32fast::hash(buf),
            };
            self.pool.write(at_off(zone, off + CHUNK_HEADER), buf)?;
            self.pool.write(chunk_at, &header.encode())?;
            out.ranges.push((chunk_at, CHUNK_HEADER + buf.len()));
            pos = next;
        }
        out.end = pos;
        Ok(out)
    }

    /// Records that a part of `records` records (`record_bytes` bytes of them) ending at
    /// `end` is published and indexed.
    pub fn set_published(&self, end: u64, records: u64, record_bytes: u64) {
        self.log.lock().published = end;
        self.records.fetch_add(records, Ordering::Relaxed);
        self.record_bytes.fetch_add(record_bytes, Ordering::Relaxed);
    }

    /// Zone `z` of the memtable, allocating it (header persisted before the commit) if it
    /// is the next one.
    fn zone(&self, log: &mut Log, z: usize) -> Result<PmOff> {
        if let Some(&zone) = log.zones.get(z) {
            return Ok(zone);
        }
        if z != log.zones.len() {
            return Err(DbError::Corrupt(format!(
                "memtable {} would append to zone {z} but has {} zones",
                self.desc.id,
                log.zones.len()
            )));
        }
        let grant = self.pool.alloc_zone(self.desc.owner)?;
        let header = ZoneHeader {
            memtable: self.desc.id,
            index: z as u32,
        };
        self.pool.write(grant.off(), &header.encode())?;
        self.pool.persist(grant.off(), ZONE_HEADER)?;
        let zone = grant.commit()?;
        log.zones.push(zone);
        Ok(zone)
    }
}
