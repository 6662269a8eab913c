//! A session's statements prepared by name, shared by the connection's handler (which
//! keeps them: [`crate::handler`]) and its queries of `pg_prepared_statements`, which
//! find them as an extension of the session's DataFusion configuration.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use pmdb_sql::Prepared;

/// A statement prepared by name.
pub struct Named {
    /// `None`: an empty statement.
    pub prepared: Option<Arc<Prepared>>,
    /// The text the client gave: the Parse's query, or the Query message the PREPARE
    /// came in.
    pub statement: String,
    /// When it was prepared, in microseconds since the Unix epoch.
    pub prepared_at: i64,
    /// Made by SQL's PREPARE (else by a Parse).
    pub from_sql: bool,
    /// How often it ran. Each run takes the plan made when it was prepared, its
    /// parameters bound in: a generic plan, in PostgreSQL's words.
    pub runs: i64,
}

/// A session's statements prepared by name.
#[derive(Default)]
pub struct SessionStatements(RwLock<HashMap<String, Named>>);

impl SessionStatements {
    pub fn read(&self) -> RwLockReadGuard<'_, HashMap<String, Named>> {
        self.0.read()
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, HashMap<String, Named>> {
        self.0.write()
    }
}
