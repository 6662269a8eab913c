//! CREATE SCHEMA and DROP SCHEMA. A schema is one catalog entry; the relations in it
//! name it in their own entries, so DROP SCHEMA … CASCADE drops each of them as its own
//! DROP would (views, then tables with the sequences they own, then the other
//! sequences), all in the DDL's transaction.

use std::sync::Arc;

use pmdb_engine::WriteBatch;

use super::Catalog;
use crate::error::{Result, SqlError, state};
use crate::names::{PUBLIC, RelName};
use crate::namespace::{NamespaceDef, namespace_key};
use crate::table::Table;

/// Schemas every database shows that no user made.
const SYSTEM_SCHEMAS: [&str; 2] = ["pg_catalog", "information_schema"];

impl Catalog {
    /// CREATE SCHEMA `name` (its id given here). `Ok(false)` if it exists and
    /// `if_not_exists` was given.
    pub fn create_schema(&self, name: &str, if_not_exists: bool) -> Result<bool> {
        let _ddl = self.ddl();
        if self.schema_exists(name) || SYSTEM_SCHEMAS.contains(&name) {
            return if if_not_exists {
                Ok(false)
            } else {
                Err(SqlError::user(
                    state::DUPLICATE_SCHEMA,
                    format!("schema \"{name}\" already exists"),
                ))
            };
        }
        if name.starts_with("pg_") {
            return Err(SqlError::user(
                state::RESERVED_NAME,
                format!("unacceptable schema name \"{name}\""),
            )
            .with_detail("The prefix \"pg_\" is reserved for system schemas."));
        }
        self.make_schema(name)?;
        Ok(true)
    }

    /// Makes a session's temporary schema `name`, unless it exists.
    pub(crate) fn create_temporary_schema(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl();
        if !self.schema_exists(name) {
            self.make_schema(name)?;
        }
        Ok(())
    }

    fn make_schema(&self, name: &str) -> Result<()> {
        let cat = self.catalog_subtable()?;
        let def = NamespaceDef {
            id: self.take_ids(&cat, 1)?,
            name: name.to_owned(),
        };
        def.validate()
            .map_err(|m| SqlError::user(state::INVALID_NAME, m))?;
        let mut batch = WriteBatch::new();
        batch.put(&cat, namespace_key(name), def.encode());
        self.write(batch)?;
        self.schemas.write().insert(def.name.clone(), Arc::new(def));
        Ok(())
    }

    /// DROP SCHEMA `name`: refused (2BP01) while relations live in it unless `cascade`,
    /// which drops them first (a sequence stays refused while a column default of
    /// another schema takes values from it: `uses(table, column, sequence)`).
    /// `Ok(false)` if it does not exist and `if_exists` was given.
    pub fn drop_schema(
        &self,
        name: &str,
        if_exists: bool,
        cascade: bool,
        uses: impl Fn(&Table, usize, &RelName) -> bool,
    ) -> Result<bool> {
        let _ddl = self.ddl();
        if name == PUBLIC || SYSTEM_SCHEMAS.contains(&name) {
            return Err(SqlError::unsupported(format!(
                "DROP SCHEMA {name} (pmdb's schema {name} always exists)"
            )));
        }
        if !self.schema_exists(name) {
            return if if_exists {
                Ok(false)
            } else {
                Err(SqlError::user(
                    state::INVALID_SCHEMA_NAME,
                    format!("schema \"{name}\" does not exist"),
                ))
            };
        }
        let inside = |n: &RelName| n.schema == name;
        let views: Vec<RelName> = self
            .views
            .read()
            .keys()
            .filter(|n| inside(n))
            .cloned()
            .collect();
        let tables: Vec<RelName> = self
            .tables
            .read()
            .keys()
            .filter(|n| inside(n))
            .cloned()
            .collect();
        let sequences: Vec<RelName> = self
            .sequences
            .read()
            .iter()
            .filter(|(n, s)| inside(n) && s.def().owned_by.is_none())
            .map(|(n, _)| n.clone())
            .collect();
        let types = self.enums_in(name);
        let mut domains = self.domains_in(name);
        // Those over another first: a domain is dropped only once none is over it.
        domains.sort_by_key(|n| std::cmp::Reverse(self.domain_type(n).map(|d| d.def.id)));
        let empty = views.is_empty()
            && tables.is_empty()
            && sequences.is_empty()
            && types.is_empty()
            && domains.is_empty();
        if !cascade && !empty {
            // Each on a line, in the order they were made, as PostgreSQL lists them.
            let mut held: Vec<(u64, &str, &RelName)> = Vec::new();
            for n in &tables {
                held.extend(self.table(n).map(|t| {
                    let kind = match t.def().materialized {
                        Some(_) => "materialized view",
                        None => "table",
                    };
                    (t.def().id, kind, n)
                }));
            }
            for n in &views {
                held.extend(self.view(n).map(|v| (v.id, "view", n)));
            }
            for n in &sequences {
                held.extend(self.sequence(n).map(|s| (s.def().id, "sequence", n)));
            }
            for n in &types {
                held.extend(self.enum_type(n).map(|t| (t.id, "type", n)));
            }
            for n in &domains {
                held.extend(self.domain_type(n).map(|d| (d.def.id, "type", n)));
            }
            held.sort_by_key(|h| h.0);
            let detail: Vec<String> = held
                .iter()
                .map(|(_, kind, n)| {
                    format!("{kind} {}.{} depends on schema {name}", n.schema, n.name)
                })
                .collect();
            return Err(SqlError::user(
                state::DEPENDENT_OBJECTS_STILL_EXIST,
                format!("cannot drop schema {name} because other objects depend on it"),
            )
            .with_detail(detail.join("\n")));
        }
        for v in &views {
            self.drop_view(v, true, true)?;
        }
        for t in &tables {
            self.drop_table(t, true, true)?;
        }
        for s in &sequences {
            self.drop_sequence(s, true, |t, c| uses(t, c, s))?;
        }
        for d in &domains {
            self.drop_domain(d, true, false)?;
        }
        for t in &types {
            self.drop_enum(t, true, false)?;
        }
        let mut batch = WriteBatch::new();
        batch.delete(&self.catalog_subtable()?, namespace_key(name));
        self.write(batch)?;
        self.schemas.write().remove(name);
        Ok(true)
    }
}
