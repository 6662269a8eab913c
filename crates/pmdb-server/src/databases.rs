//! The databases a server serves: its own (the database it was started on, which every
//! name a client connects with means unless CREATE DATABASE made that name), and those
//! CREATE DATABASE made, each a pmdb database of its own (its pool, its SSTs, its
//! catalog) in a directory of the store, opened again when the server starts. DROP
//! DATABASE removes one while no connection is on it.
//!
//! A database is made under a name no database has (`.made-…`) and renamed into place
//! once it exists, and dropped by renaming it away (`.dropped-…`) before its files go:
//! each is one atomic rename, so a crash leaves it whole or not there, and the next
//! start removes what a crash left half made or half removed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use pmdb_engine::{Db, DbOptions};
use pmdb_sql::{Sessions, SqlEngine, SqlError, SqlSession};

use crate::activity::Activity;
use crate::error::ServerError;
use crate::pg_catalog::DatabaseNames;

/// Where CREATE DATABASE makes databases, and how it opens them.
#[derive(Clone, Debug)]
pub struct DatabaseStore {
    pub dir: PathBuf,
    pub options: DbOptions,
}

/// Names every PostgreSQL server has, and pmdb's own: clients that name them mean the
/// server's own database.
const RESERVED: [&str; 4] = ["pmdb", "postgres", "template0", "template1"];

/// Prefixes of directories in the store that hold no database.
const MADE: &str = ".made-";
const DROPPED: &str = ".dropped-";
/// The longest database name, as PostgreSQL's identifiers.
const MAX_NAME: usize = 63;

/// A database CREATE DATABASE made, and what its connections open sessions from.
pub struct Database {
    sessions: Sessions,
    /// Taken when the database closes (see its `Drop`).
    engine: Option<SqlEngine>,
}

impl Drop for Database {
    fn drop(&mut self) {
        // An engine owns a runtime, which must not be dropped on a runtime's thread.
        if let Some(engine) = self.engine.take() {
            let _ = std::thread::spawn(move || drop(engine)).join();
        }
    }
}

pub struct Databases {
    main: Sessions,
    store: Option<DatabaseStore>,
    made: Mutex<BTreeMap<String, Arc<Database>>>,
    /// Their names, which every database's `pg_database` lists.
    names: DatabaseNames,
    /// What each database's pg_catalog is built with.
    users: Vec<String>,
    activity: Arc<Activity>,
}

/// The directory of database `name` in the store: the name where it is made of
/// lower-case letters, digits, `_` and `$`, else each other byte as `%XX`.
fn directory_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        match b {
            b'a'..=b'z' | b'0'..=b'9' | b'_' | b'$' => out.push(char::from(b)),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The name a directory of the store holds the database of.
fn database_name(directory: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(directory.len());
    let mut rest = directory.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

fn io_error(what: String) -> impl FnOnce(std::io::Error) -> SqlError {
    move |e| SqlError::user("58030", format!("{what}: {e}"))
}

/// Opens the database in `dir` on a thread of its own: opening may run statements on the
/// engine's runtime, which a runtime's thread must not wait for.
fn open_engine(dir: PathBuf, options: DbOptions) -> Result<SqlEngine, String> {
    std::thread::spawn(move || {
        let db = Db::open(&dir, options).map_err(|e| e.to_string())?;
        SqlEngine::open(db).map_err(|e| e.to_string())
    })
    .join()
    .map_err(|_| "opening the database panicked".to_owned())?
}

impl Databases {
    /// The server's own database (`main`), and the databases of `store` (if the server
    /// makes databases), opened with pg_catalog as `users` and `activity` show it.
    pub fn open(
        main: Sessions,
        store: Option<DatabaseStore>,
        users: Vec<String>,
        activity: Arc<Activity>,
    ) -> Result<Databases, ServerError> {
        let databases = Databases {
            main,
            store,
            made: Mutex::new(BTreeMap::new()),
            names: DatabaseNames::default(),
            users,
            activity,
        };
        databases.install(&databases.main)?;
        let Some(store) = &databases.store else {
            return Ok(databases);
        };
        let entries = match std::fs::read_dir(&store.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(databases),
            Err(source) => {
                return Err(ServerError::Io {
                    what: format!("cannot read {}", store.dir.display()),
                    source,
                });
            }
        };
        for entry in entries {
            let entry = entry.map_err(|source| ServerError::Io {
                what: format!("cannot read {}", store.dir.display()),
                source,
            })?;
            let path = entry.path();
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if file_name.starts_with(MADE) || file_name.starts_with(DROPPED) {
                // A CREATE DATABASE that never finished, or a DROP that did.
                log::info!("removing {}, left by a crash", path.display());
                std::fs::remove_dir_all(&path).map_err(|source| ServerError::Io {
                    what: format!("cannot remove {}", path.display()),
                    source,
                })?;
                continue;
            }
            let Some(name) = database_name(&file_name).filter(|n| directory_name(n) == file_name)
            else {
                return Err(ServerError::Options(format!(
                    "{} names no database (its databases are made by CREATE DATABASE)",
                    path.display()
                )));
            };
            let mut options = store.options.clone();
            options.create_if_missing = false;
            let engine = open_engine(path.clone(), options).map_err(|e| {
                ServerError::Options(format!("database {name:?} in {}: {e}", path.display()))
            })?;
            let database = databases.database(engine)?;
            databases.made.lock().insert(name, Arc::new(database));
        }
        databases.list_names(&databases.made.lock());
        Ok(databases)
    }

    fn install(&self, sessions: &Sessions) -> Result<(), ServerError> {
        crate::pg_catalog::install(
            sessions,
            self.users.clone(),
            Arc::clone(&self.activity),
            Arc::clone(&self.names),
        )
        .map_err(|e| ServerError::Catalog(e.to_string()))
    }

    /// Shows the names of `made` in `pg_database`.
    fn list_names(&self, made: &BTreeMap<String, Arc<Database>>) {
        *self.names.write() = made.keys().cloned().collect();
    }

    fn database(&self, engine: SqlEngine) -> Result<Database, ServerError> {
        let sessions = engine.sessions();
        self.install(&sessions)?;
        Ok(Database {
            sessions,
            engine: Some(engine),
        })
    }

    /// A session on the server's own database.
    pub fn main_session(&self) -> SqlSession {
        adapted(self.main.open())
    }

    /// A session on database `name`, if CREATE DATABASE made it (its handle, which the
    /// connection keeps while it is on it), else `None`: the server's own.
    pub fn session(&self, name: &str) -> Option<(SqlSession, Arc<Database>)> {
        let database = Arc::clone(self.made.lock().get(name)?);
        Some((adapted(database.sessions.open()), database))
    }

    /// CREATE DATABASE `name`: a database of its own, empty, as PostgreSQL's from its
    /// template. `connected`: the name the creating client connected with, which names
    /// the server's own database when CREATE DATABASE did not make it.
    pub fn create(&self, name: &str, connected: &str) -> Result<(), SqlError> {
        let Some(store) = &self.store else {
            return Err(SqlError::unsupported(
                "CREATE DATABASE (this server serves its one database)",
            ));
        };
        check_name(name)?;
        let exists = || SqlError::user("42P04", format!("database \"{name}\" already exists"));
        if name == connected || RESERVED.contains(&name) {
            return Err(exists());
        }
        // Held while the database is made: two CREATE DATABASE of one name make one.
        let mut made = self.made.lock();
        if made.contains_key(name) {
            return Err(exists());
        }
        if !store.dir.exists() {
            std::fs::create_dir_all(&store.dir)
                .map_err(io_error(format!("cannot make {}", store.dir.display())))?;
            // The store's own entry lasts once the directory holding it is synced.
            if let Some(parent) = store.dir.parent() {
                sync_directory(parent)?;
            }
        }
        let target = store.dir.join(directory_name(name));
        let staging = store.dir.join(format!(
            "{MADE}{}-{}",
            directory_name(name),
            std::process::id()
        ));
        let made_engine = (|| {
            let mut options = store.options.clone();
            options.create_if_missing = true;
            // Made and closed, then moved into place and opened there: a database is
            // opened where it stays.
            let engine = open_engine(staging.clone(), options.clone())
                .map_err(|e| SqlError::user("58030", format!("cannot make database: {e}")))?;
            std::thread::spawn(move || drop(engine))
                .join()
                .map_err(|_| SqlError::Query("closing the new database panicked".into()))?;
            rename(&staging, &target)?;
            options.create_if_missing = false;
            open_engine(target.clone(), options)
                .map_err(|e| SqlError::user("58030", format!("cannot open database: {e}")))
        })();
        let engine = match made_engine {
            Ok(engine) => engine,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(e);
            }
        };
        let database = self
            .database(engine)
            .map_err(|e| SqlError::Query(e.to_string()))?;
        made.insert(name.to_owned(), Arc::new(database));
        self.list_names(&made);
        Ok(())
    }

    /// DROP DATABASE [IF EXISTS] `name`, which no connection may be on (55006); the
    /// server's own database cannot be dropped. `current`: the database of the dropping
    /// client's connection, if CREATE DATABASE made it.
    pub fn drop_database(
        &self,
        name: &str,
        if_exists: bool,
        connected: &str,
        current: Option<&Arc<Database>>,
    ) -> Result<bool, SqlError> {
        let mut made = self.made.lock();
        let Some(database) = made.get(name) else {
            if name == connected || RESERVED.contains(&name) || self.store.is_none() {
                return Err(SqlError::unsupported(format!(
                    "DROP DATABASE of the server's own database \"{name}\""
                )));
            }
            if if_exists {
                return Ok(false);
            }
            return Err(SqlError::user(
                "3D000",
                format!("database \"{name}\" does not exist"),
            ));
        };
        if current.is_some_and(|c| Arc::ptr_eq(c, database)) {
            return Err(SqlError::user(
                "55006",
                "cannot drop the currently open database",
            ));
        }
        // The store's map holds one handle, each connection on it another.
        let others = Arc::strong_count(database) - 1;
        if others > 0 {
            return Err(SqlError::user(
                "55006",
                format!(
                    "database \"{name}\" is being accessed by other users (there {})",
                    if others == 1 {
                        "is 1 other session using the database".to_owned()
                    } else {
                        format!("are {others} other sessions using the database")
                    }
                ),
            ));
        }
        let store = self.store.as_ref().expect("a made database has a store");
        let Some(database) = made.remove(name) else {
            unreachable!("the database was found above");
        };
        drop(database);
        self.list_names(&made);
        let dir = store.dir.join(directory_name(name));
        let dropped = store.dir.join(format!(
            "{DROPPED}{}-{}",
            directory_name(name),
            std::process::id()
        ));
        rename(&dir, &dropped)?;
        drop(made);
        // Gone once renamed: what a crash leaves of its files, the next start removes.
        if let Err(e) = std::fs::remove_dir_all(&dropped) {
            log::warn!("cannot remove {}: {e}", dropped.display());
        }
        Ok(true)
    }
}

fn rename(from: &Path, to: &Path) -> Result<(), SqlError> {
    std::fs::rename(from, to).map_err(io_error(format!(
        "cannot rename {} to {}",
        from.display(),
        to.display()
    )))?;
    // The rename lasts once the directory holding both is on the medium.
    match to.parent() {
        Some(parent) => sync_directory(parent),
        None => Ok(()),
    }
}

fn sync_directory(dir: &Path) -> Result<(), SqlError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error(format!("cannot sync {}", dir.display())))
}

/// A database name PostgreSQL takes: 1 to 63 bytes, no zero byte.
fn check_name(name: &str) -> Result<(), SqlError> {
    if name.is_empty() || name.len() > MAX_NAME || name.contains('\0') {
        return Err(SqlError::user(
            "42602",
            format!("invalid database name {name:?} (1 to {MAX_NAME} bytes)"),
        ));
    }
    Ok(())
}

/// `session`, with the statements of its DO blocks adapted as the server adapts its
/// clients' (PostgreSQL's catalog queries).
fn adapted(mut session: SqlSession) -> SqlSession {
    session.adapt_statements_with(Arc::new(crate::pg_catalog::adapt));
    session
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_directories_map_both_ways() {
        for name in [
            "app",
            "test_app",
            "Mixed Case",
            "a/b",
            "..",
            ".made-x",
            "é$1",
        ] {
            let dir = directory_name(name);
            assert!(!dir.starts_with('.') && !dir.contains('/'), "{dir}");
            assert_eq!(database_name(&dir).as_deref(), Some(name));
        }
        assert_eq!(directory_name("test_app"), "test_app");
        assert_eq!(database_name("%zz"), None);
        assert_eq!(database_name("%4"), None);
    }
}
