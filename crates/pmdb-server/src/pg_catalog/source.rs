//! What `pg_catalog` is built from: the SQL catalog's tables, the server's roles and
//! connections, and the name the database goes by.

use std::sync::Arc;

// The owner of every object pmdb shows: the bootstrap role.
use pmdb_sql::OWNER;
use pmdb_sql::catalog::Catalog;
use pmdb_sql::schema::TableDef;

use super::oids;
use crate::activity::Activity;

const DATABASE: &str = "pmdb";
/// Where the oids of the server's other roles start.
const FIRST_ROLE: i64 = 16_000;

pub struct Source {
    catalog: Arc<Catalog>,
    users: Vec<String>,
    activity: Arc<Activity>,
}

impl Source {
    pub fn new(catalog: Arc<Catalog>, mut users: Vec<String>, activity: Arc<Activity>) -> Source {
        users.retain(|u| u != OWNER);
        users.sort();
        users.dedup();
        Source {
            catalog,
            users,
            activity,
        }
    }

    /// The server's connections.
    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Every table's definition, in the order of their ids.
    pub fn tables(&self) -> Vec<TableDef> {
        let mut defs: Vec<TableDef> = self
            .catalog
            .tables()
            .iter()
            .map(|t| t.def().clone())
            .collect();
        defs.sort_by_key(|d| d.id);
        defs
    }

    /// The oid of schema `name` (every relation's schema has one).
    pub fn namespace(&self, name: &str) -> i64 {
        oids::namespace(&self.catalog, name).unwrap_or(oids::PUBLIC_NAMESPACE)
    }

    pub fn owner(&self) -> &str {
        OWNER
    }

    pub fn database(&self) -> &str {
        DATABASE
    }

    /// Each role's oid and name.
    pub fn roles(&self) -> impl Iterator<Item = (i64, &str)> {
        std::iter::once((oids::BOOTSTRAP_ROLE, OWNER)).chain(
            self.users
                .iter()
                .enumerate()
                .map(|(i, u)| (FIRST_ROLE + i as i64, u.as_str())),
        )
    }

    pub fn role_name(&self, oid: i64) -> Option<&str> {
        self.roles().find(|(o, _)| *o == oid).map(|(_, n)| n)
    }
}
