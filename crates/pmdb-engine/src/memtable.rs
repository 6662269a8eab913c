//! The semi-persistent memtable: records appended to PM zones in chunks, indexed in DRAM
//! by an ordered map from internal key (user key, seq, kind) to the record's `PmOff`. The
//! index is rebuilt from the zones at open.
//!
//! The index is a B-tree with keys stored inline in its nodes, behind a reader-writer
//! lock that the commit leader takes once per group. Measured against a lock-free skip
//! list and scc's TreeIndex at 1 M and 10 M keys (docs/benchmarks/index.md), it does the
//! fewest dependent DRAM loads per lookup, which dominate on this hardware. Once the
//! memtable is frozen and every group appended to it is indexed, the index moves out
//! from under its lock: nothing inserts any more, so readers take no lock at all.
//!
//! A position inside a memtable is `zone index * zone size + offset`; each zone starts
//! with a zone header, then chunks of records. The memtable's head word holds the start
//! of the last published part and the end of the published log (`format` has all three).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use pmdb_pmem::{PmOff, Pool};

use crate::catalog::MemtableDesc;
use crate::error::{DbError, Result};
use crate::format::chunk::{CHUNK_HEADER, ChunkHeader, ChunkKind};
use crate::format::head::HeadWord;
use crate::format::record::{self, Kind};
use crate::format::zone::{ZONE_HEADER, ZoneHeader};
use crate::keys::IKey;

type Index = BTreeMap<IKey, PmOff>;

/// Index entries: internal key and record address.
pub(crate) type Entries = Vec<(IKey, PmOff)>;

/// A record handed to the commit pipeline.
pub(crate) struct RecIn<'a> {
    pub seq: u64,
    pub kind: Kind,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// What appending one part produced: its bounds, the ranges to persist and where each
/// record landed.
pub(crate) struct Appended {
    pub start: u64,
    pub end: u64,
    pub ranges: Vec<(PmOff, usize)>,
    pub offs: Vec<PmOff>,
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

/// The append side of a memtable, used by the commit leader and by recovery only.
struct Log {
    zones: Vec<PmOff>,
    /// End of the published log (0: empty).
    published: u64,
}

pub(crate) struct Memtable {
    pub desc: MemtableDesc,
    pool: Arc<Pool>,
    /// The index while the memtable may still take inserts.
    index: RwLock<Index>,
    /// The index once it is complete; set under `index`'s write lock, as that is emptied.
    frozen_index: OnceLock<Index>,
    zone_size: u64,
    log: Mutex<Log>,
    records: AtomicU64,
    /// Set when recovery found the memtable damaged: it is read, never appended to.
    sealed: AtomicBool,
    /// Set once the catalog no longer names the memtable: its zones go back to the pool
    /// when the last reader holding it lets go (see `Drop`).
    retired: AtomicBool,
}

/// What scanning one zone at recovery found.
#[derive(Default)]
pub(crate) struct ZoneScan {
    /// The zone's index entries, sorted by internal key.
    pub entries: Entries,
    pub records: u64,
    pub bytes: u64,
    pub max_seq: u64,
    pub max_lsn: u64,
    pub damage: Vec<String>,
}

impl Memtable {
    pub fn new(desc: MemtableDesc, pool: Arc<Pool>, zones: Vec<PmOff>, published: u64) -> Memtable {
        Memtable {
            desc,
            zone_size: pool.zone_size(),
            pool,
            index: RwLock::new(BTreeMap::new()),
            frozen_index: OnceLock::new(),
            log: Mutex::new(Log { zones, published }),
            records: AtomicU64::new(0),
            sealed: AtomicBool::new(false),
            retired: AtomicBool::new(false),
        }
    }

    /// The pool the memtable's records live in.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Marks the memtable as no longer named by the catalog: its PM is released once the
    /// last `Arc` to it — a read view, a scan, a borrowed value — is dropped.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Release);
    }

    /// Stops appends to this memtable (its data stays readable).
    pub fn seal(&self) {
        self.sealed.store(true, Ordering::Release);
    }

    pub fn is_sealed(&self) -> bool {
        self.sealed.load(Ordering::Acquire)
    }

    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Bytes of log published so far (the freeze criterion).
    pub fn used(&self) -> u64 {
        self.log.lock().published
    }

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
        pool: &Pool,
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
            ranges: Vec::new(),
            offs: Vec::with_capacity(recs.len()),
        };
        let mut i = 0;
        while i < recs.len() {
            let z = (pos / self.zone_size) as usize;
            let off = (pos % self.zone_size) as usize;
            let zone = self.zone(pool, &mut log, z)?;
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
                out.offs.push(at_off(zone, off + CHUNK_HEADER + at));
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
                pool.write(chunk_at, &end.encode())?;
                out.ranges.push((chunk_at, CHUNK_HEADER));
                pos = (z as u64 + 1) * self.zone_size + ZONE_HEADER as u64;
                continue;
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
            pool.write(at_off(zone, off + CHUNK_HEADER), buf)?;
            pool.write(chunk_at, &header.encode())?;
            out.ranges.push((chunk_at, CHUNK_HEADER + buf.len()));
            pos = self.normalize(pos + (CHUNK_HEADER + buf.len()) as u64);
        }
        out.end = pos;
        Ok(out)
    }

    /// Records that a part ending at `end` is published and indexed.
    pub fn set_published(&self, end: u64, records: u64) {
        self.log.lock().published = end;
        self.records.fetch_add(records, Ordering::Relaxed);
    }

    /// Zone `z` of the memtable, allocating it (header persisted before the commit) if it
    /// is the next one.
    fn zone(&self, pool: &Pool, log: &mut Log, z: usize) -> Result<PmOff> {
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
        let grant = pool.alloc_zone(self.desc.owner)?;
        let header = ZoneHeader {
            memtable: self.desc.id,
            index: z as u32,
        };
        pool.write(grant.off(), &header.encode())?;
        pool.persist(grant.off(), ZONE_HEADER)?;
        let zone = grant.commit()?;
        log.zones.push(zone);
        Ok(zone)
    }

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
    pub fn last_part(&self, pool: &Pool, head: HeadWord) -> Result<Option<ChunkHeader>> {
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
        let bytes = pool.read(at_off(zone, off), CHUNK_HEADER)?;
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
    /// entries of every record found, sorted. Damaged chunks are reported and skipped
    /// where their length can be trusted; a damaged chunk header ends the zone.
    pub fn scan_zone(&self, pool: &Pool, z: usize, zone: PmOff, end: Option<usize>) -> ZoneScan {
        let zs = self.zone_size as usize;
        let limit = end.unwrap_or(zs);
        let mut scan = ZoneScan::default();
        let mut entries: Entries = Vec::new();
        let mut off = ZONE_HEADER;
        while off < limit && zs - off >= CHUNK_HEADER {
            let header = match pool.read(at_off(zone, off), CHUNK_HEADER) {
                Ok(bytes) => {
                    ChunkHeader::decode(bytes, zs - off - CHUNK_HEADER).map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            let h = match header {
                Ok(h) => h,
                Err(why) => {
                    scan.damage.push(format!(
                        "memtable {} zone {z} offset {off}: damaged chunk header ({why}); the rest of the zone is skipped",
                        self.desc.id
                    ));
                    break;
                }
            };
            scan.max_lsn = scan.max_lsn.max(h.lsn);
            if h.kind == ChunkKind::ZoneEnd {
                break;
            }
            let len = h.payload_len as usize;
            let payload = match pool.read(at_off(zone, off + CHUNK_HEADER), len) {
                Ok(p) if crc32fast::hash(p) == h.payload_crc => p,
                _ => {
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
                        scan.damage.push(format!(
                            "memtable {} zone {z} offset {off}: undecodable record ({e})",
                            self.desc.id
                        ));
                        break;
                    }
                };
                entries.push((
                    IKey::new(r.key, r.seq, r.kind),
                    at_off(zone, off + CHUNK_HEADER + at),
                ));
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
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        scan.entries = entries;
        scan
    }

    /// Builds the index at recovery from the zones' sorted runs (a bulk build, linear in
    /// the entries once the runs are merged).
    pub fn build_index(&self, runs: Vec<Entries>) {
        let mut all: Entries = runs.into_iter().flatten().collect();
        // A stable sort finds the sorted runs and merges them.
        all.sort_by(|a, b| a.0.cmp(&b.0));
        self.records.store(all.len() as u64, Ordering::Relaxed);
        *self.index.write() = all.into_iter().collect();
    }

    /// Indexes the records of a published part (one lock acquisition per part).
    pub fn index_part(&self, entries: impl Iterator<Item = (IKey, PmOff)>) {
        debug_assert!(
            self.frozen_index.get().is_none(),
            "memtable {} indexed after its index was frozen",
            self.desc.id
        );
        self.index.write().extend(entries);
    }

    /// Moves the index out from under its lock. Call it only once no insert can come any
    /// more: the memtable is frozen and every group appended to it has been indexed.
    pub fn freeze_index(&self) {
        let mut index = self.index.write();
        if self.frozen_index.get().is_none() {
            let complete = std::mem::take(&mut *index);
            let _ = self.frozen_index.set(complete);
        }
    }

    #[cfg(test)]
    pub fn index_is_frozen(&self) -> bool {
        self.frozen_index.get().is_some()
    }

    /// Runs `f` on the index: the frozen one with no lock, else under the read lock
    /// (checked again once the lock is held, as the index may have moved meanwhile).
    fn with_index<R>(&self, f: impl FnOnce(&Index) -> R) -> R {
        if let Some(index) = self.frozen_index.get() {
            return f(index);
        }
        let index = self.index.read();
        f(self.frozen_index.get().unwrap_or(&index))
    }

    /// Copies up to `n` index entries starting at `from` into `out`, in ascending order
    /// when `forward`, else the entries at or before `from` in descending order. The lock
    /// (if the index still has one) is taken once per call, so iterators pay it once per
    /// batch, not per entry.
    pub fn collect(
        &self,
        from: Bound<&IKey>,
        forward: bool,
        n: usize,
        out: &mut impl Extend<(IKey, PmOff)>,
    ) {
        let entries = |(k, off): (&IKey, &PmOff)| (k.clone(), *off);
        self.with_index(|index| {
            if forward {
                out.extend(index.range((from, Bound::Unbounded)).take(n).map(entries));
            } else {
                out.extend(
                    index
                        .range((Bound::Unbounded, from))
                        .rev()
                        .take(n)
                        .map(entries),
                );
            }
        })
    }
}

impl Drop for Memtable {
    fn drop(&mut self) {
        if self.retired.load(Ordering::Acquire)
            && let Err(e) = self.pool.release_owner(self.desc.owner)
        {
            // The catalog no longer names the owner, so the next open frees it anyway.
            log::warn!("memtable {}: releasing its zones failed: {e}", self.desc.id);
        }
    }
}

fn at_off(zone: PmOff, offset: usize) -> PmOff {
    zone.checked_add(offset as u64).expect("inside the zone")
}
