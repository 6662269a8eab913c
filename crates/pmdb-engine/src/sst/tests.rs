//! Tables written to real files and read back against a model (a sorted list of internal
//! keys), in every read mode, with and without compression; and damaged or truncated
//! files, which must give errors naming the file and never a panic.

use std::sync::Arc;

use pmdb_pmem::{FileSystem, OsFiles};
use proptest::prelude::*;

use super::cache::BlockCache;
use super::iter::SstIter;
use super::table::Sst;
use super::writer::SstWriter;
use super::{ReadMode, SstMeta, SstOptions, SstValue};
use crate::format::MAX_SEQ;
use crate::format::record::Kind;
use crate::format::sst::{Compression, FOOTER_LEN, SstIdentity};
use crate::iter::InternalIterator;
use crate::keys::{self, IKey};

const MODES: [ReadMode; 3] = [ReadMode::Pread, ReadMode::MmapCopy, ReadMode::Direct];

/// Entries in ascending `keys::compare` order.
type Model = Vec<(Vec<u8>, Vec<u8>)>;

/// Where the tables of these tests say they belong.
const IDENTITY: SstIdentity = SstIdentity {
    database: [7; 16],
    number: 7,
    subtable: 1,
};

fn write(fs: &OsFiles, name: &str, model: &Model, options: &SstOptions) -> SstMeta {
    let mut w = SstWriter::new(fs.create(name).unwrap(), options, IDENTITY).unwrap();
    for (k, v) in model {
        w.add(k, v).unwrap();
    }
    w.finish().unwrap()
}

fn open(fs: &OsFiles, name: &str, mode: ReadMode, cache: Option<Arc<BlockCache>>) -> Arc<Sst> {
    let file = fs.open(name).unwrap();
    Sst::open(file, 7, fs.describe(name), mode, cache).unwrap()
}

fn try_open(fs: &OsFiles, name: &str, mode: ReadMode) -> crate::error::Result<Arc<Sst>> {
    Sst::open(fs.open(name).unwrap(), 7, fs.describe(name), mode, None)
}

/// A cache for the modes that use one (small, so blocks are evicted too).
fn cache_for(mode: ReadMode) -> Option<Arc<BlockCache>> {
    (mode != ReadMode::Direct).then(|| Arc::new(BlockCache::new(16 << 10)))
}

fn forward(it: &mut SstIter) -> Model {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().unwrap().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn backward(it: &mut SstIter) -> Model {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().unwrap().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out.reverse();
    out
}

fn current(it: &SstIter) -> Option<Vec<u8>> {
    it.valid().then(|| it.key().to_vec())
}

/// The model's newest version of `user` with seq <= `snap`.
fn model_get(model: &Model, user: &[u8], snap: u64) -> Option<(u64, Vec<u8>)> {
    model
        .iter()
        .find(|(k, _)| keys::user_key(k) == user && keys::seq_of(k) <= snap)
        .map(|(k, v)| (keys::tag_of(k), v.clone()))
}

fn got(r: Option<(u64, SstValue)>) -> Option<(u64, Vec<u8>)> {
    r.map(|(tag, v)| (tag, v.to_vec()))
}

/// Checks every way of reading `sst` against `model`.
fn check_table(sst: &Arc<Sst>, model: &Model, targets: &[(Vec<u8>, u64)]) {
    let mut it = sst.iter();
    assert_eq!(forward(&mut it), *model, "forward");
    assert_eq!(backward(&mut it), *model, "backward");
    for (user, seq) in targets {
        let target = IKey::new(user, *seq, Kind::Put);
        let t = target.as_slice();
        let at = model.partition_point(|(k, _)| keys::compare(k, t).is_lt());
        let key = |i: Option<usize>| i.and_then(|i| model.get(i)).map(|e| e.0.clone());
        it.seek(t);
        assert_eq!(current(&it), key(Some(at)), "seek {target:?}");
        if it.valid() {
            assert_eq!(it.value().unwrap(), &model[at].1[..]);
            it.next();
            assert_eq!(current(&it), key(Some(at + 1)), "next after seek");
        }
        let before = model.partition_point(|(k, _)| keys::compare(k, t).is_le());
        it.seek_for_prev(t);
        assert_eq!(
            current(&it),
            key(before.checked_sub(1)),
            "seek_for_prev {target:?}"
        );
        if it.valid() {
            it.prev();
            assert_eq!(current(&it), key(before.checked_sub(2)), "prev after seek");
        }
        it.status().unwrap();
        assert_eq!(
            got(sst.get(user, *seq).unwrap()),
            model_get(model, user, *seq),
            "get {user:?} at {seq}"
        );
    }
    for (k, _) in model {
        let user = keys::user_key(k);
        let snap = keys::seq_of(k);
        assert_eq!(
            got(sst.get(user, snap).unwrap()),
            model_get(model, user, snap)
        );
        assert_eq!(
            got(sst.get(user, MAX_SEQ).unwrap()),
            model_get(model, user, MAX_SEQ)
        );
    }
    assert_eq!(sst.verify().unwrap(), model.len() as u64);
}

fn user_key() -> impl Strategy<Value = Vec<u8>> {
    let prefix = prop::sample::select(vec!["", "a", "ab", "abc", "user/", "user/00"]);
    let suffix = prop::collection::vec(prop::sample::select(b"abz\0\xff".to_vec()), 0..4);
    (prefix, suffix).prop_map(|(p, s)| [p.as_bytes(), &s].concat())
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..24),
        (any::<u8>(), 0..400usize).prop_map(|(b, n)| vec![b; n]),
    ]
}

/// Several versions of random user keys sharing prefixes, some of them tombstones.
fn model() -> impl Strategy<Value = Model> {
    let versions =
        prop::collection::btree_map(1u64..1000, (prop::bool::weighted(0.2), value()), 1..4);
    prop::collection::btree_map(user_key(), versions, 0..150).prop_map(|keys| {
        let mut model = Vec::new();
        for (user, versions) in keys {
            for (seq, (delete, value)) in versions.into_iter().rev() {
                let kind = if delete { Kind::Delete } else { Kind::Put };
                let value = if delete { Vec::new() } else { value };
                model.push((IKey::new(&user, seq, kind).as_slice().to_vec(), value));
            }
        }
        model
    })
}

fn options() -> impl Strategy<Value = SstOptions> {
    (
        prop::sample::select(vec![64usize, 256, 4096]),
        prop::sample::select(vec![1usize, 2, 16]),
        prop::sample::select(vec![0u32, 10]),
        prop::bool::ANY,
    )
        .prop_map(
            |(block_size, restart_interval, bloom_bits_per_key, lz4)| SstOptions {
                block_size,
                restart_interval,
                bloom_bits_per_key,
                compression: if lz4 {
                    Compression::Lz4
                } else {
                    Compression::None
                },
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn tables_read_back_as_written_in_every_mode(
        model in model(),
        options in options(),
        targets in prop::collection::vec((user_key(), 0u64..1100), 1..24),
    ) {
        prop_assert!(model.windows(2).all(|w| keys::compare(&w[0].0, &w[1].0).is_lt()));
        let dir = tempfile::tempdir().unwrap();
        let fs = OsFiles::open(dir.path()).unwrap();
        let meta = write(&fs, "t.sst", &model, &options);
        prop_assert_eq!(meta.entries, model.len() as u64);
        prop_assert_eq!(meta.file_len, fs.open("t.sst").unwrap().len());
        for mode in MODES {
            let sst = open(&fs, "t.sst", mode, cache_for(mode));
            check_table(&sst, &model, &targets);
        }
    }
}

fn numbered(n: usize) -> Model {
    (0..n)
        .map(|i| {
            let key = format!("key{:06}", i / 2);
            let kind = if i % 10 == 9 { Kind::Delete } else { Kind::Put };
            let ikey = IKey::new(key.as_bytes(), (n - i) as u64, kind);
            (
                ikey.as_slice().to_vec(),
                format!("value {i} ").repeat(i % 7).into_bytes(),
            )
        })
        .collect()
}

#[test]
fn a_large_table_round_trips_with_its_meta_and_properties() {
    let dir = tempfile::tempdir().unwrap();
    let fs = OsFiles::open(dir.path()).unwrap();
    let model = numbered(20_000);
    for compression in [Compression::None, Compression::Lz4] {
        let options = SstOptions {
            compression,
            ..SstOptions::default()
        };
        let mut w = SstWriter::new(fs.create("big.sst").unwrap(), &options, IDENTITY).unwrap();
        for (k, v) in &model {
            w.add(k, v).unwrap();
        }
        let estimate = w.estimated_len();
        let meta = w.finish().unwrap();
        assert!(
            meta.file_len.abs_diff(estimate) < 4096,
            "{estimate} vs {meta:?}"
        );
        assert_eq!(
            (meta.entries, meta.tombstones, meta.min_seq, meta.max_seq),
            (20_000, 2_000, 1, 20_000)
        );
        assert_eq!(
            (&meta.smallest, &meta.largest),
            (&model[0].0, &model[19_999].0)
        );
        let raw_keys: u64 = model.iter().map(|(k, _)| k.len() as u64).sum();
        let raw_values: u64 = model.iter().map(|(_, v)| v.len() as u64).sum();
        assert_eq!(
            (meta.raw_key_bytes, meta.raw_value_bytes),
            (raw_keys, raw_values)
        );
        for mode in MODES {
            let sst = open(&fs, "big.sst", mode, cache_for(mode));
            let p = sst.properties();
            assert_eq!((p.entries, p.compression), (20_000, compression));
            assert!(p.data_blocks > 50, "{} blocks", p.data_blocks);
            let targets = [(b"key000500".to_vec(), 5), (b"nokey".to_vec(), 1)];
            check_table(&sst, &model, &targets);
            let absent = (0..1000)
                .filter(|i| {
                    sst.get(format!("absent{i}").as_bytes(), MAX_SEQ)
                        .unwrap()
                        .is_none()
                })
                .count();
            assert_eq!(absent, 1000);
        }
        if compression == Compression::Lz4 {
            let plain = raw_keys + raw_values;
            assert!(meta.file_len < plain / 2, "{} of {plain}", meta.file_len);
        }
    }
}

#[test]
fn an_empty_table_reads_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let fs = OsFiles::open(dir.path()).unwrap();
    let meta = write(&fs, "empty.sst", &Vec::new(), &SstOptions::default());
    assert_eq!((meta.entries, meta.smallest.len()), (0, 0));
    for mode in MODES {
        let sst = open(&fs, "empty.sst", mode, None);
        check_table(&sst, &Vec::new(), &[(b"k".to_vec(), 5)]);
        assert_eq!(sst.properties().data_blocks, 0);
    }
}

#[test]
fn direct_reads_borrow_the_mapping_and_values_outlive_the_table() {
    fn owned_and_shareable<T: Send + Sync + 'static>() {}
    fn movable<T: Send + 'static>() {}
    owned_and_shareable::<SstValue>();
    owned_and_shareable::<Sst>();
    movable::<SstIter>();

    let dir = tempfile::tempdir().unwrap();
    let fs = OsFiles::open(dir.path()).unwrap();
    let model = numbered(500);
    write(&fs, "t.sst", &model, &SstOptions::default());
    let user = keys::user_key(&model[100].0);
    for (mode, mapped) in [
        (ReadMode::Pread, false),
        (ReadMode::MmapCopy, false),
        (ReadMode::Direct, true),
    ] {
        let sst = open(&fs, "t.sst", mode, None);
        assert_eq!(sst.read_mode(), mode);
        let (tag, value) = sst.get(user, MAX_SEQ).unwrap().unwrap();
        assert_eq!(tag, keys::tag_of(&model[100].0));
        assert_eq!(value.is_mapped(), mapped, "{mode}");
        drop(sst);
        assert_eq!(
            &value[..],
            &model[100].1[..],
            "the value outlives its table"
        );
    }
    let lz4 = SstOptions {
        compression: Compression::Lz4,
        ..SstOptions::default()
    };
    write(&fs, "z.sst", &model, &lz4);
    let sst = open(&fs, "z.sst", ReadMode::Direct, None);
    let (_, value) = sst.get(user, MAX_SEQ).unwrap().unwrap();
    assert!(
        !value.is_mapped(),
        "compressed blocks are decompressed into a buffer"
    );
    assert_eq!(&value[..], &model[100].1[..]);
}

/// Writes `bytes` as file `name` (no sync: the tests read it back through the page
/// cache).
fn put_file(fs: &OsFiles, name: &str, bytes: &[u8]) {
    let mut f = fs.create(name).unwrap();
    f.append(bytes).unwrap();
}

fn names_file(e: &crate::error::DbError, fs: &OsFiles, name: &str) -> bool {
    e.to_string().contains(&fs.describe(name))
}

#[test]
fn a_damaged_data_block_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fs = OsFiles::open(dir.path()).unwrap();
    let model = numbered(2000);
    write(&fs, "good.sst", &model, &SstOptions::default());
    let mut bytes = fs.read_all("good.sst").unwrap();
    bytes[10] ^= 0x40;
    put_file(&fs, "bad.sst", &bytes);
    let first = keys::user_key(&model[0].0);
    let later = keys::user_key(&model[1500].0);
    for mode in MODES {
        let sst = open(&fs, "bad.sst", mode, cache_for(mode));
        let e = sst.get(first, MAX_SEQ).unwrap_err();
        assert!(names_file(&e, &fs, "bad.sst"), "{e}");
        assert!(
            e.to_string().contains("data block at 0: checksum mismatch"),
            "{e}"
        );
        let (_, v) = sst.get(later, MAX_SEQ).unwrap().unwrap();
        assert_eq!(&v[..], &model[1500].1[..], "other blocks still read");
        let mut it = sst.iter();
        it.seek_to_first();
        assert!(!it.valid());
        let e = it.status().unwrap_err();
        assert!(names_file(&e, &fs, "bad.sst"), "{e}");
        let e = sst.verify().unwrap_err();
        assert!(names_file(&e, &fs, "bad.sst"), "{e}");
        it.seek(&model[1500].0);
        assert!(!it.valid(), "an iterator stays failed");
    }
}

/// Every single-byte change anywhere in the file is caught: by the open (footer, index,
/// filter, properties) or by reading the blocks; never a panic.
#[test]
fn every_damaged_byte_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let fs = OsFiles::open(dir.path()).unwrap();
    let model = numbered(300);
    for compression in [Compression::None, Compression::Lz4] {
        let options = SstOptions {
            block_size: 512,
            restart_interval: 4,
            compression,
            ..SstOptions::default()
        };
        write(&fs, "good.sst", &model, &options);
        let good = fs.read_all("good.sst").unwrap();
        let step = (good.len() / 600).max(1);
        let positions = (0..good.len())
            .step_by(step)
            .chain(good.len() - 2 * FOOTER_LEN..good.len());
        for at in positions {
            let mut bytes = good.clone();
            bytes[at] ^= 1 << (at % 8);
            put_file(&fs, "bad.sst", &bytes);
            for mode in MODES {
                let sst = match try_open(&fs, "bad.sst", mode) {
                    Err(e) => {
                        assert!(names_file(&e, &fs, "bad.sst"), "byte {at}: {e}");
                        continue;
                    }
                    Ok(sst) => sst,
                };
                let e = sst.verify().expect_err("a damaged byte passed verify");
                assert!(names_file(&e, &fs, "bad.sst"), "byte {at}: {e}");
                let mut it = sst.iter();
                it.seek_to_first();
                while it.valid() {
                    it.next();
                }
                let e = it.status().expect_err("a damaged byte passed a scan");
                assert!(names_file(&e, &fs, "bad.sst"), "byte {at}: {e}");
            }
        }
    }
}

#[test]
fn truncated_files_are_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let fs = OsFiles::open(dir.path()).unwrap();
    write(&fs, "good.sst", &numbered(300), &SstOptions::default());
    let good = fs.read_all("good.sst").unwrap();
    let cuts = (0..good.len())
        .step_by(97)
        .chain(good.len() - 2 * FOOTER_LEN..good.len());
    for len in cuts {
        put_file(&fs, "cut.sst", &good[..len]);
        for mode in MODES {
            let e = try_open(&fs, "cut.sst", mode)
                .err()
                .unwrap_or_else(|| panic!("{len} of {} bytes opened", good.len()));
            assert!(names_file(&e, &fs, "cut.sst"), "{len} bytes: {e}");
        }
    }
}

#[test]
fn cached_blocks_are_served_without_reading_the_file_but_verify_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let fs = OsFiles::open(dir.path()).unwrap();
    let model = numbered(200);
    write(&fs, "t.sst", &model, &SstOptions::default());
    let good = fs.read_all("t.sst").unwrap();
    for mode in [ReadMode::Pread, ReadMode::MmapCopy] {
        put_file(&fs, "t.sst", &good);
        let cache = Arc::new(BlockCache::new(1 << 20));
        let sst = open(&fs, "t.sst", mode, Some(Arc::clone(&cache)));
        assert_eq!(forward(&mut sst.iter()), model);
        assert!(cache.weight() as usize > good.len() / 2);
        // Damage the first block in place (same file, same length): the cache still
        // answers, the check reads the media.
        let mut bytes = good.clone();
        bytes[10] ^= 1;
        put_file(&fs, "t.sst", &bytes);
        let first = keys::user_key(&model[0].0);
        assert!(sst.get(first, MAX_SEQ).unwrap().is_some(), "{mode}");
        assert!(sst.verify().is_err(), "{mode}");
    }
}

#[test]
fn read_modes_have_names() {
    for mode in MODES {
        assert_eq!(mode.to_string().parse::<ReadMode>(), Ok(mode));
    }
    assert_eq!(ReadMode::default(), ReadMode::Pread);
    assert_eq!(ReadMode::MmapCopy.to_string(), "mmap-copy");
    let e = "mmap".parse::<ReadMode>().unwrap_err();
    assert!(e.contains("pread, mmap-copy or direct"), "{e}");
}

/// The public face of one file: what the writer wrote, entry by entry, from any key;
/// a missing or foreign file is an error naming it.
#[test]
fn an_sst_file_opened_alone_shows_what_was_written() {
    use super::file::SstFile;

    let dir = tempfile::tempdir().unwrap();
    let fs = OsFiles::open(dir.path()).unwrap();
    let model = numbered(3000);
    let options = SstOptions {
        block_size: 1024,
        compression: Compression::Lz4,
        ..SstOptions::default()
    };
    let meta = write(&fs, "t.sst", &model, &options);
    let file = SstFile::open(dir.path().join("t.sst")).unwrap();
    assert_eq!(file.name(), fs.describe("t.sst"));
    assert_eq!(file.len(), meta.file_len);
    let p = file.properties();
    assert_eq!(
        (p.entries, p.tombstones, p.compression, p.min_seq, p.max_seq),
        (3000, 300, "lz4", 1, 3000)
    );
    let smallest = p.smallest.unwrap();
    assert_eq!(
        (&smallest.user_key[..], smallest.seq, smallest.kind),
        (&b"key000000"[..], 3000, Kind::Put)
    );
    assert_eq!(p.largest.unwrap().user_key, b"key001499");
    let index = file.index().unwrap();
    assert_eq!(index.entries, p.data_blocks);
    assert!(index.smallest_block <= index.largest_block);
    assert!(index.data_bytes < file.len() && index.largest_block > 0);
    let place = p.place.unwrap();
    assert_eq!(
        (place.number, place.subtable, place.database.len()),
        (IDENTITY.number, IDENTITY.subtable, 36)
    );
    let footer = file.footer();
    assert_eq!(footer.format_version, 1);
    assert_eq!(
        footer.filter.unwrap().size,
        8 + file.filter().unwrap().bits / 8
    );
    let read: Vec<_> = file.entries().map(Result::unwrap).collect();
    assert_eq!(read.len(), model.len());
    for (entry, (k, v)) in read.iter().zip(&model) {
        let key = (keys::user_key(k), keys::seq_of(k), keys::kind_of(k));
        assert_eq!(
            (&entry.key.user_key[..], entry.key.seq, entry.key.kind),
            key
        );
        assert_eq!(&entry.value, v);
    }
    let from: Vec<_> = file
        .entries_from(b"key000700x")
        .take(3)
        .map(|e| e.unwrap().key.user_key)
        .collect();
    assert_eq!(from, [&b"key000701"[..], b"key000701", b"key000702"]);
    assert_eq!(file.entries_from(b"zzz").count(), 0);
    assert_eq!(file.verify().unwrap(), 3000);

    let e = SstFile::open(dir.path().join("none.sst")).err().unwrap();
    assert!(
        names_file(&e, &fs, "none.sst") && e.to_string().contains("does not exist"),
        "{e}"
    );
    put_file(&fs, "foreign.sst", &[7u8; 200]);
    let e = SstFile::open(dir.path().join("foreign.sst")).err().unwrap();
    assert!(
        names_file(&e, &fs, "foreign.sst") && e.to_string().contains("not a pmdb SST"),
        "{e}"
    );
}
