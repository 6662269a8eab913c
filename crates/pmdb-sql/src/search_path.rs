//! A session's search path, as PostgreSQL's `search_path` setting gives it: the schemas
//! an unqualified relation name is looked up in, in order, after the session's
//! temporary schema; the first of them that exists is where an unqualified CREATE makes
//! its relation. `$user` (pmdb has no schema per role), `pg_catalog` (the catalog's
//! relations are qualified before this, [`crate::names`]) and `pg_temp` (always looked
//! in first) take no place of their own.
//!
//! The names are resolved once, before anything else reads the statement, as the
//! temporary relations' are ([`crate::temp_tables`]): each unqualified name is rewritten
//! as the schema-qualified name it finds, so every path after it (DataFusion's planner,
//! the fast path, DDL and DML) sees the relation it means. A path of `public` alone with
//! no temporary schema leaves the statement as it is: unqualified names already mean
//! `public`'s.
//!
//! The path is carried in the session's DataFusion options too (a configuration
//! extension), so that `current_schema()` and `pg_table_is_visible` read the caller's.

use std::any::Any;
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::common::config::{ConfigEntry, ConfigExtension, ExtensionOptions};
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::sql::sqlparser::ast::{
    ColumnOption, CopySource, Ident, ObjectName, ObjectType, Query, Statement, TableConstraint,
    TableFactor, Visit, Visitor, visit_relations_mut,
};
use parking_lot::RwLock;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, state};
use crate::names::{PUBLIC, RelName, ident_name};
use crate::temp_tables::TempSchema;

/// Entries of a path that name no schema to look in here.
const PSEUDO: [&str; 3] = ["$user", "pg_catalog", "pg_temp"];

/// A session's search path, shared by its statements and its DataFusion options: a SET
/// reaches both.
#[derive(Clone, Debug)]
pub struct SearchPath(Arc<RwLock<Arc<[String]>>>);

impl Default for SearchPath {
    fn default() -> SearchPath {
        SearchPath(Arc::new(RwLock::new(Arc::from(vec![PUBLIC.to_owned()]))))
    }
}

/// The schemas a `search_path` value lists, in order: each entry's name (unquoted
/// names fold to lower case), the pseudo-entries left out.
pub fn parse(value: &str) -> Vec<String> {
    let mut schemas: Vec<String> = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let name = match entry.strip_prefix('"').and_then(|e| e.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => entry.to_lowercase(),
        };
        if !PSEUDO.contains(&name.as_str()) && !schemas.contains(&name) {
            schemas.push(name);
        }
    }
    schemas
}

impl SearchPath {
    /// Takes `value`, a `search_path` setting's text.
    pub fn set(&self, value: &str) {
        *self.0.write() = Arc::from(parse(value));
    }

    /// The schemas looked in, in order.
    pub fn schemas(&self) -> Arc<[String]> {
        Arc::clone(&self.0.read())
    }

    /// The schema an unqualified CREATE makes its relation in, PostgreSQL's
    /// `current_schema()`: the path's first that exists.
    pub fn current(&self, catalog: &Catalog) -> Option<String> {
        self.schemas()
            .iter()
            .find(|s| catalog.schema_exists(s))
            .cloned()
    }

    /// Whether an unqualified name finds relations of `schema` (when no schema before
    /// it in the path has one of that name).
    pub fn is_searched(&self, schema: &str) -> bool {
        self.schemas().iter().any(|s| s == schema)
    }

    /// Rewrites the names in `s` that the session's temporary schema or its path
    /// resolve, as the names they resolve to; a name a CREATE gives its new relation
    /// is put in the current schema ([`SearchPath::current`]; 3F000 without one).
    pub(crate) fn qualify(
        &self,
        catalog: &Catalog,
        temp: &TempSchema,
        s: &mut Statement,
    ) -> Result<()> {
        let schemas = self.schemas();
        let public_only = schemas.len() == 1 && schemas[0] == PUBLIC;
        let temp_schema = catalog
            .schema_exists(&temp.name)
            .then_some(temp.name.as_str());
        if public_only && temp_schema.is_none() {
            return Ok(());
        }
        let resolver = Resolver {
            catalog,
            temp: temp_schema,
            schemas: &schemas,
            not_relations: not_relations(s),
        };
        let created = match s {
            Statement::CreateTable(c) => Some(c.name.clone()),
            Statement::CreateView(v) => Some(v.name.clone()),
            Statement::CreateSequence { name, .. } => Some(name.clone()),
            _ => None,
        };
        let _ = visit_relations_mut(s, |name| {
            resolver.qualify(name);
            ControlFlow::<()>::Continue(())
        });
        if let Some(given) = created {
            let name = match s {
                Statement::CreateTable(c) => &mut c.name,
                Statement::CreateView(v) => &mut v.name,
                Statement::CreateSequence { name, .. } => name,
                _ => unreachable!("a statement that creates a relation"),
            };
            *name = self.created(catalog, given)?;
        }
        match s {
            Statement::CreateTable(c) => {
                for column in &mut c.columns {
                    for option in &mut column.options {
                        if let ColumnOption::ForeignKey(fk) = &mut option.option {
                            resolver.qualify(&mut fk.foreign_table);
                        }
                    }
                }
                for constraint in &mut c.constraints {
                    if let TableConstraint::ForeignKey(fk) = constraint {
                        resolver.qualify(&mut fk.foreign_table);
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
                    resolver.qualify(name);
                }
            }
            Statement::Copy {
                source: CopySource::Table { table_name, .. },
                ..
            } => resolver.qualify(table_name),
            _ => {}
        }
        Ok(())
    }

    /// Where a CREATE that names its relation `given` makes it: an unqualified name in
    /// the current schema (left unqualified when that is `public`, which unqualified
    /// names mean).
    fn created(&self, catalog: &Catalog, given: ObjectName) -> Result<ObjectName> {
        if given.0.len() != 1 {
            return Ok(given);
        }
        match self.current(catalog) {
            Some(schema) if schema == PUBLIC => Ok(given),
            Some(schema) => {
                let relation = crate::names::object_name(&given)?.name;
                Ok(crate::ast_build::relation(&RelName::new(schema, relation)))
            }
            None => Err(SqlError::user(
                state::INVALID_SCHEMA_NAME,
                "no schema has been selected to create in",
            )),
        }
    }
}

/// The relation a text argument names (`nextval('s')`, `'t'::regclass`) for a caller
/// with search path `schemas`: a qualified name as it is written, an unqualified one in
/// the first schema where `holds` finds it (else in the path's first, or `public` with
/// an empty path, where it is reported missing).
pub fn relation_named(
    schemas: &[String],
    text: &str,
    holds: impl Fn(&RelName) -> bool,
) -> Result<RelName> {
    let name = crate::names::parse_relation(text)?;
    let named = crate::names::object_name(&name)?;
    if name.0.len() != 1 {
        return Ok(named);
    }
    let found = schemas
        .iter()
        .map(|s| RelName::new(s.as_str(), named.name.as_str()))
        .find(|n| holds(n));
    Ok(found.unwrap_or_else(|| match schemas.first() {
        Some(first) => RelName::new(first.as_str(), named.name),
        None => named,
    }))
}

/// Resolves a statement's unqualified names.
struct Resolver<'a> {
    catalog: &'a Catalog,
    /// The session's temporary schema, once it has one.
    temp: Option<&'a str>,
    schemas: &'a [String],
    /// Names in FROM that are no relation of the catalog: the statement's WITH
    /// clauses' and its table functions'.
    not_relations: HashSet<String>,
}

impl Resolver<'_> {
    fn qualify(&self, name: &mut ObjectName) {
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| p.as_ident().map(ident_name))
            .collect();
        if parts.len() != name.0.len() {
            return;
        }
        let (schema, relation) = match parts.as_slice() {
            [schema, relation] if schema == crate::temp_tables::ALIAS => match self.temp {
                Some(temp) => (temp, relation),
                None => return,
            },
            [relation] if !self.not_relations.contains(relation) => match self.find(relation) {
                Some(schema) => (schema, relation),
                None => return,
            },
            _ => return,
        };
        *name = ObjectName::from(vec![
            Ident::with_quote('"', schema),
            Ident::with_quote('"', relation.as_str()),
        ]);
    }

    /// The schema an unqualified `relation` is found in: the temporary one, then the
    /// path's in order. A name found in none is left to mean `public`'s when the path
    /// has `public`, else put in the path's first schema, where it is reported missing.
    fn find(&self, relation: &str) -> Option<&str> {
        let holds = |schema: &str| {
            self.catalog
                .names_a_relation(&RelName::new(schema, relation))
        };
        if let Some(temp) = self.temp.filter(|t| holds(t)) {
            return Some(temp);
        }
        if let Some(found) = self.schemas.iter().find(|s| holds(s)) {
            return Some(found);
        }
        match self.schemas.iter().any(|s| s == PUBLIC) {
            true => None,
            false => self.schemas.first().map(String::as_str),
        }
    }
}

/// The names in `s` that read as relations and are none of the catalog's: those WITH
/// clauses give their queries, and table functions' (`FROM generate_series(1, 3)`).
fn not_relations(s: &Statement) -> HashSet<String> {
    struct Names(HashSet<String>);
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if let Some(with) = &query.with {
                for cte in &with.cte_tables {
                    self.0.insert(ident_name(&cte.alias.name));
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name,
                args: Some(_),
                ..
            } = factor
                && let [part] = name.0.as_slice()
                && let Some(ident) = part.as_ident()
            {
                self.0.insert(ident_name(ident));
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names(HashSet::new());
    let _ = s.visit(&mut names);
    names.0
}

impl ExtensionOptions for SearchPath {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, _value: &str) -> DfResult<()> {
        Err(DataFusionError::Configuration(format!(
            "{}.{key} is set with SET search_path",
            SearchPath::PREFIX
        )))
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        Vec::new()
    }
}

impl ConfigExtension for SearchPath {
    const PREFIX: &'static str = "pmdb_search_path";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_read_as_postgresql_reads_them() {
        assert_eq!(parse("public"), ["public"]);
        assert_eq!(parse("\"$user\", public"), ["public"]);
        assert_eq!(
            parse("Tenant_A, \"Mixed\"\"Case\", public"),
            ["tenant_a", "Mixed\"Case", "public"]
        );
        assert_eq!(parse("pg_catalog, a, pg_temp, a"), ["a"]);
        assert!(parse("").is_empty());
    }
}
