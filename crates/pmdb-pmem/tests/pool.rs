//! Pool life cycle on real files: create, reopen, grow to the maximum, backends, the root
//! area, locking, and every kind of bad input getting its own clear error with nothing
//! committed lost.

mod common;

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use common::{check_zone, pattern, pattern_len};
use pmdb_pmem::{
    Backend, BackendChoice, FORMAT_VERSION, OwnerId, PmOff, PmemError, Pool, PoolOptions,
};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A tmpfs directory when the machine has one, for Memory-backend tests.
fn shm_dir() -> Option<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    shm.is_dir().then(|| tempfile::tempdir_in(shm).unwrap())
}

fn extent_path(dir: &Path, index: u16) -> PathBuf {
    dir.join(format!("extent-{index:05}.pm"))
}

/// Creates a pool holding one owner (published in root 0) with `zones` stamped zones.
fn pool_with_data(dir: &Path, zones: usize) -> (OwnerId, Vec<PmOff>) {
    let pool = Pool::create(dir, &PoolOptions::small()).unwrap();
    let owner = pool.create_owner().unwrap();
    pool.publish_root(0, owner.to_raw()).unwrap();
    let offs = (0..zones)
        .map(|i| stamp_zone(&pool, owner, i as u64))
        .collect();
    (owner, offs)
}

fn stamp_zone(pool: &Pool, owner: OwnerId, tag: u64) -> PmOff {
    let grant = pool.alloc_zone(owner).unwrap();
    let off = grant.off();
    pool.write(off, &pattern(owner, off, tag)).unwrap();
    pool.persist(off, pattern_len()).unwrap();
    grant.commit().unwrap()
}

fn assert_intact(dir: &Path, owner: OwnerId, offs: &[PmOff]) {
    let pool = Pool::open(dir, &PoolOptions::default()).unwrap();
    assert_eq!(pool.root(0), owner.to_raw());
    assert_eq!(pool.zones_of(owner), offs);
    for (i, off) in offs.iter().enumerate() {
        assert_eq!(check_zone(&pool, owner, *off).unwrap(), i as u64);
    }
}

#[test]
fn create_write_reopen() {
    let dir = tmp();
    let (owner, offs) = pool_with_data(dir.path(), 3);
    assert_intact(dir.path(), owner, &offs);
    let pool = Pool::open(dir.path(), &PoolOptions::default()).unwrap();
    let report = pool.recovery_report();
    assert_eq!(report.live_owners, 1);
    assert_eq!(report.owned_zones, 3);
    assert_eq!(report.free_zones, 5);
    assert!(report.anomalies.is_empty());
}

#[test]
fn grows_to_the_maximum_then_reports_pool_full_and_keeps_data() {
    let dir = tmp();
    let offs = {
        let pool = Pool::create(dir.path(), &PoolOptions::small()).unwrap();
        let owner = pool.create_owner().unwrap();
        pool.publish_root(0, owner.to_raw()).unwrap();
        let mut offs = Vec::new();
        loop {
            match pool.alloc_zone(owner) {
                Ok(grant) => {
                    let off = grant.off();
                    pool.write(off, &pattern(owner, off, offs.len() as u64))
                        .unwrap();
                    pool.persist(off, pattern_len()).unwrap();
                    offs.push(grant.commit().unwrap());
                }
                Err(PmemError::PoolFull { max_extents, .. }) => {
                    assert_eq!(max_extents, 4);
                    break;
                }
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert_eq!(offs.len(), 4 * 8);
        assert_eq!(pool.extent_count(), 4);
        // Still usable: reads work, and freeing makes room again.
        assert!(pool.read(offs[0], 8).is_ok());
        (owner, offs)
    };
    let (owner, offs) = offs;
    assert_intact(dir.path(), owner, &offs);
    // A larger maximum at open lets it grow again.
    let pool = Pool::open(dir.path(), &PoolOptions::default().with_max_extents(5)).unwrap();
    let grant = pool.alloc_zone(owner).unwrap();
    assert_eq!(grant.off().extent(), 4);
}

#[test]
fn uncommitted_extent_file_is_discarded() {
    let dir = tmp();
    let (owner, offs) = pool_with_data(dir.path(), 2);
    // An extent whose creation was cut short before the rename.
    fs::write(dir.path().join("extent-00001.pm.tmp"), b"partial").unwrap();
    assert_intact(dir.path(), owner, &offs);
    assert!(!dir.path().join("extent-00001.pm.tmp").exists());
}

#[test]
fn root_words_are_published_durably() {
    let dir = tmp();
    {
        let pool = Pool::create(dir.path(), &PoolOptions::small()).unwrap();
        for i in 0..Pool::ROOT_WORDS {
            pool.publish_root(i, i as u64 * 3 + 1).unwrap();
        }
    }
    let pool = Pool::open(dir.path(), &PoolOptions::default()).unwrap();
    for i in 0..Pool::ROOT_WORDS {
        assert_eq!(pool.root(i), i as u64 * 3 + 1);
    }
}

#[test]
fn backend_is_chosen_from_the_filesystem() {
    if let Some(dir) = shm_dir() {
        let pool = Pool::create(dir.path(), &PoolOptions::small()).unwrap();
        assert_eq!(pool.backend(), Backend::Memory);
    }
    let dir = tmp();
    let pool = Pool::create(dir.path(), &PoolOptions::small()).unwrap();
    let expected = match pmdb_pmem::filesystem_kind(dir.path()).unwrap() {
        pmdb_pmem::FsKind::Ram => Backend::Memory,
        pmdb_pmem::FsKind::Other(_) => Backend::File,
    };
    assert!(pool.backend() == expected || pool.backend() == Backend::Dax);
}

#[test]
fn backend_can_be_forced_and_data_survives_each() {
    for choice in [BackendChoice::File, BackendChoice::Memory] {
        let dir = tmp();
        let opts = PoolOptions::small().with_backend(choice);
        let pool = Pool::create(dir.path(), &opts).unwrap();
        assert_eq!(
            pool.backend(),
            if choice == BackendChoice::File {
                Backend::File
            } else {
                Backend::Memory
            }
        );
        let owner = pool.create_owner().unwrap();
        pool.publish_root(0, owner.to_raw()).unwrap();
        let off = stamp_zone(&pool, owner, 0);
        drop(pool);
        let pool = Pool::open(dir.path(), &PoolOptions::default().with_backend(choice)).unwrap();
        check_zone(&pool, owner, off).unwrap();
    }
}

#[test]
fn dax_request_without_map_sync_is_refused_clearly() {
    let dir = tmp();
    let opts = PoolOptions::small().with_backend(BackendChoice::Dax);
    match Pool::create(dir.path(), &opts) {
        Ok(pool) => assert_eq!(pool.backend(), Backend::Dax), // a real DAX filesystem
        Err(e) => {
            assert!(matches!(e, PmemError::DaxUnavailable { .. }), "{e}");
            assert!(e.to_string().contains("MAP_SYNC"));
        }
    }
}

#[test]
fn second_opener_gets_locked() {
    let dir = tmp();
    let _pool = Pool::create(dir.path(), &PoolOptions::small()).unwrap();
    let err = Pool::open(dir.path(), &PoolOptions::default()).unwrap_err();
    assert!(matches!(err, PmemError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("locked"));
}

#[test]
fn create_refuses_an_existing_pool() {
    let dir = tmp();
    let (owner, offs) = pool_with_data(dir.path(), 1);
    let err = Pool::create(dir.path(), &PoolOptions::small()).unwrap_err();
    assert!(matches!(err, PmemError::AlreadyExists { .. }), "{err}");
    assert_intact(dir.path(), owner, &offs);
}

#[test]
fn missing_directory_and_empty_directory() {
    let dir = tmp();
    let err = Pool::open(dir.path().join("nope"), &PoolOptions::default()).unwrap_err();
    assert!(matches!(err, PmemError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("does not exist"));
    let err = Pool::open(dir.path(), &PoolOptions::default()).unwrap_err();
    assert!(matches!(err, PmemError::NoPool { .. }), "{err}");
}

/// Opens `dir` after `damage` and returns the error, then checks that undoing the damage
/// (restoring the saved bytes) gives the pool back intact.
fn damaged(damage: impl FnOnce(&Path)) -> PmemError {
    let dir = tmp();
    let (owner, offs) = pool_with_data(dir.path(), 2);
    let path = extent_path(dir.path(), 0);
    let saved = fs::read(&path).unwrap();
    damage(dir.path());
    let err = Pool::open(dir.path(), &PoolOptions::default()).unwrap_err();
    for entry in fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        if p != path && p.file_name().unwrap() != "pool.lock" {
            fs::remove_file(p).unwrap();
        }
    }
    fs::write(&path, saved).unwrap();
    assert_intact(dir.path(), owner, &offs);
    err
}

fn patch(path: &Path, at: u64, bytes: &[u8]) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, at).unwrap();
}

#[test]
fn corrupt_header_is_reported() {
    let err = damaged(|dir| patch(&extent_path(dir, 0), 40, &[0xff]));
    assert!(matches!(err, PmemError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("checksum"), "{err}");
}

#[test]
fn truncated_extent_is_reported() {
    let err = damaged(|dir| {
        let f = OpenOptions::new()
            .write(true)
            .open(extent_path(dir, 0))
            .unwrap();
        f.set_len(100_000).unwrap();
    });
    assert!(
        matches!(err, PmemError::Truncated { found: 100_000, .. }),
        "{err}"
    );
    let err = damaged(|dir| {
        let f = OpenOptions::new()
            .write(true)
            .open(extent_path(dir, 0))
            .unwrap();
        f.set_len(10).unwrap();
    });
    assert!(
        matches!(
            err,
            PmemError::Truncated { .. } | PmemError::ForeignFile { .. }
        ),
        "{err}"
    );
}

#[test]
fn foreign_file_is_reported() {
    let err = damaged(|dir| fs::write(extent_path(dir, 0), vec![0x5a; 8192]).unwrap());
    assert!(matches!(err, PmemError::ForeignFile { .. }), "{err}");
    assert!(err.to_string().contains("not a pmdb extent"));
    let err = damaged(|dir| fs::write(dir.join("extent-7.pm"), b"x").unwrap());
    assert!(matches!(err, PmemError::ForeignFile { .. }), "{err}");
}

#[test]
fn extent_of_another_pool_is_reported() {
    let other = tmp();
    let opts = PoolOptions {
        initial_extents: 2,
        ..PoolOptions::small()
    };
    drop(Pool::create(other.path(), &opts).unwrap());
    let err = damaged(|dir| {
        fs::copy(extent_path(other.path(), 1), extent_path(dir, 1)).unwrap();
    });
    assert!(matches!(err, PmemError::ForeignExtent { .. }), "{err}");
}

#[test]
fn missing_extent_is_reported() {
    let err = damaged(|dir| fs::write(extent_path(dir, 2), b"").unwrap());
    assert!(matches!(err, PmemError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
}

/// A pool grown to three extents, the last one holding committed zones.
fn grown_pool(dir: &Path) -> (OwnerId, Vec<PmOff>) {
    let (owner, mut offs) = pool_with_data(dir, 0);
    let pool = Pool::open(dir, &PoolOptions::default()).unwrap();
    while pool.extent_count() < 3 {
        offs.push(stamp_zone(&pool, owner, offs.len() as u64));
    }
    (owner, offs)
}

#[test]
fn missing_last_extent_is_reported() {
    let dir = tmp();
    let (owner, offs) = grown_pool(dir.path());
    let last = extent_path(dir.path(), 2);
    let saved = fs::read(&last).unwrap();
    fs::remove_file(&last).unwrap();
    let err = Pool::open(dir.path(), &PoolOptions::default()).unwrap_err();
    assert!(
        matches!(&err, PmemError::Corrupt { path, .. } if *path == last),
        "{err}"
    );
    assert!(err.to_string().contains("missing"), "{err}");
    fs::write(&last, saved).unwrap();
    assert_intact(dir.path(), owner, &offs);
}

#[test]
fn missing_last_initial_extent_is_reported() {
    let dir = tmp();
    let opts = PoolOptions {
        initial_extents: 2,
        ..PoolOptions::small()
    };
    drop(Pool::create(dir.path(), &opts).unwrap());
    fs::remove_file(extent_path(dir.path(), 1)).unwrap();
    let err = Pool::open(dir.path(), &PoolOptions::default()).unwrap_err();
    assert!(matches!(err, PmemError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
}

/// Extent 0's extent count word (in the header page, outside the checksummed header).
const EXTENT_COUNT_OFF: u64 = 2048;

#[test]
fn extent_beyond_the_recorded_count_is_adopted() {
    // A crash between a new extent's rename and the publish of its count leaves one
    // extent more than extent 0 records; it holds no committed zone and is kept.
    let dir = tmp();
    let (owner, offs) = grown_pool(dir.path());
    patch(
        &extent_path(dir.path(), 0),
        EXTENT_COUNT_OFF,
        &2u64.to_le_bytes(),
    );
    assert_intact(dir.path(), owner, &offs);
    // Opening counted it, so losing it now is noticed.
    fs::remove_file(extent_path(dir.path(), 2)).unwrap();
    let err = Pool::open(dir.path(), &PoolOptions::default()).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}

/// Rewrites a header field and its checksum, as a pool of another format would have.
fn reseal(path: &Path, at: usize, bytes: &[u8]) {
    let mut header = fs::read(path).unwrap()[..64].to_vec();
    header[at..at + bytes.len()].copy_from_slice(bytes);
    let crc = crc32fast_hash(&header);
    patch(path, at as u64, bytes);
    patch(path, 64, &crc.to_le_bytes());
}

fn crc32fast_hash(bytes: &[u8]) -> u32 {
    // CRC-32 (IEEE), bitwise: independent of the implementation under test.
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn wrong_version_is_reported() {
    let err = damaged(|dir| reseal(&extent_path(dir, 0), 8, &(FORMAT_VERSION + 1).to_le_bytes()));
    match err {
        PmemError::UnsupportedVersion {
            found, supported, ..
        } => {
            assert_eq!((found, supported), (FORMAT_VERSION + 1, FORMAT_VERSION));
        }
        e => panic!("{e}"),
    }
}

#[test]
fn wrong_zone_size_is_reported() {
    let dir = tmp();
    let (owner, offs) = pool_with_data(dir.path(), 1);
    let opts = PoolOptions {
        zone_size: Some(1 << 20),
        ..PoolOptions::default()
    };
    let err = Pool::open(dir.path(), &opts).unwrap_err();
    assert!(
        matches!(
            err,
            PmemError::ZoneSizeMismatch {
                found: 16384,
                expected: 1048576,
                ..
            }
        ),
        "{err}"
    );
    assert_intact(dir.path(), owner, &offs);
}

#[test]
fn invalid_options_are_refused() {
    let dir = tmp();
    let cases = [
        (
            PoolOptions {
                zone_size: Some(5000),
                ..PoolOptions::small()
            },
            "zone_size",
        ),
        (
            PoolOptions {
                zones_per_extent: 0,
                ..PoolOptions::small()
            },
            "zones_per_extent",
        ),
        (
            PoolOptions {
                max_owners: 0,
                ..PoolOptions::small()
            },
            "max_owners",
        ),
        (
            PoolOptions {
                initial_extents: 9,
                ..PoolOptions::small()
            },
            "initial_extents",
        ),
        (PoolOptions::small().with_max_extents(0), "max_extents"),
    ];
    for (opts, name) in cases {
        match Pool::create(dir.path(), &opts) {
            Err(PmemError::InvalidOption { name: n, .. }) => assert_eq!(n, name),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn out_of_bounds_and_misaligned_access_is_refused() {
    let dir = tmp();
    let pool = Pool::create(dir.path(), &PoolOptions::small()).unwrap();
    // Metadata (header, root, owner words) is not reachable through the data API.
    assert!(matches!(
        pool.write(PmOff::new(0, 0), b"x"),
        Err(PmemError::OutOfBounds { .. })
    ));
    assert!(matches!(
        pool.read(PmOff::new(9, 1 << 20), 8),
        Err(PmemError::OutOfBounds { .. })
    ));
    let end = PmOff::new(0, pool.mapped_bytes());
    assert!(matches!(
        pool.read(end, 1),
        Err(PmemError::OutOfBounds { .. })
    ));
    let owner = pool.create_owner().unwrap();
    let zone = pool.alloc_zone(owner).unwrap().commit().unwrap();
    let err = pool.store_u64(zone.checked_add(4).unwrap(), 1).unwrap_err();
    assert!(matches!(err, PmemError::Misaligned { .. }), "{err}");
}

#[test]
fn permission_denied_is_reported() {
    let dir = tmp();
    let pool_dir = dir.path().join("pool");
    drop(Pool::create(&pool_dir, &PoolOptions::small()).unwrap());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // Root ignores file modes, so the check runs in a child as an unprivileged user.
        return permission_denied_as_nobody(&pool_dir);
    }
    use std::os::unix::fs::PermissionsExt;
    let ext = extent_path(&pool_dir, 0);
    fs::set_permissions(&ext, fs::Permissions::from_mode(0o000)).unwrap();
    let err = Pool::open(&pool_dir, &PoolOptions::default()).unwrap_err();
    fs::set_permissions(&ext, fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(err, PmemError::PermissionDenied { .. }), "{err}");
}

/// As root, run this test binary again as user `nobody` against a root-only pool.
fn permission_denied_as_nobody(pool_dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let parent = pool_dir.parent().unwrap();
    fs::set_permissions(parent, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(pool_dir, fs::Permissions::from_mode(0o700)).unwrap();
    // The build directory may be one `nobody` cannot enter (under root's home): run a
    // copy of this binary from the test's own directory.
    let exe = parent.join("pool-test");
    fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(&exe)
        .args([
            "--exact",
            "open_as_child",
            "--nocapture",
            "--include-ignored",
        ])
        .env("PMDB_TEST_POOL", pool_dir)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "run by permission_denied_is_reported as an unprivileged user"]
fn open_as_child() {
    let dir = std::env::var_os("PMDB_TEST_POOL").expect("PMDB_TEST_POOL");
    let err = Pool::open(&dir, &PoolOptions::default()).unwrap_err();
    assert!(matches!(err, PmemError::PermissionDenied { .. }), "{err}");
    assert!(err.to_string().contains("permission denied"));
}

/// Every file of the pool directory with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let bytes = fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_read_only_open_changes_nothing_and_refuses_writes() {
    let dir = tmp();
    let (owner, offs) = grown_pool(dir.path());
    // What a read-write open would repair: an extent count one short and a leftover
    // .tmp extent.
    patch(
        &extent_path(dir.path(), 0),
        EXTENT_COUNT_OFF,
        &2u64.to_le_bytes(),
    );
    fs::write(dir.path().join("extent-00003.pm.tmp"), b"partial").unwrap();
    let before = snapshot(dir.path());

    let options = PoolOptions::default().with_read_only();
    let pool = Pool::open(dir.path(), &options).unwrap();
    // A second reader is welcome, a writer is not.
    let other = Pool::open(dir.path(), &options).unwrap();
    assert!(matches!(
        Pool::open(dir.path(), &PoolOptions::default()),
        Err(PmemError::Locked { .. })
    ));
    assert!(pool.is_read_only());
    assert_eq!(pool.extent_count(), 3);
    assert_eq!(pool.zones_of(owner), offs);
    assert_eq!(check_zone(&pool, owner, offs[0]).unwrap(), 0);
    let refused = |r: Result<(), PmemError>| {
        assert!(matches!(r, Err(PmemError::ReadOnly { .. })), "{r:?}");
    };
    refused(pool.write(offs[0], b"x"));
    refused(pool.fill(offs[0], 8, 0));
    refused(pool.store_u64(offs[0], 1));
    refused(pool.publish_u64(offs[0], 1));
    refused(pool.persist(offs[0], 8));
    refused(pool.publish_root(0, 1));
    refused(pool.release_owner(owner));
    refused(pool.retain_owners(|_| false).map(drop));
    refused(pool.create_owner().map(drop));
    drop((pool, other));
    assert_eq!(snapshot(dir.path()), before);
    assert!(matches!(
        Pool::create(tmp().path(), &PoolOptions::small().with_read_only()),
        Err(PmemError::InvalidOption {
            name: "read_only",
            ..
        })
    ));
}

#[test]
fn pool_files_are_a_real_directory_that_a_read_only_pool_does_not_create() {
    // A sibling test forking a child process holds a copy of the lock file's descriptor
    // until the child execs, so a lock may outlive its pool's drop for a moment.
    let open = |dir: &std::path::Path, options: &PoolOptions| {
        (0..200)
            .find_map(|_| match Pool::open(dir, options) {
                Err(PmemError::Locked { .. }) => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    None
                }
                other => Some(other.unwrap()),
            })
            .expect("the lock is released")
    };
    let dir = tmp();
    let (pool_dir, sst) = (dir.path().join("pool"), dir.path().join("sst"));
    drop(Pool::create(&pool_dir, &PoolOptions::small()).unwrap());

    let read_only = open(&pool_dir, &PoolOptions::default().with_read_only());
    let missing = read_only.files(&sst).unwrap();
    assert_eq!(missing.list().unwrap(), Vec::<String>::new());
    assert!(matches!(
        missing.read_all("CURRENT"),
        Err(PmemError::MissingFile { .. })
    ));
    assert!(!sst.exists());
    drop((missing, read_only));

    let pool = open(&pool_dir, &PoolOptions::default());
    let files = pool.files(&sst).unwrap();
    let mut f = files.create("a").unwrap();
    f.append(b"bytes").unwrap();
    f.sync().unwrap();
    files.sync_dir().unwrap();
    assert_eq!(files.describe("a"), sst.join("a").display().to_string());
    drop((f, files, pool));

    let read_only = open(&pool_dir, &PoolOptions::default().with_read_only());
    assert_eq!(
        read_only.files(&sst).unwrap().read_all("a").unwrap(),
        b"bytes"
    );
}
