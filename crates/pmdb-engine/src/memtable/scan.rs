//! The recovery side of a memtable: its zones in order from their headers, the header
//! of its last published part, and the scan of one zone into a sorted run of index
//! entries, with the damage it meets reported, never trusted.

use pmdb_pmem::{PmOff, Pool};

use super::{Memtable, at_off};
use crate::art::{BulkEntry, Version, sort_run};
use crate::catalog::MemtableDesc;
use crate::error::{DbError, Result};
use crate::format::chunk::{CHUNK_HEADER, ChunkHeader, ChunkKind};
use crate::format::head::HeadWord;
use crate::format::record;
use crate::format::zone::{ZONE_HEADER, ZoneHeader};
use crate::index::PoolKeys;
use crate::keys;

/// What scanning one zone at recovery found.
#[derive(Default)]
pub(crate) struct ZoneScan {
    /// The zone's records, for the index build.
    pub entries: Vec<BulkEntry>,
    pub records: u64,
    pub bytes: u64,
    pub max_seq: u64,
    pub max_lsn: u64,
    pub damage: Vec<String>,
    /// Whether records of the zone could not be read (a damaged head word alone loses
    /// none).
    pub lost: bool,
}

impl Memtable {
    /// The memtable's zones in order, read from their headers.
    pub fn load_zones(pool: &Pool, desc: &MemtableDesc) -> Result<Vec<PmOff>> {
        let mut zones = Vec::new();
        for zone in pool.zones_of(desc.owner) {
            let damaged = |why: String| {
                DbError::Corrupt(format!(
                    "zone {zone} of memtable {} has a damaged header: {why}",
                    desc.id
                ))
            };
            let header = ZoneHeader::decode(pool.read(zone, ZONE_HEADER)?)
                .map_err(|e| damaged(e.to_string()))?;
            if header.memtable != desc.id {
                return Err(damaged(format!("it names memtable {}", header.memtable)));
            }
            zones.push((header.index, zone));
        }
        zones.sort_unstable();
        for (i, (index, zone)) in zones.iter().enumerate() {
            if *index as usize != i {
                return Err(DbError::Corrupt(format!(
                    "memtable {} has zone {zone} at index {index}, expected {i}",
                    desc.id
                )));
            }
        }
        Ok(zones.into_iter().map(|(_, z)| z).collect())
    }

    /// The header of the last published part, if the head says there is one.
    pub fn last_part(&self, head: HeadWord) -> Result<Option<ChunkHeader>> {
        let Some(prev) = head.last_part() else {
            return Ok(None);
        };
        let log = self.log.lock();
        let z = (prev / self.zone_size) as usize;
        let zone = *log.zones.get(z).ok_or_else(|| {
            DbError::Corrupt(format!(
                "memtable {} head points past its zones",
                self.desc.id
            ))
        })?;
        let off = (prev % self.zone_size) as usize;
        let bytes = self.pool.read(at_off(zone, off), CHUNK_HEADER)?;
        let room = (self.zone_size as usize - off).saturating_sub(CHUNK_HEADER);
        ChunkHeader::decode(bytes, room).map(Some).map_err(|e| {
            DbError::Corrupt(format!(
                "memtable {}: header of the last published part is damaged ({e})",
                self.desc.id
            ))
        })
    }

    /// Zones to scan at recovery with the published log ending at `published`: every zone
    /// before the head's zone in full, the head's zone up to the head.
    pub fn scan_plan(&self, published: u64) -> Vec<(usize, PmOff, Option<usize>)> {
        let log = self.log.lock();
        if published == 0 {
            return Vec::new();
        }
        let head_zone = (published / self.zone_size) as usize;
        let head_off = (published % self.zone_size) as usize;
        log.zones
            .iter()
            .enumerate()
            .take(head_zone + 1)
            .map(|(z, &zone)| (z, zone, (z == head_zone).then_some(head_off)))
            .collect()
    }

    /// Scans one zone's chunks up to `end` (or to a zone-end chunk) and returns the index
    /// entries of every record found, in log order. Damaged chunks are reported and skipped
    /// where their length can be trusted; a damaged chunk header ends the zone.
    pub fn scan_zone(&self, z: usize, zone: PmOff, end: Option<usize>) -> ZoneScan {
        let zs = self.zone_size as usize;
        let limit = end.unwrap_or(zs);
        let mut scan = ZoneScan::default();
        let mut entries: Vec<BulkEntry> = Vec::new();
        let mut off = ZONE_HEADER;
        while off < limit && zs - off >= CHUNK_HEADER {
            let header = match self.pool.read(at_off(zone, off), CHUNK_HEADER) {
                Ok(bytes) => {
                    ChunkHeader::decode(bytes, zs - off - CHUNK_HEADER).map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            let h = match header {
                Ok(h) => h,
                Err(why) => {
                    scan.lost = true;
                    scan.damage.push(format!(
                        "memtable {} zone {z} offset {off}: damaged chunk header ({why}); the rest of the zone is skipped",
                        self.desc.id
                    ));
                    break;
                }
            };
            scan.max_lsn = scan.max_lsn.max(h.lsn);
            if h.kind == ChunkKind::ZoneEnd {
                if end.is_some() {
                    scan.damage.push(format!(
                        "memtable {}: its head word ends the log at offset {limit} of zone {z}, \
                         past the zone's end at {off}; the head word is damaged and the \
                         memtable takes no more writes",
                        self.desc.id
                    ));
                }
                break;
            }
            let len = h.payload_len as usize;
            let payload = match self.pool.read(at_off(zone, off + CHUNK_HEADER), len) {
                Ok(p) if crc32fast::hash(p) == h.payload_crc => p,
                _ => {
                    scan.lost = true;
                    scan.damage.push(format!(
                        "memtable {} zone {z} offset {off}: chunk of {} records fails its crc; skipped",
                        self.desc.id, h.records
                    ));
                    off += CHUNK_HEADER + len;
                    continue;
                }
            };
            // Decoding bounded the count by the payload just read.
            entries.reserve(h.records as usize);
            let mut at = 0;
            let mut found = 0u64;
            while at < payload.len() {
                let r = match record::decode(&payload[at..]) {
                    Ok(r) => r,
                    Err(e) => {
                        scan.lost = true;
                        scan.damage.push(format!(
                            "memtable {} zone {z} offset {off}: undecodable record ({e})",
                            self.desc.id
                        ));
                        break;
                    }
                };
                let version = Version {
                    tag: keys::tag(r.seq, r.kind),
                    rec: at_off(zone, off + CHUNK_HEADER + at).to_raw(),
                };
                entries.push(BulkEntry::new(r.key, version));
                scan.records += 1;
                scan.bytes += r.len as u64;
                scan.max_seq = scan.max_seq.max(r.seq);
                at += r.len;
                found += 1;
            }
            // Header and payload each pass their crc yet disagree, which no writer does:
            // reported, which seals the memtable; the records that decoded are kept.
            if found != u64::from(h.records) {
                scan.damage.push(format!(
                    "memtable {} zone {z} offset {off}: chunk header counts {} records, its payload holds {found}",
                    self.desc.id, h.records
                ));
            }
            off += CHUNK_HEADER + len;
        }
        // The head word is outside its slot's crc (every commit rewrites it), so it is
        // held to the log instead: the published log ends where a chunk ends. Appending
        // at a head inside a chunk would overwrite acknowledged records.
        if end.is_some() && off > limit {
            scan.damage.push(format!(
                "memtable {}: its head word ends the log at offset {limit} of zone {z}, inside \
                 the chunk that ends at {off}; the head word is damaged and the memtable takes \
                 no more writes",
                self.desc.id
            ));
        }
        // A sorted run per zone, sorted here in parallel, makes the index build a merge.
        if let Err(e) = sort_run(&PoolKeys(&self.pool), &mut entries) {
            scan.lost = true;
            scan.damage.push(format!(
                "memtable {} zone {z}: its records could not be sorted ({e})",
                self.desc.id
            ));
        }
        scan.entries = entries;
        scan
    }
}
