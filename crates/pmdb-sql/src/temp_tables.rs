//! Temporary relations, as PostgreSQL has them: `CREATE TEMPORARY TABLE` (or VIEW, or a
//! view over temporary relations) makes the relation in a schema of the session's own,
//! `pg_temp_<n>`, made with the first one; a name the statement does not qualify finds
//! the session's temporary relation before one of `public` (`pg_temp.name` names it
//! too); the schema and all it holds are dropped when the session closes, and whatever
//! a session that ended without closing left is dropped at the next open.
//!
//! The names are resolved once, before anything else reads the statement, with the
//! search path's ([`crate::search_path`]): each name a temporary relation answers to is
//! rewritten as `pg_temp_<n>.name`, so every path after it (DataFusion's planner, the
//! fast path, DDL and DML) sees an ordinary schema-qualified name.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::sql::sqlparser::ast::{ObjectName, Statement};

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, state};
use crate::names::RelName;

/// What `pg_temp` names: the session's own temporary schema.
pub(crate) const ALIAS: &str = "pg_temp";
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
