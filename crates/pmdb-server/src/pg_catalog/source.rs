//! What `pg_catalog` is built from: the SQL catalog's tables as the reading session
//! sees them, the server's roles and connections, and the name the database goes by.

use std::sync::Arc;

// The owner of every object pmdb shows: the bootstrap role.
use pmdb_sql::OWNER;
use pmdb_sql::catalog::{Catalog, CatalogImage, Viewer};
use pmdb_sql::schema::TableDef;

use super::oids;
use crate::activity::Activity;
use crate::session_statements::SessionStatements;

/// The names of the databases CREATE DATABASE made, as `pg_database` lists them.
pub type DatabaseNames = Arc<parking_lot::RwLock<Vec<String>>>;

const DATABASE: &str = "pmdb";
/// Where the oids of the server's other roles start.
const FIRST_ROLE: i64 = 16_000;

/// What every read of `pg_catalog` starts from, one for the server.
pub struct Origin {
    catalog: Arc<Catalog>,
    users: Vec<String>,
    activity: Arc<Activity>,
    databases: DatabaseNames,
    /// The search path of a caller with no session of its own.
    public: String,
}

impl Origin {
    pub fn new(
        catalog: Arc<Catalog>,
        mut users: Vec<String>,
        activity: Arc<Activity>,
        databases: DatabaseNames,
    ) -> Origin {
        users.retain(|u| u != OWNER);
        users.sort();
        users.dedup();
        Origin {
            catalog,
            users,
            activity,
            databases,
            public: pmdb_sql::names::PUBLIC.to_owned(),
        }
    }

    /// The catalog as `viewer` reads it: as last committed while another session's
    /// transaction changes it, as PostgreSQL's snapshot shows its system catalog
    /// (`None`: as it is now).
    pub fn read(self: &Arc<Self>, viewer: Option<Viewer>) -> Source {
        Source {
            image: self.catalog.image_seen_by(viewer),
            origin: Arc::clone(self),
            search_path: None,
            statements: None,
        }
    }
}

/// One read of `pg_catalog`: a relation's rows or a function's call.
pub struct Source {
    origin: Arc<Origin>,
    image: CatalogImage,
    /// The calling session's search path (`None`: a caller with no session).
    search_path: Option<Arc<[String]>>,
    /// The calling session's statements prepared by name (`None`: a caller with no
    /// session, which has none).
    statements: Option<Arc<SessionStatements>>,
}

impl Source {
    /// The read as the session with `search_path` makes it.
    pub fn searching(mut self, search_path: Arc<[String]>) -> Source {
        self.search_path = Some(search_path);
        self
    }

    /// The read as the session whose statements prepared by name are `statements` makes it.
    pub fn preparing(mut self, statements: Option<Arc<SessionStatements>>) -> Source {
        self.statements = statements;
        self
    }

    /// The calling session's statements prepared by name.
    pub fn statements(&self) -> Option<&SessionStatements> {
        self.statements.as_deref()
    }

    /// The schemas an unqualified name is looked up in, in order, after the session's
    /// temporary one.
    pub fn search_path(&self) -> &[String] {
        match &self.search_path {
            Some(path) => path,
            None => std::slice::from_ref(&self.origin.public),
        }
    }

    /// The server's connections.
    pub fn activity(&self) -> &Activity {
        &self.origin.activity
    }

    pub fn catalog(&self) -> &CatalogImage {
        &self.image
    }

    /// Every table's definition, in the order of their ids.
    pub fn tables(&self) -> Vec<TableDef> {
        let mut defs: Vec<TableDef> = self
            .image
            .tables()
            .iter()
            .map(|t| t.def().clone())
            .collect();
        defs.sort_by_key(|d| d.id);
        defs
    }

    /// The oid of schema `name` (every relation's schema has one).
    pub fn namespace(&self, name: &str) -> i64 {
        oids::namespace(&self.image, name).unwrap_or(oids::PUBLIC_NAMESPACE)
    }

    pub fn owner(&self) -> &str {
        OWNER
    }

    pub fn database(&self) -> &str {
        DATABASE
    }

    /// The databases CREATE DATABASE made, besides the server's own.
    pub fn made_databases(&self) -> Vec<String> {
        self.origin.databases.read().clone()
    }

    /// Each role's oid and name.
    pub fn roles(&self) -> impl Iterator<Item = (i64, &str)> {
        std::iter::once((oids::BOOTSTRAP_ROLE, OWNER)).chain(
            self.origin
                .users
                .iter()
                .enumerate()
                .map(|(i, u)| (FIRST_ROLE + i as i64, u.as_str())),
        )
    }

    pub fn role_name(&self, oid: i64) -> Option<&str> {
        self.roles().find(|(o, _)| *o == oid).map(|(_, n)| n)
    }
}
