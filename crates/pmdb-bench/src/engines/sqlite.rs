//! SQLite through rusqlite (bundled): a `WITHOUT ROWID` table keyed by the record key, one
//! connection per thread. Durable is WAL with `synchronous=FULL` (every commit fsyncs
//! the WAL); relaxed is WAL with `synchronous=OFF`.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use super::interface::{Durability, Engine, Result, Worker};

pub struct SqliteEngine {
    path: PathBuf,
    durability: Durability,
}

impl SqliteEngine {
    pub fn open(dir: &Path, durability: Durability) -> Result<SqliteEngine> {
        let engine = SqliteEngine {
            path: dir.join("usertable.db"),
            durability,
        };
        engine.connect()?.execute_batch(
            "CREATE TABLE IF NOT EXISTS usertable (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;",
        )?;
        Ok(engine)
    }

    fn connect(&self) -> Result<Connection> {
        let conn = Connection::open(&self.path)?;
        let sync = match self.durability {
            Durability::Durable => "FULL",
            Durability::Relaxed => "OFF",
        };
        conn.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous={sync}; PRAGMA busy_timeout=10000;"
        ))?;
        Ok(conn)
    }
}

impl Engine for SqliteEngine {
    fn name(&self) -> String {
        format!("SQLite {} (rusqlite, bundled)", rusqlite::version())
    }

    fn settings(&self) -> String {
        match self.durability {
            Durability::Durable => "journal_mode=WAL, synchronous=FULL".into(),
            Durability::Relaxed => "journal_mode=WAL, synchronous=OFF".into(),
        }
    }

    fn worker(&self) -> Result<Box<dyn Worker + '_>> {
        Ok(Box::new(SqliteWorker {
            conn: self.connect()?,
        }))
    }
}

struct SqliteWorker {
    conn: Connection,
}

impl Worker for SqliteWorker {
    fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.conn
            .prepare_cached("INSERT OR REPLACE INTO usertable (k, v) VALUES (?1, ?2)")?
            .execute(params![key, value])?;
        Ok(())
    }

    fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE usertable SET v = ?2 WHERE k = ?1")?
            .execute(params![key, value])?;
        Ok(())
    }

    fn read(&mut self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let v: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT v FROM usertable WHERE k = ?1")?
            .query_row(params![key], |row| row.get(0))
            .optional()?;
        Ok(match v {
            Some(v) => {
                *out = v;
                true
            }
            None => false,
        })
    }

    fn scan(&mut self, start: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT v FROM usertable WHERE k >= ?1 ORDER BY k LIMIT ?2")?;
        let mut rows = stmt.query(params![start, count as i64])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            *out = row.get(0)?;
            n += 1;
        }
        Ok(n)
    }
}
