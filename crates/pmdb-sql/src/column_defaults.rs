//! Column defaults in INSERT and UPDATE: the syntax tree of a statement is given the
//! default expressions of the columns it leaves to them — the `DEFAULT` keyword in
//! `VALUES` and in `SET col = DEFAULT`, `INSERT … DEFAULT VALUES`, and columns an INSERT
//! does not list — before it is recognised or planned, so that the fast path and
//! DataFusion see one statement with every value spelled out (a serial column's as
//! `nextval('its sequence')`). Identity columns `GENERATED ALWAYS` refuse any other
//! value (428C9), as in PostgreSQL.

use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, Expr, Ident, Insert, ObjectName, SelectItem, SetExpr, Statement, TableAlias,
    TableAliasColumnDef, TableFactor, TableObject, TableWithJoins, Update, Value as Literal,
};

use datafusion::sql::parser::Statement as DfStatement;

use crate::catalog::Catalog;
use crate::error::{Result, SqlError, state};
use crate::names::{ident_name, object_name};
use crate::schema::Identity;
use crate::table::Table;
use crate::types::SqlType;

/// `SELECT CAST((text) AS ty)`: a default's expression as a value of its column's
/// type, as a statement to plan (and perhaps run).
pub(crate) fn as_column_value(text: &str, ty: SqlType) -> Result<DfStatement> {
    // An enum column's default is text here; the column checks its label when written.
    let ty = match ty {
        SqlType::Enum(_) => SqlType::Text,
        ty => ty,
    };
    let mut statement = crate::session::parse(&format!("SELECT CAST(({text}) AS {ty})"))?
        .pop_front()
        .ok_or_else(|| SqlError::user(state::SYNTAX, format!("no expression in {text}")))?;
    if let DfStatement::Statement(s) = &mut statement {
        crate::type_input::rewrite_casts(s)?;
    }
    Ok(statement)
}

/// Gives `statement` the defaults it leaves to its table's columns (an INSERT or UPDATE
/// of a table the catalog has; anything else is left as it is).
pub(crate) fn apply(catalog: &Catalog, statement: &mut Statement) -> Result<()> {
    match statement {
        Statement::Insert(i) => insert(catalog, i),
        Statement::Update(u) => update(catalog, u),
        _ => Ok(()),
    }
}

/// Whether `e` is the keyword `DEFAULT` where a value goes.
fn is_default(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(i) if i.quote_style.is_none()
        && i.value.eq_ignore_ascii_case("default"))
}

/// The expression a row gets in column `c` when a statement gives none: its default,
/// else NULL.
fn default_of(table: &Table, c: usize) -> Expr {
    table
        .default_expr(c)
        .cloned()
        .unwrap_or(Expr::Value(Literal::Null.into()))
}

fn always_identity(table: &Table, c: usize) -> SqlError {
    SqlError::user(
        state::GENERATED_ALWAYS,
        format!(
            "cannot insert a non-DEFAULT value into column \"{}\": it is an identity column \
             defined as GENERATED ALWAYS",
            table.def().columns[c].name
        ),
    )
}

fn insert(catalog: &Catalog, i: &mut Insert) -> Result<()> {
    let TableObject::TableName(name) = &i.table else {
        return Ok(());
    };
    let Some(table) = object_name(name).ok().and_then(|n| catalog.table(&n)) else {
        return Ok(());
    };
    let ncols = table.def().columns.len();
    let Some(source) = &mut i.source else {
        // DEFAULT VALUES: one row of every column's default.
        let row = (0..ncols).map(|c| default_of(&table, c)).collect();
        i.columns.clear();
        i.source = Some(Box::new(crate::ast_build::values(vec![row])?));
        return Ok(());
    };
    let mut positions = Vec::with_capacity(i.columns.len());
    for c in &i.columns {
        let found = match c.0.as_slice() {
            [part] => part
                .as_ident()
                .and_then(|id| table.def().column(&ident_name(id))),
            _ => None,
        };
        // The planner reports a column that is not there.
        let Some(p) = found else { return Ok(()) };
        positions.push(p);
    }
    let explicit = !positions.is_empty();
    match source.body.as_mut() {
        SetExpr::Values(values) => {
            let width = values.rows.first().map_or(0, |r| r.content.len());
            if !explicit {
                // As PostgreSQL: a row shorter than the table fills the first columns.
                if width > ncols || values.rows.iter().any(|r| r.content.len() != width) {
                    return Ok(());
                }
                positions = (0..width).collect();
            }
            for row in &mut values.rows {
                for (e, &p) in row.content.iter_mut().zip(&positions) {
                    if is_default(e) {
                        *e = default_of(&table, p);
                    } else if table.def().columns[p].identity == Some(Identity::Always) {
                        return Err(always_identity(&table, p));
                    }
                }
            }
            let missing = missing_defaults(&table, &positions);
            if missing.is_empty() && (explicit || width == ncols) {
                return Ok(());
            }
            for row in &mut values.rows {
                row.content
                    .extend(missing.iter().map(|&c| default_of(&table, c)));
            }
            i.columns = positions
                .iter()
                .chain(&missing)
                .map(|&c| column_name(&table, c))
                .collect();
        }
        _ => {
            if !explicit {
                positions = (0..ncols).collect();
            }
            if let Some(&p) = positions
                .iter()
                .find(|&&p| table.def().columns[p].identity == Some(Identity::Always))
            {
                return Err(always_identity(&table, p));
            }
            let missing = missing_defaults(&table, &positions);
            if missing.is_empty() {
                return Ok(());
            }
            let query = std::mem::replace(source.as_mut(), crate::ast_build::values(vec![])?);
            **source = with_defaults(query, &table, positions.len(), &missing)?;
            i.columns = positions
                .iter()
                .chain(&missing)
                .map(|&c| column_name(&table, c))
                .collect();
        }
    }
    Ok(())
}

/// The columns not in `positions` that have a default.
fn missing_defaults(table: &Table, positions: &[usize]) -> Vec<usize> {
    (0..table.def().columns.len())
        .filter(|c| !positions.contains(c) && table.default_expr(*c).is_some())
        .collect()
}

/// Column `c` of `table`, named exactly (quoted).
fn column_name(table: &Table, c: usize) -> ObjectName {
    ObjectName::from(vec![Ident::with_quote(
        '"',
        table.def().columns[c].name.as_str(),
    )])
}

/// `SELECT q.c1, …, q.cn, <defaults of missing> FROM (query) AS q(c1, …, cn)`: an
/// INSERT's query of `width` columns with the defaults of the columns it leaves out.
fn with_defaults(
    query: datafusion::sql::sqlparser::ast::Query,
    table: &Table,
    width: usize,
    missing: &[usize],
) -> Result<datafusion::sql::sqlparser::ast::Query> {
    let alias = "pmdb_insert_source";
    let names: Vec<String> = (1..=width).map(|i| format!("c{i}")).collect();
    let projection = names
        .iter()
        .map(|n| {
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(vec![
                Ident::with_quote('"', alias),
                Ident::with_quote('"', n.as_str()),
            ]))
        })
        .chain(
            missing
                .iter()
                .map(|&c| SelectItem::UnnamedExpr(default_of(table, c))),
        )
        .collect();
    let from = TableWithJoins {
        relation: TableFactor::Derived {
            lateral: false,
            subquery: Box::new(query),
            alias: Some(TableAlias {
                explicit: true,
                name: Ident::with_quote('"', alias),
                columns: names
                    .iter()
                    .map(|n| TableAliasColumnDef {
                        name: Ident::with_quote('"', n.as_str()),
                        data_type: None,
                    })
                    .collect(),
                at: None,
            }),
            sample: None,
        },
        joins: Vec::new(),
    };
    crate::ast_build::select(projection, vec![from])
}

fn update(catalog: &Catalog, u: &mut Update) -> Result<()> {
    let TableFactor::Table { name, .. } = &u.table.relation else {
        return Ok(());
    };
    let Some(table) = object_name(name).ok().and_then(|n| catalog.table(&n)) else {
        return Ok(());
    };
    for a in &mut u.assignments {
        let AssignmentTarget::ColumnName(target) = &a.target else {
            continue;
        };
        let column = match target.0.last().and_then(|p| p.as_ident()) {
            Some(id) => table.def().column(&ident_name(id)),
            None => None,
        };
        let Some(c) = column else { continue };
        if is_default(&a.value) {
            a.value = default_of(&table, c);
        } else if table.def().columns[c].identity == Some(Identity::Always) {
            return Err(SqlError::user(
                state::GENERATED_ALWAYS,
                format!(
                    "column \"{}\" can only be updated to DEFAULT",
                    table.def().columns[c].name
                ),
            ));
        }
    }
    Ok(())
}
