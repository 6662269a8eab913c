//! Temporary relations, as PostgreSQL has them: `CREATE TEMPORARY TABLE` (or VIEW, or a
//! view over temporary relations) makes the relation in a schema of the session's own,
//! `pg_temp_<n>`, made with the first one; a name the statement does not qualify finds
//! the session's temporary relation before one of `public` (`pg_temp.name` names it
//! too); the schema and all it holds are dropped when the session closes, and whatever
//! a session that ended without closing left is dropped at the next open.
//!
//! The names are resolved once, before anything else reads the statement: each name a
//! temporary relation answers to is rewritten as `pg_temp_<n>.name`, so every path
//! after it (DataFusion's planner, the fast path, DDL and DML) sees an ordinary
//! schema-qualified name.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::sql::sqlparser::ast::{
    ColumnOption, CopySource, Ident, ObjectName, ObjectType, Statement, TableConstraint,
    visit_relations_mut,
};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, state};
use crate::names::{RelName, ident_name};

/// What `pg_temp` names: the session's own temporary schema.
const ALIAS: &str = "pg_temp";
/// Where the names of temporary schemas start.
pub(crate) const PREFIX: &str = "pg_temp_";

/// Numbers temporary schemas: no two sessions of a process share one.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Whether `schema` is a session's temporary schema.
pub fn is_temporary(schema: &str) -> bool {
    schema
        .strip_prefix(PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The name of a session's temporary schema (made when it first needs it).
#[derive(Clone)]
pub(crate) struct TempSchema {
    pub name: String,
}

impl TempSchema {
    pub fn new() -> TempSchema {
        TempSchema {
            name: format!("{PREFIX}{}", NEXT.fetch_add(1, Ordering::Relaxed)),
        }
    }

    /// Rewrites the names in `s` that mean this session's temporary relations (or say
    /// `pg_temp`) as names in its schema. A name a CREATE gives its new relation is
    /// left alone: unqualified, it makes one in `public`, as in PostgreSQL.
    pub fn qualify(&self, catalog: &Catalog, s: &mut Statement) {
        if !catalog.schema_exists(&self.name) {
            return;
        }
        let created = match s {
            Statement::CreateTable(c) => Some(c.name.clone()),
            _ => None,
        };
        let _ = visit_relations_mut(s, |name| {
            self.qualify_name(catalog, name);
            ControlFlow::<()>::Continue(())
        });
        match s {
            Statement::CreateTable(c) => {
                if let Some(name) = created {
                    c.name = name;
                }
                for column in &mut c.columns {
                    for option in &mut column.options {
                        if let ColumnOption::ForeignKey(fk) = &mut option.option {
                            self.qualify_name(catalog, &mut fk.foreign_table);
                        }
                    }
                }
                for constraint in &mut c.constraints {
                    if let TableConstraint::ForeignKey(fk) = constraint {
                        self.qualify_name(catalog, &mut fk.foreign_table);
                    }
                }
            }
            Statement::Drop {
                object_type:
                    ObjectType::Table | ObjectType::View | ObjectType::Index | ObjectType::Sequence,
                names,
                ..
            } => {
                for name in names {
                    self.qualify_name(catalog, name);
                }
            }
            Statement::Copy {
                source: CopySource::Table { table_name, .. },
                ..
            } => self.qualify_name(catalog, table_name),
            _ => {}
        }
    }

    fn qualify_name(&self, catalog: &Catalog, name: &mut ObjectName) {
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| p.as_ident().map(ident_name))
            .collect();
        if parts.len() != name.0.len() {
            return;
        }
        let relation = match parts.as_slice() {
            [schema, relation] if schema == ALIAS => relation,
            [relation] if catalog.names_a_relation(&RelName::new(&self.name, relation)) => relation,
            _ => return,
        };
        *name = ObjectName::from(vec![
            Ident::with_quote('"', self.name.as_str()),
            Ident::with_quote('"', relation.as_str()),
        ]);
    }

    /// Whether `s` makes a temporary relation: `CREATE TEMPORARY TABLE` or `VIEW`, or
    /// a view over a temporary relation (temporary too, as in PostgreSQL).
    pub fn makes_temporary(&self, s: &Statement) -> bool {
        match s {
            Statement::CreateTable(c) => c.temporary,
            // A materialized view over one is refused (as in PostgreSQL).
            Statement::CreateView(v) => {
                !v.materialized && (v.temporary || self.is_read_by(&v.query))
            }
            _ => false,
        }
    }

    /// `s`, which [`TempSchema::makes_temporary`], as it runs: its name placed in this
    /// session's schema (made in the statement's transaction if it is not yet) and
    /// `TEMPORARY` taken off.
    pub fn made_temporary(&self, catalog: &Catalog, mut s: Statement) -> Result<Statement> {
        let name = match &mut s {
            Statement::CreateTable(c) => {
                c.temporary = false;
                &mut c.name
            }
            Statement::CreateView(v) => {
                v.temporary = false;
                &mut v.name
            }
            _ => return Ok(s),
        };
        *name = self.target(catalog, name)?;
        Ok(s)
    }

    /// Whether `query` reads a relation of this session's schema.
    fn is_read_by(&self, query: &datafusion::sql::sqlparser::ast::Query) -> bool {
        let found = datafusion::sql::sqlparser::ast::visit_relations(query, |name| {
            match crate::names::object_name(name) {
                Ok(r) if r.schema == self.name => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        });
        found.is_break()
    }

    /// Where `CREATE TEMPORARY … name` makes its relation: in this session's schema,
    /// which is made (in the statement's transaction) if it is not yet. A name
    /// qualified with another schema is refused, as in PostgreSQL.
    pub fn target(&self, catalog: &Catalog, name: &ObjectName) -> Result<ObjectName> {
        let relation = match crate::names::object_name(name) {
            Ok(r) if name.0.len() == 1 || r.schema == ALIAS || r.schema == self.name => r.name,
            Ok(_) => {
                return Err(SqlError::user(
                    state::INVALID_DEFINITION,
                    "cannot create temporary relation in non-temporary schema",
                ));
            }
            Err(e) => return Err(e),
        };
        catalog.create_temporary_schema(&self.name)?;
        Ok(crate::ast_build::relation(&RelName::new(
            self.name.clone(),
            relation,
        )))
    }
}
