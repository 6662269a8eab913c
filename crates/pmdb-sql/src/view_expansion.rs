//! Views in statements ([`crate::create_view`] makes them). Before a statement is planned, each
//! reference to a view (a table name that is a view's and not one of the statement's
//! CTEs) becomes the view's query as a derived table under the view's name (or the
//! statement's alias), with the column names the view gives; views inside views expand
//! too, up to a depth that catches a view defined through itself. A statement that would
//! change a view's rows is refused (0A000): pmdb's views are read-only.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    FromTable, Ident, Insert, Query, Statement, TableAlias, TableAliasColumnDef, TableFactor,
    TableObject, Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::ast_shape::plain_table;
use crate::catalog::{Catalog, Viewer};
use crate::error::{Result, SqlError, state};
use crate::names::{PUBLIC, RelName, ident_name, object_name};
use crate::view::ViewDef;

/// Views inside views expand to at most this depth.
const MAX_DEPTH: usize = 32;

/// Expands the views `statement` names, as `viewer` sees them; refuses one it would
/// change.
pub(crate) fn expand(catalog: &Catalog, viewer: Viewer, statement: &mut Statement) -> Result<()> {
    if !catalog.has_views() {
        return Ok(());
    }
    if let Some(target) = changed_relation(statement)?
        && catalog.view_seen_by(&target, viewer).is_some()
    {
        return Err(SqlError::unsupported(format!(
            "changing the rows of view {target:?} (pmdb's views are read-only: change its \
             tables)"
        )));
    }
    expand_in(catalog, viewer, statement, 0)
}

/// The relation whose rows `statement` changes, if it changes one by name.
pub(crate) fn changed_relation(statement: &Statement) -> Result<Option<RelName>> {
    let table_name = |f: &TableFactor| match f {
        TableFactor::Table { name, .. } => object_name(name).map(Some),
        _ => Ok(None),
    };
    match statement {
        Statement::Insert(Insert {
            table: TableObject::TableName(name),
            ..
        }) => object_name(name).map(Some),
        Statement::Update(u) => table_name(&u.table.relation),
        Statement::Delete(d) => match &d.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => match t.first() {
                Some(t) => table_name(&t.relation),
                None => Ok(None),
            },
        },
        Statement::Copy {
            source: datafusion::sql::sqlparser::ast::CopySource::Table { table_name, .. },
            to: false,
            ..
        } => object_name(table_name).map(Some),
        Statement::Truncate(t) => match t.table_names.first() {
            Some(t) => object_name(&t.name).map(Some),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}

fn expand_in<V: VisitMut + Visit>(
    catalog: &Catalog,
    viewer: Viewer,
    node: &mut V,
    depth: usize,
) -> Result<()> {
    let mut ctes = CteNames::default();
    let _ = Visit::visit(&*node, &mut ctes);
    let mut expander = Expander {
        catalog,
        viewer,
        ctes: ctes.0,
        depth,
        error: None,
    };
    let _ = VisitMut::visit(node, &mut expander);
    match expander.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The names of every CTE a statement defines, which shadow views of those names.
#[derive(Default)]
struct CteNames(HashSet<String>);

impl Visitor for CteNames {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                self.0.insert(ident_name(&cte.alias.name));
            }
        }
        ControlFlow::Continue(())
    }
}

struct Expander<'c> {
    catalog: &'c Catalog,
    viewer: Viewer,
    ctes: HashSet<String>,
    depth: usize,
    error: Option<SqlError>,
}

impl Expander<'_> {
    /// The derived table view `view` becomes where `alias` names it.
    fn derived(&self, view: &ViewDef, alias: Option<TableAlias>) -> Result<TableFactor> {
        if self.depth >= MAX_DEPTH {
            return Err(SqlError::user(
                "42P17",
                format!(
                    "infinite recursion detected in rules for relation \"{}\"",
                    view.name
                ),
            ));
        }
        let mut query = stored_query(&view.name, &view.query)?;
        expand_in(self.catalog, self.viewer, &mut query, self.depth + 1)?;
        let mut alias = alias.unwrap_or_else(|| TableAlias {
            explicit: false,
            name: Ident::with_quote('"', &view.name),
            columns: Vec::new(),
            at: None,
        });
        if alias.columns.is_empty() {
            alias.columns = view
                .columns
                .iter()
                .map(|c| TableAliasColumnDef {
                    name: Ident::with_quote('"', c),
                    data_type: None,
                })
                .collect();
        }
        Ok(TableFactor::Derived {
            lateral: false,
            subquery: Box::new(query),
            alias: Some(alias),
            sample: None,
        })
    }
}

impl VisitorMut for Expander<'_> {
    type Break = ();

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let Some(Ok(n)) = plain_table(factor).map(|(name, _)| object_name(name)) else {
            return ControlFlow::Continue(());
        };
        if n.schema == PUBLIC && self.ctes.contains(&n.name) {
            return ControlFlow::Continue(());
        }
        let Some(view) = self.catalog.view_seen_by(&n, self.viewer) else {
            return ControlFlow::Continue(());
        };
        let alias = match factor {
            TableFactor::Table { alias, .. } => alias.take(),
            _ => None,
        };
        match self.derived(&view, alias) {
            Ok(derived) => {
                *factor = derived;
                ControlFlow::Continue(())
            }
            Err(e) => {
                self.error = Some(e);
                ControlFlow::Break(())
            }
        }
    }
}

/// The query a view or a materialized view called `relation` stores as `text`; one
/// that no longer parses is damage.
pub(crate) fn stored_query(relation: &str, text: &str) -> Result<Query> {
    parse_query(text).map_err(|e| SqlError::Damaged {
        what: format!("query of view {relation:?}"),
        source: crate::error::CodecError::Mismatch(e),
    })
}

fn parse_query(text: &str) -> std::result::Result<Query, String> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_query())
        .map(|q| *q)
        .map_err(|e| e.to_string())
}

/// The names of a query's columns `fields` when a statement names the first of them
/// `given`: 42601 (`too_many`) if it names more than there are, 42701 if a name comes
/// twice.
pub(crate) fn column_names(
    given: &[String],
    fields: &[String],
    too_many: &str,
) -> Result<Vec<String>> {
    if given.len() > fields.len() {
        return Err(SqlError::user(state::SYNTAX, too_many));
    }
    let names: Vec<String> = given
        .iter()
        .chain(&fields[given.len()..])
        .cloned()
        .collect();
    if let Some(twice) = (0..names.len()).find(|&i| names[..i].contains(&names[i])) {
        return Err(SqlError::user(
            state::DUPLICATE_COLUMN,
            format!("column \"{}\" specified more than once", names[twice]),
        ));
    }
    Ok(names)
}
